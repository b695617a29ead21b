"""A read's channel time (TierSpec ``read_channel_bandwidth``, issue 34) against exact theory.

With ``read_channel_bandwidth = B`` a read of ``S`` bytes holds its unit ``S / B`` seconds after its
latency (its data crossing from the die to the controller), then its transfer on the shared pipe.
So a lone read takes ``command_overhead + 1 / read_iops_limit + read_latency + S / B + S / pipe
rate``, the units saturate at ``units / (read_latency + S / B + S / pipe rate)`` reads per second,
and writes pay nothing. The
tier is driven directly (every completion is known at submission, simcache/sim/components/tier.py):
deterministic set-ups are checked exactly, to the rounding of the additions onto the clock; the
scenario run's mean with the confidence interval of its batch means.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from support.builders import small_scenario
from support.tier_drive import closed_loop_done
from support.tier_drive import qd1 as drive_qd1

from simcache import load_scenario, simulate
from simcache.estimate import estimate
from simcache.physics.cluster import pipe_rate, read_channel_seconds
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.tier import Tier
from simcache.spec import TierSpec
from simcache.spec.profiles import list_profiles

KiB, MiB = 1024, 1024**2
# two-sided level of the statistical check: a correct model fails one in a thousand seeds
CONFIDENCE = 0.999
SIZES = (512, 4 * KiB, 16 * KiB, 64 * KiB, 1 * MiB)


def make_tier(seed: int = 0, **fields: Any) -> Tier:
    """A deterministic flash tier with round numbers and a 500 MB/s read channel; ``fields``
    override or add."""
    base = {
        "kind": "flash",
        "read_latency": 60e-6,
        "write_latency": 20e-6,
        "read_bandwidth": 4e9,
        "write_bandwidth": 2e9,
        "read_channel_bandwidth": 500e6,
        "channels": 1,
        "capacity": 10**12,
    }
    return Tier(TierSpec.model_validate(base | fields), UniformStream(np.random.SeedSequence(seed)))


def qd1(tier: Tier, is_write: bool) -> list[tuple[int, float]]:
    """Each of SIZES (three rounds) issued when the last completed: (size, its latency)."""
    return drive_qd1(tier, is_write, SIZES)


@pytest.mark.parametrize("is_write", [False, True], ids=["read", "write"])
def test_qd1_is_overhead_command_latency_channel_and_transfer(is_write: bool) -> None:
    overhead, limit, channel = 6e-6, 1e6, 500e6
    tier = make_tier(command_overhead=overhead, read_iops_limit=limit, write_iops_limit=limit)
    for size, took in qd1(tier, is_write):
        if is_write:  # a write's path has no channel time
            expected = overhead + 1 / limit + 20e-6 + size / 2e9
        else:
            expected = overhead + 1 / limit + 60e-6 + size / channel + size / 4e9
        # exact up to the rounding of five additions onto the clock
        assert abs(took - expected) <= 16 * math.ulp(1.0) * max(1.0, took), (size, took, expected)


def test_the_channel_time_grows_linearly_with_the_size() -> None:
    # The slope of QD1 latency over the size is 1 / channel + 1 / pipe rate (the measured shape of
    # StorageReview's P5336 reads: 102, 123, 208 us at 4, 16, 64 KiB).
    took = dict(qd1(make_tier(), False))
    slope = (took[64 * KiB] - took[16 * KiB]) / (48 * KiB)
    assert slope == pytest.approx(1 / 500e6 + 1 / 4e9, rel=1e-9)
    assert took[4 * KiB] - took[512] == pytest.approx((4 * KiB - 512) * slope, rel=1e-9)


def test_unset_channel_leaves_the_read_path_as_it_was() -> None:
    # unset: only the pipe's transfer depends on the size (the path of every profile without it)
    for size, took in qd1(make_tier(read_channel_bandwidth=None), False):
        assert took == pytest.approx(60e-6 + size / 4e9, rel=1e-12)


def test_the_spread_and_stalls_apply_to_the_latency_not_the_channel() -> None:
    # Two tiers on the same stream, with and without the channel: each read's draws are the same,
    # so their latencies differ by exactly size / channel, whatever the lognormal factor and stall.
    spread = {"service": "lognormal", "service_cv": 0.5}
    stalls = {"stall_probability": 0.2, "stall_time": 1e-3}
    with_channel = make_tier(seed=7, **spread, **stalls)
    without = make_tier(seed=7, read_channel_bandwidth=None, **spread, **stalls)
    differences = [
        (a_took - b_took, size)
        for (size, a_took), (_, b_took) in zip(
            qd1(with_channel, False), qd1(without, False), strict=True
        )
    ]
    for difference, size in differences:
        assert difference == pytest.approx(size / 500e6, rel=1e-9, abs=1e-15), size


@pytest.mark.parametrize("size", [4 * KiB, 64 * KiB])
def test_a_closed_loop_saturates_the_units_at_units_over_latency_plus_channel(size: int) -> None:
    # 4 units, 64 reads in flight: the units are the bottleneck (the pipe moves 4 GB/s, 61K reads/s
    # of 64 KiB), each read holding one for its latency, its channel time and then its transfer on
    # the pipe: X = 4 / (60 us + S / 500 MB/s + S / 4 GB/s).
    until = 0.5
    done = closed_loop_done(make_tier(channels=4), size, False, 64, until)
    rate = 4 / (60e-6 + size / 500e6 + size / 4e9)
    # a count over [0, until] is off the rate by at most the reads in flight at either end
    assert abs(done - rate * until) <= 64 + 4, (done, rate * until)


def test_a_slow_device_stretches_the_channel_time_too() -> None:
    tier = make_tier(command_overhead=5e-6)
    tier.set_speed(0.25)
    for size, took in qd1(tier, False):
        expected = (5e-6 + 60e-6 + size / 500e6 + size / 4e9) / 0.25
        assert took == pytest.approx(expected, rel=1e-12), size


def test_a_background_read_on_an_idle_device_pays_the_channel() -> None:
    tier = make_tier(command_overhead=5e-6)
    booked, finish = tier.submit_background(1.0, 64 * KiB, False)
    assert booked
    assert finish - 1.0 == pytest.approx(5e-6 + 60e-6 + 64 * KiB / 500e6 + 64 * KiB / 4e9)
    # Under priority a background read is booked only if it would wait for nothing: a unit idle now
    # and the pipe free by the time its own latency and channel time are paid. Two units, one busy
    # with a foreground read whose transfer holds the pipe until F: the background read may come
    # back at F - (latency + S / channel), here the foreground's start plus its transfer.
    tier = make_tier(channels=2)
    foreground = tier.submit(2.0, 64 * KiB, False)
    booked, retry = tier.submit_background(2.0, 64 * KiB, False)
    assert not booked
    assert foreground == pytest.approx(2.0 + 60e-6 + 64 * KiB / 500e6 + 64 * KiB / 4e9, abs=1e-15)
    assert retry == pytest.approx(foreground - 60e-6 - 64 * KiB / 500e6, abs=1e-15)


def test_only_the_qlc_and_ram_profiles_set_a_read_channel() -> None:
    # every other built-in profile keeps its read path (the field's default); a RAM tier's unit is
    # a copy thread, its channel one thread's copy rate (tests/sim/test_write_channel.py)
    channels = {
        name: read_channel_seconds(TierSpec.model_validate(name)) for name in list_profiles("tier")
    }
    assert {name for name, seconds in channels.items() if seconds} == {
        "nvme-qlc-p5336",
        "ram-ddr3",
        "ram-ddr4",
        "ram-ddr5",
    }


@pytest.mark.parametrize("size", [4 * KiB, 16 * KiB, 64 * KiB])
def test_qd1_reads_of_the_qlc_profile_in_a_run_and_in_the_estimate(size: int) -> None:
    scenario = load_scenario(
        small_scenario(
            "channel",
            run={"duration": "1s", "warmup": "0.1s", "sample_interval": "0.1s", "seed": 3},
            cluster={
                "hosts": 1,
                "tier": "nvme-qlc-p5336",
                "cache": {"warm": True, "line": "64KiB"},
                "destager": {"capacity": "1TiB"},
            },
            groups=[
                {
                    "name": "fio",
                    "policy": "WB+0",
                    "workload": {
                        "mode": "closed",
                        "workers": 1,
                        "read_fraction": 1.0,
                        "working_set": "64MiB",
                        "sizes": {f"{size // KiB}KiB": 1},
                    },
                }
            ],
        )
    )
    spec = scenario.cluster.tier
    assert spec.read_iops_limit is not None and spec.read_channel_bandwidth is not None
    # A warm cache's hit at QD1: overhead + command + latency (lognormal, mean 1) + mean stall p T +
    # the channel + the pipe's transfer.
    stall = (spec.stall_probability or 0.0) * (spec.stall_time or 0.0)
    rate = pipe_rate(spec.read_bandwidth, spec.controller_bandwidth, spec.interface)
    expected_ms = (
        spec.command_overhead
        + 1 / spec.read_iops_limit
        + spec.read_latency
        + stall
        + size / spec.read_channel_bandwidth
        + size / rate
    ) * 1e3
    # the estimate adds the same steps with nothing queued: equal to rounding
    assert estimate(scenario).summary["mean_ms"].iloc[0] == pytest.approx(expected_ms, rel=1e-12)
    # the run's mean within the CI of 20 batch means (by issue time) over its window
    result = simulate(scenario)
    reads = result.measured
    assert set(reads["path"]) == {"hit"}
    start, end = result.window
    batch = np.minimum(((reads["issue_s"].to_numpy() - start) / (end - start) * 20).astype(int), 19)
    means = pd.Series(reads["latency_ms"].to_numpy()).groupby(batch).mean().to_numpy()
    half_width = (
        stats.t.ppf(0.5 + CONFIDENCE / 2, len(means) - 1)
        * np.std(means, ddof=1)
        / math.sqrt(len(means))
    )
    assert abs(means.mean() - expected_ms) <= half_width, (means.mean(), expected_ms)
