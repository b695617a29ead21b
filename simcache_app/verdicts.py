"""Decisions on the page: the targets set in the sidebar, a verdict for every run, comparison and
sweep point, the feasible region and cheapest passing point of a sweep, and comparisons over several
seeds with intervals.

The rules are the library's, shared with ``simcache report``: targets and verdicts are
:mod:`simcache.runs.targets` (one run: :func:`~simcache.runs.targets.judge`; several seeds:
:func:`~simcache.runs.targets.judge_seeds`), a sweep's points and cheapest passing point
:mod:`simcache.runs.feasible`. This module only puts them on the page.

A comparison runs every variant with the same seeds, so two variants' difference is taken seed by
seed (paired: the seeds' common randomness cancels) and its 95% interval is mean ± t(0.975, n - 1) s
/ sqrt(n) over the n paired differences (:func:`simcache.base.metrics.ci95_half_width`). A
difference no larger than its interval is said to be none that the seeds can tell; fewer than
:data:`~simcache.runs.targets.STABLE_SEEDS` seeds are said to be too few.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import simcache
from simcache.base.errors import counted
from simcache.base.metrics import ci95_half_width
from simcache.runs.feasible import Cheapest, cheapest_passing, sweep_verdicts
from simcache.runs.targets import (
    STABLE_SEEDS,
    Target,
    Verdict,
    check_groups,
    evidence,
    judge,
    judge_seeds,
    parse_target,
    plus_minus,
)

__all__ = [
    "COLORS",
    "difference_sentence",
    "mark_feasible",
    "mean_ms_text",
    "show_run_verdicts",
    "show_sweep_decision",
    "target_controls",
    "variant_verdicts",
    "verdict_line",
]

COLORS = {"meets": "green", "misses": "red", "unknown": "orange"}
"""Markdown colour of each verdict status."""
LATENCY_HELP = (
    'A latency target: "[GROUP] read|write FIGURE <= LIMIT", FIGURE one of p50, p95, p99, p99.9, '
    "mean, max; e.g. "
    '"write p99 <= 5ms" or "db read p99.9 <= 20ms". Every run, comparison and sweep point then '
    "says whether it meets it."
)
THROUGHPUT_HELP = (
    'Optional: a throughput floor, "[GROUP] read|write iops|MB/s >= FLOOR", e.g. "write iops >= '
    '4000" (MB = 10^6 bytes).'
)


def target_controls(scenario: simcache.Scenario) -> list[Target]:
    """The sidebar's target inputs (kept across scenarios: set once) as targets; a target that
    does not parse, or names a group the scenario lacks, is shown as an error under its input and
    left out."""
    st.header("Targets")
    texts = [
        st.text_input(
            "Latency target",
            key="target.latency",
            placeholder="write p99 <= 5ms",
            help=LATENCY_HELP,
        ),
        st.text_input(
            "Throughput target (optional)",
            key="target.throughput",
            placeholder="write iops >= 4000",
            help=THROUGHPUT_HELP,
        ),
    ]
    targets = []
    for text in texts:
        if not text.strip():
            continue
        try:
            target = parse_target(text)
            check_groups([target], (group.name for group in scenario.groups))
        except simcache.ScenarioError as exc:
            st.error(f"Target {text!r} is not used: {exc.problems[0][1] if exc.problems else exc}")
            continue
        targets.append(target)
    if not targets:
        st.caption("No target set: runs show figures, not verdicts.")
    return targets


def verdict_line(verdict: Verdict) -> str:
    """A verdict as one line of markdown, coloured by its status."""
    return f"**Target {verdict.target}:** :{COLORS[verdict.status]}[{verdict.text}]"


def show_run_verdicts(result: simcache.Result, targets: Sequence[Target]) -> list[Verdict]:
    """One line per target under a run's warnings: meets, misses by how much, or unknown and why."""
    verdicts = [judge(result, target) for target in targets]
    for verdict in verdicts:
        st.markdown(verdict_line(verdict))
    return verdicts


def variant_verdicts(
    results: Mapping[str, Sequence[simcache.Result]], targets: Sequence[Target]
) -> dict[str, list[Verdict]]:
    """Each variant's verdict on each target over its seeds' runs."""
    return {
        name: [judge_seeds(t, [evidence(result, t) for result in runs]) for t in targets]
        for name, runs in results.items()
    }


def mean_ms_text(mean: float, half: float) -> str:
    """``"1.59 ± 0.79 ms"`` (two decimals under 100 ms, as single runs show them); the mean alone
    when there is no interval."""
    if not math.isfinite(mean):
        return "no I/O"
    places = 2 if mean < 100 else 0
    return (
        f"{mean:.{places}f} ms"
        if not math.isfinite(half)
        else f"{mean:.{places}f} ± {half:.{places}f} ms"
    )


def difference_sentence(
    name: str,
    base: str,
    values: Sequence[float],
    base_values: Sequence[float],
    what: str = "write p99",
) -> str:
    """``name`` against ``base`` on one figure measured with the same seeds (paired), in words:
    the mean difference, its 95% interval, and whether that is a difference the seeds can tell."""
    pairs = [
        (a, b)
        for a, b in zip(values, base_values, strict=True)
        if math.isfinite(a) and math.isfinite(b)
    ]
    differences = [a - b for a, b in pairs]
    n = len(differences)
    if not n:
        return f"{name} vs {base}: no {what} to compare."
    mean = sum(differences) / n
    if n == 1:
        return (
            f"{name} vs {base}: {what} {mean:+.3g} ms with one seed: no interval, so no way to "
            "tell it from noise; run more seeds."
        )
    half = ci95_half_width(differences)
    shown = (
        f"{what} {plus_minus(mean, half, 'ms', signed=True)} (95% interval over {n} seeds, paired "
        "by seed)"
    )
    few = f"; {n} seeds are too few for a stable interval" if n < STABLE_SEEDS else ""
    if abs(mean) <= half:
        return (
            f"{name} vs {base}: {shown}: no clear difference, the difference is smaller than its "
            f"interval{few}."
        )
    side = "slower" if mean > 0 else "faster"
    return f"{name} vs {base}: {shown}: {name} is clearly {side}{few}."


def mark_feasible(
    figure: go.Figure, summary: pd.DataFrame, x: str, metric: str, verdicts: Sequence[Verdict]
) -> go.Figure:
    """The sweep figure with the points that meet the first target ringed green (the feasible
    region) and, when the figure plots the target's own metric, the target as a dashed line."""
    passing = [i for i, verdict in enumerate(verdicts) if verdict.passes]
    target = verdicts[0].target if verdicts else None
    if passing and target is not None:
        # categorical sweeps are drawn on a category axis
        category = figure.layout.xaxis.type == "category"
        xs = [str(summary[x].iloc[i]) if category else summary[x].iloc[i] for i in passing]
        ys = [summary[metric].iloc[i] for i in passing]
        marker = {"color": "rgba(0,0,0,0)", "size": 16, "line": {"color": "green", "width": 3}}
        figure.add_trace(
            go.Scatter(x=xs, y=ys, mode="markers", marker=marker, name=f"meets {target}")
        )
    if target is not None and metric == target.metric:
        figure.add_hline(
            y=target.limit,
            line_dash="dash",
            line_color="red",
            annotation_text=f"target {target.amount(target.limit)}",
        )
    return figure


def stats_t(degrees: int) -> float:
    """Student's t(0.975, ``degrees``): the factor of a 95% interval's half-width."""
    from scipy import stats

    return float(stats.t.ppf(0.975, degrees))


def show_sweep_decision(
    table: pd.DataFrame, summary: pd.DataFrame, label: str, path: str, targets: Sequence[Target]
) -> tuple[list[list[Verdict]], Cheapest | None]:
    """Each point's verdict on each target (over its seeds) and, for the first target, the
    cheapest passing point, said above the chart with the rule that defines "cheapest". Returns
    the verdicts per target and the choice."""
    verdicts = [sweep_verdicts(table, [label, path], target) for target in targets]
    seeds = int(summary["seeds"].min()) if len(summary) else 0
    if seeds == 1:
        st.caption(
            "One seed per value: no intervals, and a verdict rests on a single run; raise Seeds to "
            "tell differences from noise."
        )
    elif 0 < seeds < STABLE_SEEDS:
        why = (
            f"t(0.975, {seeds - 1}) = {stats_t(seeds - 1):.1f} times a spread that rests on "
            f"{counted(seeds - 1, 'difference')}"
        )
        st.caption(
            f"{seeds} seeds per value are too few for a stable interval ({why}); use "
            f"{STABLE_SEEDS} or more."
        )
    if not verdicts:
        return verdicts, None
    labels = [str(value) for value in summary[label]]
    cheapest = cheapest_passing(labels, list(summary[label]), verdicts[0], path)
    (st.success if cheapest.index is not None else st.warning)(cheapest.sentence)
    return verdicts, cheapest
