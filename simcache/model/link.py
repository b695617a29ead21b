"""Network: full-duplex ports and flows that share them.

Assumptions (see docs/architecture.md):
- Each host has one full-duplex port per network (a transmit and a receive
  direction) into a non-blocking switch; the array has one port on the
  storage network. A transfer from A to B crosses A's transmit direction and
  B's receive direction.
- A message's framed bytes (payload + per-packet headers and wire framing at
  the MTU) flow at a rate shared with the other flows on its ports, and are
  delivered one one-way latency (stack + switch + propagation) after the last
  byte left: a lone transfer takes exactly latency + framed bytes / line rate.
- Sharing is weighted fair per port; a flow runs at the smallest share it gets
  on any port it crosses (bottleneck fair share). On a single port this is
  exactly processor sharing.
- Background traffic (vMotion) is just more flows, with a weight.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import simpy

from simcache.scenario import LinkSpec

__all__ = ["FlowNetwork", "Framing", "Port", "framed_bytes"]

_DONE_BYTES = 1e-6  # a flow with less than this left is complete (float rounding)
_STALE_TIMERS_KEPT = 64  # superseded wake-ups left in SimPy's queue before they are taken out


def framed_bytes(spec: LinkSpec, payload: float) -> tuple[float, int]:
    """Bytes on the wire and packet count for ``payload`` bytes at the link's MTU."""
    per_packet = spec.mtu - spec.header_bytes
    packets = max(1, math.ceil(payload / per_packet))
    return payload + packets * (spec.header_bytes + spec.framing_bytes), packets


class Framing(dict[float, tuple[float, int]]):
    """:func:`framed_bytes` of one link by payload, each computed once (payload sizes repeat: the size mix)."""

    def __init__(self, spec: LinkSpec):
        super().__init__()
        self.spec = spec

    def __missing__(self, payload: float) -> tuple[float, int]:
        framed = self[payload] = framed_bytes(self.spec, payload)
        return framed


class Port:
    """One direction of a port: a bandwidth shared by the flows crossing it."""

    __slots__ = (
        "capacity",
        "carried_bytes",
        "delivered_bytes",
        "flows",
        "framing",
        "name",
        "packets",
        "recent_utilization",
        "share",
        "spec",
        "weight_sum",
    )

    def __init__(self, name: str, spec: LinkSpec):
        self.name = name
        self.spec = spec
        self.capacity = spec.bandwidth
        self.framing = Framing(spec)  # wire bytes and packets of a payload sent from here
        self.weight_sum = 0.0
        self.share = math.inf  # bytes/s one unit of weight gets here: capacity / weight_sum
        self.delivered_bytes = 0.0  # wire bytes of the finished flows that crossed this port
        self.carried_bytes = 0.0  # wire bytes moved so far, finished or not (refreshed by FlowNetwork.sync)
        self.packets = 0
        self.flows = 0
        self.recent_utilization = 0.0  # last sample interval's utilization, for adaptive compression


class _Flow:
    __slots__ = ("event", "first", "latency", "more", "ports", "rate", "remaining", "second", "size", "weight")

    def __init__(self, size: float, ports: tuple[Port, ...], weight: float, latency: float, event: simpy.Event):
        self.size = size
        self.remaining = size
        self.rate = 0.0
        self.ports = ports
        # The first two ports as attributes and any further ones in `more`: almost every path
        # has exactly two ports, and the rate loop reads them without unpacking a tuple.
        self.first = ports[0]
        self.second = ports[1] if len(ports) > 1 else ports[0]
        self.more = ports[2:]
        self.weight = weight
        self.latency = latency
        self.event = event


class FlowNetwork:
    """All flows of a simulation, with one wake-up timer for the next flow to finish."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._flows: list[_Flow] = []
        self._updated = 0.0
        self._wake_at = math.inf  # time of the pending wake-up timer (inf: none)
        self._version = 0  # bumped when a wake-up is superseded by an earlier one
        self._timer: simpy.Event | None = None  # the pending wake-up timer (None: none)
        self._stale_timers: set[simpy.Event] = set()  # superseded wake-ups still in SimPy's queue

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

        The bytes start flowing after ``start_delay`` (e.g. compression CPU
        time) and are delivered ``latency`` seconds after the last one left
        (stack + switch + propagation), so a lone transfer takes
        ``start_delay + wire_bytes / bandwidth + latency``. The event's value is
        the delivery time.
        """
        env = self.env
        done = env.event()
        for port in ports:
            port.packets += packets
        if start_delay > 0:
            path = tuple(ports)
            env.timeout(start_delay).callbacks.append(lambda _: self._start(path, wire_bytes, weight, latency, done))
        else:
            self._start(tuple(ports), wire_bytes, weight, latency, done)
        return done

    def in_flight(self) -> int:
        return len(self._flows)

    def sync(self) -> None:
        """Bring every port's ``carried_bytes`` up to the current time."""
        self._advance()
        flows = self._flows
        for flow in flows:  # ports without flows were brought up to date when their last flow finished
            for port in flow.ports:
                port.carried_bytes = port.delivered_bytes
        for flow in flows:
            for port in flow.ports:
                port.carried_bytes += flow.size - flow.remaining

    def _start(self, ports: tuple[Port, ...], wire_bytes: float, weight: float, latency: float, done: simpy.Event) -> None:
        if wire_bytes <= 0:
            _deliver(done, self.env.now + latency, latency)
            return
        self._flows.append(_Flow(float(wire_bytes), ports, weight, latency, done))  # rate 0 until reshared
        for port in ports:
            port.weight_sum += weight
            port.share = port.capacity / port.weight_sum
            port.flows += 1
        self._reshare(advance=True)

    def _advance(self) -> None:
        """Move every flow forward to now at its current rate."""
        now = self.env.now
        elapsed = now - self._updated
        if elapsed > 0:
            for flow in self._flows:
                flow.remaining -= flow.rate * elapsed
        self._updated = now

    def _reshare(self, advance: bool = False) -> None:
        """Recompute every flow's rate; make sure a wake-up is due by the next completion.

        With ``advance``, first move each flow forward to now at its old rate
        (in the same pass). This loop runs twice per transfer over every flow
        in flight: it is the engine's hottest code, hence the local names and
        the unrolled first two ports.
        """
        now = self.env.now
        elapsed = 0.0  # without `advance`, subtracting rate * 0.0 leaves `remaining` exactly as it was
        if advance:
            elapsed = now - self._updated
            self._updated = now
        soonest = math.inf
        for flow in self._flows:
            flow.remaining -= flow.rate * elapsed
            rate = flow.first.share
            share = flow.second.share
            if share < rate:
                rate = share
            if flow.more:
                for port in flow.more:
                    if port.share < rate:
                        rate = port.share
            rate *= flow.weight
            flow.rate = rate
            left = flow.remaining / rate
            if left < soonest:
                soonest = left
        # (With no flows left, soonest and so wake_at are infinite, and no wake-up is set.)
        wake_at = now + (soonest if soonest > 0.0 else 0.0)
        if wake_at < self._wake_at:
            self._set_wake(now, wake_at)

    def _set_wake(self, now: float, wake_at: float) -> None:
        """Set a wake-up for ``wake_at``, earlier than the pending one.

        The pending one becomes stale: it is ignored if it fires (its value,
        the version it was set under, is out of date). A pending wake-up that
        is earlier than needed is kept: it finds nothing done and reschedules.
        """
        if self._timer is not None:
            self._stale_timers.add(self._timer)
            if len(self._stale_timers) > _STALE_TIMERS_KEPT:
                self._drop_stale_timers()
        self._version += 1
        self._wake_at = wake_at
        self._timer = self.env.timeout(wake_at - now, self._version)
        self._timer.callbacks.append(self._wake)

    def _drop_stale_timers(self) -> None:
        """Take the stale wake-ups out of SimPy's event queue (SimPy cannot cancel an event).

        A flow that will take long (a vMotion stream) sets a far-off wake-up
        each time it is the next to finish, and the next short transfer makes
        that wake-up stale. Left in the queue, thousands of them would make
        every push and pop of the queue slower. Events are popped in the order
        (time, priority, id), so taking some out and re-heaping the rest does
        not change the order of the others.
        """
        stale = self._stale_timers
        queue = self.env._queue
        queue[:] = [entry for entry in queue if entry[3] not in stale]
        heapq.heapify(queue)
        stale.clear()

    def _wake(self, timer: simpy.Event) -> None:
        if timer._value != self._version:
            self._stale_timers.discard(timer)
            return  # superseded by an earlier wake-up
        self._wake_at = math.inf
        self._timer = None
        now = self.env.now
        elapsed = now - self._updated
        self._updated = now
        flows = self._flows
        finished: list[_Flow] = []
        soonest = math.inf  # time to the next completion, if no flow finished (rates are then unchanged)
        for flow in flows:
            rate = flow.rate
            remaining = flow.remaining - rate * elapsed
            flow.remaining = remaining
            if remaining > _DONE_BYTES + 1e-12 * rate:
                left = remaining / rate
                if left < soonest:
                    soonest = left
            else:
                finished.append(flow)
        if not finished:
            # Woken early (a flow started since this wake-up was set and slowed the others down):
            # the shares, and so the rates, are as the last reshare left them.
            wake_at = now + (soonest if soonest > 0.0 else 0.0)
            if wake_at < self._wake_at:
                self._set_wake(now, wake_at)
            return
        for flow in finished:
            flows.remove(flow)
            for port in flow.ports:
                port.delivered_bytes += flow.size
                port.flows -= 1
                if port.flows == 0:
                    port.weight_sum = 0.0
                    port.share = math.inf
                    port.carried_bytes = port.delivered_bytes
                else:
                    port.weight_sum -= flow.weight
                    port.share = port.capacity / port.weight_sum
        self._reshare()
        for flow in finished:
            _deliver(flow.event, now + flow.latency, flow.latency)


def _deliver(event: simpy.Event, value: float, delay: float) -> None:
    """Trigger ``event`` with ``value`` after ``delay`` seconds using a single scheduled event.

    (What ``simpy.Timeout`` does internally; saves an extra timeout event per transfer.)
    """
    event._ok = True
    event._value = value
    event.env.schedule(event, delay=delay)
