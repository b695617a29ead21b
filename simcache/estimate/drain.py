"""How fast a host's flushers destage: their drain capacity with a backlog, and what they move.

A state's solution (:class:`simcache.estimate.solver.Solver`) asks, each time
its queues come near their fixed point, how many bytes a second each host's
flushers could destage at the utilizations it has reached (:func:`drains`):
full batches through the storage link and the array, as a closed loop of the
destager's ``concurrency`` customers, at most what the tier's scheduling lets
destage reads have (:func:`tier_limit`), with the other hosts' flushers held to
a fair share of the array. :func:`flusher_rate` is what the flushers then move,
by the buffer's mode. The procedure is in ``docs/estimate.md`` (Destager).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from simcache.estimate.theory.mva_step import OVERLOAD_FLOOR, Sweep
from simcache.estimate.theory.numeric import Floats
from simcache.estimate.theory.queueing import mva_closed
from simcache.estimate.theory.state import KEEPING_UP
from simcache.estimate.theory.stations import ARRAY, ARRAY_RX, CONTROLLER, STORAGE_TX, TIER

if TYPE_CHECKING:
    from simcache.estimate.layout import Layout

__all__ = ["STARVED_DRAIN", "drains", "flusher_rate", "tier_limit"]

STARVED_DRAIN = 1.0
"""Bytes/s: the drain capacity of flushers that get nothing through (the array or its port
overloaded, or the tier's scheduling starving them): a floor that keeps the admission server's
service time finite. Read it as zero: a buffer drained at it never empties."""


def drains(
    c: Layout,
    buffer: tuple[int, ...],
    destage_rates: list[float],
    destage_loads: Floats,
    batch_rates: Floats,
    sweep: Sweep,
) -> list[float]:
    """Per host, the bytes/s its flushers destage with a backlog (infinite for a host that never
    destages): full batches, at most what the shared stations leave.

    ``buffer`` is each host's buffer mode (the state's), ``destage_rates`` the bytes/s each host's
    flushers move in the solution so far, ``destage_loads`` the station loads of one destage
    batch a second per host and ``batch_rates`` the batches a second each host's flushers send
    (see :meth:`simcache.estimate.solver.Solver._set_destage`).

    The flushers are a closed loop of ``concurrency`` customers: the storage transfer and the
    array's spindle work are queues (slowed by the other traffic there, as in mixed MVA); the
    tier read, the latencies and the wait for the batch's most loaded spindle (binomial
    operation counts) are delays. Behind a controller write cache the spindles are no queue of
    theirs (the cache acknowledges), but in the long run they get no more of the spindles' time
    than the other traffic leaves.

    The other traffic at the spindles is the VMs' (read misses, write-through writes) as it is,
    and the other hosts' flushers held to a fair share of the spindle time the VMs leave
    (:func:`_held_to`): each other host keeps what it moves where that is less than an even
    share, else gets the even share, as when this host's flushers take all they can. (Counted at
    the rates they move in the solution so far, several backlogged hosts each took what the
    others left in the last pass: all of them the whole array in one pass, none of it in the
    next, and the solution stopped on either.)
    """
    utilization = sweep.utilization
    array_util = utilization[c.shared + ARRAY]
    array_rx = utilization[c.shared + ARRAY_RX]
    hosts = [h for h in range(c.hosts) if c.destaging_hosts[h]]
    backlogged = [mode != KEEPING_UP for mode in buffer]
    # each host's flushers' share of the spindles' time at the rates they move now
    flushing = [
        destage_rates[h] * _array_per_byte(c, backlogged[h], h, destage_rates[h]) for h in hosts
    ]
    # the spindles' time the VMs leave the flushers
    spare = 1.0 - max(0.0, array_util - sum(flushing))
    ports = [utilization[h * c.per_host + STORAGE_TX] for h in hosts]
    tiers = [tier_limit(c, destage_loads[:, h] * batch_rates[h], h, sweep) for h in hosts]
    # alike hosts (same write mix, load, port and share of the array) drain alike
    known: dict[tuple[Any, ...], float] = {}

    def capacity(i: int, array_left: float) -> float:
        h = hosts[i]
        inputs = (
            c.batches.write_mix[h],
            destage_rates[h],
            ports[i],
            tiers[i],
            backlogged[h],
            array_left,
        )
        rate = known.get(inputs)
        if rate is None:
            rate = known[inputs] = _drain(
                c, h, destage_rates[h], array_left, array_rx, ports[i], tiers[i]
            )
        return rate

    # what each host's flushers would take of the spindles: with a backlog, all they get alone;
    # keeping up, what they move
    wants = [
        capacity(i, spare) * c.batches.full(h).array_per_byte if backlogged[h] else flushing[i]
        for i, h in enumerate(hosts)
    ]
    rates = [math.inf] * c.hosts
    for i, h in enumerate(hosts):
        others = flushing[:i] + flushing[i + 1 :]
        held = _held_to(spare, wants[:i] + wants[i + 1 :])
        # the other hosts' flushers moved from what they move to their fair share
        moved = sum(now - share for now, share in zip(others, held, strict=True))
        array_left = 1.0 - max(0.0, array_util - flushing[i] - moved)
        rates[h] = max(capacity(i, array_left), STARVED_DRAIN)
    return rates


def _held_to(spare: float, wants: list[float]) -> list[float]:
    """The spindle time (fractions) flushers that want ``wants`` each get when they share
    ``spare`` max-min fair with one more host's flushers, which take all they can: each keeps
    what it wants where that is less than an even share of what those wanting less leave, else
    gets that share."""
    left = max(spare, 0.0)
    sharing = len(wants) + 1
    for want in sorted(wants):
        if want * sharing >= left:
            break
        left -= want
        sharing -= 1
    even = left / sharing
    return [min(want, even) for want in wants]


def tier_limit(c: Layout, own_loads: Floats, host: int, sweep: Sweep) -> float:
    """Bytes/s of destage reads the host's tier lets through (infinite under ``fcfs``
    scheduling, where they queue with the VMs' I/O). Under ``priority`` a destage read starts
    only when the device has no VM I/O booked: the flushers get the share of time it holds
    none, taken as ``exp(-L)`` (the VMs' I/Os present, L of them on average, as a Poisson
    number: in service at its units or command processor, or waiting for the processor; their
    waits for units and pipe are left out, as the estimate queues destage reads with them
    there, ``fcfs``), at the reads' cost on the part they load most (per
    ``background_request``: the read latency and channel time on a unit, the command on the
    processor, the transfer on the pipe and its unit). Under ``weighted``, at least
    ``background_share`` of the pipe's transfer time besides. A closed loop of many
    outstanding I/Os on the tier keeps it booked and starves the destager, as in the
    simulator.

    ``own_loads`` are the station loads of the host's own flushers at the rate they move now:
    their reads are not VM I/O, so they are taken out of what keeps the device booked (counted
    as one batch a second, whatever the rate, a flusher moving gigabytes a second found its
    tier booked by its own reads and drained a fifth of what it had moved the pass before: the
    estimate swung between the two and stopped on either; review 65)."""
    tier = c.scenario.cluster.tier
    if tier.scheduling == "fcfs":
        return math.inf
    services = c.services
    base = host * c.per_host
    units, processor = base + TIER, base + CONTROLLER
    serving = max(0.0, sweep.busy[units] - float(own_loads[units])) + max(
        0.0, sweep.busy[processor] - float(own_loads[processor])
    )
    present = serving + sweep.queue[processor] + sweep.open_queue[processor]
    request = float(tier.background_request)
    transfer = 1.0 / services.read_rate
    cost = max(
        services.read_command / request,
        (services.tier_read_latency / request + services.read_channel + transfer)
        * float(c.network.per_server[units]),
        transfer,
    )
    limit = math.exp(-present) / cost
    if tier.scheduling == "weighted":
        limit = max(limit, tier.background_share / transfer)
    return limit


def _drain(
    c: Layout,
    host: int,
    own: float,
    array_left: float,
    array_rx: float,
    port: float,
    tier: float,
) -> float:
    """One host's drain capacity (bytes/s, see :func:`drains`) with its flushers moving ``own``
    bytes/s and ``array_left`` of the spindles' time left by the other traffic, at these
    utilizations of the array's receiving port and the host's storage sending port, and at most
    ``tier`` bytes/s, what the tier's scheduling lets its reads have (:func:`tier_limit`)."""
    full = c.batches.full(host)
    own_wire = own * full.wire / full.size
    port_left = min(1.0 - port + own_wire, 1.0 - array_rx + own_wire)
    cached = c.services.cache_ack is not None
    array_demand = 0.0 if cached else full.spindle_demand / max(array_left, OVERLOAD_FLOOR)
    wire = full.wire / max(port_left, OVERLOAD_FLOOR)
    batches, _, _ = mva_closed([wire, array_demand], full.delays, c.destager.concurrency)
    limit = max(array_left, 0.0) / full.array_per_byte if cached else math.inf
    return min(batches * full.size, limit, tier)


def _array_per_byte(c: Layout, backlogged: bool, host: int, byte_rate: float) -> float:
    """Spindle-seconds per byte, per spindle, of the host's destage batches at ``byte_rate``
    bytes/s (``backlogged``: its buffer has a backlog)."""
    if byte_rate <= 0:
        return 0.0
    batch, runs = c.batches.shape(host, byte_rate, backlogged)
    operations, mean, _ = c.services.batch_request(batch, runs, c.batches.unmoved(host))
    return operations * mean / batch / c.services.spindles


def flusher_rate(mode: int, write_back: float, drain: float) -> float:
    """Bytes/s a destaging host's flushers move with its buffer in ``mode``: their drain capacity
    with a backlog, else what the VMs write (``write_back`` bytes/s), at most that capacity
    (``drain`` bytes/s)."""
    return drain if mode != KEEPING_UP else min(write_back, drain)
