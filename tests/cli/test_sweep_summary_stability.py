"""`simcache sweep --summary`'s stability column and notes (simcache/cli/sweep.py, review 64 F2): a
point whose backlog fills, or whose array is at capacity, is not labelled "stable", and the notes
say when the all-groups figures mix groups whose share of the I/Os changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from support.cli import call
from support.cluster_2026 import DB_IOPS, cluster_2026

from simcache.cli.sweep import summary_text
from simcache.spec.dump import minimal_scenario_toml

TERMINAL = 100


def seed_row(**cells: Any) -> dict[str, Any]:
    """One row of a sweep's table with the columns the summary reads: a stable run, unless
    ``cells`` say otherwise."""
    return {
        "seed": 1,
        "all.write.mean_ms": 0.07,
        "all.write.p99_ms": 0.353,
        "all.read.mean_ms": 51.1,
        "all.read.p99_ms": 321.9,
        "stable": 1,
        "stability": "stable",
        "bottleneck": "array",
        "bottleneck_utilization": 0.92,
        "db.write.count": 3573,
        "web.write.count": 1881,
        "all.write.count": 5454,
        **cells,
    }


def test_filling_and_at_capacity_points_say_so_and_their_notes_explain() -> None:
    rows = pd.DataFrame(
        [
            seed_row(**{DB_IOPS: 60}),
            seed_row(**{DB_IOPS: 120, "stability": "at capacity", "bottleneck_utilization": 0.99}),
            seed_row(
                **{
                    DB_IOPS: 180,
                    "stability": "filling",
                    "backlog_full_in_s": 538.0,
                    "bottleneck_utilization": 0.95,
                }
            ),
        ]
    )
    text = summary_text(rows, [DB_IOPS])
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= TERMINAL, text
    assert lines[3].split()[-3:] == ["stable", "array", "92%"]
    assert lines[4].split()[-4:] == ["at", "capacity", "array", "99%"]
    assert "filling: full ~540 s" in lines[5]
    notes = " ".join(" ".join(lines[6:]).split())
    assert "filling: a destage backlog grows through the window" in notes
    assert "at capacity: a part is busy 97% or more under load offered at a fixed rate" in notes
    assert "UNSTABLE k/n" not in notes  # only the marks shown


def test_a_change_of_mix_behind_the_all_groups_figures_is_noted() -> None:
    rows = pd.DataFrame(
        [
            seed_row(**{DB_IOPS: 60}),
            seed_row(
                **{DB_IOPS: 240, "db.write.count": 14357, "web.write.count": 151},
                **{"all.write.count": 14508},
            ),
        ]
    )
    notes = " ".join(" ".join(summary_text(rows, [DB_IOPS]).splitlines()[5:]).split())
    assert (
        "The write figures mix groups whose share of the writes changes from point to point: "
        "db writes 66% at 60 to 99% at 240 (3,573 to 14,357 a run); web writes 34% at 60 to 1% "
        "at 240 (1,881 to 151 a run)."
    ) in notes
    assert "The read figures mix" not in notes


def test_the_reviewers_sweep_through_the_command(tmp_path: Path) -> None:
    """The review's 2026 cluster (in/ui_2026.toml) swept over db IOPS a VM for 14 s: before,
    every point read "stable" beside "array 100%"."""
    (tmp_path / "ui_2026.toml").write_text(minimal_scenario_toml(cluster_2026()))
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'scenario = "ui_2026.toml"\nseeds = [1]\n[grid]\n"{DB_IOPS}" = [60, 120, 240]\n'
    )
    code, stdout, stderr = call(
        ["sweep", str(grid), "--duration", "14s", "--workers", "1", "--summary"]
    )
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert [line.split()[0] for line in lines[3:6]] == ["60", "120", "240"]
    assert "stable" in lines[3].split()
    assert "at capacity" in lines[4]
    assert "UNSTABLE 1/1" in lines[5]
    notes = " ".join(stdout.split())
    assert "web writes" in notes.partition("The write figures mix groups")[2]
