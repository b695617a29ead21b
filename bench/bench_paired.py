"""Paired engine speed of two checkouts: which one runs the same scenario faster, on the same
machine, same minutes.

Run from anywhere, naming each checkout's Python (a venv where that checkout is installed):

    python bench/bench_paired.py --a OLD/.venv/bin/python --b NEW/.venv/bin/python [--rounds 10]

Each round runs the scenario once in a fresh process of A and once of B, in alternating order (A
first in even rounds), and times the ``simulate`` call alone (the import and the scenario's loading
are not timed). The figure of merit is the median over rounds of ``time(A) / time(B)`` (above 1: B
is faster), with the interquartile range of the per-round ratios: pairing a round's two runs cancels
most of a shared machine's drift. The runs must be identical: each prints its result's I/O count and
a digest of its records, and a mismatch stops the benchmark.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

RUN = """
import hashlib, json, time
import simcache
scenario = simcache.load_scenario({scenario!r})
started = time.perf_counter()
result = simcache.simulate(scenario, seed={seed}, duration={duration})
wall = time.perf_counter() - started
digest = hashlib.sha256(result.records.to_csv(index=False).encode()).hexdigest()
print(json.dumps({{"wall_s": wall, "ios": len(result.records), "digest": digest}}))
"""


def run_once(python: str, scenario: str, seed: int, duration: float) -> dict[str, float | str]:
    """One timed run in a fresh process of ``python``: wall seconds of ``simulate``, I/Os,
    records digest."""
    code = RUN.format(scenario=scenario, seed=seed, duration=duration)
    out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True, env=None)
    parsed: dict[str, float | str] = json.loads(out.stdout.strip().splitlines()[-1])
    return parsed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="the baseline checkout's Python")
    parser.add_argument("--b", required=True, help="the candidate checkout's Python")
    parser.add_argument("--scenario", default="default", help="a built-in name or a scenario file")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=20.0, help="simulated seconds per run")
    args = parser.parse_args(argv)
    ratios = []
    for round_ in range(args.rounds):
        order = (
            [("a", args.a), ("b", args.b)] if round_ % 2 == 0 else [("b", args.b), ("a", args.a)]
        )
        runs = {
            name: run_once(python, args.scenario, args.seed, args.duration)
            for name, python in order
        }
        if runs["a"]["digest"] != runs["b"]["digest"]:
            print(f"round {round_}: the two checkouts' records differ: {runs}", file=sys.stderr)
            return 1
        ratio = float(runs["a"]["wall_s"]) / float(runs["b"]["wall_s"])
        ratios.append(ratio)
        print(
            f"round {round_}: A {runs['a']['wall_s']:.3f} s, B {runs['b']['wall_s']:.3f} s, A/B "
            f"{ratio:.3f} ({runs['a']['ios']:,} I/Os)",
            flush=True,
        )
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    print(
        f"median A/B {statistics.median(ratios):.3f} [IQR {quartiles[0]:.3f} .. "
        f"{quartiles[2]:.3f}] "
        f"over {len(ratios)} rounds (above 1: B is faster)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
