"""Utilization of servers whose busy intervals are known when work is submitted."""

from __future__ import annotations

__all__ = ["BusyMeter"]


class BusyMeter:
    """Collects (start, finish) busy intervals; reports the busy time inside consecutive windows.

    The tier and the array compute each operation's service interval at
    submission, often ahead of the current time; this meter clips each interval
    to the sampling window it falls in, so a window's utilization never counts
    work that has not happened yet.

    ``add`` is the interval list's own ``append`` (it takes one ``(start,
    finish)`` tuple): it is called once per operation, and a Python-level
    method around it would cost more than the append.
    """

    __slots__ = ("_open", "add")

    def __init__(self) -> None:
        self._open: list[tuple[float, float]] = []
        self.add = self._open.append  # the list is only ever changed in place, so this stays bound to it

    def busy_between(self, window_start: float, window_end: float) -> float:
        """Busy seconds inside [window_start, window_end); windows must be asked for in order."""
        busy = 0.0
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
        return busy
