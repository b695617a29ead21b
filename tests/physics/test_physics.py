"""simcache.physics.cluster: each derived quantity against its formula, and the simulator's
components using them.

The expected values are exact arithmetic or theory written out in each test (the formula in its
docstring), not numbers read off a run. The last tests check that a component built by the engine
produces the physics module's figures: a change to a formula cannot leave the model behind.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

import simcache
from simcache.estimate.layout import Layout
from simcache.physics import array as array_physics
from simcache.physics import cluster as physics
from simcache.physics import drive as drive_physics
from simcache.physics.cluster import PortName
from simcache.sim.components.array import Array
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.tier import Tier
from simcache.sim.engine import build
from simcache.spec import ArraySpec, LinkSpec, TierSpec, VMotion

# mtu 1500, 40 header bytes, 38 framing bytes (the defaults)
GBE = LinkSpec(bandwidth=125e6, latency=50e-6)


def tier_spec(**fields: object) -> TierSpec:
    base: dict[str, object] = {
        "read_latency": 1e-4,
        "write_latency": 2e-4,
        "read_bandwidth": 2e9,
        "write_bandwidth": 1e9,
        "capacity": 10**12,
    }
    return TierSpec.model_validate(base | fields)


def array_spec(raid: str = "raid10", spindles: int = 8) -> ArraySpec:
    default = simcache.load_scenario("default").array
    return ArraySpec.model_validate(default.model_dump() | {"raid": raid, "spindles": spindles})


# -- tier ---------------------------------------------------------------------------------------


def test_pipe_rate_is_the_bandwidth_capped_by_the_controller() -> None:
    assert physics.pipe_rate(2e9, None) == 2e9
    assert physics.pipe_rate(2e9, 1.5e9) == 1.5e9
    assert physics.pipe_rate(1e9, 1.5e9) == 1e9


def test_tier_service_is_latency_plus_size_over_the_pipe_rate() -> None:
    """100 us + 4096 B x (1 / 2 GB/s) = 102.048 us."""
    assert physics.tier_service_seconds(1e-4, 4096, 1.0 / 2e9) == pytest.approx(
        1e-4 + 4096 / 2e9, rel=1e-15
    )


def test_unset_gc_rate_and_clean_pool_are_unlimited() -> None:
    """No cliff: no limit. gc_rate is the refill rate itself; otherwise write_bandwidth /
    write_amplification (1 GB/s / 4 = 250 MB/s: each host byte past the cliff costs 4 programmed
    bytes), and gc_rate overrides it."""
    assert physics.gc_refill_rate(tier_spec()) == math.inf
    assert physics.gc_refill_rate(tier_spec(clean_pool=10_000, gc_rate=5e6)) == 5e6
    assert physics.gc_refill_rate(tier_spec(clean_pool=10_000, write_amplification=4.0)) == 2.5e8
    assert (
        physics.gc_refill_rate(tier_spec(clean_pool=10_000, write_amplification=4.0, gc_rate=5e6))
        == 5e6
    )
    assert physics.clean_pool_depth(None) == math.inf
    assert physics.clean_pool_depth(10_000) == 10_000.0


@pytest.mark.parametrize("cap", [None, 1.5e9, 0.5e9])
def test_a_lone_tier_operation_takes_the_physics_service_time(cap: float | None) -> None:
    """An idle tier completes one operation at latency + size / min(bandwidth, controller), bit
    for bit."""
    spec = tier_spec(controller_bandwidth=cap)
    for is_write, latency, bandwidth in (
        (False, spec.read_latency, spec.read_bandwidth),
        (True, spec.write_latency, spec.write_bandwidth),
    ):
        tier = Tier(spec, UniformStream(np.random.SeedSequence(0)))
        expected = physics.tier_service_seconds(
            latency, 65536, 1.0 / physics.pipe_rate(bandwidth, cap)
        )
        assert tier.submit(0.0, 65536, is_write) == expected


# -- links --------------------------------------------------------------------------------------


def test_framing_cuts_the_payload_into_mtu_packets() -> None:
    """4096 B at a 1500 B MTU with 40 B of headers: ceil(4096 / 1460) = 3 packets, each + 40 + 38
    B on the wire."""
    assert physics.framed_bytes(GBE, 4096) == (4096 + 3 * 78, 3)
    assert physics.framed_bytes(GBE, 1460) == (1460 + 78, 1)
    assert physics.framed_bytes(GBE, 0) == (78, 1)  # an empty message is one packet


def test_wire_time_and_acknowledgement() -> None:
    """Wire time: framed bytes / line rate. Acknowledgement: latency + (64 + 78) B / line rate."""
    assert physics.wire_seconds(GBE, 4096) == (4096 + 3 * 78) / 125e6
    assert physics.ack_seconds(GBE) == 50e-6 + (physics.ACK_BYTES + 78) / 125e6
    assert physics.message_seconds(GBE) == 50e-6
    assert physics.compression_seconds(1e6, 500e6) == 2e-3


def test_a_lone_transfer_takes_latency_plus_the_wire_time() -> None:
    """The flow network delivers a lone message latency + framed bytes / line rate after it
    starts."""
    env = simpy.Environment()
    tx, rx = Port(PortName(0, "peer", None, "tx"), GBE), Port(PortName(1, "peer", None, "rx"), GBE)
    wire, packets = physics.framed_bytes(GBE, 1e6)
    done = FlowNetwork(env).transfer((tx, rx), wire, packets, latency=GBE.latency)
    env.run(until=done)
    assert done.value == pytest.approx(GBE.latency + physics.wire_seconds(GBE, 1e6), rel=1e-12)


def test_vms_wait_for_the_physics_acknowledgement() -> None:
    model = build(simcache.load_scenario("default"), 0)
    scenario = model.scenario
    for vm in model.vms:
        assert vm._ack_time == physics.ack_seconds(scenario.cluster.peer_link)
    for host in model.hosts:
        assert host.storage_tx.acknowledgement == physics.message_seconds(
            scenario.cluster.storage_link
        )


# -- peers --------------------------------------------------------------------------------------


def test_ring_peers_follow_the_host_around_the_ring() -> None:
    assert physics.ring_peers(2, 5) == [3, 4, 0, 1]
    assert physics.ring_peers(0, 1) == []


def test_peer_port_is_steps_ahead_less_one_modulo_the_ports() -> None:
    """(d - 1) mod links with d = (target - source) mod hosts: from host 3 of 4 with 2 ports,
    host 0 (d = 1) on port 0, host 1 (d = 2) on port 1, host 2 (d = 3) on port 0."""
    assert [physics.peer_port(3, t, 4, 2) for t in (0, 1, 2)] == [0, 1, 0]
    assert all(physics.peer_port(s, t, 5, 1) == 0 for s in range(5) for t in range(5) if s != t)


def test_the_model_replicates_to_ring_peers_on_the_hashed_ports() -> None:
    scenario = simcache.load_scenario("default").with_overrides({"cluster.peer_links": 2})
    model = build(scenario, 0)
    hosts = model.hosts
    for vm in model.vms:
        replicas = len(vm.peers)
        assert [peer.index for peer in vm.peers] == physics.ring_peers(vm.host.index, len(hosts))[
            :replicas
        ]
    for host in hosts:
        for peer in hosts:
            if peer is not host:
                k = physics.peer_port(host.index, peer.index, len(hosts), 2)
                assert host.peer_path(peer)[:2] == (host.peer_txs[k], peer.peer_rxs[k])


def test_vmotion_streams_take_the_port_pairs_in_turn() -> None:
    """Stream i on pair i mod peer_links: 5 streams on 2 pairs put 3 on pair 0 and 2 on pair 1;
    the estimate's per-pair stream counts are the simulator's assignment counted."""
    assert [physics.vmotion_stream_port(i, 2) for i in range(5)] == [0, 1, 0, 1, 0]
    assert all(physics.vmotion_stream_port(i, 1) == 0 for i in range(5))
    layout = Layout(simcache.load_scenario("default").with_overrides({"cluster.peer_links": 3}))
    for streams in (1, 2, 4, 7):
        event = VMotion(kind="vmotion", at=0.0, streams=streams)
        counted = [
            sum(physics.vmotion_stream_port(i, 3) == k for i in range(streams)) for k in range(3)
        ]
        assert layout.vmotion_streams(event) == [(k, n) for k, n in enumerate(counted) if n > 0]


def test_port_names_label_the_model_ports_and_the_estimate_stations_alike() -> None:
    """Every port the simulator builds (two peer ports per host, a shared fabric) is named as the
    estimate's station for it, both through :class:`simcache.physics.cluster.PortName`."""
    assert PortName(0, "peer", None, "tx").label == "host0.peer.tx"
    assert PortName(2, "peer", 1, "rx").label == "host2.peer1.rx"
    assert PortName(None, "array", None, "rx").label == "array.rx"
    assert PortName(None, "fabric").label == "peer.fabric"
    scenario = simcache.load_scenario("default").with_overrides(
        {"cluster.peer_links": 2, "cluster.peer_fabric": "shared"}
    )
    model = build(scenario, 0)
    ports = [model.array_rx, model.array_tx]
    for host in model.hosts:
        ports += [*host.peer_txs, *host.peer_rxs, host.storage_tx, host.storage_rx]
    fabric = model.hosts[0].peer_fabric
    assert fabric is not None
    ports.append(fabric)
    layout = Layout(scenario)
    stations = {name for name, is_port in zip(layout.names, layout.is_port, strict=True) if is_port}
    assert stations == {port.label for port in ports}


# -- array --------------------------------------------------------------------------------------


def test_spindle_operation_moments_over_random_distances() -> None:
    """Over span x |U1 - U2| the seek's mean and mean square are the curve's closed-form moments;
    a uniform rotational latency adds revolution / 2 and revolution^2 / 12 (checked by sampling
    at 4 standard errors)."""
    curve = drive_physics.seek_curve(0.5e-3, 8.5e-3, 17e-3, 1e-6)
    span, revolution = 0.3, drive_physics.revolution_seconds(7200)
    assert revolution == 60.0 / 7200
    u = np.random.default_rng(1).random((3, 200_000))
    seeks = np.array([curve(span * abs(a - b)) for a, b in u[:2].T])
    services = seeks + u[2] * revolution
    samples = [
        drive_physics.spindle_op_seconds(
            curve(span * abs(a - b)), r * revolution, 0.0, revolution, False
        )
        for a, b, r in u.T[:1000]
    ]
    np.testing.assert_array_equal(samples, services[:1000])
    seek_mean, seek_square = curve.moments(span)
    mean = drive_physics.spindle_op_seconds(seek_mean, revolution / 2.0, 0.0, revolution, False)
    variance = drive_physics.spindle_op_variance(seek_mean, seek_square, revolution)
    standard_error = math.sqrt(variance / services.size)
    assert abs(services.mean() - mean) < 4 * standard_error
    assert services.var() == pytest.approx(variance, rel=0.02)


def test_read_modify_write_adds_a_revolution_and_a_second_transfer() -> None:
    assert drive_physics.spindle_op_seconds(1e-3, 2e-3, 3e-4, 8e-3, False) == 1e-3 + 2e-3 + 3e-4
    assert drive_physics.spindle_op_seconds(1e-3, 2e-3, 3e-4, 8e-3, True) == 1e-3 + 2e-3 + 3e-4 + (
        8e-3 + 3e-4
    )


@pytest.mark.parametrize(
    ("raid", "data", "copies", "penalty"),
    [
        ("raid0", 8.0, 1, 1),
        ("raid1", 4.0, 2, 2),
        ("raid10", 4.0, 2, 2),
        ("raid5", 7.0, 2, 4),
        ("raid6", 6.0, 3, 6),
    ],
)
def test_raid_layout(raid: str, data: float, copies: int, penalty: int) -> None:
    """8 spindles: usable capacity n, n/2, n - 1, n - 2; write penalty (REFERENCE) 1, 2, 4, 6."""
    assert array_physics.data_spindles(raid, 8) == data
    assert array_physics.chunk_copies(raid, 8) == copies
    assert array_physics.read_modify_write(raid) == (raid in ("raid5", "raid6"))
    assert array_physics.write_penalty(raid, 8) == penalty
    spec = array_spec(raid, 8)
    assert array_physics.span_fraction(spec, 10**9) == 10**9 / (spec.drive.capacity * data)
    assert Array(spec, UniformStream(np.random.SeedSequence(0)), [10**9]).write_penalty == penalty


def test_span_is_clamped_to_the_stroke_and_sorted_batches_seek_shorter() -> None:
    """The mean gap between k sorted uniform points on [0, 1] is 1 / (k + 1) (the estimate's
    destage batches)."""
    assert [drive_physics.seek_span(x) for x in (-0.1, 0.0, 0.4, 1.0, 2.5)] == [
        0.0,
        0.0,
        0.4,
        1.0,
        1.0,
    ]
    assert drive_physics.sorted_seek_scale(3) == 0.25
    points = np.sort(np.random.default_rng(2).random((100_000, 3)), axis=1)
    assert np.diff(points, axis=1).mean() == pytest.approx(
        drive_physics.sorted_seek_scale(3), rel=0.01
    )


def test_an_idle_array_reads_in_the_physics_service_time() -> None:
    """A read of one chunk on an idle array: the seek curve over the distance from the head (the
    stroke's start before any I/O) + U x revolution + size / media rate, from the array's own
    draws (the mirror copy, the rotation), bit for bit; the media rate is the zone's at the
    chunk's position (:func:`drive_physics.zone_rate`)."""
    spec = array_spec("raid10", 8)
    array = Array(spec, UniformStream(np.random.SeedSequence(7)), [5 * 10**11])
    # the first draw picks the mirror copy
    _copy, u_rotation = UniformStream(np.random.SeedSequence(7)).uniforms(2)
    drive = spec.drive
    revolution = drive_physics.revolution_seconds(drive.rpm)
    offset = 3 * 10**10 + 4096
    unit, within = divmod(offset, spec.stripe)
    row, spindles = array_physics.stripe_unit_spindles("raid10", 8, unit)
    assert spindles == (unit % 4, unit % 4 + 4) and row == unit // 4
    seek = drive_physics.drive_seek_curve(drive)((row * spec.stripe + within) / drive.capacity)
    size = 4096
    shrink = drive_physics.zone_shrink(drive.media_rate, drive.inner_rate)
    rate = drive_physics.zone_rate(
        drive.media_rate, shrink, (row * spec.stripe + within) / drive.capacity
    )
    expected = drive_physics.spindle_op_seconds(
        seek, u_rotation * revolution, size / rate, revolution, False
    )
    assert array.read(0.0, 0, offset, size) == 0.0 + expected
    assert array.busy.busy_between(0.0, 1.0) == expected


def test_the_controller_cache_acknowledges_in_its_latency() -> None:
    """With a controller cache, a write it has room for is acknowledged ``cache_latency`` after
    it arrives; without one there is no cache acknowledgement (the write waits for its spindles)."""
    default = simcache.load_scenario("default").array
    cached = ArraySpec.model_validate(
        default.model_dump() | {"controller_cache": 2**30, "cache_latency": 2e-4}
    )
    bare = ArraySpec.model_validate(default.model_dump() | {"controller_cache": 0})
    assert array_physics.cache_ack_seconds(cached) == 2e-4
    assert array_physics.cache_ack_seconds(bare) is None
    array = Array(cached, UniformStream(np.random.SeedSequence(3)), [10**9])
    assert array.submit(1.0, [(0, 0, 4096)], True) == 1.0 + 2e-4


# -- workload -----------------------------------------------------------------------------------


def test_working_set_blocks() -> None:
    assert physics.working_set_blocks(10 * 4096 + 5, 4096) == 10
    assert physics.working_set_blocks(100, 4096) == 1


def test_read_cache_lines_default_to_the_tier_capacity_and_hold_at_least_one() -> None:
    """capacity // line lines, the tier's capacity when the cache's is unset, at least one; the
    simulator's hosts and the estimate's read cache hold that many."""
    scenario = simcache.load_scenario("default")
    cluster = scenario.cluster
    tier_lines = cluster.tier.capacity // cluster.cache.line
    assert (
        physics.read_cache_lines(
            cluster.model_copy(
                update={"cache": cluster.cache.model_copy(update={"capacity": None})}
            )
        )
        == tier_lines
    )
    tiny = cluster.model_copy(update={"cache": cluster.cache.model_copy(update={"capacity": 100})})
    assert physics.read_cache_lines(tiny) == 1
    assert (
        physics.read_cache_lines(
            cluster.model_copy(
                update={
                    "cache": cluster.cache.model_copy(
                        update={"capacity": 10 * cluster.cache.line + 1}
                    )
                }
            )
        )
        == 10
    )
    model = build(scenario, 0)
    assert all(
        host.cache.capacity_lines == physics.read_cache_lines(cluster) for host in model.hosts
    )
    assert Layout(scenario).read_cache.capacity == physics.read_cache_lines(cluster)


# -- the estimate's figures ---------------------------------------------------------------------


def test_the_estimate_service_figures_are_the_physics_values() -> None:
    """The default scenario's estimate layout: ack time, tier rates, GC and clean pool, array
    geometry and the controller cache's acknowledgement, each equal to the physics function's
    value."""
    scenario = simcache.load_scenario("default")
    cluster, array = scenario.cluster, scenario.array
    tier, drive = cluster.tier, array.drive
    services = Layout(scenario).services
    assert services.ack_seconds == physics.ack_seconds(cluster.peer_link)
    assert services.read_rate == physics.pipe_rate(tier.read_bandwidth, tier.controller_bandwidth)
    assert services.write_rate == physics.pipe_rate(tier.write_bandwidth, tier.controller_bandwidth)
    assert services.gc_rate == physics.gc_refill_rate(tier)
    assert services.clean_pool == physics.clean_pool_depth(tier.clean_pool)
    assert services.revolution == drive_physics.revolution_seconds(drive.rpm)
    assert services.seek == drive_physics.drive_seek_curve(drive)
    assert services.span == drive_physics.seek_span(
        array_physics.span_fraction(array, scenario.data_bytes)
    )
    assert services.copies == array_physics.chunk_copies(array.raid, array.spindles)
    assert services.rmw == array_physics.read_modify_write(array.raid)
    assert services.cache_ack == array_physics.cache_ack_seconds(array)
    assert services.storage_seconds(65536.0) == physics.wire_seconds(cluster.storage_link, 65536.0)
    mean, variance = services.spindle_op(4096.0, False, 1.0)
    seek, seek_square = drive_physics.drive_seek_curve(drive).moments(services.span)
    revolution = services.revolution
    media = 1.0 / drive_physics.mean_transfer_seconds(
        1.0, drive.media_rate, drive.inner_rate, services.span
    )
    assert mean == drive_physics.spindle_op_seconds(
        seek, revolution / 2.0, 4096.0 / media, revolution, False
    )
    assert variance == drive_physics.spindle_op_variance(seek, seek_square, revolution)
