"""Times in days (review 65, 15: ``"2d"`` was refused): a scenario takes ``d`` beside ``h`` and
``min``, writes a whole number of days back as days, and a unit it does not know is refused with
the list of those it does."""

from __future__ import annotations

from pathlib import Path

import pytest

from simcache import ScenarioError, load_scenario
from simcache.spec.dump import minimal_scenario_toml

UNITS = "ns, us (or µs), ms, s, min, h or d (days)"


def scenario_with_run(tmp_path: Path, run: str) -> Path:
    """A small scenario with the ``[run]`` table ``run``."""
    path = tmp_path / "days.toml"
    path.write_text(
        f"""\
[run]
{run}
[cluster]
tier = "sata-ssd-s3700-field"
peer_link = "10GbE"
storage_link = "1GbE"
[array]
profile = "array-14x7200"
[[groups]]
name = "db"
[groups.workload]
mode = "open"
iops = 100
""",
        "utf-8",
    )
    return path


def test_durations_in_days_and_hours_are_read(tmp_path: Path) -> None:
    scenario = load_scenario(scenario_with_run(tmp_path, 'duration = "2d"\nwarmup = "1.5h"'))
    assert scenario.run.duration == 2 * 86_400
    assert scenario.run.warmup == 1.5 * 3_600


def test_a_whole_number_of_days_is_written_back_in_days(tmp_path: Path) -> None:
    scenario = load_scenario(scenario_with_run(tmp_path, 'duration = "2d"'))
    assert 'duration = "2d"' in minimal_scenario_toml(scenario)
    assert load_scenario(scenario_with_run(tmp_path, 'duration = "36h"')).run.duration == 129_600


def test_an_unknown_time_unit_lists_the_units_taken(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario_with_run(tmp_path, 'duration = "2w"'))
    assert caught.value.problems == [
        ("run.duration", f"unknown time unit 'w' in '2w'; use {UNITS} (got '2w')")
    ]
