"""The native engine (issue 35, steps 2 to 8) against the Python engine and a plain SimPy M/M/1,
in the same process, interleaved.

Run from the repository root, in an install built with ``SIMCACHE_NATIVE=1``:

    .venv/bin/python bench/bench_native.py [--rounds R] [--scenario FILE --variant NAME]
        [--duration S] [--reads SCALE | --cold] [--json PATH]

``--reads SCALE`` makes any scenario one the native engine takes: every group reading only, the
read caches warm and large enough for every disk, no scheduled events, working sets ``SCALE``
times smaller (the warm caches are built in Python at each build); e.g. the 32-host default
(``--scenario bench/default_32hosts.toml --variant base --reads 16``): open loops, an on/off
cycle and think times on 32 hosts. ``--cold`` makes it read-only through cold caches instead
(no events; its own array, sizes and working sets): e.g. ``--scenario scenarios/default.toml
--variant base --cold``, whose misses go to the HDD RAID 10 with the elevator.

The Python engine runs compiled when the install compiled it (``SIMCACHE_COMPILE=engine``), else
from its sources; ``SIMCACHE_PURE_PYTHON=1`` forces the sources. Each round runs the SimPy M/M/1
of ``bench_engine.py``, then the scenario on the Python engine and on the native engine (in
alternating order), each once to build alone and once built and run (``run_scenario``): the run
loop's time is the run's wall time (build and run, ``RunRecord.wall_time_s``) minus the build's.
The two runs must agree (I/Os, events and counters), else the benchmark stops. Figures: I/Os and
events per second of the run loop and of build plus run, their ratio to the M/M/1's customers per
second, and the per-round ratio of the Python engine's time to the native engine's; the same in
CPU seconds of the process (``time.process_time``: on a loaded machine the wall clock counts the
time the process waited for a core; the M/M/1 is timed the same way); medians with the
interquartile range over rounds.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a source tree even without `pip install -e .`
sys.path.insert(0, str(ROOT / "bench"))

from bench_engine import mm1  # noqa: E402
from machine import machine_facts  # noqa: E402

from simcache.native.choice import ENGINE  # noqa: E402
from simcache.sim import native_run  # noqa: E402
from simcache.sim.engine import build, run_scenario  # noqa: E402
from simcache.spec import Scenario, load_scenario  # noqa: E402


def _one(scenario: Scenario, native: bool) -> dict[str, Any]:
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    model = build(scenario, scenario.run.seed, native=native)
    build_s, build_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    assert (model.native is not None) == native, "the native engine did not take the scenario"
    del model
    gc.collect()
    cpu = time.process_time()
    record = run_scenario(scenario, native=native)
    # CPU seconds of the call (its result's assembly, after the run, is not in it: a small part)
    cpu_s = time.process_time() - cpu
    run_s = record.wall_time_s - build_s
    run_cpu_s = cpu_s - build_cpu_s
    ios = record.counters.issued_ios - len(record.unfinished)
    return {
        "build_s": build_s,
        "wall_s": record.wall_time_s,
        "run_s": run_s,
        "ios": ios,
        "events": record.events,
        "ios_per_run_s": ios / run_s,
        "events_per_run_s": record.events / run_s,
        "ios_per_wall_s": ios / record.wall_time_s,
        "run_cpu_s": run_cpu_s,
        "ios_per_run_cpu_s": ios / run_cpu_s,
        "counters": record.counters,
    }


def reads_from_warm_caches(scenario: Scenario, scale: int) -> Scenario:
    """``scenario`` read-only from warm caches holding every disk, without its scheduled events,
    its working sets ``scale`` times smaller (checks and variants dropped)."""
    data = scenario.model_dump(mode="json")
    for key in ("variants", "expect", "check", "events"):
        data.pop(key, None)
    per_host = max(
        sum(group["vms_per_host"] * group["workload"]["working_set"] for group in data["groups"])
        // scale,
        1,
    )
    # room for every disk, its largest I/O past its end and a line per VM of rounding
    capacity = 2 * per_host + 2**30
    data["cluster"]["cache"] = data["cluster"].get("cache", {}) | {
        "warm": True,
        "capacity": capacity,
    }
    for group in data["groups"]:
        group["workload"]["read_fraction"] = 1.0
        group["workload"]["working_set"] //= scale
    return load_scenario(data)


def reads_through_cold_caches(scenario: Scenario) -> Scenario:
    """``scenario`` read-only through cold caches (its own array, sizes and working sets),
    without its scheduled events (checks and variants dropped): every first read of a line
    misses to the array."""
    data = scenario.model_dump(mode="json")
    for key in ("variants", "expect", "check", "events"):
        data.pop(key, None)
    data["cluster"]["cache"] = data["cluster"].get("cache", {}) | {"warm": False}
    for group in data["groups"]:
        group["workload"]["read_fraction"] = 1.0
    return load_scenario(data)


def _spread(values: list[float]) -> dict[str, float]:
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"median": statistics.median(values), "q1": quartiles[0], "q3": quartiles[2]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--scenario", default=str(ROOT / "scenarios" / "validate_scm_optane_p4800x_anandtech.toml")
    )
    parser.add_argument("--variant", default="qd16-read")
    parser.add_argument("--duration", type=float, default=None, help="simulated seconds")
    parser.add_argument("--customers", type=int, default=100_000, help="M/M/1 customers a round")
    parser.add_argument(
        "--reads",
        type=int,
        default=None,
        metavar="SCALE",
        help="reads only from warm caches, no events, working sets SCALE times smaller",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="reads only through cold caches to the scenario's own array, no events",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    scenario = load_scenario(args.scenario)
    if args.variant != "base":
        scenario = scenario.variant(args.variant)
    if args.reads is not None and args.cold:
        raise SystemExit("--reads and --cold exclude each other")
    if args.reads is not None:
        scenario = reads_from_warm_caches(scenario, args.reads)
    if args.cold:
        scenario = reads_through_cold_caches(scenario)
    if args.duration is not None:
        scenario = scenario.with_duration(args.duration)
    why = native_run.unsupported(scenario)
    if why is not None:
        raise SystemExit(f"the native engine does not run this scenario: {why}")
    engine = ENGINE
    print(f"Python engine: {engine}; {machine_facts()}")
    reads = "" if args.reads is None else f", reads from warm caches, working sets / {args.reads}"
    if args.cold:
        reads = ", reads through cold caches"
    name = Path(args.scenario).name
    print(f"{name} {args.variant}{reads}, {scenario.run.duration:g} s simulated")
    rounds: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        cpu = time.process_time()
        base = mm1(args.customers)
        mm1_cpu_rate = args.customers / (time.process_time() - cpu)
        order = (False, True) if round_ % 2 == 0 else (True, False)
        runs = {native: _one(scenario, native) for native in order}
        python, native = runs[False], runs[True]
        for key in ("ios", "events", "counters"):
            if python[key] != native[key]:
                raise SystemExit(f"round {round_ + 1}: the engines' {key} differ")
        rate = base["customers_per_s"]
        row = {
            "mm1_customers_per_s": rate,
            "python": {k: v for k, v in python.items() if k != "counters"},
            "native": {k: v for k, v in native.items() if k != "counters"},
            "ratio_mm1_python": python["ios_per_run_s"] / rate,
            "ratio_mm1_native": native["ios_per_run_s"] / rate,
            "ratio_mm1_native_wall": native["ios_per_wall_s"] / rate,
            "speedup_run": python["run_s"] / native["run_s"],
            "speedup_wall": python["wall_s"] / native["wall_s"],
            "cpu_ratio_mm1_python": python["ios_per_run_cpu_s"] / mm1_cpu_rate,
            "cpu_ratio_mm1_native": native["ios_per_run_cpu_s"] / mm1_cpu_rate,
            "cpu_speedup_run": python["run_cpu_s"] / native["run_cpu_s"],
        }
        rounds.append(row)
        print(
            f"round {round_ + 1}: M/M/1 {rate:,.0f} cust/s | python {python['ios_per_run_s']:,.0f}"
            f" I/O/s (x{row['ratio_mm1_python']:.2f}) | native {native['ios_per_run_s']:,.0f} I/O/s"
            f" (x{row['ratio_mm1_native']:.2f}, build+run x{row['ratio_mm1_native_wall']:.2f})"
            f" | run {row['speedup_run']:.1f}x, build+run {row['speedup_wall']:.2f}x faster;"
            f" {python['ios']:,} I/Os, {python['events']:,} events, build"
            f" {python['build_s']:.3f}/{native['build_s']:.3f} s"
        )
    summary = {
        key: _spread([row[key] for row in rounds])
        for key in (
            "mm1_customers_per_s",
            "ratio_mm1_python",
            "ratio_mm1_native",
            "ratio_mm1_native_wall",
            "speedup_run",
            "speedup_wall",
            "cpu_ratio_mm1_python",
            "cpu_ratio_mm1_native",
            "cpu_speedup_run",
        )
    }
    summary["native_events_per_run_s"] = _spread([r["native"]["events_per_run_s"] for r in rounds])
    summary["native_ios_per_run_s"] = _spread([r["native"]["ios_per_run_s"] for r in rounds])
    summary["python_ios_per_run_s"] = _spread([r["python"]["ios_per_run_s"] for r in rounds])
    summary["native_ios_per_run_cpu_s"] = _spread(
        [r["native"]["ios_per_run_cpu_s"] for r in rounds]
    )
    for key, value in summary.items():
        print(f"  {key:<26} {value['median']:>12,.3f} [{value['q1']:,.3f} .. {value['q3']:,.3f}]")
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": rounds, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
