"""Names one slip away from a known one, for messages that say "did you mean ...?".

Shared by the scenario schema (field and profile names) and the importers (fio job options), so a
typo gets the same suggestion wherever it is made.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["close_name", "did_you_mean"]

_SHORTEST = 4
"""Names shorter than this are not matched by a slip: among short names (``bs``, ``rw``) one
letter more or less is most often another name, not a typo."""


def close_name(name: object, known: Iterable[str]) -> str | None:
    """The one name of ``known`` that ``name`` differs from in case only or by one slip (a
    character left out, added or mistyped, not a digit for a digit; or two neighbours swapped),
    else None (no such name, or more than one)."""
    if not isinstance(name, str):
        return None
    folded = name.casefold()
    names = list(known)
    close = [k for k in names if k.casefold() == folded] or [
        k for k in names if _one_slip(folded, k.casefold())
    ]
    return close[0] if len(close) == 1 else None


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """``"did you mean '100GbE'? "`` for the :func:`close_name` of ``name``; else nothing."""
    close = close_name(name, known)
    return f"did you mean {close!r}? " if close is not None else ""


def _one_slip(typed: str, name: str) -> bool:
    """``typed`` is ``name`` with one character left out, added, or replaced (a digit by a digit
    is a different name: 800GbE is not a slip of 100GbE), or two neighbours swapped."""
    if abs(len(typed) - len(name)) > 1 or min(len(typed), len(name)) < _SHORTEST:
        return False
    if len(typed) == len(name):
        differ = [i for i, (a, b) in enumerate(zip(typed, name, strict=True)) if a != b]
        if len(differ) == 1:
            a, b = typed[differ[0]], name[differ[0]]
            return not (a.isdigit() and b.isdigit())
        return (
            len(differ) == 2
            and differ[1] == differ[0] + 1
            and typed[differ[0]] == name[differ[1]]
            and typed[differ[1]] == name[differ[0]]
        )
    short, long = sorted((typed, name), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
