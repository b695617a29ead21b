"""The ``warming`` note (simcache.results.warming): a group's read hit ratio that rises through the
measured window, because its host's read cache started empty, is said with its figures; a warm
start, a cache warm before the window, and a steady hit ratio with sampling noise say nothing."""

from __future__ import annotations

import re

import numpy as np
from support.builders import small_scenario

import simcache
from simcache.results.assessed import ValidityWarning
from simcache.results.warming import WARMING_RISE, _hit_rise


def _reads(working_set: str, cache: dict[str, object], duration: str = "4s") -> simcache.Scenario:
    """One VM a host reading 1,000 times a second (64 KiB lines, 64 KiB reads) over
    ``working_set``, uniformly: an empty cache of a 1 GiB disk fills slowly, a 4 MiB one within the
    warm-up."""
    return simcache.Scenario.model_validate(
        small_scenario(
            "warming",
            run={"duration": duration, "warmup": "0.5s", "sample_interval": "0.1s"},
            cluster={"cache": {"line": "64KiB", **cache}},
            array="afa-24x-nvme",
            workload={
                "mode": "open",
                "iops": 1000,
                "read_fraction": 1.0,
                "sizes": {"64KiB": 1.0},
                "working_set": working_set,
                "access": "uniform",
            },
        )
    )


def _warming(result: simcache.Result) -> list[ValidityWarning]:
    return [w for w in result.warnings if w.kind == "warming"]


def test_a_cold_cache_filling_through_the_window_is_said_with_its_figures() -> None:
    # 1,000 uniform reads a second of 64 KiB over a 1 GiB disk (N = 16,384 lines): after t
    # seconds a line is cached with probability 1 - e^(-1,000 t / N), so the hit ratio climbs
    # from 3 % at the 0.5 s warm-up's end to 22 % at 4 s.
    result = simcache.simulate(_reads("1GiB", {}), seed=1)
    notes = _warming(result)
    assert len(notes) == 1 and notes[0].severity == "short"
    assert notes[0].component == "reads.db"
    message = notes[0].message
    assert "group db's reads hit" in message and "cluster.cache.warm = true" in message
    # the figures said are the run's: the hit ratio at the end above the start's
    pattern = r"(\d+)% of the time at the window's start and (\d+)%"
    low, high = (int(p) for p in re.findall(pattern, message)[0])
    assert high - low >= 100 * WARMING_RISE - 1  # rounded to whole points
    assert result.stable  # a short-run note, not instability


def test_a_warm_start_or_a_cache_warm_before_the_window_says_nothing() -> None:
    warm = simcache.simulate(_reads("1GiB", {"warm": True}), seed=1)
    assert not _warming(warm)
    # 4 MiB is 64 lines: after the warm-up's 500 reads a line is cached with probability
    # 1 - e^(-500 / 64) > 99.9 %: the hit ratio is flat through the window
    small = simcache.simulate(_reads("4MiB", {}), seed=1)
    assert not _warming(small)


def test_a_run_without_reads_says_nothing() -> None:
    writes = simcache.Scenario.model_validate(
        small_scenario(
            run={"duration": "3s"}, workload={"mode": "open", "iops": 200, "read_fraction": 0.0}
        )
    )
    assert not _warming(simcache.simulate(writes, seed=1))


def test_a_steady_hit_ratio_with_binomial_noise_is_rarely_called_a_rise() -> None:
    # 20 intervals of 50 reads, each a hit with probability 0.4, 1,000 times. The trend test's
    # one-sided threshold t >= trend.T_CRITICAL (3.09, the normal's 0.1 % point) is, for a slope
    # fitted to 20 points (18 degrees of freedom, Student's t), a false alarm rate of about 0.3 %:
    # 3 of 1,000 expected, binomial sd 1.7. At most 12 (5 sd above) pass.
    times = np.linspace(0.1, 2.0, 20)
    reads = np.full(20, 50)
    alarms = sum(
        _hit_rise(times, reads, np.random.default_rng(seed).binomial(reads, 0.4)) is not None
        for seed in range(1000)
    )
    assert alarms <= 12


def test_a_known_rise_is_found_and_fitted() -> None:
    # hit probability rising linearly 0.2 -> 0.6 over 20 intervals of 500 reads: found, and the
    # fitted ends within a few points of the truth (binomial sd of a 500-read interval ~2.2 pts;
    # the fitted line's ends about a third of that)
    times = np.linspace(0.1, 2.0, 20)
    reads = np.full(20, 500)
    hits = np.random.default_rng(7).binomial(reads, 0.2 + 0.4 * (times - 0.1) / 1.9)
    found = _hit_rise(times, reads, hits)
    assert found is not None
    low, high = found
    assert abs(low - 0.2) < 0.03 and abs(high - 0.6) < 0.03
    # intervals without reads are left out; fewer than 8 with reads is too few to test
    assert _hit_rise(times, np.where(times < 1.45, 0, reads), hits) is None


def test_a_streamed_run_says_what_its_records_say() -> None:
    # the stream counts the reads and hits per sample interval and the latency per tenth of the
    # window, binned as the records are: the same note, figure for figure
    scenario = _reads("1GiB", {})
    kept = _warming(simcache.simulate(scenario, seed=1))
    streamed = _warming(simcache.simulate(scenario, seed=1, keep_records=False))
    assert kept and [w.message for w in streamed] == [w.message for w in kept]
