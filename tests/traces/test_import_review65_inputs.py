"""The importers on the remaining hostile inputs of review 65 (section 15 and finding 8): the first
bad line of a file read in the wrong format, a misspelt fio option, files that are not UTF-8 or
are tab-separated, and an offset no device has. Each is refused naming the file, the line and
the field, or imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from simcache.base.errors import WorkloadFileError
from simcache.workloads.ingest.imported import import_workload

MSR_START = 128_166_372_000_000_000
"""A FILETIME in February 2007, as the MSR traces' own."""


@pytest.fixture(autouse=True)
def _trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Traces parsed by these tests go to a cache of their own."""
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def refusal(path: Path, format: str | None = None, **options: object) -> tuple[str, str]:
    """The one problem of importing ``path``, which must be refused naming it."""
    with pytest.raises(WorkloadFileError) as caught:
        import_workload(path, format, **options)
    assert caught.value.source == str(path)
    ((where, message),) = caught.value.problems
    return where, message


def blkparse_lines(count: int) -> list[str]:
    """``count`` blkparse D events, then the summary blkparse prints at the end of its output."""
    events = [
        f"  8,16   2 {i:8d}     {i * 0.001:.9f}  1234  D   W {i * 8} + 8 [fio]"
        for i in range(1, count + 1)
    ]
    return [*events, "CPU0 (sdb):", " Reads Queued:   750,   3000KiB", "Events (sdb): 15 entries"]


# ---- the first bad line, whichever column is wrong (review 65, 15)


def test_blkparse_text_read_as_msr_is_refused_at_its_first_line(tmp_path: Path) -> None:
    """Before: the Timestamp column, checked first, reads "8" of "8,16" as a number on every
    event line, so the refusal named the summary's first line (line 11 here, 15,001 in the
    review)."""
    path = write_lines(tmp_path / "blk.txt", blkparse_lines(10))
    where, message = refusal(path, "msr")
    assert where == "line 1, DiskNumber"
    assert message.startswith("missing value (each line has 7 fields: Timestamp, Hostname, ")


def test_lines_above_one_the_reader_cannot_split_are_checked_first(tmp_path: Path) -> None:
    """Line 31 has too many fields for pandas' reader, which fails the whole block: lines 1 to 30
    are checked before that is reported (before: line 31)."""
    lines = [f"garbage line {i}" for i in range(1, 31)] + ["a,b,c,d,e,f,g,h,i,j"]
    where, message = refusal(write_lines(tmp_path / "wide.csv", lines), "msr")
    assert where == "line 1, Timestamp"
    assert message == (
        "expected a Windows FILETIME (100 ns ticks since 1601-01-01 UTC), found 'garbage line 1'"
    )


def test_a_csv_trace_is_refused_at_its_first_bad_row_not_its_first_bad_column(
    tmp_path: Path,
) -> None:
    lines = ["time,op,offset,size", "0.1,R,0,4096", "0.2,X,0,4096", "oops,W,0,4096"]
    where, message = refusal(write_lines(tmp_path / "t.csv", lines))
    assert where == "line 3, op"
    assert message.startswith("'X' is not allowed; use read: ")


# ---- a misspelt fio option (review 65, 15)


def test_a_misspelt_fio_option_the_importer_reads_is_refused_with_the_name_meant(
    tmp_path: Path,
) -> None:
    """Before: only "fio options not modelled (ignored): bsplit ... (not read by this
    importer)"; fio itself refuses an unknown option."""
    path = tmp_path / "job.fio"
    path.write_text("[job1]\nrw=randwrite\nbs=4k\nbsplit=4k/50:64k/50\n", "utf-8")
    assert refusal(path) == (
        "line 4, bsplit",
        "unknown fio option 'bsplit'; did you mean 'bssplit'? (fio refuses options it does not "
        "know)",
    )


def test_fio_options_the_importer_does_not_read_stay_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "job.fio"
    path.write_text("[job1]\nrw=randwrite\nbs=4k\nverify=md5\n", "utf-8")
    imported = import_workload(path)
    assert (
        "fio options not modelled (ignored): verify in [job1] (not read by this importer)"
        in imported.warnings
    )


def test_fio_aliases_are_read_as_the_options_they_stand_for(tmp_path: Path) -> None:
    """nr_files is one slip from nrfiles, and fio's own other name for it (options.c): read, not
    refused as a typo; so is timeout, fio's other name for runtime."""
    path = tmp_path / "job.fio"
    path.write_text("[job1]\nrw=randread\nbs=4k\nfilesize=1g\nnr_files=4\ntimeout=30\n", "utf-8")
    imported = import_workload(path)
    assert imported.groups[0]["workload"]["working_set"] == 4 * 1024**3
    assert imported.duration == 30
    assert not any("nr_files" in warning or "timeout" in warning for warning in imported.warnings)


# ---- files that are not UTF-8, or tab-separated (review 65, 15)


def test_a_file_that_is_not_utf8_is_refused_at_guessing_naming_line_and_byte(
    tmp_path: Path,
) -> None:
    """Before: "cannot tell the format from the file's start"."""
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"  8,16   0  1  0.000001000  5  D   W 16 + 8 [caf\xe9]\nmore\n")
    where, message = refusal(path)
    assert where == "line 1"
    assert message.startswith("not UTF-8 text (byte 48), so no format fits: ")
    assert message.endswith("(one in another encoding: convert it, e.g. iconv -f latin1 -t utf-8)")


def test_a_utf16_file_is_told_to_be_converted_from_utf16(tmp_path: Path) -> None:
    path = tmp_path / "utf16.csv"
    path.write_bytes("time,op,offset,size\n0.1,R,0,4096\n".encode("utf-16"))
    where, message = refusal(path)
    assert where == "line 1"
    assert message.endswith("e.g. iconv -f utf-16 -t utf-8)")


def test_a_tab_separated_csv_trace_with_a_header_is_imported(tmp_path: Path) -> None:
    lines = ["time\top\toffset\tsize", "0.1\tR\t0\t4096", "0.2\tW\t8192\t4096", "1.0\tR\t0\t512"]
    imported = import_workload(write_lines(tmp_path / "t.tsv", lines))
    assert imported.format == "csv"
    assert imported.trace is not None and imported.trace.count == 3
    assert imported.groups[0]["workload"]["trace"]["format"] == "csv"


def test_tab_separated_lines_no_format_takes_say_which_formats_take_tabs(
    tmp_path: Path,
) -> None:
    """An MSR trace with tabs for commas. Before: "cannot tell the format"."""
    lines = [f"{MSR_START + i}\tusr\t0\tRead\t{i * 4096}\t4096\t1000" for i in range(5)]
    where, message = refusal(write_lines(tmp_path / "msr.tsv", lines))
    assert where == "format"
    assert message.startswith(
        "the lines are tab-separated and fit no format: msr and vscsistats lines are "
        "comma-separated (convert with tr '\\t' ',')"
    )
    assert "--format csv -O delimiter=tab -O header=false" in message


# ---- an offset no device has (review 65, 8)

LIMIT = (
    "8 PiB, the largest working set a scenario holds, which a replayed device's span becomes; "
    "an offset beyond it is a damaged line or another column"
)


def test_an_msr_offset_past_8_pib_is_refused_at_its_line(tmp_path: Path) -> None:
    """Before: "groups: the VMs' working sets add up to 4611686020.6 GB, more than the array's
    28000.0 GB raw; shrink workload.working_set or add spindles", a scenario the user never
    wrote."""
    lines = [f"{MSR_START + i * 10_000},usr,0,Read,{i * 4096},4096,1000" for i in range(5)]
    lines[3] = f"{MSR_START + 30_000},usr,0,Read,{2**62},4096,1000"
    assert refusal(write_lines(tmp_path / "msr.csv", lines)) == (
        "line 4, Offset",
        f"4,611,686,018,427,387,904 must be at most 9,007,199,254,740,992 ({LIMIT})",
    )


def test_a_csv_offset_past_8_pib_is_refused_in_its_unit(tmp_path: Path) -> None:
    lines = ["time,op,lba,size", "0.1,R,0,4096", f"0.2,R,{2**50},4096"]
    assert refusal(write_lines(tmp_path / "t.csv", lines)) == (
        "line 3, lba",
        f"1,125,899,906,842,624 must be at most 17,592,186,044,416 ({LIMIT})",
    )


def test_a_fio_iolog_offset_past_8_pib_is_refused(tmp_path: Path) -> None:
    lines = [
        "fio version 2 iolog",
        "/dev/sdb add",
        "/dev/sdb open",
        "/dev/sdb read 0 4096",
        f"/dev/sdb write {2**60} 4096",
    ]
    assert refusal(write_lines(tmp_path / "io.log", lines)) == (
        "line 5, offset",
        f"1,152,921,504,606,846,976 must be at most 9,007,199,254,740,992 ({LIMIT})",
    )


DAMAGED_GZIP_CSV = bytes.fromhex(
    "1f8b08000000000002032bc9cc4dd5c92fd0c94f4b2b4e2dd129ceac4ae532d033d0292fca2c49d531d03131b0"
    "34030918ea14a526a605b93a6b8696462031239d8f305bc7ccd4d418a4ca542708a60500a928059558000000"
)
"""A gzip-compressed CSV trace damaged by bench/fuzz_inputs.py (seed 65): two good lines, then bytes
that are not UTF-8, then a stream cut short. Reading the rows above the bad line again raised the
gzip reader's EOFError (a traceback) once the first bad line came to be reported."""


def test_a_damaged_gzip_csv_is_refused_at_its_first_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv.gz"
    path.write_bytes(DAMAGED_GZIP_CSV)
    with pytest.raises(WorkloadFileError, match=r"line 3: not utf-8 text \(byte 29\)"):
        import_workload(path, "csv")
