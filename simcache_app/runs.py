"""Simulations and sweeps for the page, cached across reruns and sessions.

The cache key is the scenario's JSON plus seed and duration (and, for a
sweep, the grid and seeds), so returning to an earlier setting is a cache hit.
The progress bar is created *inside* each cached function: Streamlit replays
a cached function's elements on a hit, and it can only do so for elements the
function created itself.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import streamlit as st

import simcache
from simcache.sweep import SweepProgress

CACHE_ENTRIES = 64
IN_PROCESS_SECONDS = 30.0
"""Sweeps of at most this many simulated seconds in all run in this process: starting worker
processes (each imports simcache, pandas and scipy) would take longer than the runs."""


def run_key(scenario: simcache.Scenario, seed: int, duration: float) -> str:
    """What identifies one simulation: the scenario's JSON, the seed and the duration."""
    return json.dumps([scenario.model_dump_json(), seed, duration])


def simulate(scenario: simcache.Scenario, seed: int, duration: float, label: str = "Simulating") -> simcache.Result:
    """:func:`simcache.simulate` with a progress bar, cached on the scenario's JSON, seed and duration."""
    return _simulate(scenario.model_dump_json(), seed, duration, _scenario=scenario, _label=label)


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def _simulate(scenario_json: str, seed: int, duration: float, _scenario: simcache.Scenario, _label: str) -> simcache.Result:
    bar = st.progress(0.0, text=f"{_label}: {duration:g} simulated seconds")
    result = simcache.simulate(_scenario, seed=seed, duration=duration, progress=_throttled(bar.progress))
    bar.empty()
    return result


def sweep(scenario: simcache.Scenario, grid: dict[str, list[Any]], seeds: Sequence[int], duration: float) -> pd.DataFrame:
    """:func:`simcache.sweep` with a progress bar, cached on the scenario's JSON, grid, seeds and duration.

    Large sweeps use one process per core; small ones run here (see :data:`IN_PROCESS_SECONDS`).
    """
    return _sweep(scenario.model_dump_json(), json.dumps(grid), tuple(seeds), duration, _scenario=scenario)


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def _sweep(scenario_json: str, grid_json: str, seeds: tuple[int, ...], duration: float, _scenario: simcache.Scenario) -> pd.DataFrame:
    grid = json.loads(grid_json)
    tasks = len(seeds) * math.prod(len(values) for values in grid.values())
    bar = st.progress(0.0, text=f"Sweeping: {tasks} simulations")

    def advance(state: SweepProgress) -> None:
        eta = f", about {state.eta_s:.0f} s left" if math.isfinite(state.eta_s) else ""
        bar.progress(state.done / state.total, text=f"Sweeping: {state.done} of {state.total} simulations done{eta}")

    workers = 1 if tasks * duration <= IN_PROCESS_SECONDS else max(1, min(os.cpu_count() or 1, tasks))
    table = simcache.sweep(_scenario, grid, seeds=seeds, duration=duration, workers=workers, progress=advance)
    bar.empty()
    return table


def _throttled(update: Callable[[float], Any], step: float = 0.05) -> Callable[[float], None]:
    """Forward progress only every ``step`` of the way: each update is a message to the browser."""
    shown = [-1.0]

    def report(fraction: float) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        if fraction - shown[0] >= step or fraction >= 1.0:
            shown[0] = fraction
            update(fraction)

    return report
