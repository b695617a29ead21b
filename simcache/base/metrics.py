"""The metric vocabulary shared by results, the estimate, scenario checks and reports.

The summary and percentile columns (:data:`SUMMARY_COLUMNS`, :data:`ESTIMATED_COLUMNS`,
:data:`PERCENTILES`) are defined here once; results, the estimate, the CLI, sweeps
and the app use them.

One reference table per source of numbers: what each metric means and its
unit. Scenario expectations (``[[expect]]``) name metrics from here, so a
typo is caught when the scenario is loaded, not after a long run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from simcache.base.units import UnitError, parse_bandwidth, parse_duration, parse_size

__all__ = [
    "ESTIMATED_COLUMNS",
    "HEADLINE_PERCENTILES",
    "PERCENTILES",
    "RECORD_METRICS",
    "SUMMARY_COLUMNS",
    "THROUGHPUT_COLUMNS",
    "TOTALS",
    "VALIDITY",
    "bound_value",
    "ci95_half_width",
    "linear_percentiles",
    "metric_unit",
]

PERCENTILES: dict[str, float] = {"p50_ms": 50.0, "p95_ms": 95.0, "p99_ms": 99.0, "p999_ms": 99.9}
"""The latency percentile columns (ms) of a summary, and the percentile each one is."""
HEADLINE_PERCENTILES = ("p50_ms", "p99_ms")
"""The percentiles given per sample interval in the series (``write_p99_ms``) and in headlines."""
THROUGHPUT_COLUMNS = ("count", "iops", "mb_s")
"""A summary's I/O count, I/Os per second and MB/s (10^6 bytes) over the measurement window."""
SUMMARY_COLUMNS = (
    "count",
    "unfinished",
    "iops",
    "mb_s",
    "mean_ms",
    "mean_ci95_ms",
    *PERCENTILES,
    "max_ms",
    "lower_bounds",
)
"""A simulation's summary columns per group and op (after ``group`` and ``op``), in order (see
:mod:`simcache.results.result`)."""
ESTIMATED_COLUMNS = (*THROUGHPUT_COLUMNS, "mean_ms", *PERCENTILES)
"""The summary columns an analytic estimate gives too, in order (sweeps report these for both)."""

RECORD_METRICS: dict[str, str] = {
    "count": "completed I/Os in the selection",
    "unfinished": "I/Os of the selection issued but not completed when the run stopped",
    "iops": "completed I/Os per second of the window",
    "mb_s": "payload MB/s (10^6 bytes) of the window",
    "mean_ms": "mean VM-observed latency",
    "p50_ms": "median latency",
    "p95_ms": "95th percentile latency",
    "p99_ms": "99th percentile latency",
    "p999_ms": "99.9th percentile latency",
    "max_ms": "largest latency",
    "mean_outstanding": "mean I/Os in flight (sum of latencies / window; Little's law)",
    "max_outstanding": "most I/Os of the selection in flight at once",
    "local_tier_ms": "mean time in the local tier (queue + service)",
    "network_ms": "mean time on the network (replica legs, iSCSI transfers)",
    "peer_tier_ms": "mean time in the peers' tiers beyond the network",
    "destage_wait_ms": "mean wait for destage-buffer space",
    "array_ms": "mean time in the backing array",
    "hit_ratio": (
        "share of the selection's reads served by a tier (path hit; select op = read or any)"
    ),
}
"""Computed from the I/O records selected by group, op, host and window."""

TOTALS: dict[str, str] = {
    "duration_s": "simulated seconds",
    "vm_written_bytes": "bytes of completed VM writes",
    "destage_accepted_bytes": "bytes accepted into destage buffers",
    "destaged_bytes": "bytes written to the array by destagers",
    "data_lost_bytes": "unreplicated buffered bytes lost to host failures",
    "wb_written_through_bytes": "bytes of write-back groups' writes completed write-through "
    "instead (their host's tier "
    "had failed, or they were short of peers under on_peer_loss = write_through)",
    "ios_unfinished_at_end": "I/Os issued but not complete when the run stopped, a failed host's "
    "lost ones included "
    "(Result.unfinished lists those of live hosts, with their issue times)",
    "destage_backlog_bytes": "bytes still buffered for destaging at the end",
    "destage_batches": "destage writes issued to the array",
    "destage_runs": "buffered writes merged into those batches",
    "replica_bytes_held": "replica bytes held on peers at the end",
    "array_written_bytes": "bytes the array wrote (front end)",
    "array_read_bytes": "bytes the array read (front end)",
    "array_write_mb_s": "array front-end write rate over the whole run",
    "array_front_end_ios": "I/Os the array received",
    "array_back_end_ios": "disk operations after the RAID penalty",
    "replica_payload_bytes": "replica payload sent to peers",
    "replica_payload_mb_s": "replica payload rate over the whole run",
    "peer_wire_bytes": "bytes on the peer network's wires, framing and vMotion included",
    "peer_wire_mb_s": "peer wire rate over the whole run",
    "peer_packets": "packets sent on the peer network",
    "peer_packets_per_payload_mb": "peer packets per MB of replica payload (MTU efficiency)",
    "storage_wire_bytes": "bytes on the storage network's wires",
    "vmotion_bytes_scheduled": "bytes of vMotion transfers in the scenario",
    "compression_saved_bytes": "replica payload bytes saved by compression",
    "tier_gc_wait_s": "seconds writes waited for flash garbage collection, all hosts added up",
    "cache_hits": "reads served by a tier",
    "cache_misses": "reads that went to the array",
}
"""Whole-run totals (``Result.totals``), usable in checks as ``totals.<name>``."""

VALIDITY: dict[str, str] = {
    "stable": "1 when the run shows no instability warning (Result.stable), else 0",
    "unstable_warnings": (
        "how many instability warnings the run gives (growing queues, a full destage buffer, "
        "overload)"
    ),
}
"""The run's validity (:mod:`simcache.results.validity`), usable in checks as
``validity.<name>``."""

_UNITS = (("_ms", "ms"), ("_bytes", "bytes"), ("_mb_s", "MB/s"), ("_s", "s"))


def metric_unit(metric: str) -> str:
    """The unit a metric is reported in, from its name's suffix ("" for counts and ratios)."""
    name = "_" + metric.rpartition(".")[2]
    for suffix, unit in _UNITS:
        if name.endswith(suffix):
            return unit
    return ""


def bound_value(metric: str, bound: float | str, *, ratio: bool = False) -> float:
    """A check's bound as a number in the metric's unit: ``"5ms"`` -> 5.0 for a ``*_ms`` metric.

    A ratio is a plain number, so it takes no unit. A bound that is not a finite number (``"inf"``,
    ``"nan"``, ``"1e400"``) bounds nothing and is refused.
    """
    unit = "" if ratio else metric_unit(metric)
    kind = "a ratio" if ratio else f"{metric} (unit {unit or 'none'})"
    if not isinstance(bound, str):
        value = float(bound)
    else:
        try:
            if unit == "ms":
                value = parse_duration(bound) * 1e3
            elif unit == "s":
                value = parse_duration(bound)
            elif unit == "bytes":
                value = float(parse_size(bound))
            elif unit == "MB/s":
                value = parse_bandwidth(bound) / 1e6
            else:
                value = float(bound)
        except (UnitError, ValueError):
            raise ValueError(
                f"cannot read bound {bound!r} for {kind}; give a number or a quantity such as "
                "'5ms', '120MB/s', '1GiB'"
            ) from None
    if not math.isfinite(value):
        raise ValueError(
            f"bound {bound!r} for {kind} is not a finite number, which bounds nothing; give a "
            "finite number or quantity"
        )
    return value


def ci95_half_width(values: Sequence[float] | np.ndarray) -> float:
    """Half-width of the 95% confidence interval of the mean: t(0.975, n - 1) x s / sqrt(n) (NaN
    below two values)."""
    # Here, not at the top (each sweep worker pays an import), and scipy.special, not scipy.stats
    # (0.66 s to import): stats.t.ppf(q, df) is stdtrit(df, q), the same float.
    from scipy.special import stdtrit

    n = len(values)
    if n < 2:
        return math.nan
    return float(stdtrit(n - 1, 0.975) * np.std(values, ddof=1) / math.sqrt(n))


def linear_percentiles(values: np.ndarray, percents: Sequence[float]) -> list[float]:
    """``numpy.percentile(values, percents).tolist()`` (its default ``linear`` method) of a
    one-dimensional float64 array: the same figures bit for bit at a fraction of the call's cost,
    which is mostly numpy's argument handling (a run's series asks for two percentiles of each op
    in each of its samples). ``values`` is partitioned in place.

    As numpy computes it: percentile ``p`` sits at the virtual index ``v = (n - 1) * (p / 100)``
    of the sorted values, between ranks ``i = floor(v)`` and ``i + 1`` (both the last one when
    ``v >= n - 1``, ``i`` then counting as -1 in the weight), weight ``g = v - i``; the figure is
    ``a + (b - a) * g`` below ``g = 0.5`` and ``b - (b - a) * (1 - g)`` from there (numpy's
    ``_lerp``: the closer neighbour is the exact end). A NaN among the values (sorted last) makes
    every figure NaN; no values, every figure NaN too (numpy's with a warning)."""
    top = len(values) - 1
    if top < 0:
        return [math.nan] * len(percents)
    places: list[tuple[int, int, float]] = []
    ranks = {top}  # the last rank: the NaN check and any percent at or past it
    for percent in percents:
        virtual = top * (percent / 100.0)
        if virtual >= top:  # at or past the last rank: the largest value
            places.append((top, top, virtual + 1.0))
            continue
        lower = math.floor(virtual)
        places.append((lower, lower + 1, virtual - lower))
        ranks.update((lower, lower + 1))
    values.partition(sorted(ranks))
    if math.isnan(values[top]):
        return [math.nan] * len(places)
    figures = []
    for lower, upper, weight in places:
        a = float(values[lower])
        b = float(values[upper])
        span = b - a
        figures.append(b - span * (1.0 - weight) if weight >= 0.5 else a + span * weight)
    return figures
