"""The sweep tab says where its figures are not to be trusted (the sweep_view of
simcache_app/views/sweep.py and simcache_app/charts.py's sweep_figure, review 64 F2): points that
are unstable, filling or at capacity are marked in the chart and the table and named in a warning,
and an all-groups metric whose mix of groups changes from point to point is warned of."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from support.cluster_2026 import PAGE_SECONDS, cluster_2026
from support.paths import ROOT

from simcache.runs.sweep import PointStability
from simcache.spec.dump import minimal_scenario_toml
from simcache_app.charts import sweep_figure

APP = ROOT / "app.py"
DB_IOPS = "db: IOPS per VM"


def cluster_2026_toml() -> bytes:
    """The reviewer's 2026 cluster as the page exported it (review 64, in/ui_2026.toml)."""
    return minimal_scenario_toml(cluster_2026()).encode()


@pytest.fixture
def swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """The page with the 2026 cluster uploaded and db IOPS a VM swept over 60 and 240 (one seed,
    the page's 14 s), plotting the write p99 over all groups."""
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))
    data = cluster_2026_toml()
    source = f"upload-{hashlib.sha256(data).hexdigest()[:12]}"
    at = AppTest.from_file(str(APP), default_timeout=300).run()
    at.sidebar.file_uploader(key="upload").set_value(("ui_2026.toml", data, "text/plain")).run()
    at.sidebar.number_input(key=f"{source}.run.duration").set_value(PAGE_SECONDS).run()
    at.selectbox(key=f"{source}.sweep.parameter").select(DB_IOPS).run()
    at.text_input(key=f"{source}.sweep.values.{DB_IOPS}").input("60, 240")
    at.number_input(key="sweep.seeds").set_value(1)
    at.selectbox(key=f"{source}.sweep.metric").select("all.write.p99_ms").run()
    at.button(key="Run sweep").click().run()
    assert not at.exception and not at.error
    return at


def test_the_sweep_tab_names_the_points_that_are_not_steady(swept: AppTest) -> None:
    warnings = [w.value for w in swept.warning]
    (unsteady,) = [w for w in warnings if w.startswith("**Not every point")]
    assert f"**Not every point of {DB_IOPS} is steady:**" in unsteady
    assert "- **240** (UNSTABLE 1/1): no steady state" in unsteady
    assert "**60**" not in unsteady
    table: pd.DataFrame = swept.dataframe[-1].value
    assert list(table["stability"]) == ["stable", "UNSTABLE 1/1"]


def test_the_sweep_chart_marks_the_unstable_point(swept: AppTest) -> None:
    spec = json.loads(swept.get("plotly_chart")[-1].proto.spec)
    (marked,) = [t for t in spec["data"] if t.get("name") == "UNSTABLE: no steady state"]
    assert marked["x"] == [240] and marked["hovertext"] == ["UNSTABLE 1/1"]


def test_an_all_groups_metric_whose_mix_changes_is_warned_of(swept: AppTest) -> None:
    """web is a closed loop: behind 500 ms reads its writes fall from about 1,900 to 150, and
    the all-groups write p99 falls with them."""
    (mixed,) = [w.value for w in swept.warning if "mix" in w.value]
    assert mixed.startswith(
        f"**write p99 (ms), all groups is over every group's I/Os, and their mix changes with "
        f"{DB_IOPS}:**"
    )
    assert "web writes 28% at 60 to 1% at 240" in mixed
    assert "pick one group's metric" in mixed


def summary_of(xs: list[object]) -> pd.DataFrame:
    return pd.DataFrame(
        {"x": xs, "m": [1.0 + i for i in range(len(xs))], "m.ci95": [0.1] * len(xs)}
    )


@pytest.mark.parametrize("categorical", [False, True])
def test_each_state_but_stable_has_its_marks(categorical: bool) -> None:
    xs: list[object] = ["1GbE", "10GbE", "25GbE", "100GbE"] if categorical else [1, 2, 3, 4]
    stability = [
        PointStability("stable", "stable"),
        PointStability("filling", "filling: full ~540 s"),
        PointStability("at capacity", "at capacity 2/3"),
        PointStability("unstable", "UNSTABLE 3/3"),
    ]
    figure = sweep_figure(summary_of(xs), "x", "m", "m", categorical, stability)
    marks = {trace.name: trace for trace in figure.data if trace.hovertext is not None}
    assert set(marks) == {
        "filling: a destage backlog grows",
        "at capacity: not a steady state",
        "UNSTABLE: no steady state",
    }
    unstable = marks["UNSTABLE: no steady state"]
    assert list(unstable.x) == [str(xs[3]) if categorical else xs[3]]
    assert list(unstable.y) == [4.0] and list(unstable.hovertext) == ["UNSTABLE 3/3"]
    assert unstable.marker.symbol == "x"


def test_untested_points_are_not_marked() -> None:
    """Too short to test: the table and the warning say so; the chart has nothing to flag."""
    stability = [PointStability("untested", "untested")] * 2
    figure = sweep_figure(summary_of([1, 2]), "x", "m", "m", False, stability)
    assert [trace.name for trace in figure.data] == ["95% confidence", "mean over seeds"]


def test_a_steady_sweep_draws_no_marks() -> None:
    figure = sweep_figure(
        summary_of([1, 2]), "x", "m", "m", False, [PointStability("stable", "stable")] * 2
    )
    assert [trace.name for trace in figure.data] == ["95% confidence", "mean over seeds"]
