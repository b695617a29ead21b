"""The bottleneck sentence and the ``bottleneck:`` line (simcache/results/bottleneck.py) say what
the busiest part sets, by where the writes' time goes, name garbage collection when the tier's
writes waited for it, and give a part its peak when it saturates only for a while (review 64, F3
and F4).

Scenarios: ``large_writes_flash`` (field observation 8: WB+0 on SATA flash past its clean reserve,
a 4-spindle NAS behind it) and ``redundancy_multiplier_1gbe`` (field observation 1: WB+1 over
1GbE, a vMotion taking the whole link 5.0-11.1 s), both at their files' seed 1.
"""

from __future__ import annotations

import pytest
from support.mm1 import mm1_data

import simcache
from simcache.base.units import format_figure
from simcache.report.run_report import report
from simcache.results.bottleneck import (
    bottleneck_line,
    bottleneck_sentence,
    component_name,
    gc_waits,
    waited_share,
    write_time,
)
from simcache.results.event_impact import event_impacts

GC_PASS_MS = 16 * 2**20 / (460e6 / 3.12) * 1e3
"""One foreground GC pass of sata-ssd-s3700-field: 16 MiB refilled at write_bandwidth /
write_amplification = 460 MB/s / 3.12 = 147.4 MB/s, 113.8 ms (its profile's figures)."""


@pytest.fixture(scope="module")
def gc_stalls() -> tuple[simcache.Result, simcache.Scenario]:
    scenario = simcache.load_scenario("large_writes_flash")
    return simcache.simulate(scenario), scenario


@pytest.fixture(scope="module")
def vmotion_1gbe() -> tuple[simcache.Result, simcache.Scenario]:
    scenario = simcache.load_scenario("redundancy_multiplier_1gbe")
    return simcache.simulate(scenario), scenario


def _gc_said(result: simcache.Result) -> str:
    """The sentence's garbage-collection words for large_writes_flash (8 s run, host0 only), with
    when its clean pool first ran short (about 1.4 s in)."""
    waited = result.totals["tier_gc_wait_s_by_host"]["host0"]
    dry = result.totals["tier_ran_dry_s_by_host"]["host0"]
    assert 1.0 < dry < 2.0
    return (
        f"The host0 sata-ssd-s3700-field flash tier's writes waited {format_figure(waited, 3)} s "
        f"in all over the 8 s run ({format_figure(waited / 8, 3)} writes waiting at a time) for "
        f"garbage collection once its clean pool ran out at {format_figure(dry, 3)} s. Garbage "
        "collection then frees room at "
        "147 MB/s in foreground passes of 16 MiB, each stalling the tier's writes for 114 ms or "
        "more: the slowest writes are the ones that met a pass."
    )


def test_a_saturated_array_the_writes_never_wait_on_is_not_said_to_set_their_latency(
    gc_stalls: tuple[simcache.Result, simcache.Scenario],
) -> None:
    """WB+0 writes are acknowledged by the flash: none of their time is the array's or the wait
    for destage buffer space, so the array at 96% sets the destage drain, not the write
    latency (the sentence said "it sets the latency")."""
    result, scenario = gc_stalls
    time = write_time(result)
    assert time is not None
    assert waited_share(time, "array") == (0.0, 0.0)
    said = bottleneck_sentence(result, scenario)
    assert "sets the latency" not in said
    assert said.startswith(
        "Bottleneck: the array's 4 spindles, at 96% mean utilization (saturated, but the writes "
        "spend 0% of their time waiting on it: it sets how fast the destage backlog drains, not "
        "the write latency, until the destage buffer is full). Where write time goes: the local "
        "tier takes the largest share, 100% on average and 100% in the slowest 1% of writes"
    )


def test_the_gc_stalls_are_named_with_their_figure_though_no_gc_cliff_fires(
    gc_stalls: tuple[simcache.Result, simcache.Scenario],
) -> None:
    """The write p99 (~119 ms) is one foreground GC pass (113.8 ms) plus the writes ahead; the
    queue does not grow, so no ``gc_cliff`` warning names the tier, and the sentence still gives
    the GC wait as the cause of the tier's share, with the run's own figure."""
    result, scenario = gc_stalls
    assert not [w for w in result.warnings if w.kind == "gc_cliff"]
    summary = result.summary.set_index(["group", "op"])
    p99 = summary.loc[("all", "write"), "p99_ms"]
    assert isinstance(p99, float) and p99 >= GC_PASS_MS
    assert format_figure(GC_PASS_MS, 3) == "114"
    said = bottleneck_sentence(result, scenario)
    assert said.endswith(_gc_said(result))
    waited = format_figure(result.totals["tier_gc_wait_s_by_host"]["host0"], 3)
    assert (
        "bottleneck: array at 96% mean utilization; the writes spend 0% of their time waiting on "
        "it: it sets how fast the destage backlog drains, not the write latency, until the "
        f"destage buffer is full; host0.tier's writes waited {waited} s in all over the run for "
        "garbage collection"
    ) in report(result).splitlines()


def test_a_run_without_records_says_the_same_from_its_sums() -> None:
    """The streaming run (no per-I/O records) has the mean shares from its component sums: the
    same verdict and GC words, and it says the tail needs the records (it raised before)."""
    scenario = simcache.load_scenario("large_writes_flash")
    result = simcache.simulate(scenario, keep_records=False)
    said = bottleneck_sentence(result, scenario)
    assert "sets the latency" not in said
    assert "the writes spend 0% of their time waiting on it" in said
    assert (
        "the local tier takes the largest share on average (100%); the slowest 1%'s shares need "
        "the per-I/O records, which this run did not keep."
    ) in said
    assert said.endswith(_gc_said(result))
    assert "for garbage collection" in bottleneck_line(result)


def test_a_smooth_gc_bucket_is_not_said_to_stall_in_passes() -> None:
    """Variant smooth_gc (gc_pass = 0): every write waits for its own bytes, no pass."""
    scenario = simcache.load_scenario("large_writes_flash").variant("smooth_gc")
    said = bottleneck_sentence(simcache.simulate(scenario), scenario)
    assert "for garbage collection once its clean pool ran out" in said
    assert "frees room at 147 MB/s, each write waiting for its own bytes" in said
    assert "foreground passes" not in said


def test_a_little_gc_behind_a_tier_saturated_by_its_units_is_not_named_the_cause() -> None:
    """rho = 1.5 on the M/M/1 tier with a clean pool refilled a little faster than written: the
    writes waited a few seconds for garbage collection in all, a sliver of their time queued for
    the tier's one unit, which sets their latency."""
    data = mm1_data(1500.0)
    data["cluster"]["tier"] |= {"clean_pool": "64KiB", "gc_rate": "6.5MB/s"}
    scenario = simcache.load_scenario(data)
    result = simcache.simulate(scenario, seed=1)
    assert result.totals["tier_gc_wait_s_by_host"]["host0"] > 0
    assert gc_waits(result, write_time(result)) == {}
    said = bottleneck_sentence(result, scenario)
    assert "(saturated; it sets the latency, and more load" in said
    assert "garbage collection" not in said


def test_an_array_bound_write_through_run_keeps_sets_the_latency() -> None:
    """backing_array's all-write variant, 16 outstanding per VM: WT writes are the array's, and
    the array is saturated on average: the old verdict is right and stays."""
    scenario = (
        simcache.load_scenario("backing_array")
        .variant("writes")
        .with_overrides(
            {"groups.db.workload.outstanding": 16, "groups.log.workload.outstanding": 16}
        )
    )
    result = simcache.simulate(scenario)
    time = write_time(result)
    assert time is not None
    share = waited_share(time, "array")
    assert share is not None and share[0] > 0.99
    said = bottleneck_sentence(result, scenario)
    assert said.startswith("Bottleneck: the array's 14 spindles, at 9")
    assert (
        "mean utilization (saturated; it sets the latency, and more load or a faster part there "
        "changes the answer). Where write time goes: the array takes the largest share"
    ) in said
    assert "at its peak" not in said


def test_a_link_saturated_during_the_vmotion_is_given_its_peak_and_the_event(
    vmotion_1gbe: tuple[simcache.Result, simcache.Scenario],
) -> None:
    """The 1GbE link is 2/3 busy on average, but the vMotion takes all of it from 5.0 to 11.1 s,
    and the writes' p99 at least doubles then (the events table): the sentence said "with
    headroom; nothing is close to its limit"."""
    result, scenario = vmotion_1gbe
    (vmotion,) = event_impacts(result)
    assert vmotion.latency["during"]["write_p99_ms"] > 2 * vmotion.latency["before"]["write_p99_ms"]
    start, _ = result.window
    mean = result.series.loc[result.series.index > start, "util.host0.peer.tx"].mean()
    said = bottleneck_sentence(result, scenario)
    assert said.startswith(
        f"Bottleneck: the host0 1GbE peer link (sending), at {mean:.0%} mean utilization and 100% "
        "at its peak, 97% or more for 6 s of the 11 s measured, during vMotion host0->host1 "
        "5.0-11.1 s (saturated then: it sets the latency while that lasts, and it has headroom "
        "the rest of the time). Where write time goes: sending replicas over the network"
    )
    assert "nothing is close to its limit" not in said
    assert (
        f"bottleneck: host0.peer.tx at {mean:.0%} mean utilization, 100% at its peak (97% or more "
        "for 6 s of the 11 s measured, during vMotion host0->host1 5.0-11.1 s)"
    ) in report(result).splitlines()


def test_a_run_that_ends_during_the_vmotion_says_it_was_still_under_way() -> None:
    """The page's 9 s run of redundancy_multiplier_1gbe: the vMotion has not ended."""
    scenario = simcache.load_scenario("redundancy_multiplier_1gbe").with_duration(9.0)
    said = bottleneck_sentence(simcache.simulate(scenario), scenario)
    assert "% mean utilization and 100% at its peak, 97% or more for " in said
    assert "during vMotion host0->host1 from 5.0 s, still under way when the run ended" in said
    assert "with headroom;" not in said


def test_a_peak_outside_any_event_says_how_long_it_lasted() -> None:
    """burst_absorb: the array destages each burst at full speed, half busy on average; the
    writes never wait on it (WB+0 into a buffer that does not fill)."""
    scenario = simcache.load_scenario("burst_absorb")
    said = bottleneck_sentence(simcache.simulate(scenario), scenario)
    assert "% at its peak, 97% or more for " in said
    assert (
        " s measured (saturated then, but the writes spend 0% of their time waiting on it" in said
    )
    assert "during" not in said
    assert "nothing is close to its limit" not in said


def test_a_port_whose_profile_is_set_otherwise_is_named_with_its_rate() -> None:
    # a review (64, F5): a roce-100GbE peer link set to 25 Gbit/s was named "roce-100GbE" in the
    # result's sentences, as if it ran at 100 Gbit/s
    scenario = simcache.load_scenario("default").with_overrides(
        {"cluster.peer_link": {"profile": "roce-100GbE", "bandwidth": "25Gbit/s"}}
    )
    assert component_name("host0.peer.tx", scenario) == (
        "the host0 roce-100GbE at 25 Gbit/s peer link (sending)"
    )
    assert component_name("host0.storage.tx", scenario) == "the host0 1GbE storage link (sending)"
