"""A synthetic workload fitted to a block trace, and the two compared side by side.

:func:`fit_trace` measures a trace (one device or all of them) and derives an
open-loop :class:`~simcache.scenario.Workload` that reproduces it in the
statistics the simulator is sensitive to:

- rate: the mean I/O rate as ``iops`` and the I/O count of every ``interval``
  as a ``profile`` duty cycle (so bursts recur where the trace had them);
- mix: the read fraction and the size mix (one mix for all ops, the 64 most
  common sizes; the per-op mixes are reported in the facts);
- locality: the access pattern is the Zipf law (or uniform) whose predicted
  LRU hit ratios best match the trace's own at cache sizes of 1% to 100% of
  the footprint (distinct 4 KiB blocks touched; least squares), and
  ``working_set`` is the one over which that law touches as many blocks as
  the trace did in as many I/Os (the footprint, or more for a short trace:
  :func:`fitted_blocks`).
- arrivals: ``uniform`` (evenly spaced) through the profile, so each interval
  gets its count; Poisson arrivals would add their variance to the trace's.

The trace's hit ratios are exact: one stack-distance pass
(:func:`stack_distances`) gives every access's LRU distance, from which the
hit ratio at any cache size follows. The cache model is the simulator's
read cache (:class:`simcache.model.cache.ReadCache`): 4 KiB lines, every
read and write refreshes its lines, and an I/O hits only if all its lines
are cached (a partial hit is a miss).

The synthetic's hit ratios are predicted analytically with Che's
approximation (Che, Tung and Wang, IEEE JSAC 20(7), 2002) over the
generator's own rank probabilities (the exact discrete Zipf law of
:class:`simcache.locality.ZipfRanks`), with a finite horizon: a line referenced at
rate ``q`` is cached at reference ``t`` with probability
``1 - exp(-q min(t, T_C))``, averaged over the trace's length, so cold misses
count as they do in the trace. An I/O of several lines is taken to hit when
its start block was the start of an I/O at least as long within the
characteristic time (:func:`predicted_hit_ratios`).

:func:`compare` puts a trace's statistics next to a synthetic workload's
(generated with :class:`~simcache.workload.IOStream` for the trace's length;
no simulation) with the relative error of each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import brentq, minimize_scalar

from simcache.locality import harmonic
from simcache.scenario import DutyCycle, Group, Workload
from simcache.scenario.workload import PROFILE_LEVELS
from simcache.trace import OP_NAMES, READ, ROW, WRITE, Trace
from simcache.workload import BLOCK, IOStream

__all__ = [
    "FIT_FRACTIONS",
    "LINE",
    "FittedWorkload",
    "TraceStats",
    "compare",
    "dispersion",
    "expected_footprint",
    "fit_trace",
    "fitted_blocks",
    "hit_ratios",
    "interval_counts",
    "io_distances",
    "predicted_hit_ratios",
    "stack_distances",
    "synthetic_rows",
    "trace_stats",
]

LINE = BLOCK
"""Bytes per cache line and per block of the footprint (4 KiB)."""
COLD = np.iinfo(np.int64).max
"""The stack distance of a first reference (a miss at every cache size)."""
FIT_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
"""Cache sizes, as fractions of the footprint, at which the access pattern is fitted."""
COMPARE_FRACTIONS = (0.01, 0.1, 0.5, 1.0)
"""Cache sizes, as fractions of the trace's footprint, at which :func:`compare` reports read hit ratios."""
SIMPLER_BY = 0.005
"""Uniform access is chosen when its hit ratios are within this (rms) of the best Zipf law's: a nearly flat Zipf
law (theta near 0) fits a uniform trace's noise a little better, and the simpler law says the same."""
MIX_SIZES = 64
"""Most sizes a fitted size mix keeps (the most common ones)."""


def interval_counts(times: np.ndarray, interval: float, duration: float) -> np.ndarray:
    """I/Os in each interval ``[k interval, (k + 1) interval)`` of ``[0, duration)``; times past the end count in the last one."""
    bins = max(1, math.ceil(duration / interval - 1e-9))
    index = np.minimum(np.floor(np.asarray(times) / interval).astype(np.int64), bins - 1)
    return np.bincount(index, minlength=bins)


def dispersion(counts: np.ndarray) -> float:
    """Index of dispersion of counts: population variance over mean (1 for a Poisson stream, more for bursts; 0 if no I/O)."""
    mean = float(np.mean(counts)) if len(counts) else 0.0
    return float(np.var(counts)) / mean if mean > 0 else 0.0


def _lines(offset: np.ndarray, size: np.ndarray, device: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(line key of every line each I/O covers, in I/O order and ascending within an I/O; lines per I/O).

    A key names a (device, 4 KiB line) pair; a zero-size I/O covers the line at its offset.
    """
    first = offset // LINE
    last = (offset + np.maximum(size.astype(np.int64), 1) - 1) // LINE
    spans = (last - first + 1).astype(np.int64)
    starts = np.repeat(first - np.concatenate(([0], np.cumsum(spans)[:-1])), spans)
    lines = starts + np.arange(int(spans.sum()), dtype=np.int64)
    devices = int(device.max()) + 1 if len(device) else 1
    if devices > 1:
        if int(lines.max()) < (1 << 62) // devices:
            lines = lines * devices + np.repeat(device.astype(np.int64), spans)
        else:  # lines too far out to pack with the device: number the (device, line) pairs instead
            pairs = np.stack([np.repeat(device.astype(np.int64), spans), lines], axis=1)
            lines = np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1)
    return lines, spans


def stack_distances(keys: np.ndarray) -> np.ndarray:
    """Each reference's LRU stack distance: distinct other keys referenced since the same key's last reference (:data:`COLD` if none).

    An LRU cache of ``C`` entries holds a reference's key exactly when its
    distance is below ``C``. With ``prev[i]`` the previous reference to the
    same key, the keys referenced in ``(prev[i], i)`` are those positions
    ``j`` there with ``prev[j] < prev[i]`` (first references within the
    window); as every ``j <= prev[i]`` has ``prev[j] < prev[i]``, the distance is
    ``#{j < i : prev[j] < prev[i]} - prev[i] - 1``. That count of smaller earlier
    values is taken by a bottom-up merge sort in numpy, ``O(n log^2 n)``
    vectorised work (about 2 s per million references).
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    prev = np.full(n, -1, dtype=np.int64)
    repeat = sorted_keys[1:] == sorted_keys[:-1]
    prev[order[1:][repeat]] = order[:-1][repeat]
    # First references (prev = -1) are below every other value: count them by a running sum and merge-sort the rest.
    warm = np.flatnonzero(prev >= 0)
    cold_before = np.cumsum(prev < 0)[warm]  # prev[i] >= 0 here, so the running count excludes i itself
    distances = np.full(n, COLD, dtype=np.int64)
    distances[warm] = cold_before + _smaller_before(prev[warm]) - prev[warm] - 1
    return distances


def _smaller_before(values: np.ndarray) -> np.ndarray:
    """For each position i, how many positions j < i hold a smaller value (non-negative integers)."""
    n = len(values)
    shift = int(values.max()) + 1 if n else 1  # keys block * shift + value sort by block, then value
    current = values.astype(np.int64)
    position = np.arange(n, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    index = np.arange(n, dtype=np.int64)
    width = 1
    while width < n:
        block = index // width
        keys = block * shift + current
        right = (block & 1) == 1
        left_block = block[right] - 1
        # In the left sibling (sorted), the entries below this value: searched among all keys at once.
        found = np.searchsorted(keys, left_block * shift + current[right], side="left")
        counts[right] += found - left_block * width
        merged = np.argsort((index // (2 * width)) * shift + current, kind="stable")
        current, counts, position = current[merged], counts[merged], position[merged]
        width *= 2
    result = np.empty(n, dtype=np.int64)
    result[position] = counts
    return result


def io_distances(offset: np.ndarray, size: np.ndarray, device: np.ndarray | None = None) -> np.ndarray:
    """Per I/O, the largest stack distance of its lines: it hits an LRU cache of ``C`` lines iff this is below ``C``."""
    device = np.zeros(len(offset), dtype=np.int64) if device is None else device
    if len(offset) == 0:
        return np.zeros(0, dtype=np.int64)
    lines, spans = _lines(np.asarray(offset, dtype=np.int64), np.asarray(size), np.asarray(device))
    distances = stack_distances(lines)
    starts = np.concatenate(([0], np.cumsum(spans)[:-1]))
    return np.maximum.reduceat(distances, starts)


def hit_ratios(distances: np.ndarray, cache_lines: Sequence[int]) -> list[float]:
    """The share of I/Os whose distance is below each cache size (in lines); NaN without I/Os."""
    if len(distances) == 0:
        return [math.nan] * len(cache_lines)
    ordered = np.sort(distances)
    return [float(np.searchsorted(ordered, lines, side="left")) / len(ordered) for lines in cache_lines]


@dataclass
class TraceStats:
    """What :func:`fit_trace` and :func:`compare` measure of a stream of reads and writes (times in s from its start)."""

    ios: int
    reads: int
    duration: float
    """Seconds the stream covers: whole intervals from its first I/O to its last."""
    interval: float
    counts: np.ndarray
    """I/Os per interval."""
    per_second: np.ndarray
    """I/Os per second (1 s bins from the start)."""
    sizes: dict[int, int]
    """I/Os by size in bytes, all ops."""
    sizes_by_op: dict[str, dict[int, int]]
    footprint_lines: int
    """Distinct 4 KiB lines (blocks) touched."""
    distances: np.ndarray
    """Per I/O, its LRU stack distance in lines (:func:`io_distances`)."""
    is_read: np.ndarray
    mean_latency: float
    """Mean latency (s) the trace measured, NaN if it has none."""

    @property
    def mean_rate(self) -> float:
        return self.ios / self.duration if self.duration > 0 else 0.0

    @property
    def read_fraction(self) -> float:
        return self.reads / self.ios if self.ios else 0.0

    @property
    def mean_size(self) -> float:
        return sum(s * c for s, c in self.sizes.items()) / self.ios if self.ios else 0.0

    @property
    def footprint(self) -> int:
        """Bytes: distinct 4 KiB blocks touched times 4 KiB."""
        return self.footprint_lines * LINE

    @property
    def busiest_second(self) -> int:
        return int(self.per_second.max()) if len(self.per_second) else 0

    @property
    def busiest_minute(self) -> int:
        minutes = np.add.reduceat(self.per_second, np.arange(0, len(self.per_second), 60)) if len(self.per_second) else self.per_second
        return int(minutes.max()) if len(minutes) else 0

    @property
    def dispersion_second(self) -> float:
        return dispersion(self.per_second)

    @property
    def outstanding(self) -> float:
        """Mean I/Os in flight by Little's law (rate x mean latency); NaN without latencies."""
        return self.mean_rate * self.mean_latency

    def hit_ratios(self, cache_lines: Sequence[int], reads_only: bool = False) -> list[float]:
        return hit_ratios(self.distances[self.is_read] if reads_only else self.distances, cache_lines)

    def cache_lines(self, fractions: Sequence[float]) -> list[int]:
        """Cache sizes in lines at these fractions of the footprint (at least one line)."""
        return [max(1, round(f * self.footprint_lines)) for f in fractions]


def trace_stats(rows: np.ndarray, interval: float = 1.0) -> TraceStats:
    """Statistics of rows of :data:`simcache.trace.ROW` (their reads and writes; time measured from the first of them)."""
    if not interval > 0:
        raise ValueError(f"interval must be positive seconds (got {interval})")
    rows = rows[(rows["op"] == READ) | (rows["op"] == WRITE)]
    ios = len(rows)
    times = rows["time"] - rows["time"][0] if ios else rows["time"]
    duration = (math.floor(float(times[-1]) / interval) + 1) * interval if ios else interval
    is_read = rows["op"] == READ
    sizes = rows["size"].astype(np.int64)
    by_op = {}
    for code in (READ, WRITE):
        values, counts = np.unique(sizes[rows["op"] == code], return_counts=True)
        by_op[OP_NAMES[code]] = dict(zip(values.tolist(), counts.tolist(), strict=True))
    values, counts = np.unique(sizes, return_counts=True)
    lines, _ = _lines(rows["offset"], sizes, rows["device"]) if ios else (np.zeros(0, np.int64), None)
    latency = rows["latency"].astype(np.float64)
    finite = latency[np.isfinite(latency)]
    return TraceStats(
        ios=ios,
        reads=int(is_read.sum()),
        duration=duration,
        interval=interval,
        counts=interval_counts(times, interval, duration),
        per_second=interval_counts(times, 1.0, duration),
        sizes=dict(zip(values.tolist(), counts.tolist(), strict=True)),
        sizes_by_op=by_op,
        footprint_lines=len(np.unique(lines)),
        distances=io_distances(rows["offset"], sizes, rows["device"]),
        is_read=is_read,
        mean_latency=float(finite.mean()) if len(finite) else math.nan,
    )


def _selected_rows(trace: Trace, device: str | None) -> np.ndarray:
    if device is not None and device not in trace.devices:
        raise ValueError(f"device {device!r} is not in the trace; it has {', '.join(trace.devices) or 'none'}")
    code = None if device is None else trace.devices.index(device)
    parts = [block[(block["device"] == code) if code is not None else slice(None)] for block in trace.blocks()]
    return np.concatenate(parts) if parts else np.empty(0, dtype=ROW)


# ---- the synthetic's predicted hit ratios ------------------------------------------------------------------------


def _popularity(access: str, theta: float, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(probability of one block, number of blocks) per rank bin of the generator's law over ``blocks`` blocks."""
    if access != "zipf":
        return np.array([1.0 / blocks]), np.array([float(blocks)])
    n = float(blocks)
    edges = np.unique(np.concatenate((np.arange(0, min(blocks, 64) + 1), np.geomspace(64, n, 400) if blocks > 64 else [])).round())
    # The generator's law is the exact discrete Zipf (simcache.locality): ranks 1..k hold H(k, theta) / H(n, theta).
    cdf = np.array([harmonic(float(edge), theta) if edge > 0 else 0.0 for edge in edges]) / harmonic(n, theta)
    mass, count = np.diff(cdf), np.diff(edges)
    keep = count > 0
    return mass[keep] / count[keep], count[keep]


def _line_rates(
    access: str, theta: float, blocks: int, sizes: dict[int, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, float]]:
    """(block probability, blocks, share of line references per line) per rank bin, and the mix of lines per I/O."""
    total = sum(sizes.values())
    span_mix: dict[int, float] = {}
    for size, weight in sizes.items():
        span = max(1, -(-int(size) // LINE))
        span_mix[span] = span_mix.get(span, 0.0) + weight / total
    mean_span = sum(s * p for s, p in span_mix.items())
    block_probability, count = _popularity(access, theta, blocks)
    rate = (block_probability + (mean_span - 1.0) / blocks) / mean_span
    return block_probability, count, rate, span_mix


def expected_footprint(access: str, theta: float, blocks: int, ios: int, sizes: dict[int, float]) -> float:
    """Distinct blocks the synthetic generator is expected to touch in ``ios`` I/Os (each block touched at its Poisson rate)."""
    _, count, rate, span_mix = _line_rates(access, theta, blocks, sizes)
    horizon = ios * sum(s * p for s, p in span_mix.items())
    return float(np.sum(count * -np.expm1(-rate * horizon)))


def fitted_blocks(access: str, theta: float, footprint: int, ios: int, sizes: dict[int, float]) -> int:
    """The working set (blocks) over which the generator touches ``footprint`` distinct blocks in ``ios`` I/Os.

    A trace's footprint is what it touched, not what its law could touch: a
    Zipf law over exactly the footprint would touch fewer blocks in as many
    I/Os and make the tail hotter than it was. At most 1000 times the footprint
    (a steep law may never touch as many blocks).
    """
    if expected_footprint(access, theta, footprint, ios, sizes) >= footprint - 0.5:
        return footprint

    def short(log_blocks: float) -> float:
        return expected_footprint(access, theta, round(math.exp(log_blocks)), ios, sizes) - footprint

    top = math.log(footprint * 1000.0)
    if short(top) < 0:
        return round(math.exp(top))
    return max(footprint, round(math.exp(brentq(short, math.log(footprint), top, xtol=1e-4))))


def _present(rate: np.ndarray, characteristic: float, horizon: float) -> np.ndarray:
    """Mean over references t in [0, horizon] of 1 - exp(-rate min(t, characteristic)): Che's presence with cold starts."""
    absent_time = np.divide(-np.expm1(-rate * characteristic), rate, out=np.full(len(rate), characteristic), where=rate > 0)
    present: np.ndarray = 1.0 - (absent_time + (horizon - characteristic) * np.exp(-rate * characteristic)) / horizon
    return present


def predicted_hit_ratios(
    access: str, theta: float, blocks: int, ios: int, sizes: dict[int, float], cache_lines: Sequence[int]
) -> list[float]:
    """Hit ratio of ``ios`` I/Os of the synthetic generator (Zipf or uniform over ``blocks``, this size mix) at each cache size.

    Che's approximation with a finite horizon, time counted in line
    references (``ios`` times the mean lines per I/O): the characteristic time
    fills the cache with lines at their reference rates. An I/O of ``s``
    lines starting at block ``b`` hits when an I/O at least as long started
    at ``b`` within the characteristic time (its lines are refreshed
    together, so they are present or absent together); the other I/Os'
    references to those lines add a background rate, shared by the ``s``
    lines (a heuristic: exact for ``s = 1``).
    """
    block_probability, count, rate, span_mix = _line_rates(access, theta, blocks, sizes)
    mean_span = sum(s * p for s, p in span_mix.items())
    horizon = ios * mean_span
    background = (mean_span - 1.0) / blocks
    spans = sorted(span_mix)
    at_least = {s: sum(span_mix[t] for t in spans if t >= s) for s in spans}
    ratios = []
    for lines in cache_lines:

        def cached(t: float, lines: int = lines) -> float:
            return float(np.sum(count * -np.expm1(-rate * t))) - lines

        characteristic = horizon if cached(horizon) <= 0 else brentq(cached, 0.0, horizon, xtol=1e-9 * horizon)
        hit = 0.0
        for s, share in span_mix.items():
            together = (block_probability * at_least[s] + background / s) / mean_span
            hit += share * float(np.sum(count * block_probability * _present(together, characteristic, horizon)))
        ratios.append(hit)
    return ratios


def _fit_access(stats: TraceStats, sizes: dict[int, float]) -> tuple[str, float, int, float, list[int], list[float]]:
    """(access, theta, working set in blocks, root-mean-square error, cache sizes in lines, the trace's hit ratios there).

    The law (Zipf with theta on a grid of 0.05 refined by bounded Brent, or
    uniform, preferred within :data:`SIMPLER_BY`) whose predicted hit ratios
    are nearest the trace's in the least squares sense, each law over the
    working set that touches the trace's footprint (:func:`fitted_blocks`).
    """
    lines = sorted(set(stats.cache_lines(FIT_FRACTIONS)))
    target = np.array(stats.hit_ratios(lines))
    footprint = max(1, stats.footprint_lines)

    def error(access: str, theta: float) -> tuple[float, int]:
        blocks = fitted_blocks(access, theta, footprint, stats.ios, sizes)
        predicted = np.array(predicted_hit_ratios(access, theta, blocks, stats.ios, sizes, lines))
        return float(np.sqrt(np.mean((predicted - target) ** 2))), blocks

    grid = np.arange(0.05, 5.0001, 0.05)
    errors = [error("zipf", float(theta))[0] for theta in grid]
    best = int(np.argmin(errors))
    low, high = float(grid[max(best - 1, 0)]), float(grid[min(best + 1, len(grid) - 1)])
    refined = minimize_scalar(lambda theta: error("zipf", float(theta))[0], bounds=(low, high), method="bounded", options={"xatol": 1e-4})
    theta = round(float(refined.x) if refined.fun < errors[best] else float(grid[best]), 4)
    zipf_error, zipf_blocks = error("zipf", theta)
    uniform_error, uniform_blocks = error("uniform", 0.0)
    if uniform_error <= zipf_error + SIMPLER_BY:
        return "uniform", theta, uniform_blocks, uniform_error, lines, target.tolist()
    return "zipf", theta, zipf_blocks, zipf_error, lines, target.tolist()


# ---- the fit ------------------------------------------------------------------------------------------------------


@dataclass
class FittedWorkload:
    """A synthetic workload fitted to a trace, with what was measured."""

    workload: Workload
    stats: TraceStats
    fit_error: float
    """Root-mean-square difference between the trace's hit ratios and the synthetic's predicted ones."""
    cache_lines: list[int]
    trace_hit_ratios: list[float]
    predicted_hit_ratios: list[float]
    facts: list[tuple[str, str]] = field(default_factory=list)
    """(what, value) pairs for people."""


def _size_name(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size}B"


def _mix_text(sizes: dict[int, int], top: int = 5) -> str:
    total = sum(sizes.values())
    common = sorted(sizes.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{_size_name(s)} {c / total:.1%}" for s, c in common) or "none"


def fit_trace(trace: Trace, device: str | None = None, interval: float = 1.0) -> FittedWorkload:
    """An open-loop synthetic :class:`Workload` reproducing ``trace``'s rate profile, mix and locality (module docstring).

    ``device``: one of the trace's devices, or all of them as one stream when
    ``None``. ``interval``: seconds per entry of the rate profile; a trace
    longer than 100,000 intervals gets a coarser one (whole multiples).
    Raises ``ValueError`` when the trace (device) has no reads or writes.
    """
    if not interval > 0:
        raise ValueError(f"interval must be positive seconds (got {interval})")
    rows = _selected_rows(trace, device)
    span = float(rows["time"][-1] - rows["time"][0]) if len(rows) else 0.0
    profile_interval = interval * max(1, math.ceil((span / interval + 1) / PROFILE_LEVELS))
    stats = trace_stats(rows, profile_interval)
    if stats.ios == 0:
        raise ValueError(f"{'device ' + repr(device) if device else 'the trace'} has no reads or writes to fit")
    positive = {size: count for size, count in stats.sizes.items() if size > 0}
    common = dict(sorted(positive.items(), key=lambda item: -item[1])[:MIX_SIZES]) or {LINE: 1}
    mix = {s: float(c) for s, c in common.items()}
    access, theta, blocks, error, lines, target = _fit_access(stats, mix)
    fields: dict[str, object] = {
        "mode": "open",
        "iops": stats.mean_rate,
        "read_fraction": stats.read_fraction,
        "sizes": {_size_name(s): float(c) for s, c in common.items()},
        "working_set": blocks * LINE,
        "access": access,
    }
    if access == "zipf":
        fields["zipf_theta"] = theta
    if len(stats.counts) > 1 and len(set(stats.counts.tolist())) > 1:
        # Evenly spaced arrivals through the profile give each interval its count (to within one): Poisson arrivals
        # would add their own variance on top of the trace's, which the counts already hold.
        fields["arrivals"] = "uniform"
        fields["duty_cycle"] = DutyCycle(shape="profile", interval=profile_interval, levels=[float(c) for c in stats.counts])
    workload = Workload.model_validate(fields)
    predicted = predicted_hit_ratios(access, workload.zipf_theta, blocks, stats.ios, mix, lines)
    facts = [
        ("I/Os", f"{stats.ios:,} ({stats.reads:,} reads) over {stats.duration:g} s"),
        ("mean rate", f"{stats.mean_rate:.6g} I/O/s"),
        ("read fraction", f"{stats.read_fraction:.4f}"),
        ("size mix", _mix_text(stats.sizes)),
        *((f"{op} size mix", _mix_text(mix)) for op, mix in stats.sizes_by_op.items() if mix),
        ("busiest second", f"{stats.busiest_second:,} I/Os"),
        ("busiest minute", f"{stats.busiest_minute:,} I/Os"),
        (f"index of dispersion ({profile_interval:g} s counts)", f"{dispersion(stats.counts):.4g}"),
        (
            "mean outstanding",
            "unknown (the trace has no latencies)"
            if math.isnan(stats.mean_latency)
            else f"{stats.outstanding:.4g} (Little's law: rate x mean latency {stats.mean_latency * 1e3:.4g} ms)",
        ),
        ("footprint", f"{stats.footprint:,} bytes ({stats.footprint_lines:,} blocks of 4 KiB)"),
        ("working set", f"{blocks * LINE:,} bytes: the fitted law touches the footprint in as many I/Os"),
        (
            "LRU hit ratio (trace / fitted)",
            ", ".join(f"{n:,} lines {t:.3f}/{p:.3f}" for n, t, p in zip(lines, target, predicted, strict=True)),
        ),
        ("access", (f"zipf theta {workload.zipf_theta:.4g}" if access == "zipf" else "uniform") + f" (rms hit-ratio error {error:.4f})"),
    ]
    if positive != stats.sizes or len(positive) > MIX_SIZES:
        facts.append(("size mix kept", f"the {len(common)} most common of {len(positive)} sizes (zero-size I/Os left out)"))
    if profile_interval != interval:
        facts.append(
            ("profile interval", f"{profile_interval:g} s (the trace is longer than {PROFILE_LEVELS:,} intervals of {interval:g} s)")
        )
    return FittedWorkload(workload, stats, error, lines, target, predicted, facts)


# ---- the comparison -----------------------------------------------------------------------------------------------


def synthetic_rows(workload: Workload, duration: float, seed: int | np.random.SeedSequence = 0) -> np.ndarray:
    """The I/Os an open-loop ``workload`` issues in ``[0, duration)`` as :data:`simcache.trace.ROW` rows (one VM, no simulation)."""
    if workload.mode != "open":
        raise ValueError(f'compare needs an open-loop synthetic workload (this one is mode = "{workload.mode}")')
    stream = IOStream(workload, seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed))
    times: list[float] = []
    ios: list[tuple[bool, int, int]] = []
    now = 0.0
    while True:
        now += stream.next_gap(now)
        if now >= duration:
            break
        times.append(now)
        ios.append(stream.next_io())
    rows = np.zeros(len(times), dtype=ROW)
    rows["time"] = times
    if ios:
        writes, sizes, offsets = zip(*ios, strict=True)
        rows["op"] = np.where(np.array(writes), WRITE, READ)
        rows["size"] = sizes
        rows["offset"] = offsets
    rows["latency"] = np.nan
    return rows


def _relative_error(trace: float, synthetic: float) -> float:
    if trace == 0:
        return 0.0 if synthetic == 0 else math.inf
    return (synthetic - trace) / abs(trace)


def compare(
    trace: Trace, synthetic: Workload | Group, seed: int = 0, device: str | None = None, fractions: Sequence[float] = COMPARE_FRACTIONS
) -> pd.DataFrame:
    """The trace's statistics next to one VM of ``synthetic`` generated for as long, with the relative error of each.

    Rows: busiest second and minute (I/Os, fixed 1 s and 60 s bins from the
    first I/O), index of dispersion of the per-second counts, mean rate,
    read fraction, mean size, the trace's five most common sizes (share of
    I/Os), read hit ratios at ``fractions`` of the trace's footprint (same
    cache sizes in lines for both) and footprint. Columns: ``statistic``,
    ``trace``, ``synthetic``, ``relative_error`` ((synthetic - trace) / trace).
    """
    workload = synthetic.workload if isinstance(synthetic, Group) else synthetic
    measured = trace_stats(_selected_rows(trace, device))
    generated = trace_stats(synthetic_rows(workload, measured.duration, seed))
    lines = measured.cache_lines(fractions)
    rows: list[tuple[str, float, float]] = [
        ("I/Os in busiest second", measured.busiest_second, generated.busiest_second),
        ("I/Os in busiest minute", measured.busiest_minute, generated.busiest_minute),
        ("index of dispersion (1 s counts)", measured.dispersion_second, generated.dispersion_second),
        ("mean rate (I/O/s)", measured.mean_rate, generated.ios / measured.duration),
        ("read fraction", measured.read_fraction, generated.read_fraction),
        ("mean size (bytes)", measured.mean_size, generated.mean_size),
    ]
    for size, count in sorted(measured.sizes.items(), key=lambda item: -item[1])[:5]:
        share = generated.sizes.get(size, 0) / generated.ios if generated.ios else 0.0
        rows.append((f"share of {_size_name(size)} I/Os", count / measured.ios, share))
    trace_hits, synthetic_hits = measured.hit_ratios(lines, reads_only=True), generated.hit_ratios(lines, reads_only=True)
    for fraction, n, t, s in zip(fractions, lines, trace_hits, synthetic_hits, strict=True):
        rows.append((f"read hit ratio, cache {fraction:.0%} of footprint ({n:,} lines)", t, s))
    rows.append(("footprint (bytes)", measured.footprint, generated.footprint))
    return pd.DataFrame(
        [(name, float(t), float(s), _relative_error(float(t), float(s))) for name, t, s in rows],
        columns=["statistic", "trace", "synthetic", "relative_error"],
    )
