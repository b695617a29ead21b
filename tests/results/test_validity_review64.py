"""Validity warnings that review 64 found missing or wrong (simcache/results/validity.py and
short_runs.py): a destage backlog filling behind an array at capacity under open-loop writes is
an overload (F7, F2); an array at capacity that shows no growth in a short run is said (F7); a
fill-time note does not contradict a run whose buffers kept up (F10); the hosts alike share one
warning (F10)."""

from __future__ import annotations

import tomllib

import pytest
from support.cluster_2026 import PAGE_SECONDS, cluster_2026

import simcache
from simcache.results.assessed import figure_range, hosts_words
from simcache.results.validity import PINNED, filling_backlogs

# The reviewer's hybrid-array cluster (review 64, in/cluster2026h.toml): its array's 16 GiB
# controller cache takes the destage at memory speed, while the estimate drains the spindles.
HYBRID_2026 = """
name = "cluster2026h"
[run]
duration = "4s"
warmup = "0.4s"
sample_interval = "0.5s"
[cluster]
hosts = 6
tier = "nvme-pm9a3"
peer_link = { profile = "roce-100GbE", bandwidth = "25Gbit/s" }
storage_link = "25GbE"
[cluster.destager]
capacity = "8GiB"
concurrency = 16
max_batch = "1MiB"
[array]
profile = "hybrid-24x18tb-ssd"
[[groups]]
name = "db"
policy = "WB+1"
vms_per_host = 4
[groups.workload]
mode = "open"
iops = 1500
read_fraction = 0.6
sizes = { "8KiB" = 0.8, "64KiB" = 0.2 }
working_set = "50GiB"
access = "zipf"
zipf_theta = 0.9
[[groups]]
name = "app"
policy = "WB+1"
vms_per_host = 10
[groups.workload]
mode = "open"
iops = 300
read_fraction = 0.7
sizes = { "4KiB" = 0.5, "32KiB" = 0.4, "256KiB" = 0.1 }
working_set = "20GiB"
access = "zipf"
"""


def run_2026(db_iops: float) -> simcache.Result:
    """The review's 2026 cluster (support.cluster_2026) for the page's 14 s."""
    return simcache.simulate(cluster_2026(db_iops), seed=1, duration=PAGE_SECONDS)


def kinds(result: simcache.Result) -> list[str]:
    return [w.kind for w in result.warnings]


def test_a_backlog_filling_behind_an_array_at_capacity_under_open_loop_writes_is_an_overload() -> (
    None
):
    """db at 240 IOPS a VM: the array is busy 100% and every host's backlog grows through the
    window (408 -> 1,273 -> 2,305 MiB over 14, 60 and 120 s in the review): the buffers only put
    off the moment writes wait, so the run has no steady state, though every write completed."""
    result = run_2026(240)
    assert not result.stable
    (overload,) = [w for w in result.warnings if w.kind == "overload"]
    assert overload.component == "array" and overload.severity == "unstable"
    assert "destage backlogs of 6 hosts (host0 to host5) grow" in overload.message
    assert "its offered load is above its capacity" in overload.message  # the app merges on it
    # one filling note for the six hosts, their figures as ranges
    (filling,) = [w for w in result.warnings if w.kind == "filling"]
    assert filling.component == ",".join(f"backlog.host{i}" for i in range(6))
    fills = filling_backlogs(result)
    assert [fill.host for fill in fills] == [f"host{i}" for i in range(6)]
    assert all(300 < fill.full_in_s < 900 for fill in fills)
    assert " to " in filling.message.partition("each buffer is full in about ")[2]


def test_closed_loops_filling_a_buffer_behind_a_busy_array_stay_a_short_run() -> None:
    """Closed loops only (a queue-depth lab run): once the buffer is full the writers slow to the
    array's pace, a steady state of its own; the filling buffer is a short run, not an
    overload."""
    scenario = simcache.load_scenario("replication_protocols").variant("qd1")
    result = simcache.simulate(scenario, seed=1)
    assert "filling" in kinds(result)
    assert "overload" not in kinds(result) and result.stable


def test_an_array_at_capacity_under_open_loop_load_is_said_though_nothing_grows() -> None:
    """db at 120 IOPS a VM (the review's single run): the array is 99% busy and reads wait 228 ms
    at the median in 14 s, but no queue or backlog grows (over 120 s the backlogs stay under
    20 MiB). The run cannot tell a queue just under capacity from one a little over it, and its
    read figures are not a steady state (the read median falls to 15 ms by 120 s)."""
    result = run_2026(120)
    assert result.stable
    (pinned,) = [w for w in result.warnings if w.kind == "at_capacity"]
    assert pinned.component == "array" and pinned.severity == "short"
    assert pinned.message.startswith("array is busy 99% of the window: at capacity")
    assert "(groups db, build)" in pinned.message  # the open-loop ones; web is a closed loop
    assert not filling_backlogs(result)


def test_closed_loops_at_capacity_get_no_at_capacity_note() -> None:
    """A queue-depth test keeps its drive busy 100%: bounded by its workers, a steady state."""
    scenario = simcache.load_scenario("validate_hdd_7200_qd")
    result = simcache.simulate(scenario, seed=1, duration=8.0)
    busy = result.series[result.series.index > result.window[0]]["util.array"].mean()
    assert busy >= PINNED
    assert "at_capacity" not in kinds(result)


def test_a_buffer_the_run_shows_keeping_up_behind_a_controller_cache_is_said_so() -> None:
    """The hybrid array: the simulation destages 500 MB/s into the controller cache and no
    backlog builds, while the estimate's fluid model drains the spindles' 0 MB/s. The note says
    both, in one line for the six hosts alike."""
    result = simcache.simulate(simcache.load_scenario(tomllib.loads(HYBRID_2026)), seed=1)
    notes = [w for w in result.warnings if w.kind == "fill_time"]
    assert len(notes) == 1
    (note,) = notes
    assert note.component == ",".join(f"backlog.host{i}" for i in range(6))
    assert note.message.startswith(
        "the destage buffers of 6 hosts (host0 to host5) kept up in this run"
    )
    assert "the array's 16 GiB controller cache takes destaged writes" in note.message
    assert "drains 0 MB/s against 84 MB/s written a host" in note.message
    assert "would then fill in about 102 s" in note.message
    assert "0 MB/s destaged, by the estimate's fluid model" not in note.message


def test_a_buffer_that_drains_between_bursts_keeps_the_models_sustained_figure() -> None:
    """burst_absorb: the run's backlog drains in each rest (at most about 14 MiB), while the
    fluid model, at the peak rate, fills the buffer in 99 s: the note says the run kept up and
    what sustained peak load would do."""
    result = simcache.simulate(simcache.load_scenario("burst_absorb"), seed=1)
    (note,) = [w for w in result.warnings if w.kind == "fill_time"]
    assert note.component == "backlog.host0"
    assert note.message.startswith("host0's destage buffer kept up in this run (its backlog at")
    assert "at the groups' peak rates (23 MB/s written against 12 MB/s destaged)" in note.message
    assert "not for sustained peak load" in note.message


def test_a_buffer_the_run_fills_as_the_model_does_keeps_the_plain_fill_time_note() -> None:
    """interconnect_comparison: its closed loops write 208 MB/s against a 9 MB/s drain, and the
    run's backlog does climb as the model says: the note is the model's fill time."""
    result = simcache.simulate(simcache.load_scenario("interconnect_comparison"), seed=1)
    (note,) = [w for w in result.warnings if w.kind == "fill_time"]
    assert note.message.startswith("the run (2 s) ends before host0's destage buffer could fill")
    assert "kept up" not in note.message


@pytest.mark.parametrize(
    ("hosts", "words"),
    [
        (["host3"], "host3"),
        (["host0", "host1"], "host0 and host1"),
        (["host0", "host1", "host5"], "host0, host1 and host5"),
        ([f"host{i}" for i in range(2, 8)], "6 hosts (host2 to host7)"),
        (["host0", "host2", "host3", "host4", "host9"], "5 hosts (host0, host2, host3 and 2 more)"),
    ],
)
def test_hosts_in_words(hosts: list[str], words: str) -> None:
    assert hosts_words(hosts) == words


def test_figures_that_read_the_same_are_one() -> None:
    assert figure_range([614.2664, 614.2639], lambda v: f"{v:.3g}") == "614"
    assert figure_range([3.4, 3.71, 3.6], lambda v: f"{v:+.1f}") == "+3.4 to +3.7"


def test_a_link_a_vmotion_pins_is_not_called_at_capacity() -> None:
    # The default measured from 10 s: its 4 GiB vMotion (from 10 s, over 1GbE: still copying at
    # 20 s) takes all the peer link leaves, so host0's link is busy 97% or more of the window; a
    # bulk copy fills any link, which says nothing of the VMs' load. The intervals an event spans
    # are left out of the at_capacity rule (the event's own table shows what it did).
    scenario = simcache.load_scenario("default").with_overrides({"run.warmup": "10s"})
    result = simcache.simulate(scenario, seed=1)
    start, end = result.window
    window = result.series[(result.series.index > start) & (result.series.index <= end)]
    assert window["util.host0.peer.tx"].mean() >= PINNED
    assert not [w for w in result.warnings if w.kind == "at_capacity"]
