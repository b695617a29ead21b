"""A run's summary and write-latency breakdown: latency percentiles with unfinished I/Os as
censored values, the mean's batch-means confidence interval, IOPS and MB/s per group (or VM) and
op, and each latency component's mean, from the run's per-I/O records or, for a run without them,
from its histograms and counters (:mod:`simcache.sim.stream`).

The columns are :data:`simcache.base.metrics.SUMMARY_COLUMNS`, described with the result's other
tables in :mod:`simcache.results.result`; :class:`~simcache.results.result.Result` computes each
table here when first asked for it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simcache.base.metrics import PERCENTILES, SUMMARY_COLUMNS, ci95_half_width
from simcache.sim.collect import COMPONENTS
from simcache.sim.stream import BATCHES, StreamStats, counts_of, percentile_of_counts

if TYPE_CHECKING:
    from simcache.results.result import Result

__all__ = ["breakdown_table", "censored_percentiles", "stream_keys", "summary_table"]

_CI_BATCHES = 10
"""Equal time batches of the window whose means give the mean latency's confidence interval."""


def _percentiles(values: np.ndarray) -> dict[str, float]:
    """The :data:`~simcache.base.metrics.PERCENTILES` columns and ``max_ms`` of latencies
    ``values`` (ms)."""
    if len(values) == 0:
        return dict.fromkeys([*PERCENTILES, "max_ms"], math.nan)
    return {
        **dict(zip(PERCENTILES, np.percentile(values, list(PERCENTILES.values())), strict=True)),
        "max_ms": float(values.max()),
    }


def censored_percentiles(
    latency: np.ndarray, bounds: np.ndarray
) -> tuple[dict[str, float], list[str]]:
    """As :func:`_percentiles`, with unfinished I/Os' lower bounds ``bounds`` (ms) among the values,
    and which percentiles are lower bounds.

    Each unfinished I/O takes part at its lower bound (sorted among the
    completed latencies; :func:`numpy.percentile` breaks no ties, so the order
    of equal values does not matter). Its true latency has no upper bound, so
    a percentile whose interpolation reaches one of the top ``len(bounds)``
    ranks (``ceil((n - 1) q / 100) >= n - len(bounds)``: the unfinished I/Os
    could all be there) is only a lower bound; below that rank it is bracketed
    by completed latencies and counts as a value.
    """
    if not len(bounds):
        return _percentiles(latency), []
    values = np.concatenate((latency, bounds))
    top = len(values) - 1
    lower = [name for name, q in PERCENTILES.items() if math.ceil(top * q / 100.0) >= len(latency)]
    return _percentiles(values), lower


def _batch_means_ci(latency: np.ndarray, issued: np.ndarray, start: float, end: float) -> float:
    """95% half-width of the mean latency from batch means over equal time batches.

    Batches with no I/O (the off periods of a duty cycle) are left out; at
    least two non-empty batches are needed.
    """
    if len(latency) < 2 * _CI_BATCHES:
        return math.nan
    edges = np.linspace(start, end, _CI_BATCHES + 1)
    index = np.clip(np.searchsorted(edges, issued, side="right") - 1, 0, _CI_BATCHES - 1)
    counts = np.bincount(index, minlength=_CI_BATCHES)
    sums = np.bincount(index, weights=latency, minlength=_CI_BATCHES)
    return ci95_half_width(sums[counts > 0] / counts[counts > 0])


def summary_table(result: Result, by: str) -> pd.DataFrame:
    """:attr:`~simcache.results.result.Result.summary` (``by`` ``"group"``) or
    :meth:`~simcache.results.result.Result.summary_by_vm` (``"vm"``): one row per key and op."""
    if result.stream is not None:
        return _summarize_stream(result, result.stream, by)
    start, end = result.window
    span = end - start
    records = result.records
    inside = _window_rows(result)
    unfinished = result.measured_unfinished
    rows = []
    if by == "group":  # every group of the scenario, even one that did no I/O in the window
        keys = [g["name"] for g in result.meta["scenario"]["groups"]] + ["all"]
    else:
        keys = list(dict.fromkeys([*_first_seen(records[by], inside), *unfinished[by]]))
    # One pass over the records per table (a filter per key costs groups x records: 1,000 groups
    # took seconds), on plain arrays indexed by row positions (a pandas subset per key and op
    # costs milliseconds each; a copy of the measured records would double a long run's memory).
    rows_of = _positions_by_key(records[by], inside)  # key -> row positions, in row order
    pending_of = unfinished.groupby(by, sort=False, observed=True).indices
    latency_all = records["latency_ms"].to_numpy()
    issue_all = records["issue_s"].to_numpy()
    size_all = records["size_bytes"].to_numpy()
    write_all = _op_codes(records) == 1
    pending_issue = unfinished["issue_s"].to_numpy(dtype=float)
    pending_write = (unfinished["op"] == "write").to_numpy(dtype=bool)
    none = np.empty(0, dtype=np.intp)
    for key in keys:
        where = inside if key == "all" else rows_of.get(key, none)
        waiting = np.arange(len(unfinished)) if key == "all" else pending_of.get(key, none)
        for op in ("read", "write"):
            want = op == "write"
            part = where[write_all[where] == want]
            issued = pending_issue[waiting[pending_write[waiting] == want]]
            latency = latency_all[part]
            bounds = (end - issued) * 1e3
            figures, lower = censored_percentiles(latency, bounds)
            values = np.concatenate((latency, bounds)) if len(bounds) else latency
            times = np.concatenate((issue_all[part], issued)) if len(bounds) else issue_all[part]
            rows.append(
                {
                    by: key,
                    "op": op,
                    "count": len(part),
                    "unfinished": len(issued),
                    "iops": len(part) / span,
                    "mb_s": size_all[part].sum() / span / 1e6,
                    "mean_ms": float(values.mean()) if len(values) else math.nan,
                    "mean_ci95_ms": _batch_means_ci(values, times, start, end),
                    **figures,
                    "lower_bounds": " ".join([*lower, "mean_ms", "max_ms"]) if len(bounds) else "",
                }
            )
    return pd.DataFrame(rows, columns=[by, "op", *SUMMARY_COLUMNS])


def breakdown_table(result: Result) -> pd.DataFrame:
    """:attr:`~simcache.results.result.Result.breakdown`: the mean of each write-latency component
    per group (and ``all``), and the dominant one."""
    if result.stream is not None:
        return _breakdown_stream(result, result.stream)
    records = result.records
    inside = _window_rows(result)
    writes = inside[_op_codes(records)[inside] == 1]
    rows = []
    parts = list(_positions_by_key(records["group"], writes).items()) + [("all", writes)]
    for group, part in parts:
        # float32 components, averaged in float64
        means = {
            c: float(records[c].to_numpy()[part].astype(np.float64).mean())
            if len(part)
            else math.nan
            for c in COMPONENTS
        }
        dominant = "none" if not len(part) else max(means, key=lambda c: means[c])
        rows.append(
            {
                "group": group,
                "write_mean_ms": float(pd.Series(records["latency_ms"].to_numpy()[part]).mean())
                if len(part)
                else math.nan,
                **means,
                "dominant": dominant.removesuffix("_ms"),
            }
        )
    return pd.DataFrame(rows)


def _window_rows(result: Result) -> np.ndarray:
    """Row positions of the records of I/Os issued inside the measurement window (what
    :attr:`~simcache.results.result.Result.measured` selects)."""
    start, _ = result.window
    return np.flatnonzero(result.records["issue_s"].to_numpy() >= start)


def _op_codes(records: pd.DataFrame) -> np.ndarray:
    """The records' op as codes: 0 read, 1 write (the categories are ("read", "write"); a plain
    column is compared)."""
    op = records["op"]
    if isinstance(op.dtype, pd.CategoricalDtype) and list(op.cat.categories) == ["read", "write"]:
        codes: np.ndarray = op.cat.codes.to_numpy()
        return codes
    return (op == "write").to_numpy().astype(np.int8)


def _first_seen(column: pd.Series, rows: np.ndarray) -> list[Any]:
    """The values of ``column`` at ``rows``, each once, in the order they first appear."""
    values = column.iloc[rows] if len(rows) < len(column) else column
    return list(dict.fromkeys(values))


def _positions_by_key(column: pd.Series, rows: np.ndarray) -> dict[Any, np.ndarray]:
    """``rows`` split by the value of ``column`` there: value -> its rows in order, values in
    order of first appearance (as ``groupby(sort=False).indices`` on the selected rows, without
    copying the table)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()[rows]
        categories = column.cat.categories
    else:
        categories_index, codes = np.unique(column.to_numpy()[rows], return_inverse=True)
        categories = pd.Index(categories_index)
    order = np.argsort(codes, kind="stable")
    present, first, counts = np.unique(codes, return_index=True, return_counts=True)
    split = np.split(rows[order], np.cumsum(counts)[:-1]) if len(rows) else []
    by_code = dict(zip(present.tolist(), split, strict=True))
    return {
        categories[code]: by_code[code]
        for code in present[np.argsort(first, kind="stable")].tolist()
    }


def stream_keys(result: Result, by: str, with_all: bool) -> list[tuple[str, np.ndarray]]:
    """The summary's keys of a run without records and the VM indices of each: every group (and
    ``all``), or every VM with an I/O of the window, completed or unfinished."""
    stream = result.stream
    assert stream is not None
    if by == "group":
        keys = [
            (name, np.flatnonzero(stream.vm_group == g))
            for g, name in enumerate(stream.group_names)
        ]
        return keys + ([("all", np.arange(len(stream.vm_names)))] if with_all else [])
    pending = set(result.measured_unfinished["vm"])
    done = (stream.count[0::2] + stream.count[1::2]) > 0
    return [
        (name, np.array([v]))
        for v, name in enumerate(stream.vm_names)
        if done[v] or name in pending
    ]


def _summarize_stream(result: Result, stream: StreamStats, by: str) -> pd.DataFrame:
    """:func:`summary_table` from a run's histograms and counters: counts, bytes, means and
    maxima exact (sums in another order), percentiles within
    :data:`simcache.sim.stream.REL_ERROR` (see :mod:`simcache.sim.stream`)."""
    start, end = result.window
    span = end - start
    unfinished = result.measured_unfinished
    pending_key = unfinished[by].to_numpy(dtype=object)
    pending_issue = unfinished["issue_s"].to_numpy(dtype=float)
    pending_write = (unfinished["op"] == "write").to_numpy(dtype=bool)
    rows = []
    for key, vms in stream_keys(result, by, with_all=by == "group"):
        for o, op in enumerate(("read", "write")):
            want = pending_write == (o == 1)
            issued = pending_issue[want if key == "all" else want & (pending_key == key)]
            bounds = (end - issued) * 1e3
            lines = stream.rows_of(vms, o)
            count = int(stream.count[lines].sum())
            total = count + len(bounds)
            counts = stream.histogram_counts(lines) + counts_of(bounds)
            maximum = max(
                float(stream.max_ms[lines].max()) if len(lines) else -math.inf,
                float(bounds.max()) if len(bounds) else -math.inf,
            )
            figures = {
                name: percentile_of_counts(counts, q, maximum) for name, q in PERCENTILES.items()
            }
            figures["max_ms"] = maximum if total else math.nan
            lower = (
                [
                    name
                    for name, q in PERCENTILES.items()
                    if math.ceil((total - 1) * q / 100.0) >= count
                ]
                if len(bounds)
                else []
            )
            batch = np.clip(np.searchsorted(stream.edges, issued, side="right") - 1, 0, BATCHES - 1)
            batch_count = stream.batch_count[lines].sum(axis=0) + np.bincount(
                batch, minlength=BATCHES
            )
            batch_sum = stream.batch_sum[lines].sum(axis=0) + np.bincount(
                batch, weights=bounds, minlength=BATCHES
            )
            filled = batch_count > 0
            rows.append(
                {
                    by: key,
                    "op": op,
                    "count": count,
                    "unfinished": len(bounds),
                    "iops": count / span,
                    "mb_s": int(stream.bytes[lines].sum()) / span / 1e6,
                    "mean_ms": (float(stream.sum_ms[lines].sum()) + float(bounds.sum())) / total
                    if total
                    else math.nan,
                    "mean_ci95_ms": ci95_half_width(batch_sum[filled] / batch_count[filled])
                    if total >= 2 * _CI_BATCHES
                    else math.nan,
                    **figures,
                    "lower_bounds": " ".join([*lower, "mean_ms", "max_ms"]) if len(bounds) else "",
                }
            )
    return pd.DataFrame(rows, columns=[by, "op", *SUMMARY_COLUMNS])


def _breakdown_stream(result: Result, stream: StreamStats) -> pd.DataFrame:
    """:func:`breakdown_table` from a run's component sums: each group with a write in the
    window (in the scenario's order), then ``all``."""
    rows = []
    for key, vms in stream_keys(result, "group", with_all=True):
        lines = stream.rows_of(vms, 1)
        count = int(stream.count[lines].sum())
        if not count and key != "all":
            continue
        sums = stream.components_ms[lines].sum(axis=0)
        means = {c: float(sums[i]) / count if count else math.nan for i, c in enumerate(COMPONENTS)}
        rows.append(
            {
                "group": key,
                "write_mean_ms": float(stream.sum_ms[lines].sum()) / count if count else math.nan,
                **means,
                "dominant": "none"
                if not count
                else max(means, key=lambda c: means[c]).removesuffix("_ms"),
            }
        )
    return pd.DataFrame(rows)
