"""Numbers as the CLI's tables and the HTML report print them, lower bounds marked.

One formatting for both, so a report shows a run's figures exactly as ``simcache run`` prints them.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from simcache.base.metrics import PERCENTILES, THROUGHPUT_COLUMNS

__all__ = ["LOWER_BOUND", "RUN_COLUMNS", "bounded", "cell", "engine_words"]

RUN_COLUMNS = [
    "group",
    "op",
    "count",
    "unfinished",
    *THROUGHPUT_COLUMNS[1:],
    *PERCENTILES,
    "mean_ms",
]
"""The summary table as ``simcache run`` prints it (and the report shows it): with the unfinished
I/Os, and lower bounds marked."""
LOWER_BOUND = ">="
"""The mark in front of a figure that is only a lower bound (a percentile raised by unfinished
I/Os)."""


def cell(value: Any) -> str:
    """A table cell: 3 decimals below 10, 1 from there, "-" for a missing figure, anything else
    as text."""
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def bounded(summary: pd.DataFrame, mark: str = LOWER_BOUND) -> pd.DataFrame:
    """The summary with each lower-bound cell (named in its row's ``lower_bounds``) as the text
    ``mark + cell(value)``."""
    shown = summary.astype({c: object for c in summary.columns})
    for i, names in zip(summary.index, summary["lower_bounds"], strict=True):
        for name in str(names).split():
            shown.at[i, name] = mark + cell(summary.at[i, name])
    return shown


def engine_words(meta: dict[str, Any]) -> str:
    """Which engine ran the run, for the report's first line: "native" or the Python engine
    (mypyc-compiled or not) and why not the native one."""
    python = meta["engine"].partition(":")[0]  # "compiled (mypyc)" or "Python"
    run_by = meta.get("run_by", "Python")  # results written before it carry no run_by
    if run_by == "native":
        return "native engine"
    why = run_by.partition(": ")[2]
    slow = ", slow" if run_by.startswith("Python, slow") else ""
    return f"{python} engine{slow}: {why}" if why else f"{python} engine"
