"""The workload drivers: what starts a VM's I/Os and issues the next one (:func:`start_workload`).

A closed loop runs ``workers x outstanding`` slots, each issuing its next I/O when the last one
completes (after the think time); an open loop issues arrivals at the workload's rate whatever the
latencies; a trace replays its I/Os at their times (open) or back to back per slot (closed).
Generated workloads run as callbacks (:class:`_ClosedSlot`, :class:`_OpenLoop`) unless the run was
built with ``paths="generators"`` (:func:`simcache.sim.engine.build`); the generators they stand in
for, beside them here, are kept as the reference (``tests/sim/test_fast_paths.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from simcache.sim.components.vm import VM
from simcache.sim.kernel.clock import URGENT, Clock, current_time, schedule_at
from simcache.sim.kernel.detached import run_detached, start_detached
from simcache.sim.kernel.signals import Signal, Wait
from simcache.sim.kernel.waits import sleep
from simcache.workloads.generators import IOStream
from simcache.workloads.replay import TraceStream

__all__ = ["start_workload"]


def start_workload(env: simpy.Environment, vm: VM, restarted: bool = False) -> None:
    """Start ``vm``'s I/O processes; ``restarted`` (HA): only the closed-loop slots, its open
    loop never stopped."""
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
            if clock.callbacks:
                _OpenLoop(clock, vm, stream)
            else:
                start_detached(clock, _open_loop(clock, vm, stream))
    else:
        for _ in range(workload.workers * workload.outstanding):
            if clock.callbacks:
                _ClosedSlot(clock, vm, stream)
            else:
                start_detached(clock, _closed_slot(clock, vm, stream))


def _closed_slot(clock: Clock, vm: VM, stream: IOStream) -> Generator[Wait, Any, None]:
    """One of a closed-loop VM's slots as a generator: the reference :class:`_ClosedSlot` is
    checked against (tests)."""
    duty_clock = stream.clock
    think = stream.workload.think_time
    gated = duty_clock.duty is not None
    life = vm.life  # a VM restarted elsewhere (HA) runs new slots there; a vMotion keeps these
    while vm.host.alive and vm.life == life:
        if gated:
            on = duty_clock.next_on(current_time(clock))
            if on > current_time(clock):
                yield sleep(clock, on - current_time(clock))
        is_write, size, offset = stream.next_io()
        yield from vm.io(is_write, size, offset)
        if think:
            yield sleep(clock, think)


class _ClosedSlot:
    """One of a closed-loop VM's slots as callbacks: wait for the duty cycle to be on, start an I/O
    (:meth:`VM.start`), wait until it is done, think, and again, while the VM's host is alive and
    the VM has not been restarted elsewhere.

    What :func:`_closed_slot` does, without a generator to resume at each wait: the same events at
    the same times, in the same order (``tests/sim/test_fast_paths.py``). Its callbacks are bound
    once (the slot lives as long as the run).
    """

    __slots__ = (
        "_done_callback",
        "_issue_callback",
        "_next_callback",
        "clock",
        "life",
        "stream",
        "think",
        "vm",
    )

    def __init__(self, clock: Clock, vm: VM, stream: IOStream):
        self.clock = clock
        self.vm = vm
        self.stream = stream
        self.think = stream.workload.think_time
        # the VM's restarts when the slot starts (a restart elsewhere, HA, runs new slots there)
        self.life = -1
        self._next_callback: Callable[[Signal], None] = self._next
        self._issue_callback: Callable[[Signal], None] = self._issue
        self._done_callback: Callable[[Signal], None] = self._done
        start = Signal(None, self._begin)
        # when start_detached would run the generator's first step
        schedule_at(clock, current_time(clock), start, URGENT)

    def _begin(self, _: Signal) -> None:
        self.life = self.vm.life
        self._next(None)

    def _next(self, _: Signal | None) -> None:
        """The top of the slot's loop: stop if the VM's host died or the VM restarted elsewhere,
        else (once the duty cycle is on) issue the next I/O."""
        vm = self.vm
        if not vm.host.alive or vm.life != self.life:
            return
        duty_clock = self.stream.clock
        if duty_clock.duty is not None:
            clock = self.clock
            now = current_time(clock)
            on = duty_clock.next_on(now)
            if on > now:
                # = sleep()'s time
                schedule_at(clock, now + (on - now), Signal(None, self._issue_callback))
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
    """An open-loop VM's arrivals as a generator: the reference :class:`_OpenLoop` is checked
    against (tests)."""
    while True:
        yield sleep(clock, stream.next_gap(current_time(clock)))
        if not vm.host.alive:
            if vm.ha.awaiting:  # HA restarts it later: this arrival finds it down and is dropped
                vm.ha.dropped_arrivals += 1
                continue
            return
        is_write, size, offset = stream.next_io()
        run_detached(vm.io(is_write, size, offset))


class _OpenLoop:
    """An open-loop VM's arrivals as callbacks: each arrival starts its I/O (:meth:`VM.start`) and
    schedules the next.

    What :func:`_open_loop` does, without a generator to resume per arrival: the same events (a
    start event, then one per arrival), at the same times, in the same order
    (``tests/sim/test_fast_paths.py``).
    """

    __slots__ = ("_arrive_callback", "clock", "stream", "vm")

    def __init__(self, clock: Clock, vm: VM, stream: IOStream):
        self.clock = clock
        self.vm = vm
        self.stream = stream
        # bound once, not per arrival
        self._arrive_callback: Callable[[Signal], None] = self._arrive
        start = Signal(None, self._begin)
        # when start_detached would run the generator's first step
        schedule_at(clock, current_time(clock), start, URGENT)

    def _begin(self, _: Signal) -> None:
        self._next()

    def _next(self) -> None:
        clock = self.clock
        now = current_time(clock)
        # = sleep()'s time
        schedule_at(clock, now + self.stream.next_gap(now), Signal(None, self._arrive_callback))

    def _arrive(self, _: Signal) -> None:
        vm = self.vm
        if not vm.host.alive:
            if vm.ha.awaiting:  # HA restarts it later: this arrival finds it down and is dropped
                vm.ha.dropped_arrivals += 1
                self._next()
            return
        is_write, size, offset = self.stream.next_io()
        vm.start(is_write, size, offset)
        self._next()


def _trace_open_loop(clock: Clock, vm: VM, stream: TraceStream) -> Generator[Wait, Any, None]:
    """Issue each traced I/O at its own (replay) time, whatever the latency of the ones before
    it."""
    while True:
        at = stream.next_time()
        if at is None:
            return
        if at > current_time(clock):
            yield sleep(clock, at - current_time(clock))
        io = stream.next_io()
        assert io is not None
        if not vm.host.alive:
            if vm.ha.awaiting:  # HA restarts it later: this traced I/O finds it down and is dropped
                vm.ha.dropped_arrivals += 1
                continue
            return
        run_detached(vm.io(*io))


def _trace_closed_slot(clock: Clock, vm: VM, stream: TraceStream) -> Generator[Wait, Any, None]:
    """One of a closed replay's slots: the next traced I/O as soon as this slot's last one
    completes."""
    think = stream.workload.think_time
    life = vm.life  # a VM restarted elsewhere (HA) runs new slots there; a vMotion keeps these
    while vm.host.alive and vm.life == life:
        io = stream.next_io()
        if io is None:
            return
        yield from vm.io(*io)
        if think:
            yield sleep(clock, think)
