"""The "Compare variants" view: 2 to 4 variants of the sidebar's scenario run with the same seeds,
side by side, each difference from the first taken seed by seed."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

import simcache
from simcache.base.errors import counted
from simcache.base.metrics import ci95_half_width
from simcache.runs.targets import Target
from simcache_app import charts, describe, runs, verdicts
from simcache_app.parameters import DEFAULT_COMPARE, compare_presets
from simcache_app.views.widgets import (
    csv_download,
    done_runs,
    run_requested,
    show_scenario_error,
    show_table,
)

__all__ = ["compare_view"]

P99_HELP = "VM write p99 over every group: mean over the seeds ± the 95% interval (Student t)."


def compare_view(
    scenario: simcache.Scenario, seed: int, duration: float, source: str, targets: list[Target]
) -> None:
    st.markdown(
        "Run 2 to 4 variants of the sidebar's scenario with the same seeds and compare them side "
        "by side: means over the "
        "seeds with 95% intervals, and each difference from the first variant taken seed by seed."
    )
    presets = compare_presets(scenario)
    default = [name for name in DEFAULT_COMPARE if name in presets] or list(presets)[:2]
    left, right = st.columns([5, 1])
    chosen = left.multiselect(
        "Variants",
        list(presets),
        default=default,
        max_selections=4,
        key=f"{source}.compare.variants",
    )
    about = (
        f"Runs per variant, seeds {seed}, {seed + 1}, ...: the same for every variant, so "
        "differences are paired by seed."
    )
    count = right.number_input("Seeds", 1, 30, 3, key="compare.seeds", help=about)
    if len(chosen) < 2:
        st.warning("Pick at least two variants.")
        return
    try:
        variants = {name: scenario.with_overrides(presets[name], source=name) for name in chosen}
    except simcache.ScenarioError as exc:
        show_scenario_error("A variant does not make a valid scenario", exc)
        return
    seeds = list(range(seed, seed + int(count)))
    keys = [runs.run_key(v, s, duration) for v in variants.values() for s in seeds]
    asked = runs.asked(json.dumps(keys))
    requested = run_requested(
        "Run comparison", keys, "Simulate every chosen variant with every seed."
    )
    if not (requested or any(runs.has_job(k) for k in keys) or asked):
        return
    work = runs.expected_ios([v.with_duration(duration) for v in variants.values() for _ in seeds])
    if not runs.confirmed(json.dumps(keys), work, "comparison"):
        return
    # two variants may be the same scenario (a preset equal to the sidebar's): run it once
    ran: dict[str, simcache.Result] = {}

    def run(name: str, variant: simcache.Scenario, seed: int) -> simcache.Result:
        key = runs.run_key(variant, seed, duration)
        if key not in ran:
            ran[key] = runs.simulate(
                variant, seed, duration, label=f"Simulating {name}, seed {seed}"
            )
        return ran[key]

    try:
        results = {name: [run(name, v, s) for s in seeds] for name, v in variants.items()}
    except simcache.ScenarioError as exc:  # too large to run (simcache.sim.control)
        show_scenario_error("A variant is too large to run", exc)
        return
    done_runs().update(
        key
        for key, result in zip(keys, (r for rs in results.values() for r in rs), strict=True)
        if runs.finished(result)
    )
    tables = [
        describe.compare_table({name: rs[i] for name, rs in results.items()}, variants)
        for i in range(len(seeds))
    ]
    table = _mean_table(tables)
    judged = verdicts.variant_verdicts(results, targets)
    p99s = {name: [describe.headline(r)["write p99"] for r in rs] for name, rs in results.items()}
    st.markdown(
        f"**VM write p99 over all groups**, mean over {counted(len(seeds), 'seed')} ± 95% "
        "interval, with "
        "each variant's bottleneck:"
    )
    first = chosen[0]
    for column, row in zip(st.columns(len(table)), table.to_dict("records"), strict=True):
        name = row["variant"]
        half = row["write p99 ms ± 95%"]
        column.metric(name, verdicts.mean_ms_text(row["write p99 ms"], half), help=P99_HELP)
        column.caption(
            f"Bottleneck (seed {seed}): {row['bottleneck']}. Busiest peer link: "
            f"{row['busiest peer link']}."
        )
        for verdict in judged[name]:
            column.markdown(verdicts.verdict_line(verdict))
    for name in chosen[1:]:
        st.markdown(verdicts.difference_sentence(name, first, p99s[name], p99s[first]))
    st.plotly_chart(charts.compare_figure(table), key="compare")
    show_table(table)
    csv_download("Comparison (CSV)", table, f"{scenario.name}-compare.csv")


def _mean_table(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Per-seed compare tables -> one: numeric columns averaged over the seeds (write p99 with
    its 95% half-width), text columns (bottleneck, busiest peer link) from the first seed."""
    first = tables[0].set_index("variant")
    numeric = [c for c in first.columns if pd.api.types.is_numeric_dtype(first[c])]
    stacked = pd.concat([t.set_index("variant")[numeric] for t in tables])
    means = stacked.groupby(level=0, sort=False).mean().round(3)
    half = stacked.groupby(level=0, sort=False)["write p99 ms"].agg(
        lambda v: ci95_half_width(v.to_numpy(dtype=float))
    )
    table = first[[]].join(means).join(first[[c for c in first.columns if c not in numeric]])
    table.insert(list(table.columns).index("write p99 ms") + 1, "write p99 ms ± 95%", half.round(3))
    table.insert(0, "seeds", len(tables))
    return table.reset_index()
