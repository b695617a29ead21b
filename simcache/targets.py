"""Latency targets ("write p99 <= 5ms") and a run's verdict against each: meets, misses by how much, or unknown.

A target is ``[GROUP] OP FIGURE <= LIMIT``: ``OP`` is ``read`` or ``write``, ``FIGURE`` one of the summary's
latency figures (``p50``, ``p95``, ``p99``, ``p99.9``, ``mean``, ``max``), ``LIMIT`` a time with its unit
(``5ms``, ``500us``, ``0.2 s``) and ``GROUP`` a VM group of the scenario (default ``all``, every group).

A verdict is *unknown* when the figure cannot decide it: the run is unstable (no steady state, so its latency
grows with the run's length), or the figure is a lower bound (unfinished I/Os) at or under the limit. A lower
bound already above the limit is a miss, stable or not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from simcache.errors import ScenarioError
from simcache.metrics import PERCENTILES
from simcache.results import Result
from simcache.units import UnitError, parse_duration

__all__ = ["Target", "Verdict", "judge", "parse_target"]

FIGURES: dict[str, str] = {f"p{q:g}": name for name, q in PERCENTILES.items()} | {"p999": "p999_ms", "mean": "mean_ms", "max": "max_ms"}
"""A target's figure as written (``p99.9``) -> the summary column it reads (``p999_ms``)."""
_GRAMMAR = re.compile(r"^\s*(?:(?P<group>[\w.-]+)\s+)??(?P<op>read|write)\s+(?P<figure>\S+)\s*<=\s*(?P<limit>.+?)\s*$")
_EXAMPLE = 'write a target as "[GROUP] read|write FIGURE <= LIMIT", e.g. "write p99 <= 5ms" or "db read p99.9 <= 20ms"'


@dataclass(frozen=True)
class Target:
    """A latency figure of one group and op that must stay at or under ``limit_ms``."""

    group: str
    op: Literal["read", "write"]
    figure: str
    """As written: ``p99``, ``p99.9``, ``mean``, ``max``."""
    limit_ms: float

    @property
    def column(self) -> str:
        """The summary column the target reads (``p99_ms``)."""
        return FIGURES[self.figure]

    def __str__(self) -> str:
        where = "" if self.group == "all" else f"{self.group} "
        return f"{where}{self.op} {self.figure} <= {self.limit_ms:g} ms"


def parse_target(text: str) -> Target:
    """``"write p99 <= 5ms"`` -> :class:`Target`; a :class:`~simcache.errors.ScenarioError` says how to write it otherwise."""
    match = _GRAMMAR.match(text)
    if match is None:
        raise ScenarioError("--target", [("--target", f"{_EXAMPLE} (got {text!r})")])
    figure = match["figure"]
    if figure not in FIGURES:
        raise ScenarioError("--target", [("--target", f"no latency figure {figure!r}; use one of {', '.join(FIGURES)} (got {text!r})")])
    limit = match["limit"]
    try:
        if re.fullmatch(r"[0-9.eE+-]+", limit):
            raise UnitError("a bare number")
        seconds = parse_duration(limit)
    except UnitError:
        why = f"give the limit as a time with its unit, e.g. 5ms or 500us (got {limit!r})"
        raise ScenarioError("--target", [("--target", why)]) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ScenarioError("--target", [("--target", f"the limit must be a positive time, e.g. 5ms (got {limit!r})")])
    op: Literal["read", "write"] = "read" if match["op"] == "read" else "write"
    return Target(group=match["group"] or "all", op=op, figure=figure, limit_ms=seconds * 1e3)


@dataclass(frozen=True)
class Verdict:
    """How a run fares against a target: ``status`` is ``meets``, ``misses`` or ``unknown``; ``text`` says why in words.

    ``value_ms`` is the run's figure (NaN when the run has no I/O there); ``lower_bound`` marks it as "at least".
    """

    target: Target
    status: Literal["meets", "misses", "unknown"]
    value_ms: float
    lower_bound: bool
    text: str


def judge(result: Result, target: Target) -> Verdict:
    """The verdict of ``result`` on ``target`` (see the module's docstring for when it is unknown)."""
    summary = result.summary
    rows = summary[(summary["group"] == target.group) & (summary["op"] == target.op)]
    if rows.empty:
        groups = ", ".join(dict.fromkeys(summary["group"]))
        raise ScenarioError("--target", [("--target", f"no group {target.group!r} in the scenario; groups: {groups} (in {target})")])
    row = rows.iloc[0]
    value = float(row[target.column])
    lower = target.column in str(row["lower_bounds"]).split()
    shown = f"{str(target).partition(' <=')[0]} is {'at least ' if lower else ''}{value:.3g} ms"
    limit = target.limit_ms
    if math.isnan(value):
        return Verdict(target, "unknown", value, lower, f"unknown: no {target.op} I/O of {target.group} in the measured window")
    over = value - limit
    by = f"{over:.3g} ms ({over / limit:.0%})"
    if lower and over > 0:
        return Verdict(target, "misses", value, lower, f"misses by at least {by}: {shown}, unfinished I/Os included")
    if not result.stable:
        why = "the run is unstable (no steady state): its latency grows with the run's length"
        return Verdict(target, "unknown", value, lower, f"unknown: {why}; {shown} so far")
    if lower:
        why = "unfinished I/Os could raise the figure past the limit"
        return Verdict(target, "unknown", value, lower, f"unknown: {shown}, under the limit, but {why}")
    if over > 0:
        return Verdict(target, "misses", value, lower, f"misses by {by}: {shown}")
    return Verdict(target, "meets", value, lower, f"meets it: {shown}, {-over:.3g} ms under the limit")
