"""The estimate's percentiles (docs/estimate.md, Percentiles): each group's row is a gamma of its
mean and SCV; the "all" row is the rate-weighted mixture of the groups' gammas.

Review 62 (item 5): the "all" row was a gamma fitted to the pooled mean and SCV, which put its
p99 and p99.9 above every group's (s1_afa: all write p99 0.159 ms against groups' 0.087, 0.079
and 0.115 ms; the simulation gave 0.112 ms). No mixture can do that: at the largest group
quantile every group's CDF is at least q, so the mixture's is.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy import stats

import simcache
from simcache.estimate.theory.queueing import (
    PERCENTILE_LEVELS,
    gamma_mixture_quantiles,
    gamma_quantiles,
)
from simcache.spec import builtin_scenarios

COLUMNS = ("p50_ms", "p95_ms", "p99_ms", "p999_ms")


def gamma_cdf(x: float, mean: float, scv: float) -> float:
    """The CDF at ``x`` of the gamma of this mean and SCV (shape 1/scv, scale mean * scv), or of a
    point mass at the mean without spread, as gamma_quantiles takes it."""
    if mean <= 0 or scv < 1e-6:
        return 1.0 if x >= mean else 0.0
    return float(stats.gamma.cdf(x, 1.0 / scv, scale=mean * scv))


def test_the_mixture_quantile_solves_the_weighted_cdf() -> None:
    """x_q = Q_mix(q) is the least x with sum_g w_g F_g(x) >= q (w_g = rate_g / sum rates): for a
    continuous mixture, sum_g w_g F_g(x_q) = q; and min_g Q_g(q) <= x_q <= max_g Q_g(q)."""
    weights, means, scvs = [19200.0, 32000.0, 8000.0], [28e-6, 20e-6, 111e-6], [1.4, 2.1, 1e-4]
    mixed = gamma_mixture_quantiles(weights, means, scvs)
    parts = [gamma_quantiles(m, v) for m, v in zip(means, scvs, strict=True)]
    total = sum(weights)
    for level, x, own in zip(PERCENTILE_LEVELS, mixed, zip(*parts, strict=True), strict=True):
        cdf = sum(
            w / total * gamma_cdf(x, m, v) for w, m, v in zip(weights, means, scvs, strict=True)
        )
        assert cdf == pytest.approx(level, abs=1e-9)
        assert min(own) <= x <= max(own)


def test_the_mixture_of_point_masses_and_one_group_are_exact() -> None:
    """Point masses (no spread): the quantile is the mass where the cumulative weight first
    reaches q (to 1e-13 of it: the search brackets the jump). One group (or others of no weight):
    its own gamma_quantiles, the same floats. A group of unbounded latency makes the mixture
    unbounded."""
    # 60% at 1 ms, 40% at 3 ms: p50 is 1 ms, p95 and above 3 ms
    assert gamma_mixture_quantiles([3.0, 2.0], [1e-3, 3e-3], [0.0, 0.0]) == pytest.approx(
        (1e-3, 3e-3, 3e-3, 3e-3), rel=1e-12
    )
    # half at 2 ms, half exponential of mean 1 ms: F(x) = 0.5 (1 - exp(-x / 1 ms)) below 2 ms,
    # 0.5 + that from 2 ms (0.93 there): p50 is the jump at 2 ms, p99 solves 1 - exp(-x) = 0.98
    mixed = gamma_mixture_quantiles([1.0, 1.0], [2e-3, 1e-3], [0.0, 1.0])
    assert mixed[0] == pytest.approx(2e-3, rel=1e-12)
    assert mixed[2] == pytest.approx(-math.log(0.02) * 1e-3, rel=1e-12)
    assert gamma_mixture_quantiles([5.0, 0.0], [2e-3, 9e-3], [0.7, 0.1]) == gamma_quantiles(
        2e-3, 0.7
    )
    assert gamma_mixture_quantiles([1.0, 1.0], [2e-3, math.inf], [0.7, 0.0]) == (math.inf,) * 4


def test_the_all_row_is_the_mixture_of_the_groups_rows() -> None:
    """On the default scenario (db, build and web, of different latencies), per op and
    percentile: sum_g w_g F_g(x_q) = q with F_g each group's own gamma (its row's mean and SCV)
    and w_g its share of the op's I/O rate, and x_q between the groups' quantiles; the all row's
    mean stays the rate-weighted mean."""
    estimate = simcache.estimate(simcache.load_scenario("default"))
    summary = estimate.summary
    for op in ("read", "write"):
        groups = summary[(summary.group != "all") & (summary.op == op) & (summary.iops > 0)]
        everything = summary[(summary.group == "all") & (summary.op == op)].iloc[0]
        total = groups.iops.sum()
        moments = [
            (row.iops / total, row.mean_ms, estimate.latency_scv(row.group, op))
            for row in groups.itertuples()
        ]
        assert everything.mean_ms == pytest.approx(sum(w * m for w, m, _ in moments), rel=1e-9)
        assert max(v for _, _, v in moments) > 0.01  # the groups have spread, not point masses
        for level, column in zip(PERCENTILE_LEVELS, COLUMNS, strict=True):
            x = float(everything[column])
            assert sum(w * gamma_cdf(x, m, v) for w, m, v in moments) == pytest.approx(
                level, abs=1e-9
            ), (op, column)
            assert groups[column].min() <= x <= groups[column].max(), (op, column)


def test_no_library_all_row_percentile_is_outside_its_groups() -> None:
    """Every library scenario and variant: the all row's p99 (and each other percentile) is at
    most the largest group's and at least the smallest's."""
    for path in sorted(builtin_scenarios().values()):
        base = simcache.load_scenario(path)
        for name in ["base", *base.variants]:
            summary = simcache.estimate(base.variant(name)).summary
            for op in ("read", "write"):
                groups = summary[(summary.group != "all") & (summary.op == op) & (summary.iops > 0)]
                everything = summary[(summary.group == "all") & (summary.op == op)].iloc[0]
                for column in COLUMNS:
                    x = float(everything[column])
                    if groups.empty or not math.isfinite(x):
                        continue
                    where = f"{Path(path).stem}/{name} {op} {column}"
                    assert x <= groups[column].max() * (1 + 1e-12), where
                    assert x >= groups[column].min() * (1 - 1e-12), where
