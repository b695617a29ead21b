"""Command line: ``simcache
run|sweep|size|check|estimate|report|import|fit|compare-trace|calibrate|profiles|app``.

Every subcommand goes through the public API; bad input prints the
:class:`~simcache.base.errors.ScenarioError` message (file, field, fix) and exits 2.
``run``, ``report``, ``sweep`` and ``check`` draw a progress bar on a terminal
(:mod:`simcache.cli.progress`); ``run``, ``estimate``, ``sweep`` and ``check``
print JSON for scripts with ``--json`` (and then no progress).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from simcache.base.errors import ScenarioError, listing
from simcache.base.metrics import PERCENTILES, THROUGHPUT_COLUMNS
from simcache.base.names import group_name
from simcache.base.units import UnitError, parse_duration, parse_size
from simcache.cli.app import run_app
from simcache.cli.check import run_check
from simcache.cli.devices import run_calibrate, run_profiles
from simcache.cli.progress import progress_bar, shows_progress
from simcache.cli.report import ReportPlan, add_report_options
from simcache.cli.size import add_size_parser, run_size
from simcache.cli.sweep import run_sweep, sweep_progress
from simcache.estimate import estimate
from simcache.report.run_report import report, stopped_line, text_table
from simcache.results.event_impact import impacts_json
from simcache.results.result import Result
from simcache.runs.simulate import simulate
from simcache.runs.sweep import grid_points
from simcache.sim.control import (
    DEFAULT_LIMITS,
    MAX_IOS_ENV,
    MAX_MEMORY_ENV,
    NO_LIMITS,
    Cancel,
    Limits,
    cancel_on_signals,
    check_work,
    exit_status,
)
from simcache.spec import REPLICAS, TRACE_FORMATS, Scenario, load_scenario
from simcache.spec.library import local_or_example
from simcache.spec.profiles import KINDS
from simcache.traces.formats import FORMATS, load_trace, parse_option
from simcache.workloads.calibrate.device import KINDS as CALIBRATE_KINDS
from simcache.workloads.ingest.fit import compare, fit_trace
from simcache.workloads.ingest.imported import DEFAULT_POLICY, Imported, import_workload

__all__ = ["main"]

_SUMMARY_COLUMNS = ["group", "op", *THROUGHPUT_COLUMNS, *PERCENTILES, "mean_ms"]
"""The summary table as `estimate` prints it."""


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
        help='simulated time, e.g. "30s" (default: run.duration)',
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
    sweep_cmd.add_argument("--duration", type=_duration, default=None)
    sweep_cmd.add_argument(
        "--out", type=Path, default=None, help="CSV file for the table (default: print it)"
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
            "add seeds until METRIC's 95%% interval is within WIDTH of its mean, e.g. "
            "all.write.mean_ms=0.05"
        ),
    )
    sweep_cmd.add_argument(
        "--max-seeds", type=int, default=30, help="most seeds per point with --until (default 30)"
    )
    sweep_cmd.add_argument(
        "--summary",
        action="store_true",
        help="one row per point: mean and 95%% interval over seeds",
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
        default=1.0,
        help='seconds per step of the fitted rate profile (default "1s")',
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
    )
    compare_cmd.add_argument("path", type=Path, help="the trace file")
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
        help='simulated time, e.g. "30s" (default: run.duration)',
    )
    add_report_options(report_cmd)
    _limit_options(report_cmd)

    profiles = sub.add_parser(
        "profiles", help="list built-in tier, link, drive and array profiles with their sources"
    )
    profiles.add_argument("kind", nargs="?", choices=list(KINDS), help="only this kind")

    about = "start the what-if page in Streamlit (the app extra); Streamlit's options may follow"
    sub.add_parser("app", help=about)
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
    parser = _parser()
    args, streamlit_options = parser.parse_known_args(argv)
    if streamlit_options and args.command != "app":
        parser.error(f"unrecognized arguments: {' '.join(streamlit_options)}")
    try:
        if args.command == "app":
            return run_app(streamlit_options)
        if args.command == "run":
            return _run(args)
        if args.command == "sweep":
            return run_sweep(args)
        if args.command == "size":
            return run_size(args)
        if args.command == "check":
            return run_check(args, _limits(args))
        if args.command == "estimate":
            return _estimate(args)
        if args.command == "import":
            return _import(args)
        if args.command == "fit":
            return _fit(args)
        if args.command == "report":
            return _report(args)
        if args.command == "compare-trace":
            return _compare_trace(args)
        if args.command == "calibrate":
            return run_calibrate(args)
        return run_profiles(args)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


def _scenario(args: argparse.Namespace) -> Scenario:
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


def _run_scenario(args: argparse.Namespace) -> Scenario:
    """The scenario of ``run`` or ``report``: :func:`_scenario` with ``--seed`` and
    ``--duration`` applied."""
    scenario = _scenario(args)
    if args.seed is not None:
        scenario = scenario.with_seed(args.seed)
    if args.duration is not None:
        scenario = scenario.with_duration(args.duration)
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
    with cancel_on_signals(Cancel()) as token:
        print(
            f"simulating {scenario.name!r} for {scenario.run.duration:g} s{expected}; Ctrl-C stops "
            "it and keeps the partial result",
            file=sys.stderr,
            flush=True,
        )
        with progress_bar(
            f"simulating {scenario.run.duration:g} s", enabled=shows_progress(json_output)
        ) as bar:
            # checked above
            result = simulate(
                scenario,
                progress=bar.update,
                cancel=token,
                limits=NO_LIMITS,
                keep_records=keep_records,
            )
    return result, token


def _run(args: argparse.Namespace) -> int:
    """Run one scenario; Ctrl-C or SIGTERM stops it, prints the partial result and exits 130 or
    143."""
    result, token = _simulate(
        _run_scenario(args), _limits(args), args.json, keep_records=not args.no_records
    )
    stopped = stopped_line(result)
    if stopped:
        print(stopped, file=sys.stderr if args.json else sys.stdout, flush=True)
    if args.out is not None:
        result.save(args.out)
    if args.records is not None:
        args.records.parent.mkdir(parents=True, exist_ok=True)
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


def _report(args: argparse.Namespace) -> int:
    """Run the scenario, then the sweep around it (not after a stop), and write the HTML report;
    a stopped run's report is written too, marked partial, and the exit status is 130 or 143.
    Ctrl-C or SIGTERM during the sweep stops the sweep only: the report holds the run and the
    sweep's finished runs, its sweep marked partial (130 or 143)."""
    scenario = _run_scenario(args)
    plan = ReportPlan.from_args(args, scenario)
    # report writes a file: progress on a terminal
    result, token = _simulate(scenario, _limits(args))
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


_NOT_STABLE = (
    "NOT STABLE: an open-loop load exceeds a component's capacity; latency there is unbounded (see "
    "warnings)"
)


def _estimate(args: argparse.Namespace) -> int:
    """Print the analytic estimate: summary table, utilizations, bottleneck and the destage
    buffer's fluid figures."""
    result = estimate(_scenario(args), duration=args.duration)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    start, end = result.window
    # overloaded cells
    summary = result.summary.astype(object).where(~result.summary.isin([math.inf]), "unbounded")
    lines = [
        f"scenario {result.scenario.name!r}  analytic estimate over {start:g}-{end:g}s (no "
        "simulation; see docs/estimate.md)",
        *([] if result.stable else [_NOT_STABLE]),
        "",
        "Latency per VM group (ms), IOPS and MB/s:",
        text_table(summary, _SUMMARY_COLUMNS),
        "",
        "Busiest components (mean utilization over the window):",
    ]
    busiest = sorted(result.utilization.items(), key=lambda item: -item[1])[:8]
    lines.append(
        text_table(pd.DataFrame(busiest, columns=["component", "mean"]), ["component", "mean"])
    )
    name, utilization = result.bottleneck()
    lines += [
        "",
        f"bottleneck: {name} at {utilization:.0%} mean utilization",
        "",
        "Destage buffer (fluid model):",
    ]
    for fluid in result.destager:
        if fluid.accept_rate_bytes_s <= 0:
            continue
        lines.append(
            f"  {fluid.host}: accepts {fluid.accept_rate_bytes_s / 1e6:.1f} MB/s at peak, "
            f"drains {fluid.drain_rate_bytes_s / 1e6:.1f} MB/s; "
            f"fills in {fluid.fill_time_s:.3g}s, drains in {fluid.drain_time_s:.3g}s; "
            f"full {fluid.full_fraction:.0%} of the window (accepting "
            f"{fluid.accepted_while_full_bytes_s / 1e6:.1f} MB/s while full); "
            f"peak backlog {fluid.peak_backlog_bytes / 2**20:.0f} MiB"
        )
    lines += [""] * bool(result.warnings) + [f"warning: {warning}" for warning in result.warnings]
    lines += [f"note: {note}" for note in result.notes]
    print("\n".join(lines))
    return 0


def _import(args: argparse.Namespace) -> int:
    options = dict(parse_option(text) for text in args.option)
    imported = import_workload(args.path, args.format, **options)
    return _write_scenario(args, imported, imported.format, f"run it with: simcache run {args.out}")


def _write_scenario(
    args: argparse.Namespace, imported: Imported, heading: str, next_step: str
) -> int:
    """Print what was imported and write its scenario to ``--out`` (or print it); refuse one that
    does not load."""
    imported.scenario(args.base, args.policy)
    text = imported.toml(
        args.base, args.policy, folder=None if args.out is None else args.out.parent
    )
    out = sys.stderr if args.out is None else sys.stdout
    print(f"{args.path}: {heading}", file=out)
    for what, value in imported.facts:
        print(f"  {what}: {value}", file=out)
    for warning in imported.warnings:
        print(f"  warning: {warning}", file=out)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
        print(f"scenario written to {args.out}; {next_step}", file=out)
    return 0


def _fit(args: argparse.Namespace) -> int:
    """Import a trace, replace each device's replay group by its fitted synthetic workload, and
    write the scenario."""
    options = dict(parse_option(text) for text in args.option)
    imported = import_workload(args.path, args.format, **options)
    if imported.trace is None:
        raise ScenarioError(
            str(args.path),
            [("format", f"{imported.format} is not a trace; fit takes {', '.join(TRACE_FORMATS)}")],
        )
    groups, facts = [], []
    for group in imported.groups:
        device = group["workload"]["trace"]["devices"][0]
        if args.device is not None and device != args.device:
            continue
        try:
            fitted = fit_trace(imported.trace, device, args.interval)
        except ValueError as exc:
            raise ScenarioError(
                str(args.path), [("--device" if args.device else "trace", str(exc))]
            ) from None
        groups.append(
            {**group, "workload": fitted.workload.model_dump(mode="json", exclude_defaults=True)}
        )
        facts += [(f"{group['name']}: {what}", value) for what, value in fitted.facts]
    if not groups:
        devices = ", ".join(g["workload"]["trace"]["devices"][0] for g in imported.groups)
        raise ScenarioError(
            str(args.path),
            [
                (
                    "--device",
                    f"no device {args.device!r} with reads or writes; the trace has {devices}",
                )
            ],
        )
    fitted_import = replace(
        imported,
        groups=groups,
        facts=[*imported.facts, *facts],
        format=f"{imported.format}, fitted by simcache fit",
    )
    return _write_scenario(
        args,
        fitted_import,
        imported.format,
        f"compare it with: simcache compare-trace {args.path} {args.out}",
    )


def _compare_trace(args: argparse.Namespace) -> int:
    """Each open-loop group next to the trace device of its name (the whole trace when no device
    has it)."""
    options = dict(parse_option(text) for text in args.option)
    trace = load_trace(args.path, args.format, options)
    scenario = load_scenario(args.scenario)
    used: set[str] = set()
    # the names simcache import gives them
    by_name = {group_name(device, used): device for device in trace.devices}
    compared = 0
    for group in scenario.groups:
        if group.workload.mode != "open":
            continue
        device = by_name.get(group.name)
        table = compare(trace, group, seed=args.seed, device=device)
        table["relative_error"] = [
            f"{e:+.1%}" if math.isfinite(e) else "-" for e in table["relative_error"]
        ]
        print(
            f"== group {group.name} vs {'device ' + device if device else 'the whole trace'} "
            f"({args.path})"
        )
        print(text_table(table, ["statistic", "trace", "synthetic", "relative_error"]))
        compared += 1
    if not compared:
        raise ScenarioError(
            str(args.scenario),
            [
                (
                    "groups",
                    "no open-loop group to compare; fit one with: simcache fit TRACE -o OUT.toml",
                )
            ],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
