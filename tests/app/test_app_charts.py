"""Honest charts on the what-if page (issue 19): time charts mark the warm-up, the scheduled
events and the duty cycles' bursts; categorical sweeps are points, not a line; wide-ranging axes
are logarithmic; one invalid sweep point is reported alone; legends name components in words, top
8 plus "others"; figures are formatted for people and labels follow the inputs."""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from support.paths import ROOT

import simcache
from simcache.base.units import format_figure, human_size, round_figure
from simcache.spec.events import EVENT_KINDS
from simcache_app import charts
from simcache_app.charts import (
    TOP_SHOWN,
    X_LOG_RATIO,
    event_label,
    legend_name,
    on_periods,
    spans_orders,
    time_marks,
    top_and_others,
)
from simcache_app.describe import figures, format_ms, group_vms, scenario_summary

APP = ROOT / "app.py"
PORT_ID = re.compile(r"host\d+\.|\.tx\b|\.rx\b|^util\.|^backlog\.")
"""An internal port or column id (host0.peer.tx, util.array, backlog.host3) that a legend must
not show."""


def open_app(seconds: float | None = 1.0) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300).run()
    assert not at.exception
    if seconds is not None:
        at.sidebar.number_input(key="default.run.duration").set_value(seconds).run()
    return at


def chart(at: AppTest, title: str) -> dict[str, Any]:
    """The plotly figure (data and layout) of the page's chart whose title starts with ``title``."""
    specs = [json.loads(element.proto.spec) for element in at.get("plotly_chart")]
    found: list[dict[str, Any]] = [
        spec for spec in specs if spec["layout"]["title"]["text"].startswith(title)
    ]
    assert len(found) == 1, [spec["layout"]["title"]["text"] for spec in specs]
    return found[0]


def sweep(
    at: AppTest, parameter: str, values: str, seeds: int = 1, metric: str = "all.write.mean_ms"
) -> None:
    at.selectbox(key="default.sweep.parameter").select(parameter).run()
    at.text_input(key=f"default.sweep.values.{parameter}").input(values)
    at.number_input(key="sweep.seeds").set_value(seeds)
    at.selectbox(key="default.sweep.metric").select(metric).run()
    at.button(key="Run sweep").click().run()
    assert not at.exception and not at.error


# -- time charts: warm-up, events, duty cycles -----------------------------------------------------


def test_the_first_run_includes_the_default_scenarios_vmotion_and_its_charts_mark_it() -> None:
    """The page starts at the file's 20 s (a cheap run: controls.first_duration), and each time
    chart shades the file's warm-up (4 s), marks the vMotion with a dashed line at 10 s, and shades
    the build group's on periods: on 4 s, off 6 s from phase 0, so [0, 4) and [10, 14) within the
    run."""
    at = open_app(seconds=None)
    assert at.sidebar.number_input(key="default.run.duration").value == 20
    at.button(key="Run simulation").click().run()
    assert not at.exception
    # the vMotion is in the run
    assert not any("never happens in this run" in w.value for w in at.warning)
    for title in ("VM latency", "Utilization", "Destage backlog"):
        layout = chart(at, title)["layout"]
        rects = [(s["x0"], s["x1"]) for s in layout["shapes"] if s["type"] == "rect"]
        lines = [s["x0"] for s in layout["shapes"] if s["type"] == "line"]
        assert rects == [(0.0, 4.0), (0.0, 4.0), (10.0, 14.0)]
        assert lines == [10.0]
        texts = {a["text"] for a in layout["annotations"]}
        assert texts == {"warm-up", "build on", "vMotion host 0 → host 1"}
    assert any(c.value.startswith("Time charts: grey is the warm-up") for c in at.caption)


def test_marks_are_the_shapes_and_labels_plotlys_helpers_draw() -> None:
    """The time charts' marks are set as one layout update, not with plotly's add_vrect and
    add_vline (each call validates the whole figure again); drawn with those helpers, as the page
    did before, the same marks give the same layout: bands, lines and labels, in the same order."""
    import plotly.graph_objects as go

    marks = charts.TimeMarks(
        (
            charts.Span(0.0, 1.4, "warm-up", "warm-up"),
            charts.Span(0.0, 4.0, "build on", "duty"),
            charts.Span(3.0, 3.5, "host 2 storage link down", "event"),
            charts.Span(10.0, 14.0, "build on", "duty"),
        ),
        ((10.0, "vMotion host 0 → host 1"), (12.5, "host 1 fails")),
    )
    drawn = go.Figure(go.Scatter(x=[0.0, 14.0], y=[1.0, 2.0]))
    labelled: set[str] = set()
    for span in marks.spans:
        label: dict[str, Any] = {}
        if span.label not in labelled:
            label = {
                "annotation_text": span.label,
                "annotation_position": "bottom left" if span.kind == "duty" else "top left",
                "annotation_font_size": 10,
            }
        labelled.add(span.label)
        drawn.add_vrect(
            x0=span.start,
            x1=span.end,
            fillcolor=charts._SHADES[span.kind],
            opacity=0.12,
            layer="below",
            line_width=0,
            **label,
        )
    for at, text in marks.lines:
        drawn.add_vline(
            x=at,
            line_dash="dash",
            line_color="black",
            annotation_text=text,
            annotation_font_size=10,
        )
    marked = charts._marked(go.Figure(go.Scatter(x=[0.0, 14.0], y=[1.0, 2.0])), marks)
    assert marked.to_plotly_json()["layout"] == drawn.to_plotly_json()["layout"]
    # no marks: no shapes, no labels
    bare = charts._marked(go.Figure(), charts.TimeMarks()).to_plotly_json()["layout"]
    assert "shapes" not in bare and "annotations" not in bare


def test_events_that_last_are_shaded_up_to_the_runs_end_and_later_ones_left_out() -> None:
    scenario = simcache.load_scenario("default").with_overrides(
        {
            "events": [
                {"kind": "link_down", "at": 1.0, "host": 2, "link": "storage", "duration": 0.5},
                {"kind": "array_rebuild", "at": 2.5, "duration": 60.0, "rebuild_rate": "50MB/s"},
                {"kind": "host_failure", "at": 2.0, "host": 3},
                {"kind": "vmotion", "at": 10.0},
            ]
        }
    )
    result = simcache.simulate(scenario, seed=1, duration=3.0)
    marks = time_marks(result, scenario)
    events = [(s.start, s.end, s.label) for s in marks.spans if s.kind == "event"]
    # the rebuild cut at 3 s
    assert events == [(1.0, 1.5, "host 2 storage link down"), (2.5, 3.0, "array rebuild")]
    # the vMotion at 10 s is after the run: not drawn
    assert marks.lines == ((2.0, "host 3 fails"),)


def test_every_event_kind_has_a_label_and_an_unknown_kind_falls_back_to_its_name() -> None:
    events = {
        "vmotion": {"source_host": 0, "target_host": 1},
        "host_failure": {"host": 2},
        "peer_loss": {"host": 0, "duration": 1.0},
        "link_down": {"host": 1, "link": "storage", "duration": 1.0},
        "link_slow": {"host": 1, "link": "peer", "duration": 1.0, "fraction": 0.5},
        "device_slow": {"host": 3, "duration": 1.0, "fraction": 0.25},
        "array_degraded": {"duration": 1.0},
        "array_rebuild": {"duration": 1.0, "rebuild_rate": 5e7},
        "device_failure": {"host": 3},
    }
    assert set(events) == set(EVENT_KINDS)  # a new kind in the scenario model gets a label here too
    labels = [event_label({"kind": kind, "at": 1.0, **fields}) for kind, fields in events.items()]
    assert labels == [
        "vMotion host 0 → host 1",
        "host 2 fails",
        "host 0 peer links down",
        "host 1 storage link down",
        "host 1 peer link slow (50% speed)",
        "host 3 tier slow (25% speed)",
        "array degraded (a spindle failed)",
        "array rebuild",
        "host 3 tier fails",
    ]
    assert event_label({"kind": "power_cut", "at": 1.0, "host": 2}) == "power cut, host 2"
    assert event_label({"kind": "switch_reboot", "at": 1.0}) == "switch reboot"


def test_on_periods_follow_the_duty_cycles_phase_and_only_an_on_off_cycle_has_them() -> None:
    """on 4 s, off 6 s, phase 3 s: the cycle starts 3 s in, so the first burst ends at 1 s and
    the next is [7, 11)."""
    onoff = simcache.load_scenario("default").groups[1].workload.duty_cycle
    assert onoff is not None
    shifted = onoff.model_copy(update={"phase": 3.0})
    assert list(on_periods(shifted, 20.0)) == [(0.0, 1.0), (7.0, 11.0), (17.0, 20.0)]
    assert list(on_periods(None, 20.0)) == []
    assert list(on_periods(onoff.model_copy(update={"shape": "sine", "period": 5.0}), 20.0)) == []


# -- sweeps
# -----------------------------------------------------------------------------------------


def test_a_categorical_sweep_is_drawn_as_points_with_intervals_not_a_line() -> None:
    at = open_app()
    sweep(at, "Peer network link", "1GbE, 10GbE", seeds=2)
    figure = chart(at, "write mean")
    # no line, no band between categories
    assert [trace["mode"] for trace in figure["data"]] == ["markers"]
    assert (
        figure["data"][0]["error_y"]["visible"] is True
        and len(figure["data"][0]["error_y"]["array"]) == 2
    )
    assert figure["layout"]["xaxis"]["type"] == "category"


def test_a_buffer_sweep_over_orders_of_magnitude_has_a_log_axis_and_units_in_its_table() -> None:
    """64 MiB to 8 GiB is a ratio of 128 (>= X_LOG_RATIO): a log x axis; the table heads the mean
    with its unit."""
    at = open_app()
    sweep(at, "Destager buffer per host (MiB)", "64, 8192")
    figure = chart(at, "write mean")
    assert figure["layout"]["xaxis"]["type"] == "log"
    assert "lines" in figure["data"][-1]["mode"]  # numbers are a scale: joined
    table = at.dataframe[-1].value
    assert list(table.columns) == [
        "Destager buffer per host (MiB)",
        "seeds",
        "mean (ms)",
        "± 95% (ms)",
        "stability",
    ]
    assert list(table["Destager buffer per host (MiB)"]) == [64, 8192]


def test_log_axes_only_where_values_span_two_orders_of_magnitude() -> None:
    assert (
        spans_orders([64, 256, 1024, 4096], X_LOG_RATIO)
        and spans_orders([1, 100])
        and not spans_orders([1, 99.9])
    )
    assert not spans_orders([3, 4, 6, 8], X_LOG_RATIO) and not spans_orders(
        [5400, 7200, 10000, 15000], X_LOG_RATIO
    )
    assert not spans_orders([0, 1000]) and not spans_orders(["1GbE", "10GbE"])
    summary = pd.DataFrame({"x": [1, 2, 4], "m": [0.5, 1.0, 80.0], "m.ci95": [0.1, 0.1, 0.1]})
    figure = charts.sweep_figure(summary, "x", "m", "m")
    # 1 to 4 is linear; 0.5 to 80 is not
    assert figure.layout.xaxis.type is None and figure.layout.yaxis.type == "log"


def test_one_invalid_sweep_point_is_reported_for_itself_and_the_rest_of_the_sweep_runs() -> None:
    """2 hosts cannot hold group db's two WB+2 copies: that point is said, 4 and 6 hosts are
    swept."""
    at = open_app()
    sweep(at, "Hosts", "2, 4, 6")
    warnings = [w.value for w in at.warning if "left out of the sweep" in w.value]
    assert len(warnings) == 1
    assert (
        warnings[0].startswith("**Hosts = 2** is left out of the sweep")
        and "WB+2 needs 2 peer hosts" in warnings[0]
    )
    assert list(at.dataframe[-1].value["Hosts"]) == [4, 6]
    assert len(at.get("plotly_chart")) == 1


# -- legends
# ----------------------------------------------------------------------------------------


def test_legend_names_are_words_not_port_ids() -> None:
    assert legend_name("util.host3.peer.tx") == "host 3 peer link, send"
    assert legend_name("util.host0.peer1.rx") == "host 0 peer link 1, receive"
    assert legend_name("util.host2.storage.tx") == "host 2 storage link, send"
    assert legend_name("util.array.rx") == "array port, receive"
    assert legend_name("util.peer.fabric") == "shared peer segment"
    assert legend_name("util.host2.tier") == "host 2 tier"
    assert legend_name("util.array") == "array drives"
    assert legend_name("backlog.host11") == "host 11"


def test_a_32_host_cluster_shows_the_8_busiest_components_and_one_line_for_the_others() -> None:
    """32 hosts: 32 x 4 port directions, 32 tiers, the array's 2 ports and its spindles are 163
    utilization series; the chart shows 8 and "other 155 components". The backlog shows all
    hosts, 8 hosts, the other 24."""
    at = open_app()
    at.sidebar.number_input(key="default.cluster.hosts").set_value(32).run()
    at.button(key="Run simulation").click().run()
    assert not at.exception
    utilization, backlog = chart(at, "Utilization"), chart(at, "Destage backlog")
    names = [trace["name"] for trace in utilization["data"]]
    assert len(names) == TOP_SHOWN + 1 and names[-1] == "other 155 components (highest of them)"
    assert utilization["layout"]["title"]["text"] == "Utilization: the 8 busiest of 163 components"
    backlog_names = [trace["name"] for trace in backlog["data"]]
    assert backlog_names[0] == "all hosts" and backlog_names[-3:] == [
        "other 24 hosts (sum)",
        "at risk (short of the policy's copies)",
        "in one copy only (lost if its host fails)",
    ]
    assert len(backlog_names) == 1 + TOP_SHOWN + 3
    for name in names + backlog_names:
        assert not PORT_ID.search(name), name


def test_others_add_up_where_quantities_add_and_take_the_highest_where_they_do_not() -> None:
    series = pd.DataFrame({f"backlog.host{i}": [float(i), 2.0 * i] for i in range(5)})
    summed = top_and_others(series, list(series.columns), 2, "sum", "hosts")
    assert list(summed) == ["host 4", "host 3", "other 3 hosts (sum)"]
    assert summed["other 3 hosts (sum)"].tolist() == [0 + 1 + 2, 0 + 2 + 4]
    highest = top_and_others(series, list(series.columns), 2, "max", "hosts")
    assert highest["other 3 hosts (highest of them)"].tolist() == [2.0, 4.0]
    assert list(top_and_others(series, list(series.columns), 8, "sum", "hosts")) == [
        f"host {i}" for i in (4, 3, 2, 1, 0)
    ]


# -- figures and labels
# -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (7200.0, "7,200"),
        (372.529, "372.5"),
        (1234567.8, "1,234,568"),
        (0.012345, "0.01235"),
        (2.0, "2"),
        (-3.14159, "-3.142"),
        (0.0, "0"),
    ],
)
def test_figures_for_people(value: float, text: str) -> None:
    assert format_figure(value) == text


def test_sizes_and_latencies_for_people() -> None:
    assert (
        human_size(400e9) == "372.5 GiB"
        and human_size(2**31) == "2 GiB"
        and human_size(1536) == "1.5 KiB"
    )
    assert [format_ms(v) for v in (0.01234, 7.7449, 46.69, 161.2, 1234.4)] == [
        "0.0123 ms",
        "7.74 ms",
        "46.7 ms",
        "161 ms",
        "1,234 ms",
    ]
    assert round_figure(561.111) == 561.1 and round_figure(12345.6) == 12346
    table = figures(pd.DataFrame({"I/Os": [1010], "IOPS": [561.111], "p99 ms": [0.0951234]}))
    assert table.to_dict("records") == [{"I/Os": 1010, "IOPS": 561.1, "p99 ms": 0.09512}]


def test_the_page_shows_figures_for_people_and_labels_that_follow_the_inputs() -> None:
    """The sidebar says the scenario as set (372.5 GiB, 7,200 RPM, not 372.529 or 7200.00); after
    the host count changes from 4 to 6 the group titles say 12 VMs, not the file's 8."""
    default = simcache.load_scenario("default")
    at = open_app()
    assert "VM group db (8 VMs)" in [e.label for e in at.sidebar.expander]
    summary = next(c.value for c in at.sidebar.caption if c.value.startswith("As set: "))
    assert summary == f"As set: {scenario_summary(default)}"
    assert (
        "372.5 GiB per host" in summary
        and "14 x 7,200 RPM spindles" in summary
        and "24 VMs" in summary
    )
    capacity = at.sidebar.number_input(key="default.cluster.tier.capacity")
    assert capacity.value == 372.5  # the 400 GB tier, not 372.529
    # shown rounded, not changed
    assert not any(c.value.startswith("1 setting changed") for c in at.sidebar.caption)
    at.sidebar.number_input(key="default.cluster.hosts").set_value(6).run()
    labels = [e.label for e in at.sidebar.expander]
    assert "VM group db (12 VMs)" in labels and not any("(8 VMs)" in label for label in labels)
    assert any(
        c.value.startswith("As set: 6 hosts, 36 VMs in 3 groups (db 12, build 12, web 12)")
        for c in at.sidebar.caption
    )
    assert group_vms(default.with_overrides({"cluster.hosts": 6}), "db") == 12
    at.button(key="Run simulation").click().run()
    table = at.dataframe[0].value
    for column in table.columns:
        if pd.api.types.is_float_dtype(table[column]):
            assert all(v == round_figure(v, 4) for v in table[column].dropna()), column
    config = json.loads(at.dataframe[0].proto.columns)
    assert config["I/Os"]["type_config"]["format"] == "localized"  # 1,010 I/Os, with the separator


def test_a_sweep_tables_interval_is_as_precise_as_its_mean() -> None:
    from simcache_app.describe import sweep_table

    summary = pd.DataFrame(
        {
            "link": ["1GbE", "10GbE"],
            "seeds": [2, 2],
            "m_ms": [7.7712, 3.24123],
            "m_ms.ci95": [4.48912, 3e-13],
        }
    )
    table = sweep_table(summary, "link", "m_ms")
    assert table.to_dict("list") == {
        "link": ["1GbE", "10GbE"],
        "seeds": [2, 2],
        "mean (ms)": [7.771, 3.241],
        "± 95% (ms)": [4.489, 0.0],
    }


@pytest.mark.parametrize(
    ("metric", "unit"),
    [
        ("all.write.p99_ms", "ms"),
        ("db.read.p999_ms", "ms"),
        ("web.write.mb_s", "MB/s"),
        ("all.read.iops", "IOPS"),
        ("destage_backlog_bytes", "bytes"),
        ("peer_wire_mb_s", "MB/s"),
        ("bottleneck_utilization", "fraction"),
    ],
)
def test_sweep_metrics_name_their_unit(metric: str, unit: str) -> None:
    from simcache_app.describe import metric_unit

    assert metric_unit(metric) == unit
