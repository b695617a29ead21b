"""A host's cache device fails (issue 17): ``device_failure``; data at risk counted by copies; data
lost on a second failure; a rebuild as long as rewriting the whole drive.

Set-up of the device-failure runs: three hosts (ring peers), one VM per host writing 4 KiB at a
steady 2,000 per second (uniform arrivals) and reading 4 KiB at 500 per second over a 64 MiB working
set, NVMe tiers, 10GbE peer and storage links and a 24 x 15K array; the destager takes a write 0.5 s
after it entered the buffer (``delay``), so each host holds about 0.5 s of writes, 4 MB. host1's
tier fails at 1 s.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import small_scenario
from support.invariants import assert_conserved, copies_invariants
from support.outage import AT, BACK, DURATION, LOSS, RATE, SIZE, issued_in, scenario

import simcache
from simcache.report.event_report import event_lines
from simcache.report.run_report import report
from simcache.sim import engine
from simcache.sim.kernel.clock import run_until

FAIL_AT = 1.0
END = 3.0
FAILURE = {"kind": "device_failure", "at": FAIL_AT, "host": 1}


def three_hosts(
    policy: str = "WB+1", events: list[dict[str, Any]] | None = None, **destager: Any
) -> simcache.Scenario:
    group = {
        "name": "db",
        "policy": policy,
        "workload": {
            "mode": "open",
            "iops": 2500,
            "read_fraction": 0.2,
            "arrivals": "uniform",
            "sizes": "4KiB",
            "working_set": "64MiB",
        },
    }
    spec = small_scenario(
        groups=[group],
        run={"duration": END},
        cluster={"hosts": 3, "storage_link": "10GbE", "destager": {"delay": "0.5s", **destager}},
        array="array-24x15k",
        events=[FAILURE] if events is None else events,
    )
    return simcache.load_scenario(spec)


@pytest.fixture(scope="module")
def failed() -> simcache.Result:
    return simcache.simulate(three_hosts())


def test_the_failed_devices_backlog_is_handed_to_its_replica_holders(
    failed: simcache.Result,
) -> None:
    """WB+1: every write host1 had not destaged has its copy on host2 (ring): nothing is lost,
    all of it is handed over; bytes are conserved; the events table says so."""
    (failure,) = failed.meta["failures"]
    assert failure["kind"] == "device_failure" and failure["at_s"] == FAIL_AT
    assert failure["lost_bytes"] == 0
    assert failure["handed_over_bytes"] == failure["backlog_bytes"] > 0
    assert_conserved(failed)
    assert failed.totals["data_lost_bytes"] == 0
    line = (
        "  device_failure host1 at 1.000 s: 0.0 MiB lost, "
        f"{failure['handed_over_bytes'] / 2**20:.1f} MiB handed over to "
        "replica holders; its VMs write through from then on"
    )
    assert line in event_lines(failed)


def test_wb0_loses_exactly_the_failed_devices_backlog() -> None:
    """WB+0: no copy anywhere else, so the whole backlog of host1 at the failure is lost and
    nothing handed over."""
    result = simcache.simulate(three_hosts("WB+0"))
    (failure,) = result.meta["failures"]
    assert failure["lost_bytes"] == failure["backlog_bytes"] > 0
    assert failure["handed_over_bytes"] == 0
    assert result.totals["data_lost_bytes"] == failure["lost_bytes"]
    assert_conserved(result)


def test_the_failed_hosts_vm_writes_through_and_reads_the_array(failed: simcache.Result) -> None:
    """After the failure host1's VM keeps running on host1 without a tier: every write takes the
    array's time and no local tier time, every read is a miss; before it, writes were write-back
    (no array time). The other VMs go on writing back, and nothing is replicated to or from host1
    once the legs in flight have landed (two samples on)."""
    records = failed.records
    vm1 = records[records["vm"] == "db-h1-0"]
    before = issued_in(vm1, 0.0, FAIL_AT)
    after = issued_in(vm1, FAIL_AT, END)
    writes_after = after[after["op"] == "write"]
    assert len(writes_after) > 0.9 * 2000 * (END - FAIL_AT)
    assert (writes_after["array_ms"] > 0).all() and (writes_after["local_tier_ms"] == 0).all()
    assert (before.loc[before["op"] == "write", "array_ms"] == 0).all()
    assert (after.loc[after["op"] == "read", "path"] == "miss").all()
    assert (before.loc[before["op"] == "read", "path"] == "hit").any()
    others = issued_in(
        records[(records["vm"] != "db-h1-0") & (records["op"] == "write")], FAIL_AT, END
    )
    assert (others["array_ms"] == 0).all()
    later = failed.series.index > FAIL_AT + 2 * 0.25
    assert (failed.series.loc[later, "util.host1.peer.rx"] == 0).all()
    assert (failed.series.loc[later, "util.host1.peer.tx"] == 0).all()
    # The write-back group's fallback, counted by the model and said in the run report.
    through = failed.totals["wb_written_through_bytes"]
    assert through == int(writes_after["size_bytes"].sum())
    assert (
        f"write-back groups wrote {through / 2**20:.1f} MiB through to the array instead"
        in report(failed)
    )


def test_reads_of_handed_over_writes_wait_for_the_holders_destage(failed: simcache.Result) -> None:
    """The array is stale for a block whose newest write host2 took over until host2 destages it:
    host1's VM's read misses of such blocks wait (destage_wait). host2 takes the handed-over
    writes 0.5 s after the failure (they enter its buffer then), so the waits fall on reads
    issued in [1 s, 1.5 s) and end after 1.5 s; about 1,000 handed-over writes over 16,384
    blocks: some 6 % of the 250 reads of that half second. No other read waits."""
    records = failed.records
    reads = records[records["op"] == "read"]
    waited = reads[reads["destage_wait_ms"] > 0]
    assert 5 <= len(waited) <= 40
    assert (waited["vm"] == "db-h1-0").all()
    assert (waited["issue_s"] >= FAIL_AT).all() and (waited["issue_s"] < FAIL_AT + 0.5).all()
    assert (waited["issue_s"] + waited["destage_wait_ms"] / 1e3 >= FAIL_AT + 0.5).all()


@pytest.mark.parametrize("policy", ["WB+0", "WB+1", "WB+2"])
def test_copies_stay_counted_right_through_a_device_failure(policy: str) -> None:
    """Stepped every 5 ms around the failure: no buffered or waiting write counts host1 as a copy
    afterwards, the single-copy and short-of-copies bytes are those of the buffered writes
    themselves, and the failed host holds no replica bytes. A 1 MiB destage buffer keeps writers
    waiting at the failure (they fail: the host stays up)."""
    model = engine.build(three_hosts(policy, capacity="1MiB"), seed=2)
    for step in range(1, 80):
        run_until(model.clock, FAIL_AT - 0.1 + step * 0.005)
        assert copies_invariants(model) == [], model.env.now
    run_until(model.clock, END)
    accepted = sum(h.destager.accepted_bytes for h in model.hosts)
    kept = sum(h.destager.destaged_bytes + h.destager.backlog_bytes for h in model.hosts)
    assert accepted == kept + model.failures[0]["lost_bytes"]


def test_a_device_failure_is_validated() -> None:
    """The host must exist and the failure fall inside the run."""
    with pytest.raises(simcache.ScenarioError) as info:
        three_hosts(events=[{"kind": "device_failure", "at": 1.0, "host": 3}])
    assert info.value.problems == [("events.0.host", "host index 3 does not exist; hosts are 0..2")]
    with pytest.raises(simcache.ScenarioError) as info:
        three_hosts(events=[{"kind": "device_failure", "at": END, "host": 0}])
    assert info.value.problems == [
        (
            "events.0.at",
            "3s is not inside the run (0 to 3s); move it earlier or lengthen run.duration",
        ),
    ]


# -- data at risk: bytes with fewer copies than the policy promises
# ------------------------------------------------------


def test_wb2_data_at_risk_is_what_was_written_with_a_peer_missing() -> None:
    """WB+2 on three hosts, ``degrade``, host0's peer ports down from 1 s to 2 s, and a destager
    that does not drain (watermarks above what the run writes: 3 VMs x 2,000 x 4 KiB/s x 3 s = 74 MB
    of a 1 GiB buffer).

    Every write issued during the loss has fewer than three copies (host0's one, the others' two):
    at each sample in the loss, data at risk = the bytes of the writes issued since 1 s and
    acknowledged by then, about 3 x 2,000 x 4 KiB per second of loss (one write per VM at either
    end); no write has a single copy but host0's. The resync copies them to the peers they lack:
    from the first sample after its last flow landed, none is at risk.
    """
    result = simcache.simulate(
        scenario(
            "degrade",
            policy="WB+2",
            hosts=3,
            destager={"capacity": "1GiB", "trigger": "watermarks", "high_watermark": 0.9},
        )
    )
    assert result.totals["destaged_bytes"] == 0
    records = result.records
    writes = records[records["op"] == "write"]
    at_risk = result.series["data_at_risk_bytes"]
    single = result.series["single_copy_bytes"]
    assert (at_risk[at_risk.index <= AT] == 0).all()
    for t in at_risk.index[(at_risk.index > AT) & (at_risk.index <= BACK)]:
        meanwhile = writes[(writes["issue_s"] >= AT) & (writes["complete_s"] <= t)]
        assert at_risk[t] == meanwhile["size_bytes"].sum(), t
        assert at_risk[t] == pytest.approx(3 * RATE * (t - AT) * SIZE, abs=3 * 2 * SIZE)
        host0 = meanwhile[meanwhile["host"] == "host0"]
        assert single[t] == host0["size_bytes"].sum(), t
    assert at_risk[BACK] == pytest.approx(3 * RATE * DURATION * SIZE, abs=3 * 2 * SIZE)
    landed = max(r["end_s"] for r in result.meta["resyncs"])
    assert landed < END
    after = at_risk.index[at_risk.index >= landed]
    assert (at_risk[after] == 0).all() and (single[after] == 0).all()
    assert_conserved(result)


# -- data lost on a second failure
# ---------------------------------------------------------------------------------------


SECOND_FAILURES = {  # hosts, events, seconds of host0's writes left with no other copy at 1.5 s
    "degrade, then host0 dies": (2, [LOSS, {"kind": "host_failure", "at": 1.5, "host": 0}], 0.5),
    "degrade, then host0's tier fails": (
        2,
        [LOSS, {"kind": "device_failure", "at": 1.5, "host": 0}],
        0.5,
    ),
    "two host failures under WB+1": (
        3,
        [
            {"kind": "host_failure", "at": 1.0, "host": 1},
            {"kind": "host_failure", "at": 1.5, "host": 0},
        ],
        1.0,
    ),
}


@pytest.mark.parametrize("case", list(SECOND_FAILURES))
def test_a_second_failure_loses_exactly_the_unreplicated_backlog(case: str) -> None:
    """A failure the policy does not cover: host0 holds writes whose only other copy is gone or
    never made (its peer unreachable under ``degrade``, or its peer host1 dead) when host0 fails.
    Data lost = host0's buffered writes with no live replica at that instant, to the byte, and
    bytes stay conserved: accepted = destaged + backlog + lost. The destager does not drain (high
    watermark above what the run writes), so host0's single copies are 2,000 x 4 KiB a second of
    its VM's writes, up to one write at either end: under ``degrade`` those issued since the loss
    began (0.5 s), after host1's death those issued before it (1 s: their copy was on host1;
    host0's later writes went to host2)."""
    hosts, events, seconds = SECOND_FAILURES[case]
    s = scenario(
        "degrade",
        hosts=hosts,
        events=events,
        destager={"capacity": "1GiB", "trigger": "watermarks", "high_watermark": 0.9},
    )
    model = engine.build(s, seed=s.run.seed)
    run_until(model.clock, 1.5)  # the events at 1.5 s are not processed yet
    host0 = model.hosts[0]
    unreplicated = host0.destager.single_copy_bytes
    run_until(model.clock, END)
    second = model.failures[-1]
    assert second["host"] == 0 and second["at_s"] == 1.5
    assert (
        second["lost_bytes"] == unreplicated == pytest.approx(RATE * seconds * SIZE, abs=2 * SIZE)
    )
    accepted = sum(h.destager.accepted_bytes for h in model.hosts)
    kept = sum(h.destager.destaged_bytes + h.destager.backlog_bytes for h in model.hosts)
    assert accepted == kept + sum(f["lost_bytes"] for f in model.failures)


# -- a rebuild as long as rewriting the failed drive
# -----------------------------------------------------------------


def rebuild_scenario(**event: Any) -> dict[str, Any]:
    """One host, WB+0, six 7,200 rpm drives of 400 MB (an override of the profile's) in RAID 5."""
    return small_scenario(
        run={"duration": 10.0},
        array={
            "profile": "array-14x7200",
            "raid": "raid5",
            "spindles": 6,
            "drive": {"profile": "sata-7200", "capacity": "400MB"},
        },
        workload={"mode": "open", "iops": 200, "read_fraction": 0.0, "working_set": "1GiB"},
        events=[{"kind": "array_rebuild", "at": 1.0, "rebuild_rate": "50MB/s", **event}],
    )


def test_a_rebuild_without_duration_rewrites_the_whole_drive() -> None:
    """Rebuild length = drive capacity / rebuild rate = 400 MB / 50 MB/s = 8 s: the array is
    degraded from 1 s to 9 s, with the same factors as a rebuild given that duration."""
    derived = simcache.simulate(simcache.load_scenario(rebuild_scenario()))
    explicit = simcache.simulate(simcache.load_scenario(rebuild_scenario(duration=8.0)))
    (record,) = derived.meta["degradations"]
    assert (record["start_s"], record["end_s"]) == (1.0, 9.0)
    assert record == explicit.meta["degradations"][0]
    assert derived.totals == explicit.totals


def test_a_rebuild_longer_than_rewriting_the_drive_is_refused() -> None:
    with pytest.raises(simcache.ScenarioError) as info:
        simcache.load_scenario(rebuild_scenario(duration=9.0))
    assert info.value.problems == [
        (
            "events.0.duration",
            "9s is longer than rewriting the whole 0.4 GB drive at 50 MB/s takes (8s); shorten it, "
            "or leave it out to "
            "rebuild the whole drive",
        )
    ]


def test_a_vm_moved_off_a_failed_tier_writes_back_again() -> None:
    """host0's tier fails at 0 s, so its WB+0 VM writes through; a vMotion moves the VM to host1
    (a working tier), and from the move on its writes are acknowledged by host1's tier and
    destaged from there, as host1's own VM's are (found by the property test: the moved VM kept
    writing through). Every write-back byte acknowledged is either accepted by a destager or
    written through on host0 before the move."""
    workload = {
        "mode": "closed",
        "workers": 1,
        "outstanding": 1,
        "think_time": "3ms",
        "read_fraction": 0.0,
        "sizes": {"4KiB": 1.0},
    }
    spec = {
        "name": "moved-off-failed-tier",
        "run": {"duration": 0.5, "warmup": 0.0, "sample_interval": 0.25, "seed": 0},
        "cluster": {
            "hosts": 2,
            "tier": "nvme-p3700-field",
            "peer_link": "10GbE",
            "storage_link": "1GbE",
        },
        "array": "array-14x7200",
        "groups": [
            {
                "name": "g0",
                "policy": "WB+0",
                "vms_per_host": 1,
                "workload": {**workload, "working_set": "64MiB"},
            }
        ],
        "events": [
            {"kind": "device_failure", "at": 0.0, "host": 0},
            {
                "kind": "vmotion",
                "at": 0.1,
                "source_host": 0,
                "target_host": 1,
                "size": "32MiB",
                "vm": "g0-h0-0",
            },
        ],
    }
    result = simcache.simulate(simcache.Scenario.model_validate(spec))
    (move,) = result.meta["vmotions"]
    records = result.records
    writes = records[(records["op"] == "write") & (records["vm"] == "g0-h0-0")]
    before, after = (
        writes[writes["complete_s"] <= move["moved_s"]],
        writes[writes["issue_s"] > move["moved_s"]],
    )
    assert len(before) > 0 and len(after) > 0
    assert (before["array_ms"] > 0).all()  # written through to the array on host0
    # written back on host1
    assert (after["array_ms"] == 0).all() and (after["local_tier_ms"] > 0).all()
    all_writes = records[records["op"] == "write"]
    on_failed = int(all_writes[all_writes["host"] == "host0"]["size_bytes"].sum())
    assert (
        int(all_writes["size_bytes"].sum()) == result.totals["destage_accepted_bytes"] + on_failed
    )
    # the model's own count of the write-back group's fallback
    assert result.totals["wb_written_through_bytes"] == on_failed


def test_a_serialized_write_queued_across_the_move_takes_the_new_hosts_path() -> None:
    """``sync_serialize``: a write waits for the VM's earlier write before it starts, and its
    path is the one of the host it starts on. A write issued on host0 (tier failed:
    write-through) whose turn comes after the move to host1 goes write-back there; its record
    keeps the host it was issued on. ``wb_written_through_bytes`` counts by path taken, so every
    write-back byte acknowledged is in a destage buffer or in that count (found by the property
    test, whose rule "issued on the failed host after the failure = written through" missed this
    write)."""
    workload = {
        "mode": "closed",
        "workers": 1,
        "outstanding": 2,
        "think_time": "3ms",
        "read_fraction": 0.0,
        "sizes": {"4KiB": 1.0},
        "working_set": "64MiB",
        "sync_serialize": True,
    }
    spec = {
        "name": "queued-across-the-move",
        "run": {"duration": 0.5, "warmup": 0.0, "sample_interval": 0.25, "seed": 0},
        "cluster": {
            "hosts": 2,
            "tier": "nvme-p3700-field",
            "peer_link": "10GbE",
            "storage_link": "1GbE",
            # host1's batches slow the array
            "destager": {"capacity": "1MiB", "concurrency": 1, "max_batch": "512KiB"},
        },
        "array": "array-14x7200",
        "groups": [{"name": "g0", "policy": "WB+0", "vms_per_host": 1, "workload": workload}],
        "events": [
            {"kind": "device_failure", "at": 0.0, "host": 0},
            {
                "kind": "vmotion",
                "at": 0.1,
                "source_host": 0,
                "target_host": 1,
                "size": "32MiB",
                "vm": "g0-h0-0",
                "handover": False,
            },
        ],
    }
    result = simcache.simulate(simcache.Scenario.model_validate(spec))
    (move,) = result.meta["vmotions"]
    records = result.records
    writes = records[(records["op"] == "write") & (records["vm"] == "g0-h0-0")]
    # Issued on host0 before the move, completed after it without array time: written back on host1.
    crossed = writes[
        (writes["host"] == "host0")
        & (writes["complete_s"] > move["moved_s"])
        & (writes["array_ms"] == 0)
    ]
    assert len(crossed) >= 1
    through = writes[writes["array_ms"] > 0]
    assert result.totals["wb_written_through_bytes"] == int(through["size_bytes"].sum())
    all_writes = records[records["op"] == "write"]
    assert (
        int(all_writes["size_bytes"].sum())
        == result.totals["destage_accepted_bytes"] + result.totals["wb_written_through_bytes"]
    )
