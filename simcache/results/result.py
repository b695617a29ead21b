"""Result of one run: per-I/O records, time series, summary, breakdown, totals.

Column reference (units are in the names: ``_s`` seconds, ``_ms``
milliseconds, ``_bytes`` bytes, ``mb_s`` 10^6 bytes per second):

records (one row per completed I/O)
    vm, group, host, op (read|write), path (write|hit|miss|remote_hit), size_bytes,
    issue_s, complete_s, latency_ms, and the breakdown local_tier_ms,
    network_ms, peer_tier_ms, destage_wait_ms, array_ms (they add up to
    latency_ms; for parallel legs only the slowest is attributed).
unfinished (one row per I/O issued but not completed when the run stopped, VMs of failed hosts left
out)
    vm, group, host, op, issue_s. Its latency is censored: at least
    (simulated_s - issue_s).
summary (one row per group and op, plus group "all"; I/Os issued after warm-up)
    count (completed I/Os), unfinished (I/Os of the window not completed at
    the end), iops, mb_s (completed ones), mean_ms, mean_ci95_ms (half-width,
    batch means over 10 time batches), p50_ms, p95_ms, p99_ms, p999_ms,
    max_ms, lower_bounds.
    Unfinished I/Os take part in the latency columns as censored values,
    each one at its lower bound (run end - issue time). Their true latencies
    have no upper bound, so a column they could raise without limit is only a
    lower bound, and is named in ``lower_bounds`` (space-separated, e.g.
    ``"p99_ms p999_ms mean_ms max_ms"``; empty when every figure is a value):
    a percentile whose rank falls among the top ``unfinished`` ranks, and the
    mean and max as soon as one I/O is unfinished. Read it as "p99 >= value";
    the CLI prints such cells as ``>=value``.
breakdown (one row per group, writes only)
    mean of each latency component in ms, and the dominant one.
series (one row per sample interval, indexed by its end time_s)
    read_iops, write_iops, read_mb_s, write_mb_s, write_p50_ms, write_p99_ms, read_p50_ms,
    read_p99_ms (I/Os completed in the interval), destage_backlog_bytes (all hosts) and
    backlog.<host>, data_at_risk_bytes (acknowledged bytes with fewer copies than their group's
    policy promises; on a volatile tier the whole backlog), single_copy_bytes (acknowledged bytes on
    one host only, whatever the policy: WB+0's whole backlog), destage_waiting (writers blocked on a
    full buffer), flows_in_flight, util.<port>, util.<host>.tier, queue.<host>.tier, util.array,
    queue.array (the array's spindle operations running or queued at the sample time).
totals
    cluster-level figures over the whole run: bytes and MB/s written by VMs,
    accepted by destagers, destaged, lost, left in backlog, carried by each
    network, packets, array front-end and back-end I/Os, compression savings,
    GC wait, cache hits and misses.

The records' schema is :mod:`simcache.sim.collect`; the summary's columns, and the
metric names checks use, are defined once in :mod:`simcache.base.metrics`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcache.base.json_values import json_default, strict
from simcache.base.metrics import PERCENTILES, SUMMARY_COLUMNS, ci95_half_width
from simcache.native import choice as _native
from simcache.results.assessed import window_series
from simcache.results.tables import (
    UNFINISHED_COLUMNS,
    records_table,
    run_totals,
    series_table,
    unfinished_table,
)
from simcache.results.validity import ValidityWarning, assess
from simcache.sim.collect import COMPONENTS
from simcache.sim.record import RunRecord
from simcache.sim.stream import (
    BATCHES,
    LatencyHistogram,
    StreamStats,
    counts_of,
    percentile_of_counts,
)
from simcache.spec import Scenario

__all__ = ["UNFINISHED_COLUMNS", "RecordsNotKept", "Result", "censored_percentiles"]

_CI_BATCHES = 10
"""The columns of :attr:`Result.unfinished`."""


class RecordsNotKept(RuntimeError):
    """A run without records (``simulate(..., keep_records=False)``) was asked for its per-I/O
    records."""

    def __init__(self) -> None:
        super().__init__(
            "this run kept no per-I/O records (simulate(..., keep_records=False) or simcache run "
            "--no-records): its summary, "
            "breakdown, series and latency histograms come from counters (Result.stream); run with "
            "records for per-I/O figures"
        )


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


class Result:
    """Everything one run produced. Build with :func:`simcache.simulate`."""

    def __init__(
        self,
        records: pd.DataFrame | None,
        series: pd.DataFrame,
        totals: dict[str, Any],
        meta: dict[str, Any],
        unfinished: pd.DataFrame | None = None,
        stream: StreamStats | None = None,
    ):
        self._records = records
        self.stream = stream
        """A run without records: its histograms and counters (:mod:`simcache.sim.stream`);
        ``None`` for a run with records."""
        self.series = series
        self.totals = totals
        self.meta = meta
        self.unfinished = (
            unfinished
            if unfinished is not None
            else pd.DataFrame({c: [] for c in UNFINISHED_COLUMNS})
        )
        """I/Os issued but not completed when the run stopped (columns
        :data:`UNFINISHED_COLUMNS`)."""
        self._summary: pd.DataFrame | None = None
        self._breakdown: pd.DataFrame | None = None
        self._warnings: list[ValidityWarning] | None = None
        self.scenario: Scenario | None = None
        """The scenario as run, when the result comes from :func:`simcache.simulate` (else only
        ``meta["scenario"]``)."""

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_record(cls, record: RunRecord) -> Result:
        """The result of the run ``record`` describes (:func:`simcache.sim.engine.run_scenario`).

        Building the records table consumes the record's blocks: build one result per record."""
        scenario = record.scenario
        stream = record.stream
        records: pd.DataFrame | None = None
        if stream is None:
            records = records_table(record)
            completed = len(records)
        else:
            completed = stream.completed
        unfinished = unfinished_table(record)
        series = series_table(record, records)
        totals = run_totals(record, records)
        wall_time_s = record.wall_time_s
        events = record.events
        meta = {
            "scenario": scenario.model_dump(mode="json"),
            "scenario_name": scenario.name,
            "seed": record.seed,
            "version": record.version,
            # compiled or Python sources, and why (wall times depend on it, results do not)
            "engine": _native.ENGINE,
            # the native engine or the Python one, and why (results do not depend on it)
            "run_by": record.run_by,
            "wall_time_s": wall_time_s,
            "simulated_s": scenario.run.duration,
            "warmup_s": scenario.run.warmup,
            "events": events,
            "ios": completed,
            "events_per_io": events / completed if completed else math.nan,
            "ios_per_wall_s": completed / wall_time_s if wall_time_s > 0 else math.nan,
            "records": stream is None,
            "vmotions": record.vmotions,
            "failures": record.failures,
            "outages": record.outages,
            "degradations": record.degradations,
            "resyncs": record.resyncs,
            "degraded_vms": record.degraded_vms,
            "restarts": record.restarts,
            "stopped_at_s": record.stopped_at_s,
            "stop_reason": record.stop_reason,
            "warmup_cut": record.warmup_cut,
        }
        if record.stopped_at_s is not None:
            # as asked for: rerunning it runs to the end
            meta["scenario"] = record.planned.model_dump(mode="json")
            meta["planned_s"] = record.planned.run.duration
        result = cls(records, series, totals, meta, unfinished, stream)
        result.scenario = scenario
        return result

    # -- views ----------------------------------------------------------------------------------

    @property
    def records(self) -> pd.DataFrame:
        """One row per completed I/O (see the module); :class:`RecordsNotKept` for a run without
        records."""
        if self._records is None:
            raise RecordsNotKept()
        return self._records

    @records.setter
    def records(self, records: pd.DataFrame) -> None:
        self._records = records

    @property
    def has_records(self) -> bool:
        """The run kept its per-I/O records (else its figures come from :attr:`stream`)."""
        return self._records is not None

    def latency_histograms(self, by: str = "group") -> dict[tuple[str, str], LatencyHistogram]:
        """The window's latency histogram per ``by`` (``group`` or ``vm``) and op, and per op for
        group ``all`` (:class:`simcache.sim.stream.LatencyHistogram`: add them to merge runs or
        seeds). From the records, or a run's counters without them; unfinished I/Os are left out."""
        out: dict[tuple[str, str], LatencyHistogram] = {}
        if self.stream is not None:
            for key, vms in _stream_keys(self, by, with_all=by == "group"):
                for o, op in enumerate(("read", "write")):
                    out[(key, op)] = self.stream.histogram(self.stream.rows_of(vms, o))
            return out
        measured = self.measured
        keys = (
            [g["name"] for g in self.meta["scenario"]["groups"]]
            if by == "group"
            else list(dict.fromkeys(measured[by]))
        )
        for key in [*keys, *(["all"] if by == "group" else [])]:
            for op in ("read", "write"):
                part = measured[
                    (measured["op"] == op) & ((measured[by] == key) if key != "all" else True)
                ]
                out[(key, op)] = LatencyHistogram.of(part["latency_ms"].to_numpy(dtype=float))
        return out

    @property
    def window(self) -> tuple[float, float]:
        """(start, end) in seconds of the measurement window (after warm-up)."""
        return float(self.meta["warmup_s"]), float(self.meta["simulated_s"])

    @property
    def measured(self) -> pd.DataFrame:
        """Records of I/Os issued inside the measurement window."""
        start, _ = self.window
        return self.records[self.records["issue_s"] >= start]

    def _measured_rows(self) -> np.ndarray:
        """Row positions of the records of I/Os issued inside the measurement window (what
        :attr:`measured` selects)."""
        start, _ = self.window
        return np.flatnonzero(self.records["issue_s"].to_numpy() >= start)

    @property
    def measured_unfinished(self) -> pd.DataFrame:
        """Unfinished I/Os issued inside the measurement window."""
        start, _ = self.window
        return self.unfinished[self.unfinished["issue_s"] >= start]

    @property
    def warnings(self) -> list[ValidityWarning]:
        """What makes this run's figures doubtful, in words: instability, then short-run notes
        (:func:`simcache.results.validity.assess`)."""
        if self._warnings is None:
            self._warnings = assess(self)
        return self._warnings

    @property
    def stable(self) -> bool:
        """No instability warning (short-run warnings do not count): the figures describe a
        steady state."""
        return not any(w.severity == "unstable" for w in self.warnings)

    @property
    def summary(self) -> pd.DataFrame:
        """Latency percentiles, IOPS and MB/s per group and op (and group ``all``); unfinished
        I/Os as censored values."""
        if self._summary is None:
            self._summary = self._summarize(by="group")
        return self._summary

    def summary_by_vm(self) -> pd.DataFrame:
        """As :attr:`summary`, one row per VM and op."""
        return self._summarize(by="vm")

    def _summarize(self, by: str) -> pd.DataFrame:
        if self.stream is not None:
            return _summarize_stream(self, self.stream, by)
        start, end = self.window
        span = end - start
        records = self.records
        inside = self._measured_rows()
        unfinished = self.measured_unfinished
        rows = []
        if by == "group":  # every group of the scenario, even one that did no I/O in the window
            keys = [g["name"] for g in self.meta["scenario"]["groups"]] + ["all"]
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
                times = (
                    np.concatenate((issue_all[part], issued)) if len(bounds) else issue_all[part]
                )
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
                        "lower_bounds": " ".join([*lower, "mean_ms", "max_ms"])
                        if len(bounds)
                        else "",
                    }
                )
        return pd.DataFrame(rows, columns=[by, "op", *SUMMARY_COLUMNS])

    @property
    def breakdown(self) -> pd.DataFrame:
        """Where write latency comes from: mean ms per component per group, and the dominant one."""
        if self._breakdown is None and self.stream is not None:
            self._breakdown = _breakdown_stream(self, self.stream)
        if self._breakdown is None:
            records = self.records
            inside = self._measured_rows()
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
                        "write_mean_ms": float(
                            pd.Series(records["latency_ms"].to_numpy()[part]).mean()
                        )
                        if len(part)
                        else math.nan,
                        **means,
                        "dominant": dominant.removesuffix("_ms"),
                    }
                )
            self._breakdown = pd.DataFrame(rows)
        return self._breakdown

    def window_means(self) -> pd.Series:
        """Mean of every series column over the measurement window (its samples after the
        warm-up)."""
        return window_series(self).mean()

    def bottleneck(self) -> tuple[str, float]:
        """The component with the highest mean utilization over the window, and that utilization."""
        means = self.window_means()
        utilization = means[[c for c in means.index if c.startswith("util.")]]
        name = str(utilization.idxmax())
        return name.removeprefix("util."), float(utilization.max())

    # -- export ---------------------------------------------------------------------------------

    def save(self, folder: str | Path, formats: tuple[str, ...] = ("csv", "parquet")) -> Path:
        """Write records (a run with records), unfinished, series, summary, breakdown and
        meta.json (with totals) into ``folder``."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        tables = {
            **({"records": self.records} if self.has_records else {}),
            "unfinished": self.unfinished,
            "series": self.series.reset_index(),
            "summary": self.summary,
            "breakdown": self.breakdown,
        }
        for name, table in tables.items():
            if "csv" in formats:
                table.to_csv(out / f"{name}.csv", index=False)
            if "parquet" in formats:
                table.to_parquet(out / f"{name}.parquet", index=False)
        meta = {**self.meta, "totals": self.totals, **self._validity_json()}
        (out / "meta.json").write_text(json.dumps(meta, indent=2, default=json_default) + "\n")
        return out

    def to_json(self) -> dict[str, Any]:
        """Summary, breakdown, totals and meta as plain JSON-able data."""
        data: dict[str, Any] = json.loads(
            json.dumps(
                {
                    "summary": self.summary.to_dict(orient="records"),
                    "breakdown": self.breakdown.to_dict(orient="records"),
                    "totals": self.totals,
                    "meta": {k: v for k, v in self.meta.items() if k != "scenario"},
                    **self._validity_json(),
                },
                default=json_default,
            )
        )
        cleaned: dict[str, Any] = strict(data)
        return cleaned

    def _validity_json(self) -> dict[str, Any]:
        return {"stable": self.stable, "warnings": [w.to_json() for w in self.warnings]}


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


def _stream_keys(result: Result, by: str, with_all: bool) -> list[tuple[str, np.ndarray]]:
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
    """:meth:`Result._summarize` from a run's histograms and counters: counts, bytes, means and
    maxima exact (sums in another order), percentiles within
    :data:`simcache.sim.stream.REL_ERROR` (see :mod:`simcache.sim.stream`)."""
    start, end = result.window
    span = end - start
    unfinished = result.measured_unfinished
    pending_key = unfinished[by].to_numpy(dtype=object)
    pending_issue = unfinished["issue_s"].to_numpy(dtype=float)
    pending_write = (unfinished["op"] == "write").to_numpy(dtype=bool)
    rows = []
    for key, vms in _stream_keys(result, by, with_all=by == "group"):
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
    """:attr:`Result.breakdown` from a run's component sums: each group with a write in the
    window (in the scenario's order), then ``all``."""
    rows = []
    for key, vms in _stream_keys(result, "group", with_all=True):
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
