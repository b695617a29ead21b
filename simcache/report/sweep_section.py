"""A sweep in the HTML report: one row per grid point (means and 95% intervals over its seeds) and a chart.

Categorical values (link kinds, policies, profiles) are drawn as points, not joined: their order is no scale.
Numeric values of a one-parameter sweep are joined; a metric spanning two orders of magnitude gets a log axis.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import pandas as pd

from simcache.cells import cell
from simcache.report import svg
from simcache.sweep import sweep_summary
from simcache.targets import Target

__all__ = ["SweepReport"]

DEFAULT_METRIC = "all.write.p99_ms"
_SHOWN = ("all.write.p99_ms", "all.write.mean_ms", "all.read.p99_ms", "bottleneck_utilization")


@dataclass(frozen=True)
class SweepReport:
    """The rows of :func:`simcache.sweep` (one per point and seed) and the grid they ran (``{dotted.path: [values]}``)."""

    rows: pd.DataFrame
    grid: dict[str, list[Any]]

    @property
    def points(self) -> pd.DataFrame:
        """Per point: its values, ``seeds``, and every numeric column's mean and ``.ci95`` half-width (:func:`sweep_summary`)."""
        return sweep_summary(self.rows, list(self.grid))

    def html(self, targets: Sequence[Target] = ()) -> str:
        """The section: a chart of the first target's metric (else write p99 over all groups) and the table."""
        points = self.points
        labels = [", ".join(f"{v}" for v in row) for row in points[list(self.grid)].itertuples(index=False)]
        target = targets[0] if targets else None
        metric = f"{target.group}.{target.op}.{target.column}" if target is not None else DEFAULT_METRIC
        seeds = sorted(set(self.rows["seed"]))
        parts = [
            "<h2>Sweep</h2>",
            f"<p>{len(points)} points x {len(seeds)} seed(s) ({', '.join(map(str, seeds))}); means over the seeds, "
            "&plusmn; the 95% interval (none with one seed).</p>",
        ]
        if metric in points.columns:
            parts.append(self._chart(points, labels, metric, target))
        parts.append(self._table(points, labels, targets))
        return "\n".join(parts)

    def _chart(self, points: pd.DataFrame, labels: list[str], metric: str, target: Target | None) -> str:
        values = [v for values in self.grid.values() for v in values]
        numeric = len(self.grid) == 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        means = points[metric].to_numpy(dtype=float)
        positive = means[means > 0]
        log = len(positive) == len(means) and positive.max() >= 100 * positive.min()
        return svg.points(
            f"{metric} per sweep point",
            labels,
            means,
            points[f"{metric}.ci95"].to_numpy(dtype=float),
            x_label=" x ".join(self.grid),
            y_label="ms" if metric.endswith("_ms") else metric,
            joined=numeric,
            limit=target.limit_ms if target is not None else None,
            log=log,
        )

    def _table(self, points: pd.DataFrame, labels: list[str], targets: Sequence[Target]) -> str:
        columns = [c for c in _SHOWN if c in points.columns]
        head = "".join(f"<th>{escape(c)}</th>" for c in ["point", "seeds", *columns, *(str(t) for t in targets)])
        body = []
        for label, row in zip(labels, points.to_dict("records"), strict=True):
            cells = [label, str(row["seeds"]), *(_mean(row, c) for c in columns), *(_verdict(row, t) for t in targets)]
            body.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
        note = (
            "<p>A point meets a target when its mean over the seeds does; the sweep's runs are not checked for stability "
            "(the single run above is).</p>"
            if targets
            else ""
        )
        return f"<table class='sweep'><tr>{head}</tr>{''.join(body)}</table>{note}"


def _mean(row: Mapping[Hashable, Any], column: str) -> str:
    half = row.get(f"{column}.ci95", math.nan)
    return cell(row[column]) + ("" if not math.isfinite(half) else f" ± {cell(half)}")


def _verdict(row: Mapping[Hashable, Any], target: Target) -> str:
    value = row.get(f"{target.group}.{target.op}.{target.column}", math.nan)
    if not math.isfinite(value):
        return "unknown"
    over = value - target.limit_ms
    return f"misses by {over:.3g} ms" if over > 0 else "meets"
