"""Fuzzing scenario files: a mutated scenario ends in a result or the project's own error, never a
crash or a hang.

Hypothesis mutates valid scenarios (generated ones and the library's) at random: types, units,
signs, magnitudes, NaN and infinity, nesting, names, deleted and unknown fields, and the file's
bytes (``fuzzed_scenario_files`` in ``strategies.py``). Each file is written to disk, loaded by its
path, estimated and simulated for 0.3 simulated seconds under a time and a memory limit, and its
answers are read (``run_case`` in ``scenario_fuzz.py``). Anything but a valid result or a
:class:`~simcache.base.errors.ScenarioError` in the user's words fails. A valid case the native
engine ran is run again by both engines and the runs compared bit for bit (``engines``): a
difference fails too. ``bench/fuzz.py`` runs the same cases by the 100,000 (its report:
bench/README.md, "Fuzzing scenario files"; ``--engines`` for the comparison).

The examples are a fixed sequence (``derandomize``), so a red run replays exactly.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from support import scenario_fuzz
from support.paths import ROOT
from support.scenario_fuzz import CaseTimeout, Outcome, limits, run_case, short_run
from support.strategies import FuzzCase, fuzzed_scenario_files

import simcache
from simcache.sim import native_run

TIME_LIMIT_S = 5.0
PROPERTY_LIMIT_S = 30.0
"""The property test's CPU limit per case, with the run's own deadline at PROPERTY_DEADLINE_S: a
legal but huge scenario (51 groups) stops at its deadline and then builds its partial result,
which on a loaded CI machine can take more than the 5 s that bench/fuzz.py allows (there a
time-out is counted; here it must not make CI flaky)."""
PROPERTY_DEADLINE_S = 1.0
MEMORY_LIMIT = 2 * 1024**3

# Finding classes that other helpers' branches of issue 15 fix; until those are merged, the property
# test lets them pass (and only them). The lead removes each line when its fix is in: the test then
# holds them too. Reproducers: /work/wt/notes/fuzz-findings.md.
AWAITING_FIXES: dict[str, str] = {}


def awaiting(outcome: Outcome) -> str | None:
    """Why ``outcome`` is let through for now (its line in :data:`AWAITING_FIXES`), or ``None``."""
    return next(
        (why for pattern, why in AWAITING_FIXES.items() if re.search(pattern, outcome.label)), None
    )


@settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
@given(fuzzed_scenario_files())
def test_a_fuzzed_scenario_file_ends_in_a_result_or_the_projects_error(case: FuzzCase) -> None:
    with tempfile.TemporaryDirectory(prefix="simcache-fuzz-") as folder:
        outcome = run_case(
            case.text,
            Path(folder) / "scenario.toml",
            PROPERTY_LIMIT_S,
            MEMORY_LIMIT,
            deadline_s=PROPERTY_DEADLINE_S,
            engines=True,
        )
    event(outcome.label)  # pytest --hypothesis-show-statistics counts the classes
    if outcome.kind == "finding" and awaiting(outcome) is None:
        pytest.fail(f"{outcome.label}\nmutations: {case.mutations}\n{outcome.detail}")


# -- the harness itself
# -------------------------------------------------------------------------------


LIBRARY = ROOT / "scenarios"


def test_a_library_file_is_a_valid_case(tmp_path: Path) -> None:
    outcome = run_case(
        (LIBRARY / "default.toml").read_bytes(),
        tmp_path / "scenario.toml",
        TIME_LIMIT_S,
        MEMORY_LIMIT,
    )
    assert outcome == Outcome("valid", "valid", "result", "")


def _engines_case(tmp_path: Path, name: str) -> Outcome:
    """Library file ``name`` as a case, the engines compared."""
    return run_case(
        (LIBRARY / name).read_bytes(),
        tmp_path / "scenario.toml",
        TIME_LIMIT_S,
        MEMORY_LIMIT,
        engines=True,
    )


@pytest.mark.skipif(not native_run.available(), reason="the native engine is not built")
def test_the_engines_agree_on_a_library_file(tmp_path: Path) -> None:
    outcome = _engines_case(tmp_path, "link_slow.toml")
    assert outcome == Outcome("valid", "valid: engines agree", "engines", "")


@pytest.mark.skipif(not native_run.available(), reason="the native engine is not built")
def test_runs_that_differ_are_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def differ(python: object, native: object) -> None:
        raise AssertionError("samples")

    monkeypatch.setattr(scenario_fuzz, "assert_same", differ)
    outcome = _engines_case(tmp_path, "default.toml")
    assert (outcome.kind, outcome.label, outcome.stage) == (
        "finding",
        "engines: the native engine's run differs from the Python engine's",
        "engines",
    )
    assert "first difference: samples" in outcome.detail


def test_a_bad_unit_is_the_projects_error(tmp_path: Path) -> None:
    text = (
        (LIBRARY / "default.toml")
        .read_text()
        .replace('duration = "20s"', 'duration = "20 parsecs"')
    )
    outcome = run_case(text.encode(), tmp_path / "scenario.toml", TIME_LIMIT_S, MEMORY_LIMIT)
    assert (outcome.kind, outcome.label, outcome.stage) == (
        "project error",
        "load: ScenarioError",
        "load",
    )
    assert "run.duration: unknown time unit 'parsecs'" in outcome.detail


def test_invalid_utf8_is_the_projects_error(tmp_path: Path) -> None:
    outcome = run_case(b'name = "\xff"\n', tmp_path / "scenario.toml", TIME_LIMIT_S, MEMORY_LIMIT)
    assert outcome.label == "load: ScenarioError"
    assert "not UTF-8 text (line 1, byte 8)" in outcome.detail


def test_the_short_run_shortens_a_long_sample_interval() -> None:
    scenario = simcache.load_scenario("default")  # 20 s, sampled every 0.5 s
    short = short_run(scenario, 0.3)
    assert (short.run.duration, short.run.sample_interval, short.run.warmup) == (0.3, 0.3, 0.03)


def test_the_time_limit_stops_a_loop() -> None:
    with pytest.raises(CaseTimeout), limits(0.05, None):
        while True:
            pass


def test_the_memory_limit_turns_a_blow_up_into_a_memory_error() -> None:
    with pytest.raises(MemoryError), limits(TIME_LIMIT_S, 256 * 1024**2):
        bytearray(1024**3)


# -- regressions found by the fuzzer
# --------------------------------------------------------------------


def test_a_destager_that_drains_faster_once_backlogged_is_estimated() -> None:
    """Found by the fuzzer: estimate() raised "max() arg is an empty sequence".

    Four hosts' WB+0 writers accept 1.355 MB/s each; a keeping-up destager drains 1.286 MB/s, so the
    buffer becomes backlogged, where it drains 1.532 MB/s (its batches read back in 64 KiB
    requests), so it kept up again: the timeline flipped between the two states at t = 0 until its
    guard ran out, with no piece of the run estimated. The buffer now hovers at empty.
    """
    closed = {"sizes": {"4KiB": 1}, "think_time": "3ms", "compressibility": 0.5}
    bursts = {"working_set": "2GiB", "duty_cycle": {"shape": "onoff", "on": "0.1s", "off": "0.25s"}}
    data = {
        "run": {"duration": 0.3, "sample_interval": 0.25},
        "cluster": {
            "hosts": 4,
            "tier": "nvme-p3700-field",
            "peer_link": "10GbE",
            "storage_link": "1GbE",
            "destager": {"capacity": "1MiB", "concurrency": 1, "max_batch": "512KiB"},
            "compression": {"mode": "always"},
        },
        "array": "array-14x7200",
        "groups": [
            {"name": "g0", "policy": "WB+0", "workload": {**closed, **bursts}},
            {
                "name": "g1",
                "policy": "WT",
                "workload": {**closed, "read_fraction": 1.0, "working_set": "64MiB", "workers": 2},
            },
            {"name": "g2", "policy": "WT", "workload": {**closed, **bursts}},
        ],
    }
    estimate = simcache.estimate(simcache.load_scenario(data))
    assert estimate.window == (0.0, 0.3)
    host0 = estimate.destager[0]
    assert (host0.peak_backlog_bytes, host0.full_fraction) == (0.0, 0.0)
    assert round(host0.accept_rate_bytes_s) == 1_355_303
    assert round(host0.drain_rate_bytes_s) == 1_532_077
