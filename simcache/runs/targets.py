"""Targets ("write p99 <= 5ms", "write iops >= 4000") and a verdict against each: meets, misses by
how much, or unknown.

A latency target is ``[GROUP] OP FIGURE <= LIMIT``: ``OP`` is ``read`` or ``write``, ``FIGURE`` one
of the summary's latency figures (``p50``, ``p95``, ``p99``, ``p99.9``, ``mean``, ``max``),
``LIMIT`` a time with its unit (``5ms``, ``500us``, ``0.2 s``) and ``GROUP`` a VM group of the
scenario (default ``all``, every group). A throughput target is ``[GROUP] OP iops >= FLOOR`` or
``[GROUP] OP MB/s >= FLOOR`` (a plain number; MB are 10^6 bytes).

One run (:func:`judge`) or a point of several seeds (:func:`judge_seeds`, the same rules over the
seeds' mean) is *unknown* when its figure cannot decide:

- the run is unstable (no steady state, so its latency grows with the run's length), or was stopped
  early;
- the figure is a percentile with fewer I/Os behind it than
  :func:`simcache.results.validity.samples_needed` asks (10 beyond it: 1,000 for p99), so it is the
  worst few I/Os, not a figure;
- the figure is a lower bound (unfinished I/Os) at or under the limit (a lower bound already past
  the limit is a miss);
- over several seeds, the 95% interval of the mean straddles the limit (more seeds would tell);
- the figure meets the limit, but the run ended before a destage buffer filled, its warm-up was
  shorter than its slowest time constant, a part was at capacity under an open load, it had too
  few samples to test its stability, or a flash tier's clean pool was still draining (``filling``,
  ``fill_time``, ``short_warmup``, ``at_capacity``, ``untested``, ``gc_ahead``:
  :data:`_CAVEATS`): its figures may be better than the steady state's, so a pass is not yet one
  (a miss stands).

The interval of ``n`` seeds is the mean ± t(0.975, n - 1) s / sqrt(n) (Student t, s the seeds'
standard deviation; :func:`simcache.base.metrics.ci95_half_width`); below :data:`STABLE_SEEDS` seeds
the verdict says the interval is not stable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from simcache.base.errors import ScenarioError
from simcache.base.metrics import PERCENTILES, ci95_half_width
from simcache.base.units import UnitError, parse_duration
from simcache.results.result import Result
from simcache.results.validity import PINNED, ValidityWarning, samples_needed
from simcache.runs.sweep_points import row_words
from simcache.sim.control import stopped_at

__all__ = [
    "STABLE_SEEDS",
    "Evidence",
    "Target",
    "Verdict",
    "caveat_kinds",
    "check_groups",
    "evidence",
    "evidence_of_row",
    "interval_words",
    "judge",
    "judge_seeds",
    "parse_target",
    "plus_minus",
]

FIGURES: dict[str, str] = {f"p{q:g}": name for name, q in PERCENTILES.items()} | {
    "p999": "p999_ms",
    "mean": "mean_ms",
    "max": "max_ms",
}
"""A latency target's figure as written (``p99.9``) -> the summary column it reads (``p999_ms``)."""
THROUGHPUT: dict[str, str] = {"iops": "iops", "MB/s": "mb_s"}
"""A throughput target's figure as written -> the summary column it reads."""
STABLE_SEEDS = 3
"""Fewest seeds for an interval worth reading: with 2, t(0.975, 1) = 12.7 times a standard
deviation that rests on one difference, so the interval's width is itself a guess (with 3, t =
4.30 on two degrees of freedom)."""
_GRAMMAR = re.compile(
    r"^\s*(?:(?P<group>[\w.-]+)\s+)??(?P<op>read|write)\s+(?P<figure>\S+)\s*"
    r"(?P<rel><=|>=)\s*(?P<limit>.+?)\s*$"
)
_EXAMPLE = (
    'write a target as "[GROUP] read|write FIGURE <= LIMIT", e.g. "write p99 <= 5ms" or "db read '
    'p99.9 <= 20ms", '
    'or a throughput floor as "[GROUP] read|write iops|MB/s >= FLOOR", e.g. "write iops >= 4000"'
)


def _bad(why: str) -> ScenarioError:
    return ScenarioError("--target", [("--target", why)])


@dataclass(frozen=True)
class Target:
    """A latency figure of one group and op that must stay at or under ``limit`` (ms), or a
    throughput figure (``iops``, ``MB/s``) that must reach ``limit``."""

    group: str
    op: Literal["read", "write"]
    figure: str
    """As written: ``p99``, ``p99.9``, ``mean``, ``max``, ``iops``, ``MB/s``."""
    limit: float
    """ms for a latency figure; I/Os per second or MB/s for a throughput one."""

    @property
    def throughput(self) -> bool:
        """A floor on IOPS or MB/s (the figure must reach the limit), not a latency ceiling."""
        return self.figure in THROUGHPUT

    @property
    def column(self) -> str:
        """The summary column the target reads (``p99_ms``, ``iops``)."""
        return THROUGHPUT[self.figure] if self.throughput else FIGURES[self.figure]

    @property
    def metric(self) -> str:
        """The sweep row column the target reads (``all.write.p99_ms``, see
        :func:`simcache.runs.sweep.result_row`)."""
        return f"{self.group}.{self.op}.{self.column}"

    @property
    def unit(self) -> str:
        return "IOPS" if self.figure == "iops" else "MB/s" if self.throughput else "ms"

    def amount(self, value: float) -> str:
        """``value`` in the target's unit: ``"4.2 ms"``, ``"4,000 IOPS"``."""
        return f"{value:,.0f} IOPS" if self.figure == "iops" else f"{value:.3g} {self.unit}"

    def __str__(self) -> str:
        where = "" if self.group == "all" else f"{self.group} "
        if self.throughput:
            return f"{where}{self.op} {self.figure} >= {self.limit:g}"
        return f"{where}{self.op} {self.figure} <= {self.limit:g} ms"


def parse_target(text: str) -> Target:
    """``"write p99 <= 5ms"`` or ``"write iops >= 4000"`` -> :class:`Target`; a
    :class:`~simcache.base.errors.ScenarioError` says how to write it otherwise."""
    match = _GRAMMAR.match(text)
    if match is None:
        raise _bad(f"{_EXAMPLE} (got {text!r})")
    figure, limit, op = match["figure"], match["limit"], match["op"]
    group = match["group"] or "all"
    read_or_write: Literal["read", "write"] = "read" if op == "read" else "write"
    if figure.lower() in ("iops", "mb/s"):
        figure = "iops" if figure.lower() == "iops" else "MB/s"
        if match["rel"] != ">=":
            raise _bad(
                f"a throughput target is a floor: {op} {figure} >= FLOOR (got {text!r}); {_EXAMPLE}"
            )
        try:
            floor = float(limit.replace(",", "").replace("_", ""))
        except ValueError:
            raise _bad(
                f"give the floor as a plain number of {figure}, e.g. 4000 (got {limit!r})"
            ) from None
        if not math.isfinite(floor) or floor <= 0:
            raise _bad(f"the floor must be a positive number, e.g. 4000 (got {limit!r})")
        return Target(group=group, op=read_or_write, figure=figure, limit=floor)
    if figure not in FIGURES:
        raise _bad(
            f"no latency figure {figure!r}; use one of {', '.join(FIGURES)}, or iops or MB/s (got "
            f"{text!r})"
        )
    if match["rel"] != "<=":
        raise _bad(
            f"a latency target is a ceiling: {op} {figure} <= LIMIT (got {text!r}); {_EXAMPLE}"
        )
    try:
        if re.fullmatch(r"[0-9.eE+-]+", limit):
            raise UnitError("a bare number")
        seconds = parse_duration(limit)
    except UnitError:
        raise _bad(
            f"give the limit as a time with its unit, e.g. 5ms or 500us (got {limit!r})"
        ) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise _bad(f"the limit must be a positive time, e.g. 5ms (got {limit!r})")
    return Target(group=group, op=read_or_write, figure=figure, limit=seconds * 1e3)


def check_groups(targets: Iterable[Target], groups: Iterable[str]) -> None:
    """Raise the :class:`~simcache.base.errors.ScenarioError` that names the groups when a target
    names none of them."""
    known = {"all", *groups}
    for target in targets:
        if target.group not in known:
            raise _bad(
                f"no group {target.group!r} in the scenario; groups: {', '.join(sorted(known))} "
                f"(in {target})"
            )


@dataclass(frozen=True)
class Evidence:
    """What one run says about a target: its figure, whether that is a lower bound, and why it may
    not decide.

    ``doubts`` make any verdict but a lower-bound miss unknown; ``caveats`` make a pass unknown (see
    the module).
    """

    value: float
    lower_bound: bool = False
    doubts: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()
    samples: float = math.inf
    """I/Os of the target's group and op in the window (finished or not): a percentile needs
    enough of them."""


@dataclass(frozen=True)
class Verdict:
    """How a run (or a point's seeds) fares against a target: ``status`` is ``meets``, ``misses`` or
    ``unknown``; ``text`` says why in words.

    ``value`` is the figure (the seeds' mean; NaN when there is no I/O there), ``ci95`` its
    interval's half-width (NaN for one seed); ``lower_bound`` marks it as "at least"; ``seeds``
    counts the runs behind it.
    """

    target: Target
    status: Literal["meets", "misses", "unknown"]
    value: float
    lower_bound: bool
    text: str
    ci95: float = math.nan
    seeds: int = 1
    notes: tuple[str, ...] = field(default=())

    @property
    def passes(self) -> bool:
        return self.status == "meets"

    @property
    def short(self) -> str:
        """``"meets"``, ``"misses by 2.1 ms"`` or ``"unknown"``: the verdict for a table cell
        (``text`` says why)."""
        if self.status != "misses":
            return self.status
        over = (
            (self.target.limit - self.value)
            if self.target.throughput
            else (self.value - self.target.limit)
        )
        return f"misses by {'at least ' if self.lower_bound else ''}{self.target.amount(over)}"


def _few(target: Target, seeds: Sequence[Evidence]) -> tuple[str, ...]:
    """Why the figure is too thin to read, when a seed has fewer I/Os than its percentile needs
    (the fewest named)."""
    if target.column not in PERCENTILES:
        return ()
    needed = samples_needed(PERCENTILES[target.column])
    count = min(e.samples for e in seeds)
    if count >= needed:
        return ()
    return (
        f"only {count:,.0f} {target.op}s behind {target.figure}, which needs {needed:,} (10 beyond "
        "it); run longer",
    )


_UNSTABLE = "the run is unstable (no steady state): its latency grows with the run's length"
_CAVEATS = {
    "filling": (
        "the destage buffer was still filling at the end: once full, writes wait for destage"
    ),
    "fill_time": (
        "the run ended before a destage buffer could fill: once full, writes wait for destage"
    ),
    "short_warmup": (
        "the warm-up is shorter than the slowest time constant: the figures may not be the steady "
        "state's"
    ),
    "at_capacity": (
        f"a part was busy {PINNED:.0%} or more of the window under an open load: a run this "
        "short cannot tell its queue from one that grows, so the steady state may be worse"
    ),
    "untested": (
        "the run had too few samples after its warm-up to test its queues and backlogs for "
        "growth: a steady state is not shown"
    ),
    "gc_ahead": (
        "a flash tier's clean pool was still draining at the end: once it runs out, its writes go "
        "no faster than garbage collection frees room"
    ),
}


def _caveats(kinds: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_CAVEATS[kind] for kind in kinds if kind in _CAVEATS))


def caveat_kinds(warnings: Iterable[ValidityWarning]) -> list[str]:
    """The kinds of ``warnings`` that may make a pass unknown: a warm-up shorter than a duty
    cycle's period is left out (a periodic load has no start-up transient that flatters the
    figures: its window holds a share of on and off time, which the fill-time rules judge where it
    fills a buffer; review 65: every target of the default scenario, 10.7 ms against 100 ms,
    read "unknown" for its build group's 10 s cycle, while `check` passed the same targets).
    A warm-up cut by a shorter run (``warmup_cut``) is left out too: it says what was run, and
    whether the warm-up is long enough is ``short_warmup``'s to say."""
    return [
        w.kind
        for w in warnings
        if w.kind != "warmup_cut"
        and not (w.kind == "short_warmup" and w.component.startswith("duty_cycle."))
    ]


def evidence(result: Result, target: Target) -> Evidence:
    """What ``result`` says about ``target`` (raises a
    :class:`~simcache.base.errors.ScenarioError` for an unknown group)."""
    summary = result.summary
    rows = summary[(summary["group"] == target.group) & (summary["op"] == target.op)]
    if rows.empty:
        check_groups([target], summary["group"])
    row = rows.iloc[0]
    doubts: list[str] = []
    if not result.stable:
        doubts.append(_UNSTABLE)
    at = stopped_at(result)
    if at is not None:
        doubts.append(f"the run was stopped at {at:.2f} s of {result.meta['planned_s']:g} s")
    lower = target.column in str(row["lower_bounds"]).split()
    caveats = _caveats(caveat_kinds(result.warnings))
    return Evidence(
        float(row[target.column]),
        lower,
        tuple(doubts),
        caveats,
        float(row["count"] + row["unfinished"]),
    )


def evidence_of_row(row: Mapping[Any, Any], target: Target) -> Evidence:
    """What one sweep row (:func:`simcache.runs.sweep.result_row`) says about ``target``."""
    value = float(row.get(target.metric, math.nan))
    doubts: list[str] = []
    stable = row.get("stable")
    if stable is None or (isinstance(stable, float) and math.isnan(stable)):
        doubts.append("the run's validity was not recorded (a sweep store from an older simcache)")
    elif isinstance(row.get("not_run"), str):  # past the run limits: not simulated
        doubts.append(f"the point was not simulated: {row['not_run']}")
    elif not stable:
        doubts.append(_UNSTABLE)
    # finished I/Os only: a little cautious
    count = float(row.get(f"{target.group}.{target.op}.count", math.nan))
    lower = target.column in row_words(row.get(f"{target.group}.{target.op}.lower_bounds"))
    # the kinds that may make a pass unknown (caveat_kinds), where the row has them
    caveats = _caveats(row_words(row.get("caveats", row.get("validity"))))
    return Evidence(value, lower, tuple(doubts), caveats, count if math.isfinite(count) else 0.0)


def judge(result: Result, target: Target) -> Verdict:
    """The verdict of ``result`` on ``target`` (see the module's docstring for when it is
    unknown)."""
    return judge_seeds(target, [evidence(result, target)])


def interval_words(values: Sequence[float], unit: str = "") -> str:
    """``"4.21 ± 0.35 ms (95% interval, 5 seeds)"``; with one seed or too few for a stable
    interval, that too."""
    clean = [v for v in values if math.isfinite(v)]
    n = len(clean)
    if not n:
        return "no value"
    mean = sum(clean) / n
    suffix = f" {unit}" if unit else ""
    if n == 1:
        return f"{mean:.3g}{suffix} (one seed: no interval)"
    half = ci95_half_width(clean)
    note = "" if n >= STABLE_SEEDS else f"; {n} seeds are too few for a stable interval"
    return f"{mean:.3g} ± {half:.2g}{suffix} (95% interval, {n} seeds{note})"


def judge_seeds(target: Target, seeds: Sequence[Evidence]) -> Verdict:
    """The verdict of one configuration run with several seeds: the rules of one run applied to
    the seeds' mean, and unknown when the mean's 95% interval straddles the limit."""
    if not seeds:
        raise ValueError("judge_seeds needs the evidence of at least one run")
    n = len(seeds)
    values = [e.value for e in seeds]
    lower = any(e.lower_bound for e in seeds)
    name = str(target).partition(" <=")[0].partition(" >=")[0]
    if any(math.isnan(v) for v in values):
        # a point not simulated says why (its doubts), not that it measured no I/O
        said = next(
            (d for e in seeds for d in e.doubts if d.startswith("the point was not simulated")),
            f"no {target.op} I/O of {target.group} in the measured window",
        )
        return Verdict(target, "unknown", math.nan, lower, f"unknown: {said}", seeds=n)
    mean = sum(values) / n
    half = ci95_half_width(values) if n > 1 else math.nan
    shown = f"{name} is {'at least ' if lower else ''}{_figure(target, mean, half, n)}"
    over = (target.limit - mean) if target.throughput else (mean - target.limit)
    by = f"{target.amount(over)} ({over / target.limit:.0%})"
    doubted = sum(bool(e.doubts) for e in seeds)
    doubts = list(dict.fromkeys(d for e in seeds for d in e.doubts))
    if doubted and n > 1:
        doubts = [f"in {doubted} of {n} seeds, {'; '.join(doubts)}"]
    doubts += _few(target, seeds)
    caveats = list(dict.fromkeys(c for e in seeds for c in e.caveats))

    def verdict(status: Literal["meets", "misses", "unknown"], text: str) -> Verdict:
        return Verdict(target, status, mean, lower, text, half, n, tuple(doubts + caveats))

    unsure = "" if n < 2 or n >= STABLE_SEEDS else f"; {n} seeds are too few for a stable interval"
    if lower and over - (half if n > 1 else 0.0) > 0:
        return verdict(
            "misses", f"misses by at least {by}: {shown}, unfinished I/Os included{unsure}"
        )
    if doubts:
        return verdict("unknown", f"unknown: {'; '.join(doubts)}; {shown} so far")
    if lower:
        why = "unfinished I/Os could raise the figure past the limit"
        return verdict("unknown", f"unknown: {shown}, under the limit, but {why}")
    if n > 1 and abs(over) <= half:
        side = "short of" if target.throughput and over > 0 else "over" if over > 0 else "under"
        within = f"{target.amount(abs(over))} {side} the limit, within its interval; run more seeds"
        return verdict("unknown", f"unknown: {shown}, {within}{unsure}")
    if over > 0:
        return verdict("misses", f"misses by {by}: {shown}{unsure}")
    if caveats:
        return verdict(
            "unknown",
            f"unknown: {shown}, {target.amount(-over)} inside the limit, but {'; '.join(caveats)}",
        )
    spare = "above the floor" if target.throughput else "under the limit"
    return verdict("meets", f"meets it: {shown}, {target.amount(-over)} {spare}{unsure}")


def plus_minus(
    mean: float, half: float, unit: str, *, signed: bool = False, places: int | None = None
) -> str:
    """``"4.21 ± 0.35 ms"``: the interval's half-width with as many decimals as the mean's 3
    significant digits (default), so a tiny half-width reads 0.00 rather than 3.2e-13."""
    if places is None:
        size = max(abs(mean), half if math.isfinite(half) else 0.0)
        places = max(0, 2 - math.floor(math.log10(size))) if size > 0 else 3
    sign = "+" if signed else ""
    mean = mean if round(mean, places) else 0.0  # no "-0.000"
    return f"{mean:{sign},.{places}f} ± {half:,.{places}f} {unit}"


def _figure(target: Target, mean: float, half: float, n: int) -> str:
    if n == 1:
        return target.amount(mean)
    if half == 0.0:
        # every seed gave the same value: a replayed trace draws nothing random, a tier with
        # fixed service times (the *-field profiles) gives every I/O the same time, or a streamed
        # run's histogram put them in one bin; a "± 0" interval would claim a certainty the seeds
        # cannot give (review 67a F11: the words named a replay for a run that was none)
        return (
            f"{target.amount(mean)} (all {n} seeds gave this value, so the seeds give no "
            "interval: the figure does not depend on the random draws here, e.g. a replayed "
            "trace, a fixed device service time, or close percentiles in one histogram bin (1%) "
            "of a run without records)"
        )
    pair = plus_minus(mean, half, target.unit, places=0 if target.figure == "iops" else None)
    return f"{pair} (mean of {n} seeds, 95% interval)"
