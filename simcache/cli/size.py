"""`simcache size`: the cheapest configuration that meets the targets (:mod:`simcache.runs.size`),
printed, as JSON, or as an HTML report (``-o``) with the frontier and the winner's full run.

Progress: a bar on a terminal, plain lines when stderr is piped, nothing with ``--json``. Ctrl-C or
SIGTERM stops the search: the answer over the configurations judged so far is printed and written
(``-o``) marked partial, with how many were judged of how many; the exit status is 130 or 143, and
with ``--store`` a rerun resumes from the runs that finished.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from simcache.base.units import UnitError, parse_duration
from simcache.cli.outputs import output_file
from simcache.cli.sweep import sweep_progress
from simcache.report.size_report import size_html
from simcache.runs.simulate import simulate
from simcache.runs.size import SizeInterrupted, size
from simcache.runs.sizing.answer import SizeAnswer
from simcache.runs.sizing.costs import SizeError
from simcache.runs.workers import reach_scheduler, scheduler_address
from simcache.sim.control import Cancel, cancel_on_signals, exit_status, stopped_at
from simcache.spec import load_scenario

__all__ = ["add_size_parser", "run_size"]


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_size_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``size`` subcommand and its options."""
    cmd = sub.add_parser(
        "size",
        help=(
            "find the cheapest configuration that meets latency and throughput targets (estimate "
            "+ simulation)"
        ),
    )
    cmd.add_argument(
        "scenario",
        help="a scenario TOML file (e.g. from simcache import), or a built-in scenario's name",
    )
    cmd.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="TARGET",
        help=(
            'a target as in report --target, e.g. "write p99 <= 5ms", "db write p99.9 <= 20ms", '
            '"write iops >= 4000" (repeatable)'
        ),
    )
    cmd.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="PATH = VALUES",
        help="a dimension: \"cluster.peer_link = ['1GbE', '10GbE']\", \"cluster.hosts = 3:8\" or "
        '"cluster.destager.capacity = 1GiB:16GiB" (repeatable)',
    )
    cmd.add_argument(
        "--costs",
        type=Path,
        default=None,
        help="a price TOML over the built-in table (docs/sizing.md)",
    )
    cmd.add_argument(
        "--seeds", type=int, default=3, help="seeds per configuration (default 3); seeds 1..N"
    )
    cmd.add_argument(
        "--max-seeds",
        type=int,
        default=None,
        help="most seeds where an interval straddles a limit (default 3 x --seeds)",
    )
    cmd.add_argument(
        "--confirm-seeds",
        type=int,
        default=None,
        help="fresh seeds confirming the answer (default as --seeds)",
    )
    cmd.add_argument(
        "--duration",
        type=_duration,
        default=None,
        help='simulated time of each run, e.g. "10s" (default: run.duration)',
    )
    cmd.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes (default: one per core; 1 = no pool)",
    )
    cmd.add_argument(
        "--scheduler",
        default=None,
        help='run on Dask: a scheduler address (tcp://host:8786) or "local"',
    )
    cmd.add_argument(
        "--store",
        type=Path,
        default=None,
        help="SQLite sweep store that runs stream into; rerun with it to resume",
    )
    cmd.add_argument(
        "--all",
        action="store_true",
        help="simulate the configurations dearer than the answer too (a full frontier)",
    )
    cmd.add_argument(
        "--no-prune", action="store_true", help="simulate what the estimate would prune"
    )
    cmd.add_argument(
        "--json",
        action="store_true",
        help='print {"best", "candidates", "frontier"} as JSON (no progress)',
    )
    cmd.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        help="also write an HTML report: frontier, candidates, the winner's full run",
    )


def run_size(args: argparse.Namespace) -> int:
    """Run the search and print its answer; exit 0 with an answer, 1 with none, 130 (Ctrl-C) or 143
    (SIGTERM) when stopped.

    The first Ctrl-C or SIGTERM cancels the search's token: it starts nothing more, stops its
    running run and returns what it judged; a second Ctrl-C raises :class:`SizeInterrupted` with
    the same partial answer. Either way the answer is printed and written (``-o``) marked partial.
    """
    if args.out is not None:
        output_file(args.out, "-o")
    if args.seeds < 1:
        raise SizeError("--seeds", [("--seeds", f"must be at least 1 (got {args.seeds})")])
    if args.scheduler is not None:
        scheduler_address(args.scheduler)  # "local" or tcp://HOST:PORT
    scenario = load_scenario(args.scenario)
    if args.scheduler is not None:
        # a scheduler there, within seconds, before the signals only cancel the token: Ctrl-C or
        # SIGTERM during this wait ends the command at once
        reach_scheduler(args.scheduler)
    with cancel_on_signals(Cancel()) as token:
        try:
            with sweep_progress(quiet=args.json) as progress:
                answer = size(
                    scenario,
                    args.target,
                    args.vary,
                    prices=args.costs,
                    seeds=list(range(1, args.seeds + 1)),
                    duration=args.duration,
                    workers=args.workers,
                    scheduler=args.scheduler,
                    store=args.store,
                    max_seeds=args.max_seeds,
                    confirm_seeds=args.confirm_seeds,
                    prune=not args.no_prune,
                    simulate_all=args.all,
                    progress=progress,
                    cancel=token,
                )
        except SizeInterrupted as stop:
            answer = stop.answer
        if args.json:
            print(json.dumps(answer.to_json(), indent=2))
        else:
            print("\n".join(answer.lines()))
        run_cut = args.out is not None and not _write_html(args, answer, token)
        if answer.stopped:
            print(_stopped_line(args, answer), file=sys.stderr)
    if answer.stopped:
        return exit_status(token) if token.signal is not None else 128 + signal.SIGINT
    if run_cut:  # the answer is whole, its report's run was stopped
        return exit_status(token)
    return 0 if answer.best is not None else 1


def _stopped_line(args: argparse.Namespace, answer: SizeAnswer) -> str:
    """What a stopped search says on stderr: how far it got, what was kept."""
    kept = (
        f"the finished runs are kept in {args.store}: run the same command again to resume"
        if args.store
        else "none of its runs were kept (no --store); give --store PATH to resume after a stop"
    )
    return f"interrupted: {answer.partial_note()}.\n{kept}"


def _write_html(args: argparse.Namespace, answer: SizeAnswer, token: Cancel) -> bool:
    """Write the ``-o`` page; False if a stop cut the answer's run short (the page says so and
    leaves it out). A stopped search's page holds its partial answer and no run of the answer: a
    stop starts no new simulation."""
    winner = answer.winner
    result = None
    left_out = ""
    if winner is not None and answer.stopped:
        left_out = "The answer's run is not included: the search was stopped."
    elif winner is not None:
        run = load_scenario(args.scenario).with_overrides(winner.overrides, source="the answer")
        seed = (winner.confirmed_seeds or winner.seeds)[0]
        result = simulate(run, seed=seed, duration=args.duration, cancel=token)
        if stopped_at(result) is not None:
            left_out = (
                f"The answer's run is not included: it was stopped ({token.reason}) before its "
                "end. The answer above is complete."
            )
            result = None
    command = "simcache size " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "simcache size"
    html = size_html(answer, result, command=command, left_out=left_out)
    args.out.write_text(html, "utf-8")
    what = "partial report" if answer.stopped else "report"
    print(
        f"{what} written to {args.out} ({len(html.encode()):,} bytes)",
        file=sys.stderr if args.json else sys.stdout,
    )
    if left_out and not answer.stopped:
        print(
            f"interrupted ({token.reason}): the report leaves out the answer's run; the answer "
            "is complete",
            file=sys.stderr,
        )
        return False
    return True
