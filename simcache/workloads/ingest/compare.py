"""A block trace's statistics next to a synthetic workload's: :func:`compare` generates one VM of
the workload for as long as the trace (with :class:`~simcache.workloads.generators.IOStream`, as
:func:`synthetic_rows`; no simulation) and gives each statistic of both with its relative error.

It checks a fitted workload (:func:`simcache.workloads.ingest.fit.fit_trace`) against the trace it
was fitted to, or any open-loop workload against a trace (``simcache compare-trace``); the
statistics themselves are measured by :mod:`simcache.workloads.ingest.tracestats`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from simcache.spec import Group, Workload
from simcache.traces.trace import READ, ROW, WRITE, Trace
from simcache.workloads.generators import IOStream
from simcache.workloads.ingest.fitarrivals import duration_text
from simcache.workloads.ingest.tracestats import TraceStats, _selected_rows, dispersion, trace_stats

__all__ = ["COMPARE_FRACTIONS", "SUB_SECOND", "busiest", "compare", "size_name", "synthetic_rows"]

COMPARE_FRACTIONS = (0.01, 0.1, 0.5, 1.0)
"""Cache sizes, as fractions of the trace's footprint, at which :func:`compare` reports read and
all-I/O hit ratios."""
SUB_SECOND = 0.1
"""Seconds per bin of :func:`compare`'s sub-second rows (for a trace whose timestamps are this
fine or finer)."""


def size_name(size: int) -> str:
    """``size`` (bytes) as a scenario writes it: ``"64KiB"``, ``"1MiB"``, else ``"512B"``."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size}B"


def busiest(stats: TraceStats, resolution: float) -> int:
    """The I/Os in the busiest bin of ``resolution`` seconds of ``stats``' trace (0 without
    I/Os)."""
    counts = stats.counts_at(resolution)
    return int(counts.max()) if len(counts) else 0


def synthetic_rows(
    workload: Workload, duration: float, seed: int | np.random.SeedSequence = 0
) -> np.ndarray:
    """The I/Os an open-loop ``workload`` issues in ``[0, duration)`` as
    :data:`simcache.traces.trace.ROW` rows (one VM, no simulation)."""
    if workload.mode != "open":
        raise ValueError(
            f'compare needs an open-loop synthetic workload (this one is mode = "{workload.mode}")'
        )
    stream = IOStream(
        workload, seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    )
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


def _op_size_rows(measured: TraceStats, generated: TraceStats) -> list[tuple[str, float, float]]:
    """Per op the trace has: its mean size, and the shares of its five most common sizes among
    that op's I/Os."""
    rows: list[tuple[str, float, float]] = []
    for op in ("read", "write"):
        trace_sizes, synthetic_sizes = (
            measured.sizes_by_op.get(op, {}),
            generated.sizes_by_op.get(op, {}),
        )
        trace_ios, synthetic_ios = sum(trace_sizes.values()), sum(synthetic_sizes.values())
        if not trace_ios:
            continue
        synthetic_mean = (
            sum(s * c for s, c in synthetic_sizes.items()) / synthetic_ios if synthetic_ios else 0.0
        )
        rows.append(
            (
                f"mean {op} size (bytes)",
                sum(s * c for s, c in trace_sizes.items()) / trace_ios,
                synthetic_mean,
            )
        )
        for size, count in sorted(trace_sizes.items(), key=lambda item: -item[1])[:5]:
            share = synthetic_sizes.get(size, 0) / synthetic_ios if synthetic_ios else 0.0
            rows.append((f"share of {size_name(size)} among {op}s", count / trace_ios, share))
    return rows


def compare(
    trace: Trace,
    synthetic: Workload | Group,
    seed: int = 0,
    device: str | None = None,
    fractions: Sequence[float] = COMPARE_FRACTIONS,
    resolution: float | None = None,
) -> pd.DataFrame:
    """The trace's statistics next to one VM of ``synthetic`` generated for as long, with the
    relative error of each.

    "As long": from the first I/O to the last, rounded up to whole steps of
    the workload's ``profile`` duty cycle when they are shorter than a second
    (one pass of a profile fitted to the trace), else to whole seconds.

    Rows: at ``resolution`` seconds, when there is one, the I/Os in the
    busiest bin and the index of dispersion of the counts (fixed bins from
    the first I/O); the mean inter-arrival time and its squared coefficient
    of variation (SCV: variance / mean^2); busiest second and minute (1 s and
    60 s bins), index of dispersion of the per-second counts, mean rate, read
    fraction, mean size, the trace's five most common sizes (share of I/Os),
    per op (reads, writes) its mean size and its five most common sizes
    (share of that op's I/Os), read hit ratios and all-I/O hit ratios (reads
    and writes that hit) at ``fractions`` of the trace's footprint (same cache
    sizes in lines for both) and footprint. ``resolution`` ``None``:
    :data:`SUB_SECOND` (100 ms) when the trace's timestamps are that fine
    (:func:`~simcache.workloads.ingest.tracestats.clock_tick`), else none;
    the inter-arrival rows too need timestamps finer than a second. Columns:
    ``statistic``, ``trace``, ``synthetic``, ``relative_error`` ((synthetic -
    trace) / trace).
    """
    if resolution is not None and not resolution > 0:
        raise ValueError(f"resolution must be positive seconds (got {resolution})")
    workload = synthetic.workload if isinstance(synthetic, Group) else synthetic
    duty = workload.duty_cycle
    # The synthetic runs as long as the trace in whole steps of a sub-second profile (one pass of
    # a profile fitted to it), else in whole seconds.
    step = min(1.0, duty.interval or 1.0) if duty is not None and duty.shape == "profile" else 1.0
    measured = trace_stats(_selected_rows(trace, device), step)
    generated = trace_stats(synthetic_rows(workload, measured.duration, seed))
    lines = measured.cache_lines(fractions)
    if resolution is None and measured.tick <= SUB_SECOND:
        resolution = SUB_SECOND
    rows: list[tuple[str, float, float]] = []
    if resolution is not None:
        bins = duration_text(resolution)
        rows += [
            (
                f"I/Os in busiest {bins}",
                busiest(measured, resolution),
                busiest(generated, resolution),
            ),
            (
                f"index of dispersion ({bins} counts)",
                dispersion(measured.counts_at(resolution)),
                dispersion(generated.counts_at(resolution)),
            ),
        ]
    if measured.tick < 1.0:
        rows += [
            (
                "mean inter-arrival time (ms)",
                measured.interarrival_mean * 1e3,
                generated.interarrival_mean * 1e3,
            ),
            ("inter-arrival time SCV", measured.interarrival_scv, generated.interarrival_scv),
        ]
    rows += [
        ("I/Os in busiest second", measured.busiest_second, generated.busiest_second),
        ("I/Os in busiest minute", measured.busiest_minute, generated.busiest_minute),
        (
            "index of dispersion (1 s counts)",
            measured.dispersion_second,
            generated.dispersion_second,
        ),
        ("mean rate (I/O/s)", measured.mean_rate, generated.ios / measured.duration),
        ("read fraction", measured.read_fraction, generated.read_fraction),
        ("mean size (bytes)", measured.mean_size, generated.mean_size),
    ]
    for size, count in sorted(measured.sizes.items(), key=lambda item: -item[1])[:5]:
        share = generated.sizes.get(size, 0) / generated.ios if generated.ios else 0.0
        rows.append((f"share of {size_name(size)} I/Os", count / measured.ios, share))
    rows += _op_size_rows(measured, generated)
    trace_hits, synthetic_hits = (
        measured.hit_ratios(lines, reads_only=True),
        generated.hit_ratios(lines, reads_only=True),
    )
    for fraction, n, t, s in zip(fractions, lines, trace_hits, synthetic_hits, strict=True):
        rows.append((f"read hit ratio, cache {fraction:.0%} of footprint ({n:,} lines)", t, s))
    trace_hits, synthetic_hits = measured.hit_ratios(lines), generated.hit_ratios(lines)
    for fraction, n, t, s in zip(fractions, lines, trace_hits, synthetic_hits, strict=True):
        rows.append((f"all-I/O hit ratio, cache {fraction:.0%} of footprint ({n:,} lines)", t, s))
    rows.append(("footprint (bytes)", measured.footprint, generated.footprint))
    return pd.DataFrame(
        [(name, float(t), float(s), _relative_error(float(t), float(s))) for name, t, s in rows],
        columns=["statistic", "trace", "synthetic", "relative_error"],
    )
