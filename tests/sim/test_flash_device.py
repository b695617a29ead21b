"""The flash device of issue 16: write amplification behind the sustained-write cliff, and reads
that meet programs on their die (read/write interference).

The tier is driven directly (no SimPy): every operation's completion is known at submission
(model/tier.py), so a closed loop or a Poisson stream is a loop over ``Tier.submit``. Expected
values are formulas from the tier's documented rules; where a figure is a mean over random arrivals,
the tolerance comes from the spread of independent replications.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import pandas as pd
import pytest

import simcache
from simcache import ScenarioError, load_scenario
from simcache.physics.cluster import gc_refill_rate
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.tier import Tier
from simcache.spec import TierSpec

# -- write amplification and the cliff -------------------------------------------------------------

W = 400e6  # bytes/s the device programs (write_bandwidth; no controller cap)
WA = 4.0  # bytes programmed per host byte once garbage collection runs
POOL = 40_000_000  # clean bytes before the cliff
SIZE = 1_000_000  # bytes per write
OUTSTANDING = 16


def wa_tier(gc_pass: int = 0, **fields: object) -> Tier:
    spec = TierSpec.model_validate(
        {
            "kind": "flash",
            "read_latency": 0.0,
            "write_latency": 0.0,
            "read_bandwidth": W,
            "write_bandwidth": W,
            "channels": 64,
            "capacity": 10**12,
            "clean_pool": POOL,
            "write_amplification": WA,
            "gc_pass": gc_pass,
        }
        | fields
    )
    return Tier(spec, UniformStream(np.random.SeedSequence(0)), "flash")


def closed_loop(tier: Tier, until: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``OUTSTANDING`` writers, each issuing its next write when the last completes.

    Per completed write: its issue time, its completion time and how long it waited for garbage
    collection.
    """
    in_flight: list[tuple[float, float, float]] = []  # (completion, issue, GC wait)

    def issue(now: float) -> None:
        before = tier.gc_wait_seconds
        heapq.heappush(
            in_flight, (tier.submit(now, SIZE, True), now, tier.gc_wait_seconds - before)
        )

    for _ in range(OUTSTANDING):
        issue(0.0)
    done = []
    while in_flight[0][0] < until:
        write = heapq.heappop(in_flight)
        done.append(write)
        issue(write[0])
    completions, issues, gc_waits = (np.asarray(column) for column in zip(*done, strict=True))
    return issues, completions, gc_waits


def rate(completions: np.ndarray, start: float, end: float) -> float:
    return float(((completions > start) & (completions <= end)).sum()) * SIZE / (end - start)


def test_refill_rate_is_write_bandwidth_over_write_amplification() -> None:
    """Freeing one byte costs GC WA - 1 bytes of copying, so past the cliff each host byte costs
    WA programmed bytes and the device's W bytes/s of programming sustain W / WA = 400 / 4 = 100
    MB/s of host writes; gc_rate, if set, is that rate given directly and overrides it."""
    assert gc_refill_rate(wa_tier().spec) == W / WA == 100e6
    assert gc_refill_rate(wa_tier(gc_rate=50e6).spec) == 50e6


@pytest.mark.parametrize("gc_pass", [0, 8_000_000], ids=["smooth", "passes"])
def test_sustained_writes_fall_from_the_write_bandwidth_to_it_over_write_amplification(
    gc_pass: int,
) -> None:
    """16 writers of 1 MB keep the 400 MB/s pipe busy. The pool drains at W - W / WA = 300 MB/s,
    so the cliff comes at POOL / 300 MB/s = 0.133 s; before it writes complete at W = 400 MB/s,
    after it at W / WA = 100 MB/s, in foreground passes or smoothly alike. The loop is
    deterministic: each window's count is exact to one write (1 MB), hence the tolerance of one
    write's bytes over the window."""
    issues, completions, gc_waits = closed_loop(wa_tier(gc_pass), until=3.0)
    cliff = POOL / (W - W / WA)
    assert cliff == pytest.approx(0.1333, abs=1e-4)
    assert rate(completions, 0.0, 0.12) == pytest.approx(W, abs=SIZE / 0.12)
    assert rate(completions, 1.0, 3.0) == pytest.approx(W / WA, abs=2 * SIZE / 2.0)
    # A write takes its clean bytes when issued, with 16 MB in flight: the first write that waits
    # for GC is issued when completed + in flight = POOL + refilled, W t + 16 MB = POOL + (W / WA)
    # t: t = 24 MB / 300 MB/s = 80 ms (to one write's bytes). Until then a write issued after t = 0
    # waits exactly for the pipe's queue, 16 x 1 MB / 400 MB/s = 40 ms.
    latency = completions - issues
    queue = OUTSTANDING * SIZE / W
    first_waiting = issues[int(np.argmax(gc_waits > 0))]
    assert first_waiting == pytest.approx(
        (POOL - OUTSTANDING * SIZE) / (W - W / WA), abs=SIZE / (W - W / WA)
    )
    assert latency[(issues > 0) & (issues < first_waiting)] == pytest.approx(queue, rel=1e-9)


def test_a_pass_stalls_writes_for_the_room_it_frees_times_write_amplification_over_bandwidth() -> (
    None
):
    """The write that finds the pool empty waits until GC has freed its deficit (under one 1 MB
    write) and one pass, gc_pass = 8 MB, at W / WA: between 8 MB x 4 / 400 MB/s = 80 ms and 9 MB
    x 4 / 400 MB/s = 90 ms, the first GC wait of the run. The 16 writers then queue 16 MB behind
    it, more than one pass frees: the writes in the second half of the queue wait for a second
    pass as well: at most two passes, each with its deficit."""
    gc_pass = 8_000_000
    issues, completions, gc_waits = closed_loop(wa_tier(gc_pass), until=3.0)
    stall = gc_pass * WA / W
    assert stall == pytest.approx(0.08)
    order = np.argsort(issues, kind="stable")
    first = gc_waits[order][gc_waits[order] > 0][0]
    assert stall <= first <= (gc_pass + SIZE) * WA / W
    assert 2 * stall <= gc_waits.max() <= 2 * (gc_pass + SIZE) * WA / W
    assert (completions - issues).max() >= 2 * stall


# -- read/write interference
# ------------------------------------------------------------------------

DIES = 8
PROGRAM = 1e-3  # s a write holds its die
READ = 1e-4  # s a read holds its die
WRITE_RATE = 4_000.0  # writes/s: each die programs rho = 4,000 x 1 ms / 8 = 50% of the time
READ_RATE = 400.0  # reads/s: sparse probes
SPAN = 30.0  # s of arrivals per replication
SEEDS = range(8)


def interference_tier(share: float | None, seed: int) -> Tier:
    spec = TierSpec.model_validate(
        {
            "kind": "flash",
            "read_latency": READ,
            "write_latency": PROGRAM,
            "read_bandwidth": 1e13,  # a pipe that decides nothing: services are the latencies
            "write_bandwidth": 1e13,
            "channels": DIES,
            "capacity": 10**12,
            "read_interference": share,
        }
    )
    return Tier(spec, UniformStream(np.random.SeedSequence([seed, 1])), "flash")


def mixed_run(
    share: float | None, seed: int, write_rate: float = WRITE_RATE, tier_seed: int | None = None
) -> tuple[float, float]:
    """Poisson writes and reads into one tier (its stream seeded by ``tier_seed``, default
    ``seed``); the mean waits (s) of writes and of reads."""
    rng = np.random.default_rng(seed)
    writes = (
        np.cumsum(rng.exponential(1 / write_rate, int(write_rate * SPAN)))
        if write_rate
        else np.empty(0)
    )
    reads = np.cumsum(rng.exponential(1 / READ_RATE, int(READ_RATE * SPAN)))
    times = np.concatenate([writes, reads])
    is_write = np.concatenate([np.ones(len(writes), bool), np.zeros(len(reads), bool)])
    order = np.argsort(times, kind="stable")
    tier = interference_tier(share, seed if tier_seed is None else tier_seed)
    waits: dict[bool, list[float]] = {True: [], False: []}
    for now, write in zip(times[order].tolist(), is_write[order].tolist(), strict=True):
        finish = tier.submit(now, 4096, write)
        waits[write].append(finish - now - (PROGRAM if write else READ))
    return (float(np.mean(waits[True])) if waits[True] else 0.0), float(np.mean(waits[False]))


def formula(write_wait: float, read_wait: float, share: float) -> float:
    """A read's mean wait: ``share`` x the mean work booked on a uniformly random die when it
    arrives.

    Each operation contributes to the work booked on its die from arrival to completion: its whole
    service S while it waits W, then what is left of S, so the time-average of the booked work of
    all dies is sum over classes of lambda (S W + S^2 / 2) (H = lambda G); a Poisson read sees the
    time average (PASTA) on one of c dies: E[wait] = share / c x sum lambda (S W + S^2 / 2), with
    each class's W the run's own mean wait.
    """
    work = WRITE_RATE * (PROGRAM * write_wait + PROGRAM**2 / 2) + READ_RATE * (
        READ * read_wait + READ**2 / 2
    )
    return share * work / DIES


def test_a_read_waits_for_the_programs_on_its_die() -> None:
    """share 1 (no program suspension): each die programs 50% of the time, so a read waits about
    rho x S / 2 = 0.25 ms plus its share of the writes' own queueing, the formula above to within
    4 standard errors over 8 replications (each 30 s, 12,000 reads; the standard error is a few
    percent of the mean, asserted too)."""
    errors = []
    for seed in SEEDS:
        write_wait, read_wait = mixed_run(1.0, seed)
        errors.append(read_wait / formula(write_wait, read_wait, 1.0) - 1.0)
    spread = np.std(errors, ddof=1) / math.sqrt(len(errors))
    assert spread < 0.03
    assert abs(np.mean(errors)) < 4 * spread
    _, read_wait = mixed_run(1.0, 0)
    # rho S / 2, the writes' queueing being small here
    assert read_wait == pytest.approx(0.5 * PROGRAM / 2, rel=0.15)


def test_program_suspension_shortens_the_wait_by_its_share() -> None:
    """share 0.5: a read waits half the work on its die, so half the share-1 formula; the reads'
    own term in the formula (which a suspending read changes) is below 1% of the writes', inside
    the same 4 standard errors."""
    errors = []
    for seed in SEEDS:
        write_wait, read_wait = mixed_run(0.5, seed)
        errors.append(read_wait / formula(write_wait, read_wait / 0.5, 0.5) - 1.0)
    spread = np.std(errors, ddof=1) / math.sqrt(len(errors))
    assert spread < 0.03
    assert abs(np.mean(errors)) < 4 * spread


def test_reads_behind_writes_wait_longer_than_reads_alone_or_reads_on_any_free_channel() -> None:
    """Reads alone wait only for other reads: lambda_r S_r^2 / (2 c) = 400 x (0.1 ms)^2 / 16 =
    0.25 us. With the writes they wait ~0.25 ms, 1,000 times longer. On the pooled model (share
    unset: any free channel) a read waits only when all 8 dies are busy (Erlang C at 50%:
    rarely), under a tenth of the addressed wait."""
    alone = np.mean([mixed_run(1.0, seed, write_rate=0.0)[1] for seed in SEEDS])
    assert alone == pytest.approx(READ_RATE * READ**2 / (2 * DIES), rel=0.2)
    mixed = np.mean([mixed_run(1.0, seed)[1] for seed in SEEDS[:2]])
    pooled = np.mean([mixed_run(None, seed)[1] for seed in SEEDS[:2]])
    assert mixed > 500 * alone
    assert pooled < 0.1 * mixed


@pytest.mark.parametrize(("share", "start"), [(None, 0.0), (1.0, 1.0), (0.5, 0.5)])
def test_a_read_during_a_foreground_gc_pass_waits_its_share_of_the_pass(
    share: float | None, start: float
) -> None:
    """A fast pipe and GC refilling at 100 MB/s: the write that overdraws the emptied 40 MB pool
    by 1 MB at t = 0 stalls until GC has freed the deficit and one 8 MB pass, (1 MB + 8 MB) / 100
    MB/s = 90 ms. A read at 40 ms starts when the pass ends (share 1), half of the remaining 50
    ms later (share 0.5) or at once (share unset: a pass does not hold a free channel)."""
    fast = {"read_bandwidth": 1e13, "write_bandwidth": 1e13, "gc_rate": 100e6}
    tier = wa_tier(8_000_000, read_latency=1e-4, read_interference=share, **fast)
    tier.submit(0.0, POOL, True)
    end = tier.submit(0.0, SIZE, True) - SIZE / 1e13
    assert end == pytest.approx((SIZE + 8_000_000) / 100e6, rel=1e-9)
    read_at = 0.04
    assert tier.submit(read_at, 4096, False) == pytest.approx(
        read_at + start * (end - read_at) + 1e-4 + 4096 / 1e13, rel=1e-9
    )


def test_a_read_keeps_the_channel_heap_in_order() -> None:
    """A read raises one die's free time in place (not the heap's top): after every operation of
    a random mix the channels still form a min-heap, so a write still takes the earliest-free
    die."""
    tier = interference_tier(0.5, 0)
    rng = np.random.default_rng(0)
    now = 0.0
    for _ in range(5_000):
        now += rng.exponential(1 / (WRITE_RATE + READ_RATE))
        tier.submit(now, 4096, bool(rng.random() < 0.7))
        heap = tier._channel_free
        assert all(heap[(i - 1) // 2] <= heap[i] for i in range(1, len(heap)))


def test_same_seed_same_dies() -> None:
    """The die a read goes to comes from the tier's own stream: same seed, bit-identical waits;
    another seed differs."""
    assert mixed_run(1.0, 3) == mixed_run(1.0, 3)
    assert mixed_run(1.0, 3) != mixed_run(1.0, 3, tier_seed=4)  # the same arrivals, other dies


# -- bounds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        (
            {"cluster.tier.write_amplification": 0.5},
            "cluster.tier.write_amplification",
            "must be at least 1; the device cannot program fewer bytes than the host wrote (got "
            "0.5)",
        ),
        (
            {"cluster.tier.write_amplification": 500},
            "cluster.tier.write_amplification",
            "must be at most 100; garbage collection copying 99 valid bytes per byte it frees is a "
            "device full to the brim: "
            "a typo (got 500)",
        ),
        (
            {"cluster.tier.read_interference": 1.5},
            "cluster.tier.read_interference",
            "must be at most 1; a read cannot wait for more than the whole program (got 1.5)",
        ),
        (
            {"cluster.tier.read_interference": -0.1},
            "cluster.tier.read_interference",
            "must be at least 0 (got -0.1)",
        ),
    ],
)
def test_impossible_flash_values_are_scenario_errors(
    overrides: dict[str, object], field: str, message: str
) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("large_writes_flash").with_overrides(overrides)
    assert info.value.problems == [(field, message)]


def test_a_clean_pool_needs_a_refill_rate_and_a_refill_rate_a_pool() -> None:
    base = {
        "kind": "flash",
        "read_latency": 0,
        "write_latency": 0,
        "read_bandwidth": 1e6,
        "write_bandwidth": 1e6,
        "capacity": 1,
    }
    with pytest.raises(ValueError, match="clean_pool needs a refill rate: set write_amplification"):
        TierSpec.model_validate(base | {"clean_pool": 10})
    with pytest.raises(
        ValueError, match="write_amplification needs a sustained-write cliff: set clean_pool too"
    ):
        TierSpec.model_validate(base | {"write_amplification": 2.0})
    with pytest.raises(ValueError, match="gc_rate needs a sustained-write cliff"):
        TierSpec.model_validate(base | {"gc_rate": 1e6})


def test_profiles_derive_the_refill_from_their_datasheets() -> None:
    """SATA S3700: 460 MB/s / (36K x 4,096 B) = 3.12, so GC refills at 147.4 MB/s and a 16 MiB
    pass stalls 114 ms; NVMe P3700: 1,900 MB/s / (90K x 4,096 B) = 5.15, 369 MB/s. Both read
    behind programs (share 1)."""
    sata = TierSpec.model_validate({"profile": "sata-ssd-s3700-field"})
    assert sata.write_amplification == pytest.approx(460e6 / (36_000 * 4096), abs=0.005)
    assert gc_refill_rate(sata) == pytest.approx(147.4e6, rel=1e-3)
    assert sata.gc_pass is not None and sata.gc_pass / gc_refill_rate(sata) == pytest.approx(
        0.114, abs=1e-3
    )
    nvme = TierSpec.model_validate({"profile": "nvme-p3700-field"})
    assert nvme.write_amplification == pytest.approx(1900e6 / (90_000 * 4096), abs=0.005)
    assert gc_refill_rate(nvme) == pytest.approx(369e6, rel=1e-3)
    assert sata.read_interference == nvme.read_interference == 1.0


# -- the simulator and the estimate past the cliff
# ---------------------------------------------------


def write_mb_s(summary: pd.DataFrame) -> float:
    """Bytes/s written by all groups, from a summary table (one row per group and op)."""
    rows = summary[(summary["group"] == "all") & (summary["op"] == "write")]
    return float(rows["mb_s"].iloc[0]) * 1e6


def test_simulated_sustained_writes_run_at_write_bandwidth_over_write_amplification() -> None:
    """large_writes_flash with write_amplification doubled to 6.24: its reserve is gone ~0.5 s
    in, and from then on the writers are held to 460 MB/s / 6.24 = 73.7 MB/s. Over the 19 s
    window the count is exact to about one pass (16 MiB / 19 s = 0.9 MB/s, 1.2%)."""
    scenario = load_scenario("large_writes_flash").with_overrides(
        {"cluster.tier.write_amplification": 6.24}
    )
    result = simcache.simulate(scenario, seed=1, duration=20.0)
    start, end = result.window
    assert scenario.cluster.tier.gc_pass is not None
    one_pass = scenario.cluster.tier.gc_pass / (end - start)
    assert write_mb_s(result.summary) == pytest.approx(460e6 / 6.24, abs=one_pass)


def test_the_estimate_runs_past_the_cliff_at_the_refill_rate() -> None:
    """The estimate's GC server serves a write of s bytes in s / (write_bandwidth /
    write_amplification): at the profile's 3.12 the closed loop runs at 147.4 MB/s past the cliff
    (within 2%: the MVA admits ~1% more than the saturated server's rate), and says that the
    cliff's stalls are averaged."""
    result = simcache.estimate("large_writes_flash", duration=60.0)
    assert write_mb_s(result.summary) == pytest.approx(460e6 / 3.12, rel=0.02)
    assert any(
        "past its clean-pool cliff" in note and "write_amplification" in note
        for note in result.notes
    )


@pytest.mark.xfail(
    strict=True,
    reason="estimate limit: Schweitzer's MVA under-estimates the wait at a saturated GC server, "
    "so a closed loop's N / (R + Z) exceeds the server's rate, 13% at write_amplification 6.24",
)
def test_the_estimate_holds_a_closed_loop_to_a_slow_refill() -> None:
    """At 6.24 the refill is 73.7 MB/s; the estimate gives 83.3 MB/s (the simulator 73.2-73.6)."""
    scenario = load_scenario("large_writes_flash").with_overrides(
        {"cluster.tier.write_amplification": 6.24}
    )
    assert write_mb_s(simcache.estimate(scenario, duration=60.0).summary) == pytest.approx(
        460e6 / 6.24, rel=0.02
    )


def test_the_estimate_says_it_gives_reads_any_free_channel() -> None:
    """With read_interference set and reads next to writes, the estimate says it does not follow
    the die's queue."""
    mixed = simcache.load_scenario("compile_workload").variant("reads_unthrottled")
    assert any("read_interference" in note for note in simcache.estimate(mixed).notes)
    pooled = mixed.with_overrides({"cluster.tier.profile": "ram-ddr4"})
    assert not any("read_interference" in note for note in simcache.estimate(pooled).notes)
