"""A sweep file whose ``scenario`` is no scenario (review 65, 15): the sweep file itself, or another
sweep file. Each is one problem naming the sweep file's ``scenario`` and what to write instead,
not six problems of a scenario nobody wrote ("cluster: required field is missing", "seeds:
unknown field")."""

from __future__ import annotations

from pathlib import Path

from support.cli import call

GRID = '[grid]\n"cluster.hosts" = [3, 4]\n'


def sweep_file(path: Path, scenario: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'scenario = "{scenario}"\nseeds = [1]\n{GRID}', "utf-8")
    return path


def only_problem(stderr: str, source: Path, heading: str = "invalid sweep") -> str:
    """The one problem line of an error about ``source``."""
    head, *problems = stderr.strip().splitlines()
    assert head == f"error: {source}: {heading} (1 problem)", stderr
    assert len(problems) == 1, stderr
    return problems[0].strip()


def test_a_sweep_whose_scenario_is_itself_says_so(tmp_path: Path) -> None:
    sweep = sweep_file(tmp_path / "self.toml", "self.toml")
    code, stdout, stderr = call(["sweep", str(sweep)])
    assert code == 2 and stdout == ""
    assert only_problem(stderr, sweep) == (
        "scenario: 'self.toml' is this sweep file; name the scenario the grid varies: a scenario "
        'file (relative to this one, e.g. scenario = "base.toml") or a built-in scenario (e.g. '
        'scenario = "default")'
    )


def test_a_sweep_whose_scenario_is_another_sweep_names_the_scenario_to_write(
    tmp_path: Path,
) -> None:
    """The inner sweep is in another folder: the scenario it varies is given relative to the
    outer sweep file, as that file would write it."""
    sweep_file(tmp_path / "inner" / "sweep.toml", "base.toml")
    (tmp_path / "inner" / "base.toml").write_text("# not read\n", "utf-8")
    outer = sweep_file(tmp_path / "outer.toml", "inner/sweep.toml")
    code, _, stderr = call(["sweep", str(outer)])
    assert code == 2
    assert only_problem(stderr, outer) == (
        "scenario: 'inner/sweep.toml' is a sweep file ([grid] and scenario = 'base.toml'), not "
        "a scenario; sweeps do not nest: name the scenario it varies (scenario = "
        '"inner/base.toml"), and put the grid keys of both files in this one\'s [grid]'
    )


def test_running_a_sweep_file_as_a_scenario_says_how_to_run_it(tmp_path: Path) -> None:
    sweep = sweep_file(tmp_path / "sweep.toml", "default")
    code, _, stderr = call(["run", str(sweep)])
    assert code == 2
    assert only_problem(stderr, sweep, "invalid scenario") == (
        "(top level): a sweep file (scenario, seeds and [grid]), not a scenario: run it with "
        f"`simcache sweep {sweep}`, or give the scenario it names ('default')"
    )


def test_a_sweep_whose_scenario_is_not_there_names_the_sweep_file_and_its_field(
    tmp_path: Path,
) -> None:
    """Review 67a F13: the error named the missing file, as an invalid scenario."""
    sweep = sweep_file(tmp_path / "grid.toml", "nothere.toml")
    code, stdout, stderr = call(["sweep", str(sweep)])
    assert code == 2 and stdout == ""
    problem = only_problem(stderr, sweep)
    assert problem.startswith(
        f"scenario: 'nothere.toml' is no file (looked for {tmp_path / 'nothere.toml'}) and no "
        "built-in scenario: name a scenario file (a path relative to this sweep file) or a "
        "built-in scenario; built-in: "
    )
    assert "default" in problem
