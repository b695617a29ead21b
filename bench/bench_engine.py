"""Engine speed benchmark: simcache's default scenario against a plain SimPy M/M/1 queue.

Run from the repository root:

    .venv/bin/python bench/bench_engine.py [--repeats N] [--duration T] [--json PATH]

Absolute speed on a shared 2-core VM drifts by tens of percent from minute to
minute, so the figure of merit is a *ratio*: simulated I/Os per wall-clock
second of the default scenario divided by customers per wall-clock second of a
minimal SimPy M/M/1 model (arrival process -> simpy.Store -> server process),
both measured in the same process, interleaved (M/M/1, scenario, M/M/1, ...).
The M/M/1 loop is about the cheapest useful thing SimPy can do per customer,
so the ratio says how much of the per-event budget the model's own Python work
and extra events cost. Target: ratio >= 1.0 (issue 18; the first target was 0.20).

Diagnostics (not part of the timed measurement, each costs one extra run):
    --census    count the SimPy events of one scenario run by kind and origin
    --profile   cProfile one scenario run and print the top functions
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import time
from collections.abc import Generator
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import simpy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a source tree even without `pip install -e .`

from machine import machine_facts  # noqa: E402

import simcache  # noqa: E402

SCENARIO = ROOT / "scenarios" / "default.toml"
TARGET_RATIO = 1.0  # issue 18: the engine as fast per I/O as the plain M/M/1 per customer


# -- baseline: plain SimPy M/M/1 -------------------------------------------------------------------


def mm1(customers: int, rho: float = 0.9, seed: int = 20240601) -> dict[str, float]:
    """A FCFS M/M/1 queue in idiomatic SimPy; return speed and a sanity check against theory.

    Service rate 1, arrival rate ``rho``. Inter-arrival and service times are
    drawn up front (numpy, seeded) so the timed part is SimPy plus the two
    generator loops only. The arrival process does not yield on ``put``: the
    store is unbounded, so the put always succeeds at once.
    """
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rho, customers).tolist()
    services = rng.exponential(1.0, customers).tolist()
    env = simpy.Environment()
    store = simpy.Store(env)
    sojourn = [0.0, 0]  # sum of time in system, customers served

    def arrivals() -> Generator[simpy.Event, Any, None]:
        timeout = env.timeout
        put = store.put
        for i in range(customers):
            yield timeout(gaps[i])
            put((i, env.now))

    def server() -> Generator[simpy.Event, Any, None]:
        timeout = env.timeout
        get = store.get
        while True:
            i, arrived = yield get()
            yield timeout(services[i])
            sojourn[0] += env.now - arrived
            sojourn[1] += 1

    gc.collect()
    started = time.perf_counter()
    env.process(arrivals())
    env.process(server())
    env.run()
    wall = time.perf_counter() - started
    events = next(env._eid)  # SimPy's running count of scheduled events
    served = int(sojourn[1])
    assert served == customers, f"M/M/1 served {served} of {customers}"
    return {
        "customers": customers,
        "wall_s": wall,
        "customers_per_s": customers / wall,
        "events": events,
        "events_per_customer": events / customers,
        "mean_sojourn": sojourn[0] / customers,
        "theory_sojourn": 1.0 / (1.0 - rho),  # M/M/1: W = 1 / (mu - lambda) with mu = 1
    }


# -- the default scenario
# ---------------------------------------------------------------------------


def scenario_run(scenario: simcache.Scenario, duration: float | None) -> dict[str, float]:
    gc.collect()
    started = time.perf_counter()
    result = simcache.simulate(scenario, seed=1, duration=duration)
    call = time.perf_counter() - started
    meta = result.meta
    ios = int(meta["ios"])
    wall = float(meta["wall_time_s"])  # build + run, not result assembly
    return {
        "ios": ios,
        "simulated_s": float(meta["simulated_s"]),
        "wall_s": wall,
        "call_s": call,
        "ios_per_s": ios / wall,
        "ios_per_call_s": ios / call,
        "events": int(meta["events"]),
        "events_per_io": float(meta["events_per_io"]),
    }


# -- statistics and printing
# -------------------------------------------------------------------------


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _fmt(s: dict[str, float], fmt: str) -> str:
    return f"{format(s['median'], fmt):>10}  [{format(s['min'], fmt)} .. {format(s['max'], fmt)}]"


# -- diagnostics
# ---------------------------------------------------------------------------------------


def _origin(skip: int) -> str:
    """First frame outside SimPy, the kernel and this file: ``function (file:line)``."""
    simpy_dir = os.path.dirname(simpy.__file__)
    kernel_file = getattr(sys.modules.get("simcache.sim.components.kernel"), "__file__", None)
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None and (
        frame.f_code.co_filename.startswith(simpy_dir)
        or frame.f_code.co_filename in (__file__, kernel_file)
    ):
        frame = frame.f_back
    if frame is None:
        return "?"
    return (
        f"{frame.f_code.co_qualname} "
        f"({os.path.relpath(frame.f_code.co_filename, ROOT)}:{frame.f_lineno})"
    )


def census(scenario: simcache.Scenario, duration: float | None) -> dict[str, Any]:
    """Count scheduled SimPy events of one scenario run by kind and by where they come from.

    Timeouts and plain events are labelled with the first non-SimPy frame that
    scheduled them; process start (Initialize) and process end (Process) events
    with the generator function of the process. Stale flow-network wake-ups
    (timers superseded by a later reshare, which still pop off the heap) are
    counted by wrapping ``FlowNetwork._wake`` when it exists. Events the flow
    network puts straight into SimPy's queue (``link.schedule_at``, in engines
    that have it) are labelled with what they are for: a wake-up timer or the
    delivery of a flow that was alone on its ports.
    """
    counts: collections.Counter[str] = collections.Counter()
    # SimPy's events call env.schedule: the kernel's Clock's since it runs every event (its class is
    # patchable only from the sources, not compiled), SimPy's own in older engines.
    scheduler: Any = getattr(
        sys.modules.get("simcache.sim.components.kernel"), "Clock", simpy.Environment
    )
    original = scheduler.schedule

    def label(event: Any) -> str:
        kind = type(event).__name__
        if isinstance(event, simpy.events.Initialize):
            generator: Any = event.callbacks[0].__self__._generator
            return f"Initialize  process {generator.__qualname__}"
        if isinstance(event, simpy.events.Process):
            return f"Process end process {event._generator.__qualname__}"
        return f"{kind:<11} {_origin(3)}"

    def counting_schedule(self, event, priority=1, delay=0):  # type: ignore[no-untyped-def]
        counts[label(event)] += 1
        return original(self, event, priority, delay)

    # The kernel's Clock queues every event through push (SimPy's, and the engine's own Signals from
    # sleep() and schedule_at(), which never pass schedule): counted there, each labelled where it
    # was scheduled.
    original_push = getattr(scheduler, "push", None)

    def counting_push(self, entry, at, priority):  # type: ignore[no-untyped-def]
        counts[label(getattr(entry, "event", None) or entry)] += 1
        return original_push(self, entry, at, priority)

    wakes = {"stale": 0, "current": 0}
    network_cls: Any = None
    with contextlib.suppress(ImportError):
        from simcache.sim.components.link import FlowNetwork as network_cls
    original_wake = getattr(network_cls, "_wake", None)
    if network_cls is not None and original_wake is not None:

        def counting_wake(self, *args):  # type: ignore[no-untyped-def]
            # _wake(version) or _wake(version, timer) in older engines; _wake(timer) since, the
            # version as the timer's value at first, then the pending timer itself (`_timer`) as the
            # current one.
            if hasattr(self, "_version"):
                version = args[0] if isinstance(args[0], int) else args[0]._value
                stale = version != self._version
            else:
                stale = args[0] is not self._timer
            wakes["stale" if stale else "current"] += 1
            return original_wake(self, *args)

        network_cls._wake = counting_wake
    link_module: Any = sys.modules.get("simcache.sim.components.link")
    # from simcache.sim.components.kernel since
    schedule_name = "schedule_at" if hasattr(link_module, "schedule_at") else "_schedule_at"
    original_schedule_at = (
        None if original_push is not None else getattr(link_module, schedule_name, None)
    )
    if original_schedule_at is not None:

        def counting_schedule_at(env, at, event, *priority):  # type: ignore[no-untyped-def]
            if isinstance(event, simpy.events.Event):  # a transfer's own event, delivered
                label = f"{'Event':<11} _deliver (simcache/sim/components/link.py)"
            else:
                # a Resumer: "resume"
                waiter = event.callbacks[0] if event.callbacks else getattr(event, "resumer", None)
                purpose = getattr(waiter, "__name__", "resume").removeprefix("counting")
                label = f"{'Signal':<11} FlowNetwork {purpose} (simcache/sim/components/link.py)"
            counts[label] += 1
            return original_schedule_at(env, at, event, *priority)

        setattr(link_module, schedule_name, counting_schedule_at)
    if original_push is not None:
        scheduler.push = counting_push
    else:
        scheduler.schedule = counting_schedule
    try:
        result = simcache.simulate(scenario, seed=1, duration=duration)
    finally:
        if original_push is not None:
            scheduler.push = original_push
        scheduler.schedule = original
        if network_cls is not None and original_wake is not None:
            network_cls._wake = original_wake
        if original_schedule_at is not None:
            setattr(link_module, schedule_name, original_schedule_at)
    ios = int(result.meta["ios"])
    paths: dict[Any, Any] = result.records.groupby(["op", "path"]).size().to_dict()
    return {
        "ios": ios,
        "events": sum(counts.values()),
        "events_meta": int(result.meta["events"]),
        "by_origin": dict(counts.most_common()),
        "flow_wakes": wakes if original_wake is not None else None,
        "ios_by_path": {f"{op}/{path}": int(n) for (op, path), n in paths.items()},
    }


def print_census(c: dict[str, Any]) -> None:
    ios = c["ios"]
    print(
        f"\nEvent census of one run: {c['events']} events ({c['events_meta']} by the engine's "
        f"counter), {ios} I/Os"
    )
    print(f"  {c['events'] / ios:.2f} events per I/O")
    print("  I/Os by path: " + ", ".join(f"{k} {v}" for k, v in c["ios_by_path"].items()))
    print(f"  {'events':>8} {'per I/O':>8}  kind / origin")
    for label, n in c["by_origin"].items():
        print(f"  {n:>8} {n / ios:>8.3f}  {label}")
    if c["flow_wakes"] is not None:
        w = c["flow_wakes"]
        print(
            f"  flow-network wake-ups: {w['current']} current, {w['stale']} stale (superseded by a "
            "later reshare)"
        )


def profile(scenario: simcache.Scenario, duration: float | None, top: int = 30) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    simcache.simulate(scenario, seed=1, duration=duration)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
    return out.getvalue()


# -- main
# ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeats", type=int, default=7, help="interleaved measurement rounds (default 7)"
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="simulated seconds of the scenario (default: the file's run.duration)",
    )
    parser.add_argument(
        "--customers",
        type=int,
        default=200_000,
        help="M/M/1 customers per measurement (default 200000)",
    )
    parser.add_argument(
        "--scenario",
        type=Path,
        default=SCENARIO,
        help="scenario file (default scenarios/default.toml)",
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every number to this JSON file"
    )
    parser.add_argument(
        "--census", action="store_true", help="count one run's SimPy events by kind and origin"
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile one run and print the top functions"
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if (args.census or args.profile) and getattr(
        getattr(simcache, "_native", None), "COMPILED", False
    ):
        parser.error(
            "--census and --profile patch and trace Python functions, which the compiled engine "
            "does not run: "
            "add SIMCACHE_PURE_PYTHON=1 to run the engine's Python sources (same events, same "
            "results)"
        )

    facts = machine_facts()
    print("simcache engine benchmark")
    for key, value in facts.items():
        print(f"  {key:<22} {value}")
    scenario = simcache.load_scenario(args.scenario)
    shown = args.scenario
    if shown.is_relative_to(ROOT):
        shown = shown.relative_to(ROOT)
    print(
        f"  {'scenario':<22} {shown}"
        f" (duration {args.duration if args.duration is not None else scenario.run.duration} s, "
        "seed 1)"
    )
    print(f"  {'M/M/1':<22} {args.customers} customers, rho 0.9")
    print(
        f"  {'rounds':<22} {args.repeats} (+1 warm-up), interleaved M/M/1, scenario, M/M/1, ...\n"
    )

    # Warm-up: imports, lazy pydantic/pandas paths, CPU frequency; not recorded.
    mm1(min(args.customers, 20_000))
    scenario_run(scenario, min(args.duration or scenario.run.duration, 2.0))

    baseline: list[dict[str, float]] = []
    runs: list[dict[str, float]] = []
    for r in range(args.repeats):
        baseline.append(mm1(args.customers))
        runs.append(scenario_run(scenario, args.duration))
        b, s = baseline[-1], runs[-1]
        print(
            f"  round {r + 1}: M/M/1 {b['customers_per_s']:>9,.0f} cust/s ({b['wall_s']:.2f} s)   "
            f"scenario {s['ios_per_s']:>8,.0f} I/O/s ({s['wall_s']:.2f} s run, {s['call_s']:.2f} s "
            "call)   "
            f"ratio {s['ios_per_s'] / b['customers_per_s']:.3f}"
        )

    ratios = [s["ios_per_s"] / b["customers_per_s"] for b, s in zip(baseline, runs, strict=True)]
    summary: dict[str, Any] = {
        "mm1_customers_per_s": spread([b["customers_per_s"] for b in baseline]),
        "mm1_events_per_customer": spread([b["events_per_customer"] for b in baseline]),
        "mm1_mean_sojourn": spread([b["mean_sojourn"] for b in baseline]),
        "scenario_ios_per_s": spread([s["ios_per_s"] for s in runs]),
        "scenario_ios_per_call_s": spread([s["ios_per_call_s"] for s in runs]),
        "scenario_wall_s": spread([s["wall_s"] for s in runs]),
        "scenario_call_s": spread([s["call_s"] for s in runs]),
        "scenario_events_per_io": spread([s["events_per_io"] for s in runs]),
        "ratio_per_round": spread(ratios),
    }
    summary["ratio_of_medians"] = (
        summary["scenario_ios_per_s"]["median"] / summary["mm1_customers_per_s"]["median"]
    )
    ratio = summary["ratio_per_round"]["median"]

    print("\n                                   median  [min .. max]")
    print(f"  M/M/1 customers / wall s   {_fmt(summary['mm1_customers_per_s'], ',.0f')}")
    print(f"  M/M/1 events / customer    {_fmt(summary['mm1_events_per_customer'], '.2f')}")
    print(
        f"  M/M/1 mean sojourn         {_fmt(summary['mm1_mean_sojourn'], '.2f')}   (theory "
        f"{baseline[0]['theory_sojourn']:.2f})"
    )
    print(
        f"  scenario I/Os              {runs[0]['ios']:>10,}   ({runs[0]['simulated_s']:g} "
        "simulated s)"
    )
    print(
        f"  scenario I/Os / wall s     {_fmt(summary['scenario_ios_per_s'], ',.0f')}   (build + "
        "run)"
    )
    print(
        f"  scenario I/Os / call s     {_fmt(summary['scenario_ios_per_call_s'], ',.0f')}   (whole "
        "simulate() call)"
    )
    print(f"  scenario run wall s        {_fmt(summary['scenario_wall_s'], '.3f')}")
    print(f"  scenario call wall s       {_fmt(summary['scenario_call_s'], '.3f')}")
    print(f"  scenario events / I/O      {_fmt(summary['scenario_events_per_io'], '.2f')}")
    print(f"  ratio (per round)          {_fmt(summary['ratio_per_round'], '.3f')}")
    print(f"  ratio of medians           {summary['ratio_of_medians']:>10.3f}")
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(
        f"\n  scenario I/O rate / M/M/1 customer rate = {ratio:.3f} (median of rounds): {verdict} "
        f"the target >= {TARGET_RATIO:.2f}"
    )

    report: dict[str, Any] = {
        "machine": facts,
        "settings": {
            "repeats": args.repeats,
            "customers": args.customers,
            "rho": 0.9,
            "scenario": str(args.scenario),
            "duration": args.duration,
            "seed": 1,
        },
        "summary": summary,
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio >= TARGET_RATIO,
        "rounds": [
            {"mm1": b, "scenario": s, "ratio": q}
            for b, s, q in zip(baseline, runs, ratios, strict=True)
        ],
    }
    if args.census:
        c = census(scenario, args.duration)
        print_census(c)
        report["census"] = c
    if args.profile:
        text = profile(scenario, args.duration)
        print("\ncProfile of one scenario run (sorted by own time):")
        print(text)
        report["profile"] = text
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
