"""Build the SimPy model of a scenario, run it, and hand its figures on as a plain record.

:func:`run_scenario` builds (:func:`build`), samples and runs a scenario and returns a
:class:`~simcache.sim.record.RunRecord` (:func:`simcache.sim.recording.record_run`, re-exported
here): the results layer reads that, never the model.

Randomness: every component's stream is seeded as a ``numpy.random.SeedSequence`` of the
run's seed with a spawn key that names the component
(:func:`simcache.workloads.seeds.stream_seed`):
the array, host ``i``, and the VM ``k`` of group ``g`` on host ``h``. Adding a
host, a VM or a group (at the end of the list) never changes another
component's draws.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Generator
from typing import Any, Literal

import simpy

from simcache.physics.cluster import PortName, ring_peers, tier_units
from simcache.sim import host_events, native_run
from simcache.sim.built import Model
from simcache.sim.collect import RecordBuffer
from simcache.sim.components.array import Array
from simcache.sim.components.cache import holds_whole
from simcache.sim.components.host import Host
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.vm import VM
from simcache.sim.control import POLL_EVENTS, Cancel, Limits, check_work
from simcache.sim.degradations import array_event, slowdown
from simcache.sim.drivers import start_workload
from simcache.sim.kernel.clock import clock_of, current_time, events_scheduled, run_until
from simcache.sim.memory import MemoryWatch
from simcache.sim.outages import outage
from simcache.sim.record import RunRecord, SeriesSample
from simcache.sim.recording import record_run
from simcache.sim.stream import StreamStats
from simcache.spec import (
    ArrayDegraded,
    ArrayRebuild,
    DeviceSlow,
    Group,
    HostFailure,
    LinkSlow,
    Scenario,
    VMotion,
    load_scenario,
)
from simcache.spec.events import DeviceFailure
from simcache.traces.trace import Trace
from simcache.workloads.generators import BLOCK, IOStream, StreamTables
from simcache.workloads.replay import TraceStream
from simcache.workloads.seeds import stream_seed

__all__ = ["Paths", "Progress", "build", "record_run", "run_scenario"]

Progress = Callable[[float], None]
"""Called with the fraction of the run done (0 to 1) at each sample."""
Paths = Literal["callbacks", "generators"]
"""How a run's hot paths run: :func:`build`."""

_ARRAY, _HOST, _WORKLOAD, _PLACEMENT = range(4)  # first element of each component's spawn key


def build(
    scenario: Scenario,
    seed: int,
    *,
    paths: Paths = "callbacks",
    native: bool = False,
    stop_requested: Callable[[], bool] | None = None,
) -> Model:
    """Create every component of ``scenario`` in a fresh SimPy environment.

    ``paths``: the hot paths (arrivals, closed-loop slots, common I/O paths, flushers) as callback
    state machines, or as the generators those mirror event for event (``"generators"``: the
    reference the callbacks are checked against, ``tests/sim/test_fast_paths.py``). ``native``:
    the VMs' I/O runs in the native engine if it supports the model (:mod:`simcache.sim.native_run`;
    ``model.native`` says whether it does). ``stop_requested``: the run's stop test, which a warm
    cache's fill heeds.
    """
    env = simpy.Environment()
    clock = clock_of(env)
    clock.callbacks = paths == "callbacks"
    network = FlowNetwork(env)
    array_stream = UniformStream(stream_seed(seed, (_ARRAY,)))
    array = Array(scenario.array, array_stream, _vm_disk_bytes(scenario))
    array_rx = Port(PortName(None, "array", None, "rx"), scenario.array.port)
    array_tx = Port(PortName(None, "array", None, "tx"), scenario.array.port)
    fabric = (
        Port(PortName(None, "fabric"), scenario.cluster.peer_link)
        if scenario.cluster.peer_fabric == "shared"
        else None
    )
    hosts = [
        Host(
            env,
            i,
            scenario.cluster,
            UniformStream(stream_seed(seed, (_HOST, i))),
            network,
            array,
            array_rx,
            array_tx,
            fabric,
        )
        for i in range(scenario.cluster.hosts)
    ]
    buffer = RecordBuffer()  # hands the records on every BUFFER_ROWS (run_scenario sets where to)
    vms: list[VM] = []
    for g, group in enumerate(scenario.groups):
        replayed = _replayed_devices(scenario, group)
        tables = StreamTables(group.workload) if replayed is None else None  # (its VMs share it)
        for host_index in scenario.group_hosts(group):
            for k in range(group.vms_per_host):
                host = hosts[host_index]
                workload = group.workload
                stream: IOStream | TraceStream
                if replayed is not None:
                    trace, devices = replayed
                    stream = TraceStream(workload, trace, devices.pop(0))
                else:
                    stream = IOStream(
                        workload, stream_seed(seed, (_WORKLOAD, g, host_index, k)), tables
                    )
                vm = VM(
                    env,
                    index=len(vms),
                    name=f"{group.name}-h{host_index}-{k}",
                    group=g,
                    host=host,
                    peers=_peers(
                        scenario,
                        group,
                        host_index,
                        hosts,
                        UniformStream(stream_seed(seed, (_PLACEMENT, g, host_index, k))),
                    ),
                    write_through=group.policy == "WT",
                    stream=stream,
                    compression=scenario.cluster.compression,
                    records=buffer,
                    spec=group,
                )
                vms.append(vm)
    promised = [vm.peer_loss.promised for vm in vms]
    for host in hosts:
        host.destager.promised = promised
    reach = _vm_reach_bytes(scenario)
    if scenario.cluster.cache.warm:
        _warm_caches(hosts, vms, reach, scenario.moves_vms, stop_requested)
    model = Model(
        env, clock, scenario, network, array, array_rx, array_tx, hosts, vms, buffer, fabric
    )
    if native and paths == "callbacks":
        model.native = native_run.prepare(model, reach)
    if model.native is None:
        for vm in vms:
            start_workload(env, vm)
    for event in scenario.events:
        if isinstance(event, VMotion):
            if model.native is not None and event.vm is None:
                native_run.start_vmotion(model, event)  # (the selector takes no other event)
            else:
                env.process(host_events.vmotion(model, event))
        elif isinstance(event, HostFailure):
            env.process(host_events.host_failure(model, event))
        elif isinstance(event, DeviceFailure):
            env.process(host_events.device_failure(model, event))
        elif isinstance(event, ArrayDegraded | ArrayRebuild):
            env.process(array_event(model, event))
        elif isinstance(event, LinkSlow | DeviceSlow):
            env.process(slowdown(model, event))
        else:
            env.process(outage(model, event))
    return model


def _warm_caches(
    hosts: list[Host],
    vms: list[VM],
    disk_bytes: list[int],
    moves: bool,
    stop_requested: Callable[[], bool] | None,
) -> None:
    """Start each host's read cache holding its VMs' disks from their start (``cache.warm``):
    each VM gets an equal share of the cache's lines, as much of its disk (the bytes its I/Os
    reach, :func:`_vm_reach_bytes`) as that share holds. A cache whose share holds each of its VMs'
    whole disks holds them without an entry per line (:meth:`ReadCache.hold_whole`), unless a VM
    can move (``moves``: :attr:`Scenario.moves_vms`). A cache filled line by line stops filling
    once ``stop_requested()`` (the run's deadline or cancel token: millions of lines take seconds).
    """
    for host in hosts:
        residents = [vm for vm in vms if vm.host is host]
        if not residents:
            continue
        cache = host.cache
        needed = {vm.index: -(-disk_bytes[vm.index] // cache.line) for vm in residents}
        if not moves and holds_whole(list(needed.values()), cache.capacity_lines):
            whole = [0] * (max(needed) + 1)
            for index, lines in needed.items():
                whole[index] = lines
            cache.hold_whole(whole)
            continue
        share = cache.capacity_lines // len(residents)
        cache.reserve(sum(min(share, lines) for lines in needed.values()), stop_requested)
        for vm in residents:
            # (stopped: the run then stops at its first poll)
            cache.fill(vm.index, min(share, needed[vm.index]), stop_requested)
        cache.inserted_lines = 0  # the lines of the warm start are not fills of the run


def _vm_reach_bytes(scenario: Scenario) -> list[int]:
    """Bytes from the start of each VM's disk that its I/Os touch, in VM index order: its disk
    (:func:`_vm_disk_bytes`) and, for a generated workload, what its largest I/O runs past the
    working set's last block (an I/O starts at any ``BLOCK`` of the working set: one of 64 KiB
    that starts in its last 4 KiB ends 60 KiB past it)."""
    past: list[int] = []
    for group in scenario.groups:
        workload = group.workload
        reach = 0 if workload.trace is not None else max(0, max(workload.size_mix[0]) - BLOCK)
        past += [reach] * scenario.group_vm_count(group)
    return [disk + reach for disk, reach in zip(_vm_disk_bytes(scenario), past, strict=True)]


def _vm_disk_bytes(scenario: Scenario) -> list[int]:
    """Each VM's disk size on the array, in VM index (build) order: its working set, or the span
    of the trace device it replays (what :meth:`Scenario.group_data_bytes` adds up)."""
    sizes: list[int] = []
    for group in scenario.groups:
        replayed = _replayed_devices(scenario, group)
        if replayed is None:
            sizes += [group.workload.working_set] * (
                group.vms_per_host * len(scenario.group_hosts(group))
            )
        else:
            trace, devices = replayed
            summary = trace.summary()
            sizes += [summary[device].span for device in devices]
    return sizes


def _replayed_devices(scenario: Scenario, group: Group) -> tuple[Trace, list[str]] | None:
    """A trace group's trace and the device each of its VMs replays, in build order (``None`` for
    other groups)."""
    spec = group.workload.trace
    if spec is None:
        return None
    trace = spec.open()
    return trace, spec.vm_devices(trace, scenario.group_vm_count(group))


def _peers(
    scenario: Scenario, group: Group, host_index: int, hosts: list[Host], stream: UniformStream
) -> tuple[Host, ...]:
    """The hosts a VM on ``hosts[host_index]`` replicates to: the next ``group.replicas`` around
    the ring, or as many distinct ones drawn at random from the others (``peer_selection =
    "random"``)."""
    count = group.replicas
    others = [hosts[i] for i in ring_peers(host_index, len(hosts))]
    if scenario.cluster.peer_selection == "random":
        chosen: list[Host] = []
        while len(chosen) < count:
            candidate = others[int(stream.uniform() * len(others))]
            if candidate not in chosen:
                chosen.append(candidate)
        return tuple(chosen)
    return tuple(others[:count])


def _sampler(
    model: Model, sampler: _Sampler, interval: float, until: float, progress: Progress | None
) -> Generator[simpy.Event, Any, None]:
    """Take a sample every ``interval`` seconds (:func:`run_scenario` takes the last one)."""
    env = model.env
    while env.now + interval < until - 1e-12:
        due = env.timeout(interval)
        model.next_sample = due
        yield due
        sampler.take(env.now)
        if model.stream is not None:
            model.stream.close_interval(model.samples[-1].time_s)
        model.hand_on_records()
        if progress is not None:
            progress(env.now / until)


class _Sampler:
    """Turns component counters into one :class:`SeriesSample` per interval."""

    def __init__(self, model: Model):
        self.model = model
        self.ports = model.ports
        self.last_time = 0.0
        self.last_carried = [0.0] * len(self.ports)
        # each port's capacity over time up to the last sample (bytes)
        self.last_available = [0.0] * len(self.ports)

    def take(self, now: float) -> None:
        model = self.model
        engine = model.native_sampler  # the native engine holds the state (native_run.run)
        step = now - self.last_time
        if step <= 0:
            return
        # the figures, in the order of the components below, as the native engine takes them;
        # None for those it does not hold (and every one when the Python engine runs)
        native: tuple[Any, ...] = (
            engine.sample(now) if engine is not None else (None, None, None, None, None)
        )
        last = self.last_time
        hosts = model.hosts
        tiers, array, carried, flows, destagers = native
        if tiers is None:
            tiers = [(h.tier.busy.busy_between(last, now), h.tier.busy.open_count()) for h in hosts]
        if array is None:
            array = (model.array.busy.busy_between(last, now), model.array.busy.open_count())
        if carried is None:
            model.network.sync()  # bring byte counters up to now
            carried = [port.carried_bytes for port in self.ports]
            flows = model.network.in_flight()
        if destagers is None:
            destagers = [
                (
                    h.destager.backlog_bytes,
                    h.destager.waiting_writers,
                    h.destager.short_bytes,
                    h.destager.single_copy_bytes,
                    h.replica_lag.bytes,
                    h.replica_lag.short_bytes(h.destager.promised),
                )
                for h in hosts
            ]
        scenario = model.scenario
        channels = tier_units(scenario.cluster.tier)
        volatile = scenario.cluster.tier.volatile
        tier_util = {}
        tier_queue = {}
        backlog = {}
        waiting = at_risk = single = 0
        for h, (busy, held), (backlog_bytes, writers, short, single_copy, lag, lag_short) in zip(
            hosts, tiers, destagers, strict=True
        ):
            tier_util[h.name] = busy / (channels * step)
            tier_queue[h.name] = held  # after busy_between: the operations going on past now
            backlog[h.name] = backlog_bytes
            waiting += writers
            # durable: the destager's short writes and the asynchronous writes no copy of which
            # has reached a peer yet, each once (a lagging write short of peers is both)
            at_risk += backlog_bytes if volatile else short + lag - lag_short
            single += single_copy + lag
        model.samples.append(
            SeriesSample(
                time_s=now,
                port_utilization=self._port_utilization(now, step, carried),
                tier_utilization=tier_util,
                tier_in_system=tier_queue,
                array_utilization=array[0] / (scenario.array.spindles * step),
                array_in_system=array[1],
                destage_backlog_bytes=backlog,
                destage_waiting=waiting,
                data_at_risk_bytes=at_risk,
                single_copy_bytes=single,
                flows_in_flight=flows,
            )
        )
        self.last_time = now

    def _port_utilization(self, now: float, step: float, carried: list[float]) -> dict[str, float]:
        """Each port's utilization over the ``step`` seconds to ``now``, from its bytes carried
        by then (``carried``, in port order), which becomes its ``recent_utilization``."""
        port_util = {}
        last = self.last_time
        for i, port in enumerate(self.ports):
            if port.capacity_changed_at <= last:
                available = port.capacity * step
            else:  # link_slow changed it during the interval: what it could carry over the interval
                available = (
                    port.capacity_seconds
                    + port.capacity * (now - port.capacity_changed_at)
                    - self.last_available[i]
                )
            self.last_available[i] = port.capacity_seconds + port.capacity * (
                now - port.capacity_changed_at
            )
            utilization = (carried[i] - self.last_carried[i]) / available
            port.recent_utilization = utilization
            port_util[port.label] = utilization
            self.last_carried[i] = carried[i]
        return port_util


def run_scenario(
    scenario: Scenario,
    *,
    seed: int | None = None,
    duration: float | None = None,
    progress: Progress | None = None,
    cancel: Cancel | None = None,
    deadline: float | None = None,
    limits: Limits | None = None,
    keep_records: bool = True,
    paths: Paths = "callbacks",
    native: bool | None = None,
) -> RunRecord:
    """Build ``scenario``, run it once and return what it produced as a plain record.

    The arguments are :func:`simcache.simulate`'s, which documents them: ``seed`` and
    ``duration`` (seconds) override the ``[run]`` table, ``limits`` bound the expected work before
    anything runs (else :class:`~simcache.base.errors.RunTooLargeError`), ``cancel`` or
    ``deadline`` (wall seconds) stop the run at the simulated time it has reached, and
    ``keep_records=False`` keeps histograms (:class:`simcache.sim.stream.StreamStats`) in place of
    per-I/O records; ``paths`` is :func:`build`'s. ``native``: run the VMs' I/O in the native
    engine where it is built and supports the scenario (:mod:`simcache.sim.native_run`; None: as
    ``SIMCACHE_NATIVE_ENGINE`` says, on by default; never with ``paths="generators"``, the
    reference the callbacks are checked against), else in the Python engine (the same results);
    the record's ``run_by`` says which ran and why.
    """
    scenario = load_scenario(scenario)
    if seed is not None:
        scenario = scenario.with_seed(seed)
    warmup_cut = None
    if duration is not None:
        warmup_cut = scenario.warmup_cut(duration)
        scenario = scenario.with_duration(duration)
    limits = Limits.from_env() if limits is None else limits
    check_work(scenario, limits, keep_records=keep_records, bound_first=True)
    run = scenario.run
    seed = run.seed
    started = time.perf_counter()
    # The deadline counts from here: building thousands of VMs is part of the time it bounds.
    tokens: list[Cancel | MemoryWatch] = [
        token
        for token in (cancel, None if deadline is None else Cancel(deadline=deadline))
        if token is not None
    ]
    if math.isfinite(limits.max_memory_bytes):  # what it holds, as it runs (an overload grows)
        tokens.append(MemoryWatch(limits.max_memory_bytes))
    native, run_by = native_run.choose(scenario, native, generators=paths == "generators")
    stop_requested = (lambda: any(token.cancelled for token in tokens)) if tokens else None
    model = build(scenario, seed, paths=paths, native=native, stop_requested=stop_requested)
    if native and model.native is None:  # chosen, but a VM's stream is not one it runs
        run_by = native_run.NO_STREAMS
    if not keep_records:
        names = [group.name for group in scenario.groups]
        model.stream = StreamStats(
            [vm.name for vm in model.vms],
            [vm.group for vm in model.vms],
            names,
            run.warmup,
            run.duration,
        )
    model.record_buffer.sink = model.records_sink()
    sampler = _Sampler(model)
    model.env.process(_sampler(model, sampler, run.sample_interval, run.duration, progress))
    collecting = gc.isenabled()
    # the run allocates many small long-lived tuples; cyclic GC passes over them cost ~10%
    gc.disable()
    try:
        finished = (
            run_until(model.clock, run.duration, stop_requested, POLL_EVENTS)
            if model.native is None
            else native_run.run(model, run.duration, stop_requested, POLL_EVENTS, lines=False)
        )
    finally:
        if collecting:
            gc.enable()
    end = run.duration if finished else current_time(model.clock)
    if not finished:
        # the result's window, totals and rates cover [0, end]
        model.scenario = _cut_at(scenario, end)
    sampler.take(end)  # the run stops before events at exactly `duration` are processed
    if progress is not None and finished:
        progress(1.0)
    wall = time.perf_counter() - started
    events = events_scheduled(model.clock)
    reason = (
        None if finished else next((token.reason for token in tokens if token.reason), "stopped")
    )
    return record_run(
        model,
        seed=seed,
        wall_time_s=wall,
        events=events,
        planned=scenario,
        stopped_at_s=None if finished else end,
        stop_reason=reason,
        run_by=run_by,
        warmup_cut=warmup_cut,
    )


def _cut_at(scenario: Scenario, end: float) -> Scenario:
    """``scenario`` as if run for ``end`` seconds: its duration ``end``, and its warm-up cut to
    ``end / 10`` if it had not ended (not validated again: a stopped run may be shorter than one
    sample interval)."""
    # rates are per second of the run: a stop before the clock moved still divides by a duration
    end = max(end, 1e-9)
    warmup = scenario.run.warmup if scenario.run.warmup < end else end / 10
    run = scenario.run.model_copy(update={"duration": end, "warmup": warmup})
    return scenario.model_copy(update={"run": run})
