"""A fitted trace's rate profile beside the trace's own mean rate (:class:`ProfileRate`): the last
profile step weighted by the share of it the trace covers, and what ``fit`` says when the two
rates differ."""

from __future__ import annotations

from dataclasses import dataclass

from simcache.workloads.ingest.fitarrivals import duration_text
from simcache.workloads.ingest.tracestats import TraceStats

__all__ = ["RATE_TOLERANCE", "ProfileRate", "profile_rate"]


RATE_TOLERANCE = 0.05
"""``fit`` warns when the fitted mean rate differs from the trace's own by more than this share."""


@dataclass(frozen=True)
class ProfileRate:
    """A fitted rate profile's steps and mean rate next to the trace's own mean rate.

    The trace lasts ``length`` seconds: from its first I/O to its last, and one mean
    inter-arrival time more (the last I/O's share of the time; ``n`` I/Os over a span ``s`` run at
    ``(n - 1) / s`` a second), or one clock tick more when that is longer (a timestamp in whole
    seconds says the I/O came within that second). Its last profile step is usually only partly
    covered by that length (the whole step when the interval is longer than the trace); its
    count, spread over a whole step, would scale the rate down (review 65: a 65.6 s trace fitted
    with 1000 s steps gave 6.7 I/O/s for its 101.7), so that step's level is its count over the
    share it covers.
    """

    levels: list[float]
    """Per step, its I/O count (the last one's weighted by its covered share)."""
    interval: float
    """Seconds per step."""
    covered: float
    """The share of the last step the trace covers, (0, 1]."""
    length: float
    """The trace's length in seconds (above)."""
    ios: int

    @property
    def fitted(self) -> float:
        """The fitted workload's mean rate (I/O/s): the mean of the steps' rates over a cycle."""
        return sum(self.levels) / (len(self.levels) * self.interval)

    @property
    def trace(self) -> float:
        """The trace's own mean rate (I/O/s): its I/Os over its length."""
        return self.ios / self.length

    def facts(self) -> list[tuple[str, str]]:
        """A line for people when the last step is partial: how much of it counts."""
        if self.covered >= 1.0 - 1e-9:
            return []
        return [
            (
                "last profile step",
                f"the trace covers {self.covered:.3g} of its {duration_text(self.interval)}: "
                f"its count is weighted by 1/{self.covered:.3g}, so that step runs at the "
                "trace's rate there",
            )
        ]

    def warnings(self) -> list[str]:
        """What to check when the fitted mean rate is not the trace's (a partial last step of
        few I/Os)."""
        difference = (self.fitted - self.trace) / self.trace
        if abs(difference) <= RATE_TOLERANCE:
            return []
        return [
            f"the fitted mean rate {self.fitted:.6g} I/O/s differs from the trace's "
            f"{self.trace:.6g} I/O/s ({self.ios:,} I/Os over {self.length:.6g} s) by "
            f"{difference:+.1%}: the {duration_text(self.interval)} profile's last step holds "
            f"too few I/Os to say its rate; give --interval a step that divides the trace's "
            "length, and check the fit with simcache compare-trace"
        ]


def profile_rate(stats: TraceStats, interval: float) -> ProfileRate:
    """The profile of ``stats``' per-``interval`` counts with its last step weighted by the share
    of it the trace covers (:class:`ProfileRate`); ``stats`` spans more than 0 s, or holds one
    I/O (then it lasts one clock tick)."""
    span = float(stats.times[-1])
    length = span + max(stats.tick, span / (stats.ios - 1) if stats.ios > 1 else 0.0)
    levels = [float(count) for count in stats.counts]
    covered = min(1.0, length / interval - (len(levels) - 1))
    levels[-1] /= covered
    return ProfileRate(levels, interval, covered, length, stats.ios)
