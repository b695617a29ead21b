"""Review 65 (B), findings 2, 10 and 15: the commands' output paths and options checked before any
work starts (exit 2, the option, the reason and the fix; nothing created, no run lost), ``sweep
--until``'s outcome said after the sweep, and errors that name the sweep file's ``[grid]`` or the
option rather than an invalid scenario."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.builders import small_scenario
from support.cli import call
from support.paths import ROOT
from support.strategies import to_toml

DEFAULT = str(ROOT / "scenarios" / "default.toml")


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A 1 s scenario file."""
    path = tmp_path / "small.toml"
    path.write_text(to_toml(small_scenario("review65")))
    return path


def _grid(tmp_path: Path, body: str) -> Path:
    """A sweep file of ``small.toml`` (written beside it) with ``body``."""
    (tmp_path / "small.toml").write_text(to_toml(small_scenario("review65")))
    grid = tmp_path / "grid.toml"
    grid.write_text('scenario = "small.toml"\n' + body)
    return grid


def _refused_before_work(code: int, stderr: str, path: Path, option: str, reason: str) -> None:
    """Exit 2 with the one-problem message naming ``path``, ``option`` and ``reason``, and no sign
    that anything ran."""
    assert code == 2, stderr
    assert stderr.startswith(f"error: {path}: cannot write there (1 problem)\n  {option}: "), stderr
    assert reason in stderr
    assert "Traceback" not in stderr
    assert "simulating" not in stderr and "runs done" not in stderr and "running" not in stderr


# -- finding 2: output paths ---------------------------------------------------------------------


def test_run_out_on_an_existing_file_is_refused_before_the_run(small: Path) -> None:
    code, _, stderr = call(["run", str(small), "--out", str(small)])
    _refused_before_work(code, stderr, small, "--out", "is a file, not a folder")


def test_run_out_under_a_file_is_refused_before_the_run(small: Path) -> None:
    under = small / "sub"
    code, _, stderr = call(["run", str(small), "--out", str(under)])
    _refused_before_work(code, stderr, under, "--out", f"{small} is a file, not a folder")


def test_run_json_out_on_an_existing_file_is_refused_before_the_run(small: Path) -> None:
    code, stdout, stderr = call(["run", str(small), "--json", "--out", str(small)])
    _refused_before_work(code, stderr, small, "--out", "is a file, not a folder")
    assert stdout == ""


def test_run_records_in_a_missing_folder_is_refused_and_creates_nothing(
    small: Path, tmp_path: Path
) -> None:
    records = tmp_path / "missing" / "records.parquet"
    code, _, stderr = call(["run", str(small), "--records", str(records)])
    _refused_before_work(
        code, stderr, records, "--records", f"its folder {records.parent} does not exist"
    )
    assert not records.parent.exists()


def test_run_out_makes_a_new_folder_and_its_parents(small: Path, tmp_path: Path) -> None:
    """The README's first command writes ``--out results/default`` in a fresh clone."""
    out = tmp_path / "results" / "default"
    code, stdout, stderr = call(["run", str(small), "--out", str(out)])
    assert code == 0, stderr
    assert (out / "summary.csv").is_file() and f"results written to {out}/" in stdout


def test_run_records_in_the_new_out_folder_is_made_with_it(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "results" / "small"
    records = out / "records.parquet"
    code, _, stderr = call(["run", str(small), "--out", str(out), "--records", str(records)])
    assert code == 0, stderr
    assert records.is_file() and (out / "summary.csv").is_file()


def test_report_o_in_a_missing_folder_is_refused_before_the_run(
    small: Path, tmp_path: Path
) -> None:
    page = tmp_path / "missing" / "report.html"
    code, _, stderr = call(["report", str(small), "-o", str(page)])
    _refused_before_work(code, stderr, page, "-o", f"its folder {page.parent} does not exist")


def test_sweep_out_in_a_missing_folder_is_refused_before_any_run(tmp_path: Path) -> None:
    grid = _grid(tmp_path, '[grid]\n"cluster.peer_link" = ["1GbE", "10GbE"]\n')
    table = tmp_path / "missing" / "sweep.csv"
    code, _, stderr = call(["sweep", str(grid), "--workers", "1", "--out", str(table)])
    _refused_before_work(code, stderr, table, "--out", f"its folder {table.parent} does not exist")


def test_check_report_in_a_missing_folder_is_refused_before_any_check(tmp_path: Path) -> None:
    report = tmp_path / "missing" / "report.md"
    code, _, stderr = call(["check", DEFAULT, "--seeds", "1", "--report", str(report)])
    _refused_before_work(code, stderr, report, "--report", "does not exist")


def test_size_o_in_a_missing_folder_is_refused_and_creates_nothing(
    small: Path, tmp_path: Path
) -> None:
    page = tmp_path / "missing" / "size.html"
    code, _, stderr = call(
        [
            "size",
            str(small),
            "--target",
            "write p99 <= 5ms",
            "--vary",
            "cluster.hosts = 2:3",
            "-o",
            str(page),
        ]
    )
    _refused_before_work(code, stderr, page, "-o", f"its folder {page.parent} does not exist")
    assert not page.parent.exists()


# -- finding 10: sweep --until ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "option", "message"),
    [
        (
            ["--until", "all.wrte.mean_ms=0.05"],
            "--until",
            "no result column 'all.wrte.mean_ms'; e.g. all.write.mean_ms, db.write.p99_ms",
        ),
        (["--until", "all.write.mean_ms=-1"], "--until", "must be above 0"),
        (["--until", "all.write.mean_ms=0"], "--until", "must be above 0"),
        (["--until", "all.write.mean_ms"], "--until", "write METRIC=WIDTH"),
        (
            ["--until", "all.write.mean_ms=0.05", "--max-seeds", "0"],
            "--max-seeds",
            "must be at least 1 (got 0)",
        ),
    ],
    ids=["misspelt-metric", "negative-width", "zero-width", "no-width", "no-seeds"],
)
def test_sweep_until_is_checked_before_any_run(
    tmp_path: Path, options: list[str], option: str, message: str
) -> None:
    grid = _grid(tmp_path, '[grid]\n"cluster.peer_link" = ["1GbE", "10GbE"]\n')
    code, stdout, stderr = call(["sweep", str(grid), "--workers", "1", *options])
    assert code == 2, stderr
    assert stderr.startswith(f"error: {option}: invalid option (1 problem)\n  {option}: ")
    assert message in stderr
    assert "runs done" not in stderr and stdout == ""


def test_sweep_until_says_which_points_stopped_short_of_the_width(tmp_path: Path) -> None:
    grid = _grid(tmp_path, 'seeds = [1, 2]\n[grid]\n"cluster.peer_link" = ["1GbE"]\n')
    code, stdout, stderr = call(
        [
            "sweep",
            str(grid),
            "--duration",
            "0.5s",
            "--workers",
            "1",
            "--until",
            "all.read.mean_ms=0.000001",
            "--max-seeds",
            "3",
        ]
    )
    assert code == 0, stderr
    lines = stdout.splitlines()
    head = lines.index(
        "--until all.read.mean_ms=1e-06: 0 of 1 point reached a 95% interval within 0.0001% of "
        "the mean; 1 stopped at --max-seeds 3 short of it:"
    )
    assert lines[head + 1].startswith("  cluster.peer_link=1GbE: 3 seeds, +/-")


def test_sweep_until_says_when_every_point_reached_the_width(tmp_path: Path) -> None:
    grid = _grid(tmp_path, 'seeds = [1, 2]\n[grid]\n"cluster.peer_link" = ["1GbE"]\n')
    table = tmp_path / "sweep.csv"
    code, stdout, stderr = call(
        [
            "sweep",
            str(grid),
            "--duration",
            "0.5s",
            "--workers",
            "1",
            "--until",
            "all.write.mean_ms=10",
            "--out",
            str(table),
        ]
    )
    assert code == 0, stderr
    assert stdout.splitlines()[-1] == (
        "--until all.write.mean_ms=10: 1 of 1 point reached a 95% interval within 1000% of "
        "the mean."
    )


# -- finding 15: what an error is headed and names -------------------------------------------------


def test_a_bad_grid_point_names_the_sweep_file_and_its_grid_key(tmp_path: Path) -> None:
    grid = _grid(tmp_path, '[grid]\n"cluster.peer_lnk" = ["1GbE"]\n')
    code, _, stderr = call(["sweep", str(grid), "--workers", "1"])
    assert code == 2
    assert stderr.startswith(
        f"error: {grid} [grid] cluster.peer_lnk = '1GbE': invalid scenario (1 problem)\n"
        "  cluster.peer_lnk: unknown field 'peer_lnk'"
    )


def test_bad_seeds_in_a_sweep_file_name_the_file(tmp_path: Path) -> None:
    grid = _grid(tmp_path, 'seeds = [-1]\n[grid]\n"cluster.peer_link" = ["1GbE"]\n')
    code, _, stderr = call(["sweep", str(grid), "--workers", "1"])
    assert code == 2
    assert stderr.startswith(f"error: {grid}: invalid sweep (1 problem)\n  seeds: ")


def test_check_seeds_0_is_an_invalid_option() -> None:
    code, _, stderr = call(["check", DEFAULT, "--seeds", "0"])
    assert code == 2
    assert stderr == (
        "error: --seeds: invalid option (1 problem)\n  --seeds: must be at least 1 (got 0)\n"
    )


def test_report_target_that_does_not_parse_is_an_invalid_option(small: Path) -> None:
    code, _, stderr = call(["report", str(small), "--target", "write p99 < 5 ms"])
    assert code == 2
    assert stderr.startswith("error: --target: invalid option (1 problem)\n  --target: ")
    assert "simulating" not in stderr


def test_report_sweep_point_error_names_the_option(small: Path) -> None:
    code, _, stderr = call(["report", str(small), "--sweep", "cluster.hosts = [0]"])
    assert code == 2
    assert stderr.startswith("error: --sweep cluster.hosts = 0: invalid scenario (1 problem)\n")
