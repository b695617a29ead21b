"""Sweep benchmark: parallel speed-up on 2 local workers, and a killed sweep resumed without
recomputation.

Run from the repository root:

    .venv/bin/python bench/bench_sweep.py [--rounds N] [--duration T] [--json PATH]

The sweep is the default scenario family (``scenarios/default.toml``) over a
200-point grid (peer link x database policy x database IOPS x database read
fraction) with 3 seeds: 600 runs of a short simulation (2 simulated seconds by
default; ``simulate`` then shortens the 4 s warm-up to a tenth of the duration).

Everything runs on a copy of ``simcache/`` and the scenario taken at the
start (this process, pool workers, command-line runs), so edits others make
to the checkout meanwhile do not mix two versions into one measurement.

1. **Speed-up.** The whole sweep with 1 worker (no pool) and with 2 local
   workers (a spawned process pool), each in a fresh process into a fresh
   SQLite store, in interleaved rounds (1, 2, halves; then halves, 2, 1;
   ...), so a slow minute of the shared machine hits every variant. Each
   time is that of the ``sweep`` call (imports excluded); the 2-worker time
   includes starting the pool and its workers' imports. The headline is the median over rounds of
   (1-worker wall) / (2-worker wall). Target: >= 1.7; below it the bench
   prints "missed", not an error, because the machine is shared.
   Two references tell the pool's cost from the machine's: **2 halves**, two
   plain processes started together, each simulating every other run (no
   pool, no store, imports not timed), is the best any 2-process scheme gets
   from the machine at that moment; and a counting loop run alone and twice
   at once is the machine's own 2-process scaling. Each timed run also
   records the cores other jobs used meanwhile (machine busy time from
   /proc/stat minus this process and its children).
2. **Kill and resume**, with the ``simcache sweep`` command line and 2 workers
   on one store: ``kill -9`` at about half the rows, rerun and interrupt with
   SIGINT at about three quarters, rerun to the end. After each stop the
   bench checks that the sweep's workers exited too; after each rerun that it
   took every kept row from the store (its progress line says how many) and
   wrote exactly the missing ones (SQLite rowids: a recomputed row would get a
   new one); at the end, that the table is identical, bit for bit, to the
   uninterrupted 2-worker table of step 1 (its CSV byte for byte, and the
   store read back as a DataFrame with exact comparison). The 1-worker and
   2-worker tables of step 1 must be identical as well.
3. **Store cost** (``--store-cost`` runs only this): the store's work per
   task of the 600, on a fresh store in this process: the lookup of a task
   not yet stored, its claim (``BEGIN IMMEDIATE``, the claim row), writing its
   row (checksum, row, claim released) and, on a rerun, reading and checking
   a stored row (checksum, JSON, columns, values); median over 3 rounds, next
   to one simulation of the sweep's first point. Target: the store's cost of a
   computed task below 1% of a simulation.

Exit status 1 if a check of step 2 (or the 1-vs-2-worker identity) fails.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import gc
import hashlib
import importlib.util
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
# Others may edit the checkout while this runs for minutes, and every pool worker and command-line
# run imports simcache afresh: all of them use one copy of simcache/ (and the scenario) taken at the
# start.
if "BENCH_SWEEP_SOURCE" not in os.environ:
    _snapshot = Path(tempfile.mkdtemp(prefix="bench_sweep_source_"))
    # simcache.native.sources.copy_package (the compiled engine included), read from its file:
    # importing simcache from the checkout here would put that copy in sys.modules instead of the
    # snapshot.
    _spec = importlib.util.spec_from_file_location(
        "bench_engine_sources", ROOT / "simcache" / "native" / "sources.py"
    )
    assert _spec is not None and _spec.loader is not None
    _sources = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_sources)
    _sources.copy_package(_snapshot, ROOT)
    shutil.copy(ROOT / "scenarios" / "default.toml", _snapshot / "default.toml")
    os.environ["BENCH_SWEEP_SOURCE"] = str(_snapshot)
    atexit.register(shutil.rmtree, _snapshot, ignore_errors=True)
SOURCE = Path(os.environ["BENCH_SWEEP_SOURCE"])
sys.path.insert(0, str(SOURCE))

import simcache  # noqa: E402
from simcache.runs.sweep import SweepProgress, grid_points, result_row, sweep  # noqa: E402

# isort: split
from bench_engine import spread  # noqa: E402  (after simcache: it imports the checkout's otherwise)
from machine import load_average, machine_facts  # noqa: E402

while str(ROOT) in sys.path:  # bench_engine puts the checkout first; spawned workers copy this path
    sys.path.remove(str(ROOT))
assert Path(simcache.__file__).is_relative_to(SOURCE), simcache.__file__

SCENARIO = SOURCE / "default.toml"
GRID: dict[str, list[Any]] = {  # 2 x 4 x 5 x 5 = 200 points
    "cluster.peer_link": ["1GbE", "10GbE"],
    "groups.db.policy": ["WT", "WB+0", "WB+1", "WB+2"],
    "groups.db.workload.iops": [60, 120, 180, 240, 300],
    "groups.db.workload.read_fraction": [0.2, 0.4, 0.6, 0.8, 0.9],
}
SEEDS = [1, 2, 3]
TARGET_SPEEDUP = 1.7
PROGRESS = re.compile(r"(\d+)/(\d+) runs done(?: \((\d+) from the store\))?")


# -- machine ---------------------------------------------------------------------------------------


def busy_and_steal_s() -> tuple[float, float]:
    """Seconds of CPU the whole machine has been busy (steal included) and stolen by the
    hypervisor since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq + steal) / tick, steal / tick


def cpu_of_this_process_and_children() -> tuple[float, float]:
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class Meter:
    """Wall time, CPU of this process and of its finished children, and what the rest of the machine
    used meanwhile.

    ``other_cores`` is machine busy time minus ours, over the wall time: the number of cores
    other jobs took on average (0 on a quiet machine, up to 2 on a 2-core one).
    """

    def __enter__(self) -> Meter:
        gc.collect()
        self._load = load_average()[0]
        self._busy, self._steal = busy_and_steal_s()
        self._own, self._children = cpu_of_this_process_and_children()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s = time.perf_counter() - self._started
        busy, steal = busy_and_steal_s()
        own, children = cpu_of_this_process_and_children()
        ours = own - self._own + children - self._children
        self.figures = {
            "wall_s": self.wall_s,
            "this_process_cpu_s": own - self._own,
            "worker_cpu_s": children - self._children,
            "other_cores": max(0.0, busy - self._busy - ours) / self.wall_s,
            "steal_s": steal - self._steal,
            "load_before": self._load,
            "load_after": load_average()[0],
        }


def _count(n: int) -> float:
    started = time.perf_counter()
    total = 0
    for i in range(n):
        total += i
    return time.perf_counter() - started


def machine_scaling(n: int = 10_000_000, repeats: int = 3) -> dict[str, float]:
    """A counting loop alone, then twice at once in two processes (median of ``repeats``): what 2
    cores give right now."""
    alone, both = [], []
    with get_context("spawn").Pool(2) as pool:
        pool.map(_count, [1000, 1000])  # workers started before timing
        for _ in range(repeats):
            alone.append(_count(n))
            started = time.perf_counter()
            pool.map(_count, [n, n], chunksize=1)
            both.append(time.perf_counter() - started)
    return {
        "alone_s": statistics.median(alone),
        "two_at_once_s": statistics.median(both),
        "scaling": 2 * sum(alone) / sum(both),
    }


def source_digest(tree: Path) -> str:
    """Hash of ``tree``/simcache/**/*.py, to tell whether the checkout changed under the bench."""
    digest = hashlib.sha256()
    for path in sorted((tree / "simcache").rglob("*.py")):
        digest.update(str(path.relative_to(tree)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


# -- speed-up
# ----------------------------------------------------------------------------------------


def timed_sweep(workers: int, duration: float, store: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One whole sweep into a fresh store, in a fresh process (like ``simcache sweep``), timed from
    the call.

    Both worker counts start from the same state, as a user's command does, not from
    this process after minutes of other work.
    """
    table_file = store.with_suffix(".pickle")
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--duration",
        str(duration),
        "--child-sweep",
        str(workers),
        str(store),
    ]
    with Meter() as meter:
        child = json.loads(
            subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True).stdout
        )
    table = pd.read_pickle(table_file)
    return table, {**meter.figures, **child, "wall_with_imports_s": meter.wall_s}


def run_sweep(workers: int, duration: float, store: Path) -> None:
    """Child of :func:`timed_sweep`: time one ``sweep`` call, save its table next to the store,
    print the figures."""
    scenario = simcache.load_scenario(SCENARIO)
    first: list[float] = []

    def note_first(state: SweepProgress) -> None:
        if not first and state.done > state.skipped:
            first.append(time.perf_counter() - started)

    gc.collect()
    started, cpu = time.perf_counter(), cpu_of_this_process_and_children()
    table = sweep(
        scenario,
        GRID,
        seeds=SEEDS,
        duration=duration,
        workers=workers,
        store=store,
        progress=note_first,
    )
    wall, (own, children) = time.perf_counter() - started, cpu_of_this_process_and_children()
    table.to_pickle(store.with_suffix(".pickle"))
    figures = {
        "wall_s": wall,
        "first_row_s": first[0],
        "this_process_cpu_s": own - cpu[0],
        "worker_cpu_s": children - cpu[1],
    }
    print(json.dumps(figures))


def halves_at_once(duration: float) -> dict[str, Any]:
    """Two plain processes, each simulating every other run of the sweep (no pool, no store): what 2
    cores give this workload.

    Each child times its runs after its imports; the figure is the slower child's time.
    """
    command = [sys.executable, str(Path(__file__).resolve()), "--duration", str(duration), "--half"]
    with Meter() as meter:
        children = [
            subprocess.Popen([*command, str(k)], stdout=subprocess.PIPE, text=True) for k in (0, 1)
        ]
        halves = [json.loads(child.communicate(timeout=1800)[0]) for child in children]
    return {
        **meter.figures,
        "wall_s": max(h["wall_s"] for h in halves),
        "wall_with_imports_s": meter.wall_s,
        "half_wall_s": [h["wall_s"] for h in halves],
        "worker_cpu_s": sum(h["cpu_s"] for h in halves),
    }


def run_half(half: int, duration: float) -> None:
    """Child of :func:`halves_at_once`: runs (point, seed) pairs ``half``, ``half + 2``, ... as a
    pool worker would."""
    scenario = simcache.load_scenario(SCENARIO)
    variants = [scenario.with_overrides(point) for point in grid_points(GRID)]
    tasks = [(variant, seed) for variant in variants for seed in SEEDS][half::2]
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    for variant, seed in tasks:
        result_row(simcache.simulate(variant, seed=seed, duration=duration))
    print(
        json.dumps(
            {
                "wall_s": time.perf_counter() - started,
                "cpu_s": time.process_time() - cpu,
                "runs": len(tasks),
            }
        )
    )


MODES = ("1 worker", "2 workers", "2 halves")


def speedup(
    rounds: int, duration: float, workdir: Path, bound: bool
) -> tuple[dict[str, Any], pd.DataFrame, bool]:
    """Interleaved rounds (1 worker, 2 workers[, 2 halves]; the next round in reverse order);
    speed-ups per round."""
    runs: list[dict[str, Any]] = []
    tables: dict[str, pd.DataFrame] = {}
    identical = True
    modes = MODES if bound else MODES[:2]
    for round_ in range(rounds):
        walls: dict[str, float] = {}
        for mode in modes if round_ % 2 == 0 else modes[::-1]:
            if mode == "2 halves":
                figures = halves_at_once(duration)
                first, second = figures["half_wall_s"]
                detail = f"the slower of two halves of compute ({first:.1f} s, {second:.1f} s)"
            else:
                workers = int(mode[0])
                table, figures = timed_sweep(
                    workers, duration, workdir / f"speed-{round_}-{workers}w.sqlite"
                )
                identical &= _same(table, tables.setdefault(mode, table))
                detail = (
                    f"first row at {figures['first_row_s']:.2f} s, CPU "
                    f"{figures['this_process_cpu_s']:.1f} s here"
                )
            walls[mode] = figures["wall_s"]
            runs.append({"round": round_, "mode": mode, **figures})
            print(
                f"  round {round_ + 1}, {mode:9}: {figures['wall_s']:6.1f} s, {detail} + "
                f"{figures['worker_cpu_s']:.1f} s in workers,"
                f" other jobs {figures['other_cores']:.2f} cores, load "
                f"{figures['load_before']:.2f} -> {figures['load_after']:.2f}",
                flush=True,
            )
        for run in runs[-len(modes) :]:
            run["speedup"] = walls["1 worker"] / run["wall_s"]
        line = f"  round {round_ + 1} speed-up: {walls['1 worker'] / walls['2 workers']:.2f}x"
        if bound:
            line += f" (2 halves without a pool: {walls['1 worker'] / walls['2 halves']:.2f}x)"
        print(line, flush=True)
    identical &= _same(tables["1 worker"], tables["2 workers"])
    summary: dict[str, Any] = {"runs": runs, "tables_identical_1_vs_2_workers": identical}
    for mode in modes:
        summary[mode] = {
            "wall_s": spread([r["wall_s"] for r in runs if r["mode"] == mode]),
            "speedup": spread([r["speedup"] for r in runs if r["mode"] == mode]),
        }
    summary["speedup_of_medians"] = (
        summary["1 worker"]["wall_s"]["median"] / summary["2 workers"]["wall_s"]["median"]
    )
    # per round: what the pool costs over two plain processes (start-up, imports, task traffic)
    if bound:
        pool = [r["wall_s"] for r in runs if r["mode"] == "2 workers"]
        plain = [r["wall_s"] for r in runs if r["mode"] == "2 halves"]
        summary["pool_overhead_s"] = spread([a - b for a, b in zip(pool, plain, strict=True)])
    return summary, tables["2 workers"], identical


def span(figures: dict[str, float], fmt: str) -> str:
    return (
        f"{format(figures['median'], fmt)} [{format(figures['min'], fmt)} .. "
        f"{format(figures['max'], fmt)}]"
    )


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    try:
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    except AssertionError:
        return False
    return True


# -- kill and resume
# ----------------------------------------------------------------------------------


def store_rowids(store: Path) -> dict[str, int]:
    """key -> SQLite rowid of every row in the store (empty if the store or its table does not
    exist yet)."""
    if not store.exists():
        return {}
    try:
        with closing(sqlite3.connect(store, timeout=30)) as db:
            return dict(db.execute("SELECT key, rowid FROM rows").fetchall())
    except sqlite3.OperationalError:  # table not created yet
        return {}


def store_count(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with closing(sqlite3.connect(store, timeout=30)) as db:
            return int(db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def children_of(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited and waits for init to reap it


class CliSweep:
    """``simcache sweep`` as a subprocess in its own session, so nothing it starts outlives the
    bench."""

    def __init__(self, grid: Path, duration: float, store: Path, out: Path):
        self.command = [
            sys.executable,
            "-m",
            "simcache.cli.main",
            "sweep",
            str(grid),
            "--duration",
            f"{duration}s",
            "--workers",
            "2",
            "--store",
            str(store),
            "--out",
            str(out),
        ]
        self.store = store
        self.env = {**os.environ, "PYTHONPATH": str(SOURCE)}
        # not the checkout: `python -m` puts the working directory first on the path
        self.cwd = store.parent

    def run(self, stop_at: int | None = None, sig: signal.Signals | None = None) -> dict[str, Any]:
        """Run; with ``stop_at``, send ``sig`` to the command (not its workers) once the store
        holds that many rows."""
        started = time.perf_counter()
        process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        workers: list[int] = []
        signalled_at = None
        try:
            if stop_at is not None and sig is not None:
                while process.poll() is None and store_count(self.store) < stop_at:
                    workers = children_of(process.pid) or workers
                    time.sleep(0.05)
                workers = children_of(process.pid) or workers
                signalled_at = store_count(self.store)
                process.send_signal(sig)
            stdout, stderr = process.communicate(timeout=1800)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        wall = time.perf_counter() - started
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(alive(pid) for pid in workers):
            time.sleep(0.1)
        left = [pid for pid in workers if alive(pid)]
        for pid in left:  # the bench started them: do not leave them running
            os.kill(pid, signal.SIGKILL)
        states = [
            (int(done), int(total), int(skipped or 0))
            for done, total, skipped in PROGRESS.findall(stderr)
        ]
        return {
            "returncode": process.returncode,
            "wall_s": wall,
            "rows_when_signalled": signalled_at,
            "worker_pids": workers,
            "workers_left_running": left,
            "progress_first": states[0] if states else None,
            "progress_last": states[-1] if states else None,
            "stderr_tail": stderr[-400:],
            "stdout_tail": stdout[-400:],
        }


def kill_and_resume(
    scenario_path: Path, duration: float, reference: pd.DataFrame, workdir: Path
) -> dict[str, Any]:
    total = len(reference)
    grid = workdir / "grid.toml"
    lines = [f'scenario = "{scenario_path}"', f"seeds = {SEEDS}", "[grid]"]
    lines += [f'"{path}" = {json.dumps(values)}' for path, values in GRID.items()]
    grid.write_text("\n".join(lines) + "\n")
    store, out = workdir / "resume.sqlite", workdir / "resume.csv"
    cli = CliSweep(grid, duration, store, out)
    checks: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append((name, ok, detail))
        print(f"  {'ok  ' if ok else 'FAIL'}  {name}: {detail}", flush=True)

    steps: dict[str, Any] = {}
    # 1. kill -9 at about half
    killed = cli.run(stop_at=total // 2, sig=signal.SIGKILL)
    kept1 = store_rowids(store)
    steps["sigkill"] = {**killed, "rows_kept": len(kept1)}
    check(
        "kill -9 stops the sweep midway",
        killed["returncode"] == -signal.SIGKILL and 0 < len(kept1) < total,
        f"exit {killed['returncode']}, {len(kept1)} of {total} rows kept (store held "
        f"{killed['rows_when_signalled']} at the signal)",
    )
    check(
        "its workers exit with it",
        bool(killed["worker_pids"]) and not killed["workers_left_running"],
        f"workers {killed['worker_pids']}, still running 30 s later: "
        f"{killed['workers_left_running']}",
    )
    # 2. rerun, SIGINT at about three quarters
    interrupted = cli.run(stop_at=len(kept1) + (total - len(kept1)) // 2, sig=signal.SIGINT)
    kept2 = store_rowids(store)
    steps["sigint"] = {**interrupted, "rows_kept": len(kept2)}
    _resumed_checks(check, "SIGINT rerun", interrupted, kept1, kept2, total)
    check(
        "SIGINT stops cleanly, keeping the rows it finished",
        interrupted["returncode"] == 130
        and "interrupted" in interrupted["stderr_tail"]
        and len(kept2) >= (interrupted["rows_when_signalled"] or 0)
        and len(kept2) < total,
        f"exit {interrupted['returncode']}, {len(kept2)} rows kept (store held "
        f"{interrupted['rows_when_signalled']} at the signal)",
    )
    check(
        "its workers exit with it",
        not interrupted["workers_left_running"],
        f"still running: {interrupted['workers_left_running']}",
    )
    # 3. rerun to the end
    finished = cli.run()
    kept3 = store_rowids(store)
    steps["final"] = {**finished, "rows_kept": len(kept3)}
    check(
        "the final rerun completes", finished["returncode"] == 0, f"exit {finished['returncode']}"
    )
    _resumed_checks(check, "final rerun", finished, kept2, kept3, total)
    check(
        "every run computed once over the three starts",
        len(kept3) == total,
        f"{len(kept3)} rows in the store for {total} runs",
    )
    # 4. the same table as the uninterrupted sweep
    reference_csv = workdir / "reference.csv"
    reference.to_csv(reference_csv, index=False)  # exactly what the command line writes
    check(
        "its CSV equals the uninterrupted sweep's, byte for byte",
        out.exists() and out.read_bytes() == reference_csv.read_bytes(),
        f"{out.stat().st_size if out.exists() else 0} bytes "
        f"vs {reference_csv.stat().st_size} bytes",
    )
    seen: list[SweepProgress] = []
    from_store = sweep(
        scenario_path,
        GRID,
        seeds=SEEDS,
        duration=duration,
        workers=1,
        store=store,
        progress=seen.append,
    )
    equal = _same(from_store, reference)
    check(
        "the store read back equals the uninterrupted table exactly",
        seen[-1].skipped == total and equal,
        f"{seen[-1].skipped} of {total} rows from the store, exact DataFrame comparison: "
        f"{'equal' if equal else 'DIFFERENT'}",
    )
    computed = [len(kept1), len(kept2) - len(kept1), len(kept3) - len(kept2)]
    return {
        "steps": steps,
        "rows_written_per_start": computed,
        "checks": [{"name": n, "ok": ok, "detail": d} for n, ok, d in checks],
        "passed": all(ok for _, ok, _ in checks),
    }


def store_cost(duration: float, rounds: int = 3) -> dict[str, Any]:
    """Milliseconds per task of each store step (see the module docstring, step 3), next to one
    simulation."""
    from simcache.runs.sweep_store import SweepStore as _Store

    base = simcache.load_scenario(SCENARIO)
    points = grid_points(GRID)
    variants = [base.with_overrides(point) for point in points]
    labels = [", ".join(f"{column}={value}" for column, value in point.items()) for point in points]
    started = time.perf_counter()
    row = result_row(simcache.simulate(variants[0].with_duration(duration), seed=1))
    simulation_ms = (time.perf_counter() - started) * 1e3
    tasks = [(i, seed) for i in range(len(points)) for seed in SEEDS]
    steps: dict[str, list[float]] = {
        "lookup (not stored)": [],
        "claim": [],
        "write row": [],
        "read and check a stored row": [],
    }
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="bench_sweep_store_") as tmp:
            store = _Store(Path(tmp) / "store.sqlite", variants, duration, labels)
            try:
                # each task's key (its scenario's JSON, hashed) was computed before stores had
                # checks too
                for task in tasks:
                    store._key(task)
                actions: list[Callable[[tuple[int, int]], object]] = [
                    store.get,
                    store.claim,
                    functools.partial(store.put, row=row),
                    store.get,
                ]
                for name, step in zip(steps, actions, strict=True):
                    started = time.perf_counter()
                    for task in tasks:
                        step(task)
                    steps[name].append((time.perf_counter() - started) * 1e3 / len(tasks))
            finally:
                store.close()
    medians = {name: statistics.median(values) for name, values in steps.items()}
    computed_ms = medians["lookup (not stored)"] + medians["claim"] + medians["write row"]
    for name, value in medians.items():
        print(f"  {name}: {value:.3f} ms per task", flush=True)
    print(f"  one simulation ({duration:g} simulated s): {simulation_ms:.0f} ms", flush=True)
    return {
        "ms_per_task": medians,
        "simulation_ms": simulation_ms,
        "computed_task_ms": computed_ms,
        "share_of_a_simulation": computed_ms / simulation_ms,
    }


def _resumed_checks(
    check: Callable[[str, bool, str], None],
    name: str,
    run: dict[str, Any],
    before: dict[str, int],
    after: dict[str, int],
    total: int,
) -> None:
    """A rerun took every kept row from the store and wrote only the missing ones."""
    done, of, skipped = run["progress_first"] or ("?", "?", "?")
    check(
        f"{name} takes the kept rows from the store",
        skipped == len(before) and of == total,
        f"its progress starts at {done}/{of} ({skipped} from the store), {len(before)} were kept",
    )
    untouched = all(after.get(key) == rowid for key, rowid in before.items())
    new = len(set(after) - set(before))
    check(
        f"{name} computes only missing runs",
        untouched,
        f"kept rows {'untouched' if untouched else 'REWRITTEN'} (same rowids), {new} new rows "
        "written",
    )


# -- main
# ---------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, default=2, help="interleaved 1-worker / 2-worker rounds (default 2)"
    )
    parser.add_argument(
        "--duration", type=float, default=2.0, help="simulated seconds per run (default 2)"
    )
    parser.add_argument(
        "--skip-speedup",
        action="store_true",
        help="only the kill-and-resume check (one untimed 2-worker reference)",
    )
    parser.add_argument("--skip-resume", action="store_true", help="only the speed-up")
    parser.add_argument(
        "--store-cost",
        action="store_true",
        help="only the store's cost per task (checksums, claims)",
    )
    parser.add_argument(
        "--keep", type=Path, default=None, help="keep stores, grid and CSVs in this directory"
    )
    parser.add_argument(
        "--no-bound",
        action="store_true",
        help="skip the 2-halves-without-a-pool reference in each round",
    )
    parser.add_argument("--json", type=Path, default=None, help="save every figure to this file")
    parser.add_argument("--half", type=int, choices=(0, 1), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-sweep", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.half is not None:
        run_half(args.half, args.duration)
        return 0
    if args.child_sweep is not None:
        run_sweep(int(args.child_sweep[0]), args.duration, Path(args.child_sweep[1]))
        return 0

    scenario = simcache.load_scenario(SCENARIO)
    points = len(grid_points(GRID))
    report: dict[str, Any] = {
        "machine": {
            **machine_facts(),
            "load_average_before": load_average(),
            "simcache_source_digest": source_digest(SOURCE),
        },
        "settings": {
            "scenario": "scenarios/default.toml",
            "grid": GRID,
            "points": points,
            "seeds": SEEDS,
            "runs": points * len(SEEDS),
            "duration_s": args.duration,
            "rounds": args.rounds,
        },
    }
    facts = report["machine"]
    modified = " (simcache/ modified)" if facts["simcache_tree_modified"] else ""
    print(
        f"{facts['date']}  commit {facts['git_commit']}{modified}  "
        f"{facts['cpu_model']}, {facts['cpus']} CPUs ({facts['cpus_usable']} usable), Python "
        f"{facts['python']}, load {load_average()}"
    )
    print(
        f"sweep: {points} points x {len(SEEDS)} seeds = {points * len(SEEDS)} runs of "
        f"{args.duration:g} simulated s",
        flush=True,
    )
    report["machine_scaling_before"] = machine_scaling()
    print(
        "machine: two processes at once run "
        f"{report['machine_scaling_before']['scaling']:.2f}x one",
        flush=True,
    )
    failed = False
    print("\n== store cost per task (fresh store, this process)", flush=True)
    report["store_cost"] = store_cost(args.duration)
    if not args.store_cost:
        with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
            workdir = args.keep or Path(tmp)
            workdir.mkdir(parents=True, exist_ok=True)
            if args.skip_speedup:
                reference = sweep(scenario, GRID, seeds=SEEDS, duration=args.duration, workers=2)
            else:
                print("\n== speed-up: 1 worker vs 2 workers, interleaved", flush=True)
                report["speedup"], reference, identical = speedup(
                    args.rounds, args.duration, workdir, not args.no_bound
                )
                failed |= not identical
            if not args.skip_resume:
                print("\n== kill and resume (simcache sweep, 2 workers, one store)", flush=True)
                report["resume"] = kill_and_resume(SCENARIO, args.duration, reference, workdir)
                failed |= not report["resume"]["passed"]
    report["machine_scaling_after"] = machine_scaling()
    report["machine"]["load_average_after"] = load_average()
    report["machine"]["checkout_digest_after"] = source_digest(ROOT)

    print("\n== summary")
    print(
        "machine scaling (2 counting processes / 1): "
        f"{report['machine_scaling_before']['scaling']:.2f}x before, "
        f"{report['machine_scaling_after']['scaling']:.2f}x after; load "
        f"{report['machine']['load_average_before']} -> {load_average()}"
    )
    if "speedup" in report:
        s = report["speedup"]
        met = s["2 workers"]["speedup"]["median"] >= TARGET_SPEEDUP
        print(f"1 worker:   {span(s['1 worker']['wall_s'], '.1f')} s")
        print(f"2 workers:  {span(s['2 workers']['wall_s'], '.1f')} s")
        print(
            f"speed-up:   {span(s['2 workers']['speedup'], '.2f')}x over {args.rounds} round(s)"
            f" (ratio of medians {s['speedup_of_medians']:.2f}x); target {TARGET_SPEEDUP}x "
            f"{'met' if met else 'missed'}"
        )
        if "2 halves" in s:
            print(
                f"bound:      {span(s['2 halves']['speedup'], '.2f')}x for two plain processes on "
                "half the runs each (no pool)"
            )
            print(
                f"pool cost:  {span(s['pool_overhead_s'], '.1f')} s per sweep (2-worker wall minus "
                "2 halves' wall, per round)"
            )
        others = [r["other_cores"] for r in s["runs"]]
        print(
            f"other jobs: {statistics.mean(others):.2f} cores on average during the timed runs "
            f"(max {max(others):.2f})"
        )
        print(
            "1- and 2-worker tables identical: "
            f"{'yes' if s['tables_identical_1_vs_2_workers'] else 'NO'}"
        )
    cost = report["store_cost"]
    print(
        f"store cost:  {cost['computed_task_ms']:.3f} ms per computed task (lookup, claim, "
        "checksummed write) = "
        f"{cost['share_of_a_simulation']:.3%} of a {cost['simulation_ms']:.0f} ms simulation; "
        "reading and checking a stored row "
        f"{cost['ms_per_task']['read and check a stored row']:.3f} ms"
    )
    if "resume" in report:
        r = report["resume"]
        written = r["rows_written_per_start"]
        failures = [c["name"] for c in r["checks"] if not c["ok"]]
        print(
            f"kill and resume: rows written per start {written} (sum {sum(written)} for "
            f"{report['settings']['runs']} runs); "
            f"{len(r['checks']) - len(failures)}/{len(r['checks'])} checks passed"
            + (f"; FAILED: {', '.join(failures)}" if failures else "")
        )
    if report["machine"]["checkout_digest_after"] != report["machine"]["simcache_source_digest"]:
        print(
            "note: simcache/ in the checkout changed while the bench ran; the bench measured the "
            "copy it took at the start"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"saved {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
