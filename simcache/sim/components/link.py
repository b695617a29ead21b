"""Network: full-duplex ports and flows that share them.

Assumptions (see docs/model.md):
- Each host has ``cluster.peer_links`` full-duplex ports on the peer network
  and one on the storage network (each a transmit and a receive direction,
  named by :class:`PortName`) into a non-blocking switch; the array has one
  port on the storage network. A transfer from A to B crosses one of A's
  transmit directions and one of B's receive directions, and with a shared
  peer fabric also the cluster-wide fabric port.
- A message's framed bytes (payload + per-packet headers and wire framing at
  the MTU) flow at a rate shared with the other flows on its ports, and are
  delivered one one-way latency (stack + switch + propagation) after the last
  byte left: a lone transfer takes exactly latency + framed bytes / line rate.
- Sharing is weighted fair per port; a flow runs at the smallest share it gets
  on any port it crosses (bottleneck fair share). On a single port this is
  exactly processor sharing.
- Background traffic (vMotion) is just more flows, with a weight.
- A port's capacity may change while flows cross it (``link_slow``,
  :meth:`FlowNetwork.set_capacity`): its flows are re-rated at the change as a
  new flow's arrival re-rates them, each keeping the bytes it has left.
- A port with a ``window`` caps every flow longer than the window that
  crosses it at window / round trip (twice the transfer's one-way latency):
  one stream reaches a fraction of the link, many saturate it. A flow held
  below its fair share by its window leaves the rest of its share unused (no
  max-min redistribution); flows within one window are not capped.

How it is computed (the engine's hottest code): a flow's rate depends only on
the weight sums of its own ports, so a flow starting or finishing changes the
rates of the flows that share a port with it and of no others. Each flow keeps
its bytes left at the time of its last rate change and the time it will
finish at its current rate; only flows whose rate changes are touched. Flows
that share a port are finished by one wake-up timer set for the earliest of
their finish times (kept in a heap). A flow alone on all its ports changes
nobody's rate when it finishes, so it needs no wake-up: its delivery is
scheduled at once, and it leaves its ports when its delivery fires or when
the next flow arrives on them, whichever comes first. If a flow joins it
before it finishes, it is handed to the wake-up timer like any shared flow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Final, TypeAlias, cast

import simpy

from simcache.physics.cluster import PortName, framed_bytes, message_seconds
from simcache.sim.kernel.clock import Clock, clock_of, current_time, schedule_at, trigger
from simcache.sim.kernel.entries import unschedule
from simcache.sim.kernel.heap import heapify_entries, pop_entry, push_entry
from simcache.sim.kernel.signals import Signal, on_processed, process_now
from simcache.sim.kernel.stopping import RERATES_PER_POLL, poll_within_event
from simcache.sim.kernel.waits import sleep
from simcache.spec import LinkSpec

__all__ = ["FlowNetwork", "Framing", "Port"]

# explicit: without simpy's types (mypyc's build) simpy.Event is Any
Done: TypeAlias = simpy.Event | Signal
"""What a transfer's delivery triggers: a ``simpy.Event`` (:meth:`FlowNetwork.transfer`) or a
:class:`Signal` (:meth:`FlowNetwork.send`)."""

# superseded wake-ups left in the event queue before they are taken out
_STALE_TIMERS_KEPT: Final = 64
# void heap entries allowed beyond twice the flows in flight before the heap is rebuilt
_HEAP_SLACK: Final = 64


class Framing(dict[float, tuple[float, int]]):
    """:func:`framed_bytes` of one link by payload, each computed once (payload sizes repeat: the
    size mix)."""

    def __init__(self, spec: LinkSpec):
        super().__init__()
        self.spec = spec

    def __missing__(self, payload: float) -> tuple[float, int]:
        framed = self[payload] = framed_bytes(self.spec, payload)
        return framed


class Port:
    """One direction of a port: a bandwidth shared by the flows crossing it.

    ``name`` says which (:class:`simcache.physics.cluster.PortName`); ``label`` is its name in
    series columns.
    """

    __slots__ = (
        "acknowledgement",
        "active",
        "capacity",
        "capacity_changed_at",
        "capacity_seconds",
        "carried_bytes",
        "delivered_bytes",
        "framing",
        "label",
        "latency",
        "name",
        "packets",
        "recent_utilization",
        "share",
        "spec",
        "weight_sum",
        "window",
    )

    def __init__(self, name: PortName, spec: LinkSpec):
        self.name = name
        self.label = name.label
        self.spec = spec
        # seconds one way (the spec's, as a typed field: read per transfer)
        self.latency = spec.latency
        # a status message's time on this link (the array's write ack)
        self.acknowledgement = message_seconds(spec)
        self.capacity = spec.bandwidth
        self.capacity_changed_at = 0.0  # when set_capacity last changed it
        # bytes it could have carried up to then (its capacity over time)
        self.capacity_seconds = 0.0
        self.framing = Framing(spec)  # wire bytes and packets of a payload sent from here
        # flows crossing this port (a lone flow may have finished: see FlowNetwork)
        self.active: list[_Flow] = []
        self.weight_sum = 0.0
        self.share = math.inf  # bytes/s one unit of weight gets here: capacity / weight_sum
        self.delivered_bytes = 0.0  # wire bytes of the finished flows that crossed this port
        # wire bytes moved so far, finished or not (refreshed by FlowNetwork.sync)
        self.carried_bytes = 0.0
        self.packets = 0
        # last sample interval's utilization, for adaptive compression
        self.recent_utilization = 0.0
        # bytes a flow keeps in flight
        self.window = math.inf if spec.window is None else float(spec.window)


class _Flow:
    """One transfer in flight: ``remaining`` bytes at time ``stamp``, flowing at ``rate`` until
    ``finish``."""

    __slots__ = (
        "cap",
        "delivery",
        "event",
        "finish",
        "latency",
        "lone",
        "ports",
        "rate",
        "remaining",
        "seq",
        "size",
        "stamp",
        "weight",
    )
    # Set by FlowNetwork._rerate, which every new flow goes through before anything reads them:
    finish: float
    seq: int  # bumped at each rate change: heap entries of older numbers are void

    def __init__(
        self,
        size: float,
        ports: tuple[Port, ...],
        weight: float,
        latency: float,
        event: Done,
        now: float,
    ):
        self.size = size
        self.remaining = size
        self.stamp = now
        self.rate = 0.0  # none yet (so _rerate moves it by nothing)
        self.ports = ports
        self.weight = weight
        self.latency = latency
        self.event = event
        self.lone = False  # alone on all its ports, its delivery already scheduled
        # that scheduled delivery (None while shared: any older one is void)
        self.delivery: Signal | None = None
        self.cap = math.inf  # bytes/s its window allows (see FlowNetwork._start)


def _mark(flow: _Flow) -> Signal:
    """A shared flow's finish time in the network's heap: ``time`` the finish, ``key`` the flow's
    ``seq`` when it was pushed (void once the flow's ``seq`` moved on), the flow its value.
    Ordered by (finish, seq) as the ``(finish, seq, flow)`` tuples it replaces (seq is unique),
    with the kernel's native heap instead of ``heapq``'s tuple comparisons. Never scheduled: the
    kernel's :class:`Signal` is its one queue entry class."""
    mark = Signal(flow)
    mark.time = flow.finish
    mark.key = flow.seq
    return mark


class FlowNetwork:
    """All flows of a simulation: the rates, a heap of finish times, and one wake-up timer."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.clock = clock_of(env)
        self._in_flight: dict[_Flow, None] = {}  # every flow on its ports, in start order
        # a _mark per finish of a flow sharing a port (void once the flow's seq moved on)
        self._heap: list[Signal] = []
        self._seq = 0
        self._marks_rebuilt = False  # _rerate pushes no entry: the heap is rebuilt after (_start)
        # flows re-rated at once (and a quarter of those in flight) from which _start rebuilds the
        # heap (the native engine's HEAP_SLACK; the tests set it out of reach to compare)
        self.rebuild_at = _HEAP_SLACK
        self._wake_at = math.inf  # time of the pending wake-up timer (inf: none)
        self._timer: Signal | None = None  # the pending wake-up timer
        # Bound once: a bound method made per scheduled event is an allocation and a generic
        # attribute lookup.
        self._lone_delivered_callback: Callable[[Signal], None] = self._lone_delivered
        self._wake_callback: Callable[[Signal], None] = self._wake
        self._stale_timers: set[object] = set()  # superseded wake-ups still in the event queue

    def transfer(
        self,
        ports: Sequence[Port],
        wire_bytes: float,
        packets: int = 1,
        latency: float = 0.0,
        start_delay: float = 0.0,
        weight: float = 1.0,
    ) -> simpy.Event:
        """Send ``wire_bytes`` across ``ports``; the event fires when the last byte has arrived.

        The one ``simpy.Event`` the components hand out: for SimPy processes (the scheduled events
        of :mod:`simcache.sim.host_events` and :mod:`simcache.sim.outages`, which combine them with
        ``simpy.AllOf``) and tests; the components wait for :meth:`send`'s :class:`Signal` instead.

        The bytes start flowing after ``start_delay`` (e.g. compression CPU
        time) and are delivered ``latency`` seconds after the last one left
        (stack + switch + propagation), so a lone transfer takes
        ``start_delay + wire_bytes / bandwidth + latency``. The event's value is
        the delivery time.
        """
        done = self.env.event()
        self._send(tuple(ports), wire_bytes, packets, latency, start_delay, weight, done)
        return done

    def send(
        self,
        ports: tuple[Port, ...],
        wire_bytes: float,
        packets: int = 1,
        latency: float = 0.0,
        start_delay: float = 0.0,
        then: Callable[[Signal], None] | None = None,
    ) -> Signal:
        """:meth:`transfer` at weight 1, answered by a :class:`Signal` instead of a
        ``simpy.Event`` (cheaper: no interpreted ``Event.__init__``): for the engine's detached
        generators and callbacks, which only wait for it or add callbacks to it; ``then``, if
        given, is its first callback. The same flows, times and event ids as :meth:`transfer`."""
        done = Signal(None, then)
        self._send(ports, wire_bytes, packets, latency, start_delay, 1.0, done)
        return done

    def _send(
        self,
        ports: tuple[Port, ...],
        wire_bytes: float,
        packets: int,
        latency: float,
        start_delay: float,
        weight: float,
        done: Done,
    ) -> None:
        for port in ports:
            port.packets += packets
        if start_delay > 0:
            on_processed(
                sleep(self.clock, start_delay),
                lambda _: self._start(ports, wire_bytes, weight, latency, done),
            )
        else:
            self._start(ports, wire_bytes, weight, latency, done)

    def in_flight(self) -> int:
        """Flows with bytes still to send."""
        now = current_time(self.clock)
        return sum(1 for flow in self._in_flight if flow.finish > now)

    def sync(self) -> None:
        """Bring every port's ``carried_bytes`` up to the current time."""
        now = current_time(self.clock)
        flows = self._in_flight
        for flow in flows:  # ports without flows were brought up to date when their last flow left
            for port in flow.ports:
                port.carried_bytes = port.delivered_bytes
        for flow in flows:
            left = flow.remaining - flow.rate * (now - flow.stamp)
            moved = flow.size - (left if left > 0.0 else 0.0)
            for port in flow.ports:
                port.carried_bytes += moved

    def _start(
        self, ports: tuple[Port, ...], wire_bytes: float, weight: float, latency: float, done: Done
    ) -> None:
        now = current_time(self.clock)
        if wire_bytes <= 0:
            _deliver(self.clock, done, now + latency)
            return
        flow = _Flow(float(wire_bytes), ports, weight, latency, done, now)
        self._in_flight[flow] = None
        # flows sharing a port with the new one (None: it is alone)
        neighbours: dict[_Flow, None] | None = None
        for port in ports:
            if port.window < wire_bytes and latency > 0:
                cap = port.window / (2.0 * latency)  # a window per round trip
                if cap < flow.cap:
                    flow.cap = cap
            active = port.active
            if active:
                first = active[0]
                if first.lone and first.finish <= now:
                    # a lone flow that finished since: its delivery is on its way
                    self._leave(first)
                else:
                    if neighbours is None:
                        neighbours = {}
                    for other in active:
                        neighbours[other] = None
            active.append(flow)
            port.weight_sum += weight
            port.share = port.capacity / port.weight_sum
        if neighbours is None:
            self._rerate(flow, now)  # alone: its delivery is scheduled, the heap is unchanged
            return
        clock = self.clock
        rerated = len(neighbours)
        clock.rerated += rerated
        # Many flows re-rated at once (writes resuming together after an outage: each joins the
        # others on the port) would leave as many void entries at the heap's top for _arm to pop
        # one by one: the heap is rebuilt instead, from the flows' new entries (the same entries:
        # the same order).
        rebuilt = rerated >= self.rebuild_at and 4 * rerated >= len(self._in_flight)
        self._marks_rebuilt = rebuilt
        try:
            for other in neighbours:
                self._rerate(other, now)
            self._rerate(flow, now)
        finally:
            self._marks_rebuilt = False
        if rebuilt or len(self._heap) > 2 * len(self._in_flight) + _HEAP_SLACK:
            self._compact()
        self._arm()
        if clock.rerated >= RERATES_PER_POLL:  # one event starting thousands of transfers
            poll_within_event(clock)

    def set_capacity(self, port: Port, capacity: float) -> None:
        """Change ``port``'s bandwidth to ``capacity`` bytes/s now; re-rate the flows crossing it.

        Each flow is moved to now at its old rate (its bytes left) and goes on at the share the new
        capacity gives, exactly as when a flow joins or leaves the port.
        """
        now = current_time(self.clock)
        port.capacity_seconds += port.capacity * (now - port.capacity_changed_at)
        port.capacity_changed_at = now
        port.capacity = capacity
        active = port.active
        if active and active[0].lone and active[0].finish <= now:
            self._leave(active[0])  # a lone flow that finished since: its delivery is on its way
        if not active:
            return
        port.share = capacity / port.weight_sum
        self.clock.rerated += len(active)
        for flow in list(active):
            self._rerate(flow, now)
        self._arm()

    def _compact(self) -> None:
        """Rebuild the heap from the shared flows' current entries, dropping the void ones.

        Each rate change pushes a new entry and leaves the old one void until it
        reaches the top. With n flows sharing a port, each start changes n rates,
        so void entries would pile up as n squared: hundreds of flows in flight
        left millions of them, and every later run in the process paid for them
        in garbage collection. Rebuilding costs one pass over the flows in
        flight, paid for by the more than n pushes since the last rebuild.
        """
        heap: list[Signal] = [_mark(flow) for flow in self._in_flight if not flow.lone]
        heapify_entries(heap)
        self._heap = heap

    def _rerate(self, flow: _Flow, now: float) -> None:
        """Give ``flow`` the rate its ports allow now, moving it to now at its old rate, and
        schedule its end.

        The rate is the smallest share on its ports times its weight. Alone on
        all its ports, its delivery is scheduled now (nothing else can change
        its rate without arriving here first); otherwise its finish time goes
        on the heap for the wake-up timer. A shared flow whose rate stays the
        same (its bottleneck is another port) keeps its heap entry.
        """
        rate = math.inf
        lone = True
        for port in flow.ports:
            if port.share < rate:
                rate = port.share
            if len(port.active) > 1:
                lone = False
        rate *= flow.weight
        if rate > flow.cap:
            rate = flow.cap
        if rate == flow.rate and not lone and not flow.lone:
            return
        remaining = flow.remaining - flow.rate * (now - flow.stamp)
        if remaining < 0.0:
            remaining = 0.0  # float rounding at its finish time
        flow.remaining = remaining
        flow.stamp = now
        flow.rate = rate
        flow.finish = finish = now + remaining / rate
        self._seq += 1
        flow.seq = self._seq
        flow.lone = lone
        if lone:
            delivery = Signal(flow, self._lone_delivered_callback)
            flow.delivery = delivery
            schedule_at(self.clock, finish + flow.latency, delivery)
        else:
            flow.delivery = None
            if not self._marks_rebuilt:
                push_entry(self._heap, _mark(flow))

    def _lone_delivered(self, signal: Signal) -> None:
        flow: _Flow = signal.value
        if flow.delivery is not signal:
            # void: another flow joined it (the wake-up timer finishes it instead), or its rate
            # changed
            return
        flow.delivery = None
        if flow in self._in_flight:
            self._leave(flow)
        event = flow.event
        trigger(event, current_time(self.clock))
        process_now(event)  # its delivery time is now: no need to schedule it

    def _leave(self, flow: _Flow) -> None:
        """Take a flow that has sent its last byte off its ports."""
        del self._in_flight[flow]
        for port in flow.ports:
            port.delivered_bytes += flow.size
            active = port.active
            active.remove(flow)
            if active:
                port.weight_sum -= flow.weight
                port.share = port.capacity / port.weight_sum
            else:
                port.weight_sum = 0.0
                port.share = math.inf
                port.carried_bytes = port.delivered_bytes

    def _arm(self) -> None:
        """Make sure a wake-up is due by the earliest finish on the heap."""
        heap = self._heap
        while heap and cast(_Flow, heap[0].value).seq != heap[0].key:
            pop_entry(heap)  # void: that flow's rate changed or it is alone now
        if heap and heap[0].time < self._wake_at:
            self._set_wake(heap[0].time)

    def _set_wake(self, wake_at: float) -> None:
        """Set a wake-up for ``wake_at``, earlier than the pending one.

        The pending one becomes stale: it is ignored if it fires. A pending
        wake-up that is earlier than needed is kept: it finds nothing done and
        re-arms.
        """
        if self._timer is not None:
            self._stale_timers.add(self._timer)
            if len(self._stale_timers) > _STALE_TIMERS_KEPT:
                self._drop_stale_timers()
        self._wake_at = wake_at
        self._timer = Signal(None, self._wake_callback)
        schedule_at(self.clock, wake_at, self._timer)

    def _drop_stale_timers(self) -> None:
        """Take the stale wake-ups out of the event queue (SimPy cannot cancel an event).

        A flow that will take long (a vMotion stream) sets a far-off wake-up
        each time it is the next to finish, and the next short transfer makes
        that wake-up stale. Left in the queue, thousands of them would make
        every push and pop of the queue slower.
        """
        unschedule(self.clock, self._stale_timers)
        self._stale_timers.clear()

    def _wake(self, timer: Signal) -> None:
        if timer is not self._timer:
            self._stale_timers.discard(timer)
            return  # superseded by an earlier wake-up
        self._wake_at = math.inf
        self._timer = None
        now = current_time(self.clock)
        heap = self._heap
        finished: list[_Flow] = []
        while heap and heap[0].time <= now:
            mark = pop_entry(heap)
            flow = cast(_Flow, mark.value)
            if flow.seq == mark.key:
                finished.append(flow)
                self._leave(flow)
        if finished:
            neighbours: dict[_Flow, None] = {}
            for flow in finished:
                for port in flow.ports:
                    for other in port.active:
                        neighbours[other] = None
            self.clock.rerated += len(neighbours)
            for other in neighbours:
                self._rerate(other, now)
            clock = self.clock
            for flow in finished:
                _deliver(clock, flow.event, now + flow.latency)
        self._arm()


def _deliver(clock: Clock, event: Done, at: float) -> None:
    """Trigger ``event`` with the value ``at`` at time ``at``, as one scheduled event (what a
    ``simpy.Timeout`` does)."""
    trigger(event, at)
    schedule_at(clock, at, event)
