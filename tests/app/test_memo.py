"""Answers the page keeps per scenario content (simcache_app.memo.ByScenario)."""

from __future__ import annotations

import threading

import simcache
from simcache_app.memo import ByScenario


def runs(count: int) -> list[simcache.Scenario]:
    """``count`` scenarios with different content: the smallest library scenario at 1, 2, ... s."""
    base = simcache.load_scenario("ram_tier")
    return [base.with_duration(float(k + 1)) for k in range(count)]


def test_answers_are_kept_by_content_least_recently_used_leaving_first() -> None:
    asked: list[float] = []

    def duration(scenario: simcache.Scenario) -> float:
        asked.append(scenario.run.duration)
        return scenario.run.duration

    kept = ByScenario(duration, most=2)
    first, second, third = runs(3)
    assert [kept(first), kept(second), kept(first.model_copy())] == [1.0, 2.0, 1.0]
    assert asked == [1.0, 2.0]  # an equal copy found the answer kept
    kept(third)  # evicts second, used longest ago
    kept(first)
    kept(second)
    assert asked == [1.0, 2.0, 3.0, 2.0]


def test_sessions_asking_at_once_get_their_answers() -> None:
    # Streamlit runs each session's script in a thread of its own: eight threads over ten scenarios
    # with room for three keep evicting each other's answers; each gets its own scenario's.
    scenarios = runs(10)
    kept = ByScenario(lambda scenario: scenario.run.duration, most=3)
    wrong: list[tuple[float, float]] = []
    errors: list[BaseException] = []

    def ask(offset: int) -> None:
        try:
            for k in range(300):
                scenario = scenarios[(k * 7 + offset) % len(scenarios)]
                answer = kept(scenario)
                if answer != scenario.run.duration:
                    wrong.append((answer, scenario.run.duration))
        except BaseException as error:  # the test reports it, not the thread
            errors.append(error)

    threads = [threading.Thread(target=ask, args=(offset,)) for offset in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and wrong == []
    assert len(kept.kept) <= 3
