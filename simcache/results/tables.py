"""The tables a run's :class:`~simcache.results.result.Result` is built from, read off the finished model: records,
unfinished I/Os, the series sampled during the run, the degraded VMs and the totals."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simcache.base.metrics import HEADLINE_PERCENTILES, PERCENTILES
from simcache.sim.collect import records_frame
from simcache.sim.stream import StreamStats, percentile_of_counts
from simcache.spec import VMotion

if TYPE_CHECKING:
    from simcache.sim.engine import Model

__all__ = ["UNFINISHED_COLUMNS", "degraded_vms", "records_table", "run_totals", "series_table", "unfinished_table"]

UNFINISHED_COLUMNS = ("vm", "group", "host", "op", "issue_s")
"""The columns of :attr:`simcache.results.result.Result.unfinished`."""


def records_table(model: Model) -> pd.DataFrame:
    vms = model.vms
    groups = model.scenario.groups
    # HA restarts and vMotions, in time order: (time, VM index, from host, to host)
    changes = [(r["restart_s"], r["vm_index"], r["from_host"], r["to_host"]) for r in model.restarts]
    changes += [
        (m["moved_s"], m["vm_index"], f"host{m['source_host']}", f"host{m['target_host']}") for m in model.vmotions if "vm_index" in m
    ]
    changes.sort(key=lambda change: change[0])
    first_host = [vm.host.name for vm in vms]
    for _, index, from_host, _ in reversed(changes):  # a VM that moved started on the host its first move left
        first_host[index] = from_host
    moves = [(index, at, to_host) for at, index, _, to_host in changes]
    model.hand_on_records()
    return records_frame((), [vm.name for vm in vms], [groups[vm.group].name for vm in vms], first_host, model.record_blocks, moves)


def unfinished_table(model: Model) -> pd.DataFrame:
    """One row per I/O still in flight at the end, in issue order per VM; VMs of failed hosts are gone and left out."""
    groups = model.scenario.groups
    rows = [
        (vm.name, groups[vm.group].name, vm.host.name, op, issued)
        for vm in model.vms
        if vm.host.alive
        for op, in_flight in (("read", vm.reads_in_flight), ("write", vm.writes_in_flight))
        for issued in in_flight.values()
    ]
    return pd.DataFrame(rows, columns=list(UNFINISHED_COLUMNS)).astype({"issue_s": float})


def series_table(model: Model, records: pd.DataFrame | None, stream: StreamStats | None = None) -> pd.DataFrame:
    samples = model.samples
    times = np.array([s.time_s for s in samples])
    if len(times) == 0:
        return pd.DataFrame()
    starts = np.concatenate(([0.0], times[:-1]))
    widths = times - starts
    columns: dict[str, Any] = {}
    if records is None:
        assert stream is not None
        _stream_series(stream, len(times), widths, columns)
    else:
        _records_series(records, times, widths, columns)
    columns["destage_backlog_bytes"] = [sum(s.destage_backlog_bytes.values()) for s in samples]
    for host in model.hosts:
        columns[f"backlog.{host.name}"] = [s.destage_backlog_bytes[host.name] for s in samples]
    columns["data_at_risk_bytes"] = [s.data_at_risk_bytes for s in samples]
    columns["single_copy_bytes"] = [s.single_copy_bytes for s in samples]
    columns["destage_waiting"] = [s.destage_waiting for s in samples]
    columns["flows_in_flight"] = [s.flows_in_flight for s in samples]
    for port in model.ports:
        columns[f"util.{port.label}"] = [s.port_utilization[port.label] for s in samples]
    for host in model.hosts:
        columns[f"util.{host.name}.tier"] = [s.tier_utilization[host.name] for s in samples]
        columns[f"queue.{host.name}.tier"] = [s.tier_in_system[host.name] for s in samples]
    columns["util.array"] = [s.array_utilization for s in samples]
    columns["queue.array"] = [s.array_in_system for s in samples]
    frame = pd.DataFrame(columns, index=pd.Index(times, name="time_s"))
    return frame


def _records_series(records: pd.DataFrame, times: np.ndarray, widths: np.ndarray, columns: dict[str, Any]) -> None:
    """The I/O columns of the series (IOPS, MB/s, p50 and p99 per op of the I/Os completed in each interval) from the records.

    The records are in completion order, so each interval's I/Os are one slice of them: no array as long as the
    records is built (a 10-million-I/O run's table is 560 MB; a per-record temporary would add 80 MB each).
    """
    complete = records["complete_s"].to_numpy()
    ends = np.searchsorted(complete, times, side="right")  # interval j: times[j - 1] < complete_s <= times[j]
    starts = np.concatenate(([0], ends[:-1]))
    write_code = list(records["op"].cat.categories).index("write")  # categories ("read", "write"): 1
    codes = records["op"].cat.codes.to_numpy()
    size = records["size_bytes"].to_numpy()
    latency = records["latency_ms"].to_numpy()
    figures: dict[str, list[float]] = {}
    for op in ("read", "write"):
        for name in ("count", "bytes", *HEADLINE_PERCENTILES):
            figures[f"{op}_{name}"] = []
    for lo, hi in zip(starts, ends, strict=True):
        is_write = codes[lo:hi] == write_code
        for op, mine in (("read", ~is_write), ("write", is_write)):
            part = latency[lo:hi][mine]
            figures[f"{op}_count"].append(len(part))
            figures[f"{op}_bytes"].append(float(size[lo:hi][mine].sum(dtype=np.float64)) if len(part) else 0.0)
            for name in HEADLINE_PERCENTILES:
                figures[f"{op}_{name}"].append(float(np.percentile(part, PERCENTILES[name])) if len(part) else math.nan)
    for op in ("read", "write"):
        columns[f"{op}_iops"] = np.array(figures[f"{op}_count"], dtype=np.int64) / widths
        columns[f"{op}_mb_s"] = np.array(figures[f"{op}_bytes"]) / widths / 1e6
        for name in HEADLINE_PERCENTILES:
            columns[f"{op}_{name}"] = figures[f"{op}_{name}"]


def _stream_series(stream: StreamStats, intervals: int, widths: np.ndarray, columns: dict[str, Any]) -> None:
    """As :func:`_records_series`, from a run's interval counters and histograms (percentiles within :data:`~simcache.sim.stream.REL_ERROR`)."""
    parts = stream.intervals[:intervals]
    for o, op in enumerate(("read", "write")):
        columns[f"{op}_iops"] = np.array([part.count[o] for part in parts]) / widths
        columns[f"{op}_mb_s"] = np.array([part.bytes[o] for part in parts], dtype=float) / widths / 1e6
        for name in HEADLINE_PERCENTILES:
            q = PERCENTILES[name]
            columns[f"{op}_{name}"] = [percentile_of_counts(part.histogram(o), q) for part in parts]


def degraded_vms(model: Model) -> list[dict[str, Any]]:
    """The write-back VMs that were ever short of the peers their policy promises: for how long (s), the bytes they
    issued meanwhile, of those the bytes completed write-through (not in a destage buffer), and the bytes of theirs
    re-replicated when peers returned."""
    end = model.scenario.run.duration
    return [
        {
            "vm": vm.name,
            "host": vm.host.name,
            "on_peer_loss": vm.on_peer_loss,
            "degraded_s": vm.degraded_seconds(end),
            "degraded_written_bytes": vm.degraded_written,
            "written_through_bytes": vm.written_through,
            "resync_bytes": vm.resync_bytes,
        }
        for vm in model.vms
        if vm.degraded_since is not None or vm.degraded_s > 0
    ]


def run_totals(model: Model, records: pd.DataFrame | None, stream: StreamStats | None = None) -> dict[str, Any]:
    duration = model.scenario.run.duration
    if records is not None:
        written, completed = int(records["size_bytes"].to_numpy()[records["op"].cat.codes.to_numpy() == 1].sum()), len(records)
    else:
        assert stream is not None
        written, completed = stream.written_bytes, stream.completed
    peer_bytes = sum(sum(port.carried_bytes for port in host.peer_txs) for host in model.hosts)
    vmotion_bytes = sum(e.size for e in model.scenario.events if isinstance(e, VMotion))
    payload = sum(h.replica_payload_sent for h in model.hosts)
    packets = sum(sum(port.packets for port in h.peer_txs) for h in model.hosts)
    storage_bytes = sum(host.storage_tx.carried_bytes + host.storage_rx.carried_bytes for host in model.hosts)
    return {
        "duration_s": duration,
        "vm_written_bytes": written,
        "destage_accepted_bytes": sum(h.destager.accepted_bytes for h in model.hosts),
        "destaged_bytes": sum(h.destager.destaged_bytes for h in model.hosts),
        "data_lost_bytes": sum(f["lost_bytes"] for f in model.failures),
        "wb_written_through_bytes": sum(vm.fell_through for vm in model.vms),
        "ios_unfinished_at_end": sum(vm.issued for vm in model.vms) - completed,
        "destage_backlog_bytes": sum(h.destager.backlog_bytes for h in model.hosts),
        "destage_batches": sum(h.destager.batches for h in model.hosts),
        "destage_runs": sum(h.destager.runs for h in model.hosts),
        "replica_bytes_held": sum(h.replica_bytes for h in model.hosts),
        "array_written_bytes": model.array.bytes_written,
        "array_read_bytes": model.array.bytes_read,
        "array_write_mb_s": model.array.bytes_written / duration / 1e6,
        "array_front_end_ios": model.array.front_end_ios,
        "array_back_end_ios": model.array.back_end_ios,
        "replica_payload_bytes": payload,
        "replica_payload_mb_s": payload / duration / 1e6,
        "peer_wire_bytes": peer_bytes,
        "peer_wire_mb_s": peer_bytes / duration / 1e6,
        "peer_packets": packets,
        "peer_packets_per_payload_mb": packets / (payload / 1e6) if payload else math.nan,
        "storage_wire_bytes": storage_bytes,
        "vmotion_bytes_scheduled": vmotion_bytes,
        "compression_saved_bytes": sum(vm.compressed_bytes_saved for vm in model.vms),
        "tier_gc_wait_s": sum(h.tier.gc_wait_seconds for h in model.hosts),
        "tier_gc_wait_s_by_host": {h.name: h.tier.gc_wait_seconds for h in model.hosts},
        "cache_hits": sum(h.cache.hits for h in model.hosts),
        "cache_misses": sum(h.cache.misses for h in model.hosts),
    }
