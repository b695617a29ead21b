"""Network: full-duplex ports and flows that share them.

Assumptions (see docs/architecture.md):
- Each host has one full-duplex port per network (a transmit and a receive
  direction) into a non-blocking switch; the array has one port on the
  storage network. A transfer from A to B crosses A's transmit direction and
  B's receive direction.
- A message pays the one-way latency (stack + switch) before its bytes move,
  then its framed bytes (payload + per-packet headers and wire framing at the
  MTU) flow at a rate shared with the other flows on its ports.
- Sharing is weighted fair per port; a flow runs at the smallest share it gets
  on any port it crosses (bottleneck fair share). On a single port this is
  exactly processor sharing.
- Background traffic (vMotion) is just more flows, with a weight.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import simpy

from simcache.scenario import LinkSpec

__all__ = ["FlowNetwork", "Port", "framed_bytes"]

_DONE_BYTES = 1e-6  # a flow with less than this left is complete (float rounding)


def framed_bytes(spec: LinkSpec, payload: float) -> tuple[float, int]:
    """Bytes on the wire and packet count for ``payload`` bytes at the link's MTU."""
    per_packet = spec.mtu - spec.header_bytes
    packets = max(1, math.ceil(payload / per_packet))
    return payload + packets * (spec.header_bytes + spec.framing_bytes), packets


class Port:
    """One direction of a port: a bandwidth shared by the flows crossing it."""

    __slots__ = ("name", "spec", "capacity", "weight_sum", "rate", "carried_bytes", "packets", "messages", "flows", "recent_utilization")

    def __init__(self, name: str, spec: LinkSpec):
        self.name = name
        self.spec = spec
        self.capacity = spec.bandwidth
        self.weight_sum = 0.0
        self.rate = 0.0  # bytes/s currently flowing
        self.carried_bytes = 0.0
        self.packets = 0
        self.messages = 0
        self.flows = 0
        self.recent_utilization = 0.0  # last sample interval's utilization, for adaptive compression


class _Flow:
    __slots__ = ("remaining", "rate", "ports", "weight", "event")

    def __init__(self, remaining: float, ports: tuple[Port, ...], weight: float, event: simpy.Event):
        self.remaining = remaining
        self.rate = 0.0
        self.ports = ports
        self.weight = weight
        self.event = event


class FlowNetwork:
    """All flows of a simulation; one wake-up timer for the next flow to finish."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._flows: list[_Flow] = []
        self._ports: dict[Port, None] = {}  # ports with flows, in a deterministic order
        self._updated = 0.0
        self._version = 0
        self.transfers = 0

    def transfer(self, ports: Sequence[Port], wire_bytes: float, packets: int = 1, delay: float = 0.0, weight: float = 1.0) -> simpy.Event:
        """Move ``wire_bytes`` across ``ports`` after ``delay`` seconds; the event fires when done.

        The event's value is the completion time.
        """
        env = self.env
        done = env.event()
        path = tuple(ports)
        for port in path:
            port.packets += packets
            port.messages += 1
        self.transfers += 1
        if delay > 0:
            env.timeout(delay).callbacks.append(lambda _: self._start(path, wire_bytes, weight, done))
        else:
            self._start(path, wire_bytes, weight, done)
        return done

    def in_flight(self) -> int:
        return len(self._flows)

    def sync(self) -> None:
        """Bring every port's carried-byte counter up to the current time."""
        self._advance()

    def _start(self, ports: tuple[Port, ...], wire_bytes: float, weight: float, done: simpy.Event) -> None:
        if wire_bytes <= 0:
            done.succeed(self.env.now)
            return
        self._advance()
        flow = _Flow(float(wire_bytes), ports, weight, done)
        self._flows.append(flow)
        for port in ports:
            port.weight_sum += weight
            port.flows += 1
            self._ports[port] = None
        self._reshare()

    def _advance(self) -> None:
        """Move every flow forward to now at its current rate."""
        now = self.env.now
        elapsed = now - self._updated
        if elapsed > 0:
            for flow in self._flows:
                flow.remaining -= flow.rate * elapsed
            for port in self._ports:
                port.carried_bytes += port.rate * elapsed
        self._updated = now

    def _reshare(self) -> None:
        """Recompute every flow's rate and schedule a wake-up at the next completion."""
        for port in self._ports:
            port.rate = 0.0
        soonest = math.inf
        for flow in self._flows:
            weight = flow.weight
            rate = math.inf
            for port in flow.ports:
                share = port.capacity * weight / port.weight_sum
                if share < rate:
                    rate = share
            flow.rate = rate
            for port in flow.ports:
                port.rate += rate
            left = flow.remaining / rate
            if left < soonest:
                soonest = left
        self._version += 1
        if soonest < math.inf:
            version = self._version
            wake: Callable[[simpy.Event], None] = lambda _: self._wake(version)
            self.env.timeout(max(soonest, 0.0)).callbacks.append(wake)

    def _wake(self, version: int) -> None:
        if version != self._version:
            return  # a newer schedule superseded this one
        self._advance()
        finished = [f for f in self._flows if f.remaining <= _DONE_BYTES + 1e-12 * f.rate]
        if not finished:
            self._reshare()
            return
        self._flows = [f for f in self._flows if f.remaining > _DONE_BYTES + 1e-12 * f.rate]
        for flow in finished:
            for port in flow.ports:
                port.weight_sum -= flow.weight
                port.flows -= 1
                if port.flows == 0:
                    port.weight_sum = 0.0
                    port.rate = 0.0
                    self._ports.pop(port, None)
        self._reshare()
        now = self.env.now
        for flow in finished:
            flow.event.succeed(now)
