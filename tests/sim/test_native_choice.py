"""Which engine runs a scenario (simcache/sim/native_run.py ``choose``): the native engine by
default wherever it is built and takes the scenario, the Python engine otherwise, and every run's
record, result and report say which ran and why. These run whether or not the extension is built
(what they expect follows ``native_run.available()``)."""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import small_scenario

from simcache import simulate
from simcache.report.cells import engine_words
from simcache.report.run_report import report
from simcache.sim import native_run
from simcache.sim.engine import run_scenario
from simcache.spec import Scenario, load_scenario


def _reads(**extra: Any) -> Scenario:
    """A scenario the native engine takes when built: two hosts reading only, no events."""
    return load_scenario(small_scenario(workload={"read_fraction": 1.0}, **extra))


def test_the_native_engine_is_the_default_where_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native_run.ENV, raising=False)
    assert native_run.requested()
    used, run_by = native_run.choose(_reads(), None)
    if native_run.available():
        assert (used, run_by) == (True, native_run.NATIVE)
    else:  # the fallback says it is the slow one, and why
        assert not used
        assert run_by == f"Python, slow: {native_run.NOT_BUILT}"


@pytest.mark.parametrize("value", ["0", " 0 "])
def test_the_environment_turns_it_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(native_run.ENV, value)
    assert not native_run.requested()
    used, run_by = native_run.choose(_reads(), None)
    assert not used
    assert run_by.startswith("Python: the native engine turned off")
    # an explicit argument wins over the environment
    assert native_run.choose(_reads(), True)[0] is native_run.available()


@pytest.mark.parametrize("value", ["1", "", "yes"])
def test_anything_but_0_leaves_it_on(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(native_run.ENV, value)
    assert native_run.requested()


def test_a_scenario_it_lacks_runs_in_python_and_says_why() -> None:
    failure = {"kind": "host_failure", "at": "10ms", "host": 1, "restart_delay": "10ms"}
    scenario = _reads(events=[failure], cluster={"cache": {"warm": True}})
    used, run_by = native_run.choose(scenario, None)
    assert not used
    if native_run.available():
        reason = native_run.unsupported(scenario)
        assert reason is not None
        assert run_by == f"Python: the native engine does not take {reason} yet"
    else:
        assert run_by.startswith("Python, slow: ")


def test_the_record_the_result_and_the_report_say_which_ran() -> None:
    scenario = _reads()
    expected = native_run.choose(scenario, None)[1]
    record = run_scenario(scenario, duration=0.3)
    assert record.run_by == expected
    result = simulate(scenario, duration=0.3)
    assert result.meta["run_by"] == expected
    first_line = report(result).splitlines()[0]
    assert first_line.endswith(f"({engine_words(result.meta)})")
    if expected == native_run.NATIVE:
        assert first_line.endswith("(native engine)")
    else:
        assert "engine" in first_line and expected.partition(": ")[2] in first_line
    forced = run_scenario(scenario, duration=0.3, native=False)
    assert forced.run_by.startswith("Python: the native engine turned off")


def test_results_before_run_by_read_as_python() -> None:
    """A result written before ``run_by`` existed (its meta lacks it) reads as the Python engine."""
    meta = {"engine": "Python: sources (SIMCACHE_COMPILE=0)"}
    assert engine_words(meta) == "Python engine"
    meta["run_by"] = "Python, slow: the native engine is not built"
    assert engine_words(meta) == "Python engine, slow: the native engine is not built"
    meta["engine"] = "compiled (mypyc): every group"
    meta["run_by"] = "Python: the native engine does not take scheduled events yet"
    assert engine_words(meta) == (
        "compiled (mypyc) engine: the native engine does not take scheduled events yet"
    )


def test_generator_paths_run_in_python() -> None:
    """``paths="generators"`` is the reference the callbacks (and so the native engine) are
    checked against: it always runs in the Python engine."""
    record = run_scenario(_reads(), duration=0.3, paths="generators")
    assert record.run_by == "Python: the I/O paths as generators asked for (paths='generators')"
