"""A sweep's row: one run reduced to a flat, picklable dict of its figures (:func:`result_row`),
and the numeric columns such a row can hold, known before any run (:func:`row_figures`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from simcache.base.metrics import ESTIMATED_COLUMNS
from simcache.results.bottleneck import run_bottleneck
from simcache.results.result import Result
from simcache.results.validity import filling_backlogs
from simcache.runs.sweep_points import _STABILITY_KINDS
from simcache.runs.targets import caveat_kinds
from simcache.spec import Scenario

__all__ = ["result_row", "row_figures"]


def result_row(result: Result) -> dict[str, Any]:
    """One flat row of a result: ``<group>.<op>.<metric>`` for every summary cell, totals, and what
    targets read (:func:`simcache.runs.targets.evidence_of_row`): ``stable`` (1 or 0), ``validity``
    (the kinds of its validity warnings, comma-separated; absent when none), ``caveats`` (those of
    them that may make a pass unknown: :func:`simcache.runs.targets.caveat_kinds`) and
    ``<group>.<op>.lower_bounds`` (comma-separated; absent when none). ``bottleneck`` and
    ``bottleneck_utilization``: the part(s) a single run's bottleneck line names, comma-separated,
    and their mean utilization (:func:`~simcache.results.bottleneck.run_bottleneck`: a tier past its
    clean-pool cliff before the busiest part).

    ``stability``: one of :data:`STABILITY`, the first that holds: ``unstable`` (``stable`` is 0),
    ``filling`` (a destage backlog grows through the window), ``at capacity`` (a part busy
    :data:`~simcache.results.validity.PINNED` or more under open-loop load), ``untested`` (too few
    samples to test for growth), else ``stable``. ``backlog_full_in_s``: with ``filling``, the
    seconds until the first filling buffer is full at the rate its backlog grew
    (:func:`~simcache.results.validity.filling_backlogs`); absent otherwise.

    No wall-clock figures: the same scenario and seed always give the same row.
    """
    row: dict[str, Any] = {}
    for record in result.summary.to_dict(orient="records"):
        for metric in ESTIMATED_COLUMNS:  # the columns an estimate's summary has too
            row[f"{record['group']}.{record['op']}.{metric}"] = record[metric]
        # only where there are some: printed tables stay one word per cell
        if record["lower_bounds"]:
            row[f"{record['group']}.{record['op']}.lower_bounds"] = str(
                record["lower_bounds"]
            ).replace(" ", ",")
    row["stable"] = int(result.stable)  # its mean over seeds is the fraction of stable runs
    kinds = ",".join(dict.fromkeys(w.kind for w in result.warnings))
    if kinds:
        row["validity"] = kinds
        row["caveats"] = ",".join(dict.fromkeys(caveat_kinds(result.warnings)))
    row["stability"] = _stability(result)
    if row["stability"] == "filling":
        row["backlog_full_in_s"] = min(fill.full_in_s for fill in filling_backlogs(result))
    for record in result.breakdown.to_dict(orient="records"):
        row[f"{record['group']}.write.dominant"] = record["dominant"]
    bottleneck = run_bottleneck(result)
    row["bottleneck"] = ",".join(bottleneck.parts)
    row["bottleneck_utilization"] = bottleneck.utilization
    for key in _ROW_TOTALS:
        row[key] = result.totals[key]
    return {key: _plain(value) for key, value in row.items()}


_ROW_TOTALS = ("array_write_mb_s", "peer_wire_mb_s", "destage_backlog_bytes")
"""The run totals a :func:`result_row` holds."""
_ROW_FIGURES = ("stable", "backlog_full_in_s", "bottleneck_utilization", *_ROW_TOTALS)
"""The numeric columns of a :func:`result_row` besides its ``<group>.<op>.<metric>`` cells."""


def row_figures(scenarios: Iterable[Scenario]) -> list[str]:
    """The numeric columns a :func:`result_row` of a run of any of ``scenarios`` can hold, known
    before any run: ``<group>.<op>.<metric>`` for each group and ``all``, ``read`` and
    ``write`` and each metric of the summary a sweep keeps, then the run's own figures
    (``stable``, ``bottleneck_utilization``, totals). What ``until=`` may name."""
    groups = dict.fromkeys(group.name for scenario in scenarios for group in scenario.groups)
    return [
        *(
            f"{group}.{op}.{metric}"
            for group in [*groups, "all"]
            for op in ("write", "read")
            for metric in ESTIMATED_COLUMNS
        ),
        *_ROW_FIGURES,
    ]


def _stability(result: Result) -> str:
    """The first of :data:`STABILITY` that holds of ``result`` (see :func:`result_row`)."""
    if not result.stable:
        return "unstable"
    kinds = {w.kind for w in result.warnings}
    return next((state for state, kind in _STABILITY_KINDS.items() if kind in kinds), "stable")


def _plain(value: Any) -> Any:
    """Python int/float/str (numpy scalars converted): rows survive a JSON round trip unchanged."""
    if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value)
    return value
