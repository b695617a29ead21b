"""Scenarios and plain tables written as TOML that :func:`~simcache.spec.load_scenario` reads back.

:func:`scenario_toml` writes a validated :class:`Scenario` with every field
expanded; :func:`minimal_scenario_toml` writes only what differs from the
profiles and defaults, in human units ("10GiB", "2ms"), as a person would;
:func:`toml_document` writes any tables (an imported workload on its base
scenario's cluster) under a comment header.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from simcache.base.units import parse_bandwidth, parse_duration, parse_size
from simcache.spec.fields import RATE, SIZE, TIME, _Profiled, field_metadata

if TYPE_CHECKING:
    from simcache.spec.scenario import Scenario

__all__ = [
    "minimal_scenario_toml",
    "minimal_tables",
    "scenario_slug",
    "scenario_toml",
    "toml_document",
]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_UNITS: dict[int, tuple[Callable[[str], float], tuple[tuple[str, float], ...]]] = {
    id(SIZE): (parse_size, (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))),
    id(TIME): (
        parse_duration,
        (
            ("d", 86400.0),
            ("h", 3600.0),
            ("min", 60.0),
            ("s", 1.0),
            ("ms", 1e-3),
            ("us", 1e-6),
            ("ns", 1e-9),
        ),
    ),
    id(RATE): (parse_bandwidth, (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3))),
}
"""Per kind of quantity (the field's :class:`~simcache.spec.fields.Measure`): its parser and the
units a value is written in, largest first."""


def scenario_toml(scenario: Scenario) -> str:
    """The scenario as a TOML document that ``load_scenario`` reads back to an equal scenario.

    Profiles are written expanded (every field with its value in SI units:
    bytes, seconds, bytes/s), so the file does not depend on the profile
    tables of the version that wrote it.
    """
    from simcache.base.version import __version__

    header = [
        f"simcache {__version__} scenario {scenario.name!r}, values in SI units (bytes, seconds, "
        "bytes/s)"
    ]
    return toml_document(scenario.model_dump(mode="json"), header)


def minimal_scenario_toml(scenario: Scenario) -> str:
    """The scenario as a short TOML document: only the fields that differ from the profile a
    component names or from the schema's defaults, quantities in human units (``"10GiB"``,
    ``"2ms"``, ``"125MB/s"``) where the unit reads back to the same value. ``load_scenario``
    reads it back to an equal scenario with this version's profiles."""
    from simcache.base.version import __version__

    header = [
        f"simcache {__version__} scenario {scenario.name!r}: only what differs from the built-in "
        "profiles and defaults"
    ]
    return toml_document(minimal_tables(scenario), header)


def scenario_slug(name: str) -> str:
    """A file name stem from a scenario's name: lower case letters, digits and single dashes
    (``"db on 10GbE"`` -> ``"db-on-10gbe"``; ``"scenario"`` if nothing is left)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "scenario"


def minimal_tables(model: BaseModel, reference: BaseModel | None = None) -> dict[str, Any]:
    """``model``'s fields that differ from ``reference`` (a spec of the same type; default: the
    profile it names, or the schema's defaults), as TOML-ready values; a field without a default
    is always written."""
    if reference is None and isinstance(model, _Profiled) and model.profile:
        reference = type(model).model_validate({"profile": model.profile})
    dumped = model.model_dump(mode="json")
    out: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if reference is not None:
            known, was = True, getattr(reference, name)
        else:
            known = not field.is_required()
            was = field.get_default(call_default_factory=True) if known else None
        if (
            known
            and value == was
            and not (isinstance(model, _Profiled) and name == "profile" and value)
        ):
            continue
        if isinstance(value, BaseModel):
            table = minimal_tables(
                value, was if type(was) is type(value) and not _names_profile(value) else None
            )
            # tier = "name"
            out[name] = (
                table["profile"] if _names_profile(value) and list(table) == ["profile"] else table
            )
        elif (
            isinstance(value, list) and value and all(isinstance(item, BaseModel) for item in value)
        ):
            out[name] = [minimal_tables(item) for item in value]
        else:
            out[name] = _human(dumped[name], field)
    return out


def _names_profile(value: BaseModel) -> bool:
    return isinstance(value, _Profiled) and bool(value.profile)


def _human(value: Any, field: FieldInfo) -> Any:
    """A quantity field's value in the largest unit that reads back exactly (``10737418240`` ->
    ``"10GiB"``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value == 0:
        return value
    found = next((_UNITS[id(item)] for item in field_metadata(field) if id(item) in _UNITS), None)
    if found is None:
        return value
    parse, units = found
    for unit, factor in units:
        scaled = value / factor
        if abs(scaled) < 1:
            continue
        # a few digits, as a person writes it; else the next unit or the plain number
        text = f"{scaled:.6g}{unit}"
        if parse(text) == value:
            return text
    return value


def toml_document(tables: Mapping[str, Any], header: Sequence[str] = ()) -> str:
    """``tables`` as TOML, each line of ``header`` as a comment above it (``None`` values are
    left out)."""
    lines = [f"# {line}" for text in header for line in str(text).splitlines()]
    _write_table(lines, (), tables)
    return "\n".join(lines) + "\n"


def _write_table(
    lines: list[str], path: tuple[str, ...], table: Mapping[str, Any], header: str = "[{}]"
) -> None:
    scalars = {
        k: v
        for k, v in table.items()
        if v is not None and not _is_table(v) and not _is_table_list(v)
    }
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
        return (
            "{ "
            + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None)
            + " }"
        )
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
