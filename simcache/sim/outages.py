"""Links that go down while hosts stay up (``peer_loss``, ``link_down``), and the resync when peers
return.

A host whose peer ports are down reaches no peer and no host reaches it
(:meth:`Host.reaches`); every VM then recomputes the peers it reaches
(:meth:`VM.update_peers`), and a write-back VM short of the peers its policy
promises follows its group's ``on_peer_loss``. A host's storage port down
holds its destage batches, write-through writes and read misses before the
storage network until it returns.

Resync (``on_peer_loss = "degrade"``): when peers return, each host copies the
writes still in its destage buffer that have fewer replicas than their VM's
policy promises to the peers they lack, one flow per (host, peer) on the peer
network, competing with the VMs' traffic. When a flow lands, the writes it
carried that are still buffered count that peer as a holder (a single copy no
more: data at risk falls). Writes destaged meanwhile were copied for nothing;
their bytes are resync bytes all the same. The peer's tier write of the copies
is not modelled (the network is the contended part). Under
``replication = "async"`` only the writes left with no replica are resynced
(the others are keyed by their peers in the host's replica lag).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Generator
from typing import Any

import simpy

from simcache.physics.cluster import framed_bytes
from simcache.sim.built import Model
from simcache.sim.components.host import Host
from simcache.sim.components.pending import WRITE_HOLDERS, WRITE_SIZE, WRITE_VM, PendingWrite
from simcache.sim.kernel.signals import Signal
from simcache.sim.kernel.waits import succeed
from simcache.spec import LinkDown, Outage

__all__ = ["outage", "update_all_peers"]


def outage(model: Model, event: Outage) -> Generator[simpy.Event, Any, None]:
    """Take ``event.host``'s peer or storage port down at ``event.at`` for ``event.duration``
    seconds."""
    env = model.env
    yield env.timeout(event.at)
    host = model.hosts[event.host]
    storage = isinstance(event, LinkDown) and event.link == "storage"
    record: dict[str, Any] = {
        "kind": event.kind,
        "host": event.host,
        "link": "storage" if storage else "peer",
        "start_s": env.now,
        "end_s": math.nan,
        "backlog_at_start_bytes": host.destager.backlog_bytes,
        "backlog_at_end_bytes": math.nan,
    }
    model.outages.append(record)
    if storage:
        host.storage_down += 1
    else:
        host.peer_down += 1
        update_all_peers(model)
    yield env.timeout(event.duration)
    record["end_s"] = env.now
    record["backlog_at_end_bytes"] = host.destager.backlog_bytes
    if storage:
        host.storage_down -= 1
        if not host.storage_down:
            if model.native is not None:  # what waits for the port is the native engine's
                model.native.storage_back(event.host, model.clock)
            else:
                succeed(model.clock, host.storage_back)
            host.storage_back = Signal(None)
        return
    host.peer_down -= 1
    update_all_peers(model)
    for other in model.hosts:
        if other.tier_up and other.index not in model.resyncing:
            model.resyncing.add(other.index)
            env.process(_resync(model, other))


def update_all_peers(model: Model) -> None:
    """Every VM recomputes the peers it reaches (a link went down or came back, a host died)."""
    for vm in model.vms:
        vm.update_peers()


def _resync(model: Model, host: Host) -> Generator[Any, Any, None]:
    """Copy ``host``'s buffered writes short of replicas to the peers they lack, until none is left
    to copy.

    A SimPy process that waits for SimPy events (the flows, ``simpy.AllOf``) and for a VM's kernel
    :class:`Signal` (``peer_loss.settled()``): a process waits for anything with SimPy's
    ``callbacks`` list, which a Signal has."""
    env = model.env
    try:
        while host.tier_up:
            for vm in model.vms:
                if vm.host is host:
                    settled = vm.peer_loss.settled()
                    if settled is not None:
                        yield settled  # its writes issued short of peers are in the buffer now
            copies = _copies_due(model, host)
            if not copies:
                return
            flows = []
            for peer, items in copies.items():
                nbytes = sum(item[WRITE_SIZE] * count for item, count in items.items())
                record: dict[str, Any] = {
                    "host": host.index,
                    "peer": peer.index,
                    "start_s": env.now,
                    "end_s": math.nan,
                    "bytes": nbytes,
                }
                model.resyncs.append(record)
                link = host.peer_txs[0].spec
                wire, packets = framed_bytes(link, nbytes)
                flow = model.transfer(host.peer_path(peer), wire, packets, link.latency)
                flow.callbacks.append(_landed(model, host, peer, items, record))
                flows.append(flow)
            yield simpy.AllOf(env, flows)
    finally:
        model.resyncing.discard(host.index)


def _copies_due(model: Model, host: Host) -> dict[Host, Counter[PendingWrite]]:
    """The buffered writes of ``host``'s degrading VMs that lack replicas their VM reaches now,
    by peer to copy to."""
    due: dict[Host, Counter[PendingWrite]] = defaultdict(Counter)
    tracked = host.replica_lag.tracking
    for item in model.buffered(host):
        vm = model.vms[item[WRITE_VM]]
        loss = vm.peer_loss
        held = item[WRITE_HOLDERS]
        if (
            vm.host is not host
            or loss.policy != "degrade"
            or len(held) >= loss.promised
            or (tracked and held)
        ):
            continue
        lacking = [peer for peer in vm.peers if peer not in held][: loss.promised - len(held)]
        for peer in lacking:
            due[peer][item] += 1
            loss.resync_bytes += item[WRITE_SIZE]
    return due


def _landed(
    model: Model, host: Host, peer: Host, items: Counter[PendingWrite], record: dict[str, Any]
) -> Any:
    """The callback of a resync flow: the writes it carried that are still buffered now have
    ``peer``'s copy."""

    def landed(_: simpy.Event) -> None:
        record["end_s"] = model.env.now
        if host.tier_up and peer.tier_up:
            peer.replica_bytes += model.add_holder(host, items, peer)

    return landed
