"""``simcache run`` and ``simcache report``: simulate one scenario (its ``--variant``, ``--seed``
and ``--duration`` applied) with a progress bar, then print its tables or write its HTML report.

Ctrl-C or SIGTERM stops the run and keeps its partial result (exit 130 or 143).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from simcache.base.errors import ScenarioError, listing
from simcache.cli.outputs import output_file, output_folder
from simcache.cli.progress import progress_bar, shows_progress
from simcache.cli.report import ReportPlan
from simcache.cli.sweep import sweep_progress
from simcache.report.run_report import report, stopped_line
from simcache.results.event_impact import impacts_json
from simcache.results.result import Result
from simcache.runs.simulate import simulate
from simcache.runs.sweep import grid_points
from simcache.sim.control import (
    Cancel,
    Limits,
    cancel_on_signals,
    check_work,
    exit_status,
)
from simcache.spec import Scenario, load_scenario

__all__ = ["chosen_scenario", "run_report", "run_scenario"]


def chosen_scenario(args: argparse.Namespace) -> Scenario:
    """The scenario of ``run`` or ``estimate``: the file or built-in, or its ``--variant``."""
    scenario = load_scenario(args.scenario)
    if args.variant is None or args.variant == "base":
        return scenario
    if args.variant not in scenario.variants:
        defined = listing(list(scenario.variants)) or "none"
        raise ScenarioError(
            str(args.scenario),
            [("--variant", f"no variant named {args.variant!r}; defined: {defined}")],
        )
    return scenario.variant(args.variant)


def _scenario_to_run(args: argparse.Namespace, chosen: Scenario | None = None) -> Scenario:
    """The scenario of ``run`` or ``report``: :func:`chosen_scenario` (``chosen``, when the caller
    has it) with ``--seed`` and ``--duration`` applied."""
    scenario = chosen if chosen is not None else chosen_scenario(args)
    if args.seed is not None:
        scenario = scenario.with_seed(args.seed)
    if args.duration is not None:
        cut = scenario.warmup_cut(args.duration)
        scenario = scenario.with_duration(args.duration)
        if cut:
            print(f"note: {cut}", file=sys.stderr)
    return scenario


def _simulate(
    scenario: Scenario, limits: Limits, json_output: bool = False, keep_records: bool = True
) -> tuple[Result, Cancel]:
    """Run ``scenario`` once within ``limits``, with a progress bar on a terminal (not for
    ``--json``); Ctrl-C or SIGTERM cancels the token and stops the run early (its partial result
    is returned). ``keep_records=False``: a streaming run (histograms and counters, no per-I/O
    records)."""
    work = check_work(scenario, limits, keep_records=keep_records)
    expected = f", {work.describe()}" if math.isfinite(work.ios) else ""
    # transfers that will pile up (a port offered more than it carries, the writes an outage
    # holds back): say so before it starts, and what it will cost
    if work.pileup is not None:
        expected += f" ({work.pileup.describe()})"
    done = [0.0]  # the part of the run simulated, as of the last sample

    def update(fraction: float) -> None:
        done[0] = fraction
        bar.update(fraction)

    with cancel_on_signals(Cancel()) as token, _say_when_stopping(scenario, done):
        print(
            f"simulating {scenario.name!r} for {scenario.run.duration:g} s{expected}; Ctrl-C stops "
            "it and keeps the partial result",
            file=sys.stderr,
            flush=True,
        )
        with progress_bar(
            f"simulating {scenario.run.duration:g} s", enabled=shows_progress(json_output)
        ) as bar:
            # checked above; the memory limit is also kept while it runs (MemoryWatch)
            result = simulate(
                scenario,
                progress=update,
                cancel=token,
                limits=Limits(math.inf, limits.max_memory_bytes),
                keep_records=keep_records,
            )
    return result, token


@contextmanager
def _say_when_stopping(scenario: Scenario, done: list[float]) -> Iterator[None]:
    """While inside, the first SIGINT or SIGTERM also prints at once that the run is stopping
    and what comes next, before :func:`cancel_on_signals`'s handler (installed before this) cancels
    the run: summarising a long run's partial result takes seconds, which the user otherwise
    waits through with no word (review 66c F20). ``done[0]``: the part simulated so far.

    Written with ``os.write``, not ``print``: the handler may run while the progress bar is
    writing to the same stream, and a buffered stream refuses a reentrant write."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    cancelling: dict[int, Any] = {
        number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)
    }

    def handler(signum: int, frame: FrameType | None) -> None:
        at = done[0] * scenario.run.duration
        _write_now(
            f"{_bar_break()}{signal.Signals(signum).name}: stopping at about {at:g} s of "
            f"{scenario.run.duration:g} s simulated; summarising the partial result (a few seconds "
            "on a long run)\n"
        )
        then = cancelling[signum]
        if callable(then):
            then(signum, frame)  # cancels the run and puts back the handler before it

    for number, then in cancelling.items():
        if callable(then):
            signal.signal(number, handler)
    try:
        yield
    finally:
        for number, then in cancelling.items():
            if signal.getsignal(number) is handler:
                signal.signal(number, then)


def _bar_break() -> str:
    """A line break to leave a progress bar's line first, on a terminal (nothing else draws one)."""
    return "\n" if sys.stderr.isatty() else ""


def _write_now(text: str) -> None:
    """``text`` on stderr at once, from a signal handler (see :func:`_say_when_stopping`)."""
    try:
        os.write(sys.stderr.fileno(), text.encode())
    except (AttributeError, OSError, ValueError):  # stderr is not a file (captured in-process)
        sys.stderr.write(text)


def run_scenario(args: argparse.Namespace, limits: Limits) -> int:
    """Run one scenario; Ctrl-C or SIGTERM stops it, prints the partial result and exits 130 or
    143. ``--out`` (a folder to fill, created with the folders between) and ``--records`` (a file
    in a folder that exists, or in the ``--out`` folder) are checked before the run."""
    if args.out is not None:
        output_folder(args.out, "--out")
    if args.records is not None:
        inside = args.out is not None and Path(args.records).absolute().is_relative_to(
            Path(args.out).absolute()
        )
        # a records file in the --out folder: its folder is made with it, as --out is
        if inside:
            output_folder(Path(args.records).parent, "--records")
        else:
            output_file(args.records, "--records")
    result, token = _simulate(
        _scenario_to_run(args), limits, args.json, keep_records=not args.no_records
    )
    stopped = stopped_line(result)
    if stopped:
        print(stopped, file=sys.stderr if args.json else sys.stdout, flush=True)
    if args.out is not None:
        result.save(args.out)
    if args.records is not None:
        Path(args.records).parent.mkdir(parents=True, exist_ok=True)  # (checked above)
        result.records.to_parquet(args.records, index=False)
    if args.json:
        print(json.dumps({**result.to_json(), "event_impact": impacts_json(result)}, indent=2))
    else:
        print(report(result))
        if args.out is not None:
            tables = (
                "records, unfinished, series, summary, breakdown as CSV and Parquet; meta.json "
                "with the warnings"
            )
            if args.no_records:
                tables = tables.removeprefix("records, ")
            print(f"\nresults written to {args.out}/ ({tables})")
        if args.records is not None:
            print(f"records written to {args.records} ({len(result.records):,} I/Os)")
        if stopped:
            print(stopped)
    return exit_status(token) if stopped else 0


def run_report(args: argparse.Namespace, limits: Limits) -> int:
    """Run the scenario, then the sweep around it (not after a stop), and write the HTML report;
    a stopped run's report is written too, marked partial, and the exit status is 130 or 143.
    Ctrl-C or SIGTERM during the sweep stops the sweep only: the report holds the run and the
    sweep's finished runs, its sweep marked partial (130 or 143)."""
    chosen = chosen_scenario(args)  # loaded once: its warnings are told once
    scenario = _scenario_to_run(args, chosen)
    plan = ReportPlan.from_args(args, scenario, chosen)
    # report writes a file: progress on a terminal
    result, token = _simulate(scenario, limits)
    stopped = stopped_line(result)
    if stopped or not plan.grid:
        print(plan.write(result, with_sweep=False))
        if stopped:
            print(stopped)
        return exit_status(token) if stopped else 0
    runs = len(grid_points(plan.grid)) * len(plan.seeds)
    print(
        f"sweeping {runs} runs around it; Ctrl-C stops the sweep and writes the report with the "
        "runs that finished",
        file=sys.stderr,
    )
    with cancel_on_signals(Cancel()) as sweep_token, sweep_progress() as progress:
        print(plan.write(result, progress=progress, cancel=sweep_token))
    return exit_status(sweep_token) if sweep_token.cancelled else 0
