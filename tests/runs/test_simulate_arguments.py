"""simulate()'s own arguments (review 65): a duration as a scenario writes it ("2s") runs as that
many seconds; a duration or seed it cannot use is a ScenarioError naming the argument and the fix,
not a TypeError from inside the engine."""

from __future__ import annotations

from typing import Any

import pytest

import simcache


@pytest.fixture(scope="module")
def default() -> simcache.Scenario:
    return simcache.load_scenario("default")


def test_a_duration_with_its_unit_runs_as_those_seconds(default: simcache.Scenario) -> None:
    written = simcache.simulate(default, duration="2s", keep_records=False)
    number = simcache.simulate(default, duration=2.0, keep_records=False)
    assert written.meta["simulated_s"] == number.meta["simulated_s"] == 2.0
    assert written.summary.equals(number.summary)


@pytest.mark.parametrize(
    ("argument", "value", "said"),
    [
        ("duration", "2 parsecs", "unknown time unit 'parsecs'"),
        ("duration", [2], "give seconds or a time such as '2s'"),
        ("seed", 1.5, "give a whole number, e.g. seed=1"),
        ("seed", "1", "give a whole number, e.g. seed=1"),
    ],
)
def test_an_argument_it_cannot_use_is_named_with_the_fix(
    default: simcache.Scenario, argument: str, value: Any, said: str
) -> None:
    with pytest.raises(simcache.ScenarioError) as error:
        simcache.simulate(default, **{argument: value})
    assert error.value.source == f"simulate({argument}=...)"
    [(field, message)] = error.value.problems
    assert field == argument and said in message


def test_a_warm_up_cut_by_a_shorter_run_is_in_the_results_warnings(
    default: simcache.Scenario,
) -> None:
    """Review 65a.9: simulate(duration=0.5) on a file with a 1 s warm-up cut it to 0.05 s (a tenth
    of the run, Scenario.cut_warmup), said by the command line's note and nowhere in the result.
    It is a note on what was run, not a doubt that holds a target's pass back (caveat_kinds)."""
    from simcache.runs.targets import caveat_kinds

    one_second = default.with_overrides({"run.warmup": "1s"})
    cut = simcache.simulate(one_second, duration=0.5, keep_records=False)
    assert cut.meta["warmup_s"] == 0.05
    [note] = [w for w in cut.warnings if w.kind == "warmup_cut"]
    assert note.severity == "short" and note.component == "run.warmup"
    assert "the warm-up is cut from 1 s to 0.05 s, a tenth of the 0.5 s asked for" in note.message
    assert "warmup_cut" not in caveat_kinds(cut.warnings)
    written = cut.to_json()
    assert "warmup_cut" in {w["kind"] for w in written["warnings"]}
    assert written["meta"]["warmup_cut"].startswith("the warm-up is cut from 1 s")
    # the file's own length, or longer, keeps the warm-up: nothing to say
    for duration in (None, 20.0, 25.0):
        kept = simcache.simulate(one_second, duration=duration, keep_records=False)
        assert kept.meta["warmup_s"] == 1.0
        assert not [w for w in kept.warnings if w.kind == "warmup_cut"]
