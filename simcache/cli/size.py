"""`simcache size`: the cheapest configuration that meets the targets (:mod:`simcache.runs.size`),
printed, as JSON, or as an HTML report (``-o``) with the frontier and the winner's full run.

Progress: a bar on a terminal, plain lines when stderr is piped, nothing with ``--json``. Ctrl-C (or
SIGTERM) stops the search: what was judged so far is printed, and with ``--store`` a rerun resumes
from the runs that finished.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simcache.base.units import UnitError, parse_duration
from simcache.cli.sweep import sweep_progress
from simcache.report.size_report import size_html
from simcache.runs.simulate import simulate
from simcache.runs.size import SizeInterrupted, size
from simcache.runs.sizing.answer import SizeAnswer
from simcache.runs.sizing.costs import SizeError
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
    """Run the search and print its answer; exit 0 with an answer, 1 with none, 130 when
    interrupted."""
    if args.seeds < 1:
        raise SizeError("--seeds", [("--seeds", f"must be at least 1 (got {args.seeds})")])
    scenario = load_scenario(args.scenario)
    interrupted = False
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
            )
    except SizeInterrupted as stop:
        answer, interrupted = stop.answer, True
        kept = (
            f"; runs kept in {args.store}: rerun the same command to resume"
            if args.store
            else "; give --store PATH to keep runs"
        )
        print(
            f"\ninterrupted: the answer below covers the configurations judged so far{kept}",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(answer.to_json(), indent=2))
    else:
        print("\n".join(answer.lines()))
    if args.out is not None and not interrupted:
        _write_html(args, answer)
    if interrupted:
        return 130
    return 0 if answer.best is not None else 1


def _write_html(args: argparse.Namespace, answer: SizeAnswer) -> None:
    winner = answer.winner
    result = None
    if winner is not None:
        run = load_scenario(args.scenario).with_overrides(winner.overrides, source="the answer")
        seed = (winner.confirmed_seeds or winner.seeds)[0]
        result = simulate(run, seed=seed, duration=args.duration)
    command = "simcache size " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "simcache size"
    html = size_html(answer, result, command=command)
    args.out.write_text(html, "utf-8")
    print(
        f"report written to {args.out} ({len(html.encode()):,} bytes)",
        file=sys.stderr if args.json else sys.stdout,
    )
