"""The events table's figures (:mod:`simcache.results.event_impact`): latency before / during /
after each event, peak data at risk, bytes lost, time to recover; the same figures in ``simcache
run``, ``simcache run --json`` and the HTML report.

Set-up (``test_peer_loss.scenario``): two hosts, one WB+1 VM on each writing 4 KiB at a steady 2,000
per second (uniform arrivals: a window of T seconds holds 2,000 T writes per VM), NVMe tiers, 10GbE
links, a 24 x 15K array; 0.25 s samples, 0.1 s warm-up, 3 s runs. Without contention a write's
latency is one figure per path, so every percentile of a window equals it.
"""

from __future__ import annotations

import json
import math
from html import escape

import numpy as np
import pytest
from support.outage import AT, BACK, END, RATE, SIZE, scenario

import simcache
from simcache.cli.main import main
from simcache.report.event_report import mib
from simcache.report.page import report_html
from simcache.report.run_report import report
from simcache.results.event_impact import EventImpact, event_impacts, impacts_json

# the destager takes nothing before 10 s: every write stays buffered to the end
HOLD = {"delay": 10.0}
INTERVAL = 0.25


def only(result: simcache.Result) -> EventImpact:
    (impact,) = event_impacts(result)
    return impact


@pytest.fixture(scope="module")
def degraded() -> simcache.Result:
    return simcache.simulate(scenario("degrade", destager=HOLD))


def test_windows_are_the_events_length_cut_to_the_measured_window(
    degraded: simcache.Result,
) -> None:
    """The outage lasts 1 s (1-2 s): during 1-2 s, after 2-3 s, before 0-1 s cut to the warm-up's
    end (0.1 s)."""
    impact = only(degraded)
    assert impact.windows == {"before": (0.1, AT), "during": (AT, BACK), "after": (BACK, END)}
    assert impact.window_s == BACK - AT


def test_degrade_latency_and_data_at_risk(degraded: simcache.Result) -> None:
    """``degrade``: writes skip the replica leg while the peer is lost (NVMe write alone, 0.022
    ms, against 0.066 ms with the 10GbE leg before and after); every write of the loss is a
    single copy: 2 VMs x 2,000/s x 1 s x 4 KiB = 16,384,000 bytes at risk at its end (the
    destager holds them all), back to 0 at the first sample after the resync (a few ms on 10GbE):
    2.25 s. The backlog keeps every write (nothing destaged): it never returns to its 1 s level,
    so it is not recovered."""
    impact = only(degraded)
    before, during, after = (
        impact.latency[p]["write_p50_ms"] for p in ("before", "during", "after")
    )
    assert during == pytest.approx(0.02216, abs=1e-5)
    assert before == pytest.approx(after) == pytest.approx(0.06573, abs=1e-5)
    assert impact.latency["during"]["write_p99_ms"] == pytest.approx(during)
    assert math.isnan(impact.latency["during"]["read_p50_ms"])  # no reads
    assert impact.peak_at_risk_bytes == 2 * RATE * (BACK - AT) * SIZE == 16_384_000
    assert impact.at_risk_before_bytes == 0
    assert impact.at_risk_recovered_s == BACK + INTERVAL
    assert impact.lost_bytes == 0
    assert impact.backlog_recovered_s is None


def test_write_through_puts_nothing_at_risk() -> None:
    """``write_through``: the writes of the loss take the WT path (0.243 ms), nothing is at risk,
    and the backlog (held by the destager) keeps the writes of 0.75-1 s and 2-3 s: it is never
    back to its 0.75 s sample."""
    impact = only(simcache.simulate(scenario("write_through", destager=HOLD)))
    assert impact.latency["during"]["write_p50_ms"] == pytest.approx(0.24346, abs=1e-5)
    assert impact.peak_at_risk_bytes == 0
    assert impact.at_risk_recovered_s == BACK
    assert impact.backlog_before_bytes == 2 * RATE * 0.75 * SIZE
    assert impact.backlog_recovered_s is None


def test_host_failure_loses_the_unreplicated_backlog() -> None:
    """WB+0, host1 dies at 1 s with its VM's write buffered (the destager has not taken it yet):
    lost = the meta record's lost bytes, 4,096. Without HA the event lasts to the end of the run:
    no after window (its latency NaN). The backlog falls at the failure (host1's lost write with
    it): back to its level before it at the first sample after it, 1.25 s; recovery counts from
    the failure, not from the span's end (the run's end). Nothing is at risk (WB+0 promises one
    copy and each buffered write has it: the series' ``single_copy_bytes`` shows them)."""
    result = simcache.simulate(
        scenario(policy="WB+0", events=[{"kind": "host_failure", "at": AT, "host": 1}])
    )
    impact = only(result)
    assert (
        impact.lost_bytes
        == result.meta["failures"][0]["lost_bytes"]
        == result.totals["data_lost_bytes"]
        == SIZE
    )
    assert impact.end_s == END and impact.windows["after"] == (END, END)
    assert math.isnan(impact.latency["after"]["write_p50_ms"])
    assert impact.at_risk_before_bytes == 0
    assert result.series["single_copy_bytes"][result.series.index < AT].iloc[-1] == 2 * SIZE
    assert impact.recovery_from_s == AT
    assert impact.at_risk_recovered_s == impact.backlog_recovered_s == AT + INTERVAL
    assert "at risk back to 0.0 MiB: at 1.250 s (0.250 s after the failure)" in report(result)


def test_storage_link_down_backlog_grows_then_drains() -> None:
    """host0's storage link down 1-2 s: its VM's 2,000 writes/s x 1 s x 4 KiB = 8,192,000 bytes
    pile up; the port returns at 2 s and 8 MB drain in about 7 ms on 10GbE: back to the 1 s level
    at the next sample, 2.25 s. Down to the end of the run (5 s from 1 s): still under way, so
    nothing recovered."""
    down: dict[str, object] = {
        "kind": "link_down",
        "at": AT,
        "host": 0,
        "link": "storage",
        "duration": 1.0,
    }
    result = simcache.simulate(scenario(events=[down]))
    impact = only(result)
    assert impact.backlog_recovered_s == BACK + INTERVAL
    piled = result.series["destage_backlog_bytes"].max() - impact.backlog_before_bytes
    assert abs(piled - RATE * SIZE) <= SIZE  # 2,000 writes up to one at either end of the window
    forever = simcache.simulate(scenario(events=[{**down, "duration": 5.0}]))
    assert (
        only(forever).end_s == END
        and only(forever).backlog_recovered_s is None
        and only(forever).ongoing
    )
    before = mib(only(forever).backlog_before_bytes)
    assert f"backlog back to {before}: the event had not ended by the end of the run" in report(
        forever
    )


def test_cli_json_and_html_show_the_same_figures(
    degraded: simcache.Result, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text table, ``--json`` and the HTML page all come from :func:`event_impacts`."""
    impact = only(degraded)
    text = report(degraded)
    assert (
        "    host0 peers lost 1.000-2.000 s (windows of 1.000 s): write p50/p99 0.066/0.066 -> "
        "0.022/0.022 -> 0.066/0.066 ms" in text
    )
    assert (
        "      peak at risk 15.6 MiB, lost 0.0 MiB; backlog back to 11.7 MiB: not recovered by the "
        "end of the run; " in text
    )
    assert "at risk back to 0.0 MiB: at 2.250 s (0.250 s after the event's end)" in text
    data = json.loads(json.dumps(impacts_json(degraded)))
    assert data[0]["peak_at_risk_bytes"] == impact.peak_at_risk_bytes
    assert data[0]["latency"]["during"]["read_p50_ms"] is None  # NaN: strict JSON
    assert data[0]["windows"]["after"] == [BACK, END]
    page = report_html(degraded)
    assert "<h2 id='events'>Events</h2>" in page
    assert (
        "<td>15.6 MiB</td>" in page and escape("at 2.250 s (0.250 s after the event's end)") in page
    )
    assert "<td>during 1.000-2.000</td>" in page and "<td>0.022</td>" in page


def test_run_json_carries_the_event_impact(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """``simcache run --json`` prints the figures under ``event_impact``; a run without events
    has an empty list."""
    path = tmp_path / "s.toml"
    path.write_text(_toml(scenario("degrade", destager=HOLD)))
    assert main(["run", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["event_impact"][0]["peak_at_risk_bytes"] == 16_384_000
    assert data["event_impact"][0]["at_risk_recovered_s"] == BACK + INTERVAL


def _toml(spec: simcache.Scenario) -> str:
    from simcache.spec.dump import toml_document

    return toml_document(spec.model_dump(mode="json", exclude_none=True), [])


def test_a_vmotion_lasts_its_memory_transfer() -> None:
    """A vMotion's span is its transfer, from ``at`` to the end the run's meta records for it."""
    result = simcache.simulate(scenario(events=[{"kind": "vmotion", "at": AT, "size": "1GiB"}]))
    (record,) = result.meta["vmotions"]
    impact = only(result)
    assert (impact.start_s, impact.end_s) == (AT, record["end_s"]) and AT < record["end_s"] < END
    assert impact.windows["after"] == (record["end_s"], min(END, 2 * record["end_s"] - AT))
    assert impact.what == "vMotion host0->host1"


def test_a_run_without_records_takes_the_windows_from_its_interval_histograms() -> None:
    """``--no-records`` keeps no issue times: a window's figures come from the histograms of the
    sample intervals inside it, by completion time. They equal the records' percentiles over the
    I/Os completed in the same window to the histograms' stated error (|p - p_exact| <= 1% p + 1
    ns, :mod:`simcache.sim.stream`); at-risk, lost and recovery come from the series and meta,
    the same in both."""
    kept = simcache.simulate(scenario("degrade", destager=HOLD))
    streamed = simcache.simulate(scenario("degrade", destager=HOLD), keep_records=False)
    impact, streamed_impact = only(kept), only(streamed)
    records = kept.records
    for phase, (start, end) in impact.windows.items():
        done = records[
            (records["op"] == "write")
            & (records["complete_s"] >= start)
            & (records["complete_s"] < end)
        ]
        for q in (50, 99):
            exact = float(np.percentile(done["latency_ms"].to_numpy(dtype=float), q))
            assert streamed_impact.latency[phase][f"write_p{q}_ms"] == pytest.approx(
                exact, rel=0.01, abs=1e-6
            ), (phase, q)
        assert math.isnan(streamed_impact.latency[phase]["read_p50_ms"])
    assert streamed_impact.peak_at_risk_bytes == impact.peak_at_risk_bytes
    assert streamed_impact.at_risk_recovered_s == impact.at_risk_recovered_s


def test_an_event_still_under_way_at_the_end_of_the_run_has_not_recovered() -> None:
    """A vMotion of 64 GiB over 10GbE (about 55 s of wire time) cannot land in a 3 s run: its
    span is cut at the run's end, it is ``ongoing``, and neither figure is counted as recovered
    (a sample at the run's end is no recovery from an event still copying). The words say so
    instead of "0.000 s after the event's end"."""
    from simcache.report.event_report import impact_lines

    result = simcache.simulate(scenario(events=[{"kind": "vmotion", "at": AT, "size": "64GiB"}]))
    impact = only(result)
    assert impact.ongoing and impact.end_s == END
    assert impact.backlog_recovered_s is None and impact.at_risk_recovered_s is None
    words = impact_lines(impact)[1]
    assert (
        words.count("the event had not ended by the end of the run") == 2
        and "after the event's end" not in words
    )
    finished = only(
        simcache.simulate(scenario(events=[{"kind": "vmotion", "at": AT, "size": "1GiB"}]))
    )
    assert not finished.ongoing and finished.backlog_recovered_s is not None
