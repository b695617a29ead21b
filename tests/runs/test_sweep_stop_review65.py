"""Review 65 (B), finding 4: a sweep stopped by Ctrl-C or SIGTERM keeps the runs it finished, with
or without ``--store``: the library's :class:`SweepInterrupted` holds their rows, and ``simcache
sweep`` prints or writes them (``--out``) marked partial, says so on stderr in ended lines and
exits 130 or 143."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pandas as pd
import pytest
from support.builders import small_scenario
from support.signals import interrupt
from support.strategies import to_toml

from simcache.cli.main import main
from simcache.runs.sweep import SweepInterrupted, SweepProgress, sweep

GRID = {"cluster.peer_link": ["1GbE", "10GbE"]}


def _stop_after_one(state: SweepProgress) -> None:
    if state.done == 1:
        raise KeyboardInterrupt


def test_an_interrupted_sweep_hands_back_the_rows_it_finished() -> None:
    with pytest.raises(SweepInterrupted) as caught:
        sweep(
            small_scenario("stop"),
            GRID,
            seeds=[1, 2],
            duration=0.5,
            workers=1,
            progress=_stop_after_one,
        )
    stop = caught.value
    assert (stop.finished, stop.total, stop.store) == (1, 4, None)
    assert stop.table is not None
    assert list(stop.table[["cluster.peer_link", "seed"]].itertuples(index=False)) == [("1GbE", 1)]
    assert stop.table.attrs["planned"] == 4


def _grid(tmp_path: Path, body: str = '[grid]\n"cluster.hosts" = [2, 3]\n') -> Path:
    """A sweep file of a small scenario (written beside it) with ``body``: by default two points
    of one seed."""
    (tmp_path / "small.toml").write_text(to_toml(small_scenario("stop")))
    grid = tmp_path / "grid.toml"
    grid.write_text('scenario = "small.toml"\n' + body)
    return grid


TWELVE_POINTS = (
    'seeds = [1, 2, 3]\n[grid]\n"groups.db.workload.iops" = '
    f"[{', '.join(str(100 + n) for n in range(12))}]\n"
)
"""36 runs: long enough to be stopped part way."""


def test_ctrl_c_without_a_store_writes_the_finished_rows_marked_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.modules["simcache.cli.sweep"], "_sweep_progress", _stop_after_one)
    table = tmp_path / "sweep.csv"
    argv = ["sweep", str(_grid(tmp_path)), "--duration", "0.5s", "--workers", "1"]
    assert main([*argv, "--out", str(table)]) == 130
    out, err = capsys.readouterr()
    assert out == f"1 partial rows written to {table}\n"
    assert err == (
        f"interrupted (SIGINT): 1 of 2 runs finished. Their rows are written to {table}, marked "
        "partial (column 'partial'). Without --store a rerun starts over: give --store PATH to "
        "keep finished runs and resume after a stop.\n"
    )
    rows = pd.read_csv(table)
    assert list(rows["cluster.hosts"]) == [2]
    assert list(rows["partial"]) == ["stopped by SIGINT: 1 of 2 runs finished"]


def test_ctrl_c_without_out_prints_the_finished_rows_and_says_they_are_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.modules["simcache.cli.sweep"], "_sweep_progress", _stop_after_one)
    argv = ["sweep", str(_grid(tmp_path)), "--duration", "0.5s", "--workers", "1", "--summary"]
    assert main(argv) == 130
    out, err = capsys.readouterr()
    assert out.startswith("Sweep of cluster.hosts: 1 point, 1 seed each.\n")
    assert out.endswith("PARTIAL SWEEP: stopped by SIGINT: 1 of 2 runs finished\n")
    assert "Their rows are printed above, marked PARTIAL SWEEP." in err and err.endswith("\n")


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("stored", [False, True], ids=["no-store", "store"])
def test_a_signalled_sweep_writes_its_finished_rows_to_out(
    tmp_path: Path, sig: signal.Signals, status: int, stored: bool
) -> None:
    table = tmp_path / "sweep.csv"
    store = ["--store", str(tmp_path / "rows.sqlite")] if stored else []
    argv = ["sweep", str(_grid(tmp_path, TWELVE_POINTS)), "--duration", "1s", "--workers", "1"]
    code, stdout, stderr, _ = interrupt(
        [*argv, *store, "--out", str(table)],
        sig,
        lambda line: line.startswith("  2/36 runs done"),
    )
    assert code == status, stderr
    rows = pd.read_csv(table)
    finished = len(rows)
    assert 2 <= finished < 36
    name = sig.name
    assert set(rows["partial"]) == {f"stopped by {name}: {finished} of 36 runs finished"}
    assert f"{finished} partial rows written to {table}" in stdout
    assert f"interrupted ({name}): {finished} of 36 runs finished" in stderr
    assert f"Their rows are written to {table}, marked partial (column 'partial')." in stderr
    assert stderr.endswith("\n") and "Traceback" not in stderr
