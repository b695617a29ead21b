"""The paths of every chain's I/Os: which legs an I/O waits for, and the steps of each leg.

Paths are built once per group, for its chain on host 0 (a template): its
other chains differ only by host (:class:`simcache.estimate.network.Network`
moves the template to each). The service times come from
:class:`simcache.estimate.services.ServiceTimes`; the peer ports from the
layout's peer port choice.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from simcache.estimate.chains import Chain
from simcache.estimate.services import NO_STREAMING, Streaming
from simcache.estimate.theory.stations import (
    ADMISSION,
    ADMIT,
    ALWAYS,
    ARRAY_RX,
    ARRAY_TX,
    COMPRESSED,
    DELAY,
    FLOW,
    QUEUE,
    STORAGE_RX,
    STORAGE_TX,
    Step,
)
from simcache.physics.cluster import compression_seconds, message_seconds

if TYPE_CHECKING:
    from simcache.estimate.layout import Layout

__all__ = ["Op", "templates"]


@dataclass
class Op:
    """One kind of I/O of a chain: the legs it waits for (in parallel) and its off-path load."""

    chain: int
    name: str  # "write" | "read"
    path: str  # "write" | "hit" | "miss"
    probability: float  # of the chain's I/Os, before the hit ratio (reads: the read fraction)
    size: float  # mean bytes
    legs: list[list[Step]]
    background: list[Step] = field(default_factory=list)
    # sequential steps after the join (buffer admission)
    after: list[Step] = field(default_factory=list)


def templates(c: Layout) -> list[list[Op]]:
    """Per group, the ops of a chain of it on host 0 (a template: its chains differ only by
    host), with the steps a state can switch (GC server, buffer admission, compression)."""
    templates = []
    firsts: dict[int, int] = {}  # each group's first chain (one pass over the chains)
    for i, ch in enumerate(c.chains):
        firsts.setdefault(ch.group, i)
    for g in range(len(c.scenario.groups)):
        first = firsts.get(g)
        templates.append(
            _chain_ops(c, first, dataclasses.replace(c.chains[first], host=0))
            if first is not None
            else []
        )
    return templates


def _chain_ops(c: Layout, index: int, chain: Chain) -> list[Op]:
    """The ops of one chain: its writes, then its read hits and read misses."""
    h = chain.host
    mix = c.read_mixes[chain.group]  # the reads' mix (the writes': _write)
    size, size_sq = mix.size, mix.size_sq
    ops = []
    if chain.read_fraction < 1.0:
        ops.append(_write(c, index, chain))
    if chain.read_fraction > 0.0:
        ops.append(
            Op(
                index,
                "read",
                "hit",
                chain.read_fraction,
                size,
                [c.services.tier_steps(h, size, size_sq, False)],
            )
        )
        leg = [
            Step(DELAY, service=2.0 * message_seconds(c.services.storage_link)),
            c.services.spindle_step(
                *c.services.array_request([size], False, 1.0, _streaming(c, chain, size))
            ),
            Step(
                FLOW,
                ports=(c.shared + ARRAY_TX, h * c.per_host + STORAGE_RX),
                service=mix.storage_seconds,
            ),
        ]
        fill = c.services.tier_steps(h, size, size_sq, True)
        ops.append(Op(index, "read", "miss", chain.read_fraction, size, [leg], background=fill))
    return ops


def _streaming(c: Layout, chain: Chain, size: float) -> Streaming:
    """Share of a chain's own array I/Os of ``size`` bytes that start where the spindle's head
    is: for sequential access, those continuing in the stripe unit their predecessor ended in
    while nothing else moved the head (:meth:`ServiceTimes.streaming_share`, at nominal rates); 0
    for random and zipf access (zipf's hot blocks are scattered over the working set)."""
    if not chain.sequential:
        return NO_STREAMING
    # every I/O may reach the array (errs towards seeking)
    array_rate = sum(ch.nominal_rate for ch in c.chains)
    return c.services.streaming_share(
        size, c.services.head_unmoved(chain.nominal_rate / chain.vms, array_rate)
    )


def _write(c: Layout, index: int, chain: Chain) -> Op:
    h = chain.host
    base = h * c.per_host
    mix = c.write_mixes[chain.group]
    size, size_sq = mix.size, mix.size_sq
    probability = 1.0 - chain.read_fraction
    group = c.scenario.groups[chain.group]
    gc_factor = c.gc_factor(chain)
    legs = [c.services.tier_steps(h, size, size_sq, True, gc_factor)]
    if not chain.write_back:
        storage = c.services.storage_link
        leg = [
            Step(DELAY, service=2.0 * message_seconds(storage)),
            Step(FLOW, ports=(base + STORAGE_TX, c.shared + ARRAY_RX), service=mix.storage_seconds),
        ]
        spindles = c.services.spindle_step(
            *c.services.array_request([size], True, 1.0, _streaming(c, chain, size))
        )
        background = []
        # the controller cache answers; the spindles work off the path
        if c.services.cache_ack is not None:
            leg.append(Step(DELAY, service=c.services.cache_ack))
            background.append(spindles)
        else:
            leg.append(spindles)
        legs.append(leg)
        return Op(index, "write", "write", probability, size, legs, background=background)
    # the metadata record follows the data on the local tier (batching ignored: see estimate.md)
    if group.metadata_write:
        m = float(group.metadata_size)
        legs[0] = legs[0] + c.services.tier_steps(h, m, m * m, True)
    peer = c.peer_link
    compression = c.scenario.cluster.compression
    off_path: list[Step] = []
    switch = COMPRESSED if chain.compressible else ALWAYS
    delay = peer.latency + c.services.ack_seconds
    compressed_delay = (
        compression_seconds(size, compression.throughput) + peer.latency + c.services.ack_seconds
    )
    replicas = c.replica_targets(h, chain.replicas)
    sending = [k for _, k in replicas]
    for target, k in replicas:
        ports = c.peer_ports(h, target)
        # The replicas of one write leave together: each shares its sending port with the siblings
        # that leave on the same port (all of them with one port), and a shared fabric with all of
        # them, for its whole transfer. Their targets, hence receiving ports, differ.
        siblings = (sending.count(k) - 1.0, 0.0, *(chain.replicas - 1.0 for _ in ports[2:]))
        lane = c.lane(h, k)  # compression is judged per sending port
        flow = Step(
            FLOW,
            ports=tuple(ports),
            service=mix.peer_seconds,
            siblings=siblings,
            switch=switch,
            switch_host=lane,
            switched_service=mix.peer_compressed_seconds,
        )
        leg = [
            Step(
                DELAY,
                service=delay,
                switch=switch,
                switch_host=lane,
                switched_service=compressed_delay,
            ),
            flow,
        ]
        peer_write = c.services.tier_steps(target, size, size_sq, True, gc_factor)
        if group.replication == "sync":
            legs.append(leg + peer_write)
        # acknowledged from the peer's RAM: its device write is off the path
        elif group.replication == "memory":
            legs.append(leg)
            off_path += peer_write
        else:  # async: the replica follows the acknowledgement
            off_path += [flow, *peer_write]
    after = []
    if chain.closed:
        after.append(
            Step(
                QUEUE, station=base + ADMIT, switch=ADMISSION, switch_host=h, switched_service=size
            )
        )
    return Op(index, "write", "write", probability, size, legs, background=off_path, after=after)
