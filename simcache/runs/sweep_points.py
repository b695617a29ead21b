"""Reading a sweep's table point by point (:func:`simcache.runs.sweep.sweep`'s rows, one per point
and seed): means and 95% intervals over the seeds (:func:`sweep_summary`), each point's
stability and bottleneck over its seeds, the groups whose share of the I/Os shifts between points,
and error bars for a log axis. Shared by ``simcache sweep --summary``, the HTML report and the
app's sweep view."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simcache.base.metrics import ci95_half_width
from simcache.base.units import format_figure
from simcache.results.validity import PINNED

__all__ = [
    "MIX_SHIFT",
    "NOT_RUN",
    "STABILITY",
    "PointStability",
    "log_axis_yerr",
    "lower_bound_in",
    "mix_shifts",
    "point_bottleneck",
    "point_stability",
    "row_words",
    "sweep_summary",
]

NOT_RUN = "not run"
"""The ``stability`` of a point's rows that were not simulated: its expected work is past the run
limits (:func:`simcache.sim.control.check_work`), the reason in their ``not_run`` column."""


def sweep_summary(table: pd.DataFrame, grid_columns: Sequence[str]) -> pd.DataFrame:
    """Per grid point: number of seeds and, for every numeric column, the mean and 95% interval
    half-width.

    The half-width is Student's t(0.975, n - 1) x s / sqrt(n) over the seeds
    (NaN with one seed). Columns: ``<metric>`` (mean) and ``<metric>.ci95``.
    """
    numeric = [
        c
        for c in table.columns
        if c not in (*grid_columns, "seed") and pd.api.types.is_numeric_dtype(table[c])
    ]
    rows = []
    for key, part in table.groupby(list(grid_columns), sort=False, dropna=False):
        values = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(grid_columns, values, strict=True))
        row["seeds"] = len(part)
        for column in numeric:
            row[column] = float(part[column].mean())
            row[f"{column}.ci95"] = _half_width(part[column].to_numpy(dtype=float))
        rows.append(row)
    return pd.DataFrame(rows)


def point_bottleneck(part: pd.DataFrame) -> str:
    """The bottleneck most of a point's rows (its seeds, :func:`result_row`'s) name, with its mean
    utilization over them, or ``GC cliff`` for tiers past their clean-pool cliff (their units look
    idle), ``destage held`` for tiers holding back their destage reads; ``(k/n)`` when only k of
    its n seeds name it. Shared by ``simcache sweep --summary`` and the HTML report's sweep
    table."""
    if "bottleneck" not in part or part["bottleneck"].isna().all():  # not simulated
        return "-"
    named, count = Counter(part["bottleneck"].dropna()).most_common(1)[0]
    naming = part[part["bottleneck"] == named]
    # a run's bottleneck is its tiers past the cliff whenever it has a gc_cliff warning, else
    # those holding back their destage reads whenever it has a destage_starved one
    kinds = {
        kind
        for said in naming.get("validity", [])
        if isinstance(said, str)
        for kind in said.split(",")
    }
    how = (
        "GC cliff"
        if "gc_cliff" in kinds
        else "destage held"
        if "destage_starved" in kinds
        else f"{naming['bottleneck_utilization'].mean():.0%}"
    )
    agreement = f" ({count}/{len(part)})" if count < len(part) else ""
    return f"{named} {how}{agreement}"


STABILITY: dict[str, str] = {
    NOT_RUN: (
        "not simulated: the point's expected work is past the run limits (an offered load above a "
        "part's capacity piles up without bound, or too many I/Os); its not_run column says why"
    ),
    "unstable": (
        "no steady state (a queue or backlog grows while a part is at capacity, or a buffer is "
        "full): the latency grows with the run's length"
    ),
    "filling": (
        "a destage backlog grows through the window: the figures hold until the first buffer is "
        "full (in about the seconds shown), not for sustained load"
    ),
    "at capacity": (
        f"a part is busy {PINNED:.0%} or more under load offered at a fixed rate: no growth was "
        "found, but a run this short cannot tell a queue just under capacity from one just over "
        "it, and neither's latency is a steady state"
    ),
    "untested": "too few samples after the warm-up to test queues and backlogs for growth",
    "stable": "no sign of instability",
}
"""A sweep row's ``stability`` (:func:`result_row`), worst first, with what it means."""
_STABILITY_KINDS = {"filling": "filling", "at capacity": "at_capacity", "untested": "untested"}
"""The validity warning kind that gives each of the states between unstable and stable."""
MIX_SHIFT = 0.1
"""A group's share of an op's I/Os (0 to 1) that moves by this much or more between a sweep's
points makes the all-groups figures of that op a different mix of I/Os from point to point."""


@dataclass(frozen=True)
class PointStability:
    """How steady a sweep point's runs were (:func:`point_stability`)."""

    state: str
    """The worst :data:`STABILITY` state of its seeds' rows."""
    label: str
    """In a few words for a table cell: ``stable``, ``UNSTABLE 2/3``, ``filling: full ~540 s``,
    ``at capacity 1/3`` (``k/n``: k of its n seeds, when not all)."""


def row_words(cell: Any) -> list[str]:
    """A sweep row's comma-separated cell (``validity``, ``caveats``, ``lower_bounds``) as its
    words; a missing cell (absent, or NaN in a table) as none."""
    return cell.split(",") if isinstance(cell, str) and cell else []


def lower_bound_in(part: pd.DataFrame, column: str) -> bool:
    """Whether ``column`` (``<group>.<op>.<metric>``) is a lower bound in any of a point's seeds
    (``part``): its row's ``<group>.<op>.lower_bounds`` names the metric (I/Os unfinished at the
    end count with their latency so far)."""
    if "." not in column:
        return False
    cell_of, metric = column.rsplit(".", 1)
    listed = part.get(f"{cell_of}.lower_bounds", pd.Series(dtype=object))
    return any(metric in row_words(cell) for cell in listed)


def point_stability(part: pd.DataFrame) -> PointStability:
    """The worst ``stability`` among a point's rows (its seeds, :func:`result_row`'s), how many of
    them have it and, for ``filling``, the soonest a buffer is full among them. Rows without a
    ``stability`` (stored by an older simcache) count as ``unstable`` or ``stable`` by their
    ``stable``. Shared by ``simcache sweep --summary`` and the app's sweep view."""
    states = (
        part["stability"]
        if "stability" in part.columns
        else part["stable"].map(lambda stable: "stable" if stable else "unstable")
    )
    state = next(s for s in STABILITY if (states == s).any())
    count = int((states == state).sum())
    if state == "unstable":
        return PointStability(state, f"UNSTABLE {count}/{len(part)}")
    if state == NOT_RUN:
        return PointStability(state, "NOT RUN (past the run limits)")
    label = state if count == len(part) else f"{state} {count}/{len(part)}"
    if state == "filling" and "backlog_full_in_s" in part.columns:
        soonest = float(part.loc[states == state, "backlog_full_in_s"].min())
        label += f": full ~{format_figure(float(f'{soonest:.2g}'))} s"  # two digits
    return PointStability(state, label)


def mix_shifts(rows: pd.DataFrame, grid_columns: Sequence[str], op: str) -> list[str]:
    """The groups whose share of ``op``'s I/Os moves by :data:`MIX_SHIFT` or more between the
    points of a sweep (``rows``: :func:`sweep`'s table, one row per point and seed), each in words
    from its highest share to its lowest or back, in the points' order: ``"web writes 28% at 60 to
    1% at 240 (1,881 to 151 a run)"`` (shares of all the groups' writes, counts per run). An
    all-groups figure of ``op`` is then a different mix of I/Os from point to point, e.g. a
    closed-loop group held back by a saturated part, whose I/Os drop out of it."""
    total = f"all.{op}.count"
    groups = [
        column.removesuffix(f".{op}.count")
        for column in rows.columns
        if column.endswith(f".{op}.count") and column != total
    ]
    if total not in rows.columns or len(groups) < 2:
        return []
    means = rows.groupby(list(grid_columns), sort=False, dropna=False)[
        [total, *(f"{g}.{op}.count" for g in groups)]
    ].mean()
    points = [
        ", ".join(str(v) for v in key) if isinstance(key, tuple) else str(key)
        for key in means.index
    ]
    shifts = []
    for group in groups:
        counts = means[f"{group}.{op}.count"].to_numpy(dtype=float)
        shares = np.divide(counts, means[total].to_numpy(dtype=float))
        if not np.isfinite(shares).all() or shares.max() - shares.min() < MIX_SHIFT:
            continue
        first, last = sorted((int(shares.argmax()), int(shares.argmin())))
        shifts.append(
            f"{group} {op}s {shares[first]:.0%} at {points[first]} to {shares[last]:.0%} at "
            f"{points[last]} ({counts[first]:,.0f} to {counts[last]:,.0f} a run)"
        )
    return shifts


def log_axis_yerr(values: Any, ci95: Any) -> list[np.ndarray]:
    """Error bars of :func:`sweep_summary` means for a log-scale axis, as matplotlib's ``yerr``:
    [below, above].

    Above: the 95% half-width. Below: the same, but at most 90% of the value, so the bar stays above
    zero on the log scale. A missing half-width (a point with one seed) draws no bar.
    """
    means = np.asarray(values, dtype=float)
    half = np.nan_to_num(np.asarray(ci95, dtype=float))
    return [np.minimum(half, 0.9 * means), half]


def _half_width(values: np.ndarray) -> float:
    return ci95_half_width(values[np.isfinite(values)])
