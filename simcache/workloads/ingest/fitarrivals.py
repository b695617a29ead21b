"""A fitted workload's arrivals: the rate profile's interval and the arrival law within each of its
steps, chosen so that the synthetic's inter-arrival times vary as the trace's do.

The fitted workload's ``profile`` duty cycle (:class:`~simcache.spec.DutyCycle`) has the
trace's I/O count of every interval as its levels, so interval k runs at ``count[k] /
interval`` I/Os a second. The generator places arrivals along the profile's cumulative rate:
the ``uniform`` law (one I/O every unit of cumulative count) gives every interval its count and
spaces them evenly within it; the ``poisson`` law (unit-mean exponential steps) makes a Poisson
process at that rate, which adds each interval's mean to the variance of its count (the index of
dispersion of the counts grows by about 1: little for bursty counts, double for a trace that was
Poisson already). Neither keeps any structure finer than the interval; a finer interval keeps
more of it, with a longer profile.

The variability kept is that of the inter-arrival times, as their squared coefficient of
variation (SCV: variance over squared mean; 0 for evenly spaced arrivals, 1 for Poisson, above 1
for bursts; :func:`~simcache.workloads.ingest.tracestats.interarrival_scv`); their mean is kept
by the mean rate. :func:`fit_arrivals` tries the intervals of :data:`ARRIVAL_INTERVALS` from
the coarsest and takes the first whose better law gives an SCV within :data:`SCV_TOLERANCE` of
the trace's, or else the interval and law of the nearest SCV. No interval finer than the
trace's clock tick (:func:`~simcache.workloads.ingest.tracestats.clock_tick`) is tried, and at
the tick only ``uniform`` is (the trace does not say where within a tick its I/Os fell): a trace
with whole-second timestamps keeps every second's count, evenly spaced within it. A profile
longer than :data:`~simcache.spec.workload.PROFILE_LEVELS` steps gets a coarser interval (a
whole multiple).

The synthetic's SCV of each candidate is computed from the arrival times the generator would
give (:func:`profile_arrivals`: the same inversion of the cumulative rate, ``poisson`` with one
draw of a fixed seed), not by running it; ``compare`` measures the generator's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from simcache.base.units import format_figure
from simcache.spec.workload import PROFILE_LEVELS
from simcache.workloads.ingest.tracestats import (
    clock_tick,
    interarrival_scv,
    interval_counts,
    whole_intervals,
)

__all__ = [
    "ARRIVAL_INTERVALS",
    "SCV_TOLERANCE",
    "ArrivalChoice",
    "ArrivalFit",
    "duration_text",
    "fit_arrivals",
    "profile_arrivals",
    "profile_step",
]

ARRIVAL_INTERVALS = (1.0, 0.1, 0.01, 0.001)
"""Profile intervals (seconds) :func:`fit_arrivals` tries, coarsest first; 1 ms is the finest a
duty cycle takes."""
SCV_TOLERANCE = 0.1
"""An interval is fine enough when its law's inter-arrival SCV is within this share of the
trace's (within this much of it, for a trace SCV below 1)."""


def duration_text(seconds: float) -> str:
    """Seconds for people, in the largest unit of s, ms, µs and ns that keeps them at least 1:
    ``0.1`` -> ``"100 ms"``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale * (1 - 1e-9):
            return f"{format_figure(seconds / scale)} {unit}"
    return f"{format_figure(seconds / 1e-9)} ns"


@dataclass(frozen=True)
class ArrivalChoice:
    """One profile interval and arrival law, and the inter-arrival SCV the generator gives with
    it."""

    interval: float
    """Seconds per profile step."""
    arrivals: str
    """``uniform`` or ``poisson``."""
    scv: float

    def describe(self) -> str:
        return f"{self.arrivals} through a {duration_text(self.interval)} profile"


@dataclass(frozen=True)
class ArrivalFit:
    """The arrivals chosen for a trace, with what was measured and tried."""

    chosen: ArrivalChoice
    tick: float
    """The trace's clock tick, seconds."""
    trace_scv: float
    """The trace's inter-arrival SCV (NaN when it has fewer than two distinct times)."""
    mean_gap: float
    """The trace's mean inter-arrival time, seconds (NaN for fewer than two I/Os)."""
    tried: list[ArrivalChoice] = field(default_factory=list)

    @property
    def interval(self) -> float:
        return self.chosen.interval

    @property
    def arrivals(self) -> str:
        return self.chosen.arrivals

    def facts(self) -> list[tuple[str, str]]:
        """(what, value) lines for people: the clock, the choice and the SCVs."""
        step = duration_text(self.interval)
        within = (
            "evenly spaced within it"
            if self.arrivals == "uniform"
            else "Poisson within it (which adds each step's mean to its count's variance: about 1 "
            "to the index of dispersion of the counts)"
        )
        arrivals = (
            "arrivals",
            f"{self.chosen.describe()}: the trace's I/O count of every {step}, {within}",
        )
        clock = (
            "clock tick",
            f"{duration_text(self.tick)} (every timestamp is a whole multiple of it)",
        )
        if not math.isfinite(self.trace_scv):
            return [
                (
                    arrivals[0],
                    f"{arrivals[1]} (no inter-arrival times to fit: fewer than two I/Os, or "
                    "all at one time)",
                )
            ]
        if len(self.tried) == 1:
            return [
                clock,
                (arrivals[0], f"{arrivals[1]} (the trace has no timing finer than {step})"),
            ]
        others = "; ".join(
            f"{choice.describe()} {_scv_text(choice.scv)}"
            for choice in self.tried
            if choice is not self.chosen
        )
        near = abs(self.chosen.scv - self.trace_scv) <= _tolerance(self.trace_scv)
        return [
            clock,
            arrivals,
            (
                "inter-arrival time",
                f"mean {self.mean_gap * 1e3:.4g} ms (the mean rate keeps it); SCV trace "
                f"{_scv_text(self.trace_scv)}, fitted {_scv_text(self.chosen.scv)} ("
                + (
                    f"within {SCV_TOLERANCE:.0%}"
                    if near
                    else f"the nearest: none tried is within {SCV_TOLERANCE:.0%}"
                )
                + f"; tried {others})",
            ),
        ]


def _scv_text(scv: float) -> str:
    """An SCV to 4 digits; float dust (evenly spaced gaps give 1e-26) as 0."""
    return f"{scv:.4g}" if scv >= 1e-9 else "0"


def profile_step(interval: float, span: float) -> float:
    """``interval``, or the least whole multiple of it that covers ``span`` seconds in
    :data:`~simcache.spec.workload.PROFILE_LEVELS` steps."""
    return interval * max(1, math.ceil((span / interval + 1) / PROFILE_LEVELS))


def profile_arrivals(
    counts: np.ndarray, interval: float, arrivals: str, seed: int = 0
) -> np.ndarray:
    """The arrival times (seconds) the generator gives over one pass of a profile of these
    ``counts`` per ``interval``, at the mean rate of the counts.

    Interval k runs at ``counts[k] / interval``; the cumulative count is inverted at ``j + 0.5``
    for ``uniform`` (the generator starts at a random phase of the first gap; the middle is
    taken) and at the sums of unit exponential steps for ``poisson`` (``seed``).
    """
    cumulative = np.concatenate(([0.0], np.cumsum(np.asarray(counts, dtype=np.float64))))
    total = float(cumulative[-1])
    if arrivals == "uniform":
        work = np.arange(math.floor(total)) + 0.5
    else:
        rng = np.random.default_rng(seed)
        work = np.cumsum(rng.exponential(1.0, int(total + 10 * math.sqrt(total) + 10)))
        while work[-1] < total:  # the draw fell short (about never): draw on from its end
            more = work[-1] + np.cumsum(rng.exponential(1.0, int(total - work[-1]) + 10))
            work = np.concatenate((work, more))
        work = work[work < total]
    # cumulative[k] <= work < cumulative[k + 1], so counts[k] > 0
    step = np.searchsorted(cumulative, work, side="right") - 1
    result: np.ndarray = (step + (work - cumulative[step]) / np.asarray(counts)[step]) * interval
    return result


def _tolerance(trace_scv: float) -> float:
    return SCV_TOLERANCE * max(1.0, trace_scv)


def fit_arrivals(times: np.ndarray, interval: float | None = None, seed: int = 0) -> ArrivalFit:
    """The profile interval and arrival law whose inter-arrival SCV is nearest the trace's (module
    docstring).

    ``times``: the I/Os' times in seconds from the first, in order. ``interval``: the one
    interval to try (seconds; both laws unless it is no coarser than the clock tick), or
    ``None`` for :data:`ARRIVAL_INTERVALS`. ``seed``: of the ``poisson`` draw.
    """
    times = np.asarray(times, dtype=np.float64)
    span = float(times[-1]) if len(times) else 0.0
    tick = clock_tick(times)
    trace_scv = interarrival_scv(times)
    mean_gap = float(np.mean(np.diff(times))) if len(times) > 1 else math.nan
    wanted = (
        (interval,)
        if interval is not None
        else tuple(dt for dt in ARRIVAL_INTERVALS if dt >= tick * (1 - 1e-9))
        or ARRIVAL_INTERVALS[:1]
    )
    if not math.isfinite(trace_scv):  # no gaps to fit: the coarsest step, evenly spaced
        first = ArrivalChoice(profile_step(wanted[0], span), "uniform", math.nan)
        return ArrivalFit(first, tick, trace_scv, mean_gap, [first])

    def miss(choice: ArrivalChoice) -> float:
        return abs(choice.scv - trace_scv) if math.isfinite(choice.scv) else math.inf

    tried: list[ArrivalChoice] = []
    for dt in wanted:
        step = profile_step(dt, span)
        if any(choice.interval == step for choice in tried):
            continue
        counts = interval_counts(times, step, whole_intervals(times, step))
        laws = ("uniform", "poisson") if step > tick * (1 + 1e-9) else ("uniform",)
        here = [
            ArrivalChoice(step, law, interarrival_scv(profile_arrivals(counts, step, law, seed)))
            for law in laws
        ]
        tried += here
        best = min(here, key=miss)
        if miss(best) <= _tolerance(trace_scv):
            return ArrivalFit(best, tick, trace_scv, mean_gap, tried)
    return ArrivalFit(min(tried, key=miss), tick, trace_scv, mean_gap, tried)
