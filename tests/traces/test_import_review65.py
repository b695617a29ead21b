"""The importers on the honest mistakes and damaged files of review 65: fio figures that do not
fit the job, rows out of time order, one row whose timestamp jumps decades, zero-size I/Os,
negative times, and vscsiStats titles not recognised. The files under ``review65/`` are the
review's inputs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from simcache.base.errors import WorkloadFileError
from simcache.workloads.ingest.imported import import_workload

FILES = Path(__file__).parent / "review65"
MSR_START = 128_166_372_000_000_000
"""A FILETIME in February 2007, as the MSR traces' own."""


@pytest.fixture(autouse=True)
def _trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def msr_lines(ticks: list[int], sizes: list[int] | None = None) -> list[str]:
    """MSR lines of one disk, an I/O at each of ``ticks`` (100 ns from :data:`MSR_START`)."""
    sizes = sizes or [4096] * len(ticks)
    return [
        f"{MSR_START + tick},usr,0,{'Read' if i % 2 else 'Write'},{i * 4096},{size},1000"
        for i, (tick, size) in enumerate(zip(ticks, sizes, strict=True))
    ]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def problem(exc: pytest.ExceptionInfo[WorkloadFileError]) -> tuple[str, str]:
    ((where, message),) = exc.value.problems
    return where, message


# ---- fio JSON: what fio measured against the job's options


def test_fio_writes_measured_for_a_job_without_rw_are_a_warning() -> None:
    """The job options lack rw (it came from an included file): fio's default is read, but fio
    measured writes only."""
    imported = import_workload(FILES / "fio_rw_missing.json")
    text = " | ".join(imported.warnings)
    assert "fio measured writes (jobs[0].write: 20,000 IOPS) but the workload does none" in text
    assert "rw not given: fio's default, read" in text
    assert "but fio measured no reads" in text
    assert 'jobs[0]."job options"' in text


def test_fio_negative_iops_is_refused_naming_the_field() -> None:
    with pytest.raises(WorkloadFileError) as exc:
        import_workload(FILES / "fio_iops_negative.json")
    where, message = problem(exc)
    assert where == "jobs[0].write.iops"
    assert message.startswith("-5 is negative")


def test_fio_missing_direction_section_is_a_warning() -> None:
    imported = import_workload(FILES / "fio_write_section_missing.json")
    assert not imported.expect
    assert any(
        'the workload writes (rw=randwrite) but jobs[0] has no "write" section' in warning
        for warning in imported.warnings
    )


def test_fio_missing_latency_fields_are_a_warning() -> None:
    imported = import_workload(FILES / "fio_latency_missing.json")
    assert {check["metric"] for check in imported.expect} == {"iops", "mb_s"}
    assert any("fio's latency figures are missing" in warning for warning in imported.warnings)


def test_fio_result_that_fits_its_job_has_no_such_warning() -> None:
    imported = import_workload(FILES / "fio_randwrite.json")
    assert not [w for w in imported.warnings if "fio measured" in w or "section" in w]


# ---- rows out of time order


def test_msr_rows_out_of_order_are_sorted_with_a_warning(tmp_path: Path) -> None:
    ticks = [i * 10_000 for i in range(100)]
    ticks[40], ticks[41] = ticks[41], ticks[40]
    imported = import_workload(write_lines(tmp_path / "t.csv", msr_lines(ticks)), "msr")
    assert "1 row out of time order (the first at line 42): sorted by time" in " ".join(
        imported.warnings
    )


def test_msr_rows_in_order_have_no_such_warning(tmp_path: Path) -> None:
    ticks = [i * 10_000 for i in range(100)]
    imported = import_workload(write_lines(tmp_path / "t.csv", msr_lines(ticks)), "msr")
    assert not [w for w in imported.warnings if "time order" in w]


def test_fio_iolog_lines_out_of_order_are_a_warning(tmp_path: Path) -> None:
    lines = ["fio version 3 iolog", "0 /dev/sdb add", "0 /dev/sdb open"]
    stamps = [0, 10, 20, 15, 30]
    lines += [f"{t} /dev/sdb write {i * 4096} 4096" for i, t in enumerate(stamps)]
    imported = import_workload(write_lines(tmp_path / "log", lines), "fio-iolog")
    assert "1 I/O line out of time order (the first at line 7)" in " ".join(imported.warnings)


def blkparse_lines(requests: int) -> list[str]:
    """Q, D and C lines of ``requests`` reads, each completing 250 µs after its issue, issued
    100 µs apart (so up to three are in flight)."""
    lines = []
    for i in range(requests):
        issued = 1_000_000 + i * 100_000
        sector = 2048 + 8 * i
        for action, at in (("Q", issued - 1000), ("D", issued), ("C", issued + 250_000)):
            lines.append(
                f"  8,0    0  {len(lines) + 1:>7}  {at // 10**9}.{at % 10**9:09d}  1234  "
                f"{action}   R {sector} + 8 [fio]"
            )
    return lines


def test_blkparse_lines_out_of_order_are_paired_after_sorting(tmp_path: Path) -> None:
    """Per-CPU outputs concatenated: the latencies are those of the sorted file, with a warning
    (review 65: C before D made 'completions without a D' and a mean above p99)."""
    lines = blkparse_lines(200)
    shuffled = lines[:]
    random.Random(1).shuffle(shuffled)
    in_order = import_workload(write_lines(tmp_path / "sorted.txt", lines), "blkparse")
    out_of_order = import_workload(write_lines(tmp_path / "shuffled.txt", shuffled), "blkparse")
    latency = dict(out_of_order.facts)["read latency in the trace"]
    assert latency == dict(in_order.facts)["read latency in the trace"]
    assert latency.startswith("mean 0.25 ms") and "over 200 I/Os" in latency
    warnings = " ".join(out_of_order.warnings)
    assert "event lines out of time order" in warnings and "sorted by time" in warnings
    assert "completions without" not in warnings and "never completed" not in warnings


# ---- one bad row


def test_a_timestamp_decades_later_is_refused_at_its_line(tmp_path: Path) -> None:
    ticks = [i * 10_000 for i in range(200)]
    ticks[150:] = [tick + 10**16 for tick in ticks[150:]]  # 31.7 years on
    with pytest.raises(WorkloadFileError) as exc:
        import_workload(write_lines(tmp_path / "gap.csv", msr_lines(ticks)), "msr")
    where, message = problem(exc)
    assert where == "line 151, Timestamp"
    assert message.startswith("31.7 years after the I/O before it")
    assert "Remove it, or replay a window" in message and "run.duration" not in message


# ---- zero sizes and negative times


def test_msr_zero_size_ios_are_dropped_and_counted(tmp_path: Path) -> None:
    ticks = [i * 10_000 for i in range(100)]
    sizes = [0 if i % 10 == 0 else 4096 for i in range(100)]
    imported = import_workload(write_lines(tmp_path / "z.csv", msr_lines(ticks, sizes)), "msr")
    assert dict(imported.facts)["I/Os"].startswith("90 ")
    assert "10 I/Os of Size 0 dropped" in " ".join(imported.warnings)


def test_csv_negative_time_is_refused_at_its_line(tmp_path: Path) -> None:
    lines = ["time,op,offset,size", "0.5,read,0,4096", "-5,write,4096,4096", "1.0,read,0,4096"]
    with pytest.raises(WorkloadFileError) as exc:
        import_workload(write_lines(tmp_path / "neg.csv", lines), "csv")
    where, message = problem(exc)
    assert where == "line 3, time"
    assert "must not be negative" in message


# ---- vscsiStats


def test_vscsistats_titles_not_recognised_are_named() -> None:
    with pytest.raises(WorkloadFileError) as exc:
        import_workload(FILES / "vscsi_titles_for_all_commands.csv")
    where, message = problem(exc)
    assert where == "line 1, Histogram title"
    assert message.startswith("no histogram title recognised")
    assert "such as 'IO lengths of commands'" in message
    assert "found 'IO lengths of commands for all commands' (line 1)" in message


def test_vscsistats_zero_mean_interarrival_is_reported_as_written() -> None:
    with pytest.raises(WorkloadFileError) as exc:
        import_workload(FILES / "vscsi_interarrival_mean_zero.csv")
    _, message = problem(exc)
    assert "a mean inter-arrival time of 0 µs gives no rate" in message
    assert "mode=closed" in message
