"""``simcache report --sweep``'s sweep run as ``simcache sweep`` runs it (review 67a F10): a sweep
file as ``--sweep``, ``--store`` (a sweep that ``simcache sweep`` stored becomes the report without
running again; a stopped report's sweep resumes) and ``--scheduler`` (Dask, with the same address
checks before anything runs)."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.builders import small_scenario
from support.cli import call
from support.strategies import to_toml

from simcache.runs.sweep import SweepProgress


@pytest.fixture
def grid(tmp_path: Path) -> Path:
    """A sweep file (two peer links, seeds 1 and 2) of ``small.toml`` beside it, a 1 s scenario
    sampled every 0.1 s."""
    scenario = small_scenario("report-sweep", run={"sample_interval": "0.1s"})
    (tmp_path / "small.toml").write_text(to_toml(scenario))
    path = tmp_path / "grid.toml"
    path.write_text(
        'scenario = "small.toml"\nseeds = [1, 2]\n[grid]\n"cluster.peer_link" = ["1GbE", "10GbE"]\n'
    )
    return path


def report(grid: Path, *options: str) -> tuple[int, str, str]:
    """``simcache report`` of the grid's scenario, its sweep the grid's, written beside it."""
    return call(
        [
            "report",
            str(grid.parent / "small.toml"),
            "-o",
            str(grid.parent / "report.html"),
            "--sweep",
            str(grid),
            *options,
        ]
    )


def sweep_table(grid: Path) -> str:
    """The report's sweep table, as HTML."""
    html = (grid.parent / "report.html").read_text("utf-8")
    start = html.index("<h2>Sweep</h2>")
    return html[start : html.index("</table>", start)]


def test_a_sweep_that_simcache_sweep_stored_becomes_the_report_without_running_again(
    grid: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``simcache sweep GRID --duration --store S``, then ``report SCENARIO --sweep GRID --duration
    --store S``: every sweep run comes from the store (none is simulated), and the page's sweep
    table is the one a report without the store computes. Before, the report's sweep took no
    store, and its runs (the duration set in the scenario, not given to the sweep) were not
    those of ``simcache sweep``."""
    store = grid.parent / "sweep.sqlite"
    common = ["--duration", "0.8s", "--workers", "1"]
    code, _, stderr = call(["sweep", str(grid), "--store", str(store), *common])
    assert code == 0, stderr
    code, _, stderr = report(grid, *common)
    assert code == 0, stderr
    computed = sweep_table(grid)

    from simcache.runs import sweep as runs_sweep

    def no_run(*args: object) -> None:
        raise AssertionError("a sweep run was simulated, not read from the store")

    monkeypatch.setattr(runs_sweep, "_one_here", no_run)
    code, stdout, stderr = report(grid, "--store", str(store), *common)
    assert code == 0, stderr
    assert "4/4 runs done (4 from the store)" in stderr
    assert "report written to" in stdout
    assert sweep_table(grid) == computed


def test_a_stopped_reports_sweep_is_kept_in_its_store_and_resumed(
    grid: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C once two sweep runs have finished: the report is written, partial, and says that its
    finished runs are in the store; the same command again takes them from there and finishes
    (exit 0, nothing partial)."""
    from simcache.cli import sweep as cli_sweep

    shown = cli_sweep._sweep_progress
    store = grid.parent / "sweep.sqlite"

    def interrupt_after_two(state: SweepProgress) -> None:
        shown(state)
        if state.done == 2 and not state.skipped:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(cli_sweep, "_sweep_progress", interrupt_after_two)
    options = ["--store", str(store), "--workers", "1"]
    code, stdout, stderr = report(grid, *options)
    assert code == 130, stderr
    finished = int(re.search(r"after (\d+) of 4 runs", stdout)[1])  # type: ignore[index]
    assert 2 <= finished < 4
    assert stdout.splitlines()[-1].endswith(
        f"; its finished runs are kept in {store}: the same command resumes them"
    )
    code, stdout, stderr = report(grid, *options)
    assert code == 0, stderr
    assert f"4/4 runs done ({finished} from the store)" in stderr
    assert "PARTIAL" not in stdout


@pytest.fixture
def dask_scheduler() -> Iterator[object]:
    """A running Dask scheduler with one in-process worker thread, reached over TCP."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        dashboard_address=None,
    )
    with cluster:
        yield cluster


def test_a_reports_sweep_runs_on_the_dask_scheduler_given(
    grid: Path, dask_scheduler: object
) -> None:
    """``--scheduler tcp://HOST:PORT``: the sweep's four runs are the scheduler's tasks, and the
    page's table is the local sweep's."""
    address = dask_scheduler.scheduler_address  # type: ignore[attr-defined]
    code, _, stderr = report(grid, "--duration", "0.5s", "--workers", "1")
    assert code == 0, stderr
    local = sweep_table(grid)
    code, stdout, stderr = report(grid, "--duration", "0.5s", "--scheduler", address)
    assert code == 0, stderr
    assert "report written to" in stdout
    prefixes = dask_scheduler.scheduler.task_prefixes  # type: ignore[attr-defined]
    assert sum(prefix.state_counts["memory"] for prefix in prefixes.values()) == 4
    assert sweep_table(grid) == local


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("nonsense", "not a Dask scheduler address: has no port (HOST:PORT)"),
        ("tcp://127.0.0.1:8799x", "not a Dask scheduler address: the port '8799x' is not a"),
    ],
)
def test_a_malformed_scheduler_is_one_line_before_the_run(
    grid: Path, address: str, problem: str
) -> None:
    started = time.monotonic()
    code, stdout, stderr = report(grid, "--scheduler", address)
    assert code == 2 and stdout == "", stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith(f"error: --scheduler {address}: {problem}")
    assert time.monotonic() - started < 10
    assert not (grid.parent / "report.html").exists()


def test_a_sweep_file_of_another_scenario_is_refused(grid: Path) -> None:
    """Its rows would be another scenario's, its points not around the run."""
    other = grid.parent / "other.toml"
    other.write_text(to_toml(small_scenario("other")))
    code, _, stderr = call(["report", str(other), "--sweep", str(grid)])
    assert code == 2
    assert stderr == (
        f"error: {grid}: invalid sweep (1 problem)\n"
        f"  scenario: 'small.toml' is not the report's scenario ({other}): report it (simcache "
        f"report {grid.parent / 'small.toml'} --sweep {grid}), or give the grid as --sweep lines\n"
    )


def test_a_sweep_value_neither_file_nor_line_is_an_invalid_option(grid: Path) -> None:
    """A line without its ``=`` is not read as a missing sweep file."""
    code, _, stderr = report(grid.parent / "nothere.toml")
    assert code == 2
    assert stderr.startswith(
        "error: --sweep: invalid option (1 problem)\n  --sweep: "
        f"'{grid.parent / 'nothere.toml'}' is no file and no line of a grid"
    )


def test_sweep_seeds_that_cannot_run_are_an_invalid_option_before_the_run(grid: Path) -> None:
    code, _, stderr = report(grid, "--sweep-seeds", "-1")
    assert code == 2
    assert stderr == (
        "error: --sweep-seeds: invalid option (1 problem)\n"
        "  --sweep-seeds: give a list of seeds, whole numbers >= 0 (got [-1])\n"
    )


@pytest.mark.parametrize("bad", ["folder", "not-sqlite"])
def test_a_store_that_cannot_be_one_is_told_before_the_reports_run(
    grid: Path, bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder, or a file that is not SQLite, as ``--store``: one error naming it and the fix,
    before the report's own run (it had been told after that run, when the sweep opened it)."""
    store = grid.parent / bad
    if bad == "folder":
        store.mkdir()
    else:
        store.write_text("not a store\n")
    runs: list[object] = []
    monkeypatch.setattr("simcache.cli.run.simulate", lambda *a, **k: runs.append(a))
    code, stdout, stderr = report(grid, "--store", str(store))
    assert code == 2 and stdout == "", stderr
    assert stderr.startswith(f"error: {store}: "), stderr
    assert ("is a directory" if bad == "folder" else "is not a SQLite file") in stderr
    assert "--store" in stderr  # the fix names the option
    assert runs == [] and not (grid.parent / "report.html").exists()


def test_the_sweeps_options_without_a_sweep_are_refused(grid: Path) -> None:
    """``--store`` (and ``--workers``, ``--scheduler``, ``--sweep-seeds``) act on the sweep: without
    one they had been ignored, a store that kept nothing and said nothing."""
    store = grid.parent / "kept.sqlite"
    code, stdout, stderr = call(
        ["report", str(grid.parent / "small.toml"), "--store", str(store), "--workers", "2"]
    )
    assert code == 2 and stdout == "", stderr
    assert stderr == (
        "error: --workers: invalid option (1 problem)\n"
        "  --workers: --workers and --store act on the sweep around the run, and this report has "
        "none: give --sweep (a line of a grid or a sweep file), or leave them out\n"
    )
    assert not store.exists()


def test_a_scenarios_warnings_are_told_once_with_a_sweep_file(tmp_path: Path) -> None:
    """The report's scenario and the sweep file's are loaded again to compare them: their load's
    warnings (here two ends of the storage network speaking different transports) had been told
    two or three times (review 67b)."""
    text = (Path(__file__).parents[2] / "scenarios" / "default.toml").read_text("utf-8")
    (tmp_path / "warn.toml").write_text(
        text.replace('storage_link = "1GbE"', 'storage_link = "nvmeof-rdma-100GbE"'), "utf-8"
    )
    grid = tmp_path / "grid.toml"
    grid.write_text('scenario = "warn.toml"\nseeds = [1]\n[grid]\n"cluster.hosts" = [4]\n')
    code, _, stderr = call(
        [
            "report",
            str(tmp_path / "warn.toml"),
            "--duration",
            "0.5s",
            "--sweep",
            str(grid),
            "--workers",
            "1",
            "-o",
            str(tmp_path / "w.html"),
        ]
    )
    assert code == 0, stderr
    assert stderr.count("speaks RDMA") == 1, stderr


def test_a_variants_sweep_says_a_sweep_files_stored_runs_are_not_its_own(
    grid: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --variant the sweep varies the variant, so runs ``simcache sweep`` stored for the
    file's scenario as written are run again: said, not left silent (review 67b)."""
    scenario = small_scenario("report-sweep", run={"sample_interval": "0.1s"})
    scenario["variants"] = {"wt": {"groups.db.policy": "WT"}}
    (grid.parent / "small.toml").write_text(to_toml(scenario))
    code, _, stderr = report(grid, "--variant", "wt", "--store", str(grid.parent / "s.sqlite"))
    assert code == 0, stderr
    assert (
        "note: the sweep varies variant 'wt', not the scenario as "
        f"{grid} names it: runs simcache sweep {grid} kept in {grid.parent / 's.sqlite'} are not "
        "this sweep's, and are run again"
    ) in stderr
