"""The record schema is the one the engine writes and the records table reads; summary columns
come from one list."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import simcache
from simcache.base.metrics import ESTIMATED_COLUMNS, PERCENTILES, RECORD_METRICS, SUMMARY_COLUMNS
from simcache.sim import collect
from simcache.sim.engine import build
from simcache.sim.kernel.clock import run_until


def test_records_frame_reads_every_field_by_name() -> None:
    write = (1, True, 4096, 0.5, 0.502, 0.0005, 0.001, 0.0004, 0.0001, 0.0, collect.PATH_WRITE)
    miss = (0, False, 8192, 0.25, 0.26, 0.0, 0.004, 0.0, 0.0, 0.006, collect.PATH_MISS)
    frame = collect.records_frame([write, miss], ["a", "b"], ["g0", "g1"], ["host0", "host1"])
    assert list(frame.columns) == list(collect.RECORD_COLUMNS)
    first, second = frame.to_dict(orient="records")  # sorted by completion time
    assert (first["vm"], first["group"], first["host"], first["op"], first["path"]) == (
        "a",
        "g0",
        "host0",
        "read",
        "miss",
    )
    assert (second["vm"], second["op"], second["path"], second["size_bytes"]) == (
        "b",
        "write",
        "write",
        4096,
    )
    assert second["latency_ms"] == pytest.approx(2.0)
    assert [second[c] for c in collect.COMPONENTS] == pytest.approx([0.5, 1.0, 0.4, 0.1, 0.0])
    assert first["array_ms"] == pytest.approx(6.0) and first["issue_s"] == 0.25


def test_an_empty_run_gives_an_empty_table_with_every_column() -> None:
    frame = collect.records_frame([], [], [], [])
    assert list(frame.columns) == list(collect.RECORD_COLUMNS) and len(frame) == 0


def test_the_engine_writes_records_in_the_schema() -> None:
    scenario = simcache.load_scenario("default").with_duration(1.0)
    model = build(scenario, seed=3)
    run_until(model.clock, 0.3)
    assert model.records
    for record in model.records:
        assert len(record) == len(collect.RECORD_FIELDS)
        assert record[collect.COMPLETED] >= record[collect.ISSUED]
        latency = record[collect.COMPLETED] - record[collect.ISSUED]
        parts = sum(record[collect.LOCAL_TIER : collect.ARRAY + 1])
        assert math.isclose(parts, latency, rel_tol=1e-9, abs_tol=1e-12)
        assert (record[collect.PATH] == collect.PATH_WRITE) == record[collect.IS_WRITE]


def test_summary_columns_are_one_list() -> None:
    result = simcache.simulate("default", duration=1.0, seed=1)
    assert list(result.summary.columns) == ["group", "op", *SUMMARY_COLUMNS]
    assert set(ESTIMATED_COLUMNS) <= set(SUMMARY_COLUMNS)
    # checks can name every summary figure but the CI and the list of lower bounds (text)
    assert set(SUMMARY_COLUMNS) - {"mean_ci95_ms", "lower_bounds"} <= set(RECORD_METRICS)
    writes = result.measured[result.measured["op"] == "write"]["latency_ms"]
    row = result.summary[
        (result.summary["group"] == "all") & (result.summary["op"] == "write")
    ].iloc[0]
    for column, q in PERCENTILES.items():
        assert row[column] == np.percentile(writes, q)


def _frame_as_before(
    records: list[collect.Record], names: list[str], groups: list[str], hosts: list[str]
) -> pd.DataFrame:
    """The records table as it was built before blocks: one 2D array, then pandas' stable two-key
    sort."""
    data = np.array(records, dtype=np.float64)
    vm = data[:, collect.VM].astype(np.int64)
    frame = pd.DataFrame(
        {
            "vm": np.array(names, dtype=object)[vm],
            "group": np.array(groups, dtype=object)[vm],
            "host": np.array(hosts, dtype=object)[vm],
            "op": np.where(data[:, collect.IS_WRITE] > 0, "write", "read"),
            "path": np.array(collect.PATHS)[data[:, collect.PATH].astype(np.int64)],
            "size_bytes": data[:, collect.SIZE].astype(np.uint32),
            "issue_s": data[:, collect.ISSUED],
            "complete_s": data[:, collect.COMPLETED],
            "latency_ms": (data[:, collect.COMPLETED] - data[:, collect.ISSUED]) * 1e3,
        }
    )
    for name, i in zip(
        collect.COMPONENTS, range(collect.LOCAL_TIER, collect.ARRAY + 1), strict=True
    ):
        frame[name] = (data[:, i] * 1e3).astype(collect.COMPONENT_DTYPE)
    return frame.sort_values(["complete_s", "vm"], kind="stable").reset_index(drop=True)


def test_records_drained_into_blocks_give_the_same_table_as_one_list() -> None:
    """The engine moves records into typed blocks at every sample; the table is the one a single
    list gave (sorted by pandas), value for value: size uint32, components float32 ms rounded
    once from float64."""
    scenario = simcache.load_scenario("default").with_duration(3.0)
    model = build(scenario, seed=5)
    run_until(model.clock, 3.0)
    records = list(model.records)
    names = [vm.name for vm in model.vms]
    groups = [scenario.groups[vm.group].name for vm in model.vms]
    hosts = [vm.host.name for vm in model.vms]
    blocks = collect.RecordBlocks()
    rest = list(records)
    for cut in (len(rest) // 3, len(rest) // 2):  # two drains mid-run, the rest left in the list
        part, rest = rest[:cut], rest[cut:]
        collect.drain(part, blocks)
        assert part == []
    frame = collect.records_frame(rest, names, groups, hosts, blocks)
    expected = _frame_as_before(records, names, groups, hosts)
    text = ["vm", "group", "host", "op", "path"]
    # one- or two-byte codes, not a string a row
    assert all(isinstance(frame[c].dtype, pd.CategoricalDtype) for c in text)
    for column in text:
        # sorts and groups like the strings
        assert list(frame[column].cat.categories) == sorted(frame[column].cat.categories)
    pd.testing.assert_frame_equal(
        frame.astype(dict.fromkeys(text, expected["vm"].dtype)), expected, check_exact=True
    )


def test_records_out_of_completion_order_are_sorted_like_pandas() -> None:
    """The engine appends in completion order (ties only among equal times); records in any order
    still give the table pandas' stable sort by (complete_s, vm) gives, ties in record order."""
    rng = np.random.default_rng(7)
    n = 500
    records: list[collect.Record] = [
        (
            int(rng.integers(4)),
            bool(w),
            4096,
            0.0,
            float(rng.integers(50)) / 10,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            int(w) * 0,
        )
        for w in rng.integers(2, size=n)
    ]
    names, groups, hosts = ["d", "c", "b", "a"], ["g"] * 4, ["h0", "h1", "h0", "h1"]
    frame = collect.records_frame(records, names, groups, hosts)
    expected = _frame_as_before(records, names, groups, hosts)
    text = ["vm", "group", "host", "op", "path"]
    pd.testing.assert_frame_equal(
        frame.astype(dict.fromkeys(text, expected["vm"].dtype)), expected, check_exact=True
    )
    # completion order, ties as they come
    in_order = sorted(records, key=lambda r: r[collect.COMPLETED])
    frame = collect.records_frame(in_order, names, groups, hosts)
    expected = _frame_as_before(in_order, names, groups, hosts)
    pd.testing.assert_frame_equal(
        frame.astype(dict.fromkeys(text, expected["vm"].dtype)), expected, check_exact=True
    )


def test_a_record_block_holds_45_bytes_an_io() -> None:
    """vm int32 4 + flags 1 + size uint32 4 + issued, completed float64 16 + five float32
    components 20 = 45 bytes."""
    assert collect.BLOCK_BYTES_PER_IO == 45
    blocks = collect.RecordBlocks()
    blocks.drain([(0, True, 2**33, 0.0, 1.0, 0.5, 0.5, 0.0, 0.0, 0.0, collect.PATH_WRITE)])
    # a size past uint32 widens the column instead of wrapping
    assert blocks.take(collect.SIZE).tolist() == [2**33]
