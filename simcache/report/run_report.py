"""The text ``simcache run`` prints for a result: tables of the summary and breakdown, the
bottleneck, the events table and the validity warnings."""

from __future__ import annotations

import pandas as pd

from simcache.base.metrics import PERCENTILES, THROUGHPUT_COLUMNS
from simcache.report.cells import RUN_COLUMNS, engine_words
from simcache.report.cells import bounded as _bounded
from simcache.report.cells import cell as _cell
from simcache.report.event_report import event_lines
from simcache.results.bottleneck import bottleneck_line
from simcache.results.result import Result
from simcache.sim.collect import COMPONENTS
from simcache.sim.control import (
    stopped_at,
)
from simcache.sim.stream import REL_ERROR

__all__ = ["report", "stopped_line", "text_table"]

_SUMMARY_COLUMNS = ["group", "op", *THROUGHPUT_COLUMNS, *PERCENTILES, "mean_ms"]
"""The summary table as `estimate` prints it."""


def stopped_line(result: Result) -> str:
    """The line that marks a stopped run's result as partial ("" for a run that reached its end)."""
    at = stopped_at(result)
    if at is None:
        return ""
    planned = result.meta["planned_s"]
    return (
        f"STOPPED at simulated time {at:.3f} s of {planned:g} s ({result.meta['stop_reason']}): "
        f"partial result, every figure covers 0-{at:.3f} s only"
    )


def report(result: Result) -> str:
    """The human-readable run report: latency table, write-latency breakdown, utilizations."""
    meta = result.meta
    start, end = result.window
    engine = engine_words(meta)
    lines = [
        f"scenario {meta['scenario_name']!r}  seed {meta['seed']}  simulated {end:g}s (measured "
        f"{start:g}-{end:g}s)  "
        f"{meta['ios']} I/Os in {meta['wall_time_s']:.2f}s wall  simcache {meta['version']} "
        f"({engine})",
        "",
        "Latency per VM group (ms), IOPS and MB/s:",
        text_table(_bounded(result.summary), RUN_COLUMNS),
        *_lower_bound_note(result.summary),
        *(
            []
            if result.has_records
            else [
                f"  no records kept: percentiles from latency histograms, within {REL_ERROR:.0%} "
                "(counts, IOPS, MB/s, means, max exact)"
            ]
        ),
        "",
        "Where the write latency comes from (mean ms per write, critical path):",
        text_table(result.breakdown, ["group", "write_mean_ms", *COMPONENTS, "dominant"]),
        "",
    ]
    series = result.series[result.series.index > start]
    util = series[[c for c in series.columns if c.startswith("util.")]].agg(["mean", "max"]).T
    util = util.sort_values("mean", ascending=False).head(8)
    lines.append("Busiest components (utilization over the measured window):")
    lines.append(
        text_table(
            util.reset_index(names="component").assign(
                component=lambda d: d.component.str.removeprefix("util.")
            ),
            ["component", "mean", "max"],
        )
    )
    totals = result.totals
    lines += [
        "",
        f"array writes {totals['array_write_mb_s']:.1f} MB/s; peer network "
        f"{totals['peer_wire_mb_s']:.1f} MB/s on the wire; "
        f"destage backlog at end {totals['destage_backlog_bytes'] / 2**20:.0f} MiB",
    ]
    # absent from results saved before the total existed
    through = totals.get("wb_written_through_bytes", 0)
    if through:
        lines.append(
            f"write-back groups wrote {through / 2**20:.1f} MiB through to the array instead "
            "(a failed tier, or short of peers under on_peer_loss = write_through)"
        )
    lines.append(bottleneck_line(result))
    lines += event_lines(result)
    lines += _warning_lines(result)
    return "\n".join(lines)


def _lower_bound_note(summary: pd.DataFrame) -> list[str]:
    unfinished = int(summary.loc[summary["group"] == "all", "unfinished"].sum())
    if not unfinished:
        return []
    return [
        f"  >= : a lower bound. {unfinished:,} I/Os issued in the window were unfinished at the "
        "end; each counts with the latency it "
        f"had so far, which its true latency exceeds"
    ]


def _warning_lines(result: Result) -> list[str]:
    """The run's validity warnings in words: instability first, then short-run notes."""
    warnings = result.warnings
    if not warnings:
        return []
    lines = [""]
    if not result.stable:
        lines.append(
            "UNSTABLE: this run has no steady state; its latency figures grow with the run's "
            "length."
        )
    lines += [f"{'warning' if w.severity == 'unstable' else 'note'}: {w.message}" for w in warnings]
    return lines


def text_table(frame: pd.DataFrame, columns: list[str]) -> str:
    rows = [[_cell(v) for v in row] for row in frame[columns].itertuples(index=False)]
    widths = [
        max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)
    ]
    out = ["  " + "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    out += ["  " + "  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(out)
