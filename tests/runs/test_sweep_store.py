"""The sweep store's hard edges: store errors, its format version, per-row checksums, sweeps
sharing one store, stopping."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support.paths import ROOT

import simcache
from simcache.base.errors import SweepStoreError
from simcache.cli.main import main
from simcache.runs.sweep import (
    STORE_FORMAT,
    SweepInterrupted,
    SweepProgress,
    SweepStoreWarning,
    sweep,
)

GRID = {"cluster.peer_link": ["1GbE", "10GbE"]}
DURATION = 0.5
HEADING = "unusable sweep store (1 problem)"


def _sweep(store: Path, **kwargs: Any) -> pd.DataFrame:
    return sweep("default", GRID, seeds=[1], duration=DURATION, workers=1, store=store, **kwargs)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """A finished 2-point store and its table; tests copy the store before editing it."""
    store = tmp_path_factory.mktemp("stored") / "sweep.sqlite"
    table = _sweep(store)
    with closing(sqlite3.connect(store)) as db:
        # everything in the main file, so copying it copies the rows
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return store, table


def _copy(stored: tuple[Path, pd.DataFrame], tmp_path: Path) -> Path:
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(stored[0].read_bytes())
    return copy


def _message(path: Path, problem: str) -> str:
    return f"{path}: {HEADING}\n  store: {problem}"


def _rows(store: Path) -> dict[str, tuple[int, str]]:
    """label -> (rowid, row text)"""
    with closing(sqlite3.connect(store)) as db:
        return {
            label: (rowid, row)
            for rowid, label, row in db.execute("SELECT rowid, label, row FROM rows")
        }


# -- store errors
# -----------------------------------------------------------------------------------


def test_a_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(SweepStoreError) as caught:
        _sweep(tmp_path)
    assert str(caught.value) == _message(
        tmp_path,
        f"is a directory, not a file; give --store a file path, e.g. {tmp_path / 'sweep.sqlite'}",
    )


def test_a_file_of_random_bytes_is_a_store_error_and_stays_untouched(tmp_path: Path) -> None:
    store = tmp_path / "random.sqlite"
    store.write_bytes(b"\x8f\x01zq" * 1000)
    with pytest.raises(SweepStoreError) as caught:
        _sweep(store)
    assert str(caught.value) == _message(
        store,
        "is not a SQLite file (it starts with b'\\x8f\\x01zq\\x8f\\x01zq', not 'SQLite format 3'); "
        "give --store another path (or delete this file if it is a store gone bad); it is left "
        "untouched",
    )
    assert store.read_bytes() == b"\x8f\x01zq" * 1000


def test_a_store_that_is_not_writable_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "readonly.sqlite"
    store.write_bytes(b"")
    store.chmod(0o444)
    if os.access(store, os.W_OK):  # root writes anyway: pretend, as a non-root user would see it
        monkeypatch.setattr(os, "access", lambda path, mode: not mode & os.W_OK)
    with pytest.raises(SweepStoreError) as caught:
        _sweep(store)
    assert str(caught.value) == _message(
        store,
        "is not writable (a sweep writes every finished row, and SQLite writes <store>-wal and "
        "-shm next to it); "
        "make the file and its folder writable (chmod u+w), or give --store another path",
    )


def test_a_store_in_a_missing_folder_is_a_store_error(tmp_path: Path) -> None:
    store = tmp_path / "no" / "sweep.sqlite"
    with pytest.raises(SweepStoreError) as caught:
        _sweep(store)
    assert str(caught.value) == _message(
        store,
        f"its folder {tmp_path / 'no'} does not exist; create the folder, or give --store a path "
        "in an existing one",
    )


def test_another_sqlite_database_is_not_taken_for_a_store(tmp_path: Path) -> None:
    store = tmp_path / "other.sqlite"
    with closing(sqlite3.connect(store)) as db:
        db.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(SweepStoreError) as caught:
        _sweep(store)
    assert str(caught.value) == _message(
        store,
        "is a SQLite database but not a sweep store (its tables: invoices); give --store another "
        "path; this file is left untouched",
    )


def test_a_store_locked_beyond_the_timeout_is_a_store_error(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _copy(stored, tmp_path)
    monkeypatch.setattr(sys.modules["simcache.runs.sweep_store"], "STORE_TIMEOUT_S", 0.2)
    with closing(sqlite3.connect(store, isolation_level=None)) as holder:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(SweepStoreError) as caught:
            _sweep(store)
        holder.execute("ROLLBACK")
    assert str(caught.value) == _message(
        store,
        "stayed locked by another program for more than 0.2 s (SQLite: database is locked); "
        "close the program holding it (e.g. a sqlite3 shell inside a transaction), or give --store "
        "another path",
    )


def test_a_full_disk_is_a_store_error_and_keeps_the_rows_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills up after the first row: simulated with SQLite's page limit (9 pages of 4
    KiB)."""
    connect = sqlite3.connect

    def small_disk(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db: sqlite3.Connection = connect(*args, **kwargs)
        db.execute("PRAGMA max_page_count = 9")
        return db

    monkeypatch.setattr(sqlite3, "connect", small_disk)
    store = tmp_path / "full.sqlite"
    with pytest.raises(SweepStoreError) as caught:
        _sweep(store)
    monkeypatch.undo()
    assert str(caught.value) == _message(
        store,
        "cannot grow: the disk is full (SQLite: database or disk is full); "
        "free space on that disk, or give --store a path on another one; the rows finished so far "
        "are kept",
    )
    assert list(_rows(store)) == ["point cluster.peer_link=1GbE, seed 1"]


def test_the_command_line_reports_store_errors_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'scenario = "{ROOT / "scenarios" / "default.toml"}"\n[grid]\n"cluster.peer_link" = '
        '["1GbE"]\n'
    )
    assert (
        main(["sweep", str(grid), "--duration", "0.5s", "--workers", "1", "--store", str(tmp_path)])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path}: {HEADING}\n  store: is a directory, not a file;")
    assert "invalid scenario" not in err


# -- format version
# ---------------------------------------------------------------------------------


def test_a_store_records_its_format_and_the_simcache_that_wrote_it(
    stored: tuple[Path, pd.DataFrame],
) -> None:
    with closing(sqlite3.connect(stored[0])) as db:
        meta = dict(db.execute("SELECT name, value FROM meta"))
    assert meta == {
        "format": str(STORE_FORMAT),
        "created_by": simcache.__version__,
        "written_by": simcache.__version__,
    }
    assert STORE_FORMAT == 2


def test_a_store_of_a_newer_format_is_refused(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    store = _copy(stored, tmp_path)
    with closing(sqlite3.connect(store)) as db, db:
        db.execute("UPDATE meta SET value = '3' WHERE name = 'format'")
        db.execute("UPDATE meta SET value = '9.1' WHERE name = 'written_by'")
    with pytest.raises(SweepStoreError) as caught:
        _sweep(store)
    assert str(caught.value) == _message(
        store,
        f"is in store format 3 (written by simcache 9.1); this simcache {simcache.__version__} "
        "reads formats 1 to 2; "
        "run the sweep with that simcache or a newer one, give --store another path, or delete the "
        "file to start afresh",
    )


def test_a_store_of_an_unreadable_format_is_refused(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    store = _copy(stored, tmp_path)
    with closing(sqlite3.connect(store)) as db, db:
        db.execute("UPDATE meta SET value = 'two' WHERE name = 'format'")
    with pytest.raises(SweepStoreError) as caught:
        _sweep(store)
    assert str(caught.value) == _message(
        store,
        "has no readable store format (meta.format = 'two'); delete the file to start afresh, or "
        "give --store another path",
    )


def test_a_format_1_store_is_migrated_and_its_rows_reused(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    """Format 1 (simcache before the store had a format): one table, rows(key, row). Its rows
    stay, with checksums now."""
    old = tmp_path / "format1.sqlite"
    with closing(sqlite3.connect(stored[0])) as source, closing(sqlite3.connect(old)) as db, db:
        db.execute("CREATE TABLE rows (key TEXT PRIMARY KEY, row TEXT NOT NULL)")
        db.executemany(
            "INSERT INTO rows VALUES (?, ?)", source.execute("SELECT key, row FROM rows")
        )
    states: list[SweepProgress] = []
    table = _sweep(old, progress=states.append)
    assert states[-1].skipped == 2, "both rows reused"
    pd.testing.assert_frame_equal(table, stored[1])
    with closing(sqlite3.connect(old)) as db:
        assert db.execute("SELECT value FROM meta WHERE name = 'format'").fetchone() == ("2",)
        assert db.execute("SELECT COUNT(*) FROM rows WHERE checksum IS NOT NULL").fetchone() == (2,)


def test_a_store_edited_out_of_shape_is_refused(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    store = _copy(stored, tmp_path)
    with closing(sqlite3.connect(store)) as db, db:
        db.execute("ALTER TABLE rows DROP COLUMN checksum")
    with pytest.raises(SweepStoreError) as caught:
        _sweep(store)
    assert str(caught.value) == _message(
        store,
        "its rows table lacks column checksum; the store was edited out of shape: delete the "
        "file to start afresh, "
        "or give --store another path",
    )


# -- corrupt rows
# -----------------------------------------------------------------------------------

POINT = "point cluster.peer_link=10GbE, seed 1"


def _edit(text: str, how: str) -> str:
    row = json.loads(text)
    if how == "bad JSON":
        return text[:-10]
    if how == "missing column":
        del row["all.write.p99_ms"]
    elif how == "NaN count":
        row["all.write.count"] = float("nan")
    elif how == "NaN latency":
        row["db.write.p99_ms"] = float("nan")
    elif how == "a list":
        row["bottleneck"] = ["array"]
    return json.dumps(row)


@pytest.mark.parametrize(
    ("how", "rechecksum", "problem"),
    [
        ("number changed", False, "checksum mismatch"),
        ("no checksum", False, "no checksum"),
        ("bad JSON", True, "not valid JSON"),
        ("missing column", True, "1 column missing: all.write.p99_ms"),
        ("NaN count", True, "all.write.count is nan"),
        ("NaN latency", True, "db.write.p99_ms is nan with 162 I/Os"),
        ("a list", True, 'bottleneck is ["array"], not a number or a name'),
    ],
)
def test_a_corrupt_row_is_reported_by_point_and_recomputed(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path, how: str, rechecksum: bool, problem: str
) -> None:
    """Hand-edited rows (with the checksum recomputed, as a careful editor would) are still
    checked and never trusted."""
    store = _copy(stored, tmp_path)
    before = _rows(store)
    with closing(sqlite3.connect(store)) as db, db:
        key, text = db.execute("SELECT key, row FROM rows WHERE label = ?", (POINT,)).fetchone()
        if how == "number changed":
            db.execute(
                "UPDATE rows SET row = ? WHERE key = ?",
                (text.replace('"db.write.count": 162', '"db.write.count": 161'), key),
            )
        elif how == "no checksum":
            db.execute("UPDATE rows SET checksum = NULL WHERE key = ?", (key,))
        else:
            edited = _edit(text, how)
            db.execute(
                "UPDATE rows SET row = ?, checksum = ? WHERE key = ?",
                (edited, hashlib.sha256(f"{key}\n{edited}".encode()).hexdigest(), key),
            )
    states: list[SweepProgress] = []
    with pytest.warns(SweepStoreWarning) as warned:
        table = _sweep(store, progress=states.append)
    assert [str(w.message) for w in warned] == [
        f"{POINT}: stored row is corrupt ({problem}); recomputing"
    ]
    assert states[-1].skipped == 1, "the other row is reused"
    pd.testing.assert_frame_equal(table, stored[1])
    after = _rows(store)
    assert after[POINT][1] == before[POINT][1], "the recomputed row replaced the edited one"
    assert (
        after["point cluster.peer_link=1GbE, seed 1"]
        == before["point cluster.peer_link=1GbE, seed 1"]
    ), "the other row untouched"


def test_the_command_line_prints_corrupt_rows_as_warnings(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _copy(stored, tmp_path)
    with closing(sqlite3.connect(store)) as db, db:
        db.execute("UPDATE rows SET checksum = 'x' WHERE label = ?", (POINT,))
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'scenario = "{ROOT / "scenarios" / "default.toml"}"\n[grid]\n"cluster.peer_link" = '
        '["1GbE", "10GbE"]\n'
    )
    assert (
        main(
            [
                "sweep",
                str(grid),
                "--duration",
                "0.5s",
                "--workers",
                "1",
                "--store",
                str(store),
                "--out",
                str(tmp_path / "t.csv"),
            ]
        )
        == 0
    )
    assert (
        f"warning: {POINT}: stored row is corrupt (checksum mismatch); recomputing\n"
        in capsys.readouterr().err
    )


# -- sweeps sharing a store
# -------------------------------------------------------------------------


@pytest.mark.parametrize("owner", ["exited pid on this host", "stale heartbeat on another host"])
def test_a_claim_whose_owner_is_gone_is_taken_over(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path, owner: str
) -> None:
    store = _copy(stored, tmp_path)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    pid, host, beat = (
        (gone.pid, socket.gethostname(), time.time())
        if owner.startswith("exited")
        else (1, "elsewhere", time.time() - 3600)
    )
    with closing(sqlite3.connect(store)) as db, db:
        key = db.execute("SELECT key FROM rows WHERE label = ?", (POINT,)).fetchone()[0]
        db.execute("DELETE FROM rows WHERE key = ?", (key,))
        db.execute("INSERT INTO owners VALUES ('gone', ?, ?, ?)", (pid, host, beat))
        db.execute("INSERT INTO claims VALUES (?, 'gone', ?)", (key, beat))
    pd.testing.assert_frame_equal(_sweep(store), stored[1])
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,), (
            "the claim was taken over and released"
        )


def test_a_sweep_waits_for_the_row_of_a_task_a_live_sweep_holds(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another sweep (alive: this pid, a fresh heartbeat) holds the 10GbE task: this one computes
    only 1GbE and takes the other's row when it lands."""
    store = _copy(stored, tmp_path)
    with closing(sqlite3.connect(store)) as db, db:
        key, text, checksum = db.execute(
            "SELECT key, row, checksum FROM rows WHERE label = ?", (POINT,)
        ).fetchone()
        db.execute("DELETE FROM rows")
        db.execute(
            "INSERT INTO owners VALUES ('other', ?, ?, ?)",
            (os.getpid(), socket.gethostname(), time.time()),
        )
        db.execute("INSERT INTO claims VALUES (?, 'other', ?)", (key, time.time()))
    module = sys.modules["simcache.runs.sweep"]
    computed: list[int] = []
    one: Callable[[simcache.Scenario, int], dict[str, Any]] = module._one

    def counted(run: simcache.Scenario, seed: int) -> dict[str, Any]:
        computed.append(seed)
        return one(run, seed)

    monkeypatch.setattr(module, "_one", counted)

    def the_other_sweep_finishes() -> None:  # once this sweep has stored its own row
        while _count(store) < 1:
            time.sleep(0.02)
        with closing(sqlite3.connect(store)) as db, db:
            db.execute(
                "INSERT INTO rows VALUES (?, ?, ?, ?, 'other')", (key, text, checksum, POINT)
            )
            db.execute("DELETE FROM claims WHERE owner = 'other'")

    other = threading.Thread(target=the_other_sweep_finishes)
    other.start()
    states: list[SweepProgress] = []
    table = _sweep(store, progress=states.append)
    other.join()
    assert computed == [1] and states[-1].skipped == 1
    pd.testing.assert_frame_equal(table, stored[1])


CHILD = textwrap.dedent(
    """
    import json, pathlib, sys, time
    import simcache
    module = sys.modules["simcache.runs.sweep"]
    computed = []
    one = module._one
    module._one = lambda run, seed: computed.append(seed) or one(run, seed)
    barrier, name, store, out, grid = sys.argv[1:]
    (pathlib.Path(barrier) / name).touch()
    while len(list(pathlib.Path(barrier).iterdir())) < 2:  # both sweeps start together
        time.sleep(0.005)
    table = simcache.sweep(
        "default", json.loads(grid), seeds=[1, 2], duration=0.5, workers=1, store=store
    )
    table.to_pickle(out)
    print(len(computed))
    """
)


def test_two_sweeps_on_one_store_share_the_work(tmp_path: Path) -> None:
    """Two processes, the same 6 tasks, one store: 6 simulations in all, both compute some, and
    both get the whole table."""
    grid = {"cluster.peer_link": ["1GbE", "10GbE", "25GbE"]}
    barrier, store = tmp_path / "barrier", tmp_path / "shared.sqlite"
    barrier.mkdir()
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD,
                str(barrier),
                name,
                str(store),
                str(tmp_path / f"{name}.pkl"),
                json.dumps(grid),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [child.communicate(timeout=300) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err[-2000:] for _, err in outputs]
    computed = [int(out) for out, _ in outputs]
    assert sum(computed) == 6 and min(computed) >= 1, computed
    tables = [pd.read_pickle(tmp_path / f"{name}.pkl") for name in ("a", "b")]
    pd.testing.assert_frame_equal(tables[0], tables[1])
    assert len(tables[0]) == 6
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT computed_by) FROM rows").fetchone() == (
            6,
            2,
        )
        assert db.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)


# -- stopping
# ---------------------------------------------------------------------------------------


def test_an_interrupted_sweep_says_what_it_finished_and_kept(
    stored: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    store = _copy(stored, tmp_path)

    def stop_after_three(state: SweepProgress) -> None:
        if state.done == 3:
            raise KeyboardInterrupt

    with pytest.raises(SweepInterrupted) as caught:
        sweep(
            "default",
            GRID,
            seeds=[1, 2],
            duration=DURATION,
            workers=1,
            store=store,
            progress=stop_after_three,
        )
    stop = caught.value
    assert (stop.finished, stop.total, stop.computed, stop.store) == (3, 4, 1, store)
    assert str(stop) == f"sweep interrupted: 3 of 4 runs finished, kept in {store}"
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("SELECT COUNT(*) FROM rows").fetchone() == (3,)
        assert db.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,), (
            "an interrupted sweep releases its claims"
        )


def _cli_sweep(tmp_path: Path, workers: int) -> tuple[list[str], Path, Path]:
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
        str(workers),
        "--store",
        str(store),
    ]
    return command, grid, store


def _count(store: Path) -> int:
    try:
        with closing(sqlite3.connect(store)) as db:
            return int(db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
    except sqlite3.Error:
        return 0


def _stop(
    command: list[str], store: Path, sig: signal.Signals, rows: int
) -> tuple[int, str, list[int]]:
    """Start the command, send ``sig`` once the store holds ``rows`` rows; its exit status,
    stderr and child pids."""
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    children: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _count(store) < rows:
            time.sleep(0.05)
        children = _children(process.pid)
        process.send_signal(sig)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, err, children


def test_ctrl_c_on_the_command_line_keeps_finished_rows_and_says_how_to_resume(
    tmp_path: Path,
) -> None:
    command, grid, store = _cli_sweep(tmp_path, workers=1)
    code, err, _ = _stop(command, store, signal.SIGINT, rows=2)
    kept = _count(store)
    assert code == 130 and 2 <= kept < 12, f"exit {code}, {kept} rows kept; stderr:\n{err[-3000:]}"
    assert err.endswith(
        f"interrupted (SIGINT): {kept} of 12 runs finished and are kept in {store} ({kept} "
        "computed now, 0 from the store). Their rows are printed above, marked PARTIAL SWEEP.\n"
        f"Run the same command again to resume:\n  simcache sweep {grid} --duration 0.5s --workers "
        f"1 --store {store}\n"
    )
    before = _rows(store)
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert f"({kept} from the store)" in done.stderr and _count(store) == 12
    after = _rows(store)
    assert all(after[label] == row for label, row in before.items()), "kept rows are not recomputed"


def test_sigterm_stops_a_pool_sweep_and_its_workers(tmp_path: Path) -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("finds the sweep's child processes through /proc")
    command, _, store = _cli_sweep(tmp_path, workers=2)
    code, err, children = _stop(command, store, signal.SIGTERM, rows=1)
    kept = _count(store)
    assert code == 143 and 1 <= kept < 12
    assert (
        f"interrupted (SIGTERM): {kept} of 12 runs finished and are kept in {store} ({kept} "
        "computed now, 0 from the store)." in err
    )
    assert "Traceback" not in err, "workers ignore the stop; the sweep ends them"
    # multiprocessing's resource tracker ends once it sees the sweep gone
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(pid) for pid in children):
        time.sleep(0.1)
    assert len(children) >= 2 and not [pid for pid in children if _alive(pid)], (
        "no worker outlives the sweep"
    )


def test_ctrl_c_without_a_store_says_a_rerun_starts_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "grid.toml"
    # a built-in name
    grid.write_text('scenario = "default"\n[grid]\n"cluster.peer_link" = ["1GbE", "10GbE"]\n')

    def interrupt(state: SweepProgress) -> None:
        if state.done == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(sys.modules["simcache.cli.sweep"], "_sweep_progress", interrupt)
    assert main(["sweep", str(grid), "--duration", "0.5s", "--workers", "1"]) == 130
    assert capsys.readouterr().err == (
        "interrupted (SIGINT): 1 of 2 runs finished. Their rows are printed above, marked PARTIAL "
        "SWEEP. Without --store a rerun starts over: give --store PATH to keep finished runs and "
        "resume after a stop.\n"
    )


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
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_sweep_files_scenario_must_be_a_name_or_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text('scenario = 5\n[grid]\n"cluster.peer_link" = ["1GbE"]\n')
    assert main(["sweep", str(grid)]) == 2
    assert capsys.readouterr().err == (
        f"error: {grid}: invalid sweep (1 problem)\n"
        '  scenario: give a scenario file or built-in name, e.g. scenario = "default" (got 5)\n'
    )
