"""The "Single run" view: one run of the sidebar's scenario, its instant estimate first, then the
latency, backlog and utilization charts, where the write time goes, the bottleneck, the events'
impacts and the downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import simcache
from simcache.report import report_html
from simcache.report.cells import bounded, cell, engine_words
from simcache.report.event_report import impact_lines
from simcache.results.event_impact import LATENCY_FIGURES, PHASES, event_impacts
from simcache.runs.targets import Target
from simcache_app import charts, describe, layout, run_length, runs, verdicts
from simcache_app.scenario_files import result_zip
from simcache_app.views.widgets import done_runs, run_requested, show_scenario_error, show_table

__all__ = ["AT_LEAST", "single_run_view"]

AT_LEAST = "≥ "  # the mark of a figure that is only a lower bound (metrics, percentile table)


def single_run_view(
    scenario: simcache.Scenario, seed: int, duration: float, targets: list[Target]
) -> None:
    hint = variants_hint(scenario)
    if hint:
        st.markdown(hint)
    show_estimate(scenario, duration)  # milliseconds: shown before any run
    outside = run_length.events_outside_note(scenario, duration)
    if outside:
        st.warning(outside)
    key = runs.run_key(scenario, seed, duration)
    if not (
        run_requested("Run simulation", [key], "Simulate the scenario as set in the sidebar.")
        or runs.has_job(key)
        or runs.asked(key)
    ):
        st.info("Press **Run simulation** to simulate the scenario as set in the sidebar.")
        return
    if not runs.confirmed(key, runs.expected_ios([scenario.with_duration(duration)]), "run"):
        return
    try:
        result = runs.simulate(scenario, seed, duration)
    except simcache.ScenarioError as exc:  # too large to run (simcache.sim.control)
        show_scenario_error("This run is too large", exc)
        return
    if runs.finished(result):
        done_runs().add(key)
    show_result(result, scenario, targets)


def variants_hint(scenario: simcache.Scenario) -> str | None:
    """A line saying that the file defines variants to compare with this run, and where they are
    run (None without variants): a scenario such as interconnect_comparison makes its point in its
    variants, and its base run alone is one unexplained figure."""
    names = list(scenario.variants)
    if not names:
        return None
    if len(names) == 1:
        return (
            f"**This file defines 1 variant to compare with it** ({names[0]}): the **Compare "
            f"variants** tab runs it beside the scenario (choose *Variant from file: {names[0]}*); "
            "this tab runs the scenario alone."
        )
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return (
        f"**This file defines {len(names)} variants to compare with it** ({shown}): the **Compare "
        "variants** tab runs them side by side (choose *Variant from file: ...*); this tab runs "
        "the scenario alone."
    )


def show_estimate(scenario: simcache.Scenario, duration: float) -> None:
    """The instant estimate above the Run button, of the run it starts (``duration`` seconds):
    its latencies, then its bottleneck on a line of its own, its overloads (once for all the hosts
    they repeat for), and what it leaves out folded away."""
    estimate = simcache.estimate(scenario, duration=duration)
    text = layout.estimate_text(describe.estimate_sentence(estimate, scenario))
    st.caption(text.summary)
    if text.bottleneck:
        st.markdown(f"**Predicted bottleneck** — {text.bottleneck}")
    overloads = layout.merged_by_host(text.overloads)
    if overloads:
        st.caption("\n".join(f"- **Overload:** {overload}" for overload in overloads))
    if text.left_out:
        with st.expander(f"Not in the estimate ({len(text.left_out)})"):
            st.caption("\n".join(f"- {note}" for note in text.left_out))


def show_result(
    result: simcache.Result, scenario: simcache.Scenario, targets: list[Target]
) -> None:
    for warning in layout.merged_by_host(describe.validity_warnings(result)):
        st.warning(warning)
    verdicts.show_run_verdicts(result, targets)
    note = run_length.run_length_note(result, scenario)
    if note:
        st.info(note)
    columns = st.columns(4)
    bounds = describe.headline_lower_bounds(result)
    for column, (label, value) in zip(columns, describe.headline(result).items(), strict=True):
        at_least = label in bounds
        column.metric(
            f"VM {label}",
            (AT_LEAST if at_least else "") + describe.format_ms(value),
            help=f"{label} latency over every VM group, after warm-up."
            + (
                " At least this: I/Os still unfinished at the end of the run could lie past it."
                if at_least
                else ""
            ),
        )
    st.markdown(describe.bottleneck_sentence(result, scenario))
    peer = describe.busiest_peer_link(result, scenario)
    st.markdown(
        f"Peer network (WB+1/WB+2 replicas): busiest port is {peer} mean utilization."
        if peer
        else "No group replicates over the peer network."
    )
    show_event_impacts(result)
    st.caption(
        f"{result.meta['ios']:,} I/Os simulated over {result.meta['simulated_s']:g} s (seed "
        f"{result.meta['seed']}) in {result.meta['wall_time_s']:.2f} s by the "
        f"{engine_words(result.meta)}."
    )
    marks = charts.time_marks(result, scenario)
    st.caption(charts.marks_caption(marks))
    left, right = st.columns(2)
    left.plotly_chart(charts.latency_figure(result.series, marks), key="latency")
    right.plotly_chart(charts.breakdown_figure(result.breakdown), key="breakdown")
    left.plotly_chart(charts.utilization_figure(result.series, marks), key="utilization")
    right.plotly_chart(charts.backlog_figure(result.series, marks), key="backlog")
    st.subheader("Latency percentiles per VM group")
    table = percentile_cells(result)
    text_figures = [c for c in table.columns[2:] if pd.api.types.is_object_dtype(table[c])]
    show_table(table, text_figures)
    if any(str(value).startswith(AT_LEAST) for value in table.to_numpy().ravel()):
        st.caption(
            f"{AT_LEAST.strip()}: at least this; I/Os still unfinished at the end of the run could "
            "lie past it."
        )
    if peer:
        links = scenario.cluster.peer_links
        with st.expander(
            f"Mean utilization of each peer port ({links} per host)", expanded=links > 1
        ):
            show_table(describe.peer_port_table(result))
    result_downloads(result, targets)


def percentile_cells(result: simcache.Result) -> pd.DataFrame:
    """The percentile table with each lower-bound figure marked ``≥`` (the summary's
    ``lower_bounds``, marked by :func:`simcache.report.cells.bounded` as ``simcache run`` marks
    them ``>=``) instead of a column naming them. A column that holds a bound is text, each of its
    figures as the CLI prints it; the others stay numbers."""
    table = describe.percentile_table(result)
    names = {label: name for name, label in describe.PERCENTILE_COLUMNS.items()}
    raw = table.rename(columns=names)
    marked = bounded(raw, mark=AT_LEAST)
    with_bounds = {name for names in raw["lower_bounds"] for name in str(names).split()}
    shown = raw.drop(columns="lower_bounds")
    for name in with_bounds:
        shown[name] = [v if isinstance(v, str) else cell(v) for v in marked[name]]
    return shown.rename(columns=describe.PERCENTILE_COLUMNS)


def show_event_impacts(result: simcache.Result) -> None:
    """What each scheduled event did, as ``simcache run``'s events table says it
    (:func:`simcache.results.event_impact.event_impacts`): the latency of the I/Os issued before,
    during and after it (a phase outside the run left out), then its data at risk and recovery.
    Nothing for a run without events."""
    impacts = event_impacts(result)
    if not impacts:
        return
    rows = [
        {
            "event": impact.what,
            "phase": phase,
            "from s": round(impact.windows[phase][0], 3),
            "to s": round(impact.windows[phase][1], 3),
        }
        | {figure.replace("_", " "): impact.latency[phase][figure] for figure in LATENCY_FIGURES}
        for impact in impacts
        for phase in PHASES
        if impact.windows[phase][1] > impact.windows[phase][0]  # no "after" past the run's end
    ]
    table = pd.DataFrame(rows).dropna(axis="columns", how="all")  # no reads: no read columns
    latency = [column for column in table.columns if column.endswith(" ms")]
    table[latency] = describe.figures(table[latency])  # the times keep the CLI's milliseconds
    st.markdown(
        "**Scheduled events**: latency (ms) of the I/Os issued before, during and after each"
    )
    show_table(table)
    st.caption(
        "\n".join(
            f"- {impact.what} {impact.start_s:.3f}-{impact.end_s:.3f} s: "
            f"{impact_lines(impact)[1].strip()}"
            for impact in impacts
        )
    )


def result_downloads(result: simcache.Result, targets: list[Target]) -> None:
    name = f"{result.meta['scenario_name']}-seed{result.meta['seed']}"
    st.download_button(
        "Download report (HTML)",
        lambda: report_html(result, targets=targets),
        file_name=f"{name}-report.html",
        mime="text/html",
        on_click="ignore",
        help=(
            "One self-contained file, as `simcache report` writes it: tables, charts, warnings "
            "and the scenario as run."
        ),
    )
    left, middle, right = st.columns(3)
    left.download_button(
        "Summary (CSV)",
        lambda: result.summary.to_csv(index=False),
        file_name=f"{name}-summary.csv",
        on_click="ignore",
    )
    middle.download_button(
        "Every I/O (Parquet)",
        lambda: result.records.to_parquet(index=False),
        file_name=f"{name}-records.parquet",
        on_click="ignore",
    )
    right.download_button(
        "All tables (ZIP of CSV + Parquet)",
        lambda: result_zip(result),
        file_name=f"{name}.zip",
        on_click="ignore",
    )
