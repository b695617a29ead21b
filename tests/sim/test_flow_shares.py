"""The flow network's sharing rule on several ports, against its defining formula.

The rule (simcache/sim/components/link.py, docs/model.md): each port splits its capacity among
the flows crossing it in proportion to their weights, and a flow runs at the smallest share it
gets on any port of its path (bottleneck fair share):

    rate(f) = w_f x min over ports p on f's path of C_p / (sum of the weights on p).

It is recomputed whenever a flow starts or finishes, so between two such instants every rate is
constant and a flow's bytes left fall linearly: the delivery times of a set of flows follow from
the formula alone, by a fluid computation that steps from one finish to the next (the oracle
:func:`fluid_deliveries` below, written from the formula, not from the network's code). On one
port it is processor sharing (tests/sim/test_theory.py holds that against M/G/1-PS); here flows
cross one to three ports of different capacities, with different weights.

It is not max-min fairness: a port does not hand the share a flow cannot use (held back
elsewhere) to its other flows. On the "parking lot" below, max-min would give the one-port flow
two thirds of the shared port; the rule gives it half, and the last test pins that difference,
which docs/model.md states.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pytest
import simpy

from simcache.physics.cluster import PortName
from simcache.sim.components.link import FlowNetwork, Port
from simcache.spec import LinkSpec

MB = 1e6


def link(bandwidth: float) -> LinkSpec:
    return LinkSpec(bandwidth=bandwidth, latency=0.0)


def fluid_deliveries(
    capacities: Sequence[float],
    paths: Sequence[Sequence[int]],
    sizes: Sequence[float],
    weights: Sequence[float],
    latency: float = 0.0,
) -> list[float]:
    """Delivery times of flows all started at 0 under bottleneck fair share: at each step every
    unfinished flow's rate is w_f min_p C_p / W_p (W_p: the weights of the unfinished flows on
    p), the next finish is the smallest bytes-left / rate, and every flow moves on by that time."""
    left = list(sizes)
    done = [float("nan")] * len(sizes)
    now = 0.0
    active = set(range(len(sizes)))
    while active:
        weight_on = [0.0] * len(capacities)
        for f in active:
            for p in paths[f]:
                weight_on[p] += weights[f]
        rate = {f: weights[f] * min(capacities[p] / weight_on[p] for p in paths[f]) for f in active}
        step = min(left[f] / rate[f] for f in active)
        now += step
        for f in sorted(active):
            left[f] -= rate[f] * step
            if left[f] <= 1e-9 * sizes[f]:
                done[f] = now + latency
        active = {f for f in active if done[f] != done[f]}  # NaN: not finished yet
    return done


def network_deliveries(
    capacities: Sequence[float],
    paths: Sequence[Sequence[int]],
    sizes: Sequence[float],
    weights: Sequence[float],
    latency: float = 0.0,
) -> list[float]:
    """The same flows through the simulator's FlowNetwork, started together at time 0."""
    env = simpy.Environment()
    network = FlowNetwork(env)
    ports = [
        Port(PortName(k, "peer", None, "tx"), link(capacity))
        for k, capacity in enumerate(capacities)
    ]
    events = [
        network.transfer(tuple(ports[p] for p in path), size, latency=latency, weight=weight)
        for path, size, weight in zip(paths, sizes, weights, strict=True)
    ]
    env.run()
    return [float(cast(float, event.value)) for event in events]


# (capacities, paths, sizes, weights): a flow's path is the ports it crosses
CASES = {
    "parking lot": (
        [100 * MB, 100 * MB],
        [[0, 1], [0], [1], [1]],
        [10 * MB, 10 * MB, 10 * MB, 10 * MB],
        [1.0, 1.0, 1.0, 1.0],
    ),
    "a slow port on one path": (
        [125 * MB, 1250 * MB, 1250 * MB],
        [[0, 1], [1, 2], [1], [2]],
        [4 * MB, 20 * MB, 8 * MB, 30 * MB],
        [1.0, 1.0, 1.0, 1.0],
    ),
    "weighted, three ports on one path": (
        [100 * MB, 300 * MB, 50 * MB],
        [[0, 1, 2], [1], [1, 2], [0]],
        [5 * MB, 40 * MB, 12 * MB, 9 * MB],
        [3.0, 1.0, 0.5, 2.0],
    ),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("latency", [0.0, 50e-6])
def test_flows_on_several_ports_finish_when_bottleneck_fair_share_says(
    case: str, latency: float
) -> None:
    """Each flow's delivery is the fluid oracle's (latency after its last byte), to rounding."""
    capacities, paths, sizes, weights = CASES[case]
    expected = fluid_deliveries(capacities, paths, sizes, weights, latency)
    assert network_deliveries(capacities, paths, sizes, weights, latency) == pytest.approx(
        expected, rel=1e-9
    )


def test_a_share_held_back_elsewhere_is_not_handed_on_unlike_max_min() -> None:
    """The parking lot: flow 0 crosses ports 0 and 1, flow 1 port 0 alone, flows 2 and 3 port 1.
    Port 1 gives each of its three flows C / 3; port 0 splits C between flows 0 and 1. Flow 0
    runs at min(C / 2, C / 3) = C / 3, and flow 1 at C / 2: the C / 6 of port 0 that flow 0
    cannot use stays unused, where max-min would give flow 1 2C / 3. With 10 MB each at C =
    100 MB/s, flows 0, 2 and 3 finish together at 0.3 s; flow 1 at 0.2 s (0.15 s under max-min)."""
    capacities, paths, sizes, weights = CASES["parking lot"]
    done = network_deliveries(capacities, paths, sizes, weights)
    assert done == pytest.approx([0.3, 0.2, 0.3, 0.3], rel=1e-12)
    max_min_flow_1 = sizes[1] / (capacities[0] - capacities[1] / 3)
    assert max_min_flow_1 == pytest.approx(0.15)
    assert done[1] > max_min_flow_1
