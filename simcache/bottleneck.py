"""The bottleneck in words: a component's name as people read it, and the sentence that names the busiest one.

Shared by the app's single-run view and the HTML report (:mod:`simcache.report`), so both say the same.
"""

from __future__ import annotations

import re

from simcache.physics import PortName
from simcache.results import Result
from simcache.scenario import Scenario

__all__ = ["BUSY", "SATURATED", "bottleneck_sentence", "component_name"]

SATURATED = 0.9
"""Mean utilization from which the bottleneck is called saturated."""
BUSY = 0.7
"""Mean utilization from which the bottleneck is called busy (queueing there adds latency)."""


def component_name(component: str, scenario: Scenario) -> str:
    """A utilization column's component (``host0.peer.tx``, ``host0.peer1.tx``, ``array``) in words."""
    cluster = scenario.cluster
    port = PortName.parse(component)
    if port is not None:
        profile = {"peer": cluster.peer_link.profile, "fabric": cluster.peer_link.profile, "storage": cluster.storage_link.profile}
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
    """``"Bottleneck: the host0 1GbE peer link (sending), at 97% mean utilization (saturated; ...)."``."""
    component, utilization = result.bottleneck()
    where = component_name(component, scenario)
    if utilization >= SATURATED:
        verdict = "saturated; it sets the latency, and more load or a faster part there changes the answer"
    elif utilization >= BUSY:
        verdict = "busy; queueing there is already adding latency"
    else:
        verdict = "the busiest part, with headroom; nothing is close to its limit"
    return f"Bottleneck: {where}, at {utilization:.0%} mean utilization ({verdict})."
