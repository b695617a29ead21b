"""`simcache report`: its options, and the plan that checks them before the run and writes the HTML
after it.

``--sweep`` takes one line of a sweep file's ``[grid]`` table (``dotted.path = [values]``, TOML, as
``simcache sweep`` reads it), repeatable; ``--target`` one latency target
(:mod:`simcache.runs.targets`), repeatable.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcache.cli.options import option_errors
from simcache.cli.outputs import output_file
from simcache.report import SweepReport, report_html
from simcache.results.result import Result
from simcache.runs.sizing.space import dotted_paths
from simcache.runs.sweep import SweepProgress, grid_points, point_values, sweep
from simcache.runs.targets import Target, check_groups, judge, parse_target
from simcache.sim.control import Cancel
from simcache.spec import Scenario
from simcache.spec.load import parse_toml

__all__ = ["ReportPlan", "add_report_options"]

_SWEEP_HELP = (
    "a parameter to sweep around the run, as a line of a sweep file's [grid]: \"cluster.peer_link "
    "= ['1GbE', '10GbE']\" (repeatable)"
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
        "--sweep", action="append", default=[], metavar="PATH = [VALUES]", help=_SWEEP_HELP
    )
    parser.add_argument(
        "--sweep-seeds",
        type=int,
        nargs="+",
        default=None,
        metavar="SEED",
        help="seeds of each sweep point (default: the run's)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes of the sweep (default: one per core; 1 = no pool)",
    )


@dataclass(frozen=True)
class ReportPlan:
    """What one ``simcache report`` does around its run: the targets, the sweep grid and seeds,
    the output file."""

    scenario: Scenario
    targets: list[Target]
    grid: dict[str, list[Any]]
    seeds: list[int]
    out: Path
    workers: int | None

    @classmethod
    def from_args(cls, args: argparse.Namespace, scenario: Scenario) -> ReportPlan:
        """Every option parsed, every sweep point and the output file checked, so that a mistake
        is told before anything runs."""
        out = output_file(
            args.out if args.out is not None else Path(f"{scenario.name}-report.html"), "-o"
        )
        with option_errors({"--target": "--target"}):
            targets = [parse_target(text) for text in args.target]
            check_groups(targets, (group.name for group in scenario.groups))
        grid: dict[str, list[Any]] = {}
        for line in args.sweep:
            grid |= dotted_paths(parse_toml(line, "--sweep"))
        for point in grid_points(grid, "--sweep"):
            scenario.with_overrides(point, source=f"--sweep {point_values(point)}")
        seeds = args.sweep_seeds if args.sweep_seeds is not None else [scenario.run.seed]
        return cls(scenario, targets, grid, seeds, out, args.workers)

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
        finished, marked partial (:attr:`SweepReport.stopped`), as does the last line returned."""
        swept = None
        if self.grid and with_sweep:
            rows = sweep(
                self.scenario,
                self.grid,
                seeds=self.seeds,
                workers=self.workers,
                progress=progress,
                cancel=cancel,
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
            lines.append(f"PARTIAL SWEEP: {swept.partial_sentence()}")
        return "\n".join(lines)
