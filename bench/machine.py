"""What a benchmark's numbers depend on: CPU model, cores, load average, versions and the checkout's
commit.

The one place the bench scripts read these facts from; each script prints the
ones it needs under its own names. It does not touch ``sys.path`` and imports
``simcache`` only inside :func:`machine_facts`, so a script that runs on a
copy of ``simcache/`` (``bench_sweep.py``) reports that copy's version.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def cpu_model() -> str:
    """The ``model name`` line of /proc/cpuinfo (``platform.processor()`` where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git(*args: str) -> str:
    """Output of ``git <args>`` in the checkout, ``"unknown"`` without git or outside a
    repository."""
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded to 0.01: on a 2-core machine, 2 means
    another job halves the figures."""
    return [round(x, 2) for x in os.getloadavg()]


def utc_now() -> str:
    """The date and time in UTC to the minute: ``"2026-11-21 05:24"``."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M")


def machine_facts() -> dict[str, Any]:
    """Date, commit (and whether ``simcache/`` has uncommitted changes), CPU, cores, Python,
    SimPy, numpy and simcache versions."""
    import numpy as np
    import simpy

    import simcache

    dirty = git("status", "--porcelain", "--", "simcache")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "date": utc_now() + " UTC",
        "git_commit": git("rev-parse", "--short", "HEAD"),
        "simcache_tree_modified": bool(dirty) if dirty != "unknown" else None,
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "python": platform.python_version(),
        "python_impl": platform.python_implementation(),
        "simpy": simpy.__version__,
        "numpy": np.__version__,
        "simcache": simcache.__version__,
        # compiled (mypyc) or the Python sources; checkouts from before the compiled engine have no
        # _native
        "simcache_engine": getattr(
            getattr(simcache, "_native", None),
            "ENGINE",
            "Python (no compiled engine in this checkout)",
        ),
        "platform": platform.platform(),
    }
