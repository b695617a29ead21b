"""Sweeps: the same rows serially, on a process pool and on Dask; resumable stores; intervals
over seeds."""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.paths import ROOT

import simcache
from simcache import ScenarioError
from simcache.runs.sweep import SweepProgress, grid_points, log_axis_yerr, sweep, sweep_summary

GRID = {"groups.db.policy": ["WB+0", "WB+1"], "cluster.peer_link": ["1GbE", "10GbE"]}
DURATION = 0.5


@pytest.fixture(scope="module")
def scenario() -> simcache.Scenario:
    return simcache.load_scenario(ROOT / "scenarios" / "default.toml").with_overrides(
        {"events": [], "run.warmup": "0.05s"}
    )


@pytest.fixture(scope="module")
def serial(scenario: simcache.Scenario) -> pd.DataFrame:
    return sweep(scenario, GRID, seeds=[1, 2], duration=DURATION, workers=1)


def test_rows_come_in_grid_order(serial: pd.DataFrame) -> None:
    keys = list(
        zip(serial["groups.db.policy"], serial["cluster.peer_link"], serial["seed"], strict=True)
    )
    assert keys == [
        (p, link, s) for p in ("WB+0", "WB+1") for link in ("1GbE", "10GbE") for s in (1, 2)
    ]


def test_a_process_pool_gives_the_same_table(
    scenario: simcache.Scenario, serial: pd.DataFrame
) -> None:
    pd.testing.assert_frame_equal(
        sweep(scenario, GRID, seeds=[1, 2], duration=DURATION, workers=2), serial
    )


def test_a_local_dask_cluster_gives_the_same_table_and_shuts_down(
    scenario: simcache.Scenario, serial: pd.DataFrame
) -> None:
    distributed = pytest.importorskip("dask.distributed")
    table = sweep(scenario, GRID, seeds=[1, 2], duration=DURATION, scheduler="local", workers=2)
    pd.testing.assert_frame_equal(table, serial)
    assert distributed.client._get_global_client() is None, "the sweep's client was closed"


def test_a_given_dask_client_is_used_and_left_open(
    scenario: simcache.Scenario, serial: pd.DataFrame
) -> None:
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        table = sweep(
            scenario,
            {"groups.db.policy": ["WB+0", "WB+1"]},
            seeds=[1],
            duration=DURATION,
            client=client,
        )
        assert client.status == "running"
    assert list(table["groups.db.policy"]) == ["WB+0", "WB+1"]


def test_an_interrupted_sweep_resumes_without_recomputing(
    scenario: simcache.Scenario, serial: pd.DataFrame, tmp_path: Path
) -> None:
    """Stop after 3 of 8 runs; the rerun takes those 3 from the store, computes 5, and returns
    the same table."""
    store = tmp_path / "sweep.sqlite"
    seen: list[SweepProgress] = []

    def stop_after_three(state: SweepProgress) -> None:
        seen.append(state)
        if state.done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(
            scenario,
            GRID,
            seeds=[1, 2],
            duration=DURATION,
            workers=1,
            store=store,
            progress=stop_after_three,
        )
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM rows").fetchone() == (3,)
    states: list[SweepProgress] = []
    resumed = sweep(
        scenario,
        GRID,
        seeds=[1, 2],
        duration=DURATION,
        workers=1,
        store=store,
        progress=states.append,
    )
    assert states[0].done == 3 and states[0].skipped == 3 and math.isnan(states[0].eta_s)
    assert states[-1].done == states[-1].total == 8
    pd.testing.assert_frame_equal(resumed, serial)


def test_a_killed_command_line_sweep_resumes(tmp_path: Path) -> None:
    """SIGKILL the CLI mid-sweep: every row it finished is in the store, and the rerun completes
    the table."""
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'scenario = "{ROOT / "scenarios" / "default.toml"}"\nseeds = [1, 2, 3]\n[grid]\n'
        '"groups.db.vms_per_host" = [1, 2, 3, 4]\n'
    )
    store = tmp_path / "rows.sqlite"
    command = [
        sys.executable,
        "-m",
        "simcache.cli.main",
        "sweep",
        str(grid),
        "--duration",
        "0.5s",
        "--workers",
        "1",
        "--store",
        str(store),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _rows(store) < 2:
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    finished = _rows(store)
    assert 2 <= finished < 12
    out = tmp_path / "table.csv"
    done = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True, check=True)
    assert f"({finished} from the store)" in done.stderr
    assert len(pd.read_csv(out)) == 12 and _rows(store) == 12


def test_a_killed_sweeps_pool_workers_exit_with_it(tmp_path: Path) -> None:
    """kill -9 of a 2-worker sweep: its pool workers (and multiprocessing's resource tracker)
    exit too, none left idle."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("finds the sweep's child processes through /proc")
    grid = tmp_path / "grid.toml"
    scenario_path = ROOT / "scenarios" / "default.toml"
    seeds, vms = [1, 2, 3, 4], [1, 2]
    grid.write_text(
        f'scenario = "{scenario_path}"\nseeds = {seeds}\n[grid]\n"groups.db.vms_per_host" = {vms}\n'
    )
    store = tmp_path / "rows.sqlite"
    command = [
        sys.executable,
        "-m",
        "simcache.cli.main",
        "sweep",
        str(grid),
        "--duration",
        "0.5s",
        "--workers",
        "2",
        "--store",
        str(store),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _rows(store) < 1:
            time.sleep(0.05)
        children = _children(process.pid)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert len(children) >= 2, "a pool of two workers was running"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(pid) for pid in children):
            time.sleep(0.1)
        assert not [pid for pid in children if _alive(pid)], (
            "every child of the killed sweep exited"
        )
    finally:
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert 1 <= _rows(store) < len(seeds) * len(vms)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    """Running or sleeping; a zombie has exited (it only waits for init to collect it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_an_interrupted_pool_sweep_keeps_its_rows(
    scenario: simcache.Scenario, serial: pd.DataFrame, tmp_path: Path
) -> None:
    """Ctrl-C in the progress callback of a 2-worker sweep: the rows stored so far stay, the
    rerun computes only the rest."""
    store = tmp_path / "sweep.sqlite"

    def stop_after_three(state: SweepProgress) -> None:
        if state.done == 3:
            raise KeyboardInterrupt

    seeds = [1, 2]
    with pytest.raises(KeyboardInterrupt):
        sweep(
            scenario,
            GRID,
            seeds=seeds,
            duration=DURATION,
            workers=2,
            store=store,
            progress=stop_after_three,
        )
    assert _rows(store) == 3
    states: list[SweepProgress] = []
    resumed = sweep(
        scenario,
        GRID,
        seeds=seeds,
        duration=DURATION,
        workers=2,
        store=store,
        progress=states.append,
    )
    assert states[0].skipped == 3 and states[-1].done == len(grid_points(GRID)) * len(seeds)
    pd.testing.assert_frame_equal(resumed, serial)


def test_the_store_is_a_write_ahead_log(scenario: simcache.Scenario, tmp_path: Path) -> None:
    """Each row is committed without a disk flush (a killed sweep keeps it; see the kill tests),
    so the store is in WAL mode."""
    store = tmp_path / "sweep.sqlite"
    sweep(scenario, {"groups.db.policy": ["WB+1"]}, duration=DURATION, workers=1, store=store)
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT COUNT(*) FROM rows").fetchone() == (1,)


def _rows(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store) as db:
            return int(db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not created yet
        return 0


def test_summary_gives_mean_and_student_t_interval(serial: pd.DataFrame) -> None:
    """Half-width = t(0.975, n - 1) s / sqrt(n); with two seeds t = 12.706."""
    summary = sweep_summary(serial, list(GRID))
    assert len(summary) == 4 and set(summary["seeds"]) == {2}
    first = serial.iloc[:2]["all.write.mean_ms"].to_numpy()
    row = summary.iloc[0]
    assert row["all.write.mean_ms"] == pytest.approx(first.mean())
    assert row["all.write.mean_ms.ci95"] == pytest.approx(
        12.7062047 * first.std(ddof=1) / math.sqrt(2)
    )


def test_until_adds_seeds_until_the_interval_is_narrow(scenario: simcache.Scenario) -> None:
    grid = {"groups.db.policy": ["WB+1"]}
    strict = sweep(
        scenario,
        grid,
        seeds=[1, 2],
        duration=DURATION,
        workers=1,
        until=("all.write.mean_ms", 1e-9),
        max_seeds=5,
    )
    assert list(strict["seed"]) == [1, 2, 3, 4, 5], "never narrow enough: stops at max_seeds"
    loose = sweep(
        scenario,
        grid,
        seeds=[1, 2],
        duration=DURATION,
        workers=1,
        until=("all.write.mean_ms", 10.0),
    )
    assert list(loose["seed"]) == [1, 2], "already narrow: no seeds added"
    values = strict["all.write.mean_ms"].to_numpy()
    assert np.isfinite(values).all()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"seeds": [-1]}, "whole numbers >= 0"),
        ({"seeds": []}, "give a list of seeds"),
        ({"workers": 0}, "at least 1"),
        ({"until": ("groups.db.policy", 0.1)}, "is a grid column"),
        ({"until": ("all.write.nothing", 0.1)}, "no result column"),
    ],
)
def test_bad_sweep_arguments_are_named(
    scenario: simcache.Scenario, kwargs: dict[str, object], words: str
) -> None:
    with pytest.raises(ScenarioError, match=words):
        sweep(
            scenario, {"groups.db.policy": ["WB+1"]}, duration=DURATION, **{"workers": 1, **kwargs}
        )  # type: ignore[arg-type]


def test_scenario_errors_cross_process_boundaries() -> None:
    import pickle

    error = ScenarioError("x.toml", [("cluster.hosts", "must be at least 1")])
    again = pickle.loads(pickle.dumps(error))
    assert (
        again.source == "x.toml" and again.problems == error.problems and str(again) == str(error)
    )


def test_a_duration_too_short_for_the_scenario_is_rejected_before_any_worker_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """0.1 s is shorter than the default scenario's 0.5 s sample interval: the loader's error, no
    pool."""
    monkeypatch.setattr(
        sys.modules["simcache.runs.workers"],
        "ProcessPoolExecutor",
        lambda *args, **kwargs: pytest.fail("a pool started"),
    )
    with pytest.raises(ScenarioError, match="sample_interval"):
        simcache.sweep("default", {"cluster.peer_link": ["1GbE", "10GbE"]}, duration=0.1, workers=2)


def test_numpy_seeds_resume_from_the_store_like_plain_ones(tmp_path: Path) -> None:
    """Seeds from numpy (e.g. ``np.arange``) key the store as the same ints do."""
    store = tmp_path / "seeds.sqlite"
    grid = {"cluster.peer_link": ["10GbE"]}
    first = sweep("default", grid, seeds=np.arange(1, 3), duration=1.0, workers=1, store=store)
    again = sweep("default", grid, seeds=[1, 2], duration=1.0, workers=1, store=store)
    pd.testing.assert_frame_equal(first, again)
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == 2


def test_rows_computed_by_other_code_are_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store keys rows by the digest of the code that computes them: after a change, a rerun
    recomputes."""
    store = tmp_path / "code.sqlite"
    grid = {"cluster.peer_link": ["10GbE"]}
    states: list[SweepProgress] = []
    sweep("default", grid, seeds=[1], duration=1.0, workers=1, store=store)
    monkeypatch.setattr(sys.modules["simcache.runs.sweep_store"], "code_digest", lambda: "edited")
    sweep("default", grid, seeds=[1], duration=1.0, workers=1, store=store, progress=states.append)
    assert states[-1].skipped == 0, "a row from other code was reused"
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == 2


def test_log_axis_error_bars_stay_above_zero() -> None:
    """Below-arm capped at 90% of the mean (a log axis cannot reach 0); a missing interval draws
    no bar."""
    below, above = log_axis_yerr([10.0, 1.0, 5.0], [2.0, 3.0, float("nan")])
    assert below.tolist() == [2.0, 0.9, 0.0]
    assert above.tolist() == [2.0, 3.0, 0.0]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cancelled_sweep_stops_within_a_second_and_keeps_its_finished_points(
    scenario: simcache.Scenario, workers: int
) -> None:
    """Two short points, then two of 600 simulated seconds (minutes of wall time each): the token
    is cancelled from another thread 0.3 s after the short points are done; within a second the
    sweep returns their rows (none of a run stopped part way), marked stopped, with the number of
    tasks it meant to run."""
    import threading

    from simcache.sim.control import Cancel

    token = Cancel()
    cancelled_at: list[float] = []

    def cancel() -> None:
        cancelled_at.append(time.monotonic())
        token.cancel("stopped by the test")

    def progress(state: SweepProgress) -> None:
        if state.done == 2:
            threading.Timer(0.3, cancel).start()

    grid = {"run.duration": ["0.5s", "1s", "600s", "601s"]}
    table = sweep(scenario, grid, seeds=[1], workers=workers, progress=progress, cancel=token)
    assert time.monotonic() - cancelled_at[0] < 1.0
    assert table.attrs == {"stopped": "stopped by the test", "planned": 4, "computed": 2}
    assert list(table["run.duration"]) == ["0.5s", "1s"]
    expected = sweep(scenario, {"run.duration": ["0.5s", "1s"]}, seeds=[1], workers=1)
    pd.testing.assert_frame_equal(table, expected)
