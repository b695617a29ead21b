"""The scenario library: every file in scenarios/ loads, says what it reproduces, and its checks
hold.

The checks are the scenario files' own ``[[expect]]`` tables, run through the
same code as ``simcache check`` with each file's seeds (at least 5): a check
passes only if it holds for every seed. docs/validation.md is generated from
the same outcomes and must match them, so a change that moves a number has to
regenerate it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.paths import ROOT

import simcache
from simcache.runs.checks import CheckOutcome, run_checks
from simcache.runs.validation_report import validation_report

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
WITH_CHECKS = [p for p in SCENARIOS if simcache.load_scenario(p).expect]
VALIDATION = ROOT / "docs" / "validation.md"
REPORT_COMMAND = "simcache check scenarios --report docs/validation.md"

_outcomes: dict[Path, list[CheckOutcome]] = {}


def outcomes_of(path: Path) -> list[CheckOutcome]:
    """Each file's checks run once per test session (they are the slow part)."""
    if path not in _outcomes:
        _outcomes[path] = run_checks(path)
    return _outcomes[path]


def header(path: Path) -> str:
    lines = path.read_text("utf-8").splitlines()
    comment = []
    for line in lines:
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("# "))
    return "\n".join(comment)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_loads_and_explains_itself(path: Path) -> None:
    """A header comment of several lines saying what the scenario is and what hardware it
    assumes."""
    scenario = simcache.load_scenario(path)
    text = header(path)
    assert len(text.splitlines()) >= 3, (
        f"{path.name}: start the file with a comment: what it reproduces, the hardware it assumes"
    )
    assert scenario.description, f"{path.name}: give a one-line description"


@pytest.mark.parametrize("path", WITH_CHECKS, ids=lambda p: p.stem)
def test_checks_name_their_observation(path: Path) -> None:
    """``[check] observation`` names what is reproduced; "N. Title" for a field observation, also
    named in the header."""
    scenario = simcache.load_scenario(path)
    assert scenario.check.observation, (
        f"{path.name}: say in [check] observation what the checks reproduce ('N. Title' for a "
        "field observation)"
    )
    match = re.match(r"^(\d+)\. \S", scenario.check.observation)
    if match:
        number = match.group(1)
        assert f"observation {number}" in header(path).lower(), (
            f"{path.name}: the header should name field observation {number}"
        )
    for expectation in scenario.expect:
        assert expectation.observation, (
            f"{path.name}: check {expectation.name!r} should say what the field saw"
        )
        assert expectation.tolerance, (
            f"{path.name}: check {expectation.name!r} should justify its bound (tolerance)"
        )


def test_every_field_observation_is_reproduced() -> None:
    """Field observations 1-8 of DOMAIN.md each have at least one scenario with checks."""
    numbers = {
        int(simcache.load_scenario(p).check.observation.split(".")[0])
        for p in WITH_CHECKS
        if simcache.load_scenario(p).check.observation[:1].isdigit()
    }
    assert set(range(1, 9)) <= numbers, (
        f"no scenario yet for observation(s) {sorted(set(range(1, 9)) - numbers)}"
    )


@pytest.mark.parametrize("path", WITH_CHECKS, ids=lambda p: p.stem)
def test_scenario_checks_hold_for_every_seed(path: Path) -> None:
    outcomes = outcomes_of(path)
    assert all(len(o.seeds) >= 5 for o in outcomes), (
        f"{path.name}: run checks over at least 5 seeds ([check] seeds)"
    )
    failures = [o.line() for o in outcomes if not o.ok]
    assert not failures, "\n".join(failures)


def test_validation_doc_is_current() -> None:
    """docs/validation.md is exactly what `simcache check scenarios --report docs/validation.md`
    writes."""
    outcomes = [o for path in WITH_CHECKS for o in outcomes_of(path)]
    expected = validation_report(outcomes, REPORT_COMMAND)
    assert VALIDATION.exists(), f"generate it: {REPORT_COMMAND}"
    assert VALIDATION.read_text("utf-8") == expected, (
        f"docs/validation.md is out of date; regenerate it: {REPORT_COMMAND}"
    )
