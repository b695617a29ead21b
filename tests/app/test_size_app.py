"""The "Size my cluster" tab, driven headless: dimensions in, the answer and every configuration
out."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest
from support.paths import ROOT

APP = str(ROOT / "app.py")


def test_the_size_tab_finds_the_answer_on_a_small_grid() -> None:
    app = AppTest.from_file(APP, default_timeout=240)
    app.run()
    app.text_area(key="size.targets").set_value("web write p99 <= 2ms")
    app.text_area(key="size.dims").set_value("cluster.peer_link = ['1GbE', '10GbE']")
    app.number_input(key="size.seeds").set_value(2)
    app.button(key="size.run").click()
    app.run()
    assert not app.exception
    captions = " ".join(str(c.value) for c in app.caption)
    assert "2 configurations" in captions
    assert len(app.dataframe) >= 1


def test_the_answer_becomes_the_current_scenario_and_back() -> None:
    """The answer's button makes it the scenario the sidebar runs (its description names the
    changes); choosing a library scenario, or the sidebar's button, goes back."""
    app = AppTest.from_file(APP, default_timeout=240)
    app.run()
    app.text_area(key="size.targets").set_value("web write p99 <= 2ms")
    # 20 s runs with a warm-up of the build group's 10 s duty cycle, so that a pass can be judged
    # (docs/sizing.md)
    app.number_input(key="default.run.duration").set_value(20.0)
    app.run()
    app.text_area(key="size.dims").set_value(
        "cluster.peer_link = ['1GbE', '10GbE']\nrun.warmup = ['10s']"
    )
    app.number_input(key="size.seeds").set_value(2)
    app.button(key="size.run").click()
    app.run()
    assert not app.exception
    assert any("Answer:" in str(s.value) for s in app.success), [str(w.value) for w in app.warning]
    app.button(key="size.use").click()
    app.run()
    assert not app.exception
    captions = " ".join(str(c.value) for c in app.sidebar.caption)
    assert "changed in the what-if page: cluster.peer_link" in captions, captions
    app.button(key="size.forget").click()
    app.run()
    assert not app.exception
    captions = " ".join(str(c.value) for c in app.sidebar.caption)
    assert "changed in the what-if page" not in captions, captions
