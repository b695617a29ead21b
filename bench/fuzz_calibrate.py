"""Fuzzing ``simcache calibrate`` for longer than the suite does: the cases of
``tests/workloads/test_calibrate_fuzz.py`` (real fio results, one file mutated), counted by outcome.

Run from the repository root:

    .venv/bin/python bench/fuzz_calibrate.py [--points 5000] [--tiers 200] [--drives 100] [--seed 1]

``--points`` cases read the points only (fast); ``--tiers`` and ``--drives`` cases fit a device
(about a second each). Each outcome is ``ok`` (points read, or a device fitted whose table
validates), ``project error`` (a ``ScenarioError``, by its first field) or ``finding`` (anything
else: the case's mutated file is kept in ``--out`` with its traceback). Prints a table; exit status
1 if any finding.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# isort: split
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from workloads import test_calibrate_fuzz as cases  # noqa: E402

from simcache.base.errors import ScenarioError  # noqa: E402


def _run(kind: str, count: int, random_seed: int, out: Path, tally: Counter[str]) -> None:
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
                field = error.problems[0][0] if error.problems else "?"
                # (a JSON syntax error names its line: one class)
                where = "JSON syntax" if field.startswith("line ") else field
                tally[f"{kind}: project error ({where.split('.')[0].split('[')[0]})"] += 1
            except Exception:
                label = f"{kind}: finding {len(list(out.glob('finding-*')))}"
                tally[f"{kind}: finding"] += 1
                (out / f"finding-{label.split()[-1]}.json").write_bytes(mutant)
                (out / f"finding-{label.split()[-1]}.txt").write_text(traceback.format_exc())

    one()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=5000)
    parser.add_argument("--tiers", type=int, default=200)
    parser.add_argument("--drives", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("fuzz-calibrate"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tally: Counter[str] = Counter()
    for kind, count in (("points", args.points), ("tier", args.tiers), ("drive", args.drives)):
        started = time.perf_counter()
        _run(kind, count, args.seed, args.out, tally)
        print(f"{kind}: {count} cases in {time.perf_counter() - started:.0f} s", flush=True)
    for label, count in sorted(tally.items()):
        print(f"{count:8,}  {label}")
    return 1 if any("finding" in label for label in tally) else 0


if __name__ == "__main__":
    sys.exit(main())
