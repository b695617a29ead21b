"""Analytic estimate of a scenario: queueing approximations and a fluid destage model, in
milliseconds.

:func:`estimate` answers with the figures :func:`simcache.simulate` reports
(the summary table, the utilization of every station under the simulator's
``util.*`` names, the bottleneck) plus a fluid model of each host's destage
buffer, without simulating. The specification of the model, every
approximation it makes, is ``docs/estimate.md``.

The modules, in the order an estimate uses them:

- :mod:`~simcache.estimate.layout`: the scenario's stations, chains, peer ports and
  vMotions (:mod:`~simcache.estimate.theory.stations`, :mod:`~simcache.estimate.chains`,
  :mod:`~simcache.estimate.schedule`), the service times of the hardware
  (:mod:`~simcache.estimate.services`), destage batches (:mod:`~simcache.estimate.batches`),
  every I/O's path (:mod:`~simcache.estimate.paths`) as arrays
  (:mod:`~simcache.estimate.network`) and the read caches (:mod:`~simcache.estimate.readcache`);
- :mod:`~simcache.estimate.solver`: one state's mean value analysis
  (:mod:`~simcache.estimate.theory.mva_step`, :mod:`~simcache.estimate.theory.queueing`), with the
  flushers' drain capacity (:mod:`~simcache.estimate.drain`);
- :mod:`~simcache.estimate.timeline`: the run as pieces of constant state;
- :mod:`~simcache.estimate.overload`: overloads, saturated components and filling destage buffers
  (:class:`EstimateWarning`);
- :mod:`~simcache.estimate.result`: window averages and :class:`Estimate`.

Every module but this one is compiled by mypyc as the ``estimate`` group, apart from the engine's
group (``simcache/native/sources.py``).
"""

from __future__ import annotations

import gc
from typing import Any

from simcache.base.kept import Kept
from simcache.estimate.coverage import not_modelled, scheduling_note
from simcache.estimate.layout import Layout
from simcache.estimate.overload import EstimateWarning
from simcache.estimate.result import DestageFluid, Estimate, NamedBottleneck, summarize
from simcache.estimate.solver import HitRatios, solve_hit_ratios
from simcache.estimate.theory.queueing import mgc_wait, mva_closed
from simcache.estimate.timeline import Timeline
from simcache.spec import Scenario, load_scenario

__all__ = [
    "DestageFluid",
    "Estimate",
    "EstimateWarning",
    "NamedBottleneck",
    "estimate",
    "mgc_wait",
    "mva_closed",
]

# Room for the whole library (127 scenarios and variants in 2026-12), so that estimating it again,
# as a check of the library or bench_estimate.py's warm figure does, finds every one: at 64 (the
# library's 48 when it was set) a pass over the grown library evicted each entry before its turn
# came again, and every warm call was a cold one. An entry holds about 48 KB (the default's
# layout and hit ratios, tracemalloc): 256 of them about 12 MB, and about 30,000 more objects for
# the cyclic collector to walk. tests/estimate/test_estimate.py checks the library fits.
_PREPARED_LIMIT = 256
_PREPARED: Kept[tuple[Scenario, Layout, HitRatios]] = Kept(_PREPARED_LIMIT)


def _prepared(scenario: Scenario) -> tuple[Layout, HitRatios]:
    """The layout of ``scenario`` and its read hit ratios, kept for the scenarios estimated last
    (by identity: scenarios are frozen; an entry holds its scenario, so its id is not reused while
    kept), the least recently estimated leaving first."""
    entry = _PREPARED.get(id(scenario))
    if entry is not None and entry[0] is scenario:
        return entry[1], entry[2]
    layout = Layout(scenario)
    hits = solve_hit_ratios(layout)
    _PREPARED.put(id(scenario), (scenario, layout, hits))
    return layout, hits


def estimate(scenario: Scenario | str | Any, *, duration: float | None = None) -> Estimate:
    """Analytic estimate of ``scenario`` (a Scenario, path, built-in name or dict), in a few
    milliseconds.

    ``duration`` (s) overrides ``run.duration`` and cuts the warm-up as
    :func:`simcache.simulate` does (:meth:`Scenario.cut_warmup`). See ``docs/estimate.md`` for the
    model and its approximations. The layout of the last 256 scenario objects estimated
    (their network, the read hit ratios and the all-groups-on solution) is kept:
    estimating the same object again skips that work, with the same answer.
    """
    scenario = load_scenario(scenario)
    if duration is not None:
        scenario = scenario.with_duration(
            duration, source="the duration argument (estimate(duration=...))"
        )
    notes: list[str] = []
    if any(group.workload.trace is not None for group in scenario.groups):
        # reads trace files: only for trace workloads
        from simcache.workloads.replay import mean_equivalent

        scenario, notes = mean_equivalent(scenario)
    profiled = [
        group.name
        for group in scenario.groups
        if group.workload.duty_cycle is not None and group.workload.duty_cycle.shape == "profile"
    ]
    if profiled:
        notes.append(
            f"{', '.join(profiled)}: a profile duty cycle is estimated at its mean rate (iops); "
            "its bursts are not modelled, "
            "so queueing in the busy intervals is underestimated"
        )
    collecting = gc.isenabled()
    # an estimate allocates many small arrays and objects; cyclic GC passes over them cost ~20%
    gc.disable()
    try:
        layout, hits = _prepared(scenario)
        pieces = Timeline(layout, hits).run()
        result = summarize(layout, pieces)
        result.notes.extend(notes + not_modelled(scenario))
        if any(d.peak_backlog_bytes > 0 for d in result.destager) and (
            note := scheduling_note(scenario)
        ):
            result.notes.append(note)
        return result
    finally:
        if collecting:
            gc.enable()
