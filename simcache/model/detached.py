"""Generators of SimPy events driven by event callbacks, without a ``simpy.Process``.

A process costs a start event, an end event and, at each step, SimPy's
general-purpose resume (failure handling, the active-process marker). The
model's own loops (workload slots, destage flushers, each I/O) never fail
into a waiting process and nothing waits for them to end, so they run as
detached generators instead.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy
from simpy.events import URGENT

__all__ = ["run_detached", "start_detached"]


def run_detached(steps: Generator[simpy.Event, Any, None]) -> None:
    """Run ``steps`` now, up to its first wait; it resumes from the callbacks of the events it yields.

    Nothing waits for an open-loop I/O, so it needs neither the process's
    start event nor its end event: this saves two scheduled events per I/O.
    """
    _Detached(steps).resume(None)


def start_detached(env: simpy.Environment, steps: Generator[simpy.Event, Any, None]) -> None:
    """Start ``steps`` when ``env.process(steps)`` would have: at the current time, ahead of normal events."""
    start = env.event()
    start._ok = True
    start._value = None
    start.callbacks.append(_Detached(steps).resume)
    env.schedule(start, URGENT)


class _Detached:
    """The callback that resumes one detached generator (a bound method, so no reference cycle)."""

    __slots__ = ("steps",)

    def __init__(self, steps: Generator[simpy.Event, Any, None]):
        self.steps = steps

    def resume(self, event: simpy.Event | None) -> None:
        value = None if event is None else event._value
        while True:
            try:
                target: Any = self.steps.send(value)  # an event or a _Signal: only its SimPy fields are used
            except StopIteration:
                return
            if target.callbacks is not None:
                target.callbacks.append(self.resume)
                return
            value = target._value  # already processed: carry on at once
