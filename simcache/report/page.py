"""One run as a self-contained HTML page: verdicts, validity, latency table, bottleneck, breakdown,
timelines, an optional sweep, the scenario as run and the run manifest.

The page needs no network to open: styles are inline, charts are inline SVG
(:mod:`simcache.report.svg`), and nothing links outside the file. Figures are formatted as
``simcache run`` prints them (:mod:`simcache.report.cells`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import pandas as pd

import simcache.report.svg as svg
from simcache.base.metrics import PERCENTILES
from simcache.report.cells import RUN_COLUMNS, bounded, cell, engine_words
from simcache.report.event_report import mib, recovery_words
from simcache.report.sweep_section import SweepReport
from simcache.results.bottleneck import bottleneck_sentence, component_name
from simcache.results.event_impact import LATENCY_FIGURES, PHASES, event_impacts, event_words
from simcache.results.result import Result
from simcache.runs.targets import Target, Verdict, judge
from simcache.sim.collect import COMPONENTS
from simcache.sim.control import stopped_at
from simcache.spec import Scenario, load_scenario
from simcache.spec.dump import toml_document

__all__ = ["CENSORED", "UNSTABLE", "report_html", "scenario_hash"]

CENSORED = ">= "
"""How the page marks a figure that is only a lower bound (``>= 283.4``)."""
UNSTABLE = "UNSTABLE: this run has no steady state; its latency figures grow with the run's length."
"""The banner above an unstable run's figures."""
TOP_COMPONENTS = 6
"""Utilization and queue charts show the busiest this many components."""
_HEADINGS = {"count": "I/Os", "iops": "IOPS", "mb_s": "MB/s", "mean_ms": "mean ms"} | {
    name: f"p{q:g} ms" for name, q in PERCENTILES.items()
}
_STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 1em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.verdicts td, .verdicts th { text-align: left; }
.unstable { background: #fde0e0; border: 2px solid #c00; padding: 0.5em 1em; font-weight: bold; }
.partial { background: #fff3cd; border: 2px solid #c90; padding: 0.5em 1em; }
.meets { color: #070; } .misses { color: #b00; } .unknown { color: #a60; }
svg.chart { display: block; width: 100%; max-width: 720px; height: auto; }
pre { background: #f6f6f6; padding: 0.5em; overflow: auto; }
"""


def scenario_hash(result: Result) -> str:
    """First 16 hex digits of the SHA-256 of the scenario as run (its JSON, keys sorted): equal
    scenarios, equal hash."""
    text = json.dumps(result.meta["scenario"], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def report_html(
    result: Result, *, targets: Sequence[Target] = (), sweep: SweepReport | None = None
) -> str:
    """The report of ``result`` (and of ``sweep``, run around it) as one HTML document;
    ``targets`` get a verdict each."""
    meta = result.meta
    data = meta["scenario"]
    scenario = result.scenario if result.scenario is not None else load_scenario(data)
    verdicts = [judge(result, target) for target in targets]
    body = [
        f"<h1>simcache report: {escape(meta['scenario_name'])}</h1>",
        f"<p class='description'>{escape(data.get('description') or '')}</p>",
        _verdicts(verdicts),
        _validity(result),
        "<h2>Latency per VM group (ms), IOPS and MB/s</h2>",
        _latency_table(result),
        f"<p id='bottleneck'>{escape(bottleneck_sentence(result, scenario))}</p>",
        "<h2>Where the write latency comes from</h2>",
        _breakdown(result),
        "<h2>Timelines</h2>",
        *_timelines(result, scenario),
        *(["<h2 id='events'>Events</h2>", impact] if (impact := _event_impact(result)) else []),
        sweep.html(targets) if sweep is not None else "",
        "<h2>Scenario as run</h2>",
        "<details><summary>TOML (every field, SI "
        f"units)</summary><pre>{escape(_toml(result))}</pre></details>",
        "<h2>Run manifest</h2>",
        _rows_table(_manifest(result), ["what", "value"]),
    ]
    title = escape(f"simcache report: {meta['scenario_name']}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta '
        f'charset="utf-8"><title>{title}</title><style>{_STYLE}</style></head>\n'
        f"<body>\n{chr(10).join(part for part in body if part)}\n</body></html>\n"
    )


def _verdicts(verdicts: list[Verdict]) -> str:
    if not verdicts:
        return ""
    rows = [
        f"<tr><td>{escape(str(v.target))}</td><td class='{v.status}'>{escape(v.text)}</td></tr>"
        for v in verdicts
    ]
    return (
        "<h2>Verdicts</h2><table class='verdicts' "
        f"id='verdicts'><tr><th>target</th><th>verdict</th></tr>{''.join(rows)}</table>"
    )


def _validity(result: Result) -> str:
    parts = []
    at = stopped_at(result)
    if at is not None:
        planned = result.meta["planned_s"]
        stopped = (
            f"stopped at simulated time {at:.3f} s of {planned:g} s; every figure covers "
            f"0-{at:.3f} s only"
        )
        parts.append(f"<p class='partial'>Partial result: {stopped}.</p>")
    if not result.stable:
        parts.append(f"<p class='unstable' id='unstable'>{UNSTABLE}</p>")
    items = [
        f"<li>{'warning' if w.severity == 'unstable' else 'note'}: {escape(w.message)}</li>"
        for w in result.warnings
    ]
    if items:
        parts.append(f"<ul id='warnings'>{''.join(items)}</ul>")
    return "\n".join(parts)


def _latency_table(result: Result) -> str:
    shown = bounded(result.summary, CENSORED)
    table = _rows_table(shown.to_dict("records"), RUN_COLUMNS, _HEADINGS)
    unfinished = int(result.summary.loc[result.summary["group"] == "all", "unfinished"].sum())
    if not unfinished:
        return table
    return table + (
        f"<p>{escape(CENSORED)}: a lower bound. {unfinished:,} I/Os issued in the window were "
        "unfinished at the end; each counts with "
        "the latency it had so far, which its true latency exceeds.</p>"
    )


def _breakdown(result: Result) -> str:
    breakdown = result.breakdown
    parts = {
        row["group"]: {c.removesuffix("_ms"): float(row[c]) for c in COMPONENTS}
        for row in breakdown.to_dict("records")
    }
    chart = (
        svg.bars("Mean write latency by component", parts, y_label="ms per write") if parts else ""
    )
    return (
        _rows_table(
            breakdown.to_dict("records"), ["group", "write_mean_ms", *COMPONENTS, "dominant"]
        )
        + chart
    )


def _timelines(result: Result, scenario: Scenario) -> list[str]:
    series = result.series
    if series.empty:
        return ["<p>No samples: the run ended before its first sample interval.</p>"]
    time = series.index.to_numpy(dtype=float)
    start, _ = result.window
    axis = "simulated time (s)"
    bands, markers = [svg.Band(0.0, start, "warm-up")] if start > 0 else [], _events(result)
    latency = {
        c.replace("_", " ").replace(" ms", ""): series[c]
        for c in ("write_p50_ms", "write_p99_ms", "read_p50_ms", "read_p99_ms")
    }
    backlog = {"all hosts": series["destage_backlog_bytes"] / 2**20}
    if scenario.cluster.hosts <= TOP_COMPONENTS:
        backlog |= {
            c.removeprefix("backlog."): series[c] / 2**20
            for c in series.columns
            if c.startswith("backlog.")
        }
    utilization = _busiest(result, "util.", scenario)
    queues = _busiest(result, "queue.", scenario) | {
        "writers waiting for destage space": series["destage_waiting"]
    }
    return [
        svg.lines(
            "VM latency per sample interval",
            time,
            latency,
            x_label=axis,
            y_label="ms",
            bands=bands,
            markers=markers,
        ),
        svg.lines(
            "Destage backlog",
            time,
            backlog,
            x_label=axis,
            y_label="MiB",
            bands=bands,
            markers=markers,
        ),
        svg.lines(
            "Utilization of the busiest components",
            time,
            utilization,
            x_label=axis,
            y_label="busy fraction",
            bands=bands,
            markers=markers,
        ),
        svg.lines(
            "Queues", time, queues, x_label=axis, y_label="I/Os", bands=bands, markers=markers
        ),
    ]


def _busiest(result: Result, prefix: str, scenario: Scenario) -> dict[str, pd.Series]:
    """The series columns starting with ``prefix`` with the highest window means, named in words."""
    means = result.window_means()
    columns = (
        means[[c for c in means.index if c.startswith(prefix)]]
        .sort_values(ascending=False)
        .head(TOP_COMPONENTS)
    )
    return {
        component_name(c.removeprefix(prefix), scenario): result.series[c] for c in columns.index
    }


def _events(result: Result) -> list[svg.Marker]:
    """The scenario's scheduled events that fall within the run, as chart markers."""
    end = result.window[1]
    markers = []
    for event in result.meta["scenario"].get("events", []):
        if event["at"] > end:
            continue
        markers.append(svg.Marker(float(event["at"]), _event_label(event)))
    return markers


def _event_label(event: dict[str, Any]) -> str:
    """A chart marker's words for one scheduled event (``events`` of the scenario as run)."""
    return event_words(event)


def _event_impact(result: Result) -> str:
    """The events table: per event, latency before / during / after, peak data at risk, bytes
    lost, recovery (:mod:`simcache.results.event_impact`, as ``simcache run`` prints it)."""
    impacts = event_impacts(result)
    if not impacts:
        return ""
    interval = float(result.meta["scenario"]["run"]["sample_interval"])
    head = [
        "event",
        "span (s)",
        "window (s)",
        "window",
        *(f.replace("_", " ").replace(" ms", "") for f in LATENCY_FIGURES),
    ]
    rows = []
    for impact in impacts:
        for k, phase in enumerate(PHASES):
            start, end = impact.windows[phase]
            first = (
                [
                    escape(impact.what),
                    f"{impact.start_s:.3f}-{impact.end_s:.3f}",
                    f"{impact.window_s:.3f}",
                ]
                if k == 0
                else ["", "", ""]
            )
            figures = [cell(impact.latency[phase][f]) for f in LATENCY_FIGURES]
            rows.append(
                "<tr>"
                + "".join(
                    f"<td>{v}</td>" for v in [*first, f"{phase} {start:.3f}-{end:.3f}", *figures]
                )
                + "</tr>"
            )
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    latency = f"<table id='event-latency'><tr>{header}</tr>{''.join(rows)}</table>"
    data = [
        {
            "event": impact.what,
            "peak at risk": mib(impact.peak_at_risk_bytes),
            "lost": mib(impact.lost_bytes),
            "backlog back": (
                f"to {mib(impact.backlog_before_bytes)} "
                f"{recovery_words(impact.backlog_recovered_s, impact)}"
            ),
            "at risk back": (
                f"to {mib(impact.at_risk_before_bytes)} "
                f"{recovery_words(impact.at_risk_recovered_s, impact)}"
            ),
        }
        for impact in impacts
    ]
    note = (
        "<p>Latency (ms) of the I/Os issued in a window of the event's length before it, during "
        "it and after it; "
        f"recovery is read from the {interval:g} s samples: the first sample after the event at or "
        "below the level before it.</p>"
    )
    return latency + _rows_table(data, list(data[0])) + note


def _toml(result: Result) -> str:
    version = result.meta["version"]
    return toml_document(
        result.meta["scenario"],
        [f"simcache {version} scenario {result.meta['scenario_name']!r}, values in SI units"],
    )


def _manifest(result: Result) -> list[dict[str, Any]]:
    meta = result.meta
    start, end = result.window
    facts = {
        # the Python layers' build (mypyc-compiled or their sources); "run by" says which engine
        # ran the I/Os (review 65: "(Python engine)" above "native engine" read as a contradiction)
        "simcache version": f"{meta['version']} (Python layers: {_build_words(meta)})",
        "run by": engine_words(meta),
        "seed": meta["seed"],
        "scenario hash": f"{scenario_hash(result)} (SHA-256 of the scenario as run)",
        "simulated duration": f"{end:g} s (measured {start:g}-{end:g} s after warm-up)",
        "wall time": f"{meta['wall_time_s']:.2f} s",
        "I/Os completed": f"{meta['ios']:,}",
        "simulation events": f"{meta['events']:,}",
    }
    return [{"what": what, "value": value} for what, value in facts.items()]


def _build_words(meta: dict[str, Any]) -> str:
    """How the Python layers ran: ``compiled with mypyc`` or ``from their sources``."""
    build = meta["engine"].partition(":")[0]
    return "compiled with mypyc" if build.startswith("compiled") else "from their sources"


def _rows_table(
    rows: Sequence[Mapping[Any, Any]], columns: list[str], headings: dict[str, str] | None = None
) -> str:
    names = headings or {}
    head = "".join(f"<th>{escape(names.get(c, c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell(row[c]))}</td>" for c in columns) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"
