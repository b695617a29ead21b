"""The command line's entry point: ``simcache`` and its arguments parsed, each subcommand handed to
the module that runs it.

:func:`main` parses ``simcache
run|sweep|size|check|estimate|report|import|fit|compare-trace|calibrate|profiles|app`` (every
subcommand's arguments, options and help are here, but ``size``'s and the report options, which
their modules add) and calls the subcommand: ``run`` and ``report`` in :mod:`simcache.cli.run`,
``estimate`` in :mod:`simcache.cli.estimate`, ``import``, ``fit`` and ``compare-trace`` in
:mod:`simcache.cli.ingest`, ``calibrate`` and ``profiles`` in :mod:`simcache.cli.devices`, the
others in the module of their name.

Every subcommand goes through the public API; bad input prints the
:class:`~simcache.base.errors.ScenarioError` message (file, field, fix) and exits 2.
``run``, ``report``, ``sweep`` and ``check`` draw a progress bar on a terminal
(:mod:`simcache.cli.progress`); ``run``, ``estimate``, ``sweep`` and ``check``
print JSON for scripts with ``--json`` (and then no progress).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from simcache.base.errors import ScenarioError
from simcache.base.units import UnitError, parse_duration, parse_size
from simcache.cli.app import APP_DESCRIPTION, APP_EPILOG, run_app
from simcache.cli.check import run_check
from simcache.cli.devices import run_calibrate, run_profiles
from simcache.cli.estimate import run_estimate
from simcache.cli.ingest import run_compare_trace, run_fit, run_import
from simcache.cli.report import add_report_options
from simcache.cli.run import run_report, run_scenario
from simcache.cli.size import add_size_parser, run_size
from simcache.cli.sweep import run_sweep
from simcache.sim.control import DEFAULT_LIMITS, MAX_IOS_ENV, MAX_MEMORY_ENV, NO_LIMITS, Limits
from simcache.spec import REPLICAS, TRACE_FORMATS, ScenarioWarning
from simcache.spec.library import local_or_example
from simcache.spec.profiles import KINDS
from simcache.traces.formats import FORMATS
from simcache.workloads.calibrate.device import KINDS as CALIBRATE_KINDS
from simcache.workloads.ingest.imported import DEFAULT_POLICY

__all__ = ["main"]


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simcache",
        description="Simulate host-side write-back caching and its VM-observed latency.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one scenario and print its latency table")
    run.add_argument(
        "scenario", help="a scenario TOML file, or the name of a built-in scenario (e.g. default)"
    )
    run.add_argument(
        "--variant",
        default=None,
        help="run one of the scenario's [variants.NAME] instead of the scenario as written",
    )
    run.add_argument(
        "--seed", type=int, default=None, help="random seed (default: the scenario's run.seed)"
    )
    run.add_argument(
        "--duration",
        type=_duration,
        default=None,
        help=(
            'simulated time, e.g. "30s" (default: run.duration); a shorter run than the '
            "file's takes its time from the warm-up first, down to a tenth of the run; a longer "
            "one keeps the warm-up (a note says when it is cut)"
        ),
    )
    run.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for records, series, summary (CSV + Parquet) and meta.json",
    )
    run.add_argument(
        "--json", action="store_true", help="print the summary as JSON instead of tables"
    )
    kept = run.add_mutually_exclusive_group()
    kept.add_argument(
        "--records",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the per-I/O records table to this Parquet file",
    )
    kept.add_argument(
        "--no-records",
        action="store_true",
        help=(
            "keep latency histograms and counters instead of per-I/O records: memory flat in run "
            "length, percentiles within 1%%"
        ),
    )
    _limit_options(run)

    sweep_cmd = sub.add_parser("sweep", help="run a grid of overrides x seeds")
    sweep_cmd.add_argument(
        "grid",
        type=Path,
        help=(
            'TOML with scenario = "PATH", seeds = [..], and a [grid] table of dotted.path = '
            "[values]"
        ),
    )
    sweep_cmd.add_argument(
        "--duration",
        type=_duration,
        default=None,
        help=(
            "simulated time of every run, e.g. 30s (replaces the scenario's run.duration, and "
            "its warm-up if that would not leave a window; default: the scenario's)"
        ),
    )
    sweep_cmd.add_argument(
        "--out",
        type=Path,
        default=None,
        help=(
            "CSV file for the table (default: print it); a sweep stopped by Ctrl-C or SIGTERM "
            "writes the rows it finished, with a last column 'partial' saying how far it got"
        ),
    )
    sweep_cmd.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes (default: one per core; 1 = no pool)",
    )
    sweep_cmd.add_argument(
        "--scheduler",
        default=None,
        help='run on Dask: a scheduler address (tcp://host:8786) or "local"',
    )
    sweep_cmd.add_argument(
        "--store",
        type=Path,
        default=None,
        help=(
            "SQLite file that rows stream into; rerun with it to resume (sweeps running at once "
            "share its finished runs)"
        ),
    )
    sweep_cmd.add_argument(
        "--until",
        default=None,
        metavar="METRIC=WIDTH",
        help=(
            "add seeds until METRIC's 95%% interval is within WIDTH (a fraction above 0) of its "
            "mean, e.g. all.write.mean_ms=0.05; says after the sweep which points did not get "
            "there by --max-seeds"
        ),
    )
    sweep_cmd.add_argument(
        "--max-seeds",
        type=int,
        default=30,
        help="most seeds per point with --until, at least 1 (default 30)",
    )
    sweep_cmd.add_argument(
        "--summary",
        action="store_true",
        help="one line per point: write and read mean and p99 over every group (means over the "
        "seeds), stability and bottleneck; with --out or --json, every column of every point "
        "(means and 95%% intervals)",
    )
    sweep_cmd.add_argument(
        "--json",
        action="store_true",
        help="print the table as JSON (scenario, grid, seeds, rows; no progress)",
    )

    add_size_parser(sub)

    check = sub.add_parser(
        "check", help="run the [[expect]] checks of scenario files and print expected vs simulated"
    )
    check.add_argument(
        "paths",
        nargs="+",
        type=Path,
        help="scenario TOML files or folders of them (e.g. scenarios/)",
    )
    check.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="seeds per check (default: each scenario's [check] seeds)",
    )
    check.add_argument(
        "--duration",
        type=_duration,
        default=None,
        help="replace every run's duration (windows must still fit)",
    )
    check.add_argument(
        "--report",
        type=Path,
        default=None,
        help="also write a Markdown validation report to this file",
    )
    check.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    check.add_argument(
        "--json",
        action="store_true",
        help="print the checks' outcomes as JSON instead of lines (no progress)",
    )
    check.add_argument(
        "--workers",
        type=int,
        default=None,
        help=(
            "processes running a check's seeds at once (default: one per core; 1 = in this process)"
        ),
    )
    check.add_argument(
        "--scheduler",
        default=None,
        help='run the seeds on Dask: a scheduler address (tcp://host:8786) or "local"',
    )
    _limit_options(check)

    estimate_cmd = sub.add_parser(
        "estimate", help="analytic estimate of a scenario in milliseconds (no simulation)"
    )
    estimate_cmd.add_argument(
        "scenario", help="a scenario TOML file, or the name of a built-in scenario (e.g. default)"
    )
    estimate_cmd.add_argument(
        "--variant", default=None, help="estimate one of the scenario's [variants.NAME] instead"
    )
    estimate_cmd.add_argument(
        "--duration",
        type=_duration,
        default=None,
        help='time span to estimate, e.g. "30s" (default: run.duration)',
    )
    estimate_cmd.add_argument(
        "--json", action="store_true", help="print the estimate as JSON instead of tables"
    )

    imp = sub.add_parser(
        "import", help="turn a fio job or result, vscsiStats file or block trace into a scenario"
    )
    shipped = "or an example's name"
    imp.add_argument("path", type=local_or_example, help=f"the file ({shipped}, oltp.fio)")
    imp.add_argument(
        "--format",
        choices=list(FORMATS),
        default=None,
        help="the file's format (default: guessed from its start)",
    )
    imp.add_argument(
        "-o", "--out", type=Path, default=None, help="scenario TOML to write (default: print it)"
    )
    imp.add_argument(
        "--base",
        default=None,
        help="scenario whose run, cluster and array the workload goes on (default: default)",
    )
    imp.add_argument(
        "--policy",
        choices=list(REPLICAS),
        default=DEFAULT_POLICY,
        help=f"write policy of the imported groups (default {DEFAULT_POLICY})",
    )
    imp.add_argument(
        "-O",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a format option, e.g. -O time_unit=ms (repeatable)",
    )

    fit_cmd = sub.add_parser(
        "fit",
        help=(
            "derive a synthetic workload from a block trace: rate profile, size mix, read share, "
            "locality"
        ),
        description=(
            "Fit an open-loop synthetic workload to a block trace. Arrivals: the trace's I/O "
            "count of every interval as a rate profile, with evenly spaced or Poisson arrivals "
            "within each step; the interval and law are the coarsest of 1s, 100ms, 10ms, 1ms (no "
            "finer than the trace's timestamps) whose inter-arrival times' squared coefficient of "
            "variation (SCV) is within 10% of the trace's, the mean kept by the mean rate (a "
            "trace with whole-second timestamps: every second's count, evenly spaced). The "
            "working set is the one over which the fitted access law touches as many blocks as "
            "the trace did; when the trace does not identify it (every block touched once, or "
            "no law reaches its footprint) it is printed as a lower bound with a warning."
        ),
    )
    fit_cmd.add_argument("path", type=local_or_example, help=f"the trace ({shipped}, vm-burst.csv)")
    fit_cmd.add_argument(
        "--format",
        choices=list(TRACE_FORMATS),
        default=None,
        help="the trace's format (default: guessed from its start)",
    )
    fit_cmd.add_argument(
        "-O",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a format option, e.g. -O time_unit=ms (repeatable)",
    )
    fit_cmd.add_argument(
        "--device", default=None, help="fit this trace device only (default: one group per device)"
    )
    fit_cmd.add_argument(
        "--interval",
        type=_duration,
        default=None,
        help=(
            'seconds per step of the fitted rate profile, e.g. "100ms" (default: chosen by the '
            "inter-arrival SCV, above)"
        ),
    )
    fit_cmd.add_argument(
        "-o", "--out", type=Path, default=None, help="scenario TOML to write (default: print it)"
    )
    fit_cmd.add_argument(
        "--base",
        default=None,
        help="scenario whose run, cluster and array the workload goes on (default: default)",
    )
    fit_cmd.add_argument(
        "--policy",
        choices=list(REPLICAS),
        default=DEFAULT_POLICY,
        help=f"write policy of the fitted groups (default {DEFAULT_POLICY})",
    )

    compare_cmd = sub.add_parser(
        "compare-trace",
        help="a trace's statistics next to a fitted scenario's synthetic I/O (no simulation)",
        description=(
            "Each open-loop group's synthetic I/O next to the trace (the device of the group's "
            "name, else the whole trace), with relative errors: 100ms rows (busiest 100ms, "
            "dispersion of the 100ms counts) when the trace's timestamps are that fine, the "
            "inter-arrival time's mean and SCV when they are finer than a second, 1s and 60s "
            "rows, rate, read share, sizes, read hit ratios and all-I/O (read and write) hit "
            "ratios at 1/10/50/100% of the trace's footprint, and the footprint."
        ),
    )
    compare_cmd.add_argument(
        "path", type=local_or_example, help=f"the trace file ({shipped}, vm-burst.csv)"
    )
    compare_cmd.add_argument(
        "scenario", help="the scenario with the synthetic workload (e.g. written by simcache fit)"
    )
    compare_cmd.add_argument(
        "--format",
        choices=list(TRACE_FORMATS),
        default=None,
        help="the trace's format (default: guessed)",
    )
    compare_cmd.add_argument(
        "-O",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a format option (repeatable)",
    )
    compare_cmd.add_argument(
        "--seed", type=int, default=0, help="seed of the synthetic I/O stream (default 0)"
    )

    calibrate_cmd = sub.add_parser(
        "calibrate",
        help="fit a device profile to fio JSON results of one device at several queue depths",
    )
    calibrate_cmd.add_argument(
        "files",
        nargs="+",
        type=Path,
        help="fio --output-format=json results of one raw device (direct=1)",
    )
    calibrate_cmd.add_argument(
        "--kind",
        choices=list(CALIBRATE_KINDS),
        default="tier",
        help="the device kind to fit (default tier)",
    )
    calibrate_cmd.add_argument(
        "--base",
        default=None,
        help=(
            "profile giving the fields fio cannot measure (tier: nvme-p3700 for /dev/nvme*, else "
            "sata-ssd-s3700; drive: sata-7200)"
        ),
    )
    calibrate_cmd.add_argument(
        "--rpm",
        type=float,
        default=None,
        help="--kind drive: the drive's rotational speed (default: the base's)",
    )
    calibrate_cmd.add_argument(
        "-o", "--out", type=Path, default=None, help="device TOML to write (default: print it)"
    )

    report_cmd = sub.add_parser(
        "report",
        help="run a scenario (and a sweep around it) and write one self-contained HTML report",
    )
    report_cmd.add_argument(
        "scenario", help="a scenario TOML file, or the name of a built-in scenario (e.g. default)"
    )
    report_cmd.add_argument(
        "--variant", default=None, help="report one of the scenario's [variants.NAME] instead"
    )
    report_cmd.add_argument(
        "--seed", type=int, default=None, help="random seed (default: the scenario's run.seed)"
    )
    report_cmd.add_argument(
        "--duration",
        type=_duration,
        default=None,
        help=(
            'simulated time, e.g. "30s" (default: run.duration); a shorter run than the '
            "file's takes its time from the warm-up first, down to a tenth of the run; a longer "
            "one keeps the warm-up (a note says when it is cut)"
        ),
    )
    add_report_options(report_cmd)
    _limit_options(report_cmd)

    profiles = sub.add_parser(
        "profiles", help="list built-in tier, link, drive and array profiles with their sources"
    )
    profiles.add_argument(
        "kind",
        nargs="?",
        metavar="KIND|NAME",
        help=f"only this kind ({', '.join(KINDS)}) or this one profile (e.g. nvme-pm9a3)",
    )

    about = "start the what-if page in Streamlit (the app extra); Streamlit's options may follow"
    sub.add_parser(
        "app",
        help=about,
        description=APP_DESCRIPTION,
        epilog=APP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="simcache app [STREAMLIT OPTIONS]",
    )
    return parser


def _size(text: str) -> float:
    try:
        value = float(parse_size(text))
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive size, e.g. 16GiB (got {text!r})")
    return value


def _positive_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"must be a positive whole number, e.g. 50000000 (got {text!r})"
        )
    return value


def _limit_options(parser: argparse.ArgumentParser) -> None:
    """The options that bound one run's expected work (see simcache.sim.control); Ctrl-C and
    SIGTERM stop a run early."""
    default = DEFAULT_LIMITS
    parser.add_argument(
        "--max-ios",
        type=_positive_count,
        default=None,
        metavar="N",
        help=(
            f"refuse a run expected to issue more than N I/Os (default {default.max_ios:,.0f}, or "
            f"${MAX_IOS_ENV})"
        ),
    )
    parser.add_argument(
        "--max-memory",
        type=_size,
        default=None,
        metavar="SIZE",
        help=f'refuse a run expected to hold more memory, e.g. "16GiB" '
        f"(default {default.max_memory_bytes / 2**30:g}GiB, or ${MAX_MEMORY_ENV})",
    )
    parser.add_argument(
        "--no-limit",
        action="store_true",
        help=(
            "run whatever the expected work (Ctrl-C or SIGTERM still stops it with a partial "
            "result)"
        ),
    )


def _limits(args: argparse.Namespace) -> Limits:
    if args.no_limit:
        return NO_LIMITS
    limits = Limits.from_env()
    if args.max_ios is not None:
        limits = replace(limits, max_ios=args.max_ios)
    if args.max_memory is not None:
        limits = replace(limits, max_memory_bytes=args.max_memory)
    return limits


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``simcache`` with ``argv`` (default: the process's arguments); the exit status."""
    parser = _parser()
    args, streamlit_options = parser.parse_known_args(argv)
    if streamlit_options and args.command != "app":
        parser.error(f"unrecognized arguments: {' '.join(streamlit_options)}")
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _plain_scenario_warnings(warnings.showwarning)
            return _dispatch(args, streamlit_options)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


def _plain_scenario_warnings(show: Any) -> Any:
    """``warnings.showwarning`` that prints a scenario's warnings (:class:`ScenarioWarning`: the
    file, the field and the fix) as ``warning: ...`` lines, as the errors are printed, and hands the
    others to ``show``."""

    def plain(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, ScenarioWarning):
            print(f"warning: {message}", file=sys.stderr, flush=True)
        else:
            show(message, category, *args, **kwargs)

    return plain


def _dispatch(args: argparse.Namespace, streamlit_options: list[str]) -> int:
    """The command ``args`` names, run; its exit status."""
    commands: dict[str, Callable[[], int]] = {
        "app": lambda: run_app(streamlit_options),
        "run": lambda: run_scenario(args, _limits(args)),
        "sweep": lambda: run_sweep(args),
        "size": lambda: run_size(args),
        "check": lambda: run_check(args, _limits(args)),
        "estimate": lambda: run_estimate(args),
        "import": lambda: run_import(args),
        "fit": lambda: run_fit(args),
        "report": lambda: run_report(args, _limits(args)),
        "compare-trace": lambda: run_compare_trace(args),
        "calibrate": lambda: run_calibrate(args),
    }
    return commands.get(args.command, lambda: run_profiles(args))()


if __name__ == "__main__":
    raise SystemExit(main())
