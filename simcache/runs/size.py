"""``simcache size``: the cheapest configuration that meets every target, found by estimate,
simulation and confidence.

The search, over the configurations of :func:`simcache.runs.sizing.space.candidate_scenarios`:

1. **Cost** every configuration (:mod:`simcache.runs.sizing.costs`); a missing price stops the
   search before anything runs.
2. **Estimate** every configuration (:func:`simcache.estimate.estimate`, milliseconds each) and
   **prune** those whose estimate misses a target by more than the stated margin
   (:data:`PRUNE_FACTORS`): a latency figure estimated above ``factor x limit``, a throughput figure
   estimated below ``floor x`` :data:`THROUGHPUT_FACTOR`. Each factor sits above the largest
   estimate/simulation ratio of that figure over the library's scenarios (:data:`MEASURED`,
   ``bench/bench_size.py --margin``), so a configuration whose simulated figure meets a limit is not
   pruned; ``tests/runs/test_size_search.py`` checks it. An estimated overload prunes nothing
   (:data:`OVERLOADS` says why); it is kept (:func:`overload_words`) and shown beside the verdict
   of the configuration's runs.
3. **Simulate** the rest cheapest first (equal costs: the estimate's best first, then the one no
   faster than which the most others are) over the seeds, judging each target with its 95% interval
   (:func:`simcache.runs.targets.judge_seeds`); a configuration whose interval straddles a limit
   gets more seeds, up to ``max_seeds``. Candidates run on a process pool or a Dask cluster, a batch
   at a time, rows streaming into the sweep store when one is given (so a rerun resumes; the keys
   are ``simcache sweep``'s).
4. **Stop early along monotone dimensions**: a configuration that misses a target prunes every
   configuration not yet simulated that is no faster than it along each monotone dimension and the
   same elsewhere (:func:`simcache.runs.sizing.space.dominated`).
5. **Confirm** the cheapest configuration that meets every target with fresh seeds; one that does
   not confirm is unknown and the search goes on. Configurations that cost more than the confirmed
   answer are not simulated (``simulate_all=True`` simulates them too, for a full frontier).

Ties in cost are broken by grid order: the answer is the configuration that meets every target with
the lowest (cost, grid index), the one that simulating every configuration would name.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

import numpy as np

from simcache.base.errors import ScenarioError
from simcache.estimate import Estimate, estimate
from simcache.runs.simulate import simulate
from simcache.runs.sizing.answer import Candidate, SizeAnswer
from simcache.runs.sizing.costs import PriceTable, SizeError, check_prices, load_prices
from simcache.runs.sizing.space import Dimension, candidate_scenarios, dominated, parse_vary
from simcache.runs.sweep import SweepProgress, result_row
from simcache.runs.sweep_store import POLL_S, SweepStore
from simcache.runs.targets import Target, check_groups, evidence_of_row, judge_seeds, parse_target
from simcache.runs.workers import replication_executor
from simcache.sim.control import Cancel, stopped_at
from simcache.spec import Scenario, load_scenario

__all__ = [
    "MEASURED",
    "OVERLOADS",
    "PRUNE_FACTORS",
    "THROUGHPUT_FACTOR",
    "SizeInterrupted",
    "estimated_figure",
    "overload_words",
    "prune_reason",
    "size",
]

MEASURED: dict[str, float] = {
    "mean": 1.44,
    "p50": 1.75,
    "p95": 3.04,
    "p99": 4.64,
    "p99.9": 6.48,
    "iops": 0.91,
    "MB/s": 0.91,
}
"""The largest estimate/simulation ratio of each latency figure over the library's scenarios
(seed 1, groups and ops with enough I/Os behind the figure, stable runs), and the smallest for
throughput: ``bench/bench_size.py --margin``."""

PRUNE_FACTORS: dict[str, float] = {"mean": 2.0, "p50": 2.5, "p95": 4.0, "p99": 6.0, "p99.9": 9.0}
"""A latency target prunes a configuration whose estimated figure is above ``factor x limit``:
each factor is the largest ratio measured (:data:`MEASURED`) with about 30-40% to spare. ``max``
is never estimated, so never pruned on."""

THROUGHPUT_FACTOR = 0.6
"""A throughput floor prunes a configuration whose estimated figure is below ``0.6 x floor``
(measured: 0.91 at least)."""


OVERLOADS = (
    "An estimated overload (a latency without bound) prunes nothing: on a small WB+1 cluster of "
    "SATA field tiers the estimate finds the tier's pipe offered 137% of its capacity where a 20 s "
    "simulation stays stable at 5.5 ms mean write latency, so the estimate's overloads are not a "
    "clear margin; such configurations are simulated, after the others of their cost, and the "
    "overload is shown beside the verdict of their runs, which it does not change."
)


class _Stopped(Exception):
    """Raised inside a search whose cancel token is set: the search returns what it judged so
    far."""


class SizeInterrupted(KeyboardInterrupt):
    """A search stopped by Ctrl-C: ``answer`` holds what was judged by then (``answer.stopped``
    says so)."""

    def __init__(self, answer: SizeAnswer):
        self.answer = answer
        super().__init__(answer.stopped)


def estimated_figure(result: Any, target: Target) -> float:
    """The estimate's figure for ``target`` (NaN where it has none; infinite for a latency the
    estimate finds unbounded)."""
    summary = result.summary
    rows = summary[(summary["group"] == target.group) & (summary["op"] == target.op)]
    if rows.empty or target.column not in rows.columns:
        return math.nan
    return float(rows.iloc[0][target.column])


def overload_words(result: Estimate) -> str:
    """What the estimate ``result`` finds overloaded, as ``simcache estimate``'s bottleneck line
    words it (:class:`~simcache.estimate.NamedBottleneck`): ``"host0.tier (its transfer pipe)
    offered 107% of its capacity; also overloaded: host1.tier (107%)"``; empty when it is
    stable."""
    if result.stable:
        return ""
    return result.named_bottleneck().overload_words()  # an unstable estimate names the most


def prune_reason(
    value: float,
    target: Target,
    factors: Mapping[str, float] = PRUNE_FACTORS,
    floor_factor: float = THROUGHPUT_FACTOR,
) -> str:
    """Why the estimated ``value`` rules ``target`` out ("" when it does not): the stated margins
    of this module."""
    if math.isnan(value):
        return ""
    if target.throughput:
        if value < target.limit * floor_factor:
            return (
                f"the estimate gives {target.figure} {value:,.4g}, under {floor_factor:g} x the "
                f"floor {target.limit:g}"
            )
        return ""
    factor = factors.get(target.figure)
    if factor is None:
        return ""
    if math.isinf(value):
        return ""  # an overload: not pruned on, see OVERLOADS
    if value > target.limit * factor:
        return (
            f"the estimate gives {target.figure} {value:.4g} ms, over {factor:g} x the limit "
            f"{target.limit:g} ms"
        )
    return ""


def _row(run: Scenario, seed: int) -> dict[str, Any]:
    """One task, in a worker: a plain row of the run (:func:`simcache.runs.sweep.result_row`)."""
    return result_row(simulate(run, seed=seed))


def size(
    scenario: Scenario | str | Path | Mapping[str, Any],
    targets: Sequence[Target | str],
    dimensions: Sequence[Dimension | str],
    *,
    prices: PriceTable | str | Path | None = None,
    seeds: Sequence[int] = (1, 2, 3),
    duration: float | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    store: str | Path | None = None,
    max_seeds: int | None = None,
    confirm_seeds: int | None = None,
    prune: bool = True,
    simulate_all: bool = False,
    progress: Callable[[SweepProgress], None] | None = None,
    cancel: Cancel | None = None,
) -> SizeAnswer:
    """The cheapest configuration of ``scenario`` over ``dimensions`` that meets every target (see
    the module).

    ``targets``: :class:`Target` or ``report --target`` strings; ``dimensions``: :class:`Dimension`
    or ``--vary`` strings; ``prices``: a :class:`PriceTable` or a TOML file over the built-in one.
    ``seeds``: each candidate's seeds (more, up to ``max_seeds``, default three times as many, where
    an interval straddles a limit); ``confirm_seeds``: how many fresh seeds confirm the answer
    (default as many as ``seeds``). ``prune=False`` simulates what the estimate would prune. Every
    input is checked before anything runs: bad input raises a
    :class:`~simcache.runs.sizing.costs.SizeError` of one line. Ctrl-C raises
    :class:`SizeInterrupted` with the answer so far; ``cancel`` (a
    :class:`~simcache.sim.control.Cancel` token) stops the search, which returns the answer so far
    with ``stopped`` saying why. With a ``store``, every finished run is kept and a rerun resumes
    from them.
    """
    base = load_scenario(scenario)
    try:
        goals = [t if isinstance(t, Target) else parse_target(t) for t in targets]
    except ScenarioError as exc:
        raise SizeError("--target", exc.problems) from None
    if not goals:
        raise SizeError(
            "--target", [("--target", 'give at least one target, e.g. --target "write p99 <= 5ms"')]
        )
    try:
        check_groups(goals, (group.name for group in base.groups))
    except ScenarioError as exc:
        raise SizeError("--target", exc.problems) from None
    dims = [d if isinstance(d, Dimension) else parse_vary(d) for d in dimensions]
    pairs = candidate_scenarios(base, dims)
    table = prices if isinstance(prices, PriceTable) else load_prices(prices)
    check_prices(table, (variant for _, variant in pairs))  # every missing price at once
    costs = [table.cost(variant) for _, variant in pairs]
    seed_list = _seeds(seeds)
    most = max_seeds if max_seeds is not None else 3 * len(seed_list)
    if most < len(seed_list):
        raise SizeError(
            "--max-seeds",
            [("--max-seeds", f"must be at least the {len(seed_list)} seeds given (got {most})")],
        )
    try:
        runs = [
            variant if duration is None else _with_duration(point, variant, duration)
            for point, variant in pairs
        ]
    except ScenarioError as exc:
        raise SizeError("--duration", exc.problems) from None
    candidates = [
        Candidate(i, dict(point), cost)
        for i, ((point, _), cost) in enumerate(zip(pairs, costs, strict=True))
    ]
    answer = SizeAnswer(
        candidates,
        goals,
        margins={**PRUNE_FACTORS, "throughput": THROUGHPUT_FACTOR},
        notes=_warmup_notes(runs[0]),
    )
    score = _estimate_all(candidates, runs, goals, prune)
    search = _Search(
        answer,
        runs,
        [variant for _, variant in pairs],
        seed_list,
        most,
        duration,
        progress,
        cancel,
        simulate_all,
    )
    try:
        with ExitStack() as stack:
            search.open(stack, workers=workers, scheduler=scheduler, store=store)
            search.walk(score, confirm_seeds if confirm_seeds is not None else len(seed_list))
    except _Stopped:
        answer.stopped = cancel.reason if cancel is not None and cancel.reason else "cancelled"
    except KeyboardInterrupt:
        answer.stopped = "interrupted (Ctrl-C)"
        search.finish()
        raise SizeInterrupted(answer) from None
    search.finish()
    return answer


def _with_duration(point: Mapping[str, Any], variant: Scenario, duration: float) -> Scenario:
    """``variant`` run for ``duration`` s; a warm-up the grid sets (a ``run.warmup`` dimension)
    is kept as set, where :meth:`Scenario.with_duration` would cut it for a shorter run
    (:meth:`Scenario.cut_warmup`; a scenario's own warm-up is cut)."""
    run = variant.with_duration(duration, source="--duration")
    if "run.warmup" in point:
        run = run.with_overrides({"run.warmup": point["run.warmup"]}, source="--vary run.warmup")
    return run


def _warmup_notes(run: Scenario) -> list[str]:
    """Why every verdict may come out unknown before anything runs: a warm-up shorter than a
    group's duty-cycle period."""
    warmup = run.run.warmup  # as run: with_duration has cut it already
    notes = []
    for group in run.groups:
        cycle = group.workload.duty_cycle
        if cycle is None:
            continue
        period = (cycle.on or 0.0) + (cycle.off or 0.0) if cycle.shape == "onoff" else cycle.period
        if period and warmup < period:
            notes.append(
                f"group {group.name}'s duty cycle has a {period:g} s period and the warm-up is "
                f"{warmup:g} s: every pass will be "
                "unknown (the warm-up is shorter than the slowest time constant); set run.warmup "
                f"to at least {period:g} s (or add the dimension run.warmup = ['{period:g}s'])"
            )
    return notes


def _seeds(seeds: Sequence[int]) -> list[int]:
    seed_list = list(seeds)
    bad = [
        s for s in seed_list if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0
    ]
    if not seed_list or bad or len(set(seed_list)) != len(seed_list):
        raise SizeError(
            "--seeds", [("--seeds", f"give distinct seeds, whole numbers >= 0 (got {seed_list!r})")]
        )
    return [int(s) for s in seed_list]


def _estimate_all(
    candidates: list[Candidate], runs: list[Scenario], targets: list[Target], prune: bool
) -> dict[int, float]:
    """Estimate each candidate: its figures, its pruning, and its score (the worst figure over
    its limit; lower is likelier to pass)."""
    score: dict[int, float] = {}
    for candidate, run in zip(candidates, runs, strict=True):
        try:
            result = estimate(run)
        except (ScenarioError, ValueError, ArithmeticError):
            score[candidate.index] = math.inf  # no estimate: simulated, last among equal costs
            continue
        candidate.overload = overload_words(result)
        ratios = []
        for target in targets:
            value = estimated_figure(result, target)
            candidate.estimated[str(target)] = value
            if math.isfinite(value) and value > 0:
                ratios.append(target.limit / value if target.throughput else value / target.limit)
            elif math.isinf(value):
                ratios.append(math.inf)
            why = prune_reason(value, target) if prune else ""
            if why and candidate.verdict != "pruned":
                candidate.verdict, candidate.why = "pruned", f"{target}: {why}"
        score[candidate.index] = max(ratios, default=math.inf)
    return score


class _Search:
    """The simulation part of a search: runs tasks (candidate, seed), judges candidates, walks
    them cheapest first."""

    def __init__(
        self,
        answer: SizeAnswer,
        runs: list[Scenario],
        variants: list[Scenario],
        seeds: list[int],
        max_seeds: int,
        duration: float | None,
        progress: Callable[[SweepProgress], None] | None,
        cancel: Cancel | None,
        simulate_all: bool,
    ):
        self.answer = answer
        self.runs = runs
        self.variants = variants
        self.seeds = seeds
        self.max_seeds = max_seeds
        self.duration = duration
        self.progress = progress
        self.cancel = cancel
        self.simulate_all = simulate_all
        self.rows: dict[tuple[int, int], dict[str, Any]] = {}
        self.seeds_of: dict[int, list[int]] = {}
        self.executor: Any = None
        self.store: SweepStore | None = None
        self.started = time.perf_counter()
        self.done = 0
        self.from_store = 0
        self.planned = 0
        self.pending = {c.index for c in answer.candidates if c.verdict != "pruned"}

    def open(
        self,
        stack: ExitStack,
        *,
        workers: int | None,
        scheduler: str | None,
        store: str | Path | None,
    ) -> None:
        self.executor = replication_executor(
            stack, workers=workers, scheduler=scheduler, what="--workers"
        )
        self.slots = (
            1 if self.executor is None else max(1, _capacity(workers, scheduler, self.executor))
        )
        if store is not None:
            labels = [c.label for c in self.answer.candidates]
            self.store = stack.enter_context(
                closing(SweepStore(Path(store), self.variants, self.duration, labels))
            )

    # -- the walk

    def walk(self, score: Mapping[int, float], confirm: int) -> None:
        cands = self.answer.candidates
        below = _dominating(cands, self.pending)
        order = sorted(
            self.pending,
            key=lambda i: (cands[i].cost.total, score.get(i, math.inf), -below.get(i, 0), i),
        )
        self.planned = len(order) * len(self.seeds)
        failed_confirm: set[int] = set()
        while True:
            best = self.answer.best
            key = None if best is None else (cands[best].cost.total, best)
            open_ = [
                i
                for i in order
                if i in self.pending
                and (self.simulate_all or key is None or (cands[i].cost.total, i) < key)
            ]
            if not open_:
                return  # a stop asked for now finds nothing left to skip: the answer is whole
            if self.cancel is not None and self.cancel.cancelled:
                raise _Stopped
            batch = open_[: max(1, math.ceil(2 * self.slots / len(self.seeds)))]
            self._judge(batch, self.seeds)
            self._more_seeds(batch)
            # all leave first: a miss never prunes a batch-mate with runs of its own (review 66c F2)
            self.pending.difference_update(batch)
            for i in batch:
                if cands[i].verdict == "misses":
                    self._prune_below(i)
            meeting = [c for c in cands if c.verdict == "meets" and c.index not in failed_confirm]
            if not meeting:
                continue
            first = min(meeting, key=lambda c: (c.cost.total, c.index))
            if key is not None and (first.cost.total, first.index) >= key:
                continue
            if self._confirm(first, confirm):
                self.answer.best = first.index
            else:
                failed_confirm.add(first.index)

    def _judge(self, indices: Sequence[int], seeds: Sequence[int]) -> None:
        tasks = [(i, s) for i in indices for s in seeds if (i, s) not in self.rows]
        self._run(tasks)
        for i in indices:
            have = sorted(set(self.seeds_of.get(i, [])) | set(seeds))
            self.seeds_of[i] = have
            self.answer.candidates[i].judge(self._verdicts(i, have), have)

    def _verdicts(self, i: int, seeds: Sequence[int]) -> list[Any]:
        return [
            judge_seeds(t, [evidence_of_row(self.rows[(i, s)], t) for s in seeds])
            for t in self.answer.targets
        ]

    def _more_seeds(self, batch: Sequence[int]) -> None:
        """Add seeds to candidates whose only doubt is an interval straddling a limit, up to
        ``max_seeds``."""
        while True:
            wanted = [
                i
                for i in batch
                if self.answer.candidates[i].verdict == "unknown"
                and len(self.seeds_of[i]) < self.max_seeds
                and all(
                    v.status != "unknown" or "within its interval" in v.text
                    for v in self.answer.candidates[i].verdicts
                )
            ]
            if not wanted:
                return
            for i in wanted:
                have = self.seeds_of[i]
                start = max(have) + 1
                extra = list(range(start, start + min(len(self.seeds), self.max_seeds - len(have))))
                self.planned += len(extra)
                self._judge([i], [*have, *extra])

    def _prune_below(self, i: int) -> None:
        """Prune the pending candidates that are no faster than candidate ``i`` (which misses)
        along monotone dimensions."""
        miss = self.answer.candidates[i]
        missed = next(v for v in miss.verdicts if v.status == "misses")
        for j in sorted(self.pending):
            other = self.answer.candidates[j]
            if dominated(other.overrides, miss.overrides):
                other.verdict = "pruned"
                other.why = (
                    f"{missed.target}: no faster along monotone dimensions than {miss.label}, "
                    f"which misses it ({missed.short})"
                )
                self.pending.discard(j)
                self.planned -= len(self.seeds)

    def _confirm(self, candidate: Candidate, count: int) -> bool:
        """Simulate ``candidate`` over ``count`` fresh seeds: True if it meets every target there
        too."""
        if count < 1:
            return True
        used = max(max(self.seeds_of.get(i, [0])) for i in range(len(self.answer.candidates)))
        fresh = list(range(max(used, max(self.seeds)) + 1, max(used, max(self.seeds)) + 1 + count))
        self.planned += len(fresh)
        self._run([(candidate.index, s) for s in fresh])
        verdicts = self._verdicts(candidate.index, fresh)
        candidate.confirmed, candidate.confirmed_seeds = verdicts, fresh
        if all(v.passes for v in verdicts):
            return True
        failing = "; ".join(f"{v.target}: {v.text}" for v in verdicts if not v.passes)
        candidate.verdict = "unknown"
        candidate.why = (
            f"met every target over seeds {candidate.seeds} but not over fresh seeds {fresh}: "
            f"{failing}"
        )
        return False

    # -- tasks

    def _run(self, tasks: list[tuple[int, int]]) -> None:
        """Rows of ``tasks``: from the store, else simulated here or on the pool; each stored as
        it finishes."""
        todo = []
        for task in tasks:
            found = self.store.get(task) if self.store is not None else None
            if found is not None:
                self._keep(task, found, computed=False)
            else:
                todo.append(task)
        if self.executor is None:
            for i, seed in todo:
                result = simulate(self.runs[i], seed=seed, cancel=self.cancel)
                if stopped_at(result) is not None:
                    raise _Stopped
                self._keep((i, seed), result_row(result), computed=True)
            return
        futures: dict[Future[dict[str, Any]], tuple[int, int]] = {
            self.executor.submit(_row, self.runs[i], s): (i, s) for i, s in todo
        }
        while futures:
            if self.cancel is not None and self.cancel.cancelled:
                raise _Stopped
            done, _ = wait(list(futures), timeout=POLL_S, return_when=FIRST_COMPLETED)
            for future in done:
                self._keep(futures.pop(future), future.result(), computed=True)

    def _keep(self, task: tuple[int, int], row: dict[str, Any], *, computed: bool) -> None:
        self.rows[task] = row
        self.done += 1
        if computed and self.store is not None:
            self.store.put(task, row)
        if not computed:
            self.from_store += 1
        if self.progress is not None:
            self.progress(
                SweepProgress(
                    self.done,
                    max(self.planned, self.done),
                    self.from_store,
                    time.perf_counter() - self.started,
                )
            )

    def finish(self) -> None:
        """Candidates never simulated: skipped, saying why; after a stop, those it left unjudged
        are listed in ``answer.not_reached``, and one that met every target but was not yet
        confirmed says so."""
        cands = self.answer.candidates
        best = self.answer.winner
        stopped = self.answer.stopped

        def cheaper(c: Candidate) -> bool:
            return best is None or (c.cost.total, c.index) < (best.cost.total, best.index)

        for i in sorted(self.pending):
            c = cands[i]
            if c.verdict in ("meets", "misses", "unknown"):
                continue
            c.verdict = "skipped"
            if best is not None and not self.simulate_all and not cheaper(c):
                c.why = (
                    f"not simulated: costs {c.cost.total:,.0f}, not less than the answer's "
                    f"{best.cost.total:,.0f}"
                )
            elif stopped:
                c.why = f"not simulated: the search stopped first ({stopped})"
                self.answer.not_reached.append(i)
            else:
                c.why = "not simulated"
        if stopped:
            for c in cands:
                if c.verdict == "meets" and not c.confirmed and cheaper(c):
                    c.why += "; not confirmed with fresh seeds: the search stopped first"


def _dominating(cands: Sequence[Candidate], pending: set[int], most: int = 2000) -> dict[int, int]:
    """How many pending candidates each one dominates along monotone dimensions (none counted
    past ``most`` candidates): among equal costs and estimates, the one whose miss would prune
    the most goes first."""
    if len(pending) > most:
        return {}
    return {
        i: sum(dominated(cands[j].overrides, cands[i].overrides) for j in pending if j != i)
        for i in pending
    }


def _capacity(workers: int | None, scheduler: str | None, executor: Any) -> int:
    """Tasks the executor runs at once: its workers (a Dask cluster's threads)."""
    if scheduler is not None:
        client = getattr(executor, "_client", None)
        threads = sum(client.nthreads().values()) if client is not None else 0
        return int(threads) or 1
    import os

    return workers if workers is not None else os.cpu_count() or 1
