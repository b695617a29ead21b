"""A read cache still warming through the measured window (``severity == "short"``): the
``warming`` note of :mod:`simcache.results.validity`.

A host's read cache starts empty unless the scenario says ``cluster.cache.warm = true``. While it
fills, each read is likelier to hit than the one before, so a group's read figures over the window
are an average over a cache growing warmer: neither the cold cache's nor the steady state's.
:func:`warming` tests each group's read hit ratio per sample interval for a rise through the window
with the trend test of :mod:`simcache.results.trend` (a significant slope, t at least
:data:`~simcache.results.trend.T_CRITICAL`) and a fitted rise of at least :data:`WARMING_RISE`, and
names the groups that pass, with how their reads' mean latency moved from the window's first fifth
to its last.

It reads the completed reads' records, or a run's stream (:class:`simcache.sim.stream.StreamStats`
counts the reads and their hits per sample interval, and their latency per tenth of the window): the
same figures either way.
"""

from __future__ import annotations

import numpy as np

from simcache.base.units import format_figure
from simcache.results.assessed import AssessedRun, ValidityWarning, window_series
from simcache.results.trend import MIN_SAMPLES, T_CRITICAL, trend
from simcache.sim.stream import BATCHES

__all__ = ["WARMING_RISE", "warming"]

WARMING_RISE = 0.05
"""Smallest fitted rise of a group's read hit ratio over the window (5 points of 100) that is
reported: smaller ones move a read mean by less than a twentieth of a miss's cost."""

_HITS = ("hit", "remote_hit")  # the read paths served from a host's read cache


def warming(result: AssessedRun) -> list[ValidityWarning]:
    """One ``warming`` note naming every group whose read hit ratio rises through the window, or
    none: see the module's text."""
    cache = result.meta["scenario"]["cluster"].get("cache") or {}
    if cache.get("warm") or len(window_series(result)) < MIN_SAMPLES:
        return []
    found = []
    for group, (times, reads, hits, first, last) in _read_figures(result).items():
        rise = _hit_rise(times, reads, hits)
        if rise is not None:
            found.append((group, rise, (first, last)))
    if not found:
        return []
    said = "; ".join(
        f"group {group}'s reads hit {low:.0%} of the time at the window's start and {high:.0%} "
        f"at its end (fitted), their mean {format_figure(first, 3)} ms in its first fifth and "
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


_Figures = tuple[np.ndarray, np.ndarray, np.ndarray, float, float]
"""A group's sample times in the window, its completed reads and read hits by the sample interval
of their issue (the interval ending at each time), and its reads' mean latency (ms) over the
window's first fifth and its last."""


def _read_figures(result: AssessedRun) -> dict[str, _Figures]:
    """Each group's :data:`_Figures`, from the records or from a run's stream (its counts per
    sample interval and per tenth of the window: the same bins either way)."""
    start, end = result.window
    stream = result.stream
    times = np.asarray(stream.times if stream is not None else result.series.index, dtype=float)
    inside = times > start
    groups = [g["name"] for g in result.meta["scenario"]["groups"]]
    figures: dict[str, _Figures] = {}
    if stream is not None:
        if not hasattr(stream, "hits_by_interval"):  # a stream saved by an older simcache
            return {}
        n = len(times)
        issued = np.array(stream.issued_by_interval[:n])
        hits = np.array(stream.hits_by_interval[:n])
        for g, group in enumerate(groups):
            rows = stream.rows_of(np.flatnonzero(stream.vm_group == g), 0)
            counts, sums = stream.batch_count[rows], stream.batch_sum[rows]
            first, last = (_mean(counts[:, part].sum(), sums[:, part].sum()) for part in _FIFTHS)
            figures[group] = (times[inside], issued[inside, 2 * g], hits[inside, g], first, last)
        return figures
    records = result.records
    reads = records[records["op"] == "read"]
    issue = reads["issue_s"].to_numpy(dtype=float)
    hit = reads["path"].isin(_HITS).to_numpy()
    latency = reads["latency_ms"].to_numpy(dtype=float)
    bins = np.searchsorted(times, issue, side="left")  # as StreamStats.add bins them
    tenth = np.clip(
        np.searchsorted(np.linspace(start, end, BATCHES + 1), issue, side="right") - 1,
        0,
        BATCHES - 1,
    )
    measured = issue >= start
    group_of = reads["group"].to_numpy()
    for group in groups:
        mine = group_of == group
        counts = np.bincount(bins[mine], minlength=len(times) + 1)[: len(times)]
        hits = np.bincount(bins[mine & hit], minlength=len(times) + 1)[: len(times)]
        kept = mine & measured
        first, last = (
            _mean(np.isin(tenth[kept], part).sum(), latency[kept][np.isin(tenth[kept], part)].sum())
            for part in _FIFTHS
        )
        figures[group] = (times[inside], counts[inside], hits[inside], first, last)
    return figures


_FIFTHS = (np.arange(0, BATCHES // 5), np.arange(BATCHES - BATCHES // 5, BATCHES))
"""The tenths of the window (a stream's batches) in its first fifth and in its last."""


def _mean(count: float, total: float) -> float:
    return float(total / count) if count else float("nan")


def _hit_rise(times: np.ndarray, reads: np.ndarray, hits: np.ndarray) -> tuple[float, float] | None:
    """The fitted hit ratio at the window's first and last sample when it rises by the rule (a
    sample interval's ratio over the reads issued in it; intervals without reads left out), else
    None."""
    kept = reads > 0
    if kept.sum() < MIN_SAMPLES:
        return None
    times = times[kept]
    fit = trend(times, hits[kept] / reads[kept])
    if fit.t < T_CRITICAL or fit.rise < WARMING_RISE:
        return None
    centre = times.mean()
    return (
        max(0.0, fit.mean + fit.slope * (times[0] - centre)),
        min(1.0, fit.mean + fit.slope * (times[-1] - centre)),
    )
