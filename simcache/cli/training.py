"""The training run of a profile-guided build (``setup.py``): what the native engine, the compiled
engine and the estimate do most.

``setup.py`` compiles the extensions ``SIMCACHE_PGO`` guides (the native engine with ``native``,
as the README's test command asks; the two mypyc groups too with ``1``) once with gcc's
``-fprofile-generate``, runs this module against the instrumented modules (``python -m
simcache.cli.training SCENARIO_DIR``), then compiles them again with ``-fprofile-use``: gcc lays
out and inlines the code along the branches the training took. The results are bit-identical
(the profile changes no floating-point operation, only code placement and inlining); the native
engine at ``-O2`` runs the default scenario 5 to 10 % faster (bench/README.md, "The native engine
at -O2, profile-guided").

What it runs: the default scenario for its full length (the benchmark's scenario), every other
scenario of the library for a few simulated seconds, and the analytic estimate of each. Code the
training never reaches is compiled as without a profile (``-fprofile-partial-training``), not as
cold code.

Exit status 0 when every run finished; any exception fails the training and ``setup.py`` builds
without a profile.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from simcache.estimate import estimate
from simcache.runs.simulate import simulate
from simcache.spec import load_scenario

# simulated seconds of each scenario other than the default: enough to reach every path it has
SHORT_RUN_S = 3.0


def train(scenarios: Path) -> int:
    """Run the training workload on the scenario files in ``scenarios``; return the number of
    runs."""
    default = scenarios / "default.toml"
    others = sorted(path for path in scenarios.glob("*.toml") if path != default)
    runs = 0
    for path in [default, default, *others]:  # the default twice: the scenario most runs start from
        scenario = load_scenario(path)
        duration = None if path == default else min(SHORT_RUN_S, scenario.run.duration)
        simulate(scenario, duration=duration)
        estimate(scenario)
        runs += 1
    return runs


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m simcache.cli.training SCENARIO_DIR", file=sys.stderr)
        return 2
    scenarios = Path(argv[0])
    if not (scenarios / "default.toml").is_file():
        print(
            f"simcache: no {scenarios / 'default.toml'} to train the profile-guided build on",
            file=sys.stderr,
        )
        return 1
    started = time.perf_counter()
    runs = train(scenarios)
    print(
        f"simcache: profile-guided build trained on {runs} scenarios in "
        f"{time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
