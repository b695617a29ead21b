"""A VM's I/O paths as generators of waits: every path an I/O can take, each run by
:meth:`simcache.sim.components.vm.VM.io` (the reference the callback state machines of
:mod:`simcache.sim.components.io_steps` mirror, and the only form of the rarer paths).

Write paths (the acknowledgement the VM waits for):
- WT: the local tier write (cache fill) and, in parallel, transfer to the
  array over the storage network, array write, acknowledgement back.
- WB+N: the local tier write and, for each of N peers, a leg: (optional
  compression), transfer of the payload over the peer network, the peer's
  tier write and the acknowledgement back. The write is acknowledged when the
  slowest leg is done and the destage buffer has accepted it. The group's
  ``replication`` moves the acknowledgement: ``memory`` takes a leg as done
  when the payload is in the peer's RAM (its tier write goes on off the
  path), ``async`` waits for no leg at all (the replicas follow; until the
  first arrives the write is data at risk: :class:`simcache.sim.components.host.ReplicaLag`).
- ``metadata_write``: after its data, a write-back write waits for a metadata
  record on the local tier (:class:`simcache.sim.components.host.MetadataLog`).
- ``sync_serialize``: a VM's writes reach the device one at a time, in issue
  order; the wait counts as local tier time.
- Short of peers (a WB+N VM reaching fewer than N: :mod:`simcache.sim.outages`):
  the group's ``on_peer_loss`` takes the WT path, writes back with the peers
  reached, or waits until they return (the wait counts as local tier time).
- A host's storage link down: WT writes and read misses wait for it before the
  storage network (the wait counts as network time).
Read paths: a hit in the host's read cache is served by the tier; a miss goes
to the array, comes back over the storage network and is inserted into the
tier (costing tier write bandwidth, off the VM's critical path). A VM moved by a
vMotion (:meth:`VM.migrate`) first looks, on a miss, in its old host's cache: a
remote hit sends the request over the peer network, reads the old host's tier and
brings the data back over the peer network, then fills the new host's cache as a
miss does. Its writes drop the copies of their lines that the hosts it left still
cache (stale). A VM restarted by HA
(:meth:`VM.restart`) first waits, on a miss, for the destage of the writes taken over
from its old host that the read overlaps (its destage-wait component).

Latency breakdown: the components of one I/O add up to its latency. For
parallel legs only the critical (slowest) leg is attributed; "network"
includes compression CPU time and the acknowledgement.

Each path is a function of the :class:`~simcache.sim.components.vm.VM` it runs for: it reads the
VM's fields and calls the per-I/O steps the state machines share with it (``begin_write``,
``replicate``, ``record_write``, ...).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from simcache.sim.collect import PATH_REMOTE_HIT, PATH_WRITE
from simcache.sim.components.host import AsyncWrite
from simcache.sim.components.io_steps import ArrayRead, write_components
from simcache.sim.kernel.clock import current_time
from simcache.sim.kernel.signals import Signal, Wait
from simcache.sim.kernel.waits import sleep, succeed

if TYPE_CHECKING:
    from simcache.sim.components.host import Host
    from simcache.sim.components.vm import VM

__all__ = [
    "read_miss",
    "read_path",
    "remote_hit",
    "serialized_write",
    "write_back",
    "write_path",
    "write_short_of_peers",
    "write_through",
]


def write_path(
    vm: VM, number: int, size: int, offset: int, issued: float
) -> Generator[Wait, Any, None]:
    """The write's path: write-through, write-back, or as ``on_peer_loss`` says while short
    of peers."""
    if vm.write_through:
        return write_through(vm, number, size, offset, issued)
    if vm.short_of_peers:
        return write_short_of_peers(vm, number, size, offset, issued)
    return write_back(vm, number, size, offset, issued)


def write_short_of_peers(
    vm: VM, number: int, size: int, offset: int, issued: float
) -> Generator[Wait, Any, None]:
    """A write-back write issued while this VM reaches fewer peers than its policy promises."""
    loss = vm.peer_loss
    loss.written += size
    policy = loss.policy
    if policy == "write_through":
        yield from write_through(vm, number, size, offset, issued)
        if number not in vm.writes_in_flight:  # completed (not cut short by a host failure)
            loss.written_through += size
        return
    if policy == "stall":
        while loss.missing:
            yield loss.back()
        if vm.host.tier_up:
            yield from write_back(vm, number, size, offset, issued)
        # a host (or its tier) that died while its writes stalled sends nothing: the write
        # failed
        else:
            vm.writes_in_flight.pop(number, None)
        return
    loss.degrading()  # degrade: with the peers it reaches (vm.peers)
    dropped = False
    try:
        yield from write_back(vm, number, size, offset, issued)
    except GeneratorExit:
        dropped = True  # (see serialized_write)
        raise
    finally:
        if not dropped:
            loss.degraded(vm.clock)


def serialized_write(vm: VM, number: int, size: int, offset: int) -> Generator[Wait, Any, None]:
    """``sync_serialize``: wait until this VM's earlier writes are done, then write."""
    issued = current_time(vm.clock)
    if vm.serial_writing:
        turn = Signal(None)
        vm.serial_writers.append(turn)
        yield turn
    vm.serial_writing = True
    dropped = False
    try:
        yield from write_path(vm, number, size, offset, issued)
    except GeneratorExit:
        # dropped: its host died while it waited for room in the destage buffer (Destager.fail
        # forgets those writers) and nothing resumes it; closed whenever the last reference goes
        # (at once, or at a garbage collection), it hands its turn to nobody, as the native
        # engine's dropped writer does
        dropped = True
        raise
    finally:
        if not dropped:
            if vm.serial_writers:
                succeed(vm.clock, vm.serial_writers.popleft())
            else:
                vm.serial_writing = False


def write_back(
    vm: VM, number: int, size: int, offset: int, issued: float
) -> Generator[Wait, Any, None]:
    """A write-back write issued at ``issued`` (earlier than now if it waited for its turn:
    ``sync_serialize``)."""
    clock = vm.clock
    host = vm.host
    begun = current_time(clock)
    local_done = vm.begin_write(host, size, offset)
    peers = vm.peers
    lag = AsyncWrite(size) if vm.async_replication and peers else None
    # the copies leave once they are in the send buffer; the acknowledgement waits for that only
    if lag is not None:
        # as chosen at issue (a failure may re-peer the VM while it waits)
        paths = vm.peer_paths
        room = host.replica_lag.room(peers, size, vm.send_buffer)
        if room is not None:
            yield room
            if not host.tier_up:
                # the host died while the write waited: nothing is sent, nothing is recorded
                return
        for peer, path in zip(peers, paths, strict=True):
            event = vm.replicate(peer, path, size).delivered
            assert event.callbacks is not None  # just sent: not delivered yet
            event.callbacks.append(_lag_callback(vm, lag, peer))
        legs = []
    else:
        legs = vm.replicate_all(peers, size)
    if vm.metadata_size:
        if local_done > current_time(clock):
            yield sleep(clock, local_done - current_time(clock))
        if vm.metadata_batched:
            yield host.metadata_log.join(vm.metadata_size)
            local_done = current_time(clock)
        else:
            local_done = host.metadata_log.write(vm.metadata_size)
    finish, critical_peer_tier = local_done, -1.0
    if legs:
        for leg in legs:
            yield leg.delivered
        finish, critical_peer_tier = vm.legs_finish(legs, local_done)
    if finish > current_time(clock):
        yield sleep(clock, finish - current_time(clock))
    acked_at = current_time(clock)
    # the host died (or its tier failed) under this I/O: it failed, nothing is recorded
    if not host.tier_up:
        vm.writes_in_flight.pop(number, None)
        return
    # waited for room in the send buffer: network time
    if lag is not None and acked_at > finish:
        local, network, peer_tier = finish - issued, acked_at - finish, 0.0
    else:
        local, network, peer_tier = write_components(issued, begun, acked_at, critical_peer_tier)
    item = vm.destage_item(peers, offset, size)
    wait = host.destager.admit(item)
    if wait is not None:
        yield wait
        # its tier failed while the write waited for buffer space: the write failed
        if not host.tier_up:
            vm.writes_in_flight.pop(number, None)
            return
    if lag is not None and host.tier_up:
        host.replica_lag.acknowledged(lag, item)
    vm.record_write(number, size, issued, local, network, peer_tier, acked_at)


def _lag_callback(vm: VM, write: AsyncWrite, peer: Host) -> Any:
    """The callback of an asynchronous replica's transfer: tell the host's lag once the copy
    is on ``peer``."""
    lag = vm.host.replica_lag

    def arrived(_: Signal) -> None:
        lag.arrived(write, peer)

    return arrived


def write_through(
    vm: VM, number: int, size: int, offset: int, issued: float
) -> Generator[Wait, Any, None]:
    clock = vm.clock
    host = vm.host
    begun = current_time(clock)
    in_flight = vm.writes_in_flight
    if host.tier_up:
        local_done = host.tier.submit(begun, size, True, vm.gc_factor)
        host.cache.insert(vm.index, offset, size)
    else:  # device_failure: nothing to cache the write in
        local_done = begun
    if vm.moved:
        for left in vm.migration.left:
            left.cache.discard(vm.index, offset, size)
    if host.storage_down:
        yield host.storage_back
    wire, packets = host.storage_tx.framing[size]
    yield host.network.send(
        (host.storage_tx, host.array_rx), wire, packets, latency=host.storage_tx.latency
    )
    arrived = current_time(clock)
    array_done = host.array.submit(arrived, ((vm.index, offset, size),), True)
    acked = array_done + host.storage_tx.acknowledgement
    finish = max(acked, local_done)
    if finish > current_time(clock):
        yield sleep(clock, finish - current_time(clock))
    now = current_time(clock)
    if not host.alive:
        return
    if acked >= local_done:
        record = (begun - issued, (now - begun) - (array_done - arrived), array_done - arrived)
    else:
        record = (now - issued, 0.0, 0.0)
    del in_flight[number]
    if not vm.policy_write_through:
        vm.peer_loss.fell_through += size
    vm.records.add(
        vm.index,
        True,
        size,
        issued,
        now,
        record[0],
        record[1],
        0.0,
        0.0,
        record[2],
        PATH_WRITE,
    )


def read_path(vm: VM, number: int, size: int, offset: int) -> Generator[Wait, Any, None]:
    host = vm.host
    issued, done = vm.begin_read(number, size, offset)
    if done >= 0.0:
        yield sleep(vm.clock, done - issued)
        vm.hit_done(number, size, issued, host)
        return
    yield from read_miss(vm, number, size, offset, issued, host)


def read_miss(
    vm: VM, number: int, size: int, offset: int, issued: float, host: Host
) -> Generator[Wait, Any, None]:
    """A read that missed the host's cache, issued at ``issued`` on ``host``: from the old
    host's cache after a vMotion (a remote hit), else from the array, over the storage
    network."""
    remote = vm.migration.remote
    if remote is not None and host.reaches(remote) and remote.cache.holds(vm.index, offset, size):
        yield from remote_hit(vm, number, size, offset, remote)
        return
    clock = vm.clock
    pending_destage = vm.ha.pending_destage
    if pending_destage is not None:  # restarted: the array is stale until the holders destage
        pending = pending_destage.wait(vm.index, offset, size)
        if pending is not None:
            yield pending
    waited = current_time(clock) - issued
    if host.storage_down:
        yield host.storage_back
    finished = Signal(None)  # processed (not scheduled) when the read is done or failed
    ArrayRead(vm, number, size, offset, issued, host, waited, finished)
    yield finished


def remote_hit(
    vm: VM, number: int, size: int, offset: int, remote: Host
) -> Generator[Wait, Any, None]:
    """A read served by the old host's cache: the request crosses the peer network (one link
    latency), the old host reads its tier and sends the data back; the data fills this host's
    cache as a miss's does (off the path)."""
    clock = vm.clock
    host = vm.host
    issued = current_time(clock)
    host.cache.misses -= 1  # counted as a hit, of the cache that served it
    remote.cache.hits += 1
    yield sleep(clock, vm.peer_latency)
    begun = current_time(clock)
    done = remote.tier.submit(begun, size, False)
    yield sleep(clock, done - begun)
    path = remote.peer_path(host)
    wire, packets = path[0].framing[size]
    yield host.network.send(path, wire, packets, latency=vm.peer_latency)
    now = current_time(clock)
    if not host.alive:
        return
    if host.tier_up:  # fill this host's cache (device_failure: there is none)
        host.tier.submit(now, size, True)
        host.cache.insert(vm.index, offset, size)
    del vm.reads_in_flight[number]
    peer_tier = done - begun
    vm.records.add(
        vm.index,
        False,
        size,
        issued,
        now,
        0.0,
        (now - issued) - peer_tier,
        peer_tier,
        0.0,
        0.0,
        PATH_REMOTE_HIT,
    )
    vm.migration.remote_hit(size, issued)
