"""What the trace importers say about empty, header-only and wrongly shaped files: the file, the
line and the fix, through ``simcache import`` without a traceback (review 63, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import call

from simcache.base.errors import WorkloadFileError
from simcache.workloads.ingest.imported import import_workload


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


FILETIME = 128166372003061629
MSR_HEADER = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"
BLK_D = "  8,0    1        1     0.000000000  1234  D   R 2048 + 8 [fio]"
NO_IO = "the trace holds no reads or writes to replay"


@pytest.mark.parametrize(
    ("format_name", "text", "problem"),
    [
        (
            "csv",
            "time,op,offset,size\n",
            f"line 1: {NO_IO}; csv traces have one line per I/O under their header line, e.g. "
            "0.001,read,4096,4096 under time,op,offset,size",
        ),
        (
            "csv",
            "time,op,offset,size\n\n\n",
            f"lines 1-3: {NO_IO} (2 empty lines skipped); csv traces have one line per I/O",
        ),
        (
            "csv",
            "time,op,offset,size\n0.1,read,0,4096\n0.2,write,0,4096,9\n",
            "line 3: 5 fields; expected 4 (time, op, offset, size) separated by ',': remove the "
            "extra ones (a field holding ',' goes in double quotes)",
        ),
        (
            "csv",
            "time,op,offset,size\n0.1,read,0,4096\n0.2,write,0\n",
            "line 3, size: missing value (each line has 4 fields: time, op, offset, size); this "
            "line has 3: add the missing ones, or remove the line",
        ),
        (
            "csv",
            "time,op,offset,size\n0.1,read,,4096\n",
            "line 2, offset: missing value (each line has 4 fields: time, op, offset, size); this "
            "one is empty: fill it in, or remove the line",
        ),
        (
            "msr",
            "",
            f"line 1: {NO_IO}: the file is empty; msr traces have one line per I/O, "
            f"{MSR_HEADER}, e.g. 128166372003061629,usr,0,Read,4096,4096,1000",
        ),
        ("msr", MSR_HEADER + "\n", f"line 1: {NO_IO}; msr traces have one line per I/O"),
        (
            "msr",
            f"{FILETIME},usr,0,Read,0,4096,10\n{FILETIME + 1},usr,0,Write,4096\n",
            "line 2, Size: missing value (each line has 7 fields: Timestamp, Hostname, "
            "DiskNumber, Type, Offset, Size, ResponseTime); this line has 5: add the missing ones",
        ),
        (
            "fio-iolog",
            "fio version 3 iolog\n",
            f"line 1: {NO_IO}; fio-iolog traces have 'TIMESTAMP FILE add' and 'TIMESTAMP FILE "
            "open' lines after their 'fio version 3 iolog' line, then one 'TIMESTAMP FILE "
            "read|write OFFSET LENGTH' line per I/O, e.g. '1200 /dev/sda read 4096 4096'",
        ),
        (
            "fio-iolog",
            "fio version 2 iolog\nf add\nf open\nf sync 0 0\nf trim 0 4096\n",
            f"lines 1-5: {NO_IO} (2 sync or trim commands, not replayed); fio-iolog "
            "traces have 'FILE add' and 'FILE open' lines after their 'fio version 2 iolog' line",
        ),
        (
            "blkparse",
            "",
            f"line 1: {NO_IO}: the file is empty; blkparse traces have one event line per I/O as "
            "blkparse prints them by default, D events with SECTOR + NSECTORS (the event option "
            "picks D, Q or C)",
        ),
        (
            "blkparse",
            BLK_D.replace(" 2048 + 8 [fio]", "") + "\n",
            f"line 1: {NO_IO} (not turned into I/Os: 1 D events without data sectors "
            "(pass-through or RWBS N)); blkparse traces have one event line per I/O",
        ),
    ],
)
def test_a_file_without_usable_io_lines_is_named_with_its_line_and_fix(
    tmp_path: Path, format_name: str, text: str, problem: str
) -> None:
    path = tmp_path / "trace.txt"
    path.write_text(text)
    with pytest.raises(WorkloadFileError) as caught:
        import_workload(path, format_name)
    message = str(caught.value)
    assert message.startswith(f"{path}: cannot import")
    assert f"  {problem}" in message, message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "",
            "line 1: the file is empty: nothing to import; give the file the trace, job or results "
            "were written to",
        ),
        ("\n\n", "line 1: the file is empty (blank lines only): nothing to import"),
        (
            "time,op,offset,size\n",
            "format: cannot tell the format from the file's start (its only line is "
            "'time,op,offset,size': a header without the lines it names?); give it with --format",
        ),
    ],
)
def test_an_unguessable_file_says_what_it_holds(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(WorkloadFileError) as caught:
        import_workload(path)
    assert f"  {problem}" in str(caught.value)


@pytest.mark.parametrize("command", ["import", "fit"])
@pytest.mark.parametrize(
    ("text", "options", "problem"),
    [
        ("", [], "line 1: the file is empty"),
        ("time,op,offset,size\n", ["--format", "csv"], f"line 1: {NO_IO}"),
        (
            "time,op,offset,size\n0.1,read,0,4096,7,8\n",
            ["--format", "csv"],
            "line 2: 6 fields; expected 4 (time, op, offset, size) separated by ',': remove "
            "the extra ones",
        ),
    ],
)
def test_the_commands_print_the_message_without_a_traceback(
    tmp_path: Path, command: str, text: str, options: list[str], problem: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    code, out, err = call([command, str(path), *options, "-o", str(tmp_path / "out.toml")])
    assert code == 2 and not out
    assert err.startswith(f"error: {path}: cannot import (1 problem)\n  {problem}"), err
    assert "Traceback" not in err
