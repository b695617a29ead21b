"""A synthetic workload fitted to a block trace, and the two compared side by side.

:func:`fit_trace` measures a trace (one device or all of them) and derives an
open-loop :class:`~simcache.scenario.Workload` that reproduces it in the
statistics the simulator is sensitive to:

- rate: the mean I/O rate as ``iops`` and the I/O count of every ``interval``
  as a ``profile`` duty cycle (so bursts recur where the trace had them);
- mix: the read fraction and the size mix (one mix for all ops, the 64 most
  common sizes; the per-op mixes are reported in the facts);
- locality: the access pattern is the law (uniform, Zipf with ``theta``, or
  ``hotspot`` with ``hot_io_fraction`` and ``hot_span_fraction``) whose
  predicted LRU hit ratios best match the trace's READ hit ratios (reads
  that hit, every read and write refreshing the cache: what
  :func:`compare` reports and what a read cache serves) at cache sizes of
  1% to 100% of the footprint (distinct 4 KiB blocks touched; least
  squares), and ``working_set`` is the one over which that law touches as
  many blocks as the trace did in as many I/Os (the footprint, or more:
  :func:`fitted_blocks`). The generator's law is one for reads and writes,
  so a trace whose reads and writes go to different places (hot reads,
  scattered writes) is fitted for its reads: the synthetic's writes then
  re-reference as its reads do, and its footprint is smaller (the fit's
  facts give the all-I/O hit ratios beside the read ones);
- runs: ``sequential_run`` = ``1 / (1 - p)`` when the share ``p`` of I/Os that
  start exactly where their device's previous I/O ended is above
  :data:`SEQUENTIAL_MATERIAL` (:func:`sequential_share`);
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
generator's own block probabilities (the exact discrete Zipf law of
:class:`simcache.locality.ZipfRanks`; for ``hotspot`` two uniform classes,
the hot blocks and the cold ones, with the generator's rounding of the hot
region), with a finite horizon: a line referenced at rate ``q`` is cached
at reference ``t`` with probability ``1 - exp(-q min(t, T_C))``, averaged
over the trace's length, so cold misses count as they do in the trace. An
I/O of several lines over scattered Zipf ranks is taken to hit when its
start block was the start of an I/O at least as long within the
characteristic time; over a contiguous region (uniform, hotspot) when its
lines were all covered by the region's I/Os (:func:`_covered`: a Boolean
model, within 0.03 of the generator on the example's size mix)
(:func:`predicted_hit_ratios`). The generator draws op, size and position
independently, so its predicted read hit ratio is its all-I/O one: that is
what is matched to the trace's read hit ratio.

Measured on ``examples/vm-burst.csv`` (hot 4-8 KiB reads in ~20,000 blocks,
random 64-128 KiB burst writes over 1 GiB), ``compare-trace`` read hit
ratios at 1/10/50/100% of the footprint, trace 0.683/0.690/0.792/0.819:
fitted on all I/Os with Zipf, 0.076/0.218/0.343/0.364 (-89% to -56%);
fitted on read hits with hotspot (73% of the I/Os to 357 blocks),
0.672/0.725/0.727/0.727 (-1.7%, +5.1%, -8.3%, -11.3%), but the footprint
is 35% of the trace's (was 75%), and all-I/O hit ratios are about 0.73
against the trace's 0.20-0.28.

:func:`compare` puts a trace's statistics next to a synthetic workload's
(generated with :class:`~simcache.workload.IOStream` for the trace's length;
no simulation) with the relative error of each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import brentq, minimize, minimize_scalar

from simcache.locality import harmonic, hot_blocks
from simcache.scenario import DutyCycle, Group, Workload
from simcache.scenario.workload import PROFILE_LEVELS
from simcache.trace import OP_NAMES, READ, ROW, WRITE, Trace
from simcache.workload import BLOCK, IOStream

__all__ = [
    "FIT_FRACTIONS",
    "LINE",
    "FittedWorkload",
    "Law",
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
    "sequential_share",
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
SEQUENTIAL_MATERIAL = 0.05
"""A fitted workload gets ``sequential_run`` when more than this share of the trace's I/Os continue the previous one."""
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


@dataclass(frozen=True)
class Law:
    """An access law of the generator: ``uniform``, ``zipf`` (``theta``) or ``hotspot`` (``hot_io`` of the I/Os
    uniform over the first ``hot_span`` of the working set, the rest uniform over the remainder)."""

    access: str
    theta: float = 1.0
    hot_io: float = 0.0
    hot_span: float = 0.0
    hot_count: int = 0
    """While fitting: the hot region in blocks, whatever the working set (0: ``hot_span`` of it)."""

    def describe(self) -> str:
        if self.access == "zipf":
            return f"zipf theta {self.theta:.4g}"
        if self.access == "hotspot":
            return f"hotspot: {self.hot_io:.4g} of the I/Os to {self.hot_span:.4g} of the working set"
        return self.access


def _popularity(law: Law, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(probability of one block, number of blocks) per rank bin of the generator's law over ``blocks`` blocks."""
    if law.access == "hotspot" and blocks >= 2:
        hot = min(law.hot_count, blocks - 1) if law.hot_count else hot_blocks(blocks, law.hot_span)  # the generator's rounding
        return np.array([law.hot_io / hot, (1.0 - law.hot_io) / (blocks - hot)]), np.array([float(hot), float(blocks - hot)])
    if law.access != "zipf":
        return np.array([1.0 / blocks]), np.array([float(blocks)])
    theta = law.theta
    n = float(blocks)
    edges = np.unique(np.concatenate((np.arange(0, min(blocks, 64) + 1), np.geomspace(64, n, 400) if blocks > 64 else [])).round())
    # The generator's law is the exact discrete Zipf (simcache.locality): ranks 1..k hold H(k, theta) / H(n, theta).
    cdf = np.array([harmonic(float(edge), theta) if edge > 0 else 0.0 for edge in edges]) / harmonic(n, theta)
    mass, count = np.diff(cdf), np.diff(edges)
    keep = count > 0
    return mass[keep] / count[keep], count[keep]


def _line_rates(law: Law, blocks: int, sizes: dict[int, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[int, float]]:
    """(block probability, blocks, share of line references per line, background) per rank bin, and the mix of lines per I/O.

    A line is referenced by the I/Os that start on it and by those that start on the ``s - 1`` blocks before it
    (the background, per I/O). Zipf ranks are scattered, so the blocks before a line are of any rank: the
    background is ``(mean span - 1) / blocks`` everywhere. Uniform and ``hotspot`` regions are contiguous, so
    they are the line's own region: ``(mean span - 1)`` times its block probability (edges neglected).
    """
    total = sum(sizes.values())
    span_mix: dict[int, float] = {}
    for size, weight in sizes.items():
        span = max(1, -(-int(size) // LINE))
        span_mix[span] = span_mix.get(span, 0.0) + weight / total
    mean_span = sum(s * p for s, p in span_mix.items())
    block_probability, count = _popularity(law, blocks)
    background = (mean_span - 1.0) * (np.full(len(count), 1.0 / blocks) if law.access == "zipf" else block_probability)
    rate = (block_probability + background) / mean_span
    return block_probability, count, rate, background, span_mix


def expected_footprint(law: Law, blocks: int, ios: int, sizes: dict[int, float]) -> float:
    """Distinct blocks the synthetic generator is expected to touch in ``ios`` I/Os (each block touched at its Poisson rate)."""
    _, count, rate, _, span_mix = _line_rates(law, blocks, sizes)
    horizon = ios * sum(s * p for s, p in span_mix.items())
    return float(np.sum(count * -np.expm1(-rate * horizon)))


def fitted_blocks(law: Law, footprint: int, ios: int, sizes: dict[int, float]) -> int:
    """The working set (blocks) over which the generator touches ``footprint`` distinct blocks in ``ios`` I/Os.

    A trace's footprint is what it touched, not what its law could touch: a
    Zipf law over exactly the footprint would touch fewer blocks in as many
    I/Os and make the tail hotter than it was. At most 1000 times the footprint
    (a steep law may never touch as many blocks).
    """
    if expected_footprint(law, footprint, ios, sizes) >= footprint - 0.5:
        return footprint

    def short(log_blocks: float) -> float:
        return expected_footprint(law, round(math.exp(log_blocks)), ios, sizes) - footprint

    top = math.log(footprint * 1000.0)
    if short(top) < 0:
        return round(math.exp(top))
    return max(footprint, round(math.exp(brentq(short, math.log(footprint), top, xtol=1e-4))))


def _present(rate: np.ndarray, characteristic: float, horizon: float) -> np.ndarray:
    """Mean over references t in [0, horizon] of 1 - exp(-rate min(t, characteristic)): Che's presence with cold starts."""
    absent_time = np.divide(-np.expm1(-rate * characteristic), rate, out=np.full(len(rate), characteristic), where=rate > 0)
    present: np.ndarray = 1.0 - (absent_time + (horizon - characteristic) * np.exp(-rate * characteristic)) / horizon
    return present


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(12)


def _covered(rate: np.ndarray, span: int, cover: float, mean_span: float, characteristic: float, horizon: float) -> np.ndarray:
    """Mean over references t in [0, horizon] of the chance that ``span`` adjacent lines of a contiguous region were all
    referenced within ``w = min(t, characteristic)``.

    The region's I/Os are a Boolean model on the line: each line is covered at ``rate`` (per line reference), so it is
    present with ``1 - exp(-rate w)``; I/Os end at ``rate / mean_span`` per line, and each end followed by an absent line
    opens a gap, ``(span - 1) (rate w / mean span) exp(-rate w)`` of them expected inside the span (taken as Poisson).
    Where the region is sparse that overstates the chance (the line present is most likely covered by one I/O, which
    may end inside the span): there one I/O must cover all ``span`` lines, which ``cover`` (lines per I/O, mean of
    ``max(0, t - span + 1)`` over the I/Os' spans ``t``) of every ``mean_span`` line references do. The two are
    blended by the line's presence ``1 - exp(-rate w)`` (within 0.03 of the generator's hit ratios on the
    vm-burst size mix, sparse or dense).
    """

    def at(w: np.ndarray) -> np.ndarray:
        x = rate[:, None] * w[None, :]
        boolean = -np.expm1(-x) * np.exp(-(span - 1) * x / mean_span * np.exp(-x))
        single = -np.expm1(-x * cover / mean_span)
        # Sparse (x small): one I/O covers the span; dense: the Boolean model. Weighted by the line's presence.
        return np.asarray(np.maximum(single, single + (boolean - single) * -np.expm1(-x)))

    nodes = characteristic * (_NODES + 1.0) / 2.0
    rising = at(nodes) @ _WEIGHTS * characteristic / 2.0
    flat = at(np.array([characteristic]))[:, 0] * (horizon - characteristic)
    covered: np.ndarray = (rising + flat) / horizon
    return covered


def predicted_hit_ratios(law: Law, blocks: int, ios: int, sizes: dict[int, float], cache_lines: Sequence[int]) -> list[float]:
    """Hit ratio of ``ios`` I/Os of the synthetic generator (``law`` over ``blocks``, this size mix) at each cache size.

    Che's approximation with a finite horizon, time counted in line
    references (``ios`` times the mean lines per I/O): the characteristic time
    fills the cache with lines at their reference rates. An I/O of ``s``
    lines starting at block ``b`` hits when an I/O at least as long started
    at ``b`` within the characteristic time (its lines are refreshed
    together, so they are present or absent together); the other I/Os'
    references to those lines add a background rate (:func:`_line_rates`),
    shared by the ``s`` lines (a heuristic: exact for ``s = 1``). A
    ``hotspot`` law is two uniform classes of blocks, hot and cold, each with
    its own block probability.

    The generator draws an I/O's op, size and position independently, so its
    reads are a random sample of its I/Os: their predicted hit ratio (reads
    that hit, every I/O refreshing the cache) is this all-I/O one.
    """
    block_probability, count, rate, background, span_mix = _line_rates(law, blocks, sizes)
    mean_span = sum(s * p for s, p in span_mix.items())
    horizon = ios * mean_span
    spans = sorted(span_mix)
    at_least = {s: sum(span_mix[t] for t in spans if t >= s) for s in spans}
    cover = {s: sum(span_mix[t] * (t - s + 1) for t in spans if t >= s) for s in spans}
    contiguous = law.access != "zipf"
    ratios = []
    for lines in cache_lines:

        def cached(t: float, lines: int = lines) -> float:
            return float(np.sum(count * -np.expm1(-rate * t))) - lines

        characteristic = horizon if cached(horizon) <= 0 else brentq(cached, 0.0, horizon, xtol=1e-9 * horizon)
        hit = 0.0
        for s, share in span_mix.items():
            if contiguous:
                present = _covered(rate, s, cover[s], mean_span, characteristic, horizon)
            else:
                present = _present((block_probability * at_least[s] + background / s) / mean_span, characteristic, horizon)
            hit += share * float(np.sum(count * block_probability * present))
        ratios.append(hit)
    return ratios


HOT_SPANS = tuple(float(x) for x in np.geomspace(1e-4, 0.5, 24))
"""Hot-region shares of the working set on the hotspot grid."""
HOT_IOS = tuple(float(x) for x in np.arange(0.05, 0.991, 0.05))
"""Hot shares of the I/Os on the hotspot grid (only those above the hot span are tried)."""


@dataclass
class _Fit:
    law: Law
    blocks: int
    error: float
    lines: list[int]
    target: list[float]
    errors: dict[str, float]
    """The best rms error of each law considered."""


def _fit_access(stats: TraceStats, sizes: dict[int, float]) -> _Fit:
    """The access law whose predicted hit ratios are nearest the trace's READ hit ratios (least squares).

    Laws: Zipf (theta on a grid of 0.05 refined by bounded Brent), hotspot
    (hot I/O share x hot span share on a grid, refined by bounded
    Nelder-Mead, hot I/O share above hot span share) and uniform, each over
    the working set that touches the trace's footprint
    (:func:`fitted_blocks`). Uniform is preferred within :data:`SIMPLER_BY`
    of the best of the others. The target is the trace's read hit ratio
    (reads that hit, every read and write refreshing the cache: what
    :func:`compare` reports, and what a read cache serves); a trace without
    reads is fitted on all its I/Os.
    """
    lines = sorted(set(stats.cache_lines(FIT_FRACTIONS)))
    target = np.array(stats.hit_ratios(lines, reads_only=stats.reads > 0))
    footprint = max(1, stats.footprint_lines)

    def error(law: Law) -> tuple[float, int]:
        blocks = fitted_blocks(law, footprint, stats.ios, sizes)
        predicted = np.array(predicted_hit_ratios(law, blocks, stats.ios, sizes, lines))
        return float(np.sqrt(np.mean((predicted - target) ** 2))), blocks

    grid = np.arange(0.05, 5.0001, 0.05)
    errors = [error(Law("zipf", float(theta)))[0] for theta in grid]
    best = int(np.argmin(errors))
    low, high = float(grid[max(best - 1, 0)]), float(grid[min(best + 1, len(grid) - 1)])
    refined = minimize_scalar(
        lambda theta: error(Law("zipf", float(theta)))[0], bounds=(low, high), method="bounded", options={"xatol": 1e-4}
    )
    zipf = Law("zipf", round(float(refined.x) if refined.fun < errors[best] else float(grid[best]), 4))
    hotspot = _fit_hotspot(lambda law: error(law)[0], footprint)
    candidates = {law.access: (law, *error(law)) for law in (zipf, hotspot, Law("uniform"))}
    hot_law, hot_error, hot_blocks_ = candidates["hotspot"]
    candidates["hotspot"] = (_hot_span(hot_law, hot_blocks_), hot_error, hot_blocks_)
    best_law, best_error, best_blocks = min((candidates["zipf"], candidates["hotspot"]), key=lambda c: c[1])
    errors_by_law = {name: c[1] for name, c in candidates.items()}
    uniform = candidates["uniform"]
    if uniform[1] <= best_error + SIMPLER_BY:
        best_law, best_error, best_blocks = uniform
    return _Fit(best_law, best_blocks, best_error, lines, target.tolist(), errors_by_law)


def _fit_hotspot(error: Callable[[Law], float], footprint: int) -> Law:
    """The hotspot law of least ``error``: the best of a grid, refined by Nelder-Mead in (hot I/O share, log hot blocks).

    While fitting, the hot region is a number of blocks (:data:`HOT_SPANS` of the footprint), not a share of the
    working set: the working set that touches the footprint grows as the hot share of the I/Os grows, and a
    share of it would grow the hot region with it. The result's ``hot_span`` is the region over the working set.
    """

    def law(hot_io: float, hot: float) -> Law:
        return Law("hotspot", hot_io=hot_io, hot_count=max(1, round(hot)))

    grid = [(error(law(io, span * footprint)), io, span * footprint) for span in HOT_SPANS for io in HOT_IOS]
    _, io, hot = min(grid)
    low, high = 0.0, max(math.log(max(1.0, HOT_SPANS[-1] * footprint)), 1e-6)  # 1 block to half the footprint

    def objective(x: np.ndarray) -> float:
        return error(law(float(x[0]), math.exp(float(x[1]))))

    refined = minimize(
        objective,
        np.array([io, math.log(max(hot, 1.0))]),
        method="Nelder-Mead",
        bounds=[(0.01, 0.995), (low, high)],
        options={"xatol": 1e-3, "fatol": 1e-5, "maxfev": 120},
    )
    if refined.fun < error(law(io, hot)):
        io, hot = float(refined.x[0]), math.exp(float(refined.x[1]))
    return law(round(io, 4), hot)


def _hot_span(law: Law, blocks: int) -> Law:
    """``law`` with its hot region as a share of ``blocks`` (4 significant digits), hot I/O share kept above it."""
    if law.access != "hotspot" or not law.hot_count:
        return law
    span = float(f"{min(law.hot_count, blocks - 1) / blocks:.4g}")
    span = min(max(span, 1.0 / blocks), 0.999)
    hot_io = max(law.hot_io, min(0.999, float(f"{span * 1.01:.4g}")))
    return Law("hotspot", hot_io=hot_io, hot_span=span)


def sequential_share(offset: np.ndarray, size: np.ndarray, device: np.ndarray) -> float:
    """Share of I/Os (after each device's first) that start exactly where the device's previous I/O ended."""
    if len(offset) < 2:
        return 0.0
    order = np.argsort(device, kind="stable")
    dev, start, end = device[order], offset[order].astype(np.int64), offset[order].astype(np.int64) + size[order].astype(np.int64)
    same = dev[1:] == dev[:-1]
    follows = (start[1:] == end[:-1]) & same
    return float(follows.sum()) / max(1, int(same.sum()))


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
    fit = _fit_access(stats, mix)
    law, blocks, lines, target = fit.law, fit.blocks, fit.lines, fit.target
    io_rows = rows[(rows["op"] == READ) | (rows["op"] == WRITE)]
    sequential = sequential_share(io_rows["offset"], io_rows["size"], io_rows["device"])
    fields: dict[str, object] = {
        "mode": "open",
        "iops": stats.mean_rate,
        "read_fraction": stats.read_fraction,
        "sizes": {_size_name(s): float(c) for s, c in common.items()},
        "working_set": blocks * LINE,
        "access": law.access,
    }
    if law.access == "zipf":
        fields["zipf_theta"] = law.theta
    if law.access == "hotspot":
        fields["hot_io_fraction"] = law.hot_io
        fields["hot_span_fraction"] = law.hot_span
    if sequential > SEQUENTIAL_MATERIAL:
        # Geometric runs continue with probability p: mean run 1 / (1 - p), the whole trace when every I/O continues.
        fields["sequential_run"] = round(min(1.0 / (1.0 - sequential) if sequential < 1.0 else float(stats.ios), 1e9), 4)
    if len(stats.counts) > 1 and len(set(stats.counts.tolist())) > 1:
        # Evenly spaced arrivals through the profile give each interval its count (to within one): Poisson arrivals
        # would add their own variance on top of the trace's, which the counts already hold.
        fields["arrivals"] = "uniform"
        fields["duty_cycle"] = DutyCycle(shape="profile", interval=profile_interval, levels=[float(c) for c in stats.counts])
    workload = Workload.model_validate(fields)
    predicted = predicted_hit_ratios(law, blocks, stats.ios, mix, lines)
    all_hits = stats.hit_ratios(lines)
    all_error = float(np.sqrt(np.mean((np.array(predicted) - np.array(all_hits)) ** 2)))
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
            f"LRU {'read ' if stats.reads else ''}hit ratio (trace / fitted)",
            ", ".join(f"{n:,} lines {t:.3f}/{p:.3f}" for n, t, p in zip(lines, target, predicted, strict=True)),
        ),
        (
            "LRU hit ratio of all I/Os (trace / fitted)",
            ", ".join(f"{n:,} lines {t:.3f}/{p:.3f}" for n, t, p in zip(lines, all_hits, predicted, strict=True))
            + f" (rms {all_error:.4f}: the fit is on read hits, and the fitted law is one for reads and writes)",
        ),
        (
            "access",
            f"{law.describe()} (rms hit-ratio error {fit.error:.4f}; best "
            + ", ".join(f"{name} {value:.4f}" for name, value in fit.errors.items())
            + ")",
        ),
        (
            "sequential",
            f"{sequential:.1%} of the I/Os start where the previous one ended"
            + (f": sequential_run {workload.sequential_run:g}" if workload.sequential_run > 1 else " (not material: no sequential_run)"),
        ),
    ]
    if positive != stats.sizes or len(positive) > MIX_SIZES:
        facts.append(("size mix kept", f"the {len(common)} most common of {len(positive)} sizes (zero-size I/Os left out)"))
    if profile_interval != interval:
        facts.append(
            ("profile interval", f"{profile_interval:g} s (the trace is longer than {PROFILE_LEVELS:,} intervals of {interval:g} s)")
        )
    return FittedWorkload(workload, stats, fit.error, lines, target, predicted, facts)


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
