"""The shape and arithmetic of a Result: summary, records, series, breakdown, totals, meta; and
sweeps."""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from support.builders import small_scenario

import simcache
from simcache import Result, Scenario, ScenarioError
from simcache.base.metrics import TOTALS
from simcache.sim import native_run
from simcache.sim.collect import COMPONENTS

SUMMARY_COLUMNS = [
    "group",
    "op",
    "count",
    "unfinished",
    "iops",
    "mb_s",
    "mean_ms",
    "mean_ci95_ms",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "lower_bounds",
]
RECORD_COLUMNS = [
    "vm",
    "group",
    "host",
    "op",
    "path",
    "size_bytes",
    "issue_s",
    "complete_s",
    "latency_ms",
    *COMPONENTS,
]
DURATION, WARMUP, INTERVAL = 2.0, 0.5, 0.25


# Three hosts; a replicated open-loop writer, a write-through closed-loop reader/writer, a
# write-only group.
small = partial(
    small_scenario,
    "results",
    run={"duration": DURATION, "warmup": WARMUP, "sample_interval": INTERVAL, "seed": 3},
    cluster={
        "hosts": 3,
        "tier": "sata-ssd-s3700-field",
        "peer_link": "1GbE",
        "destager": {"capacity": "64MiB"},
    },
    groups=[
        {
            "name": "db",
            "policy": "WB+1",
            "vms_per_host": 2,
            "workload": {
                "mode": "open",
                "iops": 150,
                "read_fraction": 0.5,
                "sizes": {"8KiB": 0.7, "64KiB": 0.3},
                "working_set": "256MiB",
            },
        },
        {
            "name": "web",
            "policy": "WT",
            "hosts": [0, 2],
            "workload": {
                "mode": "closed",
                "workers": 2,
                "think_time": "5ms",
                "read_fraction": 0.7,
                "working_set": "128MiB",
            },
        },
        {
            "name": "logs",
            "policy": "WB+2",
            "hosts": [1],
            "workload": {"mode": "open", "throughput": "2MB/s", "sizes": "256KiB"},
        },
    ],
)


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return simcache.load_scenario(small())


@pytest.fixture(scope="module")
def result(scenario: Scenario) -> Result:
    return simcache.simulate(scenario)


# -- summary --------------------------------------------------------------------------------------


def test_summary_columns_exactly(result: Result) -> None:
    assert list(result.summary.columns) == SUMMARY_COLUMNS


def test_summary_has_every_group_and_op_plus_all(result: Result) -> None:
    rows = set(zip(result.summary["group"], result.summary["op"], strict=True))
    assert rows == {(g, op) for g in ("db", "web", "logs", "all") for op in ("read", "write")}
    assert len(result.summary) == 8


def test_summary_counts_match_measured_records(result: Result) -> None:
    measured = result.records[result.records["issue_s"] >= WARMUP]
    summary = result.summary.set_index(["group", "op"])
    for (group, op), row in summary.iterrows():
        part = measured if group == "all" else measured[measured["group"] == group]
        part = part[part["op"] == op]
        assert row["count"] == len(part), (group, op)
        assert row["mb_s"] == pytest.approx(part["size_bytes"].sum() / (DURATION - WARMUP) / 1e6)
    assert summary.loc[("logs", "read"), "count"] == 0
    assert (
        summary.loc[("db", "write"), "count"] == 631
    )  # deterministic for seed 3 (the streams draw 32 I/Os first, then twice as many each time)


def test_iops_is_count_over_the_measured_window(result: Result) -> None:
    assert result.window == (WARMUP, DURATION)
    summary = result.summary
    np.testing.assert_allclose(summary["iops"], summary["count"] / (DURATION - WARMUP), rtol=1e-12)


def _latencies(result: Result, group: str, op: str) -> tuple[np.ndarray, np.ndarray]:
    """The window's completed latencies (ms) of a group and op, and its unfinished I/Os' lower
    bounds (run end - issue, ms)."""
    measured, pending = result.measured, result.measured_unfinished
    if group != "all":
        measured, pending = measured[measured["group"] == group], pending[pending["group"] == group]
    latency = measured.loc[measured["op"] == op, "latency_ms"].to_numpy()
    bounds = (DURATION - pending.loc[pending["op"] == op, "issue_s"].to_numpy(dtype=float)) * 1e3
    return latency, bounds


def test_summary_percentiles_are_ordered_and_exact(result: Result) -> None:
    """Over completed latencies and the unfinished I/Os' lower bounds together (censored values)."""
    # the test sees censored values (deterministic for seed 3)
    assert result.summary["unfinished"].sum() > 0
    for _, row in result.summary[result.summary["count"] > 0].iterrows():
        latency, bounds = _latencies(result, row["group"], row["op"])
        values = np.concatenate((latency, bounds))
        assert row["unfinished"] == len(bounds)
        expected = np.percentile(values, [50, 95, 99, 99.9])
        np.testing.assert_allclose(
            row[["p50_ms", "p95_ms", "p99_ms", "p999_ms"]].astype(float), expected, rtol=1e-12
        )
        assert row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["p999_ms"] <= row["max_ms"]
        assert row["max_ms"] == values.max()
        assert row["mean_ms"] == pytest.approx(values.mean())
        assert ("mean_ms" in row["lower_bounds"].split()) == (len(bounds) > 0)


def test_empty_summary_rows_are_nan_not_zero(result: Result) -> None:
    row = result.summary.set_index(["group", "op"]).loc[("logs", "read")]
    assert row["iops"] == 0
    assert row["mb_s"] == 0
    for column in ("mean_ms", "p50_ms", "p999_ms", "max_ms", "mean_ci95_ms"):
        assert math.isnan(row[column]), column


def test_confidence_interval_is_the_batch_means_half_width(result: Result) -> None:
    """Batch means over 10 equal time batches of the measured window: half-width t(0.975, 9) s /
    sqrt(10)."""
    writes = result.measured[
        (result.measured["group"] == "db") & (result.measured["op"] == "write")
    ]
    pending = result.measured_unfinished
    pending = pending[(pending["group"] == "db") & (pending["op"] == "write")]
    issued = pd.concat([writes["issue_s"], pending["issue_s"]], ignore_index=True)
    # unfinished: lower bounds
    latency = pd.concat(
        [writes["latency_ms"], (DURATION - pending["issue_s"]) * 1e3], ignore_index=True
    )
    batch = ((issued - WARMUP) // ((DURATION - WARMUP) / 10)).clip(upper=9)
    means = latency.groupby(batch).mean()
    assert len(means) == 10
    t_975_9 = 2.262157  # Student's t, 97.5th percentile, 9 degrees of freedom (any t table)
    row = result.summary.set_index(["group", "op"]).loc[("db", "write")]
    assert row["mean_ci95_ms"] == pytest.approx(
        t_975_9 * means.std(ddof=1) / math.sqrt(10), rel=1e-6
    )


def test_summary_by_vm_adds_up_to_groups(result: Result, scenario: Scenario) -> None:
    by_vm = result.summary_by_vm()
    assert set(by_vm["vm"]) == set(result.measured["vm"])
    assert len(set(by_vm["vm"])) == scenario.vm_count
    # categorical in the records
    vm_group = result.records.drop_duplicates("vm").set_index("vm")["group"].astype(str)
    counts = by_vm.assign(group=by_vm["vm"].map(vm_group)).groupby(["group", "op"])["count"].sum()
    summary = result.summary[result.summary["group"] != "all"].set_index(["group", "op"])["count"]
    pd.testing.assert_series_equal(counts.sort_index(), summary.sort_index(), check_names=False)


# -- records --------------------------------------------------------------------------------------


def test_records_columns(result: Result) -> None:
    assert list(result.records.columns) == RECORD_COLUMNS


def test_records_are_sorted_by_completion(result: Result) -> None:
    assert result.records["complete_s"].is_monotonic_increasing


def test_records_name_vms_groups_and_hosts(result: Result, scenario: Scenario) -> None:
    records = result.records
    assert set(records["group"]) == {"db", "web", "logs"}
    assert set(records.loc[records["group"] == "web", "host"]) == {"host0", "host2"}
    assert set(records.loc[records["group"] == "logs", "host"]) == {"host1"}
    assert records["vm"].nunique() == scenario.vm_count
    assert set(records.loc[records["group"] == "logs", "size_bytes"]) == {256 * 1024}


def test_write_through_writes_pay_the_array(result: Result) -> None:
    records = result.records
    wt = records[(records["group"] == "web") & (records["op"] == "write")]
    assert (wt["array_ms"] > 0).all()
    assert (wt["destage_wait_ms"] == 0).all()
    wb = records[(records["group"] != "web") & (records["op"] == "write")]
    assert (wb["array_ms"] == 0).all(), "write-back writes never wait for the array directly"


def test_read_misses_go_to_the_array_and_hits_do_not(result: Result) -> None:
    records = result.records
    misses = records[records["path"] == "miss"]
    hits = records[records["path"] == "hit"]
    assert (len(hits), len(misses)) == (60, 1258)  # deterministic for seed 3
    assert (misses["array_ms"] > 0).all()
    assert (hits["array_ms"] == 0).all()
    # a hit's latency is all local tier: the float32 component is the latency rounded once
    # (simcache.sim.collect.COMPONENT_DTYPE)
    assert (hits["latency_ms"].astype(np.float32) == hits["local_tier_ms"]).all()
    assert result.totals["cache_hits"] == len(hits)
    # Lookups are counted when issued: the 8 reads unfinished at the end all missed (deterministic
    # for seed 3; a hit completes at the tier's latency).
    unfinished_reads = int((result.unfinished["op"] == "read").sum())
    assert unfinished_reads == 8
    assert result.totals["cache_misses"] == len(misses) + unfinished_reads


def test_measured_is_records_issued_after_warmup(result: Result) -> None:
    measured = result.measured
    assert (measured["issue_s"] >= WARMUP).all()
    assert len(measured) == int((result.records["issue_s"] >= WARMUP).sum())
    # issued during warm-up; deterministic for seed 3
    assert len(result.records) - len(measured) == 606


# -- series ---------------------------------------------------------------------------------------


def test_series_index_is_sample_times(result: Result) -> None:
    series = result.series
    assert series.index.name == "time_s"
    np.testing.assert_allclose(
        series.index.to_numpy(), np.arange(1, int(DURATION / INTERVAL) + 1) * INTERVAL
    )


def test_series_has_utilization_and_backlog_columns(result: Result) -> None:
    columns = set(result.series.columns)
    for host in ("host0", "host1", "host2"):
        for port in ("peer.tx", "peer.rx", "storage.tx", "storage.rx"):
            assert f"util.{host}.{port}" in columns
        assert f"util.{host}.tier" in columns
        assert f"queue.{host}.tier" in columns
        assert f"backlog.{host}" in columns
    for column in (
        "util.array",
        "util.array.rx",
        "destage_backlog_bytes",
        "data_at_risk_bytes",
        "destage_waiting",
        "flows_in_flight",
        "read_iops",
        "write_iops",
        "read_mb_s",
        "write_mb_s",
        "write_p50_ms",
        "write_p99_ms",
        "read_p50_ms",
        "read_p99_ms",
    ):
        assert column in columns, column


def test_series_backlog_is_the_sum_of_hosts(result: Result) -> None:
    series = result.series
    per_host = series[[c for c in series.columns if c.startswith("backlog.")]].sum(axis=1)
    np.testing.assert_array_equal(per_host.to_numpy(), series["destage_backlog_bytes"].to_numpy())
    assert series["destage_backlog_bytes"].iloc[-1] == result.totals["destage_backlog_bytes"]


def test_series_rates_add_up_to_records(result: Result) -> None:
    series = result.series
    widths = np.diff(np.concatenate(([0.0], series.index.to_numpy())))
    records = result.records
    for op in ("read", "write"):
        part = records[records["op"] == op]
        assert (series[f"{op}_iops"] * widths).sum() == pytest.approx(len(part))
        assert (series[f"{op}_mb_s"] * widths).sum() * 1e6 == pytest.approx(
            part["size_bytes"].sum()
        )


def test_series_percentiles_are_each_intervals_own(result: Result) -> None:
    """Each interval's p50 and p99 per op are numpy's percentiles of the I/Os completed in it
    (``previous sample < complete_s <= sample``), exactly: NaN where it completed none."""
    series = result.series
    records = result.records
    times = series.index.to_numpy()
    starts = np.concatenate(([-np.inf], times[:-1]))
    complete = records["complete_s"].to_numpy()
    checked = 0
    for op in ("read", "write"):
        mine = (records["op"] == op).to_numpy()
        for start, end, (_, row) in zip(starts, times, series.iterrows(), strict=True):
            part = records["latency_ms"].to_numpy()[mine & (complete > start) & (complete <= end)]
            for name, q in (("p50_ms", 50.0), ("p99_ms", 99.0)):
                if len(part):
                    assert row[f"{op}_{name}"] == float(np.percentile(part, q))
                    checked += 1
                else:
                    assert math.isnan(row[f"{op}_{name}"])
    assert checked > 2 * len(times)  # most intervals completed I/Os of both ops


def test_series_utilizations_are_fractions(result: Result) -> None:
    utilization = result.series.filter(like="util.")
    assert ((utilization >= 0) & (utilization <= 1 + 1e-9)).all().all()
    busiest = utilization.max()
    assert busiest.idxmax() == "util.array"
    assert busiest["util.array"] == 0.632000065907599  # deterministic for seed 3


# -- breakdown and totals -------------------------------------------------------------------------


def test_breakdown_shape(result: Result) -> None:
    breakdown = result.breakdown
    assert list(breakdown.columns) == ["group", "write_mean_ms", *COMPONENTS, "dominant"]
    assert list(breakdown["group"]) == [
        *dict.fromkeys(result.measured.loc[result.measured["op"] == "write", "group"]),
        "all",
    ]
    assert set(breakdown["dominant"]) <= {c.removesuffix("_ms") for c in COMPONENTS}


def test_breakdown_means_add_up(result: Result) -> None:
    breakdown = result.breakdown.set_index("group")
    # float32 components (simcache.sim.collect.COMPONENT_DTYPE): each mean within 2**-24 of the
    # float64 one
    np.testing.assert_allclose(
        breakdown[list(COMPONENTS)].sum(axis=1), breakdown["write_mean_ms"], rtol=2.0**-24 * 5
    )
    writes = result.measured[result.measured["op"] == "write"]
    assert breakdown.loc["db", "write_mean_ms"] == pytest.approx(
        writes.loc[writes["group"] == "db", "latency_ms"].mean()
    )
    assert breakdown.loc["web", "dominant"] == "array"
    # deterministic for seed 3 (float32 components: was 0.32168606425015944)
    assert breakdown.loc["db", "network_ms"] == 0.3216860662266116
    assert (
        breakdown.loc["web", "network_ms"] == 0.13926530570264847
    )  # deterministic for seed 3 (float32 components: was 0.13926531191779887)


def test_totals(result: Result, scenario: Scenario) -> None:
    totals = result.totals
    assert totals["duration_s"] == DURATION
    assert (
        totals["destage_accepted_bytes"]
        == totals["destaged_bytes"] + totals["destage_backlog_bytes"]
    )
    assert (
        totals["vm_written_bytes"]
        == result.records.loc[result.records["op"] == "write", "size_bytes"].sum()
    )
    # One replica message per db write and two per logs write, of ceil(size / (1500 - 40)) packets
    # on 1GbE (MTU 1500, TCP/IP headers 40 bytes); the records hold 602 x 8 KiB and 260 x 64 KiB db
    # writes and 15 x 256 KiB logs writes (deterministic for seed 3), and no replica is in flight at
    # the end.
    writes = result.records[result.records["op"] == "write"]
    assert writes.groupby(["group", "size_bytes"]).size().to_dict() == {
        ("db", 8192): 602,
        ("db", 65536): 260,
        ("logs", 262144): 15,
        ("web", 4096): 161,
    }
    assert totals["replica_payload_bytes"] == 602 * 8192 + 260 * 65536 + 2 * 15 * 262144
    assert totals["peer_packets"] == 602 * 6 + 260 * 45 + 2 * 15 * 180
    # Framing adds 78 bytes a packet (headers 40, Ethernet framing 38): 29,835,264 + 78 x 20,712.
    assert totals["peer_wire_bytes"] == 29835264 + 78 * 20712  # deterministic for seed 3
    assert (
        totals["peer_wire_bytes"] <= totals["replica_payload_bytes"] + 78 * totals["peer_packets"]
    )
    assert totals["array_write_mb_s"] == pytest.approx(
        totals["array_written_bytes"] / DURATION / 1e6
    )
    assert totals["peer_packets"] > 0
    assert set(totals["tier_gc_wait_s_by_host"]) == {"host0", "host1", "host2"}
    assert totals["tier_gc_wait_s"] == sum(totals["tier_gc_wait_s_by_host"].values())


def test_every_numeric_total_is_in_the_metric_table(result: Result) -> None:
    """Checks validate ``totals.<name>`` against simcache.base.metrics.TOTALS at load time, so
    the table must be complete."""
    numeric = {name for name, value in result.totals.items() if not isinstance(value, dict)}
    assert numeric == set(TOTALS)


def test_replica_traffic_matches_policies(result: Result) -> None:
    """Every WB+1 write sends one replica and every WB+2 write two (no compression here)."""
    records = result.records
    writes = records[records["op"] == "write"]
    expected = (
        writes.loc[writes["group"] == "db", "size_bytes"].sum()
        + 2 * writes.loc[writes["group"] == "logs", "size_bytes"].sum()
    )
    # Replicas of I/Os still in flight at the end would be sent but not recorded: none here
    # (deterministic for seed 3).
    assert result.totals["replica_payload_bytes"] == expected


# -- meta and export ------------------------------------------------------------------------------


def test_meta(result: Result, scenario: Scenario) -> None:
    meta = result.meta
    assert meta["seed"] == 3
    assert meta["version"] == simcache.__version__
    assert meta["engine"] == simcache.native.choice.ENGINE and meta["engine"].startswith(
        ("compiled (mypyc): ", "Python: ")
    )
    # which engine ran the I/O path: the native one where built and able, else why not
    assert meta["run_by"] == native_run.choose(scenario, None)[1]
    assert meta["wall_time_s"] > 0
    assert meta["simulated_s"] == DURATION
    assert meta["warmup_s"] == WARMUP
    assert meta["ios"] == len(result.records)
    assert meta["scenario_name"] == "results"
    assert simcache.load_scenario(meta["scenario"]) == scenario


def test_to_json_content(result: Result) -> None:
    data = result.to_json()
    assert isinstance(json.dumps(data), str)
    assert set(data) == {"summary", "breakdown", "totals", "meta", "stable", "warnings"}
    assert data["stable"] is result.stable and data["warnings"] == [
        w.to_json() for w in result.warnings
    ]
    assert "scenario" not in data["meta"]
    assert data["meta"]["seed"] == 3
    assert len(data["summary"]) == len(result.summary)
    assert [row["group"] for row in data["breakdown"]] == list(result.breakdown["group"])


def test_to_json_is_strict_json(result: Result) -> None:
    data = result.to_json()
    json.dumps(data, allow_nan=False)
    empty = next(row for row in data["summary"] if row["group"] == "logs" and row["op"] == "read")
    assert empty["p99_ms"] is None


def test_save_round_trips(result: Result, tmp_path: Path) -> None:
    out = result.save(tmp_path / "run")
    for name in ("records", "series", "summary", "breakdown"):
        assert (out / f"{name}.csv").is_file()
        assert (out / f"{name}.parquet").is_file()
    pd.testing.assert_frame_equal(
        pd.read_parquet(out / "records.parquet"), result.records, check_dtype=False
    )
    pd.testing.assert_frame_equal(
        pd.read_parquet(out / "summary.parquet"), result.summary, check_dtype=False
    )
    assert len(pd.read_csv(out / "records.csv")) == len(result.records)
    series = pd.read_parquet(out / "series.parquet").set_index("time_s")
    pd.testing.assert_frame_equal(series, result.series, check_dtype=False)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["seed"] == 3
    assert meta["totals"]["destaged_bytes"] == result.totals["destaged_bytes"]


def test_simulate_arguments_override_the_run_table(scenario: Scenario) -> None:
    result = simcache.simulate(scenario, seed=11, duration=1.0)
    assert result.meta["seed"] == 11
    assert result.meta["simulated_s"] == 1.0
    assert result.records["complete_s"].max() <= 1.0
    assert result.series.index[-1] == 1.0  # 4 x 0.25 s, exact in binary


def test_simulate_accepts_a_dict_or_a_builtin_name() -> None:
    result = simcache.simulate(small(), duration=0.5)  # type: ignore[arg-type]
    assert result.meta["scenario_name"] == "results"
    assert len(result.records) == 598  # deterministic for seed 3
    pd.testing.assert_frame_equal(
        result.records,
        simcache.simulate(simcache.load_scenario(small()), duration=0.5).records,
        check_exact=True,
    )


# -- edge cases -----------------------------------------------------------------------------------


def idle_group() -> dict[str, Any]:
    """Two groups; ``idle`` is a closed loop whose duty cycle is off for the whole run."""
    data = small()
    data["run"].update(duration=1.0, warmup=0.0)
    data["groups"] = [
        data["groups"][0],
        {
            "name": "idle",
            "policy": "WB+0",
            "workload": {
                "mode": "closed",
                "think_time": "5ms",
                "duty_cycle": {"shape": "onoff", "on": "1s", "off": "5s", "phase": "1s"},
            },
        },
    ]
    return data


def test_a_run_with_no_io_still_has_a_summary() -> None:
    data = idle_group()
    data["groups"] = data["groups"][1:]
    result = simcache.simulate(data)  # type: ignore[arg-type]
    assert len(result.records) == 0
    assert list(result.records.columns) == RECORD_COLUMNS
    all_rows = result.summary[result.summary["group"] == "all"]
    assert list(all_rows["count"]) == [0, 0]
    assert len(result.series) == 4


def test_idle_group_still_has_summary_rows() -> None:
    result = simcache.simulate(idle_group())  # type: ignore[arg-type]
    rows = set(zip(result.summary["group"], result.summary["op"], strict=True))
    assert ("idle", "write") in rows
    assert ("idle", "read") in rows
    assert list(result.summary.set_index("group").loc["idle", "count"]) == [0, 0]


def test_breakdown_without_writes_names_no_dominant_component() -> None:
    data = small()
    data["groups"] = [data["groups"][1]]
    data["groups"][0]["workload"]["read_fraction"] = 1.0
    result = simcache.simulate(data, duration=0.5)  # type: ignore[arg-type]
    assert (result.records["op"] == "read").all()
    row = result.breakdown.set_index("group").loc["all"]
    assert math.isnan(row["write_mean_ms"])
    assert row["dominant"] == "none"


def test_repeated_host_indices_are_rejected() -> None:
    """Listing a host twice would give two VMs the same name; the scenario is rejected instead
    (names are unique otherwise: test_summary_by_vm_adds_up_to_groups)."""
    data = small()
    data["groups"] = [data["groups"][0]]
    data["groups"][0]["hosts"] = [0, 0]
    with pytest.raises(ScenarioError, match="host indices repeat"):
        simcache.load_scenario(data)


# -- sweep ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def swept(scenario: Scenario) -> pd.DataFrame:
    grid = {"groups.db.policy": ["WB+0", "WB+1"], "cluster.peer_link": ["1GbE", "10GbE"]}
    return simcache.sweep(scenario, grid, seeds=[1, 2], duration=0.5)


def test_sweep_has_one_row_per_point_and_seed(swept: pd.DataFrame) -> None:
    assert len(swept) == 2 * 2 * 2
    keys = set(
        zip(swept["groups.db.policy"], swept["cluster.peer_link"], swept["seed"], strict=True)
    )
    assert len(keys) == 8
    for column in (
        "db.write.p99_ms",
        "all.read.iops",
        "db.write.dominant",
        "bottleneck",
        "array_write_mb_s",
    ):
        assert column in swept.columns, column


def test_sweep_rows_match_single_runs(scenario: Scenario, swept: pd.DataFrame) -> None:
    row = swept[
        (swept["groups.db.policy"] == "WB+1")
        & (swept["cluster.peer_link"] == "10GbE")
        & (swept["seed"] == 2)
    ].iloc[0]
    variant = scenario.with_overrides({"groups.db.policy": "WB+1", "cluster.peer_link": "10GbE"})
    single = simcache.simulate(variant, seed=2, duration=0.5).summary.set_index(["group", "op"])
    assert row["db.write.count"] == single.loc[("db", "write"), "count"]
    assert row["db.write.p99_ms"] == single.loc[("db", "write"), "p99_ms"]


def test_sweep_policy_changes_peer_traffic(swept: pd.DataFrame) -> None:
    """WB+0 on db sends no db replicas, so less peer traffic than WB+1 at the same seed and link."""
    table = swept.set_index(["groups.db.policy", "cluster.peer_link", "seed"])["peer_wire_mb_s"]
    for link in ("1GbE", "10GbE"):
        for seed in (1, 2):
            assert table[("WB+0", link, seed)] < table[("WB+1", link, seed)]


def test_sweep_with_an_invalid_point_raises_scenario_error(scenario: Scenario) -> None:
    with pytest.raises(ScenarioError) as info:
        simcache.sweep(scenario, {"groups.logs.policy": ["WB+1", "WB+3"]}, seeds=[1], duration=0.5)
    assert info.value.source == "<sweep point {'groups.logs.policy': 'WB+3'}>"
    assert info.value.problems == [
        ("groups.2(logs).policy", "must be 'WT', 'WB+0', 'WB+1' or 'WB+2' (got 'WB+3')")
    ]
