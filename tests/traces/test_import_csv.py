"""The generic CSV trace importer: column names and positions, units, op values, and errors
naming line, field or option."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.imports import imported_by

from simcache.base.errors import WorkloadFileError
from simcache.traces.formats import csv_trace
from simcache.traces.trace import READ, SYNC, TRIM, WRITE


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load(tmp_path: Path, text: str, **options: Any) -> Any:
    return csv_trace.load(write(tmp_path, text), options)


def fails(tmp_path: Path, text: str, **options: Any) -> str:
    with pytest.raises(WorkloadFileError) as caught:
        load(tmp_path, text, **options)
    return str(caught.value)


DEFAULT = "time,op,offset,size\n10.5,R,0,4096\n10.75,write,4096,8192\n11.5,W,0,512\n"


def line_warnings(warnings: list[str]) -> list[str]:
    """The warnings about the file's lines, without the one that a trace of a few milliseconds,
    as the ones here, gets for lying inside the imported run's warm-up (tested in
    test_import_review65.py)."""
    return [warning for warning in warnings if "inside the run's" not in warning]


def test_default_columns_and_relative_times(tmp_path: Path) -> None:
    trace = load(tmp_path, DEFAULT)
    rows = trace.rows
    assert rows["time"].tolist() == [0.0, 0.25, 1.0]
    assert rows["op"].tolist() == [READ, WRITE, WRITE]
    assert rows["offset"].tolist() == [0, 4096, 0]
    assert rows["size"].tolist() == [4096, 8192, 512]
    assert trace.devices == ("disk",)
    assert np.isnan(rows["latency"]).all()


def test_renamed_columns_devices_latency_and_unused_columns(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "ts , Type,LBA,len,vol,lat_us,pid\n100,r,8,8,a,250,7\n250,w,16,16,b,,7\n"
        "400,R,0,1,a,1000,7\n",
    )
    options = {
        "time_column": "ts",
        "op_column": "type",
        "size_column": "len",
        "device_column": "vol",
        "latency_column": "lat_us",
    }
    imported = imported_by(csv_trace, path, {**options, "time_unit": "us", "size_unit": "sector"})
    trace = imported.trace
    assert trace is not None
    rows = trace.rows
    assert rows["time"].tolist() == [0.0, 0.00015, 0.0003]
    assert rows["offset"].tolist() == [4096, 8192, 0]  # an lba column is in 512 B sectors
    assert rows["size"].tolist() == [4096, 8192, 512]
    assert trace.devices == ("a", "b")
    assert rows["device"].tolist() == [0, 1, 0]
    # latency in time_unit by default
    np.testing.assert_allclose(rows["latency"], [250e-6, np.nan, 1e-3], rtol=1e-6)
    assert line_warnings(imported.warnings) == ["columns not used: pid"]
    assert [g["name"] for g in imported.groups] == ["a", "b"]
    assert imported.groups[1]["workload"]["trace"] == {
        "path": str(path),
        "format": "csv",
        "devices": ["b"],
        "options": {**options, "time_unit": "us", "size_unit": "sector"},
    }
    assert [g.workload.mode for g in imported.scenario().groups] == ["trace", "trace"]


def test_units_ms_sectors_and_sizes(tmp_path: Path) -> None:
    text = "time,op,offset,size,latency\n1000,R,2,1,0.5\n1001,W,3,2,2\n"
    rows = load(
        tmp_path, text, time_unit="ms", offset_unit="sector", size_unit="4KiB", latency_unit="ms"
    ).rows
    assert rows["time"].tolist() == [0.0, 0.001]
    assert rows["offset"].tolist() == [1024, 1536]
    assert rows["size"].tolist() == [4096, 8192]
    np.testing.assert_allclose(rows["latency"], [0.5e-3, 2e-3], rtol=1e-6)


def test_integer_nanosecond_epoch_times_keep_their_digits(tmp_path: Path) -> None:
    text = (
        "time,op,offset,size\n1700000000123456789,R,0,512\n1700000000123456790,R,0,512\n"
        "1700000001123456789,W,0,512\n"
    )
    assert load(tmp_path, text, time_unit="ns").rows["time"].tolist() == [0.0, 1e-9, 1.0]


def test_header_false_takes_columns_by_position(tmp_path: Path) -> None:
    trace = load(
        tmp_path, "0.5,R,7,100,4096\n0.75,W,9,200,512\n", header=False, columns="time,op,-,lba,size"
    )
    assert trace.rows["offset"].tolist() == [100 * 512, 200 * 512]
    assert trace.rows["size"].tolist() == [4096, 512]
    assert trace.rows["time"].tolist() == [0.0, 0.25]
    assert trace.meta["unused_columns"] == []


def test_header_given_as_a_string_option_and_tab_delimiter(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        "1\tR\t0\t512\n2\tW\t512\t512\n",
        header="false",
        columns="time,op,offset,size",
        delimiter="tab",
    )
    assert trace.rows["op"].tolist() == [READ, WRITE]


def test_numeric_op_codes_need_read_and_write_values(tmp_path: Path) -> None:
    text = "time,op,offset,size\n0,1,0,512\n1,0,512,512\n2,flush,0,0\n3,Discard,0,4096\n"
    message = fails(tmp_path, text)
    assert (
        "line 2, op: '1' is not allowed; use read: r, read; write: w, write; sync: sync, flush; "
        "trim: trim, discard" in message
    )
    rows = load(tmp_path, text, read_values="1", write_values="0").rows
    assert rows["op"].tolist() == [READ, WRITE, SYNC, TRIM]


def test_bad_op_value_names_line_and_value(tmp_path: Path) -> None:
    message = fails(tmp_path, DEFAULT + "12,X,0,512\n")
    assert "  line 5, op: 'X' is not allowed; use read: r, read" in message


def test_offset_column_is_preferred_to_lba_and_lba_is_listed_unused(tmp_path: Path) -> None:
    imported = imported_by(
        csv_trace, write(tmp_path, "time,op,offset,lba,size\n0,R,4096,8,512\n"), {}
    )
    assert imported.trace is not None and imported.trace.rows["offset"].tolist() == [4096]
    assert imported.warnings == ["columns not used: lba"]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "time,op,size\n0,R,512\n",
            "line 1, header",
            "no offset (or lba) column among 'time', 'op', 'size'; name it with the offset_column "
            "(or lba_column) option",
        ),
        (
            "when,op,offset,size\n0,R,0,512\n",
            "line 1, header",
            "no time column among 'when', 'op', 'offset', 'size'; name it with the time_column "
            "option",
        ),
        (
            "time,op,offset,size,time\n0,R,0,512,1\n",
            "line 1, header",
            "two columns are named 'time'",
        ),
        (DEFAULT + "12,R,-512,512\n", "line 5, offset", "-512 must not be negative"),
        (DEFAULT + "12,R,0,-1\n", "line 5, size", "-1 must not be negative"),
        (DEFAULT + "12,R,0,1.5\n", "line 5, size", "expected a whole number of bytes, found '1.5'"),
        (DEFAULT + "soon,R,0,512\n", "line 5, time", "expected a time in s, found 'soon'"),
        (
            DEFAULT + "12,R,0\n",
            "line 5, size",
            "missing value (each line has 4 fields: time, op, offset, size)",
        ),
        (
            DEFAULT + "12,R,0,512,9\n",
            "line 5",
            "5 fields; expected 4 (time, op, offset, size) separated by ','",
        ),
    ],
)
def test_a_bad_file_is_named_by_line_and_field(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    assert f"  {where}: {message}" in fails(tmp_path, text)


def test_negative_latency_is_refused(tmp_path: Path) -> None:
    assert "  line 3, latency: -2.0 must not be negative" in fails(
        tmp_path, "time,op,offset,size,latency\n0,R,0,1,1\n1,R,0,1,-2.0\n"
    )


@pytest.mark.parametrize(
    ("options", "where", "message"),
    [
        (
            {"timeunit": "ms"},
            "options.timeunit",
            "unknown option for the csv format; use header, columns, delimiter, time_column",
        ),
        ({"time_unit": "min"}, "options.time_unit", "unknown time unit 'min'; use s, ms, us or ns"),
        (
            {"size_unit": "blocks"},
            "options.size_unit",
            "expected B, sector (512 B) or a size such as \"4KiB\", found 'blocks'",
        ),
        (
            {"offset_unit": 0},
            "options.offset_unit",
            'expected B, sector (512 B) or a size such as "4KiB", found 0',
        ),
        ({"header": "maybe"}, "options.header", "expected true or false, found 'maybe'"),
        (
            {"header": False},
            "options.columns",
            "a file without a header needs its columns named in order",
        ),
        (
            {"columns": "time,op,offset,size"},
            "options.columns",
            "names the columns of a file without a header; set header = false",
        ),
        (
            {"time_column": "ts"},
            "options.time_column",
            "no column named 'ts' in the header line (time, op, offset, size)",
        ),
        (
            {"offset_column": "offset", "lba_column": "lba"},
            "options.lba_column",
            "give offset_column (bytes) or lba_column (sectors), not both",
        ),
        ({"delimiter": ";;"}, "options.delimiter", "expected one character (or tab), found ';;'"),
        ({"write_values": "w,r"}, "options.write_values", "'r' already means read"),
        ({"time_column": 3}, "options.time_column", "expected text, found 3"),
    ],
)
def test_bad_options_are_named(
    tmp_path: Path, options: dict[str, Any], where: str, message: str
) -> None:
    assert f"  {where}: {message}" in fails(tmp_path, DEFAULT, **options)


def test_empty_file_needs_a_header(tmp_path: Path) -> None:
    assert "  line 1, header: the file is empty; expected a header line" in fails(tmp_path, "")


def test_sniff_takes_a_header_with_time_and_op_columns_only() -> None:
    assert csv_trace.sniff(DEFAULT)
    assert csv_trace.sniff("Timestamp,Type,LBA,Size,Latency_us\n1,R,0,8,10\n")
    assert csv_trace.sniff("\ufefftime_us,rw,offset,size\n1,R,0,8\n")
    assert not csv_trace.sniff("time,op,offset,size\n")  # a header alone is no trace
    assert not csv_trace.sniff("offset,size,count\n0,512,3\n")  # no time or op column
    # MSR data
    assert not csv_trace.sniff(
        "128166372003061629,usr,0,Read,0,4096,10\n128166372003061630,usr,0,Read,0,4096,10\n"
    )
    assert not csv_trace.sniff("[global]\nrw=randwrite\nbs=4k\n\n[job1]\ntime_based=1\n")  # fio job
    assert not csv_trace.sniff("; fio job\n[global]\ntime_based,op,x\n")
    blkparse = "  8,0    1        1     0.000000000  4162  Q  WS 1234 + 8 [kworker]\n"
    assert not csv_trace.sniff(blkparse + blkparse.replace("Q  WS", "G  WS"))
    assert not csv_trace.sniff("fio version 3 iolog\n0 /dev/sda add\n")
    assert not csv_trace.sniff('{"fio version": "fio-3.35", "jobs": []}\n')


def test_unit_errors_say_the_unit(tmp_path: Path) -> None:
    text = "time,op,lba,size,latency\n0,R,1.5,1,2\n"
    assert "  line 2, lba: expected a whole number of 512-byte units, found '1.5'" in fails(
        tmp_path, text
    )
    text = "time,op,offset,size,latency\n0,R,0,1,fast\n"
    assert "  line 2, latency: expected a latency in ms, found 'fast'" in fails(
        tmp_path, text, time_unit="ms"
    )


def read_warnings(tmp_path: Path, text: str, **options: Any) -> list[str]:
    return list(csv_trace.read(write(tmp_path, text), options).warnings)


def test_sizes_under_a_sector_suggest_the_size_unit(tmp_path: Path) -> None:
    """Sizes in sectors read as bytes made 8-byte I/Os without a word (review 63, item 7)."""
    sectors = "time,op,offset,size\n0,R,100,8\n1,W,200,16\n2,W,300,8\n"
    said = [w for w in read_warnings(tmp_path, sectors) if "under 512 bytes" in w]
    assert said == [
        "half the I/Os are under 512 bytes (median 8 B, read as bytes): if the size column counts "
        "sectors or blocks, give -O size_unit=sector (512 B) or the block size (e.g. "
        "-O size_unit=4KiB)"
    ]
    assert not [w for w in read_warnings(tmp_path, DEFAULT) if "under 512 bytes" in w]
    given = read_warnings(tmp_path, sectors, size_unit="B")  # said on purpose: not doubted
    assert not [w for w in given if "under 512 bytes" in w]


def test_timestamps_too_long_for_seconds_name_the_time_unit(tmp_path: Path) -> None:
    """Microseconds read as seconds failed on run.duration, a field the user never wrote; a day
    or more is warned of."""
    micro = "time,op,offset,size\n0,R,0,4096\n2500000,W,4096,4096\n"
    with pytest.raises(WorkloadFileError) as caught:
        csv_trace.read(write(tmp_path, micro), {})
    assert "options.time_unit: the timestamps span 2,500,000 s read as seconds" in str(caught.value)
    assert "give -O time_unit=ms or -O time_unit=us" in str(caught.value)
    two_days = "time,op,offset,size\n0,R,0,4096\n172800,W,4096,4096\n"
    assert any("spans 172,800 s (48.0 hours" in w for w in read_warnings(tmp_path, two_days))
    assert not list(csv_trace.read(write(tmp_path, micro, "us.csv"), {"time_unit": "us"}).warnings)
