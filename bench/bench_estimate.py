"""Speed of the analytic estimate: ``simcache.estimate()`` calls per second.

Run from the repository root:

    .venv/bin/python bench/bench_estimate.py [--seconds S] [--json PATH]

Two figures per scenario, each the best of three timed rounds of about
``--seconds`` each:

- *cold*: a fresh ``Scenario`` object per call (``model_copy``, which is
  cheap), so every call pays the compilation (service times, cache hit ratios,
  the duty-cycle timeline) as a sweep over new points would. Loading and
  validating TOML is excluded.
- *warm*: the same object again, so the compiled form is reused and only the
  timeline and its queueing solutions are computed: a tool that re-estimates
  one scenario.

The library figure is over all scenarios in ``scenarios/`` and their variants,
one call each in turn. Target (issue 5): at least 1,000 estimates per second.

The machine facts (``bench/machine.py``: commit, CPU model, vCPUs, versions,
which engine ran, as the estimate is compiled with the engine; and the load
average before and after) are printed with the figures: these are shared 2-vCPU
machines, and a load average near 2 means another job halved the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a source tree even without `pip install -e .`


import simcache  # noqa: E402
from simcache.spec import Scenario, builtin_scenarios  # noqa: E402

# isort: split
from machine import load_average, machine_facts  # noqa: E402

TARGET = 1000.0


def rate(scenarios: list[Scenario], seconds: float, cold: bool) -> float:
    """Estimates per second over ``scenarios`` in turn, best of three rounds."""
    best = 0.0
    for _ in range(3):
        calls = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            for scenario in scenarios:
                simcache.estimate(scenario.model_copy() if cold else scenario)
                calls += 1
        best = max(best, calls / (time.perf_counter() - started))
    return best


def library() -> list[Scenario]:
    out = []
    for path in builtin_scenarios().values():
        base = simcache.load_scenario(path)
        out += [base.variant(name) for name in ["base", *base.variants]]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=1.0, help="length of one timed round (default 1 s)"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the figures to this file"
    )
    args = parser.parse_args()
    default = [simcache.load_scenario("default")]
    scenarios = library()
    facts = machine_facts()
    before = load_average()[0]
    figures = {
        "default_cold_per_s": rate(default, args.seconds, cold=True),
        "default_warm_per_s": rate(default, args.seconds, cold=False),
        "library_cold_per_s": rate(scenarios, args.seconds, cold=True),
        "library_warm_per_s": rate(scenarios, args.seconds, cold=False),
    }
    slowest = []
    for scenario in scenarios:
        started = time.perf_counter()
        simcache.estimate(scenario.model_copy())
        slowest.append((time.perf_counter() - started, scenario.name))
    slowest.sort(reverse=True)
    load = (before, load_average()[0])
    versions = f"Python {facts['python']}, numpy {facts['numpy']}"
    print(
        f"{facts['cpu_model']}, {facts['cpus']} vCPUs, {versions}; load average {load[0]} -> "
        f"{load[1]}"
    )
    print(f"engine: {facts['simcache_engine']}")
    print(
        f"estimate() calls per second (target {TARGET:,.0f}); library: {len(scenarios)} scenarios "
        "and variants"
    )
    for name, value in figures.items():
        print(f"  {name:22s} {value:10,.0f}")
    print(
        "slowest cold calls: "
        + ", ".join(f"{name} {seconds * 1e3:.1f} ms" for seconds, name in slowest[:5])
    )
    if args.json is not None:
        facts = {**facts, "load_average_1min": load}
        args.json.write_text(
            json.dumps({**figures, "scenarios": len(scenarios), "machine": facts}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
