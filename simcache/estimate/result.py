"""What an estimate answers: window averages over the timeline's pieces, the destage buffer's
fluid figures, and :class:`Estimate`, the result object."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from simcache.base.json_values import strict
from simcache.base.metrics import ESTIMATED_COLUMNS
from simcache.estimate.drain import STARVED_DRAIN
from simcache.estimate.layout import Layout
from simcache.estimate.overload import (
    EstimateWarning,
    Evidence,
    detect,
    explain,
    load_share,
    ranked_overloads,
    window_rates,
)
from simcache.estimate.theory.numeric import Floats, sums
from simcache.estimate.theory.queueing import gamma_mixture_quantiles, gamma_quantiles
from simcache.estimate.theory.state import BACKLOGGED, FULL, StateResult
from simcache.estimate.timeline import Piece
from simcache.physics.cluster import tier_units
from simcache.spec import Scenario

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DestageFluid", "Estimate", "NamedBottleneck", "summarize"]

_SUMMARY_COLUMNS = ["group", "op", *ESTIMATED_COLUMNS]


@dataclass(frozen=True)
class DestageFluid:
    """Fluid model of one host's destage buffer over the run (bytes, seconds, bytes/s)."""

    host: str
    capacity_bytes: float
    # write-back bytes/s the VMs write while their groups are on (peak state)
    accept_rate_bytes_s: float
    drain_rate_bytes_s: float  # what the flushers can destage with a backlog, in that state
    fill_time_s: float  # from empty to full at accept - drain (inf: never fills)
    # from full to empty with no new writes (inf: cannot drain, its flushers starved)
    drain_time_s: float
    first_full_s: float  # when the buffer first fills in the run (nan: never)
    full_fraction: float  # fraction of the measured window it is full
    accepted_while_full_bytes_s: float  # = the drain rate: writers are admitted as space frees
    peak_backlog_bytes: float


@dataclass(frozen=True)
class NamedBottleneck:
    """The component an estimate names as its bottleneck (:meth:`Estimate.named_bottleneck`):
    the most overloaded, by offered / capacity, when an open-loop load overloads any, else the
    station of the highest mean utilization. ``simcache estimate``'s bottleneck line,
    :meth:`Estimate.to_json` and the app's instant-estimate sentence all name this one.

    An overloaded station's mean utilization can be low (its queue grows while it reports what
    it serves; a starved one serves little), so the busiest by utilization would contradict the
    overload warnings.
    """

    component: str  # as the simulator's util.* names it: array, host0.tier, host0.destager, ...
    # as the warnings name it: the component, and for a tier past its clean-pool cliff, why
    name: str
    # its mean utilization over the window (a fraction; None for a destage buffer, which has none)
    utilization: float | None
    # offered / capacity of an overloaded one (inf: it gets nothing through); None: stable
    offered_load: float | None
    # the other overloaded components and their offered / capacity, most overloaded first
    also_overloaded: tuple[tuple[str, float], ...] = ()

    def load_words(self) -> str:
        """How loaded it is, for a sentence: ``"offered 180% of its capacity"``, ``"offered over
        100x its capacity"``, ``"it gets nothing through (starved)"`` (a destage buffer draining at
        the 1 byte/s floor); for a stable estimate ``"at 76% mean utilization"``."""
        if self.offered_load is None:
            return f"at {self.utilization or 0.0:.0%} mean utilization"
        if not math.isfinite(self.offered_load):
            return "it gets nothing through (starved)"
        if self.offered_load >= 100.0:
            return "offered over 100x its capacity"
        return f"offered {self.offered_load:.0%} of its capacity"

    def overload_words(self) -> str:
        """It and the others overloaded, for a sentence: ``"host0.tier (its transfer pipe) offered
        107% of its capacity; also overloaded: host1.tier (107%)"``."""
        also = self.also_words()
        return f"{self.name} {self.load_words()}" + (f"; also overloaded: {also}" if also else "")

    def also_words(self) -> str:
        """The other overloaded components, each with its offered / capacity in a word or a
        figure: ``"host1.tier (180%), array (120%)"`` (``over 100x``, ``starved``); empty when
        there are none."""
        return ", ".join(
            f"{component} ({load_share(rho)})" for component, rho in self.also_overloaded
        )


def summarize(c: Layout, pieces: list[Piece]) -> Estimate:
    """Window averages over the pieces: rates and utilizations by time, latencies by I/O count.

    Pieces without extra waits (a full buffer's open writers, an overloaded station's fluid queue)
    add up per state, so a state met many times (a short duty cycle) is summed once.
    """
    scenario = c.scenario
    net = c.network
    start, end = c.window
    span = max(end - start, 1e-12)
    ops = net.count
    ios = np.zeros(ops)
    latency = np.zeros(ops)  # sum over I/Os of the latency (s)
    square = np.zeros(ops)  # sum over I/Os of the second moment (s^2)
    utilization = np.zeros(c.station_count)
    # the open traffic's offered utilization, averaged over the window
    open_mean = np.zeros(c.station_count)
    # result id -> (result, time in the window without extra waits)
    plain: dict[int, tuple[StateResult, float]] = {}

    def add(result: StateResult, width: float, extra: Floats | float) -> None:
        count = result.rates * width
        mean = result.response + extra
        ios[:] += count
        latency[:] += count * mean
        square[:] += count * (mean * mean + result.variance)

    # the same extra waits, summed once
    waiting: dict[tuple[Any, ...], tuple[StateResult, float, Floats]] = {}
    for piece in pieces:
        result = piece.result
        quiet = not piece.overload_since and FULL not in piece.modes
        for shift, a, b, copies in piece.windowed(start, end):
            width = (b - a) * copies
            if quiet:
                seen = plain.get(id(result))
                plain[id(result)] = (result, (seen[1] if seen else 0.0) + width)
                continue
            middle = (a + b) / 2.0
            signature = (
                id(result),
                round(middle - piece.start - shift, 9),
                round(b - a, 9),
                piece.start == piece.end,
            )
            known = waiting.get(signature)
            if known is None:
                waiting[signature] = (result, width, _extra_waits(c, piece, middle, shift))
            else:
                waiting[signature] = (result, known[1] + width, known[2])
    for result, width in plain.values():
        utilization += result.utilization * (width / span)
        open_mean += result.open_utilization * (width / span)
        add(result, width, 0.0)
    for result, width, extra in waiting.values():
        utilization += result.utilization * (width / span)
        open_mean += result.open_utilization * (width / span)
        add(result, width, extra)
    fluid = _destage_fluid(c, pieces)
    evidence = detect(c, pieces, open_mean, utilization, ios / span, fluid)
    # no steady state: the fluid figure would only measure the run's length
    for op in evidence.unbounded:
        latency[op] = math.inf
        square[op] = math.inf
    groups = [g.name for g in scenario.groups]
    cells = net.op_group * 2 + net.op_is_write
    bins = 2 * len(groups)
    per_cell = [sums(cells, values, bins) for values in (ios, ios * net.op_size, latency, square)]
    rows = []
    for g, name in enumerate([*groups, "all"]):
        for kind in (0, 1):
            if name == "all":
                count, nbytes, total, second = (float(v[kind::2].sum()) for v in per_cell)
            else:
                count, nbytes, total, second = (float(v[2 * g + kind]) for v in per_cell)
            mean = total / count if count > 0 else math.nan
            scv = (
                max(0.0, second / count / mean**2 - 1.0)
                if count > 0 and 0 < mean < math.inf
                else 0.0
            )
            rows.append(
                (name, ("read", "write")[kind], count / span, nbytes / span / 1e6, mean, scv)
            )
    reported = {c.names[k]: float(utilization[k]) for k in range(c.station_count) if c.names[k]}
    notes: list[str] = []
    if any(any(piece.key.gc) for piece in pieces if piece.end > start):
        notes.append(
            "a flash tier is past its clean-pool cliff: writes run at the pool's refill rate "
            "(gc_rate, or write_bandwidth / "
            "write_amplification), GC pass stalls averaged"
        )
    tier = scenario.cluster.tier
    addressed = tier.placement == "addressed" and tier_units(tier) > 1
    if addressed:
        if (
            tier.read_interference is not None
            and tier.read_interference < 1.0
            and _reads_among_writes(rows)
        ):
            notes.append(
                "reads let through their die's queue early in the simulator (tier "
                "read_interference below 1); the "
                "estimate has every I/O wait for the whole queue of its die, so next to writes its "
                "read latency is high"
            )
    elif tier.read_interference is not None and _reads_among_writes(rows):
        notes.append(
            "reads wait for the programs on their die in the simulator (tier read_interference); "
            "the estimate "
            "gives them the earliest-free channel, so next to writes its read latency is low"
        )
    elif tier.read_interference is not None and tier_units(tier) > 1 and _reads_at_depth(rows):
        notes.append(
            "reads go to the die holding their data in the simulator (tier read_interference), "
            "where they can meet "
            "each other; the estimate gives them the earliest-free of the tier's units, so with "
            "several reads in "
            "flight its read latency is low (about 15% on nvme-p3700 at 16 outstanding)"
        )
    if scenario.array.drive.media == "disk" and scenario.array.drive.command_queueing > 1:
        notes.append(
            "the simulator's drives serve the waiting command nearest the head (drive "
            "command_queueing, reorder, reorder_lag); the estimate prices each random array I/O "
            "at the least positioning of as many candidates as the closed loops keep outstanding "
            "per spindle (less the one in service and reorder_lag), each drawn afresh: a real "
            "queue keeps the commands it passed over, so its array rate is high by a few percent "
            "at a saturated spindle (about 3 % at 31 candidates on sata-7200), and higher where "
            "the outstanding I/Os do not all wait at the spindles (cache hits, other stations)"
        )
    if tier.service == "lognormal" or tier.stall_probability:
        notes.append(
            "the tier's unit-time spread (service_cv) and stalls enter the estimate as the mean "
            "and variance of a "
            f"unit's service ({'one M/G/1 queue per addressed unit' if addressed else 'M/G/c'}); "
            "its percentiles of rare "
            "stalls are rough"
        )
    return Estimate(scenario, rows, reported, fluid, notes, c.window, evidence)


def _reads_at_depth(rows: list[tuple[str, str, float, float, float, float]]) -> bool:
    """Whether the estimate has reads (rows: group, op, I/Os per s, MB/s, mean, SCV)."""
    return any(name == "all" and op == "read" and iops > 0.0 for name, op, iops, *_ in rows)


def _reads_among_writes(rows: list[tuple[str, str, float, float, float, float]]) -> bool:
    """Whether the estimate has both reads and writes (rows: group, op, I/Os per s, MB/s, mean,
    SCV)."""
    total = {op: iops for name, op, iops, *_ in rows if name == "all"}
    return total.get("read", 0.0) > 0.0 and total.get("write", 0.0) > 0.0


def _extra_waits(c: Layout, piece: Piece, middle: float, shift: float) -> Floats:
    """Per op, the fluid wait (s) added in ``piece`` (its copy ``shift`` s later) at time
    ``middle``.

    An open group's writers queue for a full buffer's space: the queue grows at (accepted - drain)
    from the moment it filled. An open stream overloading a station queues there from the overload's
    start.
    """
    net = c.network
    result = piece.result
    extra = np.zeros(net.count)
    for h in range(c.hosts):
        if piece.modes[h] == FULL:
            drain = result.drain[h]
            offered = result.write_back_bytes[h]
            since = (
                piece.full_since[h] if math.isfinite(piece.full_since[h]) else piece.start
            ) + shift
            extra[net.open_write_back_writes[h]] = (
                max(0.0, offered - drain) / drain * (middle - since)
            )
    for k, since in piece.overload_since.items():
        users = net.station_users(k)
        extra[users] = np.maximum(
            extra[users], float(result.overload[k]) * (middle - since - shift)
        )
    return extra


def _end_level(piece: Piece, host: int, capacity: float) -> float:
    """The host's highest destage buffer level (bytes) over ``piece`` (its last copy's, if the
    level drifts up): the level moves only while backlogged."""
    level = piece.buffer_level[host]
    if piece.copies > 1:
        level += max(0.0, (piece.copies - 1) * piece.drift[host])
    if piece.modes[host] != BACKLOGGED:
        return level
    net = piece.result.write_back_bytes[host] - piece.result.drain[host]
    return min(capacity, max(level, level + net * (piece.end - piece.start)))


def _destage_fluid(c: Layout, pieces: list[Piece]) -> list[DestageFluid]:
    start, end = c.window
    span = max(end - start, 1e-12)
    capacity = float(c.destager.capacity)
    out = []
    for h in range(c.hosts):
        peak = max(pieces, key=lambda p: p.result.write_back_bytes[h])
        accepted = peak.result.write_back_bytes[h]
        drain = peak.result.drain[h]
        fill = capacity / (accepted - drain) if accepted > drain else math.inf
        first_full = next((p.start for p in pieces if p.modes[h] == FULL), math.nan)
        full = (
            sum(
                (b - a) * copies
                for p in pieces
                if p.modes[h] == FULL
                for _, a, b, copies in p.windowed(start, end)
            )
            / span
        )
        peak_level = max(
            [_end_level(p, h, capacity) for p in pieces]
            + [capacity if math.isfinite(first_full) else 0.0]
        )
        out.append(
            DestageFluid(
                host=f"host{h}",
                capacity_bytes=capacity,
                accept_rate_bytes_s=accepted,
                drain_rate_bytes_s=drain if math.isfinite(drain) else 0.0,
                fill_time_s=fill,
                drain_time_s=capacity / drain if STARVED_DRAIN < drain < math.inf else math.inf,
                first_full_s=first_full,
                full_fraction=full,
                accepted_while_full_bytes_s=drain if math.isfinite(drain) else 0.0,
                peak_backlog_bytes=peak_level,
            )
        )
    return out


# --------------------------------------------------------------------------- the result


class Estimate:
    """The analytic answer for one scenario. Times in ms in the summary; utilizations as
    fractions."""

    def __init__(
        self,
        scenario: Scenario,
        rows: list[tuple[str, str, float, float, float, float]],
        utilization: dict[str, float],
        destager: list[DestageFluid],
        notes: list[str],
        window: tuple[float, float],
        evidence: Evidence,
    ):
        self.scenario = scenario
        self._rows = rows  # (group, op, iops, mb_s, mean_s, scv)
        self.utilization = utilization
        self.destager = destager
        self.notes = notes
        self.window = window
        self._evidence = evidence
        self._warnings: list[EstimateWarning] | None = None
        self.stable = evidence.stable
        """Whether the estimate has a steady state: no open-loop load above a component's
        capacity (see :attr:`warnings`)."""
        self._summary: pd.DataFrame | None = None

    @property
    def warnings(self) -> list[EstimateWarning]:
        """Overloads (``stable`` is then False), bursts above capacity, saturated components and
        destage buffers that fill, in words and figures (see :mod:`simcache.estimate.overload`);
        worked out when first asked for."""
        if self._warnings is None:
            self._warnings = explain(self._evidence)
        return self._warnings

    def bottleneck(self) -> tuple[str, float]:
        """The station with the highest mean utilization over the window, and that utilization
        (as Result.bottleneck); the bottleneck the estimate names, which is another when it is
        overloaded, is :meth:`named_bottleneck`."""
        name = max(self.utilization, key=lambda n: self.utilization[n])
        return name, self.utilization[name]

    def named_bottleneck(self) -> NamedBottleneck:
        """The bottleneck the estimate names wherever it names one (``simcache estimate``'s line,
        :meth:`to_json`, the app's sentence): the most overloaded component (:meth:`overloads`)
        when an open-loop load overloads any, else the busiest station by mean utilization
        (:meth:`bottleneck`)."""
        overloads = self.overloads()
        if not overloads:
            name, utilization = self.bottleneck()
            return NamedBottleneck(name, name, utilization, None)
        component, name, load = overloads[0]
        # a component once, at its most overloaded station (a tier's pipe and its units can
        # both be overloaded: "host0.tier (215%), host0.tier (107%)" would name it twice)
        seen = {component}
        also = []
        for other, _, rho in overloads[1:]:
            if other not in seen:
                seen.add(other)
                also.append((other, rho))
        return NamedBottleneck(component, name, self.utilization.get(component), load, tuple(also))

    def overloads(self) -> list[tuple[str, str, float]]:
        """What an open-loop load overloads (empty when :attr:`stable`): the component, how the
        warnings name it, and its offered load over its capacity, most overloaded first: the
        bottleneck of an unstable estimate, which :meth:`bottleneck`, by mean utilization, can
        miss (a station whose queue grows reports what it serves, and a starved one serves
        little)."""
        return ranked_overloads(self._evidence)

    def destage_window_rates(self) -> list[tuple[float, float]]:
        """Per host, the write-back bytes/s its buffer accepts and its drain capacity (bytes/s),
        averaged over the window as the destage warnings give them; :attr:`destager`'s rates are
        its peak-write state's."""
        e = self._evidence
        return [window_rates(e.layout, e.inside, h, d) for h, d in enumerate(self.destager)]

    def mean_ms(self, group: str = "all", op: str = "write") -> float:
        """Mean latency (ms) of one summary row, without building the DataFrame."""
        return self._row(group, op)[4] * 1e3

    def latency_scv(self, group: str = "all", op: str = "write") -> float:
        """Squared coefficient of variation of one summary row's latency: a group's percentiles
        are those of the gamma of this SCV and :meth:`mean_ms` (the "all" row's, of the mixture
        of the groups' gammas)."""
        return self._row(group, op)[5]

    def _row(self, group: str, op: str) -> tuple[str, str, float, float, float, float]:
        for row in self._rows:
            if row[0] == group and row[1] == op:
                return row
        raise KeyError(f"no summary row for group {group!r} op {op!r}")

    @property
    def summary(self) -> pd.DataFrame:
        """The same columns as :attr:`simcache.Result.summary` (without the interval and max
        columns)."""
        if self._summary is None:
            import pandas as pd

            start, end = self.window
            span = end - start
            records = []
            for group, op, iops, mb_s, mean, scv in self._rows:
                if group == "all":
                    p50, p95, p99, p999 = self._all_quantiles(op)
                else:
                    p50, p95, p99, p999 = gamma_quantiles(mean, scv)
                records.append(
                    {
                        "group": group,
                        "op": op,
                        "count": round(iops * span),
                        "iops": iops,
                        "mb_s": mb_s,
                        "mean_ms": mean * 1e3,
                        "p50_ms": p50 * 1e3,
                        "p95_ms": p95 * 1e3,
                        "p99_ms": p99 * 1e3,
                        "p999_ms": p999 * 1e3,
                    }
                )
            self._summary = pd.DataFrame(records, columns=_SUMMARY_COLUMNS)
        return self._summary

    def _all_quantiles(self, op: str) -> tuple[float, float, float, float]:
        """The "all" row's p50, p95, p99 and p99.9 (s) of ``op``: quantiles of the mixture of the
        groups' latency distributions (each the gamma of its mean and SCV that its own row's
        percentiles are), weighted by the groups' I/O rates. A gamma fitted to the pooled mean and
        SCV instead puts the tail above every group's when the groups' means differ, which no
        mixture of them can have."""
        groups = [row for row in self._rows if row[0] != "all" and row[1] == op]
        return gamma_mixture_quantiles(
            [row[2] for row in groups], [row[4] for row in groups], [row[5] for row in groups]
        )

    def to_json(self) -> dict[str, Any]:
        """The estimate as JSON values (``simcache estimate --json``). Its ``bottleneck`` is
        :meth:`named_bottleneck`'s component and that component's mean utilization (null for a
        destage buffer); an overloaded one's offered load is in its ``overload`` warning."""
        bottleneck = self.named_bottleneck()
        return {
            "scenario": self.scenario.name,
            "summary": strict(self.summary.to_dict("records")),
            "utilization": self.utilization,
            "bottleneck": {"station": bottleneck.component, "utilization": bottleneck.utilization},
            "destager": [strict(dataclasses.asdict(d)) for d in self.destager],
            "notes": self.notes,
            "stable": self.stable,
            "warnings": [strict(dataclasses.asdict(w)) for w in self.warnings],
        }
