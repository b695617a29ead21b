"""What a run's validity is judged from: the run as the rules read it (:class:`AssessedRun`), a
warning (:class:`ValidityWarning`), and the counts the rules share (the I/Os in flight at given
times, the I/Os a percentile needs) and their words for several hosts at once (:func:`hosts_words`,
:func:`figure_range`). The rules are in :mod:`simcache.results.validity` (instability) and
:mod:`simcache.results.short_runs` (runs too short to tell)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from simcache.sim.stream import StreamStats
from simcache.spec import Scenario

__all__ = [
    "PINNED",
    "AssessedRun",
    "Severity",
    "ValidityWarning",
    "event_span_end",
    "figure_range",
    "hosts_words",
    "in_flight_series",
    "samples_needed",
    "window_series",
]

Severity = Literal["unstable", "short"]

PINNED = 0.97
"""A utilization at or above this over the window is pinned at capacity (the rules of
:mod:`simcache.results.validity` and :mod:`simcache.results.starved`)."""


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
    """Unstable: growing, backlog_full, overload, gc_cliff. Short: filling, fill_time, at_capacity,
    short_warmup, warmup_cut, warming, destage_starved, gc_ahead, empty_window, few_samples,
    event_after_end, untested."""
    component: str
    """What it is about, e.g. ``backlog.host0``, ``array``, ``in_flight.db.write``, ``p999_ms``,
    ``vmotion@10s``; several, comma-separated, where one warning speaks for several hosts or parts
    alike (``backlog.host0,backlog.host1``)."""
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


def hosts_words(hosts: Sequence[str]) -> str:
    """Hosts in words, in the order given: ``host0``, ``host0 and host1``, ``host0, host1 and
    host2``; more as ``6 hosts (host0 to host5)`` when their numbers run without a gap, else ``5
    hosts (host0, host2, host3 and 2 more)``."""
    if len(hosts) <= 3:
        return hosts[0] if len(hosts) == 1 else f"{', '.join(hosts[:-1])} and {hosts[-1]}"
    numbers = [int(m.group(1)) if (m := re.fullmatch(r"host(\d+)", h)) else -1 for h in hosts]
    in_a_row = numbers[0] >= 0 and numbers == list(range(numbers[0], numbers[0] + len(hosts)))
    listed = (
        f"{hosts[0]} to {hosts[-1]}"
        if in_a_row
        else f"{', '.join(hosts[:3])} and {len(hosts) - 3} more"
    )
    return f"{len(hosts)} hosts ({listed})"


def figure_range(values: Sequence[float], text: Callable[[float], str]) -> str:
    """Figures that may differ from host to host, each written by ``text``: one when they all
    read the same, else ``"lowest to highest"``."""
    low, high = text(min(values)), text(max(values))
    return low if low == high else f"{low} to {high}"


def window_series(result: AssessedRun) -> pd.DataFrame:
    """The run's samples in the measurement window (those after the warm-up; each covers the
    interval that ends at its time)."""
    start, _ = result.window
    series = result.series
    return series[series.index > start] if len(series) else series


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


def event_span_end(event: Mapping[str, Any], meta: Mapping[str, Any], end: float) -> float:
    """When a scheduled event (its JSON in ``meta["scenario"]["events"]``) ends: its duration's end,
    a host failure's restart (``end``, the run's, when it stays down), a vMotion's finish as
    ``meta["vmotions"]`` records it (``end`` when still copying); else its start."""
    at = float(event["at"])
    if event.get("duration") is not None:
        return at + float(event["duration"])
    if event["kind"] == "host_failure":
        return end if event.get("restart_delay") is None else at + float(event["restart_delay"])
    if event["kind"] == "vmotion":
        for record in meta.get("vmotions", []):
            if record.get("start_s") == at and record.get("source_host") == event["source_host"]:
                finished = float(record.get("end_s", math.nan))
                return end if math.isnan(finished) else finished
    return at
