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
