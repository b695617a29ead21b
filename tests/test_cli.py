"""The command line: run (tables, files, JSON), profiles, sweep, and its error handling."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from strategies import to_toml

import simcache
from simcache.cli import main
from simcache.collect import COMPONENTS
from simcache.profiles import KINDS, list_profiles

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "scenarios" / "default.toml"
TABLES = ("records", "series", "summary", "breakdown")


def small() -> dict[str, Any]:
    return {
        "name": "cli-small",
        "run": {"duration": "1s", "warmup": "0.1s", "sample_interval": "0.25s", "seed": 5},
        "cluster": {"hosts": 2, "tier": "nvme-p3700", "peer_link": "10GbE", "storage_link": "1GbE"},
        "array": "array-14x7200",
        "groups": [{"name": "db", "policy": "WB+1", "workload": {"mode": "open", "iops": 200, "read_fraction": 0.3}}],
    }


def call(argv: list[str]) -> tuple[int, str, str]:
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, str, Path]:
    out = tmp_path_factory.mktemp("cli") / "out"
    code, stdout, stderr = call(["run", str(DEFAULT), "--duration", "3s", "--out", str(out)])
    return code, stdout, stderr, out


# -- run: the report ------------------------------------------------------------------------------


def test_run_exits_zero(default_run: tuple[int, str, str, Path]) -> None:
    code, _, stderr, _ = default_run
    assert code == 0, stderr


def test_run_prints_the_latency_table(default_run: tuple[int, str, str, Path]) -> None:
    _, stdout, _, _ = default_run
    assert "scenario 'default'" in stdout
    assert "simulated 3s" in stdout
    lines = stdout.splitlines()
    start = lines.index("Latency per VM group (ms), IOPS and MB/s:")
    header = lines[start + 1].split()
    assert header == ["group", "op", "count", "iops", "mb_s", "p50_ms", "p95_ms", "p99_ms", "p999_ms", "mean_ms"]
    rows = [line.split() for line in lines[start + 2 : start + 10]]
    assert {(row[0], row[1]) for row in rows} == {(g, op) for g in ("db", "build", "web", "all") for op in ("read", "write")}
    assert all(len(row) == len(header) for row in rows)


def test_run_prints_the_breakdown(default_run: tuple[int, str, str, Path]) -> None:
    _, stdout, _, _ = default_run
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Where the write latency comes from"))
    assert lines[start + 1].split() == ["group", "write_mean_ms", *COMPONENTS, "dominant"]
    groups = [lines[start + k].split()[0] for k in range(2, 6)]
    assert sorted(groups) == ["all", "build", "db", "web"]
    assert "bottleneck:" in stdout
    assert "Busiest components" in stdout
    assert "results written to" in stdout


def test_run_writes_tables_and_meta(default_run: tuple[int, str, str, Path]) -> None:
    _, _, _, out = default_run
    for name in TABLES:
        csv = pd.read_csv(out / f"{name}.csv")
        parquet = pd.read_parquet(out / f"{name}.parquet")
        assert len(csv) == len(parquet) > 0, name
        assert list(csv.columns) == list(parquet.columns), name
    meta = json.loads((out / "meta.json").read_text())
    assert meta["seed"] == 1
    assert meta["version"] == simcache.__version__
    assert meta["wall_time_s"] > 0
    assert meta["simulated_s"] == 3.0
    assert meta["scenario"]["name"] == "default"
    assert simcache.load_scenario(meta["scenario"]).run.duration == 3.0
    assert meta["ios"] == len(pd.read_parquet(out / "records.parquet"))
    assert "destaged_bytes" in meta["totals"]
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns)[:2] == ["group", "op"]
    assert {"p50_ms", "p95_ms", "p99_ms", "p999_ms"} <= set(summary.columns)
    series = pd.read_parquet(out / "series.parquet")
    assert "time_s" in series.columns
    assert any(c.startswith("util.") for c in series.columns)


def test_run_json_parses(tmp_path: Path) -> None:
    path = tmp_path / "small.toml"
    path.write_text(to_toml(small()))
    code, stdout, stderr = call(["run", str(path), "--json", "--seed", "9"])
    assert code == 0, stderr
    data = json.loads(stdout)
    assert set(data) == {"summary", "breakdown", "totals", "meta"}
    assert data["meta"]["seed"] == 9
    assert data["meta"]["simulated_s"] == 1.0
    rows = {(row["group"], row["op"]): row for row in data["summary"]}
    assert set(rows) == {("db", "read"), ("db", "write"), ("all", "read"), ("all", "write")}
    assert rows[("db", "write")]["count"] > 0


def test_run_is_reproducible_from_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "small.toml"
    path.write_text(to_toml(small()))
    first = json.loads(call(["run", str(path), "--json", "--duration", "0.5s"])[1])
    second = json.loads(call(["run", str(path), "--json", "--duration", "0.5s"])[1])
    assert first["summary"] == second["summary"]
    assert first["meta"]["seed"] == 5


def test_run_by_builtin_name() -> None:
    code, stdout, stderr = call(["run", "default", "--duration", "1s", "--json"])
    assert code == 0, stderr
    assert json.loads(stdout)["meta"]["scenario_name"] == "default"


def test_run_as_a_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "small.toml"
    path.write_text(to_toml(small()))
    completed = subprocess.run(
        [sys.executable, "-m", "simcache.cli", "run", str(path), "--duration", "0.5s", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "p999_ms" in completed.stdout
    assert "Traceback" not in completed.stderr
    assert (tmp_path / "out" / "meta.json").is_file()


def test_installed_entry_point_reports_errors_with_exit_2(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "simcache"
    if not script.exists():
        pytest.skip("the simcache console script is not installed in this environment")
    bad = tmp_path / "bad.toml"
    data = small()
    data["groups"][0]["policy"] = "WB+2"
    bad.write_text(to_toml(data))
    completed = subprocess.run([str(script), "run", str(bad)], capture_output=True, text=True, timeout=120, check=False, env=os.environ)
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: ")
    assert "WB+2" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_run_with_an_onoff_open_loop_finishes(tmp_path: Path) -> None:
    data = small()
    data["run"].update(duration="3s", sample_interval="0.5s")
    data["groups"][0]["workload"].update(arrivals="uniform", duty_cycle={"shape": "onoff", "on": "0.3s", "off": "0.2s"})
    path = tmp_path / "duty.toml"
    path.write_text(to_toml(data))
    completed = subprocess.run(
        [sys.executable, "-m", "simcache.cli", "run", str(path), "--json"], capture_output=True, text=True, timeout=10, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["meta"]["ios"] > 0


# -- profiles -------------------------------------------------------------------------------------


def test_profiles_lists_every_profile_with_a_source() -> None:
    code, stdout, _ = call(["profiles"])
    assert code == 0
    for kind in KINDS:
        assert f"{kind} profiles:" in stdout
        for name, fields in list_profiles(kind).items():
            assert f"  {name}: " in stdout, name
            assert fields.get("source"), f"{kind} profile {name} has no source"
            assert f"source: {fields['source']}" in stdout
    assert "source: not given" not in stdout


def test_profiles_of_one_kind() -> None:
    code, stdout, _ = call(["profiles", "link"])
    assert code == 0
    assert "link profiles:" in stdout
    assert "tier profiles:" not in stdout
    assert "10GbE" in stdout
    assert "sata-ssd-s3700" not in stdout


def test_profiles_rejects_an_unknown_kind() -> None:
    code, _, stderr = call(["profiles", "gpu"])
    assert code == 2
    assert "gpu" in stderr


# -- sweep ----------------------------------------------------------------------------------------


def error_line(stderr: str) -> str:
    """The ``error: ...`` message (sweeps print progress lines before it); fails if there is none."""
    start = stderr.find("error: ")
    assert start >= 0, f"no error line in:\n{stderr}"
    assert start == 0 or stderr[start - 1] == "\n", f"the error is not on a line of its own:\n{stderr}"
    return stderr[start:]


def write_grid(tmp_path: Path, body: str, scenario: str = "small.toml") -> Path:
    (tmp_path / "small.toml").write_text(to_toml(small()))
    grid = tmp_path / "grid.toml"
    grid.write_text(f'scenario = "{scenario}"\n' + body)
    return grid


def test_sweep_writes_one_row_per_point_and_seed(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, 'seeds = [1, 2]\n[grid]\n"groups.db.policy" = ["WB+0", "WB+1"]\n"cluster.peer_link" = ["1GbE", "10GbE"]\n')
    out = tmp_path / "sweep.csv"
    code, stdout, stderr = call(["sweep", str(grid), "--duration", "0.5s", "--out", str(out)])
    assert code == 0, stderr
    assert "8 rows written" in stdout
    table = pd.read_csv(out)
    assert len(table) == 8
    assert {"groups.db.policy", "cluster.peer_link", "seed", "db.write.p99_ms", "bottleneck"} <= set(table.columns)
    assert len(table.drop_duplicates(["groups.db.policy", "cluster.peer_link", "seed"])) == 8
    assert "8/8 runs done" in stderr


def test_sweep_prints_the_table_without_out(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, '[grid]\n"groups.db.workload.iops" = [50, 100]\n')
    code, stdout, stderr = call(["sweep", str(grid), "--duration", "0.5s"])
    assert code == 0, stderr
    assert "groups.db.workload.iops" in stdout
    assert "db.write.iops" in stdout


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('[grid]\n"groups.db.policy" = ["WB+0", "WB+7"]\n', "WB+7"),
        ('[grid]\n"groups.nosuch.policy" = ["WB+0"]\n', "nosuch"),
        ('seedz = [1]\n[grid]\n"groups.db.policy" = ["WB+0"]\n', "seedz"),
        ("seeds = [1]\n", "[grid]"),
        ('[grid\n"x" = 1\n', "cannot read"),
    ],
    ids=["bad-value", "bad-group", "unknown-key", "no-grid", "malformed"],
)
def test_sweep_bad_input_exits_2(tmp_path: Path, body: str, fragment: str) -> None:
    grid = write_grid(tmp_path, body)
    code, _, stderr = call(["sweep", str(grid), "--duration", "0.5s"])
    assert code == 2
    assert fragment in error_line(stderr)
    assert "Traceback" not in stderr


def test_sweep_missing_scenario_file_exits_2(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, '[grid]\n"run.seed" = [1]\n', scenario="missing.toml")
    code, _, stderr = call(["sweep", str(grid)])
    assert code == 2
    assert "missing.toml" in stderr


def test_sweep_grid_value_must_be_a_list(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, '[grid]\n"groups.db.vms_per_host" = 2\n')
    code, _, stderr = call(["sweep", str(grid), "--duration", "0.5s"])
    assert code == 2
    assert error_line(stderr)


@pytest.mark.parametrize("seeds", ["[-1]", '["one"]'])
def test_sweep_bad_seeds_exit_2(tmp_path: Path, seeds: str) -> None:
    grid = write_grid(tmp_path, f'seeds = {seeds}\n[grid]\n"groups.db.policy" = ["WB+0"]\n')
    code, _, stderr = call(["sweep", str(grid), "--duration", "0.5s"])
    assert code == 2
    assert error_line(stderr)


# -- run: errors ----------------------------------------------------------------------------------


def test_run_negative_seed_exits_2() -> None:
    code, _, stderr = call(["run", "default", "--duration", "0.5s", "--seed", "-1"])
    assert code == 2
    assert stderr.startswith("error: ")
    assert "seed" in stderr


def test_run_duration_shorter_than_sample_interval_exits_2() -> None:
    code, _, stderr = call(["run", str(DEFAULT), "--duration", "0.2s"])
    assert code == 2
    assert stderr.startswith("error: ")
    assert "sample_interval" in stderr


def test_run_duration_error_names_the_file_or_flag() -> None:
    _, _, stderr = call(["run", str(DEFAULT), "--duration", "0.2s"])
    assert str(DEFAULT) in stderr or "--duration" in stderr


def test_run_needs_a_scenario() -> None:
    code, _, stderr = call(["run"])
    assert code == 2
    assert "scenario" in stderr


def test_no_subcommand_exits_2() -> None:
    code, _, stderr = call([])
    assert code == 2
    assert "run" in stderr
