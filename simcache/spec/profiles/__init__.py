"""Built-in device, link and array profiles, stored as TOML data beside this file.

Each profile is a table of fields plus a ``source`` naming where its numbers
come from, and each number carries its own source (or "assumption: why") in a
comment on its line; :func:`field_notes` reads those comments so that
``simcache profiles`` can show them. A scenario references a profile by name
and may override any field.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["KINDS", "field_notes", "get_profile", "list_profiles"]

# profile kind -> (file, table inside the file or "" for the top level)
KINDS: dict[str, tuple[str, str]] = {
    "tier": ("tiers.toml", ""),
    "link": ("links.toml", ""),
    "drive": ("arrays.toml", "drives"),
    "array": ("arrays.toml", "arrays"),
}


def _text(kind: str) -> str:
    return resources.files(__package__).joinpath(KINDS[kind][0]).read_text("utf-8")


@cache
def _table(kind: str) -> dict[str, dict[str, Any]]:
    _, key = KINDS[kind]
    data = tomllib.loads(_text(kind))
    table: dict[str, dict[str, Any]] = data[key] if key else data
    return table


def list_profiles(kind: str) -> dict[str, dict[str, Any]]:
    """All built-in profiles of one kind (``tier``, ``link``, ``drive``, ``array``), by name."""
    return {name: dict(fields) for name, fields in _table(kind).items()}


def get_profile(kind: str, name: str) -> dict[str, Any]:
    """One profile's fields; ``KeyError`` names the profiles that exist."""
    table = _table(kind)
    if name not in table:
        raise KeyError(
            f"unknown {kind} profile {name!r}; built-in {kind} profiles: {', '.join(table)}"
        )
    return dict(table[name])


@cache
def field_notes(kind: str) -> dict[str, dict[str, str]]:
    """The comment beside each field of each profile of ``kind``: ``{profile: {field: note}}``."""
    _, key = KINDS[kind]
    prefix = f"{key}." if key else ""
    notes: dict[str, dict[str, str]] = {}
    section: str | None = None
    for raw in _text(kind).splitlines():
        line = raw.strip()
        if line.startswith("["):
            name = line.strip("[]").strip()
            section = (
                name.removeprefix(prefix)
                if name.startswith(prefix) and "." not in name.removeprefix(prefix)
                else None
            )
            continue
        value, comment = _split_comment(line)
        if section is None or not comment or "=" not in value:
            continue
        field = value.split("=", 1)[0].strip()
        notes.setdefault(section, {})[field] = comment
    return notes


def _split_comment(line: str) -> tuple[str, str]:
    """``key = "a # b"  # note`` -> (``key = "a # b"``, ``note``): the first ``#`` outside
    quotes."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#":
            return line[:i].strip(), line[i + 1 :].strip()
    return line, ""
