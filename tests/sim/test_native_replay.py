"""Trace replays in the native engine (``TRACE_REFILL``: ``engine/streams.pxi``, ``_trace_rows``;
``engine/drivers.pxi``, ``_trace_arrivals``) against the Python engine's
(``drivers._trace_open_loop``, ``drivers._trace_closed_slot``): bit-identical records, samples,
counters, unfinished I/Os and event counts, open and closed, in a window, sped up and repeated,
past one refill's rows, with rows at one instant, unaligned I/Os, several devices, generated
groups beside, warm caches, a stop request and a run without records.

Skipped when the extension is not built (install with ``SIMCACHE_NATIVE=1``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.native import assert_both_engines_agree, columns, random_examples
from support.traces import random_rows, trace_scenario, write_trace

from simcache.sim import native_run
from simcache.sim.control import Cancel
from simcache.sim.engine import build, run_scenario
from simcache.sim.kernel.clock import run_until
from simcache.spec import load_scenario
from simcache.workloads.replay import BLOCK_ROWS, TraceStream

pytestmark = pytest.mark.skipif(
    not native_run.available(),
    reason="the native engine is not built (pip install with SIMCACHE_NATIVE=1, Cython 3)",
)


@pytest.fixture(autouse=True)
def _trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_TRACE_CACHE", str(tmp_path / "cache"))


def _rows(n: int, seed: int = 3, rate: float = 400.0) -> list[tuple[float, str, int, int]]:
    return random_rows(n, seed=seed, rate=rate)


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        ("open, write-back with a replica", {}),
        ("open, write-through", {"policy": "WT"}),
        ("open, a window sped up and repeated", {"policy": "WB+0", "start": "1s", "end": "4s"}),
        ("closed, two outstanding", {"replay": "closed", "workload": {"outstanding": 2}}),
        (
            "closed, a think time",
            {"replay": "closed", "workload": {"outstanding": 1, "think_time": "1ms"}},
        ),
    ],
)
def test_a_replay_runs_natively_bit_identically(tmp_path: Path, name: str, fields: Any) -> None:
    rows = _rows(3000)
    trace = write_trace(tmp_path / "vm.csv", rows)
    extra = {"speed": 2.0, "repeat": 3} if "start" in fields else {}
    scenario = trace_scenario(trace, duration=rows[-1][0] + 1.0, **fields, **extra)
    _, native, fields = assert_both_engines_agree(scenario)
    assert native.run_by == native_run.NATIVE
    assert len(fields[0]) > 1000, name


def test_a_replay_cut_short_leaves_what_it_did_not_issue(tmp_path: Path) -> None:
    """The run ends before the trace: the same records and unfinished I/Os, and the stream is
    handed back where the engine left it (the next row is the first one not issued)."""
    rows = _rows(3000)
    trace = write_trace(tmp_path / "vm.csv", rows)
    scenario = trace_scenario(trace, duration=3.0)
    _, native, fields = assert_both_engines_agree(scenario)
    issued = native.counters.issued_ios
    assert issued == len(fields[0]) + len(native.unfinished) < len(rows)


def test_more_rows_than_one_refill_holds_and_rows_at_one_instant(tmp_path: Path) -> None:
    """Past BLOCK_ROWS rows the engine reads the next rows from the stream; rows sharing a time
    start together with no event between them, as the Python replay starts them."""
    rng = np.random.default_rng(7)
    n = BLOCK_ROWS + 5000
    # bursts: about four rows a timestamp
    times = np.round(np.repeat(np.cumsum(rng.exponential(1 / 2000, n // 4 + 1)), 4)[:n], 9)
    rows = [
        (
            float(t),
            "write" if rng.random() < 0.3 else "read",
            int(rng.integers(0, 800)) * 4096,
            4096,
        )
        for t in times
    ]
    trace = write_trace(tmp_path / "burst.csv", rows)
    scenario = trace_scenario(trace, duration=float(times[-1]) + 0.5, policy="WB+0")
    fields = assert_both_engines_agree(scenario)[2]
    assert len(fields[0]) == n


def test_unaligned_ios_of_several_devices_beside_a_generated_group(tmp_path: Path) -> None:
    """Sector-aligned offsets and sizes (blktrace's 512 bytes), two devices replayed by two VMs,
    a generated group on the other hosts, warm caches: bit-identical."""
    rng = np.random.default_rng(11)
    lines = ["time,op,offset,size,device"]
    t = 0.0
    for _ in range(4000):
        t += float(rng.exponential(1 / 800))
        op = "write" if rng.random() < 0.4 else "read"
        lines.append(
            f"{t:.9f},{op},{int(rng.integers(0, 200_000)) * 512},"
            f"{int(rng.integers(1, 65)) * 512},{'sda' if rng.random() < 0.5 else 'sdb'}"
        )
    trace = tmp_path / "two.csv"
    trace.write_text("\n".join(lines) + "\n")
    base = trace_scenario(write_trace(tmp_path / "x.csv", _rows(10)), 5.0)
    data = base.model_dump(mode="json")
    data["groups"] = [
        {
            "name": "traced",
            "policy": "WB+1",
            "hosts": [0],
            "vms_per_host": 2,
            "workload": {"mode": "trace", "trace": {"path": str(trace), "format": "csv"}},
        },
        {
            "name": "generated",
            "policy": "WB+0",
            "hosts": [1, 2],
            "workload": {"mode": "open", "iops": 300, "working_set": "64MiB"},
        },
    ]
    for warm in (False, True):
        data["cluster"]["cache"] = {"warm": warm}
        assert_both_engines_agree(load_scenario(data))


@pytest.mark.parametrize("policy", ["WT", "WB+0", "WB+1"])
def test_empty_and_large_ios_as_the_python_engine_takes_them(tmp_path: Path, policy: str) -> None:
    """A trace may hold 0-byte reads and writes (an empty read touches no line: a hit, even at
    offset 0, where C's division would have given line 0) and 4 MiB ones."""
    rows = [
        (0.001 * i, "write" if i % 3 else "read", (i * 7919 % 1000) * 512, (0, 512, 4 << 20)[i % 3])
        for i in range(2000)
    ]
    scenario = trace_scenario(write_trace(tmp_path / "z.csv", rows), 3.0, policy=policy)
    fields = assert_both_engines_agree(scenario)[2]
    assert len(fields[0]) > 300


def test_writes_of_gigabytes(tmp_path: Path) -> None:
    """Written through, 3 GiB traced I/Os run natively, bit-identically; written back, a write
    of 2 GiB or more goes to the Python engine (the native destage buffer's entry holds less),
    which the selector names."""
    rows = [(0.0, "write", 0, 3 << 30), (0.5, "read", 4096, 4096), (1.0, "read", 0, 3 << 30)]
    trace = write_trace(tmp_path / "big.csv", rows)
    assert len(assert_both_engines_agree(trace_scenario(trace, 100.0, policy="WT"))[2][0]) == 3
    data = trace_scenario(trace, 100.0, policy="WB+0").model_dump(mode="json")
    data["cluster"]["destager"] = {"capacity": "8GiB"}
    assert native_run.unsupported(load_scenario(data)) == (
        "group 'traced': a traced write of 2 GiB or more"
    )


def test_a_stopped_replay_and_a_replay_without_records(tmp_path: Path) -> None:
    rows = _rows(3000)
    scenario = trace_scenario(write_trace(tmp_path / "vm.csv", rows), duration=8.0)
    token = Cancel()
    token.cancel("test")
    # (the engines poll a stop request at different event counts: each accounts for its I/Os)
    stopped = run_scenario(scenario, native=True, cancel=token)
    assert stopped.run_by == native_run.NATIVE
    assert stopped.stopped_at_s is not None and stopped.stopped_at_s < 8.0
    recorded = len(columns(stopped)[0])
    assert 0 < recorded < len(rows)
    assert stopped.counters.issued_ios == recorded + len(stopped.unfinished)
    streams = [
        run_scenario(scenario, native=native, keep_records=False).stream for native in (False, True)
    ]
    python, native = streams
    assert python is not None and native is not None
    for name in ("hist", "count", "bytes", "sum_ms", "max_ms"):
        assert np.array_equal(getattr(python, name), getattr(native, name)), name
    assert python.completed == native.completed == len(rows)


def test_the_native_engine_takes_a_replay_the_selector_once_refused(tmp_path: Path) -> None:
    scenario = trace_scenario(write_trace(tmp_path / "vm.csv", _rows(50)), 1.0)
    assert native_run.unsupported(scenario) is None
    record = run_scenario(scenario)
    assert record.run_by == native_run.NATIVE
    assert len(columns(record)[0]) == 50


def test_the_engine_hands_the_replay_back_where_it_left_it(tmp_path: Path) -> None:
    """At the run's end the stream holds what the engine read and did not issue
    (``TraceStream.rest``): it goes on as the Python engine's stream at the same time does."""
    rows = _rows(3000)
    scenario = trace_scenario(write_trace(tmp_path / "vm.csv", rows), duration=8.0)
    streams = []
    for native in (False, True):
        model = build(scenario, scenario.run.seed, native=native)
        assert (model.native is not None) == native
        if native:
            assert native_run.run(model, 2.0)
        else:
            run_until(model.clock, 2.0)
        streams.append(model.vms[0].stream)
    python, native = streams
    assert isinstance(python, TraceStream) and isinstance(native, TraceStream)
    assert 0 < native.issued == python.issued < len(rows)
    for _ in range(BLOCK_ROWS + 10):  # into the rows the engine did not read
        assert native.next_time() == python.next_time()
        assert native.next_io() == python.next_io()


@st.composite
def _replays(draw: st.DrawFn) -> tuple[list[str], dict[str, Any]]:
    """A random trace (times with ties, reads and writes of 0 bytes to 1 MiB at sector offsets,
    one or two devices) and a replay of it: open or closed, a window, speed and repeats, a policy,
    one to three hosts, warm or cold caches, a generated group beside it or not."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 1500))
    rate = draw(st.sampled_from([50.0, 500.0, 5000.0]))
    times = np.cumsum(rng.exponential(1 / rate, n))
    if draw(st.booleans()):
        times = np.round(times, 3)  # ties
    sizes = rng.choice([0, 512, 4096, 8192, 65536, 1 << 20], n, p=[0.02, 0.1, 0.5, 0.2, 0.15, 0.03])
    devices = rng.choice(["sda", "sdb"], n) if draw(st.booleans()) else np.array(["sda"] * n)
    write_fraction = draw(st.sampled_from([0.0, 0.3, 1.0]))
    lines = ["time,op,offset,size,device"] + [
        f"{t:.9f},{'write' if rng.random() < write_fraction else 'read'},"
        f"{int(rng.integers(0, 100_000)) * 512},{size},{device}"
        for t, size, device in zip(times, sizes, devices, strict=True)
    ]
    last = float(times[-1])
    trace: dict[str, Any] = {"format": "csv", "replay": draw(st.sampled_from(["open", "closed"]))}
    if n > 10 and draw(st.booleans()):  # (a start inside the trace's span, from its first I/O)
        trace["start"] = (last - float(times[0])) * draw(st.sampled_from([0.0, 0.25]))
        trace["speed"] = draw(st.sampled_from([0.5, 1.0, 4.0]))
        trace["repeat"] = draw(st.integers(1, 3))
    workload: dict[str, Any] = {"mode": "trace", "trace": trace}
    if trace["replay"] == "closed":
        workload["outstanding"] = draw(st.integers(1, 4))
        workload["think_time"] = draw(st.sampled_from([0.0, 0.0005]))
    hosts = draw(st.integers(1, 3))
    policies = ["WT", "WB+0"] + ["WB+1"] * (hosts > 1) + ["WB+2"] * (hosts > 2)
    groups: list[dict[str, Any]] = [
        {
            "name": "traced",
            "policy": draw(st.sampled_from(policies)),
            "hosts": [0],
            "vms_per_host": len(set(devices.tolist())),
            "workload": workload,
        }
    ]
    if hosts > 1 and draw(st.booleans()):
        groups.append(
            {
                "name": "generated",
                "policy": "WB+0",
                "hosts": list(range(1, hosts)),
                "workload": {"mode": "open", "iops": 200, "working_set": "32MiB"},
            }
        )
    data = {
        "name": "random-replay",
        "run": {"duration": min(3.0, last + 0.5), "warmup": 0.0, "sample_interval": 0.25},
        "cluster": {
            "hosts": hosts,
            "tier": "sata-ssd-s3700-field",
            "peer_link": "10GbE",
            "storage_link": draw(st.sampled_from(["1GbE", "10GbE"])),
            "cache": {"warm": draw(st.booleans())},
        },
        "array": {"profile": "array-14x7200"},
        "groups": groups,
    }
    return lines, data


@random_examples(12)
@given(_replays())
def test_random_replays_are_bit_identical(
    tmp_path_factory: pytest.TempPathFactory, replay: tuple[list[str], dict[str, Any]]
) -> None:
    lines, data = replay
    trace = tmp_path_factory.mktemp("replay") / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    data["groups"][0]["workload"]["trace"]["path"] = str(trace)
    assert_both_engines_agree(load_scenario(data))
