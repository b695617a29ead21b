"""Sweeps: run a scenario over a grid of overrides and seeds, in parallel, resumably.

A sweep is a list of tasks (grid point x seed). Each task is one
:func:`~simcache.runs.simulate.simulate` call reduced to a flat row
(:func:`result_row`). Tasks run

- in this process (``workers=1``),
- on a local process pool (``workers=N``, the default uses every core), or
- on Dask (``client=`` a ``dask.distributed.Client``, or ``scheduler=`` an
  address such as ``"tcp://10.0.0.5:8786"``; ``scheduler="local"`` starts a
  local Dask cluster for the sweep and shuts it down after).

With ``store=`` a SQLite file, each row is written as soon as its task
finishes. Rerunning the same sweep with the same store skips the tasks
already there, so an interrupted sweep completes without recomputation.
A killed sweep (even ``kill -9``) keeps every row it finished, and its
worker processes exit with it; Ctrl-C raises :class:`SweepInterrupted`
(a ``KeyboardInterrupt`` saying how many rows finished, and holding them) after
terminating the workers. ``cancel=`` a :class:`~simcache.sim.control.Cancel` token stops a sweep
from another thread: within a poll (:data:`~simcache.runs.sweep_store.POLL_S`) it
starts no more tasks, abandons the running ones (a serial run stops at once,
pool workers are terminated) and returns the rows finished so far, the table's
``attrs["stopped"]`` saying why. The store has a format version (:data:`STORE_FORMAT`) and a
checksum per row: a row that fails its checks is reported
(:class:`SweepStoreWarning`) and recomputed, never used. Sweeps running at
once on one store share its tasks (see :class:`SweepStore`). A store that
cannot be used raises :class:`~simcache.base.errors.SweepStoreError`.
Rows carry no wall-clock figures, and the table is assembled in grid order,
so a resumed sweep returns exactly the table of an uninterrupted one.

:func:`sweep_summary` turns the rows into per-point means and 95% confidence
intervals over the seeds; ``until=`` adds seeds to a point until the
interval of a chosen metric is narrow enough (checked before any run:
:func:`until_problems`), and :func:`until_outcomes` says which points got there.

A row is :mod:`simcache.runs.sweep_rows`, ``until=`` :mod:`simcache.runs.sweep_until`, the
per-point summary :mod:`simcache.runs.sweep_points`, the store :mod:`simcache.runs.sweep_store`
(all re-exported here); the process pool, Dask and stopping their workers are
:mod:`simcache.runs.workers`.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcache.base.errors import RunTooLargeError, SweepError, echo
from simcache.runs.simulate import simulate
from simcache.runs.sweep_points import (
    MIX_SHIFT,
    NOT_RUN,
    STABILITY,
    PointStability,
    log_axis_yerr,
    mix_shifts,
    point_bottleneck,
    point_stability,
    sweep_summary,
)
from simcache.runs.sweep_rows import result_row, row_figures
from simcache.runs.sweep_store import POLL_S, STORE_FORMAT, SweepStore, SweepStoreWarning
from simcache.runs.sweep_until import UntilOutcome, seeds_wanted, until_outcomes, until_problems
from simcache.runs.workers import Runner, refuse_worker_reimport
from simcache.sim.control import Cancel, check_work, stopped_at
from simcache.spec import Scenario, load_scenario

__all__ = [
    "MIX_SHIFT",
    "NOT_RUN",
    "STABILITY",
    "STORE_FORMAT",
    "PointStability",
    "SweepInterrupted",
    "SweepProgress",
    "SweepStoreWarning",
    "UntilOutcome",
    "grid_points",
    "log_axis_yerr",
    "mix_shifts",
    "point_bottleneck",
    "point_stability",
    "point_values",
    "result_row",
    "row_figures",
    "sweep",
    "sweep_seeds",
    "sweep_summary",
    "until_outcomes",
    "until_problems",
]


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (or anything raising :class:`KeyboardInterrupt` in it, such as a
    SIGTERM handler).

    ``finished`` of ``total`` tasks had their rows (``computed`` of them by this sweep, the rest
    from the store); with a ``store``, every finished row is in it and rerunning the same sweep
    resumes from there. ``table``: the finished rows as :func:`sweep` returns them (grid order,
    its ``attrs`` saying why it stopped), so that a stop throws no finished run away; ``None``
    when the sweep that raised it did not give them.
    """

    def __init__(
        self,
        finished: int,
        total: int,
        computed: int,
        store: Path | None,
        table: pd.DataFrame | None = None,
    ):
        self.finished = finished
        self.total = total
        self.computed = computed
        self.store = store
        self.table = table
        kept = f"kept in {store}" if store is not None else "not kept (no store)"
        super().__init__(f"sweep interrupted: {finished} of {total} runs finished, {kept}")

    def __reduce__(
        self,
    ) -> tuple[type[SweepInterrupted], tuple[int, int, int, Path | None, pd.DataFrame | None]]:
        return (type(self), (self.finished, self.total, self.computed, self.store, self.table))


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep stands: tasks done (skipped ones included) of the total, and an ETA.

    ``skipped``: rows taken from the store instead of computed, whether stored before the sweep
    started or by another sweep on the same store meanwhile.
    """

    done: int
    total: int
    skipped: int
    elapsed_s: float

    @property
    def eta_s(self) -> float:
        """Seconds left at the rate of the tasks computed so far (NaN before the first one)."""
        computed = self.done - self.skipped
        if computed <= 0:
            return math.nan
        return self.elapsed_s / computed * (self.total - self.done)


def grid_points(grid: Mapping[str, Sequence[Any]], source: str = "<grid>") -> list[dict[str, Any]]:
    """The Cartesian product of ``{dotted.path: [values]}`` as a list of override dicts."""
    for path, values in grid.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise SweepError(
                source,
                [
                    (
                        f"grid.{path}",
                        f"must be a non-empty list of values, e.g. [{values!r}] (got {values!r})",
                    )
                ],
            )
    keys = list(grid)
    return [
        dict(zip(keys, values, strict=True))
        for values in itertools.product(*(grid[k] for k in keys))
    ]


def sweep(
    scenario: Scenario | str | Path | Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    *,
    seeds: Iterable[int] = (1,),
    duration: float | None = None,
    workers: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
    store: str | Path | None = None,
    until: tuple[str, float] | None = None,
    max_seeds: int = 30,
    progress: Callable[[SweepProgress], None] | None = None,
    cancel: Cancel | None = None,
    source: str | None = None,
) -> pd.DataFrame:
    """Simulate every grid point with every seed; one row per point and seed, in grid order.

    ``grid`` maps dotted scenario paths to lists of values, e.g.
    ``{"cluster.peer_link": ["1GbE", "10GbE"], "groups.db.policy": ["WB+1", "WB+2"]}``.
    Each row holds the point's values, ``seed`` and :func:`result_row`'s columns.

    ``workers``: local processes (default: one per core; 1 runs in this process). ``client`` /
    ``scheduler``: run on Dask instead. ``store``: a SQLite file that rows stream into and that a
    rerun resumes from. ``until=(metric, relative_half_width)``: after ``seeds``, add seeds to each
    point (up to ``max_seeds``) until the 95% interval of ``metric`` (a row column such as
    ``"all.write.mean_ms"``) is within that fraction of its mean. ``cancel``: a token that stops the
    sweep early; the table then holds the rows finished before the stop, and ``table.attrs`` has
    ``"stopped"`` (the token's reason) and ``"planned"`` (the tasks the sweep meant to run).
    Ctrl-C raises :class:`SweepInterrupted`, which holds the rows finished before it.

    ``source``: the sweep file the grid and seeds came from, which errors name (a point's as
    ``FILE [grid] path = value``); without it, ``<sweep>`` and ``<sweep point {...}>``. A call a
    spawned worker re-runs as it imports the script raises ``WorkerReimportError`` (guard it).
    """
    refuse_worker_reimport("simcache.sweep")
    base = load_scenario(scenario)
    points = grid_points(grid, "<grid>" if source is None else source)
    # every point valid first
    variants = [base.with_overrides(point, source=_point_source(source, point)) for point in points]
    # and valid for the duration, before any worker starts; workers run these as they are
    runs = (
        variants if duration is None else [variant.with_duration(duration) for variant in variants]
    )
    seed_list = sweep_seeds(seeds, source)
    if until is not None:
        problems = until_problems(until, max_seeds, variants, grid)
        if problems:
            raise SweepError(source or "<sweep>", problems)
    tally = _Tally()
    # points past the run limits are not simulated: their rows say why, the others run
    refused = _refused(runs)
    rows: dict[tuple[int, int], dict[str, Any]] = {
        (i, seed): {"stable": 0, "stability": NOT_RUN, "not_run": reason}
        for i, reason in refused.items()
        for seed in seed_list
    }
    tally.not_run = len(rows)
    labels = [", ".join(f"{column}={value}" for column, value in point.items()) for point in points]
    try:
        with ExitStack() as stack:
            runner = Runner.open(stack, workers=workers, client=client, scheduler=scheduler)
            cache = (
                SweepStore(Path(store), variants, duration, labels) if store is not None else None
            )
            if cache is not None:
                stack.enter_context(closing(cache))
            tasks = [
                (i, seed) for i in range(len(points)) if i not in refused for seed in seed_list
            ]
            _run(tasks, runs, runner, cancel, cache, progress, tally, rows)
            while until is not None and not tally.stopped:
                extra = {
                    i: more
                    for i, more in seeds_wanted(points, rows, seed_list, until, max_seeds).items()
                    if i not in refused
                }
                if not extra:
                    break
                more = [
                    (i, seed) for i, seeds_for_point in extra.items() for seed in seeds_for_point
                ]
                _run(more, runs, runner, cancel, cache, progress, tally, rows)
            if tally.stopped:
                raise _Abandon  # leave the pool as on Ctrl-C: its running tasks are not waited for
    except _Abandon:
        pass
    except KeyboardInterrupt as exc:
        tally.stopped = tally.stopped or "interrupted"
        raise SweepInterrupted(
            tally.finished,
            tally.total,
            tally.computed,
            None if store is None else Path(store),
            _table(points, rows, tally),
        ) from exc
    return _table(points, rows, tally)


def sweep_seeds(seeds: Iterable[Any], source: str | None = None) -> list[int]:
    """``seeds`` as a sweep runs them: plain ints (numpy's too: store keys and rows are JSON);
    raises :class:`~simcache.base.errors.SweepError` naming ``source`` (the sweep file, else
    ``<sweep>``) and ``seeds`` unless they are a list of whole numbers >= 0, at least one (a sweep
    file's ``seeds = 3`` had ended in a traceback)."""
    listed = not isinstance(seeds, (str, bytes, Mapping)) and isinstance(seeds, Iterable)
    seed_list = list(seeds) if listed else []
    bad = [
        seed
        for seed in seed_list
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0
    ]
    if not seed_list or bad:
        got = echo(seed_list if listed else seeds)
        raise SweepError(
            source or "<sweep>",
            [("seeds", f"give a list of seeds, whole numbers >= 0 (got {got})")],
        )
    return [int(seed) for seed in seed_list]


def _refused(runs: Sequence[Scenario]) -> dict[int, str]:
    """The points whose run is past the run limits (the defaults, or the environment's), each with
    why in one line: the offered load that piles up on a port, or the I/Os or memory it would
    take. A sweep goes on without them (review 65: a 2026 load on 1GbE, the question the sweep
    asks, ended the whole sweep and the report around it)."""
    refused = {}
    for i, run in enumerate(runs):
        try:
            check_work(run, bound_first=True)
        except RunTooLargeError as error:
            refused[i] = " ".join(error.problems[0][1].split())
    return refused


def _point_source(source: str | None, point: Mapping[str, Any]) -> str:
    """What an error in a grid point names: the sweep file's ``[grid]`` and the point's values,
    or ``<sweep point {...}>`` without a file."""
    if source is None:
        return f"<sweep point {point}>"
    return f"{source} [grid] {point_values(point)}"


def point_values(point: Mapping[str, Any]) -> str:
    """A grid point as its values are written, for a message: ``cluster.peer_link = '1GbE',
    groups.db.workload.iops = 100``."""
    return ", ".join(f"{path} = {echo(value)}" for path, value in point.items())


def _table(
    points: list[dict[str, Any]], rows: Mapping[tuple[int, int], dict[str, Any]], tally: _Tally
) -> pd.DataFrame:
    """The rows in grid order (point, then seed); a stopped sweep's ``attrs`` say why it stopped
    (``stopped``), the tasks it planned (``planned``) and how many it computed (``computed``)."""
    ordered = sorted(rows, key=lambda key: (key[0], key[1]))
    table = pd.DataFrame([{**points[i], "seed": seed, **rows[(i, seed)]} for i, seed in ordered])
    if tally.stopped:
        table.attrs.update(stopped=tally.stopped, planned=tally.total, computed=tally.computed)
    return table


class _Abandon(Exception):
    """Raised inside a sweep stopped by its cancel token, to leave the runner without waiting for
    its running tasks."""


@dataclass
class _Tally:
    """Rows in hand, rows computed by this sweep and tasks known so far, over every round
    (``until``)."""

    finished: int = 0
    computed: int = 0
    total: int = 0
    not_run: int = 0
    """Rows of points past the run limits (in ``rows`` from the start, never simulated): not
    counted as finished (review 67a F4: a stop said they were finished and kept in the store)."""
    stopped: str = ""
    """Why the cancel token stopped the sweep (empty while it runs)."""


def _run(
    tasks: list[tuple[int, int]],
    runs: list[Scenario],
    runner: Runner,
    cancel: Cancel | None,
    cache: SweepStore | None,
    progress: Callable[[SweepProgress], None] | None,
    tally: _Tally,
    rows: dict[tuple[int, int], dict[str, Any]],
) -> None:
    """Add the rows of ``tasks`` (new ones) to ``rows``: from the store, computed here, or from
    another sweep computing them into the same store. Each is added as soon as it is in hand, so
    an interrupt keeps every finished one."""
    started = time.perf_counter()
    before = len(rows)
    tally.total += len(tasks)
    if cache is not None:
        for task in tasks:
            found = cache.get(task)
            if found is not None:
                rows[task] = found
    skipped = len(rows) - before
    queue = deque(task for task in tasks if task not in rows)
    waiting: list[tuple[int, int]] = []  # claimed by another sweep that is alive: its row will come

    def report() -> None:
        tally.finished = len(rows) - tally.not_run
        if progress is not None:
            progress(
                SweepProgress(
                    len(rows) - before, len(tasks), skipped, time.perf_counter() - started
                )
            )

    def take(task: tuple[int, int]) -> bool:
        """Claim ``task`` and start it, or take the row another sweep stored; False if another
        sweep still holds it."""
        nonlocal skipped
        got = cache.claim(task) if cache is not None else True
        if got is False:
            return False
        if got is True:
            point, seed = task
            if runner.in_process and cancel is not None:
                runner.submit(task, _one_here, runs[point], seed, cancel)
            else:
                runner.submit(task, _one, runs[point], seed)
        else:
            rows[task] = got
            skipped += 1
            report()
        return True

    report()
    while queue or waiting or runner.busy:
        if cancel is not None and cancel.cancelled:
            tally.stopped = cancel.reason
            break
        while queue and runner.free:
            task = queue.popleft()
            if not take(task):
                waiting.append(task)
        if not queue and waiting and runner.free:
            waiting = [task for task in waiting if not take(task)]
        if runner.busy:
            for task, row in runner.collect(POLL_S if waiting or cancel is not None else None):
                rows[task] = row
                tally.computed += 1
                if cache is not None:
                    cache.put(task, row)
                report()
        elif waiting:
            time.sleep(POLL_S)


def _one(run: Scenario, seed: int) -> dict[str, Any]:
    """A task: runs in a worker process (or this one) and returns a plain, picklable row."""
    return result_row(simulate(run, seed=seed))


def _one_here(run: Scenario, seed: int, cancel: Cancel | None) -> dict[str, Any] | None:
    """A task run in this process, stoppable by ``cancel``: its row, or ``None`` if it was
    stopped part way."""
    result = simulate(run, seed=seed, cancel=cancel)
    return None if stopped_at(result) is not None else result_row(result)
