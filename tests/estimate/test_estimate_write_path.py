"""The estimate follows issue 16's write-path options: replication modes and metadata writes
(docs/estimate.md).

- ``memory``: a replica leg ends when the payload is in the peer's RAM (plus the ack); the peer's
  tier write loads its tier off the path. ``async``: no replica leg; the transfer and the peer's
  tier write are off-path load. ``metadata_write``: one more tier write of ``metadata_size`` after
  the data on the local leg (its batching is not modelled: exact at low load, an upper bound under
  concurrency).

Open loops at moderate load, where the estimate's assumptions hold: the mean write latency agrees
with the simulator's within ``AGREE`` (15%, the library rule of tests/estimate/test_estimate.py);
measured here within 3%.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import small_scenario

import simcache
from simcache.physics.cluster import ack_seconds, framed_bytes

AGREE = 0.15

CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # SATA flash at 300 IOPS of 32 KiB per host over 1GbE: the tier and the link each matter.
    "sata-1gbe": (
        {"peer_link": "1GbE", "tier": "sata-ssd-s3700-field"},
        {"mode": "open", "iops": 300, "sizes": "32KiB"},
    ),
    # NVMe, mixed sizes with reads: the link dominates the synchronous modes.
    "nvme-1gbe": (
        {"peer_link": "1GbE", "tier": "nvme-p3700-field"},
        {"mode": "open", "iops": 800, "sizes": {"16KiB": 1, "128KiB": 1}, "read_fraction": 0.2},
    ),
}


def scenario(case: str, replication: str, metadata: str) -> simcache.Scenario:
    cluster, workload = CASES[case]
    group = {
        "name": "db",
        "policy": "WB+1",
        "replication": replication,
        "metadata_write": metadata != "off",
        "metadata_batched": metadata == "batched",
        "workload": workload,
    }
    return simcache.load_scenario(
        small_scenario(groups=[group], cluster=cluster, run={"duration": "3s", "warmup": "0.3s"})
    )


def write_mean_ms(table: Any) -> float:
    return float(table[(table.group == "db") & (table.op == "write")].iloc[0].mean_ms)


@pytest.mark.parametrize("metadata", ["off", "unbatched", "batched"])
@pytest.mark.parametrize("replication", ["sync", "memory", "async"])
@pytest.mark.parametrize("case", ["sata-1gbe", "nvme-1gbe"])
def test_estimate_agrees_with_the_simulator(case: str, replication: str, metadata: str) -> None:
    s = scenario(case, replication, metadata)
    estimated = write_mean_ms(simcache.estimate(s).summary)
    simulated = write_mean_ms(simcache.simulate(s).summary)
    assert estimated == pytest.approx(simulated, rel=AGREE)


def test_estimate_orders_the_modes_by_what_each_waits_for() -> None:
    """Nearly unloaded (one 32 KiB write per second): async waits for the local tier write,
    memory for the slower of it and the network leg (latency, framed payload at line rate, ack),
    sync for the network leg and the peer's tier write; metadata adds a 4 KiB tier write to the
    local leg."""
    cluster, workload = CASES["sata-1gbe"]
    light = {**workload, "iops": 1}
    means = {}
    for replication in ("sync", "memory", "async"):
        for metadata in (False, True):
            group = {
                "name": "db",
                "policy": "WB+1",
                "replication": replication,
                "metadata_write": metadata,
                "workload": light,
            }
            s = simcache.load_scenario(small_scenario(groups=[group], cluster=cluster))
            means[replication, metadata] = write_mean_ms(simcache.estimate(s).summary) / 1e3
    tier = s.cluster.tier
    rate = min(tier.write_bandwidth, tier.controller_bandwidth or float("inf"))
    write_32k = tier.write_latency + 32 * 1024 / rate
    write_4k = tier.write_latency + 4096 / rate
    link = s.cluster.peer_link
    network = link.latency + framed_bytes(link, 32 * 1024)[0] / link.bandwidth + ack_seconds(link)
    assert means["async", False] == pytest.approx(write_32k, rel=0.01)
    assert means["memory", False] == pytest.approx(max(write_32k, network), rel=0.01)
    assert means["sync", False] == pytest.approx(network + write_32k, rel=0.01)
    assert means["async", True] == pytest.approx(write_32k + write_4k, rel=0.01)
    assert means["memory", True] == pytest.approx(max(write_32k + write_4k, network), rel=0.01)
