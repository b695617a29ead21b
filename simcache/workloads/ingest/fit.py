"""A synthetic workload fitted to a block trace.

:func:`fit_trace` measures a trace (one device or all of them) and derives an
open-loop :class:`~simcache.spec.Workload` that reproduces it in the
statistics the simulator is sensitive to:

- rate and arrivals: the mean I/O rate as ``iops`` (so the mean inter-arrival
  time is the trace's) and the I/O count of every ``interval`` as a
  ``profile`` duty cycle (so bursts recur where the trace had them), with the
  interval and the arrival law within it (``uniform``: evenly spaced;
  ``poisson``) chosen so that the inter-arrival times' squared coefficient of
  variation (SCV) is the trace's: the coarsest of 1 s, 100 ms, 10 ms and 1 ms
  (no finer than the trace's timestamps) whose law comes within 10% of it
  (:mod:`simcache.workloads.ingest.fitarrivals`). Structure finer than the
  interval is the law's, not the trace's; a trace with whole-second
  timestamps keeps every second's count, evenly spaced;
- mix: the read fraction and the size mix, the 64 most common sizes: one
  ``sizes`` for all ops, or ``read_sizes`` and ``write_sizes`` when the
  reads' and writes' sizes differ beyond chance (a chi-square test of
  homogeneity of their size counts at p < :data:`OP_MIX_P_VALUE`,
  :func:`op_mixes_differ`); the generator takes nothing else per op (one
  arrival law and one access law for both), so the rest is fitted on all
  I/Os;
- locality: the access pattern is the law (uniform, Zipf with ``theta``, or
  ``hotspot`` with ``hot_io_fraction`` and ``hot_span_fraction``) whose
  predicted LRU hit ratios best match the trace's READ hit ratios (reads
  that hit, every read and write refreshing the cache: what
  :func:`~simcache.workloads.ingest.compare.compare` reports and what a read
  cache serves) at cache sizes of
  1% to 100% of the footprint (distinct 4 KiB blocks touched; least
  squares), and ``working_set`` is the one over which that law touches as
  many blocks as the trace did in as many I/Os (the footprint, or more:
  :func:`fitted_blocks`). When no law reaches the footprint (up to 1000 times
  it), or the trace touches every block once, the trace does not identify the
  working set: the facts say it is at least the footprint and a warning says
  to set it. The generator's law is one for reads and writes,
  so a trace whose reads and writes go to different places (hot reads,
  scattered writes) is fitted for its reads: the synthetic's writes then
  re-reference as its reads do, and its footprint is smaller (the fit's
  facts give the all-I/O hit ratios beside the read ones);
- runs: ``sequential_run`` = ``1 / (1 - p)`` when the share ``p`` of I/Os that
  start exactly where their device's previous I/O ended is above
  :data:`SEQUENTIAL_MATERIAL` (:func:`sequential_share`);

The trace's hit ratios are exact: one stack-distance pass
(:func:`stack_distances`) gives every access's LRU distance, from which the
hit ratio at any cache size follows. The cache model is the simulator's
read cache (:class:`simcache.sim.components.cache.ReadCache`): 4 KiB lines, every
read and write refreshes its lines, and an I/O hits only if all its lines
are cached (a partial hit is a miss).

The synthetic's hit ratios are predicted analytically with Che's
approximation (Che, Tung and Wang, IEEE JSAC 20(7), 2002) over the
generator's own block probabilities (the exact discrete Zipf law of
:class:`simcache.physics.locality.ZipfRanks`; for ``hotspot`` two uniform classes,
the hot blocks and the cold ones, with the generator's rounding of the hot
region), with a finite horizon: a line referenced at rate ``q`` is cached
at reference ``t`` with probability ``1 - exp(-q min(t, T_C))``, averaged
over the trace's length, so cold misses count as they do in the trace.
Every I/O (of the mix of all ops) refreshes lines; the reads that may hit
are of the reads' mix when the ops have their own mixes. An
I/O of several lines over scattered Zipf ranks is taken to hit when its
start block was the start of an I/O at least as long within the
characteristic time; over a contiguous region (uniform, hotspot) when its
lines were all covered by the region's I/Os (:func:`_covered`: a Boolean
model, within 0.03 of the generator on the example's size mix)
(:func:`predicted_hit_ratios`). The generator draws position independently
of op and size, so its predicted read hit ratio is that of an I/O of the
reads' size mix: that is what is matched to the trace's read hit ratio.

Measured on ``examples/vm-burst.csv`` (hot 4-8 KiB reads in ~20,000 blocks,
random 64-128 KiB burst writes over 1 GiB), ``compare-trace`` read hit
ratios at 1/10/50/100% of the footprint, trace 0.683/0.690/0.792/0.819:
fitted on all I/Os with Zipf, 0.076/0.218/0.343/0.364 (-89% to -56%);
fitted on read hits with hotspot (73% of the I/Os to 357 blocks),
0.672/0.725/0.727/0.727 (-1.7%, +5.1%, -8.3%, -11.3%), but the footprint
is 35% of the trace's (was 75%), and all-I/O hit ratios are about 0.73
against the trace's 0.20-0.28. With per-op size mixes (its reads and
writes differ at p = 0) and read hits predicted over the reads' sizes:
hotspot with 73% of the I/Os to 473 blocks, 0.663/0.725/0.725/0.725
(-2.9%, +5.1%, -8.4%, -11.5%); mean read and write sizes within 0.5% of
the trace's, each op's size shares within 7% (seed 0). With the arrivals
fitted (Poisson through the 1 s profile: inter-arrival SCV 4.15 in the
trace), 0.686/0.762/0.763/0.763 (+0.5%, +10.3%, -3.7%, -6.8%); SCV +0.2%,
busiest 100 ms equal, 100 ms counts' dispersion -0.7%; all-I/O hit ratios
0.57-0.73 against the trace's 0.20-0.28; the working set is not identified
(no law touches the trace's 92,402 blocks in its 6,780 I/Os).

The module is split by concern: the trace's statistics and stack distances
are in :mod:`simcache.workloads.ingest.tracestats`, the access laws' predicted hit ratios and
the law fit in :mod:`simcache.workloads.ingest.fitlaw`; this module holds the fit, and re-exports
their public names. :func:`simcache.workloads.ingest.compare.compare` puts a trace's statistics
next to a synthetic workload's (a fitted one's, say) with the relative error of each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import chdtrc

from simcache.base.units import human_size
from simcache.spec import DutyCycle, Workload
from simcache.spec.workload import PROFILE_LEVELS
from simcache.traces.trace import READ, WRITE, Trace
from simcache.workloads.ingest.compare import SUB_SECOND, busiest, size_name
from simcache.workloads.ingest.fitarrivals import (
    ARRIVAL_INTERVALS,
    ArrivalFit,
    duration_text,
    fit_arrivals,
)
from simcache.workloads.ingest.fitlaw import (
    FIT_FRACTIONS,
    WORKING_SET_BOUND,
    Law,
    _fit_access,
    expected_footprint,
    fitted_blocks,
    predicted_hit_ratios,
)
from simcache.workloads.ingest.fitrate import profile_rate
from simcache.workloads.ingest.tracestats import (
    LINE,
    TraceStats,
    _selected_rows,
    dispersion,
    hit_ratios,
    interval_counts,
    io_distances,
    sequential_share,
    stack_distances,
    trace_stats,
)

__all__ = [
    "FIT_FRACTIONS",
    "LINE",
    "FittedWorkload",
    "Law",
    "TraceStats",
    "dispersion",
    "expected_footprint",
    "fit_trace",
    "fitted_blocks",
    "hit_ratios",
    "interval_counts",
    "io_distances",
    "op_mixes_differ",
    "predicted_hit_ratios",
    "sequential_share",
    "stack_distances",
    "trace_stats",
]

SEQUENTIAL_MATERIAL = 0.05
"""A fitted workload gets ``sequential_run`` when more than this share of the trace's I/Os
continue the previous one."""
MIX_SIZES = 64
"""Most sizes a fitted size mix keeps (the most common ones)."""
OP_MIX_P_VALUE = 1e-3
"""Reads and writes get their own size mixes when a chi-square test of homogeneity of their size
counts rejects one mix for both at this level (a trace generated with one mix gets one mix back,
but for one fit in a thousand)."""


@dataclass
class FittedWorkload:
    """A synthetic workload fitted to a trace, with what was measured."""

    workload: Workload
    stats: TraceStats
    fit_error: float
    """Root-mean-square difference between the trace's hit ratios and the synthetic's predicted
    ones."""
    cache_lines: list[int]
    trace_hit_ratios: list[float]
    predicted_hit_ratios: list[float]
    arrivals: ArrivalFit
    facts: list[tuple[str, str]] = field(default_factory=list)
    """(what, value) pairs for people."""
    warnings: list[str] = field(default_factory=list)
    """What the user should check or set by hand (an unidentified working set)."""


def _mix_text(sizes: dict[int, int], top: int = 5) -> str:
    total = sum(sizes.values())
    common = sorted(sizes.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{size_name(s)} {c / total:.1%}" for s, c in common) or "none"


def op_mixes_differ(reads: dict[int, int], writes: dict[int, int]) -> tuple[bool, float]:
    """(the reads' and writes' size counts differ beyond chance, the p-value of a chi-square test of
    homogeneity).

    The 2 x k table of counts by op and size (k sizes in either) against the counts one mix would
    give: statistic sum (observed - expected)^2 / expected, k - 1 degrees of freedom. One size, or
    an op without I/Os: one mix (p = 1).
    """
    sizes = sorted(set(reads) | set(writes))
    read_total, write_total = sum(reads.values()), sum(writes.values())
    if len(sizes) < 2 or read_total == 0 or write_total == 0:
        return False, 1.0
    observed = np.array(
        [[reads.get(s, 0) for s in sizes], [writes.get(s, 0) for s in sizes]], dtype=np.float64
    )
    expected = np.outer([read_total, write_total], observed.sum(axis=0)) / (
        read_total + write_total
    )
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    p_value = float(chdtrc(len(sizes) - 1, statistic))
    return p_value < OP_MIX_P_VALUE, p_value


def _common_sizes(counts: dict[int, int]) -> dict[int, int]:
    """The :data:`MIX_SIZES` most common positive sizes of a count by size (4 KiB when there is
    none)."""
    positive = {size: count for size, count in counts.items() if size > 0}
    return dict(sorted(positive.items(), key=lambda item: -item[1])[:MIX_SIZES]) or {LINE: 1}


def fit_trace(
    trace: Trace, device: str | None = None, interval: float | None = None
) -> FittedWorkload:
    """An open-loop synthetic :class:`Workload` reproducing ``trace``'s rate profile, arrivals,
    mix and locality (module docstring).

    ``device``: one of the trace's devices, or all of them as one stream when
    ``None``. ``interval``: seconds per entry of the rate profile, or ``None``
    to choose it by the inter-arrival SCV
    (:func:`~simcache.workloads.ingest.fitarrivals.fit_arrivals`); a trace
    longer than 100,000 intervals gets a coarser one (whole multiples).
    Raises ``ValueError`` when the trace (device) has no reads or writes.
    """
    if interval is not None and not interval > 0:
        raise ValueError(f"interval must be positive seconds (got {interval})")
    rows = _selected_rows(trace, device)
    io_rows = rows[(rows["op"] == READ) | (rows["op"] == WRITE)]
    if len(io_rows) > 1 and float(io_rows["time"][-1]) <= float(io_rows["time"][0]):
        raise ValueError(
            f"{'device ' + repr(device) if device else 'the trace'} has no time extent: its "
            f"{len(io_rows):,} reads and writes all have one timestamp, so it gives no rate to "
            "fit; check that its timestamps were read in the right unit (a CSV's time_unit "
            "option), or fit a trace that records when each I/O was issued"
        )
    arrival_fit = fit_arrivals(
        io_rows["time"] - io_rows["time"][0] if len(io_rows) else io_rows["time"], interval
    )
    profile_interval = arrival_fit.interval
    stats = trace_stats(rows, profile_interval)
    if stats.ios == 0:
        raise ValueError(
            f"{'device ' + repr(device) if device else 'the trace'} has no reads or writes to fit"
        )
    positive = {size: count for size, count in stats.sizes.items() if size > 0}
    common = _common_sizes(stats.sizes)
    mix = {s: float(c) for s, c in common.items()}
    by_op = {op: _common_sizes(stats.sizes_by_op.get(op, {})) for op in ("read", "write")}
    per_op, p_value = op_mixes_differ(*(stats.sizes_by_op.get(op, {}) for op in ("read", "write")))
    read_mix = {s: float(c) for s, c in by_op["read"].items()} if per_op else None
    fit = _fit_access(stats, mix, read_mix)
    law, blocks, lines, target = fit.law, fit.blocks, fit.lines, fit.target
    sequential = sequential_share(io_rows["offset"], io_rows["size"], io_rows["device"])
    rate = profile_rate(stats, profile_interval)
    fields: dict[str, object] = {
        "mode": "open",
        "iops": rate.fitted,
        "read_fraction": stats.read_fraction,
        **(
            {
                f"{op}_sizes": {size_name(s): float(c) for s, c in by_op[op].items()}
                for op in ("read", "write")
            }
            if per_op
            else {"sizes": {size_name(s): float(c) for s, c in common.items()}}
        ),
        "working_set": blocks * LINE,
        "access": law.access,
    }
    if law.access == "zipf":
        fields["zipf_theta"] = law.theta
    if law.access == "hotspot":
        fields["hot_io_fraction"] = law.hot_io
        fields["hot_span_fraction"] = law.hot_span
    if sequential > SEQUENTIAL_MATERIAL:
        # Geometric runs continue with probability p: mean run 1 / (1 - p), the whole trace when
        # every I/O continues.
        fields["sequential_run"] = round(
            min(1.0 / (1.0 - sequential) if sequential < 1.0 else float(stats.ios), 1e9), 4
        )
    fields["arrivals"] = arrival_fit.arrivals
    if len(rate.levels) > 1 and len(set(rate.levels)) > 1:
        fields["duty_cycle"] = DutyCycle(
            shape="profile", interval=profile_interval, levels=rate.levels
        )
    workload = Workload.model_validate(fields)
    predicted = predicted_hit_ratios(law, blocks, stats.ios, mix, lines, read_mix)
    all_hits = stats.hit_ratios(lines)
    all_error = float(np.sqrt(np.mean((np.array(predicted) - np.array(all_hits)) ** 2)))
    working_set, unidentified = _working_set_text(stats, law, blocks, mix)
    facts = [
        (
            "I/Os",
            f"{stats.ios:,} ({stats.reads:,} reads) over {rate.length:.6g} s (the first I/O to "
            "the last, and one mean inter-arrival time)",
        ),
        ("mean rate", f"{rate.fitted:.6g} I/O/s (the trace's: {rate.trace:.6g})"),
        *rate.facts(),
        ("read fraction", f"{stats.read_fraction:.4f}"),
        ("size mix", _mix_text(stats.sizes)),
        *((f"{op} size mix", _mix_text(mix)) for op, mix in stats.sizes_by_op.items() if mix),
        (
            "per-op size mixes",
            f"{'read_sizes and write_sizes' if per_op else 'one mix (sizes)'}: chi-square test of "
            "one mix for reads and "
            f"writes, p = {p_value:.3g} ({'below' if per_op else 'not below'} {OP_MIX_P_VALUE:g})",
        ),
        *(
            [(f"busiest {duration_text(SUB_SECOND)}", f"{busiest(stats, SUB_SECOND):,} I/Os")]
            if stats.tick <= SUB_SECOND
            else []
        ),
        ("busiest second", f"{stats.busiest_second:,} I/Os"),
        ("busiest minute", f"{stats.busiest_minute:,} I/Os"),
        (f"index of dispersion ({profile_interval:g} s counts)", f"{dispersion(stats.counts):.4g}"),
        *arrival_fit.facts(),
        (
            "mean outstanding",
            "unknown (the trace has no latencies)"
            if math.isnan(stats.mean_latency)
            else (
                f"{rate.trace * stats.mean_latency:.4g} (Little's law: rate x mean latency "
                f"{stats.mean_latency * 1e3:.4g} ms)"
            ),
        ),
        ("footprint", f"{stats.footprint:,} bytes ({stats.footprint_lines:,} blocks of 4 KiB)"),
        ("working set", working_set),
        (
            f"LRU {'read ' if stats.reads else ''}hit ratio (trace / fitted)",
            ", ".join(
                f"{n:,} lines {t:.3f}/{p:.3f}"
                for n, t, p in zip(lines, target, predicted, strict=True)
            ),
        ),
        (
            "LRU hit ratio of all I/Os (trace / fitted)",
            ", ".join(
                f"{n:,} lines {t:.3f}/{p:.3f}"
                for n, t, p in zip(lines, all_hits, predicted, strict=True)
            )
            + (
                f" (rms {all_error:.4f}: the fit is on read hits, and the fitted law is one for "
                "reads and writes)"
            ),
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
            + (
                f": sequential_run {workload.sequential_run:g}"
                if workload.sequential_run > 1
                else " (not material: no sequential_run)"
            ),
        ),
    ]
    if positive != stats.sizes or len(positive) > MIX_SIZES:
        facts.append(
            (
                "size mix kept",
                f"the {len(common)} most common of {len(positive)} sizes (zero-size I/Os left out)",
            )
        )
    for op in ("read", "write") if per_op else ():
        sizes = stats.sizes_by_op[op]
        if len(sizes) > len(by_op[op]) or 0 in sizes:
            kept = len(by_op[op])
            facts.append(
                (
                    f"{op} size mix kept",
                    f"the {kept} most common of {len(sizes)} sizes (zero-size I/Os left out)",
                )
            )
    if profile_interval not in ((interval,) if interval is not None else ARRIVAL_INTERVALS):
        facts.append(
            (
                "profile interval",
                f"{profile_interval:g} s (a whole multiple of the interval tried: the trace is "
                f"longer than {PROFILE_LEVELS:,} of them)",
            )
        )
    warnings = [
        *rate.warnings(),
        *(
            [
                f"the trace does not identify the working set ({unidentified}): working_set = "
                f"{human_size(blocks * LINE)} is a stand-in at which the fitted law re-references "
                "as rarely as the trace; set it to the VM's disk size, or the data it works on, "
                "if known"
            ]
            if unidentified
            else []
        ),
    ]
    return FittedWorkload(
        workload, stats, fit.error, lines, target, predicted, arrival_fit, facts, warnings
    )


def _working_set_text(
    stats: TraceStats, law: Law, blocks: int, mix: dict[int, float]
) -> tuple[str, str]:
    """(the working set for people, why the trace does not identify it, or "" when it does).

    It is identified when the fitted law over it touches the footprint in the trace's I/Os; it is
    not when the trace touches every block once (nothing says how far it would have gone on), or
    when the law touches fewer blocks than the trace did even over :data:`WORKING_SET_BOUND` times
    the footprint. Then the footprint is a lower bound.
    """
    written = f"{human_size(blocks * LINE)} ({blocks * LINE:,} bytes)"
    if stats.line_references == stats.footprint_lines:
        why = "every block touched once"
    elif expected_footprint(law, blocks, stats.ios, mix) < stats.footprint_lines - 0.5:
        why = (
            f"the fitted law touches fewer blocks than the trace did over any working set up to "
            f"{WORKING_SET_BOUND:,} times the footprint"
        )
    else:
        return f"{written}: the fitted law touches the footprint in as many I/Os", ""
    return (
        f"≥ {human_size(stats.footprint)} ({why}: the trace does not identify it); the "
        f"scenario's working_set is {written}",
        why,
    )
