"""`simcache report` and simcache.report: the HTML report's figures are the run's, as `simcache run`
prints them; lower bounds, instability and verdicts are said; sweeps draw categorical values
unjoined; nothing links outside the file.

Latency targets (simcache.runs.targets) are parsed and judged here too. The report opened in
Chromium is in test_browser.py.
"""

from __future__ import annotations

import math
import os
import re
import signal
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.builders import small_scenario
from support.cli import call
from support.mm1 import mm1_data
from support.strategies import to_toml

import simcache
from simcache.base.errors import ScenarioError
from simcache.report import SweepReport, report_html
from simcache.report.cells import cell
from simcache.results.bottleneck import bottleneck_sentence, time_shares
from simcache.runs.sweep import (
    SweepProgress,
    point_bottleneck,
    point_stability,
    sweep,
    sweep_summary,
)
from simcache.runs.sweep_points import lower_bound_in
from simcache.runs.targets import (
    Evidence,
    Target,
    evidence_of_row,
    judge,
    judge_seeds,
    parse_target,
)
from simcache.sim.collect import COMPONENTS

OUTSIDE = re.compile(r"https?:|<script|<link|<img|<iframe|src=|url\(", re.IGNORECASE)
"""Anything that would make the page reach outside its file."""


class _Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts, and the <h2> heading each one follows."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._heading = ""
        self._in: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append((self._heading, []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        if tag in ("td", "th", "h2"):
            self._in, self._text = tag, ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2" and self._in == "h2":
            self._heading = self._text
        elif tag in ("td", "th") and self._in == tag:
            self.tables[-1][1][-1].append(self._text)
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self._text += data


def tables(html: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(html)
    return dict(parser.tables)


def latency_rows(html: str) -> list[list[str]]:
    return tables(html)["Latency per VM group (ms), IOPS and MB/s"]


# -- the default scenario: figures as `simcache run` prints them
# ------------------------------------------


@pytest.fixture(scope="module")
def default_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """(`simcache run default` output, the report's HTML, `simcache report` output), both for 6 s
    and seed 1."""
    out = tmp_path_factory.mktemp("report") / "default.html"
    code, printed, _ = call(["run", "default", "--duration", "6s", "--seed", "1"])
    assert code == 0
    code, said, _ = call(
        [
            "report",
            "default",
            "--duration",
            "6s",
            "--seed",
            "1",
            "-o",
            str(out),
            "--target",
            "write p99 <= 5ms",
        ]
    )
    assert code == 0
    return printed, out.read_text("utf-8"), said


def test_the_report_shows_the_latency_table_exactly_as_simcache_run_prints_it(
    default_report: tuple[str, str, str],
) -> None:
    printed, html, _ = default_report
    lines = printed.splitlines()
    start = lines.index("Latency per VM group (ms), IOPS and MB/s:") + 2  # after the header row
    # 3 groups and "all", read and write
    run_rows = [line.split() for line in lines[start : start + 8]]
    # the table ends there
    assert lines[start + 8] == "" or lines[start + 8].startswith("  >= : a lower bound.")
    shown = [[value.replace(">= ", ">=") for value in row] for row in latency_rows(html)[1:]]
    assert shown == run_rows
    # 6 s of the default leaves reads unfinished
    assert any(value.startswith(">=") for row in run_rows for value in row)
    assert latency_rows(html)[0] == [
        "group",
        "op",
        "I/Os",
        "unfinished",
        "IOPS",
        "MB/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "p99.9 ms",
        "mean ms",
    ]


def test_the_report_names_its_run(default_report: tuple[str, str, str]) -> None:
    """Manifest: version, seed, scenario hash (the SHA-256 of the scenario as run), duration; the
    bottleneck sentence."""
    _, html, said = default_report
    scenario = simcache.load_scenario("default").with_duration(6.0)
    result = simcache.simulate(scenario, seed=1)
    manifest = dict(tables(html)["Run manifest"][1:])
    assert manifest["seed"] == "1"
    assert manifest["simcache version"].startswith(f"{simcache.__version__} (")
    assert manifest["simulated duration"] == "6 s (measured 0.6-6 s after warm-up)"
    assert manifest["I/Os completed"] == f"{result.meta['ios']:,}"
    from simcache.report import scenario_hash

    assert manifest["scenario hash"] == f"{scenario_hash(result)} (SHA-256 of the scenario as run)"
    assert re.fullmatch(r"[0-9a-f]{16}", scenario_hash(result))

    assert bottleneck_sentence(result, scenario).replace("'", "&#x27;") in html
    verdict = judge(result, parse_target("write p99 <= 5ms")).text
    assert said.startswith(f"write p99 <= 5 ms: {verdict}\nreport written to ") and said.endswith(
        " bytes)\n"
    )


def test_the_report_needs_no_network(default_report: tuple[str, str, str]) -> None:
    _, html, _ = default_report
    assert OUTSIDE.search(html) is None
    assert html.count("<svg") == 5  # the breakdown and four timelines


def test_the_report_marks_warmup_and_the_vmotion(tmp_path: Path) -> None:
    """The default scenario's vMotion at 10 s is marked on every timeline of a 12 s run, and the
    1.2 s warm-up shaded."""
    result = simcache.simulate(simcache.load_scenario("default").with_duration(12.0), seed=1)
    html = report_html(result)
    assert html.count(">vMotion host0-&gt;host1</text>") == 4
    assert html.count(">warm-up</text>") == 4


# -- an overloaded run: instability, lower bounds and verdicts
# ------------------------------------------------


@pytest.fixture(scope="module")
def overloaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[simcache.Result, str]:
    """The M/M/1 of test_validity at rho = 1.5 (seed 1): its result, and its report as `simcache
    report` writes it."""
    folder = tmp_path_factory.mktemp("overloaded")
    path = folder / "mm1.toml"
    path.write_text(to_toml(mm1_data(1500.0)))
    out = folder / "mm1.html"
    targets = ["--target", "write p50 <= 10s", "--target", "write p99.9 <= 1ms"]
    code, _, _ = call(["report", str(path), "--seed", "1", "-o", str(out), *targets])
    assert code == 0
    return simcache.simulate(simcache.load_scenario(path), seed=1), out.read_text("utf-8")


def test_an_unstable_run_says_so_above_its_figures(overloaded: tuple[simcache.Result, str]) -> None:
    result, html = overloaded
    assert not result.stable
    banner = html.index("<p class='unstable' id='unstable'>UNSTABLE: this run has no steady state")
    assert banner < html.index("<h2>Latency per VM group")
    overload = next(w for w in result.warnings if w.kind == "overload")
    assert f"<li>warning: {overload.message}</li>".replace("'", "&#x27;") in html


def test_lower_bounds_show_as_at_least(overloaded: tuple[simcache.Result, str]) -> None:
    """Every summary cell named in ``lower_bounds`` shows as ">= value", the value formatted as
    `simcache run` prints it."""
    result, html = overloaded
    rows = {(row[0], row[1]): row for row in latency_rows(html)[1:]}
    header = latency_rows(html)[0]
    column = {
        "p50_ms": "p50 ms",
        "p95_ms": "p95 ms",
        "p99_ms": "p99 ms",
        "p999_ms": "p99.9 ms",
        "mean_ms": "mean ms",
    }
    marked = 0
    for record in result.summary.to_dict("records"):
        for name in str(record["lower_bounds"]).split():
            if name in column:
                shown = rows[(record["group"], record["op"])][header.index(column[name])]
                assert shown == ">= " + cell(record[name])
                marked += 1
    assert marked >= 2  # db write and all write: at least their mean and p99.9


def test_verdicts_of_an_unstable_run(overloaded: tuple[simcache.Result, str]) -> None:
    """A lower bound above the limit is a miss by at least the difference; a figure under it is
    unknown (unstable)."""
    result, html = overloaded
    verdicts = tables(html)["Verdicts"][1:]
    row = result.summary[
        (result.summary["group"] == "all") & (result.summary["op"] == "write")
    ].iloc[0]
    p999 = float(row["p999_ms"])
    assert "p999_ms" in row["lower_bounds"] and p999 > 1.0
    over = p999 - 1.0
    assert verdicts[1] == [
        "write p99.9 <= 1 ms",
        f"misses by at least {over:.3g} ms ({over:.0%}): write p99.9 is at least {p999:.3g} ms, "
        "unfinished I/Os included",
    ]
    assert verdicts[0][0] == "write p50 <= 10000 ms"
    assert verdicts[0][1].startswith(
        "unknown: the run is unstable (no steady state): its latency grows with the run's length; "
        "write p50 is "
    )
    # the verdict comes first
    assert html.index("<h2>Verdicts</h2>") < html.index("<h2>Latency per VM group")


def test_time_shares_of_the_tail() -> None:
    """99 writes of 1 ms all in the local tier and one of 10 ms, 9 of them on the network: on
    average the tier has 100/109 = 92% of the write time, but past 10 ms (the tail) the network
    has 9/10."""
    latency = np.array([1.0] * 99 + [10.0])
    parts = {"local_tier_ms": np.array([1.0] * 100), "network_ms": np.array([0.0] * 99 + [9.0])}
    assert time_shares(latency, parts) == pytest.approx(
        {"local_tier_ms": 100 / 109, "network_ms": 9 / 109}
    )
    assert time_shares(latency, parts, 10.0) == pytest.approx(
        {"local_tier_ms": 0.1, "network_ms": 0.9}
    )


def test_the_bottleneck_sentence_says_when_the_answer_depends_on_the_percentile() -> None:
    """compression_1gbe (seed 1, 6 s): on average the peer tier has the largest share of write
    time, but past the p99 the 1GbE replica send has; the sentence says so with the shares
    computed from the records."""
    scenario = simcache.load_scenario("compression_1gbe").with_duration(6.0)
    result = simcache.simulate(scenario, seed=1)
    writes = result.measured[result.measured["op"] == "write"]
    assert len(writes) >= 1000  # 10 writes past the p99
    p99 = float(np.percentile(writes["latency_ms"], 99))
    mean = writes[list(COMPONENTS)].sum() / writes[list(COMPONENTS)].sum().sum()
    tail = writes.loc[writes["latency_ms"] >= p99, list(COMPONENTS)].sum()
    tail /= tail.sum()
    assert mean.idxmax() == "peer_tier_ms" and tail.idxmax() == "network_ms"
    said = bottleneck_sentence(result, scenario)
    assert said.endswith(
        "Where write time goes depends on the percentile: on average the peer tier takes the "
        f"largest share ({mean.max():.0%}), "
        f"but in the slowest 1% of writes (at or past the p99, {p99:.3g} ms) sending replicas over "
        "the network does "
        f"({tail.max():.0%}); to cut the p99, look there."
    )


# -- targets
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("write p99 <= 5ms", Target("all", "write", "p99", 5.0)),
        ("db read p99.9 <= 500us", Target("db", "read", "p99.9", 0.5)),
        ("  web write mean<=0.2 s ", Target("web", "write", "mean", 200.0)),
        ("read p999 <= 20 ms", Target("all", "read", "p999", 20.0)),
    ],
)
def test_targets_parse(text: str, target: Target) -> None:
    parsed = parse_target(text)
    assert parsed == target
    assert parse_target(str(parsed)) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "write p97 <= 5ms",
            "no latency figure 'p97'; use one of p50, p95, p99, p99.9, p999, mean, max",
        ),
        ("write p99 <= 5", "give the limit as a time with its unit, e.g. 5ms or 500us (got '5')"),
        ("p99 <= 5ms", 'write a target as "[GROUP] read|write FIGURE <= LIMIT"'),
        ("write p99 >= 5ms", 'write a target as "[GROUP] read|write FIGURE <= LIMIT"'),
        ("write p99 <= 0ms", "the limit must be a positive time, e.g. 5ms (got '0ms')"),
    ],
)
def test_bad_targets_say_how_to_write_them(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(message)):
        parse_target(text)


def test_verdicts_of_a_stable_run() -> None:
    """M/M/1 at rho = 0.5 (stable, every I/O finished): a limit of twice the p99 is met with p99
    to spare; half of it is missed by p99/2, which is 100% of the limit."""
    result = simcache.simulate(simcache.load_scenario(mm1_data(500.0)), seed=1)
    assert result.stable
    p99 = float(result.summary.query("group == 'all' and op == 'write'")["p99_ms"].iloc[0])
    meets = judge(result, Target("all", "write", "p99", 2 * p99))
    assert (meets.status, meets.text) == (
        "meets",
        f"meets it: write p99 is {p99:.3g} ms, {p99:.3g} ms under the limit",
    )
    misses = judge(result, Target("all", "write", "p99", p99 / 2))
    assert (misses.status, misses.text) == (
        "misses",
        f"misses by {p99 / 2:.3g} ms (100%): write p99 is {p99:.3g} ms",
    )
    none = judge(result, Target("db", "read", "p99", 1.0))  # the M/M/1 only writes
    assert (none.status, none.text) == (
        "unknown",
        "unknown: no read I/O of db in the measured window",
    )


def test_throughput_targets_parse() -> None:
    assert parse_target("write iops >= 4000") == Target("all", "write", "iops", 4000.0)
    assert parse_target("db read MB/s >= 1,200") == Target("db", "read", "MB/s", 1200.0)
    for text in ("write iops >= 4000", "db read MB/s >= 200.5"):
        assert parse_target(str(parse_target(text))) == parse_target(text)
    with pytest.raises(
        ScenarioError, match=re.escape("a throughput target is a floor: write iops >= FLOOR")
    ):
        parse_target("write iops <= 4000")
    with pytest.raises(
        ScenarioError,
        match=re.escape("give the floor as a plain number of iops, e.g. 4000 (got '4k')"),
    ):
        parse_target("write iops >= 4k")


def test_throughput_and_thin_percentile_verdicts() -> None:
    """M/M/1 at 500 writes/s over a 5 s window: its IOPS meets a floor of half of it and misses
    twice it by 50%. Its ~2,500 writes are enough for a p99 (1,000 = 10 / (1 - 0.99)) but not for
    a p99.9 (10,000): that verdict is unknown."""
    result = simcache.simulate(simcache.load_scenario(mm1_data(500.0)), seed=1)
    row = result.summary.query("group == 'all' and op == 'write'").iloc[0]
    iops, count = float(row["iops"]), int(row["count"] + row["unfinished"])
    assert 1000 <= count < 10_000
    meets = judge(result, Target("all", "write", "iops", iops / 2))
    assert (meets.status, meets.text) == (
        "meets",
        f"meets it: write iops is {iops:,.0f} IOPS, {iops / 2:,.0f} IOPS above the floor",
    )
    misses = judge(result, Target("all", "write", "iops", 2 * iops))
    assert (misses.status, misses.text) == (
        "misses",
        f"misses by {iops:,.0f} IOPS (50%): write iops is {iops:,.0f} IOPS",
    )
    thin = judge(result, parse_target("write p99.9 <= 1s"))
    assert thin.status == "unknown"
    assert thin.text.startswith(
        f"unknown: only {count:,} writes behind p99.9, which needs 10,000 (10 beyond it); run "
        "longer"
    )
    assert judge(result, parse_target("write p99 <= 1s")).status == "meets"


def test_seeds_that_all_give_one_value_claim_no_interval() -> None:
    """A replayed trace draws nothing random, so its seeds repeat one run: a "7.02 ± 0.00 ms (mean
    of 3 seeds, 95% interval)" claimed a certainty the seeds cannot give (review 63, item 1)."""
    same = [Evidence(7.02, samples=5000)] * 3
    verdict = judge_seeds(Target("disk", "write", "p99", 10.0), same)
    assert verdict.status == "meets"
    assert verdict.text == (
        "meets it: disk write p99 is 7.02 ms (all 3 seeds gave this value, so the seeds give no "
        "interval: the figure does not depend on the random draws here, e.g. a replayed trace, a "
        "fixed device service time, or close percentiles in one histogram bin (1%) of a run "
        "without records), 2.98 ms under the limit"
    )


def test_verdicts_over_seeds_use_the_t_interval() -> None:
    """Five seeds 4.9, 5.0, 5.1, 4.95, 5.05 ms: mean 5.0, s = 0.0791, half-width t(0.975, 4) s /
    sqrt(5) = 2.776 x 0.0791 / 2.236 = 0.098 ms. A 6 ms limit is met (5.098 < 6); a 5.05 ms limit
    lies inside the interval: unknown, not a pass. Two seeds 4 and 6 ms (half-width 12.706 x
    1.414 / 1.414 = 12.7 ms) are said to be too few, and a 3 ms limit they are 2 ms over is still
    within that interval."""
    five = [Evidence(v) for v in (4.9, 5.0, 5.1, 4.95, 5.05)]
    met = judge_seeds(Target("all", "write", "mean", 6.0), five)
    assert met.status == "meets" and met.ci95 == pytest.approx(0.0982, abs=5e-4) and met.seeds == 5
    assert met.text == (
        "meets it: write mean is 5.00 ± 0.10 ms (mean of 5 seeds, 95% interval), 1 ms under "
        "the limit"
    )
    close = judge_seeds(Target("all", "write", "mean", 5.05), five)
    assert close.status == "unknown" and "within its interval; run more seeds" in close.text
    two = judge_seeds(
        Target("all", "write", "p99", 3.0),
        [Evidence(4.0, samples=5000), Evidence(6.0, samples=5000)],
    )
    assert two.ci95 == pytest.approx(12.706, abs=1e-3)
    assert two.status == "unknown" and two.text.endswith(
        "within its interval; run more seeds; 2 seeds are too few for a stable interval"
    )
    unstable = judge_seeds(
        Target("all", "write", "mean", 6.0),
        [Evidence(5.0), Evidence(5.1, doubts=("the run is unstable",))],
    )
    assert unstable.status == "unknown" and unstable.text.startswith(
        "unknown: in 1 of 2 seeds, the run is unstable"
    )


def test_sweep_rows_carry_what_a_verdict_needs() -> None:
    """A sweep row's ``stable``, ``validity`` and ``lower_bounds`` cells (comma-separated, absent
    or NaN when empty) are read as a run's: a lower bound under the limit is unknown, a pass
    while the buffer was filling is unknown, an unstable row is unknown, and a row without them
    (older stores) is unknown for want of its validity."""
    target = parse_target("write p99 <= 5ms")
    clean = {"all.write.p99_ms": 3.0, "all.write.count": 5000, "stable": 1, "validity": math.nan}
    assert judge_seeds(target, [evidence_of_row(clean, target)]).status == "meets"
    bounded = judge_seeds(
        target,
        [evidence_of_row(clean | {"all.write.lower_bounds": "p99_ms,mean_ms,max_ms"}, target)],
    )
    assert bounded.text == (
        "unknown: write p99 is at least 3 ms, under the limit, but unfinished I/Os could raise "
        "the figure past the limit"
    )
    filling = judge_seeds(
        target, [evidence_of_row(clean | {"validity": "few_samples,filling"}, target)]
    )
    assert filling.text == (
        "unknown: write p99 is 3 ms, 2 ms inside the limit, but the destage buffer was still "
        "filling at the end: "
        "once full, writes wait for destage"
    )
    assert judge_seeds(target, [evidence_of_row(clean | {"stable": 0}, target)]).text.startswith(
        "unknown: the run is unstable"
    )
    # a part busy 97% or more under an open load (a review, 64: F7): a pass is not yet one
    capacity = judge_seeds(target, [evidence_of_row(clean | {"validity": "at_capacity"}, target)])
    assert capacity.status == "unknown"
    assert capacity.text.endswith(
        "but a part was busy 97% or more of the window under an open load: a run this short "
        "cannot tell its queue from one that grows, so the steady state may be worse"
    )
    old = {"all.write.p99_ms": 3.0, "all.write.count": 5000}
    assert "was not recorded" in judge_seeds(target, [evidence_of_row(old, target)]).text


# -- sweeps
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("small") / "small.toml"
    # sampled every 0.1 s: 9 samples after the warm-up, enough to test its stability (8)
    path.write_text(to_toml(small_scenario("report-small", run={"sample_interval": "0.1s"})))
    return path


def sweep_rows(html: str) -> list[list[str]]:
    return tables(html)["Sweep"]


def test_ctrl_c_in_a_reports_sweep_writes_the_report_with_the_runs_that_finished(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``simcache report --sweep``: the sweep shows its progress (plain lines when stderr is no
    terminal), and Ctrl-C during it (a SIGINT sent once the second run has finished) stops it,
    writes the report with the run and the finished sweep runs, marked partial in the page and in
    the output, and exits 130. Before, the sweep had no progress and Ctrl-C lost the report."""
    from simcache.cli import sweep as cli_sweep

    shown = cli_sweep._sweep_progress

    def interrupt_after_two(state: SweepProgress) -> None:
        shown(state)
        if state.done == 2:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(cli_sweep, "_sweep_progress", interrupt_after_two)
    out = tmp_path / "stopped.html"
    line = "cluster.peer_link = ['1GbE', '10GbE']"
    code, stdout, stderr = call(
        [
            "report",
            str(small),
            "-o",
            str(out),
            "--sweep",
            line,
            "--sweep-seeds",
            "1",
            "2",
            "3",
            "--workers",
            "1",
        ]
    )
    assert code == 130, stderr
    assert "sweeping 6 runs around it; Ctrl-C stops the sweep" in stderr
    assert "1/6 runs done" in stderr and "2/6 runs done" in stderr
    finished = int(re.search(r"after (\d+) of 6 runs", stdout)[1])  # type: ignore[index]
    assert 2 <= finished < 6  # the run going on when the signal came may still finish
    assert "PARTIAL SWEEP: the sweep stopped (SIGINT)" in stdout
    html = out.read_text("utf-8")
    assert f"Partial sweep: the sweep stopped (SIGINT) after {finished} of 6 runs" in html
    rows = sweep_rows(html)[1:]
    # the seeds column counts the finished runs of each point
    assert sum(int(row[1]) for row in rows) == finished


def test_a_sweep_stopped_before_any_run_finished_is_said_so(small: Path) -> None:
    """A report whose sweep was stopped before its first run finished: the section says so, with
    no table."""
    result = simcache.simulate(simcache.load_scenario(small))
    swept = SweepReport(
        pd.DataFrame(), {"cluster.peer_link": ["1GbE", "10GbE"]}, stopped="SIGINT", planned=4
    )
    html = report_html(result, sweep=swept)
    assert "Partial sweep: the sweep stopped (SIGINT) after 0 of 4 runs" in html
    assert "Sweep" not in tables(html)


def test_a_categorical_sweep_is_a_table_of_means_and_unjoined_points(
    small: Path, tmp_path: Path
) -> None:
    """Each point gets a verdict over its 2 seeds per target. The mean target is met by both
    points, each with its interval (Student t over 2 seeds) said to be too few seeds to be
    stable; the p99 target is unknown for both, as ~255 writes per seed are fewer than the 1,000
    a p99 needs (10 beyond it). Both pass, so the cheapest is the first in the listed order
    (categorical values), and both points are drawn green (the feasible region)."""
    out = tmp_path / "sweep.html"
    line = "cluster.peer_link = ['1GbE', '10GbE']"
    targets = ["--target", "write mean <= 1ms", "--target", "write p99 <= 1ms"]
    code, _, _ = call(
        [
            "report",
            str(small),
            "-o",
            str(out),
            "--sweep",
            line,
            "--sweep-seeds",
            "1",
            "2",
            "--workers",
            "1",
            *targets,
        ]
    )
    assert code == 0
    html = out.read_text("utf-8")
    scenario = simcache.load_scenario(small)
    table = sweep(scenario, {"cluster.peer_link": ["1GbE", "10GbE"]}, seeds=[1, 2], workers=1)
    points = sweep_summary(table, ["cluster.peer_link"])
    rows = sweep_rows(html)
    assert rows[0] == [
        "point",
        "seeds",
        "all.write.p99_ms",
        "all.write.mean_ms",
        "all.read.p99_ms",
        "bottleneck_utilization",
        "bottleneck",
        "stability",
        "write mean <= 1 ms",
        "write p99 <= 1 ms",
    ]
    for shown, point in zip(rows[1:], points.to_dict("records"), strict=True):
        p99, mean, half = (
            point["all.write.p99_ms"],
            point["all.write.mean_ms"],
            point["all.write.mean_ms.ci95"],
        )
        seeds = table[table["cluster.peer_link"] == point["cluster.peer_link"]]
        # a figure that is a lower bound in some seed is marked as `sweep --summary` marks it
        marks = [
            ">=" if lower_bound_in(seeds, column) else ""
            for column in ("all.write.p99_ms", "all.write.mean_ms")
        ]
        assert shown[:3] == [
            point["cluster.peer_link"],
            "2",
            f"{marks[0]}{cell(p99)} ± {cell(point['all.write.p99_ms.ci95'])}",
        ]
        assert shown[3].startswith(marks[1])
        assert shown[6] == point_bottleneck(seeds)  # e.g. "array 95%": the part, not only a figure
        assert shown[6].startswith(seeds["bottleneck"].iloc[0])
        assert shown[7] == point_stability(seeds).label
        assert mean + half < 1.0
        interval = (
            f"{mean:.{2 - math.floor(math.log10(mean))}f} ± "
            f"{half:.{2 - math.floor(math.log10(mean))}f} ms"
        )
        assert shown[-2] == (
            f"meets it: write mean is {interval} (mean of 2 seeds, 95% interval), {1 - mean:.3g} "
            "ms under the limit; "
            "2 seeds are too few for a stable interval"
        )
        fewest = int(
            table.loc[
                table["cluster.peer_link"] == point["cluster.peer_link"], "all.write.count"
            ].min()
        )
        assert fewest < 1000
        assert shown[-1].startswith(
            f"unknown: only {fewest} writes behind p99, which needs 1,000 (10 beyond it); run "
            "longer"
        )
    assert (
        "Cheapest passing configuration: 1GbE (2 of 2 points meet write mean &lt;= 1 ms; cheapest "
        "means the first passing" in html
    )
    chart = html[html.index("<h2>Sweep</h2>") :]
    assert (
        chart.count("<circle") == 2
        and "class='joined'" not in chart
        and 'class="joined"' not in chart
    )
    assert chart.count('<circle class="passing"') == 2
    assert OUTSIDE.search(html) is None


def test_a_numeric_sweep_is_joined(small: Path) -> None:
    """One numeric parameter (a quoted dotted key, as sweep files write it) is a scale: its
    points are joined."""
    scenario = simcache.load_scenario(small)
    grid = {"groups.db.workload.iops": [100, 200]}
    html = report_html(
        simcache.simulate(scenario), sweep=SweepReport(sweep(scenario, grid, workers=1), grid)
    )
    chart = html[html.index("<h2>Sweep</h2>") :]
    assert chart.count('class="joined"') == 1 and chart.count("<circle") == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--target", "dbx write p99 <= 5ms"], "no group 'dbx' in the scenario; groups: all, db"),
        (["--sweep", "cluster.peer_link = ['2GbE']"], "cluster.peer_link"),
        (["--sweep", "cluster.peer_link = '1GbE'"], "must be a non-empty list of values"),
    ],
)
def test_bad_options_are_told_before_the_run(
    small: Path, tmp_path: Path, options: list[str], message: str
) -> None:
    code, _, err = call(["report", str(small), "-o", str(tmp_path / "r.html"), *options])
    assert code == 2
    assert message in err and "simulating" not in err
    assert not (tmp_path / "r.html").exists()


def test_event_markers_name_every_event_kind() -> None:
    """A chart marker says what each scheduled event is (a report of an array rebuild labelled it
    'host... fails' and would have failed: array events have no host)."""
    from simcache.report.page import _event_label

    labels = [
        _event_label(event)
        for event in (
            {"kind": "vmotion", "at": 1.0, "source_host": 0, "target_host": 1},
            {"kind": "host_failure", "at": 1.0, "host": 2},
            {"kind": "device_failure", "at": 1.0, "host": 1},
            {"kind": "peer_loss", "at": 1.0, "host": 0, "duration": 1.0},
            {"kind": "link_down", "at": 1.0, "host": 1, "link": "storage", "duration": 1.0},
            {
                "kind": "link_slow",
                "at": 1.0,
                "host": 1,
                "link": "peer",
                "duration": 1.0,
                "fraction": 0.5,
            },
            {"kind": "device_slow", "at": 1.0, "host": 3, "duration": 1.0, "fraction": 0.5},
            {"kind": "array_rebuild", "at": 1.0, "duration": 1.0, "rebuild_rate": 5e7},
        )
    ]
    assert labels == [
        "vMotion host0->host1",
        "host2 fails",
        "host1 tier fails",
        "host0 peers lost",
        "host1 storage link down",
        "host1 peer link slow",
        "host3 tier slow",
        "array rebuild",
    ]


def test_a_small_loss_is_never_printed_as_none() -> None:
    """The events table's sizes: MiB to a tenth, but a non-zero size under 0.05 MiB in the unit
    that shows it (review 65: a failure that lost 16 KiB printed "0.0 MiB lost")."""
    from simcache.report.event_report import mib

    assert mib(16 * 2**10) == "16 KiB"
    assert mib(512) == "512 B"
    assert mib(0) == "0.0 MiB"
    assert mib(5 * 2**20) == "5.0 MiB"
    assert mib(0.05 * 2**20) == "0.1 MiB"  # from a twentieth of a MiB on, it shows in MiB


def test_a_run_without_records_reports_a_moved_vm() -> None:
    """Review 65: `simcache run vmotion --no-records` ended in a RecordsNotKept traceback, the
    vMotion's line asking the records for when half its remote hits came. Without records the line
    gives what the run's counters hold (the hits and the last one's time)."""
    from simcache.report.run_report import report

    result = simcache.simulate("vmotion", duration=12.0, keep_records=False)
    [line] = [line for line in report(result).splitlines() if line.startswith("  vmotion ")]
    assert "remote hits" in line and "the last at" in line and "half of them" not in line
