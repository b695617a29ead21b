"""A VM: its I/O stream, its caching policy, where it runs (its host, its peers, a vMotion, an HA
restart) and the per-I/O steps its paths share.

:meth:`VM.start` begins each I/O: the common paths as callback state machines
(:mod:`simcache.sim.components.io_steps`), the others as generators
(:mod:`simcache.sim.components.vm_paths`, which says what each path does). Both call the steps
here (``begin_write``, ``replicate``, ``legs_finish``, ``record_write``, ``miss_delivered``, ...),
so the two forms compute the same floats in the same order.
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
from simcache.sim.collect import PATH_HIT, PATH_MISS, PATH_WRITE, RecordBuffer
from simcache.sim.components.adopted import PendingDestage
from simcache.sim.components.host import Host
from simcache.sim.components.io_steps import (
    ArrayRead,
    ReadHit,
    ReplicaLeg,
    WriteBack,
)
from simcache.sim.components.link import Port
from simcache.sim.components.pending import PendingWrite
from simcache.sim.components.vm_paths import read_miss, read_path, serialized_write, write_path
from simcache.sim.components.vm_state import HaRestart, Migration, PeerLoss
from simcache.sim.kernel.clock import clock_of, current_time, schedule_at
from simcache.sim.kernel.detached import run_detached
from simcache.sim.kernel.signals import Signal, Wait, process_now
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
        self.records = records
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
        self.peer_latency = link.latency
        self.peer_paths = tuple(host.peer_path(peer) for peer in peers)
        self._ack_time = ack_seconds(link)
        replication = "sync" if spec is None else spec.replication
        self.async_replication = replication == "async"
        self.send_buffer = 0 if spec is None else spec.replication_buffer
        self._memory_ack = replication == "memory"
        self.metadata_size = spec.metadata_size if spec is not None and spec.metadata_write else 0
        self.metadata_batched = spec is not None and spec.metadata_batched
        self._serialize = stream.workload.sync_serialize
        workload = stream.workload
        run_bytes = write_run_bytes(
            workload.access, workload.sequential_run, workload.op_mean_size(True)
        )
        self.gc_factor = write_gc_factor(host.tier.spec, run_bytes)
        """Share of its writes' bytes a tier's clean pool is charged (sequential runs cost
        garbage collection less)."""
        # sync_serialize: a write of this VM is on its way to the device; the writes waiting for
        # it, in issue order
        self.serial_writing = False
        self.serial_writers: deque[Signal] = deque()
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
        self.serial_writing = False
        self.serial_writers.clear()
        for peer in self.peer_loss.chosen:
            if peer is host or not peer.tier_up:
                self.replace_peer(peer, hosts)
        self.peers = ()  # the paths start from the new host
        self.peer_paths = ()
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
        self.peer_paths = ()
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
        self.peer_latency = link.latency
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
            self.peer_paths = tuple(host.peer_path(peer) for peer in reachable)
        loss.update(self.clock, missing)
        self.short_of_peers = missing > 0

    def io(self, is_write: bool, size: int, offset: int) -> Generator[Wait, Any, None]:
        """Perform one I/O and record it (it is in :attr:`reads_in_flight` or
        :attr:`writes_in_flight` until then)."""
        number = self.issued
        self.issued = number + 1
        if not is_write:
            return read_path(self, number, size, offset)
        self.writes_in_flight[number] = current_time(self.clock)
        if self._serialize:
            return serialized_write(self, number, size, offset)
        return write_path(self, number, size, offset, current_time(self.clock))

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
                for peer, path in zip(peers, self.peer_paths, strict=True)
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
        self.records.add(
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
        leg = ReplicaLeg(
            self.clock, peer, size, self._ack_time, not self.async_replication, self.gc_factor
        )
        leg.delivered = host.network.send(path, wire, packets, self.peer_latency, cpu, leg.arrived)
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
                or self.metadata_size
                or (self.async_replication and self.peers)
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
        issued, done = self.begin_read(number, size, offset)
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
        run_detached(read_miss(self, number, size, offset, issued, host), finished)

    def begin_read(self, number: int, size: int, offset: int) -> tuple[float, float]:
        """A read issued now: (now, when the tier serves it if it hits the host's cache, else
        -1)."""
        issued = current_time(self.clock)
        self.reads_in_flight[number] = issued
        host = self.host
        if host.cache.lookup(self.index, offset, size):
            return issued, host.tier.submit(issued, size, False)
        return issued, -1.0

    def _hit_served(self, signal: Signal) -> None:
        """A read hit started by :meth:`start` is done: record it (as
        :func:`~simcache.sim.components.vm_paths.read_path` does after its wait)."""
        hit: ReadHit = signal._value
        self.hit_done(hit.number, hit.size, hit.issued, hit.host)
        if hit.finished is not None:
            process_now(hit.finished)

    def hit_done(self, number: int, size: int, issued: float, host: Host) -> None:
        # a hit on a tier that failed (or a host that died) under it: it failed
        if not host.tier_up:
            self.reads_in_flight.pop(number, None)
            return
        del self.reads_in_flight[number]
        now = current_time(self.clock)
        self.records.add(
            self.index, False, size, issued, now, now - issued, 0.0, 0.0, 0.0, 0.0, PATH_HIT
        )

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
        self.records.add(
            self.index, False, size, issued, now, 0.0, network, 0.0, waited, array_time, PATH_MISS
        )
