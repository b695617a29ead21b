"""Where an estimate has no steady state, or one set by a saturated component:
:class:`EstimateWarning`.

An open-loop stream that offers a station more than it serves (utilization
rho = offered / capacity >= 1 over the window) has no steady state: its
queue, and the latency of every I/O that crosses it, grows without bound, so
those summary cells are infinite ("unbounded"), not the run-length-dependent
figure of a fluid queue. The checks, per component (``docs/estimate.md``,
Overload and saturation):

- ``overload`` (the estimate is not stable): an open stream's offered
  utilization of a station, averaged over the window, is at least 1; or a
  destage buffer is full at the end of the run with open-loop writers
  writing faster, on average, than it drains.
- ``burst_overload``: the offered utilization reaches 1 only in some pieces
  (a duty cycle's bursts): queues build there and drain after.
- ``bottleneck``: a station at least 95% busy on average that closed loops
  (closed groups, the destager's flushers) cross: their throughput is held
  to its capacity, their latency stays finite.
- ``near_overload``: open traffic alone keeps a station at least 95% busy.
- ``destage_full`` / ``destage_backlog``: writes outpace the destager, so
  the buffer fills in ``capacity / (accepted - drained)`` seconds (within
  the run, or after it); from then on writes run at the drain rate.
- ``not_converged``: the mean value analysis of a stretch of the window did
  not settle within its pass limit (``MAX_ITERATIONS``, fewer for thousands
  of closed chains: ``numeric.pass_limit``); its figures are the last pass's,
  and how far that pass still moved the queues is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from simcache.estimate.drain import STARVED_DRAIN
from simcache.estimate.theory.numeric import TOLERANCE, Floats
from simcache.estimate.theory.state import FULL
from simcache.estimate.theory.stations import (
    ADMIT,
    ARRAY,
    ARRAY_RX,
    CONTROLLER,
    GC,
    PIPE_SLOT,
    STORAGE_TX,
    TIER,
)

if TYPE_CHECKING:
    from simcache.estimate.layout import Layout
    from simcache.estimate.result import DestageFluid
    from simcache.estimate.timeline import Piece

__all__ = [
    "SATURATED",
    "EstimateWarning",
    "Evidence",
    "detect",
    "duration_text",
    "explain",
    "load_share",
    "peak_differs",
    "ranked_overloads",
    "window_rates",
]

# mean utilization from which a station is reported as saturated (bottleneck, near overload)
SATURATED = 0.95

# Times longer than this print as words: they come from rates next to nothing (a starved destager,
# a backlog that barely grows), and past a year no run or planning horizon tells them apart.
_YEAR_S = 365.25 * 86400.0


@dataclass(frozen=True)
class EstimateWarning:
    """One thing an estimate's figures cannot be trusted for, in words and figures.

    ``kind``: see the module's docstring; ``component``: the station as the simulator's ``util.*``
    names it (``array``, ``host0.storage.tx``, ``host0.destager`` ...); ``offered`` and ``capacity``
    in ``unit`` (``IOPS``: front-end I/Os per s crossing the component; ``bytes/s``; ``busy``: a
    fraction of its time); ``message``: the sentence to show (also ``str()``).
    """

    kind: str
    component: str
    offered: float
    capacity: float
    unit: str
    message: str

    @property
    def utilization(self) -> float:
        """offered / capacity (rho)."""
        return self.offered / self.capacity if self.capacity > 0 else math.inf

    @property
    def severity(self) -> str:
        """``unstable`` for an overload (the estimate's ``stable`` is then False), else ``note``:
        the same field a simulation's :class:`~simcache.results.validity.ValidityWarning` has, so
        one display serves both."""
        return "unstable" if self.kind == "overload" else "note"

    def __str__(self) -> str:
        return self.message


@dataclass
class Evidence:
    """What an estimate's warnings are worked out from (:func:`explain`, when they are asked
    for), and what :func:`detect` works out at once: the stations and destage buffers an
    open-loop load overloads (the estimate is then not stable) and the ops whose latency is
    therefore unbounded."""

    layout: Layout
    inside: list[Piece]  # the pieces that overlap the window
    # per station: the open traffic's offered utilization, averaged over the window
    open_mean: Floats
    utilization: Floats  # per station: as reported, averaged over the window
    op_rates: Floats  # per op: mean I/Os per s over the window
    fluid: list[DestageFluid]
    overloaded: list[int]  # stations whose open offered utilization averages 1 or more
    # host -> (accepted, drained) bytes/s of a buffer open writers overload
    full: dict[int, tuple[float, float]]
    unbounded: list[int]  # ops that cross an overloaded station or write into an overloaded buffer

    @property
    def stable(self) -> bool:
        return not self.overloaded and not self.full


def detect(
    c: Layout,
    pieces: list[Piece],
    open_mean: Floats,
    utilization: Floats,
    op_rates: Floats,
    fluid: list[DestageFluid],
) -> Evidence:
    """The overloads of an estimate (cheap: the messages wait for :func:`explain`): stations
    where ``open_mean`` (per station, the open traffic's offered utilization averaged over the
    window) is at least 1, and destage buffers full at the end of the run with open-loop writers
    writing faster, on average over the window, than they drain. ``utilization``: per station, as
    reported, averaged over the window; ``op_rates``: per op, its mean I/Os per s over the
    window; ``fluid``: the destage buffers' figures."""
    net = c.network
    start, end = c.window
    inside = [p for p in pieces if p.end > start and p.start < end]
    overloaded = np.flatnonzero(open_mean >= 1.0).tolist()
    unbounded: set[int] = set()
    for k in overloaded:
        unbounded.update(op for op in net.station_users(k) if op_rates[op] > 0)
    full: dict[int, tuple[float, float]] = {}
    for h, d in enumerate(fluid):
        if math.isfinite(d.first_full_s) and inside and _filled_in(inside[-1], h, d.capacity_bytes):
            writers = [op for op in net.open_write_back_writes[h] if op_rates[op] > 0]
            accepted, drained = window_rates(c, inside, h, d)
            if writers and accepted > drained:
                full[h] = (accepted, drained)
                unbounded.update(writers)
    return Evidence(
        c, inside, open_mean, utilization, op_rates, fluid, overloaded, full, sorted(unbounded)
    )


def explain(e: Evidence) -> list[EstimateWarning]:
    """The warnings of an estimate, in the order: overloads, bursts, saturated stations, destage
    buffers."""
    c, inside, open_mean, utilization, op_rates = (
        e.layout,
        e.inside,
        e.open_mean,
        e.utilization,
        e.op_rates,
    )
    warnings: list[EstimateWarning] = []
    net = c.network
    start, end = c.window
    span = max(end - start, 1e-12)
    unsettled = [p for p in inside if p.result.residual > 0.0]
    if unsettled:
        worst = max(unsettled, key=lambda p: p.result.residual)
        share = sum(_width(p, start, end) for p in unsettled) / span
        warnings.append(
            EstimateWarning(
                "not_converged",
                "estimate",
                worst.result.residual,
                TOLERANCE,
                "relative change",
                f"the estimate did not settle in {worst.result.passes} passes for {share:.0%} of "
                "the window (its last pass still "
                f"moved the queues by {worst.result.residual:.2%} of the longest, against "
                f"{TOLERANCE:.2%} to stop): the "
                "figures there are approximate; simulate the scenario to check them",
            )
        )
    for k in e.overloaded:
        users = [op for op in net.station_users(k) if op_rates[op] > 0]
        offered, capacity, unit = _offered(c, k, float(open_mean[k]), op_rates, users)
        what = _component(c, k)
        warnings.append(
            EstimateWarning(
                "overload",
                what[0],
                offered,
                capacity,
                unit,
                f"{_latency_of(c, users) if users else 'the queue at ' + what[1]} grows without "
                "bound: "
                f"{_load(what[1], offered, capacity, unit, float(open_mean[k]))}; an open-loop "
                "load above capacity has no "
                "steady state, so the estimate shows those cells as unbounded",
            )
        )
    bursts: set[int] = set()
    for piece in inside:
        bursts.update(k for k in piece.result.overloaded if open_mean[k] < 1.0)
    for k in sorted(bursts):
        busiest = max(inside, key=lambda p: float(p.result.open_utilization[k]))
        rates = busiest.result.rates
        users = [op for op in net.station_users(k) if rates[op] > 0]
        rho = float(busiest.result.open_utilization[k])
        offered, capacity, unit = _offered(c, k, rho, rates, users)
        over = (
            sum(_width(p, start, end) for p in inside if p.result.open_utilization[k] >= 1.0) / span
        )
        what = _component(c, k)
        warnings.append(
            EstimateWarning(
                "burst_overload",
                what[0],
                offered,
                capacity,
                unit,
                f"overloaded in bursts: {_load(what[1], offered, capacity, unit, rho)} for "
                f"{over:.0%} of the window, "
                f"{open_mean[k]:.0%} on average; queues build in the bursts and drain between them "
                "(a fluid estimate: rough)",
            )
        )
    for k in np.flatnonzero((utilization >= SATURATED) & (open_mean < 1.0)).tolist():
        if not c.names[k]:
            # internal stations (pipe, GC, admission, controller) show in their tier's or the
            # buffer's figures
            continue
        closed = [op for op in net.station_users(k) if op_rates[op] > 0 and not net.op_open[op]]
        flushers = _destage_crosses(c, k, e.fluid)
        what = _component(c, k)
        if closed or flushers:
            loops = ", ".join(
                ([_groups(c, closed)] if closed else [])
                + (["the destager's flushers"] if flushers else [])
            )
            warnings.append(
                EstimateWarning(
                    "bottleneck",
                    what[0],
                    float(utilization[k]),
                    1.0,
                    "busy",
                    f"{what[1]} is saturated ({utilization[k]:.0%} busy): the closed loops through "
                    f"it ({loops}) are held "
                    "to its capacity; this is a bottleneck, not an overload: their latency stays "
                    "finite",
                )
            )
        elif open_mean[k] >= SATURATED:
            users = [op for op in net.station_users(k) if op_rates[op] > 0]
            offered, capacity, unit = _offered(c, k, float(open_mean[k]), op_rates, users)
            warnings.append(
                EstimateWarning(
                    "near_overload",
                    what[0],
                    offered,
                    capacity,
                    unit,
                    "nearly overloaded: "
                    f"{_load(what[1], offered, capacity, unit, float(open_mean[k]))}; its waiting "
                    "grows "
                    "steeply with load, so the latency there is rough",
                )
            )
    for h, d in enumerate(e.fluid):
        if d.accept_rate_bytes_s > d.drain_rate_bytes_s and math.isfinite(d.fill_time_s):
            warning = _destager(e, h, d)
            if warning is not None:
                warnings.append(warning)
    return warnings


def window_rates(c: Layout, inside: list[Piece], h: int, d: DestageFluid) -> tuple[float, float]:
    """Host ``h``'s write-back bytes/s accepted, averaged over the window, and its drain capacity
    (bytes/s), averaged over the time it has one (the peak state's without). ``inside``: the
    pieces that overlap the window; ``d``: the host's fluid figures, whose rates are the peak
    state's (its most written piece), where these average over the window's pieces."""
    start, end = c.window
    widths = [_width(p, start, end) for p in inside]
    accepted = sum(
        w * p.result.write_back_bytes[h] for p, w in zip(inside, widths, strict=True)
    ) / max(end - start, 1e-12)
    draining = [
        (w, p.result.drain[h])
        for p, w in zip(inside, widths, strict=True)
        if math.isfinite(p.result.drain[h])
    ]
    drained_for = sum(width for width, _ in draining)
    drained = (
        sum(width * rate for width, rate in draining) / drained_for
        if drained_for > 0
        else d.drain_rate_bytes_s
    )
    return accepted, drained


def _destager(e: Evidence, h: int, d: DestageFluid) -> EstimateWarning | None:
    """The warning of host ``h``'s destage buffer, whose writes outpace its drain in the peak
    state (None: a backlog that does not grow on average over the window)."""
    c = e.layout
    capacity = d.capacity_bytes
    fill = (
        f"writes arrive at {_amount(d.accept_rate_bytes_s, 'bytes/s')} and the destager drains "
        f"{_amount(d.drain_rate_bytes_s, 'bytes/s')}, so its {_size(capacity)} buffer "
        f"({capacity / 1e6:,.1f} MB) fills in "
        f"{capacity / 1e6:,.1f} MB / "
        f"{_amount(d.accept_rate_bytes_s - d.drain_rate_bytes_s, 'bytes/s')} = "
        f"{duration_text(d.fill_time_s, 'more than a year')}"
    )
    writers = [op for op in c.network.open_write_back_writes[h] if e.op_rates[op] > 0]
    if h in e.full:
        accepted, drained = e.full[h]
        return EstimateWarning(
            "overload",
            f"{d.host}.destager",
            accepted,
            drained,
            "bytes/s",
            f"{_latency_of(c, writers)} grows without bound: {d.host}'s destage buffer is full "
            "from "
            f"{d.first_full_s:.3g} s to the end of the run with open-loop writers offering "
            f"{_amount(accepted, 'bytes/s')} "
            f"vs {_amount(drained, 'bytes/s')} drained on average "
            f"({load_share(accepted / drained)}); "
            f"{fill}",
        )
    if math.isfinite(d.first_full_s):
        return EstimateWarning(
            "destage_full",
            f"{d.host}.destager",
            d.accept_rate_bytes_s,
            d.drain_rate_bytes_s,
            "bytes/s",
            f"{d.host}'s destage buffer fills at {d.first_full_s:.3g} s into the {c.duration:g} s "
            f"run: {fill}; while full, "
            f"writes run at the drain rate, {_amount(d.drain_rate_bytes_s, 'bytes/s')} (full for "
            f"{d.full_fraction:.0%} "
            "of the window)",
        )
    accepted, drained = window_rates(c, e.inside, h, d)
    if accepted <= drained * 1.001 or d.peak_backlog_bytes <= 0:
        return None
    longer = (
        "open-loop writers' latency then grows without bound"
        if writers
        else "closed-loop writers then slow to it"
    )
    fill_s = capacity / (accepted - drained)
    return EstimateWarning(
        "destage_backlog",
        f"{d.host}.destager",
        accepted,
        drained,
        "bytes/s",
        f"{d.host}'s destage backlog grows through the run: writes arrive at "
        f"{_amount(accepted, 'bytes/s')} on average "
        f"and the destager drains {_amount(drained, 'bytes/s')}"
        f"{_peak_differs(d, accepted, drained)}, so its {_size(capacity)} buffer "
        f"({capacity / 1e6:,.1f} MB) "
        f"would fill in {capacity / 1e6:,.1f} MB / {_amount(accepted - drained, 'bytes/s')} = "
        f"{duration_text(fill_s, 'more than a year')} from empty; "
        f"the {c.duration:g} s run ends first (peak backlog {_size(d.peak_backlog_bytes)}); in a "
        "longer run writes "
        f"then run at the drain rate ({longer})",
    )


def ranked_overloads(e: Evidence) -> list[tuple[str, str, float]]:
    """What an open-loop load overloads (the ``overload`` warnings' stations and full destage
    buffers): its component (as ``util.*`` names it), how a message names it, and its offered
    load over its capacity (rho, at least 1), most overloaded first. The true bottleneck of an
    unstable estimate, whose mean utilization can be low (a station whose queue grows reports what
    it serves, and a starved one serves little)."""
    ranked = [(*_component(e.layout, k), float(e.open_mean[k])) for k in e.overloaded]
    ranked += [
        (
            f"host{h}.destager",
            f"host{h}'s destage buffer",
            # a starved buffer's drain is the floor drain.STARVED_DRAIN (1 B/s), not a rate
            accepted / drained if drained > STARVED_DRAIN else math.inf,
        )
        for h, (accepted, drained) in sorted(e.full.items())
    ]
    return sorted(ranked, key=lambda item: -item[2])


def duration_text(seconds: float, never: str = "never") -> str:
    """A time (s) for a message: ``"1.72 s"``, ``"4,000 s (66.7 min)"``; ``never`` for an
    infinite time or one past a year (rates next to nothing, not a figure to plan by)."""
    if not math.isfinite(seconds) or seconds > _YEAR_S:
        return never
    if seconds < 1000.0:
        return f"{seconds:.3g} s"
    unit, size = next(
        (unit, size)
        for unit, size, below in (
            ("min", 60.0, 7200.0),
            ("h", 3600.0, 172800.0),
            ("days", 86400.0, math.inf),
        )
        if seconds < below
    )
    return f"{seconds:,.0f} s ({seconds / size:.3g} {unit})"


def _peak_differs(d: DestageFluid, accepted: float, drained: float) -> str:
    """`` (in its peak-write state it drains 0.0 MB/s, as the destage table shows)``: the peak
    state's rates (the fluid figures') where they differ from the window's averages ``accepted``
    and ``drained`` (bytes/s), so that a reader sees why the table's and the warning's figures
    differ; empty where they agree (:func:`peak_differs`)."""
    peak = [
        (what, figure)
        for what, figure, mean in (
            ("accepts", d.accept_rate_bytes_s, accepted),
            ("drains", d.drain_rate_bytes_s, drained),
        )
        if peak_differs(figure, mean)
    ]
    if not peak:
        return ""
    rates = " and ".join(f"{what} {_amount(figure, 'bytes/s')}" for what, figure in peak)
    return f" (in its peak-write state it {rates}, as the destage table shows)"


def peak_differs(peak: float, mean: float) -> bool:
    """Whether a destage buffer's peak-state rate and its window average (bytes/s) differ by more
    than 1% (and 1 kB/s): a buffer whose state changes in the window (a clean-pool cliff, a
    duty cycle) drains at different rates before and after."""
    return not math.isclose(peak, mean, rel_tol=0.01, abs_tol=1e3)


def _filled_in(piece: Piece, host: int, capacity: float) -> bool:
    """Whether the host's buffer reaches ``capacity`` by the end of ``piece``."""
    if piece.modes[host] == FULL:
        return True
    rise = (piece.result.write_back_bytes[host] - piece.result.drain[host]) * (
        piece.end - piece.start
    )
    return piece.buffer_level[host] + rise >= capacity * (1 - 1e-9)


def _offered(
    c: Layout, k: int, rho: float, rates: Floats, users: list[int]
) -> tuple[float, float, str]:
    """Open load offered to station ``k`` at utilization ``rho`` and its capacity: bytes/s at a
    port (framed bytes over the line rate), else the front-end I/Os per s of open ops that cross
    it, or with none (the array behind a controller write cache, whose spindles see the cache's
    destaging) the fraction of its time (``busy``)."""
    if c.is_port[k]:
        return rho * c.capacity[k], c.capacity[k], "bytes/s"
    net = c.network
    offered = float(sum(float(rates[op]) for op in users if net.op_open[op]))
    if offered <= 0 or rho <= 0:
        return rho, 1.0, "busy"
    return offered, offered / rho, "IOPS"


def _component(c: Layout, k: int) -> tuple[str, str]:
    """Station ``k``'s component name (as ``util.*`` names it) and how a message names it."""
    if k < c.shared:
        h, slot = divmod(k, c.per_host)
        if slot == PIPE_SLOT:
            return f"host{h}.tier", f"host{h}.tier (its transfer pipe)"
        if slot == GC:
            return f"host{h}.tier", f"host{h}.tier (garbage collection past its clean-pool cliff)"
        if slot == CONTROLLER:
            return f"host{h}.tier", f"host{h}.tier (its controller's command rate)"
        if slot == ADMIT:
            return (
                f"host{h}.destager",
                f"host{h}.destager (writers waiting for space in the full buffer)",
            )
    return c.names[k], c.names[k]


def _destage_crosses(c: Layout, k: int, fluid: list[DestageFluid]) -> bool:
    """Whether a destaging host's flushers cross station ``k`` (its tier, its storage port, the
    array and its port)."""
    shared = {c.shared + ARRAY, c.shared + ARRAY_RX}
    for h, d in enumerate(fluid):
        if d.accept_rate_bytes_s > 0 and (
            k in shared or k in (h * c.per_host + TIER, h * c.per_host + STORAGE_TX)
        ):
            return True
    return False


def _groups(c: Layout, ops: list[int]) -> str:
    """The groups of these ops: ``"group db"``, ``"groups db and log"``."""
    groups = c.scenario.groups
    names = sorted({groups[int(c.network.op_group[op])].name for op in ops})
    if not names:
        return "no group"
    if len(names) == 1:
        return f"group {names[0]}"
    return "groups " + " and ".join([", ".join(names[:-1]), names[-1]])


def _latency_of(c: Layout, ops: list[int]) -> str:
    """``"the write latency of group db"``: the ops' kinds (read, write) and groups."""
    if not ops:
        return "the latency of the I/Os that cross it"
    kinds = sorted({("read", "write")[int(c.network.op_is_write[op])] for op in ops})
    return f"the {' and '.join(kinds)} latency of {_groups(c, ops)}"


def _load(name: str, offered: float, capacity: float, unit: str, rho: float) -> str:
    """``"array offered 2,400 IOPS vs 1,200 IOPS capacity (200%)"``."""
    if unit == "busy":
        share = load_share(rho)
        if share == "starved":
            return f"{name} gets nothing through (starved)"
        return f"{name} offered {share}{' of' if share.endswith('%') else ''} its capacity"
    return (
        f"{name} offered {_amount(offered, unit)} vs {_amount(capacity, unit)} capacity "
        f"({load_share(rho)})"
    )


def load_share(rho: float) -> str:
    """An offered / capacity ``rho`` in a word or a figure: ``"180%"``, ``"over 100x"`` from 100
    on (a buffer drained at the 1 byte/s floor is offered billions of percent, a figure nobody
    reads), ``"starved"`` when nothing gets through."""
    if not math.isfinite(rho):
        return "starved"
    return "over 100x" if rho >= 100.0 else f"{rho:.0%}"


def _amount(value: float, unit: str) -> str:
    if unit == "bytes/s":
        return f"{value / 1e6:,.1f} MB/s"
    if unit == "busy":
        return f"{value:.0%}"
    return f"{value:,.0f} IOPS"


def _size(nbytes: float) -> str:
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.3g} GiB"
    return f"{nbytes / 2**20:.3g} MiB"


def _width(piece: Piece, start: float, end: float) -> float:
    """The time (s) ``piece`` and its copies spend in the window [start, end]."""
    return sum((b - a) * copies for _, a, b, copies in piece.windowed(start, end))
