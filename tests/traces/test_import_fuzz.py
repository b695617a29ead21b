"""Fuzzing the importers: a mutated workload file ends in an import or in the project's own error,
never a traceback.

Each format starts from a small valid file written here; hypothesis mutates it
(bytes flipped, lines cut, repeated, swapped or truncated, fields replaced
with numbers and words that do not belong) and the file is imported with its
format given and with the format guessed. Anything but success or
:class:`~simcache.base.errors.ScenarioError` (of which ``WorkloadFileError`` is
one) fails, as does an import whose scenario then does not validate.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.mutations import mutated

from simcache.base.errors import ScenarioError
from simcache.workloads.ingest.imported import import_workload

SAMPLES: dict[str, str] = {
    "fio-job": "[global]\nioengine=libaio\ndirect=1\nsize=1g\nruntime=10\n\n[a]\nrw=randrw\n"
    "rwmixread=70\nbs=4k\niodepth=4\n\n"
    "[b]\nrw=write\nbssplit=4k/50:64k/50\nrate_iops=200\nnumjobs=2\n",
    "fio-json": '{"fio version": "fio-3.36", "global options": {"size": "1g"}, "jobs": '
    '[{"jobname": "a", "groupid": 0, '
    '"error": 0, "job options": {"rw": "randwrite", "bs": "4k", "iodepth": "2"}, "write": '
    '{"io_bytes": 4096000, '
    '"bw": 400, "iops": 100.0, "runtime": 10000, "total_ios": 1000, "clat_ns": {"min": 1000, '
    '"max": 90000, '
    '"mean": 40000.0, "stddev": 1000.0, "N": 1000, "percentile": {"50.000000": 38000, "99.000000": '
    "80000}}, "
    '"lat_ns": {"min": 1000, "max": 90000, "mean": 41000.0, "stddev": 1000.0, "N": 1000}}}]}\n',
    "fio-iolog": "fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n10 /dev/sdb write 0 4096\n"
    "250 /dev/sdb read 8192 8192\n"
    "400 /dev/sdb sync 0 0\n900 /dev/sdb write 65536 65536\n1000 /dev/sdb close\n",
    "blkparse": "  8,0    0        1     0.000000000  4162  Q  WS 2048 + 8 [fio]\n"
    "  8,0    0        2     0.000010000  4162  D  WS 2048 + 8 [fio]\n"
    "  8,0    1        1     0.000020000  4163  D   R 4096 + 16 [fio]\n"
    "  8,0    0        3     0.000510000     0  C  WS 2048 + 8 [0]\n"
    "  8,0    1        2     0.001030000     0  C   R 4096 + 16 [0]\n"
    "CPU0 (8,0):\n Reads Queued:           0,        0KiB\t Writes Queued:           1,        "
    "4KiB\n",
    "msr": "128166372003061629,usr,0,Write,7014609920,24576,41286\n"
    "128166372016853766,usr,0,Read,1317441536,8192,1963\n"
    "128166372026382522,usr,1,Write,2436440064,4096,1835\n",
    "csv": (
        "time,op,offset,size\n0.0,write,0,4096\n0.01,read,4096,8192\n0.02,W,8192,65536\n"
        "0.5,R,0,4096\n"
    ),
}


def _vscsistats() -> str:
    sections = []
    histograms = {
        "IO lengths of commands": [(0, 512), (30, 4096), (10, 8192), (5, 65536), (0, 65536)],
        "IO lengths of Read commands": [(0, 512), (20, 4096), (5, 8192), (0, 65536), (0, 65536)],
        "IO lengths of Write commands": [(0, 512), (10, 4096), (5, 8192), (5, 65536), (0, 65536)],
        "distance (in LBNs) between successive commands": [(5, -500), (30, 1), (10, 500), (0, 500)],
        "latency of IO interarrival time in Microseconds (us)": [
            (10, 100),
            (30, 1000),
            (5, 10000),
            (0, 10000),
        ],
        "latency of IOs in Microseconds (us)": [(5, 100), (35, 500), (5, 5000), (0, 5000)],
        "number of outstanding IOs when a new IO is issued": [(20, 1), (20, 2), (5, 4), (0, 4)],
    }
    for title, rows in histograms.items():
        count = sum(c for c, _ in rows)
        sections.append(
            f"Histogram: {title},virtual machine worldGroupID,2099979,virtual disk handleID,8194 "
            "(scsi0:0)\n"
            f"min,{rows[0][1]}\nmax,{rows[-1][1]}\nmean,{rows[1][1]}\ncount,{count}\n"
            "Frequency,Histogram Bucket Limit\n" + "".join(f"{c},{limit}\n" for c, limit in rows)
        )
    return "".join(sections)


SAMPLES["vscsistats"] = _vscsistats()


def _import(data: bytes, format_name: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="simcache-fuzz-") as folder:
        path = Path(folder) / "input"
        path.write_bytes(data)
        try:
            imported = import_workload(path, format_name)
            imported.scenario()
        except ScenarioError:
            pass


@pytest.fixture(autouse=True)
def _trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("format_name", sorted(SAMPLES))
def test_the_valid_samples_import(format_name: str, tmp_path: Path) -> None:
    path = tmp_path / "sample"
    path.write_text(SAMPLES[format_name])
    imported = import_workload(path, format_name)
    imported.scenario()
    assert import_workload(path).format == format_name  # and each is recognised without --format


@pytest.mark.parametrize("format_name", sorted(SAMPLES))
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_files_end_in_an_import_or_the_projects_error(
    format_name: str, data: st.DataObject
) -> None:
    mutant = data.draw(mutated(SAMPLES[format_name]))
    _import(mutant, format_name)
    _import(mutant, None)


@pytest.mark.parametrize(
    ("format_name", "text"),
    [
        ("csv", 'time,op,offset,size\n",write,0,4096\n0.01,read,4096,8192\n'),
        (
            "msr",
            '",usr,0,Write,7014609920,24576,41286\n'
            "128166372016853766,usr,0,Read,1317441536,8192,1963\n",
        ),
    ],
)
def test_an_unclosed_quote_is_named_by_its_line(
    format_name: str, text: str, tmp_path: Path
) -> None:
    """Found by the fuzzer: pandas' reader raised its own error while it was being made."""
    path = tmp_path / "quoted"
    path.write_text(text)
    with pytest.raises(ScenarioError) as error:
        import_workload(path, format_name)
    line = 2 if format_name == "csv" else 1
    assert error.value.problems == [
        (
            f"line {line}",
            'a quote (") that is never closed: the rest of the file would be one field; remove it',
        )
    ]


def test_a_carriage_return_inside_a_line_is_named(tmp_path: Path) -> None:
    """Found by the fuzzer: the csv module refused the header line with its own error."""
    path = tmp_path / "cr.csv"
    path.write_bytes(b"\rime,op,offset,size\n0.0,write,0,4096\n")
    with pytest.raises(ScenarioError) as error:
        import_workload(path, "csv")
    assert error.value.problems[0][0] == "line 1"
    assert error.value.problems[0][1].startswith(
        "cannot split the line into fields: new-line character seen in unquoted field"
    )


@pytest.mark.parametrize(
    ("format_name", "text"),
    [
        ("csv", "time,op,offset,size\n0.0,write,0,4096,77\n0.01,read,4096,8192\n"),
        (
            "msr",
            "128166372003061629,usr,0,Write,7014609920,24576,41286,9\n"
            "128166372016853766,usr,0,Read,1317441536,8192,1963\n",
        ),
    ],
)
def test_extra_fields_on_a_first_row_are_an_error_not_dropped(
    format_name: str, text: str, tmp_path: Path
) -> None:
    """Found by the fuzzer (a warning in the suite): pandas dropped the extra fields of a chunk's
    first row with only a warning."""
    path = tmp_path / "extra"
    path.write_text(text)
    with pytest.raises(ScenarioError) as error:
        import_workload(path, format_name)
    fields = 5 if format_name == "csv" else 8
    assert error.value.problems[0][0] == ("line 2" if format_name == "csv" else "line 1")
    assert error.value.problems[0][1].startswith(f"{fields} fields; expected {fields - 1}")
