"""Plotly figures of a result, a sweep and a comparison (pure functions of the tables).

Time charts carry what happened when (:func:`time_marks`): the warm-up and the scheduled events'
spans shaded, instant events as dashed lines, the on periods of on/off duty cycles shaded, and the
moment a flash tier's clean pool ran out (:func:`clean_pool_cliffs`) as a dotted line.
Legends name components in words (:func:`legend_name`); a cluster with many components shows the
:data:`TOP_SHOWN` busiest and one "others" line. A sweep over categories (link kinds, policies,
profiles) is drawn as points with error bars, not a line; a numeric swept axis spanning
:data:`X_LOG_RATIO` or more is logarithmic, as is a value axis spanning :data:`LOG_RATIO`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import plotly.graph_objects as go

import simcache
from simcache.physics.cluster import PortName
from simcache.runs.sweep import PointStability
from simcache.sim.collect import COMPONENTS
from simcache.workloads.generators import DutyClock

TOP_SHOWN = 8
"""Components a time chart shows one by one; the rest are one "others" line."""
LOG_RATIO = 100.0
"""Largest over smallest mean from which a sweep's value axis is logarithmic (two orders of
magnitude)."""
X_LOG_RATIO = 10.0
"""Largest over smallest swept value from which the swept axis is logarithmic: the page's buffer
and size sweeps (64 to 4,096 MiB, 1 to 64 GiB) step by a factor, while host, spindle and RPM
sweeps (3 to 8, 4 to 24, 5,400 to 15,000) stay within one order of magnitude and linear."""
MOST_PHASES = 40
"""On periods of one duty cycle shaded at most; a faster cycle is said in the caption, not drawn
as a comb."""
_COMPONENT_LABELS = {
    "local_tier_ms": "local tier",
    "network_ms": "network (replica send)",
    "peer_tier_ms": "peer tier",
    "destage_wait_ms": "waiting for destager buffer",
    "array_ms": "array",
}
_HEIGHT = 320
_LAYOUT = {
    "height": _HEIGHT,
    "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
    "legend": {"orientation": "h", "y": -0.25},
}
_SHADES = {"warm-up": "#999999", "event": "#d62728", "duty": "#2ca02c"}
_CLIFF = "#ff7f0e"


# -- what happened when
# -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """A shaded stretch of simulated time: the warm-up, an event that lasts, or a duty cycle's on
    period."""

    start: float
    end: float
    label: str
    kind: Literal["warm-up", "event", "duty"]


@dataclass(frozen=True)
class TimeMarks:
    """What a time chart marks: shaded ``spans``, instant events as ``lines`` (time, label), the
    time a tier's clean pool ran out (``cliff``: time, label; None: none did, or the run does not
    show when), and ``notes`` on what is not drawn."""

    spans: tuple[Span, ...] = ()
    lines: tuple[tuple[float, str], ...] = ()
    notes: tuple[str, ...] = ()
    cliff: tuple[float, str] | None = None


def marks_caption(marks: TimeMarks) -> str:
    """What the time charts' shades and lines mean, then what is not drawn."""
    said = [
        "Time charts: grey is the warm-up (not measured), red the scheduled events, green a "
        "group's on/off bursts"
        + (
            "; the orange dotted line is where a flash tier's clean pool ran out: its writes "
            "wait for garbage collection from there."
            if marks.cliff
            else "."
        )
    ]
    return " ".join([*said, *(f"Not drawn: {note}." for note in marks.notes)])


def event_label(event: Mapping[str, Any]) -> str:
    """A scheduled event (a scenario ``events`` entry as a dict) in words: ``"vMotion host 0 →
    host 1"``, ``"host 2 fails"``, ``"host 1 storage link slow (50% speed)"``; a kind this page
    does not know is named by its kind and host (``"device failure, host 3"``)."""
    kind = str(event.get("kind", "event"))
    host = f"host {event['host']}" if event.get("host") is not None else ""
    fraction = event.get("fraction")
    slow = f" ({fraction:.0%} speed)" if isinstance(fraction, (int, float)) else ""
    if kind == "vmotion":
        return f"vMotion host {event.get('source_host')} → host {event.get('target_host')}"
    if kind == "array_degraded":
        return "array degraded (a spindle failed)"
    if kind == "array_rebuild":
        return "array rebuild"
    named = {
        "host_failure": "fails",
        "peer_loss": "peer links down",
        "link_down": f"{event.get('link')} link down",
        "link_slow": f"{event.get('link')} link slow{slow}",
        "device_slow": f"tier slow{slow}",
        "device_failure": "tier fails",
    }
    if host and kind in named:
        return f"{host} {named[kind]}"
    return kind.replace("_", " ") + (f", {host}" if host else "")


def time_marks(result: simcache.Result, scenario: simcache.Scenario) -> TimeMarks:
    """The warm-up, the scheduled events that fall within the run and the on/off duty cycles' on
    periods."""
    end = float(result.meta["simulated_s"])
    warmup = result.window[0]
    spans = [Span(0.0, warmup, "warm-up", "warm-up")] if warmup > 0 else []
    lines: list[tuple[float, str]] = []
    for event in scenario.events:
        fields = event.model_dump()
        at = float(fields["at"])
        if at >= end:
            continue
        duration = fields.get("duration")
        if isinstance(duration, (int, float)) and duration > 0:
            spans.append(Span(at, min(at + duration, end), event_label(fields), "event"))
        else:
            lines.append((at, event_label(fields)))
    notes = []
    for group in scenario.groups:
        phases = list(on_periods(group.workload.duty_cycle, end))
        if len(phases) > MOST_PHASES:
            notes.append(
                f"group {group.name}'s {len(phases)} on/off bursts are not shaded (more than "
                f"{MOST_PHASES})"
            )
            continue
        spans += [Span(start, stop, f"{group.name} on", "duty") for start, stop in phases]
    cliffs = clean_pool_cliffs(result, scenario)
    if cliffs.unseen:
        tiers = (
            f"{cliffs.unseen[0]}'s tier"
            if len(cliffs.unseen) == 1
            else f"the tiers of {', '.join(cliffs.unseen)}"
        )
        notes.append(f"when {tiers} ran out of clean space: the result does not give the time")
    return TimeMarks(tuple(spans), tuple(lines), tuple(notes), cliff_label(cliffs))


def on_periods(duty: Any, end: float) -> Iterable[tuple[float, float]]:
    """The (start, end) of each on period of an on/off duty cycle within [0, ``end``); none for
    another shape."""
    if duty is None or duty.shape != "onoff":
        return
    clock = DutyClock(duty)
    now = 0.0
    while now < end:
        start, stop = clock.on_window(now)
        if start >= end:
            return
        yield start, min(stop, end)
        now = stop


# -- the garbage-collection cliff
# ---------------------------------------------------------------------
#
# Review 64, F3: large_writes_flash's p99 jumps from about 15 to 110 ms at 1.4 s, when its tier's
# clean pool runs out, and nothing on the chart said why. The run records, per host, when a write
# first found its tier's clean pool short and waited for garbage collection
# (``tier_ran_dry_s_by_host`` in its totals, the same from both engines): the cliff, with
# foreground passes (the tier's ``gc_pass``: the writes then stall for whole passes) or without
# (each write then waits for its own bytes).


@dataclass(frozen=True)
class Cliffs:
    """The hosts whose tier ran out of clean space in a run."""

    at: dict[str, float]
    """Host -> simulated time (s) a write first found its clean pool short, earliest first."""
    unseen: tuple[str, ...] = ()
    """Hosts whose writes waited for garbage collection at a moment the result does not give (a
    result saved before the time was recorded)."""
    passes: bool = True
    """Whether the tier collects in foreground passes (``gc_pass``): the writes then stall."""


def clean_pool_cliffs(result: simcache.Result, scenario: simcache.Scenario) -> Cliffs:
    """The hosts of ``result`` whose tier's writes waited for garbage collection, and when each
    one's clean pool ran short (see the comment above)."""
    totals = result.totals
    waited = [h for h, s in totals.get("tier_gc_wait_s_by_host", {}).items() if s > 0]
    dry = totals.get("tier_ran_dry_s_by_host", {})
    at = {h: float(dry[h]) for h in waited if h in dry}
    unseen = tuple(h for h in waited if h not in at)
    passes = bool(scenario.cluster.tier.gc_pass)
    return Cliffs(dict(sorted(at.items(), key=lambda item: item[1])), unseen, passes)


def cliff_label(cliffs: Cliffs) -> tuple[float, str] | None:
    """Where the time charts mark the cliff, and its label: the earliest host's time, the others
    counted (``"host0 clean pool ran out: GC stalls from 1.41 s"``, ``"clean pools ran out: host2
    first at 1.38 s, 6 hosts by 1.62 s"``); None without one."""
    if not cliffs.at:
        return None
    (host, start), *others = cliffs.at.items()
    if not others:
        waits = "GC stalls" if cliffs.passes else "writes wait for GC"
        return start, f"{host} clean pool ran out: {waits} from {start:.3g} s"
    last = others[-1][1]
    return start, (
        f"clean pools ran out: {host} first at {start:.3g} s, {len(cliffs.at)} hosts by "
        f"{last:.3g} s"
    )


def _marked(figure: go.Figure, marks: TimeMarks) -> go.Figure:
    """``figure`` with ``marks``: a shaded band from bottom to top for each span (its label once,
    on its first band: a duty cycle's at the bottom, below the warm-up's), a dashed line with its
    label for each instant, an orange dotted one labelled at the bottom where a tier's clean pool
    ran out. The shapes and labels plotly's ``add_vrect`` and ``add_vline`` would
    add, set in one layout update: those helpers validate the whole figure at each call, which
    took about a third of a page rerun's time with a duty cycle's bands on three charts
    (tests/app/test_app_charts.py checks the two give the same layout)."""
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    across = {"xref": "x", "yref": "y domain", "y0": 0, "y1": 1}
    labelled: set[str] = set()
    for span in marks.spans:
        shapes.append(
            {
                "type": "rect",
                "x0": span.start,
                "x1": span.end,
                "fillcolor": _SHADES[span.kind],
                "opacity": 0.12,
                "layer": "below",
                "line": {"width": 0},
                **across,
            }
        )
        if span.label not in labelled:
            bottom = span.kind == "duty"
            annotations.append(_mark_label(span.label, span.start, bottom))
        labelled.add(span.label)
    for at, text in marks.lines:
        shapes.append(
            {"type": "line", "x0": at, "x1": at, "line": {"color": "black", "dash": "dash"}}
            | across
        )
        annotations.append(_mark_label(text, at, bottom=False))
    if marks.cliff is not None:
        at, text = marks.cliff
        line = {"color": _CLIFF, "dash": "dot", "width": 2}
        shapes.append({"type": "line", "x0": at, "x1": at, "line": line} | across)
        annotations.append(
            _mark_label(text, at, bottom=True) | {"font": {"size": 10, "color": _CLIFF}}
        )
    if shapes:
        figure.update_layout(shapes=shapes, annotations=annotations)
    return figure


def _mark_label(text: str, at: float, bottom: bool) -> dict[str, Any]:
    """A mark's label at time ``at``, left-aligned from it, at the top of the plot (or the
    bottom), as plotly's ``annotation_position`` "top left" ("bottom left") puts it."""
    return {
        "text": text,
        "x": at,
        "xref": "x",
        "xanchor": "left",
        "y": 0 if bottom else 1,
        "yref": "y domain",
        "yanchor": "bottom" if bottom else "top",
        "showarrow": False,
        "font": {"size": 10},
    }


# -- names
# --------------------------------------------------------------------------------------------


def legend_name(column: str) -> str:
    """A series column in people's words: ``util.host3.peer.tx`` -> ``"host 3 peer link, send"``,
    ``util.host0.peer1.rx`` -> ``"host 0 peer link 1, receive"``, ``util.host2.tier`` -> ``"host
    2 tier"``, ``util.array`` -> ``"array drives"`` (spindles or flash drives), ``backlog.host1``
    -> ``"host 1"``."""
    name = column.split(".", 1)[1] if column.startswith(("util.", "queue.", "backlog.")) else column
    port = PortName.parse(name)
    if port is not None:
        way = "send" if port.direction == "tx" else "receive"
        if port.role == "fabric":
            return "shared peer segment"
        if port.role == "array":
            return f"array port, {way}"
        number = "" if port.index is None else f" {port.index}"
        return f"host {port.host} {port.role} link{number}, {way}"
    if name == "array":
        return "array drives"
    host, _, rest = name.partition(".")
    if host.startswith("host") and host[4:].isdigit():
        return f"host {host[4:]}" + (f" {rest}" if rest else "")
    return name


def top_and_others(
    series: pd.DataFrame,
    columns: Sequence[str],
    count: int,
    combine: Literal["sum", "max"],
    noun: str,
) -> dict[str, pd.Series]:
    """The ``count`` columns with the highest mean, by :func:`legend_name`, and the rest as one
    line: their sum (quantities that add, such as backlog bytes) or their highest value at each
    time (utilizations, which do not add), named ``"other 28 hosts (sum)"``."""
    ranked = list(series[list(columns)].mean().sort_values(ascending=False, kind="stable").index)
    lines = {legend_name(str(c)): series[c] for c in ranked[:count]}
    rest = ranked[count:]
    if rest:
        part = series[rest]
        what = "sum" if combine == "sum" else "highest of them"
        lines[f"other {len(rest)} {noun} ({what})"] = (
            part.sum(axis=1) if combine == "sum" else part.max(axis=1)
        )
    return lines


# -- time charts
# --------------------------------------------------------------------------------------


def _lines(
    lines: Mapping[str, pd.Series], title: str, y_title: str, marks: TimeMarks, scale: float = 1.0
) -> go.Figure:
    figure = go.Figure()
    for label, values in lines.items():
        figure.add_trace(go.Scatter(x=values.index, y=values * scale, mode="lines", name=label))
    figure.update_layout(
        title=title, xaxis_title="simulated time (s)", yaxis_title=y_title, **_LAYOUT
    )
    return _marked(figure, marks)


def latency_figure(series: pd.DataFrame, marks: TimeMarks = TimeMarks()) -> go.Figure:
    """VM-observed p50/p99 latency of the I/Os completed in each sample interval."""
    columns = {
        "write_p50_ms": "write p50",
        "write_p99_ms": "write p99",
        "read_p50_ms": "read p50",
        "read_p99_ms": "read p99",
    }
    figure = _lines(
        {label: series[c] for c, label in columns.items() if c in series},
        "VM latency per interval",
        "ms",
        marks,
    )
    figure.update_yaxes(type="log")
    return figure


def backlog_figure(
    series: pd.DataFrame, marks: TimeMarks = TimeMarks(), count: int = TOP_SHOWN
) -> go.Figure:
    """Destage backlog (all hosts, the ``count`` fullest hosts and the others' sum), the data
    short of the copies its policy promises ("at risk") and the data held in one copy only (what a
    host's failure can lose, WB+0's whole backlog among it: review 65 read "single copy" at 0 over
    a full WB+0 buffer, the series then being the short-of-policy one), in MiB."""
    hosts = [c for c in series.columns if c.startswith("backlog.")]
    lines = (
        {"all hosts": series["destage_backlog_bytes"]} if "destage_backlog_bytes" in series else {}
    )
    lines |= top_and_others(series, hosts, count, "sum", "hosts")
    if "data_at_risk_bytes" in series:
        lines["at risk (short of the policy's copies)"] = series["data_at_risk_bytes"]
    if "single_copy_bytes" in series:
        lines["in one copy only (lost if its host fails)"] = series["single_copy_bytes"]
    title = "Destage backlog" + (
        f": the {count} fullest of {len(hosts)} hosts" if len(hosts) > count else ""
    )
    return _lines(lines, title, "MiB", marks, scale=1 / 2**20)


def utilization_figure(
    series: pd.DataFrame, marks: TimeMarks = TimeMarks(), count: int = TOP_SHOWN
) -> go.Figure:
    """Utilization over time (0-100%) of the ``count`` busiest links, tiers and the array, and
    the highest of the others."""
    columns = [c for c in series.columns if c.startswith("util.")]
    lines = top_and_others(series, columns, count, "max", "components")
    shown = min(count, len(columns))
    figure = _lines(
        lines,
        f"Utilization: the {shown} busiest of {len(columns)} components",
        "%",
        marks,
        scale=100,
    )
    figure.update_yaxes(range=[0, 105])
    # room for the legend's rows
    figure.update_layout(height=_HEIGHT + 20 * math.ceil(len(lines) / 2))
    return figure


def breakdown_figure(breakdown: pd.DataFrame) -> go.Figure:
    """Where the write time goes: mean ms per latency component, stacked, one bar per group."""
    figure = go.Figure()
    for component in COMPONENTS:
        figure.add_trace(
            go.Bar(
                y=breakdown["group"],
                x=breakdown[component],
                name=_COMPONENT_LABELS[component],
                orientation="h",
            )
        )
    figure.update_layout(
        title="Where the write time goes (mean ms)", barmode="stack", xaxis_title="ms", **_LAYOUT
    )
    return figure


# -- sweeps and comparisons
# ---------------------------------------------------------------------------


def spans_orders(values: Iterable[Any], ratio: float = LOG_RATIO) -> bool:
    """Whether ``values`` are all positive numbers whose largest is at least ``ratio`` times
    their smallest."""
    given = list(values)
    if not given or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in given
    ):
        return False
    low, high = float(min(given)), float(max(given))
    return low > 0 and high >= ratio * low


def sweep_figure(
    summary: pd.DataFrame,
    x: str,
    metric: str,
    metric_title: str,
    categorical: bool = False,
    stability: Sequence[PointStability] = (),
) -> go.Figure:
    """Mean of ``metric`` over the seeds against the swept values, with its 95% confidence interval.

    ``summary`` is :func:`simcache.runs.sweep.sweep_summary`'s table: ``metric`` holds the mean and
    ``metric.ci95`` the half-width of the interval (NaN with one seed). ``categorical`` values (link
    kinds, policies, profiles) are points with error bars on a category axis: their order is no
    scale, so no line joins them. Numeric values are a line inside a confidence band, on a
    logarithmic x axis when they span :data:`X_LOG_RATIO` or more (buffer and size sweeps such as
    64, 256, 1024, 4096 MiB); the y axis is when the means span :data:`LOG_RATIO`.

    ``stability``: each point's (:func:`simcache.runs.sweep.point_stability`, in ``summary``'s
    order). The points whose figure is not a steady state's are marked over the mean, one legend
    entry a state (a red cross where unstable, an orange triangle where a backlog fills, an orange
    diamond at capacity), their label on hover. Untested points (too few samples to test) are not
    marked: nothing is known to be wrong with their figure, and the page's table and warning say
    they were not tested.
    """
    xs = list(summary[x])
    mean, half = summary[metric], summary[f"{metric}.ci95"]
    marks = {  # state: (symbol, colour, legend)
        "unstable": ("x", "#d62728", "UNSTABLE: no steady state"),
        "filling": ("triangle-up", "#ff7f0e", "filling: a destage backlog grows"),
        "at capacity": ("diamond", "#ff7f0e", "at capacity: not a steady state"),
    }
    figure = go.Figure()
    if categorical:
        error = {
            "type": "data",
            "array": half.fillna(0.0).tolist(),
            "visible": bool(half.notna().any()),
        }
        figure.add_trace(
            go.Scatter(
                x=[str(v) for v in xs],
                y=mean,
                mode="markers",
                marker={"size": 10},
                error_y=error,
                name="mean over seeds, 95% interval",
            )
        )
        figure.update_xaxes(type="category")
    else:
        if half.notna().any():
            band = list(mean + half) + list(mean - half)[::-1]
            figure.add_trace(
                go.Scatter(
                    x=xs + xs[::-1],
                    y=band,
                    fill="toself",
                    line={"width": 0},
                    opacity=0.25,
                    name="95% confidence",
                )
            )
        figure.add_trace(go.Scatter(x=xs, y=mean, mode="lines+markers", name="mean over seeds"))
        if spans_orders(xs, X_LOG_RATIO):
            figure.update_xaxes(type="log")
    for state, (symbol, colour, legend) in marks.items():
        shown = [i for i, point in enumerate(stability) if point.state == state]
        if shown:
            figure.add_trace(
                go.Scatter(
                    x=[str(xs[i]) if categorical else xs[i] for i in shown],
                    y=[mean.iloc[i] for i in shown],
                    mode="markers",
                    marker={"symbol": symbol, "size": 16, "color": colour, "line": {"width": 2}},
                    hovertext=[stability[i].label for i in shown],
                    name=legend,
                )
            )
    if spans_orders(mean):
        figure.update_yaxes(type="log")
    figure.update_layout(
        title=f"{metric_title} against {x}", xaxis_title=x, yaxis_title=metric_title, **_LAYOUT
    )
    return figure


def compare_figure(table: pd.DataFrame) -> go.Figure:
    """Write p99 per group (and over all groups) for each variant, as grouped bars."""
    columns = [c for c in table.columns if c.endswith("write p99 ms")]
    figure = go.Figure()
    for column in columns:
        name = "all groups" if column == "write p99 ms" else column.removesuffix(" write p99 ms")
        figure.add_trace(go.Bar(x=table["variant"], y=table[column], name=name))
    figure.update_layout(
        title="Write p99 by variant (ms)", barmode="group", yaxis_title="ms", **_LAYOUT
    )
    return figure
