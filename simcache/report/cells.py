"""Numbers as the CLI's tables and the HTML report print them, lower bounds marked.

One formatting for both, so a report shows a run's figures exactly as ``simcache run`` prints them.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from simcache.base.metrics import PERCENTILES, THROUGHPUT_COLUMNS

__all__ = ["LOWER_BOUND", "RUN_COLUMNS", "bounded", "cell"]

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
