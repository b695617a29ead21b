"""Where independent runs execute: in this process, on a local process pool or on Dask, and how
they are stopped without waiting for the runs under way.

A sweep's tasks go through a :class:`Runner` (``submit`` while ``free``, ``collect`` what finished);
a check's or a size search's seeds through the executor of :func:`replication_executor`. Pool
workers are spawned (they start clean, with no threads forked from a host application such as
Streamlit), ignore Ctrl-C (the sweep or check stops them) and exit when their parent process dies,
even by ``kill -9`` (:func:`_exit_with_parent`). :func:`stop_pool` ends a pool's running tasks by
terminating its workers: an executor has no public way to stop a running task.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from typing import Any

from simcache.base.errors import ScenarioError

__all__ = [
    "Row",
    "Runner",
    "Task",
    "WorkerReimportError",
    "refuse_worker_reimport",
    "replication_executor",
    "stop_pool",
]

Task = tuple[int, int]
"""A sweep's task: (grid point index, seed)."""
Row = dict[str, Any]
"""What a task gives: one plain, picklable row."""


class Runner:
    """Runs tasks in this process, a local process pool or on Dask: ``submit`` while ``free``,
    ``collect`` finished rows.

    At most ``capacity`` tasks are submitted at a time (twice the workers, so none idles between
    tasks), so a sweep claims in a shared store only what it is about to compute. On an exception
    (Ctrl-C included) the pool's workers are terminated and Dask's futures cancelled: running tasks
    are abandoned, finished rows are kept.
    """

    def __init__(self, pool: ProcessPoolExecutor | None, client: Any, capacity: int):
        self._pool = pool
        self._client = client
        self._capacity = capacity
        self._serial: list[tuple[Task, Callable[..., Row | None], tuple[Any, ...]]] = []
        self._futures: dict[Any, Task] = {}
        self._dask_done: Any = None
        self._dask_futures: dict[Any, Any] = {}  # key -> Dask future, to cancel on a stop

    @classmethod
    def open(
        cls, stack: ExitStack, *, workers: int | None, client: Any, scheduler: str | None
    ) -> Runner:
        """The runner for ``workers`` local processes (default one per core; 1: this process),
        or for Dask (``client``, or ``scheduler``: ``"local"`` or an address); closed with
        ``stack``."""
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
        runner = cls(
            ProcessPoolExecutor(
                max_workers=count, mp_context=context, initializer=_exit_with_parent
            ),
            None,
            2 * count,
        )
        stack.push(runner._exit)
        return runner

    @property
    def in_process(self) -> bool:
        """Tasks run in this process (one worker), one at a time when collected."""
        return self._pool is None and self._client is None

    @property
    def busy(self) -> bool:
        return bool(self._serial or self._futures)

    @property
    def free(self) -> bool:
        return len(self._serial) + len(self._futures) < self._capacity

    def submit(self, task: Task, function: Callable[..., Row | None], *args: Any) -> None:
        """Start ``function(*args)`` for ``task`` (in this process: when collected). ``function``
        must be picklable (a module's function) for a pool or Dask; in this process it may return
        ``None`` (stopped part way: no row)."""
        if self._client is not None:
            future = self._client.submit(function, *args, pure=False)
            if self._dask_done is None:
                from dask.distributed import as_completed

                self._dask_done = as_completed()  # type: ignore[no-untyped-call]
            self._dask_done.add(future)
            self._futures[future.key] = task
            self._dask_futures[future.key] = future
        elif self._pool is not None:
            self._futures[self._pool.submit(function, *args)] = task
        else:
            self._serial.append((task, function, args))

    def collect(self, timeout: float | None) -> list[tuple[Task, Row]]:
        """Rows finished by now; waits up to ``timeout`` seconds (``None``: until one is) for the
        first."""
        if self._serial:
            task, function, args = self._serial.pop(0)
            row = function(*args)
            return [] if row is None else [(task, row)]
        if self._pool is not None:
            # at most `capacity` futures pending, so waiting on all of them per result stays cheap
            done, _ = wait(self._futures, timeout=timeout, return_when=FIRST_COMPLETED)
            try:
                return [(self._futures.pop(future), future.result()) for future in done]
            except BrokenProcessPool as exc:
                raise _explain_broken_pool(exc) from None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:  # a Dask as_completed has no timeout of its own
            batch = self._dask_done.next_batch(block=False)
            if batch or (deadline is not None and time.monotonic() >= deadline):
                for future in batch:
                    self._dask_futures.pop(future.key, None)
                return [(self._futures.pop(future.key), future.result()) for future in batch]
            time.sleep(0.02)

    def _exit(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        if self._client is not None:
            if self._dask_futures:
                self._client.cancel(list(self._dask_futures.values()))
            return
        assert self._pool is not None
        if kind is None:
            self._pool.shutdown(wait=True)
            return
        # Stopped (Ctrl-C, SIGTERM, an error): do not wait for running tasks (their rows are lost;
        # finished ones are stored).
        stop_pool(self._pool)


class WorkerReimportError(RuntimeError):
    """A run was started while a spawned worker process imports the main script again: the
    script's call is not under ``if __name__ == "__main__":``."""


def refuse_worker_reimport(call: str) -> None:
    """Raise :class:`WorkerReimportError` if this process is a spawned worker still importing the
    parent's main script (as ``__mp_main__``).

    Pool workers are spawned, and a spawned process runs the main script again (as
    ``__mp_main__``) to find its functions; an unguarded ``simcache.sweep(...)`` at the script's
    top level would then start a sweep in every worker, each failing, and the parent would see only
    ``BrokenProcessPool`` (review 66c F3). ``_inheriting`` is what :mod:`multiprocessing` itself
    checks: it is set only while a spawned process bootstraps (``parent_process()`` is not set yet
    then), so a worker's tasks may still call ``call`` later.
    """
    # while it runs, runpy holds the script as sys.modules["__mp_main__"]
    if getattr(multiprocessing.current_process(), "_inheriting", False) and (
        "__mp_main__" in sys.modules
    ):
        raise WorkerReimportError(
            f"{call} was called while a worker process imports your script again (workers are "
            'spawned): put the call under `if __name__ == "__main__":`, or run it in a notebook, '
            "or pass workers=1"
        )


def _explain_broken_pool(exc: BrokenProcessPool) -> BrokenProcessPool:
    """``exc`` with a note on the likeliest cause when the main module is a script: its worker
    processes failed to start because they ran an unguarded call to the script's sweep."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    spec = getattr(main, "__spec__", None)
    ours = (spec is not None and spec.name.startswith("simcache")) or (
        script is not None and os.path.basename(script) == "simcache"
    )  # simcache's own command line (`simcache sweep`, `python -m simcache`): not a user script
    if script and not ours:
        exc.add_note(
            "simcache: if a worker failed as it started (see its traceback above), your script "
            "likely calls simcache at its top level: put the call under "
            '`if __name__ == "__main__":`'
        )
    return exc


def stop_pool(pool: Executor) -> None:
    """Stop a process pool without waiting for its running tasks: the executor has no public way
    to stop a running task, so its worker processes are terminated. Other executors (Dask's) get
    their queued tasks cancelled."""
    if not isinstance(pool, ProcessPoolExecutor):
        pool.shutdown(wait=False, cancel_futures=True)
        return
    processes = list((pool._processes or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(5)


def replication_executor(
    stack: ExitStack, *, workers: int | None, scheduler: str | None, what: str = "<check>"
) -> Executor | None:
    """An executor for independent runs (a check's seeds), closed with ``stack``: the Dask
    cluster's when ``scheduler`` is given ("local" or an address), else a pool of ``workers``
    processes (default one per core); ``None`` for one worker (run in this process)."""
    refuse_worker_reimport("a simcache run")
    if scheduler is not None:
        client = stack.enter_context(_dask_client(scheduler, workers))
        executor: Executor = client.get_executor()
        return executor
    count = workers if workers is not None else os.cpu_count() or 1
    if count < 1:
        raise ScenarioError(what, [("--workers", f"must be at least 1 (got {count})")])
    if count == 1:
        return None
    context = multiprocessing.get_context("spawn")  # as the sweep's pool: workers start clean
    pool = ProcessPoolExecutor(max_workers=count, mp_context=context, initializer=_exit_with_parent)

    def close(kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if kind is None:
            pool.shutdown(wait=True)
        else:  # an error or a second Ctrl-C: do not wait for the runs under way
            stop_pool(pool)

    stack.push(close)
    return pool


def _exit_with_parent() -> None:
    """Pool worker initializer: end this worker when the sweep's process dies; leave Ctrl-C to the
    sweep.

    A pool worker otherwise outlives a ``kill -9`` of its parent, blocked for
    good on the task queue (spawned workers hold that queue's write end too).
    """
    # Ctrl-C in a terminal reaches the whole group: the sweep stops its workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(
            target=_exit_when_ended, args=(parent,), name="exit-with-parent", daemon=True
        ).start()


def _exit_when_ended(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()  # returns when the parent's sentinel pipe closes, i.e. when it has exited
    os._exit(1)


class _dask_client:
    """A Dask client for ``address``; ``"local"`` starts a local cluster of ``workers`` processes
    and stops it after."""

    def __init__(self, address: str, workers: int | None):
        self._address = address
        self._workers = workers
        self._cluster: Any = None
        self._client: Any = None

    def __enter__(self) -> Any:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ScenarioError(
                "<sweep>", [("scheduler", "Dask is not installed; pip install 'simcache[dask]'")]
            ) from None
        if self._address == "local":
            workers = self._workers or os.cpu_count() or 1
            self._cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )  # type: ignore[no-untyped-call]
            self._client = Client(self._cluster)  # type: ignore[no-untyped-call]
        else:
            try:
                self._client = Client(self._address, timeout="10s")  # type: ignore[no-untyped-call]
            except OSError as exc:
                raise ScenarioError(
                    "<sweep>",
                    [("scheduler", f"cannot reach the Dask scheduler at {self._address}: {exc}")],
                ) from None
        return self._client

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
