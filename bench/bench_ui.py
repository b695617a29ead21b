"""UI speed benchmark: time from pressing "Run simulation" to the first rendered result.

Run from the repository root:

    .venv/bin/python bench/bench_ui.py [--repeats N] [--no-browser] [--json PATH]

Two measurements of the default scenario with the page's default settings,
each next to a same-run baseline (a plain ``simcache.simulate`` of the same
scenario, seed and duration, timed in the same process right before):

- **headless**: Streamlit's AppTest clicks the button and reruns the page;
  the time is that rerun (simulation, tables, plotly figures, all elements
  built). The page cache is cleared before each click so every round
  simulates; one more click on a cached setting shows what going back costs.
- **browser** (when /usr/bin/chromium exists): ``streamlit run app.py`` and
  Playwright with the system Chromium; ``browser_s`` runs from the click to
  the four headline latencies being visible (the first rendered result; the
  page streams them before it builds the charts), ``browser_charts_s`` to all
  four plotly charts being drawn. Each round uses the next seed, so the
  server's cache never answers.

``<kind>_over_simulate_s`` is the page's own cost per round: the UI time
minus that round's baseline. Target: median run-to-result under 3 s on the
project's 2-core machines.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a source tree even without `pip install -e .`

import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

import simcache  # noqa: E402
from simcache_app.controls import first_duration  # noqa: E402

# isort: split
from bench_engine import spread  # noqa: E402
from machine import cpu_model, git, load_average, utc_now  # noqa: E402

APP = ROOT / "app.py"
CHROMIUM = Path("/usr/bin/chromium")
TARGET_S = 3.0
SCENARIO = "default"
PAGE_DURATION_S = first_duration(simcache.load_scenario(SCENARIO))
"""Simulated seconds of the page's first run of the default scenario (long enough for its vMotion
at 10 s)."""


def machine() -> dict[str, Any]:
    """CPU, cores, load, versions and commit: what the numbers depend on."""
    dirty = git("status", "--porcelain")
    import plotly
    import simpy

    return {
        "date_utc": utc_now(),
        "commit": git("rev-parse", "--short", "HEAD")
        + (" (uncommitted changes)" if dirty not in ("", "unknown") else ""),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load_average_1m_5m": load_average()[:2],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "simpy": simpy.__version__,
        "streamlit": st.__version__,
        "plotly": plotly.__version__,
    }


def timed(action: Callable[[], Any]) -> float:
    gc.collect()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def baseline(scenario: simcache.Scenario, seed: int) -> float:
    """A plain simulate() call with the page's settings: the floor the page cannot beat."""
    return timed(lambda: simcache.simulate(scenario, seed=seed, duration=first_duration(scenario)))


def headless_rounds(repeats: int) -> dict[str, list[float]]:
    scenario = simcache.load_scenario(SCENARIO)
    at = AppTest.from_file(str(APP), default_timeout=300).run()
    at.button(key="Run simulation").click().run()  # untimed warm-up: imports, first figures
    rounds: dict[str, list[float]] = {"simulate_s": [], "headless_s": [], "headless_cached_s": []}
    for _ in range(repeats):
        rounds["simulate_s"].append(baseline(scenario, seed=1))
        st.cache_data.clear()
        at.button(key="Run simulation").click()
        rounds["headless_s"].append(timed(at.run))
        assert len(at.metric) == 4 and not at.exception, "the page did not show a result"
        at.button(key="Run simulation").click()
        rounds["headless_cached_s"].append(timed(at.run))
    return rounds


@contextmanager
def streamlit_server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
    ]
    command += ["--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    server = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=20)


def browser_rounds(repeats: int) -> dict[str, list[float]]:
    from playwright.sync_api import expect, sync_playwright

    scenario = simcache.load_scenario(SCENARIO)
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
    args += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    rounds: dict[str, list[float]] = {"simulate_s": [], "browser_s": [], "browser_charts_s": []}
    with (
        streamlit_server() as url,
        sync_playwright() as playwright,
        tempfile.TemporaryDirectory() as profile,
    ):
        browser = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), args=args, headless=True
        )
        page = browser.pages[0] if browser.pages else browser.new_page()
        page.goto(url)
        seed_box = page.get_by_role("spinbutton", name="Seed")
        for seed in range(100, 101 + repeats):  # the first round is an untimed warm-up
            seed_box.fill(str(seed))
            seed_box.press("Enter")
            expect(page.get_by_text("Press Run simulation")).to_be_visible(timeout=60_000)
            simulate_s = baseline(scenario, seed)
            started = time.perf_counter()
            page.get_by_role("button", name="Run simulation").click()
            expect(page.get_by_test_id("stMetric").nth(3)).to_be_visible(timeout=120_000)
            metrics_s = time.perf_counter() - started
            expect(page.locator(".js-plotly-plot").nth(3)).to_be_visible(timeout=120_000)
            if seed > 100:
                rounds["browser_s"].append(metrics_s)
                rounds["browser_charts_s"].append(time.perf_counter() - started)
                rounds["simulate_s"].append(simulate_s)
        browser.close()
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeats", type=int, default=7, help="timed rounds per measurement (default 7)"
    )
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium measurement")
    parser.add_argument("--json", type=Path, help="save every number here")
    options = parser.parse_args()
    # AppTest outside a server warns on every rerun
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    report: dict[str, Any] = {
        "machine": machine(),
        "settings": {"scenario": SCENARIO, "duration_s": PAGE_DURATION_S},
    }
    measurements = {"headless": headless_rounds(options.repeats)}
    if not options.no_browser and CHROMIUM.exists():
        measurements["browser"] = browser_rounds(options.repeats)
    # the page's own cost, round by round (the same load hits both)
    for kind, rounds in measurements.items():
        rounds[f"{kind}_over_simulate_s"] = [
            ui - sim for ui, sim in zip(rounds[f"{kind}_s"], rounds["simulate_s"], strict=True)
        ]
    report["rounds"] = measurements
    report["summary"] = {
        f"{kind}.{name}": spread(values)
        for kind, rounds in measurements.items()
        for name, values in rounds.items()
    }
    report["machine"]["load_average_1m_5m_after"] = load_average()[:2]
    print(json.dumps(report["machine"], indent=2))
    print(
        f"default scenario, {PAGE_DURATION_S:g} simulated s, {options.repeats} rounds: median [min "
        ".. max] seconds"
    )
    for name, figures in report["summary"].items():
        print(
            f"  {name:32s} {figures['median']:6.2f} [{figures['min']:.2f} .. {figures['max']:.2f}]"
        )
    for kind in ("headless", "browser"):
        if kind in measurements:
            verdict = (
                "met" if report["summary"][f"{kind}.{kind}_s"]["median"] < TARGET_S else "MISSED"
            )
            print(f"  target: {kind} run-to-result median < {TARGET_S:g} s: {verdict}")
    if options.json:
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
