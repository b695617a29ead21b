"""Destage backlogs that grow through the measured window, and the ``filling`` notes of
:mod:`simcache.results.validity` that say so: how fast, where they end, and when the buffer is
full, or, for a destager that waits for its high watermark, when it reaches the mark."""

from __future__ import annotations

from dataclasses import dataclass

from simcache.base.units import format_figure, format_size
from simcache.results.assessed import (
    AssessedRun,
    ValidityWarning,
    figure_range,
    hosts_words,
    window_series,
)
from simcache.results.trend import FLOORS, MIN_SAMPLES, grows_through

__all__ = ["FULL_FRACTION", "BacklogFill", "filling", "filling_backlogs"]

FULL_FRACTION = 0.95
"""A destage backlog at or above this fraction of the buffer's capacity at the end is full."""


@dataclass(frozen=True)
class BacklogFill:
    """A host's destage backlog that grows through the measurement window
    (:func:`filling_backlogs`)."""

    host: str
    rate: float
    """Bytes a second it grows by (the fitted slope)."""
    end: float
    """Bytes at the window's last sample."""
    full_in_s: float
    """Seconds from the window's end until the buffer is full at :attr:`rate`."""


def filling_backlogs(result: AssessedRun) -> list[BacklogFill]:
    """The hosts whose destage backlog grows through the measurement window (the growth test of
    :func:`~simcache.results.trend.grows_through`) and ends below :data:`FULL_FRACTION` of the
    buffer (a full one is ``backlog_full``), in the series' order; none with fewer than
    :data:`~simcache.results.trend.MIN_SAMPLES` samples after the warm-up."""
    series = window_series(result)
    if len(series) < MIN_SAMPLES:
        return []
    times = series.index.to_numpy(dtype=float)
    capacity = float(result.meta["scenario"]["cluster"]["destager"]["capacity"])
    fills = []
    for column in [c for c in series.columns if c.startswith("backlog.")]:
        growing, fit = grows_through(times, series[column].to_numpy(dtype=float), FLOORS["bytes"])
        if growing and fit.end < FULL_FRACTION * capacity:
            full_in = (capacity - fit.end) / fit.slope
            fills.append(BacklogFill(column.removeprefix("backlog."), fit.slope, fit.end, full_in))
    return fills


def filling(result: AssessedRun, fills: list[BacklogFill]) -> list[ValidityWarning]:
    """One ``filling`` warning for every host in ``fills``, their figures as ranges; the hosts
    whose destager waits for its high watermark (``watermarks`` or ``idle`` trigger) and has not
    reached it in one of their own (their backlog grows by design, and whether the array keeps up
    once they destage is not shown by the run: review 65 saw a full buffer foretold for one whose
    backlog stopped at the mark)."""
    destager = result.meta["scenario"]["cluster"]["destager"]
    capacity = float(destager["capacity"])
    mark = float(destager.get("high_watermark", 1.0)) * capacity
    waiting = destager.get("trigger") in ("watermarks", "idle")
    below = [f for f in fills if waiting and f.end < mark]
    above = [f for f in fills if f not in below]
    warnings = []
    if above:
        warnings.append(
            _filling_warning(
                above,
                capacity,
                "writes arrive faster than they are destaged, and at this rate {each} buffer is "
                "full in about {full_in} s more; the figures hold for write bursts shorter than "
                "that, not for sustained load (then writes wait for the array)",
                [f.full_in_s for f in above],
            )
        )
    if below:
        warnings.append(
            _filling_warning(
                below,
                capacity,
                f"{{each}} destager waits until the backlog reaches its high watermark "
                f"({float(destager['high_watermark']):.0%} of the buffer, trigger = "
                f'"{destager["trigger"]}"), which this rate reaches in about {{full_in}} s more: '
                "the figures are those of a cache not yet destaging, and whether the array keeps "
                "up once it does is not shown by this run (run past that point to see it)",
                [(mark - f.end) / f.rate for f in below],
            )
        )
    return warnings


def _filling_warning(
    fills: list[BacklogFill], capacity: float, said: str, seconds: list[float]
) -> ValidityWarning:
    """A ``filling`` warning for ``fills``: their growth, then ``said`` with ``{each}`` and
    ``{full_in}`` (``seconds`` as a range) filled in."""
    one = len(fills) == 1
    rate = figure_range([f.rate / 2**20 for f in fills], lambda v: f"{v:+.1f}")
    ends = figure_range([f.end / capacity for f in fills], lambda v: f"{v:.0%}")
    full_in = figure_range(seconds, lambda v: format_figure(v, 3))
    return ValidityWarning(
        "filling",
        ",".join(f"backlog.{f.host}" for f in fills),
        "short",
        (
            f"{fills[0].host} destage backlog grows"
            if one
            else f"the destage backlogs of {hosts_words([f.host for f in fills])} grow"
        )
        + f" through the run ({rate} MiB/s{'' if one else ' each'}, "
        f"{'ends' if one else 'ending'} at {ends} of {format_size(capacity)}): "
        + said.format(each="the" if one else "each", full_in=full_in),
    )
