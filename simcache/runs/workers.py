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

import asyncio
import contextlib
import multiprocessing
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from typing import Any

from simcache.base.errors import ScenarioError, echo

__all__ = [
    "CONNECT_TIMEOUT_S",
    "Row",
    "Runner",
    "SchedulerError",
    "Task",
    "WorkerReimportError",
    "reach_scheduler",
    "refuse_worker_reimport",
    "replication_executor",
    "scheduler_address",
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
        process.kill()  # (the workers ignore SIGTERM: _exit_with_parent)
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
    # Ctrl-C in a terminal reaches the whole group, and so does a SIGTERM sent to it (timeout,
    # systemd, docker stop, a batch scheduler): the sweep stops its workers (stop_pool), keeping the
    # rows finished; a worker ended by the signal first had broken the pool, and the sweep had
    # ended in a traceback with nothing written (review 67a F2)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(
            target=_exit_when_ended, args=(parent,), name="exit-with-parent", daemon=True
        ).start()


def _exit_when_ended(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()  # returns when the parent's sentinel pipe closes, i.e. when it has exited
    os._exit(1)


class SchedulerError(ScenarioError):
    """A Dask scheduler (``--scheduler``, ``scheduler=``) that cannot be used: an address not of
    the form ``local`` or ``tcp://HOST:PORT``, nothing accepting connections there, something there
    that is not a Dask scheduler, or Dask not installed.

    One line, ``--scheduler ADDRESS: what is wrong and what to give``; ``source`` is
    ``--scheduler ADDRESS``, the one problem's field ``--scheduler``. A subclass of
    :class:`ScenarioError`, so whatever reports bad input reports these too.
    """

    HEADING = "unusable Dask scheduler"

    def __init__(self, source: str, problems: Sequence[tuple[str, str]]):
        super().__init__(source, problems)
        self.args = ("; ".join(f"{source}: {message}" for _, message in self.problems),)

    def __str__(self) -> str:
        return str(self.args[0])

    @classmethod
    def at(cls, address: object, problem: str) -> SchedulerError:
        """The one ``problem`` with the scheduler ``address`` (as given)."""
        shown = address if isinstance(address, str) and _PLAIN.fullmatch(address) else echo(address)
        return cls(f"--scheduler {shown}", [("--scheduler", problem)])


CONNECT_TIMEOUT_S = 10.0
"""How long a Dask scheduler's address may take to accept a connection, and then to answer as a
Dask scheduler, before the run is refused (:func:`reach_scheduler`)."""
_SCHEMES = ("tcp", "tls", "ws", "wss")
"""Dask's network protocols; ``tcp`` is the default when an address names none."""
_PLAIN = re.compile(r"[!-~]{1,100}")
"""An address shown as given in a message: printable, no spaces, not long (others are quoted)."""
_ADDRESS = re.compile(
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>.*?)(?::(?P<port>[^:\]]*))?"
)
_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+")
_FORM = (
    '"local" (a local Dask cluster) or a running scheduler\'s tcp://HOST:PORT '
    "(e.g. tcp://10.0.0.5:8786)"
)
_NOT_DASK = "is it a Dask scheduler's address? e.g. tcp://HOST:8786"


def scheduler_address(address: object) -> tuple[str, int] | None:
    """The host and port of the Dask scheduler ``address`` (``tcp://HOST:PORT``; ``HOST:PORT``,
    ``tls://``, ``ws://`` and ``wss://`` as Dask takes them too); ``None`` for ``"local"`` (a local
    cluster). Raises :class:`SchedulerError` for any other value, before anything runs: the one
    check of ``simcache sweep --scheduler``, ``simcache size --scheduler`` and ``scheduler=``."""
    if address == "local":
        return None
    match = _ADDRESS.fullmatch(address) if isinstance(address, str) else None
    scheme, host, port = (match["scheme"], match["host"], match["port"]) if match else ("",) * 3
    if not isinstance(address, str):
        problem = f"{type(address).__name__} given, not str"
    elif not address:
        problem = "is empty"
    elif scheme is not None and scheme.lower() not in _SCHEMES:
        problem = f"{scheme}:// is not a protocol of Dask's"
    elif port is None:
        problem = "has no port (HOST:PORT)"
    elif not _HOST.fullmatch(host):
        problem = f"{echo(host)} is not a host name or IP address" if host else "has no host"
    elif not port.isdigit():
        problem = f"the port {echo(port)} is not a number"
    elif not 1 <= int(port) <= 65535:
        problem = f"the port {int(port)} is not between 1 and 65535"
    else:
        return host.strip("[]"), int(port)
    raise SchedulerError.at(address, f"not a Dask scheduler address: {problem}; give {_FORM}")


def reach_scheduler(address: object, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`SchedulerError` unless a Dask scheduler answers at ``address`` (for
    ``"local"``: unless Dask is installed), within ``timeout`` seconds to accept the connection and
    as many to answer.

    Whatever the attempt raises (a refused or silent port, an HTTP server's reply read as a
    Dask frame, a closed connection) becomes that one error. The attempt runs in a thread of its
    own (with its own event loop: a notebook's is running), so Ctrl-C stops the wait at once.
    """
    where = scheduler_address(address)
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise SchedulerError.at(
            address, "Dask is not installed; pip install 'simcache[dask]'"
        ) from None
    if where is None:
        return
    answer: list[str] = []

    def attempt() -> None:
        try:
            answer.append(asyncio.run(_ask_scheduler(str(address), where, timeout)))
        except BaseException:  # anything: a garbage reply raises even MemoryError
            answer.append(f"no Dask scheduler answered there within {timeout:g} s ({_NOT_DASK})")

    thread = threading.Thread(target=attempt, name="simcache-scheduler-check", daemon=True)
    thread.start()
    deadline = time.monotonic() + 2 * timeout + 5  # each step is bounded: a last resort
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(0.1)  # in short waits: Ctrl-C interrupts the wait
    problem = answer[0] if answer else f"no Dask scheduler answered there ({_NOT_DASK})"
    if problem:
        raise SchedulerError.at(address, problem)


async def _ask_scheduler(address: str, where: tuple[str, int], timeout: float) -> str:
    """What is wrong with the Dask scheduler at ``address`` (``""``: nothing): Dask's connection
    and handshake within ``timeout`` (a refused connection retried meanwhile, as Dask does while a
    scheduler starts), then an ``identity`` call within ``timeout`` too.

    On a failure, one plain TCP connection to ``where`` tells the two cases apart: nothing
    accepting connections there, or something that is not a Dask scheduler (made only then: a
    scheduler logs a connection that closes before Dask's handshake)."""
    from distributed.comm.core import connect
    from distributed.core import send_recv
    from distributed.security import Security

    try:
        # as a Client connects: with the TLS settings of Dask's configuration, if any
        security = Security().get_connection_args("client")  # type: ignore[no-untyped-call]
        comm = await asyncio.wait_for(
            connect(address, timeout=timeout, **security),  # type: ignore[no-untyped-call]
            timeout,
        )
    except Exception:  # anything: a garbage reply raises even MemoryError
        refused = await _refused(where)
        if refused is None:
            return f"no Dask scheduler answered there within {timeout:g} s ({_NOT_DASK})"
        return (
            f"cannot reach the Dask scheduler: nothing accepted a connection there within "
            f"{timeout:g} s ({refused}); is the scheduler running, at this address?"
        )
    try:
        identity = await asyncio.wait_for(send_recv(comm, op="identity"), timeout)
    except Exception:  # anything, as above
        return f"no Dask scheduler answered there within {timeout:g} s ({_NOT_DASK})"
    finally:
        comm.abort()
    kind = identity.get("type") if isinstance(identity, dict) else None
    if kind != "Scheduler":
        return (
            f"a Dask {kind or 'server'} answered there, not a scheduler: give the scheduler's "
            "address (e.g. tcp://HOST:8786)"
        )
    return ""


async def _refused(where: tuple[str, int]) -> str | None:
    """Why a TCP connection to ``where`` fails, in a few words; ``None`` if it is accepted."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(*where), 2.0)
    except Exception as exc:  # OSError, TimeoutError, or whatever a resolver raises
        return _why(exc)
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return None


def _why(error: BaseException) -> str:
    """The reason a connection attempt failed, in a few words."""
    if isinstance(error, TimeoutError):
        return "no answer"
    if isinstance(error, socket.gaierror):
        return str(error.strerror or error)
    if isinstance(error, OSError) and error.errno:
        return os.strerror(error.errno)
    return str(error) or type(error).__name__


class _dask_client:
    """A Dask client for ``address``; ``"local"`` starts a local cluster of ``workers`` processes
    and stops it after. Any other address must answer as a Dask scheduler within
    :data:`CONNECT_TIMEOUT_S` (:func:`reach_scheduler`), else :class:`SchedulerError`."""

    def __init__(self, address: str, workers: int | None):
        self._address = address
        self._workers = workers
        self._cluster: Any = None
        self._client: Any = None

    def __enter__(self) -> Any:
        reach_scheduler(self._address)  # the address, Dask installed, a scheduler there
        from dask.distributed import Client, LocalCluster

        if self._address == "local":
            workers = self._workers or os.cpu_count() or 1
            self._cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )  # type: ignore[no-untyped-call]
            self._client = Client(self._cluster)  # type: ignore[no-untyped-call]
        else:
            try:
                self._client = Client(  # type: ignore[no-untyped-call]
                    self._address, timeout=f"{CONNECT_TIMEOUT_S:g}s"
                )
            except Exception as exc:  # it answered a moment ago: say what happened now
                raise SchedulerError.at(
                    self._address,
                    f"cannot reach the Dask scheduler: {type(exc).__name__}: {exc}"[:300],
                ) from None
        return self._client

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
