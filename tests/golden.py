"""Fingerprints of what the library's scenarios compute, simulated and estimated.

A fingerprint keeps what a run or an estimate computed in a few numbers that any change of a figure
moves: for each numeric column of a run's records and series, and for the numbers of its totals
and of an estimate's JSON, their count, sum, sum of magnitudes and a sum weighted by position (so a
reordering moves it too); for text columns and the JSON's shape (its keys, and where its numbers
and texts stand), a SHA-256. ``tests/data/golden_outputs.json`` holds the fingerprints of the code
as it was when they were stored; ``tests/scenarios/test_golden_outputs.py`` recomputes them and
compares: texts, digests and counts exactly, sums within :data:`RELATIVE` of the sum of
magnitudes. So a change that was meant to move code around, not to change a figure, is shown to
change none.

Why not a digest of the figures themselves: numpy's and scipy's float loops take a machine's
vector instructions where it has them (AVX-512 on one machine of this kind, AVX2 on another), and
their results differ there in the last bits (a latency by 4e-13 of itself, an estimate's gamma
quantile by the width of its search's tolerance): a digest of the figures then differs from
machine to machine, where these sums move by about 1e-13 of themselves.

When a change is *meant* to change results, store the new fingerprints and
say why in the commit::

    .venv/bin/python tests/golden.py > tests/data/golden_outputs.json

``tests/sim/test_engine_build.py`` runs :func:`fingerprints` in a subprocess to
compare the compiled engine with the Python sources (on one machine: exactly equal).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import simcache

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
GOLDEN = Path(__file__).resolve().parent / "data" / "golden_outputs.json"
SEED = 2
# Each scenario runs 2 s, or its own duration where that is shorter: the device validation
# scenarios run closed loops at up to a million I/Os a simulated second, and their own
# fractions of a second already hold tens of thousands of I/Os.
DURATION_S = 2.0
LONG_DEFAULT_S = 12.0  # the default scenario past its vMotion at 10 s
RELATIVE = 1e-9
"""How far a stored sum may lie from a recomputed one, as a share of the sum of magnitudes: far
above the last-bit drift between machines (1e-13), far below any change of a figure that matters
(one I/O's latency moved by 1% moves a column's sum by about 1e-7 of itself in a run of 100,000)."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def sums(values: Any) -> dict[str, Any]:
    """The fingerprint of a sequence of numbers: how many, how many are NaN or infinite (by sign),
    and over the finite ones the sum, the sum of magnitudes and the sum weighted by position
    (``i / n``)."""
    array = np.asarray(values, dtype=float)
    finite = array[np.isfinite(array)]
    weights = np.arange(len(finite), dtype=float) / max(len(finite), 1)
    return {
        "n": len(array),
        "nan": int(np.isnan(array).sum()),
        "inf": int(np.isposinf(array).sum()),
        "-inf": int(np.isneginf(array).sum()),
        "sum": float(finite.sum()),
        "abs": float(np.abs(finite).sum()),
        "weighted": float((weights * finite).sum()),
    }


def table_fingerprint(table: pd.DataFrame) -> dict[str, Any]:
    """Each column of ``table``, in order: its numbers' :func:`sums`, or a digest of its texts."""
    out: dict[str, Any] = {}
    for column in table.columns:
        values = table[column]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            out[str(column)] = sums(values.to_numpy(dtype=float))
        else:
            out[str(column)] = _digest("\n".join(map(str, values)))
    return out


def json_fingerprint(value: Any) -> dict[str, Any]:
    """A JSON-like value's shape (its keys and texts, each number as ``#``) as a digest, and its
    numbers' :func:`sums`, in the order the shape gives them."""
    numbers: list[float] = []

    def shape(item: Any) -> Any:
        if isinstance(item, bool) or item is None or isinstance(item, str):
            return item
        if isinstance(item, (int, float)):
            numbers.append(float(item))
            return "#"
        if isinstance(item, dict):
            return {str(key): shape(item[key]) for key in sorted(item, key=str)}
        if isinstance(item, (list, tuple)):
            return [shape(part) for part in item]
        return str(item)

    text = json.dumps(shape(value), sort_keys=True)
    return {"shape": _digest(text), "numbers": sums(numbers)}


def run_fingerprint(scenario: simcache.Scenario, duration: float) -> dict[str, Any]:
    """The fingerprints of one simulated run's records, series and totals, and its I/O count (to
    read a failure by)."""
    result = simcache.simulate(scenario, seed=SEED, duration=duration)
    return {
        "ios": len(result.records),
        "records": table_fingerprint(result.records),
        "series": table_fingerprint(result.series),
        "totals": json_fingerprint(json.loads(json.dumps(result.totals, default=str))),
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
            out[f"{path.stem}/{name} estimated"] = json_fingerprint(
                simcache.estimate(base.variant(name)).to_json()
            )
    return out


def differences(stored: Any, current: Any, where: str = "") -> list[str]:
    """Where ``current`` differs from ``stored`` (two fingerprints, or dictionaries of them):
    texts, digests and counts exactly; the sums of a :func:`sums` within :data:`RELATIVE` of its
    sum of magnitudes."""
    if isinstance(stored, dict) and isinstance(current, dict):
        if set(stored) != set(current):
            return [f"{where}: keys {sorted(set(stored) ^ set(current))}"]
        if {"sum", "abs", "weighted"} <= set(stored):
            exact = [key for key in stored if key not in ("sum", "abs", "weighted")]
            found = [f"{where}.{key}" for key in exact if stored[key] != current[key]]
            room = RELATIVE * max(stored["abs"], current["abs"])
            found += [
                f"{where}.{key}: {stored[key]!r} -> {current[key]!r}"
                for key in ("sum", "abs", "weighted")
                if not math.isclose(stored[key], current[key], rel_tol=0.0, abs_tol=room)
            ]
            return found
        return [
            found
            for key in stored
            for found in differences(stored[key], current[key], f"{where}.{key}" if where else key)
        ]
    return [] if stored == current else [f"{where}: {stored!r} -> {current!r}"]


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else SCENARIOS
    json.dump(fingerprints(root), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
