"""Several hosts' flushers share the array (``simcache/estimate/drain.py``): each host's drain
capacity counts the VMs' traffic at the spindles as it is and the other hosts' flushers at a fair
share of what the VMs leave.

Before, each host counted the others' flushers at the rates they moved in the solver's last pass.
Four backlogged hosts then took the whole array in one pass (each alone at the spindles) and none
of it in the next, and the solution stopped on either: four QLC hosts writing 200 MB/s each into
a hybrid array estimated a drain of 0 bytes/s before their tiers' clean-pool cliff and 9.7 MB/s
after it (the array "offered 400%" in one state, idle in the other), where the array's spindles
take 9.7 MB/s of their destage writes in all.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from support.builders import nvme_ingest_host, small_scenario

import simcache
from simcache.estimate.drain import STARVED_DRAIN, _held_to
from simcache.estimate.layout import Layout
from simcache.physics.cluster import framed_bytes

HOSTS = 4


def ingest(*, array: Any = "hybrid-24x18tb-ssd", reads_iops: float = 0.0) -> dict[str, Any]:
    """Four hosts whose 4 VMs each write 50 MB/s of random 16 KiB writes (WB+1) onto QLC tiers
    (a clean pool too large to run out in the run) over 25GbE, destaged to ``array``: 200 MB/s a
    host, far more than its spindles take, so every buffer has a backlog. With ``reads_iops``, two
    VMs a host besides read that many random 16 KiB blocks a second each, from 2 TiB: misses that
    go to the array's spindles."""
    groups = [
        {
            "name": "ingest",
            "policy": "WB+1",
            "vms_per_host": 4,
            "workload": {
                "mode": "open",
                "throughput": "50MB/s",
                "read_fraction": 0.0,
                "sizes": "16KiB",
                "working_set": "200GiB",
                "access": "uniform",
            },
        }
    ]
    if reads_iops:
        groups.append(
            {
                "name": "reader",
                "policy": "WB+1",
                "vms_per_host": 2,
                "workload": {
                    "mode": "open",
                    "iops": reads_iops,
                    "read_fraction": 1.0,
                    "sizes": "16KiB",
                    "working_set": "2TiB",
                    "access": "uniform",
                },
            }
        )
    return small_scenario(
        "ingest",
        run={"duration": "5s", "warmup": "1s"},
        cluster={
            "hosts": HOSTS,
            "tier": {"profile": "nvme-qlc-p5336", "clean_pool": "512GiB"},
            "peer_link": "25GbE",
            "storage_link": "25GbE",
            "destager": {"capacity": "8GiB", "concurrency": 8},
        },
        array=array,
        groups=groups,
    )


def spindle_seconds_per_byte(scenario: dict[str, Any]) -> float:
    """Spindle-seconds per byte, per spindle, of a host's full destage batch (alike hosts)."""
    return Layout(simcache.load_scenario(scenario)).batches.full(0).array_per_byte


def settled(estimate: simcache.Estimate) -> bool:
    """Whether every state of the window reached its fixed point (none stopped at a limit)."""
    return all(
        piece.result.residual == 0.0 and piece.result.passes == 0
        for piece in estimate._evidence.inside
    )


def test_backlogged_hosts_behind_a_write_cache_share_the_spindles_evenly() -> None:
    """Behind a controller write cache the flushers queue nowhere at the spindles, but in the long
    run get no more of them than the VMs leave; shared evenly by H alike hosts, each drains
    d = (1 - u_VMs) / (H s), s the spindle-seconds per byte per spindle of a full batch. No VM
    I/O reaches this array: d = 1 / (4 s), a quarter of what one host alone drains (about
    2.4 MB/s of 9.7). Before: 0 bytes/s."""
    scenario = ingest()
    estimate = simcache.estimate(scenario)
    share = 1.0 / (HOSTS * spindle_seconds_per_byte(scenario))
    assert settled(estimate)
    for fluid, (_, drained) in zip(estimate.destager, estimate.destage_window_rates(), strict=True):
        assert fluid.drain_rate_bytes_s == pytest.approx(share, rel=1e-9)
        assert drained == pytest.approx(share, rel=1e-9)
        assert math.isfinite(fluid.drain_time_s)
    assert 2.3e6 < share < 2.5e6
    assert estimate.utilization["array"] == pytest.approx(1.0, rel=1e-9)

    alone = small_scenario(**{**ingest(), "cluster": {**ingest()["cluster"], "hosts": 1}})
    alone["groups"][0]["policy"] = "WB+0"
    lone = simcache.estimate(alone)
    assert lone.destager[0].drain_rate_bytes_s == pytest.approx(
        1.0 / spindle_seconds_per_byte(alone), rel=1e-9
    )


def test_the_flushers_get_what_the_read_misses_leave() -> None:
    """The array serves the VMs' read misses and the flushers' writes: the flushers drain what
    the reads leave of the spindles, all of it (the array 100% busy), less than without the
    reads, and nothing once the reads alone take the whole array (the drain is then the 1 byte/s
    floor: a full buffer never empties, and the reads are the overload)."""
    without = simcache.estimate(ingest())
    scenario = ingest(reads_iops=40.0)
    estimate = simcache.estimate(scenario)
    assert settled(estimate)
    drains = {fluid.drain_rate_bytes_s for fluid in estimate.destager}
    assert len(drains) == 1  # alike hosts drain alike
    drain = drains.pop()
    assert 0.5e6 < drain < without.destager[0].drain_rate_bytes_s
    assert estimate.utilization["array"] == pytest.approx(1.0, rel=1e-9)

    swamped = simcache.estimate(ingest(reads_iops=2000.0))
    for fluid in swamped.destager:
        assert fluid.drain_rate_bytes_s == STARVED_DRAIN and math.isinf(fluid.drain_time_s)
    assert not swamped.stable
    assert any(w.kind == "overload" and w.component == "array" for w in swamped.warnings)


def test_without_a_write_cache_the_flushers_settle_below_the_spindles_capacity() -> None:
    """Without a controller cache the flushers queue at the spindles (a closed loop each). The
    four hosts' loops swung between nearly all the array and next to nothing (0.18 MB/s a host,
    and the array 'offered 350%', the reads' latency unbounded); counted against each other at
    their fair shares they settle, alike, below the spindles' capacity: the array is a saturated
    bottleneck of closed loops, not an overload."""
    scenario = ingest(
        array={"profile": "hybrid-24x18tb-ssd", "controller_cache": 0}, reads_iops=40.0
    )
    estimate = simcache.estimate(scenario)
    assert settled(estimate) and estimate.stable
    drains = {fluid.drain_rate_bytes_s for fluid in estimate.destager}
    assert len(drains) == 1
    drain = drains.pop()
    assert 1e6 < drain < 1.0 / (HOSTS * spindle_seconds_per_byte(scenario))
    assert [w.component for w in estimate.warnings if w.kind == "bottleneck"] == ["array"]


def test_fair_shares_leave_each_host_what_it_wants_below_an_even_share() -> None:
    """Max-min fair shares of the spindle time, beside one more host that takes all it can:
    those wanting less than an even share of what the smaller wants leave keep what they want,
    the others get that share."""
    assert _held_to(1.0, [0.1, 0.5, 0.5]) == pytest.approx([0.1, 0.3, 0.3])
    assert _held_to(1.0, [0.1, 0.2]) == [0.1, 0.2]
    assert _held_to(0.6, [0.9, 0.9, 0.9]) == pytest.approx([0.15, 0.15, 0.15])
    assert _held_to(-0.2, [0.3]) == [0.0]  # the VMs take the whole array
    assert _held_to(1.0, []) == []


def test_a_flusher_s_own_reads_do_not_book_its_tier_against_it() -> None:
    """Review 65: one host writing 1 MiB sequential blocks into a PCIe 5.0 tier (priority
    scheduling), destaged to an all-flash array. The tier's limit on destage reads took the
    flushers' own reads as one batch a second whatever their rate, so at gigabytes a second it saw
    the tier booked by them: the drain swung between 0.7 and 5.4 GB/s from pass to pass and
    stopped on either, and the storage port's utilization read 0.082, 0.159, 0.059, 0.022, 0.003
    for 1 to 6 GB/s written. While the buffer keeps up every byte written crosses the storage
    port: utilization = framed bytes / line rate, rising with the load."""
    scenario = simcache.Scenario.model_validate(nvme_ingest_host("1GB/s", concurrency=16))
    link = scenario.cluster.storage_link
    port = []
    for per_vm in (0.25e9, 0.5e9, 0.75e9, 1e9):
        estimated = simcache.estimate(
            scenario.with_overrides({"groups.vm.workload.throughput": per_vm})
        )
        fluid = estimated.destager[0]
        assert math.isinf(fluid.fill_time_s)  # keeping up
        wire = framed_bytes(link, 2**20)[0] / 2**20  # the wire's bytes a payload byte
        expected = 4 * per_vm * wire / link.bandwidth
        port.append(estimated.utilization["host0.storage.tx"])
        assert port[-1] == pytest.approx(expected, rel=0.02)
    assert port == sorted(port)
