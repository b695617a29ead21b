"""Files for the page: the library in scenarios/, uploads, the edited scenario as TOML, results as a ZIP.

:func:`scenario_toml` belongs in the ``simcache`` package (a ``Scenario`` that
can write itself back as TOML); it lives here until it moves there.
"""

from __future__ import annotations

import io
import re
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import simcache
from simcache.scenario import builtin_scenarios

DEFAULT_SCENARIO = "default"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def library_scenarios() -> dict[str, Path]:
    """The scenario files shipped in ``scenarios/`` (:func:`simcache.scenario.builtin_scenarios`), by stem, the default one first."""
    files = builtin_scenarios()
    first = {DEFAULT_SCENARIO: files.pop(DEFAULT_SCENARIO)} if DEFAULT_SCENARIO in files else {}
    return {**first, **files}


def read_upload(name: str, data: bytes) -> simcache.Scenario:
    """Validate an uploaded TOML file with the package's loader.

    Raises :class:`simcache.ScenarioError` naming the uploaded file (not a
    temporary path) and every problem the loader found.
    """
    with tempfile.TemporaryDirectory(prefix="simcache-upload-") as folder:
        path = Path(folder) / (Path(name).name or "upload.toml")
        path.write_bytes(data)
        try:
            return simcache.load_scenario(path)
        except simcache.ScenarioError as exc:
            raise simcache.ScenarioError(name, exc.problems) from None


def result_zip(result: simcache.Result) -> bytes:
    """What ``Result.save`` writes (records, series, summary, breakdown as CSV and Parquet, meta.json) as one ZIP."""
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="simcache-result-") as folder, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(result.save(folder).iterdir()):
            archive.write(path, path.name)
    return buffer.getvalue()


def scenario_toml(scenario: simcache.Scenario) -> str:
    """The scenario as a TOML document that ``load_scenario`` reads back to an equal scenario.

    Profiles are written expanded (every field with its value in SI units:
    bytes, seconds, bytes/s), so the file does not depend on the profile
    tables of the version that wrote it.
    """
    lines = [f"# simcache {simcache.__version__} scenario {scenario.name!r}, values in SI units (bytes, seconds, bytes/s)"]
    _write_table(lines, (), scenario.model_dump(mode="json"))
    return "\n".join(lines) + "\n"


def _write_table(lines: list[str], path: tuple[str, ...], table: Mapping[str, Any], header: str = "[{}]") -> None:
    scalars = {k: v for k, v in table.items() if v is not None and not _is_table(v) and not _is_table_list(v)}
    if path and (scalars or header.startswith("[[") or not table):
        lines += ["", header.format(".".join(_key(p) for p in path))]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in scalars.items()]
    for key, value in table.items():
        if _is_table(value):
            _write_table(lines, (*path, key), value)
        elif _is_table_list(value):
            for item in value:
                _write_table(lines, (*path, key), item, header="[[{}]]")


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _string(text: str) -> str:
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
