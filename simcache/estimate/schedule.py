"""When each group is on: the run cut at duty-cycle edges and vMotion starts, and the duty
cycles' period."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from simcache.spec import DutyCycle, Scenario, VMotion
from simcache.workloads.generators import DutyClock

__all__ = ["Interval", "Schedule"]


@dataclass(frozen=True)
class Interval:
    """A stretch of the run (s) over which the same groups are on."""

    start: float
    end: float
    groups: frozenset[int]


class Schedule:
    """The run's intervals of constant on-groups, and how they repeat (``vmotions``: the
    scenario's vMotions)."""

    def __init__(self, scenario: Scenario, vmotions: list[VMotion]):
        self.scenario = scenario
        self.vmotions = vmotions
        self.cuts = self._cuts()
        self.clocks = [DutyClock(group.workload.duty_cycle) for group in scenario.groups]
        self.intervals = self._intervals()
        # The common period (s), intervals per period, and per interval how many from it on repeat.
        self.period, self.period_intervals, self.repeats = self._period()

    def _cuts(self) -> list[float]:
        """Times in [0, duration] where a duty cycle switches or a vMotion starts."""
        scenario = self.scenario
        end = scenario.run.duration
        cuts = {0.0, end, *(e.at for e in self.vmotions if e.at < end)}
        for duty in self._pausing_duties():
            assert duty.on is not None and duty.off is not None
            cycle = duty.on + duty.off
            t = -duty.phase
            while t < end:
                cuts.update(x for x in (t, t + duty.on) if 0.0 < x < end)
                t += cycle
        return sorted(cuts)

    def _pausing_duties(self) -> list[DutyCycle]:
        """The groups' on/off duty cycles that pause (without pauses, off = 0, a group is always
        on)."""
        return [
            d
            for g in self.scenario.groups
            if (d := g.workload.duty_cycle) is not None and d.shape == "onoff" and d.off
        ]

    def _intervals(self) -> list[Interval]:
        """The run cut into intervals over which the same groups are on: cuts where no group
        switches are dropped; a vMotion start always begins an interval."""
        starts = {e.at for e in self.vmotions}
        cycled = [
            (g, clock)
            for g, clock in enumerate(self.clocks)
            if clock.duty is not None and clock.duty.shape == "onoff"
        ]
        always = frozenset(range(len(self.clocks))) - {g for g, _ in cycled}
        bounds: list[tuple[float, float, frozenset[int]]] = []
        for start, end in itertools.pairwise(self.cuts):
            middle = (start + end) / 2.0
            groups = always | frozenset(g for g, clock in cycled if clock.is_on(middle))
            if bounds and bounds[-1][2] == groups and start not in starts:
                bounds[-1] = (bounds[-1][0], end, groups)
            else:
                bounds.append((start, end, groups))
        return [Interval(*bound) for bound in bounds]

    def _period(self) -> tuple[float, int, list[int]]:
        """The duty cycles' common period (s, 0 if they have none), the intervals in one period,
        and per interval how many intervals from it on repeat the one a period earlier (same
        groups, same times shifted by the period)."""
        intervals = self.intervals
        cycles = {(duty.on or 0.0) + (duty.off or 0.0) for duty in self._pausing_duties()}
        if len(cycles) != 1 or len(intervals) < 6:
            return 0.0, 0, [0] * len(intervals)
        period = cycles.pop()
        middle = len(intervals) // 3
        start = intervals[middle].start
        count = next(
            (
                m
                for m in range(1, len(intervals) - middle)
                if abs(intervals[middle + m].start - start - period) <= 1e-9 * period
            ),
            0,
        )
        if count == 0:
            return 0.0, 0, [0] * len(intervals)
        repeats = [0] * (len(intervals) + 1)
        for i in range(len(intervals) - 1, count - 1, -1):
            now, before = intervals[i], intervals[i - count]
            same = (
                now.groups == before.groups
                and abs(now.start - before.start - period) <= 1e-9 * period
                and abs(now.end - before.end - period) <= 1e-9 * period
            )
            repeats[i] = repeats[i + 1] + 1 if same else 0
        return period, count, repeats[:-1]
