"""One step of the analytic estimate's mean value analysis, on lists of Python floats.

:class:`simcache.estimate.solver.Solver` solves each state of a run by repeating :func:`mva_step`
until the queues settle (Schweitzer's fixed point, or the population recursion
of one chain). Its networks are small (12 to 40 stations, a few dozen closed
rows), so numpy's cost per call would dominate a step; here it is plain loops over
lists, which mypyc compiles to C in the estimate's group (``setup.py``). The speeds
measured: bench/README.md, "Round 4 (the estimate compiled; the MVA step on lists)".

Layout (the numbers come from :class:`simcache.estimate.network.Network` and ``Solver``):

- ``n`` stations; per-station lists have ``n`` entries.
- Station loads: 5 blocks of ``n`` (server-seconds per s, arrivals per s, the
  second moment of the service, and the open traffic's server-seconds and
  arrivals per s; a closed op's off-path work, such as a cache fill, is open
  traffic at its chain's rate). A closed chain's loads per unit throughput
  are kept sparse: the load cells (``block * n + station``) it touches, and
  its load on each.
- Closed chain x station figures are flattened as ``[chain * n + station]``.
- A closed op's legs are ``width`` slots (the last one: after the join),
  flattened as ``[op * width + leg]``.
- Transfers (flow rows) cross up to three ports, padded by repeating the
  first; ``*_ports[p][row]`` is the row's ``p``-th port.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import sqrt

__all__ = [
    "OVERLOAD_FLOOR",
    "StepNetwork",
    "StepRates",
    "Sweep",
    "aitken",
    "mva_step",
    "station_sums",
    "with_own_loads",
]

_TINY = 1e-300  # divides by it stand for "0 if the numerator is 0"
OVERLOAD_FLOOR = 0.02  # 1 - utilization used for the steady-state part of an overloaded station


@dataclass
class StepNetwork:
    """What every state of a scenario shares: its stations, rows and index lists."""

    stations: int
    chains: int  # closed chains
    per_server: list[float]  # per station: 1 / servers
    fcfs_per_server: list[float]  # per station: 1 / servers, 0 at ports (no FCFS wait)
    half_per_server: list[float]  # per station: 0.5 / servers
    exponent: list[float]  # per station: Sakasegawa's exponent of the utilization in P(wait)
    # Open transfers: per row its ports and the siblings on each; per real (row, port) pair its row
    # and station.
    open_ports: list[list[int]]
    open_siblings: list[list[float]]
    open_port_row: list[int]
    open_port_station: list[int]
    # Closed FCFS rows: station, (chain, station) cell, E[max] spread, arrivals per request, closed
    # op.
    closed_station: list[int]
    closed_cell: list[int]
    closed_spread: list[float]
    closed_share: list[float]
    closed_row_op: list[int]
    # Closed transfers: as the open ones, with the (chain, port) cell per port and the closed op per
    # row.
    closed_ports: list[list[int]]
    closed_siblings: list[list[float]]
    closed_port_cells: list[list[int]]
    closed_port_row: list[int]
    closed_flow_op: list[int]
    # Closed ops: leg slot of each closed FCFS row then each closed flow row; legs per op; -inf for
    # a missing leg (op x leg before the join); the op's chain; the chain x station cell of each
    # row, then of each (flow row, port) pair; think time (s) per chain.
    closed_local_slots: list[int]
    width: int
    closed_missing: list[float]
    closed_op_chain: list[int]
    closed_cells: list[int]
    think: list[float]


@dataclass
class StepRates:
    """One state's rates and service times (``Solver`` refreshes them when hit ratios or destage
    loads change)."""

    open_loads: list[float]  # 5 blocks of n: the open ops' and destagers' station loads
    closed_load_cells: list[list[int]]  # per closed chain: the load cells its ops load
    # per closed chain: its load on each of those cells per unit throughput
    closed_loads: list[list[float]]
    permanent: list[float]  # per station: transfers always present (running vMotion streams)
    open_flow_service: list[float]  # per open flow row: its time alone at line rate (s)
    open_port_rates: list[float]  # per open (row, port) pair: its row's arrivals per s
    population: list[float]  # customers per closed chain (0: off)
    own_rows: list[float]  # per closed FCFS row: 1 / its chain's customers (Schweitzer)
    own_flows: list[float]  # the same per closed flow row
    closed_base: list[float]  # per closed FCFS row: its service on the path (s)
    closed_svar: list[float]  # per closed FCFS row: its service variance on the path (s^2)
    closed_flow_service: list[float]  # per closed flow row: its time alone at line rate (s)
    closed_delays: list[float]  # closed op x leg: the delays on it (s)
    closed_probability: list[float]  # per closed op: its share of its chain's I/Os
    active: bool  # any closed chain on


@dataclass
class Sweep:
    """One MVA step's answer: new closed-chain figures, and the station figures and times it
    computed them from."""

    throughput: list[float]  # per closed chain (I/Os per s)
    queue: list[float]  # per station: closed customers there (waiting, or present at a port)
    # closed chain x station per station (closed throughputs held to the busiest station's capacity)
    chain_queue: list[float]
    utilization: list[float]
    open_utilization: list[float]  # per station: the open traffic's share
    busy: list[float]  # per station: server-seconds per second
    open_queue: list[float]  # per station: open customers waiting (FCFS) or present (ports)
    open_wait: list[float]  # per station: an open customer's FCFS wait (s)
    open_flow_time: list[float]  # per open flow row: its time on the path (s)
    closed_wait: list[float]  # per closed FCFS row: its wait (s)
    closed_time: list[float]  # per closed FCFS row: its time on the path (s)
    closed_flow_time: list[float]  # per closed flow row: its time on the path (s)


def mva_step(
    net: StepNetwork,
    rates: StepRates,
    throughput: list[float],
    queue: list[float],
    chain_queue: list[float],
    exact: list[float] | None,
) -> Sweep:
    """Residences from the current queues, then new throughputs and queues (one MVA step).

    ``throughput``: per closed chain (0 for chains that are off); ``queue``: closed customers per
    station; ``chain_queue``: the same per chain. A closed customer sees the queue less its chain's
    share (Schweitzer), or with ``exact`` (that step's population of the population recursion) the
    whole queue.
    """
    n = net.stations
    loads = _loads(rates, throughput)
    per_server = net.per_server
    utilization = [loads[i] * per_server[i] for i in range(n)]
    open_utilization = [loads[3 * n + i] * per_server[i] for i in range(n)]
    if rates.active and max(utilization) > 1.0:
        scale = _capacity_scale(utilization, open_utilization)
        if scale < 1.0:  # hold the closed chains to the busiest station's capacity
            throughput = [x * scale for x in throughput]
            loads = _loads(rates, throughput)
            utilization = [loads[i] * per_server[i] for i in range(n)]
    busy = loads[:n]
    # FCFS wait (s) of a customer that finds `waiting` customers ahead: (S waiting + P_wait R) / c,
    # with S the mean service, R = E[S^2] / 2 E[S] the residual and P_wait Sakasegawa's.
    # (Conditional expressions rather than min() and max() in this module: compiled, they stay C
    # arithmetic.)
    per_waiting = [0.0] * n
    fixed = [0.0] * n
    open_wait = [0.0] * n
    free = [0.0] * n
    fcfs_per_server, half_per_server, exponent = (
        net.fcfs_per_server,
        net.half_per_server,
        net.exponent,
    )
    for i in range(n):
        b = busy[i]
        arrivals = loads[n + i]
        per_waiting[i] = b / (arrivals if arrivals > _TINY else _TINY) * fcfs_per_server[i]
        u = utilization[i]
        fixed[i] = (
            (u if u < 1.0 else 1.0) ** exponent[i]
            * (loads[2 * n + i] / (b if b > _TINY else _TINY))
            * half_per_server[i]
        )
        # Open arrivals see the closed queues time-averaged (PASTA) and queue behind each other. An
        # overloaded station never reaches a steady state: its queue is the fluid one the timeline
        # adds.
        u = open_utilization[i]
        free[i] = 1.0 / (1.0 - u) if u < 1.0 - OVERLOAD_FLOOR else 1.0
        open_wait[i] = (per_waiting[i] * queue[i] + fixed[i]) * free[i]
    # Little's law: open customers waiting at FCFS stations, and present at ports.
    at_ports = [0.0] * n
    open_flow_time: list[float] = []
    port_rows = net.open_port_row
    if port_rows:
        permanent = rates.permanent
        slowdown = [(1.0 + queue[i] + permanent[i]) * free[i] for i in range(n)]
        open_flow_time = _flow_times(
            net.open_ports, net.open_siblings, slowdown, rates.open_flow_service
        )
        port_stations, port_rates = net.open_port_station, rates.open_port_rates
        for j in range(len(port_rows)):
            at_ports[port_stations[j]] += port_rates[j] * open_flow_time[port_rows[j]]
    open_queue = [open_wait[i] * loads[4 * n + i] + at_ports[i] for i in range(n)]
    if rates.active:
        closed = _closed_step(net, rates, queue, open_queue, chain_queue, exact, per_waiting, fixed)
    else:  # no closed customers: their queues stay empty
        rows = len(net.closed_station)
        closed = (
            [0.0] * net.chains,
            [0.0] * n,
            [0.0] * (net.chains * n),
            [0.0] * rows,
            [0.0] * rows,
            [0.0] * len(net.closed_flow_op),
        )
    throughput, closed_queue, new_chain_queue, closed_wait, closed_time, closed_flow_time = closed
    return Sweep(
        throughput,
        closed_queue,
        new_chain_queue,
        utilization,
        open_utilization,
        busy,
        open_queue,
        open_wait,
        open_flow_time,
        closed_wait,
        closed_time,
        closed_flow_time,
    )


def with_own_loads(net: StepNetwork, rates: StepRates, sweep: Sweep) -> Sweep:
    """``sweep`` with its station loads (utilization, open share, busy) computed at its own
    throughputs.

    A step computes the loads from the throughputs it was given, which a converged fixed point
    returns unchanged, but the last step of the exact population recursion is given the
    throughputs of one customer fewer (none at all for a population of one)."""
    n = net.stations
    loads = _loads(rates, sweep.throughput)
    per_server = net.per_server
    return Sweep(
        sweep.throughput,
        sweep.queue,
        sweep.chain_queue,
        [loads[i] * per_server[i] for i in range(n)],
        [loads[3 * n + i] * per_server[i] for i in range(n)],
        loads[:n],
        sweep.open_queue,
        sweep.open_wait,
        sweep.open_flow_time,
        sweep.closed_wait,
        sweep.closed_time,
        sweep.closed_flow_time,
    )


def _loads(rates: StepRates, throughput: list[float]) -> list[float]:
    """Station loads (5 blocks of n) at these closed throughputs: the open ones plus the closed
    chains'."""
    loads = list(rates.open_loads)
    for k in range(len(throughput)):
        rate = throughput[k]
        if rate != 0.0:
            cells, values = rates.closed_load_cells[k], rates.closed_loads[k]
            for j in range(len(cells)):
                loads[cells[j]] += values[j] * rate
    return loads


def _capacity_scale(utilization: list[float], open_utilization: list[float]) -> float:
    """What the closed chains' throughputs must be scaled by so that no station runs above 100%
    because of them (MVA with non-exponential residuals can admit more than a station serves):
    the smallest share of their load that fits in what the open traffic leaves, over the stations
    they overload (1.0: none)."""
    scale = 1.0
    for u, u_open in zip(utilization, open_utilization, strict=True):
        if u > 1.0 and u > u_open:
            scale = min(scale, (1.0 - min(u_open, 1.0)) / (u - u_open))
    return scale


def _flow_times(
    ports: list[list[int]],
    siblings: list[list[float]],
    slowdown: list[float],
    service: list[float],
    own: tuple[list[list[int]], list[float], list[float]] | None = None,
) -> list[float]:
    """Per transfer row: its service times the largest slowdown plus siblings over its (up to three)
    ports.

    ``own``: for closed rows (Schweitzer), each port's (chain, port) cell, the chain x station queue
    and the row's 1 / customers: each port's slowdown less the row's chain's own share of the
    customers there.
    """
    first, second, third = ports[0], ports[1], ports[2]
    first_s, second_s, third_s = siblings[0], siblings[1], siblings[2]
    cells, chain_queue, share = own if own is not None else ([[], [], []], [], [])
    first_c, second_c, third_c = cells[0], cells[1], cells[2]
    times = [0.0] * len(service)
    for r in range(len(times)):
        a = slowdown[first[r]] + first_s[r]
        b = slowdown[second[r]] + second_s[r]
        c = slowdown[third[r]] + third_s[r]
        if own is not None:
            a -= chain_queue[first_c[r]] * share[r]
            b -= chain_queue[second_c[r]] * share[r]
            c -= chain_queue[third_c[r]] * share[r]
        a = a if a >= b else b
        times[r] = service[r] * (a if a >= c else c)
    return times


def _closed_step(
    net: StepNetwork,
    rates: StepRates,
    queue: list[float],
    open_queue: list[float],
    chain_queue: list[float],
    exact: list[float] | None,
    per_waiting: list[float],
    fixed: list[float],
) -> tuple[list[float], list[float], list[float], list[float], list[float], list[float]]:
    """The closed chains' part of :func:`mva_step`: their rows' waits and times, the ops' responses,
    and new throughputs and chain x station queues (Little's law on every leg). ``per_waiting`` and
    ``fixed``: per station, an FCFS wait (s) per customer found waiting and its part that does not
    depend on them.

    Returns :class:`Sweep`'s closed figures: throughput, queue, chain_queue, closed_wait,
    closed_time and closed_flow_time.
    """
    n = net.stations
    seen = [queue[i] + open_queue[i] for i in range(n)]
    # Closed rows: each sees the queue less its own chain's share (none in the population
    # recursion).
    stations, cells, own_rows = net.closed_station, net.closed_cell, rates.own_rows
    base, svar, spread = rates.closed_base, rates.closed_svar, net.closed_spread
    rows = len(stations)
    closed_wait = [0.0] * rows
    closed_time = [0.0] * rows
    for r in range(rows):
        at = stations[r]
        waiting = seen[at]
        if exact is None:
            own = chain_queue[cells[r]] * own_rows[r]
            waiting -= own if own < queue[at] else queue[at]
        wait = per_waiting[at] * waiting + fixed[at]
        closed_wait[r] = wait
        closed_time[r] = base[r] + wait + spread[r] * sqrt(svar[r] + wait * wait)
    flow_ops = net.closed_flow_op
    closed_flow_time: list[float] = []
    if flow_ops:
        permanent = rates.permanent
        slowdown = [1.0 + seen[i] + permanent[i] for i in range(n)]
        own_shares = (
            (net.closed_port_cells, chain_queue, rates.own_flows) if exact is None else None
        )
        closed_flow_time = _flow_times(
            net.closed_ports, net.closed_siblings, slowdown, rates.closed_flow_service, own_shares
        )
    # Each closed op waits for its slowest leg, then its steps after the join.
    delays = rates.closed_delays
    on_legs = [0.0] * len(delays)
    slots = net.closed_local_slots
    for r in range(rows):
        on_legs[slots[r]] += closed_time[r]
    for r in range(len(closed_flow_time)):
        on_legs[slots[rows + r]] += closed_flow_time[r]
    legs = [delays[j] + on_legs[j] for j in range(len(delays))]
    width = net.width
    chains = net.chains
    population = rates.population if exact is None else exact
    cycle = [0.0] * chains
    probability = rates.closed_probability
    op_chain, missing = net.closed_op_chain, net.closed_missing
    for o in range(len(op_chain)):
        first = o * width
        slowest = legs[first] + missing[o * (width - 1)]
        for j in range(1, width - 1):
            leg = legs[first + j] + missing[o * (width - 1) + j]
            slowest = leg if leg > slowest else slowest
        cycle[op_chain[o]] += probability[o] * (slowest + legs[first + width - 1])
    think = net.think
    throughput = [0.0] * chains
    for k in range(chains):
        cycle_time = think[k] + cycle[k]
        throughput[k] = population[k] / (cycle_time if cycle_time > _TINY else _TINY)
    # Little's law on every leg of the closed ops.
    op_rate = [throughput[op_chain[o]] * probability[o] for o in range(len(op_chain))]
    # Little's law on every leg of the closed ops, summed per chain x station and per station as it
    # goes (a sum over the chains afterwards costs chains x stations: seconds with thousands of
    # chains).
    new_chain_queue = [0.0] * (chains * n)
    new_queue = [0.0] * n
    queue_cells, row_op, share = net.closed_cells, net.closed_row_op, net.closed_share
    for r in range(rows):
        cell = queue_cells[r]
        value = op_rate[row_op[r]] * share[r] * closed_wait[r]
        new_chain_queue[cell] += value
        new_queue[cell % n] += value
    port_rows = net.closed_port_row
    for j in range(len(port_rows)):
        row = port_rows[j]
        cell = queue_cells[rows + j]
        value = op_rate[flow_ops[row]] * closed_flow_time[row]
        new_chain_queue[cell] += value
        new_queue[cell % n] += value
    return throughput, new_queue, new_chain_queue, closed_wait, closed_time, closed_flow_time


def station_sums(chain_queue: list[float], chains: int, stations: int) -> list[float]:
    """Per station, the sum over the chains of a chain x station list."""
    sums = chain_queue[:stations] if chains else [0.0] * stations
    for k in range(1, chains):
        base = k * stations
        sums = [sums[i] + chain_queue[base + i] for i in range(stations)]
    return sums


def aitken(first: list[float], second: list[float], third: list[float]) -> list[float]:
    """Aitken's delta-squared extrapolation of three successive iterates, element by element.

    An element jumps only where the iterates move monotonically (and not to a negative value). A
    queue next to saturation creeps towards its fixed point by a factor of about its utilization per
    step: this jumps there.
    """
    out = list(third)
    for i in range(len(third)):
        a, b, c = first[i], second[i], third[i]
        denominator = c - 2.0 * b + a
        step = c - b
        if abs(denominator) > 1e-12 and step * (b - a) > 0.0:
            jump = c - step * step / denominator
            if jump >= 0.0:
                out[i] = jump
    return out
