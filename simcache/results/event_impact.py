"""What each scheduled event did to the VMs and to their data: latency before, during and after it,
the peak of data at risk, the bytes lost and the time the cluster took to recover.

One computation for the three places that show it: the events table of ``simcache run``
(:mod:`simcache.report.event_report`), ``simcache run --json`` (``event_impact``) and the HTML
report (:mod:`simcache.report.page`).

- **Span**: an event runs from its ``at`` to ``at + duration`` (outages, slowed components, array
  events); a ``host_failure`` with ``restart_delay`` to its HA restart, without it to the end of the
  run; a ``vmotion`` to the end of its memory transfer (:attr:`Result.meta` ``vmotions``); any other
  event is an instant. A span is cut at the end of the run.
- **Windows**: *during* is the span; *before* the same length just before ``at`` and *after* the
  same length just after the span's end, each cut to the measured window (after warm-up) and the
  run's end. An instant's windows are one sample interval long. The latency of a window is that of
  the I/Os *issued* in it (unfinished ones at their latency so far, as in ``Result.summary``).
- **Peak at risk**: the largest ``series.data_at_risk_bytes`` sample from ``at`` until the at-risk
  bytes are back (or the end of the run).
- **Lost**: the ``lost_bytes`` the run's meta records for the event (host failures; 0 for the
  others).
- **Recovery**, each from the samples (so at the sample interval's resolution), as the first sample
  at or after the span's end (for a ``host_failure``, the first after the failure: its data starts
  to recover at once, whether or not its VMs are still down) whose value is at or below the last
  sample before ``at`` (a sample at ``at`` may already show the event): the destage backlog back to
  its pre-event level, and the data at risk back to its pre-event level (0 when the cluster kept its
  policies before: every replica back). ``None``: not recovered by the end of the run, or the event
  had not ended by then (``ongoing``: nothing is counted as recovered from an event still under
  way).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from simcache.results.assessed import event_span_end
from simcache.results.result import Result
from simcache.results.summary import censored_percentiles
from simcache.sim.stream import BUCKETS, StreamStats, percentile_of_counts

__all__ = ["LATENCY_FIGURES", "PHASES", "EventImpact", "event_impacts", "impacts_json"]

PHASES = ("before", "during", "after")
LATENCY_FIGURES = ("write_p50_ms", "write_p99_ms", "read_p50_ms", "read_p99_ms")
"""The latency figures of each window (ms; NaN when the window has no I/O of that kind)."""


@dataclass(frozen=True)
class EventImpact:
    """One scheduled event's effect on the run (see the module's docstring for every definition)."""

    kind: str
    what: str
    """The event in words (``host0 peer link down``)."""
    start_s: float
    end_s: float
    """The span's end (the run's end when it lasts past it)."""
    ongoing: bool
    """The event had not ended when the run did (a vMotion still copying, an outage longer than
    the run): nothing can have recovered from it, so both recovery times are None. A host failure
    counts from its time, so a host that stays down is not ``ongoing``."""
    windows: dict[str, tuple[float, float]]
    """``before``, ``during``, ``after``: [start, end) of issue times (an empty window has start
    == end)."""
    latency: dict[str, dict[str, float]]
    """Per window, :data:`LATENCY_FIGURES` in ms (NaN: no such I/O in the window)."""
    peak_at_risk_bytes: float
    lost_bytes: float
    recovery_from_s: float
    """Where recovery is counted from: the span's end, or a host failure's time."""
    backlog_before_bytes: float
    """The destage backlog at the last sample before ``at`` (the level it must come back to)."""
    backlog_recovered_s: float | None
    """When the destage backlog was back to ``backlog_before_bytes`` (None: not by the end of the
    run)."""
    at_risk_before_bytes: float
    at_risk_recovered_s: float | None
    """When the data at risk was back to ``at_risk_before_bytes`` (None: not by the end of the
    run)."""

    @property
    def window_s(self) -> float:
        """The windows' length (the before and after windows may be cut shorter by the warm-up or
        the run's end)."""
        return self.windows["during"][1] - self.windows["during"][0]

    def to_json(self) -> dict[str, Any]:
        """Plain data; NaN figures become None (strict JSON)."""
        data = asdict(self)
        data["windows"] = {phase: list(window) for phase, window in self.windows.items()}
        data["latency"] = {
            p: {k: None if math.isnan(v) else v for k, v in f.items()}
            for p, f in self.latency.items()
        }
        return data


def event_impacts(result: Result) -> list[EventImpact]:
    """One :class:`EventImpact` per scheduled event that starts within the run, in the scenario's
    order."""
    meta = result.meta
    start, end = result.window
    series = result.series
    interval = float(meta["scenario"]["run"]["sample_interval"])
    impacts = []
    for event in meta["scenario"].get("events", []):
        at = float(event["at"])
        if at >= end:
            continue
        full_end = event_span_end(event, meta, end)
        span_end = min(full_end, end)
        length = span_end - at if span_end > at else interval
        windows = {
            "before": (max(start, at - length), max(start, at)),
            "during": (at, max(span_end, min(at + length, end))),
        }
        after_start = windows["during"][1]
        windows["after"] = (after_start, min(end, after_start + length))
        risk = (
            series["data_at_risk_bytes"]
            if "data_at_risk_bytes" in series
            else pd.Series(0.0, index=series.index)
        )
        backlog = series["destage_backlog_bytes"]
        risk_before = _before(risk, at)
        failure = event["kind"] == "host_failure"
        recover_from = at if failure else span_end
        ongoing = not failure and full_end >= end
        risk_back = None if ongoing else _recovered(risk, risk_before, recover_from, strict=failure)
        peak_until = end if risk_back is None else risk_back
        peak = risk[(risk.index > at) & (risk.index <= peak_until)]
        backlog_before = _before(backlog, at)
        impacts.append(
            EventImpact(
                kind=str(event["kind"]),
                what=event_words(event),
                start_s=at,
                end_s=span_end,
                ongoing=ongoing,
                windows=windows,
                latency={phase: _latency(result, *window) for phase, window in windows.items()},
                peak_at_risk_bytes=float(peak.max()) if len(peak) else risk_before,
                lost_bytes=_lost(event, meta),
                backlog_before_bytes=backlog_before,
                recovery_from_s=recover_from,
                backlog_recovered_s=None
                if ongoing
                else _recovered(backlog, backlog_before, recover_from, strict=failure),
                at_risk_before_bytes=risk_before,
                at_risk_recovered_s=risk_back,
            )
        )
    return impacts


def impacts_json(result: Result) -> list[dict[str, Any]]:
    """:func:`event_impacts` as plain JSON-able data (``simcache run --json``'s
    ``event_impact``)."""
    return [impact.to_json() for impact in event_impacts(result)]


def event_words(event: Mapping[str, Any]) -> str:
    """A scheduled event (``events`` of the scenario as run) in a few words."""
    kind = str(event["kind"])
    if kind == "vmotion":
        # a VM that moves; none: background traffic only
        vm = f" {event['vm']}" if event.get("vm") else ""
        return f"vMotion{vm} host{event['source_host']}->host{event['target_host']}"
    if kind in ("array_degraded", "array_rebuild"):
        return kind.replace("_", " ")
    what = {
        "host_failure": "fails",
        "device_failure": "tier fails",
        "peer_loss": "peers lost",
        "link_down": f"{event.get('link')} link down",
        "link_slow": f"{event.get('link')} link slow",
        "device_slow": "tier slow",
    }.get(kind, kind.replace("_", " "))
    return f"host{event['host']} {what}" if "host" in event else what


def _lost(event: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
    """The bytes the run's meta says the event lost: its record (same host and time) with
    ``lost_bytes``."""
    lost = 0.0
    for records in meta.values():
        if not isinstance(records, list):
            continue
        for record in records:
            if (
                not isinstance(record, dict)
                or "lost_bytes" not in record
                or record.get("host") != event.get("host")
            ):
                continue
            if record.get("at_s", record.get("start_s")) == event["at"]:
                lost += float(record["lost_bytes"])
    return lost


_SAME_TIME = 1e-9
"""Seconds within which a sample time and an event time are the same instant (sample times are
sums of floats)."""


def _before(column: pd.Series, at: float) -> float:
    """The last sample before ``at`` (0 before the first sample): one at ``at`` itself may
    already show the event."""
    earlier = column[column.index < at - _SAME_TIME]
    return float(earlier.iloc[-1]) if len(earlier) else 0.0


def _recovered(column: pd.Series, level: float, after: float, *, strict: bool) -> float | None:
    """The first sample time at or after ``after`` (``strict``: after it) whose value is at most
    ``level`` (None: none)."""
    times = column.index
    later = column[
        ((times > after + _SAME_TIME) if strict else (times >= after - _SAME_TIME))
        & (column.to_numpy() <= level)
    ]
    return float(later.index[0]) if len(later) else None


def _latency(result: Result, start: float, end: float) -> dict[str, float]:
    if result.stream is not None:
        return _streamed_latency(result.stream, start, end)
    figures: dict[str, float] = {}
    records, unfinished = result.records, result.unfinished
    for op in ("write", "read"):
        done = records[
            (records["op"] == op) & (records["issue_s"] >= start) & (records["issue_s"] < end)
        ]
        waiting = unfinished[
            (unfinished["op"] == op)
            & (unfinished["issue_s"] >= start)
            & (unfinished["issue_s"] < end)
        ]
        latency = done["latency_ms"].to_numpy(dtype=float)
        bounds = (result.window[1] - waiting["issue_s"].to_numpy(dtype=float)) * 1e3
        if len(latency) + len(bounds):
            percentiles, _ = censored_percentiles(latency, bounds)
            figures |= {
                f"{op}_p50_ms": float(percentiles["p50_ms"]),
                f"{op}_p99_ms": float(percentiles["p99_ms"]),
            }
        else:
            figures |= {f"{op}_p50_ms": math.nan, f"{op}_p99_ms": math.nan}
    return figures


def _streamed_latency(stream: StreamStats, start: float, end: float) -> dict[str, float]:
    """A run without records (``--no-records``): the window's figures from the histograms of the
    sample intervals that lie inside it, by completion time (the per-I/O issue times are not
    kept), to the histograms' 1% error; unfinished I/Os are not in them. A window shorter than a
    sample interval takes the interval its middle falls in."""
    bounds = [0.0, *stream.times, math.inf]
    inside = [
        k
        for k in range(len(stream.intervals))
        if start - _SAME_TIME <= bounds[k] and bounds[k + 1] <= end + _SAME_TIME
    ]
    if not inside and end > start:
        middle = (start + end) / 2
        inside = [k for k in range(len(stream.intervals)) if bounds[k] <= middle < bounds[k + 1]]
    figures: dict[str, float] = {}
    for o, op in ((1, "write"), (0, "read")):
        counts = sum(
            (stream.intervals[k].histogram(o) for k in inside), np.zeros(BUCKETS, dtype=np.int64)
        )
        figures |= {
            f"{op}_p50_ms": percentile_of_counts(counts, 50),
            f"{op}_p99_ms": percentile_of_counts(counts, 99),
        }
    return figures
