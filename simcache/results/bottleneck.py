"""The bottleneck in words: a component's name as people read it, and the sentence that names the
busiest one and where the write time goes, at the mean and in the tail (the writes at or past the
p99).

Which part a run's bottleneck is (:func:`run_bottleneck`) is decided here once, for the app's
single-run view, the HTML report (:mod:`simcache.report`) and the sweep's rows
(:func:`simcache.runs.sweep.result_row`), so all say the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from simcache.physics.cluster import PortName
from simcache.results.result import Result
from simcache.results.validity import samples_needed
from simcache.sim.collect import COMPONENTS
from simcache.spec import Scenario

__all__ = [
    "BUSY",
    "COMPONENT_WORDS",
    "SATURATED",
    "TAIL_PERCENTILE",
    "Bottleneck",
    "bottleneck_sentence",
    "component_name",
    "run_bottleneck",
    "tail_sentence",
    "time_shares",
]

SATURATED = 0.9
"""Mean utilization from which the bottleneck is called saturated."""
BUSY = 0.7
"""Mean utilization from which the bottleneck is called busy (queueing there adds latency)."""
TAIL_PERCENTILE = 99.0
"""The tail is the writes at or past this percentile of write latency."""
COMPONENT_WORDS = {
    "local_tier_ms": "the local tier",
    "network_ms": "sending replicas over the network",
    "peer_tier_ms": "the peer tier",
    "destage_wait_ms": "waiting for destage buffer space",
    "array_ms": "the array",
}
"""The latency components of a write (:data:`simcache.sim.collect.COMPONENTS`) in words."""


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


def run_bottleneck(result: Result) -> Bottleneck:
    """The bottleneck of ``result``: first the tiers past their clean-pool cliff (its ``gc_cliff``
    warnings), whose utilization cannot show it, else the busiest part by mean utilization.

    The busiest part names an overloaded one when there is one: an ``overload`` warning is given
    for every part pinned (97% or more) while work piles up, the busiest among them too.
    """
    busiest, utilization = result.bottleneck()
    cliffs = tuple(dict.fromkeys(w.component for w in result.warnings if w.kind == "gc_cliff"))
    if not cliffs:
        return Bottleneck((busiest,), utilization, busiest, utilization, past_cliff=False)
    means = result.window_means()
    held = max(float(means.get(f"util.{tier}", 0.0)) for tier in cliffs)
    return Bottleneck(cliffs, held, busiest, utilization, past_cliff=True)


def component_name(component: str, scenario: Scenario) -> str:
    """A utilization column's component (``host0.peer.tx``, ``host0.peer1.tx``, ``array``) in
    words."""
    cluster = scenario.cluster
    port = PortName.parse(component)
    if port is not None:
        profile = {
            "peer": cluster.peer_link.profile,
            "fabric": cluster.peer_link.profile,
            "storage": cluster.storage_link.profile,
        }
        return port.describe(profile.get(port.role))
    tier = re.match(r"^host(\d+)\.tier$", component)
    if tier:
        return f"the host{tier.group(1)} {_profile(cluster.tier.profile)}{cluster.tier.kind} tier"
    if component == "array":
        return f"the array's {scenario.array.spindles} spindles"
    return component


def _profile(name: str | None) -> str:
    return f"{name} " if name else ""


def bottleneck_sentence(result: Result, scenario: Scenario) -> str:
    """``"Bottleneck: the host0 1GbE peer link (sending), at 97% mean utilization (saturated;
    ...)."``."""
    found = run_bottleneck(result)
    where, utilization = component_name(found.busiest, scenario), found.busiest_utilization
    if found.past_cliff:  # garbage collection holds the writes: the tier's units look idle
        tiers = ", ".join(component_name(c, scenario) for c in found.parts)
        return (
            f"Bottleneck: {tiers}, past the clean-pool cliff: garbage collection holds the writes "
            "while the units look idle, so no utilization shows it (the busiest part by "
            f"utilization is {where}, at {utilization:.0%}). {tail_sentence(result)}"
        )
    if utilization >= SATURATED:
        verdict = (
            "saturated; it sets the latency, and more load or a faster part there changes the "
            "answer"
        )
    elif utilization >= BUSY:
        verdict = "busy; queueing there is already adding latency"
    else:
        verdict = "the busiest part, with headroom; nothing is close to its limit"
    return (
        f"Bottleneck: {where}, at {utilization:.0%} mean utilization ({verdict}). "
        f"{tail_sentence(result)}"
    )


def time_shares(
    latency: np.ndarray, parts: dict[str, np.ndarray], tail: float | None = None
) -> dict[str, float]:
    """Each component's share of the total time of the writes (those with latency at or past
    ``tail`` ms, if given)."""
    chosen = latency >= tail if tail is not None else np.ones(len(latency), dtype=bool)
    sums = {name: float(values[chosen].sum()) for name, values in parts.items()}
    total = sum(sums.values())
    return {name: value / total if total > 0 else 0.0 for name, value in sums.items()}


def tail_sentence(result: Result) -> str:
    """Which component the write time goes to at the mean and in the slowest 1% (writes at or
    past the p99), and whether the answer depends on the percentile. The tail's shares need 10
    writes past the p99 (:func:`simcache.results.validity.samples_needed`, 1,000 writes); with
    fewer it says so."""
    writes = result.measured
    writes = writes[writes["op"] == "write"]
    if not len(writes):
        return "No writes were measured."
    latency = writes["latency_ms"].to_numpy(dtype=float)
    parts = {c: writes[c].to_numpy(dtype=float) for c in COMPONENTS}
    mean = time_shares(latency, parts)
    first = max(mean, key=lambda c: mean[c])
    needed = samples_needed(TAIL_PERCENTILE)
    if len(latency) < needed:
        return (
            f"Where write time goes: {COMPONENT_WORDS[first]} takes the largest share on average "
            f"({mean[first]:.0%}); "
            f"{len(latency):,} writes are too few to tell the p99's ({needed:,} needed)."
        )
    p99 = float(np.percentile(latency, TAIL_PERCENTILE))
    tail = time_shares(latency, parts, p99)
    last = max(tail, key=lambda c: tail[c])
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
