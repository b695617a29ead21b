"""The answer of ``simcache size``: every candidate with its verdict, the cheapest that meets every
target, the frontier.

A candidate's ``verdict`` is one of

- ``meets``: simulated over its seeds, it meets every target (each verdict of
  :func:`simcache.runs.targets.judge_seeds`);
- ``misses``: simulated, it misses at least one target (its interval wholly on the wrong side);
- ``unknown``: simulated, no target missed but at least one undecided (``why`` says which and why);
- ``pruned``: not simulated, because it cannot meet a target: the estimate misses one by more than
  the stated margin, or a configuration that is no slower along every monotone dimension already
  misses it (``why`` says which);
- ``skipped``: not simulated, because it costs more than the answer (``simcache size --all``
  simulates these too), or because the search was stopped before it (``SizeAnswer.not_reached``).

The frontier is the cost/latency Pareto frontier of the simulated candidates on the first latency
target (the first target when none is a latency): those that no other simulated candidate beats on
both cost and figure.

A simulated candidate whose estimate is not stable carries the estimate's overload beside its
verdict (:attr:`Candidate.warning`: ``estimate: NOT STABLE: host0.tier (its transfer pipe) offered
107% of its capacity``), in the text, the JSON (``estimate_overload``) and the page. It is a
warning, not a caveat: the verdict stays the runs' own. A pass whose runs show a queue or backlog
growing, a buffer filling or a clean pool draining is already unknown for that
(:func:`simcache.runs.targets.judge_seeds`); the estimate is a model of the simulator that can find
an overload its runs do not show (:data:`simcache.runs.size.OVERLOADS`), so it neither prunes nor
overrules them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from simcache.base.units import format_size
from simcache.runs.sizing.costs import Cost
from simcache.runs.targets import Target, Verdict

__all__ = ["Candidate", "SizeAnswer"]

Status = Literal["meets", "misses", "unknown", "pruned", "skipped"]

_MEASURED = frozenset({"meets", "misses", "unknown"})
"""The verdicts a candidate's own runs give it: only these are on the frontier."""


@dataclass
class Candidate:
    """One configuration: its overrides of the scenario, its cost, what the estimate said and,
    once simulated, its verdicts (one per target) over its seeds."""

    index: int
    overrides: dict[str, Any]
    cost: Cost
    estimated: dict[str, float] = field(default_factory=dict)
    """The estimate's figure per target (``str(target)``); infinite where the estimate finds an
    overload."""
    overload: str = ""
    """What the estimate finds overloaded when it is not stable, in its words (``host0.tier (its
    transfer pipe) offered 107% of its capacity; also overloaded: host1.tier (107%)``); empty for
    a stable estimate or none."""
    verdict: Status = "skipped"
    why: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    confirmed: list[Verdict] = field(default_factory=list)
    """The winner's verdicts over fresh seeds (empty for any other candidate)."""
    confirmed_seeds: list[int] = field(default_factory=list)

    @property
    def label(self) -> str:
        return ", ".join(f"{path}={_shown(path, value)}" for path, value in self.overrides.items())

    @property
    def warning(self) -> str:
        """``estimate: NOT STABLE: ...`` (:attr:`overload`) for a simulated candidate whose
        estimate is not stable, shown beside its verdict; empty otherwise (a candidate never
        simulated has no verdict of its runs to warn beside)."""
        if not self.overload or self.verdict not in _MEASURED:
            return ""
        return f"estimate: NOT STABLE: {self.overload}"

    def why_shown(self) -> str:
        """:attr:`why` with :attr:`warning` after it: the text's and the page's reason."""
        return "; ".join(part for part in (self.why, self.warning) if part)

    def judge(self, verdicts: list[Verdict], seeds: list[int]) -> None:
        """Take the verdicts of its seeds: meets if every target is met, misses if one is missed,
        else unknown."""
        self.verdicts, self.seeds = verdicts, seeds
        missed = [v for v in verdicts if v.status == "misses"]
        open_ = [v for v in verdicts if v.status == "unknown"]
        if missed:
            self.verdict, self.why = "misses", "; ".join(f"{v.target}: {v.text}" for v in missed)
        elif open_:
            self.verdict, self.why = "unknown", "; ".join(f"{v.target}: {v.text}" for v in open_)
        else:
            self.verdict, self.why = "meets", f"meets every target over seeds {_seeds(seeds)}"

    def figure(self, at: int) -> str:
        """Its figure for target ``at``: the seeds' mean with the 95% half-width (``0.419 ±
        0.08``), without a "± 0" where the seeds all gave one value (no interval: judge_seeds
        says so); the frontier's line and the page's cell."""
        verdict = self.verdicts[at]
        ok = math.isfinite(verdict.ci95) and verdict.ci95 > 0
        return f"{verdict.value:.4g}" + (f" ± {verdict.ci95:.3g}" if ok else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "overrides": self.overrides,
            "cost": self.cost.total,
            "currency": self.cost.currency,
            "verdict": self.verdict,
            "why": self.why,
            "cost_parts": [part.to_json() for part in self.cost.parts],
            "estimate": {name: _number(value) for name, value in self.estimated.items()},
            "estimate_overload": self.overload or None,
            "seeds": self.seeds,
            "verdicts": [_verdict_json(v) for v in self.verdicts],
        }


@dataclass
class SizeAnswer:
    """What a search found: ``candidates`` in grid order, ``best`` (index into them, or
    ``None``), the targets, the margin the estimate pruned with, and why the search stopped early
    (``stopped``, empty if it did not)."""

    candidates: list[Candidate]
    targets: list[Target]
    best: int | None = None
    stopped: str = ""
    margins: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What the search found about the scenario before running it (a warm-up too short for any
    pass, ...)."""
    not_reached: list[int] = field(default_factory=list)
    """The candidates a stop left unjudged (indices; their verdict is ``skipped``): empty unless
    ``stopped``."""

    @property
    def winner(self) -> Candidate | None:
        return None if self.best is None else self.candidates[self.best]

    @property
    def frontier_target(self) -> Target:
        return next((t for t in self.targets if not t.throughput), self.targets[0])

    def frontier(self) -> list[Candidate]:
        """The simulated candidates no other simulated one beats on both cost and the frontier
        target's figure, by cost."""
        target = self.frontier_target
        at = self.targets.index(target)
        simulated = [
            c
            for c in self.candidates
            if c.verdict in _MEASURED and c.verdicts and math.isfinite(c.verdicts[at].value)
        ]
        # lower is better for latency, higher for throughput
        sign = -1.0 if target.throughput else 1.0
        ordered = sorted(
            simulated, key=lambda c: (c.cost.total, sign * c.verdicts[at].value, c.index)
        )
        front: list[Candidate] = []
        best = math.inf
        for candidate in ordered:
            value = sign * candidate.verdicts[at].value
            if value < best:
                front.append(candidate)
                best = value
        return front

    def unmet(self) -> list[Target]:
        """The targets no simulated candidate met (why there is no answer, when there is none)."""
        return [
            t
            for i, t in enumerate(self.targets)
            if not any(c.verdicts and c.verdicts[i].passes for c in self.candidates)
        ]

    def counts(self) -> dict[str, int]:
        """Candidates per verdict; ``skipped`` counts those dearer than the answer, ``not
        reached`` those a stop left unjudged."""
        counts = dict.fromkeys(("meets", "misses", "unknown", "pruned", "skipped"), 0)
        for candidate in self.candidates:
            counts[candidate.verdict] += 1
        counts["skipped"] -= len(self.not_reached)
        counts["not reached"] = len(self.not_reached)
        return counts

    def partial_note(self) -> str:
        """Why the answer is partial, in one sentence without its full stop: how many candidates
        were judged of how many, and whether any left unjudged costs no more than the answer (""
        for a search that ran to its end)."""
        if not self.stopped:
            return ""
        counts = self.counts()
        simulated = counts["meets"] + counts["misses"] + counts["unknown"]
        judged = simulated + counts["pruned"]
        note = (
            f"the search was stopped ({self.stopped}) with {judged} of {len(self.candidates)} "
            f"configurations judged ({simulated} simulated, {counts['pruned']} pruned); "
            f"{len(self.not_reached)} not reached"
        )
        winner = self.winner
        if winner is None:
            return f"{note}; no answer was confirmed before the stop"
        if not self.not_reached:
            return note
        cheaper = [
            i
            for i in self.not_reached
            if (self.candidates[i].cost.total, i) < (winner.cost.total, winner.index)
        ]
        if cheaper:
            return (
                f"{note}, {len(cheaper)} of them costing no more than the answer: one of those "
                "may be the answer instead"
            )
        return f"{note}, none of them cheaper than the answer"

    def to_json(self) -> dict[str, Any]:
        """``{"best": null | {"overrides", "cost", "currency", "verdicts", ...}, "candidates":
        [{"overrides", "cost", "currency", "verdict", ...}], "frontier": [...]}``, and
        ``"partial": {"stopped", "why"}`` (the reason and :meth:`partial_note`) when the search was
        stopped. Each ``cost`` has its ``currency`` beside it (review 66: the JSON named none)."""
        winner = self.winner
        best = None
        if winner is not None:
            best = {
                "overrides": winner.overrides,
                "cost": winner.cost.total,
                "currency": winner.cost.currency,
                "verdicts": [_verdict_json(v) for v in winner.verdicts],
                "confirmed": [_verdict_json(v) for v in winner.confirmed],
                "confirmed_seeds": winner.confirmed_seeds,
                "cost_parts": [part.to_json() for part in winner.cost.parts],
                "seeds": winner.seeds,
                "estimate_overload": winner.overload or None,
            }
        target = self.frontier_target
        at = self.targets.index(target)
        frontier = [
            {
                "overrides": c.overrides,
                "cost": c.cost.total,
                "currency": c.cost.currency,
                "target": str(target),
                "value": _number(c.verdicts[at].value),
                "ci95": _number(c.verdicts[at].ci95),
                "verdict": c.verdict,
                "estimate_overload": c.overload or None,
            }
            for c in self.frontier()
        ]
        shape: dict[str, Any] = {
            "best": best,
            "candidates": [c.to_json() for c in self.candidates],
            "frontier": frontier,
        }
        if self.stopped:
            shape["partial"] = {"stopped": self.stopped, "why": self.partial_note()}
        return shape

    def lines(self) -> list[str]:
        """The answer in words: the best (or why none), the frontier, then every candidate by
        cost."""
        counts = self.counts()
        currency = self.candidates[0].cost.currency if self.candidates else ""
        reached = (
            f", {counts['not reached']} not reached (the search was stopped)"
            if self.stopped
            else ""
        )
        out = [
            f"{len(self.candidates)} configurations: {counts['meets']} meet, {counts['misses']} "
            f"miss, {counts['unknown']} unknown, "
            f"{counts['pruned']} pruned, {counts['skipped']} skipped (cost more than the answer)"
            f"{reached}"
        ]
        out += [f"note: {note}" for note in self.notes]
        if self.stopped:
            out.append(f"PARTIAL ANSWER: {self.partial_note()}")
        winner = self.winner
        if winner is None and self.stopped:
            out.append("best: none confirmed before the stop")
        elif winner is None:
            unmet = self.unmet()
            names = (
                ", ".join(str(t) for t in unmet)
                if unmet
                else "none on its own; no configuration met all of them together"
            )
            out.append(f"best: none meets every target. Targets no configuration met: {names}")
        else:
            out.append(f"best: {winner.label} at {winner.cost.total:,.0f} {currency}")
            out.append(f"  cost: {winner.cost.words()}")
            for verdict in winner.verdicts:
                out.append(f"  {verdict.target}: {verdict.text}")
            if winner.warning:
                out.append(f"  {winner.warning}")
            for verdict in winner.confirmed:
                out.append(
                    f"  confirmed over fresh seeds {_seeds(winner.confirmed_seeds)}: "
                    f"{verdict.target}: {verdict.text}"
                )
        front = self.frontier()
        if front:
            target = self.frontier_target
            at = self.targets.index(target)
            out.append(f"frontier (cost vs {target}):")
            for c in front:
                out.append(
                    f"  {c.cost.total:>12,.0f}  {c.figure(at)} {target.unit}  {c.verdict:<8} "
                    f"{c.label}"
                )
                if c.warning:
                    out.append(f"  {'':>12}  {c.warning}")
        out.append("candidates by cost:")
        for c in sorted(self.candidates, key=lambda c: (c.cost.total, c.index)):
            out.append(f"  {c.cost.total:>12,.0f}  {c.verdict:<8} {c.label}: {c.why_shown()}")
        return out


def _verdict_json(v: Verdict) -> dict[str, Any]:
    return {
        "target": str(v.target),
        "status": v.status,
        "value": _number(v.value),
        "ci95": _number(v.ci95),
        "lower_bound": v.lower_bound,
        "seeds": v.seeds,
        "text": v.text,
    }


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


_SIZES = frozenset(
    {"capacity", "max_batch", "working_set", "clean_pool", "line", "gc_pass", "erase_block"}
)
"""Fields whose values are sizes: shown as sizes (``1GiB``), as a range of them was given, not
as the bytes the range expands to (review 63, item 9)."""


def _shown(path: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if path.rpartition(".")[2] in _SIZES and isinstance(value, int | float):
        return format_size(value)
    return repr(value)


def _seeds(seeds: Sequence[int]) -> str:
    return ", ".join(map(str, seeds))
