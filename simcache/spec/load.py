"""Loading a scenario: from a TOML file, a built-in scenario's name, or a dict.

A file is read and parsed once, and validated once with its variants and
checks (:func:`~simcache.spec.scenario.validate_scenario`); runs derived from
the loaded :class:`Scenario` validate only what they change.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simcache.base.errors import ScenarioError, echo
from simcache.base.files import (
    MAX_SCENARIO_BYTES_VARIABLE,
    FileRefused,
    read_limited,
    scenario_limit,
)
from simcache.spec.library import scenario_files
from simcache.spec.messages import TOO_DEEP
from simcache.spec.scenario import Scenario, validate_scenario

__all__ = [
    "DEVICE_FILE_TABLES",
    "builtin_names",
    "builtin_scenarios",
    "load_scenario",
    "parse_toml",
    "read_scenario_text",
    "resolve_device_files",
    "sweep_shaped",
]


def load_scenario(source: Scenario | str | Path | Mapping[str, Any]) -> Scenario:
    """Read and validate a scenario from a TOML path, a built-in name, or a dict.

    Raises :class:`ScenarioError` (file, field path, what is allowed) for any
    bad input: unreadable or malformed TOML, unknown fields, impossible values.
    """
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        return validate_scenario(source, "<dict>")
    path = _find(Path(source))
    data = parse_toml(read_scenario_text(path), str(path))
    if sweep_shaped(data):
        raise ScenarioError(
            str(path),
            [
                (
                    "",
                    "a sweep file (scenario, seeds and [grid]), not a scenario: run it with "
                    f"`simcache sweep {path}`, or give the scenario it names "
                    f"({echo(data['scenario'])})",
                )
            ],
        )
    _resolve_trace_paths(data, path.parent)
    resolve_device_files(data, path.parent, str(path))
    return validate_scenario(data, str(path))


def sweep_shaped(tables: Mapping[str, Any]) -> bool:
    """Whether parsed TOML ``tables`` are a sweep file's (``scenario`` and a ``[grid]`` table, keys
    no scenario has) rather than a scenario's."""
    return "scenario" in tables and isinstance(tables.get("grid"), dict)


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """``text`` parsed as TOML; :class:`ScenarioError` naming ``source`` for malformed, too
    deeply nested or too long numbers."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(source, [("", f"malformed TOML: {exc}")]) from None
    except RecursionError:
        raise ScenarioError(source, [("", TOO_DEEP)]) from None
    except ValueError:  # Python converts whole numbers of at most 4,300 digits
        raise ScenarioError(
            source,
            [("", "malformed TOML: a whole number of thousands of digits; no field takes one")],
        ) from None


def read_scenario_text(path: Path) -> str:
    """The text of a scenario (or sweep) file: a regular file, at most
    :func:`~simcache.base.files.scenario_limit` bytes, UTF-8.

    Raises :class:`ScenarioError` naming the file otherwise.
    """
    try:
        limit = scenario_limit()
        data = read_limited(
            path,
            limit,
            f"a scenario is a few KiB; set {MAX_SCENARIO_BYTES_VARIABLE} to read a bigger one",
        )
    except FileRefused as exc:
        raise ScenarioError(str(path), [("", exc.reason)]) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScenarioError(
            str(path),
            [
                (
                    "",
                    f"not UTF-8 text (line {line}, byte {exc.start}); save the scenario as UTF-8 "
                    "TOML",
                )
            ],
        ) from None


def _resolve_trace_paths(data: dict[str, Any], folder: Path) -> None:
    """Make each group's relative ``workload.trace.path`` relative to the scenario file's folder,
    not the working directory."""
    groups = data.get("groups")
    for group in groups if isinstance(groups, list) else []:
        workload = group.get("workload") if isinstance(group, dict) else None
        trace = workload.get("trace") if isinstance(workload, dict) else None
        if isinstance(trace, dict) and isinstance(trace.get("path"), str) and trace["path"]:
            trace_path = Path(trace["path"]).expanduser()
            if not trace_path.is_absolute():
                trace["path"] = str(folder / trace_path)


DEVICE_FILE_TABLES = {("cluster", "tier"): "tier", ("array", "drive"): "drive"}
"""Where a scenario may take a device from a file (``tier = { file = "DEVICE.toml" }``), and the
file's table."""


def resolve_device_files(data: dict[str, Any], folder: Path, source: str) -> None:
    """Replace each ``{ file = "DEVICE.toml", ... }`` at :data:`DEVICE_FILE_TABLES` by the file's
    table (``[tier]`` or ``[drive]``, as ``simcache calibrate`` writes it) with the fields
    written beside ``file`` over it. A relative path is relative to ``folder`` (the scenario
    file's). Raises :class:`ScenarioError` naming the field and the file."""
    for (outer, key), table in DEVICE_FILE_TABLES.items():
        node = data.get(outer)
        value = node.get(key) if isinstance(node, dict) else None
        if isinstance(value, dict) and "file" in value:
            assert isinstance(node, dict)
            node[key] = _device_file(value, table, folder, source, f"{outer}.{key}")


def _device_file(
    value: dict[str, Any], table: str, folder: Path, source: str, where: str
) -> dict[str, Any]:
    name = value["file"]
    if not isinstance(name, str) or not name:
        raise ScenarioError(
            source,
            [
                (
                    f"{where}.file",
                    f'give the device file\'s path as a string, e.g. file = "my-{table}.toml"',
                )
            ],
        )
    path = Path(name).expanduser()
    path = path if path.is_absolute() else folder / path
    if not path.is_file():
        raise ScenarioError(
            source,
            [(f"{where}.file", f"no such file: {path} (a path relative to the scenario's folder)")],
        )
    device = parse_toml(read_scenario_text(path), str(path)).get(table)
    if not isinstance(device, dict):
        raise ScenarioError(
            source,
            [
                (
                    f"{where}.file",
                    f"{path} has no [{table}] table; simcache calibrate writes one (or paste the "
                    "fields here)",
                )
            ],
        )
    overrides = {k: v for k, v in value.items() if k != "file"}
    return {**device, **overrides}


def builtin_scenarios() -> dict[str, Path]:
    """The scenario library shipped in the package (the repository's scenarios/ folder), by stem."""
    return scenario_files()


def builtin_names() -> str:
    """The built-in scenarios' names, as an error lists them (``"array_rebuild, ..."``)."""
    return ", ".join(builtin_scenarios()) or "none"


def _find(path: Path) -> Path:
    try:
        if os.path.lexists(path) or path.suffix:
            return path
    except ValueError:  # a NUL byte: no file has such a name
        return path
    builtin = builtin_scenarios()
    if str(path) in builtin:
        return builtin[str(path)]
    raise ScenarioError(
        echo(str(path)),
        [
            (
                "",
                f"no such file and no built-in scenario of that name; built-in: {builtin_names()}",
            )
        ],
    )
