"""Sweeps: run a scenario over a grid of overrides and seeds (serially, in this process)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from simcache.engine import simulate
from simcache.errors import ScenarioError
from simcache.results import Result
from simcache.scenario import Scenario, load_scenario

__all__ = ["grid_points", "result_row", "sweep"]

_METRICS = ("count", "iops", "mb_s", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms")


def grid_points(grid: Mapping[str, Sequence[Any]], source: str = "<grid>") -> list[dict[str, Any]]:
    """The Cartesian product of ``{dotted.path: [values]}`` as a list of override dicts."""
    for path, values in grid.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise ScenarioError(source, [(f"grid.{path}", f"must be a non-empty list of values, e.g. [{values!r}] (got {values!r})")])
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]


def result_row(result: Result) -> dict[str, Any]:
    """One flat row of a result: ``<group>.<op>.<metric>`` for every summary cell, plus totals."""
    row: dict[str, Any] = {}
    for record in result.summary.to_dict(orient="records"):
        for metric in _METRICS:
            row[f"{record['group']}.{record['op']}.{metric}"] = record[metric]
    for record in result.breakdown.to_dict(orient="records"):
        row[f"{record['group']}.write.dominant"] = record["dominant"]
    bottleneck, utilization = result.bottleneck()
    row["bottleneck"] = bottleneck
    row["bottleneck_utilization"] = utilization
    for key in ("array_write_mb_s", "peer_wire_mb_s", "destage_backlog_bytes"):
        row[key] = result.totals[key]
    row["wall_time_s"] = result.meta["wall_time_s"]
    return row


def sweep(
    scenario: Scenario | str | Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    *,
    seeds: Iterable[int] = (1,),
    duration: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Simulate every grid point with every seed; one row per point and seed.

    ``grid`` maps dotted scenario paths to lists of values, e.g.
    ``{"cluster.peer_link": ["1GbE", "10GbE"], "groups.db.policy": ["WB+1", "WB+2"]}``.
    Each row holds the point's values, ``seed`` and :func:`result_row`'s columns.
    """
    base = load_scenario(scenario)
    points = grid_points(grid)
    seed_list = list(seeds)
    total = len(points) * len(seed_list)
    rows = []
    for point in points:
        variant = base.with_overrides(point, source=f"<sweep point {point}>")
        for seed in seed_list:
            result = simulate(variant, seed=seed, duration=duration)
            rows.append({**point, "seed": seed, **result_row(result)})
            if progress is not None:
                progress(len(rows), total)
    return pd.DataFrame(rows)
