"""What the device model's spread of unit times costs the engine: simulated I/Os per wall second of
one device run.

The run is ``scenarios/validate_nvme_p3700.toml`` as written (one host, 16 closed-loop 4 KiB random
readers on a warm cache, the nvme-p3700 tier), with three tiers: the field profile
(``nvme-p3700-field``, the single-stage model), the measured profile with its unit times made
deterministic, and the measured profile as it is (lognormal unit times and stalls). Rounds alternate
the three, so drift hits them alike; the figure of merit is the median over rounds of each tier's
I/Os per wall second, and their ratios.

    python bench/bench_device.py [--rounds 5] [--duration 1.0]

Run it from the checkout whose build you measure (a compiled engine: ``SIMCACHE_COMPILE=engine``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import simcache
from simcache.spec import Scenario, TierSpec


def tiers(scenario: Scenario) -> dict[str, Scenario]:
    """The scenario with each tier compared."""
    cluster = scenario.cluster
    field_tier = TierSpec.model_validate({"profile": "nvme-p3700-field"})
    deterministic = cluster.tier.model_copy(update={"service": "deterministic", "service_cv": None})
    return {
        "nvme-p3700-field": scenario.model_copy(
            update={"cluster": cluster.model_copy(update={"tier": field_tier})}
        ),
        "nvme-p3700, deterministic units": scenario.model_copy(
            update={"cluster": cluster.model_copy(update={"tier": deterministic})}
        ),
        "nvme-p3700": scenario,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=1.0)
    args = parser.parse_args()
    base = simcache.load_scenario("validate_nvme_p3700").with_duration(args.duration)
    cases = tiers(base)
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, scenario in cases.items():
            started = time.perf_counter()
            result = simcache.simulate(scenario)
            wall = time.perf_counter() - started
            rates[name].append(float(result.summary.query("group == 'all'")["count"].sum()) / wall)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, median in medians.items():
        print(
            f"{name:34} {median:12,.0f} I/Os per wall s  [{min(rates[name]):,.0f} .. "
            f"{max(rates[name]):,.0f}]"
        )
    print(
        "spread of unit times: measured / deterministic = "
        f"{medians['nvme-p3700'] / medians['nvme-p3700, deterministic units']:.3f}"
    )
    print(
        "measured profile / field profile = "
        f"{medians['nvme-p3700'] / medians['nvme-p3700-field']:.3f}"
    )


if __name__ == "__main__":
    main()
