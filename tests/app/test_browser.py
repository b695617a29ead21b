"""The what-if page in a real browser: Debian's Chromium driven by Playwright.

Starts ``streamlit run app.py`` on a free port, shortens the run, presses
Run, waits for the charts and saves a screenshot in the test's tmp_path;
uploads a small CSV trace and reads what the page says it imported.
Skipped when /usr/bin/chromium is missing (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.paths import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=(
        "needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium; .ci/run "
        "installs it)"
    ),
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_healthy(url: str, server: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout_s:g} s")


SERVER_PIDS: dict[str, int] = {}
"""The streamlit server's process id behind each app URL (to read its CPU time)."""


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process and its threads so far (/proc/PID/stat), seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_used(pid: int, seconds: float) -> float:
    """CPU seconds the process uses over the next ``seconds`` of wall time."""
    start = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - start


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = (tmp_path_factory.mktemp("streamlit") / "server.log").open("wb")
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.port",
        str(port),
    ]
    command += ["--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    # uploaded traces are kept there
    cache = {"SIMCACHE_CACHE": str(tmp_path_factory.mktemp("cache"))}
    server = subprocess.Popen(
        command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **cache}
    )
    SERVER_PIDS[f"http://127.0.0.1:{port}"] = server.pid
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, server)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


@contextmanager
def app_page(
    app_url: str,
    tmp_path: Path,
    seconds: float | None = None,
    viewport: dict[str, int] | None = None,
) -> Iterator[Any]:
    """The page in a new Chromium profile (``viewport``, default 1400 x 1100), its run shortened
    to ``seconds`` simulated seconds if given."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport=viewport or {"width": 1400, "height": 1100},
        )
        try:
            page = browser.pages[0] if browser.pages else browser.new_page()
            page.goto(app_url)
            if seconds is not None:
                box = page.get_by_role("spinbutton", name="Simulated seconds")
                box.fill(f"{seconds:g}")
                box.press("Enter")
            yield page
        finally:
            browser.close()


def open_tab(page: Any, name: str, shown: Any) -> None:
    """Select the tab ``name`` of the page and wait until ``shown`` (a locator in it) is visible.
    A click that lands while the app is still rerunning (a setting just changed, e.g. the seconds
    ``app_page`` sets) can be undone when the rerun's elements replace the clicked ones (seen on a
    loaded machine: the tab's contents never showed), so the tab is clicked again until its
    contents show."""
    from playwright.sync_api import expect

    tab = page.get_by_role("tab", name=name)
    for _ in range(5):
        tab.click()
        try:
            expect(shown).to_be_visible(timeout=15_000)
            return
        except AssertionError:
            continue
    expect(shown).to_be_visible()


def test_run_in_a_real_browser_shows_the_charts(app_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        profile = str(tmp_path / "profile")  # a new, empty user data dir
        viewport = {"width": 1400, "height": 1100}
        browser = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport=viewport,
        )
        try:
            page = browser.pages[0] if browser.pages else browser.new_page()
            page.goto(app_url)
            seconds = page.get_by_role("spinbutton", name="Simulated seconds")
            seconds.fill("3")
            seconds.press("Enter")
            page.get_by_role("button", name="Run simulation").click()
            expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=90_000)
            expect(page.get_by_text("Bottleneck:")).to_be_visible()
            page.screenshot(path=str(tmp_path / "single-run.png"), full_page=True)
            metrics = page.get_by_test_id("stMetric")
            expect(metrics).to_have_count(4)
            assert "VM write p99" in metrics.nth(1).inner_text()
            assert page.get_by_test_id("stException").count() == 0
            assert "3 s (seed 1)" in page.get_by_text("I/Os simulated over").inner_text()
        finally:
            browser.close()
    assert (tmp_path / "single-run.png").stat().st_size > 10_000


def test_a_target_set_in_the_sidebar_gives_the_run_a_verdict(app_url: str, tmp_path: Path) -> None:
    """Typing a latency target into the sidebar and running: the verdict line names the target
    and says meets, misses or unknown (with a figure: "write p99 is ...")."""
    from playwright.sync_api import expect

    with app_page(app_url, tmp_path, seconds=3) as page:
        target = page.get_by_role("textbox", name="Latency target")
        target.fill("write p99 <= 50ms")
        target.press("Enter")
        page.get_by_role("button", name="Run simulation").click()
        # the page's markdown typesets <= as ≤
        named = re.compile(r"Target write p99 (<=|≤) 50 ms:")
        verdict = page.get_by_test_id("stTabs").get_by_text(named)
        expect(verdict).to_be_visible(timeout=90_000)
        line = page.get_by_test_id("stMarkdownContainer").filter(has_text=named).first.inner_text()
        assert any(word in line for word in ("meets it:", "misses by", "unknown:")), line
        assert "write p99 is " in line
        assert page.get_by_test_id("stException").count() == 0
        page.screenshot(path=str(tmp_path / "verdict.png"), full_page=True)


def test_an_uploaded_trace_shows_what_was_imported(app_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    rows = ["time,op,offset,size"] + [
        f"{i * 0.01:.2f},{'R' if i % 3 == 0 else 'W'},{(i % 50) * 4096},4096" for i in range(30)
    ]
    trace = tmp_path / "vm1.csv"
    trace.write_text("\n".join(rows) + "\n")
    with app_page(app_url, tmp_path) as page:
        # the scenario's uploader (the tier section has its own, for fio results of a device)
        uploader = page.locator('[data-testid="stFileUploader"]').filter(
            has_text="upload a scenario"
        )
        uploader.locator("input[type=file]").set_input_files(str(trace))
        expect(page.get_by_text("Imported from vm1.csv (csv)", exact=True)).to_be_visible(
            timeout=60_000
        )
        facts = page.get_by_test_id("stTable").first
        expect(facts).to_contain_text("30 (10 reads, 20 writes)")
        expect(page.get_by_test_id("stTable").nth(1)).to_contain_text(
            "csv trace, device disk, open replay"
        )
        page.screenshot(path=str(tmp_path / "imported.png"), full_page=True)
        assert page.get_by_test_id("stException").count() == 0
        assert page.get_by_test_id("stAlertContentError").count() == 0


def test_the_stop_button_ends_a_run_and_shows_the_partial_result(
    app_url: str, tmp_path: Path
) -> None:
    """A 600 s run (minutes of wall time), confirmed, then stopped from the page: the partial
    figures show under a warning."""
    from playwright.sync_api import expect

    with app_page(app_url, tmp_path, seconds=600) as page:
        page.get_by_role("button", name="Run simulation").click()
        # 600 s of the default scenario is about 1.6 million I/Os: past runs.CONFIRM_IOS, the page
        # asks first
        expect(page.get_by_text("This run is large:")).to_be_visible(timeout=30_000)
        page.get_by_role("button", name="Start this run anyway").click()
        stop = page.get_by_test_id("stTabs").get_by_role("button", name="Stop simulation")
        expect(stop).to_be_visible(timeout=30_000)
        expect(page.get_by_text("Simulating: 600 simulated seconds")).to_be_visible()
        # the question goes once the run starts (it stayed above the run: review 65e, 9)
        expect(page.get_by_text("This run is large:")).to_have_count(0)
        expect(page.get_by_role("button", name="Start this run anyway")).to_have_count(0)
        stop.click()
        warning = page.get_by_test_id("stAlert").filter(has_text="Partial result.")
        expect(warning).to_be_visible(timeout=30_000)
        assert (
            " s of 600 s (stopped from the page): every figure below covers 0 to "
            in warning.inner_text()
        )
        expect(page.get_by_test_id("stMetric")).to_have_count(4)
        assert page.get_by_test_id("stException").count() == 0
        page.screenshot(path=str(tmp_path / "stopped-run.png"), full_page=True)


def test_the_html_report_opens_offline_with_its_verdict_and_every_chart(tmp_path: Path) -> None:
    """`simcache report` with a target and a sweep, opened from disk in Chromium with the network
    off: the verdict is on the page, each of the six charts (breakdown, four timelines, sweep) is
    drawn at a nonzero size, and the page asks for nothing outside its file."""
    from playwright.sync_api import expect, sync_playwright

    from simcache.cli.main import main

    out = tmp_path / "report.html"
    sweep = ["--sweep", "cluster.peer_link = ['1GbE', '10GbE']", "--workers", "1"]
    assert (
        main(
            [
                "report",
                "default",
                "--duration",
                "4s",
                "-o",
                str(out),
                "--target",
                "write p99 <= 5ms",
                *sweep,
            ]
        )
        == 0
    )
    requested: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
            page = context.new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.goto(out.as_uri())
            verdict = page.locator("#verdicts")
            expect(verdict).to_contain_text("write p99 <= 5 ms")
            assert any(
                word in verdict.inner_text() for word in ("meets it:", "misses by", "unknown:")
            )
            charts = page.locator("svg.chart")
            expect(charts).to_have_count(6)
            for index in range(6):
                box = charts.nth(index).bounding_box()
                assert box is not None and box["width"] > 300 and box["height"] > 100
                # data drawn, not only the frame
                assert charts.nth(index).locator("polyline, circle, rect:has(title)").count() >= 1
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert requested == [out.as_uri()]
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_a_categorical_sweep_renders_as_points_without_a_line(app_url: str, tmp_path: Path) -> None:
    """A sweep over link kinds (categories, not a scale) is drawn by Plotly as markers with error
    bars: one point per link kind, no line path between them."""
    from playwright.sync_api import expect

    with app_page(app_url, tmp_path, seconds=1) as page:
        parameter = page.get_by_test_id("stSelectbox").filter(has_text="Parameter")
        open_tab(page, "Sweep one parameter", parameter)
        parameter.click()
        page.get_by_role("option", name="Peer network link", exact=True).click()
        # the link kinds offered
        expect(page.get_by_role("textbox", name="Values")).to_have_value("1GbE, 10GbE, 25GbE")
        seeds = page.get_by_role("spinbutton", name="Seeds")
        seeds.fill("2")
        seeds.press("Enter")
        page.get_by_role("button", name="Run sweep").click()
        plot = page.get_by_role("tabpanel", name="Sweep one parameter").locator(".js-plotly-plot")
        expect(plot).to_be_visible(timeout=120_000)
        assert plot.evaluate("graph => graph.data.map(trace => trace.mode)") == ["markers"]
        expect(plot.locator(".scatterlayer .trace .points path")).to_have_count(3)
        assert plot.locator(".xtick text").all_text_contents() == ["1GbE", "10GbE", "25GbE"]
        drawn_lines = plot.locator(".scatterlayer path.js-line").evaluate_all(
            "paths => paths.filter(p => p.getAttribute('d')).length"
        )
        assert drawn_lines == 0
        assert plot.locator(".errorbars .errorbar").count() == 3
        page.screenshot(path=str(tmp_path / "categorical-sweep.png"), full_page=True)
        assert page.get_by_test_id("stException").count() == 0


CUT_TEXT_JS = """
selectors => {
    const cut = [];
    for (const selector of selectors) {
        for (const element of document.querySelectorAll(selector)) {
            if (element.offsetParent === null) continue;  // hidden (a closed expander, another tab)
            if (element.scrollWidth > element.clientWidth + 1) {
                const text = element.innerText.trim().slice(0, 60);
                const widths = `${element.scrollWidth} > ${element.clientWidth} px`;
                cut.push(`${selector}: ${text} (${widths})`);
            }
        }
    }
    return cut;
}
"""
TEXT_THAT_MUST_NOT_BE_CUT = [
    "h1",
    "h2",
    "h3",
    "[data-testid=stMetricLabel]",
    "[data-testid=stMetricLabel] p",
    "[data-testid=stMetricValue]",
    "[data-testid=stMetricValue] div",
    "[data-testid=stMetricDelta]",
    "[data-testid=stMetricDelta] div",
    "[data-testid=stMetricDelta] p",
    "[role=tab]",
    "[role=tab] p",
    "[data-testid=stWidgetLabel] p",
    "[data-testid=stExpander] summary p",
]
"""Headings, metric labels, values and deltas, tab titles, input labels and expander titles: an
element narrower than its text (``scrollWidth > clientWidth``) shows it cut or ellipsized."""


def test_at_800_px_wide_no_title_label_or_unit_is_cut(app_url: str, tmp_path: Path) -> None:
    """A laptop's half screen (800 x 900): after a run, no heading, metric label or value, tab
    title, input label or section title is narrower than its text; a screenshot of the page is
    kept in tmp_path."""
    from playwright.sync_api import expect

    with app_page(app_url, tmp_path, seconds=3, viewport={"width": 800, "height": 900}) as page:
        page.get_by_role("button", name="Run simulation").click()
        expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=90_000)
        expect(page.get_by_test_id("stMetric")).to_have_count(4)
        page.wait_for_timeout(500)  # the last charts' layout
        page.screenshot(path=str(tmp_path / "800px.png"), full_page=True)
        assert page.evaluate("() => window.innerWidth") == 800
        cut = page.evaluate(CUT_TEXT_JS, TEXT_THAT_MUST_NOT_BE_CUT)
        assert cut == [], "\n".join(cut)
        checked = page.evaluate(
            "selectors => selectors.map(s => document.querySelectorAll(s).length)",
            TEXT_THAT_MUST_NOT_BE_CUT,
        )
        counts = dict(zip(TEXT_THAT_MUST_NOT_BE_CUT, checked, strict=True))
        must_match = (
            "h1",
            "[data-testid=stMetricLabel]",
            "[data-testid=stMetricValue]",
            "[role=tab]",
            "[data-testid=stWidgetLabel] p",
        )
        # the selectors still find what they check
        assert all(counts[selector] > 0 for selector in must_match), str(counts)
        # the comparison: long variant names as metric labels, mean +- interval as values, the
        # differences below
        run = page.get_by_role("button", name="Run comparison")
        open_tab(page, "Compare variants", run)
        run.click()
        expect(page.get_by_text("VM write p99 over all groups")).to_be_visible(timeout=90_000)
        # the view's last element
        expect(page.get_by_role("button", name="Comparison (CSV)")).to_be_visible(timeout=90_000)
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path / "800px-compare.png"))
        cut = page.evaluate(CUT_TEXT_JS, TEXT_THAT_MUST_NOT_BE_CUT)
        assert cut == [], "\n".join(cut)
    assert (tmp_path / "800px.png").stat().st_size > 10_000


def test_closing_the_page_ends_its_run_and_the_server_goes_idle(
    app_url: str, tmp_path: Path
) -> None:
    """A 600 s run (minutes of computing) whose tab is closed: the page no longer polls it, so
    its lease ends it (runs.LEASE_S = 3 s) and the server stops computing. Measured on the
    server's CPU time: while the run goes it uses CPU (however shared the machine is), and from
    LEASE_S + 2 s after the close, over 3 s, no more than the same server used over 3 s before
    the page opened (an idle Streamlit server: its event loop and config pollers, 0.05-0.2 s in
    3 s depending on the machine) plus 0.15 s; a run still going would use up to a core, 3 s."""
    from playwright.sync_api import expect

    pid = SERVER_PIDS[app_url]
    baseline = cpu_used(pid, 3.0)
    with app_page(app_url, tmp_path, seconds=600) as page:
        page.get_by_role("button", name="Run simulation").click()
        page.get_by_role("button", name="Start this run anyway").click()
        expect(
            page.get_by_test_id("stTabs").get_by_role("button", name="Stop simulation")
        ).to_be_visible(timeout=30_000)
        busy = cpu_used(pid, 2.0)  # the tab closes as the block ends
    time.sleep(3.0 + 2.0)
    idle = cpu_used(pid, 3.0)
    assert busy > 0.2, f"the run used {busy:.2f} s of CPU in 2 s: it was not running"
    assert idle < baseline + 0.15, (
        f"the server used {idle:.2f} s of CPU in 3 s after the page was closed, "
        f"{baseline:.2f} s idle before"
    )
