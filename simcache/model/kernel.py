"""The engine's contact with SimPy's internals, in one place.

Checked against SimPy 4.1.2 (tests/test_kernel.py compares these operations
with plain SimPy); ``pyproject.toml`` pins ``simpy>=4.1,<4.2``.

Why it reaches inside: the engine schedules events at exact times (``env.schedule``
takes a delay, and ``now + (at - now)`` may round), processes events without a
method call each (``Environment.step`` inlined into :func:`run_until`),
triggers events without the checks of ``Event.succeed``, and schedules bare
signals (:class:`Signal`) that are not ``simpy.Event`` objects at all. Each
of these is a noticeable share of a run's time. What it relies on:

- ``env._queue``: a heap of ``(time, priority, event id, event)``; events run
  in that order. ``URGENT`` sorts before ``NORMAL`` at the same time.
- ``env._eid``: an ``itertools.count`` giving the event ids (its next value is
  the number of events scheduled so far).
- ``env._now``: the current time, set by the loop.
- an event's ``callbacks`` (a list, ``None`` once processed), ``_ok`` (success)
  and ``_value`` (its value, or the exception of a failed event); a failed
  event someone handled has a ``_defused`` attribute.

The names are checked when this module is imported; any other SimPy version
raises ImportError naming the supported range. No other module touches
SimPy's private names. The calls into this module cost no measurable speed
(bench/bench_engine.py, sources against the earlier inlined code).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from heapq import heapify, heappop, heappush
from typing import Any, TypeAlias

import simpy
from simpy.events import NORMAL, URGENT

__all__ = [
    "NORMAL",
    "SUPPORTED_SIMPY",
    "URGENT",
    "Resumer",
    "Signal",
    "Wait",
    "check_simpy",
    "current_time",
    "events_scheduled",
    "process_now",
    "run_until",
    "schedule_at",
    "sleep",
    "trigger",
    "unschedule",
]

SUPPORTED_SIMPY = ">=4.1,<4.2"
"""The SimPy versions whose internals this module was checked against (as pinned in pyproject.toml)."""


def check_simpy(module: Any = simpy) -> None:
    """Fail at import, not mid-run, if SimPy's internals (of ``module``, the installed simpy) are not the ones this
    module uses."""
    env = module.Environment()
    event = env.event().succeed()  # _ok is set when an event is triggered
    missing = [name for name in ("_queue", "_eid", "_now") if not hasattr(env, name)]
    missing += [f"Event.{name}" for name in ("_ok", "_value", "callbacks") if not hasattr(event, name)]
    if missing or not isinstance(env._queue, list) or (URGENT, NORMAL) != (0, 1):
        version = getattr(module, "__version__", "unknown")
        raise ImportError(
            f"simcache needs simpy{SUPPORTED_SIMPY} (it uses SimPy internals: {', '.join(missing) or 'the event queue'}); "
            f"installed: simpy {version}"
        )


check_simpy()


class Signal:
    """A bare scheduled event: SimPy's queue needs only ``callbacks``, ``_ok`` and ``_value``.

    Cheaper than a ``simpy.Event`` (no environment, no checks); the engine's
    own wake-ups and deliveries use it. ``callback`` is called with the signal.
    """

    __slots__ = ("_ok", "_value", "callbacks")

    def __init__(self, value: Any, callback: Callable[[Signal], None] | None = None):
        self._ok = True
        self._value: Any = value
        # None once processed (SimPy's marker); without a callback, whoever waits for it adds theirs (see sleep).
        self.callbacks: list[Callable[[Signal], None]] | None = [] if callback is None else [callback]

    @property
    def value(self) -> Any:
        """What the signal carries (given when it was made)."""
        return self._value


Wait: TypeAlias = simpy.Event | Signal  # explicit: without simpy's types (mypyc's build) simpy.Event is Any
"""What the engine's detached generators yield: a SimPy event or a :class:`Signal` (:func:`sleep`)."""


def schedule_at(env: simpy.Environment, at: float, event: object, priority: int = NORMAL) -> None:
    """Put ``event`` (a ``simpy.Event`` or a :class:`Signal`) in SimPy's queue for time ``at`` (seconds) exactly."""
    queue: list[Any] = env._queue
    heappush(queue, (at, priority, next(env._eid), event))


def sleep(env: simpy.Environment, delay: float) -> Signal:
    """What ``env.timeout(delay)`` is to a generator driven by :class:`Resumer`: a :class:`Signal` scheduled for
    ``now + delay``, computed as SimPy computes it (so the same time to the last bit, and the same event id).

    No ``simpy.Timeout`` is made (its ``__init__`` and ``env.schedule`` are two interpreted calls; this is one
    native one in the compiled engine). Only for waits nothing else combines (``|``, ``&``) or fails into: a
    :class:`Signal` is no ``simpy.Event``. Its value is ``None``, as a timeout's.
    """
    if delay < 0:
        raise ValueError(f"Negative delay {delay}")
    signal = Signal(None)
    queue: list[Any] = env._queue
    heappush(queue, (env._now + delay, NORMAL, next(env._eid), signal))
    return signal


def unschedule(env: simpy.Environment, events: set[object]) -> None:
    """Take ``events`` out of SimPy's queue (SimPy cannot cancel an event).

    Events are popped in the order (time, priority, id), so taking some out
    and re-heaping the rest does not change the order of the others.
    """
    queue: list[Any] = env._queue
    queue[:] = [entry for entry in queue if entry[3] not in events]
    heapify(queue)


def trigger(event: Any, value: Any) -> None:
    """Mark ``event`` succeeded with ``value``, without scheduling it (the caller schedules or processes it)."""
    event._ok = True
    event._value = value


def process_now(event: Any) -> None:
    """Process ``event`` now, as SimPy's loop does when it pops it: call its callbacks once, mark it processed."""
    callbacks, event.callbacks = event.callbacks, None
    for callback in callbacks:
        callback(event)


def current_time(env: simpy.Environment) -> float:
    """The simulation time (seconds), read without the ``env.now`` property."""
    value: float = env._now
    return value


def events_scheduled(env: simpy.Environment) -> int:
    """How many events have been scheduled in ``env`` so far (SimPy's running event id); consumes one id."""
    return next(env._eid)


def run_until(env: simpy.Environment, until: float, stop_requested: Callable[[], bool] | None = None, every: int = 128) -> bool:
    """``env.run(until=until)`` with SimPy's ``Environment.step()`` inlined into the loop; ``False`` if stopped early.

    The method call per event is a noticeable share of a run. As in
    ``env.run``, a stop event is scheduled ahead of the events at ``until``
    (so those are not processed, and the event count is the same), and a
    failed event that nothing handled raises its exception here.

    ``stop_requested`` is called after every ``every`` events; when it returns
    true the loop returns ``False`` at once, with ``env.now`` the time of the
    last event processed (events still queued stay queued). Every 128 events:
    an overloaded run can spend milliseconds on one event (thousands of flows
    in flight), and a check every 1,024 let a 2.5 s deadline run 5 s (found by
    bench/fuzz.py). A countdown, not
    a clock read, so the check costs one subtraction per event: no measurable
    speed (bench/bench_engine.py, 2026-11-25, 2 vCPUs under load: ratio 0.207
    against 0.199 before it with the Python sources, 0.378 and 0.324 against
    0.337 and 0.341 compiled; with a token polled, 1.00 and 1.02 times the
    speed without one).
    """
    stop = env.event()
    env.schedule(stop, URGENT, until - env.now)
    queue = env._queue
    countdown = every if stop_requested is not None else -1  # never reaches 0 without a check
    while True:
        env._now, _, _, event = heappop(queue)
        if event is stop:
            next(env._eid)  # env.run() schedules its stop event a second time: count it too, for comparable event counts
            return True
        callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]  # None marks it processed
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            raise type(event._value)(*event._value.args) from event._value
        countdown -= 1
        if not countdown:
            assert stop_requested is not None
            if stop_requested():
                return False
            countdown = every


class Resumer:
    """The callback that drives a generator of events without a ``simpy.Process`` (see :mod:`simcache.model.detached`).

    A bound method, so no reference cycle. Each yielded event (or
    :class:`Signal`) gets :meth:`resume` as a callback; one already
    processed sends its value in at once.
    """

    __slots__ = ("steps",)

    def __init__(self, steps: Generator[Wait, Any, None]):
        self.steps = steps

    def resume(self, event: Wait | None) -> None:
        """Send ``event``'s value (``None`` to start) into the generator and run it to its next wait."""
        value = None if event is None else event._value
        while True:
            try:
                target: Any = self.steps.send(value)  # an event or a Signal: only its SimPy fields are used
            except StopIteration:
                return
            if target.callbacks is not None:
                target.callbacks.append(self.resume)
                return
            value = target._value  # already processed: carry on at once
