"""vMotion moves a VM (issue 17): ``vmotion`` with ``vm`` (and ``handover``).

Set-up A (reads): two hosts on 10GbE, one WB+0 VM, ``db-h0-0``, on host0 (host1 runs none: its peer
ports carry the vMotion and, after the move, the remote hits only). It issues 2,000 I/Os a second,
evenly spaced, 90% reads, 4 KiB uniform over a 16 MiB working set in 4 KiB cache lines (N = 4,096
lines, one per I/O). A 256 MiB vMotion in 4 streams starts at 4 s. Every I/O puts its line in its
host's cache (reads on a miss or a remote hit, writes always), so after n I/Os a given line is
cached with probability 1 - q^n, q = 1 - 1/N.

Set-up B (writes): three hosts, one WB+1 VM on host0 writing 1,000 times a second (4 KiB, evenly
spaced), its replicas on host1 (the ring); a 4 GiB destage buffer under watermarks that 3 s of 4
MB/s never reach, so every write stays buffered to the end. A 64 MiB vMotion to host1 at 1 s;
``handover`` as the test says.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from support.builders import small_scenario

import simcache
from simcache.base.errors import ScenarioError
from simcache.estimate.coverage import not_modelled
from simcache.physics.cluster import framed_bytes
from simcache.report.event_report import event_lines
from simcache.sim import engine
from simcache.sim.built import Model

MiB = 2**20
AT = 4.0  # set-up A's vMotion start, s
RATE = 2000  # I/Os per second
N = 4096  # cache lines of the working set
SIZE_A = 256 * MiB
STREAMS = 4


def reads_scenario(**event: Any) -> simcache.Scenario:
    workload = {
        "mode": "open",
        "iops": RATE,
        "arrivals": "uniform",
        "read_fraction": 0.9,
        "sizes": "4KiB",
    }
    workload |= {"working_set": "16MiB", "access": "uniform"}
    spec = small_scenario(
        groups=[{"name": "db", "policy": "WB+0", "hosts": [0], "workload": workload}],
        run={"duration": 8.0, "warmup": 0.5, "sample_interval": 0.5},
        cluster={"storage_link": "10GbE", "cache": {"line": "4KiB"}},
        array="array-24x15k",
        events=[
            {
                "kind": "vmotion",
                "at": AT,
                "source_host": 0,
                "target_host": 1,
                "size": SIZE_A,
                "streams": STREAMS,
                "vm": "db-h0-0",
            }
            | event
        ],
    )
    return simcache.load_scenario(spec)


@pytest.fixture(scope="module")
def moved() -> simcache.Result:
    return simcache.simulate(reads_scenario())


def move_time(scenario: simcache.Scenario) -> float:
    """The vMotion's end on otherwise idle peer ports: its streams share the source's port
    equally and end together, each ``wire(size / streams)`` framed bytes, one link latency after
    the last byte left: ``at + streams x wire(size / streams) / bandwidth + latency``."""
    link = scenario.cluster.peer_link
    event = scenario.events[0]
    return (
        event.at
        + event.streams * framed_bytes(link, event.size / event.streams)[0] / link.bandwidth
        + link.latency
    )


def test_the_vm_runs_on_the_target_from_the_end_of_the_transfer(moved: simcache.Result) -> None:
    """The records' host changes at the move: 4 s + 4 x wire(64 MiB) / 1.25 GB/s + 20 us =
    4.22624 s (64 MiB in 45,966 packets of 1,460 bytes, 78 bytes of headers and framing each:
    70.69 MB a stream, 282.77 MB in all at 10 Gbit/s); I/Os issued before it ran on host0, from
    it on host1."""
    scenario = reads_scenario()
    expected = move_time(scenario)
    assert expected == pytest.approx(AT + 0.22624, abs=1e-5)
    record = moved.meta["vmotions"][0]
    assert record["moved_s"] == record["end_s"] == pytest.approx(expected, rel=1e-12)
    records = moved.records
    before, after = records[records["host"] == "host0"], records[records["host"] == "host1"]
    assert set(records["host"]) == {"host0", "host1"}
    assert before["issue_s"].max() < expected <= after["issue_s"].min() < expected + 1 / RATE
    # evenly spaced: all but the in-flight ones
    assert len(after) == pytest.approx(RATE * (8.0 - expected), abs=2)


def test_remote_hits_cross_the_peer_network_and_read_the_old_tier(moved: simcache.Result) -> None:
    """A remote hit: the request (one 20 us link latency), host0's tier read (its peer-tier
    component), the 4 KiB back (wire(4 KiB) = 4,330 bytes at 1.25 GB/s plus 20 us): network 43.46
    us exactly, the link being idle; no local tier."""
    records = moved.records
    remote = records[records["path"] == "remote_hit"]
    assert len(remote) > 1000
    assert set(remote["host"]) == {"host1"} and set(remote["op"]) == {"read"}
    link = reads_scenario().cluster.peer_link
    network_ms = (2 * link.latency + framed_bytes(link, 4096)[0] / link.bandwidth) * 1e3
    assert network_ms == pytest.approx(0.043464, abs=1e-6)
    assert np.allclose(remote["network_ms"], network_ms, rtol=1e-9, atol=1e-12)
    assert (
        (remote["peer_tier_ms"] > 0).all()
        and (remote["local_tier_ms"] == 0).all()
        and (remote["array_ms"] == 0).all()
    )
    assert np.allclose(remote["latency_ms"], remote["network_ms"] + remote["peer_tier_ms"])
    assert moved.meta["vmotions"][0]["remote_hits"] == len(remote)


def test_remote_hits_fade_as_the_target_cache_warms(moved: simcache.Result) -> None:
    """Uniform access: a read k I/Os after the move is a remote hit if its line is not on host1
    yet (q^k) and was on host0 at the move (1 - q^n0, n0 = the I/Os before it): expected share
    q^k (1 - q^n0), averaged over each 0.5 s window's reads. Measured within 4 binomial standard
    deviations of that (about 900 reads a window) plus 4 of the old cache's coverage (sqrt(c (1 -
    c) / N)): 0.077 to 0.087. Expected 0.77, 0.61, 0.48, 0.37, 0.29 (n0 = 8,450, c = 0.873); seed
    5 measures 0.78, 0.62, 0.49, 0.35, 0.28, falling window after window."""
    records = moved.records.sort_values("issue_s")
    when = moved.meta["vmotions"][0]["moved_s"]
    q = 1 - 1 / N
    n0 = int((records["issue_s"] < when).sum())
    old = 1 - q**n0
    after = records[records["issue_s"] >= when].reset_index(drop=True)
    k = np.arange(len(after))  # I/Os of the VM issued after the move before this one
    shares = []
    for start in np.arange(0.0, 2.5, 0.5):
        window = (
            (after["issue_s"] >= when + start)
            & (after["issue_s"] < when + start + 0.5)
            & (after["op"] == "read")
        ).to_numpy()
        p = float(np.mean(q ** k[window]) * old)
        share = float((after.loc[window, "path"] == "remote_hit").mean())
        slack = 4 * np.sqrt(p * (1 - p) / window.sum()) + 4 * np.sqrt(old * (1 - old) / N)
        assert abs(share - p) < slack, (start, share, p, slack)
        shares.append(share)
    assert all(later < earlier for earlier, later in itertools.pairwise(shares))
    assert shares[0] > 0.7 and shares[-1] < 0.4


def test_no_remote_hit_without_a_move_or_before_it(moved: simcache.Result) -> None:
    """Remote hits start with the move; a vMotion without ``vm`` is traffic only: the VM stays on
    host0, no remote hit."""
    records = moved.records
    assert (
        records.loc[records["path"] == "remote_hit", "issue_s"].min()
        >= moved.meta["vmotions"][0]["moved_s"]
    )
    traffic = simcache.simulate(reads_scenario(vm=None), duration=5.0)
    assert set(traffic.records["host"]) == {"host0"} and "remote_hit" not in set(
        traffic.records["path"]
    )
    assert "vm" not in traffic.meta["vmotions"][0]


def test_same_seed_same_records() -> None:
    """Determinism: the same seed gives the same records, bit for bit."""
    one, two = (simcache.simulate(reads_scenario(), duration=5.0) for _ in range(2))
    pd.testing.assert_frame_equal(one.records, two.records, check_exact=True)
    # repr: NaN fields compare equal
    assert repr(one.meta["vmotions"]) == repr(two.meta["vmotions"])


def test_events_table_and_estimate_notes_name_the_move(moved: simcache.Result) -> None:
    """The events table says when the VM moved, how many remote hits it served and when they
    faded; the estimate says it keeps the VM where it was."""
    record = moved.meta["vmotions"][0]
    lines = event_lines(moved)
    line = next(line for line in lines if line.startswith("  vmotion db-h0-0"))
    assert f"moved at {record['moved_s']:.3f} s" in line
    assert (
        f"{record['remote_hits']:,} remote hits" in line
        and f"the last at {record['last_remote_hit_s']:.3f} s" in line
    )
    assert "half of them issued by" in line
    notes = not_modelled(reads_scenario())
    assert any(
        note.startswith("vmotion of db-h0-0 at 4s is followed as traffic only") for note in notes
    )
    assert not not_modelled(reads_scenario(vm=None))


# -- set-up B: writes
# ----------------------------------------------------------------------------------------------

AT_B, END_B, WRITES = 1.0, 3.0, 1000


def writes_scenario(**event: Any) -> simcache.Scenario:
    workload = {
        "mode": "open",
        "iops": WRITES,
        "arrivals": "uniform",
        "read_fraction": 0.0,
        "sizes": "4KiB",
        "working_set": "64MiB",
    }
    spec = small_scenario(
        groups=[{"name": "db", "policy": "WB+1", "hosts": [0], "workload": workload}],
        run={"duration": END_B, "warmup": 0.1, "sample_interval": 0.5},
        cluster={
            "hosts": 3,
            "storage_link": "10GbE",
            "destager": {"capacity": "4GiB", "trigger": "watermarks"},
        },
        array="array-24x15k",
        events=[
            {
                "kind": "vmotion",
                "at": AT_B,
                "source_host": 0,
                "target_host": 1,
                "size": "64MiB",
                "vm": "db-h0-0",
            }
            | event
        ],
    )
    return simcache.load_scenario(spec)


def run_model(scenario: simcache.Scenario) -> Model:
    model = engine.build(scenario, scenario.run.seed)
    model.env.run(until=scenario.run.duration)
    return model


def written(model: Model, keep: Callable[[float, float], bool]) -> int:
    """Bytes of the recorded writes whose (issue, completion) times ``keep`` accepts."""
    return sum(r[2] for r in model.records if r[1] and keep(r[3], r[4]))


@pytest.mark.parametrize("handover", [False, True])
def test_writes_after_the_move_land_on_the_target(handover: bool) -> None:
    """Writes issued after the move enter host1's destager and replicate to host2 (the ring's
    next host from host1); the earlier ones stay buffered on host0 with their replicas on host1
    (no handover), or all but the few still in flight at the move move to host1, host0 keeping
    their copy in host1's place (handover). Nothing is destaged (below the watermark): written =
    buffered, exactly."""
    model = run_model(writes_scenario(handover=handover))
    record = model.vmotions[0]
    when = record["moved_s"]
    source, target, third = model.hosts
    vm = model.vms[0]
    assert vm.host is target and vm.peers == (third,)
    before = written(model, lambda issued, _: issued < when)
    after = written(model, lambda issued, _: issued >= when)
    # in flight at the move: admitted on host0
    late = written(model, lambda issued, completed: issued < when < completed)
    assert before > 0.9 * WRITES * AT_B * 4096 and after > 0.9 * WRITES * (END_B - when) * 4096
    assert record["pending_bytes"] == before - late
    assert target.destager.accepted_bytes == after and third.replica_bytes == after
    if handover:
        assert record["handed_over_bytes"] == before - late
        assert (
            source.destager.backlog_bytes == late
            and target.destager.backlog_bytes == after + before - late
        )
        assert source.replica_bytes == before - late and target.replica_bytes == late
    else:
        assert math.isnan(record["handover_end_s"]) and record["handed_over_bytes"] == 0
        assert source.destager.backlog_bytes == before and target.destager.backlog_bytes == after
        assert target.replica_bytes == before and source.replica_bytes == 0
    accepted = sum(h.destager.accepted_bytes for h in model.hosts)
    assert accepted == before + after == sum(h.destager.backlog_bytes for h in model.hosts)


def test_handover_crosses_the_peer_network() -> None:
    """The handed-over bytes are one flow on host0's idle peer port (the VM now sends its
    replicas from host1, and it does not read): they arrive at moved + wire(bytes) / 1.25 GB/s +
    20 us."""
    scenario = writes_scenario(handover=True)
    model = run_model(scenario)
    record = model.vmotions[0]
    link = scenario.cluster.peer_link
    expected = (
        record["moved_s"]
        + framed_bytes(link, record["pending_bytes"])[0] / link.bandwidth
        + link.latency
    )
    assert record["handover_end_s"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("handover", [False, True])
def test_bytes_are_conserved_with_a_move_and_a_drain(handover: bool) -> None:
    """With the destager draining (trigger always), accepted = destaged + buffered + lost, to the
    byte."""
    scenario = writes_scenario(handover=handover).with_overrides(
        {"cluster.destager.trigger": "always"}
    )
    totals = simcache.simulate(scenario).totals
    assert (
        totals["destage_accepted_bytes"]
        == totals["destaged_bytes"] + totals["destage_backlog_bytes"] + totals["data_lost_bytes"]
    )
    assert totals["destaged_bytes"] > 0


def test_a_moved_closed_loop_vm_outlives_its_old_host() -> None:
    """A closed-loop VM moved to host1 keeps issuing there after host0 fails: its slots follow
    the VM, not the host."""
    workload = {
        "mode": "closed",
        "outstanding": 1,
        "think_time": 0.001,
        "read_fraction": 0.5,
        "sizes": "4KiB",
        "working_set": "16MiB",
    }
    spec = small_scenario(
        groups=[{"name": "db", "policy": "WB+1", "hosts": [0], "workload": workload}],
        run={"duration": 2.0, "warmup": 0.1},
        cluster={"hosts": 3},
        events=[
            {
                "kind": "vmotion",
                "at": 0.5,
                "source_host": 0,
                "target_host": 1,
                "size": "64MiB",
                "vm": "db-h0-0",
            },
            {"kind": "host_failure", "at": 1.0, "host": 0},
        ],
    )
    records = simcache.simulate(simcache.load_scenario(spec)).records
    assert records["issue_s"].max() > 1.9 and set(
        records.loc[records["issue_s"] > 1.0, "host"]
    ) == {"host1"}


# -- validation
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "field", "words"),
    [
        (
            {"vm": "web-h0-0"},
            "events.0.vm",
            "'web-h0-0' names no VM; VMs are named as in the records' vm column: db-h<host>-<k>",
        ),
        ({"vm": "db0"}, "events.0.vm", "names no VM"),
        (
            {"vm": "db-h0-1"},
            "events.0.vm",
            "group 'db' has no VM 'db-h0-1': it places VMs db-h<host>-0 to -0 on hosts [0]",
        ),
        ({"vm": "db-h1-0"}, "events.0.vm", "group 'db' has no VM 'db-h1-0'"),
        (
            {"source_host": 1, "target_host": 0},
            "events.0.source_host",
            "db-h0-0 runs on host0; set source_host = 0",
        ),
        ({"target_host": 0}, "events.0.target_host", "a vMotion needs two different hosts"),
        ({"target_host": 2}, "events.0.target_host", "host index 2 does not exist; hosts are 0..1"),
        ({"vm": None, "handover": True}, "events.0.handover", "a handover needs a VM that moves"),
    ],
)
def test_bad_vmotions_name_field_and_fix(event: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        reads_scenario(**event)
    assert any(path == field and words in message for path, message in caught.value.problems), (
        caught.value.problems
    )


def test_a_second_move_starts_where_the_first_ended() -> None:
    """Two vMotions of one VM: the later one's source is the earlier one's target (or it is
    refused)."""
    back = {"kind": "vmotion", "at": 6.0, "source_host": 1, "target_host": 0, "vm": "db-h0-0"}
    spec = reads_scenario().model_dump(mode="json")
    simcache.load_scenario(spec | {"events": [*spec["events"], back]})
    with pytest.raises(
        ScenarioError, match="after the vMotions of it before this one; set source_host = 1"
    ):
        simcache.load_scenario(
            spec | {"events": [*spec["events"], back | {"source_host": 0, "target_host": 1}]}
        )


def test_a_vm_moved_back_reads_from_where_it_was_last() -> None:
    """Moved back to host0 at 6 s (the 256 MiB cross in 0.226 s again): its I/Os name host0,
    host1, host0 in turn, and the reads host0 misses are served by host1's cache; a write on
    host1 dropped host0's copy of its line, so host0 holds none of the lines the VM wrote while
    away."""
    back = {
        "kind": "vmotion",
        "at": 6.0,
        "source_host": 1,
        "target_host": 0,
        "size": SIZE_A,
        "streams": STREAMS,
        "vm": "db-h0-0",
    }
    spec = reads_scenario().model_dump(mode="json")
    scenario = simcache.load_scenario(spec | {"events": [*spec["events"], back]})
    model = engine.build(scenario, scenario.run.seed)
    # The VM's writes while away are host1's destager's (the group runs on host0 only): those it
    # destaged, then those on their way to the array, then those pending, in the order they were
    # written (order = "arrival"). Logged through the destager's on_destaged hook, which the
    # compiled engine lets a test wrap.
    destager = model.hosts[1].destager
    destaged: list[int] = []
    release = destager.on_destaged

    def logged(item: Any) -> None:
        destaged.append(item[1])
        release(item)

    destager.on_destaged = logged
    model.env.run(until=6.2)  # before the second move: the VM is on host1
    # the pending writes first, then the batches in flight
    buffered = [item[1] for item in destager.buffered()]
    pending = len(destager.untaken(0))
    away = destaged + buffered[pending:] + buffered[:pending]
    assert len(away) > 300
    assert not any(model.hosts[0].cache.holds(0, offset, 4096) for offset in away)
    # the newest are still on host1
    assert all(model.hosts[1].cache.holds(0, offset, 4096) for offset in away[-10:])
    model.env.run(until=scenario.run.duration)
    second = model.vmotions[1]
    assert second["moved_s"] == pytest.approx(6.0 + move_time(scenario) - AT, rel=1e-12)
    assert second["remote_hits"] > 100 and second["last_remote_hit_s"] > second["moved_s"]
    record = engine.record_run(model, seed=scenario.run.seed, wall_time_s=1.0, events=1)
    result = simcache.Result.from_record(record)
    records = result.records.sort_values("issue_s")
    hosts = records["host"].astype(str).to_numpy()
    changes = [hosts[0], *(b for a, b in itertools.pairwise(hosts) if a != b)]
    assert changes == ["host0", "host1", "host0"]


def test_handover_of_an_asynchronous_group_is_refused() -> None:
    spec = writes_scenario().model_dump(mode="json")
    spec["groups"][0]["replication"] = "async"
    spec["events"][0]["handover"] = True
    with pytest.raises(ScenarioError, match="replicates asynchronously"):
        simcache.load_scenario(spec)


def test_no_move_when_the_target_dies_first() -> None:
    """The target fails during the transfer (2 GiB takes 1.8 s on 10GbE): the VM stays on host0,
    the record and the events table say why."""
    spec = small_scenario(
        groups=[
            {
                "name": "db",
                "policy": "WB+1",
                "hosts": [0],
                "workload": {"mode": "open", "iops": 200, "read_fraction": 0.5},
            }
        ],
        run={"duration": 3.0},
        cluster={"hosts": 3},
        events=[
            {
                "kind": "vmotion",
                "at": 0.5,
                "source_host": 0,
                "target_host": 1,
                "size": "2GiB",
                "vm": "db-h0-0",
            },
            {"kind": "host_failure", "at": 1.0, "host": 1},
        ],
    )
    result = simcache.simulate(simcache.load_scenario(spec))
    record = result.meta["vmotions"][0]
    assert record["not_moved"] == "the target host failed" and math.isnan(record["moved_s"])
    assert set(result.records["host"]) == {"host0"}
    assert any("not moved (the target host failed)" in line for line in event_lines(result))
