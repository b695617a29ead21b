"""Utilization of servers whose busy intervals are known when work is submitted."""

from __future__ import annotations

__all__ = ["BusyMeter"]

_FOLD_AT = 4096
"""Open intervals the meter holds before it first folds the finished ones into its running sum."""


class BusyMeter:
    """Collects (start, finish) busy intervals; reports the busy time inside consecutive windows.

    The tier and the array compute each operation's service interval at
    submission, often ahead of the current time; this meter clips each interval
    to the sampling window it falls in, so a window's utilization never counts
    work that has not happened yet.

    Memory stays bounded by the work in flight, not by the operations of a window: once the intervals held pass
    a limit, :meth:`add` folds those that have finished by ``now`` into the window's running sum (the window ends
    after ``now``, so all of a finished interval after the window's start counts), and the limit doubles past what
    is still open. A 64-host model held about a million intervals per second of sample interval without this.
    The sum may add the same figures in another order than one pass at the window's end: the utilization can
    differ in its last bits.
    """

    __slots__ = ("_folded", "_limit", "_open", "_window_start")

    def __init__(self) -> None:
        self._open: list[tuple[float, float]] = []
        self._folded = 0.0  # busy seconds of the current window from intervals already folded
        self._window_start = 0.0  # the end of the last window asked for
        self._limit = _FOLD_AT

    def add(self, start: float, finish: float, now: float) -> None:
        """Record an operation busy from ``start`` to ``finish`` (seconds), submitted at ``now``."""
        held = self._open
        held.append((start, finish))
        if len(held) >= self._limit:
            self._fold(now)

    def _fold(self, now: float) -> None:
        window_start = self._window_start
        busy = self._folded
        still_open: list[tuple[float, float]] = []
        for interval in self._open:
            start, finish = interval
            if finish > now:
                still_open.append(interval)
            elif start >= window_start:
                busy += finish - start
            elif finish > window_start:
                busy += finish - window_start  # the part before the window was counted in the windows before
        self._open[:] = still_open
        self._folded = busy
        self._limit = max(_FOLD_AT, 2 * len(still_open))

    def busy_between(self, window_start: float, window_end: float) -> float:
        """Busy seconds inside [window_start, window_end); windows must be asked for in order, each starting where
        the one before ended, and ``window_end`` must not be before the time of the last :meth:`add`."""
        busy = self._folded
        still_open: list[tuple[float, float]] = []
        for interval in self._open:
            start, finish = interval
            if window_start <= start and finish <= window_end:
                busy += finish - start  # most intervals lie inside the window (adding a zero length changes nothing)
                continue
            low = start if start > window_start else window_start
            high = finish if finish < window_end else window_end
            if high > low:
                busy += high - low
            if finish > window_end:
                still_open.append(interval)
        self._open[:] = still_open
        self._folded = 0.0
        self._window_start = window_end
        return busy
