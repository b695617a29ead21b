"""Scenario checks as data: the ``[[expect]]`` tables, the ``[check]`` table, and their validation.

An :class:`Expectation` is a metric of a :class:`Selection` of I/Os (a
variant, group, op, host and time window), or its ratio to another selection
(:class:`Denominator`), against a bound. :func:`check_problems` tells what is
wrong with a scenario's variants and expectations before anything runs;
:mod:`simcache.runs.checks` runs and judges them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from simcache.base.errors import ScenarioError, echo, listing
from simcache.base.metrics import RECORD_METRICS, TOTALS, VALIDITY, bound_value, metric_unit
from simcache.spec.fields import (
    BASE,
    MAX_NAME_CHARS,
    NAME_PATTERN,
    Count,
    Number,
    Seconds,
    Why,
    _Spec,
)

if TYPE_CHECKING:
    from simcache.spec.scenario import Scenario

__all__ = [
    "Bound",
    "CheckSpec",
    "Denominator",
    "Expectation",
    "Selection",
    "check_problems",
    "repeated_names",
]


class Selection(_Spec):
    """What a check measures: which variant's run, which I/Os, which time window."""

    variant: str = BASE
    """A name from the scenario's ``[variants]``, or ``base``: the scenario as written."""
    group: str = "all"
    op: Literal["read", "write", "any"] = "write"
    host: str | None = None
    """Only I/Os of VMs on this host (``"host0"``)."""
    window: Annotated[list[Seconds], Field(min_length=2, max_length=2)] | None = None
    """[start, end) of issue times (series: sample times); the measured window after warm-up when
    omitted."""
    stat: Literal["mean", "max", "min", "last"] = "mean"
    """How a ``series.*`` metric's samples in the window are reduced to one number."""

    @model_validator(mode="after")
    def _window_order(self) -> Selection:
        if self.window is not None and not self.window[0] < self.window[1]:
            raise ValueError(
                f"window start ({self.window[0]}s) must be before its end ({self.window[1]}s)"
            )
        return self


class Denominator(_Spec):
    """The other side of a ratio: fields given here replace the numerator's."""

    metric: str | None = None
    variant: str | None = None
    group: str | None = None
    op: Literal["read", "write", "any"] | None = None
    host: str | None = None
    window: Annotated[list[Seconds], Field(min_length=2, max_length=2)] | None = None
    stat: Literal["mean", "max", "min", "last"] | None = None


def _bound(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(
            'a bound is a number in the metric\'s unit or a quantity with a unit, e.g. 5, "5ms", '
            '"120MB/s"'
        )
    return value


Bound = Annotated[float | str, BeforeValidator(_bound)]
"""A number in the metric's unit, or a quantity with a unit ("5ms", "120MB/s", "1GiB")."""


class Expectation(Selection):
    """A check: a metric of a selection, or a ratio of two, against a bound.

    ``metric`` is one of :data:`RECORD_METRICS`, ``totals.<key>`` (a whole-run
    total, e.g. ``totals.array_write_mb_s``) or ``series.<column>`` (a sampled
    time series reduced by ``stat``). With ``over`` the checked value is
    metric / the same metric of the ``over`` selection. The check passes when
    the bound holds for every seed it is run with.
    """

    name: Annotated[
        str, Field(min_length=1, max_length=MAX_NAME_CHARS, pattern=r"^[A-Za-z0-9_.+-]+$")
    ]
    metric: str
    over: Denominator | None = None
    at_least: Bound | None = None
    at_most: Bound | None = None
    approx: Bound | None = None
    rel: (
        Annotated[
            Number,
            Field(gt=0, le=100),
            Why(high="a tolerance of 100 times the value bounds nothing"),
        ]
        | None
    ) = None
    """Relative tolerance of ``approx``."""
    given: Bound | None = None
    """The part of ``approx`` the check does not test, in its unit: a figure the scenario was set
    from (a drive's read time taken from the same source, where only a link's share of a read is
    checked). Reports then give the error against ``approx - given`` too, the part tested, as well
    as against the whole."""
    observation: str = ""
    """What the field saw, in words (shown in reports)."""
    field_figure: str = ""
    """The field's number, as reported ("about 70 ms")."""
    tolerance: str = ""
    """Why the bound is where it is."""
    known_gap: Annotated[str, Field(max_length=2000)] = ""
    """Set when the model does not reproduce this figure yet: why. The check is then reported as
    a known gap rather than a failure, with its error, and it fails if it starts to pass (remove
    the note then)."""
    fitted: Annotated[str, Field(max_length=2000)] = ""
    """Set when a parameter of the scenario was fitted to this figure: which one, and how. The
    check still runs and must hold (a fit that stops holding fails), but it predicts nothing:
    reports show it as a fit, apart from the checks that passed."""

    @model_validator(mode="after")
    def _one_bound(self) -> Expectation:
        if self.at_least is None and self.at_most is None and self.approx is None:
            raise ValueError("give a bound: at_least, at_most, or approx with rel")
        if (self.approx is None) != (self.rel is None):
            raise ValueError(
                "approx and rel go together: approx = 120, rel = 0.05 means within 5% of 120"
            )
        if self.approx is not None and (self.at_least is not None or self.at_most is not None):
            raise ValueError("use either approx/rel or at_least/at_most, not both")
        if self.given is not None and self.approx is None:
            raise ValueError(
                "given (the part of approx the check does not test) goes with approx: add approx "
                "and rel, or remove given"
            )
        if self.known_gap and self.fitted:
            raise ValueError(
                "a check is either fitted (a parameter was set from its figure) or a known gap "
                "(the model misses its figure), not both: remove one of fitted and known_gap"
            )
        return self

    def sides(self) -> list[tuple[Selection, str]]:
        """The numerator and, for a ratio, the denominator, each as (selection, metric).

        The denominator is the numerator's selection with the fields ``over`` gives replaced.
        """
        numerator = Selection(**self.model_dump(include=set(Selection.model_fields)))
        pair = [(numerator, self.metric)]
        if self.over is not None:
            update = self.over.model_dump(exclude={"metric"}, exclude_none=True)
            pair.append((numerator.model_copy(update=update), self.over.metric or self.metric))
        return pair


class CheckSpec(_Spec):
    """How ``simcache check`` runs the scenario's expectations."""

    seeds: Annotated[Count, Field(ge=1, le=1000), Why(high="a thousand runs of each check")] = 5
    """Seeds run.seed, run.seed + 1, ...: every check must hold for each of them."""
    observation: str = ""
    """The field observation the scenario reproduces (for reports), e.g. "2. Interconnect
    comparison"."""


def repeated_names(table: str, what: str, names: list[str]) -> list[tuple[str, str]]:
    """A problem for each item whose name an earlier item already has."""
    seen: set[str] = set()
    problems = []
    for i, name in enumerate(names):
        if name in seen:
            problems.append(
                (
                    f"{table}.{i}({name}).name",
                    f"{what} name {echo(name)} is used twice; names must be unique",
                )
            )
        seen.add(name)
    return problems


def check_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """Variants must apply cleanly; expectations must name things that exist."""
    problems: list[tuple[str, str]] = []
    runs: dict[str, Scenario] = {BASE: scenario}
    if BASE in scenario.variants:
        problems.append(
            (
                f"variants.{BASE}",
                f"{BASE!r} means the scenario as written; give the variant another name",
            )
        )
    for name in scenario.variants:
        if not re.fullmatch(NAME_PATTERN, name) or len(name) > MAX_NAME_CHARS:
            problems.append(
                (
                    f"variants.{echo(name)}",
                    f"a variant name is 1 to {MAX_NAME_CHARS} letters, digits, _ and -, e.g. "
                    f"[variants.ib-sdr] (got {echo(name)})",
                )
            )
            continue
        try:
            runs[name] = scenario.variant(name)
        except ScenarioError as exc:
            problems += [
                (f"variants.{name}.{path}" if path else f"variants.{name}", message)
                for path, message in exc.problems
            ]
    problems += repeated_names("expect", "check", [e.name for e in scenario.expect])
    for i, expectation in enumerate(scenario.expect):
        where = f"expect.{i}({expectation.name})"
        for prefix, (side, metric) in zip(("", "over."), expectation.sides(), strict=False):
            problems += _selection_problems(f"{where}.{prefix}", side, metric, runs)
        read: dict[str, float] = {}
        for bound in ("at_least", "at_most", "approx", "given"):
            value = getattr(expectation, bound)
            if value is None:
                continue
            try:
                read[bound] = bound_value(
                    expectation.metric, value, ratio=expectation.over is not None
                )
            except ValueError as exc:
                problems.append((f"{where}.{bound}", str(exc)))
        if "approx" in read and "given" in read:
            approx, given = read["approx"], read["given"]
            unit = (
                "the ratio's terms"
                if expectation.over is not None
                else metric_unit(expectation.metric) or "the metric's unit"
            )
            if not (0 < given / approx < 1 if approx else False):
                problems.append(
                    (
                        f"{where}.given",
                        f"{given:g} is not a part of approx {approx:g} (both in {unit}): give "
                        "the share of the figure the check does not test, of approx's sign, "
                        "not 0 and smaller than approx",
                    )
                )
    return problems


def _selection_problems(
    where: str, side: Selection, metric: str, runs: Mapping[str, Scenario]
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    source, _, key = metric.partition(".")
    known = (
        metric in RECORD_METRICS
        or (source == "totals" and key in TOTALS)
        or (source == "validity" and key in VALIDITY)
    )
    if not (known or (source == "series" and key)):
        problems.append(
            (
                f"{where}metric",
                f"unknown metric {echo(metric)}; use one of {', '.join(RECORD_METRICS)}, "
                "totals.<name> "
                f"(names: {', '.join(TOTALS)}), validity.<name> ({', '.join(VALIDITY)}) or "
                "series.<column>",
            )
        )
    if side.variant not in runs:
        problems.append(
            (
                f"{where}variant",
                f"no variant {echo(side.variant)}; use base (the scenario as written) or one of: "
                f"{listing(runs)}",
            )
        )
        return problems
    run = runs[side.variant]
    groups = [g.name for g in run.groups]
    if side.group != "all" and side.group not in groups:
        problems.append(
            (f"{where}group", f"no group {echo(side.group)}; use all or one of {listing(groups)}")
        )
    hosts = [f"host{i}" for i in range(run.cluster.hosts)]
    if side.host is not None and side.host not in hosts:
        problems.append((f"{where}host", f"no host {echo(side.host)}; hosts are {listing(hosts)}"))
    if side.window is not None and side.window[1] > run.run.duration:
        problems.append(
            (
                f"{where}window",
                f"ends at {side.window[1]}s, after the run ({run.run.duration}s); shorten it or "
                "lengthen run.duration",
            )
        )
    return problems
