"""The what-if page (app.py), driven headless with Streamlit's AppTest, and its helpers.

Every view is run with a short simulated duration, and the numbers the page
shows are compared with the same run made through the public API.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import re
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from support.paths import ROOT

import simcache
from simcache.base.units import round_figure
from simcache.runs.sweep import sweep_summary
from simcache.runs.targets import plus_minus
from simcache.spec.dump import minimal_scenario_toml, scenario_slug
from simcache.workloads.ingest.imported import Imported
from simcache_app import uploads
from simcache_app.controls import parse_size_mix
from simcache_app.describe import (
    bottleneck_sentence,
    component_name,
    estimate_sentence,
    format_ms,
    headline,
    headline_lower_bounds,
    metric_label,
    peer_port_table,
    validity_warnings,
)
from simcache_app.knobs import knob
from simcache_app.layout import estimate_text
from simcache_app.parameters import compare_presets, parse_values, sweep_parameters
from simcache_app.run_length import first_duration
from simcache_app.scenario_files import (
    exported_scenario,
    library_scenarios,
    read_upload,
    result_zip,
    scenario_toml,
)
from simcache_app.uploads import ImportedUpload, expectations_table, import_upload, store_upload

APP = ROOT / "app.py"
SECONDS = 2.0
"""Simulated seconds of every run in these tests."""


@pytest.fixture(scope="module")
def default() -> simcache.Scenario:
    return simcache.load_scenario(library_scenarios()["default"])


def open_app(seconds: float = SECONDS) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception
    at.sidebar.number_input(key="default.run.duration").set_value(seconds).run()
    return at


def shown_metrics(at: AppTest) -> dict[str, str]:
    return {metric.label: metric.value for metric in at.metric}


def expected_metrics(
    scenario: simcache.Scenario, seed: int = 1, seconds: float = SECONDS
) -> dict[str, str]:
    result = simcache.simulate(scenario, seed=seed, duration=seconds)
    bounds = headline_lower_bounds(result)  # shown as ">= value": unfinished I/Os could lie past
    return {
        f"VM {label}": ("≥ " if label in bounds else "") + format_ms(value)
        for label, value in headline(result).items()
    }


# -- the page
# ---------------------------------------------------------------------------------------


def test_first_page_offers_the_default_scenario_and_waits_for_run(
    default: simcache.Scenario,
) -> None:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception
    assert at.sidebar.selectbox(key="scenario").value == "default"
    # the file's own 20 s: a cheap run (tests/app/test_page_review64.py has the costly ones)
    assert (
        at.sidebar.number_input(key="default.run.duration").value
        == first_duration(default)
        == default.run.duration
    )
    assert "Press **Run simulation**" in at.info[0].value
    assert not at.metric


def test_instant_estimate_is_shown_before_any_run_and_follows_the_controls(
    default: simcache.Scenario,
) -> None:
    """The analytic estimate (milliseconds) is on the page before Run is pressed, and is the
    public API's."""
    at = open_app()
    # in parts: its figures, its bottleneck on a line of its own, what it leaves out folded away
    # of the page's run (SECONDS), not the file's 20 s: its words say so
    before = estimate_text(estimate_sentence(simcache.estimate(default, duration=SECONDS), default))
    assert before.summary.startswith(
        f"Instant estimate of a {SECONDS:g} s run, not the file's 20 s"
    )
    assert before.summary in [c.value for c in at.caption]
    assert f"**Predicted bottleneck** — {before.bottleneck}" in [m.value for m in at.markdown]
    assert not at.metric  # nothing simulated yet
    at.sidebar.selectbox(key="default.cluster.peer_link").select("10GbE").run()
    changed = default.with_overrides({"cluster.peer_link": "10GbE"})
    after = estimate_text(estimate_sentence(simcache.estimate(changed, duration=SECONDS), changed))
    captions = [c.value for c in at.caption]
    assert after != before and after.summary in captions and before.summary not in captions


def test_single_run_shows_the_numbers_of_the_same_simulation(default: simcache.Scenario) -> None:
    at = open_app()
    at.button(key="Run simulation").click().run()
    assert not at.exception
    assert shown_metrics(at) == expected_metrics(default)
    table = at.dataframe[0].value
    assert {"group", "op", "p50 ms", "p99 ms", "p99.9 ms"} <= set(table.columns)
    assert set(table["group"]) == {group.name for group in default.groups} | {"all"}
    assert any(
        m.value.startswith("Bottleneck: ") and "% mean utilization" in m.value for m in at.markdown
    )
    assert any(
        m.value.startswith("Peer network (WB+1/WB+2 replicas): busiest port is the host")
        for m in at.markdown
    )
    assert len(at.get("plotly_chart")) == 4  # latency, breakdown, utilization, backlog


def test_a_stopped_run_shows_its_partial_result_marked_as_such(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run stopped early (here by the page's wall-clock limit, the token the Stop button
    cancels) shows the figures up to where it stopped, under a warning that says so, and is
    neither cached nor counted as done."""
    from simcache_app import runs

    monkeypatch.setattr(runs, "WALL_LIMIT_S", 0.3)
    monkeypatch.setattr(runs, "CONFIRM_IOS", float("inf"))  # no question first
    at = open_app(seconds=600.0)  # minutes of simulation: only the limit ends it
    at.button(key="Run simulation").click().run()
    assert not at.exception
    warning = at.warning[0].value
    match = re.fullmatch(
        r"\*\*Partial result\.\*\* Stopped at simulated time ([0-9.]+) s of 600 s \(deadline of "
        r"0\.3 s wall time passed\): "
        r"every figure below covers 0 to ([0-9.]+) s only\.",
        warning,
    )
    assert match is not None, warning
    assert match[1] == match[2] and 0 < float(match[1]) < 600
    assert len(at.metric) == 4  # the partial figures are shown
    simulated = [
        re.match(r"[0-9,]+ I/Os simulated over ([0-9.e+]+) s", c.value) for c in at.caption
    ]
    # the figures end where it stopped
    assert [float(m[1]) for m in simulated if m] == [pytest.approx(float(match[1]), abs=0.01)]
    at.run()  # the next rerun does not show the partial result again, nor start the run by itself
    assert not at.warning
    assert "Press **Run simulation**" in at.info[0].value


def test_a_run_expected_to_be_large_asks_first(
    default: simcache.Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past runs.CONFIRM_IOS expected I/Os (rate x duration x VMs) the page asks instead of
    starting; confirmed, it runs the same simulation as the API."""
    from simcache.sim.control import expected_work
    from simcache_app import runs

    ios = expected_work(default.with_duration(SECONDS)).ios
    monkeypatch.setattr(runs, "CONFIRM_IOS", ios / 2)
    at = open_app()
    at.button(key="Run simulation").click().run()
    assert not at.exception and not at.metric
    (question,) = [w.value for w in at.warning if "is large" in w.value]
    assert f"about {ios:,.0f} I/Os to simulate" in question
    start = next(b for b in at.button if b.label == "Start this run anyway")
    start.click().run()
    assert not at.exception
    assert shown_metrics(at) == expected_metrics(default)
    monkeypatch.setattr(runs, "CONFIRM_IOS", ios * 2)  # under the threshold: no question
    at.sidebar.number_input(key="default.run.seed").set_value(2).run()
    at.button(key="Run simulation").click().run()
    assert not any("is large" in w.value for w in at.warning) and shown_metrics(
        at
    ) == expected_metrics(default, seed=2)


def test_a_stopped_sweep_keeps_its_finished_points_marked_partial(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sweep of 30 runs of 15 s, in this process (450 simulated seconds, 800,000 I/Os, under the
    1,000,000 past which the page asks first), stopped by the page's wall-clock limit (the token its
    Stop button cancels): the warning counts the runs that finished, and the table and chart hold
    exactly those, seed for seed.

    The limit is set from one run's measured wall time, about ten runs' worth, so the sweep stops
    midway however fast the engine is. (Fixed limits broke twice as the engine got faster: with 1 s
    and then 6 s runs, all 30 finished before a 4 s limit. In a process pool the workers' start-up
    could take the whole limit on a loaded machine, so the sweep runs in this process.)"""
    from simcache_app import runs

    default = simcache.load_scenario("default")
    simcache.simulate(default, duration=1.0)  # the first run of a process pays its imports
    started = time.perf_counter()
    simcache.simulate(default, duration=15.0)
    one_run = time.perf_counter() - started
    limit = float(f"{max(10.0 * one_run, 1.0):.3g}")  # as the warning prints it (:g)
    monkeypatch.setattr(runs, "WALL_LIMIT_S", limit)
    monkeypatch.setattr(runs, "IN_PROCESS_SECONDS", math.inf)
    at = open_app(seconds=15.0)
    at.selectbox(key="default.sweep.parameter").select("Peer network link").run()
    at.text_input(key="default.sweep.values.Peer network link").input("1GbE, 10GbE")
    at.number_input(key="sweep.seeds").set_value(15).run()
    at.button(key="Run sweep").click().run()
    assert not at.exception
    match = re.match(
        rf"\*\*Partial sweep\.\*\* Stopped \(deadline of {limit:g} s wall time passed\) after "
        r"(\d+) of 30 simulations",
        at.warning[0].value,
    )
    assert match is not None, (limit, at.warning[0].value)
    finished = int(match[1])
    assert 0 < finished < 30, (limit, one_run)
    table = at.dataframe[-1].value
    assert table["seeds"].sum() == finished
    assert len(at.get("plotly_chart")) == 1


def test_a_run_no_page_polls_cancels_itself_and_its_thread_ends() -> None:
    """The lease: a job whose page stopped polling (closed, or moved on) is cancelled LEASE_S
    after the last poll, and its worker thread ends within a second of that with the partial
    result."""
    from simcache_app import runs

    job = runs.Job(runs._lease(0.5))
    scenario = simcache.load_scenario("default")
    started = time.monotonic()
    job.start(
        lambda job: simcache.simulate(
            scenario, duration=600.0, progress=job.advance, cancel=job.token
        )
    )
    job.thread.join(0.5 + 1.0)
    assert not job.thread.is_alive(), "the run went on with no page polling it"
    assert time.monotonic() - started < 1.5
    assert job.result.meta["stop_reason"] == "no page polled it for 0.5 s"
    assert 0 < job.result.meta["stopped_at_s"] < 600


def test_every_number_input_is_bounded_by_the_scenario_model() -> None:
    """The page's own number inputs and every slider have a finite lower and upper bound (a
    sidebar slider its scenario field's, ``ge``/``gt``/``le``/``lt`` in the schema, in the shown
    unit). A sidebar number input of a scenario field checks that range itself, with an error
    under the box (``controls._number``: a browser refuses an out-of-range number without telling
    the page, which would run with another), so its widget has no bounds of its own."""
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    sidebar_numbers = {w.key for w in at.number_input if w.key.startswith("default.")}
    assert "default.cluster.hosts" in sidebar_numbers
    for widget in [*at.number_input, *at.slider]:
        if widget.key in sidebar_numbers:
            assert widget.min is None and widget.max is None, widget.key
            continue
        assert widget.min is not None and widget.max is not None, widget.key
        assert math.isfinite(widget.min) and math.isfinite(widget.max), widget.key
        if widget.key.startswith("default."):
            path = re.sub(
                r"^groups\.[^.]+\.", "groups.{group}.", widget.key.removeprefix("default.")
            )
            lower, upper = knob(path).shown_range()
            assert (widget.min, widget.max) == pytest.approx(
                (lower if lower is not None else 0, upper if upper is not None else 100)
            ), path
    at.number_input(key="default.cluster.hosts").set_value(257).run()
    # ClusterSpec.hosts: ge=1, le=MAX_HOSTS
    assert any("outside the allowed range, 1 to 256" in e.value for e in at.error)


def test_changing_a_control_runs_the_changed_scenario(default: simcache.Scenario) -> None:
    at = open_app()
    at.sidebar.selectbox(key="default.cluster.peer_link").select("10GbE").run()
    assert any(
        "1 setting changed from the file: cluster.peer_link" in c.value for c in at.sidebar.caption
    )
    at.button(key="Run simulation").click().run()
    assert shown_metrics(at) == expected_metrics(
        default.with_overrides({"cluster.peer_link": "10GbE"})
    )


def test_peer_links_per_host_splits_the_peer_traffic_over_the_ports(
    default: simcache.Scenario,
) -> None:
    at = open_app()
    at.button(key="Run simulation").click().run()
    # each peer port's mean utilization, one port per host
    one = at.dataframe[1].value.set_index("host")
    assert list(one["port"]) == ["peer"] * default.cluster.hosts
    at.sidebar.number_input(key="default.cluster.peer_links").set_value(2).run()
    assert any(
        "1 setting changed from the file: cluster.peer_links" in c.value for c in at.sidebar.caption
    )
    at.button(key="Run simulation").click().run()
    assert not at.exception
    two_links = default.with_overrides({"cluster.peer_links": 2})
    assert shown_metrics(at) == expected_metrics(two_links)
    two = at.dataframe[1].value
    assert list(two["port"]) == ["peer0", "peer1"] * default.cluster.hosts
    assert two.equals(peer_port_table(simcache.simulate(two_links, seed=1, duration=SECONDS)))
    # Ring replicas go to port (d - 1) mod 2: WB+1 copies and db's first WB+2 copy (d = 1) on peer0,
    # db's second copy (d = 2) on peer1. Same writes, so per host the two ports add up to the one
    # port, up to the table's rounding: three figures rounded to 0.1 each.
    sending = two.groupby("host")["sending %"].sum()
    assert sending.to_numpy() == pytest.approx(one["sending %"].to_numpy(), abs=3 * 0.05 + 1e-9)
    assert (two.set_index(["host", "port"])["sending %"].xs("peer1", level="port") > 0).all()
    peer_line = next(m.value for m in at.markdown if m.value.startswith("Peer network"))
    assert f"{default.cluster.peer_link.profile} peer link 0 (" in peer_line


def test_workload_controls_become_overrides(default: simcache.Scenario) -> None:
    at = open_app()
    at.sidebar.slider(key="default.groups.db.workload.read_fraction").set_value(80)
    at.sidebar.text_input(key="default.groups.db.workload.sizes").input("4KiB: 1").run()
    at.sidebar.number_input(key="default.run.seed").set_value(3).run()
    at.button(key="Run simulation").click().run()
    edited = default.with_overrides(
        {"groups.db.workload.read_fraction": 0.2, "groups.db.workload.sizes": {"4KiB": 1.0}}
    )
    assert shown_metrics(at) == expected_metrics(edited, seed=3)


def test_returning_to_an_earlier_setting_shows_it_without_running_again(
    default: simcache.Scenario,
) -> None:
    at = open_app()
    at.button(key="Run simulation").click().run()
    first = shown_metrics(at)
    at.sidebar.selectbox(key="default.cluster.peer_link").select("10GbE").run()
    assert not at.metric  # a new setting waits for the run button
    at.sidebar.selectbox(key="default.cluster.peer_link").select(
        default.cluster.peer_link.profile
    ).run()
    assert shown_metrics(at) == first


def test_impossible_settings_show_the_loader_error_inline() -> None:
    at = open_app()
    # group db is WB+2: needs 2 peers
    at.sidebar.number_input(key="default.cluster.hosts").set_value(2).run()
    assert not at.exception
    assert "WB+2 needs 2 peer hosts" in at.error[0].value
    assert not at.tabs


def test_peer_ports_past_the_peers_show_the_scenarios_warning() -> None:
    # 4 hosts (3 peers) with 5 peer ports a host: valid, ports 3 and 4 carry only vMotions; the
    # page says so beside the settings, as `simcache run` prints it.
    at = open_app()
    at.sidebar.number_input(key="default.cluster.peer_links").set_value(5).run()
    assert not at.exception and not at.error
    said = [w.value for w in at.warning if w.value.startswith("cluster.peer_links: ")]
    assert len(said) == 1 and "5 peer ports per host but 3 peer hosts" in said[0]
    at.sidebar.number_input(key="default.cluster.peer_links").set_value(3).run()
    assert not [w.value for w in at.warning if w.value.startswith("cluster.peer_links: ")]


def test_an_rdma_array_behind_tcp_host_links_shows_the_scenarios_warning() -> None:
    # review 65e.11: "1GbE storage link per host, to the array's nvmeof-rdma-100GbE port" with no
    # word; the page says it beside the settings, and a storage link of the port's transport
    # silences it
    at = open_app()
    at.sidebar.selectbox(key="default.array").set_value("afa-24x-nvme").run()
    assert not at.exception and not at.error
    said = [w.value for w in at.warning if w.value.startswith("cluster.storage_link: ")]
    assert len(said) == 1
    assert "the hosts' storage link is 1GbE and the array's port nvmeof-rdma-100GbE" in said[0]
    at.sidebar.selectbox(key="default.cluster.storage_link").set_value("nvmeof-rdma-100GbE").run()
    assert not [w.value for w in at.warning if w.value.startswith("cluster.storage_link: ")]


def test_invalid_upload_shows_the_loader_error_not_a_traceback() -> None:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.file_uploader(key="upload").set_value(
        ("mine.toml", b"[cluster]\nhosts = 0\n", "application/toml")
    ).run()
    assert not at.exception
    assert "mine.toml: invalid scenario" in at.error[0].value
    assert "cluster.hosts" in at.error[0].value
    at.sidebar.file_uploader(key="upload").set_value(
        ("broken.toml", b"[cluster\n", "application/toml")
    ).run()
    assert (
        "broken.toml: invalid scenario" in at.error[0].value
        and "malformed TOML" in at.error[0].value
    )


def test_a_valid_upload_replaces_the_scenario(default: simcache.Scenario) -> None:
    mine = default.with_overrides(
        {"name": "mine", "description": "my three hosts", "cluster.hosts": 3}
    )
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.file_uploader(key="upload").set_value(
        ("mine.toml", scenario_toml(mine).encode(), "application/toml")
    ).run()
    assert not at.exception and not at.error
    assert "From the file: my three hosts" in [c.value for c in at.sidebar.caption]
    assert [n.value for n in at.sidebar.number_input if n.label == "Hosts"] == [3]


def sweep_peer_link(at: AppTest, source: str, seeds: int) -> pd.DataFrame:
    """The sweep view's table after sweeping the peer link over 1GbE and 10GbE, plotting
    all.write.mean_ms."""
    at.selectbox(key=f"{source}.sweep.parameter").select("Peer network link").run()
    at.text_input(key=f"{source}.sweep.values.Peer network link").input("1GbE, 10GbE")
    at.number_input(key="sweep.seeds").set_value(seeds)
    at.selectbox(key=f"{source}.sweep.metric").select("all.write.mean_ms").run()
    at.button(key="Run sweep").click().run()
    assert not at.exception and not at.error
    table: pd.DataFrame = at.dataframe[-1].value
    return table


def test_sweep_view_plots_the_mean_and_interval_over_seeds(default: simcache.Scenario) -> None:
    at = open_app(seconds=1.0)
    table = sweep_peer_link(at, "default", seeds=2)
    assert list(table["Peer network link"]) == ["1GbE", "10GbE"]
    assert list(table["seeds"]) == [2, 2]
    direct = simcache.sweep(
        default, {"cluster.peer_link": ["1GbE", "10GbE"]}, seeds=[1, 2], duration=1.0, workers=1
    )
    expected = direct.groupby("cluster.peer_link", sort=False)["all.write.mean_ms"].mean()
    # the page shows 4 significant digits
    assert table["mean (ms)"].tolist() == [round_figure(v, 4) for v in expected]
    assert (table["± 95% (ms)"] > 0).all()
    assert len(at.get("plotly_chart")) == 1


def test_sweep_view_rejects_values_that_are_not_numbers() -> None:
    at = open_app()
    at.selectbox(key="default.sweep.parameter").select("Hosts").run()
    at.text_input(key="default.sweep.values.Hosts").input("four, 8").run()
    assert "'four' is not a number" in at.error[0].value
    assert not at.exception


def test_compare_view_runs_each_variant(default: simcache.Scenario) -> None:
    at = open_app()
    chosen = ["Every group WB+0", "Every group WB+1 over 10GbE"]
    at.multiselect(key="default.compare.variants").set_value(chosen).run()
    at.number_input(key="compare.seeds").set_value(1).run()  # one seed: each figure is that run's
    at.button(key="Run comparison").click().run()
    assert not at.exception
    presets = compare_presets(default)
    for metric, name in zip(at.metric, chosen, strict=True):
        assert metric.label == name
        assert (
            metric.value == expected_metrics(default.with_overrides(presets[name]))["VM write p99"]
        )
    table = at.dataframe[0].value
    assert list(table["variant"]) == chosen
    assert {"db write p99 ms", "bottleneck"} <= set(table.columns)
    assert table["busiest peer link"][0] == "no replicas"
    assert " 10GbE peer link " in table["busiest peer link"][1]
    said = [m.value for m in at.markdown if m.value.startswith(f"{chosen[1]} vs {chosen[0]}: ")]
    assert (
        len(said) == 1
        and "with one seed: no interval, so no way to tell it from noise; run more seeds."
        in said[0]
    )


# -- targets and decisions
# ----------------------------------------------------------------------------

STEADY = "redundancy_multiplier_1gbe"
"""A library scenario whose 2 s runs are stable with enough writes for a p99 (3,293 > 1,000) and
no caveat."""


def open_with_targets(scenario: str, *targets: str, seconds: float = SECONDS) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.selectbox(key="scenario").select(scenario).run()
    at.sidebar.number_input(key=f"{scenario}.run.duration").set_value(seconds).run()
    for key, text in zip(("target.latency", "target.throughput"), targets, strict=False):
        at.sidebar.text_input(key=key).input(text).run()
    assert not at.exception
    return at


def verdict_lines(at: AppTest) -> dict[str, str]:
    """The page's verdict lines, ``{target: text}`` (``**Target T:** :colour[text]``)."""
    found = [
        re.fullmatch(r"\*\*Target (.+?):\*\* :(\w+)\[(.*)\]", m.value, re.DOTALL)
        for m in at.markdown
    ]
    return {m[1]: f"{m[2]}: {m[3]}" for m in found if m}


def test_a_run_meets_one_target_and_misses_another() -> None:
    """The sidebar's latency target (write p99 <= 5 ms) is met with 5 - p99 to spare, its
    throughput floor (write IOPS >= 100,000) missed by 100,000 - IOPS; the figures are those of
    the same run through the public API."""
    at = open_with_targets(STEADY, "write p99 <= 5ms", "write iops >= 100000")
    at.button(key="Run simulation").click().run()
    assert not at.exception
    result = simcache.simulate(
        simcache.load_scenario(library_scenarios()[STEADY]), seed=1, duration=SECONDS
    )
    row = result.summary.query("group == 'all' and op == 'write'").iloc[0]
    p99, iops = float(row["p99_ms"]), float(row["iops"])
    assert result.stable and row["count"] >= 1000
    assert verdict_lines(at) == {
        "write p99 <= 5 ms": (
            f"green: meets it: write p99 is {p99:.3g} ms, {5 - p99:.3g} ms under the limit"
        ),
        "write iops >= 100000": (
            f"red: misses by {100_000 - iops:,.0f} IOPS ({(100_000 - iops) / 100_000:.0%}): write "
            f"iops is {iops:,.0f} IOPS"
        ),
    }


def test_an_overloaded_run_has_no_verdict() -> None:
    """destager_fill fills its destage buffer within 2 s (backlog_full: no steady state): even a
    generous limit is unknown, and the page says why."""
    at = open_with_targets("destager_fill", "write p99 <= 1s")
    at.button(key="Run simulation").click().run()
    assert not at.exception
    assert any(w.value.startswith("**Unstable:**") for w in at.warning)
    (said,) = verdict_lines(at).values()
    assert said.startswith(
        "orange: unknown: the run is unstable (no steady state): its latency grows with the run's "
        "length;"
    )


def test_a_target_that_does_not_parse_is_said_in_the_sidebar() -> None:
    at = open_with_targets(STEADY, "write p97 <= 5ms", "db write iops >= 10")
    errors = [e.value for e in at.sidebar.error]
    assert errors[0].startswith(
        "Target 'write p97 <= 5ms' is not used: no latency figure 'p97'; use one of p50, p95, p99"
    )
    assert errors[1].startswith(
        "Target 'db write iops >= 10' is not used: no group 'db' in the scenario; groups: all, "
        "writers"
    )
    at.button(key="Run simulation").click().run()
    assert not at.exception and not verdict_lines(at)


def test_compare_over_seeds_shows_means_intervals_and_verdicts() -> None:
    """Three seeds per variant: each variant's write p99 is the seeds' mean ± t(0.975, 2) s /
    sqrt(3) (Student t), its verdict is over the three runs, and the difference from the first
    variant is taken seed by seed with its own interval; WB+1 over 1GbE is clearly slower than
    WB+0 (the replica's 1GbE send dominates its write time)."""
    at = open_with_targets(STEADY, "write p99 <= 5ms")
    chosen = ["Every group WB+0", "Every group WB+1 over 1GbE"]
    at.multiselect(key=f"{STEADY}.compare.variants").set_value(chosen).run()
    assert at.number_input(key="compare.seeds").value == 3  # several seeds by default
    at.button(key="Run comparison").click().run()
    assert not at.exception
    base = simcache.load_scenario(library_scenarios()[STEADY])
    presets = compare_presets(base)
    p99s = {
        name: [
            headline(
                simcache.simulate(base.with_overrides(presets[name]), seed=s, duration=SECONDS)
            )["write p99"]
            for s in (1, 2, 3)
        ]
        for name in chosen
    }
    t2 = 4.302653  # t(0.975, 2)
    shown = {m.label: m.value for m in at.metric if m.label in chosen}
    for name in chosen:
        values = pd.Series(p99s[name])
        half = t2 * values.std(ddof=1) / 3**0.5
        assert shown[name] == f"{values.mean():.2f} ± {half:.2f} ms"
    lines = verdict_lines(at)
    assert lines["write p99 <= 5 ms"].startswith("green: meets it: write p99 is ")
    assert "(mean of 3 seeds, 95% interval)" in lines["write p99 <= 5 ms"]
    differences = pd.Series(p99s[chosen[1]]) - pd.Series(p99s[chosen[0]])
    half = t2 * differences.std(ddof=1) / 3**0.5
    assert differences.mean() > half > 0
    said = [m.value for m in at.markdown if m.value.startswith(f"{chosen[1]} vs {chosen[0]}: ")]
    shown = plus_minus(differences.mean(), half, "ms", signed=True)
    interval = f"write p99 {shown} (95% interval over 3 seeds, paired by seed)"
    assert said == [f"{chosen[1]} vs {chosen[0]}: {interval}: {chosen[1]} is clearly slower."]
    table = at.dataframe[0].value
    assert list(table["seeds"]) == [3, 3] and list(table["write p99 ms"]) == [
        round(sum(p99s[n]) / 3, 3) for n in chosen
    ]


def test_difference_sentences() -> None:
    """Paired differences -0.1, +0.2, -0.1 ms: mean 0, s = 0.173, half-width t(0.975, 2) s /
    sqrt(3) = 4.303 x 0.173 / 1.732 = 0.430 ms: no clear difference. Two seeds (differences 1.0,
    1.1: 12.706 x 0.0707 / 1.414 = 0.64 ms) are said to be too few."""
    from simcache_app.verdicts import difference_sentence

    none = difference_sentence("B", "A", [0.9, 1.2, 0.9], [1.0, 1.0, 1.0])
    assert none == (
        "B vs A: write p99 +0.000 ± 0.430 ms (95% interval over 3 seeds, paired by seed): "
        "no clear difference, the difference is smaller than its interval."
    )
    few = difference_sentence("B", "A", [2.0, 2.1], [1.0, 1.0])
    assert few == (
        "B vs A: write p99 +1.05 ± 0.64 ms (95% interval over 2 seeds, paired by seed): B is "
        "clearly slower; "
        "2 seeds are too few for a stable interval."
    )


def test_a_sweep_marks_the_feasible_points_and_names_the_cheapest() -> None:
    """Peer link 1GbE, 10GbE, 25GbE over 3 seeds against write p99 <= 1 ms: a point passes when
    its whole interval is under 1 ms; the first passing link in the listed order is named, and
    the passing points are ringed on the chart."""
    at = open_with_targets(STEADY, "write p99 <= 1ms")
    links = ["1GbE", "10GbE", "25GbE"]
    at.selectbox(key=f"{STEADY}.sweep.parameter").select("Peer network link").run()
    at.text_input(key=f"{STEADY}.sweep.values.Peer network link").input(", ".join(links))
    at.selectbox(key=f"{STEADY}.sweep.metric").select("all.write.p99_ms").run()
    at.button(key="Run sweep").click().run()
    assert not at.exception
    base = simcache.load_scenario(library_scenarios()[STEADY])
    rows = simcache.sweep(
        base, {"cluster.peer_link": links}, seeds=[1, 2, 3], duration=SECONDS, workers=1
    )
    points = sweep_summary(rows, ["cluster.peer_link"])
    upper = points["all.write.p99_ms"] + points["all.write.p99_ms.ci95"]
    lower = points["all.write.p99_ms"] - points["all.write.p99_ms.ci95"]
    passing = [link for link, high in zip(links, upper, strict=True) if high < 1.0]
    assert passing and passing != links  # the sweep crosses the limit
    table = at.dataframe[-1].value
    means = points["all.write.p99_ms"]
    expected = [
        "meets" if high < 1.0 else f"misses by {mean - 1:.3g} ms" if low > 1.0 else "unknown"
        for high, low, mean in zip(upper, lower, means, strict=True)
    ]
    assert list(table["write p99 <= 1 ms"]) == expected
    for why, short in zip(table["write p99 <= 1 ms: why"], expected, strict=True):
        assert why.startswith({"meets": "meets it:", "unknown": "unknown:"}.get(short, short))
    (cheapest,) = [s.value for s in at.success]
    assert cheapest.startswith(
        f"Cheapest passing configuration: {passing[0]} ({len(passing)} of 3 points meet write p99 "
        "<= 1 ms; "
    )
    assert "cheapest means the first passing point in the order the values were listed" in cheapest
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    ringed = [trace for trace in spec["data"] if trace.get("name") == "meets write p99 <= 1 ms"]
    assert len(ringed) == 1 and ringed[0]["x"] == passing


def test_compare_view_needs_two_variants() -> None:
    at = open_app()
    at.multiselect(key="default.compare.variants").set_value(["Every group WB+0"]).run()
    assert any("Pick at least two variants" in w.value for w in at.warning)


# -- helpers
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(library_scenarios()))
def test_scenario_toml_reads_back_to_the_same_scenario(name: str) -> None:
    scenario = simcache.load_scenario(library_scenarios()[name])
    assert simcache.load_scenario(tomllib.loads(scenario_toml(scenario))) == scenario


def test_scenario_toml_escapes_strings(default: simcache.Scenario) -> None:
    odd = default.with_overrides({"description": 'quote " backslash \\ tab \t del \x7f é 🙂'})
    assert simcache.load_scenario(tomllib.loads(scenario_toml(odd))).description == odd.description


def _leaves(tables: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every value of a TOML document's tables (a dict's key, a list's index), tables
    not included."""
    if isinstance(tables, dict):
        return [leaf for key, value in tables.items() for leaf in _leaves(value, (*path, key))] or [
            path
        ]
    if isinstance(tables, list) and tables and all(isinstance(item, dict) for item in tables):
        return [leaf for index, item in enumerate(tables) for leaf in _leaves(item, (*path, index))]
    return [path]


def _without(tables: Any, path: tuple[Any, ...]) -> Any:
    copy = json.loads(json.dumps(tables))
    node = copy
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return copy


@pytest.mark.parametrize("name", list(library_scenarios()))
def test_minimal_scenario_toml_reads_back_to_the_same_scenario(name: str) -> None:
    scenario = simcache.load_scenario(library_scenarios()[name])
    text = minimal_scenario_toml(scenario)
    assert simcache.load_scenario(tomllib.loads(text)) == scenario
    # the expanded profiles and defaults are left out
    assert len(text) < len(scenario_toml(scenario))


def test_minimal_scenario_toml_holds_no_default_and_writes_human_units(
    default: simcache.Scenario,
) -> None:
    """Minimal: leaving out any one value the file holds changes the scenario it loads to (or
    makes it invalid), so no value merely repeats a default or a profile's figure. Quantities are
    written in units ("2GiB", "500ms")."""
    text = minimal_scenario_toml(default)
    tables = tomllib.loads(text)
    for leaf in _leaves(tables):
        if leaf[-1] in ("profile",) or leaf[:1] in (("variants",), ("expect",), ("check",)):
            # a profile's name stands for its values; checks and variants are kept as written
            continue
        # a field without a default: it must be written
        with contextlib.suppress(simcache.ScenarioError):
            assert simcache.load_scenario(_without(tables, leaf)) != default, (
                f"{leaf} repeats a default"
            )
    assert tables["cluster"]["destager"] == {"capacity": "2GiB"}
    assert tables["run"] == {"duration": "20s", "warmup": "4s", "sample_interval": "500ms"}
    # only the profile's name: the scenario changes none of its fields
    assert tables["cluster"]["tier"] == "sata-ssd-s3700-field"
    assert 'throughput = "4MB/s"' in text


def test_human_units_read_back_exactly() -> None:
    edited = simcache.load_scenario("default").with_overrides(
        {"cluster.tier.capacity": 3 * 2**30 + 1, "cluster.peer_link.latency": 0.0123}
    )
    tables = tomllib.loads(minimal_scenario_toml(edited))
    assert tables["cluster"]["tier"]["capacity"] == 3 * 2**30 + 1  # no exact unit: plain bytes
    assert tables["cluster"]["peer_link"]["latency"] == "12.3ms"
    assert simcache.load_scenario(tables) == edited


def test_exported_scenario_is_what_the_page_runs_named_from_the_scenario(
    default: simcache.Scenario,
) -> None:
    changed = {"cluster.peer_link": "10GbE", "groups.db.policy": "WB+1"}
    edited = default.with_overrides(changed).model_copy(update={"name": "Db on 10GbE!"})
    file_name, text = exported_scenario(edited, changed, duration=8.0, seed=3)
    assert file_name == "db-on-10gbe.toml"
    back = simcache.load_scenario(tomllib.loads(text))
    assert back.run.duration == 8.0 and back.run.seed == 3
    assert back.description == (
        f"{default.description} (changed in the what-if page: cluster.peer_link = 10GbE; "
        "groups.db.policy = WB+1)"
    )
    assert back.model_copy(update={"description": default.description}) == edited.with_duration(
        8.0
    ).with_seed(3)
    assert 'duration = "8s"' in text and "seed = 3" in text
    assert scenario_slug("---") == "scenario"


def test_read_upload_names_the_uploaded_file() -> None:
    with pytest.raises(simcache.ScenarioError) as error:
        read_upload("mine.toml", b"\xff\xfe")
    assert error.value.source == "mine.toml"
    assert "UTF-8" in str(error.value)


def test_result_zip_holds_every_table(default: simcache.Scenario) -> None:
    result = simcache.simulate(default, duration=1.0)
    names = set(zipfile.ZipFile(io.BytesIO(result_zip(result))).namelist())
    assert {
        "summary.csv",
        "records.parquet",
        "series.csv",
        "breakdown.parquet",
        "meta.json",
    } <= names


def test_parse_values_lists_and_ranges() -> None:
    assert parse_values("1, 2.5, 4", numeric=True) == [1, 2.5, 4]
    assert parse_values("2:8:2", numeric=True) == [2, 4, 6, 8]
    assert parse_values("1GbE, 10GbE", numeric=False) == ["1GbE", "10GbE"]
    for bad in ("", "8:2:1", "1:1000:1"):
        with pytest.raises(ValueError):
            parse_values(bad, numeric=True)


def test_parse_size_mix() -> None:
    assert parse_size_mix("8KiB: 0.7, 64KiB: 0.3", "p") == {"8KiB": 0.7, "64KiB": 0.3}
    assert parse_size_mix("4KiB", "p") == {"4KiB": 1.0}
    with pytest.raises(simcache.ScenarioError, match="not a number"):
        parse_size_mix("4KiB: lots", "p")


def test_sweep_parameters_apply_to_the_scenario(default: simcache.Scenario) -> None:
    for parameter in sweep_parameters(default):
        values = parse_values(parameter.default_values, parameter.numeric)
        for value in values[:2]:
            default.with_overrides({parameter.path: parameter.to_override(value)})


def test_sweep_parameters_are_kept_per_scenario_content(default: simcache.Scenario) -> None:
    # The page lists the sweep parameters at every rerun; they are worked out once per scenario
    # content (a copy of the same scenario finds them kept) and afresh for a changed one, whose
    # start values may differ (on 2 hosts WB+2 is no policy to sweep to).
    from simcache_app import parameters

    kept = sweep_parameters(default)
    assert kept == list(parameters._sweep_parameters(default))
    again = sweep_parameters(default.model_copy())
    assert all(a is b for a, b in zip(again, kept, strict=True))
    two_hosts = default.with_overrides({"cluster.hosts": 2, "groups.db.policy": "WB+1"})
    changed = sweep_parameters(two_hosts)
    assert changed == list(parameters._sweep_parameters(two_hosts))
    policies = {p.path: p.default_values for p in changed if p.path.endswith(".policy")}
    assert policies and all("WB+2" not in values for values in policies.values())
    assert any("WB+2" in p.default_values for p in kept if p.path.endswith(".policy"))


def test_component_names_in_words(default: simcache.Scenario) -> None:
    link, tier = default.cluster.peer_link.profile, default.cluster.tier
    assert component_name("host0.peer.tx", default) == f"the host0 {link} peer link (sending)"
    assert component_name("host2.peer1.rx", default) == f"the host2 {link} peer link 1 (receiving)"
    assert component_name("host3.tier", default) == f"the host3 {tier.profile} {tier.kind} tier"
    # as a reader sees it
    assert component_name("host3.tier", default) == "the host3 sata-ssd-s3700-field flash tier"
    assert component_name("array", default) == f"the array's {default.array.spindles} spindles"
    fast = simcache.simulate(default.with_overrides({"groups.db.workload.iops": 1}), duration=1.0)
    assert bottleneck_sentence(fast, default).startswith("Bottleneck: the ")


@pytest.mark.parametrize(
    ("metric", "label"),
    [
        ("all.write.p99_ms", "write p99 (ms), all groups"),
        ("db.read.mb_s", "read MB/s, group db"),
        ("web.write.iops", "write IOPS, group web"),
        ("all.read.count", "read count, all groups"),
        ("peer_wire_mb_s", "peer wire MB/s"),
        ("destage_backlog_bytes", "destage backlog (bytes)"),
        ("bottleneck_utilization", "bottleneck utilization"),
    ],
)
def test_sweep_metric_labels_name_units_in_words(metric: str, label: str) -> None:
    assert metric_label(metric) == label


# -- uploaded workload files
# --------------------------------------------------------------------------

FIO_JOB = b"""[global]
ioengine=libaio
direct=1
runtime=30
time_based
[db]
rw=randrw
rwmixread=70
bs=8k
iodepth=8
size=4g
"""


def csv_trace(ios: int = 150, gap_s: float = 0.01) -> bytes:
    """A plain CSV trace: every third I/O a read, 4 KiB each, over 50 blocks; ``ios`` I/Os
    ``gap_s`` apart."""
    rows = ["time,op,offset,size"] + [
        f"{i * gap_s:.3f},{'R' if i % 3 == 0 else 'W'},{(i * 7 % 50) * 4096},4096"
        for i in range(ios)
    ]
    return ("\n".join(rows) + "\n").encode()


@pytest.fixture
def trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The trace cache (and the uploads beside it) in tmp_path; AppTest runs the page in this
    process."""
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def page_with_upload(name: str, data: bytes) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.file_uploader(key="upload").set_value((name, data, "application/octet-stream")).run()
    assert not at.exception
    return at


def upload_workload(name: str, data: bytes, policy: str | None = None) -> tuple[AppTest, str]:
    """The page with ``data`` uploaded as ``name`` (and the imported groups' policy set); the
    widget-key prefix of the import."""
    at = page_with_upload(name, data)
    digest = hashlib.sha256(data).hexdigest()[:12]
    if policy is not None:
        at.sidebar.selectbox(key=f"import.{digest}.policy").select(policy).run()
    assert not at.exception
    chosen = at.sidebar.selectbox(key=f"import.{digest}.format").value
    return at, f"import-{digest}-{chosen}-default-{policy or 'WB+0'}"


def imported_scenario(
    trace_cache: Path, name: str, data: bytes, format_name: str, policy: str = "WB+0"
) -> simcache.Scenario:
    """The scenario the page builds from an upload, made here through the helpers (the stored
    copy is the same file)."""
    upload = ImportedUpload(
        import_upload(name, store_upload(name, data), format_name),
        str(library_scenarios()["default"]),
        policy,
    )
    return upload.scenario()


def test_an_uploaded_fio_job_becomes_groups_that_run(trace_cache: Path) -> None:
    at, source = upload_workload("job.fio", FIO_JOB)
    # guessed
    assert at.sidebar.selectbox(key=f"import.{source.split('-')[1]}.format").value == "fio-job"
    assert not at.error
    assert "Imported from job.fio (fio-job)" in [e.label for e in at.expander]
    facts, groups = at.table[0].value, at.table[1].value.reset_index()
    assert facts.loc["jobs", "value"] == "1"
    assert groups.to_dict("records") == [
        {
            "group": "db",
            "policy": "WB+0",
            "VMs": 1,
            "hosts": "0",
            "workload": (
                "closed loop, 1 worker x 8 outstanding, 70% reads, sizes 8KiB: 1, uniform over 4GiB"
            ),
        }
    ]
    at.sidebar.number_input(key=f"{source}.run.duration").set_value(SECONDS).run()
    at.button(key="Run simulation").click().run()
    assert not at.exception and not at.error
    assert shown_metrics(at) == expected_metrics(
        imported_scenario(trace_cache, "job.fio", FIO_JOB, "fio-job")
    )


def test_an_uploaded_trace_is_kept_and_replays_every_io(trace_cache: Path) -> None:
    data = csv_trace()
    at, source = upload_workload("vm1.csv", data)
    assert source.startswith("import-") and "-csv-" in source
    stored = trace_cache / "uploads" / f"{hashlib.sha256(data).hexdigest()}.csv"
    assert stored.read_bytes() == data  # replayed from here, not from the upload's temporary file
    assert at.table[0].value.loc["I/Os", "value"] == "150 (50 reads, 100 writes)"
    assert at.table[1].value["workload"].tolist() == ["csv trace, device disk, open replay"]
    scenario = imported_scenario(trace_cache, "vm1.csv", data, "csv")
    assert scenario.groups[0].workload.trace is not None and scenario.groups[
        0
    ].workload.trace.path == str(stored)
    # A trace has no synthetic knobs (write share, sizes, rate, working set, duty cycle): only its
    # replay speed.
    labels = (
        [w.label for w in at.sidebar.number_input]
        + [w.label for w in at.sidebar.slider]
        + [w.label for w in at.sidebar.text_input]
    )
    assert "Replay speed" in labels
    assert not {
        "Write %",
        "I/O size mix",
        "Working set per VM (GiB)",
        "Throughput per VM (MB/s)",
    } & set(labels)
    # The run lasts as long as the trace (1.49 s) and a second past its last I/O: every I/O is
    # replayed.
    assert at.sidebar.number_input(key=f"{source}.run.duration").value == pytest.approx(2.49)
    at.button(key="Run simulation").click().run()
    assert not at.exception and not at.error
    assert any(
        c.value.startswith("150 I/Os simulated over 2.49 s (seed 1) in ") for c in at.caption
    )
    assert len(simcache.simulate(scenario, seed=1).records) == 150


def test_import_options_reach_the_importer(trace_cache: Path) -> None:
    """A CSV trace with its own column names and times in milliseconds: the options name them
    (one per ';')."""
    data = b"ts,kind,lba,len\n0,W,0,4096\n250,R,8,4096\n1500,W,16,8192\n"
    at = page_with_upload("ms.csv", data)
    assert "This file cannot be imported" in at.error[0].value  # no time column without the options
    digest = hashlib.sha256(data).hexdigest()[:12]
    options = "time_column=ts; op_column=kind; lba_column=lba; size_column=len; time_unit=ms"
    at.sidebar.text_input(key=f"import.{digest}.options").input(options).run()
    # "ts, kind" do not look like a trace's header
    at.sidebar.selectbox(key=f"import.{digest}.format").select("csv").run()
    assert not at.exception and not at.error
    assert at.table[0].value.loc["length", "value"] == "1.5 s"
    assert at.table[0].value.loc["I/Os", "value"] == "3 (1 reads, 2 writes)"
    at.sidebar.text_input(key=f"import.{digest}.options").input("time_unit").run()
    assert "give an import option as KEY=VALUE" in at.error[0].value


def test_a_malformed_upload_names_the_file_line_and_field(trace_cache: Path) -> None:
    data = b"time,op,offset,size\n0.0,W,0,4096\n0.5,X,0,4096\n"
    at = page_with_upload("bad.csv", data)
    assert "This file cannot be imported" in at.error[0].value
    assert (
        "bad.csv: cannot import" in at.error[0].value
        and "line 3, op: 'X' is not allowed" in at.error[0].value
    )
    assert not at.tabs


def test_a_file_whose_format_cannot_be_guessed_asks_for_it(trace_cache: Path) -> None:
    data = b"hello\nworld\n"
    at = page_with_upload("notes.txt", data)
    assert "This file cannot be imported" in at.error[0].value
    assert (
        "notes.txt: cannot import" in at.error[0].value
        and "format: cannot tell the format" in at.error[0].value
    )
    at.sidebar.selectbox(key=f"import.{hashlib.sha256(data).hexdigest()[:12]}.format").select(
        "csv"
    ).run()
    assert not at.exception
    assert "notes.txt: cannot import" in at.error[0].value and "line 1" in at.error[0].value


def test_a_sweep_over_the_peer_link_replays_the_uploaded_trace(trace_cache: Path) -> None:
    data = csv_trace()
    at, source = upload_workload("vm1.csv", data, policy="WB+1")
    at.sidebar.number_input(key=f"{source}.run.duration").set_value(2.0).run()
    table = sweep_peer_link(at, source, seeds=1)
    assert list(table["Peer network link"]) == ["1GbE", "10GbE"]
    scenario = imported_scenario(trace_cache, "vm1.csv", data, "csv", policy="WB+1")
    direct = simcache.sweep(
        scenario, {"cluster.peer_link": ["1GbE", "10GbE"]}, seeds=[1], duration=2.0, workers=1
    )
    assert table["mean (ms)"].tolist() == [round_figure(v, 4) for v in direct["all.write.mean_ms"]]
    assert table["mean (ms)"][0] > table["mean (ms)"][1]  # the replica's send is faster over 10GbE


def test_a_measurement_shows_what_it_measured(trace_cache: Path) -> None:
    zero = {"io_bytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "total_ios": 0}
    lat = {"min": 1000, "max": 4_000_000, "mean": 1_330_000, "stddev": 10.0, "N": 1000}
    write = {
        "io_bytes": 491_520_000,
        "bw_bytes": 8_192_000,
        "bw": 8000,
        "iops": 2000.0,
        "runtime": 60_000,
        "total_ios": 120_000,
    }
    job = {
        "jobname": "logs",
        "groupid": 0,
        "error": 0,
        "job options": {
            "rw": "randwrite",
            "bs": "4k",
            "iodepth": "4",
            "ioengine": "libaio",
            "size": "1g",
            "runtime": "60",
        },
        "read": zero,
        "write": write | {"clat_ns": lat, "lat_ns": lat},
        "trim": zero,
    }
    data = json.dumps({"fio version": "fio-3.35", "global options": {}, "jobs": [job]}).encode()
    at, _ = upload_workload("run.json", data)
    assert not at.error
    shown = at.dataframe[0].value
    expected = expectations_table(
        import_upload("run.json", store_upload("run.json", data), "fio-json")
    )
    assert shown.equals(expected)
    iops = shown[shown["metric"] == "iops"].iloc[0]
    assert (iops["group"], iops["op"], iops["check"].split(" ±")[0]) == ("logs", "write", "≈ 2000")


def test_expectations_table_shows_each_kind_of_bound() -> None:
    checks = [
        {
            "name": "a",
            "group": "db",
            "op": "write",
            "metric": "mean_ms",
            "approx": 1.33,
            "rel": 0.25,
            "field_figure": "1.33 ms",
        },
        {
            "name": "b",
            "group": "db",
            "op": "read",
            "metric": "p99_ms",
            "at_least": 1.0,
            "at_most": 5.0,
            "field_figure": "1..5 ms",
        },
        {
            "name": "c",
            "group": "db",
            "op": "read",
            "metric": "p50_ms",
            "at_most": 0.1,
            "field_figure": "under 0.1 ms",
        },
        {
            "name": "d",
            "group": "db",
            "op": "read",
            "metric": "p999_ms",
            "at_least": 50.0,
            "field_figure": "over 50 ms",
        },
    ]
    table = expectations_table(Imported(Path("x.json"), "fio-json", [], expect=checks))
    assert table["check"].tolist() == ["≈ 1.33 ± 25%", "1 to 5", "≤ 0.1", "≥ 50"]
    assert table["measured"].tolist() == ["1.33 ms", "1..5 ms", "under 0.1 ms", "over 50 ms"]


def test_an_upload_over_the_limit_is_refused_with_the_limit(
    monkeypatch: pytest.MonkeyPatch, trace_cache: Path
) -> None:
    monkeypatch.setattr(uploads, "UPLOAD_LIMIT_BYTES", 1024)
    with pytest.raises(simcache.ScenarioError) as error:
        store_upload("big.csv", b"x" * 1025)
    assert "big.csv: cannot import" in str(error.value)
    assert "1,025 bytes; the page takes workload files up to 1KiB (1,024 bytes)" in str(error.value)
    assert not (trace_cache / "uploads").exists()


def test_trace_groups_sweep_their_replay_speed_not_synthetic_fields(trace_cache: Path) -> None:
    scenario = imported_scenario(trace_cache, "vm1.csv", csv_trace(), "csv", policy="WB+1")
    labels = [p.label for p in sweep_parameters(scenario)]
    assert "disk: Replay speed" in labels and "disk: Write policy" in labels
    assert not [
        label
        for label in labels
        if label.startswith("disk: ") and label not in ("disk: Replay speed", "disk: Write policy")
    ]


def test_the_imported_scenario_downloads_as_toml_that_loads_again(trace_cache: Path) -> None:
    data = csv_trace()
    upload = ImportedUpload(
        import_upload("vm1.csv", store_upload("vm1.csv", data), "csv"),
        str(library_scenarios()["default"]),
        "WB+1",
    )
    text = upload.toml()
    assert text.startswith("# Imported from vm1.csv (csv) by simcache import.")
    assert "# I/Os: 150 (50 reads, 100 writes)" in text
    assert simcache.load_scenario(tomllib.loads(text)) == upload.scenario()


def test_the_report_download_is_the_html_report_of_the_run_shown(
    default: simcache.Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "Download report (HTML)" button gives simcache.report's page for the run on screen
    (its data is made on click, so the callable the page registers is called here); only the wall
    time in its manifest may differ."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    from simcache.report import report_html

    made: dict[str, object] = {}
    register = MediaFileManager.add_deferred

    def keep(self: MediaFileManager, data: object, *args: object, **kwargs: object) -> str:
        made[str(kwargs.get("file_name"))] = data
        return register(self, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    at = open_app()
    at.button(key="Run simulation").click().run()
    assert not at.exception
    assert "Download report (HTML)" in [button.label for button in at.get("download_button")]
    page = made["default-seed1-report.html"]
    assert callable(page)
    expected = report_html(simcache.simulate(default, seed=1, duration=SECONDS))

    def without_wall_time(html: str) -> str:
        return re.sub(r"<td>wall time</td><td>[0-9.]+ s</td>", "", html)

    assert without_wall_time(page()) == without_wall_time(expected)
    assert "<td>wall time</td>" in expected


def test_the_apps_own_streamlit_config_turns_off_the_file_watcher_and_usage_stats() -> None:
    """`streamlit run app.py` from the repository top reads .streamlit/config.toml: no file
    watcher (the default watches the virtual environment's modules and burns a core on inotify
    overflow), no usage statistics."""
    config = tomllib.loads((APP.parent / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"
    assert config["browser"]["gatherUsageStats"] is False


def test_an_overloaded_runs_headlines_say_at_least_and_its_tail_counts_completed_writes(
    default: simcache.Scenario,
) -> None:
    """84% of writes unfinished: the tiles showed a plain p99 where the table marked it a lower
    bound, and the tail sentence gave another p99 (of completed writes) in 6.1e+03 notation a few
    lines below (review 63, item 2)."""
    scenario = default.with_overrides(
        {"groups.build.workload.throughput": "150MB/s", "groups.build.workload.duty_cycle": None}
    )
    result = simcache.simulate(scenario, seed=1, duration=6.0)
    bounds = headline_lower_bounds(result)
    assert "write p99" in bounds
    summary = result.summary.set_index(["group", "op"])
    assert "p99_ms" in summary.loc[("all", "write"), "lower_bounds"].split()
    sentence = bottleneck_sentence(result, scenario)
    unfinished = int((result.measured_unfinished["op"] == "write").sum())
    assert "the slowest 1% of completed writes (their own p99, " in sentence
    assert f"{unfinished:,} writes still unfinished at the end are in no share" in sentence
    assert "e+0" not in sentence
    # the saturated parts in one warning, not one each of the same form (review 63, item 8)
    saturated = [w.component for w in result.warnings if w.kind == "overload"]
    assert len(saturated) > 1
    shown = validity_warnings(result)
    grouped = [w for w in shown if "saturated while work piles up" in w]
    assert len(grouped) == 1 and all(name in grouped[0] for name in saturated)
    assert not [w for w in shown if "is busy 100% of the window" in w]
    # the cut warm-up is said by the page's line on the run's length, not as a warning
    said = [w for w in result.warnings if w.kind != "warmup_cut"]
    assert len(shown) == len(said) - len(saturated) + 1


def test_a_sweep_point_past_the_run_limits_is_said_and_the_others_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review 65e: one point past the run limits (a 2026 load on 1GbE) ended the page's sweep
    with "A swept value does not make a valid scenario" and no figure for the others. Here the
    limit is 10,000 I/Os a run: 4 hosts run 1 s (about 1,800 I/Os), 64 hosts (about 28,000) is
    refused, and the page shows the first and says why the second did not run."""
    monkeypatch.setenv("SIMCACHE_MAX_IOS", "10000")
    at = open_app(seconds=1.0)
    at.selectbox(key="default.sweep.parameter").select("Hosts").run()
    at.text_input(key="default.sweep.values.Hosts").input("4, 64")
    at.number_input(key="sweep.seeds").set_value(1)
    at.selectbox(key="default.sweep.metric").select("all.write.mean_ms").run()
    at.button(key="Run sweep").click().run()
    assert not at.exception and not at.error
    said = " ".join(w.value for w in at.warning)
    assert "**64**: this run is expected to take" in said and "(limit 10,000)" in said
    table: pd.DataFrame = at.dataframe[-1].value
    assert table["mean (ms)"].notna().tolist() == [True, False]
