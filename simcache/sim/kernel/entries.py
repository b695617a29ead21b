"""What a :class:`~simcache.sim.kernel.clock.Clock` has queued, read and pruned from outside its
run loop: the entries themselves (:func:`queued`, :func:`first_queued`), the event each one runs
(:func:`event_of`), and events taken out again (:func:`unschedule`).

Each reads the list heap (``clock.heap``) or, when it is built, the native queue (``clock.queue``):
the same entries in the same (time, key) order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simcache.sim.kernel.heap import heapify_entries
from simcache.sim.kernel.signals import Signal

if TYPE_CHECKING:
    from simcache.sim.kernel.clock import Clock

__all__ = ["event_of", "first_queued", "queued", "unschedule"]


def event_of(entry: Signal) -> Any:
    """The event an entry runs: its SimPy event, or itself."""
    event = entry.event
    return entry if event is None else event


def unschedule(clock: Clock, events: set[object]) -> None:
    """Take ``events`` out of the queue (SimPy cannot cancel an event).

    Entries run in the order of (time, key), all distinct, so taking some out
    and re-heaping the rest does not change the order of the others.
    """
    queue = clock.queue
    if queue is not None:
        kept = [entry for entry in queued(clock) if event_of(entry) not in events]
        queue.clear()
        for entry in kept:
            queue.push(entry, entry.time, entry.key)
        return
    heap = clock.heap
    # in place: run_until holds the list
    heap[:] = [entry for entry in heap if event_of(entry) not in events]
    heapify_entries(heap)


def queued(clock: Clock) -> list[Signal]:
    """The entries queued in ``clock``, in no particular order (a new list)."""
    queue = clock.queue
    if queue is None:
        return list(clock.heap)
    entries: list[Signal] = queue.items()
    return entries


def first_queued(clock: Clock) -> Signal | None:
    """The entry ``clock`` runs next, left queued (None if none)."""
    queue = clock.queue
    if queue is not None:
        first: Signal | None = queue.first()
        return first
    return clock.heap[0] if clock.heap else None
