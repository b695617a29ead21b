"""The engine's shortcuts agree with the plain computation they stand in for.

- ``FlowNetwork`` updates only the flows whose rate a start or finish changes,
  and delivers a flow that is alone on its ports without a wake-up. Its
  delivery times must equal those of a reference that recomputes every rate
  from scratch at every start and finish (the model's definition: a flow's
  rate is its weight times the smallest ``capacity / sum of weights`` on its
  ports; delivery is one latency after its last byte).
- ``Array.read`` is ``Array.submit`` for one read of at most a stripe unit,
  written out: the same draws give the same completion times.
- ``FlowNetwork.send`` (a ``Signal``) delivers as ``FlowNetwork.transfer``
  (a SimPy event) does, and open-loop arrivals and read hits as callbacks
  (``drivers._OpenLoop``, ``VM.start``) give the generators' results bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.ha_restart import scenario as ha_scenario
from support.paths import ROOT
from support.strategies import ScenarioDict, valid_scenarios

import simcache
from simcache.physics.cluster import PortName
from simcache.results.result import Result
from simcache.sim.components.array import Array
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.components.randomness import UniformStream
from simcache.sim.engine import Paths, build, run_scenario
from simcache.sim.kernel.clock import run_until
from simcache.sim.kernel.detached import start_detached
from simcache.sim.kernel.entries import queued
from simcache.sim.kernel.waits import sleep
from simcache.spec import ArraySpec, DriveSpec, LinkSpec

SCENARIOS = ROOT / "scenarios"
LINK = LinkSpec(bandwidth=125e6, latency=50e-6)
FAST = LinkSpec(bandwidth=1250e6, latency=5e-6)
PORTS = 5  # ports a0..a4: a few, so that flows often share one


def reference_deliveries(
    transfers: list[tuple[float, tuple[int, ...], float, float]], capacities: list[float]
) -> list[float]:
    """Delivery times by brute force: all rates recomputed at every start and finish.

    ``transfers``: (start time, port indices, wire bytes, weight), every one
    with latency ``LINK.latency``.
    """
    order = sorted(range(len(transfers)), key=lambda i: transfers[i][0])
    remaining = {i: transfers[i][2] for i in order}
    delivered = [math.nan] * len(transfers)
    active: list[int] = []
    now = 0.0
    upcoming = list(order)
    while upcoming or active:
        rates = {}
        for i in active:
            shares = []
            for port in transfers[i][1]:
                weight_sum = sum(transfers[j][3] for j in active if port in transfers[j][1])
                shares.append(capacities[port] / weight_sum)
            rates[i] = transfers[i][3] * min(shares)
        next_finish = min((now + remaining[i] / rates[i] for i in active), default=math.inf)
        next_start = transfers[upcoming[0]][0] if upcoming else math.inf
        step_to = min(next_finish, next_start)
        for i in active:
            remaining[i] -= rates[i] * (step_to - now)
        now = step_to
        for i in list(active):
            if remaining[i] <= 1e-9 * transfers[i][2]:
                active.remove(i)
                delivered[i] = now + LINK.latency
        while upcoming and transfers[upcoming[0]][0] <= now:
            active.append(upcoming.pop(0))
    return delivered


transfer_lists = st.lists(
    st.tuples(
        st.floats(0.0, 0.02),  # start time
        st.lists(st.integers(0, PORTS - 1), min_size=1, max_size=3, unique=True).map(tuple),
        st.floats(100.0, 400_000.0),  # wire bytes
        st.sampled_from([1.0, 1.0, 1.0, 4.0]),  # weight (4: a vMotion stream)
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(transfers=transfer_lists, fast_port=st.integers(0, PORTS - 1))
def test_flow_network_matches_recomputing_every_rate(
    transfers: list[tuple[float, tuple[int, ...], float, float]], fast_port: int
) -> None:
    """Relative agreement 1e-9: the two differ only in float rounding (incremental vs fresh
    sums)."""
    specs = [FAST if i == fast_port else LINK for i in range(PORTS)]
    env = simpy.Environment()
    network = FlowNetwork(env)
    ports = [Port(PortName(i, "peer", None, "tx"), spec) for i, spec in enumerate(specs)]
    events: list[simpy.Event] = [env.event() for _ in transfers]

    def start(i: int) -> Generator[simpy.Event, Any, None]:
        at, path, wire, weight = transfers[i]
        yield env.timeout(at)
        done = network.transfer([ports[p] for p in path], wire, latency=LINK.latency, weight=weight)
        value = yield done
        events[i].succeed(value)

    for i in range(len(transfers)):
        env.process(start(i))
    env.run()
    simulated = [event.value for event in events]
    expected = reference_deliveries(transfers, [spec.bandwidth for spec in specs])
    assert np.allclose(simulated, expected, rtol=1e-9, atol=1e-12), (simulated, expected)
    assert network.in_flight() == 0
    assert all(not port.active and port.weight_sum == 0.0 for port in ports)
    for i, port in enumerate(ports):  # every byte that crossed a port is counted once
        assert math.isclose(
            port.delivered_bytes, sum(t[2] for t in transfers if i in t[1]), rel_tol=1e-12
        )


def _deliveries(
    transfers: list[tuple[float, tuple[int, ...], float, float]], signals: bool
) -> list[tuple[float, int, float]]:
    """Each transfer's (delivery time, index, value) in the order they fire: sent with
    ``FlowNetwork.send`` (Signals, waited for by detached generators) if ``signals``, else with
    ``transfer`` (SimPy events, waited for by processes)."""
    env = simpy.Environment()
    network = FlowNetwork(env)
    ports = [Port(PortName(i, "peer", None, "tx"), LINK) for i in range(PORTS)]
    fired: list[tuple[float, int, float]] = []

    def start(i: int) -> Generator[Any, Any, None]:
        at, path, wire, _ = transfers[i]
        yield (sleep(network.clock, at) if signals else env.timeout(at))
        route = tuple(ports[p] for p in path)
        done = (
            network.send(route, wire, latency=LINK.latency)
            if signals
            else network.transfer(route, wire, latency=LINK.latency)
        )
        value = yield done
        fired.append((env.now, i, value))

    for i in range(len(transfers)):
        if signals:
            start_detached(network.clock, start(i))
        else:
            env.process(start(i))
    run_until(network.clock, 1e9)
    return fired


@settings(max_examples=100, deadline=None)
@given(transfers=transfer_lists)
def test_send_delivers_as_transfer_does(
    transfers: list[tuple[float, tuple[int, ...], float, float]],
) -> None:
    """``send`` (a Signal) is ``transfer`` at weight 1 (a SimPy event): the same delivery times,
    values and order, bit for bit (the same flows and event ids; only the object that carries the
    delivery differs)."""
    transfers = [(at, path, wire, 1.0) for at, path, wire, _ in transfers]
    assert _deliveries(transfers, signals=True) == _deliveries(transfers, signals=False)


def test_many_flows_on_one_port_keep_a_bounded_heap() -> None:
    """400 flows join one port, a new one every 10 us while each needs 0.5 ms alone: 50 times the
    port's rate, so nearly all 400 are in flight by the last start.

    Each start changes every flow's rate and pushes a new heap entry for each; the old ones are
    void. Left to pile up they numbered 16,954 here (of about 400 x 400 / 2 = 80,000 pushed; a
    fuzzed run of 1,456 replica flows left a million, and each later run in the process paid for
    them in garbage collection). The heap is rebuilt when it holds more than twice the flows in
    flight plus 64 entries; deliveries still equal the recomputing reference.
    """
    transfers = [(i * 1e-5, (0,), 62_500.0, 1.0) for i in range(400)]
    env = simpy.Environment()
    network = FlowNetwork(env)
    port = Port(PortName(0, "peer", None, "tx"), LINK)
    delivered: list[float] = [math.nan] * len(transfers)
    largest_heap = 0

    def start(i: int) -> Generator[simpy.Event, Any, None]:
        nonlocal largest_heap
        at, _, wire, weight = transfers[i]
        yield env.timeout(at)
        done = network.transfer([port], wire, latency=LINK.latency, weight=weight)
        # the void entries kept, read for this test only
        largest_heap = max(largest_heap, len(network._heap))
        delivered[i] = yield done

    for i in range(len(transfers)):
        env.process(start(i))
    env.run()
    assert largest_heap <= 2 * len(transfers) + 64
    assert np.allclose(
        delivered, reference_deliveries(transfers, [LINK.bandwidth]), rtol=1e-9, atol=1e-12
    )


SATA_7200 = DriveSpec(
    rpm=7200, avg_seek=7.8e-3, settle=0.8e-3, media_rate=150e6, capacity=2 * 10**12
)


@settings(max_examples=50, deadline=None)
@given(
    reads=st.lists(
        st.tuples(
            st.floats(0.0, 1e-3),
            st.sampled_from([512, 4096, 65536, 65537, 300_000]),
            st.integers(0, 2),
            st.integers(0, 10**6),
        ),
        min_size=1,
        max_size=60,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_array_read_is_submit_of_one_read(
    reads: list[tuple[float, int, int, int]], seed: int
) -> None:
    """Bit-identical completion times and counters, including reads larger than a stripe unit (64
    KiB)."""
    spec = ArraySpec(drive=SATA_7200, spindles=6, raid="raid10", port=LINK)
    fast = Array(spec, UniformStream(np.random.SeedSequence(seed)), [10**11] * 3)
    plain = Array(spec, UniformStream(np.random.SeedSequence(seed)), [10**11] * 3)
    now = 0.0
    for gap, size, vm, block in reads:
        now += gap
        assert fast.read(now, vm, block * 4096, size) == plain.submit(
            now, ((vm, block * 4096, size),), False
        )
    assert (fast.front_end_ios, fast.back_end_ios, fast.bytes_read) == (
        plain.front_end_ios,
        plain.back_end_ios,
        plain.bytes_read,
    )
    assert fast.busy.busy_between(0.0, 1.0) == plain.busy.busy_between(0.0, 1.0)


def _run(
    scenario: simcache.Scenario, callbacks: bool, duration: float
) -> tuple[pd.DataFrame, pd.DataFrame, Any, Any]:
    paths: Paths = "callbacks" if callbacks else "generators"
    result = Result.from_record(run_scenario(scenario, seed=3, duration=duration, paths=paths))
    return result.records, result.series, result.totals, result.meta["events"]


@pytest.mark.parametrize(
    ("scenario", "duration"),
    [
        (simcache.load_scenario(SCENARIOS / "default.toml"), 12.0),  # past its vMotion at 10 s
        # a host failure with HA restart: arrivals dropped while its VMs are down
        (ha_scenario(), 3.0),
        # a host failure without restart: the dead host's open loops end
        (ha_scenario(restart_delay=None), 3.0),
        # closed-loop slots that end with their host and start again elsewhere
        (ha_scenario("closed"), 3.0),
        (ha_scenario("closed", restart_delay=None), 3.0),
    ],
    ids=["default", "ha-restart", "host-failure", "closed-ha-restart", "closed-host-failure"],
)
def test_callbacks_give_the_generators_results_bit_for_bit(
    scenario: simcache.Scenario, duration: float
) -> None:
    """Open-loop arrivals, closed-loop slots and I/Os as callbacks (``_OpenLoop``,
    ``_ClosedSlot``, ``VM.start``, ``simcache/sim/components/io_steps.py``) schedule the same
    events at the same times, in the same order, as the generators they replace (``_open_loop``,
    ``_closed_slot``, ``VM.io``): records, series, totals and the event count are identical."""
    assert len(_assert_same_both_ways(scenario, duration)) > 1000


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda path: path.stem)
def test_every_library_scenario_runs_the_same_with_callbacks(path: Path) -> None:
    """The same, for the whole of each library scenario: between them they take every write path
    (write-through, asynchronous and memory replication, metadata records, serialized writes,
    short of peers) and the failures that cut I/Os short, which the callbacks hand back to the
    generators or must fail as they do."""
    scenario = simcache.load_scenario(path)
    _assert_same_both_ways(scenario, scenario.run.duration)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(valid_scenarios())
def test_random_scenarios_run_the_same_with_callbacks(data: ScenarioDict) -> None:
    """The same on small random scenarios (every policy, workload mode, replication option and
    event the strategy draws), for their whole run."""
    scenario = simcache.load_scenario(data)
    _assert_same_both_ways(scenario, scenario.run.duration)


def _assert_same_both_ways(scenario: simcache.Scenario, duration: float) -> pd.DataFrame:
    """Run ``scenario`` with the callbacks and with the generators, require the same results;
    return the records."""
    fast = _run(scenario, True, duration)
    slow = _run(scenario, False, duration)
    pd.testing.assert_frame_equal(fast[0], slow[0], check_exact=True)
    pd.testing.assert_frame_equal(fast[1], slow[1], check_exact=True)
    assert fast[2] == slow[2]
    assert fast[3] == slow[3]
    return fast[0]


def test_paths_chooses_the_form_the_run_is_built_in() -> None:
    """``paths`` reaches the components: built with callbacks, the queue's first wake-ups are the
    state machines' bound callbacks (flushers, open loops, closed-loop slots); built with
    generators, none is."""
    scenario = simcache.load_scenario(SCENARIOS / "default.toml")

    def owners(paths: Paths) -> set[str]:
        model = build(scenario, 1, paths=paths)
        assert model.clock.callbacks is (paths == "callbacks")
        found = set()
        for entry in queued(model.clock):
            bound = getattr(entry.callback, "__self__", None)
            if bound is not None:
                found.add(type(bound).__name__)
        return found

    machines = {"Flusher", "_OpenLoop", "_ClosedSlot"}
    assert owners("callbacks") & machines
    assert not owners("generators") & machines
