"""Memory kept across runs in one process: what a long-lived process (the app's server, a sweep's
in-process points, a Dask worker, a notebook) holds after each finished run.

Run from the repository root:

    .venv/bin/python bench/bench_retained.py [--runs 20] [--duration S] [--json PATH]
                                             [SCENARIO ...]

Each scenario (default: ``vmotion``, ``host_failure_ha`` and ``default``; a library name or a
file) runs ``--runs`` times in this process with seeds 1, 2, ... (each for ``--duration``
simulated seconds if given, else its own), its result dropped after each run. After each run, a
garbage collection, then the process's resident memory (``VmRSS``) and the simulator's hosts still
alive (``Host`` objects: a run's model holds one per host). A finished run must leave none: the
exit status is 1 if any survives. Reported per scenario: the run that ran it (the native engine or
the Python one), its I/Os, the hosts alive after the last run, and the resident memory after the
first run and the last, with the growth per run between them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # support.memory: what counts as a run's model alive

from cases import rss_mib  # noqa: E402
from machine import load_average, machine_facts  # noqa: E402
from support.memory import hosts_alive  # noqa: E402

DEFAULT_SCENARIOS = ["vmotion", "host_failure_ha", "default"]


def retained(name: str, runs: int, duration: float | None) -> dict[str, Any]:
    """``name`` run ``runs`` times in this process: the memory and hosts after each."""
    import simcache

    scenario = simcache.load_scenario(name)
    if duration is not None:
        scenario = scenario.with_duration(duration)
    before = hosts_alive()
    rss: list[float] = []
    run_by = ""
    ios = hosts = 0
    for seed in range(1, runs + 1):
        result = simcache.simulate(scenario, seed=seed)
        run_by, ios = str(result.meta["run_by"]), int(result.meta["ios"])
        del result
        hosts = hosts_alive() - before
        rss.append(round(rss_mib(), 1))
    growth = (rss[-1] - rss[0]) / (runs - 1) if runs > 1 else 0.0
    return {
        "scenario": name,
        "run_by": run_by,
        "ios_per_run": ios,
        "runs": runs,
        "hosts_alive_after": hosts,
        "rss_mib": rss,
        "growth_mib_per_run": round(growth, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", default=DEFAULT_SCENARIOS)
    parser.add_argument("--runs", type=int, default=20, help="runs per scenario (default 20)")
    parser.add_argument("--duration", type=float, help="simulated seconds per run")
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs: at least 2 (the growth is between the first run and the last)")
    rows = [retained(name, args.runs, args.duration) for name in args.scenarios]
    print(
        "| scenario | run by | I/Os a run | runs | hosts alive after | RSS after run 1 / last |"
        " growth a run |"
    )
    print("|---|---|---:|---:|---:|---|---:|")
    for row in rows:
        print(
            f"| {row['scenario']} | {row['run_by'][:40]} | {row['ios_per_run']:,} | {row['runs']} |"
            f" {row['hosts_alive_after']} | {row['rss_mib'][0]} / {row['rss_mib'][-1]} MiB |"
            f" {row['growth_mib_per_run']:+.2f} MiB |"
        )
    facts = {**machine_facts(), "load_average": load_average()}
    print(json.dumps(facts))
    if args.json is not None:
        args.json.write_text(json.dumps({"machine": facts, "rows": rows}, indent=2) + "\n")
    sys.exit(1 if any(row["hosts_alive_after"] for row in rows) else 0)


if __name__ == "__main__":
    main()
