"""The what-if page after review 64: it runs the file's own run when that is cheap and says when it
runs another, shows each scheduled event's impact, marks lower bounds in the percentile table, says
a warning repeated for every host once, lays the instant estimate out in parts, finds the 2014
field observations in the Scenario list, and points a scenario with variants at Compare.

The page is driven headless with Streamlit's AppTest; each figure it shows is compared with the
same run through the public API.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from support.paths import ROOT

import simcache
from simcache.base.units import round_figure
from simcache.report.cells import cell
from simcache.report.event_report import impact_lines
from simcache.results.event_impact import event_impacts
from simcache.spec.dump import scenario_toml
from simcache_app import run_length
from simcache_app.describe import TABLE_DIGITS, estimate_sentence
from simcache_app.layout import estimate_text, merged_by_host
from simcache_app.run_length import EVENT_TAIL_S, FIRST_RUN_IOS, first_duration
from simcache_app.runs import expected_ios
from simcache_app.scenario_files import library_scenarios, read_upload

APP = ROOT / "app.py"


def load(name: str) -> simcache.Scenario:
    return simcache.load_scenario(library_scenarios()[name])


def open_page(scenario: str = "default", seconds: float | None = None) -> AppTest:
    """The page on a library scenario, at its first duration or ``seconds``."""
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    if scenario != "default":
        at.sidebar.selectbox(key="scenario").select(scenario).run()
    if seconds is not None:
        at.sidebar.number_input(key=f"{scenario}.run.duration").set_value(seconds).run()
    assert not at.exception
    return at


def run(at: AppTest) -> AppTest:
    at.button(key="Run simulation").click().run()
    assert not at.exception
    return at


# -- the first duration (F6, F4)
# ----------------------------------------------------------------------------


def test_a_cheap_file_runs_its_own_duration_and_warm_up() -> None:
    """The default's 20 s are some 43,000 I/Os, far under FIRST_RUN_IOS: the page runs the
    file's 20 s with its 4 s warm-up (it ran 14 s with the warm-up cut to 1.4 s, and then warned
    of a warm-up it had cut itself), so its figures are those of ``simcache run default``."""
    default = load("default")
    assert expected_ios([default]) < FIRST_RUN_IOS
    at = open_page()
    assert at.sidebar.number_input(key="default.run.duration").value == 20
    run(at)
    assert not at.info  # the file's own run: nothing to say about its length
    result = simcache.simulate(default, seed=1)
    assert result.meta["warmup_s"] == 4
    write_p99 = float(result.summary.query("group == 'all' and op == 'write'")["p99_ms"].iloc[0])
    assert {m.label: m.value for m in at.metric}["VM write p99"] == f"{write_p99:.3g} ms"
    assert not any("warm-up (1.4 s)" in w.value for w in at.warning)


def test_every_library_scenario_starts_at_its_files_duration_within_the_pages_range() -> None:
    """None of the library's runs is costly, so each starts as its file says; the page's shortest
    run (1 s) lifts the device checks of a fraction of a second."""
    for name, path in library_scenarios().items():
        scenario = simcache.load_scenario(path)
        assert first_duration(scenario, 1.0, 600.0) == max(scenario.run.duration, 1.0), name


@pytest.mark.parametrize(
    ("confirm_share", "expected"),
    [
        (1.0, 20.0),  # the vMotion (4 GiB at 125 MB/s: 44 s) ends past the file's 20 s: all of it
        (0.8, 10 + EVENT_TAIL_S),  # 20 s would ask first; 4 s past the vMotion's start does not
        (0.5, None),  # neither: about FIRST_RUN_IOS I/Os' worth
    ],
)
def test_a_costly_file_starts_shorter_covering_its_events_when_that_runs_without_asking(
    monkeypatch: pytest.MonkeyPatch, confirm_share: float, expected: float | None
) -> None:
    """The default made costly: its 20 s at four times FIRST_RUN_IOS. The page prefers a run
    that covers the vMotion's end, then its start, then one of about FIRST_RUN_IOS I/Os (5 s, at
    least the 9 samples of 0.5 s the growth test needs after a warm-up of a tenth)."""
    default = load("default")
    ios = expected_ios([default])
    monkeypatch.setattr(run_length, "FIRST_RUN_IOS", ios / 4)
    monkeypatch.setattr(run_length, "CONFIRM_IOS", ios * confirm_share)
    start = first_duration(default)
    if expected is not None:
        assert start == expected
        return
    assert start == 5.0  # a quarter of the 20 s (fewer I/Os: the build group is off from 4 s)
    assert expected_ios([default.with_duration(start)]) <= ios / 4


def test_a_costly_file_runs_past_the_end_of_an_outage(monkeypatch: pytest.MonkeyPatch) -> None:
    """A storage link down from 3 s for 2 s ends at 5 s: the first run goes on EVENT_TAIL_S
    past it, 9 s of the file's 20 s."""
    scenario = load("default").with_overrides(
        {
            "events": [
                {"kind": "link_down", "at": 3.0, "host": 0, "link": "storage", "duration": 2.0}
            ]
        }
    )
    ios = expected_ios([scenario])
    monkeypatch.setattr(run_length, "FIRST_RUN_IOS", ios / 4)
    monkeypatch.setattr(run_length, "CONFIRM_IOS", ios)
    assert first_duration(scenario) == 3 + 2 + EVENT_TAIL_S


def test_a_run_other_than_the_files_says_so_beside_the_figures() -> None:
    """Set to 14 s the page says what the CLI notes: the run's length against the file's and the
    warm-up it cut (4 s to a tenth of 14 s); at 60 s the length alone (a tenth is past the file's
    warm-up); the file's own 20 s need no note (test_a_cheap_file_runs_its_own_duration...)."""
    at = run(open_page(seconds=14.0))
    assert [i.value for i in at.info] == [
        "Ran 14 s of the file's 20 s; warm-up cut from 4 s to 1.4 s, a tenth of the run. Set "
        "**Simulated seconds** to 20 for the file's own figures (those of `simcache run`)."
    ]
    at.sidebar.number_input(key="default.run.duration").set_value(60.0).run()
    run(at)
    assert [i.value for i in at.info] == [
        "Ran 60 s, the file 20 s. Set **Simulated seconds** to 20 for the file's own figures "
        "(those of `simcache run`)."
    ]


# -- scheduled events (F4)
# -------------------------------------------------------------------------------------


def test_the_events_table_is_the_clis_before_during_after_of_the_same_run() -> None:
    """redundancy_multiplier_1gbe at its file's 12 s: the vMotion of 5.000-11.056 s raises the
    write p99 from 1.2 to 3.8 ms and back, as ``simcache run`` prints it; the page's rows are
    event_impacts' figures of the same run, and its caption the CLI's recovery line."""
    at = run(open_page("redundancy_multiplier_1gbe"))
    assert at.sidebar.number_input(key="redundancy_multiplier_1gbe.run.duration").value == 12
    (table,) = [d.value for d in at.dataframe if "phase" in d.value.columns]
    result = simcache.simulate(load("redundancy_multiplier_1gbe"), seed=1)
    (impact,) = event_impacts(result)
    assert list(table["phase"]) == ["before", "during", "after"]
    assert set(table["event"]) == {impact.what} == {"vMotion host0->host1"}
    assert "read p50 ms" not in table.columns  # the scenario has no reads
    for row in table.to_dict("records"):
        window = impact.windows[row["phase"]]
        assert (row["from s"], row["to s"]) == (round(window[0], 3), round(window[1], 3))
        for figure in ("write_p50_ms", "write_p99_ms"):
            shown = row[figure.replace("_", " ")]
            assert shown == round_figure(impact.latency[row["phase"]][figure], TABLE_DIGITS)
    p99 = table.set_index("phase")["write p99 ms"]
    assert p99["during"] > 2 * p99["before"] and p99["after"] < p99["during"] / 2
    recovery = impact_lines(impact)[1].strip()
    assert f"- vMotion host0->host1 5.000-11.056 s: {recovery}" in [c.value for c in at.caption]


def test_an_event_still_under_way_has_no_after_row() -> None:
    """The default's vMotion (10 s on, 44 s to copy on 1GbE) is under way when the 20 s end:
    before and during only, and the caption says the event had not ended."""
    at = run(open_page())
    (table,) = [d.value for d in at.dataframe if "phase" in d.value.columns]
    assert list(table["phase"]) == ["before", "during"]
    assert any(
        c.value.startswith("- vMotion host0->host1 10.000-20.000 s: ")
        and "the event had not ended by the end of the run" in c.value
        for c in at.caption
    )


# -- lower bounds in the percentile table (F8)
# -------------------------------------------------------------------------


def test_the_percentile_table_marks_each_lower_bound_and_names_no_fields() -> None:
    """The default's 20 s leave reads unfinished: each figure its row's ``lower_bounds`` names is
    "≥ " and the figure as the CLI prints it (the CLI: ">=256.3"), the other figures of such a
    column as the CLI prints them too, the other columns numbers; no column of raw field names."""
    at = run(open_page())
    table = next(d.value for d in at.dataframe if "p99.9 ms" in d.value.columns)
    assert "lower bounds" not in table.columns and "lower_bounds" not in table.columns
    summary = simcache.simulate(load("default"), seed=1).summary
    summary = summary[summary["count"] > 0].reset_index(drop=True)
    columns = {"p999_ms": "p99.9 ms", "mean_ms": "mean ms", "max_ms": "max ms", "p99_ms": "p99 ms"}
    marked = 0
    for row, shown_row in zip(summary.to_dict("records"), table.to_dict("records"), strict=True):
        bounds = str(row["lower_bounds"]).split()
        for name, label in columns.items():
            shown = shown_row[label]
            figure = round_figure(float(row[name]), TABLE_DIGITS)
            if name in bounds:
                marked += 1
                assert shown == f"≥ {cell(figure)}", (row["group"], row["op"], name)
            elif isinstance(shown, str):
                assert shown == cell(figure)
            else:
                assert shown == figure
    assert marked > 0
    assert pd.api.types.is_float_dtype(table["p50 ms"])  # no bound there: numbers that sort
    assert any(c.value.startswith("≥: at least this") for c in at.caption)


# -- warnings said once for every host (F9)
# ----------------------------------------------------------------------------


def test_six_hosts_one_short_run_box_for_the_buffers_fill_time() -> None:
    """6 hosts for 2 s: six "ends before hostN's destage buffer could fill" warnings of the same
    figures were six yellow boxes; now one for the six (said so by the page, or already by the
    run's warnings)."""
    at = open_page(seconds=2.0)
    at.sidebar.number_input(key="default.cluster.hosts").set_value(6).run()
    run(at)
    fills = [w.value for w in at.warning if "could fill" in w.value]
    assert len(fills) == 1
    assert fills[0].startswith("**Short run:** ")
    assert "host5" in fills[0] or "hosts 0-5" in fills[0]


def test_merged_by_host_keeps_what_differs_and_gives_ranges() -> None:
    texts = [
        "**Short run:** the run (8 s) ends before host0's buffer could fill (102 s from empty)",
        "**Unstable:** array is busy",
        "**Short run:** the run (8 s) ends before host1's buffer could fill (98 s from empty)",
        "vMotion host0->host1 is slow",
        "**Short run:** the run (8 s) ends before host3's buffer could fill (1,002 s from empty)",
        "host2.tier is past its clean-pool cliff",
    ]
    assert merged_by_host(texts) == [
        "**Short run:** hosts 0-1, 3: the run (8 s) ends before each host's buffer could fill "
        "(98 to 1,002 s from empty)",
        "**Unstable:** array is busy",
        "vMotion host0->host1 is slow",  # two hosts: kept as it is
        "host2.tier is past its clean-pool cliff",  # alone of its kind: kept as it is
    ]
    tiers = merged_by_host(["host0.tier is past its cliff", "host1.tier is past its cliff"])
    assert tiers == ["hosts 0-1: each host's tier is past its cliff"]


# -- the instant estimate (F16, F9)
# ----------------------------------------------------------------------------------


OVERLOADED = """
name = "overloaded8"
[run]
duration = "10s"
[cluster]
hosts = 8
tier = "nvme-pm9a3"
peer_link = "25GbE"
storage_link = "25GbE"
[array]
profile = "array-24x15k"
[[groups]]
name = "db"
policy = "WB+1"
vms_per_host = 10
[groups.workload]
mode = "open"
iops = 100000
read_fraction = 0.5
sizes = "8KiB"
working_set = "100MiB"
"""


def test_the_estimate_is_laid_out_in_parts_with_overloads_said_once_for_all_hosts() -> None:
    """8 hosts overloaded alike: the estimate's sentence held 48 Overload sentences, 6 kinds for
    each host; the page says each kind once for hosts 0-7, the bottleneck on its own line, what
    the estimate leaves out in an expander."""
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.file_uploader(key="upload").set_value(
        ("overloaded8.toml", OVERLOADED.encode(), "application/toml")
    ).run()
    assert not at.exception and not at.error
    scenario = read_upload("overloaded8.toml", OVERLOADED.encode())
    # of the page's first run, two sample intervals (80 million I/Os a second: the page will ask)
    seconds = first_duration(scenario, 1.0, 600.0)
    assert seconds == 2 * scenario.run.sample_interval
    estimate = simcache.estimate(scenario, duration=seconds)
    text = estimate_text(estimate_sentence(estimate, scenario))
    assert len(text.overloads) == 48
    captions = [c.value for c in at.caption]
    assert text.summary in captions
    assert f"**Predicted bottleneck** — {text.bottleneck}" in [m.value for m in at.markdown]
    (overloads,) = [c for c in captions if c.startswith("- **Overload:** ")]
    lines = overloads.split("\n")
    assert len(lines) == 6
    assert all(line.startswith("- **Overload:** hosts 0-7: ") for line in lines)
    (left_out,) = [e for e in at.expander if e.label.startswith("Not in the estimate")]
    assert left_out.label == f"Not in the estimate ({len(text.left_out)})"
    assert [c.value for c in left_out.caption] == ["\n".join(f"- {n}" for n in text.left_out)]


def test_estimate_text_splits_the_sentence_and_keeps_a_sentence_without_its_markers() -> None:
    sentence = (
        "Instant estimate (queueing model, no simulation): writes 1 ms mean (db 1 ms); bottleneck "
        "the array's 14 spindles, at 75% mean utilization. Overload: host0.tier offered 2x. "
        "Not in the estimate: reads wait. Not in the estimate: stalls."
    )
    text = estimate_text(sentence)
    assert text.summary == (
        "Instant estimate (queueing model, no simulation): writes 1 ms mean (db 1 ms)."
    )
    assert text.bottleneck == "the array's 14 spindles, at 75% mean utilization."
    assert text.overloads == ["host0.tier offered 2x."]
    assert text.left_out == ["reads wait.", "stalls."]
    plain = estimate_text("Instant estimate: no writes")
    assert (plain.summary, plain.bottleneck, plain.overloads, plain.left_out) == (
        "Instant estimate: no writes",
        "",
        [],
        [],
    )


# -- the Scenario list and variants (F13, F14)
# -------------------------------------------------------------------------


def test_the_scenario_list_shows_the_field_observations_first_with_their_descriptions() -> None:
    """The default first, then the 2014 field observations by number, each option its name, what
    it is and its description; the values stay the file names, so picking one works as before."""
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    box = at.sidebar.selectbox(key="scenario")
    options = box.options
    assert len(options) == len(library_scenarios())
    assert options[0].startswith("default: 4 hosts x 6 VMs")
    field = [o for o in options if "(2014 field observation " in o]
    assert options[1 : 1 + len(field)] == field and len(field) >= 8
    numbers = [int(re.search(r"observation (\d+)\)", o)[1]) for o in field]  # type: ignore[index]
    assert numbers == sorted(numbers)
    large = load("large_writes_flash")
    assert f"large_writes_flash (2014 field observation 8): {large.description}" in field
    assert options[-1].split(" ")[0].startswith("validate_")
    box.select("large_writes_flash").run()
    assert not at.exception
    assert box.value == "large_writes_flash"
    assert at.sidebar.number_input(key="large_writes_flash.run.duration").value == 8


def test_a_scenario_with_variants_points_at_compare() -> None:
    """interconnect_comparison makes its point in its 8 variants: the Single run tab says so and
    where they run; a scenario without variants says nothing of them."""
    at = open_page("interconnect_comparison")
    hints = [m.value for m in at.markdown if m.value.startswith("**This file defines")]
    assert hints == [
        "**This file defines 8 variants to compare with it** (wb0_256k, gbe_256k, wb0_32k, ...): "
        "the **Compare variants** tab runs them side by side (choose *Variant from file: ...*); "
        "this tab runs the scenario alone."
    ]
    at.sidebar.selectbox(key="scenario").select("device_slow").run()
    assert not [m.value for m in at.markdown if m.value.startswith("**This file defines")]


def test_an_uploaded_scenario_runs_as_its_file_says() -> None:
    """An upload starts at its own duration too (a cheap run)."""
    mine = load("default").with_overrides({"name": "mine", "cluster.hosts": 3})
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.file_uploader(key="upload").set_value(
        ("mine.toml", scenario_toml(mine).encode(), "application/toml")
    ).run()
    assert not at.exception and not at.error
    (duration,) = [n for n in at.sidebar.number_input if str(n.key).endswith(".run.duration")]
    assert duration.value == mine.run.duration
