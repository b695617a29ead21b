"""Field observation 1 (DOMAIN.md): the redundancy multiplier.

Field report: 4 hosts x 6 VMs each writing a steady 5 MB/s. The backing array
receives 120 MB/s under any write-back policy; the peer network carries an
extra 0 / 120 / 240 MB/s for WB+0 / WB+1 / WB+2. A 1GbE link carries about
125 MB/s raw, so WB+1 already saturates one, and a vMotion burst shows up as
write-latency spikes.
"""

from __future__ import annotations

import pytest
from support.paths import ROOT

import simcache
from simcache.physics.cluster import framed_bytes

SCENARIOS = ROOT / "scenarios"
SCENARIO = simcache.load_scenario(SCENARIOS / "redundancy_multiplier.toml")
(WRITERS,) = SCENARIO.groups
# a steady stream of one size
assert WRITERS.workload.throughput is not None and len(WRITERS.workload.sizes) == 1
IO_BYTES = WRITERS.workload.mean_size  # 64 KiB
OFFERED_MB_S = SCENARIO.vm_count * WRITERS.workload.throughput / 1e6  # 24 VMs x 5 MB/s
ONE_IO_PER_VM = SCENARIO.vm_count * IO_BYTES


@pytest.fixture(scope="module")
def multiplier_runs() -> dict[str, simcache.Result]:
    return {
        policy: simcache.simulate(SCENARIO.with_overrides({"groups.writers.policy": policy}))
        for policy in ("WB+0", "WB+1", "WB+2")
    }


@pytest.mark.parametrize("policy", ["WB+0", "WB+1", "WB+2"])
def test_array_receives_the_offered_write_rate_under_every_policy(
    multiplier_runs: dict[str, simcache.Result], policy: str
) -> None:
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
    assert (
        totals["destage_accepted_bytes"]
        == totals["destaged_bytes"] + totals["destage_backlog_bytes"]
    )
    assert (
        abs(totals["vm_written_bytes"] / duration / 1e6 - OFFERED_MB_S)
        <= ONE_IO_PER_VM / duration / 1e6
    )
    slack = (totals["destage_backlog_bytes"] + ONE_IO_PER_VM) / duration / 1e6
    assert totals["array_write_mb_s"] == pytest.approx(OFFERED_MB_S, abs=slack)
    assert totals["destage_backlog_bytes"] < 0.02 * totals["vm_written_bytes"]


@pytest.mark.parametrize(("policy", "replicas"), [("WB+0", 0), ("WB+1", 1), ("WB+2", 2)])
def test_peer_traffic_multiplies_with_replicas(
    multiplier_runs: dict[str, simcache.Result], policy: str, replicas: int
) -> None:
    """Peer payload = replicas x written bytes: 0 / 120 / 240 MB/s.

    Exactly so for the completed writes; a write still unfinished at the end
    (not a record) may already have sent its replicas, so the payload lies
    between replicas x written and replicas x (written + unfinished x 64 KiB),
    and written is the offered load up to one I/O per VM: together the tolerance
    on the payload rate. On the wire each 64 KiB replica is cut into
    ceil(65536 / 1460) = 45 packets of 78 bytes overhead at MTU 1500, a factor
    (65536 + 45 * 78) / 65536; a replica in flight at the end has carried only part of its bytes.
    """
    totals = multiplier_runs[policy].totals
    duration = totals["duration_s"]
    sent = totals["replica_payload_bytes"]
    written = totals["vm_written_bytes"]
    unfinished = totals["ios_unfinished_at_end"] * IO_BYTES
    assert replicas * written <= sent <= replicas * (written + unfinished)
    slack = replicas * (ONE_IO_PER_VM + unfinished) / duration / 1e6
    assert totals["replica_payload_mb_s"] == pytest.approx(replicas * OFFERED_MB_S, abs=slack)
    framing = framed_bytes(SCENARIO.cluster.peer_link, IO_BYTES)[0] / IO_BYTES
    assert (
        framing * replicas * written * (1 - 1e-9)
        <= totals["peer_wire_bytes"]
        <= framing * sent * (1 + 1e-9)
    )


def test_replication_costs_latency_but_not_array_bandwidth(
    multiplier_runs: dict[str, simcache.Result],
) -> None:
    """Each added replica leg adds network time: mean write latency rises WB+0 < WB+1 < WB+2."""
    means = [
        multiplier_runs[p].summary.query("group == 'all' and op == 'write'")["mean_ms"].item()
        for p in ("WB+0", "WB+1", "WB+2")
    ]
    assert means[0] < means[1] < means[2]


# The shared-1GbE saturation and the vMotion spikes are checks in
# scenarios/redundancy_multiplier_1gbe.toml (run by tests/scenarios/test_scenario_library.py).
