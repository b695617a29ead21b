"""The engine's clock and run loop, and its contact with SimPy's internals, in one place.

Checked against SimPy 4.1.2 (tests/sim/test_kernel.py compares these operations
with plain SimPy); ``pyproject.toml`` pins ``simpy>=4.1,<4.2``.

Why: SimPy keeps its events in a heap of ``(time, priority, event id, event)``
tuples. Comparing those tuples, allocating them and boxing the ids took about
a sixth of a compiled run's instructions (callgrind, issue 18). A
:class:`Clock` keeps the same queue as a heap of native entries
(:class:`~simcache.sim.kernel.signals.Signal`: a float time and one integer key
per entry, compared in C once mypyc compiles the kernel;
:mod:`simcache.sim.kernel.heap`), and every event goes through it, SimPy's own
included: :class:`Clock` installs its :meth:`~Clock.schedule`,
:meth:`~Clock.step` and :meth:`~Clock.peek` on the environment, so a
``Timeout``, a process's start, a ``Condition`` or an ``Event.succeed`` lands in
the same heap, with an id from the same counter. The ids are handed out in the
same order as SimPy's, so events at equal times and priorities run in the same
order and results stay bit-identical; ``env.run()`` still works (it calls
``env.step``). The engine's own hot loop is :func:`run_until`, and its own
wake-ups are signals, which are their own heap entries (no ``simpy.Event``, no
wrapper; :mod:`simcache.sim.kernel.waits`). A generator of waits runs without a
``simpy.Process``, driven by a :class:`Resumer`. A run of the default scenario
costs a quarter fewer instructions than on SimPy's queue (bench/README.md, "A
native event queue and clock").

A run's stop request, as the run loop polls it, is :mod:`simcache.sim.kernel.stopping`; what is
queued, as read and pruned from outside the loop, :mod:`simcache.sim.kernel.entries`.

What it relies on in SimPy:

- SimPy's events schedule themselves by calling ``env.schedule(event,
  priority, delay)`` (looked up on the environment, so an instance attribute
  replaces it), at ``env._now + delay``; ``URGENT`` (0) sorts before
  ``NORMAL`` (1) at the same time, then the event id.
- ``Environment.run`` steps with ``self.step()`` (which raises
  ``simpy.core.EmptySchedule`` when nothing is left, and passes on the
  ``StopSimulation`` of its stop event) and schedules its stop event with
  ``self.schedule``; the ``now`` property reads ``env._now``. The clock keeps
  ``_now`` up to date, except for a plain ``simpy.Environment``: that one's class
  becomes a subclass whose ``now`` reads the clock's time (:func:`_now_from_clock`;
  storing the time on the environment at each step, a Python attribute and a
  new float, took about 4% of the default run's time: perf samples, compiled).
- ``env._queue`` (a list of ``(time, priority, id, event)``) and ``env._eid``
  (an ``itertools.count``) hold what was scheduled before the clock was
  attached: the clock adopts them once, then neither is used.
- an event's ``callbacks`` (a list, ``None`` once processed), ``_ok`` (success)
  and ``_value`` (its value, or the exception of a failed event); a failed
  event someone handled has a ``_defused`` attribute.

These are checked when this module is imported (:func:`check_simpy`: the
names, and that SimPy's events land in a clock's heap in SimPy's order); any
other SimPy version raises ImportError naming the supported range. No other
module touches SimPy's private names (tests/project/test_layers.py checks the
sources).
"""

import os
from collections.abc import Callable, Generator
from typing import Any, Final

import simpy
from simpy.core import EmptySchedule, StopSimulation

from simcache.native.choice import native_extension
from simcache.sim.kernel.entries import event_of, queued
from simcache.sim.kernel.heap import pop_entry, push_entry
from simcache.sim.kernel.signals import NONE_ADDED, NOT_SCHEDULED, Signal, Wait, run_signal
from simcache.sim.kernel.stopping import RERATES_PER_EVENT, StopWithinEvent, check_not_cut_short

__all__ = [
    "NORMAL",
    "SUPPORTED_SIMPY",
    "URGENT",
    "Clock",
    "Resumer",
    "check_simpy",
    "clock_of",
    "current_time",
    "events_scheduled",
    "run_until",
    "schedule_at",
    "trigger",
]

SUPPORTED_SIMPY = ">=4.1,<4.2"
"""The SimPy versions whose internals this module was checked against (as pinned in
pyproject.toml)."""

# SimPy's event priorities (simpy.events.URGENT, NORMAL: check_simpy compares them)
URGENT: Final = 0
NORMAL: Final = 1
# an entry's key is priority * 2**52 + event id: (priority, id) order while ids stay below 2**52
_PRIORITY_SHIFT: Final = 52


def _native_queue_class() -> Any:
    """The native event queue's class (``simcache/native/_queue.pyx``, built with
    ``SIMCACHE_NATIVE=1``: issue 35's step 1 prototype), or None: not built, or
    ``SIMCACHE_NATIVE_QUEUE=0`` at run time. A :class:`Clock` keeps its entries there instead of
    in its list heap; the order is the same (time, key), so results are bit-identical."""
    if os.environ.get("SIMCACHE_NATIVE_QUEUE", "1").strip() == "0":
        return None
    queue = native_extension("_queue")  # None too where built before its source last changed
    return None if queue is None else queue.EventQueue


_NATIVE_QUEUE: Final[Any] = _native_queue_class()


def _scheduled(event: Any) -> Signal:
    """The queue entry of a SimPy event, or ``event`` itself if it is a :class:`Signal`."""
    if isinstance(event, Signal):
        return event
    entry = Signal(None)
    entry.event = event
    return entry


class Clock:
    """The simulation time and event queue of one ``simpy.Environment``, which it runs from then on.

    ``now`` is the time (seconds); ``eid`` the id the next scheduled event
    gets (so the number of events scheduled so far); ``heap`` a 4-ary
    min-heap of :class:`Signal` by (time, key) (:func:`push_entry`), or, when the native queue is
    built (:func:`_native_queue_class`), ``queue`` holds the entries in the same order and ``heap``
    stays empty (:mod:`simcache.sim.kernel.entries` reads either). Made by :func:`clock_of`,
    which finds it again as the environment's ``_simcache_clock``.
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        # a float from the start (SimPy's is the int 0 until the first event)
        self.now = env._now = float(env._now)
        self.heap: list[Signal] = []
        # the native queue, when built (_NATIVE_QUEUE): then it holds the entries, and heap stays
        # empty
        self.queue: Any = None if _NATIVE_QUEUE is None else _NATIVE_QUEUE()
        self.eid = 0
        # transfers the network re-rated since the run loop last charged them to its countdown to
        # the next poll of a stop request (RERATES_PER_EVENT count as one event)
        self.rerated = 0
        # the run's stop request while a run loop runs (None: none), polled within one event too
        # when it re-rates a poll's worth of transfers (poll_within_event)
        self.stop_requested: Callable[[], bool] | None = None
        # stopped inside an event (StopWithinEvent): the model is mid-event and runs no further
        self.cut_short = False
        adopted: list[tuple[float, int, int, Any]] = env._queue
        for at, priority, eid, event in adopted:  # scheduled before the clock was attached
            entry = _scheduled(event)
            entry.time = at
            entry.key = (priority << _PRIORITY_SHIFT) + eid
            self._insert(entry)
        self.eid = next(env._eid)
        adopted.clear()
        # whether env._now must be kept up to date (env.now reads it)
        self.mirror_now = not _now_from_clock(env)
        self.callbacks = True
        """Whether the hot paths run as callback state machines (the default) or as the reference
        generators they mirror, bit for bit (``simcache.sim.engine.build``'s ``paths``;
        ``tests/sim/test_fast_paths.py``)."""
        env.schedule = self.schedule
        env.step = self.step
        env.peek = self.peek
        env._simcache_clock = self

    def schedule(self, event: Any, priority: int = NORMAL, delay: float = 0) -> None:
        """SimPy's ``Environment.schedule``: ``event`` at ``now + delay`` (seconds), as SimPy
        computes it."""
        self.push(_scheduled(event), self.now + delay, priority)

    def push(self, entry: Signal, at: float, priority: int) -> None:
        """Queue ``entry`` for time ``at`` with ``priority`` and the next event id."""
        if entry.key != NOT_SCHEDULED:
            raise RuntimeError("a Signal is scheduled once (it is its own queue entry)")
        entry.time = at
        entry.key = (priority << _PRIORITY_SHIFT) + self.eid
        self.eid += 1
        self._insert(entry)

    def move_to(self, time: float) -> None:
        """Set the time to ``time`` (seconds), as the run loop does when it processes an event
        queued elsewhere (the native engine's, :mod:`simcache.sim.native_run`)."""
        self.now = time
        if self.mirror_now:
            self.env._now = time

    def _insert(self, entry: Signal) -> None:
        """Put ``entry`` (its time and key set) in the queue."""
        queue = self.queue
        if queue is None:
            push_entry(self.heap, entry)
        else:
            queue.push(entry, entry.time, entry.key)

    def _take(self) -> Signal:
        """Take the first entry off the queue (not empty)."""
        queue = self.queue
        if queue is None:
            return pop_entry(self.heap)
        entry: Signal = queue.pop()
        return entry

    def __len__(self) -> int:
        """How many entries are queued."""
        queue = self.queue
        return len(self.heap) if queue is None else len(queue)

    def peek(self) -> float:
        """SimPy's ``Environment.peek``: the time of the next event (``inf`` if none)."""
        queue = self.queue
        if queue is not None:
            time: float = queue.peek()
            return time
        return self.heap[0].time if self.heap else float("inf")

    def step(self) -> None:
        """SimPy's ``Environment.step``: process the next event (``env.run`` calls it);
        :func:`run_until` is the fast loop."""
        if not len(self):
            raise EmptySchedule()
        entry = self._take()
        self.now = self.env._now = entry.time
        event: Any = event_of(entry)
        callbacks, event.callbacks = event.callbacks, None  # a Signal's in order, its resumer first
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            # As SimPy does: the callbacks after the one that stopped the run are run when it
            # resumes.
            event.callbacks = callbacks[callbacks.index(callback) + 1 :]
            entry.key = NOT_SCHEDULED  # popped: a Signal may go back in
            self.schedule(event, -1)
            raise
        _raise_if_failed(event)


def _clock_now(env: Any) -> float:
    """``env.now`` of an environment whose class :func:`_now_from_clock` replaced: its clock's
    time."""
    clock: Clock = env._simcache_clock
    return clock.now


_CLOCKED_ENVIRONMENT: Final = type(
    "Environment",
    (simpy.Environment,),
    {"now": property(_clock_now), "__module__": simpy.Environment.__module__},
)
"""What :func:`_now_from_clock` makes a plain ``simpy.Environment``: the same, its ``now`` read
from its clock."""


def _now_from_clock(env: Any) -> bool:
    """Make ``env.now`` read its clock's time, if ``env`` is a plain ``simpy.Environment`` (its
    class becomes :data:`_CLOCKED_ENVIRONMENT`; others are left alone, their ``now`` may be their
    own); True if done."""
    if type(env) is not simpy.Environment:
        return False
    env.__class__ = _CLOCKED_ENVIRONMENT
    return True


def clock_of(env: Any) -> Clock:
    """The :class:`Clock` running ``env``'s events (a ``simpy.Environment``): attached at the
    first call."""
    clock = getattr(env, "_simcache_clock", None)
    return Clock(env) if clock is None else clock


def _raise_if_failed(event: Any) -> None:
    """Raise the exception of a failed ``event`` nothing handled (a copy, caused by it), as
    SimPy's loop does."""
    if not event._ok and not hasattr(event, "_defused"):
        raise type(event._value)(*event._value.args) from event._value


def schedule_at(clock: Clock, at: float, event: object, priority: int = NORMAL) -> None:
    """Queue ``event`` (a ``simpy.Event`` or a :class:`Signal`) for time ``at`` (seconds) exactly.

    ``env.schedule`` takes a delay, and ``now + (at - now)`` may round.
    """
    clock.push(_scheduled(event), at, priority)


def trigger(event: Any, value: Any) -> None:
    """Mark ``event`` succeeded with ``value``, without scheduling it (the caller schedules or
    processes it)."""
    if isinstance(event, Signal):
        event._value = value  # a Signal has always succeeded
        return
    event._ok = True
    event._value = value


def current_time(clock: Clock) -> float:
    """The simulation time (seconds)."""
    return clock.now


def events_scheduled(clock: Clock) -> int:
    """How many events have been scheduled so far (SimPy's running event id); consumes one id, as
    ``next(env._eid)``."""
    count = clock.eid
    clock.eid += 1
    return count


def run_until(
    clock: Clock, until: float, stop_requested: Callable[[], bool] | None = None, every: int = 128
) -> bool:
    """``env.run(until=until)``, with :class:`Signal` events processed through typed fields;
    ``False`` if stopped early.

    As in ``env.run``, a stop event is scheduled ahead of the events at
    ``until`` (so those are not processed, and the event count is the same),
    and a failed event that nothing handled raises its exception here. The
    environment's ``_now`` is set when the time moves (``env.now`` reads it).

    ``stop_requested`` is called after every ``every`` events (the network's re-ratings counted
    in, :data:`~simcache.sim.kernel.stopping.RERATES_PER_EVENT` an event); when it returns
    true the loop returns ``False`` at once, with the time that of the last
    event processed (events still queued stay queued). Every 128 events:
    an overloaded run can spend milliseconds on one event (thousands of flows
    in flight), and a check every 1,024 let a 2.5 s deadline run 5 s (found by
    bench/fuzz.py). A countdown, not
    a clock read, so the check costs one subtraction per event: no measurable
    speed (bench/bench_engine.py, 2026-11-25, 2 vCPUs under load: ratio 0.207
    against 0.199 before it with the Python sources, 0.378 and 0.324 against
    0.337 and 0.341 compiled; with a token polled, 1.00 and 1.02 times the
    speed without one). An event that alone re-rates a poll's worth of transfers polls it inside
    (:func:`~simcache.sim.kernel.stopping.poll_within_event`); a stop heard there ends the run at
    that event's time, the model cut short (it runs no further:
    :func:`~simcache.sim.kernel.stopping.check_not_cut_short`).
    """
    check_not_cut_short(clock)
    clock.stop_requested = stop_requested
    try:
        if clock.queue is not None:
            return _run_until_native(clock, until, stop_requested, every)
        return _run_until_heap(clock, until, stop_requested, every)
    except StopWithinEvent:
        clock.cut_short = True
        return False  # the time that of the event the stop was heard in
    finally:
        clock.stop_requested = None


def _run_until_heap(
    clock: Clock, until: float, stop_requested: Callable[[], bool] | None, every: int
) -> bool:
    """:func:`run_until` on the list heap (``clock.heap``)."""
    env = clock.env
    stop = Signal(None)
    clock.schedule(stop, URGENT, until - clock.now)
    heap = clock.heap
    mirror_now = clock.mirror_now
    countdown = every if stop_requested is not None else -1  # never reaches 0 without a check
    while True:
        entry = pop_entry(heap)
        if entry.time != clock.now:
            clock.now = entry.time
            if mirror_now:
                env._now = clock.now
        if entry is stop:
            # env.run() schedules its stop event a second time: count it too, for comparable event
            # counts
            clock.eid += 1
            return True
        event = entry.event
        if event is None:  # the engine's own events, most of them: typed fields, never failed
            run_signal(entry)
        else:
            callbacks, event.callbacks = event.callbacks, None  # None marks it processed
            for callback in callbacks:
                callback(event)
            _raise_if_failed(event)
        countdown -= 1
        if clock.rerated:
            countdown -= clock.rerated // RERATES_PER_EVENT
            clock.rerated = 0
        if countdown <= 0 and stop_requested is not None:
            if stop_requested():
                return False
            countdown = every


def _run_until_native(
    clock: Clock, until: float, stop_requested: Callable[[], bool] | None, every: int
) -> bool:
    """:func:`run_until` on the native queue (``clock.queue``): the same loop, one native pop per
    event."""
    env = clock.env
    stop = Signal(None)
    clock.schedule(stop, URGENT, until - clock.now)
    pop = clock.queue.pop  # bound once: one call per event
    mirror_now = clock.mirror_now
    countdown = every if stop_requested is not None else -1  # never reaches 0 without a check
    while True:
        entry: Signal = pop()
        if entry.time != clock.now:
            clock.now = entry.time
            if mirror_now:
                env._now = clock.now
        if entry is stop:
            clock.eid += 1  # as run_until
            return True
        event = entry.event
        if event is None:
            run_signal(entry)
        else:
            callbacks, event.callbacks = event.callbacks, None  # None marks it processed
            for callback in callbacks:
                callback(event)
            _raise_if_failed(event)
        countdown -= 1
        if clock.rerated:
            countdown -= clock.rerated // RERATES_PER_EVENT
            clock.rerated = 0
        if countdown <= 0 and stop_requested is not None:
            if stop_requested():
                return False
            countdown = every


_FINISHED: Final = object()
"""What :func:`_then_finished` yields once its generator is done."""


def _then_finished(steps: Generator[Wait, Any, None]) -> Generator[Any, Any, None]:
    """``steps``, then :data:`_FINISHED` instead of an end: compiled, a ``send`` that ends a
    generator raises ``StopIteration`` (and the catch costs a traceback), while ``yield from``
    sees it end natively."""
    yield from steps
    yield _FINISHED


class Resumer:
    """The callback that drives a generator of events without a ``simpy.Process`` (see
    :mod:`simcache.sim.kernel.detached`).

    A bound method, so no reference cycle. Each yielded event gets
    :meth:`resume` as a callback, or a :class:`Signal` nobody waits for yet
    this resumer as its ``resumer`` (no bound method made, a native call);
    one already processed sends its value in at once.
    """

    __slots__ = ("send",)

    def __init__(self, steps: Generator[Wait, Any, None]):
        # The wrapper's bound send, looked up once (not at every step); the wrapper ends with
        # _FINISHED.
        self.send: Callable[[Any], Any] = _then_finished(steps).send

    def resume(self, event: Wait | None) -> None:
        """Send ``event``'s value (``None`` to start) into the generator and run it to its next
        wait."""
        # a union: mypyc reads a Signal's field natively
        value = None if event is None else event._value
        send = self.send
        while True:
            target: Any = send(value)  # an event or a Signal: only its SimPy fields are used
            if target is _FINISHED:
                # the generator is done (its wrapper, suspended at its last yield, goes with this
                # resumer)
                return
            if isinstance(target, Signal):
                if target._callbacks is not None:
                    if (
                        target.resumer is None
                        and target.callback is None
                        and target._callbacks is NONE_ADDED
                    ):
                        target.resumer = self
                    else:
                        target.add_callback(self.resume)  # runs after those that waited before it
                    return
            elif target.callbacks is not None:
                target.callbacks.append(self.resume)
                return
            value = target._value  # already processed: carry on at once


def check_simpy(module: Any = simpy) -> None:
    """Fail at import, not mid-run, if SimPy's internals (of ``module``, the installed simpy) are
    not the ones this module uses: the names, then that SimPy's own events land in a
    :class:`Clock` in SimPy's order."""
    env = module.Environment()
    event = env.event().succeed()  # _ok is set when an event is triggered
    missing = [name for name in ("_queue", "_eid", "_now") if not hasattr(env, name)]
    missing += [
        f"Event.{name}" for name in ("_ok", "_value", "callbacks") if not hasattr(event, name)
    ]
    events = getattr(module, "events", None)
    priorities = (getattr(events, "URGENT", None), getattr(events, "NORMAL", None))
    if not missing and (
        not isinstance(env._queue, list)
        or priorities != (URGENT, NORMAL)
        or not _runs_through_clock(module)
    ):
        missing.append("the event queue")
    if missing:
        version = getattr(module, "__version__", "unknown")
        raise ImportError(
            f"simcache needs simpy{SUPPORTED_SIMPY} (it uses SimPy internals: "
            f"{', '.join(missing)}); installed: simpy {version}"
        )


def _runs_through_clock(module: Any) -> bool:
    """Do a timeout, an event, a process and a condition go through a :class:`Clock` in SimPy's
    order (by ``env.run``)?"""
    env = module.Environment()
    log: list[str] = []
    # id 0, scheduled before the clock: adopted
    env.timeout(0).callbacks.append(lambda _: log.append("timeout"))
    clock = clock_of(env)

    def process() -> Generator[Any, Any, None]:
        log.append("start")
        yield env.timeout(1) & env.timeout(1)
        log.append("condition")

    env.process(process())  # its start: URGENT, so before the timeout at 0
    env.event().succeed().callbacks.append(lambda _: log.append("event"))
    scheduled = [event_of(entry) for entry in queued(clock)]
    env.run()
    return (
        clock.eid == 7
        and len(scheduled) == 3
        and log == ["start", "timeout", "event", "condition"]
        and env.now == 1
    )


check_simpy()
