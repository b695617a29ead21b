"""`simcache sweep --summary` (simcache/cli/sweep.py): a table a planner reads in a 100-column
terminal, one line per point, that still shows unstable points and lower bounds; the wide table
of every column stays in --out and --json."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
from support.builders import small_scenario
from support.cli import call
from support.strategies import to_toml

from simcache.cli.sweep import summary_text

TERMINAL = 100

THROUGHPUT = "groups.build.workload.throughput"
LINK = "cluster.peer_link"


def seed_row(**cells: Any) -> dict[str, Any]:
    """One row of a sweep's table (per point and seed) with the columns the summary reads: a
    stable run whose figures are not lower bounds, unless ``cells`` say otherwise."""
    return {
        "seed": 1,
        "all.write.mean_ms": 1.346,
        "all.write.p99_ms": 7.36,
        "all.read.mean_ms": 38.9,
        "all.read.p99_ms": 179.3,
        "stable": 1,
        "bottleneck": "array",
        "bottleneck_utilization": 0.91,
        **cells,
    }


def lines_of(text: str) -> list[str]:
    """The summary's title (2 lines), header, one line per point, then its notes."""
    return text.splitlines()


def test_a_two_axis_summary_fits_a_100_column_terminal() -> None:
    rows = pd.DataFrame(
        [
            seed_row(**{THROUGHPUT: load, LINK: link, "seed": seed})
            for load in ("4MB/s", "40MB/s", "400MB/s")
            for link in ("1GbE", "10GbE")
            for seed in (1, 2)
        ]
    )
    text = summary_text(rows, [THROUGHPUT, LINK])
    lines = lines_of(text)
    assert max(len(line) for line in lines) <= TERMINAL, text
    assert lines[0] == f"Sweep of {THROUGHPUT} x {LINK}: 6 points, 2 seeds each."
    # each axis is headed by the tail of its path; the title names it in full
    assert lines[2].split() == [
        "throughput",
        "peer_link",
        "write",
        "mean",
        "write",
        "p99",
        "read",
        "mean",
        "read",
        "p99",
        "stability",
        "bottleneck",
    ]
    points = lines[3:9]
    assert [line.split()[:2] for line in points] == [
        [load, link] for load in ("4MB/s", "40MB/s", "400MB/s") for link in ("1GbE", "10GbE")
    ]
    assert points[0].split()[2:] == ["1.346", "7.360", "38.9", "179.3", "stable", "array", "91%"]
    assert "Every column" in lines[-1] and "--out FILE.csv or --json" in lines[-1]


def test_axes_with_the_same_last_name_keep_what_tells_them_apart() -> None:
    rows = pd.DataFrame(
        [
            seed_row(**{"groups.db.policy": db, "groups.web.policy": web})
            for db in ("WB+1", "WB+2")
            for web in ("WB+0", "WB+1")
        ]
    )
    header = lines_of(summary_text(rows, ["groups.db.policy", "groups.web.policy"]))[2]
    assert header.split()[:2] == ["db.policy", "web.policy"]


def test_an_unstable_point_says_so_and_marks_its_lower_bounds() -> None:
    rows = pd.DataFrame(
        [
            seed_row(**{LINK: "10GbE", "seed": 1}),
            seed_row(**{LINK: "1GbE", "seed": 1}),
            seed_row(
                **{
                    LINK: "1GbE",
                    "seed": 2,
                    "stable": 0,
                    "all.write.p99_ms": 1751.6,
                    "all.write.lower_bounds": "p99_ms,mean_ms,max_ms",
                    "validity": "overload,growing",
                    "bottleneck": "host0.peer.tx",
                    "bottleneck_utilization": 0.99,
                }
            ),
        ]
    )
    text = summary_text(rows, [LINK])
    lines = lines_of(text)
    assert max(len(line) for line in lines) <= TERMINAL, text
    # one seed more on the unstable point: the seeds per point are a column
    assert lines[0] == f"Sweep of {LINK}: 2 points, 1 to 2 seeds each."
    assert lines[2].split()[:2] == ["peer_link", "seeds"]
    stable, unstable = lines[3].split(), lines[4].split()
    assert stable[:2] == ["10GbE", "1"] and "stable" in stable
    # means over both seeds, lower bounds as the unstable seed's are; its reads are not
    assert unstable[:6] == ["1GbE", "2", ">=1.346", f">={(7.36 + 1751.6) / 2:.1f}", "38.9", "179.3"]
    assert "UNSTABLE 1/2" in lines[4]
    # the seeds disagree on the bottleneck: the first named of the most named, and how many
    assert lines[4].endswith("array 91% (1/2)")
    notes = "\n".join(lines[5:])
    assert ">= : a lower bound in some seed" in notes
    assert "UNSTABLE k/n: k of the point's n seeds had no steady state" in notes
    assert "Warnings in these runs: overload, growing" in notes


def test_a_tier_past_its_gc_cliff_is_named_without_its_idle_utilization() -> None:
    rows = pd.DataFrame(
        [
            seed_row(**{"groups.ingest.workload.throughput": "20MB/s"}),
            seed_row(
                **{
                    "groups.ingest.workload.throughput": "100MB/s",
                    "stable": 0,
                    "validity": "gc_cliff,growing,filling",
                    "bottleneck": "host0.tier",
                    "bottleneck_utilization": 0.0005,
                }
            ),
        ]
    )
    lines = lines_of(summary_text(rows, ["groups.ingest.workload.throughput"]))
    assert lines[4].split()[-5:] == ["UNSTABLE", "1/1", "host0.tier", "GC", "cliff"]
    assert any(line.startswith("  GC cliff: a tier past its clean-pool cliff") for line in lines)


def test_a_point_without_reads_shows_a_dash() -> None:
    rows = pd.DataFrame(
        [seed_row(**{LINK: "1GbE", "all.read.mean_ms": math.nan, "all.read.p99_ms": math.nan})]
    )
    point = lines_of(summary_text(rows, [LINK]))[3].split()
    assert point[3:5] == ["-", "-"]


# -- the command ----------------------------------------------------------------------------------


def write_grid(folder: Path) -> Path:
    (folder / "small.toml").write_text(to_toml(small_scenario("summary-small")))
    grid = folder / "grid.toml"
    grid.write_text(
        'scenario = "small.toml"\nseeds = [1, 2]\n[grid]\n"groups.db.workload.iops" = [50, 100]\n'
        '"cluster.peer_link" = ["1GbE", "10GbE"]\n'
    )
    return grid


def test_the_command_prints_the_summary_in_100_columns(tmp_path: Path) -> None:
    grid = write_grid(tmp_path)
    code, stdout, stderr = call(
        ["sweep", str(grid), "--duration", "0.5s", "--workers", "1", "--summary"]
    )
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert max(len(line) for line in lines) <= TERMINAL, stdout
    assert (
        lines[0] == "Sweep of groups.db.workload.iops x cluster.peer_link: 4 points, 2 seeds each."
    )
    assert lines[2].split()[:2] == ["iops", "peer_link"]
    assert [line.split()[:2] for line in lines[3:7]] == [
        ["50", "1GbE"],
        ["50", "10GbE"],
        ["100", "1GbE"],
        ["100", "10GbE"],
    ]


def test_the_wide_summary_stays_in_the_csv_and_the_json(tmp_path: Path) -> None:
    grid = write_grid(tmp_path)
    out = tmp_path / "summary.csv"
    argv = ["sweep", str(grid), "--duration", "0.5s", "--workers", "1", "--summary"]
    code, stdout, stderr = call([*argv, "--out", str(out)])
    assert code == 0, stderr
    assert stdout == f"4 rows written to {out}\n"
    wide = pd.read_csv(out)
    assert {"seeds", "db.write.p99_ms", "db.write.p99_ms.ci95", "bottleneck_utilization"} <= set(
        wide.columns
    )
    code, stdout, stderr = call([*argv, "--json"])
    assert code == 0, stderr
    data = json.loads(stdout)
    assert data["summary"] is True and data["columns"] == list(wide.columns)
