"""Writes on the earliest-free unit while reads are addressed (``placement = "any-unit"`` with
``read_interference`` set: a log-structured FTL places a write on whichever die is free), and the
writes' own lognormal spread (``write_service_cv``), against exact closed-loop arithmetic and the
lognormal's quantiles."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
from scipy.special import ndtri

from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.tier import Tier
from simcache.spec import TierSpec

UNIT_TIME = 50e-6  # s, deterministic unit time of a read and of a write
UNITS = 8
# the most a scenario may give (10 TB/s): a 1-byte transfer takes 1e-13 s, the pipe decides nothing
PIPE = 1e13


def _tier(placement: str, seed: int = 1, **fields: object) -> Tier:
    spec = TierSpec.model_validate(
        {
            "kind": "flash",
            "read_latency": UNIT_TIME,
            "write_latency": UNIT_TIME,
            "read_bandwidth": PIPE,
            "write_bandwidth": PIPE,
            "channels": UNITS,
            "capacity": 10**12,
            "read_interference": 1.0,
            "placement": placement,
        }
        | fields
    )
    return Tier(spec, UniformStream(np.random.SeedSequence(seed)))


def _closed_loop(tier: Tier, jobs: int, is_write: bool, operations: int) -> np.ndarray:
    """Sojourn times (s) of ``operations`` 1-byte operations of ``jobs`` sync jobs, each issuing its
    next operation when its last completes."""
    heap = [(tier.submit(0.0, 1, is_write), 0.0) for _ in range(jobs)]
    heapq.heapify(heap)
    sojourns = []
    while len(sojourns) < operations:
        done, start = heapq.heappop(heap)
        sojourns.append(done - start)
        heapq.heappush(heap, (tier.submit(done, 1, is_write), done))
    return np.array(sojourns)


@pytest.mark.parametrize("jobs", [1, 4, UNITS])
def test_free_writes_never_wait_while_jobs_are_at_most_the_units(jobs: int) -> None:
    # Earliest-free units, deterministic service s: with n <= c jobs a unit is always free when a
    # job submits (the other n - 1 hold at most n - 1 units), so every sojourn is s + 1 byte on the
    # pipe, exactly.
    sojourns = _closed_loop(_tier("any-unit"), jobs, True, 5_000)
    assert sojourns.max() == pytest.approx(UNIT_TIME + 1.0 / PIPE, rel=1e-9)
    assert sojourns.min() == pytest.approx(UNIT_TIME + 1.0 / PIPE, rel=1e-9)


def test_free_writes_past_the_units_run_at_c_over_s() -> None:
    # n = 3c jobs on c earliest-free deterministic units: the units never idle, each finishes one
    # write per s, so the loop runs at c / s and (Little) every sojourn is n s / c = 3 s.
    jobs = 3 * UNITS
    sojourns = _closed_loop(_tier("any-unit"), jobs, True, 20_000)[jobs:]
    assert sojourns.mean() == pytest.approx(3 * UNIT_TIME, rel=1e-6)
    assert sojourns.max() == pytest.approx(3 * UNIT_TIME, rel=1e-6)


def test_reads_stay_addressed_and_meet_on_their_die() -> None:
    # The same loop of c reads: each read goes to a uniformly random die (read_interference), so
    # c reads submitted together meet two or more on one die with probability 1 - c! / c^c (0.998
    # for c = 8) and the mean sojourn lies clearly above s (about 1.6 s over seeds 1-5; the
    # exponential product form of c jobs on c random queues gives (2c - 1) / c s = 1.875 s); 1.1 s
    # is far below either. The addressed writes of placement = "addressed" meet likewise.
    free = _tier("any-unit")
    reads = _closed_loop(free, UNITS, False, 20_000)
    writes = _closed_loop(_tier("addressed"), UNITS, True, 20_000)
    assert reads.mean() > 1.1 * UNIT_TIME
    assert writes.mean() > 1.1 * UNIT_TIME


def _factors(tier: Tier, is_write: bool, count: int) -> np.ndarray:
    """Unit-time factors of ``count`` operations, each alone on an idle device (1 s apart)."""
    return np.array(
        [(tier.submit(float(i), 1, is_write) - i - 1.0 / PIPE) / UNIT_TIME for i in range(count)]
    )


@pytest.mark.parametrize(("is_write", "cv"), [(True, 1.0), (False, 0.1)])
def test_writes_and_reads_draw_their_own_lognormal_spread(is_write: bool, cv: float) -> None:
    # service = "lognormal", service_cv 0.1 (reads), write_service_cv 1.0: the factor is
    # lognormal of mean 1, sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2. At each quantile p the share
    # of n draws below exp(mu + sigma z_p) is binomial: p within 4 sqrt(p (1 - p) / n).
    tier = _tier("any-unit", service="lognormal", service_cv=0.1, write_service_cv=1.0)
    count = 20_000
    factors = _factors(tier, is_write, count)
    sigma = math.sqrt(math.log1p(cv * cv))
    for p in (0.1, 0.5, 0.9, 0.99):
        quantile = math.exp(-0.5 * sigma * sigma + sigma * float(ndtri(p)))
        share = float((factors < quantile).mean())
        assert abs(share - p) < 4.0 * math.sqrt(p * (1.0 - p) / count), (p, share)


def test_unset_write_spread_is_the_reads_spread() -> None:
    # Without write_service_cv writes draw from service_cv's table: the same stream gives the same
    # factors for writes as for reads (read_interference unset, so a read draws no die either).
    fields = {"service": "lognormal", "service_cv": 0.3, "read_interference": None}
    writes = _factors(_tier("any-unit", **fields), True, 200)
    reads = _factors(_tier("any-unit", **fields), False, 200)
    assert np.allclose(writes, reads, rtol=1e-12)
