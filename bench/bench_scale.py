"""Scale benchmark (issue 18): a 10^8-I/O streaming run's peak memory, and its percentiles against a
records run.

Run from the repository root (each case in a fresh process, as ``ru_maxrss`` is a process's peak;
the long run takes about an hour on these 2-core machines):

    nice -n 10 .venv/bin/python bench/bench_scale.py [--duration 100] [--compare-duration 2] [--json
    PATH]

Scenario: ``bench/scale_64x16.toml``, 64 hosts x 16 VMs x 1,000 I/Os per second (102.4 million I/Os
in 100 s; ``--duration 977``: 10^9). ``run_by`` says which engine ran it (the native one where
built).

1. **Same figures**: the scenario for ``--compare-duration`` seconds with records and without (same
   seed, so the same I/Os): each group's and op's p50 and p99 without records must be within the
   histograms' stated error of the records' (``|p_stream - p_records| <= REL_ERROR * p_records +
   MIN_MS``, :mod:`simcache.sim.stream`).
2. **Memory**: the scenario for ``--duration`` seconds without records. Reported: resident memory
   before the run (``base_mib``), its peak (``peak_mib``, target below 1 GiB), the resident memory
   at every sample (its growth after the cold start says whether memory is flat in run length),
   I/Os, wall time, and I/Os per wall second.
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

SCENARIO = ROOT / "bench" / "scale_64x16.toml"
TARGET_PEAK_MIB = 1024.0
"""Issue 18's bound on a 10^8-I/O run's peak resident memory."""
TARGET_PEAK_BYTES_1E9 = 2e9
"""Issue 35's bound on a 10^9-I/O run's peak (2 GB)."""
PERCENTILES = ("p50_ms", "p99_ms")


def child(duration: float, keep_records: bool) -> dict[str, Any]:
    """One run in this process: memory along the way, then the summary's percentiles."""
    import simcache
    from simcache.native import choice as _native
    from simcache.sim.control import NO_LIMITS

    scenario = simcache.load_scenario(SCENARIO).with_duration(duration)
    base = rss_mib()
    trail: list[tuple[float, float, float]] = []
    started = time.perf_counter()

    def progress(fraction: float) -> None:
        trail.append(
            (
                round(fraction * duration, 3),
                round(time.perf_counter() - started, 1),
                round(rss_mib(), 1),
            )
        )
        print(
            f"  {trail[-1][0]:8.2f} s simulated  {trail[-1][1]:8.1f} s wall  {trail[-1][2]:7.1f} "
            "MiB",
            file=sys.stderr,
            flush=True,
        )

    result = simcache.simulate(
        scenario, keep_records=keep_records, limits=NO_LIMITS, progress=progress
    )
    wall = time.perf_counter() - started
    summary = result.summary
    figures = {
        f"{row['group']}.{row['op']}.{p}": float(row[p])
        for _, row in summary.iterrows()
        for p in PERCENTILES
    }
    return {
        "duration_s": duration,
        "records": keep_records,
        "ios": result.meta["ios"],
        "wall_s": round(wall, 1),
        "ios_per_wall_s": round(result.meta["ios"] / wall),
        "base_mib": round(base, 1),
        "peak_mib": round(peak_mib(), 1),
        "rss_trail": trail,
        "stable": bool(result.stable),
        "percentiles": figures,
        "engine_compiled": _native.COMPILED,
        "run_by": result.meta["run_by"],
    }


def run_case(duration: float, keep_records: bool) -> dict[str, Any]:
    case = cases.run_case(__file__, duration, keep_records, show_progress=True)
    print(
        json.dumps({k: v for k, v in case.items() if k != "rss_trail"}), file=sys.stderr, flush=True
    )
    return case


def compare(kept: dict[str, Any], streamed: dict[str, Any]) -> dict[str, Any]:
    """Each percentile of the streaming run against the records run's, with the histograms'
    bound."""
    from simcache.sim.stream import MIN_MS, REL_ERROR

    rows = {}
    for name, exact in kept["percentiles"].items():
        got = streamed["percentiles"][name]
        bound = REL_ERROR * exact + MIN_MS
        rows[name] = {
            "records": exact,
            "streaming": got,
            "error": abs(got - exact),
            "bound": bound,
            "within": abs(got - exact) <= bound,
        }
    return rows


def main() -> None:
    parser = case_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--duration",
        type=float,
        default=100.0,
        help="simulated seconds of the streaming run (default 100: 102.4 M I/Os)",
    )
    parser.add_argument(
        "--compare-duration",
        type=float,
        default=2.0,
        help="simulated seconds of the records/streaming pair (default 2)",
    )
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.keep)))
        return
    facts = {**machine_facts(), "load_average_before": load_average()}
    kept, streamed = run_case(args.compare_duration, True), run_case(args.compare_duration, False)
    same = compare(kept, streamed)
    large = run_case(args.duration, False)
    report = {
        "machine": {**facts, "load_average_after": load_average()},
        "same_figures": {
            "duration_s": args.compare_duration,
            "all_within": all(r["within"] for r in same.values()),
            "rows": same,
        },
        "pair": [kept, streamed],
        "large": large,
        "large_peak_below_target": large["peak_mib"] < TARGET_PEAK_MIB,
        "large_peak_below_2_gb": large["peak_mib"] * 2**20 < TARGET_PEAK_BYTES_1E9,
    }
    cases.print_report(report, args.json)


if __name__ == "__main__":
    main()
