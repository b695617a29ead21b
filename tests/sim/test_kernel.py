"""The kernel (simcache.sim.kernel) does what plain SimPy does: the same order, the same event
count, the same failures."""

from __future__ import annotations

import gc
import random
import types
import weakref
from collections.abc import Callable, Generator
from typing import Any

import pytest
import simpy

from simcache.sim.kernel.clock import (
    NORMAL,
    URGENT,
    Resumer,
    check_simpy,
    clock_of,
    current_time,
    events_scheduled,
    run_until,
    schedule_at,
    trigger,
)
from simcache.sim.kernel.entries import first_queued, queued, unschedule
from simcache.sim.kernel.heap import heapify_entries, pop_entry, push_entry
from simcache.sim.kernel.signals import Signal, process_now
from simcache.sim.kernel.waits import AllOf, sleep, succeed, timeout_or

_TIMES = [
    (2.0, NORMAL),
    (1.0, NORMAL),
    (1.0, URGENT),
    (2.0, URGENT),
    (1.0, NORMAL),
]


def _mixed_model(exact: bool) -> list[tuple[float, str]]:
    """Events at repeated times and both priorities, scheduled by ``schedule_at`` or
    ``env.schedule``; their order."""
    env = simpy.Environment()
    log: list[tuple[float, str]] = []
    for i, (at, priority) in enumerate(_TIMES):
        event = env.event()
        event.callbacks.append(lambda e, name=f"e{i}": log.append((env.now, name)))
        trigger(event, i)
        if exact:
            schedule_at(clock_of(env), at, event, priority)
        else:
            env.schedule(event, priority, at)
    env.run()
    return log


def test_schedule_at_orders_events_as_simpy_schedule_does() -> None:
    assert (
        _mixed_model(exact=False)
        == _mixed_model(exact=True)
        == [(1.0, "e2"), (1.0, "e1"), (1.0, "e4"), (2.0, "e3"), (2.0, "e0")]
    )


def _queueing_model(env: simpy.Environment, log: list[tuple[float, int]]) -> None:
    """A small process model: two customers sharing a resource, with timeouts that land exactly
    on the stop time."""
    server = simpy.Resource(env, capacity=1)

    def customer(name: int) -> Generator[simpy.Event, Any, None]:
        while True:
            with server.request() as request:
                yield request
                yield env.timeout(0.5 + name * 0.25)
                log.append((env.now, name))

    for name in range(2):
        env.process(customer(name))


def test_run_until_processes_what_env_run_does_and_counts_the_same_events() -> None:
    runs = []
    for inlined in (False, True):
        env = simpy.Environment()
        log: list[tuple[float, int]] = []
        _queueing_model(env, log)
        if inlined:
            run_until(clock_of(env), 3.0)
        else:
            env.run(until=3.0)
        clock = clock_of(env)  # after a plain SimPy run: adopts its time and event count
        runs.append((log, current_time(clock), events_scheduled(clock)))
    assert runs[0] == runs[1]
    assert runs[0][0][-1][0] < 3.0  # events at exactly the stop time are not processed, by either


class _OwnEnvironment(simpy.Environment):
    """A user's environment class: the clock leaves its class alone and keeps its ``_now`` up to
    date instead."""


@pytest.mark.parametrize("make", [simpy.Environment, _OwnEnvironment])
def test_env_now_is_the_clocks_time_during_and_after_a_run(
    make: Callable[[], simpy.Environment],
) -> None:
    """``env.now`` read by a process (SimPy's and the model's code read it) is the time of the
    event being processed, whether the clock makes a plain environment read its own time or keeps
    ``_now`` of another class."""
    env = make()
    clock = clock_of(env)
    assert isinstance(env, make) and clock.mirror_now == (make is _OwnEnvironment)
    seen: list[tuple[float, float]] = []

    def ticking() -> Generator[simpy.Event, Any, None]:
        for gap in (0.25, 0.5, 1.0):
            yield env.timeout(gap)
            seen.append((env.now, current_time(clock)))

    env.process(ticking())
    run_until(clock, 1.5)
    assert seen == [(0.25, 0.25), (0.75, 0.75)]
    assert env.now == 1.5  # the stop time, as env.run leaves it
    env.run(until=2.0)  # SimPy's own loop, through the clock's step
    assert seen[-1] == (1.75, 1.75) and env.now == 2.0


def _failing(env: simpy.Environment, defuse: bool) -> None:
    event = env.event()
    if defuse:
        event.callbacks.append(lambda e: setattr(e, "defused", True))
    event.fail(ValueError("disk on fire"))


@pytest.mark.parametrize(
    "run",
    [
        lambda env: env.run(until=1.0),
        lambda env: run_until(clock_of(env), 1.0),
        # SimPy's run, through the clock's step
        lambda env: clock_of(env).env.run(until=1.0),
    ],
)
def test_an_unhandled_failure_raises_its_exception_and_a_defused_one_does_not(
    run: Callable[[simpy.Environment], None],
) -> None:
    env = simpy.Environment()
    _failing(env, defuse=False)
    with pytest.raises(ValueError, match="disk on fire"):
        run(env)
    env = simpy.Environment()
    _failing(env, defuse=True)
    run(env)


def test_signals_process_now_and_unschedule() -> None:
    env = simpy.Environment()
    clock = clock_of(env)
    seen: list[tuple[float, object]] = []
    signals = [Signal(i, lambda s: seen.append((env.now, s.value))) for i in range(4)]
    for i, signal in enumerate(signals):
        schedule_at(clock, 1.0 + i % 2, signal)
    unschedule(clock, {signals[0], signals[3]})
    run_until(clock, 10.0)
    assert seen == [(1.0, 2), (2.0, 1)]
    event = env.event()
    event.callbacks.append(lambda e: seen.append((env.now, e.value)))
    trigger(event, "now")
    process_now(event)
    assert seen[-1] == (10.0, "now") and event.processed


def test_a_resumer_drives_a_generator_as_a_process_would() -> None:
    logs = []
    for detached in (False, True):
        env = simpy.Environment()
        log: list[tuple[float, Any]] = []

        def steps(
            env: simpy.Environment = env, log: list[tuple[float, Any]] = log
        ) -> Generator[simpy.Event, Any, None]:
            done = env.timeout(0)
            value = yield env.timeout(1.5, value="slept")
            log.append((env.now, value))
            yield env.timeout(0)
            log.append((env.now, (yield done)))  # already processed: its value comes back at once

        if detached:
            Resumer(steps()).resume(None)
        else:
            env.process(steps())
        env.run()
        logs.append(log)
    assert logs[0] == logs[1] == [(1.5, "slept"), (1.5, None)]


def test_an_unsupported_simpy_is_refused_at_import() -> None:
    class Bare:
        def event(self) -> simpy.Event:
            return simpy.Environment().event()

    # Passed in, not patched onto the module: compiled (mypyc) code keeps its own reference to the
    # simpy module.
    unsupported = types.SimpleNamespace(Environment=Bare, __version__="9.0")
    with pytest.raises(ImportError, match=r"simpy>=4\.1,<4\.2 .*_queue, _eid, _now.*simpy 9\.0"):
        check_simpy(unsupported)


def _sleepers(signals: bool) -> tuple[list[tuple[float, int]], int]:
    """Three detached generators waiting at awkward delays (sums that round), with
    ``sleep`` (``signals``) or with SimPy timeouts in plain SimPy; their log and event
    count."""
    env = simpy.Environment()
    clock = clock_of(env) if signals else None
    log: list[tuple[float, int]] = []

    def steps(name: int) -> Generator[Any, Any, None]:
        for delay in (0.1, 0.2, 0.3, 0.0, 1e-17 * name):
            value = yield (env.timeout(delay) if clock is None else sleep(clock, delay))
            assert value is None
            log.append((env.now, name))

    for name in range(3):
        Resumer(steps(name)).resume(None)
    if clock is None:
        env.run(until=10.0)
    else:
        run_until(clock, 10.0)
    return log, events_scheduled(clock_of(env))


def _work_waiters(signals: bool) -> tuple[list[tuple[float, str]], int]:
    """The destager's flushers in small: three detached generators wait for shared work or a
    timeout, whichever comes first (``env.timeout(d) | work`` in plain SimPy,
    ``timeout_or`` with ``signals``), or for the work alone; a producer triggers the work
    now and then, at times that tie with the timeouts. Their log and event count."""
    env = simpy.Environment()
    clock = clock_of(env) if signals else None
    log: list[tuple[float, str]] = []
    work: list[Any] = [env.event() if clock is None else Signal(None)]

    def waiter(name: int) -> Generator[Any, Any, None]:
        for step, delay in enumerate((0.5, 1.0, None, 0.25, 2.0, 0.5, None, 1.5)):
            if work[0].triggered:  # as the flushers do: a fresh event once the last one fired
                work[0] = env.event() if clock is None else Signal(None)
            if delay is None:
                yield work[0]
            elif clock is None:
                yield env.timeout(delay + 0.25 * name) | work[0]
            else:
                yield timeout_or(clock, delay + 0.25 * name, work[0])
            log.append((env.now, f"{name}.{step}"))

    def producer() -> Generator[Any, Any, None]:
        for delay in (0.75, 0.5, 1.0, 0.25, 3.0, 0.5, 2.0):
            yield env.timeout(delay) if clock is None else sleep(clock, delay)
            if not work[0].triggered:
                if clock is None:
                    work[0].succeed()
                else:
                    schedule_at(clock, clock.now, work[0])
            log.append((env.now, "work"))

    for name in range(3):
        Resumer(waiter(name)).resume(None)
    Resumer(producer()).resume(None)
    if clock is None:
        env.run(until=30.0)
    else:
        run_until(clock, 30.0)
    return log, events_scheduled(clock_of(env))


def test_timeout_or_is_simpys_condition_in_the_same_order_with_the_same_event_count() -> None:
    plain = _work_waiters(signals=False)
    assert _work_waiters(signals=True) == plain
    # every wait ended; the run has the conditions' events
    assert len(plain[0]) == 3 * 8 + 7 and plain[1] > 40


def test_sleep_is_a_timeout_to_the_last_bit_and_in_the_same_order() -> None:
    """``sleep(clock, d)`` wakes a detached generator exactly when ``env.timeout(d)``
    would: at ``now + d`` as SimPy computes it (0.1 + 0.2 is not 0.3), in the same order among
    equal times, with the same event count."""
    plain = _sleepers(signals=False)
    assert _sleepers(signals=True) == plain
    assert plain[0][3] == (0.1 + 0.2, 0) and 0.1 + 0.2 != 0.3  # the sum as the clock adds it
    with pytest.raises(ValueError, match="Negative delay"):
        sleep(clock_of(simpy.Environment()), -1.0)


def _busy_model(
    env: simpy.Environment, seed: int, attach_after: int | None
) -> list[tuple[float, str]]:
    """Processes drawn at random (``seed``) that wait on timeouts of a few delays (so many at equal
    times), shared events succeeded by others, ``&`` and ``|`` conditions, a resource and
    interrupts; their log of what happened when.

    ``attach_after``: attach a clock after starting that many processes (the ones before are adopted
    from SimPy's queue); ``None``: plain SimPy.
    """
    draw = random.Random(seed)
    log: list[tuple[float, str]] = []
    server = simpy.Resource(env, capacity=2)
    shared = [env.event() for _ in range(3)]
    processes: list[simpy.Process] = []

    def worker(name: int) -> Generator[simpy.Event, Any, None]:
        for step in range(12):
            kind = draw.randrange(6)
            delay = draw.choice((0, 0.5, 1.0))
            try:
                if kind == 0:
                    yield env.timeout(delay, value=step)
                elif kind == 1:
                    yield env.timeout(delay) & env.timeout(draw.choice((0, 0.5)))
                elif kind == 2:
                    yield env.timeout(delay) | shared[step % 3]
                elif kind == 3:
                    with server.request() as request:
                        yield request
                        yield env.timeout(delay)
                elif kind == 4:
                    event = shared[step % 3]
                    if not event.triggered:
                        event.succeed(name)
                    shared[step % 3] = env.event()
                    yield env.timeout(0)
                elif (
                    processes[step % len(processes)].is_alive
                    and processes[step % len(processes)] is not env.active_process
                ):
                    processes[step % len(processes)].interrupt(name)
                    yield env.timeout(delay)
            except simpy.Interrupt as interrupt:
                log.append((env.now, f"{name} interrupted by {interrupt.cause}"))
            log.append((env.now, f"{name}.{step}.{kind}"))

    for name in range(8):
        if name == attach_after:
            clock_of(env)
        processes.append(env.process(worker(name)))
    return log


@pytest.mark.parametrize("seed", range(6))
def test_simpy_events_run_through_the_clock_in_plain_simpy_order(seed: int) -> None:
    """Timeouts, events, processes, conditions, resources and interrupts at equal times and
    priorities run in the same order, with the same event count, through a clock (by
    ``run_until`` or by SimPy's ``env.run``, the clock attached before or after some were
    scheduled) as in plain SimPy."""
    runs = []
    for attach_after, inlined in ((None, False), (0, True), (5, True), (3, False)):
        env = simpy.Environment()
        log = _busy_model(env, seed, attach_after)
        if inlined:
            run_until(clock_of(env), 40.0)
        else:
            env.run(until=40.0)
        runs.append((log, env.now, events_scheduled(clock_of(env))))
    # a busy model, interrupts included
    assert runs[0][2] > 100 and any("interrupted" in name for _, name in runs[0][0])
    assert runs[1] == runs[0] and runs[2] == runs[0] and runs[3] == runs[0]


def test_the_clock_orders_entries_as_simpys_heap_and_unschedules_without_reordering() -> None:
    """Thousands of entries at a few times (ties) and both priorities, some taken out: the clock
    runs the rest in the order of SimPy's (time, priority, id) tuples."""
    draw = random.Random(7)
    clock = clock_of(simpy.Environment())
    ran: list[int] = []
    signals = [Signal(i, lambda s: ran.append(s.value)) for i in range(3000)]
    expected = []
    for i, signal in enumerate(signals):
        at, priority = (
            draw.choice((0.25, 0.5, 1.0, 2.0)),
            draw.choice((URGENT, NORMAL)),
        )
        schedule_at(clock, at, signal, priority)
        expected.append((at, priority, i))
    dropped = {signal for signal in signals if draw.random() < 0.3}
    unschedule(clock, set(dropped))
    run_until(clock, 5.0)
    assert ran == [i for _, _, i in sorted(expected) if signals[i] not in dropped]
    with pytest.raises(RuntimeError, match="scheduled once"):
        schedule_at(clock, 6.0, signals[0])


@pytest.mark.parametrize("size", [0, 1, 2, 4, 5, 6, 16, 21, 22, 85, 86, 300])
def test_the_heap_pops_in_time_and_key_order_after_pushes_and_after_heapify(size: int) -> None:
    """The 4-ary heap, at sizes around its level boundaries (1, 5, 21, 85 entries fill whole
    levels): pushed one by one, or heapified from any order, then popped, its entries come out
    sorted by (time, key)."""
    draw = random.Random(size)
    entries = []
    for key in draw.sample(range(10 * size + 1), size):
        entry = Signal(None)
        # ties on time, decided by key
        entry.time, entry.key = float(draw.choice((0.5, 1.0, 1.5))), key
        entries.append(entry)
    expected = sorted(entries, key=lambda e: (e.time, e.key))
    pushed: list[Signal] = []
    for entry in entries:
        push_entry(pushed, entry)
    heapified = list(entries)
    heapify_entries(heapified)
    for heap in (pushed, heapified):
        assert [pop_entry(heap) for _ in range(size)] == expected and heap == []


def test_a_peek_and_a_step_are_simpys() -> None:
    env = simpy.Environment()
    clock = clock_of(env)
    assert env.peek() == float("inf") and clock is clock_of(env)
    env.timeout(2.5)
    assert env.peek() == 2.5
    env.step()
    assert env.now == 2.5 and current_time(clock) == 2.5
    with pytest.raises(simpy.core.EmptySchedule):
        env.step()


def test_a_signal_resumes_its_waiters_and_calls_its_callbacks_in_the_order_they_came() -> None:
    """The first generator to wait for a Signal is resumed by a native call (``Signal.resumer``),
    ahead of whatever waited after it, as a first callback would be; by ``run_until``,
    ``process_now`` and ``env.run`` alike."""
    env = simpy.Environment()
    clock = clock_of(env)
    order: list[tuple[str, Any]] = []

    def waiter(name: str, signal: Signal) -> Generator[Any, Any, None]:
        order.append((name, (yield signal)))

    def add_waiters(signal: Signal, prefix: str) -> None:
        Resumer(waiter(f"{prefix} first", signal)).resume(None)
        assert signal.callbacks is not None
        signal.callbacks.append(lambda s: order.append((f"{prefix} callback", s.value)))
        Resumer(waiter(f"{prefix} second", signal)).resume(None)

    signals = [
        Signal(name, lambda s: order.append((f"{s.value} made with", s.value))) for name in "ab"
    ] + [Signal(name) for name in "cde"]
    for signal in signals:
        add_waiters(signal, signal.value)
    schedule_at(clock, 1.0, signals[0])
    schedule_at(clock, 1.0, signals[2])
    run_until(clock, 2.0)
    process_now(signals[3])
    schedule_at(clock, 3.0, signals[4])
    env.run(until=4.0)
    waits = ["first", "callback", "second"]
    assert order == [
        *[(f"a {wait}", "a") for wait in ["made with", *waits]],
        *[(f"{name} {wait}", name) for name in "cde" for wait in waits],
    ]
    Resumer(waiter("late", signals[0])).resume(None)  # processed already: resumed at once
    assert order[-1] == ("late", "a") and signals[1].resumer is None and signals[2].resumer is None


def _gate_waiters(signals: bool) -> tuple[list[tuple[float, str]], int]:
    """Detached generators waiting for all of some gates (``simpy.AllOf`` in plain SimPy,
    ``AllOf`` with ``signals``): gates opened by a producer (``Event.succeed()``,
    ``succeed``) at times that tie with the waiters' own timeouts, some opened (and
    processed) before a waiter asks, a gate listed twice, no gate at all, and callbacks added to
    a gate after a condition waits on it. Their log and event count."""
    env = simpy.Environment()
    clock = clock_of(env) if signals else None
    log: list[tuple[float, str]] = []
    gates: list[Any] = [env.event() if clock is None else Signal(None) for _ in range(5)]

    def all_of(chosen: list[Any]) -> Any:
        return simpy.AllOf(env, chosen) if clock is None else AllOf(clock, chosen).done

    def wait(delay: float) -> Any:
        return env.timeout(delay) if clock is None else sleep(clock, delay)

    def waiter(name: int, chosen: list[int], delay: float) -> Generator[Any, Any, None]:
        yield wait(delay)
        condition = all_of([gates[i] for i in chosen])
        for i in chosen[:1]:  # a callback on a member, added after the condition's
            if gates[i].callbacks is not None:
                gates[i].callbacks.append(
                    lambda _, i=i: log.append((env.now, f"gate {i} seen by {name}"))
                )
        yield condition
        log.append((env.now, f"waiter {name}"))

    def producer() -> Generator[Any, Any, None]:
        for i, delay in enumerate((0.5, 0.5, 0.0, 1.0, 0.25)):
            yield wait(delay)
            if clock is None:
                gates[i].succeed()
            else:
                succeed(clock, gates[i])
            log.append((env.now, f"open {i}"))

    plan = [
        ([0, 1], 0.0),
        ([1, 3, 3], 0.5),
        ([4], 1.0),
        ([], 0.75),
        ([0, 2], 1.0),
        ([2, 4, 0], 2.5),
        ([0], 1.0),
    ]
    for name, (chosen, delay) in enumerate(plan):
        Resumer(waiter(name, chosen, delay)).resume(None)
    Resumer(producer()).resume(None)
    if clock is None:
        env.run(until=10.0)
    else:
        run_until(clock, 10.0)
    return log, events_scheduled(clock_of(env))


def test_all_of_and_succeed_match_simpy_in_order_and_event_count() -> None:
    """``AllOf`` and ``succeed`` (the components' waits for several signals and
    their wake-ups) are ``simpy.AllOf`` and ``Event.succeed()``: the same log, in the same order
    at equal times, and the same event count."""
    plain = _gate_waiters(signals=False)
    assert _gate_waiters(signals=True) == plain
    assert sum(entry[1].startswith("waiter") for entry in plain[0]) == 7  # every condition was met
    signal = Signal(None)
    clock = clock_of(simpy.Environment())
    succeed(clock, signal)
    with pytest.raises(RuntimeError, match="scheduled once"):  # as a second Event.succeed() raises
        succeed(clock, signal)


class _Holder:
    """An item that holds the queue it is queued in (as a run's signals hold its model, which holds
    its clock's queue)."""

    queue: Any = None


def test_a_cycle_through_the_native_queue_is_collected() -> None:
    """The native queue holds its items where the garbage collector sees them: an item that holds
    the queue it waits in (a run that ends with events queued: its signals' callbacks hold the
    model, which holds the clock and its queue) is freed once nothing else holds either. Held in
    the C heap alone, the cycle was never collected: every run's model stayed in memory."""
    native = pytest.importorskip("simcache.native._queue")
    queue = native.EventQueue()
    item = _Holder()
    item.queue = queue
    queue.push(item, 1.0, 1)
    queue.push(_Holder(), 2.0, 2)
    gone = weakref.ref(item)
    del item, queue
    gc.collect()
    assert gone() is None


@pytest.mark.parametrize("size", [0, 1, 5, 6, 21, 22, 85, 86, 300])
def test_the_native_queue_pops_in_the_kernels_order(size: int) -> None:
    """The optional native queue (``simcache/native/_queue.pyx``, built with ``SIMCACHE_NATIVE=1``;
    skipped without it) pops the same entries in the same (time, key) order as the kernel's heap,
    interleaving pushes and pops, and the kernel's
    :func:`~simcache.sim.kernel.entries.queued` and
    :func:`~simcache.sim.kernel.entries.first_queued` read it."""
    native = pytest.importorskip("simcache.native._queue")
    draw = random.Random(size)
    queue = native.EventQueue()
    heap: list[Signal] = []
    popped: tuple[list[object], list[object]] = ([], [])
    for key in draw.sample(range(10 * size + 1), size):
        entry = Signal(None)
        entry.time, entry.key = float(draw.choice((0.5, 1.0, 1.5))), key  # ties decided by key
        queue.push(entry, entry.time, entry.key)
        push_entry(heap, entry)
        assert queue.first() is heap[0] and queue.peek() == heap[0].time
        if draw.random() < 0.3:
            popped[0].append(queue.pop())
            popped[1].append(pop_entry(heap))
    assert sorted(queue.items(), key=id) == sorted(heap, key=id)
    while heap:
        popped[0].append(queue.pop())
        popped[1].append(pop_entry(heap))
    assert popped[0] == popped[1] and len(queue) == 0 and queue.peek() == float("inf")
    with pytest.raises(IndexError):
        queue.pop()
    env = simpy.Environment()
    clock = clock_of(env)
    timeout = env.timeout(2.0)
    if clock.queue is not None:  # the kernel uses it unless SIMCACHE_NATIVE_QUEUE=0
        assert clock.heap == [] and len(clock.queue) == 1
    first = first_queued(clock)
    assert queued(clock) == [first] and first is not None and first.event is timeout
