"""The "Size my cluster" tab, driven headless: dimensions in, the answer and every configuration out."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_the_size_tab_finds_the_answer_on_a_small_grid() -> None:
    app = AppTest.from_file(APP, default_timeout=240)
    app.run()
    app.text_area(key="size.targets").set_value("web write p99 <= 2ms")
    app.text_area(key="size.dims").set_value("cluster.peer_link = ['1GbE', '10GbE']")
    app.number_input(key="size.seeds").set_value(2)
    app.button(key="size.run").click()
    app.run()
    assert not app.exception
    texts = " ".join(str(t.value) for t in app.text)
    assert "2 configurations" in texts
    assert len(app.dataframe) >= 1
