"""blkparse importer: events D/Q/C, latencies, requeues, merges, flushes, summary blocks, errors
naming line and field."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from support.imports import imported_by

from simcache.base.errors import WorkloadFileError
from simcache.traces.formats import blkparse
from simcache.traces.trace import READ, SYNC, TRIM, WRITE
from simcache.workloads.ingest.imported import import_workload


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def line(
    device: str, cpu: int, seq: int, time: str, pid: int, action: str, rwbs: str, tail: str
) -> str:
    """One event line laid out as blkparse's default format prints it."""
    major, minor = device.split(",")
    return (
        f"{int(major):3d},{int(minor):<3d} {cpu:2d} {seq:8d} {time:>14s} {pid:5d} {action:>2s} "
        f"{rwbs:>3s} {tail}\n"
    )


def write(tmp_path: Path, *lines: str, name: str = "trace.txt") -> Path:
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


def line_warnings(warnings: list[str]) -> list[str]:
    """The warnings about the file's lines, without the one that a trace of a few milliseconds,
    as the ones here, gets for lying inside the imported run's warm-up (tested in
    test_import_review65.py)."""
    return [warning for warning in warnings if "inside the run's" not in warning]


def latencies(rows: np.ndarray) -> list[float | None]:
    return [None if math.isnan(x) else x for x in rows["latency"].tolist()]


SUMMARY = """
CPU0 (8,0):
 Reads Queued:           1,        8KiB\t Writes Queued:           1,        4KiB
 Read Dispatches:        1,        8KiB\t Write Dispatches:        1,        4KiB
Total (8,0):
 Reads Queued:           1,        8KiB\t Writes Queued:           1,        4KiB

Throughput (R/W): 8KiB/s / 4KiB/s
Events (8,0): 9 entries
Skips: 0 forward (0 -   0.0%)
"""

BASIC = [
    line("8,0", 0, 1, "0.000000000", 4162, "Q", "WS", "2048 + 8 [fio]"),
    line("8,0", 0, 2, "0.000001000", 4162, "G", "WS", "2048 + 8 [fio]"),
    line("8,0", 0, 3, "0.000002000", 4162, "P", "N", "[fio]"),
    line("8,0", 0, 4, "0.000010000", 4162, "D", "WS", "2048 + 8 [fio]"),
    line("8,0", 1, 1, "0.000020000", 4163, "Q", "R", "4096 + 16 [fio]"),
    line("8,0", 1, 2, "0.000030000", 4163, "D", "R", "4096 + 16 [fio]"),
    line("8,0", 0, 5, "0.000510000", 0, "C", "WS", "2048 + 8 [0]"),
    line("8,0", 1, 3, "0.001030000", 0, "C", "R", "4096 + 16 [0]"),
    line("8,0", 0, 6, "0.002010000", 215, "D", "FWS", "[jbd2/sda1-8]"),
    line("8,0", 0, 7, "0.002110000", 0, "C", "FWS", "0 [0]"),
]


def test_issue_events_get_the_device_latency(tmp_path: Path) -> None:
    imported = imported_by(blkparse, write(tmp_path, *BASIC, SUMMARY), {})
    trace = imported.trace
    assert trace is not None
    rows = trace.rows
    # Time 0 is the first D (10 us); latency = C time - D time of the same request.
    assert rows["time"].tolist() == [0.0, 0.00002, 0.002]
    assert rows["op"].tolist() == [WRITE, READ, SYNC]
    assert rows["offset"].tolist() == [2048 * 512, 4096 * 512, 0]
    assert rows["size"].tolist() == [4096, 8192, 0]
    assert latencies(rows) == [np.float32(0.0005), np.float32(0.001), None]
    assert trace.devices == ("8,0",)
    assert trace.meta["event"] == "D"
    assert trace.meta["first_timestamp"] == "0.000010000"
    assert trace.meta["events"] == {"Q": 2, "G": 1, "P": 1, "D": 3, "C": 3}
    assert trace.meta["summary_line"] == len(BASIC) + 2
    assert line_warnings(imported.warnings) == [
        "not turned into I/Os: 1 P events",
        "1 sync/flush and 0 trim commands are counted but not replayed "
        "(the model acknowledges a write when it is cached or replicated, so a flush adds no wait)",
    ]
    assert ("event", "D (issued to the device)") in imported.facts
    assert ("I/Os", "2 (1 reads, 1 writes)") in imported.facts


def test_queue_events_get_the_whole_stack_latency(tmp_path: Path) -> None:
    trace = blkparse.load(write(tmp_path, *BASIC), {"event": "Q"})
    rows = trace.rows
    assert rows["time"].tolist() == [0.0, 0.00002]
    assert latencies(rows) == [np.float32(0.00051), np.float32(0.00101)]


def test_completion_events_are_placed_at_their_completion(tmp_path: Path) -> None:
    trace = blkparse.load(write(tmp_path, *BASIC), {"event": "C"})
    rows = trace.rows
    assert rows["time"].tolist() == [0.0, 0.00052, 0.0016]
    assert rows["op"].tolist() == [WRITE, READ, SYNC]
    assert latencies(rows) == [np.float32(0.0005), np.float32(0.001), None]


def test_a_requeue_cancels_the_issue_and_the_next_issue_counts(tmp_path: Path) -> None:
    lines = [
        line("8,16", 0, 1, "1.000000000", 7, "D", "W", "100 + 8 [kworker/0:1]"),
        line("8,16", 0, 2, "1.000100000", 7, "R", "W", "100 + 8 [0]"),
        line("8,16", 0, 3, "1.000300000", 7, "D", "W", "100 + 8 [kworker/0:1]"),
        line("8,16", 0, 4, "1.000700000", 0, "C", "W", "100 + 8 [0]"),
    ]
    imported = imported_by(blkparse, write(tmp_path, *lines), {})
    assert imported.trace is not None
    rows = imported.trace.rows
    assert rows["time"].tolist() == [0.0]
    assert latencies(rows) == [np.float32(0.0004)]
    assert imported.trace.meta["first_timestamp"] == "1.000000000"
    assert imported.warnings == [
        "not turned into I/Os: 1 requeues (the request is issued again later)"
    ]


BACK_MERGE = [
    line("8,0", 0, 1, "0.000000000", 9, "Q", "W", "100 + 8 [dd]"),
    line("8,0", 0, 2, "0.000001000", 9, "G", "W", "100 + 8 [dd]"),
    line("8,0", 0, 3, "0.000002000", 9, "Q", "W", "108 + 8 [dd]"),
    line("8,0", 0, 4, "0.000003000", 9, "M", "W", "108 + 8 [dd]"),
    line("8,0", 0, 5, "0.000004000", 9, "I", "W", "100 + 16 [dd]"),
    line("8,0", 0, 6, "0.000005000", 9, "D", "W", "100 + 16 [dd]"),
    line("8,0", 0, 7, "0.000105000", 0, "C", "W", "100 + 16 [0]"),
]


def test_merged_bios_count_as_queued_ios_but_once_as_issued(tmp_path: Path) -> None:
    path = write(tmp_path, *BACK_MERGE)
    queued = imported_by(blkparse, path, {"event": "Q"})
    issued = imported_by(blkparse, path, {"event": "D"})
    assert queued.trace is not None and issued.trace is not None
    q_rows, d_rows = queued.trace.rows, issued.trace.rows
    assert q_rows["offset"].tolist() == [100 * 512, 108 * 512]
    assert q_rows["size"].tolist() == [4096, 4096]
    # the merged bio has no completion of its own
    assert latencies(q_rows) == [np.float32(0.000105), None]
    assert line_warnings(queued.warnings) == [
        "not turned into I/Os: 1 bios merged into another request (kept, no latency)"
    ]
    assert d_rows["size"].tolist() == [8192]
    assert latencies(d_rows) == [np.float32(0.0001)]
    assert issued.trace.meta["events"]["M"] == 1
    assert issued.warnings == []


def test_a_front_merge_moves_the_request_start(tmp_path: Path) -> None:
    lines = [
        line("8,0", 0, 1, "0.000000000", 9, "Q", "R", "108 + 8 [cat]"),
        line("8,0", 0, 2, "0.000002000", 9, "Q", "R", "100 + 8 [cat]"),
        line("8,0", 0, 3, "0.000003000", 9, "F", "R", "100 + 8 [cat]"),
        line("8,0", 0, 4, "0.000005000", 9, "D", "R", "100 + 16 [cat]"),
        line("8,0", 0, 5, "0.000205000", 0, "C", "R", "100 + 16 [0]"),
    ]
    trace = blkparse.load(write(tmp_path, *lines), {"event": "Q"})
    assert trace.rows["offset"].tolist() == [108 * 512, 100 * 512]
    assert latencies(trace.rows) == [np.float32(0.000205), None]


def test_lines_out_of_time_order_across_cpus_are_sorted(tmp_path: Path) -> None:
    lines = [
        line("8,0", 1, 1, "0.000050000", 5, "D", "R", "800 + 8 [a]"),
        line("8,0", 0, 1, "0.000040000", 5, "D", "W", "0 + 8 [b]"),
        line("8,0", 1, 2, "0.000030000", 5, "D", "R", "900 + 8 [c]"),
        line("8,0", 0, 2, "0.000090000", 0, "C", "W", "0 + 8 [0]"),
        line("8,0", 1, 3, "0.000100000", 0, "C", "R", "900 + 8 [0]"),
        line("8,0", 1, 4, "0.000110000", 0, "C", "R", "800 + 8 [0]"),
    ]
    trace = blkparse.load(write(tmp_path, *lines), {})
    rows = trace.rows
    assert rows["offset"].tolist() == [900 * 512, 0, 800 * 512]
    assert rows["time"].tolist() == [0.0, 0.00001, 0.00002]
    assert latencies(rows) == [np.float32(0.00007), np.float32(0.00005), np.float32(0.00006)]


def test_the_summary_block_ends_the_read(tmp_path: Path) -> None:
    path = write(tmp_path, *BASIC, SUMMARY, "anything after the summary is not read\n")
    trace = blkparse.load(path, {})
    assert trace.count == 3
    assert trace.meta["summary_line"] == len(BASIC) + 2


def test_per_process_summary_blocks_end_the_read_too(tmp_path: Path) -> None:
    path = write(tmp_path, *BASIC, "\nfio (4162)\n Reads Queued:           0,        0KiB\n")
    assert blkparse.load(path, {}).meta["summary_line"] == len(BASIC) + 2


def test_discards_are_trims_and_devices_are_groups(tmp_path: Path) -> None:
    lines = [
        line("8,0", 0, 1, "0.000000000", 5, "D", "D", "0 + 2048 [fstrim]"),
        line("259,1", 2, 1, "0.000001000", 5, "D", "RA", "64 + 8 [bash]"),
        line("8,0", 0, 2, "0.000010000", 0, "C", "D", "0 + 2048 [0]"),
        line("259,1", 2, 2, "0.000011000", 0, "C", "RA", "64 + 8 [0]"),
    ]
    imported = imported_by(blkparse, write(tmp_path, *lines), {})
    assert imported.trace is not None
    assert imported.trace.rows["op"].tolist() == [TRIM, READ]
    assert imported.trace.devices == ("8,0", "259,1")
    # a device with only a trim has nothing to replay
    assert [g["name"] for g in imported.groups] == ["259_1"]
    scenario = imported.scenario()
    assert scenario.groups[0].workload.trace is not None
    assert scenario.groups[0].workload.trace.devices == ["259,1"]


def test_requests_that_never_complete_keep_no_latency(tmp_path: Path) -> None:
    lines = [
        line("8,0", 0, 1, "0.000000000", 5, "D", "W", "0 + 8 [a]"),
        line("8,0", 0, 2, "0.000001000", 5, "D", "W", "8 + 8 [a]"),
    ]
    imported = imported_by(blkparse, write(tmp_path, *lines), {})
    assert imported.trace is not None
    assert latencies(imported.trace.rows) == [None, None]
    assert line_warnings(imported.warnings) == [
        "not turned into I/Os: 2 requests never completed (kept, no latency)"
    ]


def test_the_pending_table_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blkparse, "MAX_PENDING", 2)
    lines = [
        line("8,0", 0, i + 1, f"0.00000{i}000", 5, "D", "W", f"{8 * i} + 8 [a]") for i in range(3)
    ]
    lines += [
        line("8,0", 0, 4 + i, f"0.00001{i}000", 0, "C", "W", f"{8 * i} + 8 [0]") for i in range(3)
    ]
    trace = blkparse.load(write(tmp_path, *lines), {})
    assert latencies(trace.rows) == [None, np.float32(0.000010), np.float32(0.000010)]
    assert trace.meta["not_used"] == {
        "requests still pending beyond 2 (kept, no latency)": 1,
        "completions without a D": 1,
    }


def test_event_option_q_and_d_count_differently(tmp_path: Path) -> None:
    path = write(tmp_path, *BACK_MERGE)
    assert import_workload(path, format="blkparse", event="Q").facts[1] == (
        "I/Os",
        "2 (0 reads, 2 writes)",
    )
    assert import_workload(path, format="blkparse", event="D").facts[1] == (
        "I/Os",
        "1 (0 reads, 1 writes)",
    )


def error_text(tmp_path: Path, lines: list[str], options: dict[str, str] | None = None) -> str:
    path = write(tmp_path, *lines)
    with pytest.raises(WorkloadFileError) as caught:
        blkparse.load(path, options or {})
    message = str(caught.value)
    assert message.startswith(f"{path}: cannot import (1 problem)")
    return message


GOOD = line("8,0", 0, 1, "0.000000000", 5, "D", "W", "0 + 8 [a]")


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        (
            line("8,0", 0, 2, "0.000001000", 5, "D", "W", "abc + 8 [a]"),
            "line 2, sector: 'abc' is not a sector number",
        ),
        (
            line("8,0", 0, 2, "0.000001000", 5, "D", "W", "16 + x [a]"),
            "line 2, nsectors: expected a sector count after '+', found 'x'",
        ),
        (
            line("8,0", 0, 2, "0.000001000", 5, "D", "W", "16 +"),
            "line 2, nsectors: expected a sector count after '+', found nothing",
        ),
        (
            line("8,0", 0, 2, "0.000001000", 5, "D", "W", "sixteen [a]"),
            "line 2, sector: expected SECTOR + NSECTORS or [PROCESS]",
        ),
        (
            line("8,0", 0, 2, "0.000001000", 5, "D", "WQ", "16 + 8 [a]"),
            "line 2, rwbs: 'WQ' has letters other than",
        ),
        (
            line("8,0", 0, 2, "1,5", 5, "D", "W", "16 + 8 [a]"),
            "line 2, timestamp: '1,5' is not SECONDS.NANOSECONDS",
        ),
        (
            line("8,0", 0, 2, "0.000001000", 5, "D3", "W", "16 + 8 [a]"),
            "line 2, action: 'D3' is not a blkparse action",
        ),
        (
            line("8,0", 0, 2, "0.000001000", 5, "D", "W", "18014398509481984 + 8 [a]"),
            "line 2, sector: 18,014,398,509,481,984 must be at most 17,592,186,044,416 (512-byte "
            "sectors: 8 PiB, the largest working set a scenario holds, which a replayed device's "
            "span becomes; an offset beyond it is a damaged line or another column)",
        ),
        (
            line("8,0", 0, 2, "0.000001000", 5, "D", "W", "0 + 8388608 [a]"),
            "line 2, nsectors: 8388608 sectors is more than one I/O can be here",
        ),
        ("  8,0    0        2     0.000001000     5  D\n", "line 2, rwbs: missing"),
        (
            "  8,0   x0        2     0.000001000     5  D  W 16 + 8 [a]\n",
            "line 2, cpu: 'x0' is not a whole number",
        ),
        (
            "8:0 0 2 0.000001 5 D W 16 + 8 [a]\n",
            "line 2, device: '8:0' does not start a blkparse event line",
        ),
    ],
)
def test_malformed_event_lines_name_line_and_field(tmp_path: Path, bad: str, where: str) -> None:
    assert where in error_text(tmp_path, [GOOD, bad])


def test_options_are_checked(tmp_path: Path) -> None:
    assert "options.events: unknown option for the blkparse format; use event" in error_text(
        tmp_path, [GOOD], {"events": "D"}
    )
    assert "options.event: 'I' is not allowed; use one of D, Q, C" in error_text(
        tmp_path, [GOOD], {"event": "I"}
    )


def test_a_process_name_with_a_plus_is_not_a_sector_range(tmp_path: Path) -> None:
    flush = line("8,0", 0, 2, "0.000001000", 5, "D", "FWS", "[g + + worker]")
    trace = blkparse.load(write(tmp_path, GOOD, flush), {})
    assert trace.rows["op"].tolist() == [WRITE, SYNC]


def test_other_actions_are_listed_not_failed(tmp_path: Path) -> None:
    lines = [
        line("8,0", 0, 0, "0.000000000", 0, "m", "N", "cfq4162S / slice expired t=0"),
        GOOD,
        line("8,0", 0, 2, "0.000001000", 5, "A", "W", "0 + 8 <- (8,1) 2048"),
        line("8,0", 0, 3, "0.000002000", 5, "UT", "N", "[swapper/0] 1"),
    ]
    imported = imported_by(blkparse, write(tmp_path, *lines), {})
    assert imported.warnings == [
        "not turned into I/Os: 1 m events; 1 A events; 1 UT events; 1 requests never completed "
        "(kept, no latency)"
    ]


@pytest.mark.parametrize(
    ("head", "claimed"),
    [
        ("".join(BASIC), True),
        ("".join(BASIC)[:100], True),  # a line cut off at the end of the head is not judged
        # MSR CSV
        (
            "128166372003061629,web,0,Read,3072,4096,59840\n"
            "128166372016853766,web,0,Write,4096,512,30\n",
            False,
        ),
        ("[global]\nioengine=libaio\nbs=4k\n[job1]\nrw=randread\n", False),  # fio job file
        ("time,op,offset,size\n0.1,R,4096,4096\n", False),  # plain CSV
        # CSV whose first column looks like a device
        ("8,0,1,0.5,R,4096,8\n8,0,2,0.6,W,0,8\n", False),
        ("fio version 2 iolog\n/dev/sdb add\n", False),
        ("CPU0 (8,0):\n Reads Queued: 0, 0KiB\n", False),  # a summary alone
        ("", False),
    ],
)
def test_sniff_claims_only_blkparse_output(head: str, claimed: bool) -> None:
    assert blkparse.sniff(head) is claimed
