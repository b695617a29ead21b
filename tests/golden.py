"""Fingerprints of what the library's scenarios compute, simulated and estimated.

A fingerprint is a SHA-256 of a run's records, series and totals (as CSV and
sorted JSON), or of an estimate's JSON. ``tests/data/golden_outputs.json``
holds the fingerprints of the code as it was when they were stored;
``tests/scenarios/test_golden_outputs.py`` recomputes them, so a change that was meant
to move code around, not to change a figure, is shown to change none.

When a change is *meant* to change results, store the new fingerprints and
say why in the commit::

    .venv/bin/python tests/golden.py > tests/data/golden_outputs.json

``tests/sim/test_engine_build.py`` runs :func:`fingerprints` in a subprocess to
compare the compiled engine with the Python sources.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import simcache

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
GOLDEN = Path(__file__).resolve().parent / "data" / "golden_outputs.json"
SEED = 2
# Each scenario runs 2 s, or its own duration where that is shorter: the device validation
# scenarios run closed loops at up to a million I/Os a simulated second, and their own
# fractions of a second already hold tens of thousands of I/Os.
DURATION_S = 2.0
LONG_DEFAULT_S = 12.0  # the default scenario past its vMotion at 10 s


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run_fingerprint(scenario: simcache.Scenario, duration: float) -> dict[str, Any]:
    """Digests of one simulated run's records, series and totals, and its I/O count (to read a
    failure by)."""
    result = simcache.simulate(scenario, seed=SEED, duration=duration)
    return {
        "ios": len(result.records),
        "records": _digest(result.records.to_csv(index=False)),
        "series": _digest(result.series.to_csv(index=False)),
        "totals": _digest(json.dumps(result.totals, sort_keys=True, default=str)),
    }


def fingerprints(root: Path = SCENARIOS) -> dict[str, Any]:
    """Every scenario file simulated for 2 s (or its own duration if shorter), the default for
    12 s, and every scenario and variant estimated."""
    out: dict[str, Any] = {}
    files = sorted(root.glob("*.toml"))
    for path in files:
        scenario = simcache.load_scenario(path)
        duration = min(DURATION_S, scenario.run.duration)
        out[f"{path.stem} simulated"] = run_fingerprint(scenario, duration)
    out["default@12s simulated"] = run_fingerprint(
        simcache.load_scenario(root / "default.toml"), LONG_DEFAULT_S
    )
    for path in files:
        base = simcache.load_scenario(path)
        for name in ["base", *base.variants]:
            answer = json.dumps(simcache.estimate(base.variant(name)).to_json(), sort_keys=True)
            out[f"{path.stem}/{name} estimated"] = _digest(answer)
    return out


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else SCENARIOS
    json.dump(fingerprints(root), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
