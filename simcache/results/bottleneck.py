"""The bottleneck in words: a component's name as people read it, and the sentence that names the
busiest one and where the write time goes, at the mean and in the tail (the writes at or past the
p99).

Which part a run's bottleneck is (:func:`run_bottleneck`) is decided here once, for the app's
single-run view, the HTML report (:mod:`simcache.report`) and the sweep's rows
(:func:`simcache.runs.sweep.result_row`), so all say the same. What the sentence adds to it is
decided here too, for the sentence and the ``bottleneck:`` line of ``simcache run``
(:mod:`simcache.report.run_report`): the part's peak (:func:`peak_of`), the share of the writes'
time spent on it (:func:`waited_share`) and the tiers' garbage-collection waits
(:func:`gc_waits`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from simcache.base.units import format_figure, human_size
from simcache.physics.cluster import PortName, gc_refill_rate
from simcache.results.part_words import drive_noun, link_words
from simcache.results.peaks import PEAK, Peak, peak_of, peak_words
from simcache.results.result import Result
from simcache.results.validity import samples_needed
from simcache.sim.collect import COMPONENTS
from simcache.spec import Scenario

__all__ = [
    "AS_BUSY",
    "BUSY",
    "COMPONENT_WORDS",
    "GC_CAUSE",
    "PEAK",
    "SATURATED",
    "TAIL_PERCENTILE",
    "WAITED_ON",
    "Bottleneck",
    "Peak",
    "WriteTime",
    "as_busy",
    "bottleneck_line",
    "bottleneck_sentence",
    "component_name",
    "gc_waits",
    "peak_of",
    "run_bottleneck",
    "tail_sentence",
    "time_shares",
    "waited_share",
    "write_time",
]

SATURATED = 0.9
"""Mean utilization from which the bottleneck is called saturated."""
BUSY = 0.7
"""Mean utilization from which the bottleneck is called busy (queueing there adds latency)."""
AS_BUSY = 0.02
"""Other saturated parts within this much mean utilization (0 to 1) of the busiest are named with
it (:func:`as_busy`): two tiers at 100% are both the bottleneck, and naming one beside a
breakdown whose largest share is the other's read as a contradiction (review 65e.11)."""
TAIL_PERCENTILE = 99.0
"""The tail is the writes at or past this percentile of write latency."""
WAITED_ON = 0.1
"""Share of the writes' time (0 to 1) from which the writes are said to wait on a part: a part
whose latency components (:func:`waited_share`) take less, on average and in the tail, paces
other work (destaging, reads, a vMotion), not the write latency, however busy it is."""
GC_CAUSE = 0.1
"""Share of the writes in the tiers (0 to 1, on average) waiting for garbage collection from which
the sentence names it as the cause of the tiers' share of the write time (:func:`gc_waits`)."""
COMPONENT_WORDS = {
    "local_tier_ms": "the local tier",
    "network_ms": "sending replicas over the network",
    "peer_tier_ms": "the peer tier",
    "destage_wait_ms": "waiting for destage buffer space",
    "array_ms": "the array",
}
"""The latency components of a write (:data:`simcache.sim.collect.COMPONENTS`) in words."""
_TIER_COMPONENTS = ("local_tier_ms", "peer_tier_ms")
_ARRAY_COMPONENTS = ("array_ms", "destage_wait_ms")


@dataclass(frozen=True)
class Bottleneck:
    """What holds a run back, by :func:`run_bottleneck`'s rule. Utilizations are mean fractions
    of the measurement window (0 to 1)."""

    parts: tuple[str, ...]
    """The components named as the bottleneck (``host0.tier``, ``host0.peer.tx``, ``array``): the
    tiers past their clean-pool cliff if any, else the busiest part alone."""
    utilization: float
    """The highest mean utilization among :attr:`parts`. A tier past its cliff looks nearly idle:
    garbage collection, not its units, holds its writes."""
    busiest: str
    """The component with the highest mean utilization."""
    busiest_utilization: float
    """That component's mean utilization."""
    past_cliff: bool
    """Whether :attr:`parts` are tiers past their clean-pool cliff (``gc_cliff`` warnings)."""
    starved: bool = False
    """Whether :attr:`parts` are tiers that hold back their own destage reads
    (``destage_starved`` warnings): the backlog grows while the destage path has room."""


@dataclass(frozen=True)
class WriteTime:
    """Where the measured writes' time goes (:func:`write_time`): each latency component's share
    (0 to 1) of the writes' summed latency."""

    writes: int
    """Completed writes issued in the measurement window."""
    mean: dict[str, float]
    """Shares over all those writes."""
    tail: dict[str, float] | None
    """Shares over the writes at or past their p99; None with fewer writes than
    :func:`simcache.results.validity.samples_needed` asks for the p99, or without
    :attr:`from_records`."""
    p99_ms: float
    """The completed writes' own p99 (ms; NaN without :attr:`tail`)."""
    tier_s: float
    """Seconds those writes spent in the tiers (local and peer), summed over the writes."""
    from_records: bool
    """From the per-I/O records; else from the run's component sums (the mean shares only)."""


def run_bottleneck(result: Result) -> Bottleneck:
    """The bottleneck of ``result``: first the tiers past their clean-pool cliff (its ``gc_cliff``
    warnings), whose utilization cannot show it, then the tiers holding back their destage reads
    (``destage_starved``: their utilization counts units, not the shared pipe), else the busiest
    part by mean utilization.

    The busiest part names an overloaded one when there is one: an ``overload`` warning is given
    for every part pinned (97% or more) while work piles up, the busiest among them too.
    """
    busiest, utilization = result.bottleneck()
    cliffs = tuple(dict.fromkeys(w.component for w in result.warnings if w.kind == "gc_cliff"))
    starved = tuple(
        dict.fromkeys(
            tier
            for w in result.warnings
            if w.kind == "destage_starved"
            for tier in w.component.split(",")
        )
    )
    tiers = cliffs or starved
    if not tiers:
        return Bottleneck((busiest,), utilization, busiest, utilization, past_cliff=False)
    means = result.window_means()
    held = max(float(means.get(f"util.{tier}", 0.0)) for tier in tiers)
    return Bottleneck(
        tiers, held, busiest, utilization, past_cliff=bool(cliffs), starved=not cliffs
    )


def component_name(component: str, scenario: Scenario) -> str:
    """A utilization column's component (``host0.peer.tx``, ``host0.peer1.tx``, ``array``) in
    words."""
    cluster = scenario.cluster
    port = PortName.parse(component)
    if port is not None:
        link = {
            "peer": cluster.peer_link,
            "fabric": cluster.peer_link,
            "storage": cluster.storage_link,
        }.get(port.role)
        return port.describe(link_words(link) if link is not None else None)
    tier = re.match(r"^host(\d+)\.tier$", component)
    if tier:
        return f"the host{tier.group(1)} {_profile(cluster.tier.profile)}{cluster.tier.kind} tier"
    if component == "array":
        count = scenario.array.spindles
        noun = drive_noun(scenario.array.drive)  # an all-flash array's are flash drives
        return f"the array's {count} {noun}{'' if count == 1 else 's'}"
    return component


def _profile(name: str | None) -> str:
    return f"{name} " if name else ""


@dataclass(frozen=True)
class _Reading:
    """What :func:`bottleneck_sentence` and :func:`bottleneck_line` say, worked out once."""

    found: Bottleneck
    time: WriteTime | None
    peak: Peak
    at_peak: bool
    """Saturated in some sample intervals (:data:`PEAK`), not on average (:data:`SATURATED`)."""
    spared: tuple[float, float | None] | None
    """The writes' share of time on the busiest part (:func:`waited_share`) when it is busy, or
    saturated at its peak, and they barely wait on it (:data:`WAITED_ON`); else None."""
    gc: dict[str, float]
    """:func:`gc_waits`."""
    alike: dict[str, float]
    """:func:`as_busy`."""


def _read(result: Result) -> _Reading:
    found = run_bottleneck(result)
    utilization = found.busiest_utilization
    time = write_time(result)
    peak = peak_of(result, found.busiest)
    at_peak = utilization < SATURATED and peak.saturated
    share = waited_share(time, found.busiest) if time is not None else None
    spared = (
        share
        if share is not None
        and (utilization >= BUSY or at_peak)
        and max(s for s in share if s is not None) < WAITED_ON
        else None
    )
    alike = as_busy(result, found)
    return _Reading(found, time, peak, at_peak, spared, gc_waits(result, time), alike)


def as_busy(result: Result, found: Bottleneck) -> dict[str, float]:
    """The other parts saturated (:data:`SATURATED`) within :data:`AS_BUSY` of the busiest part's
    mean utilization, busiest first, each with its utilization; {} when the busiest is not
    saturated."""
    top = found.busiest_utilization
    if top < SATURATED:
        return {}
    means = result.window_means()
    parts = {
        str(column).removeprefix("util."): float(value)
        for column, value in means.items()
        if str(column).startswith("util.")
        and str(column) != f"util.{found.busiest}"
        and float(value) >= max(SATURATED, top - AS_BUSY)
    }
    return dict(sorted(parts.items(), key=lambda item: -item[1]))


def _as_busy_words(alike: dict[str, float], scenario: Scenario | None) -> str:
    """:func:`as_busy`'s parts in words (their names, or their labels without ``scenario``), at
    most three and how many more."""
    shown = [
        f"{component_name(part, scenario) if scenario is not None else part} at {u:.0%}"
        for part, u in list(alike.items())[:3]
    ]
    more = len(alike) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def bottleneck_sentence(result: Result, scenario: Scenario) -> str:
    """``"Bottleneck: the host0 1GbE peer link (sending), at 97% mean utilization (saturated;
    ...)."``, then where the write time goes (:func:`tail_sentence`) and, when the tiers' writes
    waited for garbage collection, how long (:func:`gc_waits`).

    "It sets the latency" is said only of a part the writes wait on (:data:`WAITED_ON`); of
    another, what it paces instead. A part saturated in some sample intervals but not on average
    is given its peak and the events under way then (:func:`peak_of`)."""
    read = _read(result)
    found = read.found
    where, utilization = component_name(found.busiest, scenario), found.busiest_utilization
    closing = " ".join(
        part
        for part in (_tail_words(result, read.time), _gc_words(result, scenario, read.gc))
        if part
    )
    if found.past_cliff:  # garbage collection holds the writes: the tier's units look idle
        tiers = ", ".join(component_name(c, scenario) for c in found.parts)
        return (
            f"Bottleneck: {tiers}, past the clean-pool cliff: garbage collection holds the writes "
            "while the units look idle, so no utilization shows it (the busiest part by "
            f"utilization is {where}, at {utilization:.0%}). {closing}"
        )
    if found.starved:  # the tier holds its destage reads back: the destage path looks idle
        tiers = ", ".join(component_name(c, scenario) for c in found.parts)
        return (
            f"Bottleneck: {tiers}, holding back its destage reads behind the VMs' I/O: the "
            "destage backlog grows while the destage path has room, and the tier's utilization "
            "counts its units, not the transfer path its reads and writes share (the busiest part "
            f"by utilization is {where}, at {utilization:.0%}). {closing}"
        )
    load = f"at {utilization:.0%} mean utilization"
    if read.at_peak:
        load += f" and {read.peak.utilization:.0%} at its peak, {peak_words(read.peak)}"
    alike = f"As busy: {_as_busy_words(read.alike, scenario)}. " if read.alike else ""
    return f"Bottleneck: {where}, {load} ({_verdict(result, read)}). {alike}{closing}"


def _verdict(result: Result, read: _Reading) -> str:
    """What the busiest part's load means for the writes."""
    utilization = read.found.busiest_utilization
    if utilization >= SATURATED:
        level = "saturated"
    elif read.at_peak:
        level = "saturated then"
    elif utilization >= BUSY:
        level = "busy"
    else:
        return "the busiest part, with headroom; nothing is close to its limit"
    if read.spared is not None:
        return f"{level}, but {_spared_words(result, read.found.busiest, read.spared)}"
    if level == "saturated":
        return (
            "saturated; it sets the latency, and more load or a faster part there changes the "
            "answer"
        )
    if level == "busy":
        return "busy; queueing there is already adding latency"
    otherwise = (
        "queueing there adds latency the rest of the time too"
        if utilization >= BUSY
        else "it has headroom the rest of the time"
    )
    return f"saturated then: it sets the latency while that lasts, and {otherwise}"


def write_time(result: Result) -> WriteTime | None:
    """Each latency component's share of the measured writes' time, on average and in the tail
    (the writes at or past the p99, given :func:`~simcache.results.validity.samples_needed`
    writes); for a run without per-I/O records, on average only (from the breakdown). None when
    no write was measured."""
    if not result.has_records:
        return _write_time_of_sums(result)
    writes = result.measured
    writes = writes[writes["op"] == "write"]
    if not len(writes):
        return None
    latency = writes["latency_ms"].to_numpy(dtype=float)
    parts = {c: writes[c].to_numpy(dtype=float) for c in COMPONENTS}
    mean = time_shares(latency, parts)
    tier_s = float(sum(parts[c].sum() for c in _TIER_COMPONENTS)) / 1e3
    if len(latency) < samples_needed(TAIL_PERCENTILE):
        return WriteTime(len(latency), mean, None, math.nan, tier_s, from_records=True)
    p99 = float(np.percentile(latency, TAIL_PERCENTILE))
    tail = time_shares(latency, parts, p99)
    return WriteTime(len(latency), mean, tail, p99, tier_s, from_records=True)


def _write_time_of_sums(result: Result) -> WriteTime | None:
    """:func:`write_time` from the breakdown's mean components of all groups' writes."""
    summary, breakdown = result.summary, result.breakdown
    count = int(
        summary.loc[(summary["group"] == "all") & (summary["op"] == "write"), "count"].sum()
    )
    row = breakdown[breakdown["group"] == "all"]
    if not count or not len(row):
        return None
    sums = {c: float(row[c].iloc[0]) * count for c in COMPONENTS}
    mean = _shares(sums)
    tier_s = sum(sums[c] for c in _TIER_COMPONENTS) / 1e3
    return WriteTime(count, mean, None, math.nan, tier_s, from_records=False)


def waited_share(time: WriteTime, part: str) -> tuple[float, float | None] | None:
    """The share of the writes' time (0 to 1) spent in the latency components that wait on
    ``part``, on average and in the tail (None without :attr:`WriteTime.tail`): the array and the
    storage links take the array's time and the wait for destage buffer space (which the array's
    drain sets), a tier the local and peer tiers', a peer link the network's. None for a part no
    component names."""
    components: tuple[str, ...]
    port = PortName.parse(part)
    if re.match(r"^host\d+\.tier$", part):
        components = _TIER_COMPONENTS
    elif port is not None and port.role in ("peer", "fabric"):
        components = ("network_ms",)
    elif port is not None or part == "array":
        components = _ARRAY_COMPONENTS
    else:
        return None
    mean = sum(time.mean[c] for c in components)
    tail = sum(time.tail[c] for c in components) if time.tail is not None else None
    return mean, tail


def _spared_words(result: Result, part: str, share: tuple[float, float | None]) -> str:
    """That the writes barely wait on ``part`` (``share`` of their time, on average and in the
    tail), and what it sets instead."""
    mean, tail = share
    spent = (
        f"{mean:.0%}"
        if tail is None or f"{tail:.0%}" == f"{mean:.0%}"
        else f"{mean:.0%} ({tail:.0%} in the slowest 1%)"
    )
    port = PortName.parse(part)
    until = ""
    if port is not None and port.role in ("peer", "fabric"):
        paces = "the pace of the link's other traffic (vMotions, reads served by a peer)"
    elif re.match(r"^host\d+\.tier$", part):
        paces = "the pace of the reads and destage reads it serves"
    else:
        measured = result.measured if result.has_records else None
        misses = measured is not None and bool(
            ((measured["op"] == "read") & (measured["path"] == "miss")).any()
        )
        paces = "how fast the destage backlog drains" + (
            " and the read misses' latency" if misses else ""
        )
        until = ", until the destage buffer is full"
    return (
        f"the writes spend {spent} of their time waiting on it: it sets {paces}, not the write "
        f"latency{until}"
    )


def gc_waits(result: Result, time: WriteTime | None) -> dict[str, float]:
    """Per host, the seconds its tier's writes waited for garbage collection over the run
    (``tier_gc_wait_s_by_host``), for the hosts that waited at all, longest first, when those
    waits are the cause of the tiers' share of the write time: a tier component takes the largest
    share of ``time`` (:func:`write_time`), on average or in the tail, and the writes waiting for
    garbage collection at a time (the waits over the run's seconds) are at least
    :data:`GC_CAUSE` of the writes in the tiers at a time (``time``'s tier seconds over the
    window's; both by Little's law). {} otherwise."""
    waits = {
        host: float(s) for host, s in result.totals.get("tier_gc_wait_s_by_host", {}).items() if s
    }
    start, end = result.window
    run_s = float(result.meta.get("simulated_s") or 0.0)
    if time is None or not waits or run_s <= 0 or end <= start:
        return {}
    largest = {max(shares, key=lambda c: shares[c]) for shares in (time.mean, time.tail) if shares}
    if not largest & set(_TIER_COMPONENTS):
        return {}
    if sum(waits.values()) / run_s < GC_CAUSE * time.tier_s / (end - start):
        return {}
    return dict(sorted(waits.items(), key=lambda item: -item[1]))


def _gc_words(result: Result, scenario: Scenario, waits: dict[str, float]) -> str:
    """The tiers' garbage-collection ``waits`` (:func:`gc_waits`) as the cause of their share of
    the write time, and how the tier's garbage collection works; "" without such waits."""
    if not waits:
        return ""
    tier = scenario.cluster.tier
    kind = f"{_profile(tier.profile)}{tier.kind}"
    seconds = format_figure(sum(waits.values()), 3)
    if len(waits) == 1:
        whose = f"The {next(iter(waits))} {kind} tier's writes waited {seconds} s"
        pool = "its clean pool"
    else:
        each = ", ".join(f"{host} {format_figure(s, 3)} s" for host, s in list(waits.items())[:3])
        more = f" and {len(waits) - 3} more hosts" if len(waits) > 3 else ""
        whose = f"The {kind} tiers' writes waited {seconds} s ({each}{more})"
        pool = "their clean pools"
    run_s = float(result.meta["simulated_s"])  # gc_waits found it positive
    # by Little's law, the summed wait over the run's length is the writes waiting on average
    waiting = format_figure(sum(waits.values()) / run_s, 3)
    said = (
        f"{whose} in all over the {format_figure(run_s, 3)} s run ({waiting} writes waiting at a "
        f"time) for garbage collection once {pool} ran out{_dry_words(result, waits)}."
    )
    rate = gc_refill_rate(tier) if tier.clean_pool is not None else math.inf
    if not math.isfinite(rate):
        return said
    frees = f"Garbage collection then frees room at {format_figure(rate / 1e6, 3)} MB/s"
    if tier.gc_pass:
        stall = format_figure(tier.gc_pass / rate * 1e3, 3)
        return (
            f"{said} {frees} in foreground passes of {human_size(tier.gc_pass, 3)}, each "
            f"stalling the tier's writes for {stall} ms or more: the slowest writes are the ones "
            "that met a pass."
        )
    return (
        f"{said} {frees}, each write waiting for its own bytes: past the cliff, writes go no "
        "faster than that."
    )


def _dry_words(result: Result, waits: dict[str, float]) -> str:
    """When the first of the hosts in ``waits`` ran short of clean space (the run's
    ``tier_ran_dry_s_by_host``): `` at 1.41 s``, `` (host2 first, at 1.38 s)``; "" without it."""
    dry = {h: float(t) for h, t in result.totals.get("tier_ran_dry_s_by_host", {}).items()}
    known = sorted((dry[h], h) for h in waits if h in dry)
    if not known:
        return ""
    at, host = known[0]
    if len(waits) == 1:
        return f" at {format_figure(at, 3)} s"
    return f" ({host} first, at {format_figure(at, 3)} s)"


def bottleneck_line(result: Result) -> str:
    """The ``bottleneck:`` line of ``simcache run``: the facts of :func:`bottleneck_sentence`
    with the components' labels (``array``, ``host0.peer.tx``)."""
    read = _read(result)
    found, waits = read.found, read.gc
    name, utilization = found.busiest, found.busiest_utilization
    gc = ""
    if len(waits) == 1:
        host, seconds = next(iter(waits.items()))
        gc = (
            f"; {host}.tier's writes waited {format_figure(seconds, 3)} s in all over the run for "
            "garbage collection"
        )
    elif waits:
        gc = (
            f"; the tiers' writes waited {format_figure(sum(waits.values()), 3)} s in all over "
            "the run for garbage collection ("
            + ", ".join(f"{host}.tier {format_figure(s, 3)} s" for host, s in waits.items())
            + ")"
        )
    if found.past_cliff:  # garbage collection holds the writes: the tier's units look idle
        return (
            f"bottleneck: {', '.join(found.parts)} past the clean-pool cliff (garbage collection "
            f"holds the writes; see the warnings); busiest by utilization: {name} at "
            f"{utilization:.0%}{gc}"
        )
    if found.starved:  # the tier holds its destage reads back: the destage path looks idle
        return (
            f"bottleneck: {', '.join(found.parts)} holding back its destage reads (the destage "
            f"backlog grows while the destage path has room; see the notes); busiest by "
            f"utilization: {name} at {utilization:.0%}{gc}"
        )
    said = f"bottleneck: {name} at {utilization:.0%} mean utilization"
    if read.at_peak:
        said += f", {read.peak.utilization:.0%} at its peak ({peak_words(read.peak)})"
    if read.spared is not None:
        said += f"; {_spared_words(result, name, read.spared)}"
    if read.alike:
        said += f"; as busy: {_as_busy_words(read.alike, None)}"
    return said + gc


def time_shares(
    latency: np.ndarray, parts: dict[str, np.ndarray], tail: float | None = None
) -> dict[str, float]:
    """Each component's share of the total time of the writes (those with latency at or past
    ``tail`` ms, if given)."""
    chosen = latency >= tail if tail is not None else np.ones(len(latency), dtype=bool)
    return _shares({name: float(values[chosen].sum()) for name, values in parts.items()})


def _shares(sums: dict[str, float]) -> dict[str, float]:
    """Each of ``sums`` as a share of their total (0 for all when the total is 0)."""
    total = sum(sums.values())
    return {name: value / total if total > 0 else 0.0 for name, value in sums.items()}


def tail_sentence(result: Result) -> str:
    """Which component the write time goes to at the mean and in the slowest 1% (writes at or
    past the p99), and whether the answer depends on the percentile. The tail's shares need 10
    writes past the p99 (:func:`simcache.results.validity.samples_needed`, 1,000 writes); with
    fewer it says so."""
    return _tail_words(result, write_time(result))


def _tail_words(result: Result, time: WriteTime | None) -> str:
    if time is None:
        return "No writes were measured."
    mean = time.mean
    first = max(mean, key=lambda c: mean[c])
    if not time.from_records:
        return (
            f"Where write time goes: {COMPONENT_WORDS[first]} takes the largest share on average "
            f"({mean[first]:.0%}); the slowest 1%'s shares need the per-I/O records, which this "
            "run did not keep."
        )
    if time.tail is None:
        needed = samples_needed(TAIL_PERCENTILE)
        return (
            f"Where write time goes: {COMPONENT_WORDS[first]} takes the largest share on average "
            f"({mean[first]:.0%}); "
            f"{time.writes:,} writes are too few to tell the p99's ({needed:,} needed)."
        )
    tail = time.tail
    last = max(tail, key=lambda c: tail[c])
    p99 = time.p99_ms
    shown = f"{p99:,.0f}" if p99 >= 1000 else f"{p99:.3g}"
    summary = result.summary
    bounds = summary.loc[(summary["group"] == "all") & (summary["op"] == "write"), "lower_bounds"]
    # the writes still unfinished at the end could lie past the p99 (the summary's p99 is then a
    # lower bound): the shares are of the completed writes only, and their own p99 differs
    censored = any("p99_ms" in str(cell).split() for cell in bounds)
    unfinished = int((result.measured_unfinished["op"] == "write").sum())
    completed = (
        f"completed writes (their own p99, {shown} ms: {unfinished:,} writes still unfinished at "
        "the end are in no share)"
        if censored
        else f"writes (at or past the p99, {shown} ms)"
    )
    slowest = f"the slowest 1% of {completed}"
    if first == last:
        return (
            f"Where write time goes: {COMPONENT_WORDS[first]} takes the largest share, "
            f"{mean[first]:.0%} on average "
            f"and {tail[last]:.0%} in {slowest}."
        )
    return (
        f"Where write time goes depends on the percentile: on average {COMPONENT_WORDS[first]} "
        "takes the largest share "
        f"({mean[first]:.0%}), but in {slowest} {COMPONENT_WORDS[last]} does ({tail[last]:.0%}); "
        "to cut the p99, look there."
    )
