"""The "Sweep one parameter" view: one setting over a list of values, several seeds each, a metric
with its 95% interval, every point's stability and the targets' verdicts."""

from __future__ import annotations

import streamlit as st

import simcache
from simcache.base.metrics import PERCENTILES, THROUGHPUT_COLUMNS
from simcache.runs.sweep import NOT_RUN, STABILITY, mix_shifts, point_stability, sweep_summary
from simcache.runs.targets import Target
from simcache_app import charts, describe, runs, verdicts
from simcache_app.parameters import parse_values, sweep_parameters, valid_values
from simcache_app.views.widgets import (
    csv_download,
    done_runs,
    run_requested,
    show_scenario_error,
    show_table,
)

__all__ = ["SWEEP_METRICS", "SWEEP_TOTALS", "sweep_metrics", "sweep_view"]

_FIRST_METRICS = ("p99_ms", "p50_ms", "mean_ms")  # the most asked-for, offered first
SWEEP_METRICS = (
    *_FIRST_METRICS,
    *(p for p in PERCENTILES if p not in _FIRST_METRICS),
    *(m for m in THROUGHPUT_COLUMNS if m != "count"),
)
SWEEP_TOTALS = (
    "bottleneck_utilization",
    "peer_wire_mb_s",
    "array_write_mb_s",
    "destage_backlog_bytes",
)


def sweep_view(
    scenario: simcache.Scenario, seed: int, duration: float, source: str, targets: list[Target]
) -> None:
    st.markdown(
        "Vary one setting over a list of values, several seeds each, and plot a metric with its "
        "95% confidence interval "
        "(a band along numbers, error bars on categories such as link kinds)."
    )
    parameters = {p.label: p for p in sweep_parameters(scenario)}
    left, middle, right = st.columns([2, 3, 1])
    label = left.selectbox("Parameter", list(parameters), key=f"{source}.sweep.parameter")
    parameter = parameters[label]
    text = middle.text_input(
        "Values",
        parameter.default_values,
        key=f"{source}.sweep.values.{label}",
        help=f"{parameter.help} Comma-separated"
        + (", or a range start:stop:step." if parameter.numeric else "."),
    )
    count = right.number_input(
        "Seeds",
        1,
        30,
        3,
        key="sweep.seeds",
        help=f"Replications per value: seeds {seed}, {seed + 1}, ...",
    )
    metric = st.selectbox(
        "Metric",
        sweep_metrics(scenario),
        format_func=describe.metric_label,
        key=f"{source}.sweep.metric",
    )
    try:
        values = parse_values(text, parameter.numeric)
    except ValueError as exc:
        st.error(str(exc))
        return
    values, invalid = valid_values(scenario, parameter, values, duration)
    for value, problem in invalid.items():  # that point is said; the others run
        st.warning(
            f"**{label} = {value}** is left out of the sweep: it does not make a valid scenario.\n"
            f"\n```\n{problem}\n```"
        )
    if not values:
        return
    grid = {parameter.path: [parameter.to_override(v) for v in values]}
    seeds = list(range(seed, seed + int(count)))
    st.caption(f"{len(values) * len(seeds)} simulations of {duration:g} s each.")
    key = runs.sweep_key(scenario, grid, seeds, duration)
    if not (
        run_requested("Run sweep", [key], "Simulate every value with every seed.")
        or runs.has_job(key)
        or runs.asked(key)
    ):
        return
    try:
        if not runs.confirmed(key, runs.sweep_ios(scenario, grid, seeds, duration), "sweep"):
            return
        table = runs.sweep(scenario, grid, seeds, duration)
    except simcache.ScenarioError as exc:
        show_scenario_error("A swept value does not make a valid scenario", exc)
        return
    if "stopped" in table.attrs:
        st.warning(runs.sweep_stop_text(table))
        if table.empty:
            return
    else:
        done_runs().add(key)
    table.insert(
        0, label, table[parameter.path].map(dict(zip(grid[parameter.path], values, strict=True)))
    )
    summary = sweep_summary(table, [label, parameter.path])
    points = table.groupby([label, parameter.path], sort=False, dropna=False)  # summary's order
    stability = [point_stability(part) for _, part in points]
    unsteady = {
        state: [
            f"**{value}** ({s.label})"
            for value, s in zip(summary[label], stability, strict=True)
            if s.state == state and state != NOT_RUN  # (those say why, below)
        ]
        for state in STABILITY
        if state != "stable"
    }
    if "not_run" in table.columns:  # points past the run limits: each says why
        for (value, _), part in points:
            reasons = part["not_run"].dropna()
            if len(reasons):
                unsteady[NOT_RUN].append(f"**{value}**: {reasons.iloc[0]}")
    if any(unsteady.values()):
        st.warning(
            f"**Not every point of {label} is steady:** its figures there are those of this "
            "run's length, not the system's (the single run of a point gives its warnings).\n"
            + "".join(
                f"\n- {', '.join(named)}: {STABILITY[state]}."
                for state, named in unsteady.items()
                if named
            )
        )
    group, *op_figure = metric.split(".")  # "all.write.p99_ms"; a total has no group
    moved = mix_shifts(table, [label], op_figure[0]) if group == "all" and op_figure else []
    if moved:
        st.warning(
            f"**{describe.metric_label(metric)} is over every group's I/Os, and their mix "
            f"changes with {label}:** {'; '.join(moved)}. A change in it can be a change of mix, "
            "not of latency (a closed-loop group held back by a saturated part issues fewer "
            "I/Os, and they drop out of it): pick one group's metric to compare like with like."
        )
    decided, _ = verdicts.show_sweep_decision(table, summary, label, parameter.path, targets)
    figure = charts.sweep_figure(
        summary,
        label,
        metric,
        describe.metric_label(metric),
        categorical=not parameter.numeric,
        stability=stability,
    )
    st.plotly_chart(
        verdicts.mark_feasible(figure, summary, label, metric, decided[0] if decided else []),
        key="sweep",
    )
    shown = describe.sweep_table(summary, label, metric)
    shown["stability"] = [point.label for point in stability]
    for target, per_point in zip(targets, decided, strict=True):
        shown[str(target)] = [verdict.short for verdict in per_point]
        shown[f"{target}: why"] = [verdict.text for verdict in per_point]
    show_table(shown)
    csv_download("Sweep table (CSV)", table, f"{scenario.name}-sweep.csv")


def sweep_metrics(scenario: simcache.Scenario) -> list[str]:
    groups = ["all", *(g.name for g in scenario.groups)]
    return [
        f"{g}.{op}.{m}" for g in groups for op in ("write", "read") for m in SWEEP_METRICS
    ] + list(SWEEP_TOTALS)
