"""The estimate says what it does not follow (``simcache.estimate.coverage``): events and policies
it leaves out.

A number shown without a simulation must say when an event or a policy of the
scenario is not in it (an honest answer, issue 15; failures, issue 17; the
write-path policies, issue 16). Each note names the field as the file spells it
and which way the figures lean; a scenario without any of them gets no note.
"""

from __future__ import annotations

from support.builders import small_scenario

import simcache
from simcache_app.describe import estimate_sentence

# reads next to writes get the tier's interference note
WRITES_ONLY = {"mode": "open", "iops": 200, "read_fraction": 0.0}


def test_a_plain_scenario_has_no_notes() -> None:
    assert simcache.estimate(small_scenario(workload=WRITES_ONLY)).notes == []


def test_every_left_out_behaviour_is_named() -> None:
    groups = [
        {
            "name": "db",
            "policy": "WB+1",
            "replication": "async",
            "metadata_write": True,
            "workload": {"mode": "open", "iops": 200},
        },
        {
            "name": "log",
            "policy": "WB+0",
            "workload": {"mode": "closed", "outstanding": 4, "sync_serialize": True},
        },
    ]
    cluster = {
        "hosts": 3,
        "peer_selection": "random",
        "peer_link": {"profile": "10GbE", "window": "64KiB"},
        "destager": {"trigger": "watermarks", "pacing": "rate", "rate": "50MB/s", "delay": "2s"},
    }
    events = [
        {"kind": "host_failure", "at": 0.5, "host": 2},
        {"kind": "device_failure", "at": 0.6, "host": 1},
        # its traffic is estimated
        {"kind": "vmotion", "at": 0.1, "source_host": 0, "target_host": 1, "size": "64MiB"},
        {"kind": "peer_loss", "at": 0.2, "host": 1, "duration": 0.1},
        {"kind": "link_down", "at": 0.3, "host": 0, "link": "storage", "duration": "50ms"},
    ]
    notes = simcache.estimate(small_scenario(cluster=cluster, groups=groups, events=events)).notes
    assert notes == [
        "host_failure of host2 at 500ms is not modelled: the estimate keeps every host running, so "
        "the figures are "
        "those before the failure",
        "device_failure of host1 at 600ms is not modelled: the estimate keeps the host's tier, so "
        "its VMs' figures are those before the failure (write-back latencies, read hits), "
        "not write-through to the array",
        "peer_loss of host1 at 200ms for 100ms is not modelled: the estimate keeps the link up, so "
        "write-back groups keep "
        "their replicas (no on_peer_loss fallback) and no resync follows",
        "link_down (storage) of host0 at 300ms for 50ms is not modelled: the estimate keeps the "
        "link up, so neither the "
        "destage backlog built while it is down nor the writes and read misses it holds appear",
        "cluster.destager trigger = 'watermarks', pacing = 'rate', delay = 2s is not modelled: the "
        "estimate destages "
        "at once and unpaced, so its destage backlog is a lower bound and its array load follows "
        "the writes without delay",
        "cluster.peer_selection = 'random' is estimated as 'ring': each host's replicas go to its "
        "next hosts",
        "cluster.peer_link window is not modelled: transfers run at their fair share of the link, "
        "uncapped, so a lone "
        "large transfer is estimated faster than the window allows",
        "group 'db': replication_buffer is not modelled: a closed loop writing faster than its "
        "peer link is estimated "
        "as paced by its local tier, where the buffer fills and the link paces it",
        "group 'db': metadata_batched is not modelled: every write pays its own metadata write, so "
        "under many "
        "outstanding writes the estimate is an upper bound",
        "group 'log': workload.sync_serialize is not modelled: the closed loop keeps its full "
        "depth, so the estimate's "
        "queues are deeper and its throughput higher than one synchronous writer at a time gives",
        # the closed loop of 'log' writes as fast as its tier takes them, faster than the array
        # drains: a backlog
        "cluster.tier.scheduling = 'priority' is estimated as 'fcfs' while the destage backlog "
        "drains: the estimate's "
        "tier wait for VM I/O is an upper bound then",
    ]


def test_slowed_components_are_named() -> None:
    """A degraded or rebuilding array (and each slowed link or tier) is left out: the estimate
    runs everything at full speed, so the latencies and backlog it shows are lower bounds."""
    events = [
        {"kind": "array_degraded", "at": 0.1, "duration": 0.2},
        {"kind": "array_rebuild", "at": 0.4, "duration": "300ms", "rebuild_rate": "50MB/s"},
        {
            "kind": "link_slow",
            "at": 0.2,
            "host": 1,
            "link": "storage",
            "duration": 0.5,
            "fraction": 0.25,
        },
        {"kind": "device_slow", "at": 0.3, "host": 0, "duration": 0.1, "fraction": 0.5},
    ]
    notes = simcache.estimate(small_scenario(workload=WRITES_ONLY, events=events)).notes
    assert notes == [
        "array_degraded at 100ms for 200ms is not modelled: the estimate keeps the array healthy, "
        "so its array latency "
        "and the destage backlog built while the array drains slower are lower bounds",
        "array_rebuild at 400ms for 300ms with a rebuild at 50 MB/s is not modelled: the estimate "
        "keeps the array "
        "healthy, so its array latency and the destage backlog built while the array drains slower "
        "are lower bounds",
        "link_slow of host1 at 200ms for 500ms at 0.25 of its speed is not modelled: the estimate "
        "runs the storage link "
        "at full speed, so its latencies and destage backlog are lower bounds",
        "device_slow of host0 at 300ms for 100ms at 0.5 of its speed is not modelled: the estimate "
        "runs the tier at "
        "full speed, so its latencies and destage backlog are lower bounds",
    ]


def test_priority_scheduling_is_named_only_with_a_destage_backlog() -> None:
    """A write rate past the destager's drain builds a backlog: then the estimate's fcfs tier wait
    is an upper bound.

    Fluid backlog: 3,000 writes/s of 64 KiB = 197 MB/s into a 7200 rpm array behind one 1GbE port
    (at most 125 MB/s), so the buffer grows; at 200 writes/s of 4 KiB (0.8 MB/s) it never does.
    """
    busy = small_scenario(
        workload={"mode": "open", "iops": 3000, "read_fraction": 0.0, "sizes": {"64KiB": 1.0}}
    )
    note = (
        "cluster.tier.scheduling = 'priority' is estimated as 'fcfs' while the destage backlog "
        "drains: the estimate's "
        "tier wait for VM I/O is an upper bound then"
    )
    assert note in simcache.estimate(busy).notes
    busy["cluster"]["tier"] = {"profile": "nvme-p3700-field", "scheduling": "fcfs"}
    assert simcache.estimate(busy).notes == []
    assert simcache.estimate(small_scenario(workload=WRITES_ONLY)).notes == []


def test_the_app_says_what_the_estimate_leaves_out() -> None:
    scenario = simcache.load_scenario(
        small_scenario(
            workload=WRITES_ONLY, events=[{"kind": "host_failure", "at": 0.5, "host": 1}]
        )
    )
    sentence = estimate_sentence(simcache.estimate(scenario), scenario)
    assert sentence.endswith(
        " Not in the estimate: host_failure of host1 at 500ms is not modelled: the estimate keeps "
        "every host running, "
        "so the figures are those before the failure."
    )
