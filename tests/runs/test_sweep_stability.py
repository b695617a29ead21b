"""How steady a sweep's runs were (simcache/runs/sweep.py, review 64 F2): each row carries its
``stability`` (a filling backlog or a part at capacity is not plainly stable), a point's rows give
one label (:func:`point_stability`), and :func:`mix_shifts` names the groups whose share of the
I/Os an all-groups figure mixes differently from point to point."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from support.cluster_2026 import DB_IOPS, PAGE_SECONDS, cluster_2026

import simcache
from simcache.results.validity import filling_backlogs
from simcache.runs.sweep import STABILITY, mix_shifts, point_stability, result_row


def test_the_reviewers_sweep_is_not_labelled_stable_past_the_arrays_capacity() -> None:
    """db IOPS a VM 60, 120, 240 for the page's 14 s: the array is 92%, 99% and 100% busy, and at
    240 every host's backlog grows. Before, each row said stable = 1."""
    table = simcache.sweep(
        cluster_2026(), {DB_IOPS: [60, 120, 240]}, seeds=[1], duration=PAGE_SECONDS, workers=1
    )
    assert list(table["stability"]) == ["stable", "at capacity", "unstable"]
    assert list(table["stable"]) == [1, 1, 0]
    assert "overload" in table["validity"][2].split(",")
    assert [point_stability(part).label for _, part in table.groupby(DB_IOPS)] == [
        "stable",
        "at capacity",
        "UNSTABLE 1/1",
    ]


def test_a_filling_run_carries_when_its_first_buffer_is_full() -> None:
    """peer_loss: both hosts' backlogs grow through the run while the array has room (a burst
    being absorbed: a short run, not an unstable one)."""
    result = simcache.simulate(simcache.load_scenario("peer_loss"), seed=1, duration=8.0)
    row = result_row(result)
    assert row["stable"] == 1 and row["stability"] == "filling"
    soonest = min(fill.full_in_s for fill in filling_backlogs(result))
    assert row["backlog_full_in_s"] == pytest.approx(soonest)
    assert 60 < row["backlog_full_in_s"] < 600


def rows(states: list[str], **cells: Any) -> pd.DataFrame:
    """A point's rows (one per seed) with these stabilities."""
    return pd.DataFrame(
        [{"stable": int(state != "unstable"), "stability": state, **cells} for state in states]
    )


@pytest.mark.parametrize(
    ("states", "full_in", "label"),
    [
        (["stable", "stable"], None, "stable"),
        (["stable", "unstable", "filling"], 540.0, "UNSTABLE 1/3"),
        (["filling", "filling", "filling"], 538.4, "filling: full ~540 s"),
        (["filling", "stable", "at capacity"], 1234.0, "filling 1/3: full ~1,200 s"),
        (["at capacity", "stable"], None, "at capacity 1/2"),
        (["untested"], None, "untested"),
    ],
)
def test_a_points_label_is_its_worst_seeds_state(
    states: list[str], full_in: float | None, label: str
) -> None:
    part = rows(states)
    if full_in is not None:
        part["backlog_full_in_s"] = [full_in if s == "filling" else float("nan") for s in states]
    found = point_stability(part)
    assert found.label == label
    assert found.state == next(s for s in STABILITY if s in states)


def test_rows_from_before_the_stability_column_are_read_by_stable() -> None:
    assert point_stability(pd.DataFrame({"stable": [1, 0]})).label == "UNSTABLE 1/2"
    assert point_stability(pd.DataFrame({"stable": [1, 1]})).label == "stable"


def counts(point: int, db: int, web: int, build: int = 1296) -> dict[str, int]:
    return {
        DB_IOPS: point,
        "db.write.count": db,
        "web.write.count": web,
        "build.write.count": build,
        "all.write.count": db + web + build,
    }


def test_a_closed_loop_group_held_back_is_named_as_a_change_of_mix() -> None:
    """The review's sweep: web's closed-loop writes fall from 1,881 to 151 while db's rise."""
    table = pd.DataFrame([counts(60, 3573, 1881), counts(120, 7164, 474), counts(240, 14357, 151)])
    moved = mix_shifts(table, [DB_IOPS], "write")
    assert moved == [
        "db writes 53% at 60 to 91% at 240 (3,573 to 14,357 a run)",
        "web writes 28% at 60 to 1% at 240 (1,881 to 151 a run)",
        "build writes 19% at 60 to 8% at 240 (1,296 to 1,296 a run)",
    ]
    assert mix_shifts(table, [DB_IOPS], "read") == []  # no read counts in this table


def test_groups_that_grow_alike_keep_their_mix() -> None:
    """A sweep of the host count: every group's I/Os double, each keeps its share."""
    table = pd.DataFrame([counts(4, 3000, 1000, 1000), counts(8, 6000, 2000, 2000)])
    assert mix_shifts(table, [DB_IOPS], "write") == []
