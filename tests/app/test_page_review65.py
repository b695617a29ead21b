"""The what-if page after review 65e (items 8 and 9) and review 64 (F3): a large upload's shortened
first run stays within the runs the page starts without asking, says before the run which
scheduled events fall past its end, and its instant estimate is of that run; the "This run is
large" question goes once the run starts; the time charts mark where a flash tier's clean pool ran
out, and the bottleneck sentence names its garbage collection.

The page is driven headless with Streamlit's AppTest; each figure it shows is compared with the
same run or estimate through the public API.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest
from support.gc_cliff import qlc_ingest
from support.paths import ROOT

import simcache
from simcache_app import charts, runs
from simcache_app.describe import estimate_sentence
from simcache_app.layout import estimate_text
from simcache_app.run_length import (
    EVENT_TAIL_S,
    events_outside,
    events_outside_note,
    first_duration,
)
from simcache_app.runs import CONFIRM_IOS, expected_ios
from simcache_app.scenario_files import library_scenarios, read_upload

APP = ROOT / "app.py"

CLUSTER_2026 = """
name = "c2026_12"
description = "2026 candidate: 12 hosts, Micron 9550 tier, 2 x 25GbE peer, NVMe/RDMA to an AFA"

[run]
duration = "20s"
warmup = "4s"
seed = 1
sample_interval = "0.5s"

[cluster]
hosts = {hosts}
tier = "nvme-micron-9550"
peer_link = "25GbE"
peer_links = 2
storage_link = "nvmeof-rdma-100GbE"

[cluster.destager]
capacity = "64GiB"
concurrency = 16
max_batch = "1MiB"

[array]
profile = "afa-24x-nvme"

[[groups]]
name = "db"
policy = "WB+1"
vms_per_host = 4
[groups.workload]
mode = "open"
iops = 4000
read_fraction = 0.7
sizes = {{ "8KiB" = 0.8, "64KiB" = 0.2 }}
working_set = "8GiB"
access = "zipf"
zipf_theta = 0.9

[[groups]]
name = "vdi"
policy = "WB+1"
vms_per_host = 20
[groups.workload]
mode = "open"
iops = 150
read_fraction = 0.4
sizes = {{ "4KiB" = 0.6, "32KiB" = 0.4 }}
working_set = "2GiB"
access = "zipf"

[[groups]]
name = "build"
policy = "WB+2"
vms_per_host = 2
[groups.workload]
mode = "open"
throughput = "200MB/s"
read_fraction = 0.1
sizes = {{ "32KiB" = 0.3, "256KiB" = 0.6, "512KiB" = 0.1 }}
working_set = "20GiB"
access = "uniform"
[groups.workload.duty_cycle]
shape = "onoff"
on = "4s"
off = "6s"

[[events]]
kind = "vmotion"
at = "10s"
source_host = 0
target_host = 1
size = "64GiB"
"""
"""Review 65e's 2026 cluster (its c2026.toml) on ``hosts`` hosts: NVMe tiers, 2 x 25GbE peer links,
NVMe-oF to an all-flash array, a 64 GiB vMotion at 10 s of a 20 s run. On 12 hosts its 20 s are
some 4.8 million I/Os, on 8 some 3.2 million."""


def cluster_2026(hosts: int = 12) -> tuple[str, bytes]:
    return f"c2026_{hosts}.toml", CLUSTER_2026.format(hosts=hosts).encode()


def load(name: str) -> simcache.Scenario:
    return simcache.load_scenario(library_scenarios()[name])


def uploaded(name: str, data: bytes) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300).run()
    at.sidebar.file_uploader(key="upload").set_value((name, data, "application/toml")).run()
    assert not at.exception and not at.error
    return at


def duration_box(at: AppTest) -> Any:
    (box,) = [n for n in at.sidebar.number_input if str(n.key).endswith(".run.duration")]
    return box


def chart(at: AppTest, title: str) -> dict[str, Any]:
    """The plotly figure (data and layout) of the page's chart whose title starts with ``title``."""
    specs = [json.loads(element.proto.spec) for element in at.get("plotly_chart")]
    (found,) = [spec for spec in specs if spec["layout"]["title"]["text"].startswith(title)]
    return found  # type: ignore[no-any-return]


# -- a large upload's shortened first run (review 65e, 8)
# ----------------------------------------------------------------


@pytest.mark.parametrize(("hosts", "seconds"), [(8, 4.5), (12, 4.0)])
def test_a_large_files_first_run_starts_without_the_page_asking(hosts: int, seconds: float) -> None:
    """The first run is about FIRST_RUN_IOS I/Os' worth, raised towards the 4.5 s the growth test
    wants only as far as the runs the page starts without asking: 8 hosts get the 4.5 s (750,000
    I/Os); on 12 hosts 4.5 s are 1.12 million I/Os, past CONFIRM_IOS, so the page picked a first
    run it then asked about ("This run is large"); it starts at 4 s instead (999,000)."""
    scenario = read_upload(*cluster_2026(hosts))
    start = first_duration(scenario, 1.0, 600.0)
    assert start == seconds
    assert expected_ios([scenario.with_duration(start)]) <= CONFIRM_IOS
    # the vMotion's start plus EVENT_TAIL_S would ask first: the page could not take it in
    assert expected_ios([scenario.with_duration(10 + EVENT_TAIL_S)]) > CONFIRM_IOS


def test_a_large_upload_says_before_the_run_that_its_vmotion_falls_past_the_shorter_run() -> None:
    """Review 65e's upload on 12 hosts: the page starts at 4 s of the file's 20 s. Before the run
    it says that the 10 s vMotion falls past that run's end and what taking it in would cost, and
    its instant estimate is of the 4 s run (so it names the run's bottleneck, the array's storage
    port, not the 20 s run's peer link, loaded by the vMotion); the run then starts without asking
    and names the same bottleneck."""
    name, data = cluster_2026()
    scenario = read_upload(name, data)
    at = uploaded(name, data)
    assert duration_box(at).value == 4.0
    (said,) = [w.value for w in at.warning]
    assert said == (
        "**Not in this run:** the file's vMotion host 0 → host 1 at 10 s comes after the end of "
        "this 4 s run (the file runs 20 s): neither the run nor the estimate above takes it in. "
        "Set **Simulated seconds** to 14 to run 4 s into it: about "
        f"{expected_ios([scenario.with_duration(14.0)]):,.0f} I/Os, past the 1,000,000 the page "
        "runs without asking (it will ask first)."
    )
    shown = estimate_text(estimate_sentence(simcache.estimate(scenario, duration=4.0), scenario))
    whole = estimate_text(estimate_sentence(simcache.estimate(scenario), scenario))
    assert shown.summary.startswith("Instant estimate of a 4 s run, not the file's 20 s (")
    assert shown.summary in [c.value for c in at.caption]
    assert shown.bottleneck.startswith("the array's storage port (receiving)")
    assert whole.bottleneck.startswith("the host0 25GbE peer link")  # the file's 20 s, vMotion in
    bottleneck = f"**Predicted bottleneck** — {shown.bottleneck}"
    assert bottleneck in [m.value for m in at.markdown]
    at.button(key="Run simulation").click().run()
    assert not at.exception
    assert not any("is large" in w.value for w in at.warning)
    assert any(
        m.value.startswith("Bottleneck: the array's storage port (receiving)") for m in at.markdown
    )


def test_the_events_note_names_each_event_past_the_run_and_is_silent_when_none_is() -> None:
    """The default's vMotion at 10 s and a host failure added at 15 s: an 8 s run leaves out both
    (18 s would run 4 s into the later, a run the page starts without asking); 12 s the failure
    alone; the file's 20 s none, and a run past the file's is not said to leave out anything."""
    scenario = load("default").with_overrides(
        {
            "events": [
                *(event.model_dump() for event in load("default").events),
                {"kind": "host_failure", "at": 15.0, "host": 2},
            ]
        }
    )
    assert [e.at for e in events_outside(scenario, 8.0)] == [10.0, 15.0]
    assert events_outside_note(scenario, 8.0) == (
        "**Not in this run:** the file's vMotion host 0 → host 1 at 10 s and host 2 fails at 15 s "
        "come after the end of this 8 s run (the file runs 20 s): neither the run nor the estimate "
        "above takes them in. Set **Simulated seconds** to 19 to run 4 s into the last of them: "
        f"about {expected_ios([scenario.with_duration(19.0)]):,.0f} I/Os."
    )
    assert [e.at for e in events_outside(scenario, 12.0)] == [15.0]
    assert events_outside_note(scenario, 20.0) is None
    assert events_outside_note(scenario, 60.0) is None


def test_the_file_run_of_the_default_says_nothing_of_events_and_its_estimate_is_the_files() -> None:
    """The default's own 20 s hold its vMotion: no note, and the estimate is the file's, in the
    words it always had."""
    default = load("default")
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.warning
    text = estimate_text(estimate_sentence(simcache.estimate(default), default))
    assert text.summary.startswith("Instant estimate (queueing model, no simulation): ")
    assert text.summary in [c.value for c in at.caption]


# -- the question before a large run (review 65e, 9)
# -------------------------------------------------------------------------


def test_the_large_run_question_is_gone_once_the_run_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past CONFIRM_IOS the page asks; "Start this run anyway" starts the run, and the question
    and its button are gone from the page that shows the run's figures (they stayed above them)."""
    default = load("default")
    monkeypatch.setattr(runs, "CONFIRM_IOS", expected_ios([default.with_duration(2.0)]) / 2)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.number_input(key="default.run.duration").set_value(2.0).run()
    at.button(key="Run simulation").click().run()
    assert [w.value for w in at.warning if "This run is large" in w.value]
    next(b for b in at.button if b.label == "Start this run anyway").click().run()
    assert not at.exception
    assert len(at.metric) == 4  # the run's figures
    assert not [w.value for w in at.warning if "is large" in w.value]
    assert not [b for b in at.button if b.label == "Start this run anyway"]


def test_the_large_sweep_question_is_gone_once_the_sweep_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same for a sweep: its "Start this sweep anyway" box goes once the sweep starts."""
    monkeypatch.setattr(runs, "CONFIRM_IOS", 1.0)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.number_input(key="default.run.duration").set_value(1.0).run()
    at.selectbox(key="default.sweep.parameter").select("Peer network link").run()
    at.text_input(key="default.sweep.values.Peer network link").input("1GbE, 10GbE")
    at.number_input(key="sweep.seeds").set_value(1).run()
    at.button(key="Run sweep").click().run()
    assert [w.value for w in at.warning if "This sweep is large" in w.value]
    next(b for b in at.button if b.label == "Start this sweep anyway").click().run()
    assert not at.exception
    assert any(b.label == "Sweep table (CSV)" for b in at.get("download_button"))
    assert not [w.value for w in at.warning if "is large" in w.value]
    assert not [b for b in at.button if b.label == "Start this sweep anyway"]


# -- the garbage-collection cliff (review 64, F3)
# ----------------------------------------------------------------------------


def test_the_time_charts_mark_where_the_flash_tiers_clean_pool_ran_out() -> None:
    """large_writes_flash: WB+0 writes use up the tier's 64 MiB clean pool, and from then each
    16 MiB garbage-collection pass stalls the writes 114 ms (16 MiB at 147 MB/s). The run records
    when a write first found the pool short (``tier_ran_dry_s_by_host``), which is where the
    latency chart's p99 jumps from about 15 ms to over 100 ms and where the first write held a
    whole pass was issued (within the pass); each time chart marks it with an orange dotted line
    and a label, and the caption says what the line is."""
    scenario = load("large_writes_flash")
    result = simcache.simulate(scenario, seed=1)
    dry = result.totals["tier_ran_dry_s_by_host"]["host0"]
    writes = result.records[result.records["op"] == "write"]
    held = float(writes[writes["local_tier_ms"] >= 113.8]["issue_s"].min())
    assert 1.0 < dry < 2.0 and abs(held - dry) < 0.114
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.selectbox(key="scenario").select("large_writes_flash").run()
    at.button(key="Run simulation").click().run()
    assert not at.exception
    for title in ("VM latency", "Utilization", "Destage backlog"):
        layout = chart(at, title)["layout"]
        (cliff,) = [s for s in layout["shapes"] if s["line"].get("dash") == "dot"]
        assert cliff["x0"] == cliff["x1"] == pytest.approx(dry)
        label = f"host0 clean pool ran out: GC stalls from {dry:.3g} s"
        assert label in [a["text"] for a in layout["annotations"]]
    # the chart's p99 line (the run's series): about 15 ms up to the mark, over 100 ms after it
    p99 = result.series["write_p99_ms"]
    assert p99[p99.index <= dry].max() < 20 and p99[p99.index > dry + 0.5].min() > 100
    assert any(
        "the orange dotted line is where a flash tier's clean pool ran out" in c.value
        for c in at.caption
    )


def test_the_bottleneck_sentence_of_the_gc_scenario_names_the_tiers_garbage_collection() -> None:
    """Review 64 F3 read "the array's 4 spindles ... it sets the latency" for writes that never
    wait for the array. The sentence now says the array does not set the write latency, and names
    the tier's garbage collection, its clean pool and its 114 ms passes."""
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.selectbox(key="scenario").select("large_writes_flash").run()
    at.button(key="Run simulation").click().run()
    (sentence,) = [m.value for m in at.markdown if m.value.startswith("Bottleneck: ")]
    assert "it sets the latency" not in sentence
    assert "not the write latency" in sentence
    assert "for garbage collection once its clean pool ran out" in sentence
    assert "foreground passes of 16 MiB, each stalling the tier's writes for 114 ms" in sentence


def test_a_tier_without_gc_passes_has_its_cliff_drawn_too() -> None:
    """A QLC tier past its cliff whose garbage collection frees room smoothly: no write stalls for
    a pass, but the run records when the pool first ran short, and the charts mark it ("writes
    wait for GC"). A run with no garbage collection has no mark and no note."""
    scenario = qlc_ingest()
    result = simcache.simulate(scenario)
    dry = result.totals["tier_ran_dry_s_by_host"]["host0"]
    marks = charts.time_marks(result, scenario)
    assert marks.cliff == (dry, f"host0 clean pool ran out: writes wait for GC from {dry:.3g} s")
    assert not marks.notes
    default = load("default")
    plain = charts.time_marks(simcache.simulate(default, duration=2.0), default)
    assert plain.cliff is None and not plain.notes
    assert "orange" not in charts.marks_caption(plain)


def test_the_cliff_label_names_the_first_host_and_counts_the_others() -> None:
    one = charts.Cliffs({"host0": 1.408})
    assert charts.cliff_label(one) == (1.408, "host0 clean pool ran out: GC stalls from 1.41 s")
    several = charts.Cliffs({"host2": 1.38, "host0": 1.5, "host1": 1.62})
    assert charts.cliff_label(several) == (
        1.38,
        "clean pools ran out: host2 first at 1.38 s, 3 hosts by 1.62 s",
    )
    assert charts.cliff_label(charts.Cliffs({})) is None
    smooth = charts.Cliffs({"host0": 2.5}, passes=False)
    assert charts.cliff_label(smooth) == (
        2.5,
        "host0 clean pool ran out: writes wait for GC from 2.5 s",
    )
