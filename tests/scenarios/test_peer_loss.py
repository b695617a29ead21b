"""Links down while hosts stay up (issue 17): ``peer_loss`` / ``link_down`` and the groups'
``on_peer_loss``.

Set-up: two hosts, one WB+1 VM on each writing 4 KiB at a steady 2,000 per second (uniform arrivals:
evenly spaced, so a window of T seconds holds 2,000 T writes per VM up to one at either end), NVMe
tiers, 10GbE peer and storage links and a 24 x 15K array. host0's peer ports are down from 1 s to 2
s: neither VM reaches its only peer. Nothing contends outside the outage, so a write-back write's
latency is one fixed figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.builders import small_scenario
from support.invariants import assert_conserved
from support.outage import AT, BACK, DURATION, END, LOSS, RATE, SIZE, issued_in, scenario, writes

import simcache
from simcache.physics.cluster import framed_bytes
from simcache.report.run_report import report


@pytest.fixture(scope="module")
def wt_latency() -> float:
    """The latency of every write of the same VMs under policy WT (ms): without contention, one
    figure."""
    through = writes(simcache.simulate(scenario(policy="WT", events=[])))["latency_ms"]
    assert through.to_numpy() == pytest.approx(through.iloc[0], rel=1e-9)
    return float(through.iloc[0])


def test_write_through_fallback_takes_the_arrays_latency_until_the_peers_return(
    wt_latency: float,
) -> None:
    """``write_through``: while the peer is lost, each VM writes as a WT VM does; before and
    after, at the write-back latency. Without contention both are one figure each: the write-back
    one is the NVMe write and the 10GbE replica leg (0.066 ms); the WT one is the array's
    controller-cache write (0.2 ms) and the 10GbE crossings to the array and back (0.243 ms),
    read from a run of policy WT."""
    result = simcache.simulate(scenario("write_through"))
    w = writes(result)
    write_back = issued_in(w, 0.0, AT)["latency_ms"]
    assert write_back.to_numpy() == pytest.approx(write_back.iloc[0], rel=1e-9)
    after = issued_in(w, BACK, END)["latency_ms"]
    assert after.to_numpy() == pytest.approx(write_back.iloc[0], rel=1e-9)
    during = issued_in(w, AT, BACK)["latency_ms"]
    assert during.to_numpy() == pytest.approx(wt_latency, rel=1e-9)
    assert wt_latency > 3 * write_back.iloc[0]
    assert (issued_in(w, AT, BACK)["peer_tier_ms"] == 0).all()
    for vm in result.meta["degraded_vms"]:
        assert vm["degraded_s"] == pytest.approx(DURATION, abs=1e-12)
        assert vm["degraded_written_bytes"] == SIZE * len(
            issued_in(w[w["vm"] == vm["vm"]], AT, BACK)
        )
        assert vm["resync_bytes"] == 0
        # every write of the loss completed
        assert vm["written_through_bytes"] == vm["degraded_written_bytes"]
    assert result.meta["resyncs"] == []
    # nothing was acknowledged with a single copy
    assert (result.series["data_at_risk_bytes"] == 0).all()
    assert_conserved(result)


@pytest.fixture(scope="module")
def degraded() -> simcache.Result:
    """``degrade`` with a 1 GiB buffer that destages only above its high watermark (512 MiB):
    every write of the run stays buffered, so each one written during the loss is still there
    when the peer returns."""
    return simcache.simulate(
        scenario("degrade", destager={"capacity": "1GiB", "trigger": "watermarks"})
    )


def test_degrade_puts_data_at_risk_until_the_resync_lands(degraded: simcache.Result) -> None:
    """At each sample, the at-risk bytes are the writes issued during the loss and acknowledged
    by then (a single copy each); 0 before the loss and again once the resync flows have landed."""
    w = writes(degraded)
    during = issued_in(w, AT, BACK)
    landed = max(r["end_s"] for r in degraded.meta["resyncs"])
    at_risk = degraded.series["data_at_risk_bytes"]
    for t, value in at_risk.items():
        if t < landed:
            assert value == during.loc[during["complete_s"] <= t, "size_bytes"].sum(), t
        else:
            assert value == 0, t
    # both VMs, every write of the loss, at its last sample
    assert at_risk.max() == 2 * RATE * DURATION * SIZE
    assert_conserved(degraded)


def test_resync_copies_exactly_the_writes_of_the_loss(degraded: simcache.Result) -> None:
    """Each host resyncs its VM's writes issued during the loss: rate x duration x size = 2,000 x
    1 s x 4 KiB = 8,192,000 bytes, one flow to the other host starting at the return. It shares
    the port with the VM's own replica legs: it lasts the link's time for its framed bytes
    (latency + wire / bandwidth), plus the wire time of each VM leg that crosses the port
    meanwhile (the port is work-conserving): at most duration x 2,000 + 2 legs."""
    w = writes(degraded)
    link = degraded.scenario.cluster.peer_link
    for flow in degraded.meta["resyncs"]:
        own = issued_in(w[w["host"] == f"host{flow['host']}"], AT, BACK)
        assert flow["bytes"] == own["size_bytes"].sum() == RATE * DURATION * SIZE
        assert flow["start_s"] == BACK
        alone = link.latency + framed_bytes(link, flow["bytes"])[0] / link.bandwidth
        lasted = flow["end_s"] - flow["start_s"]
        legs = np.floor(lasted * RATE) + 2
        assert alone <= lasted <= alone + legs * framed_bytes(link, SIZE)[0] / link.bandwidth
    assert sorted((f["host"], f["peer"]) for f in degraded.meta["resyncs"]) == [(0, 1), (1, 0)]
    for vm in degraded.meta["degraded_vms"]:
        assert vm["resync_bytes"] == vm["degraded_written_bytes"] == RATE * DURATION * SIZE
    # every buffered write has its copy again
    assert degraded.totals["replica_bytes_held"] == degraded.totals["destage_backlog_bytes"]


def test_a_hash_ordered_destager_resyncs_the_same_writes(degraded: simcache.Result) -> None:
    """``order = "hash"`` keeps its buffered writes in the hash walk, not in the arrival queue:
    the resync must find them there too. Same loss, same writes: the same two 8,192,000-byte
    flows, the at-risk bytes back to 0 once they land, and every buffered write holding its copy
    again (before the fix the walk's writes were invisible to the resync: no flow ran and
    16,384,000 bytes stayed at risk to the end)."""
    hashed = simcache.simulate(
        scenario("degrade", destager={"capacity": "1GiB", "trigger": "watermarks", "order": "hash"})
    )
    assert hashed.meta["resyncs"] == degraded.meta["resyncs"]
    assert hashed.series["data_at_risk_bytes"].iloc[-1] == 0
    assert (
        hashed.totals["replica_bytes_held"]
        == hashed.totals["destage_backlog_bytes"]
        == degraded.totals["destage_backlog_bytes"]
    )
    assert_conserved(hashed)


def test_run_report_lists_the_outage_and_the_resyncs(degraded: simcache.Result) -> None:
    """``simcache run`` prints an events table: the outage with the backlog at either end, each
    resync flow, and the VMs short of peers (2 VMs x 1 s; 2 x 8,192,000 bytes = 15.6 MiB
    resynced)."""
    text = report(degraded)
    table = text[text.index("Events:") :].splitlines()
    backlog = degraded.meta["outages"][0]
    start, end = backlog["backlog_at_start_bytes"] / 2**20, backlog["backlog_at_end_bytes"] / 2**20
    assert table[1] == (
        f"  peer_loss host0 peer link down 1.000 s to 2.000 s: backlog {start:.1f} MiB -> "
        f"{end:.1f} MiB"
    )
    assert table[2].startswith("  resync host0 -> host1 from 2.000 s: 7.8 MiB, done in 0.00")
    assert table[3].startswith("  resync host1 -> host0 from 2.000 s: 7.8 MiB, done in 0.00")
    assert table[4] == (
        "  2 VMs short of peers for 2.000 VM-seconds in all (on_peer_loss degrade); 15.6 MiB "
        "of their writes resynced"
    )


def test_degraded_writes_take_the_local_latency(degraded: simcache.Result) -> None:
    """WB+1 degraded to WB+0: no replica leg, so the latency is the local tier write alone, below
    the WB+1 figure."""
    w = writes(degraded)
    during = issued_in(w, AT, BACK)
    assert (during["network_ms"] == 0).all() and (during["peer_tier_ms"] == 0).all()
    assert during["latency_ms"].max() < issued_in(w, 0.0, AT)["latency_ms"].min()


def test_stall_holds_the_writes_for_the_loss() -> None:
    """``stall``: a write issued during the loss completes only after the peer returns, so its
    latency is at least the time left of the loss; the first one waits the whole loss but one
    arrival gap (1 / 2,000 s)."""
    result = simcache.simulate(scenario("stall"))
    w = writes(result)
    during = issued_in(w, AT, BACK)
    assert len(during) >= 2 * (RATE * DURATION - 1)
    assert (during["complete_s"] >= BACK).all()
    assert ((during["latency_ms"] / 1e3) >= BACK - during["issue_s"]).all()
    assert during["latency_ms"].max() / 1e3 >= DURATION - 1 / RATE
    # nothing completes during the loss
    assert not ((w["complete_s"] > AT + 0.01) & (w["complete_s"] < BACK)).any()
    assert result.meta["resyncs"] == []
    assert_conserved(result)


def test_storage_link_down_grows_the_backlog_by_the_write_rate() -> None:
    """WB+0, host0's storage link down for 1 s: its destager cannot send, so its backlog grows by
    what its VM writes meanwhile, 2,000 x 4 KiB = 8,192,000 bytes, less what the batches already
    on the wire at the start destaged (at most the backlog then). host1's backlog does not grow;
    host0's drains after the return."""
    down = {"kind": "link_down", "at": AT, "host": 0, "link": "storage", "duration": DURATION}
    result = simcache.simulate(scenario(policy="WB+0", events=[down]))
    (outage,) = result.meta["outages"]
    growth = outage["backlog_at_end_bytes"] - outage["backlog_at_start_bytes"]
    written = RATE * DURATION * SIZE
    assert written - outage["backlog_at_start_bytes"] <= growth <= written
    assert outage["backlog_at_start_bytes"] < 0.01 * written
    series = result.series
    assert series["backlog.host1"].max() < 0.01 * written
    assert series.loc[series.index >= BACK + 0.5, "backlog.host0"].max() < 0.01 * written
    assert result.meta["degraded_vms"] == []  # a storage outage leaves the peers alone
    assert_conserved(result)


def test_a_host_failure_that_leaves_no_spare_peer_is_visible(wt_latency: float) -> None:
    """WB+1 on two hosts, host1 dies at 1 s: host0's VM has no peer left. With the default
    (``write_through``) it writes through from then on, degraded for the rest of the run (2 s);
    with ``degrade`` it writes single copies, at risk to the end."""
    failure = [{"kind": "host_failure", "at": AT, "host": 1}]
    through = simcache.simulate(scenario(events=failure))
    (vm,) = through.meta["degraded_vms"]
    assert vm["vm"] == "db-h0-0" and vm["degraded_s"] == pytest.approx(END - AT, abs=1e-12)
    w = writes(through)
    assert issued_in(w, AT, END)["latency_ms"].to_numpy() == pytest.approx(wt_latency, rel=1e-9)
    degrading = simcache.simulate(scenario("degrade", events=failure))
    at_risk = degrading.series["data_at_risk_bytes"]
    assert (at_risk[at_risk.index < AT] == 0).all() and at_risk.iloc[-1] > 0
    for result in (through, degrading):
        assert_conserved(result)


@pytest.mark.parametrize(
    ("event", "path", "message"),
    [
        ({**LOSS, "host": 2}, "events.0.host", "host index 2 does not exist; hosts are 0..1"),
        (
            {**LOSS, "at": END},
            "events.0.at",
            "3s is not inside the run (0 to 3s); move it earlier or lengthen run.duration",
        ),
    ],
)
def test_outage_events_are_validated(event: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(events=[event])
    assert (path, message) in raised.value.problems


@pytest.mark.parametrize(("field", "value"), [("duration", 0), ("link", "wan")])
def test_outage_fields_are_checked(field: str, value: Any) -> None:
    event = {
        "kind": "link_down",
        "at": AT,
        "host": 0,
        "link": "peer",
        "duration": DURATION,
        field: value,
    }
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(events=[event])
    assert [path for path, _ in raised.value.problems] == [f"events.0.{field}"]


def test_stall_after_a_failure_with_no_spare_holds_writes_to_the_end() -> None:
    """``stall``, host0's peer ports down at 1 s, host0 dies at 1.5 s: its stalled writes vanish
    with it (nothing reaches its tier or leaves its peer port afterwards), and host1's VM, with
    no peer left, holds every write from 1 s to the end: 2,000 x 2 s = 4,000 writes unfinished,
    up to one arrival either end."""
    events = [LOSS, {"kind": "host_failure", "at": 1.5, "host": 0}]
    result = simcache.simulate(scenario("stall", events=events))
    series = result.series
    after = series.index > 1.5
    assert (series.loc[after, "util.host0.peer.tx"] == 0).all() and (
        series.loc[after, "util.host0.tier"] == 0
    ).all()
    assert not (writes(result)["complete_s"] > AT + 0.01).any()
    unfinished = result.unfinished
    held = unfinished[(unfinished["host"] == "host1") & (unfinished["op"] == "write")]
    assert abs(len(held) - RATE * (END - AT)) <= 1
    assert_conserved(result)


def test_storage_link_down_holds_write_through_writes_and_read_misses() -> None:
    """WT, half reads over a 1 GiB working set (almost every read misses): with host0's storage
    link down from 1 s to 2 s, its writes and read misses issued meanwhile complete only after 2
    s, and at least the time left of the outage after their issue; host1's I/Os do not wait."""
    down = {"kind": "link_down", "at": AT, "host": 0, "link": "storage", "duration": DURATION}
    workload = {
        "mode": "open",
        "iops": RATE,
        "read_fraction": 0.5,
        "arrivals": "uniform",
        "sizes": "4KiB",
        "working_set": "1GiB",
    }
    spec = small_scenario(
        groups=[{"name": "db", "policy": "WT", "workload": workload}],
        run={"duration": END},
        cluster={"storage_link": "10GbE"},
        array="array-24x15k",
        events=[down],
    )
    result = simcache.simulate(simcache.load_scenario(spec))
    during = issued_in(result.records, AT, BACK)
    held = during[during["host"] == "host0"]
    assert set(held["op"]) == {"read", "write"} and (held["path"] != "hit").sum() >= 0.9 * len(held)
    held = held[held["path"] != "hit"]
    assert (held["complete_s"] >= BACK).all()
    assert ((held["latency_ms"] / 1e3) >= BACK - held["issue_s"]).all()
    other = during[during["host"] == "host1"]
    # a disk read takes milliseconds; waiting for the link would take up to 1 s
    assert other["latency_ms"].max() < 100
