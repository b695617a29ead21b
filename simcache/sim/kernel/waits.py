"""The engine's waits on :class:`~simcache.sim.kernel.signals.Signal` objects: what SimPy's
``Timeout``, ``Event.succeed``, ``AllOf`` and ``timeout | event`` are to a generator driven by a
:class:`~simcache.sim.kernel.clock.Resumer`, with the same events at the same times and ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simcache.sim.kernel.clock import NORMAL, Clock, schedule_at
from simcache.sim.kernel.signals import Signal, on_processed

if TYPE_CHECKING:  # mypyc compiles i64 as a C int64 (no tagged-int checks); to Python it is int
    from mypy_extensions import i64

__all__ = ["AllOf", "sleep", "succeed", "timeout_or"]


def sleep(clock: Clock, delay: float) -> Signal:
    """What ``env.timeout(delay)`` is to a generator driven by :class:`Resumer`: a :class:`Signal`
    scheduled for ``now + delay``, computed as SimPy computes it (so the same time to the last bit,
    and the same event id).

    No ``simpy.Timeout`` is made (its ``__init__`` and ``env.schedule`` are two interpreted calls;
    this is one native one in the compiled engine). Only for waits nothing else combines (``|``,
    ``&``) or fails into: a :class:`Signal` is no ``simpy.Event``. Its value is ``None``, as a
    timeout's.
    """
    if delay < 0:
        raise ValueError(f"Negative delay {delay}")
    signal = Signal(None)
    clock.push(signal, clock.now + delay, NORMAL)
    return signal


def succeed(clock: Clock, signal: Signal) -> None:
    """What ``event.succeed()`` is to a :class:`Signal`: queue it now (normal priority, the next
    event id), so what waits for it goes on when it is processed. A signal is queued once: a
    second call raises RuntimeError."""
    clock.push(signal, clock.now, NORMAL)


class AllOf:
    """What ``simpy.AllOf(env, events)`` is to :class:`Signal` waits: :attr:`done`, queued now
    (:func:`succeed`) when the last of ``signals`` is processed, at once if all were processed
    already (or there are none).

    The same events with the same ids and times as SimPy's ``Condition``: it counts each signal as
    it is processed, from a callback placed after the waits on it made so far (:func:`on_processed`,
    as ``callbacks.append``), and queues itself when the count is full. Its value is ``None``
    (nothing reads a condition's value here).
    """

    __slots__ = ("clock", "done", "left")

    def __init__(self, clock: Clock, signals: list[Signal]) -> None:
        self.clock = clock
        self.done = Signal(None)
        self.left: i64 = len(signals)
        if not signals:
            succeed(clock, self.done)
            return
        for signal in signals:
            if signal._callbacks is None:  # processed already: counted at once, as Condition does
                self.count(signal)
            else:
                on_processed(signal, self.count)

    def count(self, _: Signal) -> None:
        """One of the signals was processed: queue :attr:`done` if it was the last."""
        self.left -= 1
        if self.left == 0:
            succeed(self.clock, self.done)


def timeout_or(clock: Clock, delay: float, signal: Signal) -> Signal:
    """What ``env.timeout(delay) | signal`` is to a generator driven by :class:`Resumer`, without
    SimPy's interpreted ``Timeout`` and ``Condition``: a :class:`Signal` queued when the first of
    the two is processed.

    The same events with the same ids and times as SimPy's: the timeout is queued at once
    (:func:`sleep`); the condition is queued at the time the first of them is processed, as
    ``Condition.succeed()`` queues it; the other one, processed later, does nothing more. ``signal``
    must not have been processed.
    """
    timer = sleep(clock, delay)
    first = Signal(None)

    def check(_: Signal) -> None:
        if not first.triggered:
            schedule_at(clock, clock.now, first)

    timer.callback = check  # a new timer's one callback: a field, no list
    signal.add_callback(check)
    return first
