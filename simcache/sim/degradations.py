"""Components that run slower for a while (issue 17): a degraded or rebuilding array, a slow link or
tier.

``array_degraded``: from ``at`` for ``duration`` seconds every spindle operation's service time is
scaled by its RAID level's factor (:func:`simcache.physics.array.degraded_factors`);
``array_rebuild`` divides those by ``1 - share``, the share of the survivors' time the rebuild's
reads take (:func:`simcache.physics.array.rebuild_share`). Operations already queued keep the times
they were given at submission (the array computes completion times then). The destage backlog grows
while the writes arrive faster than the slowed array drains them; each event's record holds the
cluster's backlog at its start and end.

``link_slow``: both directions of each of the host's ports on that network run at ``fraction`` of
the link's bandwidth (:meth:`simcache.sim.components.link.FlowNetwork.set_capacity` re-rates the
flows on them at each change). ``device_slow``: the host's tier divides each operation's latency and
transfer time by ``fraction`` (:meth:`simcache.sim.components.tier.Tier.set_speed`). Validation
keeps the windows on one component apart.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import simpy

from simcache.physics.array import degraded_factors, rebuild_share
from simcache.sim.built import Model
from simcache.sim.components.link import Port
from simcache.sim.components.tier import Tier
from simcache.spec import ArrayEvent, ArrayRebuild, LinkSlow, Slowdown, array_event_seconds

__all__ = ["array_event", "slowdown"]


def _backlog(model: Model) -> int:
    return sum(host.destager.backlog_bytes for host in model.hosts)


def array_event(model: Model, event: ArrayEvent) -> Generator[simpy.Event, Any, None]:
    """Degrade the array at ``event.at`` for ``event.duration`` seconds (a rebuild without one:
    the time to rewrite a whole drive, :func:`simcache.spec.array_event_seconds`); record it in
    ``model.degradations``."""
    env = model.env
    yield env.timeout(event.at)
    spec = model.array.spec
    read, rmw = degraded_factors(spec.raid, spec.spindles)
    share = (
        rebuild_share(spec.raid, spec.spindles, event.rebuild_rate, spec.drive.media_rate)
        if isinstance(event, ArrayRebuild)
        else 0.0
    )
    seconds = array_event_seconds(event, spec.drive.capacity)
    slow = 1.0 / (1.0 - share)
    record: dict[str, Any] = {
        "kind": event.kind,
        "component": "array",
        "start_s": env.now,
        "end_s": math.nan,
        "read_factor": read * slow,
        "write_factor": rmw * slow,
        "rebuild_share": share,
        "backlog_at_start_bytes": _backlog(model),
        "backlog_at_end_bytes": math.nan,
    }
    model.degradations.append(record)
    model.array.degrade(read * slow, rmw * slow, slow)
    yield env.timeout(seconds)
    model.array.degrade(1.0, 1.0, 1.0)
    _close(model, record)


def _close(model: Model, record: dict[str, Any]) -> None:
    record["end_s"] = model.env.now
    record["backlog_at_end_bytes"] = _backlog(model)


def slowdown(model: Model, event: Slowdown) -> Generator[simpy.Event, Any, None]:
    """Run ``event.host``'s link or tier at ``event.fraction`` of its speed from ``event.at`` for
    ``event.duration``."""
    env = model.env
    yield env.timeout(event.at)
    host = model.hosts[event.host]
    if isinstance(event, LinkSlow):
        ports = (
            (*host.peer_txs, *host.peer_rxs)
            if event.link == "peer"
            else (host.storage_tx, host.storage_rx)
        )
        component = f"host{event.host} {event.link} link"
    else:
        ports = ()
        component = f"host{event.host} tier"
    record: dict[str, Any] = {
        "kind": event.kind,
        "component": component,
        "host": event.host,
        "start_s": env.now,
        "end_s": math.nan,
        "fraction": event.fraction,
        "backlog_at_start_bytes": _backlog(model),
        "backlog_at_end_bytes": math.nan,
    }
    model.degradations.append(record)
    _set_speed(model, host.tier, ports, event.fraction)
    yield env.timeout(event.duration)
    _set_speed(model, host.tier, ports, 1.0)
    _close(model, record)


def _set_speed(model: Model, tier: Tier, ports: tuple[Port, ...], fraction: float) -> None:
    """The ports at ``fraction`` of their link's bandwidth, or (no ports) the tier at
    ``fraction`` of its speed."""
    if not ports:
        tier.set_speed(fraction)
    for port in ports:
        capacity = port.spec.bandwidth * fraction
        model.network.set_capacity(port, capacity)
        if model.native is not None:  # the flows in flight are the native engine's
            model.native.set_capacity(port, capacity, model.clock)
