"""One MVA step of the analytic estimate (simcache.estimate.theory.mva_step) on hand-built networks,
against exact theory.

The estimate builds its step networks from scenarios (simcache.estimate); here they are built by
hand so that the step itself is checked against formulas with nothing else in between.
"""

from __future__ import annotations

import pytest

from simcache.estimate.theory.mva_step import StepNetwork, StepRates, aitken, mva_step, station_sums


def closed_pair(
    services: tuple[float, float], think: float, customers: int
) -> tuple[StepNetwork, StepRates]:
    """One closed chain of ``customers`` cycling through two exponential single-server FCFS stations
    (``services`` s each) and a think time (``think`` s): one op, both stations on its one leg."""
    first, second = services
    network = StepNetwork(
        stations=2,
        chains=1,
        per_server=[1.0, 1.0],
        fcfs_per_server=[1.0, 1.0],
        half_per_server=[0.5, 0.5],
        exponent=[1.0, 1.0],  # Sakasegawa's for one server: P(wait) = utilization
        open_ports=[[], [], []],
        open_siblings=[[], [], []],
        open_port_row=[],
        open_port_station=[],
        closed_station=[0, 1],
        closed_cell=[0, 1],
        closed_spread=[0.0, 0.0],
        closed_share=[1.0, 1.0],
        closed_row_op=[0, 0],
        closed_ports=[[], [], []],
        closed_siblings=[[], [], []],
        closed_port_cells=[[], [], []],
        closed_port_row=[],
        closed_flow_op=[],
        closed_local_slots=[0, 0],
        width=2,
        closed_missing=[0.0],
        closed_op_chain=[0],
        closed_cells=[0, 1],
        think=[think],
    )
    rates = StepRates(
        open_loads=[0.0] * 10,
        # Per unit throughput: busy (S), arrivals (1) and second moment (E[S^2] = 2 S^2,
        # exponential).
        closed_load_cells=[[0, 1, 2, 3, 4, 5]],
        closed_loads=[[first, second, 1.0, 1.0, 2 * first * first, 2 * second * second]],
        permanent=[0.0, 0.0],
        open_flow_service=[],
        open_port_rates=[],
        population=[float(customers)],
        own_rows=[1.0 / customers, 1.0 / customers],
        own_flows=[],
        closed_base=[first, second],
        closed_svar=[first * first, second * second],
        closed_flow_service=[],
        closed_delays=[0.0, 0.0],
        closed_probability=[1.0],
        active=True,
    )
    return network, rates


@pytest.mark.parametrize(
    ("services", "think", "customers"),
    [((0.010, 0.004), 0.0, 1), ((0.010, 0.004), 0.020, 8), ((0.002, 0.002), 0.001, 16)],
)
def test_population_recursion_is_exact_mva(
    services: tuple[float, float], think: float, customers: int
) -> None:
    # Exact MVA (Reiser and Lavenberg 1980) for exponential single-server FCFS stations k with
    # service S_k:
    #   R_k(n) = S_k (1 + Q_k(n - 1)),  X(n) = n / (Z + sum_k R_k(n)),  Q_k(n) = X(n) R_k(n).
    # The step splits Q into waiting customers Lq and the one in service: an arrival waits S Lq(n -
    # 1) + P_wait R with R = E[S^2] / 2 E[S] = S and P_wait = U(n - 1) = X(n - 1) S, the same S (1 +
    # Q(n - 1)) in all.
    network, rates = closed_pair(services, think, customers)
    queues, throughput, chain_queue = [0.0, 0.0], [0.0], [0.0, 0.0]
    expected_queues = [0.0, 0.0]  # Q_k(0)
    for n in range(1, customers + 1):
        sweep = mva_step(network, rates, throughput, queues, chain_queue, exact=[float(n)])
        throughput, queues, chain_queue = sweep.throughput, sweep.queue, sweep.chain_queue
        residences = [s * (1.0 + q) for s, q in zip(services, expected_queues, strict=True)]
        expected_throughput = n / (think + sum(residences))
        expected_queues = [expected_throughput * r for r in residences]
        assert throughput[0] == pytest.approx(expected_throughput, rel=1e-12)
        # The step's queues are the waiting customers: Q less the utilization X S.
        for k in range(2):
            assert queues[k] == pytest.approx(
                expected_queues[k] - expected_throughput * services[k], rel=1e-12, abs=1e-15
            )
        assert sweep.closed_time == pytest.approx(residences, rel=1e-12)


def schweitzer_throughput(services: tuple[float, ...], think: float, customers: int) -> float:
    """The step's fixed point for one closed chain at exponential single-server stations, solved
    apart.

    At the fixed point a customer finds the waiting customers less its own share, (N - 1) / N Lq_k,
    plus the one in service with probability U_k = X S_k (residual S_k): wait_k = S_k ((N - 1) / N X
    wait_k + X S_k), so wait_k = X S_k^2 / (1 - X S_k (N - 1) / N), and X (Z + sum_k (S_k + wait_k))
    = N. Bisection on X.
    """
    share = (customers - 1) / customers
    low, high = 0.0, 1.0 / max(services)
    for _ in range(200):
        x = (low + high) / 2
        cycle = think + sum(s + x * s * s / (1.0 - x * s * share) for s in services)
        low, high = (x, high) if x * cycle < customers else (low, x)
    return (low + high) / 2


def test_schweitzer_fixed_point_is_the_closed_form() -> None:
    services, think, customers = (0.010, 0.004), 0.020, 8
    network, rates = closed_pair(services, think, customers)
    throughput, queues, chain_queue = [0.0], [0.0, 0.0], [0.0, 0.0]
    for _ in range(200):
        sweep = mva_step(network, rates, throughput, queues, chain_queue, exact=None)
        throughput, queues, chain_queue = sweep.throughput, sweep.queue, sweep.chain_queue
    assert throughput[0] == pytest.approx(
        schweitzer_throughput(services, think, customers), rel=1e-9
    )
    # a fixed point: it stays
    again = mva_step(network, rates, throughput, queues, chain_queue, exact=None)
    assert again.throughput == pytest.approx(throughput, rel=1e-9)
    assert again.queue == pytest.approx(queues, rel=1e-9)


def test_overloading_throughput_is_held_to_the_busiest_station() -> None:
    # MVA with non-exponential residuals can admit more than a station serves: a step from a
    # throughput above the busiest station's capacity 1 / S_max scales the closed chain to it
    # (utilization 1 there, S_k / S_max elsewhere).
    services = (0.010, 0.004)
    network, rates = closed_pair(services, 0.0, 8)
    sweep = mva_step(network, rates, [3.0 / services[0]], [0.0, 0.0], [0.0, 0.0], exact=None)
    assert sweep.utilization == pytest.approx([1.0, services[1] / services[0]], rel=1e-12)


def test_station_sums_and_aitken() -> None:
    # Two chains x three stations, summed per station; Aitken's delta-squared on a geometric
    # sequence x_k = L + c r^k lands on its limit L exactly (to rounding), and leaves non-monotone
    # entries alone.
    assert station_sums([1.0, 2.0, 3.0, 10.0, 20.0, 30.0], 2, 3) == [11.0, 22.0, 33.0]
    limit, c, r = 5.0, -4.0, 0.9
    first, second, third = ([limit + c * r**k, 1.0] for k in range(3))
    second[1], third[1] = 3.0, 2.0  # up then down: no jump
    jumped = aitken(first, second, third)
    assert jumped[0] == pytest.approx(limit, rel=1e-12)
    assert jumped[1] == 2.0
    # No jump to a negative value (3, 1, 0.2 would extrapolate to -1/3), nor without movement.
    assert aitken([3.0], [1.0], [0.2]) == [0.2]
    assert aitken([1.0], [1.0], [1.0]) == [1.0]
