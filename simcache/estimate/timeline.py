"""The run as a fluid timeline: pieces of constant state, each solved once, with the buffer and
clean-pool levels.

The rules are in ``docs/estimate.md`` (Fluid timeline): where the run is cut,
how the destage buffer and the flash clean pool move, and how repeated duty
periods are copied instead of walked.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from simcache.estimate.layout import Layout
from simcache.estimate.solver import HitRatios, Solver
from simcache.estimate.theory.state import (
    BACKLOGGED,
    FULL,
    KEEPING_UP,
    StateKey,
    StateResult,
    same_but_vmotions,
)
from simcache.physics.cluster import framed_bytes

__all__ = ["Piece", "Timeline"]

_UNLIMITED = 1 << 40  # periods: as many as there are


class Timeline:
    """Walks the run piece by piece, solving each state once and moving the fluid levels."""

    def __init__(self, layout: Layout, hits: HitRatios):
        """The run of ``layout``, every state solved with the read hit ratios ``hits`` (and its
        solved state kept)."""
        self.c = layout
        self.hit = hits.hit
        self.cache: dict[StateKey, StateResult] = {}
        self.solvers: dict[StateKey, Solver] = {}
        if hits.solved is not None:
            key, solver, result = hits.solved
            self.solvers[key] = solver
            self.cache[key] = result
        self.last: Solver | None = None

    def state(self, key: StateKey) -> StateResult:
        """The state's solution, solved once per run, starting from the last one solved."""
        result = self.cache.get(key)
        if result is None:
            solver, result = self._solve(key)
            self.cache[key] = result
            self.solvers[key] = solver
        self.last = self.solvers[key]
        return result

    def _solve(self, key: StateKey) -> tuple[Solver, StateResult]:
        """A new state: a solved one's answer when they differ only by buffers keeping up rather
        than backlogged with the same destage load (:meth:`Solver.same_destage`); re-evaluated
        from a solved one when they differ only by vMotions that no closed path crosses
        (:meth:`Solver.with_vmotions`); else solved."""
        closed_ports = self.c.network.closed_ports
        for other_key, other in self.solvers.items():
            if other_key.vmotions == key.vmotions and other.same_destage(key):
                twin = other.copy(key)
                return twin, other.result
            if same_but_vmotions(other_key, key):
                moved = key.vmotions ^ other_key.vmotions
                if not any(set(self.c.vmotion_ports(v)) & closed_ports for v in moved):
                    return other.with_vmotions(key)
        solver = Solver(self.c, key, self.hit)
        return solver, solver.solve(self.last)

    def settle(self, key: StateKey) -> tuple[StateKey, StateResult]:
        """The state's solution; with adaptive compression, the compression that state switches
        on or off."""
        c = self.c
        result = self.state(key)
        if c.adaptive:
            threshold = c.compression_threshold
            compress = tuple(busy >= threshold for busy in result.peer_tx_uncompressed)
            if compress != key.compress:
                key = dataclasses.replace(key, compress=compress)
                result = self.state(key)
        return key, result

    def run(self) -> list[Piece]:
        c = self.c
        clean_pool = c.services.clean_pool  # bytes of a host tier's clean pool (inf: no GC cliff)
        gc_rate = c.services.gc_rate  # bytes/s the clean pool refills at
        hosts = c.hosts
        end = c.duration
        capacity = float(c.destager.capacity)
        buffer_level = [0.0] * hosts
        pool = [c.services.initial_pool] * hosts
        remaining = {
            v: framed_bytes(c.peer_link, p.event.size / p.event.streams)[0] * p.streams
            for v, p in enumerate(c.vmotion_pairs)
        }
        modes = [KEEPING_UP] * hosts
        gc = [False] * hosts
        drain_of_full = [0.0] * hosts
        full_since = [math.nan] * hosts
        backlogged_at = [math.nan] * hosts  # when each host's buffer last became backlogged (s)
        overload_since: dict[int, float] = {}
        # groups running when the buffer filled
        entered: list[frozenset[int]] = [frozenset()] * hosts
        # groups running when the clean pool ran out
        gc_entered: list[frozenset[int]] = [frozenset()] * hosts
        compress = (c.compress_always,) * c.lanes
        pieces: list[Piece] = []
        pools: list[list[float]] = []  # per piece: the clean pools at its start
        # interval -> the state where its first piece starts
        checkpoints: dict[int, _Checkpoint] = {}
        intervals = c.schedule.intervals
        index = 0
        t = 0.0
        guard = 0
        while t < end - 1e-9 and guard < 8 * len(c.schedule.cuts) + 400:
            guard += 1
            while index + 1 < len(intervals) and intervals[index].end <= t + 1e-9:
                index += 1
            interval = intervals[index]
            groups = interval.groups
            running = frozenset(
                v
                for v, p in enumerate(c.vmotion_pairs)
                if p.event.at <= t + 1e-12 and remaining[v] > 0
            )
            key = StateKey(
                groups,
                running,
                tuple(gc),
                tuple(modes),
                compress,
                tuple(_round(d) for d in drain_of_full),
            )
            key, result = self.settle(key)
            compress = key.compress
            changed = False
            for h in range(hosts):
                accepted, drain = result.write_back_bytes[h], result.drain[h]
                if modes[h] == KEEPING_UP and accepted > drain * 1.001:
                    modes[h], changed = BACKLOGGED, True
                    backlogged_at[h] = t
                elif (
                    modes[h] == BACKLOGGED
                    and buffer_level[h] <= 0.0
                    and accepted <= drain
                    and backlogged_at[h] != t
                ):
                    # Not at the moment it became backlogged: a destager that drains faster once
                    # backlogged would flip between the two states for ever; it hovers at an empty
                    # buffer instead.
                    modes[h], changed = KEEPING_UP, True
                elif modes[h] == FULL and groups != entered[h]:
                    # A throttled state cannot tell whether its demand has fallen below the drain
                    # rate: try the buffer without the throttle whenever the running groups change.
                    modes[h], changed = BACKLOGGED, True
                if not gc[h] and pool[h] <= 0.0 and result.tier_write_bytes[h] > gc_rate:
                    gc[h], changed = True, True
                    gc_entered[h] = groups
                elif gc[h] and groups != gc_entered[h]:
                    gc[h], changed = False, True
            if changed:
                continue
            if index not in checkpoints and abs(t - interval.start) <= 1e-9 * max(1.0, t):
                discrete = (
                    tuple(modes),
                    tuple(gc),
                    compress,
                    tuple(entered),
                    tuple(gc_entered),
                    tuple(drain_of_full),
                )
                quiet = not overload_since and all(math.isnan(f) for f in full_since)
                checkpoint = _Checkpoint(
                    index, len(pieces), t, list(buffer_level), list(pool), discrete, quiet
                )
                checkpoints[index] = checkpoint
                periods = self._repeats(checkpoints, checkpoint, pieces, pools, remaining)
                if periods:
                    # The last period repeats: copy its pieces `periods` times, shifted in time and
                    # level.
                    t, buffer_level, pool = self._copy_periods(
                        checkpoints, checkpoint, periods, pieces, pools
                    )
                    index += periods * c.schedule.period_intervals
                    continue
            # How long this state lasts: the interval's end, a buffer filling or emptying, a clean
            # pool running out, a vMotion finishing.
            step = interval.end - t
            for h in range(hosts):
                net = result.write_back_bytes[h] - result.drain[h]
                if modes[h] == BACKLOGGED and net > 0:
                    step = min(step, (capacity - buffer_level[h]) / net)
                elif modes[h] == BACKLOGGED and net < 0 and buffer_level[h] > 0.0:
                    step = min(step, buffer_level[h] / -net)
                if not gc[h] and result.tier_write_bytes[h] > gc_rate and clean_pool < math.inf:
                    step = min(step, pool[h] / (result.tier_write_bytes[h] - gc_rate))
            for v, rate in result.vmotion_rate.items():
                step = min(step, remaining[v] / rate)
            step = max(step, 1e-6)
            overload_since = {k: overload_since.get(k, t) for k in result.overloaded}
            pieces.append(
                Piece(
                    t,
                    t + step,
                    result,
                    list(modes),
                    list(buffer_level),
                    list(full_since),
                    dict(overload_since),
                    key,
                )
            )
            pools.append(list(pool))
            for h in range(hosts):
                net = result.write_back_bytes[h] - result.drain[h]
                if modes[h] == BACKLOGGED:
                    buffer_level[h] = min(capacity, max(0.0, buffer_level[h] + net * step))
                    if buffer_level[h] >= capacity * (1 - 1e-9):
                        modes[h] = FULL
                        entered[h] = groups
                        drain_of_full[h] = result.drain[h]
                        full_since[h] = t + step
                    elif buffer_level[h] <= 0.0:
                        modes[h] = KEEPING_UP
                if modes[h] != FULL:
                    drain_of_full[h] = 0.0
                    full_since[h] = math.nan
                if clean_pool < math.inf and not gc[h]:
                    # GC refills up to the pool's depth; a fresh device's surplus above it only
                    # drains
                    pool[h] = min(
                        max(clean_pool, pool[h]),
                        pool[h] + (gc_rate - result.tier_write_bytes[h]) * step,
                    )
                    if pool[h] <= 1e-6 * clean_pool:
                        pool[h] = 0.0
            for v, rate in result.vmotion_rate.items():
                remaining[v] -= rate * step
                if remaining[v] <= 1.0:
                    remaining[v] = 0.0
            t += step
        return pieces

    def _repeats(
        self,
        checkpoints: dict[int, _Checkpoint],
        checkpoint: _Checkpoint,
        pieces: list[Piece],
        pools: list[list[float]],
        remaining: dict[int, float],
    ) -> int:
        """How many duty periods from ``checkpoint`` on repeat the last one (0 if it did not repeat
        the one before).

        The last two periods repeat when they ran the same states in the same pieces, at the same
        times in the period, with buffer and clean-pool levels moving the same way; the levels then
        keep drifting linearly. The repeats stop before the interval pattern changes, a vMotion
        starts, the run ends, or a drifting level would reach a bound (a buffer full or empty, a
        clean pool empty or full), where the walk resumes.
        """
        c = self.c
        clean_pool = c.services.clean_pool  # bytes of a host tier's clean pool (inf: no GC cliff)
        count = c.schedule.period_intervals
        earlier = checkpoints.get(checkpoint.interval - 2 * count)
        middle = checkpoints.get(checkpoint.interval - count)
        if not count or earlier is None or middle is None:
            return 0
        if not (
            checkpoint.quiet
            and middle.quiet
            and earlier.quiet
            and earlier.discrete == middle.discrete == checkpoint.discrete
        ):
            return 0
        previous = range(earlier.piece, middle.piece)
        last = range(middle.piece, checkpoint.piece)
        period = c.schedule.period
        # start times (s)
        unfinished = [p.event.at for v, p in enumerate(c.vmotion_pairs) if remaining[v] > 0]
        if len(previous) != len(last) or not last or any(at <= checkpoint.t for at in unfinished):
            return 0
        tolerance = 1e-9 * period
        fill = 1e-9 * c.destager.capacity + 1e-6
        for i, j in zip(previous, last, strict=True):
            a, b = pieces[i], pieces[j]
            if a.result is not b.result or a.key != b.key or a.modes != b.modes:
                return 0
            if (
                abs(b.start - a.start - period) > tolerance
                or abs(b.end - a.end - period) > tolerance
            ):
                return 0
            if a.overload_since.keys() != b.overload_since.keys() or any(
                abs(b.overload_since[k] - a.overload_since[k] - period) > tolerance
                for k in a.overload_since
            ):
                return 0
            if any(
                math.isnan(x) != math.isnan(y)
                or (not math.isnan(x) and abs(y - x - period) > tolerance)
                for x, y in zip(a.full_since, b.full_since, strict=True)
            ):
                return 0
            for h in range(c.hosts):
                if (
                    abs(
                        (b.buffer_level[h] - middle.levels[h])
                        - (a.buffer_level[h] - earlier.levels[h])
                    )
                    > fill
                ):
                    return 0
                if (
                    clean_pool < math.inf
                    and abs((pools[j][h] - middle.pools[h]) - (pools[i][h] - earlier.pools[h]))
                    > fill
                ):
                    return 0
        for h in range(c.hosts):
            drifts = (checkpoint.levels[h] - middle.levels[h], middle.levels[h] - earlier.levels[h])
            pool_drifts = (
                checkpoint.pools[h] - middle.pools[h],
                middle.pools[h] - earlier.pools[h],
            )
            if abs(drifts[0] - drifts[1]) > fill or (
                clean_pool < math.inf and abs(pool_drifts[0] - pool_drifts[1]) > fill
            ):
                return 0
        periods = min(
            c.schedule.repeats[checkpoint.interval] // count,
            int((c.duration - checkpoint.t) / period) - 1,
            *(int((at - checkpoint.t) / period) - 1 for at in unfinished),
        )
        capacity = float(c.destager.capacity)
        for h in range(c.hosts):
            path = [pieces[j].buffer_level[h] - middle.levels[h] for j in last]
            drift = checkpoint.levels[h] - middle.levels[h]
            periods = min(
                periods,
                _drift_periods(
                    checkpoint.levels[h],
                    drift,
                    path,
                    fill,
                    1e-6 * capacity,
                    (1.0 - 1e-6) * capacity,
                ),
            )
            if clean_pool < math.inf:
                path = [pools[j][h] - middle.pools[h] for j in last]
                drift = checkpoint.pools[h] - middle.pools[h]
                periods = min(
                    periods,
                    _drift_periods(
                        checkpoint.pools[h], drift, path, fill, 2e-6 * clean_pool, clean_pool
                    ),
                )
        return max(periods, 0)

    def _copy_periods(
        self,
        checkpoints: dict[int, _Checkpoint],
        checkpoint: _Checkpoint,
        periods: int,
        pieces: list[Piece],
        pools: list[list[float]],
    ) -> tuple[float, list[float], list[float]]:
        """Append the last period's pieces again, each with ``periods`` copies one period apart,
        the first a period after it, levels moving by the period's drift; returns the time,
        buffer and pool levels after them."""
        c = self.c
        middle = checkpoints[checkpoint.interval - c.schedule.period_intervals]
        period = c.schedule.period
        drift = [now - before for now, before in zip(checkpoint.levels, middle.levels, strict=True)]
        pool_drift = [
            now - before for now, before in zip(checkpoint.pools, middle.pools, strict=True)
        ]
        for j in range(middle.piece, checkpoint.piece):
            piece = pieces[j]
            pieces.append(
                Piece(
                    piece.start + period,
                    piece.end + period,
                    piece.result,
                    piece.modes,
                    [level + d for level, d in zip(piece.buffer_level, drift, strict=True)],
                    [since + period for since in piece.full_since],
                    {station: since + period for station, since in piece.overload_since.items()},
                    piece.key,
                    copies=periods,
                    period=period,
                    drift=tuple(drift),
                )
            )
            pools.append(pools[j])  # unused: repeats compare walked periods only
        levels = [level + periods * d for level, d in zip(checkpoint.levels, drift, strict=True)]
        pool = [level + periods * d for level, d in zip(checkpoint.pools, pool_drift, strict=True)]
        return checkpoint.t + periods * period, levels, pool


def _drift_periods(
    start: float, drift: float, path: list[float], tolerance: float, floor: float, ceiling: float
) -> int:
    """How many more periods a level moving by ``drift`` per period can repeat without reaching
    ``floor`` or ``ceiling``: ``start`` is its level now, ``path`` its level at each piece start
    of a period relative to the period's start. Without drift (within ``tolerance``) the period
    repeats exactly, bounds or not."""
    if abs(drift) <= tolerance:
        return _UNLIMITED
    points = [*path, drift]
    if drift > 0:
        return int((ceiling - start - max(points)) / drift)
    return int((start + min(points) - floor) / -drift)


def _round(value: float) -> float:
    """Rates rounded to 4 significant digits, so that states reached twice share one solution."""
    if value <= 0 or not math.isfinite(value):
        return value
    return round(value, 3 - math.floor(math.log10(value)))


@dataclass
class _Checkpoint:
    """The timeline's state where an interval's first piece starts (see
    :meth:`Timeline._repeats`)."""

    interval: int
    piece: int  # index of that first piece
    t: float
    levels: list[float]  # per host: destage buffer bytes
    pools: list[float]  # per host: clean-pool bytes
    # modes, GC cliffs, compression, groups when filled / out of pool, drain of a full buffer
    discrete: tuple[Any, ...]
    quiet: bool  # no buffer full and no overload under way (their waits grow with absolute time)


@dataclass
class Piece:
    """A stretch of the run in one state; with ``copies`` > 1, that many stretches ``period``
    apart (a repeated duty period, see :meth:`Timeline._repeats`), the k-th with levels moved by
    k times ``drift``."""

    start: float
    end: float
    result: StateResult
    modes: list[int]
    buffer_level: list[float]  # per host, at the start (bytes)
    full_since: list[float]
    overload_since: dict[int, float]
    key: StateKey
    copies: int = 1
    period: float = 0.0  # s between copies
    drift: tuple[float, ...] = ()  # per host: buffer level change from one copy to the next (bytes)

    def windowed(self, start: float, end: float) -> list[tuple[float, float, float, int]]:
        """The copies' overlaps with the window [start, end]: (shift s, overlap start, overlap
        end, how many copies) where the copies that lie wholly inside share one entry (their
        times differ by the shift only)."""
        width = self.end - self.start
        out = []
        if self.copies == 1:
            a, b = max(self.start, start), min(self.end, end)
            return [(0.0, a, b, 1)] if b > a else []
        period = self.period
        # first copy starting inside the window
        first = max(0, math.ceil((start - self.start) / period - 1e-9))
        # last copy ending inside it
        last = min(self.copies - 1, math.floor((end - self.end) / period + 1e-9))
        if last >= first:
            shift = first * period
            out.append((shift, self.start + shift, self.start + shift + width, last - first + 1))
        for k in sorted({first - 1, last + 1, 0, self.copies - 1}):
            if 0 <= k < self.copies and not first <= k <= last:
                shift = k * period
                a, b = max(self.start + shift, start), min(self.end + shift, end)
                if b > a:
                    out.append((shift, a, b, 1))
        return out
