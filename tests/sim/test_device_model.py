"""Tier v2 (issue 34): each new piece of the device model against exact theory.

The tier is driven directly where that is enough (no SimPy): every operation's completion is known
when it is submitted (simcache/sim/components/tier.py), so a closed loop is a loop over
``Tier.submit`` and an open Poisson stream is a list of arrival times. Deterministic set-ups are
checked exactly (to float rounding, or to the one operation a count over a window can be off by);
figures that are means over random draws are checked with a confidence interval from the draws
themselves (batch means, or the sample's own moments), at ``CONFIDENCE``. The scenario-level tests
(warm cache, the VM's garbage-collection share, errors, determinism) run short scenarios of one or
two VMs.
"""

from __future__ import annotations

import heapq
import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from support.builders import small_scenario
from support.strategies import to_toml

from simcache import ScenarioError, load_scenario, simulate
from simcache.estimate import estimate
from simcache.estimate.layout import Layout
from simcache.estimate.solver import solve_hit_ratios
from simcache.physics.cluster import (
    INTERFACE_RATES,
    gc_refill_rate,
    pipe_rate,
    tier_units,
    write_gc_factor,
)
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.tier import Tier
from simcache.sim.engine import build
from simcache.spec import Scenario, TierSpec

KiB, MiB = 1024, 1024**2
# two-sided level of every statistical check: a correct model fails one in a thousand seeds
CONFIDENCE = 0.999
Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)  # 3.29


def tier_spec(**fields: Any) -> TierSpec:
    """A deterministic flash tier with round numbers; ``fields`` override or add."""
    base = {
        "kind": "flash",
        "read_latency": 60e-6,
        "write_latency": 20e-6,
        "read_bandwidth": 4e9,
        "write_bandwidth": 2e9,
        "channels": 8,
        "capacity": 10**12,
    }
    return TierSpec.model_validate(base | fields)


def make_tier(seed: int = 0, **fields: Any) -> Tier:
    return Tier(tier_spec(**fields), UniformStream(np.random.SeedSequence(seed)))


def closed_loop(
    tier: Tier, outstanding: int, size: int, is_write: bool, until: float, gc_factor: float = 1.0
) -> np.ndarray:
    """``outstanding`` operations kept in flight from time 0, each reissued when it completes:
    the completion times before ``until``, in order."""
    in_flight = [tier.submit(0.0, size, is_write, gc_factor) for _ in range(outstanding)]
    heapq.heapify(in_flight)
    done = []
    while in_flight[0] < until:
        finish = in_flight[0]
        done.append(finish)
        heapq.heapreplace(in_flight, tier.submit(finish, size, is_write, gc_factor))
    return np.asarray(done)


def completed(done: np.ndarray, start: float, end: float) -> int:
    return int(((done > start) & (done <= end)).sum())


def batch_means_half_width(values: np.ndarray) -> float:
    """Half-width of the ``CONFIDENCE`` interval of the mean of ``values`` taken as independent
    batch means: t(B - 1) s / sqrt(B)."""
    batches = len(values)
    return float(
        stats.t.ppf(0.5 + CONFIDENCE / 2, batches - 1) * np.std(values, ddof=1) / math.sqrt(batches)
    )


def binomial_half_width(probability: float, n: int) -> float:
    """Half-width of the ``CONFIDENCE`` interval of a share of ``n`` independent trials (normal
    approximation)."""
    return Z * math.sqrt(probability * (1.0 - probability) / n)


# -- QD1: overhead + command + latency + transfer over the pipe
# -----------------------------------------------

# (the device's bandwidth, its interface, the host's controller cap): which of the three binds
PIPES = [
    pytest.param(500e6, "sata-6g", None, id="device"),  # 500 MB/s under SATA 6G's 600 MB/s
    pytest.param(2e9, "sata-6g", None, id="interface"),  # SATA 6G: 6 Gb/s x 8/10 / 8 = 600 MB/s
    pytest.param(3.2e9, "sas-24g", None, id="sas-24g"),  # SAS-4: 22.5 Gb/s x 128/150 / 8 = 2.4 GB/s
    # an HBA's 1.5 GB/s under PCIe 3 x4's 3.94 GB/s
    pytest.param(3.2e9, "pcie3-x4", 1.5e9, id="controller"),
    pytest.param(3.2e9, "pcie3-x4", None, id="pcie3-x4"),  # 3.2 GB/s under 8 GT/s x 4 x 128/130 / 8
    pytest.param(3.2e9, None, None, id="uncapped"),
    # no interface cap: the controller's 4 GB/s is above the device
    pytest.param(3.2e9, "memory", 4e9, id="memory"),
]


@pytest.mark.parametrize("is_write", [False, True], ids=["read", "write"])
@pytest.mark.parametrize(("bandwidth", "interface", "controller"), PIPES)
def test_qd1_latency_is_overhead_command_latency_and_transfer(
    bandwidth: float, interface: str | None, controller: float | None, is_write: bool
) -> None:
    overhead, limit, latency = 15e-6, 80_000.0, 45e-6
    port = INTERFACE_RATES[interface] if interface is not None else math.inf
    rate = min(bandwidth, port, controller if controller is not None else math.inf)
    assert pipe_rate(bandwidth, controller, interface) == rate
    op = "write" if is_write else "read"
    fields: dict[str, Any] = {
        f"{op}_bandwidth": bandwidth,
        f"{op}_iops_limit": limit,
        f"{op}_latency": latency,
    }
    tier = make_tier(
        command_overhead=overhead,
        interface=interface,
        controller_bandwidth=controller,
        channels=1,
        **fields,
    )
    now = 0.0
    for size in (512, 4 * KiB, 128 * KiB, 1 * MiB) * 3:  # QD1: each issued when the last completes
        expected = overhead + 1.0 / limit + latency + size / rate
        finish = tier.submit(now, size, is_write)
        # Exact up to the rounding of the four additions onto the clock (a few ulps of the
        # completion time).
        assert abs((finish - now) - expected) <= 8 * math.ulp(finish), (
            size,
            finish - now,
            expected,
        )
        now = finish


def test_interface_rates_are_the_line_rates_after_coding() -> None:
    assert INTERFACE_RATES["sata-3g"] == pytest.approx(300e6, rel=1e-15)
    assert INTERFACE_RATES["sas-12g"] == pytest.approx(1.2e9, rel=1e-15)
    assert INTERFACE_RATES["sas-24g"] == pytest.approx(2.4e9, rel=1e-15)
    for generation, transfers in ((3, 8e9), (4, 16e9), (5, 32e9)):
        for lanes in (1, 2, 4, 8, 16):
            assert INTERFACE_RATES[f"pcie{generation}-x{lanes}"] == pytest.approx(
                transfers * lanes * 128 / 130 / 8, rel=1e-15
            )
    # the 7.88 GB/s of tier-v2.md
    assert INTERFACE_RATES["pcie4-x4"] == pytest.approx(7.88e9, rel=1e-3)
    assert INTERFACE_RATES["memory"] == math.inf


# -- the controller's command processor
# -------------------------------------------------------------------


@pytest.mark.parametrize("is_write", [False, True], ids=["read", "write"])
def test_closed_loop_saturates_at_the_iops_limit(is_write: bool) -> None:
    overhead, limit, latency, size, bandwidth = 20e-6, 100_000.0, 80e-6, 4 * KiB, 4e9
    op = "write" if is_write else "read"
    fields: dict[str, Any] = {
        f"{op}_iops_limit": limit,
        f"{op}_latency": latency,
        f"{op}_bandwidth": bandwidth,
    }
    per_op = overhead + 1.0 / limit + latency + size / bandwidth  # 111 us
    # 32 units serve 32 / (latency + transfer) = 395K/s and the pipe 4 GB/s / 4 KiB = 977K/s: only
    # the processor binds.
    assert (
        tier_units(tier_spec(channels=8, dies=4)) * 1.0 / (latency + size / bandwidth) > 3 * limit
    )
    start, end = 0.01, 0.11
    # Far past the knee (64 >> per_op x limit = 11.1): the processor is never idle, so a command
    # leaves it every 1/limit exactly and every one then takes the same fixed time: a window of T
    # holds limit x T completions, +-1.
    saturated = closed_loop(
        make_tier(command_overhead=overhead, channels=8, dies=4, **fields), 64, size, is_write, end
    )
    assert abs(completed(saturated, start, end) - limit * (end - start)) <= 1
    # Below the knee (4 < 11.1) nothing waits once the first round has spread the commands out: each
    # of the four loops completes one operation every per_op, so the window holds 4 (end - start) /
    # per_op completions, +-4.
    below = closed_loop(
        make_tier(command_overhead=overhead, channels=8, dies=4, **fields), 4, size, is_write, end
    )
    assert abs(completed(below, start, end) - 4 * (end - start) / per_op) <= 4


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_command_processor_wait_is_md1_under_poisson_arrivals(rho: float) -> None:
    overhead, limit, latency, size, bandwidth = 15e-6, 100_000.0, 60e-6, 4 * KiB, 4e9
    service = 1.0 / limit  # D: every read holds the processor 10 us
    transfer = size / bandwidth
    # The processor lets commands out at least D apart and everything after it is fixed, so with a
    # transfer shorter than D the pipe never queues, and with 8 units x D = 80 us > latency +
    # transfer a unit is always free: the only wait is the processor's.
    assert transfer < service and 8 * service > latency + transfer
    tier = make_tier(
        command_overhead=overhead,
        read_iops_limit=limit,
        read_latency=latency,
        read_bandwidth=bandwidth,
        channels=8,
    )
    gaps = np.random.default_rng(34).exponential(service / rho, 200_000)
    arrivals = np.cumsum(gaps)
    latencies = np.array([tier.submit(now, size, False) - now for now in arrivals.tolist()])
    # Exactly, operation by operation: Lindley's recursion of one FCFS server of D, W' = max(0, W +
    # D - gap).
    waits = np.empty(len(gaps))
    wait = 0.0
    for i, gap in enumerate(gaps.tolist()):
        wait = max(0.0, wait + service - gap) if i else 0.0
        waits[i] = wait
    fixed = overhead + service + latency + transfer
    np.testing.assert_allclose(latencies - fixed, waits, rtol=0, atol=1e-12)
    # On average: M/D/1, Pollaczek-Khinchine Wq = rho D / (2 (1 - rho)). The first 10,000 arrivals
    # (the queue starts empty, hundreds of relaxation times D / (1 - sqrt(rho))^2) are left out; 19
    # batches of 10,000 give the CI.
    expected = fixed + rho * service / (2 * (1 - rho))
    batches = latencies[10_000:].reshape(19, -1).mean(axis=1)
    assert abs(batches.mean() - expected) <= batch_means_half_width(batches), (
        batches.mean(),
        expected,
    )


# -- parallel units: channels x dies
# -------------------------------------------------------------------------


@pytest.mark.parametrize(("channels", "dies"), [(3, 4), (12, 1), (1, 12)])
def test_units_are_channels_times_dies(channels: int, dies: int) -> None:
    latency, size, bandwidth = 100e-6, 4 * KiB, 4e9
    transfer = size / bandwidth
    tier = make_tier(read_latency=latency, read_bandwidth=bandwidth, channels=channels, dies=dies)
    units = tier_units(tier.spec)
    assert units == channels * dies == 12
    # A closed loop of 40 > 12: every unit is always busy, each holding an operation for its latency
    # and its transfer. The first round's transfers queue on the pipe and leave the units 1 transfer
    # apart; since 12 transfers fit in one latency, they never meet again: throughput exactly units
    # / (latency + transfer).
    assert units * transfer <= latency
    start, end = 0.005, 0.055
    done = closed_loop(tier, 40, size, False, end)
    throughput = units / (latency + transfer)
    # each unit's count +-1
    assert abs(completed(done, start, end) - throughput * (end - start)) <= units


# -- erase_block: sequential writes pay no GC copies
# -------------------------------------------------------


def test_write_gc_factor_formula() -> None:
    write_bandwidth, amplification, block = 400e6, 4.0, 4 * MiB
    spec = tier_spec(
        write_bandwidth=write_bandwidth,
        clean_pool=8 * MiB,
        write_amplification=amplification,
        erase_block=block,
    )
    refill = gc_refill_rate(spec)
    assert refill == write_bandwidth / amplification
    for share in (0.0, 0.25, 0.5, 1.0):
        # a = 1 + (WA - 1)(1 - s) bytes programmed per host byte; the pool is charged a / WA of each
        # write's bytes
        a = 1 + (amplification - 1) * (1 - share)
        assert write_gc_factor(spec, share * block) == pytest.approx(a / amplification, rel=1e-15)
        assert write_gc_factor(spec, share * block) == pytest.approx(
            1 - share * (1 - refill / write_bandwidth), rel=1e-15
        )
    assert write_gc_factor(spec, 0.0) == 1.0  # s = 0: scattered writes pay the full amplification
    # s = 1/2: a = (WA + 1) / 2
    assert write_gc_factor(spec, block / 2) == pytest.approx((1 + 1 / amplification) / 2, rel=1e-15)
    # s = 1: a = 1
    assert write_gc_factor(spec, block) == pytest.approx(1 / amplification, rel=1e-15)
    # s = min(1, ...)
    assert (
        write_gc_factor(spec, 3 * block)
        == write_gc_factor(spec, math.inf)
        == write_gc_factor(spec, block)
    )
    # With gc_rate given, r replaces write_bandwidth / WA: a whole-block stream is charged r /
    # write_bandwidth.
    direct = tier_spec(
        write_bandwidth=write_bandwidth, clean_pool=8 * MiB, gc_rate=50e6, erase_block=block
    )
    assert write_gc_factor(direct, block) == pytest.approx(50e6 / write_bandwidth, rel=1e-15)
    # Without an erase_block, or without a cliff, every write is charged in full.
    scattered = tier_spec(
        write_bandwidth=write_bandwidth, clean_pool=8 * MiB, write_amplification=amplification
    )
    assert write_gc_factor(scattered, math.inf) == 1.0
    assert write_gc_factor(tier_spec(), math.inf) == 1.0


SUSTAINED = [  # (how writes arrive, size, erase_block)
    # whole blocks: no copies, write_bandwidth
    pytest.param("sequential", 128 * KiB, 4 * MiB, id="sequential"),
    pytest.param("random", 4 * KiB, 4 * MiB, id="random"),  # scattered: write_bandwidth / WA
    # the old model: full WA
    pytest.param("sequential", 128 * KiB, None, id="sequential-without-erase-block"),
]


@pytest.mark.parametrize(("access", "size", "block"), SUSTAINED)
def test_sustained_writes_past_a_small_clean_pool(
    access: str, size: int, block: int | None
) -> None:
    write_bandwidth, amplification = 400e6, 4.0
    refill = write_bandwidth / amplification
    spec = tier_spec(
        write_bandwidth=write_bandwidth,
        write_latency=20e-6,
        channels=8,
        dies=4,
        clean_pool=4 * MiB,
        write_amplification=amplification,
        erase_block=block,
        service="lognormal",  # unit times that vary, so the batches do
        service_cv=0.3,
    )
    run = math.inf if access == "sequential" else size  # a random write is a run of one write
    factor = write_gc_factor(spec, run)
    # Past the 4 MiB pool (gone in 4 MiB / (W - r) = 14 ms at most) writes charged `factor` of their
    # bytes run at min(write_bandwidth, r / factor): whole-block streams (factor r / W) at W, 4 KiB
    # scattered writes (s = 4 KiB / 4 MiB, factor 1 - s (1 - 1/WA)) at r / factor = 1.0007 r, and
    # without an erase_block (factor 1) at r.
    expected = min(write_bandwidth, refill / factor)
    if access == "sequential" and block is not None:
        assert expected == write_bandwidth
    else:
        assert expected == pytest.approx(refill, rel=1e-3)
    tier = Tier(spec, UniformStream(np.random.SeedSequence(7)))
    start, end, batches = 0.1, 0.6, 20
    # 32 in flight keep the 400 MB/s pipe busy
    done = closed_loop(tier, 32, size, True, end, factor)
    edges = np.linspace(start, end, batches + 1)
    rates = np.histogram(done, edges)[0] * size / np.diff(edges)
    # The batch-means CI, and the one write the window's count can be off by (a whole write either
    # side of an edge).
    tolerance = batch_means_half_width(rates) + size / (end - start)
    assert abs(rates.mean() - expected) <= tolerance, (
        rates.mean() / 1e6,
        expected / 1e6,
        tolerance / 1e6,
    )
    # only writes that outrun the refill wait for it
    assert (tier.gc_wait_seconds > 0) == (expected < write_bandwidth)


@pytest.mark.parametrize("condition", ["fresh", "preconditioned"])
def test_fresh_device_writes_its_capacity_before_the_cliff(condition: str) -> None:
    write_bandwidth, amplification, capacity, pool, size, outstanding = (
        400e6,
        4.0,
        16 * MiB,
        1 * MiB,
        4 * KiB,
        16,
    )
    refill = write_bandwidth / amplification
    tier = make_tier(
        write_bandwidth=write_bandwidth,
        write_latency=10e-6,
        capacity=capacity,
        clean_pool=pool,
        write_amplification=amplification,
        condition=condition,
    )
    start_pool = capacity if condition == "fresh" else pool
    assert tier.clean_pool_bytes(0.0) == start_pool
    # Scattered 4 KiB writes run at W = write_bandwidth (the pipe) while there is clean space, then
    # at r = W / WA. GC refills only below the reserve: a fresh pool drains at W down to it (the
    # first 16 writes, taken at once at t = 0, within that), then at W - r to empty, so the cliff
    # comes after (C - reserve) + reserve W / (W - r) bytes. A preconditioned pool is at the reserve
    # from the start: the 16 writes (N s bytes) are taken at once, then it drains at W - r: the
    # cliff comes after N s + (reserve - N s) W / (W - r) bytes.
    if condition == "fresh":
        cliff_bytes = (capacity - pool) + pool * write_bandwidth / (write_bandwidth - refill)
    else:
        cliff_bytes = outstanding * size + (pool - outstanding * size) * write_bandwidth / (
            write_bandwidth - refill
        )
    in_flight: list[float] = []
    submitted = 0
    # (bytes submitted before it, when) of the first write that waits
    first_wait: tuple[int, float] | None = None

    def issue(now: float) -> None:
        nonlocal submitted, first_wait
        before = tier.gc_wait_seconds
        heapq.heappush(in_flight, tier.submit(now, size, True))
        if first_wait is None and tier.gc_wait_seconds > before:
            first_wait = (submitted, now)
        submitted += size

    for _ in range(outstanding):
        issue(0.0)
    cliff_time = cliff_bytes / write_bandwidth + 0.05  # past it, and 50 ms at the refill rate
    done = []
    while in_flight[0] < cliff_time:
        done.append(heapq.heappop(in_flight))
        issue(done[-1])
    assert first_wait is not None
    # Bytes are taken one write at a time as writes complete (a staircase), the first completion a
    # unit latency late (W x write_latency x r / (W - r) = 1,333 bytes): the cliff is met within two
    # writes of the theory.
    assert abs(first_wait[0] - cliff_bytes) <= 2 * size, (first_wait[0], cliff_bytes)
    completions = np.asarray(done)
    at = first_wait[1]
    before = completed(completions, 0.1 * at, 0.9 * at) * size / (0.8 * at)
    after = completed(completions, at + 0.01, cliff_time) * size / (cliff_time - at - 0.01)
    # Deterministic: the counts are exact but for a write either side of each window's edges.
    assert before == pytest.approx(write_bandwidth, abs=2 * size / (0.8 * at))
    assert after == pytest.approx(refill, abs=2 * size / (cliff_time - at - 0.01))


# -- variability: lognormal unit times and stalls
# ---------------------------------------------------------


def qd1_extra_times(tier: Tier, n: int, size: int, fixed: float) -> np.ndarray:
    """``n`` reads at QD1 on ``tier``: each one's time beyond ``fixed``."""
    out = np.empty(n)
    now = 0.0
    for i in range(n):
        finish = tier.submit(now, size, False)
        out[i] = finish - now - fixed
        now = finish
    return out


@pytest.mark.parametrize("cv", [0.3, 1.0])
def test_lognormal_unit_time_has_mean_one_and_the_cv(cv: float) -> None:
    latency, size, bandwidth, n = 50e-6, 4 * KiB, 4e9, 100_000
    tier = make_tier(
        seed=11,
        read_latency=latency,
        read_bandwidth=bandwidth,
        channels=1,
        service="lognormal",
        service_cv=cv,
    )
    # the unit's time / read_latency
    factors = qd1_extra_times(tier, n, size, size / bandwidth) / latency
    # Mean 1: the sample mean within Z s / sqrt(n).
    assert abs(factors.mean() - 1.0) <= Z * factors.std(ddof=1) / math.sqrt(n)
    # CV: with the mean known (1), v = mean((F - 1)^2) estimates cv^2 with variance (E[(F - 1)^4] -
    # cv^4) / n.
    deviations = (factors - 1.0) ** 2
    variance = deviations.mean()
    assert abs(variance - cv**2) <= Z * math.sqrt((np.mean(deviations**2) - variance**2) / n), (
        math.sqrt(variance),
        cv,
    )
    # Quantiles: sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2, the q quantile exp(mu + sigma z_q). The
    # share of the sample below it is a binomial share of probability q.
    sigma = math.sqrt(math.log1p(cv * cv))
    mu = -sigma * sigma / 2
    for q in (0.5, 0.99):
        quantile = math.exp(mu + sigma * NormalDist().inv_cdf(q))
        assert abs(np.mean(factors <= quantile) - q) <= binomial_half_width(q, n), (
            q,
            np.quantile(factors, q),
            quantile,
        )


def test_stalls_add_p_times_t_with_an_exponential_tail() -> None:
    latency, size, bandwidth, n = 50e-6, 4 * KiB, 4e9, 100_000
    probability, stall = 0.05, 2e-3
    tier = make_tier(
        seed=12,
        read_latency=latency,
        read_bandwidth=bandwidth,
        channels=1,
        stall_probability=probability,
        stall_time=stall,
    )
    extra = qd1_extra_times(tier, n, size, latency + size / bandwidth)
    # Mean extra time p T, within the sample's CI.
    assert abs(extra.mean() - probability * stall) <= Z * extra.std(ddof=1) / math.sqrt(n)
    # Tail: P(extra > x) = p exp(-x / T), a binomial share. (x > 0: the unstalled reads' extra is
    # rounding, ~1e-18 s.)
    for x in (stall / 100, stall, 3 * stall):
        tail = probability * math.exp(-x / stall)
        assert abs(np.mean(extra > x) - tail) <= binomial_half_width(tail, n), (
            x,
            np.mean(extra > x),
            tail,
        )


# -- scenarios: the VM's share of GC, the warm cache, errors, determinism
# ------------------------------------


def device_test(
    workload: dict[str, Any],
    *,
    tier: Any = "nvme-p3700",
    cache: dict[str, Any] | None = None,
    vms: int = 1,
    **run: Any,
) -> Scenario:
    """One host, one WB+0 group ``fio`` of ``vms`` VMs; the destager never starts (1 TiB buffer,
    50 % watermark)."""
    return load_scenario(
        small_scenario(
            "device",
            run={
                "duration": "0.3s",
                "warmup": "0.03s",
                "sample_interval": "0.1s",
                "seed": 3,
                **run,
            },
            cluster={
                "hosts": 1,
                "tier": tier,
                "cache": cache or {},
                "destager": {"capacity": "1TiB", "trigger": "watermarks"},
            },
            array="array-24x15k",
            groups=[
                {
                    "name": "fio",
                    "policy": "WB+0",
                    "vms_per_host": vms,
                    "workload": {"sizes": {"4KiB": 1}, **workload},
                }
            ],
        )
    )


@pytest.mark.parametrize("profile", ["sata-ssd-s3700", "nvme-p3700"])
def test_qd1_reads_of_a_profile_in_a_run_and_in_the_estimate(profile: str) -> None:
    scenario = device_test(
        {"mode": "closed", "workers": 1, "read_fraction": 1.0, "working_set": "64MiB"},
        tier=profile,
        cache={"warm": True, "line": "64KiB"},
        duration="1s",
        warmup="0.1s",
    )
    spec = scenario.cluster.tier
    assert spec.read_iops_limit is not None
    # A warm cache's hit at QD1: overhead + command + latency (lognormal, mean 1) + mean stall p T +
    # the transfer.
    stall = (spec.stall_probability or 0.0) * (spec.stall_time or 0.0)
    rate = pipe_rate(spec.read_bandwidth, spec.controller_bandwidth, spec.interface)
    expected_ms = (
        spec.command_overhead
        + 1 / spec.read_iops_limit
        + spec.read_latency
        + stall
        + 4 * KiB / rate
    ) * 1e3
    # The estimate adds the same steps with nothing queued: equal to rounding.
    assert estimate(scenario).summary["mean_ms"].iloc[0] == pytest.approx(expected_ms, rel=1e-12)
    # The run's mean within the CI of 20 batch means (by issue time) over its window.
    result = simulate(scenario)
    reads = result.measured
    assert set(reads["path"]) == {"hit"}
    start, end = result.window
    batch = np.minimum(((reads["issue_s"].to_numpy() - start) / (end - start) * 20).astype(int), 19)
    means = pd.Series(reads["latency_ms"].to_numpy()).groupby(batch).mean().to_numpy()
    assert abs(means.mean() - expected_ms) <= batch_means_half_width(means), (
        means.mean(),
        expected_ms,
    )


@pytest.mark.parametrize(
    ("access", "size", "run"),
    [
        ("sequential", "128KiB", 1.0),
        ("uniform", "4KiB", 1.0),
        ("uniform", "64KiB", 32.0),
        ("uniform", "4KiB", 2.0**20),
    ],
)
def test_vm_charges_its_writes_by_their_runs(access: str, size: str, run: float) -> None:
    scenario = device_test(
        {"read_fraction": 0.0, "sizes": {size: 1}, "access": access, "sequential_run": run},
        tier="sata-ssd-s3700",
    )
    spec = scenario.cluster.tier
    assert spec.erase_block == 8 * MiB
    (vm,) = build(scenario, 1).vms
    size_bytes = {"128KiB": 128 * KiB, "4KiB": 4 * KiB, "64KiB": 64 * KiB}[size]
    # a sequential stream is one endless run
    run_bytes = math.inf if access == "sequential" else run * size_bytes
    share = min(1.0, run_bytes / spec.erase_block)
    refill = gc_refill_rate(spec)
    assert vm.gc_factor == pytest.approx(1 - share * (1 - refill / spec.write_bandwidth), rel=1e-15)


def test_warm_cache_hits_every_read_when_the_disk_fits() -> None:
    # Reads start at any 4 KiB block of the working set, so a 64 KiB read that starts in its last 15
    # blocks runs past its end (15 / 4,096 of them, some 20 in this run): the warm cache holds those
    # bytes too.
    workload = {
        "mode": "closed",
        "workers": 4,
        "read_fraction": 1.0,
        "working_set": "16MiB",
        "sizes": {"4KiB": 1, "64KiB": 1},
    }
    scenario = device_test(workload, cache={"warm": True, "line": "64KiB"})
    result = simulate(scenario)
    assert result.totals["cache_misses"] == 0 and result.totals["cache_hits"] > 5000
    assert set(result.measured["path"]) == {"hit"}
    # The estimate: a warm cache starts in its steady state, which for a disk that fits holds all of
    # it.
    assert solve_hit_ratios(Layout(scenario)).hit == [1.0]
    cold = device_test(workload, cache={"line": "64KiB"})
    assert solve_hit_ratios(Layout(cold)).hit[0] < 1.0  # a cold cache fills as the run goes


def test_warm_cache_is_split_evenly_when_the_disks_do_not_fit() -> None:
    cache_bytes, working_set, line, vms = 64 * MiB, 128 * MiB, 64 * KiB, 2
    scenario = device_test(
        {"mode": "open", "iops": 1000, "read_fraction": 1.0, "working_set": "128MiB"},
        cache={"warm": True, "line": "64KiB", "capacity": "64MiB"},
        vms=vms,
        duration="1s",
        warmup="0.1s",
    )
    lines = cache_bytes // line  # 1,024 lines; each VM's disk is 2,048
    (host,) = build(scenario, 1).hosts
    held = host.cache.recency()
    assert len(held) == lines and host.cache.inserted_lines == 0
    for vm in range(vms):  # each VM holds its equal share, from the start of its disk
        assert sorted(index for owner, index in held if owner == vm) == list(range(lines // vms))
    # Poisson reads of equal rate, uniform over each VM's lines, and a cache full of the two VMs'
    # lines: whatever its content, the next read hits with probability (k0 + k1) / (2 x 2,048) = C /
    # N. The hits are independent Bernoulli trials of that probability, from the first read on (the
    # cache starts full).
    hit = lines / (vms * working_set // line)  # 0.25
    result = simulate(scenario)
    hits, misses = result.totals["cache_hits"], result.totals["cache_misses"]
    assert abs(hits / (hits + misses) - hit) <= binomial_half_width(hit, hits + misses), (
        hits,
        misses,
    )
    # The estimate in its steady state (Che's approximation, exact for uniform access): C / N.
    assert solve_hit_ratios(Layout(scenario)).hit == [pytest.approx(hit, rel=1e-6)]


FULL_TIER = {  # a tier written out in full, so that fields a profile sets can be left out
    "kind": "flash",
    "read_latency": "60us",
    "write_latency": "20us",
    "read_bandwidth": "2GB/s",
    "write_bandwidth": "1GB/s",
    "capacity": "400GB",
}

BAD_TIERS = [
    pytest.param(
        {"service": "lognormal"},
        "cluster.tier",
        'service = "lognormal" and service_cv go together: set both (the spread of unit times) or '
        "neither",
        id="lognormal-without-cv",
    ),
    pytest.param(
        {"service_cv": 0.2},
        "cluster.tier",
        'service = "lognormal" and service_cv go together: set both (the spread of unit times) or '
        "neither",
        id="cv-without-lognormal",
    ),
    pytest.param(
        {"stall_probability": 0.01},
        "cluster.tier",
        "stall_probability and stall_time go together: set both (how often a stall comes, and its "
        "mean length) or neither",
        id="stall-without-time",
    ),
    pytest.param(
        {"interface": "sata-12g"},
        "cluster.tier.interface",
        f"unknown interface 'sata-12g': use one of {', '.join(INTERFACE_RATES)} (got 'sata-12g')",
        id="unknown-interface",
    ),
    pytest.param(
        {"condition": "fresh"},
        "cluster.tier",
        'condition = "fresh" starts the clean pool at the capacity: set clean_pool (the '
        "steady-state reserve) and write_amplification",
        id="fresh-without-pool",
    ),
    pytest.param(
        {"erase_block": "4MiB"},
        "cluster.tier",
        "erase_block sets what garbage collection costs sequential writes: set clean_pool and "
        "write_amplification too",
        id="erase-block-without-pool",
    ),
]


@pytest.mark.parametrize(("fields", "where", "message"), BAD_TIERS)
def test_bad_tier_fields_name_the_field_and_the_fix(
    tmp_path: Path, fields: dict[str, Any], where: str, message: str
) -> None:
    data = small_scenario("errors", cluster={"tier": FULL_TIER | fields})
    path = tmp_path / "scenario.toml"
    path.write_text(to_toml(data), "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.source == str(path)
    assert info.value.problems == [(where, message)]
    assert str(info.value) == f"{path}: invalid scenario (1 problem)\n  {where}: {message}"


def test_same_seed_gives_identical_results_with_every_new_field() -> None:
    tier = {
        # interface, overhead, both IOPS limits, dies, erase_block, lognormal, stalls
        "profile": "sata-ssd-s3700",
        "condition": "fresh",
        # written in well under the 0.2 s run at the tens of MB/s 8 workers write: the run meets the
        # cliff
        "capacity": "12MiB",
        "clean_pool": "4MiB",
        # GC refills at 460 / 6 = 77 MB/s, below the about 115 MB/s the workers write
        "write_amplification": 6,
        "controller_bandwidth": "450MB/s",
    }
    workload = {
        "mode": "closed",
        "workers": 8,
        "read_fraction": 0.5,
        "working_set": "16MiB",
        "sizes": {"4KiB": 3, "64KiB": 1},
    }
    scenario = device_test(
        workload, tier=tier, cache={"warm": True, "line": "64KiB"}, duration="0.2s", warmup="0.02s"
    )
    first, second = simulate(scenario), simulate(scenario)
    pd.testing.assert_frame_equal(first.summary, second.summary, check_exact=True)
    pd.testing.assert_frame_equal(first.records, second.records, check_exact=True)
    assert first.totals == second.totals
    # the fresh pool ran out: garbage collection took part
    assert first.totals["tier_gc_wait_s"] > 0
    other = simulate(
        scenario.model_copy(update={"run": scenario.run.model_copy(update={"seed": 4})})
    )
    # and the seed does matter
    assert not first.records["latency_ms"].equals(other.records["latency_ms"])
