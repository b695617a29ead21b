"""A VM: its I/O stream, its caching policy and the path each I/O takes.

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
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import simpy

from simcache.physics.cluster import (
    ack_seconds,
    compression_seconds,
    ring_peers,
    write_gc_factor,
    write_run_bytes,
)
from simcache.sim.collect import PATH_HIT, PATH_MISS, PATH_REMOTE_HIT, PATH_WRITE, RecordBuffer
from simcache.sim.components.adopted import PendingDestage
from simcache.sim.components.host import AsyncWrite, Host
from simcache.sim.components.io_steps import (
    ArrayRead,
    ReadHit,
    ReplicaLeg,
    WriteBack,
    write_components,
)
from simcache.sim.components.link import Port
from simcache.sim.components.pending import PendingWrite
from simcache.sim.components.vm_state import HaRestart, Migration, PeerLoss
from simcache.sim.kernel.clock import clock_of, current_time, schedule_at
from simcache.sim.kernel.detached import run_detached
from simcache.sim.kernel.signals import Signal, Wait, process_now
from simcache.sim.kernel.waits import sleep, succeed
from simcache.spec import CompressionSpec, Group
from simcache.workloads.generators import IOStream
from simcache.workloads.replay import TraceStream

__all__ = ["VM"]


class VM:
    """One VM: starts its I/Os (:meth:`start`, :meth:`io`) on its host and records them when done.

    Besides its paths' constants it holds one object per concern outside the plain I/O path (their
    fields and contracts: :mod:`simcache.sim.components.vm_state`): :attr:`peer_loss`,
    :attr:`migration` and :attr:`ha`, changed through its methods (:meth:`update_peers`,
    :meth:`replace_peer`, :meth:`migrate`, :meth:`restart`, :meth:`tier_failed`), which also keep
    the plain fields its I/O path tests on every I/O.
    """

    def __init__(
        self,
        env: simpy.Environment,
        index: int,
        name: str,
        group: int,
        host: Host,
        peers: tuple[Host, ...],
        write_through: bool,
        stream: IOStream | TraceStream,
        compression: CompressionSpec,
        records: RecordBuffer,
        spec: Group | None = None,
    ):
        self.env = env
        self.clock = clock_of(env)
        self.index = index
        self.name = name
        self.group = group
        self.host = host
        self.peers = peers
        self.write_through = write_through
        """Writes go to the array before they are acknowledged: the group's policy is WT, or the
        host's tier failed."""
        self.policy_write_through = write_through
        """The group's policy is WT (a VM that moves to a host with a working tier writes back
        again unless so)."""
        self.stream = stream
        self.compression = compression
        self._compressibility = stream.workload.compressibility
        self._may_compress = compression.mode != "off" and self._compressibility > 0
        self._always_compress = compression.mode == "always"
        self._records = records
        self.compressed_bytes_saved = 0.0
        # adaptive mode: peer ports on which this VM compressed its last replica
        self._compressing: set[Port] = set()
        self.issued = 0  # I/Os started (recorded ones plus those unfinished at the end)
        # I/Os issued and not yet recorded, by op: issue number -> issue time (s). Read at the end
        # of a run for the unfinished I/Os (censored latencies); one dict insert and delete per I/O,
        # about 1% of its cost.
        self.reads_in_flight: dict[int, float] = {}
        self.writes_in_flight: dict[int, float] = {}
        link = host.peer_txs[0].spec
        self._peer_latency = link.latency
        self._peer_paths = tuple(host.peer_path(peer) for peer in peers)
        self._ack_time = ack_seconds(link)
        replication = "sync" if spec is None else spec.replication
        self._async = replication == "async"
        self._send_buffer = 0 if spec is None else spec.replication_buffer
        self._memory_ack = replication == "memory"
        self._metadata_size = spec.metadata_size if spec is not None and spec.metadata_write else 0
        self._metadata_batched = spec is not None and spec.metadata_batched
        self._serialize = stream.workload.sync_serialize
        workload = stream.workload
        run_bytes = write_run_bytes(
            workload.access, workload.sequential_run, workload.op_mean_size(True)
        )
        self.gc_factor = write_gc_factor(host.tier.spec, run_bytes)
        """Share of its writes' bytes a tier's clean pool is charged (sequential runs cost
        garbage collection less)."""
        self._writing = False  # sync_serialize: a write of this VM is on its way to the device
        # sync_serialize: writes waiting for it, in issue order
        self._writers: deque[Signal] = deque()
        promised, on_peer_loss = (
            (spec.replicas, spec.on_peer_loss)
            if spec is not None
            else (len(peers), "write_through")
        )
        self.peer_loss = PeerLoss(peers, promised, on_peer_loss)
        """Its promised peers and its time short of them (peer_loss, link_down, host_failure:
        simcache.sim.outages)."""
        self.migration = Migration()
        """Where it moved by vMotion (:meth:`migrate`): the old host's cache, the hosts holding
        stale lines of it."""
        self.ha = HaRestart()
        """Its HA restarts (:meth:`restart`) and the taken-over writes its read misses wait for."""
        # What the I/O path tests on every I/O, kept here as plain fields (one attribute read, not
        # two, on the common path: simcache.sim.components.vm_state), set only by the methods that
        # change the objects above.
        self.short_of_peers = False
        """``peer_loss.missing > 0``: its write-back writes follow ``on_peer_loss``
        (:meth:`update_peers`)."""
        self.moved = False
        """``migration.left`` is not empty: its writes drop stale lines on the hosts it left
        (:meth:`migrate`)."""
        self.read_detour = False
        """A read miss may not go straight to the array: ``migration.remote`` or
        ``ha.pending_destage`` is set."""
        self.life = 0
        """``ha.count``: a closed-loop slot runs while it is unchanged
        (:mod:`simcache.sim.drivers`)."""
        # bound once, not per read hit
        self._hit_served_callback: Callable[[Signal], None] = self._hit_served

    def replace_peer(self, failed: Host, hosts: list[Host]) -> None:
        """Replicate to another live host instead of ``failed`` (the next one around the ring).

        With no live host left to take its place, the VM is short of a peer (:meth:`update_peers`).
        """
        loss = self.peer_loss
        if failed not in loss.chosen:
            return
        kept = [peer for peer in loss.chosen if peer is not failed]
        ring = (hosts[i] for i in ring_peers(self.host.index, len(hosts)))
        spare = next((h for h in ring if h.tier_up and h not in kept), None)
        loss.chosen = tuple(kept + ([spare] if spare is not None else []))
        self.update_peers()

    def restart(self, host: Host, hosts: list[Host], pending_destage: PendingDestage) -> None:
        """HA: run on ``host`` from now on, its host having died (a cold restart: nothing of it is
        in ``host``'s cache).

        Its peers are re-chosen as :meth:`replace_peer` does for a failed one: the live chosen peers
        other than ``host`` stay, the others give way to the next live hosts around the ring from
        ``host``. The I/Os it had in flight failed with its old host. Its read misses first wait for
        the destage of the writes surviving holders took over from its old host
        (``pending_destage``, :mod:`simcache.sim.components.adopted`).
        """
        self.host = host
        ha = self.ha
        ha.awaiting = False
        ha.count += 1
        self.life = ha.count
        ha.pending_destage = pending_destage
        self.migration.restarted(host)  # a cold restart: no cache of it anywhere is reached for
        self._moved_or_waiting()
        self._on_host(host)
        self.reads_in_flight.clear()
        self.writes_in_flight.clear()
        self._writing = False
        self._writers.clear()
        for peer in self.peer_loss.chosen:
            if peer is host or not peer.tier_up:
                self.replace_peer(peer, hosts)
        self.peers = ()  # the paths start from the new host
        self._peer_paths = ()
        self.update_peers()

    def migrate(self, target: Host, hosts: list[Host], move: dict[str, Any]) -> None:
        """vMotion: run on ``target`` from now on (its memory image has arrived there).

        Its I/Os in flight finish on the old host, and the old host destages its buffered writes
        (unless the engine hands them over: :func:`simcache.sim.host_events._handover`). New writes
        take ``target``'s tier, destager and peers (write-back again, under a write-back policy, if
        it wrote through because the old host's tier had failed): the next ``promised`` live hosts
        around the ring from ``target``, as a VM placed there under ring peer selection has (under
        random selection too: the draw is made at placement only). Reads that miss ``target``'s
        cache look in the old host's (``migration.remote``) while it is alive and reachable: remote
        hits, counted in ``move`` (``remote_hits``, ``remote_hit_bytes``, ``last_remote_hit_s``).
        """
        self.migration.moved(self.host, target, move)
        self._moved_or_waiting()
        self.host = target
        # a failed tier stays behind on the old host
        self.write_through = self.policy_write_through or not target.tier_up
        self._on_host(target)
        ring = [hosts[i] for i in ring_peers(target.index, len(hosts)) if hosts[i].tier_up]
        self.peer_loss.chosen = tuple(ring[: self.peer_loss.promised])
        self.peers = ()  # the paths start from the new host
        self._peer_paths = ()
        self.update_peers()

    def tier_failed(self, pending_destage: PendingDestage) -> None:
        """Its host's tier failed for good (``device_failure``): it writes through from now on,
        and its read misses wait for the destage of the writes surviving holders took over
        (``pending_destage``)."""
        self.write_through = True
        self.ha.pending_destage = pending_destage
        self._moved_or_waiting()

    def _moved_or_waiting(self) -> None:
        """Set the I/O path's plain fields ``moved`` and ``read_detour`` from :attr:`migration`
        and :attr:`ha`."""
        migration = self.migration
        self.moved = bool(migration.left)
        self.read_detour = migration.remote is not None or self.ha.pending_destage is not None

    def _on_host(self, host: Host) -> None:
        """The per-host constants of its paths, for a VM that now runs on ``host``."""
        link = host.peer_txs[0].spec
        self._peer_latency = link.latency
        self._ack_time = ack_seconds(link)
        self._compressing.clear()

    def update_peers(self) -> None:
        """Replicate to the chosen peers this host reaches now (a failure or a link outage changed
        them).

        Counts the time spent short of the promised peers; wakes the writes that stalled for them.
        """
        host = self.host
        loss = self.peer_loss
        reachable = tuple(peer for peer in loss.chosen if host.reaches(peer))
        missing = loss.promised - len(reachable) if host.tier_up else 0
        if reachable != self.peers:
            self.peers = reachable
            self._peer_paths = tuple(host.peer_path(peer) for peer in reachable)
        loss.update(self.clock, missing)
        self.short_of_peers = missing > 0

    def io(self, is_write: bool, size: int, offset: int) -> Generator[Wait, Any, None]:
        """Perform one I/O and record it (it is in :attr:`reads_in_flight` or
        :attr:`writes_in_flight` until then)."""
        number = self.issued
        self.issued = number + 1
        if not is_write:
            return self._read(number, size, offset)
        self.writes_in_flight[number] = current_time(self.clock)
        if self._serialize:
            return self._serialized(number, size, offset)
        return self._write(number, size, offset, current_time(self.clock))

    def _write(
        self, number: int, size: int, offset: int, issued: float
    ) -> Generator[Wait, Any, None]:
        """The write's path: write-through, write-back, or as ``on_peer_loss`` says while short
        of peers."""
        if self.write_through:
            return self._write_through(number, size, offset, issued)
        if self.short_of_peers:
            return self._short_of_peers(number, size, offset, issued)
        return self._write_back(number, size, offset, issued)

    def _short_of_peers(
        self, number: int, size: int, offset: int, issued: float
    ) -> Generator[Wait, Any, None]:
        """A write-back write issued while this VM reaches fewer peers than its policy promises."""
        loss = self.peer_loss
        loss.written += size
        policy = loss.policy
        if policy == "write_through":
            yield from self._write_through(number, size, offset, issued)
            if number not in self.writes_in_flight:  # completed (not cut short by a host failure)
                loss.written_through += size
            return
        if policy == "stall":
            while loss.missing:
                yield loss.back()
            if self.host.tier_up:
                yield from self._write_back(number, size, offset, issued)
            # a host (or its tier) that died while its writes stalled sends nothing: the write
            # failed
            else:
                self.writes_in_flight.pop(number, None)
            return
        loss.degrading()  # degrade: with the peers it reaches (self.peers)
        try:
            yield from self._write_back(number, size, offset, issued)
        finally:
            loss.degraded(self.clock)

    def _serialized(self, number: int, size: int, offset: int) -> Generator[Wait, Any, None]:
        """``sync_serialize``: wait until this VM's earlier writes are done, then write."""
        issued = current_time(self.clock)
        if self._writing:
            turn = Signal(None)
            self._writers.append(turn)
            yield turn
        self._writing = True
        try:
            yield from self._write(number, size, offset, issued)
        finally:
            if self._writers:
                succeed(self.clock, self._writers.popleft())
            else:
                self._writing = False

    def _write_back(
        self, number: int, size: int, offset: int, issued: float
    ) -> Generator[Wait, Any, None]:
        """A write-back write issued at ``issued`` (earlier than now if it waited for its turn:
        ``sync_serialize``)."""
        clock = self.clock
        host = self.host
        begun = current_time(clock)
        local_done = self.begin_write(host, size, offset)
        peers = self.peers
        lag = AsyncWrite(size) if self._async and peers else None
        # the copies leave once they are in the send buffer; the acknowledgement waits for that only
        if lag is not None:
            # as chosen at issue (a failure may re-peer the VM while it waits)
            paths = self._peer_paths
            room = host.replica_lag.room(peers, size, self._send_buffer)
            if room is not None:
                yield room
                if not host.tier_up:
                    # the host died while the write waited: nothing is sent, nothing is recorded
                    return
            for peer, path in zip(peers, paths, strict=True):
                event = self.replicate(peer, path, size).delivered
                assert event.callbacks is not None  # just sent: not delivered yet
                event.callbacks.append(self._lag_callback(lag, peer))
            legs = []
        else:
            legs = self.replicate_all(peers, size)
        if self._metadata_size:
            if local_done > current_time(clock):
                yield sleep(clock, local_done - current_time(clock))
            if self._metadata_batched:
                yield host.metadata_log.join(self._metadata_size)
                local_done = current_time(clock)
            else:
                local_done = host.metadata_log.write(self._metadata_size)
        finish, critical_peer_tier = local_done, -1.0
        if legs:
            for leg in legs:
                yield leg.delivered
            finish, critical_peer_tier = self.legs_finish(legs, local_done)
        if finish > current_time(clock):
            yield sleep(clock, finish - current_time(clock))
        acked_at = current_time(clock)
        # the host died (or its tier failed) under this I/O: it failed, nothing is recorded
        if not host.tier_up:
            self.writes_in_flight.pop(number, None)
            return
        # waited for room in the send buffer: network time
        if lag is not None and acked_at > finish:
            local, network, peer_tier = finish - issued, acked_at - finish, 0.0
        else:
            local, network, peer_tier = write_components(
                issued, begun, acked_at, critical_peer_tier
            )
        item = self.destage_item(peers, offset, size)
        wait = host.destager.admit(item)
        if wait is not None:
            yield wait
            # its tier failed while the write waited for buffer space: the write failed
            if not host.tier_up:
                self.writes_in_flight.pop(number, None)
                return
        if lag is not None and host.tier_up:
            host.replica_lag.acknowledged(lag, item)
        self.record_write(number, size, issued, local, network, peer_tier, acked_at)

    def begin_write(self, host: Host, size: int, offset: int) -> float:
        """A write-back write's local part, started now on ``host``: its tier write (when it
        completes is returned), its cache fill, and the stale copies of its lines on hosts the VM
        left dropped."""
        local_done = host.tier.submit(current_time(self.clock), size, True, self.gc_factor)
        host.cache.insert(self.index, offset, size)
        if self.moved:
            for left in self.migration.left:
                left.cache.discard(self.index, offset, size)
        return local_done

    def replicate_all(self, peers: tuple[Host, ...], size: int) -> list[ReplicaLeg]:
        """A synchronous write-back write's replica legs to ``peers`` (:attr:`peers` now), one
        per peer."""
        return (
            [
                self.replicate(peer, path, size)
                for peer, path in zip(peers, self._peer_paths, strict=True)
            ]
            if peers
            else []
        )

    def legs_finish(self, legs: list[ReplicaLeg], local_done: float) -> tuple[float, float]:
        """When a write whose tier write ends at ``local_done`` and whose replica ``legs`` have
        all arrived is acknowledged, and its slowest leg's peer-tier time (-1 if the local write
        is the slowest)."""
        finish, critical_peer_tier = local_done, -1.0
        ack_time = self._ack_time
        for leg in legs:
            arrived, peer_done, acked = leg.arrived_at, leg.peer_done, leg.acked
            # acknowledged from the peer's RAM: its tier write goes on off the path
            if self._memory_ack:
                acked, peer_done = arrived + ack_time, arrived
            if acked > finish:
                finish = acked
                critical_peer_tier = peer_done - arrived
        return finish, critical_peer_tier

    def destage_item(self, peers: tuple[Host, ...], offset: int, size: int) -> PendingWrite:
        """The destage buffer's entry of an acknowledged write replicated to ``peers`` (those
        whose tier still works)."""
        if peers and not all(peer.tier_up for peer in peers):
            # a peer died while this write was in flight
            peers = tuple(peer for peer in peers if peer.tier_up)
        return (self.index, offset, size, peers, not peers)

    def record_write(
        self,
        number: int,
        size: int,
        issued: float,
        local: float,
        network: float,
        peer_tier: float,
        acked_at: float,
    ) -> None:
        """Record write ``number``, acknowledged at ``acked_at`` and accepted by the destage
        buffer now."""
        now = current_time(self.clock)
        del self.writes_in_flight[number]
        self._records.add(
            self.index,
            True,
            size,
            issued,
            now,
            local,
            network,
            peer_tier,
            now - acked_at,
            0.0,
            PATH_WRITE,
        )

    def _lag_callback(self, write: AsyncWrite, peer: Host) -> Any:
        """The callback of an asynchronous replica's transfer: tell the host's lag once the copy
        is on ``peer``."""
        lag = self.host.replica_lag

        def arrived(_: Signal) -> None:
            lag.arrived(write, peer)

        return arrived

    def replicate(self, peer: Host, path: tuple[Port, ...], size: int) -> ReplicaLeg:
        """Start one replica leg to ``peer`` over ``path``: its times are filled in when its copy
        arrives."""
        host = self.host
        payload = float(size)
        cpu = 0.0
        port = path[0]  # the sending host's peer port this replica leaves on
        if self._may_compress and (self._always_compress or self._link_busy(port)):
            cpu = compression_seconds(size, self.compression.throughput)
            saved = size * self._compressibility
            payload -= saved
            self.compressed_bytes_saved += saved
        host.replica_payload_sent += payload
        wire, packets = port.framing[payload]
        # async copies: counted by ReplicaLag
        leg = ReplicaLeg(self.clock, peer, size, self._ack_time, not self._async, self.gc_factor)
        leg.delivered = host.network.send(path, wire, packets, self._peer_latency, cpu, leg.arrived)
        return leg

    def _link_busy(self, port: Port) -> bool:
        """Adaptive mode: is ``port`` busy enough to compress a replica that leaves on it?

        ``port`` is the sending peer port. Its last-interval utilization is
        judged as it would be without compression: while this VM compresses on
        that port, the measured figure is scaled up by 1 / (1 - compressibility).
        Judged on the raw figure, compression that relieves a saturated link
        would switch itself off one interval later and back on the next
        (flapping). Each port is judged on its own: with several peer ports,
        replicas leaving on a busy one are compressed and those leaving on a
        quiet one are not.
        """
        utilization = port.recent_utilization
        compressing = self._compressing
        if port in compressing:
            utilization /= 1.0 - self._compressibility
        if utilization >= self.compression.threshold:
            compressing.add(port)
            return True
        compressing.discard(port)
        return False

    def _write_through(
        self, number: int, size: int, offset: int, issued: float
    ) -> Generator[Wait, Any, None]:
        clock = self.clock
        host = self.host
        begun = current_time(clock)
        in_flight = self.writes_in_flight
        if host.tier_up:
            local_done = host.tier.submit(begun, size, True, self.gc_factor)
            host.cache.insert(self.index, offset, size)
        else:  # device_failure: nothing to cache the write in
            local_done = begun
        if self.moved:
            for left in self.migration.left:
                left.cache.discard(self.index, offset, size)
        if host.storage_down:
            yield host.storage_back
        wire, packets = host.storage_tx.framing[size]
        yield host.network.send(
            (host.storage_tx, host.array_rx), wire, packets, latency=host.storage_tx.latency
        )
        arrived = current_time(clock)
        array_done = host.array.submit(arrived, ((self.index, offset, size),), True)
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
        if not self.policy_write_through:
            self.peer_loss.fell_through += size
        self._records.add(
            self.index,
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

    def start(self, is_write: bool, size: int, offset: int, finished: Signal | None = None) -> None:
        """Begin one I/O: ``run_detached(self.io(...), finished)``, except that the common paths run
        as callbacks instead of a generator: a read hit (its completion time is known at once) is
        one scheduled callback, a read miss with nothing to wait for first an :class:`ArrayRead`, a
        synchronous write-back write a :class:`WriteBack`. ``finished``, if given, is processed the
        moment the I/O is done or failed (a closed-loop slot waits for it).

        The same events at the same times and in the same order as :meth:`io`
        (``tests/sim/test_fast_paths.py``).
        """
        if is_write:
            if (
                self.write_through
                or self.short_of_peers
                or self._serialize
                or self._metadata_size
                or (self._async and self.peers)
            ):
                run_detached(self.io(True, size, offset), finished)
                return
            number = self.issued
            self.issued = number + 1
            self.writes_in_flight[number] = current_time(self.clock)
            WriteBack(self, number, size, offset, finished)
            return
        number = self.issued
        self.issued = number + 1
        host = self.host
        issued, done = self._begin_read(number, size, offset)
        if done >= 0.0:
            served = Signal(
                ReadHit(number, size, issued, host, finished), self._hit_served_callback
            )
            schedule_at(self.clock, issued + (done - issued), served)  # = sleep()'s time
            return
        if not self.read_detour and not host.storage_down:  # nothing to wait for first
            ArrayRead(
                self,
                number,
                size,
                offset,
                issued,
                host,
                current_time(self.clock) - issued,
                finished,
            )
            return
        run_detached(self._read_miss(number, size, offset, issued, host), finished)

    def _begin_read(self, number: int, size: int, offset: int) -> tuple[float, float]:
        """A read issued now: (now, when the tier serves it if it hits the host's cache, else
        -1)."""
        issued = current_time(self.clock)
        self.reads_in_flight[number] = issued
        host = self.host
        if host.cache.lookup(self.index, offset, size):
            return issued, host.tier.submit(issued, size, False)
        return issued, -1.0

    def _hit_served(self, signal: Signal) -> None:
        """A read hit started by :meth:`start` is done: record it (as :meth:`_read` does after
        its wait)."""
        hit: ReadHit = signal._value
        self._hit_done(hit.number, hit.size, hit.issued, hit.host)
        if hit.finished is not None:
            process_now(hit.finished)

    def _hit_done(self, number: int, size: int, issued: float, host: Host) -> None:
        # a hit on a tier that failed (or a host that died) under it: it failed
        if not host.tier_up:
            self.reads_in_flight.pop(number, None)
            return
        del self.reads_in_flight[number]
        now = current_time(self.clock)
        self._records.add(
            self.index, False, size, issued, now, now - issued, 0.0, 0.0, 0.0, 0.0, PATH_HIT
        )

    def _read(self, number: int, size: int, offset: int) -> Generator[Wait, Any, None]:
        host = self.host
        issued, done = self._begin_read(number, size, offset)
        if done >= 0.0:
            yield sleep(self.clock, done - issued)
            self._hit_done(number, size, issued, host)
            return
        yield from self._read_miss(number, size, offset, issued, host)

    def _read_miss(
        self, number: int, size: int, offset: int, issued: float, host: Host
    ) -> Generator[Wait, Any, None]:
        """A read that missed the host's cache, issued at ``issued`` on ``host``: from the old
        host's cache after a vMotion (a remote hit), else from the array, over the storage
        network."""
        remote = self.migration.remote
        if (
            remote is not None
            and host.reaches(remote)
            and remote.cache.holds(self.index, offset, size)
        ):
            yield from self._remote_hit(number, size, offset, remote)
            return
        clock = self.clock
        pending_destage = self.ha.pending_destage
        if pending_destage is not None:  # restarted: the array is stale until the holders destage
            pending = pending_destage.wait(self.index, offset, size)
            if pending is not None:
                yield pending
        waited = current_time(clock) - issued
        if host.storage_down:
            yield host.storage_back
        finished = Signal(None)  # processed (not scheduled) when the read is done or failed
        ArrayRead(self, number, size, offset, issued, host, waited, finished)
        yield finished

    def miss_delivered(
        self,
        host: Host,
        number: int,
        size: int,
        offset: int,
        issued: float,
        waited: float,
        array_time: float,
    ) -> None:
        """A read miss from the array has its data back on ``host``: fill the cache, record the
        read (unless the host died meanwhile). ``waited``: seconds spent before its request (its
        destage-wait component); ``array_time``: from its request's arrival at the array to the
        array's completion."""
        if not host.alive:
            return
        now = current_time(self.clock)
        if host.tier_up:
            # fill the cache: costs tier write bandwidth, off the critical path
            host.tier.submit(now, size, True)
            host.cache.insert(self.index, offset, size)
        del self.reads_in_flight[number]
        network = (now - issued) - array_time - waited
        self._records.add(
            self.index, False, size, issued, now, 0.0, network, 0.0, waited, array_time, PATH_MISS
        )

    def _remote_hit(
        self, number: int, size: int, offset: int, remote: Host
    ) -> Generator[Wait, Any, None]:
        """A read served by the old host's cache: the request crosses the peer network (one link
        latency), the old host reads its tier and sends the data back; the data fills this host's
        cache as a miss's does (off the path)."""
        clock = self.clock
        host = self.host
        issued = current_time(clock)
        host.cache.misses -= 1  # counted as a hit, of the cache that served it
        remote.cache.hits += 1
        yield sleep(clock, self._peer_latency)
        begun = current_time(clock)
        done = remote.tier.submit(begun, size, False)
        yield sleep(clock, done - begun)
        path = remote.peer_path(host)
        wire, packets = path[0].framing[size]
        yield host.network.send(path, wire, packets, latency=self._peer_latency)
        now = current_time(clock)
        if not host.alive:
            return
        if host.tier_up:  # fill this host's cache (device_failure: there is none)
            host.tier.submit(now, size, True)
            host.cache.insert(self.index, offset, size)
        del self.reads_in_flight[number]
        peer_tier = done - begun
        self._records.add(
            self.index,
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
        self.migration.remote_hit(size, issued)
