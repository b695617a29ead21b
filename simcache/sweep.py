"""Sweeps: run a scenario over a grid of overrides and seeds, in parallel, resumably.

A sweep is a list of tasks (grid point x seed). Each task is one
:func:`~simcache.engine.simulate` call reduced to a flat row
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
(a ``KeyboardInterrupt`` saying how many rows finished) after terminating
the workers. The store has a format version (:data:`STORE_FORMAT`) and a
checksum per row: a row that fails its checks is reported
(:class:`SweepStoreWarning`) and recomputed, never used. Sweeps running at
once on one store share its tasks (see :class:`_Store`). A store that
cannot be used raises :class:`~simcache.errors.SweepStoreError`.
Rows carry no wall-clock figures, and the table is assembled in grid order,
so a resumed sweep returns exactly the table of an uninterrupted one.

:func:`sweep_summary` turns the rows into per-point means and 95% confidence
intervals over the seeds; ``until=`` adds seeds to a point until the
interval of a chosen metric is narrow enough.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import signal
import socket
import sqlite3
import threading
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcache import __version__
from simcache._engine_sources import RESULT_MODULES, source_digest
from simcache.engine import simulate
from simcache.errors import ScenarioError, SweepStoreError
from simcache.metrics import ESTIMATED_COLUMNS, ci95_half_width
from simcache.results import Result
from simcache.scenario import Scenario, load_scenario

__all__ = [
    "STORE_FORMAT",
    "SweepInterrupted",
    "SweepProgress",
    "SweepStoreWarning",
    "grid_points",
    "log_axis_yerr",
    "result_row",
    "sweep",
    "sweep_summary",
]


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (or anything raising :class:`KeyboardInterrupt` in it, such as a SIGTERM handler).

    ``finished`` of ``total`` tasks had their rows (``computed`` of them by this sweep, the rest from the store);
    with a ``store``, every finished row is in it and rerunning the same sweep resumes from there.
    """

    def __init__(self, finished: int, total: int, computed: int, store: Path | None):
        self.finished = finished
        self.total = total
        self.computed = computed
        self.store = store
        kept = f"kept in {store}" if store is not None else "not kept (no store)"
        super().__init__(f"sweep interrupted: {finished} of {total} runs finished, {kept}")

    def __reduce__(self) -> tuple[type[SweepInterrupted], tuple[int, int, int, Path | None]]:
        return (type(self), (self.finished, self.total, self.computed, self.store))


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep stands: tasks done (skipped ones included) of the total, and an ETA.

    ``skipped``: rows taken from the store instead of computed, whether stored before the sweep started or by
    another sweep on the same store meanwhile.
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
            raise ScenarioError(source, [(f"grid.{path}", f"must be a non-empty list of values, e.g. [{values!r}] (got {values!r})")])
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]


def result_row(result: Result) -> dict[str, Any]:
    """One flat row of a result: ``<group>.<op>.<metric>`` for every summary cell, plus totals.

    No wall-clock figures: the same scenario and seed always give the same row.
    """
    row: dict[str, Any] = {}
    for record in result.summary.to_dict(orient="records"):
        for metric in ESTIMATED_COLUMNS:  # the columns an estimate's summary has too
            row[f"{record['group']}.{record['op']}.{metric}"] = record[metric]
    for record in result.breakdown.to_dict(orient="records"):
        row[f"{record['group']}.write.dominant"] = record["dominant"]
    bottleneck, utilization = result.bottleneck()
    row["bottleneck"] = bottleneck
    row["bottleneck_utilization"] = utilization
    for key in ("array_write_mb_s", "peer_wire_mb_s", "destage_backlog_bytes"):
        row[key] = result.totals[key]
    return {key: _plain(value) for key, value in row.items()}


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
) -> pd.DataFrame:
    """Simulate every grid point with every seed; one row per point and seed, in grid order.

    ``grid`` maps dotted scenario paths to lists of values, e.g.
    ``{"cluster.peer_link": ["1GbE", "10GbE"], "groups.db.policy": ["WB+1", "WB+2"]}``.
    Each row holds the point's values, ``seed`` and :func:`result_row`'s columns.

    ``workers``: local processes (default: one per core; 1 runs in this
    process). ``client`` / ``scheduler``: run on Dask instead. ``store``: a
    SQLite file that rows stream into and that a rerun resumes from.
    ``until=(metric, relative_half_width)``: after ``seeds``, add seeds to each
    point (up to ``max_seeds``) until the 95% interval of ``metric`` (a row
    column such as ``"all.write.mean_ms"``) is within that fraction of its mean.
    """
    base = load_scenario(scenario)
    points = grid_points(grid)
    variants = [base.with_overrides(point, source=f"<sweep point {point}>") for point in points]  # every point valid first
    # and valid for the duration, before any worker starts; workers run these as they are
    runs = variants if duration is None else [variant.with_duration(duration) for variant in variants]
    seed_list = list(seeds)
    bad = [seed for seed in seed_list if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0]
    if not seed_list or bad:
        raise ScenarioError("<sweep>", [("seeds", f"give a list of seeds, whole numbers >= 0 (got {seed_list!r})")])
    seed_list = [int(seed) for seed in seed_list]  # numpy integers as plain ints: store keys and rows are JSON
    if until is not None and until[0] in points[0]:
        raise ScenarioError("<sweep>", [("until", f"{until[0]!r} is a grid column; name a result column such as 'all.write.mean_ms'")])
    tally = _Tally()
    labels = [", ".join(f"{column}={value}" for column, value in point.items()) for point in points]
    try:
        with ExitStack() as stack:
            runner = _Runner.open(stack, workers=workers, client=client, scheduler=scheduler)
            cache = _Store(Path(store), variants, duration, labels) if store is not None else None
            if cache is not None:
                stack.enter_context(closing(cache))
            tasks = [(i, seed) for i in range(len(points)) for seed in seed_list]
            rows = _run(tasks, runs, runner, cache, progress, tally)
            while until is not None:
                extra = _seeds_wanted(points, rows, seed_list, until, max_seeds)
                if not extra:
                    break
                more = [(i, seed) for i, seeds_for_point in extra.items() for seed in seeds_for_point]
                rows.update(_run(more, runs, runner, cache, progress, tally))
    except KeyboardInterrupt as exc:
        raise SweepInterrupted(tally.finished, tally.total, tally.computed, None if store is None else Path(store)) from exc
    ordered = sorted(rows, key=lambda key: (key[0], key[1]))
    return pd.DataFrame([{**points[i], "seed": seed, **rows[(i, seed)]} for i, seed in ordered])


def sweep_summary(table: pd.DataFrame, grid_columns: Sequence[str]) -> pd.DataFrame:
    """Per grid point: number of seeds and, for every numeric column, the mean and 95% interval half-width.

    The half-width is Student's t(0.975, n - 1) x s / sqrt(n) over the seeds
    (NaN with one seed). Columns: ``<metric>`` (mean) and ``<metric>.ci95``.
    """
    numeric = [c for c in table.columns if c not in (*grid_columns, "seed") and pd.api.types.is_numeric_dtype(table[c])]
    rows = []
    for key, part in table.groupby(list(grid_columns), sort=False, dropna=False):
        values = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(grid_columns, values, strict=True))
        row["seeds"] = len(part)
        for column in numeric:
            row[column] = float(part[column].mean())
            row[f"{column}.ci95"] = _half_width(part[column].to_numpy(dtype=float))
        rows.append(row)
    return pd.DataFrame(rows)


def log_axis_yerr(values: Any, ci95: Any) -> list[np.ndarray]:
    """Error bars of :func:`sweep_summary` means for a log-scale axis, as matplotlib's ``yerr``: [below, above].

    Above: the 95% half-width. Below: the same, but at most 90% of the value, so the bar stays above zero
    on the log scale. A missing half-width (a point with one seed) draws no bar.
    """
    means = np.asarray(values, dtype=float)
    half = np.nan_to_num(np.asarray(ci95, dtype=float))
    return [np.minimum(half, 0.9 * means), half]


def _half_width(values: np.ndarray) -> float:
    return ci95_half_width(values[np.isfinite(values)])


def _seeds_wanted(
    points: list[dict[str, Any]], rows: Mapping[tuple[int, int], dict[str, Any]], seeds: list[int], until: tuple[str, float], max_seeds: int
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
        if metric not in rows[(i, have[0])]:
            raise ScenarioError("<sweep>", [("until", f"no result column {metric!r}; e.g. all.write.mean_ms, db.write.p99_ms")])
        mean = float(np.nanmean(values)) if np.isfinite(values).any() else math.nan
        half = _half_width(values)
        if math.isfinite(half) and math.isfinite(mean) and half <= width * abs(mean):
            continue
        batch = min(len(seeds), max_seeds - len(have))
        start = max(have) + 1
        wanted[i] = list(range(start, start + batch))
    return wanted


@dataclass
class _Tally:
    """Rows in hand, rows computed by this sweep and tasks known so far, over every round (``until``)."""

    finished: int = 0
    computed: int = 0
    total: int = 0


def _run(
    tasks: list[tuple[int, int]],
    runs: list[Scenario],
    runner: _Runner,
    cache: _Store | None,
    progress: Callable[[SweepProgress], None] | None,
    tally: _Tally,
) -> dict[tuple[int, int], dict[str, Any]]:
    """Rows of ``tasks``: from the store, computed here, or from another sweep computing them into the same store."""
    started = time.perf_counter()
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    base = tally.finished
    tally.total += len(tasks)
    if cache is not None:
        for task in tasks:
            found = cache.get(task)
            if found is not None:
                rows[task] = found
    skipped = len(rows)
    queue = deque(task for task in tasks if task not in rows)
    waiting: list[tuple[int, int]] = []  # claimed by another sweep that is alive: its row will come

    def report() -> None:
        tally.finished = base + len(rows)
        if progress is not None:
            progress(SweepProgress(len(rows), len(tasks), skipped, time.perf_counter() - started))

    def take(task: tuple[int, int]) -> bool:
        """Claim ``task`` and start it, or take the row another sweep stored; False if another sweep still holds it."""
        nonlocal skipped
        got = cache.claim(task) if cache is not None else True
        if got is False:
            return False
        if got is True:
            point, seed = task
            runner.submit(task, runs[point], seed)
        else:
            rows[task] = got
            skipped += 1
            report()
        return True

    report()
    while queue or waiting or runner.busy:
        while queue and runner.free:
            task = queue.popleft()
            if not take(task):
                waiting.append(task)
        if not queue and waiting and runner.free:
            waiting = [task for task in waiting if not take(task)]
        if runner.busy:
            for task, row in runner.collect(POLL_S if waiting else None):
                rows[task] = row
                tally.computed += 1
                if cache is not None:
                    cache.put(task, row)
                report()
        elif waiting:
            time.sleep(POLL_S)
    return rows


@functools.cache
def code_digest() -> str:
    """Digest of the code that computes rows (``RESULT_MODULES``), read once per process and only by sweeps with a store."""
    return source_digest(modules=RESULT_MODULES)


def _task_key(variant: dict[str, Any], seed: int, duration: float | None) -> str:
    """What a row depends on: the resolved scenario (``model_dump(mode="json")``, before the duration is
    applied), the seed, the duration, the simcache version and the code that computes rows
    (:func:`code_digest`)."""
    text = json.dumps([variant, seed, duration, __version__, code_digest()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _one(run: Scenario, seed: int) -> dict[str, Any]:
    """A task: runs in a worker process (or this one) and returns a plain, picklable row."""
    return result_row(simulate(run, seed=seed))


class _Runner:
    """Runs tasks in this process, a local process pool or on Dask: ``submit`` while ``free``, ``collect`` finished rows.

    At most ``capacity`` tasks are submitted at a time (twice the workers, so none idles between tasks), so a
    sweep claims in a shared store only what it is about to compute. On an exception (Ctrl-C included) the pool's
    workers are terminated and Dask's futures cancelled: running tasks are abandoned, finished rows are kept.
    """

    def __init__(self, pool: ProcessPoolExecutor | None, client: Any, capacity: int):
        self._pool = pool
        self._client = client
        self._capacity = capacity
        self._serial: list[tuple[tuple[int, int], Scenario, int]] = []
        self._futures: dict[Any, tuple[int, int]] = {}
        self._dask_done: Any = None
        self._dask_futures: dict[Any, Any] = {}  # key -> Dask future, to cancel on a stop

    @classmethod
    def open(cls, stack: ExitStack, *, workers: int | None, client: Any, scheduler: str | None) -> _Runner:
        if client is not None or scheduler is not None:
            if client is None:
                client = stack.enter_context(_dask_client(scheduler or "local", workers))
            threads = sum(client.nthreads().values()) or 1
            runner = cls(None, client, 2 * threads)
            stack.push(runner._exit)
            return runner
        count = workers if workers is not None else os.cpu_count() or 1
        if count < 1:
            raise ScenarioError("<sweep>", [("workers", f"must be at least 1 (got {count})")])
        if count == 1:
            return cls(None, None, 1)
        # spawn: workers start clean (no forked threads from a host application such as Streamlit)
        context = multiprocessing.get_context("spawn")
        runner = cls(ProcessPoolExecutor(max_workers=count, mp_context=context, initializer=_exit_with_parent), None, 2 * count)
        stack.push(runner._exit)
        return runner

    @property
    def busy(self) -> bool:
        return bool(self._serial or self._futures)

    @property
    def free(self) -> bool:
        return len(self._serial) + len(self._futures) < self._capacity

    def submit(self, task: tuple[int, int], run: Scenario, seed: int) -> None:
        if self._client is not None:
            future = self._client.submit(_one, run, seed, pure=False)
            if self._dask_done is None:
                from dask.distributed import as_completed

                self._dask_done = as_completed()  # type: ignore[no-untyped-call]
            self._dask_done.add(future)
            self._futures[future.key] = task
            self._dask_futures[future.key] = future
        elif self._pool is not None:
            self._futures[self._pool.submit(_one, run, seed)] = task
        else:
            self._serial.append((task, run, seed))

    def collect(self, timeout: float | None) -> list[tuple[tuple[int, int], dict[str, Any]]]:
        """Rows finished by now; waits up to ``timeout`` seconds (``None``: until one is) for the first."""
        if self._serial:
            task, run, seed = self._serial.pop(0)
            return [(task, _one(run, seed))]
        if self._pool is not None:
            # at most `capacity` futures pending, so waiting on all of them per result stays cheap
            done, _ = wait(self._futures, timeout=timeout, return_when=FIRST_COMPLETED)
            return [(self._futures.pop(future), future.result()) for future in done]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:  # a Dask as_completed has no timeout of its own
            batch = self._dask_done.next_batch(block=False)
            if batch or (deadline is not None and time.monotonic() >= deadline):
                for future in batch:
                    self._dask_futures.pop(future.key, None)
                return [(self._futures.pop(future.key), future.result()) for future in batch]
            time.sleep(0.02)

    def _exit(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self._client is not None:
            if self._dask_futures:
                self._client.cancel(list(self._dask_futures.values()))
            return
        assert self._pool is not None
        if kind is None:
            self._pool.shutdown(wait=True)
            return
        # Stopped (Ctrl-C, SIGTERM, an error): do not wait for running tasks. The executor has no public way to
        # stop a running task, so its worker processes are terminated (their rows are lost; finished ones are stored).
        processes = list((self._pool._processes or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(5)


def _exit_with_parent() -> None:
    """Pool worker initializer: end this worker when the sweep's process dies; leave Ctrl-C to the sweep.

    A pool worker otherwise outlives a ``kill -9`` of its parent, blocked for
    good on the task queue (spawned workers hold that queue's write end too).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal reaches the whole group: the sweep stops its workers
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_when_ended, args=(parent,), name="exit-with-parent", daemon=True).start()


def _exit_when_ended(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()  # returns when the parent's sentinel pipe closes, i.e. when it has exited
    os._exit(1)


class _dask_client:
    """A Dask client for ``address``; ``"local"`` starts a local cluster of ``workers`` processes and stops it after."""

    def __init__(self, address: str, workers: int | None):
        self._address = address
        self._workers = workers
        self._cluster: Any = None
        self._client: Any = None

    def __enter__(self) -> Any:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ScenarioError("<sweep>", [("scheduler", "Dask is not installed; pip install 'simcache[dask]'")]) from None
        if self._address == "local":
            workers = self._workers or os.cpu_count() or 1
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)  # type: ignore[no-untyped-call]
            self._client = Client(self._cluster)  # type: ignore[no-untyped-call]
        else:
            try:
                self._client = Client(self._address, timeout="10s")  # type: ignore[no-untyped-call]
            except OSError as exc:
                raise ScenarioError("<sweep>", [("scheduler", f"cannot reach the Dask scheduler at {self._address}: {exc}")]) from None
        return self._client

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()


STORE_FORMAT = 2
"""The store layout this code writes and reads: tables ``meta`` (``format``, ``created_by``, ``written_by``), ``rows``
(``key``, ``row`` JSON, ``checksum``, ``label``, ``computed_by``), ``owners`` and ``claims``. Format 1 (a bare ``rows``
table of ``key`` and ``row``, simcache before format 2) is migrated when opened."""

STORE_TIMEOUT_S = 10.0
"""How long a store operation waits for another process's write to the same store before it is a store error."""

HEARTBEAT_S = 2.0
"""How often a sweep renews its claims (the ``owners.heartbeat`` timestamp, Unix seconds)."""

STALE_S = 30.0
"""A claim whose owner's heartbeat is older than this is taken over (sooner on the same host: when its pid is gone)."""

POLL_S = 0.2
"""How often a sweep looks for the rows of tasks another sweep is computing."""

_SQLITE_MAGIC = b"SQLite format 3\x00"
_TOTALS = ("array_write_mb_s", "peer_wire_mb_s", "destage_backlog_bytes")
_FINITE = (".count", ".iops", ".mb_s", *_TOTALS)  # columns that are never NaN or infinite in a computed row


class _Store:
    """Finished rows in a SQLite file, keyed by :func:`_task_key`; each row committed as it arrives.

    A task ``(point index, seed)`` is looked up by the key of ``variants[point]``
    with that seed and ``duration``.

    Write-ahead log with ``synchronous=NORMAL``: a commit reaches the
    operating system but is not flushed to disk, so a killed sweep keeps
    every finished row (an OS crash or power cut may lose the last few, never
    the file). A flushed commit took 0.7 ms on a quiet disk and 17 ms on a
    busy one, paid in the sweep's own process for every row; this one takes
    0.03 ms. The log lives next to the store (``<store>-wal``, ``-shm``).

    Every row carries a checksum (sha256 of its key and its JSON text), checked with the row's shape on every read:
    a row that fails is reported (:class:`SweepStoreWarning`, naming the point and seed), deleted and recomputed.

    Sweeps sharing a store share tasks: before a task runs, its sweep claims it (``claims``, naming the sweep in
    ``owners`` with its pid, host and a heartbeat a thread renews every :data:`HEARTBEAT_S`). Another sweep that
    wants the task waits for its row instead of computing it, unless the claim's owner is gone (its heartbeat is
    older than :data:`STALE_S`, or its pid has exited on this host), in which case it takes the claim over.
    Claims are released when the store is closed. Writes are ``BEGIN IMMEDIATE`` transactions that wait up to
    :data:`STORE_TIMEOUT_S` for one another.
    """

    def __init__(self, path: Path, variants: list[Scenario], duration: float | None, labels: list[str]):
        self.path = path
        self._variants = [variant.model_dump(mode="json") for variant in variants]  # once per point, not per seed
        self._duration = duration
        self._labels = labels
        self._required = [_required_columns(variant) for variant in variants]
        self._keys: dict[tuple[int, int], str] = {}  # a task's key, for its get() and then its put()
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        _check_path(path)
        with self._errors():
            self._db = sqlite3.connect(path, timeout=STORE_TIMEOUT_S, isolation_level=None)
        try:
            with self._errors():
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                with self._transaction():
                    self._open_format()
                    self._db.execute(
                        "INSERT OR REPLACE INTO owners VALUES (?, ?, ?, ?)", (self._owner, os.getpid(), socket.gethostname(), time.time())
                    )
        except BaseException:
            self._db.close()
            raise
        self._heartbeat = threading.Thread(target=self._beat, name="sweep-store-heartbeat", daemon=True)
        self._heartbeat.start()

    def _errors(self) -> _StoreErrors:
        return _StoreErrors(self.path)

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def _open_format(self) -> None:
        """Create a fresh store, migrate a format 1 one, or refuse what this code cannot read."""
        tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" in tables:
            meta = dict(self._db.execute("SELECT name, value FROM meta").fetchall())
            found = meta.get("format")
            if found is None or not str(found).isdigit():
                raise SweepStoreError.at(
                    self.path,
                    f"has no readable store format (meta.format = {found!r})",
                    "delete the file to start afresh, or give --store another path",
                )
            if int(found) > STORE_FORMAT:
                raise SweepStoreError.at(
                    self.path,
                    f"is in store format {found} (written by simcache {meta.get('written_by', '?')}); "
                    f"this simcache {__version__} reads formats 1 to {STORE_FORMAT}",
                    "run the sweep with that simcache or a newer one, give --store another path, or delete the file to start afresh",
                )
            if int(found) < 2:
                raise SweepStoreError.at(
                    self.path,
                    f"says store format {found}, which never had a meta table",
                    "delete the file to start afresh, or give --store another path",
                )
            self._check_columns()
            self._db.execute("UPDATE meta SET value = ? WHERE name = 'written_by'", (__version__,))
        elif tables == {"rows"} and self._columns("rows") == {"key", "row"}:
            self._create(migrate=True)
        elif not tables:
            self._create(migrate=False)
        else:
            raise SweepStoreError.at(
                self.path,
                f"is a SQLite database but not a sweep store (its tables: {', '.join(sorted(tables))})",
                "give --store another path; this file is left untouched",
            )

    def _columns(self, table: str) -> set[str]:
        return {name for _, name, *_ in self._db.execute(f"PRAGMA table_info({table})")}

    def _create(self, *, migrate: bool) -> None:
        """Format 2; from format 1, the rows stay (same rowids) and get their checksums now."""
        if migrate:
            self._db.execute("ALTER TABLE rows ADD COLUMN checksum TEXT")
            self._db.execute("ALTER TABLE rows ADD COLUMN label TEXT")
            self._db.execute("ALTER TABLE rows ADD COLUMN computed_by TEXT")
            old = self._db.execute("SELECT key, row FROM rows").fetchall()
            self._db.executemany("UPDATE rows SET checksum = ? WHERE key = ?", [(_checksum(key, text), key) for key, text in old])
        else:
            self._db.execute("CREATE TABLE rows (key TEXT PRIMARY KEY, row TEXT NOT NULL, checksum TEXT, label TEXT, computed_by TEXT)")
        self._db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.executemany(
            "INSERT INTO meta VALUES (?, ?)", [("format", str(STORE_FORMAT)), ("created_by", __version__), ("written_by", __version__)]
        )
        self._db.execute("CREATE TABLE owners (owner TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, heartbeat REAL NOT NULL)")
        self._db.execute("CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, since REAL NOT NULL)")

    def _check_columns(self) -> None:
        wanted = {
            "rows": {"key", "row", "checksum", "label", "computed_by"},
            "owners": {"owner", "pid", "host", "heartbeat"},
            "claims": {"key", "owner", "since"},
        }
        for table, columns in wanted.items():
            missing = sorted(columns - self._columns(table))
            if missing:
                raise SweepStoreError.at(
                    self.path,
                    f"has no {table} table" if missing == sorted(columns) else f"its {table} table lacks column(s) {', '.join(missing)}",
                    "the store was edited out of shape: delete the file to start afresh, or give --store another path",
                )

    def _key(self, task: tuple[int, int]) -> str:
        key = self._keys.get(task)
        if key is None:
            point, seed = task
            key = self._keys[task] = _task_key(self._variants[point], seed, self._duration)
        return key

    def describe(self, task: tuple[int, int]) -> str:
        """``point <column>=<value>, ..., seed <seed>``: how messages name a task."""
        point, seed = task
        return f"point {self._labels[point]}, seed {seed}" if self._labels[point] else f"seed {seed}"

    def get(self, task: tuple[int, int]) -> dict[str, Any] | None:
        """The task's stored row if it passes its checks; a failing row is reported, deleted and ``None`` returned."""
        key = self._key(task)
        with self._errors():
            found = self._db.execute("SELECT row, checksum FROM rows WHERE key = ?", (key,)).fetchone()
        if found is None:
            return None
        row, problem = self._verify(task, key, found[0], found[1])
        if row is not None:
            return row
        warnings.warn(SweepStoreWarning(f"{self.describe(task)}: stored row is corrupt ({problem}); recomputing"), stacklevel=2)
        with self._errors():  # only that row: another sweep may have replaced it meanwhile
            self._db.execute("DELETE FROM rows WHERE key = ? AND row IS ? AND checksum IS ?", (key, found[0], found[1]))
        return None

    def _verify(self, task: tuple[int, int], key: str, text: Any, checksum: Any) -> tuple[dict[str, Any] | None, str]:
        """(row, "") or (None, what is wrong with it)."""
        if not isinstance(text, str):
            return None, f"its row is {type(text).__name__}, not JSON text"
        if not checksum:
            return None, "no checksum"
        if checksum != _checksum(key, text):
            return None, "checksum mismatch"
        try:
            row = json.loads(text)
        except ValueError:
            return None, "not valid JSON"
        if not isinstance(row, dict):
            return None, f"a JSON {type(row).__name__}, not an object"
        missing = [column for column in self._required[task[0]] if column not in row]
        if missing:
            return None, f"{len(missing)} column(s) missing: {', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}"
        for column, value in row.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, str))):
                return None, f"{column} is {json.dumps(value)[:40]}, not a number or a name"
            if isinstance(value, float) and not math.isfinite(value):
                if column.endswith(_FINITE):
                    return None, f"{column} is {value}"
                count = row.get(column.rsplit(".", 1)[0] + ".count")
                if not math.isnan(value) or (isinstance(count, (int, float)) and count > 0):
                    return None, f"{column} is {value} with {count} I/Os"
        return row, ""

    def claim(self, task: tuple[int, int]) -> dict[str, Any] | bool:
        """The task's row if one is stored by now; True if this sweep now holds its claim (compute it);
        False if a live sweep holds it (wait for its row)."""
        key = self._key(task)
        now = time.time()
        with self._errors(), self._transaction():
            found = self._db.execute("SELECT row, checksum FROM rows WHERE key = ?", (key,)).fetchone()
            if found is not None:
                row, _ = self._verify(task, key, found[0], found[1])
                if row is not None:
                    return row
            holder = self._db.execute(
                "SELECT claims.owner, owners.pid, owners.host, owners.heartbeat FROM claims LEFT JOIN owners USING (owner) WHERE key = ?",
                (key,),
            ).fetchone()
            if holder is not None and holder[0] != self._owner and _alive(holder[1], holder[2], holder[3], now):
                return False
            self._db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?)", (key, self._owner, now))
        return True

    def put(self, task: tuple[int, int], row: dict[str, Any]) -> None:
        key = self._key(task)
        text = json.dumps(row)
        with self._errors(), self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO rows (key, row, checksum, label, computed_by) VALUES (?, ?, ?, ?, ?)",
                (key, text, _checksum(key, text), self.describe(task), self._owner),
            )
            self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self._owner))

    def _beat(self) -> None:
        """Heartbeat thread: renew this sweep's claims until the store closes (its own connection: one per thread)."""
        try:
            db = sqlite3.connect(self.path, timeout=STORE_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error:
            return
        with closing(db):
            while not self._stop.wait(HEARTBEAT_S):
                try:
                    db.execute("UPDATE owners SET heartbeat = ? WHERE owner = ?", (time.time(), self._owner))
                except sqlite3.Error:
                    continue  # busy for long or full: the next beat tries again, and claims last STALE_S

    def close(self) -> None:
        """Stop the heartbeat and release this sweep's claims (tasks it did not finish are free for others)."""
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        try:
            with self._transaction():
                self._db.execute("DELETE FROM claims WHERE owner = ?", (self._owner,))
                self._db.execute("DELETE FROM owners WHERE owner = ?", (self._owner,))
        except sqlite3.Error:
            pass  # claims of a sweep that is gone are taken over anyway (stale heartbeat or exited pid)
        finally:
            self._db.close()


class SweepStoreWarning(UserWarning):
    """A stored row failed its checks (checksum, JSON, columns, values): it is not used, and its task is recomputed."""


def _checksum(key: str, text: str) -> str:
    return hashlib.sha256(f"{key}\n{text}".encode()).hexdigest()


def _required_columns(variant: Scenario) -> list[str]:
    """The columns :func:`result_row` always writes for this scenario (more may follow)."""
    groups = [*(group.name for group in variant.groups), "all"]
    cells = [f"{group}.{op}.{metric}" for group in groups for op in ("read", "write") for metric in ESTIMATED_COLUMNS]
    return [*cells, "bottleneck", "bottleneck_utilization", *_TOTALS]


def _alive(pid: Any, host: Any, heartbeat: Any, now: float) -> bool:
    """Whether a claim's owner may still finish it: a recent heartbeat and, on this host, a running pid."""
    if not isinstance(heartbeat, (int, float)) or now - heartbeat > STALE_S:
        return False
    if host != socket.gethostname() or not isinstance(pid, int):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _check_path(path: Path) -> None:
    """What a path must be before SQLite opens it (SQLite's own errors say less: "unable to open database file")."""
    if path.is_dir():
        raise SweepStoreError.at(path, "is a directory, not a file", f"give --store a file path, e.g. {path / 'sweep.sqlite'}")
    if not path.parent.is_dir():
        raise SweepStoreError.at(
            path, f"its folder {path.parent} does not exist", "create the folder, or give --store a path in an existing one"
        )
    if not path.exists():
        if not os.access(path.parent, os.W_OK):
            raise SweepStoreError.at(
                path, f"cannot be created: its folder {path.parent} is not writable", "give --store a path in a writable folder"
            )
        return
    if not path.is_file():
        raise SweepStoreError.at(path, "is not a regular file (a FIFO, device or socket)", "give --store a path to a file")
    if not os.access(path, os.R_OK | os.W_OK) or not os.access(path.parent, os.W_OK):
        raise SweepStoreError.at(
            path,
            "is not writable (a sweep writes every finished row, and SQLite writes <store>-wal and -shm next to it)",
            "make the file and its folder writable (chmod u+w), or give --store another path",
        )
    with path.open("rb") as file:
        head = file.read(len(_SQLITE_MAGIC))
    if head and head != _SQLITE_MAGIC:
        raise SweepStoreError.at(
            path,
            f"is not a SQLite file (it starts with {head[:8]!r}, not 'SQLite format 3')",
            "give --store another path (or delete this file if it is a store gone bad); it is left untouched",
        )


class _StoreErrors:
    """Context manager: SQLite's errors as :class:`SweepStoreError` saying what to do."""

    def __init__(self, path: Path):
        self._path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, sqlite3.Error):
            raise _store_error(self._path, exc) from None


def _store_error(path: Path, exc: sqlite3.Error) -> SweepStoreError:
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return SweepStoreError.at(
            path,
            f"stayed locked by another program for more than {STORE_TIMEOUT_S:g} s (SQLite: {exc})",
            "close the program holding it (e.g. a sqlite3 shell inside a transaction), or give --store another path",
        )
    if name == "SQLITE_FULL":
        return SweepStoreError.at(
            path,
            f"cannot grow: the disk is full (SQLite: {exc})",
            "free space on that disk, or give --store a path on another one; the rows finished so far are kept",
        )
    if name == "SQLITE_NOTADB":
        return SweepStoreError.at(path, f"is not a SQLite file (SQLite: {exc})", "give --store another path; this file is left untouched")
    if name.startswith("SQLITE_READONLY") or name == "SQLITE_CANTOPEN":
        return SweepStoreError.at(
            path, f"cannot be written (SQLite: {exc})", "make it and its folder writable, or give --store another path"
        )
    if name.startswith("SQLITE_CORRUPT"):
        return SweepStoreError.at(path, f"is damaged (SQLite: {exc})", "delete the file to start afresh, or give --store another path")
    return SweepStoreError.at(
        path, f"failed (SQLite {name or 'error'}: {exc})", "give --store another path, or delete the file to start afresh"
    )


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception) on a connection in autocommit mode: the write
    lock is taken at the start, so two sweeps' read-then-write steps (claims) never interleave."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if kind is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:
            self._db.execute("ROLLBACK")
