"""Field observation 1 (DOMAIN.md): the redundancy multiplier.

Field report: 4 hosts x 6 VMs each writing a steady 5 MB/s. The backing array
receives 120 MB/s under any write-back policy; the peer network carries an
extra 0 / 120 / 240 MB/s for WB+0 / WB+1 / WB+2. A 1GbE link carries about
125 MB/s raw, so WB+1 already saturates one, and a vMotion burst shows up as
write-latency spikes.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import simcache

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
OFFERED_MB_S = 4 * 6 * 5.0  # hosts x VMs per host x MB/s per VM


@pytest.fixture(scope="module")
def multiplier_runs() -> dict[str, simcache.Result]:
    scenario = simcache.load_scenario(SCENARIOS / "redundancy_multiplier.toml")
    return {policy: simcache.simulate(scenario.with_overrides({"groups.writers.policy": policy})) for policy in ("WB+0", "WB+1", "WB+2")}


@pytest.mark.parametrize("policy", ["WB+0", "WB+1", "WB+2"])
def test_array_receives_the_offered_write_rate_under_every_policy(multiplier_runs: dict[str, simcache.Result], policy: str) -> None:
    """Array write MB/s = 120 MB/s whatever the replica count.

    Arrivals are evenly spaced, so the offered load is exact up to one I/O per
    VM (24 x 64 KiB over the run). What the array has not received by the end
    is exactly the destage backlog (bytes are conserved), so the tolerance is
    that backlog plus one I/O per VM, and the backlog itself must stay below
    2% of what was written: the destager keeps up and smooths the stream.
    """
    result = multiplier_runs[policy]
    totals = result.totals
    duration = totals["duration_s"]
    one_io_per_vm = 24 * 64 * 1024
    assert totals["destage_accepted_bytes"] == totals["destaged_bytes"] + totals["destage_backlog_bytes"]
    assert abs(totals["vm_written_bytes"] / duration / 1e6 - OFFERED_MB_S) <= one_io_per_vm / duration / 1e6
    slack = (totals["destage_backlog_bytes"] + one_io_per_vm) / duration / 1e6
    assert totals["array_write_mb_s"] == pytest.approx(OFFERED_MB_S, abs=slack)
    assert totals["destage_backlog_bytes"] < 0.02 * totals["vm_written_bytes"]


@pytest.mark.parametrize(("policy", "replicas"), [("WB+0", 0), ("WB+1", 1), ("WB+2", 2)])
def test_peer_traffic_multiplies_with_replicas(multiplier_runs: dict[str, simcache.Result], policy: str, replicas: int) -> None:
    """Peer payload = replicas x written bytes: 0 / 120 / 240 MB/s.

    Exactly so for the completed writes; a write still unfinished at the end
    (not a record) may already have sent its replicas, so the payload lies
    between replicas x written and replicas x (written + unfinished x 64 KiB).
    On the wire each 64 KiB replica is cut into ceil(65536 / 1460) = 45
    packets of 78 bytes overhead at MTU 1500, a factor (65536 + 45 * 78) / 65536;
    a replica in flight at the end has carried only part of its bytes.
    """
    totals = multiplier_runs[policy].totals
    sent = totals["replica_payload_bytes"]
    written = totals["vm_written_bytes"]
    assert replicas * written <= sent <= replicas * (written + totals["ios_unfinished_at_end"] * 65536)
    assert totals["replica_payload_mb_s"] == pytest.approx(replicas * OFFERED_MB_S, rel=0.01)
    framing = (65536 + math.ceil(65536 / 1460) * 78) / 65536
    assert framing * replicas * written * (1 - 1e-9) <= totals["peer_wire_bytes"] <= framing * sent * (1 + 1e-9)


def test_replication_costs_latency_but_not_array_bandwidth(multiplier_runs: dict[str, simcache.Result]) -> None:
    """Each added replica leg adds network time: mean write latency rises WB+0 < WB+1 < WB+2."""
    means = [multiplier_runs[p].summary.query("group == 'all' and op == 'write'")["mean_ms"].item() for p in ("WB+0", "WB+1", "WB+2")]
    assert means[0] < means[1] < means[2]


# The shared-1GbE saturation and the vMotion spikes are checks in scenarios/redundancy_multiplier_1gbe.toml
# (run by tests/test_scenario_library.py).
