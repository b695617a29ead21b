"""Validity of a run's answer (simcache/results/validity.py): overload and instability found and
named, stable runs left quiet, short runs told so, censored percentiles of unfinished I/Os, and
the warnings where the numbers are (CLI, JSON, meta.json)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from support.builders import small_scenario
from support.gc_cliff import qlc_ingest
from support.mm1 import mm1_data
from support.paths import ROOT
from support.strategies import to_toml

import simcache
from simcache.base.units import format_figure
from simcache.cli.main import main
from simcache.report.run_report import report
from simcache.results.bottleneck import bottleneck_sentence
from simcache.results.result import Result
from simcache.results.summary import censored_percentiles
from simcache.results.trend import T_CRITICAL, trend
from simcache.results.validity import ValidityWarning, samples_needed
from simcache.runs.checks import run_checks
from simcache.runs.validation_report import report_section

SCENARIOS = ROOT / "scenarios"


def mm1(rate: float) -> simcache.Scenario:
    """The M/M/1 scenario of :func:`mm1_data`."""
    return simcache.load_scenario(mm1_data(rate))


def _row(result: Result, group: str, op: str) -> pd.Series:
    """One summary row."""
    summary = result.summary
    return summary[(summary["group"] == group) & (summary["op"] == op)].iloc[0]


@pytest.fixture(scope="module")
def overloaded() -> Result:
    return simcache.simulate(mm1(1500.0), seed=1)  # rho = 1.5


def test_overloaded_mm1_is_unstable_and_names_the_tier(overloaded: Result) -> None:
    assert overloaded.stable is False
    unstable = [w for w in overloaded.warnings if w.severity == "unstable"]
    components = {w.component for w in unstable}
    assert {"queue.host0.tier", "in_flight.db.write", "host0.tier"} <= components
    overload = next(w for w in unstable if w.kind == "overload")
    # offered 1,500/s against the tier's 1,000/s: the run shows the ratio
    assert overload.message.startswith(
        "host0.tier is busy 100% of the window while work piles up: its offered load is above its "
        "capacity"
    )
    assert overload.message.endswith(
        "the VMs issued 1,508 I/Os/s, 1,004/s completed (offered 1.5x what was served)"
    )
    growing = next(w for w in unstable if w.component == "in_flight.db.write")
    assert "group db's writes in flight grow through the run" in growing.message
    assert growing.message.endswith(
        "latency grows without bound; the percentiles shown are set by the run's length, not by "
        "the system"
    )
    assert str(growing) == growing.message


def test_overloaded_summary_counts_unfinished_and_marks_lower_bounds(overloaded: Result) -> None:
    row = _row(overloaded, "db", "write")
    pending = overloaded.measured_unfinished
    assert row["unfinished"] == len(pending) > 1000  # about 500/s pile up over the 5 s window
    # a third of the writes are unfinished: not the median
    assert row["lower_bounds"] == "p95_ms p99_ms p999_ms mean_ms max_ms"
    # the longest-waiting unfinished write was issued right after the warm-up: the max is at least
    # the window's length
    assert row["max_ms"] >= (6.0 - float(pending["issue_s"].min())) * 1e3 - 1e-9
    assert overloaded.totals["ios_unfinished_at_end"] == len(overloaded.unfinished)


def test_the_unfinished_table_lists_each_vm_s_reads_then_writes_in_issue_order(
    overloaded: Result,
) -> None:
    """Result.unfinished: one row per I/O in flight at the end, VMs in build order, each VM's reads
    then its writes, each in issue order (the record keeps them as columns: UnfinishedIOs)."""
    table = overloaded.unfinished
    assert list(table.columns) == ["vm", "group", "host", "op", "issue_s"]
    assert all(pd.api.types.is_string_dtype(table[c]) for c in ["vm", "group", "host", "op"])
    assert table["issue_s"].dtype == np.float64
    assert set(table["group"]) == {"db"} and set(table["op"]) <= {"read", "write"}
    for _, rows in table.groupby("vm", sort=False):
        ops = list(rows["op"])
        assert ops == sorted(ops)  # reads, then writes
        for _, block in rows.groupby("op"):
            assert block["issue_s"].is_monotonic_increasing
    assert (table["issue_s"] <= overloaded.meta["simulated_s"]).all()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_stable_mm1_gives_no_instability_warning(seed: int) -> None:
    result = simcache.simulate(mm1(500.0), seed=seed)  # rho = 0.5
    assert result.stable
    assert [w.kind for w in result.warnings if w.severity == "unstable"] == []


def _few_samples_run(rate: float, seed: int = 1) -> Result:
    """The M/M/1 scenario for 3 s with 1 s of warm-up, sampled each second: 2 samples after the
    warm-up, fewer than the growth test's 8."""
    data = mm1_data(rate)
    data["run"] = {"duration": "3s", "warmup": "1s", "sample_interval": "1s"}
    return simcache.simulate(simcache.load_scenario(data), seed=seed)


def test_a_short_overloaded_run_is_unstable_though_too_short_for_the_growth_test() -> None:
    """rho = 1.5: the tier's queue grows by about 500 I/Os a second from the start, so the I/Os
    in flight double between the window's start (1 s, about 500) and its end (3 s, about 1,500),
    rising at every sample: growth beyond doubt, reported, where the trend test cannot run."""
    result = _few_samples_run(1500.0)
    assert result.stable is False
    kinds = {(w.kind, w.component) for w in result.warnings}
    assert ("growing", "in_flight.db.write") in kinds
    assert ("untested", "series") in kinds
    grown = next(w for w in result.warnings if w.component == "in_flight.db.write")
    assert "too few for the growth test's significance" in grown.message
    # the saturated tier is named, as with enough samples
    assert ("overload", "host0.tier") in kinds


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_short_stable_run_says_its_stability_was_not_tested(seed: int) -> None:
    """rho = 0.5 over the same short window: nothing grows beyond doubt, and the run says that
    its stability was not tested (and how to sample enough), rather than nothing."""
    result = _few_samples_run(500.0, seed)
    assert result.stable
    untested = [w for w in result.warnings if w.kind == "untested"]
    assert len(untested) == 1 and untested[0].severity == "short"
    assert untested[0].message.startswith(
        "only 2 samples after the warm-up (1 s apart): too few to test queues and backlogs for "
        "growth (8 needed)"
    )
    assert untested[0].message.endswith(
        "set run.sample_interval to at most 0.25 s, or run for at least 9 s"
    )


@pytest.mark.parametrize("warmup", ["0s", "0.01s", "0.1s"])
def test_a_short_healthy_run_from_an_empty_start_is_not_called_growing(warmup: str) -> None:
    """rho = 0.3 on 200 units of 3 ms, about 60 writes in flight, two samples: the I/Os in flight
    rise from the empty start (time 0 without a warm-up) to their level within milliseconds,
    which is the run's ramp-up, not growth (a code review's reproduction: "from 0 to 52, a
    52-fold rise" called this run unstable); the tier queue's flat samples do not rise either."""
    data = mm1_data(20000.0)
    data["cluster"]["tier"] |= {"channels": 200, "service": "deterministic", "write_latency": "3ms"}
    data["cluster"]["storage_link"] = "100GbE"
    data["array"] = "afa-24x-nvme"
    data["run"] = {"duration": "1s", "warmup": warmup, "sample_interval": "0.5s"}
    result = simcache.simulate(simcache.load_scenario(data), seed=1)
    assert result.stable, [w.message for w in result.warnings]
    assert [w.kind for w in result.warnings if w.kind == "untested"] == ["untested"]


def test_enough_samples_say_nothing_of_testing() -> None:
    assert not [w for w in simcache.simulate(mm1(500.0), seed=1).warnings if w.kind == "untested"]


def hidden_array_data(spindles: int) -> dict[str, Any]:
    """One host, one VM writing 4 KiB at 1,000/s (WB+0: the tier acknowledges) to an array of
    ``spindles`` 15K drives in RAID 10 behind a 4 GiB controller cache. Each write is two drive
    writes (the mirror), about 2.6 ms each: 2 spindles serve about 760 a second of the 2,000
    arriving, while the cache acknowledges each write in 0.2 ms and is far from full after 6 s
    (about 25 MB in it); 24 spindles keep up (20% busy)."""
    return small_scenario(
        "hidden_array",
        run={"duration": "6s", "warmup": "1s", "sample_interval": "0.25s"},
        cluster={"hosts": 1, "storage_link": "10GbE"},
        array={"profile": "array-24x15k", "spindles": spindles},
        groups=[
            {
                "name": "db",
                "policy": "WB+0",
                "workload": {"mode": "open", "iops": 1000, "read_fraction": 0.0},
            }
        ],
    )


def test_spindle_queues_behind_a_controller_cache_are_found_growing() -> None:
    # The VMs see nothing (every write acknowledged by the tier, every destage by the array's
    # cache): only the array's own queue tells that its spindles fall behind, by about 2,000 - 760 =
    # 1,240 operations a second (0.1% test).
    result = simcache.simulate(simcache.load_scenario(hidden_array_data(2)), seed=1)
    queue = result.series["queue.array"]
    assert queue.iloc[-1] > 1000 and queue.is_monotonic_increasing
    growing = [w for w in result.warnings if w.component == "queue.array"]
    assert [w.kind for w in growing] == ["growing"] and growing[0].severity == "unstable"
    assert growing[0].message.startswith(
        "the array's spindle operations running or queued grow through the run (+1.2"
    )
    assert (
        "once the controller cache is full, destaging slows to the spindles' pace"
        in growing[0].message
    )
    assert result.stable is False
    assert _row(result, "db", "write")["p99_ms"] < 1.0  # the calm figure the warning qualifies
    # The array is pinned too: its overload says by how much its queue grows, which the VMs' figures
    # (every write issued completed) cannot.
    overload = next(w for w in result.warnings if w.kind == "overload")
    assert overload.component == "array" and "(offered 1x what was served)" in overload.message
    grows = re.search(
        r"; its spindle operations queued grow by ([\d,]+) a second \(work reaching the spindles, "
        r"less",
        overload.message,
    )
    # about 1,240, as above
    assert grows is not None and 1000 < int(grows.group(1).replace(",", "")) < 1500


def test_an_array_that_keeps_up_behind_its_cache_is_left_quiet() -> None:
    result = simcache.simulate(simcache.load_scenario(hidden_array_data(24)), seed=1)
    assert result.series["queue.array"].max() < 50
    assert [w for w in result.warnings if w.component == "queue.array"] == []


def test_trend_of_a_line_and_of_noise() -> None:
    times = np.arange(1.0, 21.0)
    line = trend(times, 3.0 * times)
    assert line.slope == pytest.approx(3.0) and line.rise == pytest.approx(57.0) and line.grows(1.0)
    noise = np.random.default_rng(7).normal(10.0, 1.0, len(times))
    fit = trend(times, noise)
    assert abs(fit.t) < T_CRITICAL and not fit.grows(1.0)


def test_censored_percentiles_98_completed_and_2_unfinished() -> None:
    """100 values: 98 completed latencies 1..98 ms and 2 unfinished I/Os, at least 500 and 700 ms.

    numpy's linear percentile of n = 100 sorted values at q uses ranks floor and ceil of 99 q / 100:
    p50 -> 49.5 (values 50, 51), p95 -> 94.05 (95, 96), p99 -> 98.01 (ranks 98 and 99: both
    unfinished), p99.9 -> 98.901 (ranks 98, 99). The top 2 ranks are where the unfinished ones could
    be, so p99 and p99.9 are lower bounds and p50 and p95 are values.
    """
    completed = np.arange(1.0, 99.0)
    figures, lower = censored_percentiles(completed, np.array([700.0, 500.0]))
    assert lower == ["p99_ms", "p999_ms"]
    assert figures["p50_ms"] == pytest.approx(50.5)
    assert figures["p95_ms"] == pytest.approx(95.05)
    assert figures["p99_ms"] == pytest.approx(500.0 + 0.01 * 200.0)
    assert figures["max_ms"] == 700.0
    assert censored_percentiles(completed, np.array([])) == (
        dict(censored_percentiles(completed, np.empty(0))[0]),
        [],
    )


def test_summary_of_a_hand_made_result() -> None:
    """The summary's unfinished, mean and lower_bounds columns from 98 completed writes and 2
    unfinished ones."""
    records = pd.DataFrame(
        {
            "vm": "db-h0-0",
            "group": "db",
            "host": "host0",
            "op": "write",
            "path": "write",
            "size_bytes": 4096,
            "issue_s": np.linspace(0.0, 1.0, 98),
            "complete_s": np.linspace(0.0, 1.0, 98) + 0.001,
            "latency_ms": np.full(98, 1.0),
        }
    )
    unfinished = pd.DataFrame(
        {"vm": "db-h0-0", "group": "db", "host": "host0", "op": "write", "issue_s": [1.5, 1.8]}
    )
    scenario = {
        "groups": [{"name": "db", "workload": {}}],
        "events": [],
        "cluster": {"destager": {"capacity": 2**30}},
    }
    meta = {"warmup_s": 0.0, "simulated_s": 2.0, "scenario": scenario}
    result = Result(records, pd.DataFrame(), {}, meta, unfinished)
    row = _row(result, "db", "write")
    assert (row["count"], row["unfinished"]) == (98, 2)
    # bounds: (2.0 - 1.5) s and (2.0 - 1.8) s
    assert row["mean_ms"] == pytest.approx((98 * 1.0 + 500.0 + 200.0) / 100)
    assert row["lower_bounds"] == "p99_ms p999_ms mean_ms max_ms"
    assert row["p95_ms"] == 1.0 and row["max_ms"] == 500.0
    assert math.isnan(_row(result, "db", "read")["mean_ms"])


def test_samples_needed() -> None:
    assert [samples_needed(q) for q in (50.0, 95.0, 99.0, 99.9)] == [20, 200, 1000, 10000]


def test_short_run_warnings_name_the_figures() -> None:
    """A duty cycle longer than the warm-up, a vMotion after the end, and p99.9 behind too few
    I/Os."""
    data = small_scenario(
        "short",
        run={"duration": "2s", "warmup": "0.5s"},
        workload={
            "mode": "open",
            "iops": 200,
            "read_fraction": 0.3,
            "duty_cycle": {"shape": "onoff", "on": "1s", "off": "2s"},
        },
        events=[
            {"kind": "vmotion", "at": "5s", "source_host": 0, "target_host": 1, "size": "1GiB"}
        ],
    )
    result = simcache.simulate(simcache.load_scenario(data), seed=1)
    by_kind = {w.kind: w for w in result.warnings}
    assert result.stable
    assert by_kind["short_warmup"].message == (
        "the warm-up (0.5 s) is shorter than group db's duty cycle (3 s period): the measured "
        "window still holds the start-up "
        "transient; warm up for at least 3 s (the run is 2 s)"
    )
    assert by_kind["event_after_end"].message == (
        "the vMotion scheduled at 5 s is at or after the run's end (2 s): it never happens in this "
        "run; run for longer than 5 s to see it"
    )
    few = by_kind["few_samples"].message
    assert few.startswith("few I/Os behind some percentiles (")
    assert "p999_ms needs 10,000: db reads (" in few and "p99_ms needs 1,000: db reads (" in few
    assert {w.severity for w in result.warnings} == {"short"}


def test_warnings_in_json_and_meta(overloaded: Result, tmp_path: Path) -> None:
    data = overloaded.to_json()
    assert data["stable"] is False
    assert {"kind": "overload", "component": "host0.tier", "severity": "unstable"}.items() <= next(
        w for w in data["warnings"] if w["kind"] == "overload"
    ).items()
    overloaded.save(tmp_path, formats=("csv",))
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["stable"] is False and meta["warnings"] == data["warnings"]
    assert len(pd.read_csv(tmp_path / "unfinished.csv")) == len(overloaded.unfinished)


def test_validity_warning_str() -> None:
    warning = ValidityWarning(
        "growing", "flows_in_flight", "unstable", "network transfers in flight grow"
    )
    assert str(warning) == "network transfers in flight grow"


def test_cli_run_prints_warnings_and_lower_bounds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mm1.toml"
    path.write_text(to_toml(mm1_data(1500.0)))
    assert main(["run", str(path), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert (
        "UNSTABLE: this run has no steady state; its latency figures grow with the run's length."
        in out
    )
    assert "warning: host0.tier is busy 100% of the window while work piles up" in out
    assert "unfinished" in out.splitlines()[3]  # the summary table's header
    assert (
        ">=" in out
        and "were unfinished at the end; each counts with the latency it had so far" in out
    )


def test_check_asserts_the_overloaded_library_variant() -> None:
    """backing_array's wt-overload variant: write-through at twice the array's IOPS is unstable,
    with unfinished writes."""
    outcomes = [
        o
        for o in run_checks(SCENARIOS / "backing_array.toml", seeds=1)
        if o.name.startswith("wt-overload")
    ]
    assert [(o.name, o.passed) for o in outcomes] == [
        ("wt-overload-unfinished", True),
        ("wt-overload-unstable", True),
    ]
    assert any(
        w.startswith("warning (variant wt-overload): array is busy 100% of the window")
        for w in outcomes[0].warnings
    )
    section = report_section(outcomes)
    assert "What the runs say about their own validity (`Result.warnings`):" in section
    assert (
        "- warning (variant wt-overload): array is busy 100% of the window while work piles up"
        in section
    )


def test_check_command_prints_each_warning_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`simcache check`: a run's warnings under the check lines, each once for the variant,
    however many checks use it."""
    data = mm1_data(1500.0)
    data["expect"] = [
        {
            "name": "many-unfinished",
            "metric": "unfinished",
            "at_least": 1000,
            "observation": "o",
            "tolerance": "t",
        },
        {
            "name": "unstable",
            "metric": "validity.stable",
            "at_most": 0,
            "observation": "o",
            "tolerance": "t",
        },
    ]
    data["check"] = {"seeds": 1}
    path = tmp_path / "mm1.toml"
    path.write_text(to_toml(data))
    assert main(["check", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "pass  mm1:unstable  validity.stable [base]: expected <= 0, simulated 0" in out
    line = "      warning (variant base): host0.tier is busy 100% of the window while work piles up"
    assert sum(row.startswith(line) for row in out.splitlines()) == 1


def test_a_tier_whose_units_are_saturated_is_not_called_past_its_cliff() -> None:
    """rho = 1.5 on the M/M/1 tier, with a 64 KiB clean pool refilled at 6.5 MB/s, above the 6.1
    MB/s written: garbage collection adds waits of a few ms in all, the units hold the queue.
    The overload names the tier; no gc_cliff (a code review's reproduction had one, saying the
    units "look 100% busy ... so no utilization shows this tier saturated")."""
    data = mm1_data(1500.0)
    data["cluster"]["tier"] |= {"clean_pool": "64KiB", "gc_rate": "6.5MB/s"}
    result = simcache.simulate(simcache.load_scenario(data), seed=1)
    assert result.totals["tier_gc_wait_s_by_host"]["host0"] > 0
    kinds = {(w.kind, w.component) for w in result.warnings}
    assert ("overload", "host0.tier") in kinds
    assert not [k for k in kinds if k[0] == "gc_cliff"]


def test_a_tier_past_its_cliff_is_named_though_its_units_look_idle() -> None:
    result = simcache.simulate(qlc_ingest())
    assert not result.stable
    cliff = [w for w in result.warnings if w.kind == "gc_cliff"]
    assert [w.component for w in cliff] == ["host0.tier"]
    assert "refills clean space at 156 MB/s" in cliff[0].message
    assert result.totals["tier_gc_wait_s_by_host"]["host0"] > 0
    # and says since when (the run's record of the pool first running short)
    dry = result.totals["tier_ran_dry_s_by_host"]["host0"]
    assert f"host0.tier is past its clean-pool cliff (from {format_figure(dry, 3)} s)" in (
        cliff[0].message
    )
    # its units are not what holds the writes: no utilization names the tier
    assert result.series["util.host0.tier"].mean() < 0.5
    assert "bottleneck: host0.tier past the clean-pool cliff" in report(result)
    assert bottleneck_sentence(result, qlc_ingest()).startswith(
        "Bottleneck: the host0 nvme-qlc-p5336 flash tier, past the clean-pool cliff"
    )


def test_a_run_whose_ios_all_came_in_the_warm_up_says_its_window_is_empty(
    tmp_path: Path,
) -> None:
    """Review 65: a trace whose I/Os share one timestamp replays them all at time 0, inside the
    warm-up: the summary's rows are empty and its unfinished count (the window's) is 0, however
    many never completed. Here an MSR trace of 2,000 4 KiB writes at one timestamp."""
    trace = tmp_path / "burst.csv"
    trace.write_text(
        "".join(f"128166372003061629,usr,0,Write,{4096 * i},4096,100\n" for i in range(2000)),
        "utf-8",
    )
    data = small_scenario(
        "burst",
        run={"duration": "1s", "warmup": "0.1s", "sample_interval": "0.1s"},
        workload={"mode": "trace", "trace": {"path": str(trace), "format": "msr"}},
    )
    result = simcache.simulate(simcache.Scenario.model_validate(data), seed=1)
    note = result.warnings[0]  # first, and no note on latency nothing measured beside it
    assert note.kind == "empty_window"
    assert not {"at_capacity", "few_samples", "warming"} & {w.kind for w in result.warnings}
    assert "no I/O was issued in the measured window (0.1 s to 1 s)" in note.message
    # small_scenario's two hosts each run a VM replaying the trace: 4,000 I/Os
    assert "the run issued its 4,000 I/Os during the warm-up" in note.message
    # a run with I/Os in its window says nothing of it
    calm = simcache.simulate(mm1(0.5), seed=1)
    assert not [w for w in calm.warnings if w.kind == "empty_window"]


def test_a_backlog_below_its_watermark_is_said_to_wait_for_it_not_to_fill() -> None:
    """Review 65e: under trigger = "watermarks" the destager starts only at its high mark, so the
    backlog grows by design; the note said the buffer would be full and writes would then wait for
    the array, while a longer run showed the backlog stopping at the mark. It now says the
    destager waits for the mark, when this rate reaches it, and that the run does not show what
    follows. Here 560 kB/s of writes into a 64 MiB buffer marked at half: 32 MiB in about a
    minute, none destaged in the 4 s run."""
    data = small_scenario(
        run={"duration": "4s", "warmup": "0.5s", "sample_interval": "0.25s"},
        cluster={"destager": {"capacity": "64MiB", "trigger": "watermarks"}},
    )
    result = simcache.simulate(simcache.Scenario.model_validate(data), seed=1)
    [note] = [w for w in result.warnings if w.kind == "filling"]
    assert "destager waits until the backlog reaches its high watermark (50%" in note.message
    assert "not shown by this run" in note.message and "full in about" not in note.message
