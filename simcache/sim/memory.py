"""The run limit on memory, kept while a run goes (:class:`MemoryWatch`): the admission check of
:mod:`simcache.sim.control` bounds what a run is expected to hold from its rates, and this watch
holds it to the limit when an overload makes it hold more."""

from __future__ import annotations

import math
import os
import time

from simcache.sim.control import LIMIT_OPTIONS, _size

__all__ = ["MEMORY_CHECK_S", "MEMORY_STOP_SHARE", "MemoryWatch", "resident_bytes"]

MEMORY_CHECK_S = 0.25
"""Wall seconds between two reads of the process's resident memory by :class:`MemoryWatch`."""
MEMORY_STOP_SHARE = 1 / 3
"""The share of a memory limit a running run may grow by before :class:`MemoryWatch` stops it:
the stop writes the native engine's queues back into Python objects for the partial result, about
twice what they held natively (review 65's overloaded run: stopped at 315 MiB grown, 850 MiB at
its peak), so a stop at a third keeps the peak within the limit."""


def resident_bytes() -> int | None:
    """The process's resident memory now (bytes, ``/proc/self/statm``), or ``None`` where the
    system does not say."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class MemoryWatch:
    """Stops a run whose memory grows past its limit while it runs, as a :class:`Cancel` stops it
    (``cancelled``, ``reason``, ``signal``: the run keeps its partial result).

    The admission check (:func:`check_work`) bounds what a run is expected to hold; an overloaded
    run holds more than any estimate of its rates says (writes waiting for destage room pile up
    for as long as it runs: review 65 saw 9 GB for an estimate of 13 MiB), so the limit is also
    kept on what it holds: the process's resident memory above its level when the run started,
    read every :data:`MEMORY_CHECK_S` wall seconds at most, may grow by
    :data:`MEMORY_STOP_SHARE` of the limit. Where the system does not say (no ``/proc``), it
    never stops a run.
    """

    def __init__(self, limit_bytes: float):
        self.limit = limit_bytes
        self.start = resident_bytes()
        self.next = time.monotonic() + MEMORY_CHECK_S
        self.reason = ""
        self.signal: int | None = None

    @property
    def cancelled(self) -> bool:
        if self.reason:
            return True
        if self.start is None or not math.isfinite(self.limit):
            return False
        now = time.monotonic()
        if now < self.next:
            return False
        self.next = now + MEMORY_CHECK_S
        grown = (resident_bytes() or self.start) - self.start
        if grown <= MEMORY_STOP_SHARE * self.limit:
            return False
        self.reason = (
            f"its memory grew by {_size(grown)}, and its partial result takes about twice that "
            f"again: the limit is {_size(self.limit)}. Queues that grow without bound (an "
            "overloaded run) hold more than its rates foretold; shorten the run or lower the "
            f"load, or allow more with {LIMIT_OPTIONS}"
        )
        return True
