"""Driving a :class:`~simcache.sim.components.tier.Tier` directly (every completion is known at
submission): one operation at a time, or a closed loop of many."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from simcache.sim.components.tier import Tier


def qd1(tier: Tier, is_write: bool, sizes: Sequence[int]) -> list[tuple[int, float]]:
    """Each of ``sizes`` (three rounds) issued when the last completed: (size, its latency)."""
    now, out = 0.0, []
    for size in list(sizes) * 3:
        finish = tier.submit(now, size, is_write)
        out.append((size, finish - now))
        now = finish
    return out


def closed_loop_done(tier: Tier, size: int, is_write: bool, in_flight: int, until: float) -> int:
    """Operations of ``size`` bytes completed by ``until`` (s) with ``in_flight`` always
    outstanding from time 0 (each completion submits the next at once)."""
    pending = [tier.submit(0.0, size, is_write) for _ in range(in_flight)]
    heapq.heapify(pending)
    done = 0
    while pending[0] < until:
        done += 1
        heapq.heapreplace(pending, tier.submit(pending[0], size, is_write))
    return done
