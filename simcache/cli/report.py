"""`simcache report`: its options, and the plan that checks them before the run and writes the HTML
after it.

``--sweep`` takes one line of a sweep file's ``[grid]`` table (``dotted.path = [values]``, TOML, as
``simcache sweep`` reads it), repeatable, or a sweep file itself (its grid and seeds; its scenario
must be the report's); ``--target`` one latency target (:mod:`simcache.runs.targets`), repeatable.
The sweep runs as ``simcache sweep`` runs it (:func:`~simcache.runs.sweep.sweep`, with the same
``--workers``, ``--scheduler`` and ``--store``): a sweep file's rows that ``simcache sweep`` stored
are read from the store, not run again.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcache.base.errors import SweepError, echo
from simcache.cli.options import OptionError, option_errors
from simcache.cli.outputs import output_file
from simcache.cli.sweep import store_warnings
from simcache.cli.sweep_file import read_sweep_file
from simcache.report import SweepReport, report_html
from simcache.results.result import Result
from simcache.runs.sizing.space import dotted_paths
from simcache.runs.sweep import SweepProgress, grid_points, point_values, sweep, sweep_seeds
from simcache.runs.sweep_store import check_store_path
from simcache.runs.targets import Target, check_groups, judge, parse_target
from simcache.runs.workers import reach_scheduler, scheduler_address
from simcache.sim.control import Cancel
from simcache.spec import BASE, Scenario, load_scenario
from simcache.spec.consistency import ScenarioWarning
from simcache.spec.load import parse_toml

__all__ = ["ReportPlan", "add_report_options"]

_SWEEP_HELP = (
    "a parameter to sweep around the run, as a line of a sweep file's [grid]: \"cluster.peer_link "
    "= ['1GbE', '10GbE']\" (repeatable); or a sweep file GRID.toml of this scenario, as simcache "
    "sweep reads it: its [grid], and its seeds unless --sweep-seeds"
)


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``simcache report`` after the scenario, ``--variant``, ``--seed`` and
    ``--duration``."""
    parser.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        help="the HTML file to write (default: SCENARIO-NAME-report.html)",
    )
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="TARGET",
        help=(
            'a latency target, e.g. "write p99 <= 5ms" or "db read p99.9 <= 20ms", or a '
            'throughput floor, e.g. "write iops >= 4000"'
        ),
    )
    parser.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="'PATH = [VALUES]'|GRID.toml",
        help=_SWEEP_HELP,
    )
    parser.add_argument(
        "--sweep-seeds",
        type=int,
        nargs="+",
        default=None,
        metavar="SEED",
        help="seeds of each sweep point (default: the sweep file's, else the run's)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes of the sweep (default: one per core; 1 = no pool)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help=(
            "run the sweep on Dask, as simcache sweep does: a scheduler address (tcp://host:8786) "
            'or "local"'
        ),
    )
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        metavar="FILE",
        help=(
            "the sweep's SQLite store, as simcache sweep --store keeps it: runs found there are "
            "not run again (a sweep computed by simcache sweep, on a cluster or stopped, becomes "
            "this report), and every finished run goes into it, so a rerun resumes"
        ),
    )


@dataclass(frozen=True)
class ReportPlan:
    """What one ``simcache report`` does around its run: the targets, the sweep grid and seeds,
    where the sweep runs and keeps its rows, the output file."""

    scenario: Scenario
    """The scenario the sweep varies: the report's (its ``--variant``) before ``--seed`` and
    ``--duration``, as ``simcache sweep`` loads a sweep file's, so that their stored rows are one
    another's."""
    targets: list[Target]
    grid: dict[str, list[Any]]
    seeds: list[int]
    out: Path
    workers: int | None
    duration: float | None = None
    """Every sweep run's simulated seconds (``--duration``); ``None``: the scenario's."""
    scheduler: str | None = None
    store: Path | None = None
    source: str | None = None
    """The sweep file the grid came from, which the sweep's errors name; ``None`` for lines."""

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, scenario: Scenario, varied: Scenario
    ) -> ReportPlan:
        """Every option parsed, every sweep point, the output file and the Dask scheduler (one
        that cannot be reached or is no scheduler) checked, so that a mistake is told before
        anything runs. ``scenario``: the report's run (``--seed`` and ``--duration`` applied);
        ``varied``: the scenario before them (its ``--variant`` applied), which the sweep
        varies."""
        out = output_file(
            args.out if args.out is not None else Path(f"{scenario.name}-report.html"), "-o"
        )
        with option_errors({"--target": "--target"}):
            targets = [parse_target(text) for text in args.target]
            check_groups(targets, (group.name for group in scenario.groups))
        if args.scheduler is not None:
            scheduler_address(args.scheduler)  # "local" or tcp://HOST:PORT
        grid, sweep_file, file_seeds = _sweep_grid(args.sweep, args.scenario)
        _sweep_options_need_a_sweep(args, grid)
        if sweep_file is not None and args.store is not None and args.variant not in (None, BASE):
            print(
                f"note: the sweep varies variant {args.variant!r}, not the scenario as "
                f"{sweep_file} names it: runs simcache sweep {sweep_file} kept in {args.store} "
                "are not this sweep's, and are run again",
                file=sys.stderr,
            )
        where = "--sweep" if sweep_file is None else f"{sweep_file} [grid]"
        for point in grid_points(grid, sweep_file or "--sweep"):
            # each point valid, at the duration too, before anything runs
            run = varied.with_overrides(point, source=f"{where} {point_values(point)}")
            if args.duration is not None:
                run.with_duration(args.duration)
        if grid and args.store is not None:
            check_store_path(args.store)  # a folder, a file not SQLite...: told before the run
        if grid and args.scheduler is not None:
            # a scheduler there, within seconds, before the run: Ctrl-C during the wait ends the
            # command at once
            reach_scheduler(args.scheduler)
        if args.sweep_seeds is not None:
            with option_errors({"seeds": "--sweep-seeds"}):
                seeds = sweep_seeds(args.sweep_seeds)
        else:
            seeds = sweep_seeds(
                [scenario.run.seed] if file_seeds is None else file_seeds, sweep_file
            )
        return cls(
            varied,
            targets,
            grid,
            seeds,
            out,
            args.workers,
            args.duration,
            args.scheduler,
            args.store,
            sweep_file,
        )

    def write(
        self,
        result: Result,
        *,
        with_sweep: bool = True,
        progress: Callable[[SweepProgress], None] | None = None,
        cancel: Cancel | None = None,
    ) -> str:
        """Run the sweep (if any, and ``with_sweep``), write the report of ``result`` to
        :attr:`out`; the verdicts in words.

        ``progress`` follows the sweep; ``cancel`` stops it, and the report then holds the runs that
        finished, marked partial (:attr:`SweepReport.stopped`), as does the last line returned
        (which says where a store keeps them for a rerun to resume)."""
        swept = None
        if self.grid and with_sweep:
            with store_warnings():
                rows = sweep(
                    self.scenario,
                    self.grid,
                    seeds=self.seeds,
                    duration=self.duration,
                    workers=self.workers,
                    scheduler=self.scheduler,
                    store=self.store,
                    progress=progress,
                    cancel=cancel,
                    source=self.source,
                )
            swept = SweepReport(
                rows,
                self.grid,
                stopped=rows.attrs.get("stopped"),
                planned=rows.attrs.get("planned"),
            )
        html = report_html(result, targets=self.targets, sweep=swept)
        self.out.write_text(html, "utf-8")
        lines = [f"{target}: {judge(result, target).text}" for target in self.targets]
        lines.append(f"report written to {self.out} ({len(html.encode()):,} bytes)")
        if swept is not None and swept.stopped:
            kept = (
                ""
                if self.store is None
                else f"; its finished runs are kept in {self.store}: the same command resumes them"
            )
            lines.append(f"PARTIAL SWEEP: {swept.partial_sentence()}{kept}")
        return "\n".join(lines)


def _sweep_grid(values: list[str], scenario: str) -> tuple[dict[str, list[Any]], str | None, Any]:
    """The grid of the ``--sweep`` ``values`` (lines and at most one sweep file, in order, a later
    axis replacing an earlier one of the same path), the sweep file's name and its seeds as
    written (``None`` without a file), for the report of ``scenario`` (``report``'s argument)."""
    grid: dict[str, list[Any]] = {}
    sweep_file, file_seeds = None, None
    for text in values:
        if _names_a_file(text):
            sweep_file, file_seeds, axes = _grid_of_file(Path(text), sweep_file, scenario)
            grid |= axes
        else:
            grid |= dotted_paths(parse_toml(text, "--sweep"))
    return grid, sweep_file, file_seeds


def _sweep_options_need_a_sweep(args: argparse.Namespace, grid: dict[str, list[Any]]) -> None:
    """Refuses the sweep's options (``--sweep-seeds``, ``--workers``, ``--scheduler``,
    ``--store``) given without a sweep, which they would not act on (a ``--store`` that keeps
    nothing, told nothing, is a silent default)."""
    given = [
        option
        for option, value in (
            ("--sweep-seeds", args.sweep_seeds),
            ("--workers", args.workers),
            ("--scheduler", args.scheduler),
            ("--store", args.store),
        )
        if value is not None
    ]
    if given and not grid:
        raise OptionError.at(
            given[0],
            f"{' and '.join(given)} {'acts' if len(given) == 1 else 'act'} on the sweep around "
            "the run, and this report has none: "
            f"give --sweep (a line of a grid or a sweep file), or leave "
            f"{'it' if len(given) == 1 else 'them'} out",
        )


def _names_a_file(text: str) -> bool:
    """Whether a ``--sweep`` value is a sweep file's path (a line of a grid has ``=``); refuses a
    value that is neither (a line without its ``=`` would otherwise be "no such file")."""
    if "=" in text:
        return False
    if not Path(text).is_file():
        raise OptionError.at(
            "--sweep",
            f"{echo(text)} is no file and no line of a grid: give a sweep file (GRID.toml) or a "
            "line such as \"cluster.peer_link = ['1GbE', '10GbE']\"",
        )
    return True


def _grid_of_file(path: Path, before: str | None, scenario: str) -> tuple[str, Any, dict[str, Any]]:
    """The sweep file at ``path`` (read as ``simcache sweep`` reads it) as its name, seeds (as
    written) and grid, for the report of ``scenario`` (``report``'s argument); ``before``: the
    sweep file an earlier ``--sweep`` gave, if any. Refuses a second sweep file, and one whose
    scenario is not the report's (its stored rows would be another scenario's, and its points not
    around the run). Both scenarios are loaded again to compare them, their warnings not told
    again (the report's were, when it was loaded)."""
    if before is not None:
        raise OptionError.at(
            "--sweep",
            f"one sweep file per report (got {before} and {path}): put the grids in one file, "
            "or give the second one's as --sweep lines",
        )
    spec, varied, seeds = read_sweep_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScenarioWarning)
        same = load_scenario(varied).model_dump(mode="json") == load_scenario(scenario).model_dump(
            mode="json"
        )
    if not same:
        raise SweepError(
            str(path),
            [
                (
                    "scenario",
                    f"{echo(spec['scenario'])} is not the report's scenario ({scenario}): "
                    f"report it (simcache report {varied} --sweep {path}), or give the grid as "
                    "--sweep lines",
                )
            ],
        )
    return str(path), seeds, spec["grid"]
