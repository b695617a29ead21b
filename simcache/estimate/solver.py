"""The solution of one state: mean value analysis with the destage load and read hit ratios it
implies.

:class:`Solver` repeats :func:`simcache.estimate.theory.mva_step.mva_step` until the
queues settle (Schweitzer's fixed point, or the population recursion of one
closed chain); the procedure is in ``docs/estimate.md`` (Queueing, Destager).
The destage load it checks the queues against, what each host's flushers
can drain at the utilizations reached, is :mod:`simcache.estimate.drain`.
:func:`solve_hit_ratios` is the step before the timeline: the read hit ratios
every state is solved with.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from simcache.estimate.drain import drains, flusher_rate
from simcache.estimate.theory.mva_step import (
    StepRates,
    Sweep,
    aitken,
    mva_step,
    station_sums,
    with_own_loads,
)
from simcache.estimate.theory.numeric import TOLERANCE, Floats, pass_limit, sums
from simcache.estimate.theory.state import FULL, KEEPING_UP, StateKey, StateResult

if TYPE_CHECKING:
    from simcache.estimate.layout import Layout

__all__ = ["SOLVER_STATE", "TOLERANCE", "HitRatios", "Solver", "solve_hit_ratios"]

_EXACT_MVA_LIMIT = 16
_MAX_OUTER = 6  # exact MVA: population recursions until the destage load settles
# queue change (relative) at which a fixed point checks its destage load and hit ratios
_LOOSE = 1e-2
STALL_PASSES = 100
"""Passes a fixed point may go on without cutting its smallest change so far by ``STALL_GAIN``:
then it oscillates and stops, reported as not converged (a fuzzed 53-group scenario's destage
load and queues swung between the same patterns for all 500 passes of each of its 7 states, 2.2 s
compiled). Its smallest change counts across changes of the destage load, so a load that keeps
moving does not restart the count. A queue creeping towards saturation at 0.1% a pass still gains
10% in 100 passes."""
STALL_GAIN = 0.9
_SETTLED = 0.01  # destage rates within this (relative) of the ones solved with are settled
_HIT_SETTLED = 1e-3  # hit ratios within this of the ones solved with are settled


# What Solver.copy() carries over besides the layout, the state key and the network: every other
# attribute (tests/estimate/test_estimate.py checks the list against a solved solver's).
SOLVER_STATE = (
    "active",
    "batches",
    "closed_svar",
    "delay_sums",
    "destage_loads",
    "destage_rates",
    "drain",
    "exact",
    "hit",
    "on",
    "op_loads",
    "op_scale",
    "open_flow_service",
    "open_rates",
    "open_scv",
    "open_service",
    "open_share",
    "open_spread",
    "population",
    "rates",
    "passes",
    "residual",
    "result",
    "solution",
)


class Solver:
    """One state: its op rates and service times, and the mean value analysis that solves it.

    Station loads are linear in the rates: ``rates.open_loads`` (open ops and destagers) plus
    ``rates.closed_loads`` times the closed chains' throughputs; both are kept up to date when the
    hit ratios or the destage load change (:meth:`_rates_changed`).
    """

    def __init__(self, layout: Layout, key: StateKey, hit: list[float] | None):
        """The state ``key`` with these read hit ratios; with ``hit`` None an empty shell for
        :meth:`copy`."""
        self.c = layout
        self.key = key
        # set by _fixed_point when it gives up: its last pass's relative queue change
        self.residual = 0.0
        self.passes = 0  # and the passes it took
        net = layout.network
        self.net = net
        if hit is None:
            return
        hosts = layout.hosts
        on_groups = np.zeros(len(layout.scenario.groups))
        on_groups[list(key.groups)] = 1.0
        self.on = on_groups[net.op_group]
        chains = [layout.chains[chain] for chain in net.closed_chains]
        # 0: off
        self.population = [
            float(chain.customers) if chain.group in key.groups else 0.0 for chain in chains
        ]
        self.active = [slot for slot, customers in enumerate(self.population) if customers > 0]
        self.exact = len(self.active) == 1 and self.population[self.active[0]] <= _EXACT_MVA_LIMIT
        # Schweitzer: 1 / N
        own_share = [1.0 / customers if customers > 0 else 0.0 for customers in self.population]
        services = net.services(key)
        rows = net.open_fcfs
        # copies: the destage rows change with the destage load
        self.open_service = services.open_fcfs.copy()
        self.open_scv = rows.scv.copy()
        self.open_share = rows.share.copy()
        self.open_spread = rows.spread.copy()
        self.open_flow_service = services.open_flows.copy()
        self.closed_svar = services.closed_svar
        self.delay_sums = services.delay_sums
        self.op_loads = services.op_loads
        self.batches = np.zeros(hosts)  # destage batches per s
        self.destage_rates = [0.0] * hosts  # bytes/s each host's flushers move
        self.destage_loads = np.zeros((5 * layout.station_count, hosts))
        self.drain = [math.inf] * hosts
        self.solution: Sweep  # set by solve(): its last MVA step
        self.result: StateResult  # set by solve()
        # What mva_step reads, as lists; the loads and probabilities are set by _set_hits.
        self.rates = StepRates(
            open_loads=[],
            closed_load_cells=[],
            closed_loads=[],
            permanent=layout.permanent_flows(key.vmotions),
            open_flow_service=self.open_flow_service.tolist(),
            open_port_rates=[],
            population=self.population,
            own_rows=[own_share[chain] for chain in net.closed_fcfs.chain.tolist()],
            own_flows=[own_share[chain] for chain in net.closed_flows.chain.tolist()],
            closed_base=services.closed_base.tolist(),
            closed_svar=self.closed_svar.tolist(),
            closed_flow_service=services.closed_flows.tolist(),
            closed_delays=services.closed_delays.ravel().tolist(),
            closed_probability=[],
            active=bool(self.active),
        )
        self._set_hits(hit)

    def _set_hits(self, hit: list[float]) -> None:
        """Op probabilities with these read hit ratios (0 for ops of groups that are off)."""
        net = self.net
        self.hit = hit
        chain_hit = np.array(hit)[net.op_chain]
        split = np.where(net.op_hit, chain_hit, np.where(net.op_miss, 1.0 - chain_hit, 1.0))
        probability = net.op_probability * split * self.on
        # I/Os per s of an open op; per unit throughput of a closed one
        self.op_scale = probability * net.op_unit_rate
        self.rates.closed_probability = probability[net.closed_ops].tolist()
        self._rates_changed()

    def _set_destage(self, byte_rates: list[float]) -> None:
        """Open load of destaging ``byte_rates`` bytes/s per host: tier reads, storage transfers,
        array writes."""
        c = self.c
        net = self.net
        for host, byte_rate in enumerate(byte_rates):
            if byte_rate <= 0:
                self.batches[host] = 0.0
                continue
            batch, runs = c.batches.shape(host, byte_rate, self.key.buffer[host] != KEEPING_UP)
            self.batches[host] = byte_rate / batch
            steps = c.services.destage_steps(batch, runs, c.batches.unmoved(host))
            rows = net.destage_fcfs[host]
            self.open_service[rows] = steps.service
            self.open_scv[rows] = steps.scv
            self.open_share[rows] = steps.share
            self.open_spread[rows] = steps.spread
            self.open_flow_service[net.destage_flow[host]] = steps.wire
        self.rates.open_flow_service = self.open_flow_service.tolist()
        self.destage_rates = list(byte_rates)
        every = net.destage_fcfs_rows
        share = self.open_share[every]
        service = self.open_service[every]
        busy = share * service
        ports = (
            self.open_flow_service[net.open_flows.port_row[net.destage_flow_ports]]
            * net.open_port_scale[net.destage_flow_ports]
        )
        weights = (
            busy,
            share,
            busy * service * (1.0 + self.open_scv[every]),
            busy,
            share,
            ports,
            ports,
        )
        hosts = c.hosts
        flat = sums(net.destage_load_cells, np.concatenate(weights), 5 * net.stations * hosts)
        self.destage_loads = flat.reshape(5 * net.stations, hosts)
        self._open_rates_changed()

    def _rates_changed(self) -> None:
        """Station loads and open flow rates after the op probabilities changed."""
        net = self.net
        self.open_rates = self.op_scale * net.op_open
        # Closed chain x load cell: each closed op's loads added to its chain's row (an op x chain
        # matrix of ones was 380 MB with 4,000 chains).
        ops = net.closed_ops
        per_chain = np.zeros((len(net.closed_chains), self.op_loads.shape[0]))
        np.add.at(per_chain, net.op_chain_slot[ops], (self.op_loads[:, ops] * self.op_scale[ops]).T)
        cells = [np.flatnonzero(loads) for loads in per_chain]
        self.rates.closed_load_cells = [nonzero.tolist() for nonzero in cells]
        self.rates.closed_loads = [
            loads[nonzero].tolist() for loads, nonzero in zip(per_chain, cells, strict=True)
        ]
        self._open_rates_changed()

    def _open_rates_changed(self) -> None:
        """The open station loads and open flow rates after the open op rates or the destage load
        changed."""
        net = self.net
        self.rates.open_loads = (
            self.op_loads.dot(self.open_rates) + self.destage_loads.dot(self.batches)
        ).tolist()
        rates = np.concatenate((self.open_rates, self.batches))
        flows = net.open_flows
        self.rates.open_port_rates = rates[flows.rate[flows.port_row]].tolist()

    # -- mean value analysis ---------------------------------------------------------------------

    def solve(self, warm: Solver | None = None, refine_hits: bool = False) -> StateResult:
        """Mean value analysis of the state, with the destage load it implies (and, with
        ``refine_hits``, the read hit ratios its closed chains' rates imply): the flushers move what
        the VMs write while the buffer keeps up, and their drain capacity when there is a backlog.

        ``warm``: a solved neighbouring state, whose queues and destage load start the iteration.
        """
        chains = len(self.population)
        stations = self.net.stations
        throughput = [0.0] * chains
        queue = [0.0] * stations
        chain_queue = [0.0] * (chains * stations)
        if warm is not None:
            solution = warm.solution
            for k in self.active:
                throughput[k] = solution.throughput[k]
                cells = slice(k * stations, (k + 1) * stations)
                chain_queue[cells] = solution.chain_queue[cells]
            queue = list(solution.queue)
            self._set_destage(self._implied_destage(throughput, warm.drain))
        if self.exact:
            if warm is None:
                self._guess_destage()
            return self._solve_exact(refine_hits)
        if warm is None and self.active:
            throughput, queue, chain_queue = self._bound_start(throughput, queue, chain_queue)
        self.solution = self._fixed_point(throughput, queue, chain_queue, refine_hits)
        self.result = self._collect(self.solution)
        return self.result

    def _fixed_point(
        self,
        throughput: list[float],
        queue: list[float],
        chain_queue: list[float],
        refine_hits: bool,
    ) -> Sweep:
        """Schweitzer's fixed point from this start, with the destage load (and hit ratios) it
        implies: until no queue moves by more than ``TOLERANCE`` times 1 + the longest queue. One
        pass if all traffic is open."""
        history: list[list[float]] = []
        checked = False  # the destage load (and hit ratios) were checked since they last changed
        self.residual = 0.0
        self.passes = 0
        passes = pass_limit(len(self.net.step.closed_station))
        best, best_at = math.inf, 0  # smallest relative change so far, and at which pass
        for done in range(passes):
            sweep = self._sweep(throughput, queue, chain_queue)
            change = max([abs(new - old) for new, old in zip(sweep.queue, queue, strict=True)])
            throughput, queue, chain_queue = sweep.throughput, sweep.queue, sweep.chain_queue
            limit = 1.0 + max(queue)
            self.residual = change / limit
            if self.residual < best * STALL_GAIN:
                best, best_at = self.residual, done
            elif done - best_at >= STALL_PASSES:
                passes = done + 1
                break
            converged = change <= TOLERANCE * limit
            if converged or (not checked and change <= _LOOSE * limit):
                # Near the fixed point for the current destage load: is that load (and the hit
                # ratios) settled?
                self.drain = self._drains(sweep)
                if self._destage_moved(sweep) | (refine_hits and self._hits_moved(sweep)):
                    checked = False
                    history = []
                    continue
                checked = True
                if converged:
                    self.residual = 0.0
                    return sweep
            history.append(chain_queue)
            if len(history) == 3:
                # A queue next to saturation creeps towards its fixed point by a factor of about its
                # utilization per pass: jump there (Aitken's delta-squared, station by station).
                chain_queue = aitken(history[0], history[1], history[2])
                queue = station_sums(chain_queue, len(throughput), len(queue))
                history = []
        self.passes = passes
        self.drain = self._drains(sweep)
        return sweep

    def _solve_exact(self, refine_hits: bool) -> StateResult:
        """Exact MVA of one closed chain (the population recursion), repeated until the destage
        load settles."""
        chains = len(self.population)
        stations = self.net.stations
        only = self.active[0]
        population = [0.0] * chains
        for _ in range(_MAX_OUTER):
            throughput = [0.0] * chains
            queue = [0.0] * stations
            chain_queue = [0.0] * (chains * stations)
            for n in range(1, int(self.population[only]) + 1):
                population[only] = float(n)
                sweep = self._sweep(throughput, queue, chain_queue, population)
                throughput, queue, chain_queue = sweep.throughput, sweep.queue, sweep.chain_queue
            self.drain = self._drains(sweep)
            if not self._destage_moved(sweep) and not (refine_hits and self._hits_moved(sweep)):
                break
        self.solution = sweep
        self.result = self._collect(with_own_loads(self.net.step, self.rates, sweep))
        return self.result

    def _op_rates(self, throughput: list[float]) -> Floats:
        """I/Os per s of every op at these closed chains' throughputs (an open op's rate is its
        own)."""
        return cast(Floats, self.op_scale * np.array([*throughput, 1.0])[self.net.op_chain_slot])

    def _implied_destage(self, throughput: list[float], drain: list[float]) -> list[float]:
        """Bytes/s each host's flushers move at these closed throughputs: their drain capacity
        with a backlog, else what the VMs write (at most that capacity)."""
        c = self.c
        write_back = self.net.host_flows[: c.hosts].dot(self._op_rates(throughput)).tolist()
        return [
            flusher_rate(self.key.buffer[h], write_back[h], drain[h])
            if c.destaging_hosts[h]
            else 0.0
            for h in range(c.hosts)
        ]

    def _destage_moved(self, sweep: Sweep) -> bool:
        """Whether the destage load this solution implies moved (by more than 1%) from the one it
        was solved with; if so it is set to the new one."""
        rates = self._implied_destage(sweep.throughput, self.drain)
        if all(
            abs(r - old) <= _SETTLED * max(r, 1.0)
            for r, old in zip(rates, self.destage_rates, strict=True)
        ):
            return False
        self._set_destage(rates)
        return True

    def _hits_moved(self, sweep: Sweep) -> bool:
        """Whether the read hit ratios the closed chains' throughputs imply moved (by more than
        ``_HIT_SETTLED``) from the ones the solution was solved with; if so they are set to the
        new ones."""
        net = self.net
        hit = self.c.read_cache.hit_ratios(
            {net.closed_chains[slot]: float(sweep.throughput[slot]) for slot in net.closed_readers}
        )
        if all(abs(a - b) <= _HIT_SETTLED for a, b in zip(hit, self.hit, strict=True)):
            return False
        self._set_hits(hit)
        return True

    def _guess_destage(self) -> None:
        """A first destage load for a population recursion, which otherwise runs once without
        any: the one that two Schweitzer steps from empty queues imply (cheaper than a recursion
        of many customers)."""
        chains = len(self.population)
        stations = self.net.stations
        first = self._sweep([0.0] * chains, [0.0] * stations, [0.0] * (chains * stations))
        second = self._sweep(first.throughput, first.queue, first.chain_queue)
        self.drain = self._drains(second)
        self._set_destage(self._implied_destage(second.throughput, self.drain))

    def _bound_start(
        self, throughput: list[float], queue: list[float], chain_queue: list[float]
    ) -> tuple[list[float], list[float], list[float]]:
        """A starting point near the solution in saturation: throughputs cut to the busiest
        station's capacity (asymptotic bound) and the customers that leaves over waiting at that
        station."""
        first = self._sweep(throughput, queue, chain_queue)
        second = self._sweep(first.throughput, first.queue, first.chain_queue)
        utilization = second.utilization
        stations = len(utilization)
        busiest = max(range(stations), key=utilization.__getitem__)
        scale = 1.0 / max(1.0, utilization[busiest])
        throughput = [x * scale for x in second.throughput]
        chain_queue = [x * scale for x in second.chain_queue]
        think = self.net.step.think
        for k, customers in enumerate(self.rates.population):
            present = sum(chain_queue[k * stations : (k + 1) * stations]) + throughput[k] * think[k]
            chain_queue[k * stations + busiest] += max(0.0, customers - present)
        return throughput, station_sums(chain_queue, len(throughput), stations), chain_queue

    def _sweep(
        self,
        throughput: list[float],
        queue: list[float],
        chain_queue: list[float],
        exact: list[float] | None = None,
    ) -> Sweep:
        """One MVA step from these closed throughputs and queues (see
        :func:`simcache.mva_step.mva_step`)."""
        return mva_step(self.net.step, self.rates, throughput, queue, chain_queue, exact)

    def _responses(self, sweep: Sweep) -> tuple[Floats, Floats]:
        """Per op: mean response (s) and its variance (s^2): the critical (slowest) leg's and the
        after-join steps' service variances plus their squared waits."""
        net = self.net
        rows = net.open_fcfs
        wait = np.array(sweep.open_wait)[rows.station]
        open_svar = self.open_service**2 * self.open_scv * rows.timed
        open_time = (
            self.open_service * rows.timed
            + wait
            + self.open_spread * np.sqrt(open_svar + wait * wait)
        )
        times = np.concatenate(
            (open_time, sweep.closed_time, sweep.open_flow_time, sweep.closed_flow_time)
        )
        waits = np.concatenate(
            (wait, sweep.closed_wait, sweep.open_flow_time, sweep.closed_flow_time)
        )
        slots = net.dump + 1
        slot_times = sums(net.all_slots, times, slots) + self.delay_sums
        legs = slot_times[:-1].reshape(net.count, net.width)
        critical = np.argmax(legs[:, :-1] + net.missing_legs, axis=1)
        response = slot_times[net.op_first_slot + critical] + legs[:, -1]
        spread = (
            sums(net.all_slots, waits * waits, slots)
            + sums(rows.slot, open_svar, slots)
            + sums(net.closed_fcfs.slot, self.closed_svar, slots)
        )
        variance = spread[net.op_first_slot + critical] + spread[:-1].reshape(legs.shape)[:, -1]
        return response, variance

    def _collect(self, sweep: Sweep) -> StateResult:
        c = self.c
        net = self.net
        hosts = c.hosts
        utilization = np.array(sweep.utilization)
        reported = utilization.copy()
        # The simulator counts a channel busy while its transfer waits for the pipe.
        pipes = net.pipe_stations
        pipe_waiting = np.array(sweep.queue)[pipes] + np.array(sweep.open_queue)[pipes]
        reported[net.tier_stations] = (
            np.array(sweep.busy)[net.tier_stations] + pipe_waiting
        ) * net.per_server[net.tier_stations]
        vmotion_rate = c.vmotion_rates(self.key.vmotions, utilization)
        for v in self.key.vmotions:
            # the ports carrying its streams run at 100% while they last
            reported[c.vmotion_ports(v)] = 1.0
        rates = self._op_rates(sweep.throughput)
        response, variance = self._responses(sweep)
        per_host = net.host_flows.dot(rates).tolist()
        open_utilization = np.array(sweep.open_utilization)
        overload = np.maximum(open_utilization - 1.0, 0.0)
        return StateResult(
            rates,
            response,
            variance,
            np.minimum(reported, 1.0),
            per_host[:hosts],
            per_host[hosts : 2 * hosts],
            per_host[2 * hosts :],
            list(self.drain),
            open_utilization,
            overload,
            tuple(np.flatnonzero(overload > 0).tolist()),
            vmotion_rate,
            self.residual,
            self.passes,
        )

    def _drains(self, sweep: Sweep) -> list[float]:
        """Per host, the bytes/s its flushers destage with a backlog at this solution's
        utilizations (see :func:`simcache.estimate.drain.drains`)."""
        return drains(
            self.c, self.key.buffer, self.destage_rates, self.destage_loads, self.batches, sweep
        )

    def copy(self, key: StateKey) -> Solver:
        """This solver, as the state ``key``: a shallow copy (its arrays shared), as
        ``copy.copy`` would make, which the compiled module's classes do not support."""
        other = Solver(self.c, key, None)
        for name in SOLVER_STATE:
            setattr(other, name, getattr(self, name))
        return other

    def same_destage(self, key: StateKey) -> bool:
        """Whether the state ``key`` has this solved state's solution: the same but for buffers
        keeping up rather than backlogged (or the reverse), where that leaves the destage rates
        and batch shapes as they are (a drain-limited buffer destages at its drain capacity
        either way)."""
        own = self.key
        if (own.groups, own.gc, own.compress, own.drain) != (
            key.groups,
            key.gc,
            key.compress,
            key.drain,
        ) or own == key:
            return False
        c = self.c
        result = self.result
        for h in range(c.hosts):
            mode, before = key.buffer[h], own.buffer[h]
            if (mode == FULL) != (before == FULL):
                return False
            if mode == before or not c.destaging_hosts[h]:
                continue
            rate = flusher_rate(mode, result.write_back_bytes[h], result.drain[h])
            if rate != self.destage_rates[h] or c.batches.shape(
                h, rate, mode != KEEPING_UP
            ) != c.batches.shape(h, rate, before != KEEPING_UP):
                return False
        return True

    def with_vmotions(self, key: StateKey) -> tuple[Solver, StateResult]:
        """This solved state with other vMotions running, when no closed path or destager crosses
        their ports.

        The vMotions' flows then only slow open transfers: the closed chains' fixed point, the
        destage load and the drain rates stay as they are, and one MVA step from the solution
        re-evaluates the rest.
        """
        other = self.copy(key)
        other.rates = dataclasses.replace(
            self.rates, permanent=self.c.permanent_flows(key.vmotions)
        )
        solution = self.solution
        other.solution = other._sweep(
            solution.throughput,
            solution.queue,
            solution.chain_queue,
            None if not self.exact else self.rates.population,
        )
        other.result = other._collect(other.solution)
        return other, other.result


@dataclass(frozen=True)
class HitRatios:
    """The read hit ratios (per chain) every state of a run is solved with, and the state solved
    with them.

    ``solved`` is the state with every group on, its solver and its solution, when closed groups
    read (see :func:`solve_hit_ratios`); else None.
    """

    hit: list[float]
    solved: tuple[StateKey, Solver, StateResult] | None


def solve_hit_ratios(c: Layout) -> HitRatios:
    """The read hit ratios of the layout's chains: at the groups' nominal rates, unless closed
    groups read.

    A closed group's access rate, hence its hit ratio, depends on its latency: then the ratios are
    solved together with the state in which every group is on, whose solution the timeline keeps.
    """
    hit = c.read_cache.hit_ratios({})
    if not c.network.closed_readers:
        return HitRatios(hit, None)
    everyone = frozenset(range(len(c.scenario.groups)))
    hosts = c.hosts
    key = StateKey(
        everyone,
        frozenset(),
        (False,) * hosts,
        (KEEPING_UP,) * hosts,
        (False,) * c.lanes,
        (0.0,) * hosts,
    )
    solver = Solver(c, key, hit)
    result = solver.solve(refine_hits=True)
    return HitRatios(solver.hit, (key, solver, result))
