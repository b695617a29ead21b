"""Pydantic's validation errors as the problems a :class:`~simcache.base.errors.ScenarioError`
lists, in the user's words.

Each problem is a dotted field path, with list items of named things shown by
name (``groups.0(db).policy``), and a message that says what is allowed: an
unknown field gets the names allowed in its table, a number out of range its
range in the field's unit and why the range ends there, a wrong type what to
write instead. Every error type pydantic can raise for the schema has its own
words (:data:`ERROR_TYPES`); none of pydantic's own phrasing ("Input should
be", "valid dictionary or instance of") reaches the user. A value is quoted by
:func:`~simcache.base.errors.echo`: at most about 100 characters.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from simcache.base.errors import ECHO_CHARS, echo
from simcache.base.spelling import close_name
from simcache.spec.events import EVENT_KINDS
from simcache.spec.fields import NAME_PATTERN, NUMBER, WHOLE, Measure, Why

__all__ = ["ERROR_TYPES", "TOO_DEEP", "schema_problems", "too_many"]

TOO_DEEP = (
    "tables or arrays nested too deeply; a scenario nests a few levels "
    "(groups.0.workload.duty_cycle)"
)

_PATTERNS = {
    NAME_PATTERN: "letters, digits, _ and -",
    r"^[A-Za-z0-9_.+-]+$": "letters, digits, _, ., + and -",
}
"""Name patterns of the schema in words."""


def schema_problems(
    exc: ValidationError, data: Any, root: type[BaseModel], within: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    """(field path, message) for each error of validating ``data`` as ``root``, unknown fields
    first.

    ``within``: where the validated part sits in ``data`` when only that part
    was validated (e.g. ``("run",)`` for a :class:`RunSpec` of a scenario's data).

    An unknown field one slip from an allowed one gets "did you mean ...?", and the missing
    fields it explains are left out (:func:`_explained`): ``profil = "array-14x7200"`` is one
    problem, not three required fields the profile would have filled and then the typo (review
    65).
    """
    errors = [((*within, *error["loc"]), error) for error in exc.errors()]
    meant = {
        loc: close_name(loc[-1], _allowed_fields(loc[:-1], root))
        for loc, error in errors
        if error["type"] == "extra_forbidden"
    }
    kept = [(loc, error) for loc, error in errors if not _explained(loc, error, meant, root)]
    kept.sort(key=lambda item: item[1]["type"] != "extra_forbidden")  # stable: unknown first
    return [(_loc(loc, data), _message(error, loc, root, meant.get(loc))) for loc, error in kept]


def _explained(
    loc: tuple[Any, ...],
    error: Mapping[str, Any],
    meant: Mapping[tuple[Any, ...], str | None],
    root: type[BaseModel],
) -> bool:
    """Whether ``error`` is a missing field that an unknown field of its table accounts for: one
    that is a slip of its name, or of ``profile`` in a table that names a built-in profile (the
    profile would have given the field)."""
    if error["type"] != "missing":
        return False
    table, name = loc[:-1], loc[-1]
    model = _Leaf(table, root).model
    profiled = model is not None and isinstance(getattr(model, "_profile_kind", None), str)
    return any(
        unknown[:-1] == table and (near == name or (near == "profile" and profiled))
        for unknown, near in meant.items()
    )


def _loc(loc: tuple[Any, ...], data: Any) -> str:
    """Dotted field path; list indices of named items become their names."""
    parts: list[str] = []
    node = data
    for part in loc:
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            item = node[part]
            name = item.get("name") if isinstance(item, dict) else None
            parts.append(f"{part}" if name is None else f"{part}({_clip(str(name))})")
            node = item
        else:
            parts.append(_clip(str(part)))
            node = node.get(part) if isinstance(node, dict) else None
    return ".".join(p for p in parts if not _noise(p))


def _clip(text: str) -> str:
    return text if len(text) <= ECHO_CHARS else text[: ECHO_CHARS - 3] + "..."


def _noise(part: str) -> bool:
    """Pydantic's pseudo-locations for constrained types, validators, union tags and dict keys."""
    return part in EVENT_KINDS or part == "[key]" or part.startswith(("function-", "constrained-"))


class _Leaf:
    """What the schema says about the field an error is at: its constraints, unit, reasons and
    value type."""

    def __init__(self, loc: tuple[Any, ...], root: type[BaseModel]):
        annotation: Any = root
        metadata: list[Any] = []
        for part in loc:
            annotation, metadata = _unwrap(annotation, metadata)
            if part in EVENT_KINDS and _is_union(annotation):
                annotation, metadata = EVENT_KINDS[part], []
            elif (
                isinstance(annotation, type)
                and issubclass(annotation, BaseModel)
                and part in annotation.model_fields
            ):
                field = annotation.model_fields[part]
                annotation, metadata = field.annotation, list(field.metadata)
            elif get_origin(annotation) is list and isinstance(part, int):
                annotation, metadata = get_args(annotation)[0], []
            elif get_origin(annotation) is dict and isinstance(part, str) and not _noise(part):
                annotation, metadata = get_args(annotation)[1], []
        self.annotation, self.metadata = _unwrap(annotation, metadata)
        measures = [m for m in self.metadata if isinstance(m, Measure)]
        self.measure = measures[-1] if measures else None
        self.low_why = next(
            (w.low for w in reversed(self.metadata) if isinstance(w, Why) and w.low), ""
        )
        self.high_why = next(
            (w.high for w in reversed(self.metadata) if isinstance(w, Why) and w.high), ""
        )
        self.bare_why = next(
            (w.bare for w in reversed(self.metadata) if isinstance(w, Why) and w.bare), ""
        )
        self.lower: tuple[float, bool] | None = None  # (bound, open)
        self.upper: tuple[float, bool] | None = None
        for item in self.metadata:
            if isinstance(item, annotated_types.Ge | annotated_types.Gt):
                bound = (
                    getattr(item, "ge", getattr(item, "gt", 0)),
                    isinstance(item, annotated_types.Gt),
                )
                self.lower = bound if self.lower is None or bound > self.lower else self.lower
            elif isinstance(item, annotated_types.Le | annotated_types.Lt):
                bound = (
                    getattr(item, "le", getattr(item, "lt", 0)),
                    isinstance(item, annotated_types.Lt),
                )
                self.upper = (
                    bound
                    if self.upper is None
                    or (bound[0], not bound[1]) < (self.upper[0], not self.upper[1])
                    else self.upper
                )

    @property
    def model(self) -> type[BaseModel] | None:
        annotation = self.annotation
        return (
            annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel)
            else None
        )

    def range(self, side: str, given: Any = None) -> str:
        """``must be at least 512 bytes; one disk sector, ...`` for a value beyond the ``side``
        ("low", "high") bound; the field's hint for a bare number when ``given`` (the value as
        written) is one."""
        measure = self.measure or NUMBER
        show = measure.show
        if (
            measure is WHOLE
            and self.lower
            and self.upper
            and not self.lower[1]
            and not self.upper[1]
        ):
            text = f"must be a whole number from {show(self.lower[0])} to {show(self.upper[0])}"
        elif side == "low" and self.lower:
            text = f"must be {'more than' if self.lower[1] else 'at least'} {show(self.lower[0])}"
        elif self.upper:
            text = f"must be {'less than' if self.upper[1] else 'at most'} {show(self.upper[0])}"
        else:
            text = "is out of range"
        why = self.low_why if side == "low" else self.high_why
        bare = isinstance(given, int | float) and not isinstance(given, bool)
        if bare and self.bare_why:
            why = f"{why}; {self.bare_why}" if why else self.bare_why
        return f"{text}; {why}" if why else text


def _unwrap(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """Strip ``Annotated`` (collecting its metadata) and ``X | None`` down to the value's type."""
    metadata = list(metadata)
    while True:
        if get_origin(annotation) is Annotated:
            args = get_args(annotation)
            for item in args[1:]:
                metadata += [*item.metadata] if isinstance(item, FieldInfo) else [item]
            annotation = args[0]
        elif _is_union(annotation):
            arms = [arm for arm in get_args(annotation) if arm is not type(None)]
            if len(arms) != 1:
                return annotation, metadata
            annotation = arms[0]
        else:
            return annotation, metadata


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _got(error: Mapping[str, Any]) -> str:
    """`` (got VALUE)``: the value as written, unless it is a whole table (its own fields are
    named instead)."""
    if "input" not in error or isinstance(error["input"], Mapping):
        return ""
    return f" (got {echo(error['input'])})"


def _what(leaf: _Leaf) -> str:
    measure = leaf.measure or NUMBER
    return f"must be {measure.what}, e.g. {measure.examples}"


def _table(leaf: _Leaf) -> str:
    model = leaf.model
    kind = getattr(model, "_profile_kind", None) if model is not None else None
    if isinstance(kind, str):
        return (
            f"must be a table of its fields or the name of a built-in {kind} profile (simcache "
            "profiles lists them)"
        )
    return "must be a table of its fields, e.g. { name = value }"


def _number(leaf: _Leaf, error: Mapping[str, Any]) -> str:
    value = error.get("input")
    # a whole number too large for a float
    if isinstance(value, int) and not isinstance(value, bool):
        return leaf.range("high")
    return _what(leaf)


def _literal(leaf: _Leaf, error: Mapping[str, Any]) -> str:
    return f"must be {error.get('ctx', {}).get('expected', 'one of the listed values')}"


def _pattern(leaf: _Leaf, error: Mapping[str, Any]) -> str:
    pattern = str(error.get("ctx", {}).get("pattern", ""))
    return f"may hold only {_PATTERNS.get(pattern, f'characters matching {pattern}')}"


def _too_short(leaf: _Leaf, error: Mapping[str, Any]) -> str:
    least = error.get("ctx", {}).get("min_length", 1)
    return f"needs at least {least} {'entry' if least == 1 else 'entries'}"


def too_many(most: int | str, got: int | str, why: str = "") -> str:
    """The message for a list or table longer than its field allows, with the reason for the
    limit if there is one."""
    shown = [f"{n:,}" if isinstance(n, int) else n for n in (most, got)]
    return f"may have at most {shown[0]} entries (got {shown[1]})" + (f": {why}" if why else "")


def _too_long(leaf: _Leaf, error: Mapping[str, Any]) -> str:
    ctx = error.get("ctx", {})
    return too_many(ctx.get("max_length", "?"), ctx.get("actual_length", "?"), leaf.high_why)


def _tag_invalid(leaf: _Leaf, error: Mapping[str, Any]) -> str:
    ctx = error.get("ctx", {})
    return (
        f"kind must be one of {ctx.get('expected_tags', ', '.join(EVENT_KINDS))} (got "
        f"{echo(ctx.get('tag'))})"
    )


Translation = Callable[[_Leaf, Mapping[str, Any]], str]
ERROR_TYPES: dict[str, Translation] = {
    "missing": lambda leaf, error: "required field is missing",
    "greater_than": lambda leaf, error: leaf.range("low", error.get("input")),
    "greater_than_equal": lambda leaf, error: leaf.range("low", error.get("input")),
    "less_than": lambda leaf, error: leaf.range("high", error.get("input")),
    "less_than_equal": lambda leaf, error: leaf.range("high", error.get("input")),
    "finite_number": lambda leaf, error: (
        f"must be a finite number, not nan or inf; {_what(leaf).removeprefix('must be ')}"
    ),
    "int_type": lambda leaf, error: "must be a whole number, e.g. 4",
    "int_parsing": lambda leaf, error: "must be a whole number, e.g. 4",
    "int_parsing_size": lambda leaf, error: leaf.range("high"),
    "int_from_float": lambda leaf, error: "must be a whole number, e.g. 4",
    "float_type": _number,
    "float_parsing": lambda leaf, error: _what(leaf),
    "bool_type": lambda leaf, error: "must be true or false",
    "bool_parsing": lambda leaf, error: "must be true or false",
    "string_type": lambda leaf, error: 'must be text in quotes, e.g. "db"',
    "string_unicode": lambda leaf, error: 'must be text in quotes, e.g. "db"',
    "string_too_short": lambda leaf, error: "must not be empty",
    "string_too_long": lambda leaf, error: (
        f"may be at most {error.get('ctx', {}).get('max_length', '?')} characters long"
    ),
    "string_pattern_mismatch": _pattern,
    "literal_error": _literal,
    "enum": _literal,
    "list_type": lambda leaf, error: "must be a list in brackets, e.g. [0, 1]",
    "tuple_type": lambda leaf, error: "must be a list in brackets, e.g. [0, 1]",
    "dict_type": lambda leaf, error: "must be a table, e.g. { name = value }",
    "model_type": lambda leaf, error: _table(leaf),
    "model_attributes_type": lambda leaf, error: _table(leaf),
    "too_short": _too_short,
    "too_long": _too_long,
    "union_tag_invalid": _tag_invalid,
    "union_tag_not_found": lambda leaf, error: (
        f"needs a kind: one of {', '.join(repr(kind) for kind in EVENT_KINDS)}"
    ),
    "recursion_loop": lambda leaf, error: TOO_DEEP,
}
"""Each pydantic error type the schema can raise, in words; any other keeps pydantic's text with
"Input should be" turned into "must be"."""


def _message(
    error: Any, loc: tuple[Any, ...], root: type[BaseModel], meant: str | None = None
) -> str:
    """``error`` in words; ``meant``: the allowed field an unknown one is a slip of."""
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_fields(loc[:-1], root)
        listed = ", ".join(allowed)
        if meant is not None:
            return (
                f"unknown field {echo(loc[-1])}; did you mean {meant!r}? (allowed here: {listed})"
            )
        return f"unknown field {echo(loc[-1])}" + (f"; allowed here: {listed}" if allowed else "")
    if kind in ("value_error", "assertion_error"):
        message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    elif kind in ERROR_TYPES:
        message = ERROR_TYPES[kind](_Leaf(loc, root), error)
    else:
        message = str(error["msg"]).replace("Input should be", "must be").replace("input", "value")
    if kind in ("missing", "too_long", "union_tag_invalid", "recursion_loop"):
        return message
    return message + _got(error)


def _allowed_fields(loc: tuple[Any, ...], root: type[BaseModel]) -> list[str]:
    model = _Leaf(loc, root).model
    return sorted(model.model_fields) if model is not None else []
