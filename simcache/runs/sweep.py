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

The process pool, Dask and stopping their workers are :mod:`simcache.runs.workers`.
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

from simcache.base.errors import RunTooLargeError, ScenarioError, echo
from simcache.base.metrics import ESTIMATED_COLUMNS
from simcache.results.bottleneck import run_bottleneck
from simcache.results.result import Result
from simcache.results.validity import filling_backlogs
from simcache.runs.simulate import simulate
from simcache.runs.sweep_points import (
    _STABILITY_KINDS,
    MIX_SHIFT,
    NOT_RUN,
    STABILITY,
    PointStability,
    _half_width,
    log_axis_yerr,
    mix_shifts,
    point_bottleneck,
    point_stability,
    sweep_summary,
)
from simcache.runs.sweep_store import POLL_S, STORE_FORMAT, SweepStore, SweepStoreWarning
from simcache.runs.targets import caveat_kinds
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
            raise ScenarioError(
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


def result_row(result: Result) -> dict[str, Any]:
    """One flat row of a result: ``<group>.<op>.<metric>`` for every summary cell, totals, and what
    targets read (:func:`simcache.runs.targets.evidence_of_row`): ``stable`` (1 or 0), ``validity``
    (the kinds of its validity warnings, comma-separated; absent when none), ``caveats`` (those of
    them that may make a pass unknown: :func:`simcache.runs.targets.caveat_kinds`) and
    ``<group>.<op>.lower_bounds`` (comma-separated; absent when none). ``bottleneck`` and
    ``bottleneck_utilization``: the part(s) a single run's bottleneck line names, comma-separated,
    and their mean utilization (:func:`~simcache.results.bottleneck.run_bottleneck`: a tier past its
    clean-pool cliff before the busiest part).

    ``stability``: one of :data:`STABILITY`, the first that holds: ``unstable`` (``stable`` is 0),
    ``filling`` (a destage backlog grows through the window), ``at capacity`` (a part busy
    :data:`~simcache.results.validity.PINNED` or more under open-loop load), ``untested`` (too few
    samples to test for growth), else ``stable``. ``backlog_full_in_s``: with ``filling``, the
    seconds until the first filling buffer is full at the rate its backlog grew
    (:func:`~simcache.results.validity.filling_backlogs`); absent otherwise.

    No wall-clock figures: the same scenario and seed always give the same row.
    """
    row: dict[str, Any] = {}
    for record in result.summary.to_dict(orient="records"):
        for metric in ESTIMATED_COLUMNS:  # the columns an estimate's summary has too
            row[f"{record['group']}.{record['op']}.{metric}"] = record[metric]
        # only where there are some: printed tables stay one word per cell
        if record["lower_bounds"]:
            row[f"{record['group']}.{record['op']}.lower_bounds"] = str(
                record["lower_bounds"]
            ).replace(" ", ",")
    row["stable"] = int(result.stable)  # its mean over seeds is the fraction of stable runs
    kinds = ",".join(dict.fromkeys(w.kind for w in result.warnings))
    if kinds:
        row["validity"] = kinds
        row["caveats"] = ",".join(dict.fromkeys(caveat_kinds(result.warnings)))
    row["stability"] = _stability(result)
    if row["stability"] == "filling":
        row["backlog_full_in_s"] = min(fill.full_in_s for fill in filling_backlogs(result))
    for record in result.breakdown.to_dict(orient="records"):
        row[f"{record['group']}.write.dominant"] = record["dominant"]
    bottleneck = run_bottleneck(result)
    row["bottleneck"] = ",".join(bottleneck.parts)
    row["bottleneck_utilization"] = bottleneck.utilization
    for key in _ROW_TOTALS:
        row[key] = result.totals[key]
    return {key: _plain(value) for key, value in row.items()}


_ROW_TOTALS = ("array_write_mb_s", "peer_wire_mb_s", "destage_backlog_bytes")
"""The run totals a :func:`result_row` holds."""
_ROW_FIGURES = ("stable", "backlog_full_in_s", "bottleneck_utilization", *_ROW_TOTALS)
"""The numeric columns of a :func:`result_row` besides its ``<group>.<op>.<metric>`` cells."""


def row_figures(scenarios: Iterable[Scenario]) -> list[str]:
    """The numeric columns a :func:`result_row` of a run of any of ``scenarios`` can hold, known
    before any run: ``<group>.<op>.<metric>`` for each group and ``all``, ``read`` and
    ``write`` and each metric of the summary a sweep keeps, then the run's own figures
    (``stable``, ``bottleneck_utilization``, totals). What ``until=`` may name."""
    groups = dict.fromkeys(group.name for scenario in scenarios for group in scenario.groups)
    return [
        *(
            f"{group}.{op}.{metric}"
            for group in [*groups, "all"]
            for op in ("write", "read")
            for metric in ESTIMATED_COLUMNS
        ),
        *_ROW_FIGURES,
    ]


def _stability(result: Result) -> str:
    """The first of :data:`STABILITY` that holds of ``result`` (see :func:`result_row`)."""
    if not result.stable:
        return "unstable"
    kinds = {w.kind for w in result.warnings}
    return next((state for state, kind in _STABILITY_KINDS.items() if kind in kinds), "stable")


def _plain(value: Any) -> Any:
    """Python int/float/str (numpy scalars converted): rows survive a JSON round trip unchanged."""
    if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value)
    return value


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
    seed_list = list(seeds)
    bad = [
        seed
        for seed in seed_list
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0
    ]
    if not seed_list or bad:
        raise ScenarioError(
            source or "<sweep>",
            [("seeds", f"give a list of seeds, whole numbers >= 0 (got {seed_list!r})")],
        )
    # numpy integers as plain ints: store keys and rows are JSON
    seed_list = [int(seed) for seed in seed_list]
    if until is not None:
        problems = until_problems(until, max_seeds, variants, grid)
        if problems:
            raise ScenarioError(source or "<sweep>", problems)
    tally = _Tally()
    # points past the run limits are not simulated: their rows say why, the others run
    refused = _refused(runs)
    rows: dict[tuple[int, int], dict[str, Any]] = {
        (i, seed): {"stable": 0, "stability": NOT_RUN, "not_run": reason}
        for i, reason in refused.items()
        for seed in seed_list
    }
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
                    for i, more in _seeds_wanted(points, rows, seed_list, until, max_seeds).items()
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


def until_problems(
    until: tuple[str, float],
    max_seeds: int,
    runs: Sequence[Scenario],
    grid: Mapping[str, Sequence[Any]],
) -> list[tuple[str, str]]:
    """What is wrong with ``until=(metric, relative_half_width)`` and ``max_seeds`` for a sweep of
    ``runs`` over ``grid``, as ``(field, message)`` pairs (fields ``until`` and ``max_seeds``);
    none when they can be used. Checked before any run: a misspelt metric or a width that can
    never be met would otherwise show only after a round of runs, or never."""
    metric, width = until
    problems = []
    if metric in grid:
        problems.append(
            (
                "until",
                f"{metric!r} is a grid column; name a result column such as 'all.write.mean_ms'",
            )
        )
    elif metric not in row_figures(runs):
        problems.append(
            ("until", f"no result column {metric!r}; e.g. all.write.mean_ms, db.write.p99_ms")
        )
    if not (math.isfinite(width) and width > 0):
        problems.append(
            (
                "until",
                f"the width must be a fraction of the mean above 0, e.g. 0.05 for 5% (got "
                f"{width:g})",
            )
        )
    if max_seeds < 1:
        problems.append(("max_seeds", f"must be at least 1 (got {max_seeds})"))
    return problems


@dataclass(frozen=True)
class UntilOutcome:
    """Whether one grid point's 95% interval of the ``until`` metric came within the width asked
    for (:func:`until_outcomes`)."""

    point: str
    """The point's grid values, ``path=value, ...``."""
    seeds: int
    """How many seeds it ran."""
    reached: bool
    """Its interval's half-width is within the width, as a fraction of the mean."""
    relative_half_width: float
    """The half-width over the absolute mean (NaN with one seed or no finite value)."""


def until_outcomes(
    table: pd.DataFrame, grid_columns: Sequence[str], until: tuple[str, float]
) -> list[UntilOutcome]:
    """Per grid point of a finished ``until=`` sweep's ``table``, in grid order: whether it
    reached the width, with how many seeds and how wide its interval was."""
    metric, width = until
    outcomes = []
    for key, part in table.groupby(list(grid_columns), sort=False, dropna=False):
        values = key if isinstance(key, tuple) else (key,)
        label = ", ".join(
            f"{column}={value}" for column, value in zip(grid_columns, values, strict=True)
        )
        figures = part[metric].to_numpy(dtype=float) if metric in part else np.array([math.nan])
        mean, half = _interval(figures)
        relative = half / abs(mean) if mean else math.nan
        outcomes.append(UntilOutcome(label, len(part), _within(mean, half, width), relative))
    return outcomes


def _interval(values: np.ndarray) -> tuple[float, float]:
    """The mean of the finite ``values`` and their 95% interval's half-width (NaN when there is
    none)."""
    mean = float(np.nanmean(values)) if np.isfinite(values).any() else math.nan
    return mean, _half_width(values)


def _within(mean: float, half: float, width: float) -> bool:
    """The half-width ``half`` is within ``width`` (a fraction) of ``mean``."""
    return math.isfinite(half) and math.isfinite(mean) and half <= width * abs(mean)


class _Abandon(Exception):
    """Raised inside a sweep stopped by its cancel token, to leave the runner without waiting for
    its running tasks."""


def _seeds_wanted(
    points: list[dict[str, Any]],
    rows: Mapping[tuple[int, int], dict[str, Any]],
    seeds: list[int],
    until: tuple[str, float],
    max_seeds: int,
) -> dict[int, list[int]]:
    """Points whose interval is still too wide, each with the next batch of seeds to run."""
    metric, width = until
    seeds_of: dict[int, list[int]] = {}
    for i, seed in rows:
        seeds_of.setdefault(i, []).append(seed)
    wanted: dict[int, list[int]] = {}
    for i in range(len(points)):
        have = sorted(seeds_of[i])
        if len(have) >= max_seeds:
            continue
        values = np.array([rows[(i, seed)].get(metric, math.nan) for seed in have], dtype=float)
        if _within(*_interval(values), width):
            continue
        batch = min(len(seeds), max_seeds - len(have))
        start = max(have) + 1
        wanted[i] = list(range(start, start + batch))
    return wanted


@dataclass
class _Tally:
    """Rows in hand, rows computed by this sweep and tasks known so far, over every round
    (``until``)."""

    finished: int = 0
    computed: int = 0
    total: int = 0
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
        tally.finished = len(rows)
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
