"""A tier's clean pool draining through a run that ends before it is empty (``gc_ahead``): the
flash cliff still ahead, said as a destage buffer still filling is
(:mod:`simcache.results.filling`).

A flash tier takes writes at its fresh rate while clean (pre-erased) space lasts, then no faster
than garbage collection frees room (:func:`simcache.physics.cluster.gc_refill_rate`). A run that
ends before the pool is gone measures the fresh rate only: a 2026 planner's 20 s run of a
QLC-class tier at 3 GB/s of writes saw 0.04 ms writes and 800,000 IOPS with no word that the pool
would run out a few seconds later (review 66d, F3). Past the cliff, ``gc_cliff`` and the
bottleneck's garbage-collection words take over; this note is for the runs that stop short of it.

The pool's level at the end is the tier's own (``tier_clean_bytes_by_host``); its level at the
start is the tier's depth (``clean_pool``), or its capacity when it starts ``fresh``. Garbage
collection refills the pool while it is below its depth, so a pool lower at the end than at the
start was written faster than garbage collection refills it: at that net rate it runs out, and the
note says when.
"""

from __future__ import annotations

from simcache.base.units import format_figure, human_size
from simcache.physics.cluster import clean_pool_at_start, gc_refill_rate
from simcache.results.assessed import AssessedRun, ValidityWarning, hosts_words

__all__ = ["DRAINED", "gc_ahead"]

DRAINED = 0.01
"""Share of the pool at the start (0 to 1) a run must have taken, net of refill, for the note: less
is a pool that garbage collection keeps up with (its level at the end a write or two below full)."""


def gc_ahead(result: AssessedRun) -> list[ValidityWarning]:
    """The hosts whose tier's clean pool drained through the run without running out (no write
    waited for garbage collection), each with when, at the run's net rate, it would: one warning
    for all of them, the soonest first; none for a tier without a clean pool."""
    scenario = result.scenario
    left = result.totals.get("tier_clean_bytes_by_host", {})
    run_s = float(result.meta.get("simulated_s") or 0.0)
    if scenario is None or not left or run_s <= 0:
        return []
    tier = scenario.cluster.tier
    if tier.clean_pool is None:
        return []
    start = clean_pool_at_start(tier)
    waited = result.totals.get("tier_gc_wait_s_by_host", {})
    draining = {
        host: float(end)
        for host, end in left.items()
        if not waited.get(host) and 0 < float(end) < start * (1 - DRAINED)
    }
    if not draining:
        return []
    # seconds after the end until the pool is empty, at the run's mean net drain
    ahead = {host: end / ((start - end) / run_s) for host, end in draining.items()}
    hosts = sorted(ahead, key=lambda host: ahead[host])
    first = hosts[0]
    rate = (start - draining[first]) / run_s
    refill = gc_refill_rate(tier)
    kind = f"{tier.profile} " if tier.profile else ""
    pool = "fresh pool" if tier.condition == "fresh" else "clean pool"
    whose = (
        f"{first}'s {kind}tier"
        if len(hosts) == 1
        else f"the {kind}tiers of {hosts_words(hosts)} (the soonest, {first}'s)"
    )
    message = (
        f"the run ({format_figure(run_s, 3)} s) ends before {whose} ran out of clean space: its "
        f"{pool} ({human_size(start, 3)} at the start) held {human_size(draining[first], 3)} at "
        f"the end, drained at {format_figure(rate / 1e6, 3)} MB/s net of garbage collection's "
        f"refill, so it runs out about {format_figure(ahead[first], 2)} s later; from then on the "
        f"tier's writes go no faster than garbage collection frees room "
        f"({format_figure(refill / 1e6, 3)} MB/s) and wait for it: its write figures hold for "
        "bursts shorter than that, not for sustained writing (run past the cliff to see it)"
    )
    component = ",".join(f"{host}.tier" for host in hosts)
    return [ValidityWarning("gc_ahead", component, "short", message)]
