"""Issue 16, "Replication and metadata": replication modes, metadata writes, serialized writers,
flow windows.

Each behaviour is pinned with figures from the service model (tier: latency + size / bandwidth;
link: latency + framed bytes / line rate; acknowledgement:
:func:`simcache.physics.cluster.ack_seconds`), not with "it ran".

- ``replication = "async"`` acknowledges after the local write; until the replica reaches a peer the
  write is data at risk (DOMAIN.md: a block replicator's protocol A), and a host failure loses
  exactly those bytes.
- ``replication = "memory"`` acknowledges when the peer has the data in RAM (protocol B): network +
  ack, where ``sync`` (protocol C) adds the peer's device write.
- ``metadata_write``: an activity-log record per write, one more device write on the critical path
  at queue depth 1; batched (group commit), concurrency hides it (DOMAIN.md, "Related behaviours").
- ``sync_serialize``: a filesystem that serializes synchronous writers cuts the device queue depth
  to 1 per VM (DOMAIN.md; REFERENCE.md on fio's ioengine=sync).
- ``window`` on a link: a flow longer than its window runs at most at window / round trip, so one
  stream gets a fraction of a link and many saturate it (DOMAIN.md, "Stream concurrency against a
  shared target").
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pytest
import simpy
from support.builders import small_scenario

import simcache
from simcache.base.errors import ScenarioError
from simcache.physics.cluster import PortName, ack_seconds, framed_bytes
from simcache.sim import engine
from simcache.sim.collect import COMPLETED, ISSUED
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.kernel.clock import run_until
from simcache.spec import LinkSpec

MiB = 1024**2

# A tier whose every figure is explicit: 100 us per write plus the transfer at 400 MB/s; reads cost
# next to nothing, so the destager's read-back of a batch never holds the channel in front of a VM's
# write.
FLAT_TIER = {
    "kind": "flash",
    "read_latency": 0.0,
    "write_latency": "100us",
    "read_bandwidth": 1e13,
    "write_bandwidth": "400MB/s",
    "channels": 1,
    "capacity": "64GiB",
}
WRITE_LATENCY = 100e-6
WRITE_RATE = 400e6


def tier_write_seconds(size: float) -> float:
    return WRITE_LATENCY + size * (1.0 / WRITE_RATE)


def scenario(groups: list[dict[str, Any]], **cluster: Any) -> simcache.Scenario:
    return simcache.load_scenario(
        small_scenario(
            groups=groups, cluster={"tier": FLAT_TIER, "storage_link": "10GbE", **cluster}
        )
    )


def writes(result: simcache.Result) -> Any:
    records = result.records
    return records[records.op == "write"]


# -- replication = "async": the lag is the data at risk
# --------------------------------------------------------------


def async_scenario(**workload: Any) -> simcache.Scenario:
    """One VM on host0 replicating 1 MiB writes to host1 over 1GbE, asynchronously."""
    group = {
        "name": "db",
        "policy": "WB+1",
        "replication": "async",
        "hosts": [0],
        "workload": {"mode": "open", "sizes": "1MiB", **workload},
    }
    return scenario([group], peer_link="1GbE", storage_link="1GbE").with_overrides(
        {"run.sample_interval": "5ms"}
    )


def test_async_lag_equals_the_data_at_risk_at_every_sample() -> None:
    """At each sample, data at risk = the bytes of the writes acknowledged and whose replica has not
    arrived.

    Writes arrive every 20 ms; each replica is alone on the link, so it arrives at issue + framed
    bytes / line rate + latency. The destage of a write crosses the same 1GbE link speed to the
    array after it is acknowledged, so it never ends before the replica arrives. Exact: the same
    arithmetic as the flow network.
    """
    s = async_scenario(iops=50, arrivals="uniform")
    result = simcache.simulate(s)
    link = s.cluster.peer_link
    wire = framed_bytes(link, MiB)[0]
    w = writes(result)
    arrives = (w.issue_s.to_numpy() + wire / link.bandwidth) + link.latency
    acked = w.complete_s.to_numpy()
    # the local write (2.7 ms) beats the replica (8.9 ms): every write lags a while
    assert np.all(acked < arrives)
    lagging_samples = 0
    for t, at_risk in result.series.data_at_risk_bytes.items():
        expected = MiB * int(np.sum((acked <= t) & (t < arrives)))
        assert at_risk == expected, t
        lagging_samples += expected > 0
    # about 6.2 of each 20 ms lag: the check is not vacuous
    assert lagging_samples >= 0.25 * len(result.series)


def test_async_write_is_acknowledged_after_the_local_write_only() -> None:
    """Acknowledged at the local tier write (plus the admission): latency = tier write of 1 MiB,
    no network."""
    w = writes(simcache.simulate(async_scenario(iops=50, arrivals="uniform")))
    assert w.latency_ms.to_numpy() == pytest.approx(1e3 * tier_write_seconds(MiB), rel=1e-9)
    assert (w.network_ms == 0).all() and (w.peer_tier_ms == 0).all()


@pytest.mark.parametrize("replication", ["async", "sync"])
def test_host_failure_loses_exactly_the_lagging_bytes(replication: str) -> None:
    """host0 writes 1 MiB at 200 MB/s, above the 1GbE link's ~118 MB/s: under async the lag fills
    the 4 MiB send buffer (then acknowledgements wait for room); host0 dies at 0.5 s. Lost = the
    at-risk bytes just before the failure, to the byte (and nothing under sync)."""
    s = async_scenario(throughput="200MB/s").with_overrides(
        {
            "groups.db.replication": replication,
            "events": [{"kind": "host_failure", "at": 0.5, "host": 0}],
        }
    )
    model = engine.build(s, s.run.seed)
    run_until(model.clock, 0.5)  # everything before the failure, not the events at 0.5
    host0 = model.hosts[0]
    at_risk = host0.destager.single_copy_bytes + host0.replica_lag.bytes
    run_until(model.clock, 0.5 + 1e-9)
    failure = model.failures[0]
    assert failure["lost_bytes"] == at_risk
    if replication == "async":
        # Acknowledged copies on their way never exceed the send buffer (an acknowledgement needs
        # room in it).
        assert 2 * MiB <= at_risk <= s.groups[0].replication_buffer == 4 * MiB
        # the writes whose replica had arrived survive on host1
        assert failure["handed_over_bytes"] > 0
    else:
        assert at_risk == 0


@pytest.mark.parametrize("policy", ["WB+1", "WB+2"])
def test_async_bytes_are_conserved_when_a_peer_and_then_a_primary_die(policy: str) -> None:
    """4 hosts replicating asynchronously over a loaded 1GbE; host1 dies at 0.3 s, host0 at 0.6
    s. Accepted = destaged + still buffered + lost, to the byte; at-risk bytes and replica copies
    never go negative."""
    group = {
        "name": "db",
        "policy": policy,
        "replication": "async",
        "workload": {
            "mode": "open",
            "throughput": "60MB/s",
            "sizes": {"64KiB": 1, "1MiB": 1},
            "working_set": "64MiB",
        },
    }
    events = [
        {"kind": "host_failure", "at": 0.3, "host": 1},
        {"kind": "host_failure", "at": 0.6, "host": 0},
    ]
    s = simcache.load_scenario(
        small_scenario(
            groups=[group],
            cluster={"hosts": 4, "peer_link": "1GbE", "tier": "sata-ssd-s3700-field"},
            events=events,
        )
    )
    model = engine.build(s, 3)
    for t in np.arange(0.05, 1.0001, 0.05):
        run_until(model.clock, float(t))
        assert all(h.replica_lag.bytes >= 0 and h.replica_bytes >= 0 for h in model.hosts), t
    accepted = sum(h.destager.accepted_bytes for h in model.hosts)
    kept = sum(h.destager.destaged_bytes + h.destager.backlog_bytes for h in model.hosts)
    assert accepted == kept + sum(f["lost_bytes"] for f in model.failures)
    assert model.failures[1]["lost_bytes"] > 0  # host0 died with writes still lagging


# -- replication = "memory": the peer's RAM acknowledges
# ----------------------------------------------------------------


@pytest.mark.parametrize("replication", ["memory", "sync"])
def test_memory_ack_skips_the_peer_device_write(replication: str) -> None:
    """QD1, 256 KiB over 1GbE: memory = latency + framed bytes / line rate + ack; sync adds the
    peer's tier write."""
    group = {
        "name": "db",
        "policy": "WB+1",
        "replication": replication,
        "hosts": [0],
        "workload": {"mode": "closed", "outstanding": 1, "sizes": "256KiB"},
    }
    s = scenario([group], peer_link="1GbE")
    result = simcache.simulate(s, duration=0.3)
    link = s.cluster.peer_link
    network = link.latency + framed_bytes(link, 256 * 1024)[0] / link.bandwidth + ack_seconds(link)
    peer = tier_write_seconds(256 * 1024) if replication == "sync" else 0.0
    w = writes(result)
    assert w.latency_ms.to_numpy() == pytest.approx(1e3 * (network + peer), rel=1e-9)
    assert w.peer_tier_ms.to_numpy() == pytest.approx(1e3 * peer, rel=1e-9, abs=1e-12)


# -- metadata_write: one more device write at QD1, hidden by batching at QD32
# ---------------------------------------------

METADATA = 4096


def metadata_run(
    outstanding: int, metadata: bool, batched: bool = True
) -> tuple[float, float, int, int]:
    """(write IOPS, mean latency s, data writes, metadata writes) of one WB+0 VM on FLAT_TIER, 4
    KiB writes, 0.5 s."""
    group = {
        "name": "db",
        "policy": "WB+0",
        "hosts": [0],
        "metadata_write": metadata,
        "metadata_size": METADATA,
        "metadata_batched": batched,
        "workload": {"mode": "closed", "outstanding": outstanding, "sizes": "4KiB"},
    }
    s = scenario([group])
    model = engine.build(s, s.run.seed)
    start, end = 0.05, 0.5
    run_until(model.clock, end)
    done = [r for r in model.records if r[COMPLETED] > start]  # completed in (start, end]
    latency = float(np.mean([r[COMPLETED] - r[ISSUED] for r in done]))
    return (
        len(done) / (end - start),
        latency,
        len(model.records),
        model.hosts[0].metadata_log.writes,
    )


@pytest.mark.parametrize("batched", [True, False])
def test_metadata_write_adds_one_device_write_at_qd1(batched: bool) -> None:
    """At queue depth 1 a write waits for its data and then its metadata record: S_data + S_meta."""
    _, bare, _, _ = metadata_run(1, False)
    _, with_log, _, _ = metadata_run(1, True, batched)
    assert bare == pytest.approx(tier_write_seconds(4096), rel=2e-3)
    assert with_log == pytest.approx(
        tier_write_seconds(4096) + tier_write_seconds(METADATA), rel=2e-3
    )


def test_metadata_write_is_hidden_by_batching_at_qd32() -> None:
    """QD32 on one channel: the device is always busy, so throughput = 1 / (S_data + S_meta x
    metadata writes per write). Unbatched that is one per write: half the bare throughput at
    equal sizes. Batched, one metadata write carries many writes and throughput stays within 10%
    of the bare device's (Little: so does the latency)."""
    s_data, s_meta = tier_write_seconds(4096), tier_write_seconds(METADATA)
    bare, bare_latency, _, _ = metadata_run(32, False)
    assert bare == pytest.approx(1.0 / s_data, rel=0.01)  # the destager's reads take about 0.1%
    unbatched, _, data, logged = metadata_run(32, True, batched=False)
    # a record per write (the last writes in flight are not recorded yet)
    assert abs(logged - data) <= 32
    assert unbatched == pytest.approx(1.0 / (s_data + s_meta), rel=0.01)
    batched, batched_latency, data, logged = metadata_run(32, True, batched=True)
    per_write = logged / data
    assert per_write < 0.15  # at least ~7 writes share each record
    assert batched == pytest.approx(1.0 / (s_data + s_meta * per_write), rel=0.01)
    assert batched > 0.9 * bare
    assert batched_latency < 1.1 * bare_latency


# -- sync_serialize: the device sees one write per VM
# --------------------------------------------------------------------

FAST_CHANNELS = {**FLAT_TIER, "channels": 8, "write_latency": "1ms", "write_bandwidth": 1e13}


@pytest.mark.parametrize("serialize", [False, True])
def test_sync_serialize_cuts_the_device_queue_to_one_write(serialize: bool) -> None:
    """8 writes outstanding on an 8-channel tier (1 ms a write): 8 at the device, 8000 IOPS, 1 ms
    each; serialized, 1 at the device, 1000 IOPS and 8 ms each (Little's law: 8 = 1000/s x 8 ms),
    the wait counted as local time."""
    group = {
        "name": "db",
        "policy": "WB+0",
        "hosts": [0],
        "workload": {
            "mode": "closed",
            "outstanding": 8,
            "sizes": "4KiB",
            "sync_serialize": serialize,
        },
    }
    result = simcache.simulate(
        scenario([group], tier=FAST_CHANNELS).with_overrides({"run.sample_interval": "10ms"}),
        duration=0.5,
    )
    w = writes(result)
    completed = w[(w.complete_s > 0.1) & (w.complete_s <= 0.5)]
    depth = 1 if serialize else 8
    assert len(completed) / 0.4 == pytest.approx(depth / 1e-3, rel=0.01)
    assert completed.latency_ms.mean() == pytest.approx(8 / depth, rel=0.01)
    assert result.series["queue.host0.tier"].max() == depth  # sampled every 10 ms
    assert np.allclose(w.local_tier_ms, w.latency_ms)


def test_sync_serialize_leaves_reads_their_depth() -> None:
    """Reads are not serialized: 8 read hits outstanding on 8 channels still run 8 at a time."""
    tier = {**FAST_CHANNELS, "read_latency": "1ms"}
    group = {
        "name": "db",
        "policy": "WB+0",
        "hosts": [0],
        "workload": {
            "mode": "closed",
            "outstanding": 8,
            "read_fraction": 1.0,
            "working_set": "1MiB",
            "sync_serialize": True,
        },
    }
    result = simcache.simulate(scenario([group], tier=tier), duration=0.5)
    row = result.summary.query("group == 'db' and op == 'read'").iloc[0]
    # all hits after the first 16 misses (1 MiB in 64 KiB cache lines)
    assert row.iops > 0.9 * 8 / 1e-3


# -- window: a flow's rate is at most window / round trip
# -----------------------------------------------------------------

WINDOW = 65536
WINDOW_LINK = LinkSpec(bandwidth=125e6, latency=1e-3, window=WINDOW)


def transfers(count: int, size: float) -> list[float]:
    """Delivery times of ``count`` flows of ``size`` wire bytes started together over one
    windowed port pair."""
    env = simpy.Environment()
    network = FlowNetwork(env)
    tx, rx = (
        Port(PortName(0, "peer", None, "tx"), WINDOW_LINK),
        Port(PortName(1, "peer", None, "rx"), WINDOW_LINK),
    )
    events = [network.transfer((tx, rx), size, latency=WINDOW_LINK.latency) for _ in range(count)]
    env.run()
    return [float(cast(float, event.value)) for event in events]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 8])
def test_windowed_flows_share_a_link_up_to_its_rate(count: int) -> None:
    """Each of N flows runs at min(C / N, W / RTT) with RTT = 2 x latency: the aggregate is min(C, N
    W / RTT).

    C = 125 MB/s, W = 64 KiB, RTT = 2 ms: one stream gets 32.8 MB/s (26% of the link), three get 98
    MB/s, four or more saturate it (C / 4 = 31.25 MB/s is below the window's rate)."""
    size = 10e6
    per_flow = min(WINDOW_LINK.bandwidth / count, WINDOW / (2 * WINDOW_LINK.latency))
    done = transfers(count, size)
    assert done == pytest.approx([size / per_flow + WINDOW_LINK.latency] * count, rel=1e-12)
    aggregate = count * size / (done[0] - WINDOW_LINK.latency)
    assert aggregate == pytest.approx(
        min(WINDOW_LINK.bandwidth, count * WINDOW / (2 * WINDOW_LINK.latency)), rel=1e-12
    )


def test_a_message_within_the_window_is_not_capped() -> None:
    """A flow of at most one window is sent in one go: latency + bytes / line rate."""
    assert transfers(1, 60000) == pytest.approx([1e-3 + 60000 / 125e6], rel=1e-12)


# -- the fields and their messages
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("groups.db.replication", "asynch", "must be 'sync', 'async' or 'memory' (got 'asynch')"),
        (
            "groups.db.metadata_size",
            "64MiB",
            "must be at most 16MiB; a metadata record is a few KiB; 16 MiB is a typo",
        ),
        ("groups.db.metadata_size", 100, "must be at least 512 bytes; one disk sector"),
        ("groups.db.metadata_write", 3, "must be true or false"),
        ("groups.db.replication_buffer", "2GiB", "must be at most 1GiB; beyond any socket buffer"),
        ("groups.db.replication_buffer", 0, "must be more than 0"),
        ("groups.db.workload.sync_serialize", "yes please", "must be true or false"),
        (
            "cluster.peer_link.window",
            10,
            "must be at least 1KiB; below one packet a flow cannot move",
        ),
        ("cluster.peer_link.window", "2GiB", "must be at most 1GiB; TCP windows scale to 1 GiB"),
    ],
)
def test_new_fields_say_what_is_allowed(path: str, value: Any, fragment: str) -> None:
    base = simcache.load_scenario(small_scenario())
    with pytest.raises(ScenarioError) as caught:
        base.with_overrides({path: value})
    assert any(fragment in message for _, message in caught.value.problems), caught.value.problems


def test_defaults_are_todays_behaviour() -> None:
    """Sync replication, no metadata writes, no serialization, no window: the golden outputs pin
    the results."""
    group = simcache.load_scenario(small_scenario()).groups[0]
    assert (group.replication, group.metadata_write, group.workload.sync_serialize) == (
        "sync",
        False,
        False,
    )
    assert simcache.load_scenario(small_scenario()).cluster.peer_link.window is None
