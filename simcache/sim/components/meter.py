"""Utilization of servers whose busy intervals are known when work is submitted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from librt.strings import BytesWriter, read_f64_le, write_f64_le

if TYPE_CHECKING:  # compiled, a C int64; to Python, int
    from mypy_extensions import i64

__all__ = ["BusyMeter"]

_FOLD_AT: Final = 4096
"""Open intervals the meter holds before it first folds the finished ones into its running sum."""


class BusyMeter:
    """Collects (start, finish) busy intervals; reports the busy time inside consecutive windows.

    The tier and the array compute each operation's service interval at
    submission, often ahead of the current time; this meter clips each interval
    to the sampling window it falls in, so a window's utilization never counts
    work that has not happened yet.

    Memory stays bounded by the work in flight, not by the operations of a window: once the
    intervals held pass a limit, :meth:`add` counts the window so far, up to ``now`` (the window
    ends at or after it), keeps only the intervals that go on after ``now``, and the limit doubles
    past what is still open. A 64-host model held about a million intervals per second of sample
    interval without this. The sum may add the same figures in another order than one pass at the
    window's end: the utilization can differ in its last bits.
    """

    __slots__ = ("_carried", "_held", "_intervals", "_limit", "_swept_to")

    def __init__(self) -> None:
        # The intervals held, as (start, finish) float64 pairs in a byte buffer: compiled, written
        # and read by native calls, with no float object (as two lists of floats, 2% more of the
        # default run's time; as (start, finish) tuples, an allocation and a free more an
        # operation).
        self._intervals = BytesWriter()
        # intervals in _intervals busy seconds from _swept_to's window start up to _swept_to,
        # counted by a fold
        self._held: i64 = 0
        self._carried = 0.0
        self._swept_to = 0.0  # the time up to which the intervals held have been counted
        self._limit: i64 = _FOLD_AT

    def add(self, start: float, finish: float, now: float) -> None:
        """Record an operation busy from ``start`` to ``finish`` (seconds), submitted at ``now``."""
        intervals = self._intervals
        write_f64_le(intervals, start)
        write_f64_le(intervals, finish)
        self._held += 1
        if self._held >= self._limit:
            self._fold(now)
            self._limit = max(_FOLD_AT, 2 * self._held)

    def busy_between(self, window_start: float, window_end: float) -> float:
        """Busy seconds inside [window_start, window_end); windows must be asked for in order,
        each starting where the one before ended, and ``window_end`` must not be before the time
        of the last :meth:`add`."""
        busy = self._carried + self._sweep(max(window_start, self._swept_to), window_end)
        self._carried = 0.0
        self._swept_to = window_end
        return busy

    def open_at(self, now: float) -> int:
        """Intervals that go on past ``now``: the operations running or waiting then. Counts the
        busy time up to ``now`` first, as a fold does: ``now`` must not be before the last
        :meth:`add`, and the next window asked for must end at or after it (the times asked for,
        here and of :meth:`busy_between`, go forward)."""
        self._fold(now)
        return self._held

    def _fold(self, now: float) -> None:
        """Count [_swept_to, now) now (the window ends at or after now), dropping the intervals
        finished by then."""
        self._carried += self._sweep(self._swept_to, now)
        self._swept_to = now

    def open_count(self) -> int:
        """Intervals held that go on past the end of the last window counted by
        :meth:`busy_between` (asked right after it: the operations running or waiting at that
        time)."""
        return self._held

    def _sweep(self, window_start: float, window_end: float) -> float:
        """Busy seconds of the intervals held inside [window_start, window_end); keeps only those
        that go on after it."""
        busy = 0.0
        held = self._intervals.getvalue()
        still_open = BytesWriter()
        still_held: i64 = 0
        end: i64 = 16 * self._held
        at: i64 = 0
        while at < end:
            start = read_f64_le(held, at)
            finish = read_f64_le(held, at + 8)
            at += 16
            if window_start <= start and finish <= window_end:
                # most intervals lie inside the window (adding a zero length changes nothing)
                busy += finish - start
                continue
            low = start if start > window_start else window_start
            high = finish if finish < window_end else window_end
            if high > low:
                busy += high - low
            if finish > window_end:
                write_f64_le(still_open, start)
                write_f64_le(still_open, finish)
                still_held += 1
        self._intervals = still_open
        self._held = still_held
        return busy
