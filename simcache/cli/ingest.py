"""``simcache import``, ``simcache fit`` and ``simcache compare-trace``: files users bring turned
into scenarios (a fio job or result, vscsiStats histograms, a block trace, or a trace's fitted
synthetic workload), and a trace's statistics next to a fitted scenario's."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace

from simcache.base.errors import ScenarioError
from simcache.base.names import group_name
from simcache.cli.options import OptionError
from simcache.cli.outputs import output_file
from simcache.report.run_report import text_table
from simcache.spec import TRACE_FORMATS, load_scenario
from simcache.traces.formats import load_trace, parse_option
from simcache.workloads.ingest.compare import compare
from simcache.workloads.ingest.fit import fit_trace
from simcache.workloads.ingest.imported import Imported, import_workload

__all__ = ["run_compare_trace", "run_fit", "run_import"]


def run_import(args: argparse.Namespace) -> int:
    _check_out(args)
    options = dict(parse_option(text) for text in args.option)
    imported = import_workload(args.path, args.format, **options)
    return _write_scenario(args, imported, imported.format, f"run it with: simcache run {args.out}")


def _check_out(args: argparse.Namespace) -> None:
    """Refuse an ``-o`` path that cannot be written before any reading or fitting (a fit can take
    half a minute, and its result would be lost to a traceback at the end)."""
    if args.out is not None:
        output_file(args.out, "-o")


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


def run_fit(args: argparse.Namespace) -> int:
    """Import a trace, replace each device's replay group by its fitted synthetic workload, and
    write the scenario.

    ``args.interval``: seconds per step of the rate profile, or ``None`` for the coarsest of 1 s,
    100 ms, 10 ms and 1 ms (no finer than the trace's timestamps) whose arrivals, evenly spaced
    or Poisson within each step, give the trace's inter-arrival SCV within 10%
    (:mod:`simcache.workloads.ingest.fitarrivals`). The facts printed say what was chosen, and
    say when the trace does not identify the working set (then also a warning).
    """
    _check_out(args)
    options = dict(parse_option(text) for text in args.option)
    imported = import_workload(args.path, args.format, **options)
    if imported.trace is None:
        raise ScenarioError(
            str(args.path),
            [("format", f"{imported.format} is not a trace; fit takes {', '.join(TRACE_FORMATS)}")],
        )
    groups, facts, warnings = [], [], []
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
        warnings += [f"{group['name']}: {warning}" for warning in fitted.warnings]
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
        warnings=[*imported.warnings, *warnings],
        format=f"{imported.format}, fitted by simcache fit",
    )
    return _write_scenario(
        args,
        fitted_import,
        imported.format,
        f"compare it with: simcache compare-trace {args.path} {args.out}",
    )


def run_compare_trace(args: argparse.Namespace) -> int:
    """Each open-loop group next to the trace device of its name (the whole trace when no device
    has it).

    The table (:func:`~simcache.workloads.ingest.compare.compare`) has 100 ms rows (busiest 100 ms,
    dispersion of the 100 ms counts) when the trace's timestamps are that fine, the inter-arrival
    time's mean and SCV when they are finer than a second, and both read and all-I/O hit ratios.
    """
    if not 0 <= args.seed < 2**64:
        raise OptionError.at(
            "--seed", f"{args.seed} is not a seed; give a whole number from 0 to 2^64 - 1"
        )
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
