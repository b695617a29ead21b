"""A sweep point past the run limits (simcache.runs.sweep: NOT_RUN) is not simulated and says why,
and the others run: review 65's 2026 load on 1GbE, the question the sweep asks, ended the whole
sweep (and the report around it) with a "run too large" error that did not name the point."""

from __future__ import annotations

import math

import pytest
from support.builders import small_scenario

import simcache
from simcache.runs.sweep import NOT_RUN, SweepInterrupted, point_bottleneck, point_stability
from simcache.runs.targets import evidence_of_row, judge_seeds, parse_target


def test_a_point_past_the_limits_is_not_run_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    # at most 5,000 I/Os a run: 100 IOPS x 2 VMs x 1 s runs, 100,000 IOPS is refused
    monkeypatch.setenv("SIMCACHE_MAX_IOS", "5000")
    base = simcache.Scenario.model_validate(small_scenario(run={"duration": "1s"}))
    table = simcache.sweep(
        base, {"groups.db.workload.iops": [100, 100_000]}, seeds=[1, 2], workers=1
    )
    assert len(table) == 4
    ran, refused = table[table["groups.db.workload.iops"] == 100], table.iloc[2:]
    assert (ran["stability"] != NOT_RUN).all() and ran["all.write.p99_ms"].notna().all()
    assert (refused["stability"] == NOT_RUN).all()
    assert refused["not_run"].str.contains("200,000 I/Os (limit 5,000)", regex=False).all()
    assert math.isnan(refused["all.write.p99_ms"].iloc[0])
    assert point_stability(refused).label == "NOT RUN (past the run limits)"
    assert point_bottleneck(refused) == "-"
    target = parse_target("write p99 <= 5ms")
    verdict = judge_seeds(target, [evidence_of_row(row, target) for _, row in refused.iterrows()])
    assert verdict.status == "unknown"
    assert verdict.text.startswith("unknown: the point was not simulated: this run is expected")


def test_a_stop_does_not_count_points_past_the_limits_as_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review 67a F4: a sweep stopped before any run said "2 of 6 runs finished and are kept in
    the store" where the 2 were the rows of a point past the run limits (never simulated) and the
    store held nothing."""
    monkeypatch.setenv("SIMCACHE_MAX_IOS", "5000")
    base = simcache.Scenario.model_validate(small_scenario(run={"duration": "1s"}))

    def stop_at_once(_: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(SweepInterrupted) as stopped:
        simcache.sweep(
            base,
            {"groups.db.workload.iops": [100, 200, 100_000]},
            seeds=[1, 2],
            workers=1,
            progress=stop_at_once,
        )
    assert (stopped.value.finished, stopped.value.total, stopped.value.computed) == (0, 4, 0)
    assert "0 of 4 runs finished" in str(stopped.value)
