"""How fast a host's flushers destage: their drain capacity with a backlog, and what they move.

A state's solution (:class:`simcache.estimate.solver.Solver`) asks, each time
its queues come near their fixed point, how many bytes a second each host's
flushers could destage at the utilizations it has reached (:func:`drains`):
full batches through the storage link and the array, as a closed loop of the
destager's ``concurrency`` customers, at most what the tier's scheduling lets
destage reads have (:func:`tier_limit`). :func:`flusher_rate` is what the
flushers then move, by the buffer's mode. The procedure is in
``docs/estimate.md`` (Destager).
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
    sweep: Sweep,
) -> list[float]:
    """Per host, the bytes/s its flushers destage with a backlog (infinite for a host that never
    destages): full batches, at most what the shared stations leave.

    ``buffer`` is each host's buffer mode (the state's), ``destage_rates`` the bytes/s each host's
    flushers move in the solution so far and ``destage_loads`` the station loads of one destage
    batch a second per host (see :meth:`simcache.estimate.solver.Solver._set_destage`).

    The flushers are a closed loop of ``concurrency`` customers: the storage transfer and the
    array's spindle work are queues (slowed by the other traffic there, as in mixed MVA); the
    tier read, the latencies and the wait for the batch's most loaded spindle (binomial
    operation counts) are delays.
    """
    utilization = sweep.utilization
    array_util = utilization[c.shared + ARRAY]
    array_rx = utilization[c.shared + ARRAY_RX]
    rates = []
    # alike hosts (same write mix, load and port) drain alike
    known: dict[tuple[Any, ...], float] = {}
    for host in range(c.hosts):
        if not c.destaging_hosts[host]:
            rates.append(math.inf)
            continue
        own = destage_rates[host]
        port = utilization[host * c.per_host + STORAGE_TX]
        tier = tier_limit(c, destage_loads, host, sweep)
        backlogged = buffer[host] != KEEPING_UP
        inputs = (c.batches.write_mix[host], own, port, tier, backlogged)
        drain = known.get(inputs)
        if drain is None:
            drain = known[inputs] = _drain(
                c, backlogged, host, own, array_util, array_rx, port, tier
            )
        rates.append(drain)
    return rates


def tier_limit(c: Layout, destage_loads: Floats, host: int, sweep: Sweep) -> float:
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
    simulator."""
    tier = c.scenario.cluster.tier
    if tier.scheduling == "fcfs":
        return math.inf
    services = c.services
    base = host * c.per_host
    units, processor = base + TIER, base + CONTROLLER
    own = float(destage_loads[units, host])  # the flushers' own reads at the units
    serving = max(0.0, sweep.busy[units] - own) + sweep.busy[processor]
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
    backlogged: bool,
    host: int,
    own: float,
    array_util: float,
    array_rx: float,
    port: float,
    tier: float,
) -> float:
    """One host's drain capacity (bytes/s, see :func:`drains`) with its flushers moving ``own``
    bytes/s, at these utilizations of the array, the array's receiving port and the host's storage
    sending port, and at most ``tier`` bytes/s, what the tier's scheduling lets its reads have
    (:func:`tier_limit`)."""
    full = c.batches.full(host)
    array_left = 1.0 - max(0.0, array_util - own * _array_per_byte(c, backlogged, host, own))
    own_wire = own * full.wire / full.size
    port_left = min(1.0 - port + own_wire, 1.0 - array_rx + own_wire)
    array_demand = (
        0.0
        if c.services.cache_ack is not None
        else full.spindle_demand / max(array_left, OVERLOAD_FLOOR)
    )
    wire = full.wire / max(port_left, OVERLOAD_FLOOR)
    batches, _, _ = mva_closed([wire, array_demand], full.delays, c.destager.concurrency)
    limit = (
        max(array_left, 0.0) / full.array_per_byte if c.services.cache_ack is not None else math.inf
    )
    return max(min(batches * full.size, limit, tier), STARVED_DRAIN)


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
