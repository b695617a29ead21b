"""Answers the page works out at every rerun from a scenario, kept for the scenarios it used last.

Streamlit reruns the whole page at each click; a figure that only depends on the scenario (which
sweep values it accepts, how many I/Os its run will issue) is the same answer until a setting
changes. :class:`ByScenario` keeps such answers by the scenario's content (its JSON, from which
``Scenario.with_overrides`` and every run start), so an equal scenario built afresh by the rerun
finds its answer kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import simcache
from simcache.base.kept import Kept

T = TypeVar("T")


class ByScenario(Generic[T]):
    """``compute(scenario)`` for a pure ``compute``, kept for the ``most`` scenarios (by content)
    used last, the least recently used leaving first (:class:`~simcache.base.kept.Kept`: safe
    for the sessions' threads; two sessions asking at once may both compute)."""

    def __init__(self, compute: Callable[[simcache.Scenario], T], most: int = 32) -> None:
        self.compute = compute
        self.kept: Kept[T] = Kept(most)

    def __call__(self, scenario: simcache.Scenario) -> T:
        key = scenario.model_dump_json()
        answer = self.kept.get(key)
        if answer is None:
            answer = self.compute(scenario)
            self.kept.put(key, answer)
        return answer
