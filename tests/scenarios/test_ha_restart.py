"""HA restart after a host failure (issue 17): ``host_failure`` with ``restart_delay``.

Set-up: three hosts, two WB+1 VMs on each, every VM issuing 200 I/Os per second (uniform arrivals:
evenly spaced, 5 ms apart, so a window of T seconds holds 200 T arrivals up to one at either end),
half reads, 4 KiB, uniform over a 1 MiB working set cached in 4 KiB lines (N = 256 lines, one per
I/O). Every destager holds a write 1 s before it may take it (``delay``), so nothing reaches the
array before 1 s. host1 dies at 1 s and HA restarts its two VMs 0.5 s later, round-robin over the
live hosts in ring order from host1: db-h1-0 on host2 (the holder of its replicas, which took over
its buffered writes) and db-h1-1 on host0 (its buffered writes were taken over by host2 too: its
ring peer). Fast 10GbE storage links and a 24 x 15K array.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from support.ha_restart import AT, DELAY, END, HOLD, RATE, scenario
from support.traces import random_rows, trace_scenario, write_trace

import simcache
from simcache.report.event_report import event_lines
from simcache.sim import engine
from simcache.spec import HostFailure

RESTART = AT + DELAY
LINES = 256  # 1 MiB working set in 4 KiB lines
MOVED = {"db-h1-0": "host2", "db-h1-1": "host0"}


@pytest.fixture(scope="module")
def result() -> simcache.Result:
    return simcache.simulate(scenario())


def of(result: simcache.Result, vm: str) -> pd.DataFrame:
    records = result.records
    return records[records["vm"] == vm].sort_values("issue_s")


def test_restarted_vms_issue_nothing_during_the_delay_and_drop_its_arrivals(
    result: simcache.Result,
) -> None:
    """Open loop: the arrivals that find the VM down are dropped, not delayed: DELAY x RATE = 100
    of them (up to one at either end), none issued; after the restart the stream goes on at its
    rate, 200 x 6.5 = 1,300 arrivals issued to the end (up to one, and less those still
    unfinished there)."""
    restarts = {r["vm"]: r for r in result.meta["restarts"]}
    assert set(restarts) == set(MOVED)
    for vm in MOVED:
        records = of(result, vm)
        assert not ((records["issue_s"] >= AT) & (records["issue_s"] < RESTART)).any()
        assert abs(restarts[vm]["dropped_arrivals"] - DELAY * RATE) <= 1
        after = int((records["issue_s"] >= RESTART).sum())
        unfinished = int((result.unfinished["vm"] == vm).sum())
        assert abs(after + unfinished - (END - RESTART) * RATE) <= 1


def test_restarted_vms_run_on_the_next_live_hosts_round_robin(result: simcache.Result) -> None:
    """Records name the host each I/O ran on: host1 before the failure, the restart host from the
    restart on."""
    for vm, host in MOVED.items():
        restart = next(r for r in result.meta["restarts"] if r["vm"] == vm)
        assert (restart["from_host"], restart["to_host"], restart["restart_s"]) == (
            "host1",
            host,
            RESTART,
        )
        records = of(result, vm)
        before = records[records["issue_s"] < AT]
        after = records[records["issue_s"] >= RESTART]
        assert len(before) >= (AT * RATE) - 2 and set(before["host"]) == {"host1"}
        assert set(after["host"]) == {host}
    host1 = result.records[result.records["host"] == "host1"]
    assert host1["issue_s"].max() < AT


def test_restarted_reads_start_cold_and_warm_up(result: simcache.Result) -> None:
    """Cold cache on the new host: it holds none of the VM's lines at the restart, and each I/O
    (a write, or a read miss when it fills) caches the one line it touches, uniform over N = 256.
    So the read that is the VM's j-th I/O since the restart hits with probability p_j = 1 - (1 -
    1/N)^(j - 1) (0 for the first: cold). Over the reads of a window the hits are a sum of
    independent Bernoulli draws: mean sum p_j, variance sum p_j (1 - p_j); we allow 4 standard
    deviations plus 1 (a miss caches its line only when it completes, about 2 ms later, which can
    turn an expected hit into a miss: at 200 I/Os per second less than one I/O per miss falls in
    that gap). Before the restart (j <= 100 per VM in 0.5 s) the hit ratio is below 1 - (1 -
    1/256)^100 = 0.32, by the end (j > 1,100) it is above 0.986."""
    for vm in MOVED:
        after = of(result, vm)
        after = after[after["issue_s"] >= RESTART].reset_index(drop=True)
        j = np.arange(1, len(after) + 1)
        p = 1.0 - (1.0 - 1.0 / LINES) ** (j - 1)
        reads = (after["op"] == "read").to_numpy()
        hits = (after["path"] == "hit").to_numpy()
        first_read = int(np.argmax(reads))
        if first_read == 0:
            assert not hits[0]  # the very first I/O after the restart: nothing cached
        for window in (j <= 100, j > 1100):
            chosen = window & reads
            expected = float(p[chosen].sum())
            sigma = math.sqrt(float((p[chosen] * (1 - p[chosen])).sum()))
            assert abs(int(hits[chosen].sum()) - expected) <= 4 * sigma + 1, (vm, expected, sigma)
        early = hits[(j <= 100) & reads].mean()
        late = hits[(j > 1100) & reads].mean()
        assert early < 0.32 < 0.986 < late


def test_reads_of_blocks_pending_on_the_holder_wait_for_their_destage(
    result: simcache.Result,
) -> None:
    """host2 took over everything host1's VMs had written before the failure (the 1 s destager
    delay kept it all buffered: handed-over bytes = their bytes written before 1 s, to the byte).
    Those writes entered host2's buffer at 1 s, so none reaches the array before 1 s + 1 s = 2 s:
    a restarted VM's read miss of one of those blocks waits until then (its ``destage_wait_ms``),
    a read of another block does not wait. Reads issued from 3 s on, when host2's backlog of them
    is long destaged, wait for nothing."""
    failure = result.meta["failures"][0]
    written_before = sum(
        int(of(result, vm).query("op == 'write' and issue_s < @AT")["size_bytes"].sum())
        for vm in MOVED
    )
    assert failure["handed_over_bytes"] == written_before > 0
    assert failure["lost_bytes"] == 0
    records = result.records
    waited = records[records["destage_wait_ms"] > 0]
    reads = waited[waited["op"] == "read"]
    assert len(reads) > 0
    assert set(reads["vm"]) == set(MOVED)
    assert set(reads["path"]) == {"miss"}
    assert reads["issue_s"].min() >= RESTART
    assert reads["complete_s"].min() >= AT + HOLD
    assert (reads["destage_wait_ms"] / 1e3 >= AT + HOLD - reads["issue_s"] - 1e-12).all()
    late = records[(records["op"] == "read") & (records["issue_s"] >= 3.0)]
    assert (late["destage_wait_ms"] == 0).all()
    misses = records[
        (records["vm"].isin(list(MOVED)))
        & (records["path"] == "miss")
        & (records["issue_s"] < AT + HOLD)
    ]
    # misses of blocks not taken over go straight to the array
    assert (misses["destage_wait_ms"] == 0).any()


def test_the_holder_forgets_each_taken_over_write_once_destaged() -> None:
    """At the restart, the registry of taken-over writes holds each restarted VM's bytes written
    before the failure (all still buffered: the 1 s delay); at the end none is left. Each waiting
    read stops waiting at a moment host2 (the holder) destaged a write of that VM, and none
    before 2 s."""
    model = engine.build(scenario(), 5)
    holder = model.hosts[2].destager
    destaged: dict[int, set[float]] = {}
    report = holder.on_destaged

    def logged(item: Any) -> None:
        destaged.setdefault(item[0], set()).add(model.env.now)
        report(item)

    holder.on_destaged = logged
    model.env.run(until=RESTART + 1e-9)
    registry = model.pending_destage
    assert registry is not None
    records = pd.DataFrame(model.records, columns=["vm", "is_write", "size", "issued", *range(7)])
    for vm in model.vms:
        if vm.name in MOVED:
            written = int(
                records.query("vm == @vm.index and is_write and issued < @AT")["size"].sum()
            )
            assert registry.pending_bytes(vm.index) == written > 0
            assert vm.host.name == MOVED[vm.name]
    lines = {vm.index: len(registry.extents(vm.index)) for vm in model.vms if vm.name in MOVED}
    model.env.run(until=END)
    assert all(registry.pending_bytes(vm.index) == 0 for vm in model.vms)
    waits = [(r[0], r[3] + r[8]) for r in model.records if not r[1] and r[8] > 0]
    assert waits
    for vm, until in waits:
        assert until >= AT + HOLD
        assert min(abs(until - t) for t in destaged[vm]) < 1e-9
    # How many reads wait. A read the VM issues before 2 s touches one of the N lines, uniformly; it
    # waits if that line is one of the L_v taken over (distinct 4 KiB extents: one line each) and
    # the VM has not rewritten it since the restart (the rewrite is in its new cache: a hit). With w
    # writes before it since the restart, P(wait) = (L_v / N) (1 - 1/N)^w (reads of a waiting line
    # do not fill the cache before 2 s). Independent draws: mean sum P, variance sum P (1 - P), 4
    # standard deviations allowed.
    for index, taken in lines.items():
        ios = sorted(
            (r[3], r[1], r[8] > 0)
            for r in model.records
            if r[0] == index and RESTART <= r[3] < AT + HOLD
        )
        chances, waited, writes = [], 0, 0
        for _, is_write, did_wait in ios:
            if is_write:
                writes += 1
                continue
            chances.append(taken / LINES * (1 - 1 / LINES) ** writes)
            waited += did_wait
        mean = sum(chances)
        sigma = math.sqrt(sum(p * (1 - p) for p in chances))
        assert abs(waited - mean) <= 4 * sigma, (index, waited, mean, sigma)


def test_bytes_are_conserved_with_a_restart(result: simcache.Result) -> None:
    """Accepted = destaged + still buffered + lost, to the byte; nothing is lost under WB+1."""
    t = result.totals
    assert (
        t["destage_accepted_bytes"]
        == t["destaged_bytes"] + t["destage_backlog_bytes"] + t["data_lost_bytes"]
    )
    assert t["data_lost_bytes"] == 0


def test_closed_loop_vms_restart_too() -> None:
    """Closed loop: the VM's slots end with its host and new ones start at the restart (nothing
    is dropped: a closed loop issues only when it is running)."""
    result = simcache.simulate(scenario("closed"))
    for vm, host in MOVED.items():
        records = of(result, vm)
        assert not ((records["issue_s"] >= AT) & (records["issue_s"] < RESTART)).any()
        after = records[records["issue_s"] >= RESTART]
        assert set(after["host"]) == {host}
        assert after["issue_s"].min() == RESTART
    assert all(r["dropped_arrivals"] == 0 for r in result.meta["restarts"])


def test_without_restart_delay_the_vms_stay_down() -> None:
    """No ``restart_delay``: no HA, as before: host1's VMs issue nothing after the failure and no
    restart is recorded."""
    spec = scenario()
    event = spec.events[0].model_copy(update={"restart_delay": None})
    result = simcache.simulate(spec.model_copy(update={"events": [event]}))
    assert result.meta["restarts"] == []
    for vm in MOVED:
        assert of(result, vm)["issue_s"].max() < AT


@pytest.mark.parametrize(
    ("delay", "message"),
    [
        (-1, "must be at least 0 (got -1)"),
        (
            7,
            "the restart at 8s (1s + 7s) is not inside the run (0 to 8s); shorten restart_delay or "
            "lengthen run.duration",
        ),
    ],
)
def test_restart_delay_is_validated(delay: float, message: str) -> None:
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(restart_delay=delay)
    assert ("events.0.restart_delay", message) in raised.value.problems


def test_the_events_table_names_the_restart(result: simcache.Result) -> None:
    """``simcache run``'s events table: one line for the restart of host1's two VMs, with the
    arrivals dropped."""
    dropped = sum(r["dropped_arrivals"] for r in result.meta["restarts"])
    line = "  HA restart of 2 VMs of host1 at 1.500 s: db-h1-0 on host2, db-h1-1 on host0"
    assert f"{line}; {dropped} open-loop arrivals dropped while down" in event_lines(result)


def test_a_second_failure_moves_a_restarted_vm_again() -> None:
    """host2 dies at 3 s with HA too: its VMs (db-h1-0, restarted there at 1.5 s, among them)
    restart on host0, the only live host, 0.5 s later; bytes stay conserved. host0 held their
    replicas and took over their buffered writes at 3 s, so their read misses that wait stop
    waiting at 3 s + 1 s (the destager delay) or later."""
    spec = scenario()
    second = spec.events[0].model_copy(update={"at": 3.0, "host": 2})
    result = simcache.simulate(spec.model_copy(update={"events": [spec.events[0], second]}))
    moves = [
        (r["vm"], r["from_host"], r["to_host"], r["restart_s"]) for r in result.meta["restarts"]
    ]
    assert ("db-h1-0", "host2", "host0", 3.5) in moves
    records = of(result, "db-h1-0")
    assert set(records.loc[records["issue_s"] >= 3.5, "host"]) == {"host0"}
    assert set(
        records.loc[(records["issue_s"] >= RESTART) & (records["issue_s"] < 3.0), "host"]
    ) == {"host2"}
    t = result.totals
    assert (
        t["destage_accepted_bytes"]
        == t["destaged_bytes"] + t["destage_backlog_bytes"] + t["data_lost_bytes"]
    )
    waited = result.records.query("op == 'read' and issue_s >= 3.5 and destage_wait_ms > 0")
    assert len(waited) > 0
    assert set(waited["vm"]) <= {"db-h1-0", "db-h2-0", "db-h2-1"}
    assert waited["complete_s"].min() >= 3.0 + HOLD


def test_an_open_replay_drops_the_traced_ios_of_the_delay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An open trace replay on host0 (3,000 I/Os at about 200 per second, test_replay's random
    trace), host0 dead at 4 s and restarted 1 s later on host1: the traced I/Os stamped in [4 s,
    5 s) are dropped, exactly as many as the trace holds there; every one stamped from 5 s on is
    issued at its own time on host1."""
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))
    rows = random_rows(3000, seed=3)
    times = np.array([row[0] for row in rows]) - rows[0][0]
    spec = trace_scenario(write_trace(tmp_path / "vm.csv", rows), duration=float(times[-1]) + 1.0)
    event = {"kind": "host_failure", "at": 4.0, "host": 0, "restart_delay": 1.0}
    result = simcache.simulate(
        spec.model_copy(update={"events": [HostFailure.model_validate(event)]})
    )
    (restart,) = result.meta["restarts"]
    assert (restart["to_host"], restart["dropped_arrivals"]) == (
        "host1",
        int(((times >= 4.0) & (times < 5.0)).sum()),
    )
    after = result.records[result.records["issue_s"] >= 5.0].sort_values("issue_s")
    assert set(after["host"]) == {"host1"}
    expected = times[times >= 5.0]
    assert len(after) + len(result.unfinished) == len(expected)
    assert np.max(np.abs(after["issue_s"].to_numpy() - expected[: len(after)])) <= 1e-9
