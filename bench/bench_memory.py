"""Memory benchmark: peak resident memory per I/O of the default scenario, with records and without
(issue 18).

Run from the repository root (one run at a time; each case runs in a fresh process, as ``ru_maxrss``
is a process's peak):

    nice -n 10 .venv/bin/python bench/bench_memory.py [--large-ios N] [--json PATH]

Cases: the default scenario (``--scenario``) for 60 s and 600 s (``--durations``), with records
(``simulate``) and without (``simulate(..., keep_records=False)``), and one long run without records
of about ``--large-ios`` I/Os (default 10^7; the issue's target is 10^8 under 1 GB). Each child
reports:

- ``base_mib``: resident memory after importing simcache and loading the scenario, before the run;
- ``run_peak_mib``: peak resident memory (``ru_maxrss``) through the engine's run (``run_scenario``:
  the model and the record blocks, before any table);
- ``peak_mib``: the peak through the whole ``simulate`` (the run and its result: records table,
  series, totals);
- ``summary_peak_mib``: the peak once the summary, breakdown and warnings have been computed too;
- ``held_mib``: resident memory after the run, with the result alive;
- ``store_bytes_per_io`` (records runs): bytes a record takes in the engine's record blocks
  (``RecordBlocks``); ``table_bytes_per_row``: bytes a row of the records table takes (pandas
  ``memory_usage(deep=True)``).

The records' own cost per I/O: a records run's peak less the streaming run's at the same length,
divided by its I/Os (``records_bytes_per_io_during_run`` for the engine's run,
``records_bytes_per_io_with_table`` with the table built).

Per I/O: ``(peak - base) / ios``, and at the margin between the 60 s and 600 s runs, ``(peak_600 -
peak_60) / (ios_600 - ios_60)``: the bytes per I/O beyond a fixed base (the target is 64 with
records).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cases  # noqa: E402
from cases import case_parser, peak_mib, rss_mib  # noqa: E402
from machine import load_average, machine_facts  # noqa: E402

DEFAULT_IOS_PER_S = 2330  # the default scenario's I/Os per simulated second (1.4 million in 600 s)


def child(duration: float, keep_records: bool, scenario_name: str = "default") -> dict[str, Any]:
    """One case, in this process: the run (the engine's part first, then the result's tables),
    then its summary."""
    import simcache
    from simcache.results.result import Result
    from simcache.sim.control import NO_LIMITS
    from simcache.sim.engine import run_scenario

    scenario = simcache.load_scenario(scenario_name).with_duration(duration)
    base = rss_mib()
    started = time.perf_counter()
    record = run_scenario(scenario, keep_records=keep_records, limits=NO_LIMITS)
    # the engine's run: the model and the records it holds (the record blocks), no table yet
    run_peak = peak_mib()
    blocks = record.record_blocks
    # (checkouts before issue 35 have neither figure)
    store = {
        "store_bytes_per_io": getattr(blocks, "bytes_per_io", None),
        "store_nbytes": getattr(blocks, "nbytes", None),
    }
    result = Result.from_record(record)
    wall = time.perf_counter() - started
    peak = peak_mib()
    held = rss_mib()
    table = (
        result.records.memory_usage(index=False, deep=True).sum() / len(result.records)
        if keep_records
        else None
    )
    _ = (result.summary, result.breakdown, result.warnings)
    return {
        "scenario": scenario_name,
        "duration_s": duration,
        "records": keep_records,
        "ios": result.meta["ios"],
        "wall_s": round(wall, 1),
        "base_mib": round(base, 1),
        "run_peak_mib": round(run_peak, 1),
        "peak_mib": round(peak, 1),
        "held_mib": round(held, 1),
        "summary_peak_mib": round(peak_mib(), 1),
        "table_bytes_per_row": round(float(table), 1) if table is not None else None,
        **store,
        "stream_bytes": result.stream.nbytes() if result.stream is not None else None,
    }


def run_case(duration: float, keep_records: bool, scenario: str = "default") -> dict[str, Any]:
    case = cases.run_case(__file__, duration, keep_records, extra=("--scenario", scenario))
    case["bytes_per_io"] = round((case["peak_mib"] - case["base_mib"]) * 2**20 / case["ios"], 1)
    print(json.dumps(case), file=sys.stderr, flush=True)
    return case


def margin(short: dict[str, Any], long: dict[str, Any], key: str = "peak_mib") -> float:
    """Bytes per I/O between two runs' peaks: the memory a run adds per I/O beyond a fixed base."""
    return float(round(float(long[key] - short[key]) * 2**20 / (long["ios"] - short["ios"]), 1))


def main() -> None:
    parser = case_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--scenario",
        default="default",
        help="a built-in scenario name or a file (default: default)",
    )
    parser.add_argument(
        "--durations",
        default="60,600",
        help="the short and the long run, simulated s (default 60,600)",
    )
    parser.add_argument(
        "--large-ios",
        type=float,
        default=1e7,
        help="I/Os of the long run without records (default 1e7; 0: none)",
    )
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.keep, args.scenario)))
        return
    short, long = (float(d) for d in args.durations.split(","))
    facts = {**machine_facts(), "load_average_before": load_average()}
    runs = [
        run_case(duration, keep, args.scenario)
        for duration in (short, long)
        for keep in (True, False)
    ]
    by = {(c["duration_s"], c["records"]): c for c in runs}
    at_length = {
        key: round(
            (by[(long, True)][key] - by[(long, False)][key]) * 2**20 / by[(long, True)]["ios"], 1
        )
        for key in ("run_peak_mib", "peak_mib")
    }
    report: dict[str, Any] = {
        "machine": {**facts, "load_average_after": load_average()},
        "cases": runs,
        # the records' own cost: a records run's peak less the streaming run's at the same length,
        # per I/O
        "records_bytes_per_io_during_run": at_length["run_peak_mib"],
        "records_bytes_per_io_with_table": at_length["peak_mib"],
        "margin_bytes_per_io_records_run": margin(
            by[(short, True)], by[(long, True)], "run_peak_mib"
        ),
        "margin_bytes_per_io_records": margin(by[(short, True)], by[(long, True)]),
        "margin_bytes_per_io_records_with_summary": margin(
            by[(short, True)], by[(long, True)], "summary_peak_mib"
        ),
        "margin_bytes_per_io_no_records": margin(by[(short, False)], by[(long, False)]),
    }
    if args.large_ios > 0:
        large = run_case(round(args.large_ios / DEFAULT_IOS_PER_S), False, args.scenario)
        report["cases"].append(large)
        report["margin_bytes_per_io_no_records_large"] = margin(by[(long, False)], large)
    cases.print_report(report, args.json)


if __name__ == "__main__":
    main()
