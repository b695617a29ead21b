"""A run whose stability was not tested (too few samples after its warm-up) does not meet a
target: review 67a F1, where `size` answered "meets" from 3 s runs sampled every 0.5 s (4
samples where the growth test needs 8) that a 6 s run showed unstable."""

from __future__ import annotations

from support.builders import small_scenario

import simcache
from simcache.results.trend import MIN_SAMPLES
from simcache.runs.sweep import result_row
from simcache.runs.targets import evidence_of_row, judge, judge_seeds, parse_target

TARGET = parse_target("write mean <= 1s")  # met by any run here


WINDOW_S = 0.9  # the builders' 1 s run less its 0.1 s warm-up


def _run(samples: int) -> simcache.Result:
    """The builders' 1 s run, sampled ``samples`` times after its warm-up."""
    interval = WINDOW_S / samples
    scenario = simcache.load_scenario(small_scenario(run={"sample_interval": interval}))
    return simcache.simulate(scenario, keep_records=False)


def test_an_untested_run_leaves_a_pass_unknown_and_a_tested_one_meets() -> None:
    # fewer samples after the warm-up than the growth test needs
    untested = _run(MIN_SAMPLES - 2)
    assert "untested" in {w.kind for w in untested.warnings}
    verdict = judge(untested, TARGET)
    assert verdict.status == "unknown"
    assert "too few samples after its warm-up" in verdict.text
    # the same from a sweep's row (size and report --sweep judge rows)
    row = result_row(untested)
    assert row["stable"] == 1 and row["stability"] == "untested"
    assert judge_seeds(TARGET, [evidence_of_row(row, TARGET)]).status == "unknown"
    # one more sample than the test needs: tested, steady, the pass stands
    tested = _run(MIN_SAMPLES + 1)
    assert "untested" not in {w.kind for w in tested.warnings} and tested.stable
    assert judge(tested, TARGET).status == "meets"
