"""``bench/bench_size.py --margin`` finds the library's cases where the per-layer test folders keep
them (review 66c F15: it imported ``test_estimate`` from ``tests/`` and failed with
ModuleNotFoundError). Run in a fresh interpreter, as the bench runs, so that no test module this
session has imported stands in for the path."""

from __future__ import annotations

import os
import subprocess
import sys

from support.paths import ROOT


def test_the_margin_bench_loads_its_cases() -> None:
    code = (
        "import sys; sys.path.insert(0, 'bench'); import bench_size; "
        "cases = bench_size.margin_cases(); print(len(cases), cases[0][0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    count, first = done.stdout.split()
    assert int(count) >= 30 and first
