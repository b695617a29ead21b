"""Where I/Os land: the exact Zipf sampler, the rank scatter, hot spots and sequential runs, and
their validation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

import simcache
from simcache.base.errors import ScenarioError
from simcache.physics import locality
from simcache.physics.locality import ZipfRanks, harmonic, hot_blocks, multiplier, scatter
from simcache.spec import Workload
from simcache.workloads.generators import BLOCK, IOStream

P_VALUE = 0.001
"""A goodness-of-fit test fails below this p-value: a correct sampler fails one seed in a
thousand (seeds are fixed)."""


def zipf_probabilities(n: int, theta: float) -> np.ndarray:
    """P(rank r) = r^-theta / H(n, theta), H(n, theta) = sum_{k=1}^n k^-theta (the discrete Zipf
    law, exactly)."""
    weights = np.arange(1, n + 1, dtype=np.float64) ** -theta
    return np.asarray(weights / weights.sum())


@pytest.mark.parametrize("theta", [0.5, 0.99, 1.0, 1.2, 3.0])
def test_zipf_rank_frequencies_fit_the_discrete_law(theta: float) -> None:
    # Pearson's chi-square over the 50 ranks; ranks expected fewer than 5 times are pooled into one
    # cell (the usual validity condition of the chi-square approximation).
    n, draws = 50, 200_000
    ranks = ZipfRanks(n, theta).draw(np.random.default_rng(7), draws)
    assert ranks.min() >= 1 and ranks.max() <= n
    observed = np.bincount(ranks, minlength=n + 1)[1:].astype(np.float64)
    expected = zipf_probabilities(n, theta) * draws
    big = expected >= 5
    cells_observed = np.append(observed[big], observed[~big].sum()) if (~big).any() else observed
    cells_expected = np.append(expected[big], expected[~big].sum()) if (~big).any() else expected
    assert stats.chisquare(cells_observed, cells_expected).pvalue > P_VALUE


def test_zipf_on_a_huge_working_set_keeps_the_head_exact() -> None:
    # 2^40 blocks (4 PiB of 4 KiB blocks): P(rank 1) = 1 / H(n, theta), with H summed by
    # Euler-Maclaurin.
    n, theta, draws = 2**40, 1.2, 400_000
    ranks = ZipfRanks(n, theta).draw(np.random.default_rng(3), draws)
    assert ranks.min() >= 1 and ranks.max() <= n
    top = harmonic(n, theta)
    for rank in (1, 2, 3):
        p = rank**-theta / top
        assert abs((ranks == rank).mean() - p) < 4.5 * math.sqrt(p * (1 - p) / draws)


def test_harmonic_numbers_match_the_sum() -> None:
    for n in (1, 7, 4096, 4097, 30_000):
        for theta in (0.3, 1.0, 2.5):
            assert harmonic(n, theta) == pytest.approx(
                float(np.sum(np.arange(1, n + 1, dtype=np.float64) ** -theta)), rel=1e-13
            )
    # ln n + Euler's gamma
    assert harmonic(2**40, 1.0) == pytest.approx(40 * math.log(2) + 0.5772156649015329, rel=1e-12)
    assert harmonic(0, 1.0) == 0.0


@pytest.mark.parametrize("n", [1, 2, 3, 6, 10, 12, 100, 1000, 1024, 4095, 65537, 99991])
def test_scatter_reaches_every_block_exactly_once(n: int) -> None:
    a = multiplier(n)
    assert math.gcd(a, n) == 1
    blocks = scatter(np.arange(n, dtype=np.int64), n, a)
    assert np.array_equal(np.sort(blocks), np.arange(n))


def test_scatter_is_exact_beyond_64_bit_products() -> None:
    n = 2**40 + 12345
    a = multiplier(n)
    ranks = np.array([0, 1, 2, 2**20 + 7, n - 1], dtype=np.int64)
    assert scatter(ranks, n, a).tolist() == [(a * int(r)) % n for r in ranks]


@pytest.mark.parametrize("n", [2**32 - 5, 2**32, 2**32 + 15])
def test_scatter_is_exact_on_both_sides_of_the_one_product_limit(n: int) -> None:
    # Up to 2^32 blocks the scatter multiplies once (a r < n^2 <= 2^64), above it limb by limb: a r
    # mod n either way.
    a = multiplier(n)
    ranks = np.array([0, 1, 2, 2**31 + 3, n - 2, n - 1], dtype=np.int64)
    assert scatter(ranks, n, a).tolist() == [(a * int(r)) % n for r in ranks]


@pytest.mark.parametrize("theta", [0.5, 0.9, 0.99, 1.0, 1.0 + 1e-9, 2.0])
def test_zipf_quotients_take_the_same_values_with_and_without_small_arguments(theta: float) -> None:
    # log1p(t)/t and expm1(t)/t skip their series when no |t| is below 1e-8; an array that has one
    # takes the series there and the same quotients elsewhere (bit for bit: the draws must not
    # depend on their batch).
    t = (1.0 - theta) * np.random.default_rng(3).uniform(0.0, 20.0, 1000)
    with_small = np.concatenate((t, [0.0, 1e-12]))
    for quotient, exact in ((locality._log1p_over, np.log1p), (locality._expm1_over, np.expm1)):
        # theta 2: t below -1 gives log1p's NaN (a domain the draws never reach), compared as such
        with np.errstate(invalid="ignore"):
            alone, mixed = quotient(t), quotient(with_small)
            large = np.abs(t) >= 1e-8
            expected = exact(t[large]) / t[large]
        assert np.array_equal(alone, mixed[:-2], equal_nan=True)
        assert mixed[-2] == 1.0 and abs(mixed[-1] - 1.0) < 1e-11
        assert np.array_equal(alone[large], expected, equal_nan=True)


def test_size_mix_draws_are_the_inverse_of_the_cumulative_mix() -> None:
    # Each I/O's size: one uniform u placed in the normalised cumulative probabilities (the first
    # size whose cumulative probability exceeds u), so the sizes follow the mix: Pearson's
    # chi-square over the three sizes.
    workload = Workload(sizes={"4KiB": 0.5, "32KiB": 0.3, "256KiB": 0.2}, read_fraction=1.0)
    stream = IOStream(workload, np.random.SeedSequence(11))
    sizes = np.array([stream.next_io()[1] for _ in range(30_000)])
    observed = [int((sizes == s).sum()) for s in (4096, 32768, 262144)]
    assert sum(observed) == 30_000
    assert stats.chisquare(observed, np.array([0.5, 0.3, 0.2]) * 30_000).pvalue > P_VALUE


def test_zipf_stream_uses_the_scatter_of_the_exact_ranks() -> None:
    workload = Workload(working_set=100 * BLOCK, access="zipf", zipf_theta=1.2)
    stream = IOStream(workload, np.random.SeedSequence(5))
    blocks = np.array([stream.next_io()[2] // BLOCK for _ in range(20_000)])
    # The hottest rank is block 0 (the scatter maps rank 0 to 0); the next ones are far from it.
    counts = np.bincount(blocks, minlength=100)
    p = zipf_probabilities(100, 1.2)
    assert counts.argmax() == 0
    a = multiplier(100)
    assert abs(counts[a % 100] / 20_000 - p[1]) < 0.01


def test_hotspot_sends_its_share_to_the_first_blocks() -> None:
    workload = Workload(
        working_set=1000 * BLOCK, access="hotspot", hot_io_fraction=0.8, hot_span_fraction=0.2
    )
    stream = IOStream(workload, np.random.SeedSequence(1))
    blocks = np.array([stream.next_io()[2] // BLOCK for _ in range(40_000)])
    hot = blocks < 200
    assert abs(hot.mean() - 0.8) < 0.01
    # Uniform within each region: every block of the hot region about 0.8 / 200 of the I/Os.
    assert stats.chisquare(np.bincount(blocks[hot], minlength=200)).pvalue > P_VALUE
    assert stats.chisquare(np.bincount(blocks[~hot] - 200, minlength=800)).pvalue > P_VALUE
    assert (
        hot_blocks(1000, 0.2) == 200
        and hot_blocks(10, 0.01) == 1
        and hot_blocks(10, 0.99) == 9
        and hot_blocks(1, 0.5) == 1
    )


@pytest.mark.parametrize("access", ["uniform", "zipf", "hotspot"])
def test_sequential_runs_have_the_mean_length(access: str) -> None:
    extra: dict[str, Any] = (
        {"hot_io_fraction": 0.7, "hot_span_fraction": 0.1} if access == "hotspot" else {}
    )
    workload = Workload(
        working_set=2**30, access=access, sequential_run=5.0, sizes={"4KiB": 1, "12KiB": 1}, **extra
    )
    stream = IOStream(workload, np.random.SeedSequence(11))
    ios = [stream.next_io() for _ in range(30_000)]
    continued = [ios[i][2] == (ios[i - 1][2] + ios[i - 1][1]) % 2**30 for i in range(1, len(ios))]
    # Each I/O continues with probability 1 - 1/5; a fresh position lands on the previous end by
    # chance almost never.
    assert np.mean(continued) == pytest.approx(0.8, abs=0.01)


def test_without_runs_uniform_offsets_are_unchanged() -> None:
    # sequential_run = 1 draws nothing more: a uniform stream's offsets are the generator's
    # integers, as before runs.
    workload = Workload(working_set=2**30)
    stream = IOStream(workload, np.random.SeedSequence(3))
    rng = np.random.default_rng(np.random.SeedSequence(3))
    rng.random(32)  # the first batch (32 I/Os): read or write (one size: no size draw)
    expected = rng.integers(0, 2**30 // BLOCK, size=32) * BLOCK
    assert [stream.next_io()[2] for _ in range(32)] == expected.tolist()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"access": "hotspot"}, 'access = "hotspot" needs hot_io_fraction and hot_span_fraction'),
        (
            {"access": "hotspot", "hot_io_fraction": 0.8},
            'access = "hotspot" needs hot_span_fraction: the share',
        ),
        (
            {"access": "hotspot", "hot_io_fraction": 0.2, "hot_span_fraction": 0.5},
            "hot_io_fraction (0.2) must be more than hot_span_fraction (0.5)",
        ),
        (
            {"access": "zipf", "hot_io_fraction": 0.8},
            'hot_io_fraction describe access = "hotspot", not "zipf"',
        ),
        (
            {"access": "sequential", "sequential_run": 4},
            'access = "sequential" is one endless run: remove sequential_run',
        ),
        ({"access": "hotspot", "hot_io_fraction": 1.0, "hot_span_fraction": 0.2}, "less than 1"),
        ({"sequential_run": 0.5}, "must be at least 1; a run is at least one I/O"),
    ],
)
def test_bad_access_combinations_are_named(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        simcache.load_scenario({"groups": [{"name": "g", "workload": fields}]})
    assert message in str(exc.value)


def test_a_trace_workload_rejects_locality_fields() -> None:
    with pytest.raises(ScenarioError) as exc:
        simcache.load_scenario(
            {
                "groups": [
                    {
                        "name": "g",
                        "workload": {
                            "mode": "trace",
                            "trace": {"path": "x.csv"},
                            "sequential_run": 3,
                        },
                    }
                ]
            }
        )
    assert "sequential_run describe a synthetic workload" in str(exc.value)


def read_cache_scenario(workload: dict[str, Any], capacity_share: float) -> simcache.Scenario:
    """One host, two VMs of 16 MiB reading 8 KiB blocks through 64 KiB lines; the cache a share
    of both working sets."""
    return simcache.load_scenario(
        {
            "name": "read-cache",
            "run": {"duration": 8.0, "warmup": 3.0},
            "cluster": {
                "hosts": 1,
                "tier": "sata-ssd-s3700-field",
                "peer_link": "10GbE",
                "storage_link": "1GbE",
                "cache": {"line": "64KiB", "capacity": int(capacity_share * 2 * 16 * 2**20)},
            },
            "array": {"profile": "array-14x7200"},
            "groups": [
                {
                    "name": "app",
                    "vms_per_host": 2,
                    "workload": {
                        "read_fraction": 0.8,
                        "sizes": "8KiB",
                        "working_set": "16MiB",
                        **workload,
                    },
                }
            ],
        }
    )


@pytest.mark.parametrize(
    ("workload", "share"),
    [
        ({"access": "uniform"}, 0.25),
        ({"access": "zipf", "zipf_theta": 0.9}, 0.25),
        ({"access": "zipf", "zipf_theta": 1.2}, 0.125),
        ({"access": "hotspot", "hot_io_fraction": 0.8, "hot_span_fraction": 0.2}, 0.25),
        ({"access": "uniform", "sequential_run": 4}, 0.125),
        (
            {
                "access": "hotspot",
                "hot_io_fraction": 0.8,
                "hot_span_fraction": 0.2,
                "sequential_run": 8,
            },
            0.125,
        ),
    ],
)
def test_estimated_read_hit_ratio_matches_the_simulation(
    workload: dict[str, Any], share: float
) -> None:
    # Closed loop, one I/O in flight per VM: the run estimate's assumption (the previous I/O's line
    # is in) holds.
    from simcache.estimate.layout import Layout
    from simcache.estimate.solver import solve_hit_ratios

    scenario = read_cache_scenario(workload, share)
    result = simcache.simulate(scenario, seed=1)
    reads = result.measured[result.measured.op == "read"]
    simulated = float((reads.path == "hit").mean())
    estimated = solve_hit_ratios(Layout(scenario)).hit[0]
    assert estimated == pytest.approx(simulated, abs=0.04)
