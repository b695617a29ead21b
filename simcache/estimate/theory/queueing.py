"""Queueing formulas of the estimate: waiting probability, M/G/c wait, exact MVA, and distribution
helpers.

The approximations are listed in ``docs/estimate.md`` (Queueing, Percentiles).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "PERCENTILE_LEVELS",
    "expected_max_normal",
    "gamma_mixture_quantiles",
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


PERCENTILE_LEVELS = (0.5, 0.95, 0.99, 0.999)
"""The probabilities of the percentiles an estimate reports (p50, p95, p99, p99.9)."""


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
    values = special.gammaincinv(shape, PERCENTILE_LEVELS) * (mean * scv)
    return (float(values[0]), float(values[1]), float(values[2]), float(values[3]))


# the mixture quantile's search: at most this many steps (each halves the bracket at least every
# other step), and done when the CDF is within _CDF_TOLERANCE of the level or the bracket within
# _WIDTH_TOLERANCE of its top
_MAX_STEPS = 200
_CDF_TOLERANCE = 1e-13
_WIDTH_TOLERANCE = 1e-13


def gamma_mixture_quantiles(
    weights: Sequence[float], means: Sequence[float], scvs: Sequence[float]
) -> tuple[float, float, float, float]:
    """p50, p95, p99 and p99.9 (s) of a mixture of gamma distributions, each of mean ``means[i]``
    (s) and squared coefficient of variation ``scvs[i]``, drawn with probability proportional to
    ``weights[i]`` (e.g. I/Os per s): the latency of an I/O taken at random from several groups.

    Each component is the distribution :func:`gamma_quantiles` gives its percentiles of (a point
    mass at its mean without spread). The mixture's CDF is F(x) = sum_i w_i F_i(x) with the w_i
    summing to 1, so its q-quantile lies between the smallest and the largest component
    q-quantile: at the largest, every F_i is at least q, so F is; at the smallest, none is above
    q. It is found in that bracket as the least x with F(x) >= q, by Newton steps on F (its
    density from the components' gamma densities) that fall back to halving the bracket when a
    step would leave it, or F has no slope there (point masses). A single component (the others
    weigh nothing) gives its own :func:`gamma_quantiles` exactly; a component of infinite mean
    with some weight makes every quantile infinite (its queue grows without bound; the estimate
    shows it as unbounded).
    """
    parts = [
        (float(w), float(m), float(v))
        for w, m, v in zip(weights, means, scvs, strict=True)
        if w > 0 and not math.isnan(m)
    ]
    if not parts:
        return (math.nan, math.nan, math.nan, math.nan)
    if any(not math.isfinite(m) for _, m, _ in parts):
        return (math.inf, math.inf, math.inf, math.inf)
    if len(parts) == 1:
        return gamma_quantiles(parts[0][1], parts[0][2])
    from scipy import special

    total = sum(w for w, _, _ in parts)
    share = np.array([w / total for w, _, _ in parts])
    # as gamma_quantiles: no spread is a point mass at the mean
    spread = np.array([m > 0 and v >= 1e-6 for _, m, v in parts])
    centres = np.array([m for _, m, _ in parts])
    shapes = np.array([1.0 / v if s else 1.0 for (_, _, v), s in zip(parts, spread, strict=True)])
    scales = np.where(spread, centres / shapes, 1.0)
    levels = np.array(PERCENTILE_LEVELS)
    quantiles = np.array([gamma_quantiles(m, v) for _, m, v in parts])  # part x level
    low = quantiles.min(axis=0)
    high = quantiles.max(axis=0)
    # log of each gamma density's constant factor, 1 / (Gamma(k) theta^k)
    scale_log = -special.gammaln(shapes) - shapes * np.log(scales)
    x = (low + high) / 2.0
    cdf = np.zeros_like(x)
    # a point mass at 0 or a flat mixture gives slopes of 0 or infinity: the bracket is halved
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(_MAX_STEPS):
            at = x[None, :]
            gamma = special.gammainc(shapes[:, None], at / scales[:, None])
            cdf = share @ np.where(spread[:, None], gamma, at >= centres[:, None])
            reached = cdf >= levels
            high = np.where(reached, x, high)
            low = np.where(reached, low, x)
            done = (np.abs(cdf - levels) <= _CDF_TOLERANCE) | (
                high - low <= _WIDTH_TOLERANCE * high
            )
            if done.all():
                break
            density = np.exp(
                special.xlogy(shapes[:, None] - 1.0, at) - at / scales[:, None] + scale_log[:, None]
            )
            newton = x - (cdf - levels) / (share @ np.where(spread[:, None], density, 0.0))
            inside = np.isfinite(newton) & (newton > low) & (newton < high)
            x = np.where(done, x, np.where(inside, newton, (low + high) / 2.0))
    answer = np.where(np.abs(cdf - levels) <= _CDF_TOLERANCE, x, high)
    return (float(answer[0]), float(answer[1]), float(answer[2]), float(answer[3]))
