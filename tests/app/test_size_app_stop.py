"""The "Size my cluster" tab's **Stop sizing**, driven headless: a stopped search shows the
configurations it judged, marked partial, and is not shown again on the next rerun."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest
from support.paths import ROOT

from simcache_app import runs, sizing

APP = str(ROOT / "app.py")


def test_stop_sizing_keeps_the_configurations_judged_so_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search of six configurations of 600 s runs (about two wall seconds each, half a minute in
    all) is left running when a script run ends part way, as a click on Stop ends it in a browser;
    the Stop button's callback then cancels the search's token once its first configuration is
    judged (AppTest cannot click a button while its script runs), and the next rerun shows the
    partial answer without the Size button being pressed again."""
    monkeypatch.setattr(runs, "LEASE_S", 120.0)  # no lease runs out between the two script runs
    buttons: list[tuple[str, str]] = []
    real_button = sizing.stop_button

    def stop_button(slot: Any, key: str, label: str, help: str, view: str = "") -> None:
        buttons.append((key, label))
        real_button(slot, key, label, help, view)

    monkeypatch.setattr(sizing, "stop_button", stop_button)
    app = AppTest.from_file(APP, default_timeout=240)
    app.run()
    app.number_input(key="default.run.duration").set_value(600.0)
    app.text_area(key="size.targets").set_value("web write p99 <= 2ms")
    app.text_area(key="size.dims").set_value(
        "cluster.peer_link = ['1GbE', '10GbE', '25GbE']\n"
        "cluster.tier = ['sata-ssd-s3700-field', 'nvme-p3700-field']"
    )
    app.number_input(key="size.seeds").set_value(2)
    app.button(key="size.run").click()
    with pytest.raises(RuntimeError, match="timed out"):
        app.run(timeout=5)  # the page is left part way; the search goes on
    jobs = app.session_state["runs.jobs"]
    assert len(jobs) == 1
    key, job = next(iter(jobs.items()))
    assert buttons == [(key, "Stop sizing")]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not re.match(r"Sizing: ([3-9]|\d\d) of", job.text):
        time.sleep(0.05)  # the first configuration's two seeds done
    assert job.thread.is_alive(), "the search ended before Stop: lengthen its runs"
    job.token.cancel("stopped from the page")  # what the button's callback does
    app.run()
    assert not app.exception
    warning = next(w.value for w in app.warning if "Partial answer" in w.value)
    partial = re.fullmatch(
        r"\*\*Partial answer:\*\* the search was stopped \(stopped from the page\) with (\d) of 6 "
        r"configurations judged \((\d) simulated, 0 pruned\); (\d) not reached; no answer was "
        r"confirmed before the stop\.",
        warning,
    )
    assert partial is not None, warning
    judged, simulated, unreached = map(int, partial.groups())
    assert judged == simulated >= 1 and judged + unreached == 6
    every = app.dataframe[-1].value
    assert (every["verdict"] != "skipped").sum() == judged
    assert every["why"].str.contains(
        r"the search stopped first \(stopped from the page\)"
    ).sum() == (unreached)
    assert not app.session_state["runs.jobs"], "the stopped search is shown once, then forgotten"
    app.run()  # the next rerun neither shows the partial answer again nor starts a search
    assert not app.exception
    assert not any("Partial answer" in w.value for w in app.warning)
    assert not app.session_state["runs.jobs"]
