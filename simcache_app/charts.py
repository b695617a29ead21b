"""Plotly figures of a result, a sweep and a comparison (pure functions of the tables)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from simcache.collect import COMPONENTS

BUSIEST_SHOWN = 6
_COMPONENT_LABELS = {
    "local_tier_ms": "local tier",
    "network_ms": "network (replica send)",
    "peer_tier_ms": "peer tier",
    "destage_wait_ms": "waiting for destager buffer",
    "array_ms": "array",
}
_LAYOUT = {"height": 320, "margin": {"l": 10, "r": 10, "t": 40, "b": 10}, "legend": {"orientation": "h", "y": -0.25}}


def _lines(series: pd.DataFrame, columns: dict[str, str], title: str, y_title: str, scale: float = 1.0) -> go.Figure:
    figure = go.Figure()
    for column, label in columns.items():
        if column in series:
            figure.add_trace(go.Scatter(x=series.index, y=series[column] * scale, mode="lines", name=label))
    figure.update_layout(title=title, xaxis_title="simulated time (s)", yaxis_title=y_title, **_LAYOUT)
    return figure


def latency_figure(series: pd.DataFrame) -> go.Figure:
    """VM-observed p50/p99 latency of the I/Os completed in each sample interval."""
    columns = {"write_p50_ms": "write p50", "write_p99_ms": "write p99", "read_p50_ms": "read p50", "read_p99_ms": "read p99"}
    figure = _lines(series, columns, "VM latency per interval", "ms")
    figure.update_yaxes(type="log")
    return figure


def backlog_figure(series: pd.DataFrame) -> go.Figure:
    """Destage backlog (all hosts and per host) and data held in one copy only, in MiB."""
    hosts = {c: c.removeprefix("backlog.") for c in series.columns if c.startswith("backlog.")}
    columns = {"destage_backlog_bytes": "all hosts", **hosts, "data_at_risk_bytes": "data at risk (single copy)"}
    return _lines(series, columns, "Destage backlog", "MiB", scale=1 / 2**20)


def busiest_components(series: pd.DataFrame, count: int = BUSIEST_SHOWN) -> list[str]:
    """The ``util.*`` columns with the highest mean utilization, busiest first."""
    utilization = series[[c for c in series.columns if c.startswith("util.")]].mean()
    return list(utilization.sort_values(ascending=False).index[:count])


def utilization_figure(series: pd.DataFrame, count: int = BUSIEST_SHOWN) -> go.Figure:
    """Utilization over time of the busiest links, tiers and the array (0-100%)."""
    columns = {c: c.removeprefix("util.") for c in busiest_components(series, count)}
    figure = _lines(series, columns, f"Utilization of the {len(columns)} busiest components", "%", scale=100)
    figure.update_yaxes(range=[0, 105])
    return figure


def breakdown_figure(breakdown: pd.DataFrame) -> go.Figure:
    """Where the write time goes: mean ms per latency component, stacked, one bar per group."""
    figure = go.Figure()
    for component in COMPONENTS:
        figure.add_trace(go.Bar(y=breakdown["group"], x=breakdown[component], name=_COMPONENT_LABELS[component], orientation="h"))
    figure.update_layout(title="Where the write time goes (mean ms)", barmode="stack", xaxis_title="ms", **_LAYOUT)
    return figure


def sweep_figure(summary: pd.DataFrame, x: str, metric: str, metric_title: str) -> go.Figure:
    """Mean of ``metric`` over the seeds against the swept values, with its 95% confidence band.

    ``summary`` is :func:`simcache.sweep.sweep_summary`'s table: ``metric`` holds the mean and
    ``metric.ci95`` the half-width of the interval (NaN with one seed).
    """
    xs = list(summary[x])
    mean, half = summary[metric], summary[f"{metric}.ci95"]
    figure = go.Figure()
    if half.notna().any():
        band = list(mean + half) + list(mean - half)[::-1]
        figure.add_trace(go.Scatter(x=xs + xs[::-1], y=band, fill="toself", line={"width": 0}, opacity=0.25, name="95% confidence"))
    figure.add_trace(go.Scatter(x=xs, y=mean, mode="lines+markers", name="mean over seeds"))
    figure.update_layout(title=f"{metric_title} against {x}", xaxis_title=x, yaxis_title=metric_title, **_LAYOUT)
    return figure


def compare_figure(table: pd.DataFrame) -> go.Figure:
    """Write p99 per group (and over all groups) for each variant, as grouped bars."""
    columns = [c for c in table.columns if c.endswith("write p99 ms")]
    figure = go.Figure()
    for column in columns:
        name = "all groups" if column == "write p99 ms" else column.removesuffix(" write p99 ms")
        figure.add_trace(go.Bar(x=table["variant"], y=table[column], name=name))
    figure.update_layout(title="Write p99 by variant (ms)", barmode="group", yaxis_title="ms", **_LAYOUT)
    return figure
