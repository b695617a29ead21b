"""Is a run's answer valid? Instability and short-run warnings, in words, from a result's own
figures.

:func:`assess` looks at one run's figures (:class:`AssessedRun`: the series, summary,
unfinished I/Os and scenario a :class:`~simcache.results.result.Result` holds) and
returns a list of :class:`ValidityWarning`: what is wrong, which component, offered against
capacity where the run shows it, and what the numbers mean then. Every
function here is pure: it reads the result and changes nothing. The instability
rules are here; the short-run ones in :mod:`simcache.results.short_runs`, the
types both read in :mod:`simcache.results.assessed`.

Instability (``severity == "unstable"``: the run has no steady state, its
percentiles measure the run's length):

- ``growing``: a queue or backlog that grows through the measured window.
  Series tested, after the warm-up: each host's destage backlog
  (``backlog.<host>``), each host's tier queue (``queue.<host>.tier``), the
  array's spindle queues (``queue.array``: a controller cache that
  acknowledges writes hides them from the VMs' latencies until it is full),
  ``destage_waiting``, ``flows_in_flight``, and the VMs' I/Os in flight per
  group and op (issued minus completed at each sample time, unfinished I/Os
  included). A series grows when it passes the growth test of
  :mod:`simcache.results.trend` (:func:`~simcache.results.trend.grows_through`):
  a rise over the window that is significant and large, and that goes on in
  the window's second half, so that a step (a vMotion starting mid-run) is
  not growth.
- ``backlog_full``: a host's destage backlog ends within
  :data:`FULL_FRACTION` (95%) of the destager's capacity: writes wait for
  destage, and the buffer no longer absorbs bursts.
- ``overload``: with something growing, a link, tier or the array busy
  :data:`PINNED` (97%) or more of the window on average: offered load is
  above its capacity. The offered figure is the VMs' I/Os issued in the
  window per second against those completed. A destage backlog that grows
  (``filling``) while some group writes at a rate of its own (open-loop,
  :data:`OPEN_MODES`) counts as growing for the destage path only: the array,
  its port and the filling hosts' storage links. Pinned there, the path has no
  spare time to drain the backlog, so the buffers only put off the moment
  writes wait for it. (A buffer filling while the array has room is a burst
  being absorbed; one filled by closed loops only slows them to the array's
  pace once full: both short runs, below.)
- ``gc_cliff``: a host whose tier queue grows while its units are not pinned
  and at least :data:`GC_SHARE` of that queue waits for garbage collection on
  average (past the clean-pool cliff): the tier is the bottleneck though its
  units look idle (garbage collection holds the writes).

Short runs (``severity == "short"``: the figures may be right for the run but
not for the system's steady state):

- ``filling`` (one warning for all the hosts it finds, their figures as
  ranges): a host's destage backlog grows through the window (the test
  above) but ends below capacity: the figures are those of a buffer still
  filling, good for bursts shorter than the time left to fill it
  (:func:`filling_backlogs`).
- ``fill_time`` (one warning for the hosts alike): the run ends before a
  destage buffer could fill, by the analytic estimate's fluid model
  (capacity / (write rate - drain rate) at the groups' peak rates), when the
  run does not show it filling itself. When the run's own backlog stays
  under :data:`~simcache.results.short_runs.KEPT_UP` of what that model
  holds by the run's end, the note says the buffer kept up in this run and
  gives the model's figures as what sustained load would do: behind an
  array's controller cache, the drain once that cache is full.
- ``at_capacity``: nothing above found unstable, but a link, tier or the
  array busy :data:`PINNED` or more of the window on average while some
  group's load is open-loop (offered at a fixed rate, so it can exceed what
  the part serves): a queue just below capacity and one a little above it
  look alike in a short run, and neither's latency is a steady-state figure.
  (With closed loops only, the load waits for the part: bounded, no note.)
- ``destage_starved`` (one warning for the hosts it finds): a host's destage backlog grows or is
  full while every part of its destage path is under half busy and its tier schedules destage
  reads behind the VMs' I/O (:mod:`simcache.results.starved`): the tier limits the drain though
  its utilization looks idle.
- ``gc_ahead`` (one warning for the hosts it finds): a flash tier's clean pool drained through the
  run (net of garbage collection's refill) without running out (:mod:`simcache.results.clean_pool`):
  the run measured the tier's fresh write rate, and at that net rate the pool runs out, and the
  writes slow to garbage collection's pace, at a time the note gives.
- ``warming`` (one warning for all the groups it finds): a group's read hit ratio rises
  through the window (:mod:`simcache.results.warming`): the read cache started empty and is
  still filling, so the read figures average a cache growing warmer.
- ``short_warmup``: the warm-up is shorter than the slowest time constant:
  that fill time (when it falls inside the run) or a duty cycle's period.
- ``warmup_cut``: the run was asked for shorter than its file (``simulate(duration=...)``) and its
  warm-up cut to keep a window (:meth:`simcache.spec.Scenario.warmup_cut`): the window starts
  earlier than the file meant (whether too early is ``short_warmup``'s to say).
- ``few_samples`` (one warning for all summary rows): a percentile rests on
  fewer than :func:`samples_needed` I/Os, 10 / (1 - q) for percentile q
  (200 for p95, 1,000 for p99, 10,000 for p99.9): with k I/Os beyond a
  percentile its relative sampling error is about 1 / sqrt(k), so with fewer
  than 10 beyond it (over 30%) it is the worst few I/Os, not a figure.
- ``empty_window``: the run issued I/Os, but none in the measured window (all in the warm-up):
  every figure is empty, and the unfinished count (the window's) says 0. It comes first, and
  the other short-run notes (on latency nothing measured) are left out.
- ``event_after_end``: a scheduled vMotion or host failure at or after the
  run's end never happens in it.
- ``untested``: fewer than :data:`~simcache.results.trend.MIN_SAMPLES` samples
  after the warm-up, too few for the growth test: the run's stability was not
  tested. Only growth beyond doubt is reported then (``growing``, unstable): a
  queue or the VMs' I/Os in flight that rise at every step and end at least
  :data:`FEW_GROWTH` times their start and :data:`FEW_FLOOR` floors above it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simcache.base.units import format_figure, format_size
from simcache.physics.cluster import gc_refill_rate
from simcache.results.assessed import (
    PINNED,
    AssessedRun,
    Severity,
    ValidityWarning,
    event_span_end,
    figure_range,
    hosts_words,
    in_flight_series,
    samples_needed,
    window_series,
)
from simcache.results.clean_pool import gc_ahead
from simcache.results.filling import FULL_FRACTION, BacklogFill, filling, filling_backlogs
from simcache.results.short_runs import (
    cut_warmup,
    empty_window,
    few_samples,
    late_events,
    short_warmup,
    untested,
)
from simcache.results.starved import destage_starved
from simcache.results.trend import FLOORS, MIN_SAMPLES, T_CRITICAL, grows_through, trend
from simcache.results.warming import warming

__all__ = [
    "FEW_FLOOR",
    "FEW_GROWTH",
    "FULL_FRACTION",
    "GC_SHARE",
    "OPEN_MODES",
    "PINNED",
    "AssessedRun",
    "BacklogFill",
    "Severity",
    "ValidityWarning",
    "assess",
    "filling_backlogs",
    "in_flight_series",
    "samples_needed",
]

_MEANING = (
    "latency grows without bound; the percentiles shown are set by the run's length, not by the "
    "system"
)
_ARRAY_MEANING = (
    "work reaches the spindles faster than they finish it (some of them at least); reads that miss "
    "wait behind it, and "
    "once the controller cache is full, destaging slows to the spindles' pace and the writes "
    "behind it wait too: the "
    "figures shown hold only until then, not for the system's steady state"
)
FEW_GROWTH = 2.0
"""With too few samples for the growth test: how many times its start a series must end at (a
queue growing at a steady rate since the run's start doubles between a window start at ``w``
and ``2 w``)."""
FEW_FLOOR = 10
"""With too few samples for the growth test: how many :data:`FLOORS` a series must rise by."""
GC_SHARE = 0.5
"""A growing tier queue is past the clean-pool cliff when at least this share of it waits for
garbage collection on average."""
OPEN_MODES = ("open", "trace")
"""Workload modes whose I/Os are offered at a rate of their own (not waiting for the last ones to
complete), so that they can ask a part for more than it serves."""
_DESTAGE_PATH = ("array", "array.rx")
"""The parts every host's destaging goes through (with each host's own ``<host>.storage.tx``)."""


def assess(result: AssessedRun) -> list[ValidityWarning]:
    """Every warning for ``result``: instability first (overload, growing, backlog_full), then
    short-run ones."""
    scenario = result.scenario if result.scenario is not None else result.meta["scenario"]
    fills = filling_backlogs(result)
    growth = _growth(result)
    unstable = [w for w in growth if w.severity == "unstable"]
    # a saturated component is the cause only when I/Os pile up (a closed loop at 100% is bounded)
    if unstable:
        unstable = _overloads(result) + _gc_cliffs(result, unstable) + unstable
    elif fills and _offered(result, writing=True):
        # closed loops only: once the buffers are full, the writers slow to the array's pace
        unstable = _destage_overloads(result, fills)
    unstable += _full_backlogs(result)
    # untested, or the backlogs filling (and, past a GC cliff or not, held back by their tier)
    short = [w for w in growth if w.severity == "short"] + filling(result, fills)
    cliffs = {w.component.split(".")[0] for w in unstable if w.kind == "gc_cliff"}
    backlogged = [fill.host for fill in fills] + [
        w.component.removeprefix("backlog.") for w in unstable if w.kind == "backlog_full"
    ]
    short += destage_starved(result, [h for h in dict.fromkeys(backlogged) if h not in cliffs])
    short += gc_ahead(result)
    empty = empty_window(result)
    if empty:  # nothing measured: the notes on its latency would speak of nothing
        return empty + unstable + late_events(result)
    pinned = [] if unstable else _at_capacity(result)
    late = cut_warmup(result) + short_warmup(result, scenario, {fill.host for fill in fills})
    return (
        unstable
        + short
        + pinned
        + late
        + warming(result)
        + few_samples(result)
        + late_events(result)
    )


def _growth(result: AssessedRun) -> list[ValidityWarning]:
    """``growing`` warnings (queues and the VMs' I/Os in flight; backlogs are
    :func:`filling_backlogs`), or ``untested`` and what few samples show beyond doubt."""
    series = window_series(result)
    if len(series) < MIN_SAMPLES:
        return untested(result, series) + _few_samples_growth(result, series)
    times = series.index.to_numpy(dtype=float)
    warnings = []
    for column in _tested_columns(series):
        if column.startswith("backlog."):
            continue
        growing, fit = grows_through(times, series[column].to_numpy(dtype=float), FLOORS["count"])
        if not growing:
            continue
        # a count or a size: a steep rise's fitted line can start below zero
        start = max(0.0, fit.mean - fit.rise / 2)
        meaning = _ARRAY_MEANING if column == "queue.array" else _MEANING
        what = (
            f"{_series_words(column)} grow through the run ({fit.slope:+.3g}/s, from about "
            f"{start:.3g} to {fit.end:.0f}): {meaning}"
        )
        warnings.append(ValidityWarning("growing", column, "unstable", what))
    for (group, op), counts in in_flight_series(result, times).items():
        growing, fit = grows_through(times, counts.astype(float), FLOORS["count"])
        if growing:
            pending = int(
                ((result.unfinished["group"] == group) & (result.unfinished["op"] == op)).sum()
            )
            warnings.append(
                ValidityWarning(
                    "growing",
                    f"in_flight.{group}.{op}",
                    "unstable",
                    f"group {group}'s {op}s in flight grow through the run ({fit.slope:+.3g} "
                    f"I/Os/s; {pending:,} unfinished at the end): "
                    f"{_MEANING}",
                )
            )
    return warnings


def _tested_columns(series: pd.DataFrame) -> list[str]:
    """The queue and backlog columns the growth test reads."""
    return [
        column
        for column in series.columns
        if column.startswith(("backlog.", "queue."))
        or column in ("destage_waiting", "flows_in_flight")
    ]


def _few_samples_growth(result: AssessedRun, series: pd.DataFrame) -> list[ValidityWarning]:
    """Growth a window of fewer than :data:`MIN_SAMPLES` samples shows beyond doubt: a queue, or
    the VMs' I/Os in flight, that rises strictly from each sample to the next and ends at least
    :data:`FEW_GROWTH` times where it started and :data:`FEW_FLOOR` floors above it (a stable
    queue sampled a few times rarely rises at every step by that much; an overloaded one does
    every time). Backlogs are left to the fill-time note (a buffer filling is a short run, not
    an unstable one). A run with records counts its I/Os in flight at the window's start too
    (they are known at any time), so that even one sample can show them pile up: only when the
    warm-up is ten times the quickest I/O's latency or more, so that the start is past the run's
    own ramp-up from an empty system (a run without warm-up starts at zero I/Os in flight, and
    any load rises from there)."""
    start, _ = result.window
    times = series.index.to_numpy(dtype=float)
    found: list[tuple[str, str, np.ndarray]] = [
        (column, _series_words(column), series[column].to_numpy(dtype=float))
        for column in _tested_columns(series)
        if not column.startswith("backlog.") and len(times) >= 2
    ]
    points = "the samples after the warm-up"
    if result.stream is None and len(result.records):
        # ten times the quickest I/O's time (an unloaded one: an overloaded run's mean is its
        # queue's) after an empty start, the in-flight counts have left their ramp-up
        settled = 10.0 * float(result.records["latency_ms"].min()) / 1e3
        if start > 0 and start >= settled:
            times = np.concatenate(([start], times))
            points = "the window's start and its samples"
    if len(times) >= 2:
        for (group, op), counts in in_flight_series(result, times).items():
            found.append(
                (
                    f"in_flight.{group}.{op}",
                    f"group {group}'s {op}s in flight",
                    counts.astype(float),
                )
            )
    warnings = []
    floor = FLOORS["count"]
    for component, words, values in found:
        first, last = float(values[0]), float(values[-1])
        if (
            np.all(np.diff(values) > 0)
            and last - first >= FEW_FLOOR * floor
            and last >= FEW_GROWTH * max(first, floor)
        ):
            what = (
                f"{words} rise at each of the {len(values)} points the window has "
                f"({points if component.startswith('in_flight.') else 'its samples'}: too few "
                f"for the growth test's significance), from {first:,.0f} to {last:,.0f}: "
                f"{_ARRAY_MEANING if component == 'queue.array' else _MEANING}"
            )
            warnings.append(ValidityWarning("growing", component, "unstable", what))
    return warnings


def _series_words(column: str) -> str:
    if column == "queue.array":
        return "the array's spindle operations running or queued"
    if column.startswith("queue."):
        return f"{column.split('.')[1]}'s tier queue: I/Os"
    return {
        "destage_waiting": "writers waiting for destage-buffer space",
        "flows_in_flight": "network transfers in flight",
    }[column]


def _full_backlogs(result: AssessedRun) -> list[ValidityWarning]:
    series = window_series(result)
    if not len(series):
        return []
    capacity = float(result.meta["scenario"]["cluster"]["destager"]["capacity"])
    warnings = []
    for column in [c for c in series.columns if c.startswith("backlog.")]:
        end = float(series[column].iloc[-1])
        if capacity > 0 and end >= FULL_FRACTION * capacity:
            host = column.removeprefix("backlog.")
            waiting = int(series["destage_waiting"].iloc[-1])
            warnings.append(
                ValidityWarning(
                    "backlog_full",
                    column,
                    "unstable",
                    f"{host} destage backlog ends at {end / capacity:.0%} of its "
                    f"{format_size(capacity)} buffer "
                    f"({waiting} writers waiting for space at the end): writes are admitted only "
                    "as fast as the array takes them; "
                    f"if they keep arriving faster, {_MEANING}",
                )
            )
    return warnings


def _overloads(result: AssessedRun) -> list[ValidityWarning]:
    series = window_series(result)
    if not len(series):
        return []
    start, end = result.window
    span = end - start
    # counted per sample interval: those ending after the window's start
    if result.stream is not None:
        stream = result.stream
        issued = int(stream.count.sum()) + len(result.measured_unfinished)
        served = sum(
            int(part.count.sum())
            for t, part in zip(stream.times, stream.intervals, strict=False)
            if start < t <= end
        )
    else:
        records = result.records
        issued = int((records["issue_s"].to_numpy() >= start).sum()) + len(
            result.measured_unfinished
        )
        served = int(((records["complete_s"] >= start) & (records["complete_s"] <= end)).sum())
    offered = f"the VMs issued {issued / span:,.0f} I/Os/s, {served / span:,.0f}/s completed" + (
        f" (offered {issued / served:.3g}x what was served)" if served else ""
    )
    warnings = []
    for column in [c for c in series.columns if c.startswith("util.")]:
        mean = float(series[column].mean())
        if mean >= PINNED:
            component = column.removeprefix("util.")
            what = (
                f"{component} is busy {mean:.0%} of the window while work piles up: its offered "
                f"load is above its capacity; {offered}"
            )
            warnings.append(
                ValidityWarning(
                    "overload", component, "unstable", what + _array_queue_words(component, series)
                )
            )
    return warnings


def _offered(result: AssessedRun, writing: bool = False) -> list[str]:
    """The groups whose load is offered at a rate of their own (:data:`OPEN_MODES`); with
    ``writing``, only those that write (a trace's mix is its own: counted as writing)."""
    return [
        group["name"]
        for group in result.meta["scenario"]["groups"]
        if group["workload"].get("mode") in OPEN_MODES
        and not (writing and group["workload"].get("read_fraction") == 1.0)
    ]


def _destage_overloads(result: AssessedRun, fills: list[BacklogFill]) -> list[ValidityWarning]:
    """The destage path's parts (:data:`_DESTAGE_PATH` and the filling hosts' storage links) busy
    :data:`PINNED` or more of the window while the backlogs in ``fills`` grow: the writes' offered
    load is above what the path destages, and nothing is left to drain the backlogs with."""
    series = window_series(result)
    path = [*_DESTAGE_PATH, *(f"{fill.host}.storage.tx" for fill in fills)]
    one = len(fills) == 1
    rate = figure_range([f.rate / 2**20 for f in fills], lambda v: f"{v:+.1f}")
    full_in = min(fill.full_in_s for fill in fills)
    warnings = []
    for component in path:
        column = f"util.{component}"
        if column not in series.columns:
            continue
        mean = float(series[column].mean())
        if mean < PINNED:
            continue
        warnings.append(
            ValidityWarning(
                "overload",
                component,
                "unstable",
                f"{component} is busy {mean:.0%} of the window while "
                + (
                    f"{fills[0].host}'s destage backlog grows ({rate} MiB/s)"
                    if one
                    else f"the destage backlogs of {hosts_words([f.host for f in fills])} grow "
                    f"({rate} MiB/s each)"
                )
                + ": its offered load is above its capacity; writes "
                "reach it faster than it destages them, with no spare time to catch up, so the "
                f"buffer{'' if one else 's'} only put{'s' if one else ''} off the moment writes "
                f"wait for it ({'it is' if one else 'the first is'} full in about "
                f"{format_figure(full_in, 3)} s): no steady state; the write figures hold only "
                "until then",
            )
        )
    return warnings


def _at_capacity(result: AssessedRun) -> list[ValidityWarning]:
    """Parts busy :data:`PINNED` or more of the window in a run with open-loop load
    (:data:`OPEN_MODES`) that nothing else found unstable: one warning naming them all. The sample
    intervals a scheduled event spans are left out: a vMotion's or a resync's bulk copy takes all a
    link leaves, so a link it pins says nothing of the VMs' load (the event's table does)."""
    offered = _offered(result)
    series = _outside_events(result, window_series(result))
    if not offered or not len(series):
        return []
    busy = {
        column.removeprefix("util."): float(series[column].mean())
        for column in series.columns
        if column.startswith("util.")
    }
    pinned = {component: mean for component, mean in busy.items() if mean >= PINNED}
    if not pinned:
        return []
    start, end = result.window
    busiest = (
        f"{next(iter(pinned))} is busy {next(iter(pinned.values())):.0%} of the window"
        if len(pinned) == 1
        else ", ".join(f"{component} ({mean:.0%})" for component, mean in pinned.items())
        + f" are each busy {PINNED:.0%} or more of the window"
    )
    return [
        ValidityWarning(
            "at_capacity",
            ",".join(pinned),
            "short",
            f"{busiest}: at capacity, though no queue was found growing in its "
            f"{end - start:.3g} s. With "
            f"load offered at a fixed rate (group{'' if len(offered) == 1 else 's'} "
            f"{', '.join(offered)}), a part at capacity may be just below it or a little above "
            "it, and a run this short cannot tell which: the latency of I/Os that wait for it "
            "swings with the load and is not a steady-state figure, and a little more load makes "
            "its queue grow without bound; run longer, or with less load, to tell",
        )
    ]


def _outside_events(result: AssessedRun, series: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``series`` (samples, indexed by time) whose interval overlaps no scheduled
    event's span (:func:`~simcache.results.assessed.event_span_end`)."""
    meta = result.meta
    events = meta["scenario"].get("events", [])
    if not events or not len(series):
        return series
    interval = float(meta["scenario"]["run"]["sample_interval"])
    end = result.window[1]
    times = series.index.to_numpy(dtype=float)
    clear = np.ones(len(times), dtype=bool)
    for event in events:
        start, stop = float(event["at"]), event_span_end(event, meta, end)
        clear &= (times <= start) | (times - interval >= stop)
    return series[clear]


def _gc_cliffs(result: AssessedRun, unstable: list[ValidityWarning]) -> list[ValidityWarning]:
    """A tier past its clean-pool cliff while its queue grows: its writes wait for garbage
    collection to refill clean space, and meanwhile its units are idle, so its utilization (the
    units' busy time) does not show it saturated and the overload above names another part, or
    none. Found from the run itself, for a host whose tier queue grows (a growing warning) while
    its units are not pinned (the overload names those): most of that queue waits for garbage
    collection, by Little's law the writes waiting for it on average (the tier's GC wait
    counter, summed over its writes, over the run's seconds) at least :data:`GC_SHARE` of the
    queue's mean over the window."""
    waits = result.totals.get("tier_gc_wait_s_by_host", {})
    growing = {w.component for w in unstable if w.kind == "growing"}
    series = window_series(result)
    run_s = float(result.meta.get("simulated_s") or 0.0)
    if not len(series) or run_s <= 0:
        return []
    scenario = result.scenario
    rate = (
        gc_refill_rate(scenario.cluster.tier)
        if scenario is not None and scenario.cluster.tier.clean_pool
        else None
    )
    refill = (
        f", which refills clean space at {format_figure(rate / 1e6, 3)} MB/s: writes past the "
        "cliff go no faster than that"
        if rate is not None
        else ""
    )
    dry = result.totals.get("tier_ran_dry_s_by_host", {})
    warnings = []
    for host, waited in waits.items():
        queue, busy = f"queue.{host}.tier", f"util.{host}.tier"
        if waited <= 0 or queue not in growing or queue not in series.columns:
            continue
        units = float(series[busy].mean()) if busy in series.columns else 0.0
        waiting = waited / run_s  # writes waiting for garbage collection, on average
        queued = float(series[queue].mean())
        if units >= PINNED or waiting < GC_SHARE * queued:
            continue
        since = f" (from {format_figure(float(dry[host]), 3)} s)" if host in dry else ""
        warnings.append(
            ValidityWarning(
                "gc_cliff",
                f"{host}.tier",
                "unstable",
                f"{host}.tier is past its clean-pool cliff{since} while its queue grows: garbage "
                f"collection holds about {format_figure(waiting, 3)} of its writes at a time over "
                f"the run (its queue: {format_figure(queued, 3)} on average after the "
                f"warm-up){refill}; its "
                f"units look {units:.0%} busy meanwhile (garbage collection holds the writes, "
                "not the units), so no utilization shows this tier saturated: it is the "
                f"bottleneck; {_MEANING}",
            )
        )
    return warnings


def _array_queue_words(component: str, series: pd.DataFrame) -> str:
    """For the array: how fast its spindle queue grows, if it does (significantly). Behind a
    write-back cache the VMs' I/Os can all complete while the array falls behind, so the VMs'
    figures alone do not show its excess."""
    if component != "array" or "queue.array" not in series.columns or len(series) < MIN_SAMPLES:
        return ""
    fit = trend(series.index.to_numpy(dtype=float), series["queue.array"].to_numpy(dtype=float))
    if fit.slope <= 0 or fit.t < T_CRITICAL:
        return ""
    return (
        f"; its spindle operations queued grow by {fit.slope:,.0f} a second (work reaching the "
        "spindles, less work they finish)"
    )
