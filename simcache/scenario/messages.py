"""Pydantic's validation errors as the problems a :class:`~simcache.errors.ScenarioError` lists.

Each problem is a dotted field path, with list items of named things shown by
name (``groups.0(db).policy``), and a message that says what is allowed: an
unknown field gets the names allowed in its table.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from simcache.scenario.events import EVENT_KINDS

__all__ = ["schema_problems"]


def schema_problems(exc: ValidationError, data: Any, root: type[BaseModel], within: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(field path, message) for each error of validating ``data`` as ``root``.

    ``within``: where the validated part sits in ``data`` when only that part
    was validated (e.g. ``("run",)`` for a :class:`RunSpec` of a scenario's data).
    """
    problems = []
    for error in exc.errors():
        loc = (*within, *error["loc"])
        problems.append((_loc(loc, data), _message(error, loc, root)))
    return problems


def _loc(loc: tuple[Any, ...], data: Any) -> str:
    """Dotted field path; list indices of named items become their names."""
    parts: list[str] = []
    node = data
    for part in loc:
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            item = node[part]
            name = item.get("name") if isinstance(item, dict) else None
            parts.append(f"{part}" if name is None else f"{part}({name})")
            node = item
        else:
            parts.append(str(part))
            node = node.get(part) if isinstance(node, dict) else None
    # Pydantic adds pseudo-locations for constrained types and union tags; drop them.
    noise = {"function-before[parse(), float]", "function-before[parse(), int]", "constrained-float", "constrained-int", *EVENT_KINDS}
    return ".".join(p for p in parts if p not in noise and not p.startswith("function-"))


def _message(error: Any, loc: tuple[Any, ...], root: type[BaseModel]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_fields(loc[:-1], root)
        return f"unknown field {loc[-1]!r}" + (f"; allowed here: {', '.join(allowed)}" if allowed else "")
    if kind == "missing":
        return "required field is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    if "input" in error and kind not in ("model_type", "dict_type"):
        message += f" (got {error['input']!r})"
    return message


def _allowed_fields(loc: tuple[Any, ...], root: type[BaseModel]) -> list[str]:
    model: Any = root
    for part in loc:
        if isinstance(part, int):
            continue
        if part in EVENT_KINDS:  # the tag pydantic puts after an event's index
            model = EVENT_KINDS[part]
            continue
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        annotation = field.annotation
        for candidate in getattr(annotation, "__args__", (annotation,)):
            inner = getattr(candidate, "__args__", (candidate,))
            found = next((c for c in inner if isinstance(c, type) and issubclass(c, BaseModel)), None)
            if found is None and isinstance(candidate, type) and issubclass(candidate, BaseModel):
                found = candidate
            if found is not None:
                model = found
                break
        else:
            model = None  # a list of tagged unions: the tag that follows names the model
    return sorted(model.model_fields) if hasattr(model, "model_fields") else []
