"""Fuzzing the files users bring, for longer than the suite does: workload files through
``simcache import`` (the cases of ``tests/traces/test_import_fuzz.py``: a small valid file of each
format, mutated) and fio results through ``simcache calibrate`` (those of
``tests/workloads/test_calibrate_fuzz.py``: real fio results, one file mutated), and the trace
formats' imports replayed by both engines, counted by outcome.

Run from the repository root:

    .venv/bin/python bench/fuzz_inputs.py [--imports 2000] [--gzip 1000] [--replays 500]
                                          [--points 5000] [--tiers 200] [--drives 100] [--seed 1]
                                          [--out DIR]

``--imports`` cases per import format (each imported with its format given and guessed, and its
scenario built); ``--gzip`` the same with the valid file gzip-compressed and then damaged (its
deflate stream, its trailer, cut short, bytes appended, its header); ``--replays`` cases per
trace format (imported, then replayed for at most two simulated seconds by the Python engine and
by the native one, which must agree bit for bit); ``--points`` cases read calibrate's points only
(fast); ``--tiers`` and ``--drives`` cases fit a device (about a second each). Each outcome is
``ok`` (imported, points read, or a device fitted whose table validates), ``project error`` (a
``ScenarioError``, by its first field) or ``finding`` (anything else: the case's file is kept in
``--out`` with its traceback). Prints a table; exit status 1 if any finding.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# isort: split
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support.mutations import damaged_gzip, mutated  # noqa: E402
from support.native import assert_same  # noqa: E402
from traces import test_import_fuzz as imports  # noqa: E402
from workloads import test_calibrate_fuzz as cases  # noqa: E402

from simcache.base.errors import ScenarioError  # noqa: E402
from simcache.sim import native_run  # noqa: E402
from simcache.sim.engine import run_scenario  # noqa: E402
from simcache.workloads.ingest.imported import import_workload  # noqa: E402


def _keep(out: Path, data: bytes, tally: Counter[str], kind: str) -> None:
    """A finding: its file and traceback in ``out``."""
    number = sum(1 for _ in out.glob("finding-*.txt"))
    tally[f"{kind}: finding"] += 1
    (out / f"finding-{number}.input").write_bytes(data)
    (out / f"finding-{number}.txt").write_text(f"{kind}\n{traceback.format_exc()}")


def _project_error(error: ScenarioError, kind: str, tally: Counter[str]) -> None:
    field = error.problems[0][0] if error.problems else "?"
    # (a syntax error names its line: one class)
    where = "a line" if field.startswith("line ") else field
    tally[f"{kind}: project error ({where.split('.')[0].split('[')[0]})"] += 1


def _run_imports(
    count: int, random_seed: int, out: Path, tally: Counter[str], gzipped: bool = False
) -> None:
    """``count`` mutated files of each format imported (``gzipped``: the valid file compressed,
    then damaged)."""
    if count <= 0:
        return
    for format_name in sorted(imports.SAMPLES):
        # with the format given and guessed
        checks = [partial(_imported, given=format_name), partial(_imported, given=None)]
        _mutant_cases(
            f"import {format_name}{' gzip' if gzipped else ''}",
            format_name,
            checks,
            count,
            random_seed,
            out,
            tally,
            damaged_gzip if gzipped else mutated,
        )()


def _imported(path: Path, given: str | None) -> str:
    import_workload(path, given).scenario()
    return "ok"


REPLAYED = ("blkparse", "csv", "fio-iolog", "msr")
"""The formats whose import is a trace replay (``--replays``)."""
REPLAY_SECONDS = 2.0
"""The most simulated seconds a fuzzed replay runs."""


def _run_replays(count: int, random_seed: int, out: Path, tally: Counter[str]) -> None:
    if count <= 0:
        return
    for format_name in REPLAYED:
        checks = [partial(_replayed, format_name=format_name)]
        _mutant_cases(
            f"replay {format_name}", format_name, checks, count, random_seed, out, tally
        )()


def _replayed(path: Path, format_name: str) -> str:
    """The imported trace replayed (at most :data:`REPLAY_SECONDS`) by the Python engine and the
    native one: the same records, counters, samples and events (``support.native.assert_same``)."""
    scenario = import_workload(path, format_name).scenario()
    duration = min(scenario.run.duration, REPLAY_SECONDS)
    runs = [run_scenario(scenario, duration=duration, native=native) for native in (False, True)]
    if native_run.available() and runs[1].run_by != native_run.NATIVE:
        return f"ok, Python only ({runs[1].run_by})"
    assert_same(*runs)
    return "ok, the same in both engines"


def _mutant_cases(
    kind: str,
    format_name: str,
    checks: list[Callable[[Path], str]],
    count: int,
    random_seed: int,
    out: Path,
    tally: Counter[str],
    mutation: Callable[[str], st.SearchStrategy[bytes]] = mutated,
) -> Any:
    """``count`` files of ``format_name`` changed by ``mutation``, each through every one of
    ``checks`` (which return the outcome's label), counted under ``kind``."""

    @seed(random_seed)
    @settings(
        max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        mutant = data.draw(mutation(imports.SAMPLES[format_name]))
        with tempfile.TemporaryDirectory(prefix="simcache-fuzz-") as folder:
            path = Path(folder) / "input"
            path.write_bytes(mutant)
            for check in checks:
                try:
                    tally[f"{kind}: {check(path)}"] += 1
                except ScenarioError as error:
                    _project_error(error, kind, tally)
                except Exception:
                    _keep(out, mutant, tally, kind)

    return one


def _run(kind: str, count: int, random_seed: int, out: Path, tally: Counter[str]) -> None:
    if count <= 0:
        return
    files = cases.TIER_FILES if kind == "tier" else cases.DRIVE_FILES

    @seed(random_seed)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        chosen = (
            files
            if kind != "points"
            else data.draw(st.sampled_from([cases.TIER_FILES, cases.DRIVE_FILES]))
        )
        index, mutant = cases._mutant(data.draw, chosen)
        with tempfile.TemporaryDirectory(prefix="simcache-fuzz-") as folder:
            paths = cases._written(Path(folder), chosen, index, mutant)
            try:
                if kind == "points":
                    cases.read_points(paths)
                else:
                    result = cases.calibrate(paths, kind)
                    (cases.TierSpec if kind == "tier" else cases.DriveSpec).model_validate(
                        result.table()
                    )
                tally[f"{kind}: ok"] += 1
            except ScenarioError as error:
                _project_error(error, kind, tally)
            except Exception:
                _keep(out, mutant, tally, kind)

    one()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--imports", type=int, default=2000)
    parser.add_argument("--gzip", type=int, default=1000)
    parser.add_argument("--replays", type=int, default=500)
    parser.add_argument("--points", type=int, default=5000)
    parser.add_argument("--tiers", type=int, default=200)
    parser.add_argument("--drives", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("fuzz-inputs"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    # the importers' trace cache, out of the user's
    os.environ["SIMCACHE_CACHE"] = str(args.out.resolve() / "cache")
    tally: Counter[str] = Counter()
    started = time.perf_counter()
    _run_imports(args.imports, args.seed, args.out, tally)
    print(f"imports: {args.imports} cases a format in {time.perf_counter() - started:.0f} s")
    started = time.perf_counter()
    _run_imports(args.gzip, args.seed, args.out, tally, gzipped=True)
    print(f"gzip: {args.gzip} cases a format in {time.perf_counter() - started:.0f} s")
    started = time.perf_counter()
    _run_replays(args.replays, args.seed, args.out, tally)
    print(f"replays: {args.replays} cases a format in {time.perf_counter() - started:.0f} s")
    for kind, count in (("points", args.points), ("tier", args.tiers), ("drive", args.drives)):
        started = time.perf_counter()
        _run(kind, count, args.seed, args.out, tally)
        print(f"{kind}: {count} cases in {time.perf_counter() - started:.0f} s", flush=True)
    for label, count in sorted(tally.items()):
        print(f"{count:8,}  {label}")
    return 1 if any("finding" in label for label in tally) else 0


if __name__ == "__main__":
    sys.exit(main())
