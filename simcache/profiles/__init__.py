"""Built-in device, link and array profiles, stored as TOML data beside this file.

Each profile is a table of fields plus a ``source`` naming where its numbers
come from; a scenario references a profile by name and may override any field.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["KINDS", "get_profile", "list_profiles"]

# profile kind -> (file, table inside the file or "" for the top level)
KINDS: dict[str, tuple[str, str]] = {
    "tier": ("tiers.toml", ""),
    "link": ("links.toml", ""),
    "drive": ("arrays.toml", "drives"),
    "array": ("arrays.toml", "arrays"),
}


@cache
def _table(kind: str) -> dict[str, dict[str, Any]]:
    filename, key = KINDS[kind]
    data = tomllib.loads(resources.files(__package__).joinpath(filename).read_text("utf-8"))
    table: dict[str, dict[str, Any]] = data[key] if key else data
    return table


def list_profiles(kind: str) -> dict[str, dict[str, Any]]:
    """All built-in profiles of one kind (``tier``, ``link``, ``drive``, ``array``), by name."""
    return {name: dict(fields) for name, fields in _table(kind).items()}


def get_profile(kind: str, name: str) -> dict[str, Any]:
    """One profile's fields; ``KeyError`` names the profiles that exist."""
    table = _table(kind)
    if name not in table:
        raise KeyError(f"unknown {kind} profile {name!r}; built-in {kind} profiles: {', '.join(table)}")
    return dict(table[name])
