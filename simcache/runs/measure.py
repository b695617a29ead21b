"""What one side of a check measures: a metric of a selection of one run's I/Os (variant's run,
group, op, host, time window), from its records, series, totals or validity.

:func:`measure` takes the figures a check can name (``RECORD_METRICS`` and the other names of
:mod:`simcache.base.metrics`) as the run's summary computes them: latency percentiles count the
I/Os unfinished at the end at their latencies' lower bounds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from simcache.base.metrics import PERCENTILES, RECORD_METRICS, VALIDITY
from simcache.results.result import Result
from simcache.results.summary import censored_percentiles
from simcache.spec import Selection

__all__ = ["measure"]


def measure(result: Result, selection: Selection, metric: str) -> float:
    """The value of ``metric`` for ``selection`` in one run's result (NaN when nothing is
    selected)."""
    source, _, key = metric.partition(".")
    if source == "totals" and metric not in RECORD_METRICS:
        return float(result.totals[key])
    if source == "series" and metric not in RECORD_METRICS:
        return _series_value(result, selection, key)
    if source == "validity" and key in VALIDITY:
        return (
            float(result.stable)
            if key == "stable"
            else float(sum(w.severity == "unstable" for w in result.warnings))
        )
    span = _span(result, selection)
    records = _select(result.records, result, selection)
    unfinished = _select(result.unfinished, result, selection)
    # censored latencies (ms), as in the summary
    bounds = (result.window[1] - unfinished["issue_s"].to_numpy(dtype=float)) * 1e3
    return _record_metric(records, bounds, span, metric)


def _span(result: Result, selection: Selection) -> float:
    start, end = result.window if selection.window is None else selection.window
    return end - start


def _select(records: pd.DataFrame, result: Result, selection: Selection) -> pd.DataFrame:
    """The rows of ``records`` (the records or the unfinished I/Os) that ``selection`` takes."""
    start, end = result.window if selection.window is None else selection.window
    issued = records["issue_s"]
    mask = (issued >= start) & (issued < end)
    if selection.op != "any":
        mask &= records["op"] == selection.op
    if selection.group != "all":
        mask &= records["group"] == selection.group
    if selection.host is not None:
        mask &= records["host"] == selection.host
    return records[mask]


def _record_metric(records: pd.DataFrame, bounds: np.ndarray, span: float, metric: str) -> float:
    """``metric`` of the completed ``records``, unfinished I/Os at their latencies' lower
    ``bounds`` (ms) in the latency figures."""
    latency = records["latency_ms"].to_numpy()
    if metric == "count":
        return float(len(records))
    if metric == "unfinished":
        return float(len(bounds))
    if metric == "iops":
        return len(records) / span
    if metric == "mb_s":
        return float(records["size_bytes"].sum()) / span / 1e6
    if metric == "mean_ms" and len(records) + len(bounds):
        return float(np.concatenate((latency, bounds)).mean())
    if metric in PERCENTILES or metric == "max_ms":
        # as the summary computes them
        return float(censored_percentiles(latency, bounds)[0][metric])
    if not len(records):
        return math.nan
    if metric == "hit_ratio":
        reads = records["path"][records["op"] == "read"]
        return float((reads == "hit").mean()) if len(reads) else math.nan
    if metric == "mean_outstanding":
        return float(latency.sum()) / 1e3 / span
    if metric == "max_outstanding":
        return float(_max_overlap(records["issue_s"].to_numpy(), records["complete_s"].to_numpy()))
    # a latency component (float32), averaged in float64
    return float(records[metric].to_numpy(dtype=np.float64).mean())


def _max_overlap(starts: np.ndarray, ends: np.ndarray) -> int:
    """The most intervals [start, end) open at one instant."""
    times = np.concatenate((starts, ends))
    steps = np.concatenate(
        (np.ones(len(starts), dtype=np.int64), -np.ones(len(ends), dtype=np.int64))
    )
    order = np.lexsort((steps, times))  # at equal times an end (-1) comes before a start
    return int(np.cumsum(steps[order]).max()) if len(times) else 0


def _series_value(result: Result, selection: Selection, column: str) -> float:
    series = result.series[column]
    start, end = result.window if selection.window is None else selection.window
    part = series[(series.index > start) & (series.index <= end)]
    if not len(part):
        return math.nan
    if selection.stat == "last":
        return float(part.iloc[-1])
    return float(getattr(part, selection.stat)())
