"""`simcache sweep`: read the sweep file, run the grid (stoppable, resumable with --store) and
print or write its table (or, with --json, print it as JSON: :func:`sweep_json`). Progress: a bar
on a terminal, plain lines when stderr is piped, nothing with --json. The output file and the
options are checked before the sweep file is read, and that before any run.

Ctrl-C or SIGTERM stops the sweep: the rows it finished are printed or written as the options ask,
marked partial (the :data:`PARTIAL` column of --out and --json, a last ``PARTIAL SWEEP`` line of the
printed table), and stderr says how far it got (exit 130 or 143). With --until, a last line says
how many points reached the width, and each that stopped at --max-seeds short of it.

With --summary, the printed table is the few figures a planner reads, one line per point
(:func:`summary_text`); --out and --json keep every column of :func:`sweep_summary`."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shlex
import signal
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from simcache.cli.options import OptionError, option_errors
from simcache.cli.outputs import output_file
from simcache.cli.progress import Bar, progress_bar, shows_progress
from simcache.cli.sweep_file import read_sweep_file
from simcache.report.cells import LOWER_BOUND, cell
from simcache.report.run_report import text_table
from simcache.runs.sweep import (
    STABILITY,
    SweepInterrupted,
    SweepProgress,
    SweepStoreWarning,
    UntilOutcome,
    mix_shifts,
    point_bottleneck,
    point_stability,
    sweep,
    sweep_summary,
    until_outcomes,
)
from simcache.runs.sweep_points import lower_bound_in, row_words
from simcache.runs.workers import reach_scheduler, scheduler_address
from simcache.sim.control import Cancel, cancel_on_signals
from simcache.spec import load_scenario

__all__ = [
    "PARTIAL",
    "SUMMARY_FIGURES",
    "run_sweep",
    "store_warnings",
    "summary_text",
    "sweep_json",
    "sweep_progress",
]

SUMMARY_FIGURES = {
    "write mean": "all.write.mean_ms",
    "write p99": "all.write.p99_ms",
    "read mean": "all.read.mean_ms",
    "read p99": "all.read.p99_ms",
}
"""The latency figures --summary prints per point (ms, I/Os of every group), by heading."""
_WIDTH = 100
"""The terminal width, in characters, that --summary's notes are wrapped to."""


def run_sweep(args: argparse.Namespace) -> int:
    """``simcache sweep``: check the options and the sweep file, run the grid and print or write
    its table; exit 0, or 130 (Ctrl-C) or 143 (SIGTERM) when stopped, after printing or writing
    the finished rows marked partial (the :data:`PARTIAL` column and a note on stderr)."""
    # every output and option checked before the sweep file is read, and that before any run
    if args.out is not None:
        output_file(args.out, "--out")
    until = _until(args.until)
    if args.max_seeds < 1:
        raise OptionError.at("--max-seeds", f"must be at least 1 (got {args.max_seeds})")
    if args.scheduler is not None:
        scheduler_address(args.scheduler)  # "local" or tcp://HOST:PORT
    # a regular file within the scenario size limit, its scenario neither itself nor a sweep file
    spec, scenario_path, seeds = read_sweep_file(args.grid)
    if args.scheduler is not None:
        # a scheduler there, within seconds, before the signals only cancel the token: Ctrl-C or
        # SIGTERM during this wait ends the command at once
        reach_scheduler(args.scheduler)
    # Ctrl-C and SIGTERM cancel the token: the sweep starts nothing more, stops its running run
    # between two events (or ends its pool's workers) and returns the rows finished. A second
    # signal raises KeyboardInterrupt as before (SweepInterrupted below, with the rows finished).
    # A KeyboardInterrupt raised wherever the compiled engine stands can abort the process (mypyc
    # treats a failed integer operation as out of memory), so the first signal never raises one.
    stop: SweepInterrupted | None = None
    try:
        with (
            cancel_on_signals(Cancel()) as token,
            store_warnings(),
            sweep_progress(quiet=args.json) as progress,
            option_errors({"until": "--until", "max_seeds": "--max-seeds"}),
        ):
            table = sweep(
                load_scenario(scenario_path),
                spec["grid"],
                seeds=seeds,
                duration=args.duration,
                workers=args.workers,
                scheduler=args.scheduler,
                store=args.store,
                until=until,
                max_seeds=args.max_seeds,
                progress=progress,
                cancel=token,
                source=str(args.grid),
            )
    except SweepInterrupted as interrupted:
        stop = interrupted
        table = interrupted.table if interrupted.table is not None else pd.DataFrame()
    if stop is None and table.attrs.get("stopped"):  # by the token: a signal
        stop = SweepInterrupted(
            len(table),
            int(table.attrs["planned"]),
            int(table.attrs["computed"]),
            None if args.store is None else Path(args.store),
            table,
        )
    signum = token.signal or signal.SIGINT
    partial = None if stop is None else _partial_note(stop, signum)
    if len(table):
        _show_table(args, spec, seeds, table, partial)
    if stop is not None:
        return _sweep_stopped(args, stop, signum)
    if until is not None:
        print(
            _until_text(until, args.max_seeds, until_outcomes(table, list(spec["grid"]), until)),
            file=sys.stderr if args.json else sys.stdout,
        )
    return 0


PARTIAL = "partial"
"""The column that marks the rows of a stopped sweep, in ``--out`` and ``--json``: every row holds
how far the sweep got (``stopped by SIGTERM: 404 of 3000 runs finished``); a whole sweep's table
has no such column."""


def _show_table(
    args: argparse.Namespace,
    spec: dict[str, Any],
    seeds: list[int],
    table: pd.DataFrame,
    partial: str | None,
) -> None:
    """Write ``table`` (or its summary) to ``--out``, print it as JSON or print it, as the options
    ask; a stopped sweep's rows (``partial``: how far it got) carry the :data:`PARTIAL` column,
    and the printed table ends with a line saying so."""
    grid_columns = list(spec["grid"])
    written = sweep_summary(table, grid_columns) if args.summary else table
    if partial is not None:
        written = written.assign(**{PARTIAL: partial})
    if args.out is not None:
        written.to_csv(args.out, index=False)
        print(
            f"{len(written)} {'partial ' if partial else ''}rows written to {args.out}",
            file=sys.stderr if args.json else sys.stdout,
        )
    if args.json:
        print(
            json.dumps(
                sweep_json(
                    written, spec["scenario"], spec["grid"], seeds, args.duration, args.summary
                ),
                indent=2,
            )
        )
    elif args.out is None:
        print(summary_text(table, grid_columns) if args.summary else table.to_string())
        if partial is not None:
            print(f"PARTIAL SWEEP: {partial}")


def _partial_note(stop: SweepInterrupted, signum: int) -> str:
    """How far a stopped sweep got, for its rows and its printed table."""
    return (
        f"stopped by {signal.Signals(signum).name}: {stop.finished} of {stop.total} runs finished"
    )


def _until(text: str | None) -> tuple[str, float] | None:
    """``--until METRIC=WIDTH`` as ``(metric, width)``, the width a positive fraction of the mean;
    whether the metric is a result column is checked by :func:`~simcache.runs.sweep.sweep` before
    any run."""
    if text is None:
        return None
    metric, _, width = text.partition("=")
    try:
        fraction = float(width)
    except ValueError:
        fraction = math.nan
    if not metric or math.isnan(fraction):
        raise OptionError.at(
            "--until", f"write METRIC=WIDTH, e.g. all.write.mean_ms=0.05 (got {text!r})"
        )
    if not (math.isfinite(fraction) and fraction > 0):
        raise OptionError.at(
            "--until",
            f"WIDTH is the interval's half-width as a fraction of the mean and must be above 0, "
            f"e.g. all.write.mean_ms=0.05 for 5% (got {width!r})",
        )
    return metric, fraction


def _until_text(until: tuple[str, float], max_seeds: int, outcomes: list[UntilOutcome]) -> str:
    """Whether each point's 95% interval of the ``--until`` metric came within the width: one
    line when all did, else also one line per point that stopped at ``--max-seeds`` short of it,
    with its seeds and its interval's half-width (percentages of the mean)."""
    metric, width = until
    missed = [outcome for outcome in outcomes if not outcome.reached]
    head = (
        f"--until {metric}={width:g}: {len(outcomes) - len(missed)} of "
        f"{_count(len(outcomes), 'point')} reached a 95% interval within {width * 100:g}% of the "
        "mean"
    )
    if not missed:
        return head + "."
    lines = [f"{head}; {len(missed)} stopped at --max-seeds {max_seeds} short of it:"]
    for outcome in missed:
        wide = (
            f"+/-{outcome.relative_half_width * 100:.3g}%"
            if math.isfinite(outcome.relative_half_width)
            else "no interval"
        )
        lines.append(f"  {outcome.point}: {_count(outcome.seeds, 'seed')}, {wide} of the mean")
    return "\n".join(lines)


def summary_text(rows: pd.DataFrame, grid_columns: list[str]) -> str:
    """``simcache sweep --summary`` as printed: one line per grid point that a 100-column terminal
    holds. Each point gives its values (headed by the shortest tail of their dotted paths that
    tells them apart; the title names the paths in full), the means over its seeds of
    :data:`SUMMARY_FIGURES` (``>=`` where a seed's figure is only a lower bound), how steady its
    seeds were (:func:`~simcache.runs.sweep.point_stability`: ``UNSTABLE k/n`` when k of n had no
    steady state, ``filling: full ~540 s``, ``at capacity``, ``untested``, else ``stable``) and
    its bottleneck (the part most of its seeds name,
    :func:`~simcache.results.bottleneck.run_bottleneck`). Notes below explain the marks and states
    shown, name the groups whose share of the I/Os changes from point to point
    (:func:`~simcache.runs.sweep.mix_shifts`: the figures are over every group's I/Os) and say
    where every column is.

    ``rows``: :func:`~simcache.runs.sweep.sweep`'s table, one row per point and seed.
    """
    fixed = ["seeds", *SUMMARY_FIGURES, "stability", "bottleneck"]
    headings = _grid_headings(grid_columns, taken=fixed)
    shown = pd.DataFrame(
        [
            _summary_cells(headings, key, part)
            for key, part in rows.groupby(grid_columns, sort=False, dropna=False)
        ]
    )
    seeds = sorted(set(shown["seeds"]))
    columns = [*headings, *(fixed if len(seeds) > 1 else fixed[1:])]
    each = f"{seeds[0]} to {seeds[-1]} seeds" if len(seeds) > 1 else _count(seeds[0], "seed")
    title = [
        f"Sweep of {' x '.join(grid_columns)}: {_count(len(shown), 'point')}, {each} each.",
        "Latency in ms over every group's I/Os, each the mean over its point's seeds.",
    ]
    warned = list(dict.fromkeys(k for kinds in rows.get("validity", []) for k in row_words(kinds)))
    shifts = {op: mix_shifts(rows, grid_columns, op) for op in ("write", "read")}
    return "\n".join(
        [
            *(textwrap.fill(line, _WIDTH, subsequent_indent="  ") for line in title),
            text_table(shown, columns),
            *_summary_notes(shown, warned, shifts),
            *_not_run_notes(rows, grid_columns),
        ]
    )


def _not_run_notes(rows: pd.DataFrame, grid_columns: list[str]) -> list[str]:
    """For each point not simulated (past the run limits), its values and why, wrapped."""
    if "not_run" not in rows.columns:
        return []
    notes = []
    for key, part in rows.groupby(grid_columns, sort=False, dropna=False):
        reasons = part["not_run"].dropna()
        if len(reasons):
            values = key if isinstance(key, tuple) else (key,)
            point = ", ".join(f"{c}={v}" for c, v in zip(grid_columns, values, strict=True))
            notes.append(
                textwrap.fill(
                    f"NOT RUN {point}: not simulated, past the run limits: {reasons.iloc[0]}",
                    _WIDTH,
                    subsequent_indent="  ",
                )
            )
    return notes


def _grid_headings(paths: list[str], taken: list[str]) -> list[str]:
    """Each grid path's shortest dotted tail that no other path, nor a heading in ``taken``,
    ends with: ``cluster.peer_link`` -> ``peer_link``; ``groups.db.policy`` beside
    ``groups.web.policy`` -> ``db.policy``."""
    headings = []
    for path in paths:
        others = [other for other in [*paths, *taken] if other != path]
        words = path.split(".")
        tails = (".".join(words[-n:]) for n in range(1, len(words) + 1))
        headings.append(
            next(
                (t for t in tails if not any(o == t or o.endswith("." + t) for o in others)),
                path,
            )
        )
    return headings


def _summary_cells(headings: list[str], key: Any, part: pd.DataFrame) -> dict[str, str | int]:
    """One point's line of :func:`summary_text` as text cells, from its rows (one per seed);
    ``key``: its grid values, in the order of ``headings``."""
    values = key if isinstance(key, tuple) else (key,)
    cells: dict[str, str | int] = {
        heading: str(value) for heading, value in zip(headings, values, strict=True)
    }
    cells["seeds"] = len(part)
    for heading, column in SUMMARY_FIGURES.items():
        cells[heading] = _figure_cell(part, column)
    cells["stability"] = point_stability(part).label
    cells["bottleneck"] = point_bottleneck(part)
    return cells


def _figure_cell(part: pd.DataFrame, column: str) -> str:
    """The mean of ``column`` (``<group>.<op>.<metric>``) over a point's seeds, marked as a lower
    bound when any seed's is one; "-" where no seed measured it."""
    if column not in part.columns:
        return cell(math.nan)
    return (LOWER_BOUND if lower_bound_in(part, column) else "") + cell(float(part[column].mean()))


def _summary_notes(
    shown: pd.DataFrame, warned: list[str], shifts: dict[str, list[str]]
) -> list[str]:
    """What the marks and stability states in ``shown`` (:func:`summary_text`'s cells) mean, only
    those it has; the kinds of validity warnings its runs had (``warned``); the groups whose share
    of each op's I/Os moves between the points (``shifts``, by op); and where every column is.
    Each wrapped to :data:`_WIDTH`."""
    figures = shown[list(SUMMARY_FIGURES)].to_numpy().ravel()
    notes = []
    if any(str(figure).startswith(LOWER_BOUND) for figure in figures):
        notes.append(
            f"{LOWER_BOUND} : a lower bound in some seed (I/Os unfinished at the end count with "
            "their latency so far)."
        )
    if shown["stability"].str.startswith("UNSTABLE").any():
        notes.append(
            "UNSTABLE k/n: k of the point's n seeds had no steady state (their latency grows with "
            "the run)."
        )
    for state, meaning in STABILITY.items():
        if state not in ("unstable", "stable") and shown["stability"].str.startswith(state).any():
            notes.append(f"{state}: {meaning} (k/n: in k of the point's n seeds).")
    if shown["bottleneck"].str.contains("GC cliff").any():
        notes.append(
            "GC cliff: a tier past its clean-pool cliff (garbage collection holds its writes; "
            "units look idle)."
        )
    if warned:
        notes.append(f"Warnings in these runs: {', '.join(warned)} (the validity column).")
    for op, moved in shifts.items():
        if moved:
            notes.append(
                f"The {op} figures mix groups whose share of the {op}s changes from point to "
                f"point: {'; '.join(moved)}. A change in them can be a change of mix, not of "
                f"latency: compare one group's figures (the {op} columns of each group, with "
                "--out)."
            )
    notes.append(
        "Every column (each group, 95% intervals, throughput, warnings): add --out FILE.csv or "
        "--json."
    )
    return [
        textwrap.fill(note, _WIDTH, initial_indent="  ", subsequent_indent="    ") for note in notes
    ]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def sweep_json(
    table: pd.DataFrame,
    scenario: str,
    grid: dict[str, Any],
    seeds: list[int],
    duration: float | None,
    summary: bool,
) -> dict[str, Any]:
    """``simcache sweep --json``: what was swept (scenario, grid, seeds, duration in seconds or
    ``null`` for each scenario's own), whether the rows are per point (``summary``) or per point
    and seed, the columns in order and one object per row (NaN as ``null``)."""
    rows = [
        {column: _plain(value) for column, value in row.items()}
        for row in table.to_dict(orient="records")
    ]
    return {
        "scenario": scenario,
        "grid": grid,
        "seeds": seeds,
        "duration_s": duration,
        "summary": summary,
        "columns": list(table.columns),
        "rows": rows,
    }


def _plain(value: Any) -> Any:
    """A table cell as JSON: numpy scalars as Python numbers (every digit kept), NaN and
    infinities as ``None``."""
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and not math.isfinite(value) else value


@contextlib.contextmanager
def sweep_progress(quiet: bool = False) -> Iterator[Callable[[SweepProgress], None]]:
    """The progress callback of a command's sweep, for the block inside: a bar on a terminal,
    else plain lines on stderr, or nothing if ``quiet`` (``--json``)."""
    with progress_bar("sweeping", None, shows_progress(quiet)) as bar:
        _shown.bar, _shown.quiet = bar, quiet
        try:
            yield _sweep_progress
        finally:
            _shown.bar = None


class _shown:
    """Where sweep progress goes while a sweep runs: its bar on a terminal, else plain lines
    unless ``quiet`` (--json)."""

    bar: Bar | None = None
    quiet = False


@contextlib.contextmanager
def store_warnings() -> Iterator[None]:
    """Within the block, every warning of a sweep's store (:class:`SweepStoreWarning`: a stored
    row that failed its checks, recomputed), and any other, printed as a ``warning: ...`` line
    on stderr, below the progress line."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", SweepStoreWarning)
        warnings.showwarning = _store_warning
        yield


def _store_warning(
    message: Warning | str, category: type[Warning], *args: object, **kwargs: object
) -> None:
    print(f"{_line_break()}warning: {message}", file=sys.stderr, flush=True)


def _line_break() -> str:
    """Ends the progress line that a terminal shows without a newline."""
    return "\n" if sys.stderr.isatty() else ""


def _sweep_stopped(args: argparse.Namespace, stop: SweepInterrupted, signum: int) -> int:
    """How far the sweep got, where its finished rows went, what was kept and how to resume, on
    stderr (each line ended); exit 130 (Ctrl-C) or 143 (SIGTERM)."""
    name = signal.Signals(signum).name
    head = f"{_line_break()}interrupted ({name}): {stop.finished} of {stop.total} runs finished"
    if args.out is not None:
        shown = f"written to {args.out}, marked partial (column {PARTIAL!r})"
    elif args.json:
        shown = f"printed as JSON, marked partial (column {PARTIAL!r})"
    else:
        shown = "printed above, marked PARTIAL SWEEP"
    rows = f"Their rows are {shown}." if stop.finished else "No row to show."
    if stop.store is None:
        print(
            f"{head}. {rows} Without --store a rerun starts over: give --store PATH to keep "
            "finished runs and resume after a stop.",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(
            f"{head} and are kept in {stop.store} ({stop.computed} computed now, "
            f"{stop.finished - stop.computed} from the store). {rows}\n"
            f"Run the same command again to resume:\n  {_sweep_command(args)}",
            file=sys.stderr,
            flush=True,
        )
    return 128 + signum


def _sweep_command(args: argparse.Namespace) -> str:
    """The `simcache sweep` command line that ``args`` came from (its options that differ from
    the defaults)."""
    words = ["simcache", "sweep", str(args.grid)]
    if args.duration is not None:
        words += ["--duration", f"{args.duration:g}s"]
    for option, value in (
        ("--workers", args.workers),
        ("--scheduler", args.scheduler),
        ("--store", args.store),
        ("--until", args.until),
    ):
        if value is not None:
            words += [option, str(value)]
    if args.max_seeds != 30:
        words += ["--max-seeds", str(args.max_seeds)]
    if args.summary:
        words.append("--summary")
    if args.out is not None:
        words += ["--out", str(args.out)]
    return shlex.join(words)


def _sweep_progress(state: SweepProgress) -> None:
    eta = "" if math.isnan(state.eta_s) else f", about {state.eta_s:.0f}s left"
    resumed = f" ({state.skipped} from the store)" if state.skipped else ""
    if _shown.bar is not None and _shown.bar.enabled:
        _shown.bar.update(
            state.done, state.total, f"{state.done}/{state.total} runs done{resumed}{eta}"
        )
        return
    if _shown.quiet:
        return
    end = "\n" if state.done == state.total or not sys.stderr.isatty() else ""
    print(
        f"\r  {state.done}/{state.total} runs done{resumed}{eta}   ",
        end=end,
        file=sys.stderr,
        flush=True,
    )
