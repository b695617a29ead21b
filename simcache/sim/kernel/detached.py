"""Generators of SimPy events driven by event callbacks, without a ``simpy.Process``.

A process costs a start event, an end event and, at each step, SimPy's
general-purpose resume (failure handling, the active-process marker). The
model's own loops (workload slots, destage flushers, each I/O) never fail
into a waiting process and nothing waits for them to end, so they run as
detached generators instead (resumed by :class:`simcache.sim.kernel.clock.Resumer`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from simcache.sim.kernel.clock import URGENT, Clock, Resumer, current_time, schedule_at
from simcache.sim.kernel.signals import Signal, Wait, process_now

__all__ = ["run_detached", "start_detached"]


def run_detached(steps: Generator[Wait, Any, None], finished: Signal | None = None) -> None:
    """Run ``steps`` now, up to its first wait; it resumes from the callbacks of the events it
    yields.

    Nothing waits for an open-loop I/O, so it needs neither the process's
    start event nor its end event: this saves two scheduled events per I/O.
    ``finished``, if given, is processed (not scheduled) the moment ``steps``
    ends: what waits for it goes on then, as a generator that had run ``steps``
    with ``yield from`` would (a closed-loop slot waiting for its I/O).
    """
    Resumer(steps if finished is None else _then_process(steps, finished)).resume(None)


def _then_process(
    steps: Generator[Wait, Any, None], finished: Signal
) -> Generator[Wait, Any, None]:
    yield from steps
    process_now(finished)


def start_detached(clock: Clock, steps: Generator[Wait, Any, None]) -> None:
    """Start ``steps`` when ``env.process(steps)`` would have: at the current time, ahead of
    normal events."""
    schedule_at(clock, current_time(clock), Signal(None, Resumer(steps).resume), URGENT)
