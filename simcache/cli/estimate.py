"""``simcache estimate``: print a scenario's analytic estimate (no simulation), as tables or as
JSON."""

from __future__ import annotations

import argparse
import json
import math

import pandas as pd

from simcache.base.metrics import PERCENTILES, THROUGHPUT_COLUMNS
from simcache.cli.run import chosen_scenario
from simcache.estimate import estimate
from simcache.report.run_report import text_table

__all__ = ["run_estimate"]

_SUMMARY_COLUMNS = ["group", "op", *THROUGHPUT_COLUMNS, *PERCENTILES, "mean_ms"]
"""The summary table as `estimate` prints it."""


_NOT_STABLE = (
    "NOT STABLE: an open-loop load exceeds a component's capacity; latency there is unbounded (see "
    "warnings)"
)


def run_estimate(args: argparse.Namespace) -> int:
    """Print the analytic estimate: summary table, utilizations, bottleneck and the destage
    buffer's fluid figures."""
    result = estimate(chosen_scenario(args), duration=args.duration)
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
