"""Simulations and sweeps for the page, cached across reruns and sessions.

The cache key is the scenario's JSON plus seed and duration (and, for a
sweep, the grid and seeds), so returning to an earlier setting is a cache hit.
The progress bar is created *inside* each cached function: Streamlit replays
a cached function's elements on a hit, and it can only do so for elements the
function created itself.

A simulation runs in a background thread (:class:`Job`, kept in the session's
state by run key) while the script polls it every :data:`POLL_S` seconds and
moves the progress bar; a **Stop simulation** button above the bar cancels its token.
Clicking it reruns the script (Streamlit interrupts the poll at its next
element update), the button's callback cancels the run, the run ends within
milliseconds at the simulated time it reached, and the rerun picks the job up
again and shows the partial result with a warning ("Stopped at simulated time
t of T s"). A partial result is never cached. The token is a lease
(:func:`_lease`): a run that no script run has polled for :data:`LEASE_S`
seconds (the page was closed, or it moved on to other settings) cancels
itself, so nothing stays busy after the session ends. A sweep runs the same
way (**Stop sweep**): stopped, it keeps the points whose runs finished.

A run, sweep or comparison expected to simulate more than :data:`CONFIRM_IOS`
I/Os (IOPS x duration x VMs, summed over its runs: :func:`expected_ios`) asks
first (:func:`confirmed`) instead of starting.
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
from simcache.runs.sweep import SweepProgress, grid_points
from simcache.sim.control import Cancel, Stopped, check_work, expected_work, stopped_at
from simcache_app.memo import ByScenario

CACHE_ENTRIES = 16
"""Most results each cached function keeps (runs, sweeps); the oldest goes first. A cached run
holds about 75 bytes per simulated I/O (its records, pickled: 1 MiB for the page's default 8 s
run, 8.4 MiB for 60 s), so the run cache holds at most 16 x 75 bytes x the largest runs' I/Os: 16
MiB of default runs, 1.2 GiB if every entry were a run at :data:`CONFIRM_IOS`.
``bench/bench_ui_memory.py`` measures the page's memory over 50 runs."""
CACHE_TTL_S = 3600.0
"""A cached result not asked for during this many seconds is dropped."""
CONFIRM_IOS = 1_000_000
"""Expected I/Os past which the page asks before it starts: at the 45,000 to 80,000 I/Os per
second a run takes on a 2-core VM (:class:`simcache.sim.control.Limits`), 12 to 25 s of computing
and about 600 MB of records (:data:`simcache.sim.control.BYTES_PER_IO`)."""
IOS_PER_S = 45_000
"""I/Os simulated per wall second on a 2-core VM, the slow end (for the time a confirmation
quotes)."""
IN_PROCESS_SECONDS = 30.0
"""Sweeps of at most this many simulated seconds in all run in this process: starting worker
processes (each imports simcache, pandas and scipy) would take longer than the runs."""


def run_key(scenario: simcache.Scenario, seed: int, duration: float) -> str:
    """What identifies one simulation: the scenario's JSON, the seed and the duration."""
    return json.dumps([scenario.model_dump_json(), seed, duration])


POLL_S = 0.1
"""Seconds between two looks at a running simulation (progress bar, Stop button)."""
LEASE_S = 3.0
"""A run nobody has polled for this many seconds cancels itself (the page was closed or moved
on)."""
WALL_LIMIT_S: float | None = None
"""Most wall-clock seconds one run of the page may take before it stops with a partial result
(``None``: no limit)."""


def _lease(seconds: float, deadline: float | None = None) -> Cancel:
    """A cancel token that also cancels itself when not renewed for ``seconds`` (see
    :data:`LEASE_S`)."""
    return Cancel(deadline, lease=seconds)


@dataclass
class Job:
    """One simulation or sweep running in a background thread for this session."""

    token: Cancel
    fraction: float = 0.0
    text: str = ""
    """What the progress bar says (empty: the bar's own text)."""
    result: Any = None
    error: BaseException | None = None
    thread: threading.Thread = field(init=False)

    def start(self, work: Callable[[Job], Any]) -> None:
        """Run ``work(self)`` in a thread; it reads ``self.token`` and moves ``self.fraction``."""
        self.thread = threading.Thread(
            target=self._run, args=(work,), name="simcache-run", daemon=True
        )
        self.thread.start()

    def _run(self, work: Callable[[Job], Any]) -> None:
        try:
            self.result = work(self)
        except BaseException as exc:  # handed to the script thread, which raises it
            self.error = exc

    def advance(self, fraction: float) -> None:
        self.fraction = fraction


def follow_job(key: str, work: Callable[[Job], Any], text: str) -> Any:
    """Start ``work`` as this session's job ``key`` (unless it runs already) and poll it to its
    end under a progress bar: the job's result, or its error raised here."""
    jobs = _jobs()
    job = jobs.get(key)
    if job is None:
        job = jobs[key] = Job(_lease(LEASE_S, WALL_LIMIT_S))
        job.start(work)
    bar = st.progress(0.0, text=text)
    while job.thread.is_alive():
        if not _page_open():
            job.token.cancel("the page was closed")
        job.token.renew()
        job.thread.join(POLL_S)
        # Every poll sends an update: that is where Streamlit interrupts the script on a click (the
        # job stays for the rerun to pick up), so it must come often, not only when the bar moves.
        bar.progress(min(max(job.fraction, 0.0), 1.0), text=job.text or text)
    del jobs[key]
    bar.empty()
    if job.error is not None:
        raise job.error
    return job.result


def _jobs() -> dict[str, Job]:
    jobs: dict[str, Job] = st.session_state.setdefault("runs.jobs", {})
    return jobs


def has_job(key: str) -> bool:
    """Whether a simulation with this :func:`run_key` is running (or stopped, not yet shown) in
    this session."""
    return key in _jobs()


def finished(result: simcache.Result) -> bool:
    """Whether ``result`` covers its whole run (not stopped early)."""
    return stopped_at(result) is None


def forget_abandoned() -> None:
    """Drop jobs that ended and that no script run has looked at for a lease and more (their
    settings were left)."""
    jobs = _jobs()
    now = time.monotonic()
    for key, job in list(jobs.items()):
        if not job.thread.is_alive() and now > job.token.expires + LEASE_S:
            del jobs[key]


def _page_open() -> bool:
    """Whether this script run's browser session is still connected (always true without a
    Streamlit server, as under AppTest). Streamlit may keep running a script whose tab was
    closed: its run must not go on."""
    if not runtime.exists():
        return True
    context = get_script_run_ctx()
    return context is None or runtime.get_instance().is_active_session(context.session_id)


def _stop(key: str) -> None:
    job = _jobs().get(key)
    if job is not None:
        job.token.cancel("stopped from the page")


def stop_button(slot: Any, key: str, label: str, help: str, view: str = "") -> None:
    """A button that stops the job ``key``; ``view`` tells apart two views showing the same run
    (a compared variant equal to the single run), whose buttons would otherwise share a widget
    key."""
    widget = f"stop-{hashlib.sha256((key + view).encode()).hexdigest()[:16]}"
    slot.button(label, key=widget, on_click=_stop, args=(key,), help=help)


def expected_ios(runs: Sequence[simcache.Scenario]) -> float:
    """I/Os the runs are expected to issue in all (:func:`simcache.sim.control.expected_work`:
    rate x duration x VMs for an open loop, the analytic estimate's rate for a closed one), each
    scenario with its run's duration (kept per scenario: the page asks at every rerun, and a
    compare view asks once a seed for each variant)."""
    return sum(_expected_ios(run) for run in runs)


_expected_ios = ByScenario(lambda run: expected_work(run).ios, most=64)


def sweep_ios(
    scenario: simcache.Scenario, grid: dict[str, list[Any]], seeds: Sequence[int], duration: float
) -> float:
    """:func:`expected_ios` of a sweep: every grid point with every seed (a point that is no
    valid scenario counts nothing here; the sweep reports it)."""
    runs = []
    for point in grid_points(grid):
        try:
            runs.append(scenario.with_overrides(point).with_duration(duration))
        except simcache.ScenarioError:
            continue
    return expected_ios(runs) * len(seeds)


def confirmed(key: str, ios: float, what: str) -> bool:
    """Whether the work ``key`` may start: expected to simulate at most :data:`CONFIRM_IOS` I/Os,
    or confirmed (earlier in this session). Else the page says how large it is and offers a button
    to start it anyway.

    The button confirms in its callback, before the rerun its click makes: that rerun starts the
    work without drawing the question again (drawn, it stayed above the run's progress and its
    figures: review 65e, 9)."""
    if ios <= CONFIRM_IOS or key in _accepted():
        return True
    st.session_state.setdefault("runs.asked", set()).add(key)
    minutes = ios / IOS_PER_S / 60
    # One element: in the rerun that starts the work, the work's Stop button takes its place. As
    # two, the button outlived the question on the page, stale, until the run ended.
    question = st.container()
    question.warning(
        f"**This {what} is large:** about {ios:,.0f} I/Os to simulate (the page asks past "
        f"{CONFIRM_IOS:,}), up to "
        f"{minutes:,.1f} minutes of computing. Shorten the simulated seconds or lower the load, or "
        "start it anyway; "
        "**Stop** ends it at any time and keeps what was computed."
    )
    question.button(
        f"Start this {what} anyway",
        key=f"confirm-{hashlib.sha256(key.encode()).hexdigest()[:16]}",
        on_click=_accept,
        args=(key,),
    )
    return False


def _accepted() -> set[str]:
    """The keys of the large works confirmed in this session."""
    accepted: set[str] = st.session_state.setdefault("runs.confirmed", set())
    return accepted


def _accept(key: str) -> None:
    _accepted().add(key)


def asked(key: str) -> bool:
    """Whether the page has asked (:func:`confirmed`) whether to start the work ``key``: the view
    shows the question again (and its button's click) on the reruns that follow, without its run
    button being pressed again."""
    return key in st.session_state.get("runs.asked", set())


def simulate(
    scenario: simcache.Scenario, seed: int, duration: float, label: str = "Simulating"
) -> simcache.Result:
    """:func:`simcache.simulate` with a progress bar and a Stop button, cached on the scenario's
    JSON, seed and duration.

    A stopped run returns its partial result (not cached) under a warning that says so. Raises
    :class:`~simcache.base.errors.RunTooLargeError` before anything runs if the run is past the
    limits.
    """
    key = run_key(scenario, seed, duration)
    forget_abandoned()
    if key not in _jobs():
        # the verdict only: the closed loops' bound first, their estimate only past the limits
        check_work(scenario.with_duration(duration).with_seed(seed), bound_first=True)
    slot = st.empty()
    about = "Stop this simulation: the page shows what was simulated so far, marked partial."
    stop_button(slot, key, "Stop simulation", about, view=label)
    try:
        result = _simulate(
            scenario.model_dump_json(), seed, duration, _scenario=scenario, _label=label
        )
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
        f"**Partial result.** Stopped at simulated time {at:.2f} s of {result.meta['planned_s']:g} "
        "s "
        f"({result.meta['stop_reason']}): every figure below covers 0 to {at:.2f} s only."
    )


@st.cache_data(max_entries=CACHE_ENTRIES, ttl=CACHE_TTL_S, show_spinner=False)
def _simulate(
    scenario_json: str, seed: int, duration: float, _scenario: simcache.Scenario, _label: str
) -> simcache.Result:
    key = json.dumps([scenario_json, seed, duration])  # run_key()

    def work(job: Job) -> simcache.Result:
        return simcache.simulate(
            _scenario, seed=seed, duration=duration, progress=job.advance, cancel=job.token
        )

    result: simcache.Result = follow_job(key, work, f"{_label}: {duration:g} simulated seconds")
    if not finished(result):
        raise Stopped(result.meta["stop_reason"], result)  # not cached
    # worked out once, before the result is cached: the copy each rerun gets carries them
    result.warnings  # noqa: B018
    result.summary  # noqa: B018
    return result


def sweep_key(
    scenario: simcache.Scenario, grid: dict[str, list[Any]], seeds: Sequence[int], duration: float
) -> str:
    """What identifies one sweep: the scenario's JSON, the grid, the seeds and the duration."""
    return json.dumps([scenario.model_dump_json(), grid, list(seeds), duration])


def sweep(
    scenario: simcache.Scenario, grid: dict[str, list[Any]], seeds: Sequence[int], duration: float
) -> pd.DataFrame:
    """:func:`simcache.sweep` with a progress bar and a **Stop sweep** button, cached on the
    scenario's JSON, grid, seeds and duration.

    Large sweeps use one process per core; small ones run here (see :data:`IN_PROCESS_SECONDS`). A
    stopped sweep returns the rows of the runs that finished (not cached),
    ``table.attrs["stopped"]`` saying why.
    """
    key = sweep_key(scenario, grid, seeds, duration)
    forget_abandoned()
    slot = st.empty()
    stop_button(
        slot,
        key,
        "Stop sweep",
        "Stop this sweep: the page shows the points whose runs finished, marked partial.",
    )
    try:
        table = _sweep(
            scenario.model_dump_json(), json.dumps(grid), tuple(seeds), duration, _scenario=scenario
        )
    except _SweepStopped as stopped:
        return stopped.table
    finally:
        slot.empty()
    return table


class _SweepStopped(Exception):
    """A stopped sweep's partial table, raised out of the cached function so that it is not
    cached."""

    def __init__(self, table: pd.DataFrame):
        super().__init__(table.attrs["stopped"])
        self.table = table


@st.cache_data(max_entries=CACHE_ENTRIES, ttl=CACHE_TTL_S, show_spinner=False)
def _sweep(
    scenario_json: str,
    grid_json: str,
    seeds: tuple[int, ...],
    duration: float,
    _scenario: simcache.Scenario,
) -> pd.DataFrame:
    grid = json.loads(grid_json)
    tasks = len(seeds) * math.prod(len(values) for values in grid.values())

    def work(job: Job) -> pd.DataFrame:
        def advance(state: SweepProgress) -> None:
            eta = f", about {state.eta_s:.0f} s left" if math.isfinite(state.eta_s) else ""
            job.fraction, job.text = (
                state.done / state.total,
                f"Sweeping: {state.done} of {state.total} simulations done{eta}",
            )

        workers = (
            1 if tasks * duration <= IN_PROCESS_SECONDS else max(1, min(os.cpu_count() or 1, tasks))
        )
        return simcache.sweep(
            _scenario,
            grid,
            seeds=seeds,
            duration=duration,
            workers=workers,
            progress=advance,
            cancel=job.token,
        )

    table: pd.DataFrame = follow_job(
        json.dumps([scenario_json, grid, list(seeds), duration]),
        work,
        f"Sweeping: {tasks} simulations",
    )
    if "stopped" in table.attrs:
        raise _SweepStopped(table)
    return table


def sweep_stop_text(table: pd.DataFrame) -> str:
    """The warning over a stopped sweep's table and chart."""
    return (
        f"**Partial sweep.** Stopped ({table.attrs['stopped']}) after {len(table)} of "
        f"{table.attrs['planned']} simulations: "
        "the points below are those whose runs finished; a point with fewer seeds than asked has a "
        "wider interval."
    )


def _throttled(update: Callable[[float], Any], step: float = 0.05) -> Callable[[float], None]:
    """Forward progress only every ``step`` of the way: each update is a message to the browser."""
    shown = [-1.0]

    def report(fraction: float) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        if fraction - shown[0] >= step or fraction >= 1.0:
            shown[0] = fraction
            update(fraction)

    return report
