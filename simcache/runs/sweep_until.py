"""A sweep's ``until=``: seeds added to a grid point until the 95% interval of a chosen metric is
narrow enough. Its arguments checked before any run (:func:`until_problems`), the next seeds of
the points still too wide (:func:`seeds_wanted`), and which points got there
(:func:`until_outcomes`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simcache.runs.sweep_points import _half_width
from simcache.runs.sweep_rows import row_figures
from simcache.spec import Scenario

__all__ = ["UntilOutcome", "seeds_wanted", "until_outcomes", "until_problems"]


def until_problems(
    until: tuple[str, float],
    max_seeds: int,
    runs: Sequence[Scenario],
    grid: Mapping[str, Sequence[Any]],
) -> list[tuple[str, str]]:
    """What is wrong with ``until=(metric, relative_half_width)`` and ``max_seeds`` for a sweep of
    ``runs`` over ``grid``, as ``(field, message)`` pairs (fields ``until`` and ``max_seeds``);
    none when they can be used. Checked before any run: a misspelt metric or a width that can
    never be met would otherwise show only after a round of runs, or never."""
    metric, width = until
    problems = []
    if metric in grid:
        problems.append(
            (
                "until",
                f"{metric!r} is a grid column; name a result column such as 'all.write.mean_ms'",
            )
        )
    elif metric not in row_figures(runs):
        problems.append(
            ("until", f"no result column {metric!r}; e.g. all.write.mean_ms, db.write.p99_ms")
        )
    if not (math.isfinite(width) and width > 0):
        problems.append(
            (
                "until",
                f"the width must be a fraction of the mean above 0, e.g. 0.05 for 5% (got "
                f"{width:g})",
            )
        )
    if max_seeds < 1:
        problems.append(("max_seeds", f"must be at least 1 (got {max_seeds})"))
    return problems


@dataclass(frozen=True)
class UntilOutcome:
    """Whether one grid point's 95% interval of the ``until`` metric came within the width asked
    for (:func:`until_outcomes`)."""

    point: str
    """The point's grid values, ``path=value, ...``."""
    seeds: int
    """How many seeds it ran."""
    reached: bool
    """Its interval's half-width is within the width, as a fraction of the mean."""
    relative_half_width: float
    """The half-width over the absolute mean (NaN with one seed or no finite value)."""


def until_outcomes(
    table: pd.DataFrame, grid_columns: Sequence[str], until: tuple[str, float]
) -> list[UntilOutcome]:
    """Per grid point of a finished ``until=`` sweep's ``table``, in grid order: whether it
    reached the width, with how many seeds and how wide its interval was."""
    metric, width = until
    outcomes = []
    for key, part in table.groupby(list(grid_columns), sort=False, dropna=False):
        values = key if isinstance(key, tuple) else (key,)
        label = ", ".join(
            f"{column}={value}" for column, value in zip(grid_columns, values, strict=True)
        )
        figures = part[metric].to_numpy(dtype=float) if metric in part else np.array([math.nan])
        mean, half = _interval(figures)
        relative = half / abs(mean) if mean else math.nan
        outcomes.append(UntilOutcome(label, len(part), _within(mean, half, width), relative))
    return outcomes


def _interval(values: np.ndarray) -> tuple[float, float]:
    """The mean of the finite ``values`` and their 95% interval's half-width (NaN when there is
    none)."""
    mean = float(np.nanmean(values)) if np.isfinite(values).any() else math.nan
    return mean, _half_width(values)


def _within(mean: float, half: float, width: float) -> bool:
    """The half-width ``half`` is within ``width`` (a fraction) of ``mean``."""
    return math.isfinite(half) and math.isfinite(mean) and half <= width * abs(mean)


def seeds_wanted(
    points: list[dict[str, Any]],
    rows: Mapping[tuple[int, int], dict[str, Any]],
    seeds: list[int],
    until: tuple[str, float],
    max_seeds: int,
) -> dict[int, list[int]]:
    """Points whose interval is still too wide, each with the next batch of seeds to run."""
    metric, width = until
    seeds_of: dict[int, list[int]] = {}
    for i, seed in rows:
        seeds_of.setdefault(i, []).append(seed)
    wanted: dict[int, list[int]] = {}
    for i in range(len(points)):
        have = sorted(seeds_of[i])
        if len(have) >= max_seeds:
            continue
        values = np.array([rows[(i, seed)].get(metric, math.nan) for seed in have], dtype=float)
        if _within(*_interval(values), width):
            continue
        batch = min(len(seeds), max_seeds - len(have))
        start = max(have) + 1
        wanted[i] = list(range(start, start + batch))
    return wanted
