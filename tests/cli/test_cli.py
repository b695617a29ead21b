"""The command line: run (tables, files, JSON), profiles, sweep, and its error handling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support.builders import small_scenario
from support.cli import call
from support.paths import ROOT
from support.strategies import to_toml

import simcache
from simcache.base.metrics import TOTALS
from simcache.cli.main import main
from simcache.results.trend import MIN_SAMPLES
from simcache.sim.collect import COMPONENTS
from simcache.spec.profiles import KINDS, list_profiles

DEFAULT = ROOT / "scenarios" / "default.toml"
TABLES = ("records", "series", "summary", "breakdown")


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
    assert header == [
        "group",
        "op",
        "count",
        "unfinished",
        "iops",
        "mb_s",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "p999_ms",
        "mean_ms",
    ]
    rows = [line.split() for line in lines[start + 2 : start + 10]]
    assert {(row[0], row[1]) for row in rows} == {
        (g, op) for g in ("db", "build", "web", "all") for op in ("read", "write")
    }
    assert all(len(row) == len(header) for row in rows)


def test_run_prints_the_breakdown(default_run: tuple[int, str, str, Path]) -> None:
    _, stdout, _, _ = default_run
    lines = stdout.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.startswith("Where the write latency comes from")
    )
    assert lines[start + 1].split() == ["group", "write_mean_ms", *COMPONENTS, "dominant"]
    groups = [lines[start + k].split()[0] for k in range(2, 6)]
    assert sorted(groups) == ["all", "build", "db", "web"]
    # The array is the bottleneck of default.toml (its utilization is deterministic for seed 1),
    # but no write waits on it: the line says what it sets instead (review 64, F3).
    assert any(
        line.startswith(
            "bottleneck: array at 96% mean utilization; the writes spend 0% of their time waiting "
            "on it: it sets how fast the destage backlog drains"
        )
        for line in lines
    )
    assert "Busiest components (utilization over the measured window):" in lines
    _, _, _, out = default_run
    tables = (
        "records, unfinished, series, summary, breakdown as CSV and Parquet; meta.json with the "
        "warnings"
    )
    assert f"results written to {out}/ ({tables})" in lines


def test_run_writes_tables_and_meta(default_run: tuple[int, str, str, Path]) -> None:
    _, _, _, out = default_run
    meta = json.loads((out / "meta.json").read_text())
    scenario = simcache.load_scenario(meta["scenario"])
    rows = {
        "records": meta["ios"],
        "series": round(3.0 / scenario.run.sample_interval),  # one row per sample interval
        "summary": 2 * (len(scenario.groups) + 1),  # read and write for each group and "all"
        "breakdown": len(scenario.groups) + 1,  # every group writes
    }
    for name in TABLES:
        csv = pd.read_csv(out / f"{name}.csv")
        parquet = pd.read_parquet(out / f"{name}.parquet")
        assert len(csv) == len(parquet) == rows[name], name
        assert list(csv.columns) == list(parquet.columns), name
    assert meta["ios"] == 4436  # deterministic for seed 1
    assert meta["seed"] == 1
    assert meta["version"] == simcache.__version__
    assert meta["wall_time_s"] > 0
    assert meta["simulated_s"] == 3.0
    assert meta["scenario"]["name"] == "default"
    assert scenario.run.duration == 3.0
    assert meta["ios"] == len(pd.read_parquet(out / "records.parquet"))
    assert set(meta["totals"]) == {
        *TOTALS,
        "tier_gc_wait_s_by_host",
        "tier_clean_bytes_by_host",
        "tier_ran_dry_s_by_host",
    }
    assert meta["totals"]["destaged_bytes"] == 110206976  # deterministic for seed 1
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns)[:2] == ["group", "op"]
    assert {"p50_ms", "p95_ms", "p99_ms", "p999_ms"} <= set(summary.columns)
    series = pd.read_parquet(out / "series.parquet")
    assert "time_s" in series.columns
    hosts = [f"host{i}" for i in range(scenario.cluster.hosts)]
    ports = [
        f"util.{h}.{side}.{way}"
        for h in hosts
        for side in ("peer", "storage")
        for way in ("tx", "rx")
    ]
    assert sorted(c for c in series.columns if c.startswith("util.")) == sorted(
        [*ports, *(f"util.{h}.tier" for h in hosts), "util.array", "util.array.rx", "util.array.tx"]
    )


def test_run_json_parses(tmp_path: Path) -> None:
    path = tmp_path / "small.toml"
    path.write_text(to_toml(small_scenario("cli-small")))
    code, stdout, stderr = call(["run", str(path), "--json", "--seed", "9"])
    assert code == 0, stderr
    data = json.loads(stdout)
    assert set(data) == {
        "summary",
        "breakdown",
        "totals",
        "meta",
        "stable",
        "warnings",
        "event_impact",
    }
    assert data["event_impact"] == []  # no events (tests/results/test_event_impact.py has some)
    assert data["stable"] is True
    assert data["meta"]["seed"] == 9
    assert data["meta"]["simulated_s"] == 1.0
    rows = {(row["group"], row["op"]): row for row in data["summary"]}
    assert set(rows) == {("db", "read"), ("db", "write"), ("all", "read"), ("all", "write")}
    assert rows[("db", "write")]["count"] == 278  # deterministic for seed 9
    assert rows[("db", "read")]["count"] == 118  # deterministic for seed 9
    # db is the only group
    assert rows[("all", "write")]["count"] == 278 and rows[("all", "read")]["count"] == 118


def test_run_is_reproducible_from_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "small.toml"
    path.write_text(to_toml(small_scenario("cli-small")))
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
    path.write_text(to_toml(small_scenario("cli-small")))
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "simcache.cli.main",
            "run",
            str(path),
            "--duration",
            "0.5s",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert (
        "  group     op  count  unfinished   iops   mb_s  p50_ms  p95_ms  p99_ms  p999_ms  mean_ms"
        in completed.stdout.splitlines()
    )
    assert "Traceback" not in completed.stderr
    assert (tmp_path / "out" / "meta.json").is_file()


def test_installed_entry_point_reports_errors_with_exit_2(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "simcache"
    if not script.exists():
        pytest.skip("the simcache console script is not installed in this environment")
    bad = tmp_path / "bad.toml"
    data = small_scenario("cli-small")
    data["groups"][0]["policy"] = "WB+2"
    bad.write_text(to_toml(data))
    completed = subprocess.run(
        [str(script), "run", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=os.environ,
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        f"error: {bad}: invalid scenario (1 problem)\n"
        "  groups.0(db).policy: WB+2 needs 2 peer hosts but the cluster has 2 hosts (1 "
        "peer); "
        "raise cluster.hosts to at least 3 or use a policy with fewer replicas\n"
    )


def test_run_with_an_onoff_open_loop_finishes(tmp_path: Path) -> None:
    data = small_scenario("cli-small")
    data["run"].update(duration="3s", sample_interval="0.5s")
    data["groups"][0]["workload"].update(
        arrivals="uniform", duty_cycle={"shape": "onoff", "on": "0.3s", "off": "0.2s"}
    )
    path = tmp_path / "duty.toml"
    path.write_text(to_toml(data))
    completed = subprocess.run(
        [sys.executable, "-m", "simcache.cli.main", "run", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    # Uniform arrivals at 200 IOPS while on, on 0.3 s of every 0.5 s: 6 x 0.3 = 1.8 s on in 3 s, so
    # 360 arrivals per VM (whatever the random phase of the first), all done before 3 s; two VMs.
    assert json.loads(completed.stdout)["meta"]["ios"] == 2 * 360


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
    assert stdout.startswith("link profiles:\n")
    assert "tier profiles:" not in stdout
    named = [
        line.split(":")[0].strip()
        for line in stdout.splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert named == list(list_profiles("link"))


def test_profiles_rejects_an_unknown_kind_or_name() -> None:
    code, stdout, stderr = call(["profiles", "gpu"])
    assert (code, stdout) == (2, "")
    assert stderr.splitlines()[-1] == (
        f"simcache profiles: 'gpu' is neither a kind ({', '.join(KINDS)}) nor a built-in profile "
        "(`simcache profiles` lists them all)"
    )
    _, _, stderr = call(["profiles", "NVME-PM9A3"])
    assert "; did you mean 'nvme-pm9a3'?" in stderr


def test_profiles_of_one_name_show_it_in_every_kind_that_has_it() -> None:
    """The full list is hundreds of lines: one profile by its name (review 62, item 12); a name
    that is both a tier and a drive shows both."""
    code, stdout, _ = call(["profiles", "nvme-pm9a3"])
    assert code == 0
    kinds = [kind for kind in KINDS if "nvme-pm9a3" in list_profiles(kind)]
    assert len(kinds) == 2
    assert [line for line in stdout.splitlines() if line.endswith(" profiles:")] == [
        f"{kind} profiles:" for kind in kinds
    ]
    headers = [line for line in stdout.splitlines() if not line.startswith("   ") and ": " in line]
    assert [line.split(":")[0] for line in headers] == ["  nvme-pm9a3"] * 2
    assert stdout.count("      source: ") == 2


# -- sweep ----------------------------------------------------------------------------------------


def error_line(stderr: str) -> str:
    """The ``error: ...`` message (sweeps print progress lines before it); fails if there is
    none."""
    start = stderr.find("error: ")
    assert start >= 0, f"no error line in:\n{stderr}"
    assert start == 0 or stderr[start - 1] == "\n", (
        f"the error is not on a line of its own:\n{stderr}"
    )
    return stderr[start:]


def write_grid(tmp_path: Path, body: str, scenario: str = "small.toml") -> Path:
    (tmp_path / "small.toml").write_text(to_toml(small_scenario("cli-small")))
    grid = tmp_path / "grid.toml"
    grid.write_text(f'scenario = "{scenario}"\n' + body)
    return grid


def test_sweep_writes_one_row_per_point_and_seed(tmp_path: Path) -> None:
    grid = write_grid(
        tmp_path,
        'seeds = [1, 2]\n[grid]\n"groups.db.policy" = ["WB+0", "WB+1"]\n"cluster.peer_link" = '
        '["1GbE", "10GbE"]\n',
    )
    out = tmp_path / "sweep.csv"
    code, stdout, stderr = call(["sweep", str(grid), "--duration", "0.5s", "--out", str(out)])
    assert code == 0, stderr
    assert "8 rows written" in stdout
    table = pd.read_csv(out)
    assert len(table) == 8
    assert {
        "groups.db.policy",
        "cluster.peer_link",
        "seed",
        "db.write.p99_ms",
        "bottleneck",
    } <= set(table.columns)
    assert len(table.drop_duplicates(["groups.db.policy", "cluster.peer_link", "seed"])) == 8
    assert "8/8 runs done" in stderr


def test_sweep_prints_the_table_without_out(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, '[grid]\n"groups.db.workload.iops" = [50, 100]\n')
    code, stdout, stderr = call(["sweep", str(grid), "--duration", "0.5s"])
    assert code == 0, stderr
    header, *rows = stdout.splitlines()
    columns = header.split()
    assert columns[:2] == ["groups.db.workload.iops", "seed"]
    table = [dict(zip(["index", *columns], row.split(), strict=True)) for row in rows]
    assert [(row["groups.db.workload.iops"], row["seed"]) for row in table] == [
        ("50", "1"),
        ("100", "1"),
    ]
    # Deterministic for seed 1: 0.45 s measured of two VMs at 50 and at 100 IOPS, 70 % writes.
    assert [row["db.write.count"] for row in table] == ["38", "67"]
    assert [row["db.write.iops"] for row in table] == ["84.444444", "148.888889"]  # count / 0.45 s


POINT_ERROR = "error: {grid} [grid] {point}: invalid scenario (1 problem)\n  {line}\n"
FILE_ERROR = "error: {grid}: invalid scenario (1 problem)\n  (top level): {message}\n"
SWEEP_ERROR = "error: {grid}: invalid sweep (1 problem)\n  (top level): {message}\n"
SWEEP_FILE = (
    'a sweep file has scenario = "PATH", optional seeds = [1, 2, 3] and a [grid] table of '
    "dotted.path = [values]"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            '[grid]\n"groups.db.policy" = ["WB+0", "WB+7"]\n',
            POINT_ERROR.format(
                grid="{grid}",
                point="groups.db.policy = 'WB+7'",
                line="groups.0(db).policy: must be 'WT', 'WB+0', 'WB+1' or 'WB+2' (got 'WB+7')",
            ),
        ),
        (
            '[grid]\n"groups.nosuch.policy" = ["WB+0"]\n',
            POINT_ERROR.format(
                grid="{grid}",
                point="groups.nosuch.policy = 'WB+0'",
                line="groups.nosuch.policy: no item 'nosuch'; use an index 0..0 or one of ['db']",
            ),
        ),
        (
            'seedz = [1]\n[grid]\n"groups.db.policy" = ["WB+0"]\n',
            SWEEP_ERROR.format(grid="{grid}", message=f"{SWEEP_FILE}; unknown: seedz"),
        ),
        ("seeds = [1]\n", SWEEP_ERROR.format(grid="{grid}", message=SWEEP_FILE)),
        (
            '[grid\n"x" = 1\n',
            FILE_ERROR.format(
                grid="{grid}",
                message=(
                    "malformed TOML: Expected ']' at the end of a table declaration (at line 2, "
                    "column 6)"
                ),
            ),
        ),
        (
            '[grid]\n"groups.db.vms_per_host" = 2\n',
            "error: {grid}: invalid sweep (1 problem)\n"
            "  grid.groups.db.vms_per_host: must be a non-empty list of values, e.g. [2] (got 2)\n",
        ),
        (
            'seeds = [-1]\n[grid]\n"groups.db.policy" = ["WB+0"]\n',
            "error: {grid}: invalid sweep (1 problem)\n  seeds: give a list of seeds, whole "
            "numbers >= 0 (got [-1])\n",
        ),
        (
            'seeds = ["one"]\n[grid]\n"groups.db.policy" = ["WB+0"]\n',
            "error: {grid}: invalid sweep (1 problem)\n  seeds: give a list of seeds, whole "
            "numbers >= 0 (got ['one'])\n",
        ),
        (
            'seeds = 3\n[grid]\n"groups.db.policy" = ["WB+0"]\n',
            "error: {grid}: invalid sweep (1 problem)\n  seeds: give a list of seeds, whole "
            "numbers >= 0 (got 3)\n",
        ),
    ],
    ids=[
        "bad-value",
        "bad-group",
        "unknown-key",
        "no-grid",
        "malformed",
        "grid-scalar",
        "negative-seed",
        "text-seed",
        "scalar-seed",
    ],
)
def test_sweep_bad_input_exits_2(tmp_path: Path, body: str, expected: str) -> None:
    grid = write_grid(tmp_path, body)
    code, _, stderr = call(["sweep", str(grid), "--duration", "0.5s"])
    assert code == 2
    assert error_line(stderr) == expected.replace("{grid}", str(grid))


def test_sweep_missing_scenario_file_exits_2(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, '[grid]\n"run.seed" = [1]\n', scenario="missing.toml")
    code, _, stderr = call(["sweep", str(grid)])
    assert code == 2
    missing = tmp_path / "missing.toml"
    # the sweep file and its field, not the missing file as an invalid scenario (review 67a F13)
    assert stderr.startswith(
        f"error: {grid}: invalid sweep (1 problem)\n  scenario: 'missing.toml' is no file "
        f"(looked for {missing}) and no built-in scenario"
    )


# -- run: errors ----------------------------------------------------------------------------------


def test_run_negative_seed_exits_2() -> None:
    code, _, stderr = call(["run", "default", "--duration", "0.5s", "--seed", "-1"])
    assert code == 2
    assert stderr == (
        "error: simulate(seed=...): invalid scenario (1 problem)\n"
        "  run.seed: must be a whole number from 0 to 9,007,199,254,740,991 (got -1)\n"
    )


def test_run_duration_shorter_than_sample_interval_exits_2() -> None:
    """The error names the --duration flag that caused it, not the file (whose duration is fine),
    and says both fixes with their values (review 67a F13: it said only "must not exceed
    run.duration"): a duration of at least the 0.5 s interval, and for a stability test
    MIN_SAMPLES intervals past the warm-up (cut to a tenth of the 0.2 s); or an interval of at most
    the duration, (0.2 - 0.02) / 8 s for the test."""
    code, _, stderr = call(["run", str(DEFAULT), "--duration", "0.2s"])
    assert code == 2
    assert stderr == (
        "error: the duration argument (simulate(duration=...), CLI --duration): invalid scenario "
        "(1 problem)\n"
        "  run.sample_interval: 0.5 s is longer than the run (run.duration 0.2 s), which would "
        "take no sample: give a duration of at least 0.5 s (a stability test needs "
        f"{MIN_SAMPLES} samples after the warm-up: {MIN_SAMPLES} x 0.5 s = {MIN_SAMPLES * 0.5:g} s "
        "past the 0.02 s warm-up), or set run.sample_interval to at most 0.2 s (0.0225 s for "
        f"{MIN_SAMPLES} samples after the warm-up)\n"
    )


def test_a_scenario_file_sampled_less_often_than_it_runs_names_the_file_and_the_fixes(
    tmp_path: Path,
) -> None:
    """The same rule in a scenario file: the file named, the interval advised for the stability
    test rounded down ((0.2 - 0.05) / 8 = 0.01875 s: 0.0187 s, which does give the 8)."""
    path = tmp_path / "sparse.toml"
    run = {"duration": "0.2s", "warmup": "0.05s", "sample_interval": "0.5s"}
    path.write_text(to_toml(small_scenario("sparse", run=run)))
    code, _, stderr = call(["run", str(path)])
    assert code == 2
    assert stderr == (
        f"error: {path}: invalid scenario (1 problem)\n"
        "  run.sample_interval: 0.5 s is longer than the run (run.duration 0.2 s), which would "
        "take no sample: give a duration of at least 0.5 s (a stability test needs "
        f"{MIN_SAMPLES} samples after the warm-up: {MIN_SAMPLES} x 0.5 s = {MIN_SAMPLES * 0.5:g} s "
        "past the 0.05 s warm-up), or set run.sample_interval to at most 0.2 s (0.0187 s for "
        f"{MIN_SAMPLES} samples after the warm-up)\n"
    )


def test_run_needs_a_scenario() -> None:
    code, _, stderr = call(["run"])
    assert code == 2
    assert (
        stderr.splitlines()[-1]
        == "simcache run: error: the following arguments are required: scenario"
    )


def test_no_subcommand_exits_2() -> None:
    code, _, stderr = call([])
    assert code == 2
    assert stderr.splitlines() == [
        "usage: simcache [-h]",
        "                "
        "{run,sweep,size,check,estimate,import,fit,compare-trace,calibrate,report,profiles,app}",
        "                ...",
        "simcache: error: the following arguments are required: command",
    ]


# -- --variant ------------------------------------------------------------------------------------

BACKING = ROOT / "scenarios" / "backing_array.toml"


def test_run_variant_runs_the_overloaded_library_variant_and_says_so() -> None:
    """`run --variant wt-overload`: write-through onto the old array at about twice its IOPS
    prints the instability warning and the unfinished I/Os as lower bounds (the issue's "Done
    when")."""
    code, stdout, _ = call(["run", str(BACKING), "--variant", "wt-overload", "--duration", "8s"])
    assert code == 0
    assert "UNSTABLE: this run has no steady state" in stdout
    assert "warning: array is busy 100% of the window while work piles up" in stdout
    assert ">= : a lower bound." in stdout and "were unfinished at the end" in stdout


def test_estimate_variant_and_an_unknown_variant() -> None:
    code, stdout, _ = call(["estimate", str(BACKING), "--variant", "wt-overload"])
    assert code == 0 and "NOT STABLE" in stdout and "unbounded" in stdout
    code, _, stderr = call(["run", str(BACKING), "--variant", "nope"])
    assert code == 2
    assert (
        "backing_array.toml" in stderr
        and "--variant: no variant named 'nope'; defined: " in stderr
        and "wt-overload" in stderr
    )


# -- JSON for scripts and progress on a terminal -------------------------------------------------


def test_sweep_json_holds_the_grid_and_one_object_per_row(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, 'seeds = [1, 2]\n[grid]\n"groups.db.policy" = ["WB+0", "WB+1"]\n')
    code, stdout, stderr = call(
        ["sweep", str(grid), "--duration", "0.5s", "--workers", "1", "--json"]
    )
    assert code == 0, stderr
    assert "runs done" not in stderr  # no progress with --json
    data = json.loads(stdout)
    assert set(data) == {"scenario", "grid", "seeds", "duration_s", "summary", "columns", "rows"}
    assert data["scenario"] == "small.toml" and data["grid"] == {
        "groups.db.policy": ["WB+0", "WB+1"]
    }
    assert data["seeds"] == [1, 2] and data["duration_s"] == 0.5 and data["summary"] is False
    assert [(row["groups.db.policy"], row["seed"]) for row in data["rows"]] == [
        ("WB+0", 1),
        ("WB+0", 2),
        ("WB+1", 1),
        ("WB+1", 2),
    ]
    assert list(data["rows"][0]) == data["columns"] and isinstance(
        data["rows"][0]["db.write.p99_ms"], float
    )
    code, stdout, _ = call(
        ["sweep", str(grid), "--duration", "0.5s", "--workers", "1", "--json", "--summary"]
    )
    summary = json.loads(stdout)
    assert summary["summary"] is True and [row["seeds"] for row in summary["rows"]] == [2, 2]
    assert "db.write.p99_ms.ci95" in summary["columns"]


def test_check_json_holds_each_check_with_its_bounds_and_values(tmp_path: Path) -> None:
    scenario = ROOT / "scenarios" / "default.toml"
    code, stdout, stderr = call(
        ["check", str(scenario), "--seeds", "1", "--duration", "6s", "--json"]
    )
    data = json.loads(stdout)
    assert "running" not in stderr and "==" not in stdout
    assert set(data) == {
        "passed",
        "known_gaps",
        "fitted",
        "failed",
        "checks",
        "not_run",
        "stopped",
    }
    assert (
        data["passed"] + data["failed"] == len(data["checks"]) == 4
        and data["stopped"] is None
        and data["not_run"] == []
    )
    assert code == (1 if data["failed"] else 0)
    first = data["checks"][0]
    assert first["name"] == "db-write-p99" and first["metric"] == "p99_ms" and first["unit"] == "ms"
    assert first["low"] is None and first["high"] == 6.0  # at_most = "6ms": open below
    assert (
        first["seeds"] == [1] and len(first["values"]) == 1 and first["mean"] == first["values"][0]
    )
    assert first["passed"] == (first["values"][0] <= 6.0)
    assert first["target"] is first["error"] is first["given"] is first["part_error"] is None


def test_check_json_gives_an_approx_checks_errors_of_the_whole_and_of_the_part_tested() -> None:
    """SYSTOR'17's kernel-target row: 93.3 us, of which 81.6 us is given (the drive's read time);
    error = (mean - 93.3) / 93.3, part_error = (mean - 93.3) / (93.3 - 81.6)."""
    scenario = ROOT / "scenarios" / "validate_nvmeof_rdma_100gbe_systor17.toml"
    code, stdout, _ = call(["check", str(scenario), "--seeds", "1", "--json"])
    row = json.loads(stdout)["checks"][0]
    assert code == 0  # one row passes, the other is a known gap that still misses
    assert row["name"] == "pm1725-rdma-kernel-target-mean"
    assert row["target"] == pytest.approx(0.0933) and row["given"] == pytest.approx(0.0816)
    assert row["error"] == pytest.approx((row["mean"] - 0.0933) / 0.0933, rel=1e-9)
    assert row["part_error"] == pytest.approx((row["mean"] - 0.0933) / (0.0933 - 0.0816), rel=1e-9)


def test_progress_is_a_bar_on_a_terminal_and_absent_from_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a terminal `run` draws its progress (rich's bar when rich is installed, else one line
    rewritten in place) on stderr; with --json the same terminal gets none, and stdout holds only
    the JSON."""
    from simcache.cli import progress as cli_progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    drawn: list[tuple[float, float | None]] = []
    original = cli_progress.Bar.update

    def spy(
        self: cli_progress.Bar,
        completed: float,
        total: float | None = None,
        text: str | None = None,
    ) -> None:
        if self.enabled:
            drawn.append((completed, total))
        original(self, completed, total, text)

    monkeypatch.setattr(cli_progress.Bar, "update", spy)
    assert main(["run", "default", "--duration", "2s"]) == 0
    assert drawn and drawn[-1][0] == pytest.approx(1.0)
    drawn.clear()
    capsys.readouterr()
    assert main(["run", "default", "--duration", "2s", "--json"]) == 0
    assert not drawn
    json.loads(capsys.readouterr().out)
