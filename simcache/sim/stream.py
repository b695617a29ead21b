"""A run without per-I/O records: latency histograms and counters, in memory that does not grow with
the I/Os.

``simulate(..., keep_records=False)`` (``simcache run --no-records``) gives each
sample's completed records to :class:`StreamStats` instead of keeping them. It
keeps, per VM and op (I/Os issued in the measurement window, as the summary
selects them): a :class:`LatencyHistogram`, the count, bytes, latency sum and
maximum, the latency components' sums, and count and sum per batch of the
batch-means CI; per sample interval (I/Os completed in it, as the series
selects them) and op: count, bytes and a histogram; and per interval and
(group, op) the I/Os issued and completed, for the in-flight series of the
validity checks. Its size is fixed by the VMs, plus a little per sample
interval (a sparse histogram: a few hundred bytes), whatever the number of I/Os.

Histogram buckets (logarithmic, as DDSketch's; HDR Histogram's log-linear
buckets give the same kind of bound): bucket ``k`` holds the latencies ``v``
with ``GAMMA**(k-1) < v <= GAMMA**k`` (ms), ``GAMMA = (1 + a) / (1 - a)``,
``a = REL_ERROR``, and stands for ``2 GAMMA**k / (GAMMA + 1)``, which is within
``a`` of every value in it: ``|v_hat - v| <= a v``. A percentile interpolates
between two order statistics as :func:`numpy.percentile` does; each is within
``a`` of the true one, so the estimate is too:

    |p_hat - p| <= REL_ERROR * p + MIN_MS

(the ``MIN_MS`` term for latencies at or below 1 ns, counted as 0), and it is
never above the exact maximum. Counts, bytes, maxima and means are exact (the
means' sums added in another order than the records' ``mean``: equal within
float rounding). Histograms merge by adding counts (:meth:`LatencyHistogram.__add__`),
across VMs, seeds and runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from simcache.sim.collect import (
    COMPLETED,
    IS_WRITE,
    ISSUED,
    LOCAL_TIER,
    PATH,
    PATH_HIT,
    PATH_REMOTE_HIT,
    SIZE,
    VM,
)

__all__ = [
    "BUCKETS",
    "GAMMA",
    "MIN_MS",
    "REL_ERROR",
    "LatencyHistogram",
    "StreamStats",
    "bucket_of",
    "percentile_of_counts",
]

REL_ERROR = 0.01
"""Relative error of a latency the histogram gives back (of a percentile, within the formula
above)."""
GAMMA = (1 + REL_ERROR) / (1 - REL_ERROR)
_LOG_GAMMA = math.log(GAMMA)
MIN_MS = 1e-6
"""Latencies at or below this (1 ns) go to bucket 0 and count as 0."""
MAX_MS = 1e8
"""Latencies above this (28 hours) count as this (the maximum column stays exact)."""
_K_MIN = math.ceil(math.log(MIN_MS) / _LOG_GAMMA)
_K_MAX = math.ceil(math.log(MAX_MS) / _LOG_GAMMA)
BUCKETS = _K_MAX - _K_MIN + 1
"""Buckets of a histogram (1,613 at 1%): bucket 0 for ``<= MIN_MS``, bucket ``b`` for ``k = b +
_K_MIN``."""
_VALUES = np.concatenate(
    ([0.0], 2 * GAMMA ** np.arange(_K_MIN + 1, _K_MAX + 1, dtype=np.float64) / (GAMMA + 1))
)

BATCHES = 10
"""Time batches of the batch-means CI (as :func:`simcache.results.summary._batch_means_ci`)."""


def bucket_of(values_ms: np.ndarray) -> np.ndarray:
    """The bucket of each latency (ms)."""
    values = np.asarray(values_ms, dtype=np.float64)
    k = np.ceil(np.log(np.maximum(values, MIN_MS)) / _LOG_GAMMA)
    buckets: np.ndarray = np.clip(k - _K_MIN, 0, BUCKETS - 1).astype(np.intp)
    buckets[values <= MIN_MS] = 0
    return buckets


def counts_of(values_ms: np.ndarray) -> np.ndarray:
    """The bucket counts of latencies ``values_ms`` (ms)."""
    return np.bincount(bucket_of(values_ms), minlength=BUCKETS).astype(np.int64)


def percentile_of_counts(counts: np.ndarray, q: float, maximum: float = math.inf) -> float:
    """Percentile ``q`` (0-100) of the latencies counted in ``counts``, interpolated as
    :func:`numpy.percentile` (``linear``) between the bucket values of the two order statistics
    around rank ``(n - 1) q / 100``; at most ``maximum`` (the exact largest latency, when known).
    NaN for no latency."""
    n = int(counts.sum())
    if n == 0:
        return math.nan
    cumulative = np.cumsum(counts)
    rank = (n - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, n - 1)
    v_low, v_high = _VALUES[np.searchsorted(cumulative, [low, high], side="right")]
    value = float(v_low + (rank - low) * (v_high - v_low))
    return min(value, maximum)


@dataclass
class LatencyHistogram:
    """Latency counts (ms) in :data:`BUCKETS` logarithmic buckets of relative error
    :data:`REL_ERROR`; add two to merge them (the histogram of both sets of latencies)."""

    counts: np.ndarray = field(default_factory=lambda: np.zeros(BUCKETS, dtype=np.int64))
    maximum: float = -math.inf

    @classmethod
    def of(cls, values_ms: np.ndarray) -> LatencyHistogram:
        values = np.asarray(values_ms, dtype=np.float64)
        return cls(counts_of(values), float(values.max()) if len(values) else -math.inf)

    def __add__(self, other: LatencyHistogram) -> LatencyHistogram:
        return LatencyHistogram(self.counts + other.counts, max(self.maximum, other.maximum))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LatencyHistogram)
            and bool(np.array_equal(self.counts, other.counts))
            and self.maximum == other.maximum
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def count(self) -> int:
        return int(self.counts.sum())

    def percentile(self, q: float) -> float:
        """Percentile ``q`` (0-100), within ``REL_ERROR * p + MIN_MS`` of the latencies' own (see
        the module)."""
        return percentile_of_counts(self.counts, q, self.maximum)


def _sparse(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    where = np.flatnonzero(counts)
    return where.astype(np.uint16), counts[where].astype(np.int64)


def _dense(sparse: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    counts = np.zeros(BUCKETS, dtype=np.int64)
    counts[sparse[0]] = sparse[1]
    return counts


@dataclass
class _Interval:
    """One sample interval's completed I/Os per op (0 read, 1 write): count, bytes, latency
    histogram."""

    count: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.int64))
    bytes: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.int64))
    hist: np.ndarray | None = field(default_factory=lambda: np.zeros((2, BUCKETS), dtype=np.int64))
    sparse: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    """The histograms once the interval can take no more I/Os (:meth:`StreamStats.add` makes them
    sparse)."""

    def histogram(self, op: int) -> np.ndarray:
        return self.hist[op] if self.hist is not None else _dense(self.sparse[op])

    def nbytes(self) -> int:
        held = (
            self.count.nbytes
            + self.bytes.nbytes
            + (self.hist.nbytes if self.hist is not None else 0)
        )
        return held + sum(a.nbytes + b.nbytes for a, b in self.sparse)


class StreamStats:
    """The figures of a run without records (see the module): built by the engine, read by
    :class:`simcache.results.result.Result`.

    Rows are ``2 * vm + op`` (op 0 read, 1 write). ``vm_group`` gives each VM's group index,
    ``vm_names`` and ``group_names`` their names; the window is ``[warmup, duration]`` (a run
    stopped early keeps it: its summary covers the I/Os issued after the planned warm-up, its CI the
    batches of the planned window that have I/Os).
    """

    def __init__(
        self,
        vm_names: Sequence[str],
        vm_group: Sequence[int],
        group_names: Sequence[str],
        warmup: float,
        duration: float,
    ):
        rows = 2 * len(vm_group)
        self.vm_names = list(vm_names)
        self.group_names = list(group_names)
        self.vm_group = np.asarray(vm_group, dtype=np.intp)
        groups = self.groups = len(group_names)
        self.warmup = warmup
        self.duration = duration
        self.edges = np.linspace(warmup, duration, BATCHES + 1)
        self.hist = np.zeros((rows, BUCKETS), dtype=np.int64)
        self.count = np.zeros(rows, dtype=np.int64)
        self.bytes = np.zeros(rows, dtype=np.int64)
        self.sum_ms = np.zeros(rows)
        self.max_ms = np.full(rows, -math.inf)
        self.components_ms = np.zeros((rows, 5))
        self.batch_count = np.zeros((rows, BATCHES), dtype=np.int64)
        self.batch_sum = np.zeros((rows, BATCHES))
        self.completed = 0
        """Every completed I/O (in the window or not)."""
        self.written_bytes = 0
        """Bytes of every completed write."""
        self.times: list[float] = []
        self.intervals: list[_Interval] = [_Interval()]
        # counts of one sample interval: int32 (2^31 I/Os in one interval is beyond any run)
        self.issued_by_interval: list[np.ndarray] = [np.zeros(2 * groups, dtype=np.int32)]
        """Per interval, completed I/Os per (group, op) row ``2 * group + op`` by the interval of
        their issue time."""
        self.completed_by_interval: list[np.ndarray] = [np.zeros(2 * groups, dtype=np.int32)]
        self.hits_by_interval: list[np.ndarray] = [np.zeros(groups, dtype=np.int32)]
        """Per interval, completed reads per group served from a host's read cache (a hit or a
        remote hit), by the interval of their issue time: with ``issued_by_interval``, a group's
        hit ratio per interval (:mod:`simcache.results.warming`)."""

    def close_interval(self, time_s: float) -> None:
        """A sample was taken at ``time_s``: the open interval ends there; the one before it can
        take no more I/Os."""
        if self.times and time_s <= self.times[-1]:
            return
        self.times.append(time_s)
        if len(self.intervals) >= 2:
            last = self.intervals[-2]
            if last.hist is not None:
                last.sparse = [_sparse(last.hist[0]), _sparse(last.hist[1])]
                last.hist = None
        self.intervals.append(_Interval())
        self.issued_by_interval.append(np.zeros(2 * self.groups, dtype=np.int32))
        self.completed_by_interval.append(np.zeros(2 * self.groups, dtype=np.int32))
        self.hits_by_interval.append(np.zeros(self.groups, dtype=np.int32))

    def add(self, data: np.ndarray) -> None:
        """Count completed I/Os ``data`` (rows in :data:`simcache.sim.collect.RECORD_FIELDS`
        order, float64)."""
        issued, completed = data[:, ISSUED], data[:, COMPLETED]
        op = (data[:, IS_WRITE] > 0).astype(np.intp)
        size = data[:, SIZE].astype(np.int64)
        latency = completed - issued
        latency *= 1e3  # as the records table's latency_ms, value for value
        self.completed += len(data)
        self.written_bytes += int(size[op == 1].sum())
        vm = data[:, VM].astype(np.intp)
        group_row = 2 * self.vm_group[vm] + op
        times = np.asarray(self.times)
        self._per_interval(
            np.searchsorted(times, completed, side="left"), op, size, latency, group_row
        )
        issue_bins = np.searchsorted(times, issued, side="left")
        for j in np.unique(issue_bins):
            np.add.at(self.issued_by_interval[j], group_row[issue_bins == j], 1)
        path = data[:, PATH]
        hit = (op == 0) & ((path == PATH_HIT) | (path == PATH_REMOTE_HIT))
        for j in np.unique(issue_bins[hit]):
            mine = hit & (issue_bins == j)
            np.add.at(self.hits_by_interval[j], self.vm_group[vm[mine]], 1)
        inside = issued >= self.warmup
        if not inside.any():
            return
        row = (2 * vm + op)[inside]
        latency = latency[inside]
        rows = len(self.count)
        self.count += np.bincount(row, minlength=rows)
        self.bytes += np.bincount(row, weights=size[inside], minlength=rows).astype(np.int64)
        self.sum_ms += np.bincount(row, weights=latency, minlength=rows)
        np.maximum.at(self.max_ms, row, latency)
        np.add.at(self.hist, (row, bucket_of(latency)), 1)
        for c in range(5):
            self.components_ms[:, c] += np.bincount(
                row, weights=data[inside, LOCAL_TIER + c] * 1e3, minlength=rows
            )
        batch = np.clip(
            np.searchsorted(self.edges, issued[inside], side="right") - 1, 0, BATCHES - 1
        )
        np.add.at(self.batch_count, (row, batch), 1)
        np.add.at(self.batch_sum, (row, batch), latency)

    def _per_interval(
        self,
        bins: np.ndarray,
        op: np.ndarray,
        size: np.ndarray,
        latency: np.ndarray,
        group_row: np.ndarray,
    ) -> None:
        for j in np.unique(bins):
            interval = self.intervals[j]
            mine = bins == j
            mine_op = op[mine]
            interval.count += np.bincount(mine_op, minlength=2)
            interval.bytes += np.bincount(mine_op, weights=size[mine], minlength=2).astype(np.int64)
            counts = np.zeros((2, BUCKETS), dtype=np.int64)
            np.add.at(counts, (mine_op, bucket_of(latency[mine])), 1)
            if interval.hist is not None:
                interval.hist += counts
            else:  # a late I/O of a closed interval (none in practice: see close_interval)
                interval.sparse = [_sparse(interval.histogram(o) + counts[o]) for o in (0, 1)]
            np.add.at(self.completed_by_interval[j], group_row[mine], 1)

    def nbytes(self) -> int:
        """Bytes of the arrays held (the fixed part, and the per-interval part)."""
        fixed = sum(
            a.nbytes
            for a in (
                self.hist,
                self.count,
                self.bytes,
                self.sum_ms,
                self.max_ms,
                self.components_ms,
                self.batch_count,
                self.batch_sum,
            )
        )
        per_interval = sum(i.nbytes() for i in self.intervals) + sum(
            a.nbytes
            for a in self.issued_by_interval + self.completed_by_interval + self.hits_by_interval
        )
        return fixed + per_interval

    # -- views for the result
    # -------------------------------------------------------------------------------------

    def rows_of(self, vms: np.ndarray, op: int) -> np.ndarray:
        """The rows of VMs ``vms`` for op ``op``."""
        return 2 * np.asarray(vms, dtype=np.intp) + op

    def histogram(self, rows: np.ndarray) -> LatencyHistogram:
        """The window's latency histogram of ``rows`` together."""
        maximum = float(self.max_ms[rows].max()) if len(rows) else -math.inf
        return LatencyHistogram(self.histogram_counts(rows), maximum)

    def histogram_counts(self, rows: np.ndarray) -> np.ndarray:
        """The bucket counts of ``rows`` together, summed 256 rows at a time (a 1,024-VM model's
        rows copied at once are 13 MB)."""
        rows = np.asarray(rows, dtype=np.intp)
        counts = np.zeros(BUCKETS, dtype=np.int64)
        for start in range(0, len(rows), 256):
            counts += self.hist[rows[start : start + 256]].sum(axis=0)
        return counts
