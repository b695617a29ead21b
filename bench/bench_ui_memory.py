"""UI memory benchmark: the page's resident memory over a long session of successive runs with
different settings.

Run from the repository root:

    .venv/bin/python bench/bench_ui_memory.py [--runs 50] [--seconds 8] [--json PATH]

One Streamlit AppTest session (the page as the server runs it, in this process) makes ``--runs``
single runs, each with other settings than the last (the seed, the host count and the peer link
change in turn), pressing **Run simulation** for each, so every run simulates and its result enters
the page's cache. After each run the process's resident set (``VmRSS``) is read after a garbage
collection.

The page's result cache keeps at most :data:`simcache_app.runs.CACHE_ENTRIES` results, so memory may
grow for the first that many runs and must then stay flat: the figure of merit is the growth from
the run that fills the cache to the last run, against :data:`GROWTH_BOUND_MIB`. The exit status is 1
if the bound is broken.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a source tree even without `pip install -e .`

from streamlit.testing.v1 import AppTest  # noqa: E402

from simcache_app import runs  # noqa: E402

# isort: split
from bench_ui import machine  # noqa: E402

APP = ROOT / "app.py"
GROWTH_BOUND_MIB = 40.0
"""Most the resident set may grow from the run that fills the result cache to the last run: a
sixth of the 16 cached 8 s results' own size would already show as a steady climb; allocator
slack and Streamlit's message buffers account for the rest."""
SETTINGS = (("cluster.peer_link", ["1GbE", "10GbE", "25GbE"]), ("cluster.hosts", [3, 4, 5, 6]))


def rss_mib() -> float:
    """This process's resident set, MiB (``VmRSS`` of /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def session(count: int, seconds: float) -> list[dict[str, Any]]:
    """``count`` runs in one page session, each with new settings; per run: settings, wall
    seconds, RSS after it."""
    at = AppTest.from_file(str(APP), default_timeout=600).run()
    at.sidebar.number_input(key="default.run.duration").set_value(seconds).run()
    rows = []
    for number in range(count):
        link = SETTINGS[0][1][number % len(SETTINGS[0][1])]
        hosts = SETTINGS[1][1][(number // len(SETTINGS[0][1])) % len(SETTINGS[1][1])]
        seed = 1 + number
        at.sidebar.number_input(key="default.run.seed").set_value(seed)
        at.sidebar.number_input(key="default.cluster.hosts").set_value(hosts)
        at.sidebar.selectbox(key="default.cluster.peer_link").select(link).run()
        started = time.perf_counter()
        at.button(key="Run simulation").click().run()
        wall = time.perf_counter() - started
        if at.exception or len(at.metric) != 4:
            raise RuntimeError(f"run {number + 1} did not show its result: {at.exception}")
        gc.collect()
        rows.append(
            {
                "run": number + 1,
                "seed": seed,
                "hosts": hosts,
                "peer_link": link,
                "wall_s": round(wall, 2),
                "rss_mib": round(rss_mib(), 1),
            }
        )
        print(
            f"run {number + 1:3d}: seed {seed:3d}, {hosts} hosts, {link:5s}  {wall:5.2f} s  RSS "
            f"{rows[-1]['rss_mib']:7.1f} MiB",
            flush=True,
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument(
        "--seconds",
        type=float,
        default=8.0,
        help="simulated seconds of each run (the page's default: 8)",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    before = rss_mib()
    rows = session(args.runs, args.seconds)
    full = min(runs.CACHE_ENTRIES, len(rows)) - 1  # index of the run that fills the cache
    growth = rows[-1]["rss_mib"] - rows[full]["rss_mib"]
    peak_after = max(row["rss_mib"] for row in rows[full:])
    report = {
        "machine": machine(),
        "runs": len(rows),
        "simulated_s_per_run": args.seconds,
        "cache_entries": runs.CACHE_ENTRIES,
        "rss_before_mib": round(before, 1),
        "rss_after_first_run_mib": rows[0]["rss_mib"],
        "rss_when_cache_full_mib": rows[full]["rss_mib"],
        "rss_last_mib": rows[-1]["rss_mib"],
        "rss_peak_after_cache_full_mib": peak_after,
        "growth_after_cache_full_mib": round(growth, 1),
        "growth_bound_mib": GROWTH_BOUND_MIB,
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if growth <= GROWTH_BOUND_MIB else 1


if __name__ == "__main__":
    sys.exit(main())
