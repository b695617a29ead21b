"""The names a scenario gives its groups, checks and variants: the characters and words they may
use.

Below the scenario schema, so that the importers can make valid group names from what a file calls a
device.
"""

from __future__ import annotations

__all__ = [
    "MAX_NAME_CHARS",
    "NAME_PATTERN",
    "RESERVED_GROUP_NAMES",
    "group_name",
    "group_name_problem",
]

MAX_NAME_CHARS = 64
"""Longest name (a group, a check, a variant): names become table rows and sweep columns."""
NAME_PATTERN = r"^[A-Za-z0-9_-]+$"
"""Characters a group or variant name may use: a dot would split it in dotted paths
(``groups.NAME.policy``) and sweep columns (``NAME.write.mean_ms``)."""
RESERVED_GROUP_NAMES = {
    "all": "the summary's row of all groups together, and what checks select by default"
}
"""Names no group may take, and what each already means (a variant may not be called ``base``:
see ``BASE``)."""


def group_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a group beyond its characters (a reserved word, digits alone), or
    None."""
    if name in RESERVED_GROUP_NAMES:
        return f"{name!r} is reserved ({RESERVED_GROUP_NAMES[name]}); give the group another name"
    if name.isdigit():
        return (
            "a group name of digits alone reads as a list index in dotted paths "
            f"(groups.{name}.policy); add a letter"
        )
    return None


def group_name(label: str, used: set[str], fallback: str = "device") -> str:
    """``label`` as a group name: characters other than ASCII letters, digits, ``_`` and ``-``
    become ``_``, a reserved name or digits alone get ``fallback`` in front, at most 56
    characters; made unique among ``used`` (which it joins)."""
    base = (
        "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in label)[
            : MAX_NAME_CHARS - 8
        ]
        or fallback
    )
    if group_name_problem(base):
        base = f"{fallback}_{base}"
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    return name
