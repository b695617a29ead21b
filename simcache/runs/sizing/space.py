"""The configurations ``simcache size`` chooses from: ``--vary`` dimensions, their product, and
which are monotone.

A dimension is a dotted scenario path and its values, written as a sweep file's ``[grid]`` line or
as a range:

- ``"cluster.peer_link = ['1GbE', '10GbE']"``: a list (TOML), any values the path takes;
- ``"cluster.hosts = 3:8"``: whole numbers from 3 to 8 (``3:8:2`` steps by 2);
- ``"cluster.destager.capacity = 1GiB:16GiB"``: sizes from 1 GiB to 16 GiB, doubling.

Monotone dimensions (:data:`MONOTONE`): for the same load, a larger value never makes an I/O slower,
so a configuration that misses a target still misses it with a smaller value there and everything
else the same (:func:`dominated`). ``tests/test_size_monotone.py`` checks each on a small cluster.
``cluster.hosts`` is not one: a scenario's groups run ``vms_per_host`` VMs on every host, so more
hosts is more load on the one shared array.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simcache.base.errors import ScenarioError
from simcache.base.units import UnitError, parse_bandwidth, parse_duration, parse_size
from simcache.runs.sizing.costs import SizeError
from simcache.spec import Scenario
from simcache.spec.load import parse_toml
from simcache.spec.profiles import get_profile

__all__ = [
    "MONOTONE",
    "Dimension",
    "candidate_scenarios",
    "dominated",
    "dotted_paths",
    "parse_vary",
]

MAX_CANDIDATES = 10_000
"""Most configurations one search takes (the product of the dimensions)."""

_RANGE = re.compile(
    r"^\s*(?P<path>[\w.\-]+)\s*=\s*(?P<low>[^:\[\]'\"]+?)\s*"
    r":\s*(?P<high>[^:]+?)\s*(?::\s*(?P<step>[^:]+?)\s*)?$"
)


@dataclass(frozen=True)
class Dimension:
    """One ``--vary``: a dotted path and the values it takes, in the order given."""

    path: str
    values: tuple[Any, ...]


def parse_vary(text: str) -> Dimension:
    """``"PATH = [VALUES]"`` or ``"PATH = LOW:HIGH[:STEP]"`` -> :class:`Dimension`; a
    :class:`SizeError` says what is wrong."""
    match = _RANGE.match(text)
    if match is not None:
        return _range(match["path"], match["low"], match["high"], match["step"], text)
    try:
        parsed = parse_toml(text, "--vary")
    except ScenarioError:
        parsed = {}
    flat = dotted_paths(parsed)
    if len(flat) != 1:
        raise SizeError(
            "--vary",
            [
                (
                    "--vary",
                    'write a dimension as "PATH = [VALUES]" or "PATH = LOW:HIGH", '
                    "e.g. \"cluster.peer_link = ['1GbE', '10GbE']\" or \"cluster.hosts = 3:8\" "
                    f"(got {text!r})",
                )
            ],
        )
    path, values = next(iter(flat.items()))
    if not isinstance(values, list):
        values = [values]
    if not values:
        raise SizeError("--vary", [(path, "an empty list of values: give at least one")])
    return Dimension(path, tuple(values))


def _range(path: str, low_text: str, high_text: str, step_text: str | None, text: str) -> Dimension:
    if re.fullmatch(r"-?\d+", low_text) and re.fullmatch(r"-?\d+", high_text):
        low, high = int(low_text), int(high_text)
        step = 1
        if step_text is not None:
            if not re.fullmatch(r"\d+", step_text) or int(step_text) < 1:
                raise SizeError(
                    "--vary",
                    [
                        (
                            path,
                            f"the step of {low}:{high}:STEP must be a whole number >= 1 (got "
                            f"{step_text!r})",
                        )
                    ],
                )
            step = int(step_text)
        if low > high:
            raise SizeError(
                "--vary",
                [
                    (
                        path,
                        f"the range {low}:{high} is empty (LOW is above HIGH): write it as "
                        f"{high}:{low}",
                    )
                ],
            )
        return Dimension(path, tuple(range(low, high + 1, step)))
    try:
        low_bytes, high_bytes = parse_size(low_text), parse_size(high_text)
    except UnitError:
        raise SizeError(
            "--vary",
            [
                (
                    path,
                    "a range is whole numbers (3:8) or sizes (1GiB:16GiB), not "
                    f"{low_text!r}:{high_text!r} (in {text!r})",
                )
            ],
        ) from None
    if step_text is not None:
        raise SizeError(
            "--vary",
            [
                (
                    path,
                    f"a size range doubles from LOW to HIGH and takes no step (got {step_text!r}); "
                    "list the sizes instead",
                )
            ],
        )
    if low_bytes <= 0 or low_bytes > high_bytes:
        raise SizeError(
            "--vary",
            [
                (
                    path,
                    f"the range {low_text}:{high_text} is empty (LOW must be positive and at most "
                    "HIGH)",
                )
            ],
        )
    values = []
    size = low_bytes
    while size <= high_bytes:
        values.append(size)
        size *= 2
    return Dimension(path, tuple(values))


def dotted_paths(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A parsed line as ``{dotted.path: value}``: a bare dotted key (``cluster.peer_link =
    [..]``) parses as nested tables in TOML, a quoted one (``"cluster.peer_link" = [..]``) as one
    key; both give the same paths."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat |= dotted_paths(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def candidate_scenarios(
    base: Scenario, dimensions: Sequence[Dimension]
) -> list[tuple[dict[str, Any], Scenario]]:
    """Every configuration of the product of ``dimensions`` as (overrides, scenario), in grid
    order (the last dimension fastest); a :class:`SizeError` names the first dimension or value
    the scenario cannot take."""
    if not dimensions:
        raise SizeError(
            "--vary",
            [
                (
                    "--vary",
                    "give at least one dimension, e.g. --vary \"cluster.peer_link = ['1GbE', "
                    "'10GbE']\"",
                )
            ],
        )
    paths = [d.path for d in dimensions]
    repeated = sorted({p for p in paths if paths.count(p) > 1})
    if repeated:
        raise SizeError(
            "--vary", [(repeated[0], "varied twice: give one --vary per path, with all its values")]
        )
    count = math.prod(len(d.values) for d in dimensions)
    if count > MAX_CANDIDATES:
        raise SizeError(
            "--vary",
            [
                (
                    "--vary",
                    f"{count:,} configurations is more than {MAX_CANDIDATES:,}: vary fewer values",
                )
            ],
        )
    # each value alone first: the error names the dimension, not a whole point
    for dimension in dimensions:
        for value in dimension.values:
            _apply(base, {dimension.path: value})
    points: list[dict[str, Any]] = [{}]
    for dimension in dimensions:
        points = [
            {**point, dimension.path: value} for point in points for value in dimension.values
        ]
    return [(point, _apply(base, point)) for point in points]


def _apply(base: Scenario, point: dict[str, Any]) -> Scenario:
    try:
        return base.with_overrides(point, source="--vary")
    except ScenarioError as exc:
        where, message = exc.problems[0] if exc.problems else ("--vary", str(exc))
        shown = ", ".join(f"{path} = {value!r}" for path, value in point.items())
        raise SizeError("--vary", [(where, f"{message} (at {shown})")]) from None


def _link_key(value: Any) -> tuple[float, float]:
    """(bandwidth, -latency) of a link value (a profile name or a table with a profile)."""
    name = (
        value
        if isinstance(value, str)
        else value.get("profile")
        if isinstance(value, dict)
        else None
    )
    if name is None:
        raise KeyError(value)
    fields = get_profile("link", name)
    return float(parse_bandwidth(fields["bandwidth"])), -float(parse_duration(fields["latency"]))


def _number(value: Any) -> tuple[float, ...]:
    if isinstance(value, bool):
        raise KeyError(value)
    if isinstance(value, (int, float)):
        return (float(value),)
    return (float(parse_size(value)),)


MONOTONE: dict[str, tuple[Callable[[Any], tuple[float, ...]], str]] = {
    "cluster.peer_link": (
        _link_key,
        "a link with more bandwidth and no more latency never makes a transfer slower",
    ),
    "cluster.storage_link": (
        _link_key,
        "a link with more bandwidth and no more latency never makes a transfer slower",
    ),
    "cluster.peer_links": (_number, "more peer ports spread the same replicas over more ports"),
    "cluster.destager.capacity": (
        _number,
        "a larger destage buffer fills later under the same writes",
    ),
    "array.spindles": (_number, "more drives serve the same destage and miss I/O"),
}
"""Path -> (the value's order key, every component of which is "more is faster"; why it is
monotone)."""


def _at_most(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True))


def dominated(low: Mapping[str, Any], high: Mapping[str, Any]) -> bool:
    """Whether configuration ``low`` is ``high`` with the same or smaller values along monotone
    dimensions and the same values elsewhere (so ``low`` is no faster than ``high``)."""
    if low.keys() != high.keys():
        return False
    for path, value in low.items():
        other = high[path]
        if value == other:
            continue
        rule = MONOTONE.get(path)
        if rule is None:
            return False
        try:
            if not _at_most(rule[0](value), rule[0](other)):
                return False
        except (KeyError, UnitError, TypeError, ValueError):
            return False
    return True
