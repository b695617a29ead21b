"""A finished run's figures as a plain record (:func:`record_run`): the counters the hosts, VMs
and the array kept, the I/Os still in flight, the scheduled events' outcomes. The results layer
reads the :class:`~simcache.sim.record.RunRecord`, never the model;
:func:`simcache.sim.engine.run_scenario` calls this once, after the run's last sample.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simcache.base.version import __version__
from simcache.sim.built import Model
from simcache.sim.components.vm import VM
from simcache.sim.record import RunCounters, RunRecord, UnfinishedIOs
from simcache.spec import Scenario

__all__ = ["record_run"]


def record_run(
    model: Model,
    *,
    seed: int,
    wall_time_s: float,
    events: int,
    planned: Scenario | None = None,
    stopped_at_s: float | None = None,
    stop_reason: str | None = None,
    run_by: str = "Python",
    warmup_cut: str | None = None,
) -> RunRecord:
    """The figures of the run of ``model`` (run up to ``model.scenario``'s duration) as plain data.

    Hands the records still buffered on to the blocks or the histograms (closing the histograms'
    last interval at the last sample): call it once, after the last sample. ``wall_time_s``
    (seconds) and ``events`` are the run's cost; ``planned`` is the scenario as asked for when the
    run stopped at ``stopped_at_s`` (seconds) for ``stop_reason`` (default ``model.scenario``: a
    run that reached its end); ``run_by`` says which engine ran it
    (:func:`simcache.sim.native_run.choose`); ``warmup_cut`` what a ``duration`` asked for did to
    the file's warm-up (:meth:`simcache.spec.Scenario.warmup_cut`).
    """
    scenario = model.scenario
    stream = model.stream
    if stream is not None and model.samples:
        stream.close_interval(model.samples[-1].time_s)
    model.hand_on_records()
    vms = model.vms
    hosts = model.hosts
    return RunRecord(
        scenario=scenario,
        planned=planned if planned is not None else scenario,
        seed=seed,
        version=__version__,
        wall_time_s=wall_time_s,
        events=events,
        stopped_at_s=stopped_at_s,
        stop_reason=stop_reason,
        record_blocks=model.record_blocks if stream is None else None,
        stream=stream,
        vm_names=[vm.name for vm in vms],
        vm_groups=[vm.group for vm in vms],
        vm_hosts=[vm.host.name for vm in vms],
        unfinished=_unfinished(vms),
        host_names=[host.name for host in hosts],
        port_labels=[port.label for port in model.ports],
        samples=model.samples,
        counters=_counters(model),
        degraded_vms=_degraded_vms(vms, scenario.run.duration),
        vmotions=model.vmotions,
        failures=model.failures,
        outages=model.outages,
        degradations=model.degradations,
        resyncs=model.resyncs,
        restarts=[_with_dropped(restart, vms) for restart in model.restarts],
        run_by=run_by,
        warmup_cut=warmup_cut,
    )


def _unfinished(vms: list[VM]) -> UnfinishedIOs:
    """Every I/O in flight at the end, in issue order per VM (its reads, then its writes); VMs of
    failed hosts are left out."""
    counts: list[int] = []
    writes: list[bool] = []
    numbers: list[int] = []
    times: list[np.ndarray] = [np.empty(0)]
    for vm in vms:
        if not vm.host.alive:
            continue
        for write, in_flight in ((False, vm.reads_in_flight), (True, vm.writes_in_flight)):
            if in_flight:
                count = len(in_flight)
                counts.append(count)
                writes.append(write)
                numbers.append(vm.index)
                times.append(np.fromiter(in_flight.values(), np.float64, count))
    return UnfinishedIOs(
        vm=np.repeat(np.array(numbers, dtype=np.int32), counts),
        write=np.repeat(np.array(writes, dtype=bool), counts),
        issue_s=np.concatenate(times),
    )


def _counters(model: Model) -> RunCounters:
    """The cluster's counters at the end of the run, summed over hosts and VMs in build order."""
    hosts = model.hosts
    vms = model.vms
    array = model.array
    end = model.scenario.run.duration
    storage_bytes = sum(h.storage_tx.carried_bytes + h.storage_rx.carried_bytes for h in hosts)
    clean = {h.name: h.tier.clean_pool_bytes(end) for h in hosts}  # inf: no clean pool
    return RunCounters(
        issued_ios=sum(vm.issued for vm in vms),
        destage_accepted_bytes=sum(h.destager.accepted_bytes for h in hosts),
        destaged_bytes=sum(h.destager.destaged_bytes for h in hosts),
        destage_backlog_bytes=sum(h.destager.backlog_bytes for h in hosts),
        destage_batches=sum(h.destager.batches for h in hosts),
        destage_runs=sum(h.destager.runs for h in hosts),
        replica_bytes_held=sum(h.replica_bytes for h in hosts),
        wb_written_through_bytes=sum(vm.peer_loss.fell_through for vm in vms),
        array_written_bytes=array.bytes_written,
        array_read_bytes=array.bytes_read,
        array_front_end_ios=array.front_end_ios,
        array_back_end_ios=array.back_end_ios,
        replica_payload_bytes=sum(h.replica_payload_sent for h in hosts),
        peer_wire_bytes=sum(sum(port.carried_bytes for port in h.peer_txs) for h in hosts),
        peer_packets=sum(sum(port.packets for port in h.peer_txs) for h in hosts),
        storage_wire_bytes=storage_bytes,
        compression_saved_bytes=sum(vm.compressed_bytes_saved for vm in vms),
        tier_gc_wait_s_by_host={h.name: h.tier.gc_wait_seconds for h in hosts},
        tier_ran_dry_s_by_host={h.name: h.tier.ran_dry_at for h in hosts if h.tier.ran_dry_at >= 0},
        tier_clean_bytes_by_host={h: b for h, b in clean.items() if math.isfinite(b)},
        cache_hits=sum(h.cache.hits for h in hosts),
        cache_misses=sum(h.cache.misses for h in hosts),
    )


def _with_dropped(restart: dict[str, Any], vms: list[VM]) -> dict[str, Any]:
    """An HA restart's record with the open-loop arrivals its VM dropped while down."""
    return {**restart, "dropped_arrivals": vms[restart["vm_index"]].ha.dropped_arrivals}


def _degraded_vms(vms: list[VM], end: float) -> list[dict[str, Any]]:
    """The write-back VMs that were ever short of the peers their policy promises: for how long up
    to ``end`` (s), the bytes they issued meanwhile, of those the bytes completed write-through
    (not in a destage buffer), and the bytes of theirs re-replicated when peers returned."""
    return [
        {
            "vm": vm.name,
            "host": vm.host.name,
            "on_peer_loss": vm.peer_loss.policy,
            "degraded_s": vm.peer_loss.seconds(end),
            "degraded_written_bytes": vm.peer_loss.written,
            "written_through_bytes": vm.peer_loss.written_through,
            "resync_bytes": vm.peer_loss.resync_bytes,
        }
        for vm in vms
        if vm.peer_loss.ever_short()
    ]
