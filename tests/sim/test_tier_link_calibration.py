"""Foreground garbage-collection passes of the flash tier, and the framing and calibration
arithmetic of the profiles used by field observations 2 (interconnect comparison) and 8 (large
writes on flash).

Every expected value is exact arithmetic from the tier's documented rules (model/tier.py) or from
the profiles' own numbers, not a number read off a simulation.
"""

from __future__ import annotations

import numpy as np
import pytest

from simcache.base.errors import ScenarioError
from simcache.physics.cluster import framed_bytes
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.tier import Tier
from simcache.spec import LinkSpec, TierSpec, load_scenario

POOL = 10_000  # bytes of clean reserve
RATE = 1e6  # bytes/s of garbage collection


def gc_tier(gc_pass: float | None, seed: int = 0) -> Tier:
    """Plenty of channels and a fast pipe, so only the clean pool decides when a write starts."""
    spec = TierSpec(
        kind="flash",
        read_latency=0.0,
        write_latency=0.0,
        # the most a scenario may give (10 TB/s): a pipe that never decides anything here
        read_bandwidth=1e13,
        write_bandwidth=1e13,
        channels=64,
        capacity=10**12,
        clean_pool=POOL,
        gc_rate=RATE,
        gc_pass=gc_pass,
    )
    return Tier(spec, UniformStream(np.random.SeedSequence(seed)), "calibration")


def starts(tier: Tier, writes: list[tuple[float, int]]) -> list[float]:
    return [tier.submit(now, size, True) for now, size in writes]


def test_without_passes_each_waiting_write_starts_when_its_own_bytes_are_refilled() -> None:
    """Smooth bucket (gc_pass 0): write k of 10 kB at t = 0 starts at (k x 10 kB - 10 kB pool) /
    1 MB/s = (k - 1) x 10 ms."""
    tier = gc_tier(0)
    assert starts(tier, [(0.0, 10_000)] * 4) == pytest.approx([0.0, 0.01, 0.02, 0.03], abs=1e-9)
    assert tier.gc_wait_seconds == pytest.approx(0.06)


def test_a_pass_stalls_the_overdrawing_write_for_deficit_plus_one_pass() -> None:
    """The write that overdraws waits (deficit + gc_pass) / gc_rate = (4 kB + 5 kB) / 1 MB/s = 9
    ms; writes arriving during the stall start when it ends and spend the pass's room without
    waiting while it lasts."""
    gc_pass = 5_000
    tier = gc_tier(gc_pass)
    assert tier.submit(0.0, POOL, True) == pytest.approx(0.0, abs=1e-9)  # takes the whole reserve
    stall_end = (4_000 + gc_pass) / RATE  # deficit of 4 kB plus one pass
    assert stall_end == pytest.approx(9e-3)
    assert tier.submit(0.0, 4_000, True) == pytest.approx(stall_end, abs=1e-9)
    small = 1_000
    # waits for the pass, then fits
    assert tier.submit(stall_end / 2, small, True) == pytest.approx(stall_end, abs=1e-9)
    # no wait after it
    assert tier.submit(stall_end + 1e-3, small, True) == pytest.approx(stall_end + 1e-3, abs=1e-9)
    assert tier.clean_pool_bytes(stall_end + 1e-3) == pytest.approx(
        gc_pass - 2 * small + 1e-3 * RATE, rel=1e-9
    )


def test_passes_keep_the_long_run_write_rate_at_gc_rate() -> None:
    """Back-to-back writes: at the last write's start, gc_rate x time = the bytes refilled so far
    = the bytes written beyond the reserve + what is left in the pool (at most one reserve)."""
    tier = gc_tier(8_000.0, seed=3)
    size, count = 2_000, 20_000
    last = 0.0
    for _ in range(count):
        last = tier.submit(0.0, size, True)
    refilled = size * count - POOL  # bytes garbage collection had to supply
    assert last * RATE == pytest.approx(refilled, rel=1e-3)
    assert refilled - 1e-3 <= last * RATE <= refilled + POOL


def test_passes_are_sporadic_while_the_smooth_bucket_slows_every_write() -> None:
    """A writer kept at the cliff: with passes most writes do not wait and a few wait long."""

    def waits(gc_pass: float) -> np.ndarray:
        tier = gc_tier(gc_pass, seed=1)
        now, out = 0.0, []
        for _ in range(4_000):
            start = tier.submit(now, 1_000, True)
            out.append(start - now)
            # the next write is issued when this one starts (one writer ahead of the pool)
            now = start
        return np.asarray(out[100:])

    smooth, passes = waits(0.0), waits(8_000.0)
    assert np.median(smooth) > 0 and np.max(smooth) == pytest.approx(np.median(smooth), rel=1e-6)
    assert np.median(passes) < 1e-9
    assert passes.mean() == pytest.approx(smooth.mean(), rel=0.05)  # the same long-run rate...
    assert np.max(passes) > 5 * smooth.mean()  # ...paid in a few long stalls


def test_passes_draw_nothing_at_random() -> None:
    """The stalls come from the pool, the refill rate and the pass size alone: every seed gives
    the same starts, and a pass larger than the reserve frees one reserve (the pool's depth)."""

    def run(seed: int, gc_pass: float = 3_000.0) -> list[float]:
        tier = gc_tier(gc_pass, seed=seed)
        return starts(tier, [(0.0, 3_000)] * 200)

    assert run(7) == run(8)
    assert run(7, gc_pass=10 * POOL) == run(7, gc_pass=POOL)


def test_gc_pass_needs_a_cliff() -> None:
    with pytest.raises(ValueError, match="gc_pass needs"):
        TierSpec(
            kind="flash",
            read_latency=0,
            write_latency=0,
            read_bandwidth=1,
            write_bandwidth=1,
            capacity=1,
            gc_pass=1,
        )


def test_sata_profile_carries_the_pass_size_and_a_scenario_can_turn_it_off() -> None:
    spec = TierSpec.model_validate({"profile": "sata-ssd-s3700-field"})
    assert spec.gc_pass == 16 * 1024**2
    assert TierSpec.model_validate({"profile": "sata-ssd-s3700-field", "gc_pass": 0}).gc_pass == 0
    with pytest.raises(ScenarioError):
        load_scenario("large_writes_flash").with_overrides({"cluster.tier.gc_pass": -1})


def test_sata_profile_arithmetic_behind_observation_2() -> None:
    """4 KiB writes are channel bound: 8 / (320 us + 4096 B / 215 MB/s) = ~23.5K IOPS, so 46
    outstanding wait ~2 ms; large writes are bound by the 215 MB/s controller, 1.8x the 1GbE
    payload rate (1460/1538 of 125 MB/s); a 4 KiB read at QD1 takes ~160 us (AnandTech: ~6,600
    IOPS, ~150 us)."""
    spec = TierSpec.model_validate({"profile": "sata-ssd-s3700-field"})
    assert spec.controller_bandwidth is not None
    iops_4k = spec.channels / (spec.write_latency + 4096 / spec.controller_bandwidth)
    assert 46 / iops_4k == pytest.approx(2e-3, rel=0.05)
    gbe = LinkSpec.model_validate({"profile": "1GbE"})
    # 1460 B per 1538 B
    payload_rate = gbe.bandwidth * (gbe.mtu - gbe.header_bytes) / (gbe.mtu + gbe.framing_bytes)
    assert spec.controller_bandwidth / payload_rate == pytest.approx(1.81, rel=0.01)
    assert spec.read_latency + 4096 / spec.controller_bandwidth == pytest.approx(1 / 6600, rel=0.1)


def test_ipoib_and_ethernet_framing() -> None:
    """RFC 4391 datagram mode: 2044-byte IP packets carry 2004 B of TCP payload plus 38 B outside
    (IPoIB 4, LRH 8, BTH 12, DETH 8, ICRC 4, VCRC 2); 1GbE carries 1460 B per 1538 B on the wire."""
    ib = LinkSpec.model_validate({"profile": "ib-sdr-ipoib"})
    gbe = LinkSpec.model_validate({"profile": "1GbE"})
    assert framed_bytes(ib, 262_144) == (262_144 + 131 * 78, 131)
    assert framed_bytes(gbe, 262_144) == (262_144 + 180 * 78, 180)
    assert framed_bytes(ib, 32_768)[1] == 17 and framed_bytes(gbe, 32_768)[1] == 23
    # no packet saving at 4 KiB
    assert framed_bytes(ib, 4_096)[1] == framed_bytes(gbe, 4_096)[1] == 3
    wire, _ = framed_bytes(gbe, 1460 * 1000)
    assert 1460 * 1000 / wire == pytest.approx(1460 / 1538)
    assert ib.bandwidth == 8e9 / 8  # 4X SDR: 10 Gbit/s signalling, 8b/10b
    verbs = LinkSpec.model_validate({"profile": "ib-sdr-verbs"})
    assert verbs.latency < ib.latency and verbs.header_bytes == 0
