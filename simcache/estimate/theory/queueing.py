"""Queueing formulas of the estimate: waiting probability, M/G/c wait, exact MVA, and distribution
helpers.

The approximations are listed in ``docs/estimate.md`` (Queueing, Percentiles).
"""

from __future__ import annotations

import math

__all__ = [
    "expected_max_normal",
    "gamma_quantiles",
    "mgc_wait",
    "mva_closed",
    "sakasegawa_exponent",
    "waiting_probability",
]


def sakasegawa_exponent(servers: int) -> float:
    """The exponent of Sakasegawa's ``P_wait = rho^(sqrt(2(c+1)) - 1)``; 1 for one server
    (``P_wait = rho``)."""
    return math.sqrt(2.0 * (servers + 1)) - 1.0


def waiting_probability(utilization: float, servers: int) -> float:
    """Probability that an arrival waits at ``servers`` FCFS servers (Sakasegawa's approximation
    of Erlang C)."""
    if utilization <= 0.0:
        return 0.0
    if servers == 1:
        return min(utilization, 1.0)
    return min(1.0, float(utilization ** sakasegawa_exponent(servers)))


def mgc_wait(arrival_rate: float, service: float, scv: float, servers: int = 1) -> float:
    """Mean wait in queue (s) of an M/G/c station: Pollaczek-Khinchine for c = 1, Allen-Cunneen
    otherwise.

    ``service`` is the mean service time (s), ``scv`` its squared coefficient of variation.
    Infinite at or above saturation.
    """
    rho = arrival_rate * service / servers
    if rho >= 1.0:
        return math.inf
    return waiting_probability(rho, servers) * service * (1.0 + scv) / 2.0 / (servers * (1.0 - rho))


def mva_closed(
    demands: list[float], think: float, customers: int
) -> tuple[float, float, list[float]]:
    """Exact single-class MVA of queueing stations (exponential, FCFS or PS) and a think-time delay.

    Returns (throughput per s, response time s, mean queue length per station).
    """
    queues = [0.0] * len(demands)
    throughput = response = 0.0
    for population in range(1, customers + 1):
        residences = [d * (1.0 + q) for d, q in zip(demands, queues, strict=True)]
        response = sum(residences)
        throughput = population / (think + response)
        queues = [throughput * r for r in residences]
    return throughput, response, queues


def expected_max_normal(count: float) -> float:
    """E[max of ``count`` independent standard normals] (Blom-type approximation; 0 for one)."""
    if count <= 1.0:
        return 0.0
    table = (0.0, 0.0, 0.5642, 0.8463, 1.0294, 1.1630, 1.2672, 1.3522, 1.4236)
    if count < len(table) - 1:
        low = int(count)
        return table[low] + (count - low) * (table[low + 1] - table[low])
    return math.sqrt(2.0 * math.log(count)) - (
        math.log(math.log(count)) + math.log(4.0 * math.pi)
    ) / (2.0 * math.sqrt(2.0 * math.log(count)))


def gamma_quantiles(mean: float, scv: float) -> tuple[float, float, float, float]:
    """p50, p95, p99 and p99.9 (s) of a gamma distribution of this ``mean`` (s) and squared
    coefficient of variation; the mean for all four when there is no spread."""
    if not math.isfinite(mean) or mean <= 0 or scv < 1e-6:
        return (mean, mean, mean, mean)
    # scipy.special, not scipy.stats: importing scipy.stats took 0.66 s, paid by the first estimate
    # and the first simulate (its work check) of every process. stats.gamma.ppf(q, shape, scale=s)
    # is gammaincinv(shape, q) * s + 0, the same floats (checked on 20,000 random shapes and
    # scales).
    from scipy import special

    shape = 1.0 / scv
    values = special.gammaincinv(shape, [0.5, 0.95, 0.99, 0.999]) * (mean * scv)
    return (float(values[0]), float(values[1]), float(values[2]), float(values[3]))
