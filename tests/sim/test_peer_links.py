"""Several peer-network ports per host (``cluster.peer_links``).

The model (docs/model.md, "Link and flow network"): each host has
``peer_links`` ports of the ``peer_link`` profile. Every transfer between two
hosts uses one port pair, chosen per (sender, receiver) as per-destination
hashing would: host A sends to the host ``d`` steps ahead of it around the
ring on its port ``k = (d - 1) mod peer_links`` and the receiver takes it on
its port ``k``. So

- one flow, and all the traffic of one host pair, never gets more than one
  port's line rate C: a lone transfer of ``w`` framed bytes takes
  ``latency + w / C`` whatever the port count;
- WB+2 on a ring sends a write's two replicas (d = 1 and d = 2) on two
  different ports, which doubles the write rate the peer network carries;
- a vMotion's streams go round-robin over the ports (multi-NIC vMotion).

Utilizations are read from ``Result.series`` (``util.<port>``), bytes carried
by a port from utilization x line rate x interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.builders import PEER_BOUND_ARRAY, peer_bound_cluster

import simcache
from simcache.physics.cluster import ACK_BYTES, framed_bytes
from simcache.sim.engine import build

SIZE = 1024**2  # bytes of every write in these tests
SIZE_TEXT = "1MiB"


def scenario(hosts: int, links: int, policy: str = "WB+1", **workload: Any) -> dict[str, Any]:
    """One VM on host0 writing 1 MiB blocks in an open loop; RAM tiers and a fast array keep the
    peer network the only limit."""
    spec: dict[str, Any] = {
        "name": "peer-links",
        "run": {"duration": "2s", "sample_interval": "0.25s"},
        "cluster": peer_bound_cluster(hosts, links),
        "array": PEER_BOUND_ARRAY,
        "groups": [
            {
                "name": "w",
                "policy": policy,
                "hosts": [0],
                "workload": {
                    "mode": "open",
                    "iops": 2,
                    "arrivals": "uniform",
                    "sizes": SIZE_TEXT,
                    "working_set": "8GiB",
                },
            }
        ],
    }
    spec["groups"][0]["workload"].update(workload)
    return spec


def carried_bytes(result: simcache.Result, port: str) -> float:
    """Wire bytes a port direction carried over the run: utilization x line rate x interval,
    summed."""
    times = result.series.index.to_numpy()
    widths = np.diff(np.concatenate(([0.0], times)))
    capacity = simcache.load_scenario(result.meta["scenario"]).cluster.peer_link.bandwidth
    return float((result.series[f"util.{port}"].to_numpy() * widths).sum() * capacity)


def measured_mean(result: simcache.Result, column: str) -> float:
    """Mean of a series column over the intervals after the first (the first holds the start-up)."""
    series = result.series
    return float(series.loc[series.index > series.index[0], column].mean())


# -- (a) one link is the model as it was
# -------------------------------------------------------------


def test_one_link_is_bit_identical_to_not_setting_it() -> None:
    default = simcache.load_scenario("default")
    explicit = default.with_overrides({"cluster.peer_links": 1})
    assert default.cluster.peer_links == 1
    plain = simcache.simulate(default, duration=3.0)
    one = simcache.simulate(explicit, duration=3.0)
    assert plain.records.equals(one.records)
    assert plain.series.equals(one.series)
    assert plain.totals == one.totals
    # One port per host keeps the names scenario checks and docs/validation.md refer to.
    assert {"util.host0.peer.tx", "util.host3.peer.rx"} <= set(plain.series.columns)
    assert not [c for c in plain.series.columns if ".peer0." in c]


def test_ports_are_numbered_when_there_are_several() -> None:
    result = simcache.simulate(simcache.load_scenario(scenario(hosts=3, links=3)), duration=0.5)
    peer = [c for c in result.series.columns if ".peer" in c]
    assert peer == [
        f"util.host{h}.peer{k}.{d}" for h in range(3) for k in range(3) for d in ("tx", "rx")
    ]


# -- (b) port choice and one flow per port
# ------------------------------------------------------------


@pytest.mark.parametrize("links", [1, 2, 4])
def test_lone_replica_takes_latency_plus_framed_bytes_at_one_ports_line_rate(links: int) -> None:
    # 2 writes/s of 1 MiB: each replica (about 9 ms on 1GbE) is alone on the network. Its network
    # time is latency + w / C to the peer, then the acknowledgement: latency + (64 B framed) / C,
    # with C one port's line rate, however many ports the hosts have (one flow never runs faster
    # than one port).
    spec = simcache.load_scenario(scenario(hosts=2, links=links))
    result = simcache.simulate(spec, duration=1.0)
    link = spec.cluster.peer_link
    wire, _ = framed_bytes(link, SIZE)
    ack_wire, _ = framed_bytes(link, ACK_BYTES)
    expected = link.latency + wire / link.bandwidth + link.latency + ack_wire / link.bandwidth
    writes = result.records[result.records["op"] == "write"]
    assert len(writes) == 2
    # a float32 component: rounded once
    np.testing.assert_allclose(writes["network_ms"], expected * 1e3, rtol=2.0**-24)


def test_one_host_pair_saturates_one_port_and_leaves_the_other_idle() -> None:
    # WB+1 from host0 to host1 at 150 MB/s needs more than one 1GbE port (125 MB/s of wire).
    # Per-destination hashing puts the whole pair on port 0 (d = 1: k = 0), so the second port
    # carries nothing.
    spec = simcache.load_scenario(scenario(hosts=2, links=2, iops=150e6 / SIZE, arrivals="poisson"))
    result = simcache.simulate(spec)
    assert measured_mean(result, "util.host0.peer0.tx") > 0.99
    assert measured_mean(result, "util.host1.peer0.rx") > 0.99
    for idle in ("host0.peer1.tx", "host1.peer1.rx", "host0.peer0.rx", "host1.peer0.tx"):
        assert (result.series[f"util.{idle}"] == 0).all(), idle


def test_wb2_replicas_leave_on_different_ports() -> None:
    # Ring peers of host0 are host1 (d = 1: port 0) and host2 (d = 2: port 1). Every write sends one
    # replica on each, so each port carries exactly half the replica bytes; the peers receive on the
    # same port number.
    spec = simcache.load_scenario(
        scenario(hosts=3, links=2, policy="WB+2", iops=40, arrivals="poisson")
    )
    result = simcache.simulate(spec)
    first = carried_bytes(result, "host0.peer0.tx")
    second = carried_bytes(result, "host0.peer1.tx")
    assert first > 0
    assert second == pytest.approx(first, rel=1e-9)
    assert first + second == pytest.approx(result.totals["peer_wire_bytes"], rel=1e-9)
    assert carried_bytes(result, "host1.peer0.rx") == pytest.approx(first, rel=1e-9)
    assert carried_bytes(result, "host2.peer1.rx") == pytest.approx(second, rel=1e-9)
    for idle in ("host1.peer1.rx", "host2.peer0.rx", "host0.peer0.rx", "host0.peer1.rx"):
        assert carried_bytes(result, idle) == 0, idle


def test_port_rule_is_the_ring_distance() -> None:
    model = build(simcache.load_scenario(scenario(hosts=5, links=3)), seed=1)
    hosts = model.hosts
    for a in hosts:
        for b in hosts:
            if a is not b:
                k = ((b.index - a.index) % 5 - 1) % 3
                assert a.peer_path(b) == (a.peer_txs[k], b.peer_rxs[k])


# -- (c) replication capacity
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("load", [0.8, 1.5])
@pytest.mark.parametrize(("links", "fabric"), [(1, "switched"), (2, "switched"), (2, "shared")])
def test_wb2_replication_capacity_doubles_with_two_links(
    links: int, fabric: str, load: float
) -> None:
    # A WB+2 VM writing lam blocks/s of w framed bytes offers 2 lam w wire bytes/s from its host, in
    # units of one port's line rate C: offered = 2 lam w / C. One port:
    # rho = offered,       saturated from lam* = C / (2 w). Two switched ports, replicas split:
    # rho = offered / 2 on each, saturated from lam* = C / w: twice as much. Two ports behind one
    # shared segment:   the segment (one C) carries everything: rho_fabric = offered, no gain. The
    # VM writes at `load` times the one-port limit: 0.8 fits everyone, 1.5 fits only two switched
    # ports.
    base = simcache.load_scenario(scenario(hosts=3, links=links, policy="WB+2")).with_overrides(
        {"cluster.peer_fabric": fabric}
    )
    link = base.cluster.peer_link
    wire, _ = framed_bytes(link, SIZE)
    rate = load * link.bandwidth / (2 * wire)
    result = simcache.simulate(base.with_overrides({"groups.w.workload.iops": rate}))
    offered = 2 * rate * wire / link.bandwidth
    carried = min(offered, links if fabric == "switched" else 1.0)  # in units of C
    ports = ["host0.peer.tx"] if links == 1 else ["host0.peer0.tx", "host0.peer1.tx"]
    # constant gaps between writes: the formula holds up to one write per interval
    for port in ports:
        assert measured_mean(result, f"util.{port}") == pytest.approx(carried / links, abs=0.03), (
            port
        )
    if fabric == "shared":
        assert measured_mean(result, "util.peer.fabric") == pytest.approx(carried, abs=0.03)
    keeps_up = carried == offered
    write_p99 = float(np.percentile(result.records["latency_ms"], 99))  # every I/O is a write
    # an overloaded port's queue grows for the whole run
    assert keeps_up == (write_p99 < 100), write_p99


# -- (d) vMotion
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("links", [1, 2, 4])
def test_vmotion_streams_spread_over_the_ports(links: int) -> None:
    # 4 streams of size/4 each, round-robin over the ports: each port carries 4 / links streams,
    # sharing its line rate, so the migration takes latency + (4 / links) w / C with w the framed
    # bytes of one stream.
    size = 256 * 1024**2
    spec = simcache.load_scenario(scenario(hosts=2, links=links, policy="WB+0")).with_overrides(
        {
            "run.duration": 3.0,
            "events": [
                {
                    "kind": "vmotion",
                    "at": 0.5,
                    "source_host": 0,
                    "target_host": 1,
                    "size": size,
                    "streams": 4,
                }
            ],
        }
    )
    result = simcache.simulate(spec)
    link = spec.cluster.peer_link
    wire, _ = framed_bytes(link, size / 4)
    (vmotion,) = result.meta["vmotions"]
    assert vmotion["end_s"] - vmotion["start_s"] == pytest.approx(
        link.latency + (4 / links) * wire / link.bandwidth, rel=1e-9
    )
    names = ["peer"] if links == 1 else [f"peer{k}" for k in range(links)]
    carried = [carried_bytes(result, f"host0.{name}.tx") for name in names]
    assert carried == pytest.approx([4 / links * wire] * links, rel=1e-9)
    assert [carried_bytes(result, f"host1.{name}.rx") for name in names] == pytest.approx(
        carried, rel=1e-9
    )


# -- adaptive compression judges the port the replica leaves on
# ---------------------------------------------


def test_adaptive_compression_judges_each_port() -> None:
    spec = scenario(hosts=3, links=2, policy="WB+2", compressibility=0.5)
    spec["cluster"]["compression"] = {"mode": "adaptive", "threshold": 0.7}
    model = build(simcache.load_scenario(spec), seed=1)
    vm = model.vms[0]
    host0 = model.hosts[0]
    to_host1, to_host2 = (path[0] for path in vm.peer_paths)
    assert (to_host1, to_host2) == host0.peer_txs
    to_host1.recent_utilization, to_host2.recent_utilization = 0.9, 0.2
    assert vm._link_busy(to_host1) is True
    assert vm._link_busy(to_host2) is False
    # Hysteresis per port: compressed, port 0 measures 0.4 (= 0.8 uncompressed): keep compressing
    # there only.
    to_host1.recent_utilization, to_host2.recent_utilization = 0.4, 0.4
    assert vm._link_busy(to_host1) is True
    assert vm._link_busy(to_host2) is False


def test_adaptive_compression_compresses_only_the_replicas_on_the_busy_port() -> None:
    # A one-stream vMotion from host0 to host1 fills host0's port 0 (the port of the replicas to
    # host1). With one port both replicas of each write are compressed; with two, only the one to
    # host1.
    saved = {}
    for links in (1, 2):
        spec = scenario(hosts=3, links=links, policy="WB+2", iops=20, compressibility=0.5)
        spec["cluster"]["compression"] = {"mode": "adaptive", "threshold": 0.7}
        spec["events"] = [
            {
                "kind": "vmotion",
                "at": 0.0,
                "source_host": 0,
                "target_host": 1,
                "size": "4GiB",
                "streams": 1,
            }
        ]
        result = simcache.simulate(simcache.load_scenario(spec))
        saved[links] = result.totals["compression_saved_bytes"] / result.totals["vm_written_bytes"]
    # Saved bytes per byte written: replicas compressed x compressibility, from the end of the first
    # interval (0.25 s of 2 s), when the port's utilization is first measured.
    assert saved[1] == pytest.approx(2 * 0.5 * (1 - 0.25 / 2), abs=0.02)
    assert saved[2] == pytest.approx(1 * 0.5 * (1 - 0.25 / 2), abs=0.02)


# -- validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("links", [0, -1, 17])
def test_out_of_range_count_names_the_field_and_the_fix(links: int) -> None:
    with pytest.raises(simcache.ScenarioError) as info:
        simcache.load_scenario(scenario(hosts=2, links=links))
    (problem,) = info.value.problems
    where, message = problem
    assert where == "cluster.peer_links"
    assert "whole number from 1 to 16" in message
    assert f"(got {links})" in message


def test_sixteen_links_are_allowed() -> None:
    assert simcache.load_scenario(scenario(hosts=2, links=16)).cluster.peer_links == 16
