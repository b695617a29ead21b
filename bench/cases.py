"""Memory cases of the bench scripts: each run in a fresh process (``ru_maxrss`` is a process's
peak).

``bench_memory.py`` and ``bench_scale.py`` call themselves with ``--child DURATION
--records|--no-records`` (:func:`case_parser`); the child prints its figures as one JSON line, which
:func:`run_case` reads.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def rss_mib() -> float:
    """This process's resident memory now (MiB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_mib() -> float:
    """This process's peak resident memory so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def case_parser(description: str) -> argparse.ArgumentParser:
    """A parser with the hidden child options and ``--json`` (the script adds its own)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--records", dest="keep", action="store_true", default=True, help=argparse.SUPPRESS
    )
    parser.add_argument("--no-records", dest="keep", action="store_false", help=argparse.SUPPRESS)
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the figures to this file"
    )
    return parser


def run_case(
    script: str,
    duration: float,
    keep_records: bool,
    *,
    show_progress: bool = False,
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """Run ``script``'s child for ``duration`` simulated seconds in a fresh process and return
    its figures (``show_progress``: the child's stderr goes to this one's as it runs; ``extra``:
    more arguments for the child)."""
    args = [
        sys.executable,
        script,
        "--child",
        str(duration),
        "--records" if keep_records else "--no-records",
        *extra,
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        args,
        stdout=subprocess.PIPE,
        stderr=None if show_progress else subprocess.PIPE,
        text=True,
        check=False,
        env=env,
    )
    if out.returncode:
        raise SystemExit(
            f"case {duration:g} s, records {keep_records} failed (exit {out.returncode}):\n"
            f"{out.stderr or ''}"
        )
    case: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return case


def print_report(report: dict[str, Any], path: Path | None) -> None:
    """Print ``report`` as indented JSON, and write it to ``path`` too when given."""
    text = json.dumps(report, indent=1)
    print(text)
    if path is not None:
        path.write_text(text + "\n")
