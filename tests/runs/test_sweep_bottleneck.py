"""A sweep row's bottleneck (simcache/runs/sweep.py's ``result_row``) follows the single run's
rule (simcache/results/bottleneck.py's ``run_bottleneck``): a tier past its clean-pool cliff
before the busiest part, and an overloaded part named when one is."""

from __future__ import annotations

import pandas as pd
import pytest
from support.gc_cliff import THROUGHPUT, qlc_ingest
from support.mm1 import mm1_data

import simcache
from simcache.results.bottleneck import run_bottleneck
from simcache.runs.sweep import sweep


@pytest.fixture(scope="module")
def cliff_rows() -> pd.DataFrame:
    return sweep(qlc_ingest(), {THROUGHPUT: ["20MB/s", "100MB/s"]}, seeds=[1], workers=1)


def _row(rows: pd.DataFrame, column: str, value: object) -> pd.Series:
    return rows[rows[column] == value].iloc[0]


def test_a_point_past_the_gc_cliff_names_its_tier(cliff_rows: pd.DataFrame) -> None:
    past = _row(cliff_rows, THROUGHPUT, "100MB/s")
    assert "gc_cliff" in past["validity"].split(",")
    assert past["bottleneck"] == "host0.tier"
    # the tier's own utilization: its units look idle while garbage collection holds the writes
    assert past["bottleneck_utilization"] < 0.05


def test_the_cliff_row_says_what_the_single_run_says(cliff_rows: pd.DataFrame) -> None:
    result = simcache.simulate(qlc_ingest(), seed=1)
    found = run_bottleneck(result)
    assert found.past_cliff and found.parts == ("host0.tier",)
    # by utilization alone the busiest part is another: the sweep used to name that one
    assert found.busiest != "host0.tier"
    assert result.bottleneck() == (found.busiest, found.busiest_utilization)
    past = _row(cliff_rows, THROUGHPUT, "100MB/s")
    assert (past["bottleneck"], past["bottleneck_utilization"]) == ("host0.tier", found.utilization)


def test_a_point_before_the_cliff_names_its_busiest_part(cliff_rows: pd.DataFrame) -> None:
    before = _row(cliff_rows, THROUGHPUT, "20MB/s")
    assert "gc_cliff" not in str(before["validity"]).split(",")
    result = simcache.simulate(qlc_ingest().with_overrides({THROUGHPUT: "20MB/s"}), seed=1)
    assert (before["bottleneck"], before["bottleneck_utilization"]) == result.bottleneck()


def test_an_overloaded_point_names_the_overloaded_station() -> None:
    """The M/M/1 tier at rho = 0.5 and 1.5: the overloaded point names the tier, as its overload
    warning does."""
    rows = sweep(
        simcache.load_scenario(mm1_data(500.0)),
        {"groups.db.workload.iops": [500.0, 1500.0]},
        seeds=[1],
        duration=3.0,
        workers=1,
    )
    overloaded = _row(rows, "groups.db.workload.iops", 1500.0)
    assert "overload" in overloaded["validity"].split(",")
    assert overloaded["stable"] == 0
    assert overloaded["bottleneck"] == "host0.tier"
    assert overloaded["bottleneck_utilization"] >= 0.97
