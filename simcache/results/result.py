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
metric names checks use, are defined once in :mod:`simcache.base.metrics`. The summary and
breakdown are computed in :mod:`simcache.results.summary`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from simcache.base.json_values import json_default, strict
from simcache.native import choice as _native
from simcache.results.assessed import window_series
from simcache.results.summary import breakdown_table, stream_keys, summary_table
from simcache.results.tables import (
    UNFINISHED_COLUMNS,
    records_table,
    run_totals,
    series_table,
    unfinished_table,
)
from simcache.results.validity import ValidityWarning, assess
from simcache.sim.record import RunRecord
from simcache.sim.stream import LatencyHistogram, StreamStats
from simcache.spec import Scenario

__all__ = ["UNFINISHED_COLUMNS", "RecordsNotKept", "Result"]


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
            for key, vms in stream_keys(self, by, with_all=by == "group"):
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
            self._summary = summary_table(self, by="group")
        return self._summary

    def summary_by_vm(self) -> pd.DataFrame:
        """As :attr:`summary`, one row per VM and op."""
        return summary_table(self, by="vm")

    @property
    def breakdown(self) -> pd.DataFrame:
        """Where write latency comes from: mean ms per component per group, and the dominant one."""
        if self._breakdown is None:
            self._breakdown = breakdown_table(self)
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
