"""Engine speed benchmark: simcache's scenarios, and Cimba's M/M/1, against a plain SimPy M/M/1
queue.

Run from the repository root:

    .venv/bin/python bench/bench_engine.py [--series S] [--rounds R] [--scenarios
    default,32hosts,nvme] [--json PATH]

Absolute speed on a shared 2-core VM drifts by tens of percent from minute to
minute, so the figures of merit are *ratios*: simulated I/Os per wall-clock
second of each scenario divided by customers per wall-clock second of a
minimal SimPy M/M/1 model (arrival process -> simpy.Store -> server process),
all measured in the same process, interleaved (M/M/1, each scenario, Cimba's
M/M/1, then the next round). The M/M/1 loop is about the cheapest useful thing
SimPy can do per customer, so a ratio says how much of the per-event budget
the model's own work and extra events cost; a row's "per event" figure is its
events per wall-clock second over the M/M/1's (4 a customer), which leaves out
how many events an I/O takes. Cimba (a C discrete-event engine with Python
bindings, package ``cimba``, the optional ``bench`` extra) runs the
same M/M/1 beside it, as the yardstick of a native engine.

Scenarios (``--scenarios``): ``default`` (scenarios/default.toml), ``32hosts``
(bench/default_32hosts.toml: the default's cluster eight times over), ``nvme``
(bench/nvme_500k.toml: one host taking 500,000 4 KiB writes a second).
Targets: issue 18's 1.0 for the default; issue 35's 10x for the default and 5x
for 32 hosts (medians of 3 series of 7 rounds: ``--series 3 --rounds 7``).

Diagnostics (not part of the timed measurement, each costs extra runs):
    --census    count the SimPy events of one run of each scenario by kind and origin (Python
    sources) --profile   cProfile one run of the first scenario and print the top functions (Python
    sources) --split     where a run's time goes: event machinery, model code, runtime (the compiled
    engine: perf
                samples with call stacks; the Python sources: cProfile)
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
import shutil
import statistics
import subprocess
import sys
import tempfile
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

SCENARIOS = {
    "default": ROOT / "scenarios" / "default.toml",
    "32hosts": ROOT / "bench" / "default_32hosts.toml",
    "nvme": ROOT / "bench" / "nvme_500k.toml",
}
SCENARIO = SCENARIOS["default"]
TARGET_RATIO = 1.0  # issue 18: the engine as fast per I/O as the plain M/M/1 per customer
# issue 35: a native-speed engine, medians of 3 series of 7 rounds
NATIVE_TARGETS = {"default": 10.0, "32hosts": 5.0}
# The event machinery's modules: the kernel's clock (its stop polls and queue reads split out of it
# since), queue, signals and waits (one module, simcache.sim.components.kernel, in engines before
# 2026-11-29); the kernel's detached generators count as model code, as they did before.
KERNEL_MODULES = (
    "simcache.sim.kernel.clock",
    "simcache.sim.kernel.stopping",
    "simcache.sim.kernel.entries",
    "simcache.sim.kernel.signals",
    "simcache.sim.kernel.heap",
    "simcache.sim.kernel.waits",
    "simcache.sim.components.kernel",
)
# mypyc names a compiled function CPyDef_<module>___<name>, <module> the shortest suffix of the
# module's dotted name that is unique in its compile group (here the last part).
KERNEL_SYMBOLS = tuple(f"CPyDef_{module.rpartition('.')[2]}___" for module in KERNEL_MODULES)
# The native engine (simcache/native/_engine.pyx, Cython): Cython names a cdef function
# __pyx_f_<module path as length-prefixed parts>_<name>; its run loop is Engine._loop, its event
# machinery the loop, Engine._push and _schedule, and the radix queue's functions (_rq_*, from
# engine/queue.pxi). Everything else it compiles is model code (the flow network's own heap of
# finish marks included, as the Python engine's FlowNetwork is).
NATIVE_PREFIX = "__pyx_f_8simcache_6native_7_engine_"
NATIVE_LOOP = NATIVE_PREFIX + "6Engine__loop"
NATIVE_EVENT_SYMBOLS = (
    NATIVE_LOOP,
    NATIVE_PREFIX + "6Engine__push",
    NATIVE_PREFIX + "6Engine__schedule",
    NATIVE_PREFIX + "_rq_",
)


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


# -- the yardstick: Cimba's M/M/1
# ---------------------------------------------------------------------

_CIMBA: dict[str, Any] = {}


def cimba_status() -> str | None:
    """None if Cimba imports; else why not (it is optional: ``pip install -e '.[bench]'``)."""
    try:
        import cimba  # noqa: F401
    except Exception as error:  # ImportError, or a native library that does not load here
        return (
            f"cimba does not import ({type(error).__name__}: {error}); install it with pip install "
            "-e '.[bench]'"
        )
    return None


def _cimba_model() -> Any:
    """The M/M/1 model in Cimba's Python API (bench/cimba_mm1.py), made once: the same queue as
    :func:`mm1`."""
    if "model" not in _CIMBA:
        import cimba
        import cimba_mm1

        _CIMBA["module"] = cimba
        _CIMBA["model"] = cimba_mm1.MM1()
    return _CIMBA["model"]


def cimba_mm1(customers: int, rho: float = 0.9, seed: int = 123) -> dict[str, float]:
    """Cimba's M/M/1 at load ``rho`` for about ``customers`` arrivals (one replication, one
    core): its speed, and the mean number waiting against the M/M/1's Lq = rho^2 / (1 - rho)."""
    model = _cimba_model()
    cb = _CIMBA["module"]
    gc.collect()
    started = time.perf_counter()
    results = cb.Experiment(
        model, replications=1, window=cb.Window(warmup=0, duration=customers / rho), seed=seed
    ).run()
    wall = time.perf_counter() - started
    served = int(np.asarray(results[model].served.values).ravel()[0])
    return {
        "customers": served,
        "wall_s": wall,
        "customers_per_s": served / wall,
        "mean_queue": float(np.asarray(results[model].mean_queue.values).ravel()[0]),
        "theory_queue": rho * rho / (1.0 - rho),
    }


# -- the scenarios
# ----------------------------------------------------------------------------------------


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
        "run_by": str(meta.get("run_by", "Python")),
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
    kernel_files = [getattr(sys.modules.get(name), "__file__", None) for name in KERNEL_MODULES]
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None and (
        frame.f_code.co_filename.startswith(simpy_dir)
        or frame.f_code.co_filename in (__file__, *kernel_files)
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
    clock_module = sys.modules.get("simcache.sim.kernel.clock") or sys.modules.get(
        "simcache.sim.components.kernel"
    )
    scheduler: Any = getattr(clock_module, "Clock", simpy.Environment)
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
    # from the kernel since
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


# -- the profile split
# -----------------------------------------------------------------------------------------

SPLIT_SECONDS = 1.5  # how long --split's sampled process runs its scenario (at least once)
SPLIT_PARTS = (
    "event machinery",
    "model code",
    "runtime called by event machinery",
    "runtime called by model code",
)
"""Where a run's samples fall. *Event machinery*: the kernel's event queue, clock, Signals and
run loop (:data:`KERNEL_MODULES`: simcache/sim/kernel/ but for detached.py) and SimPy; in the
native engine its loop, push and radix queue (:data:`NATIVE_EVENT_SYMBOLS`). *Model code*: every
other compiled simcache function (VM paths, tiers, links, array, cache, destager, records,
draws), mypyc's or the native engine's. *Runtime*: CPython, libc, numpy and mypyc's helpers that
the compiled code calls (dictionary lookups, allocation, number boxing, numpy's random bit
generator), each charged to the nearest compiled caller."""


def _perf_split(name: str, duration: float | None, frequency: int = 1999) -> dict[str, Any]:
    """The split of one run of scenario ``name`` (compiled engine) from ``perf record
    --call-graph dwarf``: the samples whose stack holds the run loop (the kernel's ``run_until``,
    or the native engine's ``Engine._loop``; build and result assembly left out), by leaf."""
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("--split on the compiled engine needs perf (linux-tools)")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        child = [
            sys.executable,
            __file__,
            "--split-child",
            name,
            *(["--duration", str(duration)] if duration else []),
        ]
        subprocess.run(
            [
                perf,
                "record",
                "-q",
                "-F",
                str(frequency),
                "--call-graph",
                "dwarf,16384",
                "-o",
                str(data),
                "--",
                *child,
            ],
            check=True,
        )
        script = subprocess.run(
            [perf, "script", "-i", str(data), "-F", "ip,sym,dso"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return classify_stacks(script)


def _frame(line: str) -> tuple[str, str]:
    """A ``perf script`` stack line as (symbol, dso); an inlined function's dso is ``inlined``."""
    parts = line.strip().split(None, 1)
    text = parts[1] if len(parts) > 1 else "?"
    symbol, _, dso = text.rpartition(" (")
    return (symbol or text).split("+0x")[0].removesuffix(".localalias"), dso.rstrip(")")


def _runtime_kind(symbol: str, dso: str) -> str:
    """Which part of the runtime a leaf is in."""
    if dso == "inlined":
        return (
            "helpers inlined into compiled code (CPython's and mypyc's reference counts and type "
            "checks; numpy's generator steps, libc's)"
        )
    if symbol.startswith("CPy"):
        return "mypyc runtime helpers (CPy*: list/dict/int operations)"
    if "libpython" in dso or dso.endswith("python3.11"):
        return (
            "CPython (libpython: dicts, allocation, objects, the interpreter for SimPy and numpy "
            "glue)"
        )
    if "kernel" in dso:
        return "operating system (page faults, syscalls)"
    if "libc" in dso or "libm" in dso or "ld-linux" in dso:
        return "libc and libm"
    if "numpy" in dso:
        return "numpy"
    return "other libraries"


def _part_of(symbol: str) -> str | None:
    """``event`` or ``model`` for a compiled simcache function (mypyc's or the native engine's),
    None for the runtime."""
    if symbol.startswith(NATIVE_PREFIX):
        return "event" if symbol.startswith(NATIVE_EVENT_SYMBOLS) else "model"
    if not symbol.startswith("CPyDef_"):
        return None
    return "event" if symbol.startswith(KERNEL_SYMBOLS) else "model"


def _in_run_loop(symbol: str) -> bool:
    """A frame of the run loop: the Python kernel's ``run_until`` or the native ``Engine._loop``."""
    return "run_until" in symbol or symbol.startswith(NATIVE_LOOP)


def _short(symbol: str) -> str:
    """A model function's name as the tables print it."""
    return symbol.removeprefix("CPyDef_").removeprefix(NATIVE_PREFIX)


def classify_stacks(script: str) -> dict[str, Any]:
    """Shares of the run loop's samples (``perf script`` output with call stacks) by
    :data:`SPLIT_PARTS`, the runtime by kind, and the top symbols. A sample's leaf is its
    innermost function, an inlined one included."""
    counts: collections.Counter[str] = collections.Counter()
    runtime: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    model: collections.Counter[str] = collections.Counter()
    total = in_loop = 0
    for block in script.split("\n\n"):
        # a stack's lines are indented; a header line (comm, pid, time: absent with -F ip,sym,dso)
        # is not
        frames = [
            _frame(line) for line in block.splitlines() if line[:1] in ("\t", " ") and line.strip()
        ]
        if not frames:
            continue
        total += 1
        if not any(_in_run_loop(symbol) for symbol, _ in frames):
            continue
        in_loop += 1
        leaf, dso = frames[0]
        part = _part_of(leaf)
        if part == "event":
            counts["event machinery"] += 1
        elif part == "model":
            counts["model code"] += 1
            model[_short(leaf)] += 1
        else:
            caller = next(
                (p for p in (_part_of(symbol) for symbol, _ in frames[1:]) if p is not None),
                "event",
            )
            counts[
                "runtime called by event machinery"
                if caller == "event"
                else "runtime called by model code"
            ] += 1
            runtime[leaf] += 1
            kinds[_runtime_kind(leaf, dso)] += 1
    share = {part: counts[part] / in_loop if in_loop else float("nan") for part in SPLIT_PARTS}
    return {
        "method": (
            "perf record --call-graph dwarf, compiled engine; samples under the run loop (the "
            "kernel's run_until, or the native engine's Engine._loop), by leaf function"
        ),
        "samples": total,
        "samples_in_run_loop": in_loop,
        "share": share,
        "event_machinery_with_its_runtime": share["event machinery"]
        + share["runtime called by event machinery"],
        "model_with_its_runtime": share["model code"] + share["runtime called by model code"],
        "runtime_by_kind": {k: v / in_loop for k, v in kinds.most_common()},
        "top_runtime": {k: v / in_loop for k, v in runtime.most_common(12)},
        "top_model": {k: v / in_loop for k, v in model.most_common(12)},
    }


def _profile_split(scenario: simcache.Scenario, duration: float | None) -> dict[str, Any]:
    """The split of one run from cProfile (Python sources): own time of each function, by the
    file it is in. Built-in functions (C) are the runtime, charged to the caller that spent most
    time in them."""
    profiler = cProfile.Profile()
    profiler.enable()
    simcache.simulate(scenario, seed=1, duration=duration)
    profiler.disable()
    stats: Any = getattr(pstats.Stats(profiler), "stats")  # noqa: B009  (not in the stubs)
    kernel = tuple(os.path.join(*module.split(".")) + ".py" for module in KERNEL_MODULES)
    simpy_dir = os.path.dirname(simpy.__file__)

    def part(filename: str) -> str | None:
        if filename.endswith(kernel) or filename.startswith(simpy_dir):
            return "event"
        if os.sep + "simcache" + os.sep in filename:
            return "model"
        return None

    counts: collections.Counter[str] = collections.Counter()
    for (filename, _, _), (_, _, own, _, callers) in stats.items():
        where = part(filename)
        if where == "event":
            counts["event machinery"] += own
        elif where == "model":
            counts["model code"] += own
        elif filename == "~" or where is None:
            # charge to the callers in proportion to the time each spent in it
            spent = {caller: value[2] for caller, value in callers.items()}
            whole = sum(spent.values()) or 1.0
            for caller, t in spent.items():
                kind = part(caller[0])
                if kind == "model":
                    counts["runtime called by model code"] += own * t / whole
                elif kind == "event":
                    counts["runtime called by event machinery"] += own * t / whole
                else:
                    counts["outside the engine"] += own * t / whole
    engine = sum(counts[p] for p in SPLIT_PARTS)
    share = {p: counts[p] / engine for p in SPLIT_PARTS}
    return {
        "method": (
            "cProfile own times, Python sources (its per-call overhead inflates small functions); "
            "whole simulate() call"
        ),
        "share": share,
        "event_machinery_with_its_runtime": share["event machinery"]
        + share["runtime called by event machinery"],
        "model_with_its_runtime": share["model code"] + share["runtime called by model code"],
    }


def print_split(name: str, split: dict[str, Any]) -> None:
    print(f"\nProfile split, scenario {name} ({split['method']}):")
    for part, value in split["share"].items():
        print(f"  {value:>7.1%}  {part}")
    print(
        f"  event machinery with its runtime {split['event_machinery_with_its_runtime']:.1%}, "
        f"model code with its runtime {split['model_with_its_runtime']:.1%}"
    )
    for kind, value in split.get("runtime_by_kind", {}).items():
        print(f"  {value:>7.1%}  runtime: {kind}")
    for title, key in (("runtime symbols", "top_runtime"), ("model functions", "top_model")):
        if key in split:
            print(
                f"  top {title}: "
                + ", ".join(f"{k} {v:.1%}" for k, v in list(split[key].items())[:8])
            )


# -- main
# ------------------------------------------------------------------------------------------------


def _label(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--series",
        type=int,
        default=1,
        help="series of rounds (default 1; issue 35's done-when: 3)",
    )
    parser.add_argument(
        "--rounds",
        "--repeats",
        type=int,
        default=7,
        dest="rounds",
        help="interleaved rounds per series (default 7)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="simulated seconds of every scenario (default: each file's)",
    )
    parser.add_argument(
        "--customers",
        type=int,
        default=200_000,
        help="SimPy M/M/1 customers per measurement (default 200000)",
    )
    parser.add_argument(
        "--cimba-customers",
        type=int,
        default=2_000_000,
        help="Cimba M/M/1 customers per measurement (default 2000000)",
    )
    parser.add_argument("--no-cimba", action="store_true", help="leave Cimba's M/M/1 out")
    parser.add_argument(
        "--scenarios",
        default="default,32hosts,nvme",
        help=f"comma-separated, of {', '.join(SCENARIOS)} (default all)",
    )
    parser.add_argument(
        "--scenario", type=Path, default=None, help="one scenario file instead of --scenarios"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every number to this JSON file"
    )
    parser.add_argument(
        "--census",
        action="store_true",
        help="count one run's SimPy events by kind and origin, per scenario",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile one run of the first scenario and print the top functions",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="the profile split of one run per scenario (see SPLIT_PARTS)",
    )
    parser.add_argument("--split-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    # the engine group compiled (the estimate's need not be: COMPILED is both)
    groups = getattr(getattr(simcache, "_native", None), "GROUPS", {})
    compiled = bool(getattr(groups.get("engine"), "compiled", False))
    if args.split_child is not None:
        # the process perf samples: runs of the scenario for at least SPLIT_SECONDS (a default
        # run is 25 ms natively: one would give perf some 50 samples), then out
        scenario = simcache.load_scenario(SCENARIOS[args.split_child])
        started = time.perf_counter()
        while True:
            simcache.simulate(scenario, seed=1, duration=args.duration)
            if time.perf_counter() - started >= SPLIT_SECONDS:
                return 0
    if args.rounds < 1 or args.series < 1:
        parser.error("--series and --rounds must be at least 1")
    if args.census or args.profile:
        # they count and trace the Python engine's events and functions: keep the native one off
        os.environ["SIMCACHE_NATIVE_ENGINE"] = "0"
    if (args.census or args.profile) and compiled:
        parser.error(
            "--census and --profile patch and trace Python functions, which the compiled engine "
            "does not run: "
            "add SIMCACHE_PURE_PYTHON=1 to run the engine's Python sources (same events, same "
            "results)"
        )
    if args.scenario is not None:
        paths = {args.scenario.stem: args.scenario}
    else:
        names = [n.strip() for n in args.scenarios.split(",") if n.strip()]
        unknown = [n for n in names if n not in SCENARIOS]
        if unknown:
            parser.error(
                f"--scenarios: unknown {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}"
            )
        paths = {n: SCENARIOS[n] for n in names}
    scenarios = {name: simcache.load_scenario(path) for name, path in paths.items()}
    cimba_missing = "left out (--no-cimba)" if args.no_cimba else cimba_status()

    facts = machine_facts()
    facts["cimba"] = (
        cimba_missing or f"cimba {__import__('importlib.metadata').metadata.version('cimba')}"
    )
    print("simcache engine benchmark")
    for key, value in facts.items():
        print(f"  {key:<22} {value}")
    for name, path in paths.items():
        duration = args.duration if args.duration is not None else scenarios[name].run.duration
        print(f"  {'scenario ' + name:<22} {_label(path)} (duration {duration:g} s, seed 1)")
    print(
        f"  {'M/M/1':<22} SimPy {args.customers} customers, rho 0.9; Cimba "
        + (cimba_missing or f"{args.cimba_customers} customers")
    )
    print(
        f"  {'rounds':<22} {args.series} series of {args.rounds} (+1 warm-up), each: SimPy M/M/1, "
        "the scenarios, Cimba M/M/1\n"
    )

    # Warm-up: imports, lazy pydantic/pandas paths, Cimba's model compile, CPU frequency; not
    # recorded.
    mm1(min(args.customers, 20_000))
    for scenario in scenarios.values():
        scenario_run(
            scenario,
            min(args.duration or scenario.run.duration, max(0.5, scenario.run.sample_interval)),
        )
    if cimba_missing is None:
        cimba_mm1(20_000)

    rounds: list[dict[str, Any]] = []
    for series in range(args.series):
        for r in range(args.rounds):
            b = mm1(args.customers)
            runs = {
                name: scenario_run(scenario, args.duration) for name, scenario in scenarios.items()
            }
            c = cimba_mm1(args.cimba_customers) if cimba_missing is None else None
            ratios = {name: s["ios_per_s"] / b["customers_per_s"] for name, s in runs.items()}
            if c is not None:
                ratios["cimba"] = c["customers_per_s"] / b["customers_per_s"]
            rounds.append(
                {"series": series + 1, "mm1": b, "scenarios": runs, "cimba": c, "ratio": ratios}
            )
            print(
                f"  series {series + 1} round {r + 1}: M/M/1 {b['customers_per_s']:>9,.0f} "
                "cust/s   "
                + "   ".join(
                    f"{name} {s['ios_per_s']:>8,.0f} I/O/s x{ratios[name]:.3f}"
                    for name, s in runs.items()
                )
                + (
                    f"   cimba {c['customers_per_s']:>10,.0f} cust/s x{ratios['cimba']:.2f}"
                    if c is not None
                    else ""
                ),
                flush=True,
            )

    rows = [*scenarios, *(["cimba"] if cimba_missing is None else [])]
    summary: dict[str, Any] = {
        "mm1_customers_per_s": spread([x["mm1"]["customers_per_s"] for x in rounds]),
        "mm1_events_per_customer": spread([x["mm1"]["events_per_customer"] for x in rounds]),
        "mm1_mean_sojourn": spread([x["mm1"]["mean_sojourn"] for x in rounds]),
        "rows": {},
    }
    for row in rows:
        per_series = [
            statistics.median([x["ratio"][row] for x in rounds if x["series"] == k + 1])
            for k in range(args.series)
        ]
        entry: dict[str, Any] = {
            "ratio_per_round": spread([x["ratio"][row] for x in rounds]),
            "ratio_series_medians": per_series,
            "ratio": statistics.median(per_series),
        }
        if row == "cimba":
            entry["customers_per_s"] = spread([x["cimba"]["customers_per_s"] for x in rounds])
            entry["mean_queue"] = spread([x["cimba"]["mean_queue"] for x in rounds])
        else:
            runs_of = [x["scenarios"][row] for x in rounds]
            entry |= {
                "ios": runs_of[0]["ios"],
                "simulated_s": runs_of[0]["simulated_s"],
                "ios_per_s": spread([s["ios_per_s"] for s in runs_of]),
                "ios_per_call_s": spread([s["ios_per_call_s"] for s in runs_of]),
                "wall_s": spread([s["wall_s"] for s in runs_of]),
                "events_per_io": runs_of[0]["events_per_io"],
                "run_by": runs_of[0]["run_by"],
            }
            # the engine's events per wall second over the SimPy M/M/1's (4 events a customer):
            # the ratio per event, which a scenario's events per I/O do not move
            entry["events_ratio"] = (
                entry["ratio"]
                * entry["events_per_io"]
                / summary["mm1_events_per_customer"]["median"]
            )
        summary["rows"][row] = entry
    if "cimba" in summary["rows"]:
        # Cimba's customers per second over the scenario's I/Os per second: the gap per I/O
        for row in scenarios:
            summary["rows"][row]["cimba_over_this"] = (
                summary["rows"]["cimba"]["ratio"] / summary["rows"][row]["ratio"]
            )

    print("\n                                       median  [min .. max]")
    print(f"  SimPy M/M/1 customers / wall s {_fmt(summary['mm1_customers_per_s'], ',.0f')}")
    print(f"  SimPy M/M/1 events / customer  {_fmt(summary['mm1_events_per_customer'], '.2f')}")
    print(
        f"  SimPy M/M/1 mean sojourn       {_fmt(summary['mm1_mean_sojourn'], '.2f')}   (theory "
        f"{rounds[0]['mm1']['theory_sojourn']:.2f})"
    )
    print()
    print(
        f"  {'row':<10} {'I/Os':>10} {'events/I/O':>10} {'I/O per wall s (median)':>24}"
        "   ratio to SimPy M/M/1: median of series medians [series medians]"
    )
    for row in rows:
        e = summary["rows"][row]
        medians = ", ".join(f"{m:.3f}" for m in e["ratio_series_medians"])
        if row == "cimba":
            print(
                f"  {row:<10} {'':>10} {'':>10} {e['customers_per_s']['median']:>18,.0f} cust/s   "
                f"{e['ratio']:.2f} [{medians}]"
                f"   (mean queue {e['mean_queue']['median']:.2f}, theory "
                f"{rounds[0]['cimba']['theory_queue']:.2f})"
            )
            continue
        target = NATIVE_TARGETS.get(row)
        verdict = (
            f"; issue 35's {target:g}x: {'met' if e['ratio'] >= target else 'missed'}"
            if target
            else ""
        )
        gap = f"; Cimba x{e['cimba_over_this']:.1f} per I/O" if "cimba_over_this" in e else ""
        print(
            f"  {row:<10} {e['ios']:>10,} {e['events_per_io']:>10.2f} "
            f"{e['ios_per_s']['median']:>24,.0f}   "
            f"{e['ratio']:.3f} [{medians}]{verdict}{gap}"
        )
        print(f"  {'':<10} per event: x{e['events_ratio']:.2f} the SimPy M/M/1's events per wall s")
        print(f"  {'':<10} run by: {e['run_by']}")
    if cimba_missing is not None:
        print(f"  cimba      {cimba_missing}")

    report: dict[str, Any] = {
        "machine": facts,
        "settings": {
            "series": args.series,
            "rounds": args.rounds,
            "customers": args.customers,
            "cimba_customers": args.cimba_customers,
            "rho": 0.9,
            "scenarios": {name: str(path) for name, path in paths.items()},
            "duration": args.duration,
            "seed": 1,
        },
        "summary": summary,
        "targets": {"issue 18": TARGET_RATIO, "issue 35": NATIVE_TARGETS},
        "rounds": rounds,
    }
    if args.census:
        report["census"] = {}
        for name, scenario in scenarios.items():
            c = census(scenario, args.duration)
            print(f"\nscenario {name}:", end="")
            print_census(c)
            report["census"][name] = c
    if args.profile:
        name, scenario = next(iter(scenarios.items()))
        text = profile(scenario, args.duration)
        print(f"\ncProfile of one run of {name} (sorted by own time):")
        print(text)
        report["profile"] = text
    if args.split:
        report["split"] = {}
        for name, scenario in scenarios.items():
            native = str(summary["rows"][name]["run_by"]).startswith("native")
            split = (
                _perf_split(name, args.duration)
                if compiled or native  # (cProfile sees nothing inside the native loop)
                else _profile_split(scenario, args.duration)
            )
            print_split(name, split)
            report["split"][name] = split
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
