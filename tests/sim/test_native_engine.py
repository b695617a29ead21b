"""The native engine (simcache/native/_engine.pyx, simcache/sim/native_run.py) against the Python
engine: bit-identical records, samples, counters, unfinished I/Os and event counts on every
library scenario and variant it supports, on library scenarios made read-only and warm (the
default's open loops, duty cycle, think times and four hosts), on random scenarios of its class
(hypothesis), and its selector.

Skipped when the extension is not built (install with ``SIMCACHE_NATIVE=1``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.builders import (
    handover_into_a_full_buffer,
    writers_waiting_for_room,
    writes_waiting_for_a_port,
)
from support.native import (
    FIELDS,
    assert_both_engines_agree,
    assert_same,
    columns,
    random_examples,
)
from support.paths import ROOT
from support.strategies import valid_scenarios

from simcache.physics.cluster import pipe_rate, write_channel_seconds
from simcache.sim import native_run
from simcache.sim.collect import (
    ARRAY,
    COMPLETED,
    DESTAGE_WAIT,
    IS_WRITE,
    ISSUED,
    NETWORK,
    PEER_TIER,
    VM,
)
from simcache.sim.control import Cancel
from simcache.sim.engine import build, run_scenario
from simcache.sim.kernel.clock import run_until
from simcache.spec import Scenario, load_scenario
from simcache.spec.fields import REPLICAS

pytestmark = pytest.mark.skipif(
    not native_run.available(),
    reason="the native engine is not built (pip install with SIMCACHE_NATIVE=1, Cython 3)",
)


def _library_variants() -> list[tuple[str, str]]:
    """Every (scenario file, variant) of the library whose scenario the selector takes."""
    chosen = []
    for path in sorted(ROOT.glob("scenarios/*.toml")):
        scenario = load_scenario(path)
        for name in ["base", *scenario.variants]:
            variant = scenario if name == "base" else scenario.variant(name)
            if native_run.unsupported(variant) is None:
                chosen.append((path.name, name))
    return chosen


LIBRARY = _library_variants() if native_run.available() else []


def _scenario(file: str, variant: str) -> Scenario:
    scenario = load_scenario(ROOT / "scenarios" / file)
    return scenario if variant == "base" else scenario.variant(variant)


def _short(scenario: Scenario) -> float:
    """A short run (CPU time in the suite): 50 ms, at least one sample interval."""
    return max(min(scenario.run.duration, 0.05), scenario.run.sample_interval)


def test_the_selection_holds_the_device_validation_reads_and_the_array_scenarios() -> None:
    """The validation scenarios' read rows (warm caches), backing_array's variants (every read a
    miss to the HDD RAID 10, its writes through to it), the write-through variants of the
    destager scenarios and the destager scenarios themselves (WB+0), the default scenario as
    written (WB+0/WB+1/WB+2, a vMotion without a VM) and the compressed replicas of
    compression_1gbe and the asynchronous replication of replication_protocols are in the class;
    every variant of the library is (host_failure_ha.toml's HA restart since stop 58), each of
    its failures under write-back without asynchronous replicas or the hash order, its HA
    restarts with caches cold, and its peer outages that degrade writes without asynchronous
    replicas or the hash order."""
    assert {
        "validate_scm_optane_p4800x_anandtech.toml",
        "validate_nvme_p3700.toml",
        "validate_sata_ssd_s3700.toml",
    } <= {file for file, _ in LIBRARY}
    assert {
        ("backing_array.toml", "reads"),
        ("backing_array.toml", "writes"),
        ("backing_array.toml", "raid5"),
        ("destager_fill.toml", "wt"),
        ("full_dirty_cache.toml", "bare"),
        ("destager_fill.toml", "base"),
        ("burst_absorb.toml", "sustained"),
        ("default.toml", "base"),
        ("default.toml", "db-on-wb1"),
        ("replication_protocols.toml", "memory"),
        ("replication_protocols.toml", "async"),
        ("compression_1gbe.toml", "base"),
        ("compression_1gbe.toml", "tengig-always"),
        ("link_slow.toml", "base"),
        ("link_down.toml", "base"),
        ("peer_loss.toml", "base"),
        ("peer_loss.toml", "wt"),
        ("peer_loss.toml", "stall"),
        ("peer_loss.toml", "degrade"),
        ("vmotion.toml", "base"),
        ("vmotion.toml", "handover"),
        ("device_failure.toml", "base"),
        ("device_failure.toml", "wt"),
        ("device_failure.toml", "wb0"),
        ("device_failure.toml", "wb2"),
    } <= set(LIBRARY)
    variants = [
        (path.name, name)
        for path in sorted(ROOT.glob("scenarios/*.toml"))
        for name in ["base", *load_scenario(path).variants]
    ]
    assert variants == LIBRARY
    for file, variant in LIBRARY:
        scenario = _scenario(file, variant)
        writes_back = native_run._writes_back(scenario)
        for event in scenario.events:
            if event.kind in ("device_failure", "host_failure") and writes_back:
                assert all(group.replication != "async" for group in scenario.groups)
                assert scenario.cluster.destager.order == "arrival"
            if getattr(event, "restart_delay", None) is not None:
                assert not scenario.cluster.cache.warm
        for group in scenario.groups:
            if group.on_peer_loss == "degrade" and any(
                event.kind == "peer_loss" or getattr(event, "link", "") == "peer"
                for event in scenario.events
            ):
                assert group.replication != "async"
                assert scenario.cluster.destager.order == "arrival"


def test_a_slow_device_runs_natively_across_its_window() -> None:
    """device_slow.toml as written (7 s): host0's NVMe tier at a quarter of its speed from 3 to
    5 s, its speeds changed by a Python event the native engine reads back (Engine.sync_in),
    host0's writes and host1's replicas to it slower meanwhile: the same records, samples and
    event record as the Python engine's."""
    _, native, fields = assert_both_engines_agree(_scenario("device_slow.toml", "base"))
    assert native.run_by == native_run.NATIVE and len(native.degradations) == 1
    issued, latency = fields[ISSUED], fields[COMPLETED] - fields[ISSUED]
    slow = (issued > 3.2) & (issued < 4.8)
    assert np.median(latency[slow]) > 1.2 * np.median(latency[issued < 2.8])


def _slow_ram_tier(tier: str, workload: dict[str, Any], peer_link: str) -> Scenario:
    """device_slow.toml (WB+1 on 2 hosts, 2 VMs each) on a RAM tier, whose writes hold their copy
    thread ``size / write_channel_bandwidth`` after their latency, shortened to 1 s with host0's
    tier at a quarter of its speed from 0.3 to 0.7 s."""
    data = _scenario("device_slow.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    data["cluster"] |= {"tier": tier, "peer_link": peer_link}
    data["run"] |= {"duration": 1.0, "warmup": 0.1, "sample_interval": 0.1}
    data["groups"][0]["workload"] |= workload
    data["events"][0] |= {"at": 0.3, "duration": 0.4}
    scenario = load_scenario(data)
    assert scenario.cluster.tier.write_channel_bandwidth is not None
    return scenario


def test_a_slow_device_with_a_write_channel_runs_natively() -> None:
    """A slow RAM tier (ram-ddr4: a write channel, each unit a copy thread): the slowdown stretches
    the channel time with the rest of the unit's, so a lone 16 KiB replica write on host0 takes
    ``(write_latency + S / write_channel_bandwidth + S / pipe) / 0.25`` there (36.4 us, where
    without the channel it would be 22.6 us); the same records, samples, counters and event
    record as the Python engine's."""
    scenario = _slow_ram_tier("ram-ddr4", {}, "10GbE")
    python, native, fields = assert_both_engines_agree(scenario)
    assert native.run_by == native_run.NATIVE and len(native.degradations) == 1
    tier, size = scenario.cluster.tier, 16 * 1024
    pipe = pipe_rate(tier.write_bandwidth, tier.controller_bandwidth, tier.interface)
    lone_s = tier.write_latency + size * write_channel_seconds(tier) + size / pipe
    issued = fields[ISSUED]
    host1 = np.isin(fields[VM], [i for i, host in enumerate(python.vm_hosts) if host == "host1"])
    during = host1 & (issued > 0.3) & (issued < 0.69)
    before = host1 & (issued > 0.1) & (issued < 0.29)
    # (the latency components are float32 milliseconds)
    assert fields[PEER_TIER][during].min() == pytest.approx(lone_s / 0.25 * 1e3, rel=1e-6)
    assert fields[PEER_TIER][before].min() == pytest.approx(lone_s * 1e3, rel=1e-6)


@random_examples(10)
@given(
    tier=st.sampled_from(["ram-ddr3", "ram-ddr4", "ram-ddr5"]),
    read_fraction=st.sampled_from([0.0, 0.3]),
    sizes=st.sampled_from(["16KiB", "256KiB", {"4KiB": 1, "1MiB": 1}]),
    iops=st.sampled_from([500, 2000]),
    window=st.tuples(st.floats(0.0, 0.8), st.floats(0.01, 0.4)),
    fraction=st.sampled_from([0.05, 0.25, 0.9]),
)
def test_random_slow_windows_on_a_write_channel_are_bit_identical(
    tier: str,
    read_fraction: float,
    sizes: Any,
    iops: int,
    window: tuple[float, float],
    fraction: float,
) -> None:
    """The same at random: copy threads busy or idle when the speed changes (up to 1 MiB writes,
    4,000 a second a host, their replicas over 100GbE), reads on the read channel beside them."""
    scenario = _slow_ram_tier(
        tier, {"read_fraction": read_fraction, "sizes": sizes, "iops": iops}, "100GbE"
    ).with_overrides(
        {"events.0.at": window[0], "events.0.duration": window[1], "events.0.fraction": fraction}
    )
    _, native, _ = assert_both_engines_agree(scenario)
    assert native.run_by == native_run.NATIVE and len(native.degradations) == 1


def test_a_slow_link_runs_natively_across_its_window() -> None:
    """link_slow.toml as written (7 s): host0's peer ports at a tenth of their speed from 3 to 5 s,
    set by a Python event whose new capacities re-rate the engine's flows on them
    (Engine.set_capacity), the replica legs slower meanwhile: the same records, samples and event
    record as the Python engine's."""
    _, native, fields = assert_both_engines_agree(_scenario("link_slow.toml", "base"))
    assert native.run_by == native_run.NATIVE and len(native.degradations) == 1
    issued, latency = fields[ISSUED], fields[COMPLETED] - fields[ISSUED]
    slow = (issued > 3.2) & (issued < 4.8)
    assert np.median(latency[slow]) > 1.05 * np.median(latency[issued < 2.8])


@pytest.mark.parametrize("variant", ["base", "wt"])
def test_a_peer_outage_runs_natively_when_writes_fall_through(variant: str) -> None:
    """peer_loss.toml as written (10 s) and its write-through variant: host0's peer ports down
    from 4 to 6 s; the outage's Python process recomputes the VMs' peers, which the engine reads
    back: short of its peer, each WB+1 VM's writes take the write-through path there
    (``on_peer_loss = "write_through"``) and count as such: the same records, samples, counters
    and degraded VMs as the Python engine's."""
    _, native, _ = assert_both_engines_agree(_scenario("peer_loss.toml", variant))
    assert native.run_by == native_run.NATIVE and len(native.outages) == 1
    if variant == "base":
        assert native.counters.wb_written_through_bytes > 0 and native.degraded_vms


def test_writes_stalled_by_a_peer_outage_resume_natively() -> None:
    """peer_loss.toml's stall variant, shortened (2 s, host0's peer ports down from 0.5 to
    1.2 s: as written the Python engine takes a minute re-rating the thousands of replica flows
    the stalled writes start at once): the writes issued short of peers stall in the engine until
    the outage's end processes their VM's back signal, whose callback hands them back to the
    engine (Engine.peers_back); they then write back in the order they stalled: the same
    records, samples, counters and degraded VMs as the Python engine's."""
    data = _scenario("peer_loss.toml", "stall").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    data["run"] |= {"duration": 2.0, "warmup": 0.2}
    data["events"][0] |= {"at": 0.5, "duration": 0.7}
    _, native, fields = assert_both_engines_agree(load_scenario(data))
    assert native.run_by == native_run.NATIVE and native.degraded_vms
    issued, completed = fields[ISSUED], fields[COMPLETED]
    stalled = (issued > 0.55) & (issued < 1.15)
    assert stalled.sum() > 0 and np.all(completed[stalled] >= 1.2)


def _degrading(change: Callable[[dict[str, Any]], None]) -> Scenario:
    """peer_loss.toml's degrade variant (checks and variants dropped), changed by ``change``."""
    data = _scenario("peer_loss.toml", "degrade").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    change(data)
    return load_scenario(data)


def _as_written(data: dict[str, Any]) -> None:
    """As written: 2 hosts, WB+1, host0's peer ports down from 4 to 6 s, a 4 GiB buffer that
    destages nothing, then a resync of about 65 MB each way beside the replicas."""


def _closed_wb2_on_1gbe(data: dict[str, Any]) -> None:
    """3 hosts, WB+2 (each VM short of one of its two peers: its writes go to the other), closed
    loops of 8 writes and reads of 4 or 64 KiB, 1GbE, the default destager (batches on their way
    to the array while the resync reads the buffer): writes short of peers are in flight when
    the outage ends, so each resync first waits for its VMs' settled signals."""
    data["cluster"] |= {"hosts": 3, "peer_link": "1GbE"}
    data["cluster"].pop("destager")
    data["run"] |= {"duration": 1.2, "warmup": 0.1, "sample_interval": 0.05}
    data["groups"][0] |= {"policy": "WB+2", "vms_per_host": 2}
    data["groups"][0]["workload"] = {
        "mode": "closed",
        "outstanding": 8,
        "read_fraction": 0.2,
        "sizes": {"4KiB": 0.5, "64KiB": 0.5},
        "working_set": "1GiB",
    }
    data["events"] = [{"kind": "peer_loss", "at": 0.2, "host": 0, "duration": 0.3}]


def _sparse_writes(data: dict[str, Any]) -> None:
    """3 hosts, 20 writes a second per VM, host1's peer link down: the resyncs' transfers mostly
    alone on their ports (a lone delivery, processed at once in Python)."""
    data["cluster"] |= {"hosts": 3}
    data["run"] |= {"duration": 1.0, "warmup": 0.1, "sample_interval": 0.1}
    data["groups"][0]["workload"] |= {"iops": 20}
    data["events"] = [{"kind": "link_down", "link": "peer", "at": 0.2, "host": 1, "duration": 0.3}]


def _overlapping_wb2(data: dict[str, Any]) -> None:
    """4 hosts, WB+2, two overlapping outages (host1's, then host2's peer ports): VMs short of
    one peer, then of both, resyncs to several peers at once."""
    data["cluster"] |= {"hosts": 4}
    data["run"] |= {"duration": 1.0, "warmup": 0.1, "sample_interval": 0.1}
    data["groups"][0] |= {"policy": "WB+2"}
    data["groups"][0]["workload"] |= {"iops": 300}
    data["events"] = [
        {"kind": "peer_loss", "at": 0.2, "host": 1, "duration": 0.3},
        {"kind": "peer_loss", "at": 0.3, "host": 2, "duration": 0.4},
    ]


def _overlapping_wb2_on_1mib(data: dict[str, Any]) -> None:
    """Found by review (stop 54): _overlapping_wb2 over 1 MiB, so that a resync carries writes of
    one (VM, offset, size) with different holders. Destager.add_holder counted their copies by
    the last such item only (a dict built over the items), the engine by all of them; both now
    count them all."""
    _overlapping_wb2(data)
    data["groups"][0]["workload"] |= {"working_set": "1MiB"}


@pytest.mark.parametrize(
    "change",
    [_as_written, _closed_wb2_on_1gbe, _sparse_writes, _overlapping_wb2, _overlapping_wb2_on_1mib],
)
def test_a_peer_outage_that_degrades_writes_runs_natively(
    change: Callable[[dict[str, Any]], None],
) -> None:
    """``on_peer_loss = "degrade"``: the writes issued short of peers write back to the peers
    their VM reaches (their destage items held by those only), counted in flight until they are
    in the buffer; the resync at the outage's end stays a Python process, its transfers the
    engine's flows (Engine.transfer: their deliveries, and the VMs' settled signals, are native
    events processed in Python), reading and rewriting the engine's destage buffers
    (Engine.buffered, Engine.add_holder): the same records, samples, counters, degraded VMs and
    resync records as the Python engine's."""
    _, native, _ = assert_both_engines_agree(_degrading(change))
    assert native.run_by == native_run.NATIVE and native.resyncs
    assert sum(vm["resync_bytes"] for vm in native.degraded_vms) > 0


def _moving(
    handover: bool, policy: str, compression: str, destager: dict[str, Any], peer_link: str
) -> Callable[[dict[str, Any]], None]:
    """vmotion.toml on 1 s: both groups under ``policy``, closed loops of 8 I/Os of 4 or 64 KiB
    (half reads) over 8 MiB (the old host's cache serves remote hits), metadata records, replica
    ``compression``, the ``destager`` given; the app VM moved three times (host0 to host1 at
    0.2 s, on to host2 at 0.45 s, back to host0 at 0.7 s: 8 MiB images), with ``handover``."""

    def change(data: dict[str, Any]) -> None:
        data["cluster"] |= {"peer_link": peer_link, "destager": destager}
        data["cluster"]["compression"] = {"mode": compression}
        data["run"] |= {"duration": 1.0, "warmup": 0.1, "sample_interval": 0.05}
        for group in data["groups"]:
            group |= {"policy": policy, "metadata_write": True}
            group["workload"] = {
                "mode": "closed",
                "outstanding": 8,
                "read_fraction": 0.5,
                "sizes": {"4KiB": 0.5, "64KiB": 0.5},
                "working_set": "8MiB",
                "compressibility": 0.5,
            }
        data["events"] = [
            {"kind": "vmotion", "at": at, "source_host": source, "target_host": target}
            | {"size": "8MiB", "vm": "app-h0-0", "handover": handover}
            for at, source, target in ((0.2, 0, 1), (0.45, 1, 2), (0.7, 2, 0))
        ]

    return change


def _handover_into_a_full_buffer(data: dict[str, Any]) -> None:
    """support.builders.handover_into_a_full_buffer (found by the property test at random): the
    handover's room admits the old host's waiting writers, counted as accepted in the engine
    while the Python destager's copy (read back at the next sync_in) was stale."""
    data |= handover_into_a_full_buffer()


def _moved_again_mid_remote_hit(data: dict[str, Any]) -> None:
    """Found by review (stop 54): closed loops of 32 reads over 1 MiB, the app VM moved host0 to
    host1 at 0.2 s (a 4 MiB image) and on to host2 0.37 ms after it arrived (256 KiB): remote
    hits begun on host1 end after the second move, their data still coming back over host0's
    path to host1 (the path the read began with). The first port raised there."""
    data["run"] |= {"duration": 0.6, "warmup": 0.05, "sample_interval": 0.05}
    for group in data["groups"]:
        group["workload"] = {
            "mode": "closed",
            "outstanding": 32,
            "read_fraction": 1.0,
            "sizes": "4KiB",
            "working_set": "1MiB",
        }
    data["events"] = [
        {"kind": "vmotion", "at": at, "source_host": source, "target_host": target}
        | {"size": size, "vm": "app-h0-0"}
        for at, source, target, size in ((0.2, 0, 1, "4MiB"), (0.2037, 1, 2, "256KiB"))
    ]


def _shortened(variant: str) -> Callable[[dict[str, Any]], None]:
    """vmotion.toml's ``variant`` on 12 s: the move at 9.8 s, then 2 s of remote hits."""

    def change(data: dict[str, Any]) -> None:
        data |= _scenario("vmotion.toml", variant).model_dump(mode="json")
        for key in ("variants", "expect", "check"):
            data.pop(key, None)
        data["run"] |= {"duration": 12.0}

    return change


@pytest.mark.parametrize(
    "change",
    [
        _shortened("base"),
        _shortened("handover"),
        # replicas over 1GbE, compressed (each copy's flow starts after its CPU time, which a
        # move may fall in), a 2 MiB buffer with writers waiting for room
        _moving(False, "WB+2", "always", {"capacity": "2MiB"}, "1GbE"),
        _moving(True, "WB+2", "always", {"capacity": "2MiB"}, "1GbE"),
        _moving(False, "WT", "off", {}, "1GbE"),  # writes through, from the host each began on
        # an 8 MiB buffer the handover takes from and the writers wait for
        _moving(True, "WB+1", "off", {"capacity": "8MiB", "trigger": "watermarks"}, "10GbE"),
        _moving(False, "WB+1", "adaptive", {"capacity": "4GiB", "trigger": "watermarks"}, "1GbE"),
        _handover_into_a_full_buffer,
        _moved_again_mid_remote_hit,
    ],
    ids=[
        "as-written",
        "handover",
        "wb2",
        "wb2-handover",
        "wt",
        "wb1-handover",
        "adaptive",
        "handover-into-a-full-buffer",
        "moved-again-mid-remote-hit",
    ],
)
def test_a_vmotion_that_moves_a_vm_runs_natively(change: Callable[[dict[str, Any]], None]) -> None:
    """A vMotion of a VM stays a Python process, its streams (and its handover's flow) the
    engine's flows (Engine.transfer), the move read back by the engine after the last stream's
    delivery (processed in Python): its I/Os in flight finish on the host they began on, its new
    I/Os take its new host's tier, cache, destager and peers, its read misses look in the old
    host's cache (remote hits, counted in the move's record), its writes drop their lines from
    the caches of the hosts it left; its untaken writes counted (Engine.untaken) and, with
    ``handover``, taken from the old host's buffer and adopted by the new one's
    (Engine.hand_over, Engine.adopt): the same records, samples, counters and vMotion records as
    the Python engine's."""
    data = _scenario("vmotion.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    change(data)
    _, native, _ = assert_both_engines_agree(load_scenario(data))
    assert native.run_by == native_run.NATIVE
    moves = [record for record in native.vmotions if "not_moved" not in record]
    assert moves and sum(record["remote_hits"] + record["handed_over_bytes"] for record in moves)


@pytest.mark.parametrize("link", ["peer", "storage"])
def test_writes_resuming_together_run_natively(link: str) -> None:
    """About 600 writes a path waiting for host0's peer port (stalled) or storage port (write
    through) resume in the one event of its return, each transfer joining the others on the
    port: past 64 flows re-rated at once, both engines rebuild the heap of finish marks instead
    of pushing each new mark and popping each void one (FlowNetwork._start, _start_flow): the
    same records, samples and outage record as the Python engine's."""
    scenario = load_scenario(writes_waiting_for_a_port(0.2, link, duration=0.5))
    _, native, fields = assert_both_engines_agree(scenario)
    assert native.run_by == native_run.NATIVE and len(native.outages) == 1
    issued, completed = fields[ISSUED], fields[COMPLETED]
    # both hosts' stalled writes; host0's write-through writes the array finished by 0.5 s
    waited = (issued < 0.19) & (completed > 0.2)
    assert waited.sum() > (1000 if link == "peer" else 300)


def test_two_peer_outages_stall_and_resume_the_same_writes() -> None:
    """peer_loss.toml's stall variant on three hosts with two outages one after the other (host0's
    peer ports, then host1's peer link): at each outage's end only the VMs that stalled get a back
    signal (a VM that stalled at the first outage and not at the second gets none at the second's
    end: the same events and ids as the Python engine)."""
    data = _scenario("peer_loss.toml", "stall").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    data["cluster"]["hosts"] = 3
    data["run"] |= {"duration": 1.6, "warmup": 0.1}
    data["events"] = [
        {"kind": "peer_loss", "at": 0.3, "host": 0, "duration": 0.3},
        {"kind": "link_down", "at": 0.9, "host": 1, "link": "peer", "duration": 0.3},
    ]
    for group in data["groups"]:
        group["workload"]["iops"] = 200
    _, native, _ = assert_both_engines_agree(load_scenario(data))
    assert native.run_by == native_run.NATIVE and len(native.outages) == 2


def test_a_storage_link_down_runs_natively_across_its_outage() -> None:
    """link_down.toml as written (8 s): host0's storage port down from 3 to 5 s, the read misses,
    and the destage batches waiting for it in the engine until the port's return (a native event
    queued by the outage's Python process: Engine.storage_back) resumes them in order: the same
    records, samples and outage record as the Python engine's; the misses issued meanwhile wait
    to the port's return."""
    _, native, fields = assert_both_engines_agree(_scenario("link_down.toml", "base"))
    assert native.run_by == native_run.NATIVE and len(native.outages) == 1
    issued, completed = fields[ISSUED], fields[COMPLETED]
    reads = (fields[IS_WRITE] & 1) == 0  # (flags bit 0: a write)
    held = reads & (issued > 3.1) & (issued < 4.9) & (completed - issued > 0.05)
    assert held.sum() > 0 and np.all(completed[held] >= 5.0)


@pytest.mark.parametrize("variant", ["base", "degraded"])
def test_a_rebuilding_or_degraded_array_runs_natively_across_its_window(variant: str) -> None:
    """array_rebuild.toml as written (14 s) and its degraded variant: the RAID array's operations
    scaled from 2 to 8 s by a Python event (Array.degrade) the native engine reads back, the
    destage backlog growing meanwhile: the same records, samples and event record as the Python
    engine's."""
    _, native, _ = assert_both_engines_agree(_scenario("array_rebuild.toml", variant))
    assert native.run_by == native_run.NATIVE and len(native.degradations) == 1
    assert native.degradations[0]["backlog_at_end_bytes"] > 0


@st.composite
def _slowdown_scenarios(draw: st.DrawFn) -> Scenario:
    """A library scenario the native engine takes (a degraded array's, RAID 10; the HDD RAID 5's
    writes through; a destager's; the default's; a slow device's; a vMotion of a VM with its
    handover, at a random time), 0.6 s long, with a random
    window of a degraded or rebuilding array and/or a slow tier on host 0, and maybe a slow peer
    or storage link on the last host."""
    file, variant = draw(
        st.sampled_from(
            [
                ("array_rebuild.toml", "base"),
                ("backing_array.toml", "raid5"),
                ("destager_fill.toml", "base"),
                ("default.toml", "base"),
                ("device_slow.toml", "base"),
                ("vmotion.toml", "handover"),
            ]
        )
    )
    data = _scenario(file, variant).model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    data["run"] |= {"duration": 0.6, "warmup": 0.0, "sample_interval": 0.1}
    window = st.tuples(st.floats(0.0, 0.3), st.floats(0.01, 0.3))
    events = [
        event | {"at": draw(st.floats(0.0, 0.5))}
        for event in data.get("events", [])
        if event["kind"] == "vmotion"
    ]
    array = draw(st.sampled_from([None, "array_degraded", "array_rebuild"]))
    if array is not None:
        at, duration = draw(window)
        events.append({"kind": array, "at": at, "duration": duration})
        if array == "array_rebuild":
            events[-1]["rebuild_rate"] = draw(st.sampled_from(["10MB/s", "50MB/s"]))
    if array is None or draw(st.booleans()):
        at, duration = draw(window)
        fraction = draw(st.sampled_from([0.1, 0.25, 0.5, 0.9]))
        events.append(
            {"kind": "device_slow", "at": at, "duration": duration, "host": 0, "fraction": fraction}
        )
    if data["cluster"]["hosts"] > 1 and draw(st.booleans()):  # a host's peer ports down
        at, duration = draw(window)
        kind = draw(st.sampled_from(["peer_loss", "link_down"]))
        events.append(
            {"kind": kind, "at": at, "duration": duration, "host": draw(st.integers(0, 1))}
            | ({"link": "peer"} if kind == "link_down" else {})
        )
        # (degrade and a vMotion's handover together: the engine's entries keep two holders)
        handover = any(event.get("handover") for event in events)
        policy = draw(
            st.sampled_from(["write_through", "stall"] + ([] if handover else ["degrade"]))
        )
        for group in data["groups"]:
            group["on_peer_loss"] = policy
    if draw(st.booleans()):  # the last host's storage port down for a while
        at, duration = draw(window)
        hosts = data["cluster"]["hosts"]
        events.append(
            {"kind": "link_down", "at": at, "duration": duration, "host": hosts - 1}
            | {"link": "storage"}
        )
    if draw(st.booleans()):  # a link of the last host (a peer link if it has peers)
        at, duration = draw(window)
        hosts = data["cluster"]["hosts"]
        link = draw(st.sampled_from(["peer", "storage"] if hosts > 1 else ["storage"]))
        fraction = draw(st.sampled_from([0.05, 0.3, 0.8]))
        events.append(
            {"kind": "link_slow", "at": at, "duration": duration, "host": hosts - 1}
            | {"link": link, "fraction": fraction}
        )
    data["events"] = events
    return load_scenario(data)


@random_examples(15)
@given(_slowdown_scenarios())
def test_random_slowdown_windows_are_bit_identical(scenario: Scenario) -> None:
    """Degraded and rebuilding arrays, slow tiers and slow links at random times, over reads,
    writes through, write-back destaging and the default cluster: the same records, samples and
    event records as the Python engine's."""
    _, native, _ = assert_both_engines_agree(scenario)
    assert native.degradations  # (every window starts by 0.3 s)


@pytest.mark.parametrize(("file", "variant"), LIBRARY)
def test_library_runs_are_bit_identical(file: str, variant: str) -> None:
    scenario = _scenario(file, variant)
    duration = _short(scenario)
    assert build(scenario, scenario.run.seed, native=True).native is not None
    python = run_scenario(scenario, duration=duration, native=False)
    native = run_scenario(scenario, duration=duration, native=True)
    assert_same(python, native)


def _changed(file: str, variant: str, workload: dict[str, Any]) -> Scenario:
    """A library scenario's variant with its group's workload changed (checks and variants
    dropped)."""
    data = _scenario(file, variant).model_dump(mode="json")
    data["groups"][0]["workload"] |= workload
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    return load_scenario(data)


@pytest.mark.parametrize(
    "workload",
    [
        # drawn by the stream itself (IOStream._refill_ios called from the native engine)
        {"access": "hotspot", "hot_io_fraction": 0.8, "hot_span_fraction": 0.1},
        {"read_sizes": {"4KiB": 3, "64KiB": 1}, "sizes": {"4KiB": 1}},
        {"sequential_run": 8.0},
        # drawn in native code: a size mix (its uniforms placed in the cumulative weights)
        {"sizes": {"4KiB": 2, "16KiB": 1, "128KiB": 1}},
        {"sizes": {"4KiB": 2, "16KiB": 1, "128KiB": 1}, "access": "sequential"},
        # Zipf ranks (numpy's ufuncs for the logarithms and exponentials): theta 1 takes the
        # series of log1p(t) / t and expm1(t) / t at every draw and numpy's k**-1 shortcut; a
        # small theta rejects more candidates (redrawn as a block); 17 TiB is more than 2^32
        # blocks (the scatter's limbs)
        {"access": "zipf", "zipf_theta": 0.9, "sizes": {"4KiB": 2, "64KiB": 1}},
        {"access": "zipf", "zipf_theta": 1.0},
        {"access": "zipf", "zipf_theta": 0.3, "working_set": "64MiB"},
        {"access": "zipf", "zipf_theta": 3.5},
        {"access": "zipf", "zipf_theta": 0.99, "working_set": "17TiB"},
    ],
)
@pytest.mark.parametrize("direct_loops", [True, False], ids=["loops", "ufuncs"])
def test_every_way_of_drawing_a_batch_is_bit_identical(
    workload: dict[str, Any], direct_loops: bool
) -> None:
    """The library's rows draw uniform or sequential offsets of one size: these draw the rest
    (their batches from the stream's own refill, or in native code), at 16 outstanding; the Zipf
    ranks with numpy's float64 loops called directly and with its ufuncs."""
    scenario = _changed("validate_scm_optane_p4800x_anandtech.toml", "qd16-read", workload)
    assert native_run.unsupported(scenario) is None
    model = build(scenario, 1, native=True)
    native_code = not {"hot_io_fraction", "read_sizes", "sequential_run"} & workload.keys()
    assert all(
        (native_run._refill(vm.stream) != native_run._PYTHON_REFILL) == native_code
        for vm in model.vms
    )
    python = run_scenario(scenario, duration=0.03, native=False)
    engine_module = native_run._engine_module()
    assert engine_module is not None
    engine_module.direct_ufunc_loops(direct_loops)
    try:
        native = run_scenario(scenario, duration=0.03, native=True)
    finally:
        engine_module.direct_ufunc_loops(True)
    assert_same(python, native)


def test_zipf_ranks_are_the_same_with_the_thresholds_known() -> None:
    """The kept thresholds of a theta's hot ranks are kept for the process's next runs: a run
    whose theta no run computed before (cold) and the same run again (its thresholds read from
    the table) both draw the Python engine's ranks. Theta 0.8125 is this test's own, so the first
    run is cold whatever ran before it; 4 GiB is 2^20 blocks, ranks on both sides of the table's
    65,536."""
    theta = 0.8125
    scenario = _changed(
        "validate_scm_optane_p4800x_anandtech.toml",
        "qd16-read",
        {"access": "zipf", "zipf_theta": theta, "working_set": "4GiB"},
    )
    engine_module = native_run._engine_module()
    assert engine_module is not None
    for _ in range(2):  # (a comparison takes the records' columns: a Python run each time)
        python = run_scenario(scenario, duration=0.05, native=False)
        assert_same(python, run_scenario(scenario, duration=0.05, native=True))
        # the second run reads this theta's table (kept by the process: room for 32 thetas)
        assert theta in engine_module._THRESHOLD_TABLES


def test_the_zipf_refill_calls_numpys_loops_directly() -> None:
    """numpy's float64 loops of log1p, exp, log, expm1 and power are taken at import (the ufunc
    objects are as the engine declares them and the loops give the ufuncs' results bit for bit):
    the refill's speed-up is not lost silently on this machine's numpy."""
    engine_module = native_run._engine_module()
    assert engine_module is not None
    assert engine_module.direct_ufunc_loops() is True, (
        "this numpy's ufunc objects or float64 loops are not what simcache/native/engine/"
        "ufuncs.pxi declares (a new numpy?): the Zipf refill calls the ufuncs instead (the same "
        "ranks, slower); update the declaration or the check"
    )


def test_records_past_the_narrowest_types_widen_as_in_python() -> None:
    """With more than 256 VMs the VM field no longer fits a byte: the native engine's records
    go on as rows from the first VM past it, and the blocks widen as the Python engine's do."""
    base = _scenario("validate_scm_optane_p4800x_anandtech.toml", "base")
    data = base.model_dump(mode="json")
    data["groups"][0]["vms_per_host"] = 300
    data["groups"][0]["workload"]["working_set"] = "64MiB"
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    scenario = load_scenario(data)
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=0.02, native=False)
    native = run_scenario(scenario, duration=0.02, native=True)
    assert native.record_blocks is not None and native.record_blocks.bytes_per_io > 40
    assert_same(python, native)


def test_a_block_the_tier_stream_drew_in_python_is_used_first() -> None:
    """The tier's random stream hands out a block drawn in Python before the native engine goes on
    with the generator itself: both models draw a few uniforms from it first, then run (the
    engines' run loops alone, no sampler) to the same records."""
    scenario = _scenario("validate_sata_ssd_s3700.toml", "base")  # lognormal dies: draws an I/O
    blocks = []
    for native in (False, True):
        model = build(scenario, 1, native=native)
        assert (model.native is not None) == native
        stream = model.hosts[0].tier._stream
        drawn = [stream.uniform() for _ in range(3)]
        assert all(0.0 <= u < 1.0 for u in drawn)
        model.record_buffer.sink = model.records_sink()
        finished = native_run.run(model, 0.01) if native else run_until(model.clock, 0.01)
        assert finished
        model.hand_on_records()
        blocks.append([model.record_blocks.take(i) for i in FIELDS])
        assert len(blocks[-1][0]) > 500  # 64 jobs at about 75,000 reads a second
    for i, (a, b) in enumerate(zip(*blocks, strict=True)):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"record field {i}"


def test_a_run_without_records_feeds_the_same_histograms() -> None:
    scenario = _scenario("validate_scm_optane_p4800x_anandtech.toml", "qd16-read")
    runs = [
        run_scenario(scenario, duration=0.04, native=native, keep_records=False)
        for native in (False, True)
    ]
    python, native = (run.stream for run in runs)
    assert python is not None and native is not None
    for name in ("hist", "count", "bytes", "sum_ms", "max_ms", "components_ms", "batch_sum"):
        assert np.array_equal(getattr(python, name), getattr(native, name)), name
    assert python.completed == native.completed > 0


def test_a_stopped_run_accounts_for_every_io() -> None:
    """Cancelled before it starts, the native run stops at its first poll (the Python engine's
    interval times the budget), and every I/O issued is either recorded or unfinished."""
    scenario = _scenario("validate_scm_optane_p4800x_anandtech.toml", "qd16-read")
    token = Cancel()
    token.cancel("test")
    record = run_scenario(scenario, duration=0.1, native=True, cancel=token)
    assert record.stopped_at_s is not None and record.stopped_at_s < 0.1
    recorded = len(columns(record)[0])
    assert recorded > 0
    assert record.counters.issued_ios == recorded + len(record.unfinished)


def test_a_stop_request_is_heard_between_frequent_python_events() -> None:
    """The poll budget counts native events across the Python events between them: with a sample
    every few hundred native events (fewer than one poll's budget), a cancelled run still stops at
    once. (It once ran to its end: each call into the engine began a fresh budget.)"""
    scenario = _scenario("validate_scm_optane_p4800x_anandtech.toml", "qd16-read")
    scenario = scenario.model_copy(
        update={"run": scenario.run.model_copy(update={"sample_interval": 0.001})}
    )
    token = Cancel()
    token.cancel("test")
    record = run_scenario(scenario, duration=2.0, native=True, cancel=token)
    assert record.run_by == native_run.NATIVE
    assert record.stopped_at_s is not None
    # one poll's budget (128 x 64 native events) at about 5 native events an I/O, 16 I/Os in
    # flight at ~10 us each: a few milliseconds of simulated time, far from the 2 s asked for
    assert record.stopped_at_s < 0.1
    assert record.counters.issued_ios == len(columns(record)[0]) + len(record.unfinished)


def test_compact_state_bounds() -> None:
    """Issue 35's compact state, in the native engine: a buffered write takes at most 64 bytes of
    destage ring (16 for the write, 8 for its entry time, 4 for its holders a place; the ring
    doubles when full, so 28 to 56 a write), a cached line at most 32 bytes (4-byte slots at most
    half full, 8-byte log entries: 16 to 32)."""
    data = _optane_data()
    data["groups"][0] |= {"policy": "WB+0"}
    data["groups"][0]["workload"] |= {"read_fraction": 0.0, "working_set": "64GiB"}
    data["cluster"]["destager"] = {"capacity": "64GiB", "trigger": "watermarks"}
    data["cluster"]["cache"] = {"line": "4KiB", "capacity": "8GiB", "warm": False}
    scenario = load_scenario(data)
    model = build(scenario, scenario.run.seed, native=True)
    assert model.native is not None
    native_run.run(model, 0.2)
    state = model.native.state_bytes()
    assert state["buffered_writes"] > 10_000 and state["cached_lines"] > 10_000
    assert 28 <= state["destage_ring_bytes"] / state["buffered_writes"] <= 64
    assert 16 <= state["cache_bytes"] / state["cached_lines"] <= 32


def _optane_data() -> dict[str, Any]:
    data = _scenario("validate_scm_optane_p4800x_anandtech.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    return data


def _with_replicas(data: dict[str, Any]) -> None:
    data["cluster"]["hosts"] = 2
    data["groups"][0] |= {"policy": "WB+1"}
    data["groups"][0]["workload"]["read_fraction"] = 0.5


def _vmotion_of_a_vm_warm(data: dict[str, Any]) -> None:
    data["cluster"]["hosts"] = 2
    data["cluster"]["cache"] = {"warm": True}
    data["events"] = [
        {
            "kind": "vmotion",
            "at": 0.01,
            "source_host": 0,
            "target_host": 1,
            "size": "1MiB",
            "vm": "fio-h0-0",
        }
    ]


def _exponential(data: dict[str, Any]) -> None:
    data["cluster"]["tier"] |= {"service": "exponential", "service_cv": None}  # the dumped spec


def _device_failure_under_async_replication(data: dict[str, Any]) -> None:
    _with_replicas(data)
    data["groups"][0] |= {"replication": "async"}
    data["groups"][0]["workload"] |= {"read_fraction": 0.0}
    data["events"] = [{"kind": "device_failure", "at": 0.01, "host": 0}]


def _device_failure_beside_a_peer_outage(data: dict[str, Any]) -> None:
    _with_replicas(data)
    data["groups"][0]["workload"] |= {"read_fraction": 0.0}
    data["events"] = [
        {"kind": "device_failure", "at": 0.01, "host": 0},
        {"kind": "peer_loss", "at": 0.01, "host": 1, "duration": 1},
    ]


def _with_an_ha_restart(data: dict[str, Any]) -> None:
    data["events"] = [{"kind": "host_failure", "at": 0.01, "host": 0, "restart_delay": 0.1}]


def _peer_outage_degrading_async(data: dict[str, Any]) -> None:
    _with_replicas(data)
    data["groups"][0] |= {"on_peer_loss": "degrade", "replication": "async"}
    data["events"] = [{"kind": "link_down", "at": 0.01, "host": 0, "link": "peer", "duration": 1}]


def _peer_outage_degrading_with_a_handover(data: dict[str, Any]) -> None:
    _with_replicas(data)
    data["groups"][0] |= {"on_peer_loss": "degrade"}
    data["events"] = [
        {"kind": "peer_loss", "at": 0.01, "host": 0, "duration": 1},
        {"kind": "vmotion", "at": 0.01, "source_host": 0, "target_host": 1}
        | {"size": "1MiB", "vm": "fio-h0-0", "handover": True},
    ]


def _peer_outage_degrading_hashed(data: dict[str, Any]) -> None:
    _with_replicas(data)
    data["groups"][0] |= {"on_peer_loss": "degrade"}
    data["cluster"]["destager"] = {"order": "hash"}
    data["events"] = [{"kind": "peer_loss", "at": 0.01, "host": 0, "duration": 1}]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_vmotion_of_a_vm_warm, "a vMotion of a VM ('fio-h0-0') with warm caches"),
        (
            _device_failure_under_async_replication,
            "scheduled event 'device_failure' with write-back writes and asynchronous replication",
        ),
        (
            _device_failure_beside_a_peer_outage,
            "scheduled event 'device_failure' with write-back writes and a peer outage"
            " ('peer_loss')",
        ),
        (
            _with_an_ha_restart,
            "scheduled event 'host_failure' with an HA restart and warm caches",
        ),
        (
            _peer_outage_degrading_async,
            "group 'fio': a peer outage with on_peer_loss = 'degrade' and replication = 'async'",
        ),
        (
            _peer_outage_degrading_with_a_handover,
            "group 'fio': a peer outage with on_peer_loss = 'degrade' and a vMotion's handover",
        ),
        (
            _peer_outage_degrading_hashed,
            "group 'fio': a peer outage with on_peer_loss = 'degrade' and destage order 'hash'",
        ),
    ],
)
def test_the_selector_names_what_it_lacks(change: Any, reason: str) -> None:
    data = _optane_data()
    change(data)
    assert native_run.unsupported(load_scenario(data)) == reason


@pytest.mark.parametrize("policy", ["WB+0", "WT"])
def test_the_exponential_tier_runs_bit_identically(policy: str) -> None:
    """The test-only exponential service (theory's M/M/c checks): the same draws from the
    tier's stream in the same order (lognormal factor, stall, then the service), reads and
    writes, 16 outstanding on 4 channels."""
    data = _optane_data()
    _exponential(data)
    data["groups"][0] |= {"policy": policy}
    data["groups"][0]["workload"] |= {"read_fraction": 0.5, "outstanding": 16}
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=0.05, native=False)
    native = run_scenario(scenario, duration=0.05, native=True)
    assert native.run_by == native_run.NATIVE
    assert_same(python, native)


def test_a_device_failure_without_write_back_runs_natively() -> None:
    """device_failure.toml's write-through variant as written (10 s, host1's flash fails at 4 s):
    the failure's process stays Python's and the engine reads back which tier failed; from then
    on host1's cache is empty and stays so, its writes skip the tier; the same records, samples
    and failure record as the Python engine's."""
    scenario = _scenario("device_failure.toml", "wt")
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, native=False)
    native = run_scenario(scenario, native=True)
    assert native.run_by == native_run.NATIVE
    assert_same(python, native)
    assert native.failures and native.failures[0]["kind"] == "device_failure"


@pytest.mark.parametrize("variant", ["base", "wb0", "wb2"])
def test_a_device_failure_under_write_back_runs_natively(variant: str) -> None:
    """device_failure.toml's write-back variants as written (10 s, host1's flash fails at 4 s
    holding about 1 s of writes): the failure's process stays Python's, the buffers' part of it
    is the engine's (the failed buffer stops and gives up its writes, the surviving holders adopt
    them, the other buffers lose the failed host's copies); the same records, samples and
    failure record as the Python engine's."""
    scenario = _scenario("device_failure.toml", variant)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, native=False)
    native = run_scenario(scenario, native=True)
    assert native.run_by == native_run.NATIVE
    assert_same(python, native)
    (failure,) = native.failures
    assert failure["backlog_bytes"] > 0
    if variant == "wb0":  # no replica: the backlog is lost
        assert failure["lost_bytes"] == failure["backlog_bytes"]
    else:  # every write had a copy on host2 (and host0 under WB+2): handed over, none lost
        assert failure["handed_over_bytes"] == failure["backlog_bytes"]


def _failure_data() -> dict[str, Any]:
    """device_failure.toml in 1 s: 3 hosts, WB+1 of 16 KiB writes, destaged 0.2 s after they
    enter the buffer; host1's tier fails at 0.4 s."""
    data = _scenario("device_failure.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    data["run"] |= {"duration": 1.0, "warmup": 0.0, "sample_interval": 0.1}
    data["cluster"]["destager"] |= {"delay": 0.2}
    data["events"] = [{"kind": "device_failure", "at": 0.4, "host": 1}]
    return data


def _stalled_then_failed(data: dict[str, Any]) -> None:
    # host0's tier fails first: host1's and host2's VMs lose a peer and stall; then host2's
    # tier fails under its stalled writes
    data["groups"][0] |= {"policy": "WB+2", "on_peer_loss": "stall"}
    data["events"] = [
        {"kind": "device_failure", "at": 0.1, "host": 0},
        {"kind": "device_failure", "at": 0.4, "host": 2},
    ]


def _degrading_after_a_failure(data: dict[str, Any]) -> None:
    data["groups"][0] |= {"policy": "WB+2", "on_peer_loss": "degrade"}


def _the_adopter_fails_next(data: dict[str, Any]) -> None:
    # host2 adopts host1's writes at 0.4 s, then fails itself before destaging them
    data["cluster"]["hosts"] = 4
    data["events"].append({"kind": "device_failure", "at": 0.5, "host": 2})


def _read_back_in_requests_behind_a_link_down(data: dict[str, Any]) -> None:
    data["cluster"]["tier"] = {"profile": "nvme-p3700-field", "scheduling": "weighted"}
    data["cluster"]["destager"] |= {"delay": 0.0, "max_batch": "1MiB", "concurrency": 2}
    data["events"].append(
        {"kind": "link_down", "at": 0.3, "host": 1, "link": "storage", "duration": 0.3}
    )


def _serialized_with_metadata(data: dict[str, Any]) -> None:
    data["groups"][0] |= {"metadata_write": True}
    data["groups"][0]["workload"] |= {"sync_serialize": True}


@pytest.mark.parametrize(
    "change",
    [
        writers_waiting_for_room,
        _stalled_then_failed,
        _degrading_after_a_failure,
        _the_adopter_fails_next,
        _read_back_in_requests_behind_a_link_down,
        _serialized_with_metadata,
    ],
)
def test_device_failures_under_write_back_are_bit_identical(
    change: Callable[[dict[str, Any]], None],
) -> None:
    """A tier failing under write-back where it is hardest to follow: writers waiting for room in
    the failed buffer (they fail), VMs re-peered short of a peer whose writes stall (and fail
    when their own tier goes) or degrade, a second failure of the host that adopted the first's
    writes, batches read back in background requests or parked behind a storage link down when
    the flushers stop, serialized writes with metadata records."""
    data = _failure_data()
    change(data)
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    native = assert_both_engines_agree(scenario)[1]
    assert native.run_by == native_run.NATIVE
    assert native.failures
    if change is writers_waiting_for_room:
        assert native.failures[0]["unacknowledged_bytes"] > 0


@pytest.mark.parametrize(("warm", "open_loop"), [(False, False), (True, False), (True, True)])
def test_reads_in_flight_when_a_tier_fails_fail_in_both_engines(
    warm: bool, open_loop: bool
) -> None:
    """16 reads outstanding (or an open loop of 200,000 a second) and writes through on one host
    whose tier fails mid-run: the hits in flight at the failure fail (no record, not unfinished:
    an open loop's slot given back holds no I/O), later reads all miss to the array and fill
    nothing; a warm cache that held the disk whole (every read a hit until then) included."""
    data = _optane_data()
    data["groups"][0] |= {"policy": "WT"}
    data["groups"][0]["workload"] |= {"read_fraction": 0.8, "outstanding": 16}
    if open_loop:
        data["groups"][0]["workload"] = {
            key: value
            for key, value in data["groups"][0]["workload"].items()
            if key not in ("outstanding", "workers", "think_time")
        } | {"mode": "open", "iops": 200_000}
    data["cluster"]["cache"] = {"warm": warm}
    data["array"] = {"profile": "afa-24x-nvme"}
    data["events"] = [{"kind": "device_failure", "at": 0.02, "host": 0}]
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=0.05, native=False)
    native = run_scenario(scenario, duration=0.05, native=True)
    assert native.run_by == native_run.NATIVE
    recorded = len(assert_same(python, native)[0])
    assert native.failures and native.failures[0]["at_s"] == 0.02
    failed = native.counters.issued_ios - recorded - len(native.unfinished)
    # seed 1: the warm cache had 4 hits in flight at the failure (the open loop 1); the cold
    # one none
    assert failed == ((1 if open_loop else 4) if warm else 0)


def test_an_unsupported_scenario_falls_back_to_the_python_engine() -> None:
    """Asked for the native engine, a run it does not support (host_failure_ha.toml with warm
    caches: a VM restarted by HA would find its disk in none) is the Python engine's, and says
    so."""
    data = _scenario("host_failure_ha.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    data["cluster"]["cache"] |= {"warm": True, "capacity": "16MiB"}
    base = load_scenario(data)
    assert native_run.unsupported(base) == (
        "scheduled event 'host_failure' with an HA restart and warm caches"
    )
    python = run_scenario(base, duration=0.5, native=False)
    native = run_scenario(base, duration=0.5, native=True)
    assert native.run_by.startswith("Python: the native engine does not take")
    assert_same(python, native)


def test_a_cache_short_of_a_disk_misses_to_the_array_bit_identically() -> None:
    """A warm cache that holds a quarter of the disk: its misses go to the array (all flash
    here), over the storage link, and fill the cache, evicting (the recency log kept natively);
    16 reads outstanding."""
    data = _optane_data()
    data["cluster"]["cache"]["capacity"] = "4MiB"
    data["array"] = {"profile": "afa-24x-nvme", "read_cache": 0}
    data["groups"][0]["workload"] |= {"working_set": "16MiB", "outstanding": 16}
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=0.05, native=False)
    native = run_scenario(scenario, duration=0.05, native=True)
    assert python.counters.cache_hits > 0 and python.counters.cache_misses > 0
    assert_same(python, native)


def test_a_miss_fills_the_cache_with_the_writes_own_spread() -> None:
    """A miss's data is written to the tier, which draws a write's lognormal factor from
    ``write_service_cv``'s quantiles (the nvme-p3700 profile sets 1.0 against its reads' 0.1),
    not from the reads' table: the fills' completions, so the tier's utilization, agree."""
    data = _optane_data()
    data["cluster"]["tier"] = "nvme-p3700"
    data["cluster"]["cache"] |= {"capacity": "4MiB", "warm": False}
    data["array"] = {"profile": "afa-24x-nvme", "read_cache": 0}
    data["groups"][0]["workload"] |= {"working_set": "16MiB", "outstanding": 16}
    scenario = load_scenario(data)
    assert scenario.cluster.tier.write_service_cv != scenario.cluster.tier.service_cv
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=0.05, native=False)
    native = run_scenario(scenario, duration=0.05, native=True)
    assert python.counters.cache_misses > 0
    assert_same(python, native)


def _default_cold(changes: dict[str, Any], warm: bool) -> Scenario:
    """scenarios/default.toml read-only without its events, from caches cold or warm, the array
    first come first served unless ``changes`` say otherwise, no warm-up."""
    data = _scenario("default.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check", "events"):
        data.pop(key, None)
    for group in data["groups"]:
        group["workload"]["read_fraction"] = 1.0
    data["cluster"]["cache"] |= {"warm": warm}
    data["array"] = {"profile": "array-14x7200", "scheduling": "fcfs"}
    data["run"]["warmup"] = 0.0
    data["array"] |= changes.get("array", {})
    data["cluster"]["cache"] |= changes.get("cache", {})
    return load_scenario(data)


@pytest.mark.parametrize(
    ("changes", "warm"),
    [
        ({}, False),
        # an all-flash array behind the 1GbE links: the misses' transfers back share the links
        # (rerates, wake-ups, stale wake-ups dropped)
        ({"array": {"profile": "afa-24x-nvme", "read_cache": 0}}, False),
        # RAID 6 (a read goes to any of a chunk's three spindles)
        ({"array": {"raid": "raid6"}}, False),
        # warm, 16 MiB a host: hits and misses, the fills evicting
        ({"cache": {"capacity": "16MiB"}}, True),
        # the elevator on the 4-bay RAID 5 with a queue depth of 2: the 256 and 512 KiB reads put
        # 2-3 chunks on a spindle, served in windows of 2, contiguous ones as segments
        (
            {
                "array": {
                    "profile": "nas-4bay",
                    "scheduling": "elevator",
                    "drive": {"profile": "sata-7200", "queue_depth": 2},
                }
            },
            False,
        ),
    ],
)
def test_the_default_scenario_read_through_cold_caches_is_bit_identical(
    changes: dict[str, Any], warm: bool
) -> None:
    scenario = _default_cold(changes, warm)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=1.0, native=False)
    native = run_scenario(scenario, duration=1.0, native=True)
    assert python.counters.cache_misses > 1000
    assert_same(python, native)


def _default_read_only_cold() -> Scenario:
    """scenarios/default.toml as written but read-only, without its event and warm-up: its cold
    caches miss to its own array (the HDD RAID 10 with elevator scheduling: the build group's
    256 and 512 KiB reads are cut into 64 KiB chunks, queued per spindle and served in elevator
    order)."""
    data = _scenario("default.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check", "events"):
        data.pop(key, None)
    for group in data["groups"]:
        group["workload"]["read_fraction"] = 1.0
    data["run"]["warmup"] = 0.0
    return load_scenario(data)


def test_the_default_scenario_read_only_and_cold_as_written_is_bit_identical() -> None:
    scenario = _default_read_only_cold()
    assert not scenario.cluster.cache.warm and scenario.array.scheduling == "elevator"
    assert native_run.unsupported(scenario) is None
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=1.0, native=False)
    native = run_scenario(scenario, duration=1.0, native=True)
    assert python.counters.cache_misses > 1000
    assert_same(python, native)


def _default_policy(policy: str, array: dict[str, Any], serialize: bool = False) -> Scenario:
    """scenarios/default.toml without its event, every group under ``policy`` (its reads and
    writes as they are, ``serialize``: each VM's writes one at a time), the array ``array``, no
    warm-up."""
    data = _scenario("default.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check", "events"):
        data.pop(key, None)
    for group in data["groups"]:
        group["policy"] = policy
        group["workload"]["sync_serialize"] = serialize
    data["array"] = array
    data["run"]["warmup"] = 0.0
    return load_scenario(data)


@pytest.mark.parametrize(
    ("array", "policy"),
    [
        ({"read_cache": "256MiB"}, None),  # the controller's read cache (4 KiB lines), elevator
        ({"read_cache": "1MiB", "scheduling": "fcfs"}, None),  # a small one: its lines evicted
        # lines larger than the reads' alignment (a read covers its first line whole only when it
        # starts on it), and lines and stripes of no power of two
        ({"read_cache": "8MiB", "read_cache_line": "64KiB"}, None),
        ({"read_cache": "8MiB", "read_cache_line": "6KiB", "stripe": "24KiB"}, None),
        ({"read_cache": "8MiB", "read_cache_line": "6KiB", "stripe": "24KiB"}, "WT"),
        ({"drive": {"profile": "sata-7200", "cache": "8MiB"}}, None),  # drive buffers, elevator
        # both, 4 segments a drive (evicted), first come first served
        (
            {
                "read_cache": "4MiB",
                "scheduling": "fcfs",
                "drive": {"profile": "sata-7200", "cache": "1MiB", "cache_segments": 4},
            },
            None,
        ),
        # the drives' command queueing: shortest positioning first among 8, with the elevator
        ({"drive": {"profile": "sata-7200", "command_queueing": 8}}, None),
        # shortest seek first among 4 past 1 committed, queue depth 6, first come first served
        (
            {
                "scheduling": "fcfs",
                "drive": {
                    "profile": "sata-7200",
                    "command_queueing": 4,
                    "reorder": "seek",
                    "reorder_lag": 1,
                    "queue_depth": 6,
                },
            },
            None,
        ),
        # writes through both caches (a write's whole lines enter the read cache, its chunks the
        # drives' segments), first come first served
        (
            {
                "read_cache": "64MiB",
                "scheduling": "fcfs",
                "drive": {"profile": "sata-7200", "cache": "1MiB", "cache_segments": 4},
            },
            "WT",
        ),
        # writes among the queued commands, swept by the elevator
        ({"drive": {"profile": "sata-7200", "command_queueing": 8}}, "WT"),
        # destage batches to RAID 5 (read-modify-writes, whole rows) through all three, elevator
        (
            {
                "read_cache": "64MiB",
                "raid": "raid5",
                "stripe": "16KiB",
                "drive": {
                    "profile": "sata-7200",
                    "cache": "8MiB",
                    "command_queueing": 4,
                    "reorder": "seek",
                },
            },
            "WB+0",
        ),
    ],
)
def test_the_array_parts_are_bit_identical(array: dict[str, Any], policy: str | None) -> None:
    """The default read-only (``policy`` None; else every group under ``policy``, its writes as
    written) and cold before its own array with the controller's read cache, the drives' buffers
    or their command queueing: 4 MiB host caches, so that reads evicted from them come back to the
    array and hit its caches. The runs' records, samples and counters, and the models' array
    state after 1 s (cache hits, lines in recency order, segments, heads, pending commands, pools
    and spans) and host caches' lines are the Python engine's."""
    if policy is None:
        data = _default_read_only_cold().model_dump(mode="json")
    else:
        data = _default_policy(policy, {"profile": "array-14x7200"}).model_dump(mode="json")
        data["cluster"]["cache"]["warm"] = False
    data["cluster"]["cache"]["capacity"] = "4MiB"
    data["array"] |= array
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    assert_same(
        run_scenario(scenario, duration=1.0, native=False),
        run_scenario(scenario, duration=1.0, native=True),
    )
    states = []
    for native in (False, True):
        model = build(scenario, 1, native=native)
        assert (model.native is not None) == native
        assert native_run.run(model, 1.0) if native else run_until(model.clock, 1.0)
        drives = model.array.spindles
        states.append(
            (
                model.array.read_cache_hits,
                list(model.array._lines),
                drives.drive_cache_hits,
                [list(cache.items()) for cache in drives._segment_caches],
                drives.head,
                drives._pending,
                drives._pool,
                drives._span,
                # the host caches' lines, which the native engine writes back at the run's end
                [(list(host.cache._log), host.cache._count) for host in model.hosts],
                model.array.bytes_written,
            )
        )
    # the array's caches answered reads, or its drives chose among queued commands
    assert states[0][0] + states[0][2] > 0 or any(len(pool) > 0 for pool in states[0][6])
    assert (states[0][9] > 0) == (policy is not None)
    assert states[1] == states[0]


@pytest.mark.parametrize(
    "array",
    [
        # the HDD RAID 10 first come first served (its elevator would reorder 256 KiB writes)
        {"profile": "array-14x7200", "scheduling": "fcfs"},
        # RAID 5 with 16 KiB stripes: read-modify-writes, and whole rows for the 256 KiB writes
        {"profile": "array-14x7200", "scheduling": "fcfs", "raid": "raid5", "stripe": "16KiB"},
        # a 16 MiB controller write cache flushed at once: acknowledged after cache_latency while
        # it has room, else when the spindles are done
        {"profile": "array-14x7200", "scheduling": "fcfs", "controller_cache": "16MiB"},
        # flash drives (write times) behind the 1GbE links: the writes share array_rx
        {"profile": "afa-24x-nvme", "read_cache": 0, "controller_cache": 0, "scheduling": "fcfs"},
    ],
)
def test_the_default_scenario_written_through_is_bit_identical(array: dict[str, Any]) -> None:
    """Every group write-through: each write fills the tier and the cache, crosses the storage
    link (shared by the four hosts at the array's port) and is written by the array before it is
    acknowledged; the reads hit or miss as before."""
    scenario = _default_policy("WT", array)
    assert native_run.unsupported(scenario) is None
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=1.0, native=False)
    native = run_scenario(scenario, duration=1.0, native=True)
    assert python.counters.issued_ios > 1000
    assert_same(python, native)


@pytest.mark.parametrize(
    ("array", "destager", "tier"),
    [
        # the default's 2 GiB buffers, four flushers, reads back as "priority" background requests
        ({"profile": "array-14x7200", "scheduling": "fcfs"}, {}, None),
        # 4 MiB buffers, one flusher, 256 KiB batches, a first-come-first-served tier (one read back
        # a batch): writers wait for room (the buffers' backpressure)
        (
            {"profile": "array-14x7200", "scheduling": "fcfs"},
            {"capacity": "4MiB", "concurrency": 1, "max_batch": "256KiB"},
            {"profile": "sata-ssd-s3700-field", "scheduling": "fcfs"},
        ),
        # RAID 5 with 16 KiB stripes, 128 KiB batches: the 256 and 512 KiB writes go to the array
        # in pieces of at most max_batch, read-modify-writes and whole rows
        (
            {"profile": "array-14x7200", "scheduling": "fcfs", "raid": "raid5", "stripe": "16KiB"},
            {"capacity": "16MiB", "max_batch": "128KiB"},
            None,
        ),
        # 8 MiB buffers, the reads back as background requests under "weighted" scheduling (a
        # credit of background_share of the pipe's time)
        (
            {"profile": "array-14x7200", "scheduling": "fcfs"},
            {"capacity": "8MiB"},
            {"profile": "sata-ssd-s3700-field", "scheduling": "weighted"},
        ),
        # 16 MiB buffers drained from 50 % down to 20 % (trigger "watermarks"), 256 KiB batches
        (
            {"profile": "array-14x7200", "scheduling": "fcfs"},
            {
                "capacity": "16MiB",
                "trigger": "watermarks",
                "max_batch": "256KiB",
                "high_watermark": 0.5,
                "low_watermark": 0.2,
            },
            None,
        ),
        # trigger "idle" (destage after 10 ms without foreground I/O, else between the
        # watermarks), a 10 ms delay, batches paced at 30 MB/s: flushers wait for the first of new
        # writes and a time (timeout_or)
        (
            {"profile": "array-14x7200", "scheduling": "fcfs"},
            {
                "capacity": "8MiB",
                "trigger": "idle",
                "idle_time": "10ms",
                "delay": "10ms",
                "pacing": "rate",
                "rate": "30MB/s",
            },
            None,
        ),
        # pacing "pd": its controller (a Python event every 0.1 s) sets the rate from the synced
        # backlog, the native flushers read it back
        (
            {"profile": "array-14x7200", "scheduling": "fcfs"},
            {
                "capacity": "16MiB",
                "pacing": "pd",
                "pd_update": "0.1s",
                "pd_d_term": "0.3s",
                "pd_p_inverse": 1.0,
            },
            None,
        ),
        # flash drives, 8 MiB buffers
        (
            {
                "profile": "afa-24x-nvme",
                "read_cache": 0,
                "controller_cache": 0,
                "scheduling": "fcfs",
            },
            {"capacity": "8MiB"},
            None,
        ),
    ],
)
def test_the_default_scenario_written_back_is_bit_identical(
    array: dict[str, Any], destager: dict[str, Any], tier: dict[str, Any] | None
) -> None:
    """Every group WB+0: each write fills the tier and the cache, is acknowledged when the tier
    has it and enters its host's destage buffer (or waits for room); the flushers take the
    oldest writes up to max_batch, coalesce them, read them back from the tier, send them over
    the storage link and write them to the array."""
    scenario = _default_policy("WB+0", array)
    data = scenario.model_dump(mode="json")
    data["cluster"]["destager"] |= destager
    if tier is not None:
        data["cluster"]["tier"] = tier
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=2.0, native=False)
    native = run_scenario(scenario, duration=2.0, native=True)
    assert python.counters.destage_batches > 50
    assert_same(python, native)


def _watermark_state(scenario: Scenario, native: bool, until: float = 1.0) -> tuple[Any, ...]:
    """The array's write cache and counters at ``until`` in ``scenario`` on one engine: flushes,
    bytes used, drains (sorted: a heap's order is not its contents), the runs held (in arrival
    order) and their bytes, bytes written, front-end and back-end I/Os, whole parity rows."""
    model = build(scenario, 1, native=native)
    assert (model.native is not None) == native
    assert native_run.run(model, until) if native else run_until(model.clock, until)
    array = model.array
    return (
        array.cache_flushes,
        array._cache_used,
        sorted(array._cache_drains),
        [tuple(run) for run in array._held],
        array._held_bytes,
        array.bytes_written,
        array.front_end_ios,
        array.back_end_ios,
        array.full_stripe_writes,
    )


@pytest.mark.parametrize("cache", [None, "8MiB"])
def test_the_nvme_host_at_500k_writes_a_second_is_bit_identical(cache: str | None) -> None:
    """bench/nvme_500k.toml (8 VMs x 62,500 4 KiB writes a second, WB+0, destaged to the
    all-flash RAID 6 array behind its 16 GiB controller write cache flushed at a watermark), 20
    ms without warm-up: as written (the cache fills, nothing is flushed yet), and with an 8 MiB
    cache (hundreds of flushes, each the held runs sorted and merged, and batches that do not
    fit; the bench file sets the watermark flush, the profile flushes at once). The array's write
    cache at the end is the Python engine's too."""
    data = load_scenario(ROOT / "bench" / "nvme_500k.toml").model_dump(mode="json")
    data["run"] |= {"duration": 0.02, "warmup": 0.0, "sample_interval": 0.01}
    if cache is not None:
        data["array"] |= {"controller_cache": cache}
    scenario = load_scenario(data)
    assert scenario.array.cache_flush == "watermark" and scenario.array.controller_cache > 0
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, native=False)
    native = run_scenario(scenario, native=True)
    assert python.counters.issued_ios > 5000  # 500,000 a second
    assert_same(python, native)
    state = _watermark_state(scenario, False, 0.02)
    assert state == _watermark_state(scenario, True, 0.02)
    assert (state[0] > 100) == (cache is not None) and state[4] > 0  # flushes; bytes held


@pytest.mark.parametrize(
    ("policy", "scheduling"),
    [
        # destage batches swept by the elevator; 4 MiB buffers, one flusher: writers wait for room
        ("WB+0", "elevator"),
        # every write through to the array, first come first served
        ("WT", "fcfs"),
    ],
)
def test_a_write_cache_flushed_at_a_watermark_is_bit_identical(
    policy: str, scheduling: str
) -> None:
    """The default scenario's groups under ``policy`` before the HDD array in RAID 5 (16 KiB
    stripes: read-modify-writes, and whole rows where a flush's merged runs cover them) behind a
    1 MiB controller write cache flushed at 90 %: writes are held and acknowledged after
    cache_latency while they fit, everything held is flushed as one sorted, merged batch at the
    watermark, a write that does not fit (the flushes' bytes still in the cache) goes to its
    spindles and waits for them. Records, series and counters, and the array's write cache
    after 1 s, are the Python engine's."""
    array = {
        "profile": "array-14x7200",
        "raid": "raid5",
        "stripe": "16KiB",
        "scheduling": scheduling,
        "controller_cache": "1MiB",
        "cache_flush": "watermark",
        "cache_high_watermark": 0.9,
    }
    data = _default_policy(policy, array).model_dump(mode="json")
    data["cluster"]["destager"] |= {"capacity": "4MiB", "concurrency": 1}
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=1.0, native=False)
    native = run_scenario(scenario, duration=1.0, native=True)
    fields = assert_same(python, native)
    state = _watermark_state(scenario, False)
    assert state == _watermark_state(scenario, True)
    assert state[0] >= 5 and state[8] > 0  # flushes, some with whole parity rows
    if policy == "WT":
        array_ms = fields[ARRAY][(fields[IS_WRITE] & 1) == 1]  # the writes' (flags bit 0)
        latency_ms = 1000.0 * scenario.array.cache_latency
        # held writes take cache_latency in the array (float32 milliseconds: within 2**-24
        # relative, 1e-6 allowed), those that did not fit wait for their spindles (hundreds of
        # ms behind the flushes' read-modify-writes); a write whose tier was slower than the
        # array records no array time (0)
        held = np.isclose(array_ms, latency_ms, rtol=1e-6, atol=0.0)
        assert held.sum() > 20 and (array_ms > 10 * latency_ms).sum() > 20
    else:
        assert (fields[DESTAGE_WAIT] > 0).sum() > 10  # writers waited for buffer room


@pytest.mark.parametrize(
    ("file", "variant"),
    [("destager_fill.toml", "base"), ("burst_absorb.toml", "base"), ("burst_absorb.toml", "fcfs")],
)
def test_the_destager_scenarios_are_bit_identical(file: str, variant: str) -> None:
    """The library's WB+0 destager scenarios as written, 1 s (longer than the library test's
    50 ms): the batches' runs swept by the HDD array's elevator, the buffers filling."""
    scenario = _scenario(file, variant)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=1.0, native=False)
    native = run_scenario(scenario, duration=1.0, native=True)
    assert python.counters.destage_batches > 0
    assert_same(python, native)


@pytest.mark.parametrize("variant", ["base", "wide_units"])
def test_a_destager_walking_a_hash_index_is_bit_identical(variant: str) -> None:
    """full_dirty_cache.toml as written (30 s, order "hash"): a 4 MiB sequential stream cut into
    the blocks of a hash-indexed cache, taken in the walk's order a block at a time by the
    flusher (HashWalk in the engine: hashwalk.pxi), writes leaving the buffer with their last
    block: the same records, samples and counters as the Python engine's."""
    _, native, _ = assert_both_engines_agree(_scenario("full_dirty_cache.toml", variant))
    assert native.run_by == native_run.NATIVE and native.counters.destage_batches > 100


@random_examples(12)
@given(
    st.sampled_from(["destager_fill.toml", "burst_absorb.toml", "full_dirty_cache.toml"]),
    st.sampled_from(["64KiB", "256KiB", "1MiB"]),
    st.sampled_from([{"4KiB": 1}, {"4KiB": 3, "64KiB": 1}, {"1MiB": 1}, {"4MiB": 1}]),
    st.sampled_from(["always", "watermarks"]),
    st.integers(1, 3),
)
def test_random_hash_walks_are_bit_identical(
    file: str, unit: str, sizes: dict[str, int], trigger: str, flushers: int
) -> None:
    """Write-back destagers with order "hash" over the library's WB+0 destager scenarios, 1 s:
    random block sizes (max_batch), write sizes spanning one block or many, triggers and flusher
    counts; the same records, samples and counters as the Python engine's."""
    data = _scenario(file, "base").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    data["run"] |= {"duration": 1.0, "warmup": 0.0}
    data["cluster"]["destager"] |= {"order": "hash", "max_batch": unit, "delay": 0.0}
    data["cluster"]["destager"] |= {"trigger": trigger, "concurrency": flushers}
    for group in data["groups"]:
        group["workload"] |= {"sizes": sizes, "read_fraction": 0.0}
        group["workload"].pop("read_sizes", None)
        group["workload"].pop("write_sizes", None)
    _, native, _ = assert_both_engines_agree(load_scenario(data))
    assert native.run_by == native_run.NATIVE


@random_examples(10)
@given(
    st.sampled_from(["destager_fill.toml", "burst_absorb.toml", "full_dirty_cache.toml"]),
    st.sampled_from(["64KiB", "1MiB"]),
    st.sampled_from([{"4KiB": 1}, {"4KiB": 3, "64KiB": 1}, {"4MiB": 1}]),
    st.sampled_from(["WB+1", "WB+2"]),
    st.sampled_from(["always", "watermarks"]),
)
def test_random_hash_walks_with_replicas_are_bit_identical(
    file: str, unit: str, sizes: dict[str, int], policy: str, trigger: str
) -> None:
    """Order "hash" with replicas: the library's WB+0 destager scenarios on three hosts written
    back with one or two replicas, 1 s: each write's holders kept in the walk's pool and dropping
    their copies when its last block is destaged (the replica bytes, single-copy and short-of-peers
    bytes sampled), the same as the Python engine's."""
    data = _scenario(file, "base").model_dump(mode="json")
    for key in ("variants", "expect", "check", "events"):
        data.pop(key, None)
    data["run"] |= {"duration": 1.0, "warmup": 0.0}
    data["cluster"] |= {"hosts": 3, "peer_link": "10GbE"}
    data["cluster"]["destager"] |= {"order": "hash", "max_batch": unit, "delay": 0.0}
    data["cluster"]["destager"] |= {"trigger": trigger}
    for group in data["groups"]:
        group["policy"] = policy
        group.pop("hosts", None)
        group["workload"] |= {"sizes": sizes, "read_fraction": 0.0}
        group["workload"].pop("read_sizes", None)
        group["workload"].pop("write_sizes", None)
    _, native, _ = assert_both_engines_agree(load_scenario(data))
    assert native.run_by == native_run.NATIVE
    assert native.counters.replica_payload_bytes > 0


def _reads_from_warm_caches(data: dict[str, Any], capacity: str = "64GiB") -> dict[str, Any]:
    """A scenario dict made into the native engine's class: reads only, caches warm and large
    enough for every disk, no scheduled events (checks and variants dropped)."""
    for key in ("variants", "expect", "check", "events"):
        data.pop(key, None)
    data["cluster"].setdefault("cache", {})
    data["cluster"]["cache"] |= {"warm": True, "capacity": capacity}
    for group in data["groups"]:
        group["workload"]["read_fraction"] = 1.0
    return data


def _default_reads(working_set_scale: int, **duty: Any) -> Scenario:
    """scenarios/default.toml read-only from warm caches: four hosts, two open loops (zipf at
    120 IOPS; uniform at 4 MB/s with an on/off cycle) and a closed loop with a 5 ms think time;
    working sets ``working_set_scale`` times smaller (the warm caches are built in Python)."""
    data = _reads_from_warm_caches(_scenario("default.toml", "base").model_dump(mode="json"))
    for group in data["groups"]:
        workload = group["workload"]
        workload["working_set"] //= working_set_scale
        if workload.get("duty_cycle") is not None:
            workload["duty_cycle"] |= duty
    return load_scenario(data)


@pytest.mark.parametrize(
    "duty",
    [
        {},  # on for the first 4 s
        # on from 0.1 s to 0.3 s and from 0.6 s to 0.8 s: arrivals skip the off periods
        {"on": "0.2s", "off": "0.3s", "phase": "0.4s"},
    ],
)
def test_the_default_scenario_read_from_warm_caches_is_bit_identical(duty: dict[str, Any]) -> None:
    scenario = _default_reads(64, **duty)
    assert native_run.unsupported(scenario) is None
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=1.0, native=False)
    native = run_scenario(scenario, duration=1.0, native=True)
    assert python.counters.issued_ios > 1000
    assert_same(python, native)


@pytest.mark.parametrize(
    "workload",
    [
        {"mode": "open", "iops": 20_000.0, "arrivals": "uniform"},
        {"mode": "open", "throughput": "400MB/s", "sizes": {"4KiB": 1, "64KiB": 1}},
        # overloaded: the optane's 16 channels at about 10 us a read take about 1.6 M reads/s; an
        # open loop of 3 M/s piles reads up in the tier (hundreds in flight at the end)
        {"mode": "open", "iops": 3_000_000.0},
        {"mode": "open", "iops": 50_000.0, "duty_cycle": {"shape": "sine", "period": "7ms"}},
        {
            "mode": "open",
            "iops": 50_000.0,
            "access": "zipf",
            "duty_cycle": {"shape": "profile", "interval": "2ms", "levels": [2, 0, 0, 1, 5]},
        },
        {"think_time": "20us", "duty_cycle": {"shape": "onoff", "on": "3ms", "off": "4ms"}},
    ],
)
def test_every_arrival_process_is_bit_identical(workload: dict[str, Any]) -> None:
    """Open loops (evenly spaced, Poisson by bytes, overloaded, sine and profile cycles) and a
    closed loop with think time and an on/off cycle, on the optane at 16 outstanding."""
    scenario = _changed("validate_scm_optane_p4800x_anandtech.toml", "qd16-read", workload)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=0.02, native=False)
    native = run_scenario(scenario, duration=0.02, native=True)
    assert python.counters.issued_ios > 100
    assert_same(python, native)


@st.composite
def _native_scenarios(draw: st.DrawFn) -> Scenario:
    """The property tests' small random scenarios (tests/support/strategies.py: 2-4 hosts, 1-3
    groups of open or closed loops, duty cycles, any access and size mix, any tier, placement)
    made into the native engine's class, 0.3 s long with samples every 0.1 s; working sets of
    8-256 MiB (the warm caches are built in Python)."""
    data = _reads_from_warm_caches(draw(valid_scenarios()))
    for group in data["groups"]:
        group["workload"]["working_set"] = draw(st.sampled_from(["8MiB", "64MiB", "256MiB"]))
    data["run"] |= {"duration": 0.3, "sample_interval": 0.1}
    return load_scenario(data)


@random_examples(25)
@given(_native_scenarios())
def test_random_scenarios_of_its_class_are_bit_identical(scenario: Scenario) -> None:
    assert_both_engines_agree(scenario)


@st.composite
def _miss_scenarios(draw: st.DrawFn) -> Scenario:
    """The random scenarios above with caches cold or warm but small (1-64 MiB a host, so that
    reads miss), and an array the native engine runs: the HDD RAID 10, 6 or 5 first come first
    served or with the elevator, the all-flash array, with or without a controller read cache,
    drive buffers and command queueing; half of them with reads of up to 1 MiB."""
    data = _reads_from_warm_caches(draw(valid_scenarios()))
    for group in data["groups"]:
        group["workload"]["working_set"] = draw(st.sampled_from(["8MiB", "64MiB", "256MiB"]))
    data["run"] |= {"duration": 0.3, "sample_interval": 0.1}
    data["cluster"]["cache"] |= {
        "warm": draw(st.booleans()),
        "capacity": draw(st.sampled_from(["1MiB", "16MiB", "64MiB"])),
    }
    data["array"] = draw(
        st.sampled_from(
            [
                {"profile": "array-14x7200", "scheduling": "fcfs"},
                {"profile": "array-14x7200", "scheduling": "fcfs", "raid": "raid6"},
                {"profile": "nas-4bay", "scheduling": "fcfs"},
                {"profile": "afa-24x-nvme", "read_cache": 0, "scheduling": "fcfs"},
                # the elevator: reads larger than a stripe queued per spindle (RAID 10; the
                # 4-bay RAID 5, where a 1 MiB read puts 4-6 chunks on each spindle, in windows
                # of 2 with a queue depth of 2; the all-flash array's units)
                {"profile": "array-14x7200"},
                {"profile": "nas-4bay", "drive": {"profile": "sata-7200", "queue_depth": 2}},
                {"profile": "afa-24x-nvme", "read_cache": 0},
                # the controller's read cache and the drives' buffers (small: evicting)
                {"profile": "array-14x7200", "read_cache": "2MiB"},
                {"profile": "afa-24x-nvme", "read_cache": "1MiB", "scheduling": "fcfs"},
                {
                    "profile": "nas-4bay",
                    "read_cache": "1MiB",
                    "drive": {"profile": "sata-7200", "cache": "1MiB", "cache_segments": 4},
                },
                # the drives' command queueing (positioning; seek past a committed one)
                {
                    "profile": "array-14x7200",
                    "drive": {"profile": "sata-7200", "command_queueing": 8},
                },
                {
                    "profile": "nas-4bay",
                    "scheduling": "fcfs",
                    "drive": {
                        "profile": "sata-7200",
                        "command_queueing": 4,
                        "reorder": "seek",
                        "reorder_lag": 1,
                    },
                },
            ]
        )
    )
    if draw(st.booleans()):  # reads larger than a stripe
        for group in data["groups"]:
            group["workload"] |= {"sizes": {"4KiB": 1, "256KiB": 1, "1MiB": 1}, "read_sizes": None}
    return load_scenario(data)


@random_examples(40)
@given(_miss_scenarios())
def test_random_scenarios_with_misses_are_bit_identical(scenario: Scenario) -> None:
    assert_both_engines_agree(scenario)


def test_a_warm_cache_short_of_a_disk_misses_to_queueing_drives_bit_identically() -> None:
    """Warm caches holding a quarter of the disk: the native engine takes the run (no array part
    is left to the Python engine) and its misses reach drives that queue commands."""
    data = _optane_data()
    data["cluster"]["cache"] |= {"capacity": "4MiB", "warm": True}
    data["array"] = {
        "profile": "array-14x7200",
        "drive": {"profile": "sata-7200", "command_queueing": 8},
    }
    data["groups"][0]["workload"] |= {"working_set": "16MiB", "outstanding": 16}
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=0.05, native=False)
    native = run_scenario(scenario, duration=0.05, native=True)
    assert python.counters.cache_hits > 0 and python.counters.cache_misses > 0
    assert_same(python, native)


@st.composite
def _write_through_scenarios(draw: st.DrawFn) -> Scenario:
    """Random write-through scenarios (tests/support/strategies.py's, every group WT, reads and
    writes as drawn, serialized or not), caches cold or warm (1-64 MiB a host), an array (first
    come first served; the 15K array behind an 8 MiB controller write cache flushed at once or a
    2 MiB one flushed at a watermark; the HDD array with its read cache, the drives' buffers and
    command queueing, or in RAID 5 behind a 1 MiB cache flushed at a watermark), 0.3 s long."""
    data = draw(valid_scenarios(policies=("WT",)))
    data.pop("events", None)
    for group in data["groups"]:
        group["workload"]["working_set"] = draw(st.sampled_from(["8MiB", "64MiB", "256MiB"]))
    data["run"] |= {"duration": 0.3, "sample_interval": 0.1}
    data["cluster"]["cache"] = {
        "warm": draw(st.booleans()),
        "capacity": draw(st.sampled_from(["1MiB", "16MiB", "64MiB"])),
    }
    data["array"] = draw(
        st.sampled_from(
            [
                {"profile": "array-14x7200", "scheduling": "fcfs"},
                {"profile": "array-14x7200", "scheduling": "fcfs", "raid": "raid6"},
                {"profile": "nas-4bay", "scheduling": "fcfs"},
                {"profile": "array-24x15k", "controller_cache": "8MiB", "scheduling": "fcfs"},
                # a controller write cache flushed at a watermark: held, flushed as one sorted,
                # merged batch when half full; writes that do not fit go to the spindles
                {
                    "profile": "array-24x15k",
                    "controller_cache": "2MiB",
                    "cache_flush": "watermark",
                    "cache_high_watermark": 0.5,
                    "scheduling": "fcfs",
                },
                # the same at 90 % before the HDD array in RAID 5 swept by the elevator
                {
                    "profile": "array-14x7200",
                    "raid": "raid5",
                    "controller_cache": "1MiB",
                    "cache_flush": "watermark",
                    "cache_high_watermark": 0.9,
                },
                {
                    "profile": "afa-24x-nvme",
                    "read_cache": 0,
                    "controller_cache": 0,
                    "scheduling": "fcfs",
                },
                # the elevator, the controller read cache, the drives' buffers and queueing
                {
                    "profile": "array-14x7200",
                    "read_cache": "8MiB",
                    "drive": {
                        "profile": "sata-7200",
                        "cache": "1MiB",
                        "cache_segments": 4,
                        "command_queueing": 4,
                    },
                },
                {
                    "profile": "array-14x7200",
                    "raid": "raid5",
                    "scheduling": "fcfs",
                    "drive": {
                        "profile": "sata-7200",
                        "command_queueing": 8,
                        "reorder": "seek",
                        "reorder_lag": 1,
                    },
                },
            ]
        )
    )
    return load_scenario(data)


@random_examples(25)
@given(_write_through_scenarios())
def test_random_write_through_scenarios_are_bit_identical(scenario: Scenario) -> None:
    assert_both_engines_agree(scenario)


@st.composite
def _write_back_scenarios(draw: st.DrawFn) -> Scenario:
    """Random write-back and WT scenarios: each group WB+0, WB+1, WB+2 (as many peers as the 2-4
    hosts allow) or WT, replicas acknowledged from the peers' tiers or RAM ("memory") or sent
    after the acknowledgement ("async", through a send buffer of 4 MiB or 64 KiB), over 1-3
    peer links, switched or through a shared fabric, peers by ring or at random
    (tests/support/strategies.py's, its replicas compressed always or adaptively in a quarter);
    its destagers (1 MiB to 256 MiB, 1-4 flushers, 512 KiB or 1 MiB batches; any trigger, a
    delay, rate pacing), metadata writes and serialized writes as drawn, the tier's background
    reads under any scheduling ("fcfs", "priority", "weighted"), the arrays above or the HDD
    array's elevator (RAID 10 or 5) with its read cache, controller write cache (flushed at once
    or at a watermark), buffers and queueing as drawn; in a third of them a vMotion without a VM
    (1-4 streams, weight 0.5-3) from host 0 to host 1."""
    data = draw(_write_through_scenarios().map(lambda scenario: scenario.model_dump(mode="json")))
    hosts = data["cluster"]["hosts"]
    policies = [policy for policy in ("WB+0", "WB+1", "WB+2", "WT") if REPLICAS[policy] < hosts]
    for group in data["groups"]:
        group["policy"] = draw(st.sampled_from(policies))
        group["replication"] = draw(st.sampled_from(["sync", "sync", "memory", "async"]))
        if group["replication"] == "async":
            group["replication_buffer"] = draw(st.sampled_from(["4MiB", "64KiB"]))
    if draw(st.integers(0, 2)) == 0:
        data["events"] = [
            {
                "kind": "vmotion",
                "at": draw(st.sampled_from([0.0, 0.05, 0.15])),
                "source_host": 0,
                "target_host": 1,
                "size": draw(st.sampled_from(["1MiB", "16MiB"])),
                "streams": draw(st.integers(1, 4)),
                "weight": draw(st.sampled_from([0.5, 1.0, 3.0])),
            }
        ]
    tier = data["cluster"]["tier"]
    if draw(st.booleans()):
        tier["scheduling"] = draw(st.sampled_from(["fcfs", "priority", "weighted"]))
    destager = data["cluster"]["destager"]
    if draw(st.booleans()):
        high, low = draw(st.sampled_from([(0.5, 0.45), (0.3, 0.1), (0.9, 0.0)]))
        destager |= {
            "trigger": draw(st.sampled_from(["watermarks", "idle"])),
            "high_watermark": high,
            "low_watermark": low,
            "idle_time": draw(st.sampled_from([0.001, 0.02])),
        }
    if draw(st.booleans()):
        destager["delay"] = draw(st.sampled_from([0.002, 0.05]))
    if draw(st.booleans()):
        destager |= {"pacing": "rate", "rate": draw(st.sampled_from(["5MB/s", "100MB/s"]))}
    if draw(st.booleans()):
        # the HDD array's elevator sweeping the writes' requests and the reads larger than a
        # stripe, its controller read cache, the drives' buffers and command queueing as drawn
        data["array"] = {
            "profile": "array-14x7200",
            "raid": draw(st.sampled_from(["raid10", "raid5"])),
            "read_cache": draw(st.sampled_from([0, "8MiB"])),
            # lines of the writes' alignment, larger, and of no power of two
            "read_cache_line": draw(st.sampled_from(["4KiB", "64KiB", "6KiB"])),
            "controller_cache": draw(st.sampled_from([0, "1MiB", "4MiB"])),
            "cache_flush": draw(st.sampled_from(["immediate", "watermark"])),
            "cache_high_watermark": draw(st.sampled_from([0.5, 0.9])),
            "drive": {
                "profile": "sata-7200",
                "cache": draw(st.sampled_from([0, "1MiB"])),
                "command_queueing": draw(st.sampled_from([1, 8])),
            },
        }
    return load_scenario(data)


@random_examples(40)
@given(_write_back_scenarios())
def test_random_write_back_scenarios_are_bit_identical(scenario: Scenario) -> None:
    assert_both_engines_agree(scenario)


@pytest.mark.parametrize("policy", ["WT", "WB+0"])
def test_serialized_writes_are_bit_identical(policy: str) -> None:
    """sync_serialize: each VM's writes reach its tier one at a time, in issue order (a write's
    turn comes as an event when the one before it is recorded); with WB+0 behind 4 MiB buffers
    the turns also wait for room."""
    scenario = _default_policy(policy, {"profile": "array-14x7200", "scheduling": "fcfs"}, True)
    data = scenario.model_dump(mode="json")
    data["cluster"]["destager"] |= {"capacity": "4MiB"}
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=1.0, native=False)
    native = run_scenario(scenario, duration=1.0, native=True)
    assert len(python.unfinished) > 0  # writes waiting for their turn at the end
    assert_same(python, native)


@pytest.mark.parametrize("batched", [True, False])
def test_metadata_writes_are_bit_identical(batched: bool) -> None:
    """metadata_write: each WB+0 write's data, then its metadata record on the tier (its own
    write, or batched: the writes whose data is done while one is in flight join the next, group
    commit), then the destage buffer; the optane at 16 outstanding, 30 % reads."""
    data = _optane_data()
    data["groups"][0] |= {"metadata_write": True, "metadata_batched": batched}
    data["groups"][0]["workload"] |= {"read_fraction": 0.3, "outstanding": 16}
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=0.02, native=False)
    native = run_scenario(scenario, duration=0.02, native=True)
    assert python.counters.destage_accepted_bytes > 0
    assert_same(python, native)


def _async_scenario(policy: str, send_buffer: str, group: dict[str, Any]) -> Scenario:
    """A closed loop of 16 writers (20 % reads) of 64 KiB under ``policy`` with "async"
    replication through ``send_buffer`` a peer, on 3 hosts of SATA flash with 1GbE peer ports
    (a copy takes about 0.56 ms on the wire, longer than the local write: copies pile up behind
    the acknowledgements), sampled every millisecond; ``group``'s other fields."""
    return load_scenario(
        {
            "name": "async",
            "run": {"duration": "0.5s", "warmup": 0, "seed": 3, "sample_interval": "1ms"},
            "cluster": {
                "hosts": 3,
                "tier": "sata-ssd-s3700-field",
                "peer_link": "1GbE",
                "storage_link": "10GbE",
            },
            "array": {"profile": "array-14x7200"},
            "groups": [
                {
                    "name": "g",
                    "policy": policy,
                    "replication": "async",
                    "replication_buffer": send_buffer,
                    "workload": {
                        "mode": "closed",
                        "outstanding": 16,
                        "sizes": "64KiB",
                        "read_fraction": 0.2,
                        "working_set": "1GiB",
                    },
                }
                | group,
            ],
        }
    )


@pytest.mark.parametrize(
    ("policy", "send_buffer", "group", "blocked"),
    [
        # room for every copy of the run (the writes outpace the port about 7 to 1 and fill
        # 4 MiB in a few ms): the writes lag, none waits
        ("WB+1", "1GiB", {}, False),
        ("WB+1", "64KiB", {}, True),  # one copy on its way a peer: the writes wait for room
        ("WB+2", "128KiB", {}, True),
        # the metadata record after the copies are sent, an unbatched log
        ("WB+1", "1GiB", {"metadata_write": True, "metadata_batched": False}, False),
        ("WB+1", "1GiB", {"metadata_write": True}, False),  # batched (group commit)
    ],
)
def test_asynchronous_replication_is_bit_identical(
    policy: str, send_buffer: str, group: dict[str, Any], blocked: bool
) -> None:
    """replication = "async" (engine/lag.pxi): each write acknowledged once its local part is
    done and its copies are in the send buffer, the copies following; the data at risk (writes
    acknowledged that no copy has reached yet, ReplicaLag) sampled every millisecond, the writes
    that waited for room with its time as network time, and the replica bytes held as the
    copies arrive and the writes are destaged: the same records, samples and counters."""
    scenario = _async_scenario(policy, send_buffer, group)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, native=False)
    native = run_scenario(scenario, native=True)
    assert native.run_by == native_run.NATIVE
    assert max(sample.data_at_risk_bytes for sample in python.samples) > 0
    fields = assert_same(python, native)
    # network time (ms, past the rounding of write_components' differences): room waited for
    waited = fields[NETWORK][(fields[IS_WRITE] & 1) == 1] > 1e-6
    assert bool(np.any(waited)) == blocked


def test_the_asynchronous_state_is_counted() -> None:
    """Engine.state_bytes counts the asynchronous writes' state too: 30 ms into a run under WB+1
    with a 1 GiB send buffer (the first writes' copies pile up behind their acknowledgements,
    about 2 MB a host), the writes whose copies are not all in (a pool of 64-byte AsyncWrites)
    and the lag's distinct items (48-byte entries in a table kept at most half full)."""
    scenario = _async_scenario("WB+1", "1GiB", {})
    model = build(scenario, scenario.run.seed, native=True)
    assert model.native is not None
    native_run.run(model, 0.03)
    state = model.native.state_bytes()
    assert state["async_writes"] > 0 and state["lag_items"] > 0
    assert state["async_pool_bytes"] % 64 == 0
    assert state["async_pool_bytes"] >= 64 * state["async_writes"]
    assert state["lag_table_bytes"] >= 2 * 48 * state["lag_items"]


@pytest.mark.parametrize("variant", ["base", "db-on-wb1"])
def test_the_default_scenario_as_written_is_bit_identical(variant: str) -> None:
    """scenarios/default.toml as written (WB+0, WB+1 and WB+2 groups over the shared 1GbE peer
    ports, the 4 GiB vMotion at 10 s competing with the replicas on host0's port, the warm-up),
    10.5 s: the records after the warm-up, the series, counters (replica bytes held and sent)
    and the vMotion's record agree."""
    scenario = _scenario("default.toml", variant)
    assert native_run.unsupported(scenario) is None
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=10.5, native=False)
    native = run_scenario(scenario, duration=10.5, native=True)
    assert python.counters.replica_bytes_held > 0 and python.counters.replica_payload_bytes > 0
    assert [vmotion["start_s"] for vmotion in python.vmotions] == [10.0]
    assert_same(python, native)
    assert repr(native.vmotions) == repr(python.vmotions)  # (nan for the end not reached)


def _default_replicated(
    policy: str,
    array: dict[str, Any],
    destager: dict[str, Any],
    tier: dict[str, Any] | None = None,
    **group: Any,
) -> Scenario:
    """scenarios/default.toml without its event, every group under ``policy`` (and ``group``'s
    settings), its destagers changed by ``destager``, the tier ``tier`` if given, no warm-up."""
    data = _default_policy(policy, array).model_dump(mode="json")
    data["cluster"]["destager"] |= destager
    if tier is not None:
        data["cluster"]["tier"] = tier
    for spec in data["groups"]:
        spec |= group
    return load_scenario(data)


_FCFS = {"profile": "array-14x7200", "scheduling": "fcfs"}


@pytest.mark.parametrize("policy", ["WB+1", "WB+2"])
@pytest.mark.parametrize(
    ("case", "array", "destager", "tier", "group"),
    [
        # RAID 5 with 16 KiB stripes, 16 MiB buffers, 128 KiB batches: read-modify-writes, whole
        # rows, the large writes cut in pieces
        (
            "raid5",
            {"profile": "array-14x7200", "scheduling": "fcfs", "raid": "raid5", "stripe": "16KiB"},
            {"capacity": "16MiB", "max_batch": "128KiB"},
            None,
            {},
        ),
        # 4 MiB buffers, one flusher, 256 KiB batches, a first-come-first-served tier: the
        # acknowledged writes wait for room (with their holders)
        (
            "writers-wait",
            _FCFS,
            {"capacity": "4MiB", "concurrency": 1, "max_batch": "256KiB"},
            {"profile": "sata-ssd-s3700-field", "scheduling": "fcfs"},
            {},
        ),
        # 8 MiB buffers read back as background requests under "weighted" scheduling, beside the
        # peers' replica writes on the same tiers
        (
            "weighted",
            _FCFS,
            {"capacity": "8MiB"},
            {"profile": "sata-ssd-s3700-field", "scheduling": "weighted"},
            {},
        ),
        # acknowledged from the peers' RAM ("memory"): the legs' tier writes off the path
        ("memory", _FCFS, {"capacity": "8MiB"}, None, {"replication": "memory"}),
        # a metadata record after the data, batched, then the legs
        ("metadata", _FCFS, {"capacity": "8MiB"}, None, {"metadata_write": True}),
    ],
)
def test_replicated_writes_are_bit_identical(
    policy: str,
    case: str,
    array: dict[str, Any],
    destager: dict[str, Any],
    tier: dict[str, Any] | None,
    group: dict[str, Any],
) -> None:
    """Every group of the default WB+1 or WB+2: each write's legs cross the 1GbE peer ports to
    the next hosts, are written on the peers' tiers (their replica bytes held until the write is
    destaged) and acknowledged back; the write is acknowledged at the slowest of its local part
    and its legs, then enters the destage buffer with its holders."""
    scenario = _default_replicated(policy, array, destager, tier, **group)
    assert native_run.unsupported(scenario) is None
    assert build(scenario, 1, native=True).native is not None
    python = run_scenario(scenario, duration=1.5, native=False)
    native = run_scenario(scenario, duration=1.5, native=True)
    assert python.counters.destage_batches > 20 and python.counters.replica_payload_bytes > 0
    fields = assert_same(python, native)
    # some writes acknowledged by a leg: its peer's tier time, or from its RAM only the network
    slowest_leg = fields[NETWORK] if case == "memory" else fields[PEER_TIER]
    assert np.any(slowest_leg[fields[IS_WRITE] & 1 == 1] > 0)
    if case == "writers-wait":
        assert np.any(fields[DESTAGE_WAIT] > 0)


def test_replicas_over_a_shared_fabric_and_serialized_are_bit_identical() -> None:
    """WB+2 over two peer links per host through the shared peer fabric (three ports a leg),
    each VM's writes serialized, 4 MiB buffers."""
    data = _default_replicated("WB+2", _FCFS, {"capacity": "4MiB"}).model_dump(mode="json")
    data["cluster"] |= {"peer_fabric": "shared", "peer_links": 2}
    for group in data["groups"]:
        group["workload"]["sync_serialize"] = True
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=1.0, native=False)
    native = run_scenario(scenario, duration=1.0, native=True)
    assert python.counters.replica_bytes_held > 0
    assert_same(python, native)


def test_vmotions_without_a_vm_are_bit_identical() -> None:
    """The default as written with two vMotions without a VM instead of its own: 64 MiB in four
    streams at weight 2 from host 0 to host 1 over two peer links at 0.3 s, 16 MiB in one stream
    at weight 0.5 from host 2 to host 1 at 0.5 s; both finish within the 2 s run (their records'
    end_s), sharing the ports with the replicas."""
    data = _scenario("default.toml", "base").model_dump(mode="json")
    for key in ("variants", "expect", "check"):
        data.pop(key, None)
    data["run"]["warmup"] = 0.0
    data["cluster"]["peer_links"] = 2
    data["events"] = [
        {
            "kind": "vmotion",
            "at": 0.3,
            "source_host": 0,
            "target_host": 1,
            "size": "64MiB",
            "streams": 4,
            "weight": 2.0,
        },
        {"kind": "vmotion", "at": 0.5, "source_host": 2, "target_host": 1, "size": "16MiB"}
        | {"weight": 0.5},
    ]
    scenario = load_scenario(data)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=2.0, native=False)
    native = run_scenario(scenario, duration=2.0, native=True)
    assert [vmotion["start_s"] for vmotion in python.vmotions] == [0.3, 0.5]
    assert all(0.3 < vmotion["end_s"] < 2.0 for vmotion in python.vmotions)
    assert_same(python, native)
    assert native.vmotions == python.vmotions


@pytest.mark.parametrize(
    "variant", ["base", "zeros", "tengig", "tengig-always", "lone-always", "nocomp"]
)
def test_compressed_replicas_are_bit_identical(variant: str) -> None:
    """compression_1gbe's variants for 1.5 s (samples every 0.1 s): replicas compressed always
    (the leg's flow starts after its CPU time) or adaptively (while the sending port's last
    sampled utilization, scaled up while compressing, is at least 70 %), or not."""
    scenario = _scenario("compression_1gbe.toml", variant)
    assert native_run.unsupported(scenario) is None
    python = run_scenario(scenario, duration=1.5, native=False)
    native = run_scenario(scenario, duration=1.5, native=True)
    if variant in ("base", "zeros", "tengig-always", "lone-always"):
        assert python.counters.compression_saved_bytes > 0
    assert_same(python, native)
