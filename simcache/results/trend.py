"""The growth test: does a sampled series (a queue, a backlog) grow through a time window, rather
than wander about a level or step up once?

:func:`trend` fits a least-squares slope against time, with its standard error from the
residuals, the residuals' lag-1 autocorrelation r shrinking the sample count to
n (1 - r) / (1 + r) (sampled queues are autocorrelated; without this a stable queue's slow
wander looks significant). A series grows (:func:`grows_through`) when the slope is significant
at the one-sided 0.1% level (t >= :data:`T_CRITICAL`, 3.09) *and* large: the fitted rise over
the window is at least :data:`MIN_RISE` (half) of the window's mean level and above a floor
(:data:`FLOORS`: five I/Os or transfers, 1 MiB), *and* it still rises in the window's second
half (its own slope at the one-sided 5% level, :data:`T_HALF`), so that a step (a vMotion
starting mid-run) is not growth. The guards keep the library's stable runs quiet over 5 seeds
each; at least :data:`MIN_SAMPLES` samples are needed to test at all. The validity warnings
(:mod:`simcache.results.validity`) test a run's series with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcache.spec.consistency import STABILITY_SAMPLES

__all__ = [
    "FLOORS",
    "MIN_RISE",
    "MIN_SAMPLES",
    "T_CRITICAL",
    "T_HALF",
    "Trend",
    "grows_through",
    "trend",
]

T_CRITICAL = 3.09
"""One-sided 0.1% point of the normal distribution: a slope this many standard errors above zero
is significant."""
T_HALF = 1.64
"""One-sided 5% point: the second half of the window must still rise this many standard errors."""
MIN_RISE = 0.5
"""A growing series' fitted rise over the window, as a fraction of its mean level over the
window."""
MIN_SAMPLES = STABILITY_SAMPLES
"""Fewest samples after the warm-up for a trend test (defined with the scenario's rules, whose
message for a run too short to sample gives the run length this many samples need)."""
FLOORS = {"bytes": float(2**20), "count": 5.0}
"""Smallest fitted rise over the window that counts as growth, by the series' unit."""


@dataclass(frozen=True)
class Trend:
    """A least-squares line through a sampled series (see :func:`trend`)."""

    slope: float
    """Units per second."""
    stderr: float
    """Standard error of the slope, widened for the residuals' lag-1 autocorrelation."""
    rise: float
    """slope x the window's span: the fitted change over the window."""
    mean: float
    """The series' mean over the window."""
    end: float
    """The last sample."""

    @property
    def t(self) -> float:
        """slope / stderr (infinite for an exact line that rises)."""
        if self.stderr > 0:
            return self.slope / self.stderr
        return math.inf if self.slope > 0 else 0.0

    def grows(self, floor: float) -> bool:
        """Significant (t >= T_CRITICAL) and large (rise >= MIN_RISE x mean and >= ``floor``)."""
        return self.t >= T_CRITICAL and self.rise >= max(MIN_RISE * self.mean, floor)


def grows_through(times: np.ndarray, values: np.ndarray, floor: float) -> tuple[bool, Trend]:
    """Does the series grow through the window: over all of it (:meth:`Trend.grows`) and still in
    its second half?

    The second half's own slope must be positive at t >= :data:`T_HALF`: a step (a vMotion's streams
    starting mid-run, a buffer that filled and stays full) rises over the window but not through it.
    """
    fit = trend(times, values)
    if not fit.grows(floor):
        return False, fit
    half = len(times) // 2
    late = trend(times[half:], values[half:])
    return late.slope > 0 and late.t >= T_HALF, fit


def trend(times: np.ndarray, values: np.ndarray) -> Trend:
    """Least-squares slope of ``values`` against ``times`` (s), its standard error and the fitted
    rise.

    The standard error is the ordinary one, sqrt(sum(residual^2) / (n - 2) /
    sum((t - mean t)^2)), widened by sqrt(n / n_eff) with the effective count
    n_eff = n (1 - r) / (1 + r) for the residuals' lag-1 autocorrelation r
    (taken as at least 0; n_eff at least 3): t = slope / stderr is then
    compared with :data:`T_CRITICAL`.
    """
    t = np.asarray(times, dtype=float)
    y = np.asarray(values, dtype=float)
    n = len(t)
    centred = t - t.mean()
    sxx = float((centred**2).sum())
    slope = float((centred * (y - y.mean())).sum() / sxx) if sxx > 0 else 0.0
    residuals = y - y.mean() - slope * centred
    r = 0.0
    ss = float((residuals**2).sum())
    if ss > 0 and n > 2:
        r = max(0.0, float((residuals[1:] * residuals[:-1]).sum() / ss))
    effective = max(3.0, n * (1 - r) / (1 + r))
    stderr = math.sqrt(ss / (n - 2) / sxx * n / effective) if sxx > 0 and ss > 0 and n > 2 else 0.0
    span = float(t[-1] - t[0]) if n else 0.0
    return Trend(
        slope,
        stderr,
        slope * span,
        float(y.mean()) if n else math.nan,
        float(y[-1]) if n else math.nan,
    )
