"""A sweep file read and checked: ``scenario = "PATH"``, optional ``seeds = [...]`` and a ``[grid]``
table of ``dotted.path = [values]``.

:func:`read_sweep_file` refuses, naming the sweep file and its field, what no sweep can run: other
keys, a missing scenario or grid, a scenario that is the sweep file itself or another sweep file
(review 65: both were reported as six problems of a scenario nobody wrote). The scenario and the
grid's values are checked when the sweep loads and applies them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from simcache.base.errors import SweepError, echo
from simcache.spec.load import (
    builtin_names,
    builtin_scenarios,
    parse_toml,
    read_scenario_text,
    sweep_shaped,
)

__all__ = ["SweepFile", "read_sweep_file"]

_SHAPE = (
    'a sweep file has scenario = "PATH", optional seeds = [1, 2, 3] and a [grid] table of '
    "dotted.path = [values]"
)


class SweepFile(NamedTuple):
    """What a sweep file asks for."""

    tables: dict[str, Any]
    """The file as written (``scenario``, ``seeds``, ``grid``)."""
    scenario: Path
    """The scenario to vary: a file (relative paths resolved) or a built-in scenario's name."""
    seeds: list[int]
    """The seeds each grid point runs with (``[1]`` when the file gives none)."""


def read_sweep_file(path: Path) -> SweepFile:
    """The sweep file at ``path``, its scenario path resolved; raises
    :class:`~simcache.base.errors.SweepError` naming ``path`` and the field for a file no sweep
    can run."""
    tables = parse_toml(read_scenario_text(path), str(path))
    unknown = set(tables) - {"scenario", "seeds", "grid"}
    if unknown or "scenario" not in tables or not isinstance(tables.get("grid"), dict):
        listed = f"; unknown: {', '.join(sorted(unknown))}" if unknown else ""
        raise SweepError(str(path), [("", _SHAPE + listed)])
    written = tables["scenario"]
    if not isinstance(written, str) or not written:
        raise SweepError(
            str(path),
            [
                (
                    "scenario",
                    'give a scenario file or built-in name, e.g. scenario = "default" (got '
                    f"{echo(written)})",
                )
            ],
        )
    scenario = _scenario_path(written, path)
    _refuse_missing(path, written, scenario)
    _refuse_sweep_as_scenario(path, written, scenario)
    return SweepFile(tables, scenario, tables.get("seeds", [1]))


def _scenario_path(written: str, sweep: Path) -> Path:
    """The scenario a sweep file at ``sweep`` names as ``written``: a path as given when it exists
    from here (or is absolute), else relative to the sweep file's folder when it exists there or
    looks like a path (a suffix or a folder); else a built-in scenario's name, as written."""
    path = Path(written)
    beside = sweep.parent / path
    if (
        not path.is_absolute()
        and not path.exists()
        and (beside.exists() or path.suffix or len(path.parts) > 1)
    ):
        return beside
    return path


def _refuse_missing(sweep: Path, written: str, scenario: Path) -> None:
    """Refuse a ``scenario`` that is neither a file nor a built-in scenario, naming the sweep file
    and its field (review 67a F13: the error named the missing file as an invalid scenario)."""
    if scenario.exists() or (scenario == Path(written) and written in builtin_scenarios()):
        return
    raise SweepError(
        str(sweep),
        [
            (
                "scenario",
                f"{echo(written)} is no file (looked for {scenario}) and no built-in scenario: "
                "name a scenario file (a path relative to this sweep file) or a built-in "
                f"scenario; built-in: {builtin_names()}",
            )
        ],
    )


def _refuse_sweep_as_scenario(sweep: Path, written: str, scenario: Path) -> None:
    """Refuse a ``scenario`` that is the sweep file itself, or another sweep file, saying what to
    write instead."""
    if _same_file(scenario, sweep):
        raise SweepError(
            str(sweep),
            [
                (
                    "scenario",
                    f"{echo(written)} is this sweep file; name the scenario the grid varies: a "
                    'scenario file (relative to this one, e.g. scenario = "base.toml") or a '
                    'built-in scenario (e.g. scenario = "default")',
                )
            ],
        )
    inner = _sweep_tables(scenario)
    if inner is None:
        return
    named = inner["scenario"]
    fix = "name a scenario file"
    if isinstance(named, str) and named:
        varied = _relative(_scenario_path(named, scenario), sweep)
        fix = f'name the scenario it varies (scenario = "{varied}")'

    raise SweepError(
        str(sweep),
        [
            (
                "scenario",
                f"{echo(written)} is a sweep file ([grid] and scenario = {echo(named)}), not a "
                f"scenario; sweeps do not nest: {fix}, and put the grid keys of both files in "
                "this one's [grid]",
            )
        ],
    )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.is_file() and os.path.samefile(a, b)
    except (OSError, ValueError):  # unreadable, or a NUL byte in the name
        return False


def _sweep_tables(path: Path) -> dict[str, Any] | None:
    """The tables of the file at ``path`` when it is a sweep file, else None (not a file, or one
    that cannot be read or parsed: loading it as the scenario says why)."""
    try:
        if not path.is_file():
            return None
        tables = parse_toml(read_scenario_text(path), str(path))
    except (OSError, ValueError):  # ScenarioError is a ValueError
        return None
    return tables if sweep_shaped(tables) else None


def _relative(path: Path, sweep: Path) -> str:
    """``path`` as a sweep file at ``sweep`` would write it (relative to its folder when a file)."""
    if not path.exists():
        return str(path)
    return os.path.relpath(path, sweep.parent)
