"""A read cache still warming through the measured window (``severity == "short"``): the
``warming`` note of :mod:`simcache.results.validity`.

A host's read cache starts empty unless the scenario says ``cluster.cache.warm = true``. While it
fills, each read is likelier to hit than the one before, so a group's read figures over the window
are an average over a cache growing warmer: neither the cold cache's nor the steady state's.
:func:`warming` tests each group's read hit ratio per sample interval for a rise through the window
with the trend test of :mod:`simcache.results.trend` (a significant slope, t at least
:data:`~simcache.results.trend.T_CRITICAL`) and a fitted rise of at least :data:`WARMING_RISE`, and
names the groups that pass, with how their reads' mean latency moved from the window's first quarter
to its last.

It reads the completed I/Os' records; a run without records (streamed) keeps no hit counts per
interval, so it is not tested.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simcache.base.units import format_figure
from simcache.results.assessed import AssessedRun, ValidityWarning, window_series
from simcache.results.trend import MIN_SAMPLES, T_CRITICAL, trend

__all__ = ["WARMING_RISE", "warming"]

WARMING_RISE = 0.05
"""Smallest fitted rise of a group's read hit ratio over the window (5 points of 100) that is
reported: smaller ones move a read mean by less than a twentieth of a miss's cost."""

_HITS = ("hit", "remote_hit")  # the read paths served from a host's read cache


def warming(result: AssessedRun) -> list[ValidityWarning]:
    """One ``warming`` note naming every group whose read hit ratio rises through the window, or
    none: see the module's text."""
    cache = result.meta["scenario"]["cluster"].get("cache") or {}
    series = window_series(result)
    if cache.get("warm") or result.stream is not None or len(series) < MIN_SAMPLES:
        return []
    start, end = result.window
    records = result.records
    reads = records[(records["op"] == "read") & (records["issue_s"] > start)]
    if not len(reads):
        return []
    edges = np.concatenate(([start], series.index.to_numpy(dtype=float)))
    found = []
    for group in [g["name"] for g in result.meta["scenario"]["groups"]]:
        mine = reads[reads["group"] == group]
        rise = _hit_rise(mine, edges)
        if rise is not None:
            found.append((group, rise, _quarter_means(mine, start, end)))
    if not found:
        return []
    said = "; ".join(
        f"group {group}'s reads hit {low:.0%} of the time at the window's start and {high:.0%} "
        f"at its end (fitted), their mean {format_figure(first, 3)} ms in its first quarter and "
        f"{format_figure(last, 3)} ms in its last"
        for group, (low, high), (first, last) in found
    )
    return [
        ValidityWarning(
            "warming",
            ",".join(f"reads.{group}" for group, _, _ in found),
            "short",
            f"the read cache is still warming through the measured window: {said}. The read "
            "figures average a cache growing warmer, not its steady state: start the caches "
            "warm (cluster.cache.warm = true, each VM's disk cached from the first byte) or warm "
            "up for longer",
        )
    ]


def _hit_rise(reads: pd.DataFrame, edges: np.ndarray) -> tuple[float, float] | None:
    """The fitted hit ratio at the window's first and last sample when it rises by the rule (a
    sample interval's ratio over the reads issued in it; intervals without reads left out), else
    None."""
    hit = reads["path"].isin(_HITS).to_numpy()
    interval = np.searchsorted(edges, reads["issue_s"].to_numpy(dtype=float), side="left") - 1
    counts = np.bincount(interval, minlength=len(edges) - 1)[: len(edges) - 1]
    hits = np.bincount(interval, weights=hit, minlength=len(edges) - 1)[: len(edges) - 1]
    kept = counts > 0
    if kept.sum() < MIN_SAMPLES:
        return None
    times = edges[1:][kept]
    fit = trend(times, hits[kept] / counts[kept])
    if fit.t < T_CRITICAL or fit.rise < WARMING_RISE:
        return None
    centre = times.mean()
    return (
        max(0.0, fit.mean + fit.slope * (times[0] - centre)),
        min(1.0, fit.mean + fit.slope * (times[-1] - centre)),
    )


def _quarter_means(reads: pd.DataFrame, start: float, end: float) -> tuple[float, float]:
    """The reads' mean latency (ms) over those issued in the window's first quarter and in its
    last."""
    issued = reads["issue_s"].to_numpy(dtype=float)
    latency = reads["latency_ms"].to_numpy(dtype=float)
    quarter = (end - start) / 4
    first = latency[issued <= start + quarter]
    last = latency[issued > end - quarter]
    return (
        float(first.mean()) if len(first) else float("nan"),
        float(last.mean()) if len(last) else float("nan"),
    )
