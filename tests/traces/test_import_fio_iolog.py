"""fio iolog importer: versions 2 and 3, file actions, syncs and trims, errors naming line and
field."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.imports import imported_by

from simcache.base.errors import WorkloadFileError
from simcache.traces.formats import fio_iolog
from simcache.traces.trace import READ, SYNC, TRIM, WRITE
from simcache.workloads.ingest.imported import import_workload


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def write(tmp_path: Path, text: str, name: str = "trace.log") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


V2 = """fio version 2 iolog
/dev/sdb add
/dev/sdb open
/dev/sdb write 8192 4096
/dev/sdb read 0 512
/dev/sdb write 0 65536
/dev/sdb close
"""

V3 = """fio version 3 iolog
0 /dev/sdb add
20 /dev/sdb open
1000 /dev/sdb write 4096 8192
2500 /dev/sdb read 0 4096
3000 /dev/sdb sync 0 0
4000 /dev/sdb trim 8192 4096
1004000 /dev/sdb read 12288 4096
1004100 /dev/sdb close
"""


def test_version_2_keeps_file_order_with_no_clock(tmp_path: Path) -> None:
    imported = imported_by(fio_iolog, write(tmp_path, V2), {})
    trace = imported.trace
    assert trace is not None
    rows = trace.rows
    assert rows["offset"].tolist() == [8192, 0, 0]
    assert rows["size"].tolist() == [4096, 512, 65536]
    assert rows["op"].tolist() == [WRITE, READ, WRITE]
    assert rows["time"].tolist() == [0.0, 0.0, 0.0]
    assert all(math.isnan(x) for x in rows["latency"].tolist())
    assert trace.meta["has_times"] is False
    assert trace.meta["version"] == 2
    assert trace.meta["file_actions"] == {"add": 1, "open": 1, "close": 1}
    assert imported.duration is None
    assert imported.groups[0]["workload"]["trace"]["replay"] == "closed"
    assert (
        "a version 2 iolog has no timestamps: every I/O is at time 0 and the trace is replayed "
        "closed-loop, in file order" in (imported.warnings)
    )
    assert ("iolog version", "2") in imported.facts


def test_version_3_times_are_microseconds_from_the_first_io(tmp_path: Path) -> None:
    imported = imported_by(fio_iolog, write(tmp_path, V3), {})
    trace = imported.trace
    assert trace is not None
    rows = trace.rows
    # fio writes utime_since_now(): 1000 us is the first I/O, so it is time 0.
    assert rows["time"].tolist() == [0.0, 0.0015, 0.002, 0.003, 1.003]
    assert rows["op"].tolist() == [WRITE, READ, SYNC, TRIM, READ]
    assert rows["offset"].tolist() == [4096, 0, 0, 8192, 12288]
    assert trace.meta["has_times"] is True
    assert trace.meta["time_unit"] == "us"
    assert trace.meta["first_timestamp"] == 1000
    # the trace's length and a second for the last I/O
    assert imported.duration == pytest.approx(2.003)
    assert "replay" not in imported.groups[0]["workload"]["trace"]


def test_time_unit_option_reads_other_tools_timestamps(tmp_path: Path) -> None:
    trace = fio_iolog.load(write(tmp_path, V3), {"time_unit": "ms"})
    assert trace.rows["time"].tolist() == [0.0, 1.5, 2.0, 3.0, 1003.0]
    assert trace.meta["options"] == {"time_unit": "ms"}


def test_syncs_and_trims_are_counted_not_replayed(tmp_path: Path) -> None:
    imported = import_workload(write(tmp_path, V3), format="fio-iolog")
    assert imported.warnings == [
        "1 sync/flush and 1 trim commands are counted but not replayed "
        "(the model acknowledges a write when it is cached or replicated, so a flush adds no wait)"
    ]
    assert ("I/Os", "3 (2 reads, 1 writes)") in imported.facts
    assert ("bytes", "8,192 read, 8,192 written") in imported.facts


def test_datasync_and_sync_file_range_are_syncs(tmp_path: Path) -> None:
    text = (
        "fio version 2 iolog\nf add\nf open\nf write 0 4096\nf datasync 0 0\nf sync_file_range 0 "
        "4096\n"
    )
    trace = fio_iolog.load(write(tmp_path, text), {})
    assert trace.rows["op"].tolist() == [WRITE, SYNC, SYNC]


def test_each_file_is_a_device_and_a_group(tmp_path: Path) -> None:
    text = (
        "fio version 2 iolog\n/a add\n/b add\n/a open\n/b open\n/b read 0 4096\n/a write 512 512\n"
        "/b read 4096 4096\n"
    )
    imported = imported_by(fio_iolog, write(tmp_path, text), {})
    assert imported.trace is not None
    assert imported.trace.devices == ("/b", "/a")
    assert imported.trace.rows["device"].tolist() == [0, 1, 0]
    assert [g["workload"]["trace"]["devices"] for g in imported.groups] == [["/b"], ["/a"]]
    assert [g["name"] for g in imported.groups] == ["_b", "_a"]


def test_waits_and_ios_on_unopened_files_are_warned_about(tmp_path: Path) -> None:
    text = (
        "fio version 2 iolog\nf add\nf write 0 4096\nf wait 500 0\nf open\nf read 0 4096\nf close\n"
        "f read 0 4096\n"
    )
    imported = imported_by(fio_iolog, write(tmp_path, text), {})
    assert imported.trace is not None
    assert imported.trace.count == 3
    assert imported.trace.meta["skipped"] == {"wait": 1}
    assert (
        "1 wait lines ignored (fio's HOWTO and replay code disagree on what their value means)"
        in imported.warnings
    )
    assert "2 I/Os on a file that was added but not open at that point (kept)" in imported.warnings


def test_blank_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    trace = fio_iolog.load(write(tmp_path, "fio version 2 iolog\n\nf add\n   \nf read 0 1\n"), {})
    assert trace.count == 1
    assert trace.meta["skipped"] == {"blank": 2}


def test_scenario_from_a_small_trace_validates(tmp_path: Path) -> None:
    for text in (V2, V3):
        scenario = imported_by(fio_iolog, write(tmp_path, text), {}).scenario()
        (group,) = scenario.groups
        assert group.workload.mode == "trace"
        assert group.workload.trace is not None
        assert group.workload.trace.devices == ["/dev/sdb"]
        assert group.workload.trace.replay == ("closed" if text is V2 else "open")


def test_second_load_comes_from_the_cache(tmp_path: Path) -> None:
    path = write(tmp_path, V3)
    first = fio_iolog.load(path, {})
    second = fio_iolog.load(path, {})
    assert second.rows_path == first.rows_path
    assert second.rows.tobytes() == first.rows.tobytes()


def error_text(tmp_path: Path, text: str, options: dict[str, str] | None = None) -> str:
    path = write(tmp_path, text)
    with pytest.raises(WorkloadFileError) as caught:
        fio_iolog.load(path, options or {})
    message = str(caught.value)
    assert message.startswith(f"{path}: cannot import (1 problem)")
    return message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "fio version 2 iolog\nf add\nf open\nf frobnicate 0 4096\n",
            "line 4, action: unknown I/O action 'frobnicate'; fio's iolog has",
        ),
        (
            "fio version 2 iolog\nf add\nf reopen\n",
            "line 3, action: unknown file action 'reopen'; fio's iolog has add, open, close",
        ),
        (
            "fio version 2 iolog\nf add\nf read\n",
            "line 3, action: read needs OFFSET and LENGTH after it (bytes)",
        ),
        (
            "fio version 2 iolog\nf read 0 4096\n",
            "line 2, filename: I/O on 'f', which no earlier 'add' line named",
        ),
        (
            "fio version 2 iolog\nf open\n",
            "line 2, filename: open of 'f', which no earlier 'add' line named",
        ),
        (
            "fio version 2 iolog\nf add\nf read -4 4096\n",
            "line 3, offset: '-4' is not bytes from the file's start",
        ),
        ("fio version 2 iolog\nf add\nf read 0 4k\n", "line 3, length: '4k' is not bytes"),
        (
            "fio version 2 iolog\nf add\nf read 0 4294967296\n",
            "line 3, length: 4294967296 bytes is more than one I/O can be here",
        ),
        (
            "fio version 2 iolog\nf add\nf read 0 4096 extra\n",
            "line 3: expected FILENAME ACTION [OFFSET LENGTH], got 5 fields",
        ),
        (
            "fio version 3 iolog\n12.5 f add\n",
            "line 2, timestamp: '12.5' is not a whole number of us since the run began",
        ),
        (
            "fio version 3 iolog\n10 f add\n20 f read 0\n",
            "line 3: expected TIMESTAMP FILENAME ACTION [OFFSET LENGTH], got 4 fields",
        ),
        (
            "fio version 1 iolog\n",
            "line 1, header: expected 'fio version 2 iolog' or 'fio version 3 iolog' as the first "
            "line",
        ),
        (
            "",
            "line 1, header: expected 'fio version 2 iolog' or 'fio version 3 iolog' as the first "
            "line, found nothing",
        ),
    ],
)
def test_file_errors_name_line_and_field(tmp_path: Path, text: str, where: str) -> None:
    assert where in error_text(tmp_path, text)


def test_options_are_checked(tmp_path: Path) -> None:
    assert "options.speed: unknown option for the fio-iolog format; use time_unit" in error_text(
        tmp_path, V3, {"speed": "2"}
    )
    assert "options.time_unit: 'min' is not allowed; use one of us, ms, ns, s" in error_text(
        tmp_path, V3, {"time_unit": "min"}
    )
    assert "options.time_unit: a version 2 iolog has no timestamps; remove time_unit" in error_text(
        tmp_path, V2, {"time_unit": "ms"}
    )


def test_a_failed_import_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    error_text(tmp_path, "fio version 2 iolog\nf add\nf read 0 4096\nf bogus 0 1\n")
    assert list((tmp_path / "cache" / "traces").iterdir()) == []


def test_a_trace_of_only_syncs_has_nothing_to_replay(tmp_path: Path) -> None:
    path = write(tmp_path, "fio version 2 iolog\nf add\nf sync 0 0\n")
    with pytest.raises(WorkloadFileError, match="the trace holds no reads or writes to replay"):
        imported_by(fio_iolog, path, {})


@pytest.mark.parametrize(
    ("head", "claimed"),
    [
        ("fio version 2 iolog\n/dev/sdb add\n", True),
        ("fio version 3 iolog\r\n0 /dev/sdb add\r\n", True),
        ("fio version 1 iolog\n", False),
        # MSR CSV
        (
            "128166372003061629,web,0,Read,3072,4096,59840\n"
            "128166372016853766,web,0,Write,4096,512,30\n",
            False,
        ),
        ("[global]\nioengine=libaio\n[job1]\nrw=randread\n", False),  # fio job file
        ("time,op,offset,size\n0.1,R,4096,4096\n", False),  # plain CSV
        ("  8,0    0        1     0.000000000  4162  Q  WS 2048 + 8 [fio]\n", False),  # blkparse
        ("", False),
    ],
)
def test_sniff_claims_only_iologs(head: str, claimed: bool) -> None:
    assert fio_iolog.sniff(head) is claimed
