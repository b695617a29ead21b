"""Failures in the native engine against the Python engine: a host dying (``engine/failures.pxi``,
the ``host_dead`` checks of ``engine/drivers.pxi``, ``writes.pxi`` and ``moves.pxi``; in Python
``host_events.host_failure``, ``drivers``, the ``if not host.alive`` of ``vm_paths`` and
``VM.miss_delivered``) with I/Os of every kind in flight on it, its VMs restarted by HA or not, and
the reads that wait for the writes surviving holders took over (``engine/pending.pxi``,
``PendingDestage``): bit-identical records, samples, counters, failure and restart records,
unfinished I/Os and event counts.

Skipped when the extension is not built (install with ``SIMCACHE_NATIVE=1``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.builders import writers_waiting_for_room
from support.native import assert_both_engines_agree, random_examples
from support.paths import ROOT
from support.strategies import valid_scenarios
from support.traces import random_rows, trace_scenario, write_trace

from simcache.sim import native_run
from simcache.sim.collect import DESTAGE_WAIT, IS_WRITE, ISSUED, VM
from simcache.sim.engine import build
from simcache.sim.kernel.clock import run_until
from simcache.sim.record import RunRecord
from simcache.spec import Scenario, load_scenario

pytestmark = [
    pytest.mark.skipif(
        not native_run.available(),
        reason="the native engine is not built (pip install with SIMCACHE_NATIVE=1, Cython 3)",
    ),
    # a write dropped with its host is let go of at once: no generator of the Python engine's is
    # left for a garbage collection to close (which ran its cleanup at no set time, and failed)
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
]

DIES_AT = 0.4
"""When host1 dies in the cases built on :func:`_failure_data`."""


def _library(file: str) -> dict[str, Any]:
    data = load_scenario(ROOT / "scenarios" / file).model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    return data


def _failure_data() -> dict[str, Any]:
    """device_failure.toml in 1 s with its host dying instead: 3 hosts, WB+1 of 16 KiB writes
    (500 a second a VM, 2 VMs a host), destaged 0.2 s after they enter the buffer; host1 dies at
    0.4 s."""
    data = _library("device_failure.toml")
    data["run"] |= {"duration": 1.0, "warmup": 0.0, "sample_interval": 0.1}
    data["cluster"]["destager"] |= {"delay": 0.2}
    data["events"] = [{"kind": "host_failure", "at": DIES_AT, "host": 1}]
    return data


def _as_written(data: dict[str, Any]) -> None:
    del data  # (the case as _failure_data builds it)


def _write_through(data: dict[str, Any]) -> None:
    data["groups"][0] |= {"policy": "WT"}


def _unreplicated(data: dict[str, Any]) -> None:
    data["groups"][0] |= {"policy": "WB+0"}


def _reads_missing(data: dict[str, Any]) -> None:
    # half reads over 8 GiB: nearly every read a miss, from the array over the storage link
    data["groups"][0]["workload"] |= {"read_fraction": 0.5}


def _closed_with_think_time(data: dict[str, Any]) -> None:
    data["groups"][0]["workload"] = {
        "mode": "closed",
        "outstanding": 4,
        "think_time": "0.5ms",
        "read_fraction": 0.5,
        "sizes": "16KiB",
        "working_set": "8GiB",
    }


def _serialized_writers_waiting_for_room(data: dict[str, Any]) -> None:
    # the writer waiting for room holds its VM's turn: dropped with the host, it hands the turn
    # to nobody (the Python engine's generator closed at once, not at a garbage collection)
    writers_waiting_for_room(data)
    data["groups"][0]["workload"] |= {"sync_serialize": True}
    data["groups"][0] |= {"policy": "WB+2", "on_peer_loss": "degrade"}


def _stalled_then_died(data: dict[str, Any]) -> None:
    # host0's tier fails first: the others' VMs lose a peer and stall; then host2 dies under its
    # stalled writes
    data["groups"][0] |= {"policy": "WB+2", "on_peer_loss": "stall"}
    data["events"] = [
        {"kind": "device_failure", "at": 0.1, "host": 0},
        {"kind": "host_failure", "at": DIES_AT, "host": 2},
    ]


def _degrading(data: dict[str, Any]) -> None:
    data["groups"][0] |= {"policy": "WB+2", "on_peer_loss": "degrade"}


def _the_adopter_dies_next(data: dict[str, Any]) -> None:
    # host2 adopts host1's writes at 0.4 s, then dies itself before destaging them
    data["cluster"]["hosts"] = 4
    data["events"].append({"kind": "host_failure", "at": 0.5, "host": 2})


def _behind_a_link_down(data: dict[str, Any]) -> None:
    # host1's misses, write-through writes and flushers wait for its storage port when it dies
    data["groups"][0] |= {"policy": "WT"}
    data["groups"][0]["workload"] |= {"read_fraction": 0.5}
    data["events"].append(
        {"kind": "link_down", "at": 0.3, "host": 1, "link": "storage", "duration": 0.3}
    )


def _serialized_with_metadata(data: dict[str, Any]) -> None:
    data["groups"][0] |= {"metadata_write": True}
    data["groups"][0]["workload"] |= {"sync_serialize": True}


def _moved_then_died(data: dict[str, Any]) -> None:
    # write-through reads: host0's first VM moves to host1 at 0.2 s and reads host0's cache on a
    # miss (remote hits) until host1 dies under them
    data["groups"][0] |= {"policy": "WT"}
    data["groups"][0]["workload"] |= {"read_fraction": 0.9, "working_set": "4MiB"}
    data["events"].append(
        {"kind": "vmotion", "at": 0.1, "source_host": 0, "target_host": 1}
        | {"size": "64MiB", "vm": "db-h0-0"}
    )


def _old_host_died(data: dict[str, Any]) -> None:
    # as above, but the old host whose cache served the remote hits dies
    _moved_then_died(data)
    data["events"][0] |= {"host": 0}


CHANGES = [
    _as_written,
    _write_through,
    _unreplicated,
    _reads_missing,
    _closed_with_think_time,
    writers_waiting_for_room,
    _serialized_writers_waiting_for_room,
    _stalled_then_died,
    _degrading,
    _the_adopter_dies_next,
    _behind_a_link_down,
    _serialized_with_metadata,
    _moved_then_died,
    _old_host_died,
]


LOSING = {
    _reads_missing,
    _closed_with_think_time,
    writers_waiting_for_room,
    _serialized_writers_waiting_for_room,
    _stalled_then_died,
    _behind_a_link_down,
}
"""The cases that are sure to have I/Os in flight on the host when it dies (the others' I/Os take
tens of microseconds each)."""


def _lost_with_the_host(record: RunRecord, fields: list[np.ndarray]) -> int:
    """I/Os issued but neither completed nor unfinished: those that failed, and those in flight
    on a host that died (the run's unfinished I/Os leave its VMs out)."""
    return record.counters.issued_ios - len(fields[ISSUED]) - len(record.unfinished)


@pytest.mark.parametrize("change", CHANGES, ids=lambda change: change.__name__.strip("_"))
def test_a_host_failure_without_a_restart_runs_natively(
    change: Callable[[dict[str, Any]], None],
) -> None:
    """A host dying (no HA restart) with I/Os of each kind in flight on it: read misses, write-
    through and write-back writes, writers waiting for buffer room (dropped with the host), writes
    stalled short of peers, degrading writes, serialized writes with metadata records, I/Os
    waiting for a storage port that is down, remote hits after a vMotion; closed loops (with a
    think time) and open loops. Both engines agree bit for bit, the dead host's VMs issue nothing
    after its death, and I/Os were lost with it."""
    data = _failure_data()
    change(data)
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    _, native, fields = assert_both_engines_agree(scenario)
    assert native.run_by == native_run.NATIVE
    deaths = {e.host: e.at for e in scenario.events if e.kind == "host_failure"}
    assert [failure["kind"] for failure in native.failures].count("host_failure") == len(deaths)
    hosts = {vm.index: vm.host.index for vm in build(scenario, 1).vms}
    if change is _moved_then_died:  # (the first VM moved to host1 before it died)
        hosts[0] = 1
    if change is _old_host_died:  # (the first VM left host0 before it died)
        hosts[0] = 1
    for vm, host in hosts.items():
        if host in deaths:
            issued = fields[ISSUED][fields[VM] == vm]
            assert not np.any(issued > deaths[host]), f"VM {vm} issued after its host died"
    assert np.any(fields[ISSUED] > max(deaths.values())), "the survivors go on"
    if change in LOSING:
        assert _lost_with_the_host(native, fields) > 0
    if change in (writers_waiting_for_room, _serialized_writers_waiting_for_room):
        assert native.failures[0]["unacknowledged_bytes"] > 0
    if change in (_moved_then_died, _old_host_died):
        assert native.vmotions[0]["remote_hits"] > 0


def test_the_ha_scenario_without_its_restart_runs_natively() -> None:
    """host_failure_ha.toml with no HA restart (6 s): host1 and its two open-loop VMs die at 4 s;
    the survivors' VMs lose their peer there and re-peer; the same run in both engines."""
    data = _library("host_failure_ha.toml")
    del data["events"][0]["restart_delay"]
    data["run"]["duration"] = 6.0
    scenario = load_scenario(data)
    native = assert_both_engines_agree(scenario)[1]
    assert native.run_by == native_run.NATIVE
    assert [failure["kind"] for failure in native.failures] == ["host_failure"]
    assert not native.restarts


@pytest.mark.parametrize("replay", ["open", "closed"])
@pytest.mark.parametrize("policy", ["WB+1", "WT"])
def test_a_replay_on_a_host_that_dies(tmp_path: Path, replay: str, policy: str) -> None:
    """A trace replayed on host0, which dies mid-trace: the same records in both engines, and the
    stream left at the same row (an open replay reads the row of its first arrival after the
    death, then ends; a closed one's slots stop before reading another)."""
    rows = random_rows(3000, seed=3, rate=400.0)
    trace = write_trace(tmp_path / "vm.csv", rows)
    base = trace_scenario(trace, duration=rows[-1][0] + 1.0, policy=policy, replay=replay)
    data = base.model_dump(mode="json")
    # mid-trace: an open replay at its 1,500th row's time, a closed one (back to back, faster
    # than the trace's times) early
    dies = rows[1500][0] if replay == "open" else 0.5
    data["events"] = [{"kind": "host_failure", "at": dies, "host": 0}]
    scenario = load_scenario(data)
    _, native, fields = assert_both_engines_agree(scenario)
    assert 10 < len(fields[ISSUED]) < len(rows) - 100
    left = [_rows_left(scenario, native) for native in (False, True)]
    dropped = 1 if replay == "open" else 0
    assert left[0] == left[1] == len(rows) - native.counters.issued_ios - dropped


def _rows_left(scenario: Scenario, native: bool) -> int:
    """The rows the replay has not read at the run's end, run by the engine asked for."""
    model = build(scenario, scenario.run.seed, native=native)
    assert (model.native is not None) == native
    if native:
        assert native_run.run(model, scenario.run.duration)
    else:
        run_until(model.clock, scenario.run.duration)
    stream = model.vms[0].stream
    left = 0
    while stream.next_io() is not None:
        left += 1
    return left


def test_the_selector_names_what_a_host_failure_lacks() -> None:
    data = _failure_data()
    assert native_run.unsupported(load_scenario(data)) is None
    data["events"][0]["restart_delay"] = 0.1
    assert native_run.unsupported(load_scenario(data)) is None
    data["cluster"]["cache"] = {"warm": True}
    assert native_run.unsupported(load_scenario(data)) == (
        "scheduled event 'host_failure' with an HA restart and warm caches"
    )
    del data["cluster"]["cache"]
    data["events"][0].pop("restart_delay")
    data["groups"][0] |= {"replication": "async"}
    assert native_run.unsupported(load_scenario(data)) == (
        "scheduled event 'host_failure' with write-back writes and asynchronous replication"
    )


@st.composite
def _dying_hosts(draw: st.DrawFn) -> Scenario:
    """The property tests' small random scenarios (tests/support/strategies.py: 2-4 hosts, 1-3
    groups of open or closed loops, any policy, access, size mix, tier, array) 0.3 s long, with a
    host dying at 0.1 or 0.2 s, its VMs restarted by HA at once, 50 ms later or not at all, and no
    other event; replication synchronous or in memory (the native engine lacks a failure beside
    asynchronous replicas)."""
    data = draw(valid_scenarios())
    for group in data["groups"]:
        if group.get("replication") == "async":
            del group["replication"]
    data["run"] |= {"duration": 0.3, "sample_interval": 0.1}
    data["events"] = [
        {
            "kind": "host_failure",
            "at": draw(st.sampled_from([0.1, 0.2])),
            "host": draw(st.integers(0, data["cluster"]["hosts"] - 1)),
        }
    ]
    if draw(st.booleans()):  # vSphere HA restarts its VMs on the survivors
        data["events"][0]["restart_delay"] = draw(st.sampled_from([0.0, 0.05]))
    return load_scenario(data)


@random_examples(12)
@given(_dying_hosts())
def test_random_scenarios_with_a_host_dying_are_bit_identical(scenario: Scenario) -> None:
    native = assert_both_engines_agree(scenario)[1]
    assert native.run_by == native_run.NATIVE


def _closed_loops(data: dict[str, Any]) -> None:
    """The open loops (500 I/Os a second a VM) as closed ones at about the same rate: 2 slots,
    4 ms of think time."""
    data["groups"][0]["workload"] |= {"mode": "closed", "outstanding": 2, "think_time": "4ms"}
    del data["groups"][0]["workload"]["iops"]


def _reading_back_what_it_wrote(data: dict[str, Any]) -> None:
    """device_failure.toml in 1 s, host1's flash failing at 0.4 s, its VMs reading half the time
    what they wrote (16 KiB over 4 MiB, 4 KiB blocks: a read overlaps one or two of the writes host2
    took over, which it destages 0.2 s later)."""
    data["events"] = [{"kind": "device_failure", "at": DIES_AT, "host": 1}]
    data["groups"][0]["workload"] |= {"read_fraction": 0.5, "working_set": "4MiB"}


def _reading_back_closed(data: dict[str, Any]) -> None:
    _reading_back_what_it_wrote(data)
    _closed_loops(data)


def _reading_back_unreplicated(data: dict[str, Any]) -> None:
    # WB+0: nothing taken over (the backlog is lost): no read waits
    _reading_back_what_it_wrote(data)
    data["groups"][0] |= {"policy": "WB+0"}


def _reading_back_when_the_adopter_fails(data: dict[str, Any]) -> None:
    # host2 takes host1's writes over at 0.4 s and fails at 0.5 s before destaging them: the
    # reads waiting for them are told (PendingDestage.holder_failed), host3 takes them over
    _reading_back_what_it_wrote(data)
    data["cluster"]["hosts"] = 4
    data["groups"][0] |= {"policy": "WB+2"}
    data["events"].append({"kind": "device_failure", "at": 0.5, "host": 2})


def _reading_back_behind_a_link_down(data: dict[str, Any]) -> None:
    # host1's storage port is down when the first waits end: those reads wait for it too
    _reading_back_what_it_wrote(data)
    data["events"].append(
        {"kind": "link_down", "at": 0.55, "host": 1, "link": "storage", "duration": 0.2}
    )


@pytest.mark.parametrize(
    "change",
    [
        _reading_back_what_it_wrote,
        _reading_back_closed,
        _reading_back_unreplicated,
        _reading_back_when_the_adopter_fails,
        _reading_back_behind_a_link_down,
    ],
    ids=lambda change: change.__name__.strip("_"),
)
def test_reads_wait_for_the_taken_over_writes_natively(
    change: Callable[[dict[str, Any]], None],
) -> None:
    """A failed device's VMs read what they wrote: a read miss overlapping writes a surviving
    holder took over waits until the holder has destaged them all (for one write's signal, or for
    an AllOf of several), then reads the array; the wait is its destage-wait component. The
    engines agree bit for bit, and reads waited (none where nothing was taken over)."""
    data = _failure_data()
    change(data)
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    native, fields = assert_both_engines_agree(scenario)[1:]
    assert native.run_by == native_run.NATIVE
    failed_vms = [2, 3]  # host1's
    # (the path shares the flags byte)
    reads = ((fields[IS_WRITE] & 1) == 0) & np.isin(fields[VM], failed_vms)
    waited = reads & (fields[DESTAGE_WAIT] > 0)
    if change is _reading_back_unreplicated:
        assert not np.any(waited)
    else:
        # (each of the closed loop's two slots a VM waits a while)
        assert np.count_nonzero(waited) >= (3 if change is _reading_back_closed else 10)
        # up to the holder's destager delay and its batch's trip to the array (within 0.1 s)
        delay = scenario.cluster.destager.delay
        assert float(fields[DESTAGE_WAIT][waited].max()) < (delay + 0.1) * 1e3  # ms


def _restarted(data: dict[str, Any]) -> None:
    """host1 dies at 0.4 s and HA restarts its VMs 0.1 s later on host2 and host0 (cold caches,
    reads missing, the writes host2 took over from host1 waited for)."""
    data["events"][0]["restart_delay"] = 0.1
    data["groups"][0]["workload"] |= {"read_fraction": 0.5, "working_set": "4MiB"}


def _restarted_closed(data: dict[str, Any]) -> None:
    # new closed-loop slots on the new hosts; the old ones stop at their next I/O
    _restarted(data)
    _closed_loops(data)


def _restarted_at_once(data: dict[str, Any]) -> None:
    # restarted the moment the host dies, its old slots' reads still on their way from the HDD
    # array: each old slot stops when its read ends (its VM's life changed), the new ones run
    _restarted_closed(data)
    data["events"][0]["restart_delay"] = 0.0
    data["groups"][0]["workload"] |= {"working_set": "8GiB"}
    data["array"] = {"profile": "array-14x7200"}


def _restarted_serialized(data: dict[str, Any]) -> None:
    # the writers waiting for their turn on the dead host forgotten at the restart
    _restarted_closed(data)
    data["groups"][0]["workload"] |= {"sync_serialize": True, "outstanding": 4}
    data["groups"][0] |= {"metadata_write": True}


def _restarted_write_through(data: dict[str, Any]) -> None:
    _restarted(data)
    data["groups"][0] |= {"policy": "WT"}


def _restarted_twice(data: dict[str, Any]) -> None:
    # 4 hosts, WB+2: host1 dies (its VMs restarted on host2 and host3), then host2 with a
    # restarted VM on it (restarted again, on host3 and host0)
    _restarted(data)
    data["cluster"]["hosts"] = 4
    data["groups"][0] |= {"policy": "WB+2"}
    data["events"].append({"kind": "host_failure", "at": 0.6, "host": 2, "restart_delay": 0.05})


def _restarted_nowhere(data: dict[str, Any]) -> None:
    # WB+0 on 2 hosts: host1 dies, then host0 before the restart: nowhere to run, the open
    # loops end at their next arrival
    _restarted(data)
    data["cluster"]["hosts"] = 2
    data["groups"][0] |= {"policy": "WB+0"}
    data["events"].append({"kind": "host_failure", "at": 0.45, "host": 0})


@pytest.mark.parametrize(
    "change",
    [
        _restarted,
        _restarted_closed,
        _restarted_at_once,
        _restarted_serialized,
        _restarted_write_through,
        _restarted_twice,
        _restarted_nowhere,
    ],
    ids=lambda change: change.__name__.strip("_"),
)
def test_an_ha_restart_runs_natively(change: Callable[[dict[str, Any]], None]) -> None:
    """HA restarts a dead host's VMs on the survivors: their open loops drop (and count) the
    arrivals while they are down, their closed loops start new slots there, their I/Os then take
    the new host's tier, cache, destager and peers, their misses wait for the writes holders took
    over; the engines agree bit for bit, restart records too."""
    data = _failure_data()
    change(data)
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    native, fields = assert_both_engines_agree(scenario)[1:]
    assert native.run_by == native_run.NATIVE
    restarted = {restart["vm_index"] for restart in native.restarts}
    if change is _restarted_nowhere:
        assert not restarted
        return
    assert restarted
    after = fields[ISSUED] > DIES_AT + 0.1
    assert np.all(np.isin(sorted(restarted), fields[VM][after])), "each restarted VM runs again"
    if "iops" in data["groups"][0]["workload"]:  # an open loop: arrivals dropped meanwhile
        assert all(restart["dropped_arrivals"] > 0 for restart in native.restarts)


def test_the_ha_scenario_runs_natively() -> None:
    """host_failure_ha.toml as written (8 s; its checks in tests/scenarios): the same run in both
    engines, two VMs restarted, 100 arrivals each dropped while they were down."""
    scenario = load_scenario(ROOT / "scenarios" / "host_failure_ha.toml")
    native = assert_both_engines_agree(scenario)[1]
    assert native.run_by == native_run.NATIVE
    assert [restart["dropped_arrivals"] for restart in native.restarts] == [100, 100]
