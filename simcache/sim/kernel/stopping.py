"""A run's stop request inside the kernel: how often the run loop polls it (re-ratings of the flow
network counted in), the poll from inside an event that re-rates a poll's worth of transfers, and
the model cut short by a stop heard there.

The run loop itself (:func:`simcache.sim.kernel.clock.run_until`) counts the events down to each
poll; the stop request is the run's (:mod:`simcache.sim.control`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from simcache.sim.kernel.clock import Clock

__all__ = [
    "RERATES_PER_EVENT",
    "RERATES_PER_POLL",
    "StopWithinEvent",
    "check_not_cut_short",
    "poll_within_event",
]

RERATES_PER_EVENT: Final = 4
"""Transfers re-rated (``FlowNetwork._rerate``, about 500 ns each) that count as one event (about
2 us) toward the next poll of a stop request: a port with thousands of transfers piled up spends
milliseconds on one event, and polls counted in events alone came seconds apart."""

RERATES_PER_POLL: Final = 128 * RERATES_PER_EVENT
"""Transfers re-rated within one event after which the stop request is polled inside it
(:func:`poll_within_event`): as many as the events between two polls of the run loop."""


class StopWithinEvent(Exception):
    """A stop request heard inside one event (:func:`poll_within_event`): the run loop ends the run
    at that event's time, the event left unfinished (what it had not done yet counts as
    unfinished I/Os, as the events still queued do). The model is then cut short mid-event
    (``clock.cut_short``): it gives its partial result but runs no further. The engines leave
    different partial states (the Python engine unwinds the write it was starting, its
    ``finally`` blocks run; the native one parks the writes not resumed again), as partial
    results of the two engines differ anyway."""


def poll_within_event(clock: Clock) -> None:
    """Poll the run's stop request (``clock.stop_requested``) from inside an event that has
    re-rated :data:`RERATES_PER_POLL` transfers within it (the run loop zeroes the count after
    each event), and raise :class:`StopWithinEvent` if it is set.

    One event can start thousands of transfers: writes stalled while their peers were out of
    reach all resume when the peers are back (``on_peer_loss = "stall"``), and each joins the
    others on the port, re-rating them all, so the event's work grows as their number squared
    (about a minute for 17,000 writes, found by bench/fuzz.py). Polled only between events, a
    deadline of seconds waited for all of it. Not inside a SimPy process (a vMotion's streams, a
    resync): SimPy would catch the exception as the process's failure and run on; the loop's
    poll after the event hears it there.
    """
    if clock.env.active_process is not None:
        return
    clock.rerated = 0  # charged here (the loop's countdown does not see them)
    stop_requested = clock.stop_requested
    if stop_requested is not None and stop_requested():
        raise StopWithinEvent()


def check_not_cut_short(clock: Clock) -> None:
    """Refuse to run a model on from a stop heard inside an event (``clock.cut_short``): what
    that event had not done yet is lost (its signal processed, its waiting writes not resumed)."""
    if clock.cut_short:
        raise RuntimeError(
            "this model was stopped inside an event (StopWithinEvent) and cannot run on: build it "
            "again to run it further"
        )
