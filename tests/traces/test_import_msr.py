"""The SNIA MSR-Cambridge importer: FILETIME clock, devices, ops, latency, and errors that name
line and field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.imports import imported_by

from simcache.base.errors import WorkloadFileError
from simcache.spec.workload import Workload
from simcache.traces.formats import msr
from simcache.traces.trace import READ, WRITE

# 2007-02-22T17:00:00Z as a FILETIME: seconds from 1601-01-01 to 1970-01-01 (11644473600) plus the
# Unix time.
T0 = (11_644_473_600 + 1_172_163_600) * 10_000_000


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def write(tmp_path: Path, lines: list[str], name: str = "usr_0.csv") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


SMALL = [
    f"{T0 + 1234567},usr,0,Read,4096,8192,1500",
    f"{T0},usr,0,Write,0,4096,20000",
    f"{T0 + 15_000_000},src1,2,Write,1048576,65536,7",
    f"{T0 + 15_000_001},usr,1,Read,512,512,100",
    f"{T0 + 20_000_000},usr,0,read,8192,4096,3",
]


def test_times_are_seconds_from_the_earliest_filetime_exactly(tmp_path: Path) -> None:
    trace = msr.load(write(tmp_path, SMALL), {})
    rows = trace.rows
    # The second line is the earliest: the rows are sorted and it is time 0.
    assert rows["time"].tolist() == [0.0, 0.1234567, 1.5, 1.5000001, 2.0]
    assert trace.meta["origin_utc"] == "2007-02-22T17:00:00.0000000Z"
    assert trace.duration == 2.0


def test_origin_keeps_the_100ns_digits(tmp_path: Path) -> None:
    trace = msr.load(
        write(tmp_path, [f"{T0 + 86_400 * 10_000_000 + 1234567},usr,0,Read,0,512,1"]), {}
    )
    assert trace.meta["origin_utc"] == "2007-02-23T17:00:00.1234567Z"
    assert trace.rows["time"].tolist() == [0.0]


def test_response_time_becomes_latency_in_seconds(tmp_path: Path) -> None:
    rows = msr.load(write(tmp_path, SMALL), {}).rows
    # float32 in the row
    np.testing.assert_allclose(rows["latency"], [2e-3, 1.5e-4, 7e-7, 1e-5, 3e-7], rtol=1e-6)


def test_each_host_and_disk_is_a_device(tmp_path: Path) -> None:
    trace = msr.load(write(tmp_path, SMALL), {})
    assert trace.devices == ("usr:0", "src1:2", "usr:1")
    assert trace.rows["device"].tolist() == [0, 0, 1, 2, 0]
    summary = trace.summary()
    assert summary["usr:0"].counts == {"read": 2, "write": 1, "sync": 0, "trim": 0}
    assert summary["usr:0"].bytes["read"] == 8192 + 4096
    assert summary["src1:2"].span == 1048576 + 65536


def test_read_and_write_map_to_ops_in_any_case(tmp_path: Path) -> None:
    rows = msr.load(write(tmp_path, SMALL), {}).rows
    assert rows["op"].tolist() == [WRITE, READ, WRITE, READ, READ]
    assert rows["offset"].tolist() == [0, 4096, 1048576, 512, 8192]
    assert rows["size"].tolist() == [4096, 8192, 65536, 512, 4096]


def test_read_gives_one_trace_group_per_device_that_validates(tmp_path: Path) -> None:
    path = write(tmp_path, SMALL)
    imported = imported_by(msr, path, {})
    assert [g["name"] for g in imported.groups] == ["usr_0", "src1_2", "usr_1"]
    assert imported.groups[0]["workload"] == {
        "mode": "trace",
        "trace": {"path": str(path), "format": "msr", "devices": ["usr:0"]},
    }
    Workload.model_validate(imported.groups[0]["workload"])
    assert ("I/Os", "5 (3 reads, 2 writes)") in imported.facts
    assert ("first I/O", "2007-02-22T17:00:00.0000000Z") in imported.facts
    assert imported.duration == 3.0  # the trace's length and a second for the last I/O to complete
    # the earliest I/O is on the second line
    assert imported.warnings == [
        "1 row out of time order (the first at line 2): sorted by time, so the replay issues each "
        "I/O at its timestamp; if the file is a concatenation of per-CPU or per-host outputs this "
        "is expected, else check its lines"
    ]
    scenario = imported.scenario()
    assert [g.workload.mode for g in scenario.groups] == ["trace", "trace", "trace"]
    assert scenario.groups[1].workload.trace is not None and scenario.groups[
        1
    ].workload.trace.devices == ["src1:2"]


def test_empty_lines_are_skipped_and_reported(tmp_path: Path) -> None:
    imported = imported_by(msr, write(tmp_path, [SMALL[0], "", SMALL[1]]), {})
    assert imported.trace is not None and imported.trace.count == 2
    assert imported.warnings[0] == "1 empty lines skipped"
    assert imported.warnings[1].startswith("1 row out of time order (the first at line 3)")


@pytest.mark.parametrize(
    ("line", "where", "message"),
    [
        (
            f"{T0},usr,0,Read,12x,4096,10",
            "line 3, Offset",
            "expected a whole number of bytes, found '12x'",
        ),
        (f"{T0},usr,0,Read,-512,4096,10", "line 3, Offset", "-512 must not be negative"),
        (f"{T0},usr,0,Read,0,-4096,10", "line 3, Size", "-4,096 must not be negative"),
        (
            f"{T0},usr,0,Read,0,8589934592,10",
            "line 3, Size",
            "8,589,934,592 must be at most 4,294,967,295",
        ),
        (
            f"{T0},usr,0,Read,0,4096,1.5",
            "line 3, ResponseTime",
            "expected a whole number of 100 ns ticks, found '1.5'",
        ),
        (f"{T0},usr,0,Trim,0,4096,10", "line 3, Type", "'Trim' is not allowed; use Read or Write"),
        (
            f"{T0},usr,zero,Read,0,4096,10",
            "line 3, DiskNumber",
            "expected a disk number (a whole number), found 'zero'",
        ),
        (
            "yesterday,usr,0,Read,0,4096,10",
            "line 3, Timestamp",
            "expected a Windows FILETIME (100 ns ticks since 1601-01-01 UTC)",
        ),
        (
            f"{T0},usr,0,Read,0,4096",
            "line 3, ResponseTime",
            "missing value (each line has 7 fields: Timestamp, Hostname",
        ),
        (
            f"{T0},usr,0,Read,0,4096,10,extra",
            "line 3",
            "8 fields; expected 7 (Timestamp, Hostname, DiskNumber",
        ),
    ],
)
def test_a_bad_line_is_named_with_its_field(
    tmp_path: Path, line: str, where: str, message: str
) -> None:
    path = write(tmp_path, [SMALL[0], SMALL[1], line, SMALL[2]])
    with pytest.raises(WorkloadFileError) as caught:
        msr.load(path, {})
    assert str(caught.value).startswith(f"{path}: cannot import")
    assert f"  {where}: {message}" in str(caught.value)
    assert not list((tmp_path / "cache" / "traces").glob("*.rows"))  # a failed parse caches nothing


def test_an_error_in_a_later_chunk_names_its_line(tmp_path: Path) -> None:
    lines = [f"{T0 + i},usr,0,Write,{i * 512},512,10" for i in range(70_000)]
    lines[68_123] = f"{T0},usr,0,Write,0,4k,10"
    with pytest.raises(
        WorkloadFileError, match=r"line 68124, Size: expected a whole number of bytes, found '4k'"
    ):
        msr.load(write(tmp_path, lines), {})


def test_too_many_fields_in_a_later_chunk_names_its_line(tmp_path: Path) -> None:
    lines = [f"{T0 + i},usr,0,Write,{i * 512},512,10" for i in range(70_000)]
    lines[69_000] += ",9"
    with pytest.raises(WorkloadFileError, match=r"line 69001: 8 fields; expected 7"):
        msr.load(write(tmp_path, lines), {})


def test_text_that_is_not_utf8_is_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(f"{SMALL[0]}\n{T0},us\xffr,0,Read,0,512,1\n".encode("latin-1"))
    with pytest.raises(WorkloadFileError, match=r"line 2: not utf-8 text"):
        msr.load(path, {})


def test_options_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(
        WorkloadFileError, match=r"options\.hosts: unknown option for the msr format; it takes none"
    ):
        msr.load(write(tmp_path, SMALL), {"hosts": "usr"})


def test_sniff_wants_seven_fields_a_filetime_and_read_or_write(tmp_path: Path) -> None:
    assert msr.sniff("\n".join(SMALL) + "\n")
    assert msr.sniff(SMALL[0])
    assert msr.sniff("\n".join(SMALL[:3]) + "\n" + SMALL[3][:12])  # the head ends inside a line
    assert not msr.sniff("")
    assert not msr.sniff("1234,usr,0,Read,0,4096,10\n")  # a small number is no FILETIME
    assert not msr.sniff(f"{T0},usr,0,Open,0,4096,10\n")
    assert not msr.sniff(f"{T0},usr,0,Read,0,4096\n")
    assert not msr.sniff("time,op,offset,size\n0.1,R,0,4096\n")
    assert not msr.sniff("  8,0    1        1     0.000000000  4162  Q  WS 1234 + 8 [kworker]\n")
    assert not msr.sniff("[global]\nrw=randwrite\nbs=4k\n")
    assert not msr.sniff(SMALL[0] + "\nsomething else\n")


def test_the_first_error_stops_the_import_before_the_rest_is_parsed(tmp_path: Path) -> None:
    # Line 3 is bad; far beyond the first chunk, a line that is not UTF-8 would be an error of its
    # own if it were read.
    path = tmp_path / "big.csv"
    lines = [f"{T0 + i},usr,0,Write,{i * 512},512,10" for i in range(200_000)]
    lines[2] = f"{T0},usr,0,Write,0,-1,10"
    lines[199_000] = f"{T0},us\xffr,0,Write,0,512,10"
    path.write_bytes("".join(line + "\n" for line in lines).encode("latin-1"))
    with pytest.raises(WorkloadFileError, match=r"line 3, Size: -1 must not be negative"):
        msr.load(path, {})


def test_the_traced_systems_latency_is_reported_per_op_with_only_resolved_percentiles(
    tmp_path: Path,
) -> None:
    # 1,000 reads with response times 1..1000 x 10 us (100 ticks each), and 10 writes of 5 ms.
    lines = [f"{T0 + i * 1000},usr,0,Read,{4096 * i},4096,{100 * (i + 1)}" for i in range(1000)]
    lines += [f"{T0 + i * 1000 + 500},usr,0,Write,0,4096,50000" for i in range(10)]
    facts = dict(imported_by(msr, write(tmp_path, lines), {}).facts)
    expected = np.arange(1, 1001) * 0.01  # ms
    p50, p95, p99, p999 = np.percentile(expected, [50.0, 95.0, 99.0, 99.9])
    assert facts["read latency in the trace"] == (
        f"mean {expected.mean():.4g} ms, p50 {p50:.4g} ms, p95 {p95:.4g} ms, p99 {p99:.4g} ms, "
        f"p999 {p999:.4g} ms "
        "over 1,000 I/Os (the traced system's)"
    )
    # Ten writes resolve the median only: p95 needs 20 I/Os for one to lie above it.
    assert (
        facts["write latency in the trace"]
        == "mean 5 ms, p50 5 ms over 10 I/Os (the traced system's)"
    )


def test_a_copy_with_the_columns_names_first_is_read_as_without_them(tmp_path: Path) -> None:
    """Some copies of the traces start with "Timestamp,Hostname,...": sniffed as MSR and skipped,
    where it was guessed a generic CSV without a time column (review 63, item 11); a bad line
    after it keeps its own line number."""
    header = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"
    named = write(tmp_path, [header, *SMALL], "named.csv")
    assert msr.sniff(named.read_text())
    rows, plain = msr.load(named, {}).rows, msr.load(write(tmp_path, SMALL), {}).rows
    assert rows.tobytes() == plain.tobytes()
    bad = write(tmp_path, [header, SMALL[0], f"{T0},usr,0,Erase,0,4096,1"], "bad.csv")
    with pytest.raises(WorkloadFileError) as caught:
        msr.load(bad, {})
    assert "  line 3, " in str(caught.value)
