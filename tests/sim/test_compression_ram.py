"""Replica compression on the write path (model/vm.py) and the RAM tier scenarios.

- A lone compressed replica costs exactly: compression CPU time (size / throughput),
  the framed compressed payload on the wire, one link latency, the peer's tier
  write and the acknowledgement.
- Adaptive mode judges the port's load as it would be uncompressed, so compression
  that relieves a saturated link keeps running instead of switching itself off
  every other sample interval (field observation 5, compression_1gbe.toml).
"""

from __future__ import annotations

from typing import Any

import pytest

import simcache
from simcache.physics.cluster import ACK_BYTES, framed_bytes
from simcache.sim.engine import build


def _scenario(**workload: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "compression-test",
        "run": {"duration": "2s", "sample_interval": "0.1s"},
        "cluster": {
            "hosts": 2,
            "tier": "ram-ddr4",
            "peer_link": "1GbE",
            "storage_link": "10GbE",
            "compression": {"mode": "adaptive", "throughput": "500MB/s", "threshold": 0.7},
        },
        "array": "array-24x15k",
        "groups": [
            {
                "name": "w",
                "policy": "WB+1",
                "hosts": [0],
                "workload": {
                    "mode": "closed",
                    "workers": 4,
                    "sizes": "256KiB",
                    "working_set": "1GiB",
                    "compressibility": 0.7,
                },
            }
        ],
    }
    spec["groups"][0]["workload"].update(workload)
    return spec


def test_lone_compressed_replica_matches_arithmetic() -> None:
    spec = _scenario(workers=1, think_time="10s")
    spec["cluster"]["compression"]["mode"] = "always"
    scenario = simcache.load_scenario(spec)
    result = simcache.simulate(scenario, duration=0.5)
    assert len(result.records) == 1
    record = result.records.iloc[0]
    workload = scenario.groups[0].workload
    size = workload.mean_size  # the only size, 256 KiB
    tier = scenario.cluster.tier
    link = scenario.cluster.peer_link
    compressed = size * (1 - workload.compressibility)
    wire, _ = framed_bytes(link, compressed)
    ack_wire, _ = framed_bytes(link, ACK_BYTES)
    assert tier.write_channel_bandwidth is not None  # a RAM tier's copy thread, then the memory
    tier_write = (
        tier.write_latency + size / tier.write_channel_bandwidth + size / tier.write_bandwidth
    )
    cpu = size / scenario.cluster.compression.throughput
    network = cpu + wire / link.bandwidth + link.latency + link.latency + ack_wire / link.bandwidth
    assert record["latency_ms"] == pytest.approx((network + tier_write) * 1e3, rel=1e-9)
    assert record["network_ms"] == pytest.approx(network * 1e3, rel=1e-9)
    assert record["peer_tier_ms"] == pytest.approx(tier_write * 1e3, rel=1e-9)
    assert result.totals["compression_saved_bytes"] == pytest.approx(
        size * workload.compressibility
    )
    assert result.totals["replica_payload_bytes"] == pytest.approx(compressed)


def test_adaptive_keeps_compressing_a_saturated_link() -> None:
    # 150 MB/s of writes would need 158 MB/s of 1GbE wire uncompressed (more than the link has);
    # compressed (70% removed) the link runs about 38% busy, under the 70% threshold. Judged on that
    # raw figure, compression would switch off every other interval and save about half of what it
    # can.
    result = simcache.simulate(
        simcache.load_scenario(_scenario(mode="open", workers=1, throughput="150MB/s"))
    )
    saved = result.totals["compression_saved_bytes"]
    sent = result.totals["replica_payload_bytes"]
    # Only the first sample interval (0.1 s of 2 s) runs uncompressed.
    assert saved / (saved + sent) >= 0.9 * 0.7
    utilization = result.series["util.host0.peer.tx"]
    assert (utilization[utilization.index > 0.25] < 0.7).all()


def test_adaptive_stays_off_on_a_quiet_link() -> None:
    result = simcache.simulate(simcache.load_scenario(_scenario(workers=1, think_time="20ms")))
    assert result.totals["compression_saved_bytes"] == 0
    assert result.totals["vm_written_bytes"] > 0


def test_adaptive_decision_has_hysteresis_of_the_saved_share() -> None:
    model = build(simcache.load_scenario(_scenario()), seed=1)
    vm = model.vms[0]
    (port,) = vm.host.peer_txs
    steps = [
        (0.5, False),  # quiet link: no compression
        (0.8, True),  # busy: compress
        (0.3, True),  # compressed 0.3 is 1.0 uncompressed: keep compressing
        (0.2, False),  # 0.2 / 0.3 = 0.67 uncompressed: below the threshold, stop
        (0.6, False),  # uncompressed and under 0.7: stay off
        (0.7, True),  # at the threshold: compress
    ]
    for utilization, expected in steps:
        port.recent_utilization = utilization
        assert vm._link_busy(port) is expected, utilization


def test_ram_tier_override_gives_field_device_latency() -> None:
    # ram_tier.toml halves the profile's copy rate (two line-fill buffers per copied line): a 352
    # KiB mean write then takes 5 us + 352 KiB / 4 GB/s = 0.095 ms, the field's "about 0.10 ms"
    # (a lone copy: the copy thread's channel, then the memory all copies share).
    scenario = simcache.load_scenario("ram_tier")
    tier = scenario.cluster.tier
    assert tier.write_channel_bandwidth is not None
    per_byte = 1 / tier.write_channel_bandwidth + 1 / tier.write_bandwidth
    assert 1 / per_byte == pytest.approx(4e9, rel=5e-3)
    mean_size = scenario.groups[0].workload.mean_size
    assert (tier.write_latency + mean_size * per_byte) * 1e3 == pytest.approx(0.095, abs=0.005)
