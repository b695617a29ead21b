"""Memory benchmark: peak resident memory per I/O of the default scenario, with records and without
(issue 18).

Run from the repository root (one run at a time; each case runs in a fresh process, as ``ru_maxrss``
is a process's peak):

    nice -n 10 .venv/bin/python bench/bench_memory.py [--large-ios N] [--json PATH]

Cases: the default scenario for 60 s and 600 s, with records (``simulate``) and without
(``simulate(..., keep_records=False)``), and one long run without records of about ``--large-ios``
I/Os (default 10^7; the issue's target is 10^8 under 1 GB). Each child reports:

- ``base_mib``: resident memory after importing simcache and loading the scenario, before the run;
- ``peak_mib``: peak resident memory (``ru_maxrss``) through ``simulate`` (the run and its result:
  records table, series, totals);
- ``summary_peak_mib``: the peak once the summary, breakdown and warnings have been computed too;
- ``held_mib``: resident memory after the run, with the result alive.

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


def child(duration: float, keep_records: bool) -> dict[str, Any]:
    """One case, in this process: the run, then its summary."""
    import simcache
    from simcache.sim.control import NO_LIMITS

    scenario = simcache.load_scenario("default").with_duration(duration)
    base = rss_mib()
    started = time.perf_counter()
    result = simcache.simulate(scenario, keep_records=keep_records, limits=NO_LIMITS)
    wall = time.perf_counter() - started
    peak = peak_mib()
    held = rss_mib()
    _ = (result.summary, result.breakdown, result.warnings)
    return {
        "duration_s": duration,
        "records": keep_records,
        "ios": result.meta["ios"],
        "wall_s": round(wall, 1),
        "base_mib": round(base, 1),
        "peak_mib": round(peak, 1),
        "held_mib": round(held, 1),
        "summary_peak_mib": round(peak_mib(), 1),
        "stream_bytes": result.stream.nbytes() if result.stream is not None else None,
    }


def run_case(duration: float, keep_records: bool) -> dict[str, Any]:
    case = cases.run_case(__file__, duration, keep_records)
    case["bytes_per_io"] = round((case["peak_mib"] - case["base_mib"]) * 2**20 / case["ios"], 1)
    print(json.dumps(case), file=sys.stderr, flush=True)
    return case


def margin(short: dict[str, Any], long: dict[str, Any], key: str = "peak_mib") -> float:
    """Bytes per I/O between two runs' peaks: the memory a run adds per I/O beyond a fixed base."""
    return round((long[key] - short[key]) * 2**20 / (long["ios"] - short["ios"]), 1)


def main() -> None:
    parser = case_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--large-ios",
        type=float,
        default=1e7,
        help="I/Os of the long run without records (default 1e7)",
    )
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.keep)))
        return
    facts = {**machine_facts(), "load_average_before": load_average()}
    runs = [run_case(duration, keep) for duration in (60.0, 600.0) for keep in (True, False)]
    large = run_case(round(args.large_ios / DEFAULT_IOS_PER_S), False)
    by = {(c["duration_s"], c["records"]): c for c in runs}
    report = {
        "machine": {**facts, "load_average_after": load_average()},
        "cases": [*runs, large],
        "margin_bytes_per_io_records": margin(by[(60.0, True)], by[(600.0, True)]),
        "margin_bytes_per_io_records_with_summary": margin(
            by[(60.0, True)], by[(600.0, True)], "summary_peak_mib"
        ),
        "margin_bytes_per_io_no_records": margin(by[(60.0, False)], by[(600.0, False)]),
        "margin_bytes_per_io_no_records_large": margin(by[(600.0, False)], large),
    }
    cases.print_report(report, args.json)


if __name__ == "__main__":
    main()
