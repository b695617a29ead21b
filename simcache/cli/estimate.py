"""``simcache estimate``: print a scenario's analytic estimate (no simulation), as tables or as
JSON."""

from __future__ import annotations

import argparse
import json
import math

import pandas as pd

from simcache.base.metrics import PERCENTILES, THROUGHPUT_COLUMNS
from simcache.cli.run import chosen_scenario
from simcache.estimate import DestageFluid, Estimate, estimate
from simcache.estimate.overload import duration_text, peak_differs
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
    lines += ["", _bottleneck_line(result), "", "Destage buffer (fluid model):"]
    lines += [
        _destage_line(fluid, accepted, drained)
        for fluid, (accepted, drained) in zip(
            result.destager, result.destage_window_rates(), strict=True
        )
        if fluid.accept_rate_bytes_s > 0
    ]
    lines += [""] * bool(result.warnings) + [f"warning: {warning}" for warning in result.warnings]
    lines += [f"note: {note}" for note in result.notes]
    print("\n".join(lines))
    return 0


def _bottleneck_line(result: Estimate) -> str:
    """The bottleneck the estimate names (:meth:`~simcache.estimate.Estimate.named_bottleneck`):
    the most overloaded station (offered / capacity) when an open-loop load overloads one, as
    the warnings say, and the others overloaded; else the busiest by mean utilization."""
    named = result.named_bottleneck()
    if named.offered_load is None:
        return f"bottleneck: {named.name} {named.load_words()}"
    also = named.also_words()
    return (
        f"bottleneck: {named.name} is overloaded, {named.load_words()}"
        + (f"; also overloaded: {also}" if also else "")
        + " (see the warnings)"
    )


def _destage_line(fluid: DestageFluid, accepted: float, drained: float) -> str:
    """One host's destage buffer: its peak-write state's rates (and the window's averages,
    ``accepted`` and ``drained`` bytes/s, where they differ: the destage warnings give those),
    when it fills and empties (in words where never), how long it is full and its peak backlog."""
    text = (
        f"  {fluid.host}: at peak accepts {fluid.accept_rate_bytes_s / 1e6:,.1f} MB/s, drains "
        f"{fluid.drain_rate_bytes_s / 1e6:,.1f} MB/s"
    )
    if peak_differs(fluid.accept_rate_bytes_s, accepted) or peak_differs(
        fluid.drain_rate_bytes_s, drained
    ):
        text += (
            f" (on average over the window accepts {accepted / 1e6:,.1f} MB/s, drains "
            f"{drained / 1e6:,.1f} MB/s)"
        )
    fill = duration_text(fluid.fill_time_s, never="")
    if fill:
        text += f"; fills in {fill} from empty"
    else:  # never, or past a year: not a time to plan by, but not "never" either
        text += "; does not fill" if math.isinf(fluid.fill_time_s) else "; fills in over a year"
    if math.isfinite(fluid.first_full_s):
        text += (
            f"; full {fluid.full_fraction:.0%} of the window (accepting "
            f"{fluid.accepted_while_full_bytes_s / 1e6:,.1f} MB/s while full)"
        )
    if fluid.peak_backlog_bytes <= 0:
        return text + "; no backlog"
    empty = duration_text(fluid.drain_time_s, never="")
    text += (
        f"; a full buffer empties in {empty} with no new writes"
        if empty
        else "; a full buffer does not empty (its flushers are starved)"
    )
    return text + f"; peak backlog {fluid.peak_backlog_bytes / 2**20:,.0f} MiB"
