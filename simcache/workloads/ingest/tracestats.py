"""Statistics of a block trace's reads and writes, and their exact LRU stack distances.

Split out of :mod:`simcache.workloads.ingest.fit` (which re-exports the public names): the
I/O counts per interval and their dispersion, the timestamps' clock tick and the inter-arrival
times' variability (:func:`clock_tick`, :func:`interarrival_scv`), the stack-distance pass
(:func:`stack_distances`, :func:`io_distances`) and the hit ratios it gives,
:class:`TraceStats` / :func:`trace_stats`, and :func:`sequential_share`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simcache.traces.trace import OP_NAMES, READ, ROW, WRITE, Trace
from simcache.workloads.generators import BLOCK

__all__ = [
    "CLOCK_TICKS",
    "COLD",
    "LINE",
    "TraceStats",
    "clock_tick",
    "dispersion",
    "hit_ratios",
    "interarrival_scv",
    "interval_counts",
    "io_distances",
    "sequential_share",
    "stack_distances",
    "trace_stats",
    "whole_intervals",
]

LINE = BLOCK
"""Bytes per cache line and per block of the footprint (4 KiB)."""
COLD = np.iinfo(np.int64).max
"""The stack distance of a first reference (a miss at every cache size)."""
CLOCK_TICKS = tuple(float(f"1e-{k}") for k in range(10))
"""The clock ticks :func:`clock_tick` tells apart, in seconds: 1 s down to 1 ns."""


def interval_counts(times: np.ndarray, interval: float, duration: float) -> np.ndarray:
    """I/Os in each interval ``[k interval, (k + 1) interval)`` of ``[0, duration)``; times past
    the end count in the last one."""
    bins = max(1, math.ceil(duration / interval - 1e-9))
    index = np.minimum(np.floor(np.asarray(times) / interval).astype(np.int64), bins - 1)
    return np.bincount(index, minlength=bins)


def whole_intervals(times: np.ndarray, interval: float) -> float:
    """Seconds from 0 (the first I/O) to the end of the interval holding the last of ``times``
    (in order): whole intervals, at least one."""
    return (math.floor(float(times[-1]) / interval) + 1) * interval if len(times) else interval


def dispersion(counts: np.ndarray) -> float:
    """Index of dispersion of counts: population variance over mean (1 for a Poisson stream, more
    for bursts; 0 if no I/O)."""
    mean = float(np.mean(counts)) if len(counts) else 0.0
    return float(np.var(counts)) / mean if mean > 0 else 0.0


def clock_tick(times: np.ndarray) -> float:
    """The coarsest of :data:`CLOCK_TICKS` (seconds) of which every time is a whole multiple: the
    resolution the trace's timestamps were written at (times from its first I/O).

    1 s for whole-second timestamps, 1e-6 for microseconds; 1e-9 also for times finer than that or
    on no decimal clock (e.g. read as floats from large epoch seconds, whose rounding is then
    taken for sub-tick timing: the tick may come out finer than the clock, never coarser). A
    time is taken as a multiple when within a millionth of a tick of one (plus float rounding).
    """
    times = np.asarray(times, dtype=np.float64)
    for tick in CLOCK_TICKS:
        ticks = times / tick
        slack = 1e-6 + 8 * np.finfo(np.float64).eps * np.abs(ticks)
        if bool(np.all(np.abs(ticks - np.rint(ticks)) <= slack)):
            return tick
    return CLOCK_TICKS[-1]


def interarrival_scv(times: np.ndarray) -> float:
    """Squared coefficient of variation (population variance over squared mean) of the gaps between
    successive times (seconds, in order): 0 for evenly spaced arrivals, 1 for Poisson ones, more
    for bursts. NaN for fewer than two times or when they are all equal (no gaps to measure)."""
    gaps = np.diff(np.asarray(times, dtype=np.float64))
    mean = float(gaps.mean()) if len(gaps) else 0.0
    return float(gaps.var()) / mean**2 if mean > 0 else math.nan


def _lines(
    offset: np.ndarray, size: np.ndarray, device: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(line key of every line each I/O covers, in I/O order and ascending within an I/O; lines per
    I/O).

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
    """Each reference's LRU stack distance: distinct other keys referenced since the same key's last
    reference (:data:`COLD` if none).

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
    # First references (prev = -1) are below every other value: count them by a running sum and
    # merge-sort the rest.
    warm = np.flatnonzero(prev >= 0)
    # prev[i] >= 0 here, so the running count excludes i itself
    cold_before = np.cumsum(prev < 0)[warm]
    distances = np.full(n, COLD, dtype=np.int64)
    distances[warm] = cold_before + _smaller_before(prev[warm]) - prev[warm] - 1
    return distances


def _smaller_before(values: np.ndarray) -> np.ndarray:
    """For each position i, how many positions j < i hold a smaller value (non-negative
    integers)."""
    n = len(values)
    # keys block * shift + value sort by block, then value
    shift = int(values.max()) + 1 if n else 1
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
        # In the left sibling (sorted), the entries below this value: searched among all keys at
        # once.
        found = np.searchsorted(keys, left_block * shift + current[right], side="left")
        counts[right] += found - left_block * width
        merged = np.argsort((index // (2 * width)) * shift + current, kind="stable")
        current, counts, position = current[merged], counts[merged], position[merged]
        width *= 2
    result = np.empty(n, dtype=np.int64)
    result[position] = counts
    return result


def io_distances(
    offset: np.ndarray, size: np.ndarray, device: np.ndarray | None = None
) -> np.ndarray:
    """Per I/O, the largest stack distance of its lines: it hits an LRU cache of ``C`` lines iff
    this is below ``C``."""
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
    return [
        float(np.searchsorted(ordered, lines, side="left")) / len(ordered) for lines in cache_lines
    ]


@dataclass
class TraceStats:
    """What :func:`fit_trace` and :func:`compare` measure of a stream of reads and writes (times
    in s from its start)."""

    ios: int
    reads: int
    duration: float
    """Seconds the stream covers: whole intervals from its first I/O to its last."""
    times: np.ndarray
    """Each I/O's time, seconds from the first."""
    tick: float
    """The timestamps' resolution in seconds (:func:`clock_tick`)."""
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
    line_references: int
    """4 KiB lines the I/Os cover, counted once per I/O (the footprint when no block is touched
    twice)."""
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
        minutes = (
            np.add.reduceat(self.per_second, np.arange(0, len(self.per_second), 60))
            if len(self.per_second)
            else self.per_second
        )
        return int(minutes.max()) if len(minutes) else 0

    @property
    def dispersion_second(self) -> float:
        return dispersion(self.per_second)

    def counts_at(self, resolution: float) -> np.ndarray:
        """I/Os per ``resolution`` seconds from the first I/O, over :attr:`duration`."""
        return interval_counts(self.times, resolution, self.duration)

    @property
    def interarrival_mean(self) -> float:
        """Mean seconds between successive I/Os (NaN for fewer than two)."""
        return float(np.mean(np.diff(self.times))) if self.ios > 1 else math.nan

    @property
    def interarrival_scv(self) -> float:
        """The inter-arrival times' squared coefficient of variation (:func:`interarrival_scv`)."""
        return interarrival_scv(self.times)

    @property
    def outstanding(self) -> float:
        """Mean I/Os in flight by Little's law (rate x mean latency); NaN without latencies."""
        return self.mean_rate * self.mean_latency

    def hit_ratios(self, cache_lines: Sequence[int], reads_only: bool = False) -> list[float]:
        return hit_ratios(
            self.distances[self.is_read] if reads_only else self.distances, cache_lines
        )

    def cache_lines(self, fractions: Sequence[float]) -> list[int]:
        """Cache sizes in lines at these fractions of the footprint (at least one line)."""
        return [max(1, round(f * self.footprint_lines)) for f in fractions]


def trace_stats(rows: np.ndarray, interval: float = 1.0) -> TraceStats:
    """Statistics of rows of :data:`simcache.traces.trace.ROW` (their reads and writes; time
    measured from the first of them)."""
    if not interval > 0:
        raise ValueError(f"interval must be positive seconds (got {interval})")
    rows = rows[(rows["op"] == READ) | (rows["op"] == WRITE)]
    ios = len(rows)
    times = rows["time"] - rows["time"][0] if ios else rows["time"]
    duration = whole_intervals(times, interval)
    is_read = rows["op"] == READ
    sizes = rows["size"].astype(np.int64)
    by_op = {}
    for code in (READ, WRITE):
        values, counts = np.unique(sizes[rows["op"] == code], return_counts=True)
        by_op[OP_NAMES[code]] = dict(zip(values.tolist(), counts.tolist(), strict=True))
    values, counts = np.unique(sizes, return_counts=True)
    lines, _ = (
        _lines(rows["offset"], sizes, rows["device"]) if ios else (np.zeros(0, np.int64), None)
    )
    latency = rows["latency"].astype(np.float64)
    finite = latency[np.isfinite(latency)]
    return TraceStats(
        ios=ios,
        reads=int(is_read.sum()),
        duration=duration,
        times=np.asarray(times, dtype=np.float64),
        tick=clock_tick(times),
        interval=interval,
        counts=interval_counts(times, interval, duration),
        per_second=interval_counts(times, 1.0, duration),
        sizes=dict(zip(values.tolist(), counts.tolist(), strict=True)),
        sizes_by_op=by_op,
        footprint_lines=len(np.unique(lines)),
        line_references=len(lines),
        distances=io_distances(rows["offset"], sizes, rows["device"]),
        is_read=is_read,
        mean_latency=float(finite.mean()) if len(finite) else math.nan,
    )


def _selected_rows(trace: Trace, device: str | None) -> np.ndarray:
    if device is not None and device not in trace.devices:
        raise ValueError(
            f"device {device!r} is not in the trace; it has {', '.join(trace.devices) or 'none'}"
        )
    code = None if device is None else trace.devices.index(device)
    parts = [
        block[(block["device"] == code) if code is not None else slice(None)]
        for block in trace.blocks()
    ]
    return np.concatenate(parts) if parts else np.empty(0, dtype=ROW)


def sequential_share(offset: np.ndarray, size: np.ndarray, device: np.ndarray) -> float:
    """Share of I/Os (after each device's first) that start exactly where the device's previous
    I/O ended."""
    if len(offset) < 2:
        return 0.0
    order = np.argsort(device, kind="stable")
    dev, start, end = (
        device[order],
        offset[order].astype(np.int64),
        offset[order].astype(np.int64) + size[order].astype(np.int64),
    )
    same = dev[1:] == dev[:-1]
    follows = (start[1:] == end[:-1]) & same
    return float(follows.sum()) / max(1, int(same.sum()))
