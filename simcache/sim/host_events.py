"""The scheduled events that move VMs or take hosts and tiers away (``vmotion``,
``host_failure``, ``device_failure``), as processes of a built model, and the HA restart that
follows a host failure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from typing import Any

import simpy

from simcache.physics.cluster import framed_bytes, ring_peers, vmotion_stream_port
from simcache.sim.built import Model
from simcache.sim.components.adopted import PendingDestage
from simcache.sim.components.host import Host
from simcache.sim.components.link import Port
from simcache.sim.components.pending import (
    WRITE_HOLDERS,
    WRITE_OFFSET,
    WRITE_SINGLE,
    WRITE_SIZE,
    WRITE_VM,
    PendingWrite,
)
from simcache.sim.components.vm import VM
from simcache.sim.drivers import start_workload
from simcache.sim.outages import update_all_peers
from simcache.spec import HostFailure, LinkSpec, VMotion
from simcache.spec.events import DeviceFailure

__all__ = ["device_failure", "host_failure", "vmotion", "vmotion_streams"]


def vmotion(model: Model, event: VMotion) -> Generator[simpy.Event, Any, None]:
    """The memory transfer of a vMotion; then, once its last stream has arrived, the move of its VM
    (if it names one).

    The move happens only if the VM still runs on the live source and the target is alive (an HA
    restart or a host failure may have come first); else the record's ``not_moved`` says why.
    """
    env = model.env
    yield env.timeout(event.at)
    source = model.hosts[event.source_host]
    target = model.hosts[event.target_host]
    link, wire, packets, paths = vmotion_streams(model, event)
    nan = float("nan")
    record: dict[str, Any] = {
        "source_host": event.source_host,
        "target_host": event.target_host,
        "start_s": env.now,
        "end_s": nan,
    }
    if event.vm is not None:
        record |= {
            "vm": event.vm,
            "moved_s": nan,
            "remote_hits": 0,
            "remote_hit_bytes": 0,
            "last_remote_hit_s": nan,
        }
        record |= {
            "handover": event.handover,
            "pending_bytes": 0,
            "handed_over_bytes": 0,
            "handover_end_s": nan,
        }
    model.vmotions.append(record)
    transfers = [model.transfer(path, wire, packets, link.latency, event.weight) for path in paths]
    # SimPy sends values in; a list iterator cannot take them
    for transfer in transfers:  # noqa: UP028
        yield transfer
    record["end_s"] = env.now
    if event.vm is None:
        return
    vm = next(vm for vm in model.vms if vm.name == event.vm)
    if not (vm.host is source and source.alive and target.alive):
        why = [
            (not source.alive, "the source host failed"),
            (not target.alive, "the target host failed"),
            (True, "the VM was elsewhere"),
        ]
        record["not_moved"] = next(words for failed, words in why if failed)
        return
    vm.migrate(target, model.hosts, record)
    record["moved_s"] = env.now
    record["vm_index"] = vm.index
    pending = model.untaken(source, vm.index)
    record["pending_bytes"] = sum(item[WRITE_SIZE] for item in pending)
    if event.handover and pending:
        yield from _handover(model, vm.index, source, target, pending, record)


def vmotion_streams(
    model: Model, event: VMotion
) -> tuple[LinkSpec, float, int, list[tuple[Port, ...]]]:
    """A vMotion's memory streams: its source's peer link, each stream's wire bytes and packets
    (the size split evenly), and each stream's path to the target (its own port pair where the
    hosts have several). The Python process and the native engine (``native_run.start_vmotion``)
    send the same."""
    source = model.hosts[event.source_host]
    target = model.hosts[event.target_host]
    link = source.peer_txs[0].spec
    wire, packets = framed_bytes(link, event.size / event.streams)
    links = len(source.peer_txs)
    paths = [source.peer_path(target, vmotion_stream_port(i, links)) for i in range(event.streams)]
    return link, wire, packets, paths


def _handover(
    model: Model,
    vm: int,
    source: Host,
    target: Host,
    items: list[PendingWrite],
    record: dict[str, Any],
) -> Generator[simpy.Event, Any, None]:
    """Send VM ``vm``'s writes ``items`` (untaken in ``source``'s destager at its move) to
    ``target`` over the peer network as one flow; on arrival, those still untaken leave
    ``source``'s destager and join ``target``'s, and are written to ``target``'s tier, off any
    VM's path. Their copies stay as many: where ``target`` held a replica (its copy is now the
    primary), ``source`` keeps its copy as the replica in its place, until ``target`` destages
    it."""
    env = model.env
    link = source.peer_txs[0].spec
    wire, packets = framed_bytes(link, sum(item[WRITE_SIZE] for item in items))
    yield model.transfer(source.peer_path(target), wire, packets, link.latency)
    if not (source.tier_up and target.tier_up):
        # the source's (tier) failure handled them (lost or taken over); a target without a tier
        # takes nothing
        return
    moved = 0
    for item in model.hand_over(source, Counter(item[:3] for item in items), vm):
        if target in item[WRITE_HOLDERS]:
            target.replica_bytes -= item[WRITE_SIZE]
            source.replica_bytes += item[WRITE_SIZE]
            item = (
                item[WRITE_VM],
                item[WRITE_OFFSET],
                item[WRITE_SIZE],
                tuple(source if peer is target else peer for peer in item[WRITE_HOLDERS]),
                item[WRITE_SINGLE],
            )
        model.adopt(target, item)
        if model.pending_destage is not None:
            model.pending_destage.handed_over(
                source.index, target.index, vm, item[WRITE_OFFSET], item[WRITE_SIZE]
            )
        moved += item[WRITE_SIZE]
    if moved:
        target.tier.submit(env.now, moved, True)
    record["handed_over_bytes"] = moved
    record["handover_end_s"] = env.now


def host_failure(model: Model, event: HostFailure) -> Generator[simpy.Event, Any, None]:
    """Kill a host: lose what only it held, hand replicated writes to a surviving holder, re-peer
    its peers' VMs."""
    yield model.env.timeout(event.at)
    host = model.hosts[event.host]
    if not host.alive:
        return
    host.alive = False
    registry = model.pending_destage
    if registry is None and event.restart_delay is not None:
        registry = _pending_destage(model)
    record = _lose_copies(model, host, event, registry)
    for vm in model.vms:
        if vm.host.alive:
            vm.replace_peer(host, model.hosts)
    # the dead host's VMs stop counting; VMs left with no spare peer are short of one
    update_all_peers(model)
    model.failures.append(record)
    if event.restart_delay is not None and registry is not None:
        stopped = [vm for vm in model.vms if vm.host is host]
        for vm in stopped:
            vm.ha.awaiting = True
        yield model.env.timeout(event.restart_delay)
        _ha_restart(model, host, stopped, registry)


def device_failure(model: Model, event: DeviceFailure) -> Generator[simpy.Event, Any, None]:
    """A host's tier fails for good: its data goes as in a host failure, its VMs go on
    write-through, reading the array.

    Their reads of blocks whose newest write a surviving holder took over wait for its destage (the
    array is stale until then: :class:`PendingDestage`, as for VMs restarted by HA).
    """
    yield model.env.timeout(event.at)
    host = model.hosts[event.host]
    if not host.tier_up:
        return
    registry = model.pending_destage or _pending_destage(model)
    record = _lose_copies(model, host, event, registry)
    host.cache.clear()
    for vm in model.vms:
        if vm.host is host:
            vm.tier_failed(registry)
        else:
            vm.replace_peer(host, model.hosts)
    update_all_peers(model)
    model.failures.append(record)


def _pending_destage(model: Model) -> PendingDestage:
    """Start keeping the writes surviving holders take over (:class:`PendingDestage`), for every
    host."""
    registry = model.pending_destage = PendingDestage(model.env)
    for host in model.hosts:
        host.pending_destage = registry
    return registry


def _lose_copies(
    model: Model, host: Host, event: HostFailure | DeviceFailure, registry: PendingDestage | None
) -> dict[str, Any]:
    """``host``'s tier is gone (the host died, or its device failed): each write it had not
    destaged is lost or handed over to its first surviving replica holder, and the replicas it
    held stop counting. Returns the failure's record."""
    host.tier_up = False
    backlog = host.destager.backlog_bytes
    # its VMs never heard back about these: failed I/Os, not lost data
    unacknowledged = host.destager.waiting_bytes
    lost = handed_over = 0
    if registry is not None:
        # what it had taken over is handed over again below, or lost
        model.pending_holder_failed(registry, host)
    for item in model.fail_destager(host):
        vm_index, offset, size = item[WRITE_VM], item[WRITE_OFFSET], item[WRITE_SIZE]
        # none for an asynchronous write still lagging: it is lost
        holders = host.surviving_holders(item)
        if not holders:
            lost += size
            continue
        adopter, others = holders[0], tuple(holders[1:])
        adopter.replica_bytes -= size  # its replica copy is now the primary copy
        model.adopt(adopter, (vm_index, offset, size, others, not others))
        if registry is not None:
            model.pending_add(registry, adopter, vm_index, offset, size)
        handed_over += size
    host.replica_bytes = 0  # replicas of other hosts' data held here are gone
    for other in model.hosts:
        if other.tier_up:
            model.peer_failed(other, host)
    return {
        "kind": event.kind,
        "host": event.host,
        "at_s": model.env.now,
        "backlog_bytes": backlog,
        "lost_bytes": lost,
        "handed_over_bytes": handed_over,
        "unacknowledged_bytes": unacknowledged,
    }


def _ha_restart(model: Model, failed: Host, vms: list[VM], registry: PendingDestage) -> None:
    """HA restarts ``vms`` (stopped with ``failed``) on the live hosts, round-robin in ring order
    from ``failed``.

    Round-robin spreads them as vSphere HA does over equal hosts (it places each VM on the host with
    the most unreserved capacity), so no survivor takes a whole host's load; the first goes to the
    ring's next live host, which under ring peer selection is the holder of its replicas. With no
    live host left they stay down.
    """
    hosts = model.hosts
    # a host without its tier runs no write-back VM
    live = [hosts[i] for i in ring_peers(failed.index, len(hosts)) if hosts[i].tier_up]
    now = model.env.now
    for k, vm in enumerate(vms):
        if not live:
            vm.ha.awaiting = False  # nowhere to run: its open loop ends at its next arrival
            continue
        target = live[k % len(live)]
        vm.restart(target, hosts, registry)
        if model.native is not None:  # its new closed-loop slots the engine's
            model.native.restart(model.clock, vm.index)
        else:
            start_workload(model.env, vm, restarted=True)
        model.restarts.append(
            {
                "vm": vm.name,
                "vm_index": vm.index,
                "from_host": failed.name,
                "to_host": target.name,
                "restart_s": now,
            }
        )
