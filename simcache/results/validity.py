"""Is a run's answer valid? Instability and short-run warnings, in words, from a result's own
figures.

:func:`assess` looks at one run's figures (:class:`AssessedRun`: the series, summary,
unfinished I/Os and scenario a :class:`~simcache.results.result.Result` holds) and
returns a list of :class:`ValidityWarning`: what is wrong, which component, offered against
capacity where the run shows it, and what the numbers mean then. Every
function here is pure: it reads the result and changes nothing.

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
  window per second against those completed.
- ``gc_cliff``: a host whose tier queue grows while its units are not pinned
  and at least :data:`GC_SHARE` of that queue waits for garbage collection on
  average (past the clean-pool cliff): the tier is the bottleneck though its
  units look idle (garbage collection holds the writes).

Short runs (``severity == "short"``: the figures may be right for the run but
not for the system's steady state):

- ``filling``: a host's destage backlog grows through the window (the test
  above) but ends below capacity: the figures are those of a buffer still
  filling, good for bursts shorter than the time left to fill it.
- ``fill_time``: the run ends before a destage buffer could fill, by the
  analytic estimate's fluid model (capacity / (write rate - drain rate) at
  the groups' peak rates), when the run does not show it filling itself.
- ``short_warmup``: the warm-up is shorter than the slowest time constant:
  that fill time (when it falls inside the run) or a duty cycle's period.
- ``few_samples`` (one warning for all summary rows): a percentile rests on
  fewer than :func:`samples_needed` I/Os, 10 / (1 - q) for percentile q
  (200 for p95, 1,000 for p99, 10,000 for p99.9): with k I/Os beyond a
  percentile its relative sampling error is about 1 / sqrt(k), so with fewer
  than 10 beyond it (over 30%) it is the worst few I/Os, not a figure.
- ``event_after_end``: a scheduled vMotion or host failure at or after the
  run's end never happens in it.
- ``untested``: fewer than :data:`~simcache.results.trend.MIN_SAMPLES` samples
  after the warm-up, too few for the growth test: the run's stability was not
  tested. Only growth beyond doubt is reported then (``growing``, unstable): a
  queue or the VMs' I/Os in flight that rise at every step and end at least
  :data:`FEW_GROWTH` times their start and :data:`FEW_FLOOR` floors above it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from simcache.base.metrics import PERCENTILES
from simcache.base.units import format_size
from simcache.physics.cluster import gc_refill_rate
from simcache.results.trend import FLOORS, MIN_SAMPLES, T_CRITICAL, grows_through, trend
from simcache.sim.stream import StreamStats
from simcache.spec import Scenario

__all__ = [
    "FEW_FLOOR",
    "FEW_GROWTH",
    "FULL_FRACTION",
    "GC_SHARE",
    "PINNED",
    "AssessedRun",
    "Severity",
    "ValidityWarning",
    "assess",
    "in_flight_series",
    "samples_needed",
]

Severity = Literal["unstable", "short"]

FULL_FRACTION = 0.95
"""A destage backlog at or above this fraction of the buffer's capacity at the end is full."""
PINNED = 0.97
"""A utilization at or above this over the window is pinned at capacity."""
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
_LISTED = 4  # rows named in a few-samples warning
FEW_GROWTH = 2.0
"""With too few samples for the growth test: how many times its start a series must end at (a
queue growing at a steady rate since the run's start doubles between a window start at ``w``
and ``2 w``)."""
FEW_FLOOR = 10
"""With too few samples for the growth test: how many :data:`FLOORS` a series must rise by."""
GC_SHARE = 0.5
"""A growing tier queue is past the clean-pool cliff when at least this share of it waits for
garbage collection on average."""


class AssessedRun(Protocol):
    """What :func:`assess` reads of a run (a :class:`~simcache.results.result.Result` has it all),
    so that this module needs nothing of the result's own: the result asks it for its warnings."""

    @property
    def meta(self) -> dict[str, Any]:
        """The run's facts: ``scenario`` (as JSON), ``simulated_s`` and the rest."""

    @property
    def scenario(self) -> Scenario | None:
        """The scenario as run, when known (else only ``meta["scenario"]``)."""

    @property
    def window(self) -> tuple[float, float]:
        """(start, end) of the measurement window, seconds."""

    @property
    def series(self) -> pd.DataFrame:
        """One row per sample, indexed by its time (s)."""

    @property
    def summary(self) -> pd.DataFrame:
        """Per group and op: counts and latency figures."""

    @property
    def stream(self) -> StreamStats | None:
        """A run without records: its histograms and counters."""

    @property
    def records(self) -> pd.DataFrame:
        """One row per completed I/O (a run with records)."""

    @property
    def unfinished(self) -> pd.DataFrame:
        """One row per I/O not completed at the end."""

    @property
    def measured_unfinished(self) -> pd.DataFrame:
        """The unfinished I/Os issued inside the window."""

    @property
    def totals(self) -> dict[str, Any]:
        """The run's cluster-level totals (``tier_gc_wait_s_by_host`` among them)."""


@dataclass(frozen=True)
class ValidityWarning:
    """One reason to doubt a run's figures; ``str()`` gives :attr:`message`."""

    kind: str
    """Unstable: growing, backlog_full, overload, gc_cliff. Short: filling, fill_time, short_warmup,
    few_samples, event_after_end, untested."""
    component: str
    """What it is about, e.g. ``backlog.host0``, ``array``, ``in_flight.db.write``, ``p999_ms``,
    ``vmotion@10s``."""
    severity: Severity
    """``unstable``: no steady state (``Result.stable`` is False); ``short``: the run is too
    short to tell."""
    message: str

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "component": self.component,
            "severity": self.severity,
            "message": self.message,
        }


def samples_needed(q: float) -> int:
    """Fewest I/Os behind percentile ``q`` (0-100): 10 beyond it, 10 / (1 - q / 100)."""
    return round(10 / (1 - q / 100))


def in_flight_series(result: AssessedRun, times: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
    """The VMs' I/Os in flight at each of ``times`` (issued at or before, not completed by), per
    (group, op).

    A run without records counts them per sample interval
    (:class:`simcache.sim.stream.StreamStats`): ``times`` must be sample times then.
    """
    if result.stream is not None:
        return _stream_in_flight(result, times)
    records, unfinished = result.records, result.unfinished
    out: dict[tuple[str, str], np.ndarray] = {}
    # categorical: the codes' names, one reference a row (no copy of the table)
    group_of = records["group"].to_numpy()
    write = (records["op"] == "write").to_numpy()
    issue, complete = records["issue_s"].to_numpy(), records["complete_s"].to_numpy()
    for group in [g["name"] for g in result.meta["scenario"]["groups"]]:
        in_group = group_of == group
        for op in ("read", "write"):
            done = in_group & (write == (op == "write"))
            pending = unfinished.loc[
                (unfinished["group"] == group) & (unfinished["op"] == op), "issue_s"
            ].to_numpy(dtype=float)
            issued = np.sort(np.concatenate((issue[done], pending)))
            completed = np.sort(complete[done])
            if not len(issued):
                continue
            out[(group, op)] = np.searchsorted(issued, times, side="right") - np.searchsorted(
                completed, times, side="right"
            )
    return out


def _stream_in_flight(result: AssessedRun, times: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
    """:func:`in_flight_series` from a run's counts per sample interval of the completed I/Os'
    issue and completion."""
    stream = result.stream
    assert stream is not None
    sample_times = np.asarray(stream.times)
    index = np.searchsorted(sample_times, times)
    if len(times) and (
        index.max() >= len(sample_times) or not np.array_equal(sample_times[index], times)
    ):
        raise ValueError("a run without records counts I/Os in flight at its sample times only")
    issued = np.cumsum(stream.issued_by_interval[: len(sample_times)], axis=0)[index]
    completed = np.cumsum(stream.completed_by_interval[: len(sample_times)], axis=0)[index]
    unfinished = result.unfinished
    out: dict[tuple[str, str], np.ndarray] = {}
    for g, group in enumerate(stream.group_names):
        for o, op in enumerate(("read", "write")):
            pending = unfinished.loc[
                (unfinished["group"] == group) & (unfinished["op"] == op), "issue_s"
            ].to_numpy(dtype=float)
            if not len(pending) and not any(part[2 * g + o] for part in stream.issued_by_interval):
                continue
            waiting = np.searchsorted(np.sort(pending), times, side="right")
            out[(group, op)] = issued[:, 2 * g + o] + waiting - completed[:, 2 * g + o]
    return out


def assess(result: AssessedRun) -> list[ValidityWarning]:
    """Every warning for ``result``: instability first (overload, growing, backlog_full), then
    short-run ones."""
    scenario = result.scenario if result.scenario is not None else result.meta["scenario"]
    growth = _growth(result)
    unstable = [w for w in growth if w.severity == "unstable"]
    # a saturated component is the cause only when I/Os pile up (a closed loop at 100% is bounded)
    if unstable:
        unstable = _overloads(result) + _gc_cliffs(result, unstable) + unstable
    unstable += _full_backlogs(result)
    filling = [w for w in growth if w.severity == "short"]
    late = _short_warmup(result, scenario, {w.component for w in filling})
    return unstable + filling + late + _few_samples(result) + _late_events(result)


def _window_series(result: AssessedRun) -> pd.DataFrame:
    start, _ = result.window
    series = result.series
    return series[series.index > start] if len(series) else series


def _growth(result: AssessedRun) -> list[ValidityWarning]:
    series = _window_series(result)
    if len(series) < MIN_SAMPLES:
        return _untested(result, series) + _few_samples_growth(result, series)
    times = series.index.to_numpy(dtype=float)
    capacity = float(result.meta["scenario"]["cluster"]["destager"]["capacity"])
    warnings = []
    for column in _tested_columns(series):
        in_bytes = column.startswith("backlog.")
        growing, fit = grows_through(
            times, series[column].to_numpy(dtype=float), FLOORS["bytes" if in_bytes else "count"]
        )
        if not growing:
            continue
        if in_bytes:
            host = column.removeprefix("backlog.")
            if fit.end >= FULL_FRACTION * capacity:
                continue  # reported as a full buffer
            full_in = (capacity - fit.end) / fit.slope
            warnings.append(
                ValidityWarning(
                    "filling",
                    column,
                    "short",
                    f"{host} destage backlog grows through the run ({fit.slope / 2**20:+.1f} "
                    f"MiB/s, ends at {fit.end / capacity:.0%} "
                    f"of {format_size(capacity)}): writes arrive faster than they are destaged, "
                    "and at this rate the buffer is full "
                    f"in about {full_in:.3g} s more; the figures hold for write bursts shorter "
                    "than that, not for sustained load "
                    f"(then writes wait for the array)",
                )
            )
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


def _untested(result: AssessedRun, series: pd.DataFrame) -> list[ValidityWarning]:
    """Too few samples after the warm-up for the growth test (:data:`MIN_SAMPLES`): said, so that
    a run nothing was found in is not taken for one found steady."""
    start, end = result.window
    interval = float(result.meta["scenario"]["run"]["sample_interval"])
    longest = start + MIN_SAMPLES * interval
    # rounded down to three digits, so that the interval advised does give the samples
    most = (end - start) / MIN_SAMPLES
    step = 10.0 ** (math.floor(math.log10(most)) - 2) if most > 0 else 1.0
    most = math.floor(most / step) * step
    return [
        ValidityWarning(
            "untested",
            "series",
            "short",
            f"only {len(series)} sample{'' if len(series) == 1 else 's'} after the warm-up "
            f"({interval:g} s apart): too few to test queues and backlogs for growth "
            f"({MIN_SAMPLES} needed), so the run's stability was not tested; set "
            f"run.sample_interval to at most {most:.3g} s, or run for at least "
            f"{_figure(longest)} s",
        )
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
    series = _window_series(result)
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
    series = _window_series(result)
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
    series = _window_series(result)
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
        f", which refills clean space at {_figure(rate / 1e6)} MB/s: writes past the cliff go "
        "no faster than that"
        if rate is not None
        else ""
    )
    warnings = []
    for host, waited in waits.items():
        queue, busy = f"queue.{host}.tier", f"util.{host}.tier"
        if waited <= 0 or queue not in growing or queue not in series.columns:
            continue
        units = float(series[busy].mean()) if busy in series.columns else 0.0
        waiting = waited / run_s  # writes waiting for garbage collection, on average
        if units >= PINNED or waiting < GC_SHARE * float(series[queue].mean()):
            continue
        warnings.append(
            ValidityWarning(
                "gc_cliff",
                f"{host}.tier",
                "unstable",
                f"{host}.tier is past its clean-pool cliff while its queue grows: garbage "
                f"collection holds about {_figure(waiting)} of its writes at a time over the run "
                f"(its queue: {_figure(float(series[queue].mean()))} on average after the "
                f"warm-up){refill}; its "
                f"units look {units:.0%} busy meanwhile (garbage collection holds the writes, "
                "not the units), so no utilization shows this tier saturated: it is the "
                f"bottleneck; {_MEANING}",
            )
        )
    return warnings


def _figure(value: float) -> str:
    """Three significant digits, thousands with separators and no exponent."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


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


def _short_warmup(
    result: AssessedRun,
    scenario: Scenario | dict[str, Any],
    filling: set[str],
) -> list[ValidityWarning]:
    """Warm-up shorter than a duty-cycle period or a destage buffer's fill time (hosts in
    ``filling`` are reported already)."""
    warmup, end = result.window
    constants: list[tuple[float, str, str]] = []  # (seconds, component, words)
    data = scenario if isinstance(scenario, dict) else scenario.model_dump(mode="json")
    for group in data["groups"]:
        duty = group["workload"].get("duty_cycle")
        if duty is not None:
            period = _duty_period(duty)
            constants.append(
                (
                    period,
                    f"duty_cycle.{group['name']}",
                    f"group {group['name']}'s duty cycle ({period:g} s period)",
                )
            )
    warnings = []
    for host, fill, rate_in, rate_out in _fill_times(scenario):
        component = f"backlog.{host}"
        if component in filling or warmup >= fill:
            continue
        rates = f"{rate_in / 1e6:.0f} MB/s written, {rate_out / 1e6:.0f} MB/s destaged"
        if fill >= end:
            warnings.append(
                ValidityWarning(
                    "fill_time",
                    component,
                    "short",
                    f"the run ({end:g} s) ends before {host}'s destage buffer could fill "
                    f"({fill:.3g} s from empty at {rates}, "
                    "by the estimate's fluid model): its figures hold for write bursts shorter "
                    "than that, not for sustained load "
                    f"(then writes wait for the array)",
                )
            )
        else:
            constants.append(
                (
                    fill,
                    component,
                    f"the time {host}'s destage buffer takes to fill ({fill:.3g} s from empty at "
                    f"{rates})",
                )
            )
    for seconds, component, words in constants:
        if warmup < seconds:
            warnings.append(
                ValidityWarning(
                    "short_warmup",
                    component,
                    "short",
                    f"the warm-up ({warmup:g} s) is shorter than {words}: the measured window "
                    "still holds the start-up transient; "
                    f"warm up for at least {seconds:.3g} s (the run is {end:g} s)",
                )
            )
    return warnings


def _duty_period(duty: dict[str, Any]) -> float:
    if duty["shape"] == "onoff":
        return float(duty["on"]) + float(duty["off"])
    if duty["shape"] == "sine":
        return float(duty["period"])
    return float(duty["interval"]) * len(duty["levels"])


def _fill_times(scenario: Scenario | dict[str, Any]) -> list[tuple[str, float, float, float]]:
    """(host, fill time s, write rate, drain rate in bytes/s) of each destage buffer that fills, by
    the estimate's fluid model.

    Empty when the scenario cannot be estimated (the estimate's own errors are its business, not the
    run's).
    """
    from simcache.base.errors import ScenarioError
    from simcache.estimate import estimate
    from simcache.sim.control import ESTIMATED_CHAINS_MAX

    if isinstance(scenario, dict):
        # at most
        chains = len(scenario.get("groups", [])) * int(scenario.get("cluster", {}).get("hosts", 1))
    else:
        chains = sum(len(scenario.group_hosts(g)) for g in scenario.groups)
    if chains > ESTIMATED_CHAINS_MAX:
        # past that many chains the estimate can take seconds: the run's own backlog series speaks
        # instead
        return []
    try:
        fluids = estimate(scenario).destager
    except (ScenarioError, ValueError, ArithmeticError):
        return []
    return [
        (f.host, f.fill_time_s, f.accept_rate_bytes_s, f.drain_rate_bytes_s)
        for f in fluids
        if math.isfinite(f.fill_time_s) and f.fill_time_s > 0
    ]


def _few_samples(result: AssessedRun) -> list[ValidityWarning]:
    summary = result.summary
    total = summary["count"] + summary["unfinished"]
    parts = []
    for column, q in PERCENTILES.items():
        needed = samples_needed(q)
        thin = summary[(total > 0) & (total < needed)]
        if not len(thin):
            continue
        named = [
            f"{g} {op}s ({n:,})"
            for g, op, n in zip(thin["group"], thin["op"], total[thin.index], strict=True)
        ]
        more = f" and {len(named) - _LISTED} more" if len(named) > _LISTED else ""
        parts.append(f"{column} needs {needed:,}: {', '.join(named[:_LISTED])}{more}")
    if not parts:
        return []
    return [
        ValidityWarning(
            "few_samples",
            "percentiles",
            "short",
            f"few I/Os behind some percentiles ({'; '.join(parts)}): with fewer than 10 I/Os "
            "beyond it a percentile is "
            f"the worst few I/Os, not a stable figure; run longer",
        )
    ]


def _late_events(result: AssessedRun) -> list[ValidityWarning]:
    end = float(result.meta["simulated_s"])
    warnings = []
    for event in result.meta["scenario"]["events"]:
        at = float(event["at"])
        if at >= end:
            what = "vMotion" if event["kind"] == "vmotion" else "host failure"
            warnings.append(
                ValidityWarning(
                    "event_after_end",
                    f"{event['kind']}@{at:g}s",
                    "short",
                    f"the {what} scheduled at {at:g} s is at or after the run's end ({end:g} s): "
                    "it never happens in this run; "
                    f"run for longer than {at:g} s to see it",
                )
            )
    return warnings
