"""A part's busiest sample intervals in the measurement window, and the scheduled events under way
then (:func:`peak_of`): the bottleneck's sentence and line say them of a part saturated in some
intervals but not on average (:mod:`simcache.results.bottleneck`)."""

from __future__ import annotations

from dataclasses import dataclass

from simcache.base.units import format_figure
from simcache.results.assessed import window_series
from simcache.results.event_impact import EventImpact, event_impacts
from simcache.results.result import Result
from simcache.results.validity import PINNED

__all__ = ["PEAK", "Peak", "peak_of", "peak_words"]

PEAK = PINNED
"""A sample interval's utilization from which a part not saturated on average is called saturated
at its peak: stricter than :data:`simcache.results.bottleneck.SATURATED`, as one interval's
utilization varies more than the window's mean (:data:`simcache.results.validity.PINNED`, at
capacity)."""


@dataclass(frozen=True)
class Peak:
    """A part's busiest sample intervals in the measurement window (:func:`peak_of`)."""

    utilization: float
    """The highest utilization of one sample interval (0 to 1)."""
    saturated_s: float
    """Seconds of the window in intervals at :data:`PEAK` or more."""
    window_s: float
    """The measurement window's seconds."""
    events: tuple[EventImpact, ...]
    """The scheduled events whose span overlaps those intervals, in the scenario's order, when at
    least half of the intervals' time lies within them; else none."""

    @property
    def saturated(self) -> bool:
        """Some interval reached :data:`PEAK`."""
        return self.utilization >= PEAK


def peak_of(result: Result, part: str) -> Peak:
    """``part``'s (a utilization column's component: ``array``, ``host0.peer.tx``) busiest
    sample intervals after the warm-up, and the scheduled events under way in those at
    :data:`PEAK` or more, when at least half of that time falls within them. Each sample
    covers the interval that ends at its time."""
    start, end = result.window
    column = f"util.{part}"
    window = window_series(result)
    if column not in window.columns or not len(window):
        return Peak(0.0, 0.0, end - start, ())
    interval = float(result.meta["scenario"]["run"]["sample_interval"])
    times = window.index.to_numpy(dtype=float)
    busy = window[column].to_numpy(dtype=float)
    spans = [
        (max(start, t - interval), float(t)) for t, u in zip(times, busy, strict=True) if u >= PEAK
    ]
    saturated_s = float(sum(high - low for low, high in spans))
    impacts = event_impacts(result) if spans else []
    during = [[e for e in impacts if _overlaps(e, low, high)] for low, high in spans]
    # an event is named only when the peak falls mostly within the events, not for one that
    # merely touches it
    covered = sum(high - low for (low, high), found in zip(spans, during, strict=True) if found)
    events = (
        tuple(e for e in impacts if any(e in found for found in during))
        if covered >= 0.5 * saturated_s
        else ()
    )
    return Peak(float(busy.max()), saturated_s, end - start, events)


def _overlaps(event: EventImpact, low: float, high: float) -> bool:
    """``event``'s span meets the interval (``low``, ``high``]; an instant lies in it."""
    if event.end_s <= event.start_s:
        return low < event.start_s <= high
    return event.start_s < high and event.end_s > low


def peak_words(peak: Peak) -> str:
    """How long the part was saturated, and during which events."""
    said = (
        f"{PEAK:.0%} or more for {format_figure(peak.saturated_s, 3)} s of the "
        f"{format_figure(peak.window_s, 3)} s measured"
    )
    if not peak.events:
        return said
    shown = [
        f"{e.what} from {e.start_s:.1f} s, still under way when the run ended"
        if e.ongoing
        else f"{e.what} {e.start_s:.1f}-{e.end_s:.1f} s"
        for e in peak.events[:3]
    ]
    more = len(peak.events) - len(shown)
    return f"{said}, during " + " and ".join(shown) + (f" and {more} more events" if more else "")
