"""An I/O's path as callbacks: the common cases of a VM's generators
(:mod:`simcache.sim.components.vm_paths`), without a generator.

A VM's I/O is a generator of waits (:meth:`VM.io`), resumed by a
:class:`simcache.sim.kernel.clock.Resumer` at each. Resuming a generator costs a
wrapper generator, a bound method per wait and a native ``send``; the paths
most I/Os take wait for nothing but their own events, so they run here as one
object whose single callback is called once per wait, in phases:

- :class:`ArrayRead`: a read miss from the array, from its request on;
- :class:`WriteBack`: a synchronous write-back write (its replica legs, its
  acknowledgement, its place in the destage buffer);
- :class:`ReplicaLeg`: one of a write-back write's replicas (the generators'
  too), its arrival a bound method instead of a closure and a list;
- :class:`ReadHit`: what a read hit's one scheduled callback needs, in typed
  fields (not a tuple of boxed numbers).

What each computes is the VM's (its methods, shared with the generators); what
is here is only the order of the waits. Each schedules the same events at the
same times and in the same order as the generator it stands in for, so results
are the same bit for bit: ``tests/sim/test_io_steps.py`` steps each against its generator alone,
``tests/sim/test_fast_paths.py`` runs whole scenarios both ways.

An :class:`ArrayRead` or a :class:`WriteBack` holds its callback (one bound
method for all its waits: a signal's callback is cleared as it runs), a
reference cycle that its last step breaks, so that it is freed by reference
count, not left to the cyclic collector (which is off during a run). A
:class:`ReplicaLeg` and its transfer's Signal refer to each other until the
Signal is processed, which clears its callback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from simcache.sim.kernel.clock import Clock, current_time, schedule_at
from simcache.sim.kernel.signals import Signal, on_processed, process_now

if TYPE_CHECKING:
    from simcache.sim.components.host import Host
    from simcache.sim.components.vm import VM

__all__ = ["ArrayRead", "ReadHit", "ReplicaLeg", "WriteBack", "write_components"]

_LEGS: Final = 0  # waiting for the replica legs, in order
_ACKNOWLEDGED: Final = 1  # waiting until the slowest leg's (or the local write's) acknowledgement
_ADMITTED: Final = 2  # waiting for room in the destage buffer
_NOT_SENT: Final = Signal(None)  # a ReplicaLeg's transfer until it is sent


class ArrayRead:
    """A read miss from the array, from its request on: the request reaches the array one storage
    message after now, the array serves it (its completion time known at once), the data crosses the
    storage network back, and :meth:`VM.miss_delivered` records it. Two waits, one callback
    (:meth:`_step`).

    The same events as the generator it replaces: the wait for the array is scheduled as
    :func:`sleep` schedules it, the transfer is the same :meth:`FlowNetwork.send`. ``waited``:
    seconds already spent waiting before the request (a destage the read had to wait for), its
    record's destage-wait component. ``finished``, if not None, is processed once the read is done
    or failed (the generator that waits for it resumes then, as it would have after ``yield from``).
    """

    __slots__ = (
        "array_time",
        "callback",
        "delivering",
        "finished",
        "host",
        "issued",
        "number",
        "offset",
        "size",
        "vm",
        "waited",
    )

    def __init__(
        self,
        vm: VM,
        number: int,
        size: int,
        offset: int,
        issued: float,
        host: Host,
        waited: float,
        finished: Signal | None,
    ):
        self.vm = vm
        self.number = number
        self.size = size
        self.offset = offset
        self.issued = issued
        self.host = host
        self.waited = waited
        self.finished = finished
        self.delivering = False  # False: waiting for the array; True: for the data's transfer back
        self.callback: Callable[[Any], None] = self._step
        clock = vm.clock
        now = current_time(clock)
        # now: after the storage link came back, if it was down
        request_arrives = now + host.storage_tx.acknowledgement
        array_done = host.array.read(request_arrives, vm.index, offset, size)
        self.array_time = array_done - request_arrives
        # = sleep()'s time
        schedule_at(clock, now + (array_done - now), Signal(None, self.callback))

    def _step(self, _: Any) -> None:
        """The array has the data: send it back over the storage network. Then, it has arrived:
        record it."""
        host = self.host
        if not self.delivering:
            self.delivering = True
            wire, packets = host.storage_tx.framing[self.size]
            host.network.send(
                (host.array_tx, host.storage_rx),
                wire,
                packets,
                latency=host.storage_tx.latency,
                then=self.callback,
            )
            return
        self.callback = _finished
        self.vm.miss_delivered(
            host, self.number, self.size, self.offset, self.issued, self.waited, self.array_time
        )
        if self.finished is not None:
            process_now(self.finished)


class ReadHit:
    """A read hit in flight: its issue ``number``, ``size`` (bytes), when it was ``issued``, the
    ``host`` whose tier serves it, and ``finished`` (None, or a Signal to process once it is
    done). The value of the one Signal scheduled for when the tier is done (:meth:`VM.start`)."""

    __slots__ = ("finished", "host", "issued", "number", "size")

    def __init__(self, number: int, size: int, issued: float, host: Host, finished: Signal | None):
        self.number = number
        self.size = size
        self.issued = issued
        self.host = host
        self.finished = finished


class ReplicaLeg:
    """One replica of a write-back write to ``peer``: its payload's transfer (``delivered``,
    processed when the copy arrives), then the peer's tier write and the acknowledgement back,
    ``ack_time`` later.

    :meth:`arrived`, the transfer's callback, writes the copy to the peer's tier and fills in the
    times: when the copy arrived (``arrived_at``), when the peer's tier had it (``peer_done``) and
    when the acknowledgement is back (``acked``). A dead peer's copy is no copy: the leg still
    completes, but only a live peer's tier counts its bytes (``counted``: False for an asynchronous
    copy, which the host's ``ReplicaLag`` counts).
    """

    __slots__ = (
        "ack_time",
        "acked",
        "arrived_at",
        "clock",
        "counted",
        "delivered",
        "gc_factor",
        "peer",
        "peer_done",
        "size",
    )

    def __init__(
        self,
        clock: Clock,
        peer: Host,
        size: int,
        ack_time: float,
        counted: bool,
        gc_factor: float = 1.0,
    ):
        self.clock = clock
        # the writer's share of clean-pool charge (simcache.physics.cluster.write_gc_factor)
        self.gc_factor = gc_factor
        self.peer = peer
        self.size = size
        self.ack_time = ack_time
        self.counted = counted
        self.arrived_at = 0.0
        self.peer_done = 0.0
        self.acked = 0.0
        self.delivered: Signal = _NOT_SENT  # the transfer's Signal, set once it is sent

    def arrived(self, _: Signal) -> None:
        now = current_time(self.clock)
        peer = self.peer
        done = peer.tier.submit(now, self.size, True, self.gc_factor)
        if peer.tier_up and self.counted:  # a dead peer's copy is no copy (the leg still completes)
            peer.replica_bytes += self.size
        self.arrived_at = now
        self.peer_done = done
        self.acked = done + self.ack_time


class WriteBack:
    """A synchronous write-back write (no ``async`` replication, no metadata record, not serialized,
    with the peers its policy promises), issued now: the waits of
    :func:`~simcache.sim.components.vm_paths.write_back` as phases of one callback (:meth:`_step`).

    1. Its local part and its replica legs start at once (:meth:`VM.begin_write`,
       :meth:`VM.replicate_all`);
    2. it waits for each leg in turn, then until the slowest acknowledgement
       (:meth:`VM.legs_finish`);
    3. it asks the destage buffer for room (:meth:`VM.destage_item`), waits for it if there is none,
       and is recorded (:meth:`VM.record_write`). A host or tier that failed under it fails it:
       nothing is recorded.

    ``finished``, if not None, is processed once the write is recorded or failed (a closed-loop slot
    waits for it).
    """

    __slots__ = (
        "acked_at",
        "begun",
        "callback",
        "critical_peer_tier",
        "finished",
        "host",
        "legs",
        "local_done",
        "next_leg",
        "number",
        "offset",
        "peers",
        "phase",
        "size",
        "vm",
    )

    def __init__(self, vm: VM, number: int, size: int, offset: int, finished: Signal | None):
        host = vm.host
        self.vm = vm
        self.finished = finished
        self.host = host
        self.number = number
        self.size = size
        self.offset = offset
        self.begun = current_time(vm.clock)
        self.local_done = vm.begin_write(host, size, offset)
        peers = vm.peers
        self.peers = peers
        self.legs = vm.replicate_all(peers, size)
        self.next_leg = 0
        self.critical_peer_tier = -1.0
        self.acked_at = 0.0
        self.phase = _LEGS
        self.callback: Callable[[Any], None] = self._step
        self._step(None)

    def _step(self, _: Any) -> None:
        """Go on from the wait that just ended (or from the start) to the next one, or to the
        end."""
        phase = self.phase
        if phase == _LEGS:
            legs = self.legs
            while self.next_leg < len(legs):
                event = legs[self.next_leg].delivered
                self.next_leg += 1
                # not delivered yet: wait for it (after its own callback)
                if event._callbacks is not None:
                    event.add_callback(self.callback)
                    return
            finish = self.local_done
            if legs:
                finish, self.critical_peer_tier = self.vm.legs_finish(legs, finish)
            clock = self.vm.clock
            now = current_time(clock)
            if finish > now:
                self.phase = _ACKNOWLEDGED
                # = sleep()'s time
                schedule_at(clock, now + (finish - now), Signal(None, self.callback))
                return
            self._acknowledged()
        elif phase == _ACKNOWLEDGED:
            self._acknowledged()
        elif self.host.tier_up:
            self._record()
        else:  # its tier failed while the write waited for buffer space: the write failed
            self._failed()

    def _acknowledged(self) -> None:
        """The write is acknowledged now: into the destage buffer if it has room, else wait for
        room."""
        vm = self.vm
        host = self.host
        self.acked_at = current_time(vm.clock)
        # the host died (or its tier failed) under this I/O: it failed, nothing is recorded
        if not host.tier_up:
            self._failed()
            return
        wait = host.destager.admit(vm.destage_item(self.peers, self.offset, self.size))
        if wait is not None:
            self.phase = _ADMITTED
            on_processed(wait, self.callback)
            return
        self._record()

    def _record(self) -> None:
        self.callback = _finished
        vm = self.vm
        begun = self.begun  # issued then too: nothing holds a callback path's write back
        local, network, peer_tier = write_components(
            begun, begun, self.acked_at, self.critical_peer_tier
        )
        vm.record_write(self.number, self.size, begun, local, network, peer_tier, self.acked_at)
        if self.finished is not None:
            process_now(self.finished)

    def _failed(self) -> None:
        self.callback = _finished
        self.vm.writes_in_flight.pop(self.number, None)
        if self.finished is not None:
            process_now(self.finished)


def write_components(
    issued: float, begun: float, acked_at: float, critical_peer_tier: float
) -> tuple[float, float, float]:
    """(local, network, peer tier) seconds of a write-back write issued at ``issued``, begun at
    ``begun`` (later if it waited for its turn) and acknowledged at ``acked_at``, whose slowest
    leg spent ``critical_peer_tier`` on its peer's tier (-1: the local write was the slowest).
    Taken from the clock, so that they add up to the latency exactly."""
    if critical_peer_tier < 0:
        return acked_at - issued, 0.0, 0.0
    return begun - issued, (acked_at - begun) - critical_peer_tier, critical_peer_tier


def _finished(_: Any) -> None:
    """What a finished :class:`ArrayRead` or :class:`WriteBack` holds as its callback (no longer
    itself: no cycle)."""
    raise AssertionError("a finished I/O waits for nothing")
