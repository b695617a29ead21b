"""Each callback state machine of :mod:`simcache.sim.components.io_steps` stepped against the
generator it stands in for, in isolation (issue 33, point 5), on a small hand-built cluster: three
hosts of the default scenario, one WB+2 VM on the first, its I/Os issued at hand-drawn times,
nothing else running but the destagers' flushers.

Each test builds the cluster twice, starts the same I/Os in each, once as the state machine and once
as its reference generator (driven by :class:`~simcache.sim.kernel.clock.Resumer`, as a run
built with ``paths="generators"`` drives it), steps both event queues one event at a time and
requires the same events, bit for bit: each processed entry's time and key (its priority and event
id, so no event is added, dropped or reordered), the I/Os' completion order and times, the records,
and the counters they touch. No tolerance: the two forms must compute the same floats in the same
order.

- :class:`ReadHit` (:meth:`VM.start`'s one scheduled callback for a hit) against
  :func:`~simcache.sim.components.vm_paths.read_path`'s ``sleep``;
- :class:`ArrayRead` against the generator written out below (:func:`_array_read_steps`: the form it
  replaced; the VM's own generators start an ``ArrayRead`` for a miss, so they cannot be its
  reference);
- :class:`ReplicaLeg` (its ``arrived`` callback on the transfer's Signal) against a generator that
  waits for the transfer and then does the peer's part (:func:`_leg_steps`);
- :class:`WriteBack` against :func:`~simcache.sim.components.vm_paths.write_back`, through a
  destage buffer small enough that writes wait for room, and a tier failure that fails the writes
  still waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pytest
import simpy

from simcache.physics.cluster import PortName
from simcache.sim.collect import RecordBuffer
from simcache.sim.components.array import Array
from simcache.sim.components.host import Host
from simcache.sim.components.io_steps import ReplicaLeg
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.vm import VM
from simcache.sim.kernel.clock import Clock, clock_of, current_time, schedule_at
from simcache.sim.kernel.detached import run_detached
from simcache.sim.kernel.entries import first_queued
from simcache.sim.kernel.signals import Signal, Wait
from simcache.sim.kernel.waits import sleep
from simcache.spec import load_scenario
from simcache.workloads.generators import IOStream

KIB = 1024
HOSTS = 3
SEED = 11
DISK = 4 * 1024**3  # the VM's disk on the array (bytes)
SIZES = (4 * KIB, 8 * KIB, 64 * KIB, 256 * KIB)
SPACING = 16 * 1024**2  # I/Os start this far apart on the disk: no two share a cache line
DESTAGE_WAIT = 8  # a record's destage_wait field (simcache.sim.collect.RECORD_FIELDS)
# a destage buffer that a burst of writes fills: some wait for room (WriteBack's third phase)
SMALL_BUFFER = 512 * KIB


@dataclass
class World:
    """One hand-built cluster: its clock, hosts, the VM on host 0, and what the test logs."""

    env: simpy.Environment
    clock: Clock
    hosts: list[Host]
    vm: VM
    records: RecordBuffer
    # (time, I/O name) as each I/O finishes or fails
    done: list[tuple[float, str]] = field(default_factory=list)


def _world(buffer: int | None = None) -> World:
    """The cluster, built as :func:`simcache.sim.engine.build` builds one (its flushers as
    callbacks in both forms)."""
    scenario = load_scenario("default")
    cluster = scenario.cluster
    if buffer is not None:
        cluster = cluster.model_copy(
            update={"destager": cluster.destager.model_copy(update={"capacity": buffer})}
        )
    group = scenario.groups[0]
    assert group.policy == "WB+2" and group.replication == "sync" and not group.metadata_write
    env = simpy.Environment()
    clock = clock_of(env)
    network = FlowNetwork(env)
    array = Array(
        scenario.array, UniformStream(np.random.SeedSequence(SEED, spawn_key=(0,))), [DISK]
    )
    array_rx = Port(PortName(None, "array", None, "rx"), scenario.array.port)
    array_tx = Port(PortName(None, "array", None, "tx"), scenario.array.port)
    hosts = [
        Host(
            env,
            i,
            cluster,
            UniformStream(np.random.SeedSequence(SEED, spawn_key=(1, i))),
            network,
            array,
            array_rx,
            array_tx,
        )
        for i in range(HOSTS)
    ]
    records = RecordBuffer()
    stream = IOStream(group.workload, np.random.SeedSequence(SEED, spawn_key=(2,)))
    vm = VM(
        env,
        0,
        "vm",
        0,
        hosts[0],
        (hosts[1], hosts[2]),
        False,
        stream,
        cluster.compression,
        records,
        spec=group,
    )
    for host in hosts:
        host.destager.promised = [vm.peer_loss.promised]
    return World(env, clock, hosts, vm, records)


def _at(world: World, at: float, action: Callable[[], None]) -> None:
    schedule_at(world.clock, at, Signal(None, lambda _: action()))


def _detached(
    steps: Callable[[], Generator[Wait, Any, None]], finished: Signal | None = None
) -> None:
    """Start the generator ``steps()`` makes now, as a run built with ``paths="generators"``
    starts an I/O."""
    run_detached(steps(), finished)


def _finished(world: World, name: str) -> Signal:
    """The Signal processed when I/O ``name`` is done or failed: logs the time."""
    return Signal(None, lambda _: world.done.append((current_time(world.clock), name)))


def _step_all(world: World, until: float) -> list[tuple[float, int]]:
    """Process the events up to ``until`` one at a time; each one's (time, key) in the order
    processed."""
    clock = world.clock
    processed: list[tuple[float, int]] = []
    while (entry := first_queued(clock)) is not None and entry.time <= until:
        processed.append((entry.time, int(entry.key)))
        clock.step()
    return processed


def _outcome(world: World, until: float) -> dict[str, Any]:
    """Everything the two forms must agree on, after stepping ``world`` to ``until``."""
    processed = _step_all(world, until)
    vm = world.vm
    return {
        "processed": processed,
        "events": world.clock.eid,
        "done": world.done,
        "records": world.records.rows(),
        "in_flight": (dict(vm.reads_in_flight), dict(vm.writes_in_flight)),
        "hosts": [
            (
                h.replica_bytes,
                h.replica_payload_sent,
                h.destager.accepted_bytes,
                h.destager.destaged_bytes,
                h.cache.hits,
                h.cache.misses,
            )
            for h in world.hosts
        ],
    }


def _plan(seed: int, count: int, spread: float) -> list[tuple[float, int, int]]:
    """``count`` I/Os (time, size, offset): times drawn over ``spread`` seconds, many close
    enough to contend, a few at equal times (ties ordered by event id), each at its own place on
    the disk."""
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0.0, spread, count))
    times[1::5] = times[0::5][: len(times[1::5])]  # every fifth pair issued at the same instant
    sizes = rng.choice(SIZES, count)
    offsets = rng.choice(DISK // SPACING, count, replace=False) * SPACING
    return [(float(t), int(s), int(o)) for t, s, o in zip(times, sizes, offsets, strict=True)]


# -- ReadHit: VM.start's one scheduled callback for a read hit, against read_path's sleep --


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_read_hits_as_callbacks_step_as_the_generator(seed: int) -> None:
    plan = _plan(seed, 40, 0.02)

    def run(callbacks: bool) -> dict[str, Any]:
        world = _world()
        vm = world.vm
        for _, size, offset in plan:
            vm.host.cache.insert(vm.index, offset, size)  # every read hits
        for k, (at, size, offset) in enumerate(plan):
            finished = _finished(world, f"read {k}")
            if callbacks:
                _at(world, at, partial(vm.start, False, size, offset, finished))
            else:
                _at(world, at, partial(_detached, partial(vm.io, False, size, offset), finished))
        return _outcome(world, 1.0)

    steps, reference = run(callbacks=True), run(callbacks=False)
    assert steps == reference
    # all recorded, all hits
    assert len(steps["records"]) == len(plan) and steps["hosts"][0][4] == len(plan)


# -- ArrayRead: against the generator it replaced --


def _array_read_steps(vm: VM, size: int, offset: int) -> Generator[Wait, Any, None]:
    """A read miss from the array as a generator: what :class:`ArrayRead` does, one wait per
    phase."""
    number = vm.issued
    vm.issued = number + 1
    clock = vm.clock
    issued = current_time(clock)
    vm.reads_in_flight[number] = issued
    host = vm.host
    assert not host.cache.lookup(vm.index, offset, size)
    now = current_time(clock)
    request_arrives = now + host.storage_tx.acknowledgement
    array_done = host.array.read(request_arrives, vm.index, offset, size)
    yield sleep(clock, array_done - now)
    wire, packets = host.storage_tx.framing[size]
    yield host.network.send(
        (host.array_tx, host.storage_rx), wire, packets, latency=host.storage_tx.latency
    )
    vm.miss_delivered(
        host, number, size, offset, issued, now - issued, array_done - request_arrives
    )


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_array_reads_as_callbacks_step_as_the_generator(seed: int) -> None:
    plan = _plan(seed, 30, 0.2)

    def run(callbacks: bool) -> dict[str, Any]:
        world = _world()
        vm = world.vm
        for k, (at, size, offset) in enumerate(plan):
            finished = _finished(world, f"read {k}")
            if callbacks:  # VM.start: a miss with nothing to wait for first is an ArrayRead
                _at(world, at, partial(vm.start, False, size, offset, finished))
            else:
                _at(
                    world,
                    at,
                    partial(_detached, partial(_array_read_steps, vm, size, offset), finished),
                )
        return _outcome(world, 5.0)

    steps, reference = run(callbacks=True), run(callbacks=False)
    assert steps == reference
    # all recorded, all misses
    assert len(steps["records"]) == len(plan) and steps["hosts"][0][5] == len(plan)


# -- ReplicaLeg: its arrival callback against a generator that waits for the transfer --


def _leg_steps(
    vm: VM, peer: Host, path: tuple[Port, ...], size: int, legs: list[tuple[float, float, float]]
) -> Generator[Wait, Any, None]:
    """One replica leg as a generator (no compression, a synchronous copy): send, wait, write the
    peer's tier."""
    host = vm.host
    clock = vm.clock
    host.replica_payload_sent += float(size)
    wire, packets = path[0].framing[float(size)]
    yield host.network.send(path, wire, packets, vm.peer_latency, 0.0)
    now = current_time(clock)
    done = peer.tier.submit(now, size, True, vm.gc_factor)
    if peer.tier_up:
        peer.replica_bytes += size
    legs.append((now, done, done + vm._ack_time))


def _leg(vm: VM, peer: Host, path: tuple[Port, ...], size: int, legs: list[ReplicaLeg]) -> None:
    legs.append(vm.replicate(peer, path, size))


@pytest.mark.parametrize("seed", [7, 8])
def test_replica_legs_as_callbacks_step_as_the_generator(seed: int) -> None:
    plan = _plan(seed, 30, 0.05)

    def run(callbacks: bool) -> tuple[dict[str, Any], list[tuple[float, float, float]]]:
        world = _world()
        vm = world.vm
        peers = vm.peers
        paths = tuple(vm.host.peer_path(peer) for peer in peers)
        legs: list[ReplicaLeg] = []
        times: list[tuple[float, float, float]] = []
        for k, (at, size, _) in enumerate(plan):
            peer, path = peers[k % 2], paths[k % 2]
            if callbacks:
                _at(world, at, partial(_leg, vm, peer, path, size, legs))
            else:
                _at(world, at, partial(_detached, partial(_leg_steps, vm, peer, path, size, times)))
        outcome = _outcome(world, 2.0)
        if callbacks:
            times = [(leg.arrived_at, leg.peer_done, leg.acked) for leg in legs]
        return outcome, sorted(times)

    (steps, step_times), (reference, reference_times) = run(callbacks=True), run(callbacks=False)
    assert steps == reference
    assert step_times == reference_times and len(step_times) == len(plan)
    assert all(arrived < done < acked for arrived, done, acked in step_times)


# -- WriteBack: against write_back --


@pytest.mark.parametrize(("seed", "fail_at"), [(9, None), (10, None), (12, 0.03)])
def test_write_backs_as_callbacks_step_as_the_generator(seed: int, fail_at: float | None) -> None:
    """A burst into a small destage buffer: writes wait for room. With ``fail_at``, the VM's host
    loses its tier then: the writes waiting for room, or still in flight, fail (nothing
    recorded), in both forms alike."""
    plan = _plan(seed, 40, 0.02)

    def run(callbacks: bool) -> dict[str, Any]:
        world = _world(buffer=SMALL_BUFFER)
        vm = world.vm
        for k, (at, size, offset) in enumerate(plan):
            finished = _finished(world, f"write {k}")
            if callbacks:  # VM.start: a synchronous write-back write with its peers is a WriteBack
                _at(world, at, partial(vm.start, True, size, offset, finished))
            else:
                _at(world, at, partial(_detached, partial(vm.io, True, size, offset), finished))
        if fail_at is not None:
            host = world.hosts[0]

            def fail() -> None:
                host.tier_up = False
                host.destager.fail()

            _at(world, fail_at, fail)
        outcome = _outcome(world, 3.0)
        outcome["waited"] = world.hosts[0].destager.waiting_writers
        return outcome

    steps, reference = run(callbacks=True), run(callbacks=False)
    assert steps == reference
    assert len(steps["done"]) == len(plan)  # every write finished or failed
    recorded = len(steps["records"])
    if fail_at is None:
        assert recorded == len(plan)
        # some waited for room (the third phase)
        assert any(record[DESTAGE_WAIT] > 0 for record in steps["records"])
    else:
        # some writes completed before the failure, the others failed
        assert 0 < recorded < len(plan)
