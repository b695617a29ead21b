"""The tables of a run's :class:`~simcache.results.result.Result`, read off the run's plain record
(:class:`simcache.sim.record.RunRecord`): records, unfinished I/Os, the series sampled during the
run and the totals."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simcache.base.metrics import HEADLINE_PERCENTILES, PERCENTILES, linear_percentiles
from simcache.sim.collect import records_frame
from simcache.sim.record import RunRecord
from simcache.sim.stream import StreamStats, percentile_of_counts
from simcache.spec import VMotion

__all__ = ["UNFINISHED_COLUMNS", "records_table", "run_totals", "series_table", "unfinished_table"]

UNFINISHED_COLUMNS = ("vm", "group", "host", "op", "issue_s")
"""The columns of :attr:`simcache.results.result.Result.unfinished`."""


def records_table(record: RunRecord) -> pd.DataFrame:
    """One row per completed I/O (see :mod:`simcache.results.result`) from ``record``'s blocks,
    which it consumes."""
    assert record.record_blocks is not None, "a run without records has no records table"
    groups = record.scenario.groups
    # HA restarts and vMotions that moved a VM: (time, VM index, from host, to host), in time order
    changes: list[tuple[float, int, str, str]] = []
    for r in record.restarts:
        changes.append((r["restart_s"], r["vm_index"], r["from_host"], r["to_host"]))
    for m in record.vmotions:
        if "vm_index" in m:  # the VM moved (else the record says why not)
            source, target = f"host{m['source_host']}", f"host{m['target_host']}"
            changes.append((m["moved_s"], m["vm_index"], source, target))
    changes.sort(key=lambda change: change[0])
    first_host = list(record.vm_hosts)
    # a VM that moved started on the host its first move left
    for _, index, from_host, _ in reversed(changes):
        first_host[index] = from_host
    moves = [(index, at, to_host) for at, index, _, to_host in changes]
    group_names = [groups[g].name for g in record.vm_groups]
    return records_frame((), record.vm_names, group_names, first_host, record.record_blocks, moves)


def unfinished_table(record: RunRecord) -> pd.DataFrame:
    """One row per I/O still in flight at the end, in issue order per VM; VMs of failed hosts are
    gone and left out."""
    groups = record.scenario.groups
    unfinished = record.unfinished
    vm = np.asarray(unfinished.vm, dtype=np.intp)
    # categorical columns from the VMs' codes: an overloaded run leaves millions of rows, and a
    # string object a cell took gigabytes (review 65: 1.3 M rows, 0.9 GB at the peak)
    hosts, host_of = np.unique(np.asarray(record.vm_hosts, dtype=object), return_inverse=True)
    names = [group.name for group in groups]
    columns = (
        _coded(vm, record.vm_names),
        _coded(np.asarray(record.vm_groups, dtype=np.intp)[vm], names),
        _coded(host_of[vm], list(hosts)),
        _coded(np.asarray(unfinished.write, dtype=np.intp), ["read", "write"]),
        unfinished.issue_s.astype(float),
    )
    return pd.DataFrame(dict(zip(UNFINISHED_COLUMNS, columns, strict=True)))


def _coded(codes: np.ndarray, categories: Sequence[str]) -> pd.Categorical:
    """A categorical column of ``codes`` into ``categories`` (as the records' columns are)."""
    names: Any = pd.Index(np.asarray(categories, dtype=object))
    return pd.Categorical.from_codes(codes, categories=names)


def series_table(record: RunRecord, records: pd.DataFrame | None) -> pd.DataFrame:
    """One row per sample (see :mod:`simcache.results.result`): the I/O columns from ``records``,
    or from ``record.stream`` for a run without records."""
    samples = record.samples
    times = np.array([s.time_s for s in samples])
    if len(times) == 0:
        return pd.DataFrame()
    starts = np.concatenate(([0.0], times[:-1]))
    widths = times - starts
    columns: dict[str, Any] = {}
    if records is None:
        assert record.stream is not None
        _stream_series(record.stream, len(times), widths, columns)
    else:
        _records_series(records, times, widths, columns)
    columns["destage_backlog_bytes"] = [sum(s.destage_backlog_bytes.values()) for s in samples]
    for host in record.host_names:
        columns[f"backlog.{host}"] = [s.destage_backlog_bytes[host] for s in samples]
    columns["data_at_risk_bytes"] = [s.data_at_risk_bytes for s in samples]
    columns["single_copy_bytes"] = [s.single_copy_bytes for s in samples]
    columns["destage_waiting"] = [s.destage_waiting for s in samples]
    columns["flows_in_flight"] = [s.flows_in_flight for s in samples]
    for label in record.port_labels:
        columns[f"util.{label}"] = [s.port_utilization[label] for s in samples]
    for host in record.host_names:
        columns[f"util.{host}.tier"] = [s.tier_utilization[host] for s in samples]
        columns[f"queue.{host}.tier"] = [s.tier_in_system[host] for s in samples]
    columns["util.array"] = [s.array_utilization for s in samples]
    columns["queue.array"] = [s.array_in_system for s in samples]
    frame = pd.DataFrame(columns, index=pd.Index(times, name="time_s"))
    return frame


def _records_series(
    records: pd.DataFrame, times: np.ndarray, widths: np.ndarray, columns: dict[str, Any]
) -> None:
    """The I/O columns of the series (IOPS, MB/s, p50 and p99 per op of the I/Os completed in each
    interval) from the records.

    The records are in completion order, so each interval's I/Os are one slice of them: no array as
    long as the records is built (a 10-million-I/O run's table is 560 MB; a per-record temporary
    would add 80 MB each).
    """
    complete = records["complete_s"].to_numpy()
    # interval j: times[j - 1] < complete_s <= times[j]
    ends = np.searchsorted(complete, times, side="right")
    starts = np.concatenate(([0], ends[:-1]))
    # categories ("read", "write"): 1
    write_code = list(records["op"].cat.categories).index("write")
    codes = records["op"].cat.codes.to_numpy()
    size = records["size_bytes"].to_numpy()
    latency = records["latency_ms"].to_numpy()
    figures: dict[str, list[float]] = {}
    for op in ("read", "write"):
        for name in ("count", "bytes", *HEADLINE_PERCENTILES):
            figures[f"{op}_{name}"] = []
    # the headline percentiles of a part at once (numpy.percentile's figures, bit for bit)
    wanted = [PERCENTILES[name] for name in HEADLINE_PERCENTILES]
    for lo, hi in zip(starts, ends, strict=True):
        is_write = codes[lo:hi] == write_code
        for op, mine in (("read", ~is_write), ("write", is_write)):
            part = latency[lo:hi][mine]
            figures[f"{op}_count"].append(len(part))
            figures[f"{op}_bytes"].append(
                float(size[lo:hi][mine].sum(dtype=np.float64)) if len(part) else 0.0
            )
            values = linear_percentiles(part, wanted)  # (part is a copy: partitioned here)
            for name, value in zip(HEADLINE_PERCENTILES, values, strict=True):
                figures[f"{op}_{name}"].append(value)
    for op in ("read", "write"):
        columns[f"{op}_iops"] = np.array(figures[f"{op}_count"], dtype=np.int64) / widths
        columns[f"{op}_mb_s"] = np.array(figures[f"{op}_bytes"]) / widths / 1e6
        for name in HEADLINE_PERCENTILES:
            columns[f"{op}_{name}"] = figures[f"{op}_{name}"]


def _stream_series(
    stream: StreamStats, intervals: int, widths: np.ndarray, columns: dict[str, Any]
) -> None:
    """As :func:`_records_series`, from a run's interval counters and histograms (percentiles within
    :data:`~simcache.sim.stream.REL_ERROR`)."""
    parts = stream.intervals[:intervals]
    for o, op in enumerate(("read", "write")):
        columns[f"{op}_iops"] = np.array([part.count[o] for part in parts]) / widths
        columns[f"{op}_mb_s"] = (
            np.array([part.bytes[o] for part in parts], dtype=float) / widths / 1e6
        )
        for name in HEADLINE_PERCENTILES:
            q = PERCENTILES[name]
            columns[f"{op}_{name}"] = [percentile_of_counts(part.histogram(o), q) for part in parts]


def run_totals(record: RunRecord, records: pd.DataFrame | None) -> dict[str, Any]:
    """Cluster-level figures over the whole run (see :mod:`simcache.results.result`): bytes, rates
    (MB/s over the run's duration), packets, I/Os and seconds."""
    duration = record.scenario.run.duration
    if records is not None:
        written, completed = (
            int(records["size_bytes"].to_numpy()[records["op"].cat.codes.to_numpy() == 1].sum()),
            len(records),
        )
    else:
        assert record.stream is not None
        written, completed = record.stream.written_bytes, record.stream.completed
    counters = record.counters
    vmotion_bytes = sum(e.size for e in record.scenario.events if isinstance(e, VMotion))
    payload = counters.replica_payload_bytes
    packets = counters.peer_packets
    return {
        "duration_s": duration,
        "vm_written_bytes": written,
        "destage_accepted_bytes": counters.destage_accepted_bytes,
        "destaged_bytes": counters.destaged_bytes,
        "data_lost_bytes": sum(f["lost_bytes"] for f in record.failures),
        "wb_written_through_bytes": counters.wb_written_through_bytes,
        "ios_unfinished_at_end": counters.issued_ios - completed,
        "destage_backlog_bytes": counters.destage_backlog_bytes,
        "destage_batches": counters.destage_batches,
        "destage_runs": counters.destage_runs,
        "replica_bytes_held": counters.replica_bytes_held,
        "array_written_bytes": counters.array_written_bytes,
        "array_read_bytes": counters.array_read_bytes,
        "array_write_mb_s": counters.array_written_bytes / duration / 1e6,
        "array_front_end_ios": counters.array_front_end_ios,
        "array_back_end_ios": counters.array_back_end_ios,
        "replica_payload_bytes": payload,
        "replica_payload_mb_s": payload / duration / 1e6,
        "peer_wire_bytes": counters.peer_wire_bytes,
        "peer_wire_mb_s": counters.peer_wire_bytes / duration / 1e6,
        "peer_packets": packets,
        "peer_packets_per_payload_mb": packets / (payload / 1e6) if payload else math.nan,
        "storage_wire_bytes": counters.storage_wire_bytes,
        "vmotion_bytes_scheduled": vmotion_bytes,
        "compression_saved_bytes": counters.compression_saved_bytes,
        "tier_gc_wait_s": sum(counters.tier_gc_wait_s_by_host.values()),
        "tier_gc_wait_s_by_host": dict(counters.tier_gc_wait_s_by_host),
        "tier_clean_bytes_by_host": dict(counters.tier_clean_bytes_by_host),
        "tier_ran_dry_s_by_host": dict(counters.tier_ran_dry_s_by_host),
        "cache_hits": counters.cache_hits,
        "cache_misses": counters.cache_misses,
    }
