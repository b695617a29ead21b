"""Scenarios and plain tables written as TOML that :func:`~simcache.scenario.load_scenario` reads back.

:func:`scenario_toml` writes a validated :class:`Scenario` with every field
expanded; :func:`toml_document` writes any tables (an imported workload on
its base scenario's cluster) under a comment header.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simcache.scenario.model import Scenario

__all__ = ["scenario_toml", "toml_document"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def scenario_toml(scenario: Scenario) -> str:
    """The scenario as a TOML document that ``load_scenario`` reads back to an equal scenario.

    Profiles are written expanded (every field with its value in SI units:
    bytes, seconds, bytes/s), so the file does not depend on the profile
    tables of the version that wrote it.
    """
    from simcache import __version__

    header = [f"simcache {__version__} scenario {scenario.name!r}, values in SI units (bytes, seconds, bytes/s)"]
    return toml_document(scenario.model_dump(mode="json"), header)


def toml_document(tables: Mapping[str, Any], header: Sequence[str] = ()) -> str:
    """``tables`` as TOML, each line of ``header`` as a comment above it (``None`` values are left out)."""
    lines = [f"# {line}" for text in header for line in str(text).splitlines()]
    _write_table(lines, (), tables)
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
