"""Scenario checks: run a scenario's ``[[expect]]`` tables and judge them.

A check is data in the scenario file: a metric of a selection of I/Os (a
variant, group, op, host, time window), or a ratio of two selections, against
a bound. :func:`iter_checks` runs every variant a scenario's checks need once
per seed and yields one :class:`CheckOutcome` per check as soon as the runs it
needs are done, so an interrupted check run keeps what it finished.

A check passes only when its bound holds for every seed: a tolerance must
cover the spread between seeds, not one lucky draw. Ratios are taken seed by
seed (numerator and denominator share the seed, so common random numbers
cancel part of the noise).

What a side of a check measures in a run is :func:`simcache.runs.measure.measure`; the Markdown
report of judged checks is :mod:`simcache.runs.validation_report`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, wait
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from simcache.base.errors import ScenarioError, plural
from simcache.base.metrics import RECORD_METRICS, bound_value, ci95_half_width, metric_unit
from simcache.base.units import format_size
from simcache.results.result import Result
from simcache.runs.measure import measure
from simcache.runs.simulate import simulate
from simcache.runs.workers import stop_pool
from simcache.sim.control import Cancel, Limits, Stopped
from simcache.spec import Expectation, Scenario, Selection, load_scenario

__all__ = [
    "CheckOutcome",
    "CheckPlan",
    "iter_checks",
    "prepare",
    "run_checks",
    "scenario_files",
]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class CheckOutcome:
    """One check of one scenario, judged over several seeds."""

    source: str
    """The scenario file (or name)."""
    scenario: str
    observation: str
    """The field observation the scenario reproduces (its ``[check] observation``)."""
    name: str
    description: str
    field_figure: str
    tolerance: str
    metric: str
    selection: str
    """The selection in words: variant, group, op, host, window (and the ratio's other side)."""
    expected: str
    unit: str
    low: float
    high: float
    """The bound as a closed interval in the metric's unit (infinite on an open side)."""
    seeds: tuple[int, ...]
    values: tuple[float, ...]
    target: float | None = None
    """The figure an ``approx`` check expects (a measurement it reproduces), in the metric's
    unit; else ``None``."""
    given: float | None = None
    """The part of :attr:`target` the check does not test (the expectation's ``given``), in the
    metric's unit; else ``None``."""
    scenario_description: str = ""
    """The scenario's one-line ``description``: what it shows (the validation report says it once
    per file)."""
    known_gap: str = ""
    """Why the model does not reproduce this figure yet (the expectation's ``known_gap``); empty
    for a check expected to pass."""
    fitted: str = ""
    """Which parameter was fitted to this figure, and how (the expectation's ``fitted``); empty
    for a check whose figure the scenario was not set from. A fit that holds is no independent
    pass: :attr:`independent` leaves it out."""
    warnings: tuple[str, ...] = ()
    """The validity warnings of the runs this check used (:attr:`simcache.Result.warnings`,
    few-samples notes left out), each once, as ``"warning (variant <name>): <message>"``
    (``note`` for a short-run one): the first seed's message for each (variant, kind, component)."""

    @property
    def passed(self) -> bool:
        """The bound holds for every seed."""
        return all(self._holds(v) for v in self.values)

    @property
    def ok(self) -> bool:
        """As expected: the check passes, or it is a known gap and still misses (a gap that
        passes is not ok: its ``known_gap`` note must go)."""
        return self.passed != bool(self.known_gap)

    @property
    def independent(self) -> bool:
        """Passes, and its figure was not used to set the scenario (not ``fitted``): a pass that
        counts as the model's."""
        return self.passed and not self.fitted

    @property
    def verdict(self) -> str:
        if self.known_gap:
            return "FAIL: passes now, remove known_gap" if self.passed else "known gap"
        if self.fitted:
            return "fit" if self.passed else "FAIL (fitted)"
        return "pass" if self.passed else "FAIL"

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def ci95(self) -> float:
        """Half-width of the 95% confidence interval of the mean over seeds (Student t)."""
        if not all(math.isfinite(v) for v in self.values):
            return math.nan
        return ci95_half_width(self.values)

    @property
    def failing_seeds(self) -> list[int]:
        return [
            seed
            for seed, value in zip(self.seeds, self.values, strict=True)
            if not self._holds(value)
        ]

    @property
    def simulated(self) -> str:
        """Mean and range over the seeds, in the metric's unit."""
        values = self.values
        if len(values) == 1:
            return _quantity(values[0], self.unit)
        return (
            f"{_quantity(self.mean, self.unit)} "
            f"({_number(min(values), self.unit)}..{_number(max(values), self.unit)}, {len(values)} "
            "seeds)"
        )

    @property
    def error(self) -> float | None:
        """(simulated mean - expected) / expected for an ``approx`` check: how far the model is
        from the measurement."""
        if (
            self.target is None
            or self.target == 0
            or not all(math.isfinite(v) for v in self.values)
        ):
            return None
        return (self.mean - self.target) / abs(self.target)

    @property
    def part_error(self) -> float | None:
        """(simulated mean - expected) / (expected - given) for an ``approx`` check with a
        ``given`` part: how far the model is from the part of the measurement the check tests."""
        error = self.error
        if error is None or self.given is None or self.target == self.given:
            return None
        assert self.target is not None  # error is not None
        return (self.mean - self.target) / abs(self.target - self.given)

    @property
    def error_words(self) -> str:
        """The error for a reader: ``"-1.5%"``, with a ``given`` part ``"-1.5%; -11.7% of the
        0.0117 ms tested"``; empty without an ``approx`` figure."""
        error = self.error
        if error is None:
            return ""
        part = self.part_error
        if part is None:
            return f"{error:+.1%}"
        assert self.target is not None and self.given is not None  # part_error is not None
        tested = _quantity(abs(self.target - self.given), self.unit)
        return f"{error:+.1%}; {part:+.1%} of the {tested} tested"

    def _holds(self, value: float) -> bool:
        return math.isfinite(value) and self.low <= value <= self.high

    def line(self) -> str:
        """One readable line: verdict, where, what was expected, what was simulated."""
        verdict = self.verdict
        text = (
            f"{verdict}  {self.scenario}:{self.name}  {self.selection}: expected {self.expected}, "
            f"simulated {self.simulated}"
        )
        if self.error is not None:
            text += f" ({self.error_words})"
        if self.known_gap and not self.passed:
            text += f"  [known gap: {self.known_gap}]"
        elif not self.passed:
            seeds = self.failing_seeds
            if seeds:
                text += f"; fails for {plural(len(seeds), 'seed')} {', '.join(map(str, seeds))}"
            if self.description:
                text += f"  [{self.description}]"
        return text


def scenario_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files to check: each path as given, folders expanded to their ``*.toml`` files (sorted)."""
    files: list[Path] = []
    for item in paths:
        path = Path(item)
        files += sorted(path.glob("*.toml")) if path.is_dir() else [path]
    return files


def run_checks(
    source: str | Path | Scenario,
    *,
    seeds: int | Sequence[int] | None = None,
    duration: float | None = None,
    progress: Progress | None = None,
) -> list[CheckOutcome]:
    """All of a scenario's checks, judged over its seeds (see :func:`iter_checks`)."""
    return list(iter_checks(source, seeds=seeds, duration=duration, progress=progress))


def iter_checks(
    source: str | Path | Scenario,
    *,
    seeds: int | Sequence[int] | None = None,
    duration: float | None = None,
    progress: Progress | None = None,
) -> Iterator[CheckOutcome]:
    """Run the variants the scenario's checks need and yield each check as soon as it can be judged.

    ``seeds``: a count (seeds run.seed, run.seed + 1, ...) or explicit seeds;
    the scenario's ``[check] seeds`` by default. ``duration`` replaces every
    variant's run.duration (the windows of the checks must still fit).
    """
    yield from prepare(source, duration=duration).outcomes(seeds=seeds, progress=progress)


@dataclass(frozen=True)
class CheckPlan:
    """A scenario's checks made ready to run: validated, with the run of each variant they
    select."""

    label: str
    """How errors and outcomes name the scenario: the path (or name) given, else the scenario's
    name."""
    scenario: Scenario
    runs: dict[str, Scenario]
    """The run of each variant the checks select, by variant name (``base``: the scenario as
    written)."""

    def outcomes(
        self,
        *,
        seeds: int | Sequence[int] | None = None,
        progress: Progress | None = None,
        cancel: Cancel | None = None,
        limits: Limits | None = None,
        executor: Executor | None = None,
    ) -> Iterator[CheckOutcome]:
        """Run each variant once per seed and yield each check as soon as the runs it needs are done
        (see :func:`iter_checks`).

        Once ``cancel`` is set, raises :class:`~simcache.sim.control.Stopped` (with the stopped
        run's partial result, which no check is judged on); the checks yielded before stay valid.
        ``limits`` go to :func:`simulate`.

        ``executor`` (a process pool, or a Dask client's ``get_executor()``) runs a variant's seeds
        in parallel: each run is the same function of its scenario and seed, so the outcomes are
        those of the serial loop, value for value. A stop then comes between variants (the runs
        under way finish; their results are not judged).
        """
        scenario, label = self.scenario, self.label
        if seeds is None:
            seeds = scenario.check.seeds
        seed_list = (
            [scenario.run.seed + k for k in range(seeds)] if isinstance(seeds, int) else list(seeds)
        )
        sides = [expectation.sides() for expectation in scenario.expect]
        measured: dict[tuple[int, int, int], float] = {}  # (check, side, seed index) -> value
        # variant -> (kind, component) -> "warning: ..." or "note: ..."
        notes: dict[str, dict[tuple[str, str], str]] = {}
        done: set[str] = set()
        for index, expectation in enumerate(scenario.expect):
            for variant in dict.fromkeys(side.variant for side, _ in sides[index]):
                if variant in done:
                    continue
                wanted = [
                    (j, s, side, metric)
                    for j, pair in enumerate(sides)
                    for s, (side, metric) in enumerate(pair)
                    if side.variant == variant
                ]
                replicate = _Replicate(
                    self.runs[variant], label, tuple(scenario.expect), tuple(wanted), limits
                )
                wheres = [f"{label}: variant {variant}, seed {seed}" for seed in seed_list]
                if executor is not None and len(seed_list) > 1:
                    if progress is not None:
                        for where in wheres:
                            progress(where)
                    replicas = _in_parallel(executor, replicate, seed_list, cancel, wheres)
                else:
                    replicas = []
                    for seed, where in zip(seed_list, wheres, strict=True):
                        if cancel is not None and cancel.cancelled:
                            raise Stopped(cancel.reason, where=where)
                        if progress is not None:
                            progress(where)
                        result = simulate(
                            self.runs[variant], seed=seed, cancel=cancel, limits=limits
                        )
                        if result.meta["stopped_at_s"] is not None:
                            raise Stopped(result.meta["stop_reason"], result, where)
                        replicas.append(replicate.judge(result))
                for k, (said, values) in enumerate(replicas):
                    for key, text in said:
                        notes.setdefault(variant, {}).setdefault(key, text)
                    for (j, s), value in values.items():
                        measured[(j, s, k)] = value
                done.add(variant)
            variants = dict.fromkeys(side.variant for side, _ in sides[index])
            warnings = tuple(
                f"{said.partition(':')[0]} (variant {v}):{said.partition(':')[2]}"
                for v in variants
                for said in notes.get(v, {}).values()
            )
            yield replace(
                _outcome(label, scenario, index, expectation, sides[index], measured, seed_list),
                warnings=warnings,
            )


def _in_parallel(
    executor: Executor,
    replicate: _Replicate,
    seeds: list[int],
    cancel: Cancel | None,
    wheres: list[str],
) -> list[Replica]:
    """``replicate`` of each seed on ``executor``, in seed order; once ``cancel`` is set, the
    pool is stopped (its running runs end with their processes:
    :func:`simcache.runs.workers.stop_pool`) and :class:`Stopped` raised."""
    futures = [executor.submit(replicate, seed) for seed in seeds]
    pending = set(futures)
    while pending:
        if cancel is not None and cancel.cancelled:
            # before the stop
            where = next(
                (where for where, f in zip(wheres, futures, strict=True) if not f.done()),
                wheres[-1],
            )
            stop_pool(executor)
            raise Stopped(cancel.reason, where=where)
        _, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
    return [future.result() for future in futures]


Replica = tuple[list[tuple[tuple[str, str], str]], dict[tuple[int, int], float]]
"""What one run of a variant gives its checks: its warnings ((kind, component), text), and each
(check, side)'s value."""


@dataclass(frozen=True)
class _Replicate:
    """One variant's run for one seed, judged for the checks that select it (picklable: a pool
    worker runs it)."""

    run: Scenario
    label: str
    expect: tuple[Expectation, ...]
    wanted: tuple[tuple[int, int, Selection, str], ...]
    limits: Limits | None

    def __call__(self, seed: int) -> Replica:
        return self.judge(simulate(self.run, seed=seed, limits=self.limits))

    def judge(self, result: Result) -> Replica:
        said = [
            (
                (warning.kind, warning.component),
                f"{'warning' if warning.severity == 'unstable' else 'note'}: {warning.message}",
            )
            for warning in result.warnings
            # true of nearly every short check run; the checks' tolerances speak to it
            if warning.kind != "few_samples"
        ]
        values = {
            (j, s): _measure_checked(result, side, metric, self.label, j, self.expect[j])
            for j, s, side, metric in self.wanted
        }
        return said, values


def prepare(source: str | Path | Scenario, *, duration: float | None = None) -> CheckPlan:
    """Load a scenario once, validate its checks for this run and return them ready to run.

    Raises :class:`ScenarioError` (naming the check) before anything is
    simulated: a bad variant, or a window that ends after its run (with
    ``duration`` replacing every run's duration). A scenario file's checks were
    validated when it loaded and are not validated again.
    """
    scenario = load_scenario(source)
    label = scenario.name if isinstance(source, Scenario) else str(source)
    scenario.validate_checks(label)
    sides = [expectation.sides() for expectation in scenario.expect]
    runs = {
        name: _run_for(scenario, name, duration, label)
        for name in dict.fromkeys(side.variant for pair in sides for side, _ in pair)
    }
    for i, (expectation, pair) in enumerate(zip(scenario.expect, sides, strict=True)):
        for side, _ in pair:
            end = runs[side.variant].run.duration
            if side.window is not None and side.window[1] > end:
                fix = (
                    f"--duration {duration:g}s is too short"
                    if duration is not None
                    else "lengthen its run.duration"
                )
                raise ScenarioError(
                    label,
                    [
                        (
                            f"expect.{i}({expectation.name}).window",
                            f"ends at {side.window[1]:g}s, after the run ({end:g}s); {fix}",
                        )
                    ],
                )
    return CheckPlan(label, scenario, runs)


def _run_for(scenario: Scenario, variant: str, duration: float | None, label: str) -> Scenario:
    run = scenario.variant(variant).model_copy(update={"variants": {}, "expect": []})
    if duration is None:
        return run
    try:
        return run.with_duration(duration)
    except ScenarioError as exc:
        raise ScenarioError(
            label, [("--duration", message) for _, message in exc.problems]
        ) from None


def _measure_checked(
    result: Result, side: Selection, metric: str, label: str, index: int, expectation: Expectation
) -> float:
    try:
        return measure(result, side, metric)
    except KeyError as exc:
        columns = ", ".join(c for c in result.series.columns)
        raise ScenarioError(
            label,
            [
                (
                    f"expect.{index}({expectation.name}).metric",
                    f"no series column {exc.args[0]!r}; columns: {columns}",
                )
            ],
        ) from None


def _outcome(
    label: str,
    scenario: Scenario,
    index: int,
    expectation: Expectation,
    sides: list[tuple[Selection, str]],
    measured: dict[tuple[int, int, int], float],
    seeds: list[int],
) -> CheckOutcome:
    ratio = expectation.over is not None
    values = []
    for k in range(len(seeds)):
        value = measured[(index, 0, k)]
        if ratio:
            denominator = measured[(index, 1, k)]
            value = value / denominator if denominator else math.nan
        values.append(value)
    low, high = _bounds(expectation, ratio)
    unit = "" if ratio else metric_unit(expectation.metric)
    return CheckOutcome(
        source=label,
        scenario=scenario.name,
        scenario_description=scenario.description,
        observation=scenario.check.observation,
        name=expectation.name,
        description=expectation.observation,
        field_figure=expectation.field_figure,
        tolerance=expectation.tolerance,
        metric=expectation.metric,
        selection=_describe(sides),
        expected=_expected_text(expectation, low, high, unit),
        unit=unit,
        low=low,
        high=high,
        seeds=tuple(seeds),
        values=tuple(values),
        target=(low + high) / 2 if expectation.approx is not None else None,
        given=(
            None
            if expectation.given is None
            else bound_value(expectation.metric, expectation.given, ratio=ratio)
        ),
        known_gap=expectation.known_gap,
        fitted=expectation.fitted,
    )


def _bounds(expectation: Expectation, ratio: bool) -> tuple[float, float]:
    metric = expectation.metric
    if expectation.approx is not None:
        centre = bound_value(metric, expectation.approx, ratio=ratio)
        spread = abs(centre) * (expectation.rel or 0.0)
        return centre - spread, centre + spread
    low = (
        -math.inf
        if expectation.at_least is None
        else bound_value(metric, expectation.at_least, ratio=ratio)
    )
    high = (
        math.inf
        if expectation.at_most is None
        else bound_value(metric, expectation.at_most, ratio=ratio)
    )
    return low, high


def _expected_text(expectation: Expectation, low: float, high: float, unit: str) -> str:
    if expectation.approx is not None:
        return f"{_quantity((low + high) / 2, unit)} +/- {(expectation.rel or 0.0) * 100:.3g}%"
    if math.isinf(low):
        return f"<= {_quantity(high, unit)}"
    if math.isinf(high):
        return f">= {_quantity(low, unit)}"
    return f"{_number(low, unit)}..{_quantity(high, unit)}"


def _describe(sides: list[tuple[Selection, str]]) -> str:
    parts = []
    for side, metric in sides:
        where = [side.variant]
        if side.group != "all":
            where.append(f"group {side.group}")
        if side.op != "any" and metric in RECORD_METRICS:
            where.append(side.op + "s")
        if side.host is not None:
            where.append(side.host)
        if side.window is not None:
            where.append(f"{side.window[0]:g}-{side.window[1]:g}s")
        if metric.startswith("series.") and metric not in RECORD_METRICS:
            where.append(side.stat)
        parts.append(f"{metric} [{', '.join(where)}]")
    return " / ".join(parts)


def _number(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    if unit == "bytes":
        return format_size(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _quantity(value: float, unit: str) -> str:
    text = _number(value, unit)
    return f"{text} {unit}" if unit and unit != "bytes" and text != "n/a" else text
