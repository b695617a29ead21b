"""``simcache check``: run the ``[[expect]]`` checks of scenario files and print expected against
simulated."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack

from simcache.cli.options import OptionError
from simcache.cli.outputs import output_file
from simcache.cli.progress import progress_bar, shows_progress
from simcache.runs.checks import CheckOutcome, CheckPlan, prepare, scenario_files
from simcache.runs.validation_report import validation_report
from simcache.runs.workers import replication_executor
from simcache.sim.control import Cancel, Limits, Stopped, cancel_on_signals, check_work, exit_status

__all__ = ["check_json", "run_check"]


def run_check(args: argparse.Namespace, limits: Limits) -> int:
    """``simcache check``: print one line per check as it is judged; exit 1 if any check fails (a
    known gap that still misses is not a failure), 130 if interrupted (finished lines stay)."""
    if args.report is not None:
        output_file(args.report, "--report")
    if args.seeds is not None and args.seeds < 1:
        raise OptionError.at("--seeds", f"must be at least 1 (got {args.seeds})")
    files = scenario_files(args.paths)
    # every file and its checks are valid before anything runs
    plans = [prepare(path, duration=args.duration) for path in files]
    for plan in plans:  # and no run is too large
        for run in plan.runs.values():
            check_work(run, limits)
    outcomes: list[CheckOutcome] = []
    not_run: list[str] = []
    total = sum(len(plan.scenario.expect) for plan in plans)

    def say(line: str = "", flush: bool = False) -> None:
        if not args.json:
            print(line, flush=flush)

    stopped: Stopped | None = None
    with (
        ExitStack() as stack,
        cancel_on_signals(Cancel()) as token,
        progress_bar("checking", total=total, enabled=shows_progress(args.json)) as bar,
    ):
        executor = replication_executor(stack, workers=args.workers, scheduler=args.scheduler)

        def progress(text: str) -> None:
            if bar.enabled:
                bar.update(len(outcomes), total, text)
            elif not args.quiet and not args.json:
                print(f"  running {text}", file=sys.stderr, flush=True)

        for number, plan in enumerate(plans):
            scenario = plan.scenario
            if not scenario.expect:
                say(f"-     {plan.label}: no [[expect]] checks")
                continue
            say(f"== {scenario.check.observation or scenario.name}  ({plan.label})")
            judged = 0
            shown: set[str] = set()
            try:
                for outcome in plan.outcomes(
                    seeds=args.seeds,
                    progress=progress,
                    cancel=token,
                    limits=limits,
                    executor=executor,
                ):
                    outcomes.append(outcome)
                    judged += 1
                    say(outcome.line(), flush=True)
                    for warning in outcome.warnings:
                        if warning not in shown:
                            shown.add(warning)
                            say(f"      {warning}")
            except Stopped as exc:
                stopped = exc
                not_run = _not_run(plans[number:], skip=judged, say=say)
                break
    failed = [o for o in outcomes if not o.ok]
    gaps = sum(bool(o.known_gap) and not o.passed for o in outcomes)
    fits = sum(bool(o.fitted) and o.passed for o in outcomes)
    say(
        f"\n{sum(o.independent for o in outcomes)} of {len(outcomes)} checks passed"
        + (f"; {fits} fitted (hold, not counted as passed)" if fits else "")
        + (f"; {gaps} known gap{'s' if gaps > 1 else ''}" if gaps else "")
        + (f"; {len(failed)} failed" if failed else "")
    )
    if stopped is not None:
        say(f"{str(stopped).replace('stopped', 'STOPPED', 1)}: the checks after it were not run")
    if args.report is not None:
        command = (
            "simcache check " + " ".join(str(p) for p in args.paths) + f" --report {args.report}"
        )
        args.report.write_text(validation_report(outcomes, command), "utf-8")
        say(f"report written to {args.report}")
    if args.json:
        print(
            json.dumps(
                check_json(outcomes, not_run, None if stopped is None else str(stopped)), indent=2
            )
        )
    if stopped is not None:
        return exit_status(token)
    return 1 if failed else 0


def check_json(
    outcomes: Sequence[CheckOutcome], not_run: Sequence[str], stopped: str | None
) -> dict[str, object]:
    """``simcache check --json``: counts, one object per check judged (bounds ``null`` on an open
    side, per-seed values; for an ``approx`` check its figure, its ``given`` part and the relative
    errors of the mean against the whole and against the part tested, else ``null``), the checks
    not run and why the run stopped (``null`` if it did not)."""

    def number(value: float | None) -> float | None:
        return value if value is not None and math.isfinite(value) else None

    checks = [
        {
            "scenario": o.scenario,
            "source": o.source,
            "name": o.name,
            "passed": o.passed,
            "verdict": o.verdict,
            "known_gap": o.known_gap or None,
            "fitted": o.fitted or None,
            "metric": o.metric,
            "selection": o.selection,
            "expected": o.expected,
            "unit": o.unit,
            "low": number(o.low),
            "high": number(o.high),
            "seeds": list(o.seeds),
            "values": [number(v) for v in o.values],
            "mean": number(o.mean),
            "ci95": number(o.ci95),
            "target": number(o.target),
            "given": number(o.given),
            "error": number(o.error),
            "part_error": number(o.part_error),
            "warnings": list(o.warnings),
        }
        for o in outcomes
    ]
    passed = sum(1 for o in outcomes if o.independent)
    gaps = sum(1 for o in outcomes if o.known_gap and not o.passed)
    fits = sum(1 for o in outcomes if o.fitted and o.passed)
    failed = sum(1 for o in outcomes if not o.ok)
    return {
        "passed": passed,
        "known_gaps": gaps,
        "fitted": fits,
        "failed": failed,
        "checks": checks,
        "not_run": list(not_run),
        "stopped": stopped,
    }


def _not_run(plans: Sequence[CheckPlan], skip: int, say: Callable[[str], None]) -> list[str]:
    """Mark the checks of ``plans`` not run (the first ``skip`` of the first plan were judged);
    their names."""
    names = []
    for number, plan in enumerate(plans):
        if number:
            say(f"== {plan.scenario.check.observation or plan.scenario.name}  ({plan.label})")
        for expectation in plan.scenario.expect[skip if number == 0 else 0 :]:
            names.append(f"{plan.scenario.name}:{expectation.name}")
            say(f"NOT RUN  {names[-1]}  (stopped before it was simulated)")
    return names
