"""Build the SimPy model of a scenario, run it, and hand the raw figures to :mod:`simcache.results.result`.

Randomness: every component's stream is a ``numpy.random.SeedSequence`` of the
run's seed with a spawn key that names the component (see :func:`_stream_seed`):
the array, host ``i``, and the VM ``k`` of group ``g`` on host ``h``. Adding a
host, a VM or a group (at the end of the list) never changes another
component's draws.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from simcache.base.version import __version__
from simcache.physics.cluster import PortName, ring_peers
from simcache.results.result import Result, SeriesSample
from simcache.sim import host_events
from simcache.sim.collect import Record, RecordBlocks, RecordBuffer
from simcache.sim.components import io_steps
from simcache.sim.components.adopted import PendingDestage
from simcache.sim.components.array import Array
from simcache.sim.components.detached import run_detached, start_detached
from simcache.sim.components.host import Host
from simcache.sim.components.kernel import (
    URGENT,
    Clock,
    Signal,
    Wait,
    clock_of,
    current_time,
    events_scheduled,
    run_until,
    schedule_at,
    sleep,
)
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.vm import VM
from simcache.sim.control import POLL_EVENTS, Cancel, Limits, check_work
from simcache.sim.degradations import array_event, slowdown
from simcache.sim.outages import outage
from simcache.sim.stream import StreamStats
from simcache.spec import ArrayDegraded, ArrayRebuild, DeviceSlow, Group, HostFailure, LinkSlow, Scenario, VMotion, load_scenario
from simcache.spec.events import DeviceFailure
from simcache.traces.trace import Trace
from simcache.workloads.generators import IOStream
from simcache.workloads.replay import TraceStream

__all__ = ["Model", "build", "simulate"]

Progress = Callable[[float], None]


@dataclass
class Model:
    """The built components of one run, for the sampler and for inspection in tests."""

    env: simpy.Environment
    clock: Clock
    """Runs ``env``'s events (:mod:`simcache.sim.components.kernel`); the components read the time from it."""
    scenario: Scenario
    network: FlowNetwork
    array: Array
    array_rx: Port
    array_tx: Port
    hosts: list[Host]
    vms: list[VM]
    record_buffer: RecordBuffer
    """Where the VMs put their completed I/Os' records until :meth:`hand_on_records` moves them on (at each sample,
    and whenever it holds :data:`simcache.sim.collect.BUFFER_ROWS` of them)."""
    peer_fabric: Port | None = None
    record_blocks: RecordBlocks = field(default_factory=RecordBlocks)
    """The records of a run with records, moved out of :attr:`record_buffer`."""
    stream: StreamStats | None = None
    """A run without records: the histograms and counters the records go to at each sample instead of the blocks."""
    samples: list[SeriesSample] = field(default_factory=list)
    vmotions: list[dict[str, Any]] = field(default_factory=list)
    """One record per ``vmotion`` event (:func:`_vmotion`): hosts, transfer times and, for a VM that moves, the move."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """One record per ``host_failure`` / ``device_failure``: kind, host, time, backlog, bytes lost and handed over."""
    outages: list[dict[str, Any]] = field(default_factory=list)
    """One record per ``peer_loss`` / ``link_down`` event (:func:`simcache.sim.outages.outage`)."""
    degradations: list[dict[str, Any]] = field(default_factory=list)
    """One record per ``array_degraded`` / ``array_rebuild`` / ``link_slow`` / ``device_slow`` event (:mod:`simcache.sim.degradations`)."""
    resyncs: list[dict[str, Any]] = field(default_factory=list)
    """One record per resync flow: host, peer, start, end and bytes."""
    resyncing: set[int] = field(default_factory=set)
    """Indices of the hosts whose resync process runs."""
    restarts: list[dict[str, Any]] = field(default_factory=list)
    """One record per VM restarted by HA (``host_failure`` with ``restart_delay``): VM, hosts, times."""
    pending_destage: PendingDestage | None = None
    """The writes surviving holders took over and have not destaged, once a failure with HA happened."""

    @property
    def records(self) -> list[Record]:
        """The records :attr:`record_buffer` holds, as tuples (a model run without the sampler keeps them all there)."""
        return self.record_buffer.rows()

    def records_sink(self) -> Callable[[np.ndarray], None]:
        """Where completed records go: the run's counters (:attr:`stream`), or :attr:`record_blocks` for a run with records."""
        return self.stream.add if self.stream is not None else self.record_blocks.append

    def hand_on_records(self) -> None:
        """Move the records :attr:`record_buffer` holds to :meth:`records_sink`."""
        if self.record_buffer.count:
            self.records_sink()(self.record_buffer.take())

    @property
    def ports(self) -> list[Port]:
        fabric = [self.peer_fabric] if self.peer_fabric is not None else []
        return [port for host in self.hosts for port in host.ports] + fabric + [self.array_rx, self.array_tx]


_ARRAY, _HOST, _WORKLOAD, _PLACEMENT = range(4)  # first element of each component's spawn key


def _stream_seed(seed: int, *key: int) -> np.random.SeedSequence:
    """The seed of one component's stream: the run's seed, spawned along a key naming the component."""
    return np.random.SeedSequence(seed, spawn_key=key)


def build(scenario: Scenario, seed: int) -> Model:
    """Create every component of ``scenario`` in a fresh SimPy environment."""
    env = simpy.Environment()
    clock = clock_of(env)
    network = FlowNetwork(env)
    array_stream = UniformStream(_stream_seed(seed, _ARRAY))
    array = Array(scenario.array, array_stream, _vm_disk_bytes(scenario))
    array_rx = Port(PortName(None, "array", None, "rx"), scenario.array.port)
    array_tx = Port(PortName(None, "array", None, "tx"), scenario.array.port)
    fabric = Port(PortName(None, "fabric"), scenario.cluster.peer_link) if scenario.cluster.peer_fabric == "shared" else None
    hosts = [
        Host(env, i, scenario.cluster, UniformStream(_stream_seed(seed, _HOST, i)), network, array, array_rx, array_tx, fabric)
        for i in range(scenario.cluster.hosts)
    ]
    buffer = RecordBuffer()  # hands the records on every BUFFER_ROWS (simulate sets where to)
    vms: list[VM] = []
    for g, group in enumerate(scenario.groups):
        replayed = _replayed_devices(scenario, group)
        for host_index in scenario.group_hosts(group):
            for k in range(group.vms_per_host):
                host = hosts[host_index]
                workload = group.workload
                stream: IOStream | TraceStream
                if replayed is not None:
                    trace, devices = replayed
                    stream = TraceStream(workload, trace, devices.pop(0))
                else:
                    stream = IOStream(workload, _stream_seed(seed, _WORKLOAD, g, host_index, k))
                vm = VM(
                    env,
                    index=len(vms),
                    name=f"{group.name}-h{host_index}-{k}",
                    group=g,
                    host=host,
                    peers=_peers(scenario, group, host_index, hosts, UniformStream(_stream_seed(seed, _PLACEMENT, g, host_index, k))),
                    write_through=group.policy == "WT",
                    stream=stream,
                    compression=scenario.cluster.compression,
                    records=buffer,
                    spec=group,
                )
                vms.append(vm)
    promised = [vm.promised for vm in vms]
    for host in hosts:
        host.destager.promised = promised
    model = Model(env, clock, scenario, network, array, array_rx, array_tx, hosts, vms, buffer, fabric)
    for vm in vms:
        start_workload(env, vm)
    for event in scenario.events:
        if isinstance(event, VMotion):
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


def _vm_disk_bytes(scenario: Scenario) -> list[int]:
    """Each VM's disk size on the array, in VM index (build) order: its working set, or the span of the trace
    device it replays (what :meth:`Scenario.group_data_bytes` adds up)."""
    sizes: list[int] = []
    for group in scenario.groups:
        replayed = _replayed_devices(scenario, group)
        if replayed is None:
            sizes += [group.workload.working_set] * (group.vms_per_host * len(scenario.group_hosts(group)))
        else:
            trace, devices = replayed
            summary = trace.summary()
            sizes += [summary[device].span for device in devices]
    return sizes


def _replayed_devices(scenario: Scenario, group: Group) -> tuple[Trace, list[str]] | None:
    """A trace group's trace and the device each of its VMs replays, in build order (``None`` for other groups)."""
    spec = group.workload.trace
    if spec is None:
        return None
    trace = spec.open()
    return trace, spec.vm_devices(trace, scenario.group_vm_count(group))


def _peers(scenario: Scenario, group: Group, host_index: int, hosts: list[Host], stream: UniformStream) -> tuple[Host, ...]:
    """The hosts a VM on ``hosts[host_index]`` replicates to: the next ``group.replicas`` around the ring, or
    as many distinct ones drawn at random from the others (``peer_selection = "random"``)."""
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


def start_workload(env: simpy.Environment, vm: VM, restarted: bool = False) -> None:
    """Start ``vm``'s I/O processes; ``restarted`` (HA): only the closed-loop slots, its open loop never stopped."""
    clock = vm.clock
    stream = vm.stream
    workload = stream.workload
    if isinstance(stream, TraceStream):
        if stream.spec.replay == "open":
            if not restarted:
                start_detached(clock, _trace_open_loop(clock, vm, stream))
        else:
            for _ in range(workload.workers * workload.outstanding):
                start_detached(clock, _trace_closed_slot(clock, vm, stream))
    elif workload.mode == "open":
        if not restarted:
            if io_steps.callback_paths:
                _OpenLoop(clock, vm, stream)
            else:
                start_detached(clock, _open_loop(clock, vm, stream))
    else:
        for _ in range(workload.workers * workload.outstanding):
            if io_steps.callback_paths:
                _ClosedSlot(clock, vm, stream)
            else:
                start_detached(clock, _closed_slot(clock, vm, stream))


def _closed_slot(clock: Clock, vm: VM, stream: IOStream) -> Generator[Wait, Any, None]:
    """One of a closed-loop VM's slots as a generator: the reference :class:`_ClosedSlot` is checked against (tests)."""
    duty_clock = stream.clock
    think = stream.workload.think_time
    gated = duty_clock.duty is not None
    life = vm.restarts  # a VM restarted elsewhere (HA) runs new slots there; a vMotion keeps these
    while vm.host.alive and vm.restarts == life:
        if gated:
            on = duty_clock.next_on(current_time(clock))
            if on > current_time(clock):
                yield sleep(clock, on - current_time(clock))
        is_write, size, offset = stream.next_io()
        yield from vm.io(is_write, size, offset)
        if think:
            yield sleep(clock, think)


class _ClosedSlot:
    """One of a closed-loop VM's slots as callbacks: wait for the duty cycle to be on, start an I/O (:meth:`VM.start`),
    wait until it is done, think, and again, while the VM's host is alive and the VM has not been restarted elsewhere.

    What :func:`_closed_slot` does, without a generator to resume at each wait: the same events at the same times, in
    the same order (``tests/test_fast_paths.py``). Its callbacks are bound once (the slot lives as long as the run).
    """

    __slots__ = ("_done_callback", "_issue_callback", "_next_callback", "clock", "life", "stream", "think", "vm")

    def __init__(self, clock: Clock, vm: VM, stream: IOStream):
        self.clock = clock
        self.vm = vm
        self.stream = stream
        self.think = stream.workload.think_time
        self.life = -1  # the VM's restarts when the slot starts (a restart elsewhere, HA, runs new slots there)
        self._next_callback: Callable[[Signal], None] = self._next
        self._issue_callback: Callable[[Signal], None] = self._issue
        self._done_callback: Callable[[Signal], None] = self._done
        start = Signal(None, self._begin)
        schedule_at(clock, current_time(clock), start, URGENT)  # when start_detached would run the generator's first step

    def _begin(self, _: Signal) -> None:
        self.life = self.vm.restarts
        self._next(None)

    def _next(self, _: Signal | None) -> None:
        """The top of the slot's loop: stop if the VM's host died or the VM restarted elsewhere, else (once the duty
        cycle is on) issue the next I/O."""
        vm = self.vm
        if not vm.host.alive or vm.restarts != self.life:
            return
        duty_clock = self.stream.clock
        if duty_clock.duty is not None:
            clock = self.clock
            now = current_time(clock)
            on = duty_clock.next_on(now)
            if on > now:
                schedule_at(clock, now + (on - now), Signal(None, self._issue_callback))  # = sleep()'s time
                return
        self._issue(None)

    def _issue(self, _: Signal | None) -> None:
        is_write, size, offset = self.stream.next_io()
        self.vm.start(is_write, size, offset, Signal(None, self._done_callback))

    def _done(self, _: Signal) -> None:
        """The slot's I/O is done (or failed): think, then go round."""
        think = self.think
        if think:
            clock = self.clock
            now = current_time(clock)
            schedule_at(clock, now + think, Signal(None, self._next_callback))  # = sleep()'s time
            return
        self._next(None)


def _open_loop(clock: Clock, vm: VM, stream: IOStream) -> Generator[Wait, Any, None]:
    """An open-loop VM's arrivals as a generator: the reference :class:`_OpenLoop` is checked against (tests)."""
    while True:
        yield sleep(clock, stream.next_gap(current_time(clock)))
        if not vm.host.alive:
            if vm.awaiting_restart:  # HA restarts it later: this arrival finds it down and is dropped
                vm.dropped_arrivals += 1
                continue
            return
        is_write, size, offset = stream.next_io()
        run_detached(vm.io(is_write, size, offset))


class _OpenLoop:
    """An open-loop VM's arrivals as callbacks: each arrival starts its I/O (:meth:`VM.start`) and schedules the next.

    What :func:`_open_loop` does, without a generator to resume per arrival: the same events (a start event, then one
    per arrival), at the same times, in the same order (``tests/test_fast_paths.py``).
    """

    __slots__ = ("_arrive_callback", "clock", "stream", "vm")

    def __init__(self, clock: Clock, vm: VM, stream: IOStream):
        self.clock = clock
        self.vm = vm
        self.stream = stream
        self._arrive_callback: Callable[[Signal], None] = self._arrive  # bound once, not per arrival
        start = Signal(None, self._begin)
        schedule_at(clock, current_time(clock), start, URGENT)  # when start_detached would run the generator's first step

    def _begin(self, _: Signal) -> None:
        self._next()

    def _next(self) -> None:
        clock = self.clock
        now = current_time(clock)
        schedule_at(clock, now + self.stream.next_gap(now), Signal(None, self._arrive_callback))  # = sleep()'s time

    def _arrive(self, _: Signal) -> None:
        vm = self.vm
        if not vm.host.alive:
            if vm.awaiting_restart:  # HA restarts it later: this arrival finds it down and is dropped
                vm.dropped_arrivals += 1
                self._next()
            return
        is_write, size, offset = self.stream.next_io()
        vm.start(is_write, size, offset)
        self._next()


def _trace_open_loop(clock: Clock, vm: VM, stream: TraceStream) -> Generator[Wait, Any, None]:
    """Issue each traced I/O at its own (replay) time, whatever the latency of the ones before it."""
    while True:
        at = stream.next_time()
        if at is None:
            return
        if at > current_time(clock):
            yield sleep(clock, at - current_time(clock))
        io = stream.next_io()
        assert io is not None
        if not vm.host.alive:
            if vm.awaiting_restart:  # HA restarts it later: this traced I/O finds it down and is dropped
                vm.dropped_arrivals += 1
                continue
            return
        run_detached(vm.io(*io))


def _trace_closed_slot(clock: Clock, vm: VM, stream: TraceStream) -> Generator[Wait, Any, None]:
    """One of a closed replay's slots: the next traced I/O as soon as this slot's last one completes."""
    think = stream.workload.think_time
    life = vm.restarts  # a VM restarted elsewhere (HA) runs new slots there; a vMotion keeps these
    while vm.host.alive and vm.restarts == life:
        io = stream.next_io()
        if io is None:
            return
        yield from vm.io(*io)
        if think:
            yield sleep(clock, think)


def _sampler(
    model: Model, sampler: _Sampler, interval: float, until: float, progress: Progress | None
) -> Generator[simpy.Event, Any, None]:
    """Take a sample every ``interval`` seconds (the last one at ``until`` is taken by :func:`simulate`)."""
    env = model.env
    while env.now + interval < until - 1e-12:
        yield env.timeout(interval)
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
        self.last_available = [0.0] * len(self.ports)  # each port's capacity over time up to the last sample (bytes)

    def take(self, now: float) -> None:
        model = self.model
        scenario = model.scenario
        step = now - self.last_time
        if step <= 0:
            return
        model.network.sync()  # bring byte counters up to now
        port_util = {}
        last = self.last_time
        for i, port in enumerate(self.ports):
            if port.capacity_changed_at <= last:
                available = port.capacity * step
            else:  # link_slow changed it during the interval: what it could carry over the interval
                available = port.capacity_seconds + port.capacity * (now - port.capacity_changed_at) - self.last_available[i]
            self.last_available[i] = port.capacity_seconds + port.capacity * (now - port.capacity_changed_at)
            utilization = (port.carried_bytes - self.last_carried[i]) / available
            port.recent_utilization = utilization
            port_util[port.label] = utilization
            self.last_carried[i] = port.carried_bytes
        tier_util = {}
        tier_queue = {}
        channels = scenario.cluster.tier.channels
        for host in model.hosts:
            tier_util[host.name] = host.tier.busy.busy_between(self.last_time, now) / (channels * step)
            tier_queue[host.name] = host.tier.busy.open_count()  # after busy_between: the operations going on past now
        array_util = model.array.busy.busy_between(self.last_time, now) / (scenario.array.spindles * step)
        volatile = scenario.cluster.tier.volatile
        model.samples.append(
            SeriesSample(
                time_s=now,
                port_utilization=port_util,
                tier_utilization=tier_util,
                tier_in_system=tier_queue,
                array_utilization=array_util,
                array_in_system=model.array.busy.open_count(),  # after busy_between: those going on past now
                destage_backlog_bytes={host.name: host.destager.backlog_bytes for host in model.hosts},
                destage_waiting=sum(host.destager.waiting_writers for host in model.hosts),
                data_at_risk_bytes=sum(h.destager.backlog_bytes if volatile else h.at_risk_bytes() for h in model.hosts),
                single_copy_bytes=sum(h.destager.single_copy_bytes + h.replica_lag.bytes for h in model.hosts),
                flows_in_flight=model.network.in_flight(),
            )
        )
        self.last_time = now


def simulate(
    scenario: Scenario,
    *,
    seed: int | None = None,
    duration: float | None = None,
    progress: Progress | None = None,
    cancel: Cancel | None = None,
    deadline: float | None = None,
    limits: Limits | None = None,
    keep_records: bool = True,
) -> Result:
    """Run ``scenario`` once and return its :class:`~simcache.results.result.Result`.

    ``seed`` and ``duration`` (seconds) override the scenario's ``[run]``
    table (:meth:`~simcache.spec.Scenario.with_seed`,
    :meth:`~simcache.spec.Scenario.with_duration`: only the run is validated
    again); ``progress`` is called with the fraction done at each sample.

    Before the run, its expected work (:func:`simcache.sim.control.expected_work`)
    is checked against ``limits`` (default: :meth:`simcache.sim.control.Limits.from_env`;
    :data:`simcache.sim.control.NO_LIMITS` for none): past them it raises
    :class:`~simcache.base.errors.RunTooLargeError` and nothing runs.

    Stopping: once ``cancel`` (a :class:`simcache.sim.control.Cancel`) is set, or
    ``deadline`` wall seconds have passed, the run ends at the simulated time
    ``t`` it has reached (within a few milliseconds of wall time) and the result
    covers ``[0, t]``: a last sample at ``t``, the summary over the window up to
    ``t`` (the warm-up cut to ``t / 10`` if it had not ended), totals per ``t``.
    Its ``meta["stopped_at_s"]`` is ``t`` and ``meta["stop_reason"]`` says why;
    both are ``None`` for a run that reached its end. No exception is raised.

    ``keep_records=False`` keeps no per-I/O records: latency histograms and counters instead
    (:mod:`simcache.sim.stream`), in memory that does not grow with the I/Os; the summary, breakdown and series come
    from them (percentiles within :data:`simcache.sim.stream.REL_ERROR`), and ``Result.records`` raises
    :class:`~simcache.results.result.RecordsNotKept`.
    """
    scenario = load_scenario(scenario)
    if seed is not None:
        scenario = scenario.with_seed(seed)
    if duration is not None:
        scenario = scenario.with_duration(duration)
    check_work(scenario, limits, keep_records=keep_records)
    run = scenario.run
    seed = run.seed
    started = time.perf_counter()
    # The deadline counts from here: building thousands of VMs is part of the time it bounds.
    tokens = [token for token in (cancel, None if deadline is None else Cancel(deadline=deadline)) if token is not None]
    model = build(scenario, seed)
    if not keep_records:
        names = [group.name for group in scenario.groups]
        model.stream = StreamStats([vm.name for vm in model.vms], [vm.group for vm in model.vms], names, run.warmup, run.duration)
    model.record_buffer.sink = model.records_sink()
    sampler = _Sampler(model)
    model.env.process(_sampler(model, sampler, run.sample_interval, run.duration, progress))
    stop_requested = (lambda: any(token.cancelled for token in tokens)) if tokens else None
    collecting = gc.isenabled()
    gc.disable()  # the run allocates many small long-lived tuples; cyclic GC passes over them cost ~10%
    try:
        finished = run_until(model.clock, run.duration, stop_requested, POLL_EVENTS)
    finally:
        if collecting:
            gc.enable()
    end = run.duration if finished else current_time(model.clock)
    if not finished:
        model.scenario = _cut_at(scenario, end)  # the result's window, totals and rates cover [0, end]
    sampler.take(end)  # the run stops before events at exactly `duration` are processed
    if progress is not None and finished:
        progress(1.0)
    wall = time.perf_counter() - started
    events = events_scheduled(model.clock)
    result = Result.from_model(model, seed=seed, wall_time_s=wall, events=events, version=__version__)
    result.meta["stopped_at_s"] = None if finished else end
    result.meta["stop_reason"] = None if finished else next((token.reason for token in tokens if token.reason), "stopped")
    if not finished:
        result.meta["scenario"] = scenario.model_dump(mode="json")  # as asked for: rerunning it runs to the end
        result.meta["planned_s"] = run.duration
    return result


def _cut_at(scenario: Scenario, end: float) -> Scenario:
    """``scenario`` as if run for ``end`` seconds: its duration ``end``, and its warm-up cut to ``end / 10`` if it had not
    ended (not validated again: a stopped run may be shorter than one sample interval)."""
    end = max(end, 1e-9)  # rates are per second of the run: a stop before the clock moved still divides by a duration
    warmup = scenario.run.warmup if scenario.run.warmup < end else end / 10
    run = scenario.run.model_copy(update={"duration": end, "warmup": warmup})
    return scenario.model_copy(update={"run": run})
