"""A sweep in the HTML report: one row per grid point (means and 95% intervals over its seeds) and a
chart.

Categorical values (link kinds, policies, profiles) are drawn as points, not joined: their order is
no scale. Numeric values of a one-parameter sweep are joined; a metric spanning two orders of
magnitude gets a log axis. With targets, each point gets a verdict over its seeds, the points
meeting the first target are drawn green (the feasible region) and the cheapest passing point is
named, by :mod:`simcache.runs.feasible`'s rules, as the app does.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import pandas as pd

import simcache.report.svg as svg
from simcache.base.errors import counted
from simcache.report.cells import LOWER_BOUND, cell
from simcache.runs.feasible import cheapest_passing, sweep_verdicts
from simcache.runs.sweep import point_bottleneck, point_stability, sweep_summary
from simcache.runs.sweep_points import lower_bound_in
from simcache.runs.targets import Target, Verdict

__all__ = ["SweepReport"]

DEFAULT_METRIC = "all.write.p99_ms"
_SHOWN = ("all.write.p99_ms", "all.write.mean_ms", "all.read.p99_ms", "bottleneck_utilization")


@dataclass(frozen=True)
class SweepReport:
    """The rows of :func:`simcache.sweep` (one per point and seed) and the grid they ran
    (``{dotted.path: [values]}``)."""

    rows: pd.DataFrame
    grid: dict[str, list[Any]]
    stopped: str | None = None
    """Why the sweep stopped before its end (its cancel token's reason); ``None`` for a sweep
    that finished."""
    planned: int | None = None
    """The runs a stopped sweep meant to do (``rows`` holds those that finished)."""

    def partial_sentence(self) -> str:
        """What a stopped sweep's figures cover, in words ("" for a finished sweep)."""
        if not self.stopped:
            return ""
        planned = f" of {self.planned}" if self.planned is not None else ""
        return (
            f"the sweep stopped ({self.stopped}) after {len(self.rows)}{planned} runs; its points "
            "hold only the runs "
            "that finished, so some have fewer seeds than asked and a point with none is missing"
        )

    @property
    def points(self) -> pd.DataFrame:
        """Per point: its values, ``seeds``, and every numeric column's mean and ``.ci95``
        half-width (:func:`sweep_summary`)."""
        return sweep_summary(self.rows, list(self.grid))

    def html(self, targets: Sequence[Target] = ()) -> str:
        """The section: a chart of the first target's metric (else write p99 over all groups),
        the cheapest passing point of the first target, and the table with a verdict per point
        and target."""
        partial = (
            f"<p class='partial'>Partial sweep: {escape(self.partial_sentence())}.</p>"
            if self.stopped
            else ""
        )
        if self.rows.empty:
            return f"<h2>Sweep</h2>\n{partial}"
        points = self.points
        labels = [
            ", ".join(f"{v}" for v in row)
            for row in points[list(self.grid)].itertuples(index=False)
        ]
        verdicts = [sweep_verdicts(self.rows, list(self.grid), target) for target in targets]
        target = targets[0] if targets else None
        metric = target.metric if target is not None else DEFAULT_METRIC
        seeds = sorted(set(self.rows["seed"]))
        parts = [
            "<h2>Sweep</h2>",
            f"<p>{counted(len(points), 'point')} x {counted(len(seeds), 'seed')} "
            f"({', '.join(map(str, seeds))}); means "
            "over the seeds, "
            "&plusmn; the 95% interval (none with one seed).</p>",
        ]
        if partial:
            parts.append(partial)
        if metric in points.columns:
            parts.append(
                self._chart(points, labels, metric, target, verdicts[0] if verdicts else None)
            )
        if verdicts:
            path = next(iter(self.grid)) if len(self.grid) == 1 else None
            values = list(points[path]) if path is not None else []
            cheapest = cheapest_passing(labels, values, verdicts[0], path).sentence
            parts.append(f"<p id='cheapest'>{escape(cheapest)}</p>")
        parts.append(self._table(points, labels, targets, verdicts))
        return "\n".join(parts)

    def _chart(
        self,
        points: pd.DataFrame,
        labels: list[str],
        metric: str,
        target: Target | None,
        verdicts: list[Verdict] | None,
    ) -> str:
        values = [v for values in self.grid.values() for v in values]
        numeric = len(self.grid) == 1 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        )
        means = points[metric].to_numpy(dtype=float)
        positive = means[means > 0]
        log = len(positive) == len(means) and positive.max() >= 100 * positive.min()
        return svg.points(
            f"{metric} per sweep point" + (" (green: meets the target)" if verdicts else ""),
            labels,
            means,
            points[f"{metric}.ci95"].to_numpy(dtype=float),
            x_label=" x ".join(self.grid),
            y_label=target.unit
            if target is not None
            else "ms"
            if metric.endswith("_ms")
            else metric,
            joined=numeric,
            limit=target.limit if target is not None else None,
            log=log,
            passing=[v.passes for v in verdicts] if verdicts else None,
        )

    def _table(
        self,
        points: pd.DataFrame,
        labels: list[str],
        targets: Sequence[Target],
        verdicts: list[list[Verdict]],
    ) -> str:
        columns = [c for c in _SHOWN if c in points.columns]
        # each point's seeds, in the points' order: the part they name as the bottleneck (a tier
        # past its clean-pool cliff before the busiest part, whose utilization the column beside
        # it gives), their stability, and which figures are lower bounds in some seed, marked as
        # `sweep --summary` marks them (review 67a F9: the page had dropped both)
        parts = [part for _, part in self.rows.groupby(list(self.grid), sort=False, dropna=False)]
        named = (
            [point_bottleneck(part) for part in parts]
            if "bottleneck" in self.rows.columns
            else None
        )
        head = "".join(
            f"<th>{escape(c)}</th>"
            for c in [
                "point",
                "seeds",
                *columns,
                *(["bottleneck"] if named is not None else []),
                "stability",
                *(str(t) for t in targets),
            ]
        )
        body = []
        for i, (label, row) in enumerate(zip(labels, points.to_dict("records"), strict=True)):
            said = [_verdict(per_target[i]) for per_target in verdicts]
            cells = [
                label,
                str(row["seeds"]),
                *(
                    (LOWER_BOUND if lower_bound_in(parts[i], c) else "") + _mean(row, c)
                    for c in columns
                ),
            ]
            if named is not None:
                cells.append(named[i])
            cells.append(point_stability(parts[i]).label)
            body.append(
                "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "".join(said) + "</tr>"
            )
        note = (
            "<p>A point meets a target when its seeds' mean does with the whole 95% interval "
            "inside the limit, and no seed "
            "is unstable or too short to tell; otherwise it is unknown, or a miss when the "
            "interval is past the limit. A point run with one seed has no interval: its verdict "
            "rests on that one run's value (the seeds column says how many ran; run two or more "
            "for an interval).</p>"
            if targets
            else ""
        )
        return f"<table class='sweep'><tr>{head}</tr>{''.join(body)}</table>{note}"


def _mean(row: Mapping[Hashable, Any], column: str) -> str:
    half = row.get(f"{column}.ci95", math.nan)
    return cell(row[column]) + ("" if not math.isfinite(half) else f" ± {cell(half)}")


def _verdict(verdict: Verdict) -> str:
    return (
        f"<td class='{verdict.status}' title='{escape(verdict.text)}'>{escape(verdict.text)}</td>"
    )
