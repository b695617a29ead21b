"""Trace replay (``mode = "trace"``): the trace's own I/Os, at its own times, in its own order.

The traces are plain CSV files (``time,op,offset,size``) the tests write;
the CSV importer itself is tested in test_import_csv.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.paths import ROOT
from support.traces import LINE, random_rows, trace_scenario, write_trace

import simcache
from simcache.cli.main import main
from simcache.physics.cluster import read_cache_lines
from simcache.workloads.ingest.imported import import_workload
from simcache.workloads.replay import TraceStream


@pytest.fixture(autouse=True)
def _trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def test_open_replay_issues_exactly_the_traces_ios_at_their_timestamps(tmp_path: Path) -> None:
    rows = random_rows(3000, seed=3)
    trace = write_trace(tmp_path / "vm.csv", rows)
    result = simcache.simulate(trace_scenario(trace, duration=rows[-1][0] + 5.0))
    records = result.records.sort_values("issue_s", kind="stable")
    assert len(records) == len(rows)
    t0 = rows[0][0]
    expected_times = np.array([r[0] - t0 for r in rows])
    # Issue times are the trace's timestamps from its first I/O: the engine waits (t - now), which
    # lands on t exactly here; 1 ns allows for one rounding of a float sum.
    assert np.max(np.abs(records["issue_s"].to_numpy() - expected_times)) <= 1e-9
    for op in ("read", "write"):
        mine = records[records["op"] == op]
        theirs = [r for r in rows if r[1] == op]
        assert len(mine) == len(theirs)
        assert int(mine["size_bytes"].sum()) == sum(r[3] for r in theirs)


def reread_ratio(rows: list[tuple[float, str, int, int]], line: int) -> float:
    """Reads whose every line was touched by an earlier I/O (write or read), over all reads: an
    infinite cache's hit ratio."""
    seen: set[int] = set()
    hits = reads = 0
    for _, op, offset, size in rows:
        lines = range(offset // line, (offset + size - 1) // line + 1)
        if op == "read":
            reads += 1
            hits += all(x in seen for x in lines)
        seen.update(lines)
    return hits / reads


def test_read_hit_ratio_with_a_cache_larger_than_the_footprint_is_the_traces_own_rereference_ratio(
    tmp_path: Path,
) -> None:
    # 0.5 s between I/Os: each read miss has filled the cache before the next I/O is issued.
    rows = [
        (0.5 * i, op, off, size)
        for i, (_, op, off, size) in enumerate(random_rows(400, seed=5, blocks=200))
    ]
    trace = write_trace(tmp_path / "vm.csv", rows)
    scenario = trace_scenario(trace, duration=rows[-1][0] + 2.0)
    line = scenario.cluster.cache.line
    # larger than the trace's footprint
    assert read_cache_lines(scenario.cluster) * line > 200 * LINE + 65536
    records = simcache.simulate(scenario).records
    reads = records[records["op"] == "read"]
    measured = float((reads["path"] == "hit").mean())
    assert measured == pytest.approx(reread_ratio(rows, line), abs=1e-12)


def test_window_speed_and_repeat_map_trace_time_to_replay_time(tmp_path: Path) -> None:
    rows = [(float(t), "write", 4096 * t, 4096) for t in range(10)]  # one write a second, 0..9 s
    trace = write_trace(tmp_path / "w.csv", rows)
    scenario = trace_scenario(trace, duration=20.0, start="2s", end="6s", speed=2.0, repeat=3)
    issued = sorted(simcache.simulate(scenario).records["issue_s"])
    # Window [2, 6) holds t = 2, 3, 4, 5; at speed 2 a pass lasts (6 - 2) / 2 = 2 s.
    expected = [p * 2.0 + (t - 2) / 2.0 for p in range(3) for t in (2, 3, 4, 5)]
    assert issued == pytest.approx(expected, abs=1e-12)


def test_closed_replay_keeps_trace_order_at_the_given_depth(tmp_path: Path) -> None:
    # all at t = 0: open replay would issue them at once
    rows = [(0.0, "write", LINE * i, LINE) for i in range(50)]
    trace = write_trace(tmp_path / "c.csv", rows)
    scenario = trace_scenario(trace, duration=30.0, replay="closed", workload={"outstanding": 1})
    records = simcache.simulate(scenario).records.sort_values("issue_s", kind="stable")
    assert len(records) == 50
    # One outstanding I/O: each is issued when the one before it completes.
    issue, complete = records["issue_s"].to_numpy(), records["complete_s"].to_numpy()
    assert np.all(issue[1:] >= complete[:-1] - 1e-12)


def test_each_vm_of_a_group_replays_its_own_device(tmp_path: Path) -> None:
    rows = [(0.1 * i, "write", LINE * i, LINE * (1 + i % 2)) for i in range(40)]
    devices = [(*row, "sda" if i % 4 else "sdb") for i, row in enumerate(rows)]
    trace = tmp_path / "two.csv"
    trace.write_text(
        "time,op,offset,size,device\n"
        + "\n".join(",".join(str(v) for v in r) for r in devices)
        + "\n"
    )
    scenario = simcache.load_scenario(
        {
            **trace_scenario(write_trace(tmp_path / "x.csv", rows), 5.0).model_dump(mode="json"),
            "groups": [
                {
                    "name": "g",
                    "policy": "WB+0",
                    "hosts": [0, 1],
                    "workload": {"mode": "trace", "trace": {"path": str(trace), "format": "csv"}},
                }
            ],
        }
    )
    records = simcache.simulate(scenario).records
    per_vm = records.groupby("vm")["size_bytes"].agg(["count", "sum"])
    # Devices in name order: the first VM (host 0) replays sda, the second (host 1) sdb.
    sda = [r for r in devices if r[4] == "sda"]
    sdb = [r for r in devices if r[4] == "sdb"]
    assert per_vm["count"].tolist() == [len(sda), len(sdb)]
    assert per_vm["sum"].tolist() == [sum(r[3] for r in sda), sum(r[3] for r in sdb)]


def test_the_trace_sets_the_working_set_and_the_estimate_says_what_it_leaves_out(
    tmp_path: Path,
) -> None:
    rows = random_rows(500, seed=9, blocks=100)
    trace = write_trace(tmp_path / "vm.csv", rows)
    scenario = trace_scenario(trace, duration=3.0)
    assert scenario.data_bytes == max(off + size for _, _, off, size in rows)
    estimate = simcache.estimate(scenario)
    assert any("replays a trace" in note and "bursts" in note for note in estimate.notes)
    stream = TraceStream(
        scenario.groups[0].workload, scenario.groups[0].workload.trace.open(), "disk"
    )  # type: ignore[arg-type]
    assert stream.next_time() == 0.0


def test_a_missing_trace_or_device_is_named_in_the_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(simcache.ScenarioError) as missing:
        trace_scenario(tmp_path / "nope.csv", 5.0)
    assert missing.value.problems[0][0] == "groups.0(traced).workload.trace.path"
    assert "nope.csv" in missing.value.problems[0][1]
    trace = write_trace(tmp_path / "vm.csv", random_rows(20, seed=1))
    with pytest.raises(simcache.ScenarioError) as device:
        trace_scenario(trace, 5.0, devices=["sdz"])
    assert device.value.problems == [
        (
            "groups.0(traced).workload.trace.devices",
            "not in the trace: sdz; the trace's devices are disk",
        )
    ]


def test_synthetic_fields_are_refused_beside_a_trace(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "vm.csv", random_rows(20, seed=1))
    scenario = trace_scenario(trace, 5.0)
    # A dump (every field written, at its default) loads again, so variants and sweeps of a trace
    # scenario work.
    assert simcache.load_scenario(scenario.model_dump(mode="json")) == scenario
    assert scenario.with_overrides({"groups.traced.policy": "WB+2"}).groups[0].policy == "WB+2"
    data = scenario.model_dump(mode="json")
    data["groups"][0]["workload"]["iops"] = 100
    with pytest.raises(simcache.ScenarioError, match="iops describe a synthetic workload"):
        simcache.load_scenario(data)


def test_import_then_run_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = random_rows(300, seed=2)
    (tmp_path / "data").mkdir()
    trace = write_trace(tmp_path / "data" / "vm.csv", rows)
    out = tmp_path / "scenarios" / "vm.toml"
    out.parent.mkdir()
    assert main(["import", str(trace), "-o", str(out), "--policy", "WB+1"]) == 0
    text = out.read_text()
    # relative to the scenario file, so both can move together
    assert 'path = "../data/vm.csv"' in text
    assert main(["run", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "traced" not in printed and "vm" in printed
    imported = import_workload(trace)
    assert imported.format == "csv"
    assert (
        "I/Os",
        f"{len(rows):,} ({sum(r[1] == 'read' for r in rows):,} reads, "
        f"{sum(r[1] == 'write' for r in rows):,} writes)",
    ) in imported.facts


EXAMPLES = ROOT / "examples"


def test_the_readme_examples_import_and_run(tmp_path: Path) -> None:
    out = tmp_path / "vm-burst.toml"
    assert main(["import", str(EXAMPLES / "vm-burst.csv"), "--policy", "WB+1", "-o", str(out)]) == 0
    scenario = simcache.load_scenario(out)
    trace = scenario.groups[0].workload.trace.open()  # type: ignore[union-attr]
    assert trace.count == 6780
    # The run lasts a second past the last I/O: every traced I/O is issued.
    assert scenario.run.duration == pytest.approx(trace.duration + 1.0)
    result = simcache.simulate(scenario)
    assert len(result.records) == trace.count
    fio = tmp_path / "oltp.toml"
    assert main(["import", str(EXAMPLES / "oltp.fio"), "-o", str(fio)]) == 0
    workload = simcache.load_scenario(fio).groups[0].workload
    # rwmixread=70 holds; each direction is capped at 300 I/Os/s, so reads bind: 300 / 0.7 I/Os per
    # second.
    assert (workload.read_fraction, workload.iops) == (0.7, pytest.approx(300 / 0.7))
