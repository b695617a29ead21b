"""Simulations and sweeps for the page, cached across reruns and sessions.

The cache key is the scenario's JSON plus seed and duration (and, for a
sweep, the grid and seeds), so returning to an earlier setting is a cache hit.
The progress bar is created *inside* each cached function: Streamlit replays
a cached function's elements on a hit, and it can only do so for elements the
function created itself.

A simulation runs in a background thread (:class:`_Job`, kept in the session's
state by run key) while the script polls it every :data:`POLL_S` seconds and
moves the progress bar; a **Stop simulation** button above the bar cancels its token.
Clicking it reruns the script (Streamlit interrupts the poll at its next
element update), the button's callback cancels the run, the run ends within
milliseconds at the simulated time it reached, and the rerun picks the job up
again and shows the partial result with a warning ("Stopped at simulated time
t of T s"). A partial result is never cached. The token is a lease
(:class:`_Lease`): a run that no script run has polled for :data:`LEASE_S`
seconds (the page was closed, or it moved on to other settings) cancels
itself, so nothing stays busy after the session ends.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

import simcache
from simcache.control import Cancel, Stopped, check_work, stopped_at
from simcache.sweep import SweepProgress

CACHE_ENTRIES = 64
IN_PROCESS_SECONDS = 30.0
"""Sweeps of at most this many simulated seconds in all run in this process: starting worker
processes (each imports simcache, pandas and scipy) would take longer than the runs."""


def run_key(scenario: simcache.Scenario, seed: int, duration: float) -> str:
    """What identifies one simulation: the scenario's JSON, the seed and the duration."""
    return json.dumps([scenario.model_dump_json(), seed, duration])


POLL_S = 0.1
"""Seconds between two looks at a running simulation (progress bar, Stop button)."""
LEASE_S = 3.0
"""A run nobody has polled for this many seconds cancels itself (the page was closed or moved on)."""
WALL_LIMIT_S: float | None = None
"""Most wall-clock seconds one run of the page may take before it stops with a partial result (``None``: no limit)."""


class _Lease(Cancel):
    """A cancel token that also cancels itself when not renewed for ``seconds`` (see :data:`LEASE_S`)."""

    def __init__(self, seconds: float, deadline: float | None = None):
        super().__init__(deadline)
        self.seconds = seconds
        self.expires = time.monotonic() + seconds

    def renew(self) -> None:
        self.expires = time.monotonic() + self.seconds

    @property
    def cancelled(self) -> bool:
        if not super().cancelled and time.monotonic() > self.expires:
            self.cancel(f"no page polled it for {self.seconds:g} s")
        return super().cancelled


@dataclass
class _Job:
    """One simulation running in a background thread for this session."""

    token: _Lease
    fraction: float = 0.0
    result: simcache.Result | None = None
    error: BaseException | None = None
    thread: threading.Thread = field(init=False)

    def start(self, scenario: simcache.Scenario, seed: int, duration: float) -> None:
        self.thread = threading.Thread(target=self._run, args=(scenario, seed, duration), name="simcache-run", daemon=True)
        self.thread.start()

    def _run(self, scenario: simcache.Scenario, seed: int, duration: float) -> None:
        def advance(fraction: float) -> None:
            self.fraction = fraction

        try:
            self.result = simcache.simulate(scenario, seed=seed, duration=duration, progress=advance, cancel=self.token)
        except BaseException as exc:  # handed to the script thread, which raises it
            self.error = exc


def _jobs() -> dict[str, _Job]:
    jobs: dict[str, _Job] = st.session_state.setdefault("runs.jobs", {})
    return jobs


def has_job(key: str) -> bool:
    """Whether a simulation with this :func:`run_key` is running (or stopped, not yet shown) in this session."""
    return key in _jobs()


def finished(result: simcache.Result) -> bool:
    """Whether ``result`` covers its whole run (not stopped early)."""
    return stopped_at(result) is None


def _forget_abandoned() -> None:
    """Drop jobs that ended and that no script run has looked at for a lease and more (their settings were left)."""
    jobs = _jobs()
    now = time.monotonic()
    for key, job in list(jobs.items()):
        if not job.thread.is_alive() and now > job.token.expires + LEASE_S:
            del jobs[key]


def _page_open() -> bool:
    """Whether this script run's browser session is still connected (always true without a Streamlit server, as
    under AppTest). Streamlit may keep running a script whose tab was closed: its run must not go on."""
    if not runtime.exists():
        return True
    context = get_script_run_ctx()
    return context is None or runtime.get_instance().is_active_session(context.session_id)


def _stop(key: str) -> None:
    job = _jobs().get(key)
    if job is not None:
        job.token.cancel("stopped from the page")


def simulate(scenario: simcache.Scenario, seed: int, duration: float, label: str = "Simulating") -> simcache.Result:
    """:func:`simcache.simulate` with a progress bar and a Stop button, cached on the scenario's JSON, seed and duration.

    A stopped run returns its partial result (not cached) under a warning that says so. Raises
    :class:`~simcache.errors.RunTooLargeError` before anything runs if the run is past the limits.
    """
    key = run_key(scenario, seed, duration)
    _forget_abandoned()
    if key not in _jobs():
        check_work(scenario.with_duration(duration).with_seed(seed))
    slot = st.empty()
    slot.button(
        "Stop simulation",
        key=f"stop-{hashlib.sha256((key + label).encode()).hexdigest()[:16]}",  # the same run may show in two views
        on_click=_stop,
        args=(key,),
        help="Stop this simulation: the page shows what was simulated so far, marked partial.",
    )
    try:
        result = _simulate(scenario.model_dump_json(), seed, duration, _scenario=scenario, _label=label)
    except Stopped as stopped:
        partial: simcache.Result = stopped.result
        slot.warning(stop_text(partial))
        return partial
    slot.empty()
    return result


def stop_text(result: simcache.Result) -> str:
    """The warning over a stopped run's figures."""
    at = stopped_at(result)
    return (
        f"**Partial result.** Stopped at simulated time {at:.2f} s of {result.meta['planned_s']:g} s "
        f"({result.meta['stop_reason']}): every figure below covers 0 to {at:.2f} s only."
    )


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def _simulate(scenario_json: str, seed: int, duration: float, _scenario: simcache.Scenario, _label: str) -> simcache.Result:
    key = json.dumps([scenario_json, seed, duration])  # run_key()
    jobs = _jobs()
    job = jobs.get(key)
    if job is None:
        job = jobs[key] = _Job(_Lease(LEASE_S, WALL_LIMIT_S))
        job.start(_scenario, seed, duration)
    text = f"{_label}: {duration:g} simulated seconds"
    bar = st.progress(0.0, text=text)
    while job.thread.is_alive():
        if not _page_open():
            job.token.cancel("the page was closed")
        job.token.renew()
        job.thread.join(POLL_S)
        # Every poll sends an update: that is where Streamlit interrupts the script on a click (the job stays for
        # the rerun to pick up), so it must come often, not only when the bar moves.
        bar.progress(min(max(job.fraction, 0.0), 1.0), text=text)
    del jobs[key]
    bar.empty()
    if job.error is not None:
        raise job.error
    assert job.result is not None
    if not finished(job.result):
        raise Stopped(job.result.meta["stop_reason"], job.result)  # not cached
    return job.result


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
