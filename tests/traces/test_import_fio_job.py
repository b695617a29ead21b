"""fio job files: INI sections to scenario groups (simcache.traces.formats.fio_job)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

import simcache.traces.formats as importers
from simcache.base.errors import WorkloadFileError
from simcache.traces.formats import fio_job
from simcache.traces.formats.fio_job import fio_size, fio_time
from simcache.workloads.ingest.imported import import_workload


@pytest.fixture(autouse=True)
def _existing_formats(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guess among the importer modules present (other formats live on other branches until
    merged)."""
    present = tuple(
        n
        for n in importers._GUESS_ORDER
        if importlib.util.find_spec(f"simcache.traces.formats.{importers.FORMATS[n]}")
    )
    monkeypatch.setattr(importers, "_GUESS_ORDER", present)


def write(tmp_path: Path, text: str, name: str = "jobs.fio") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def by_name(imported: importers.Imported) -> dict[str, dict]:
    return {g["name"]: g for g in imported.groups}


def test_size_suffixes_follow_fio_kb_base() -> None:
    assert fio_size("4096") == 4096
    assert fio_size("4k") == fio_size("4K") == fio_size("4kb") == fio_size("4KB") == 4096
    assert fio_size("1m") == 1024**2
    assert fio_size("10g") == 10 * 1024**3
    assert fio_size("0x1000") == 4096
    # fio's default kb_base=1024 swaps the IEC spellings (HOWTO, kb_base): KiB is 1000
    assert fio_size("4KiB") == 4000
    assert fio_size("1MiB") == 1000**2
    assert fio_size("4KiB", kb_base=1000) == 4096
    assert fio_size("4k", kb_base=1000) == 4000
    with pytest.raises(ValueError, match="share of the file or device"):
        fio_size("20%")
    with pytest.raises(ValueError, match="cannot read size"):
        fio_size("4q")


def test_times_default_unit() -> None:
    assert fio_time("60", 1.0) == 60.0
    assert fio_time("2m", 1.0) == 120.0
    assert fio_time("500", 1e-6) == pytest.approx(500e-6)
    assert fio_time("5ms", 1e-6) == pytest.approx(0.005)
    assert fio_time("1h", 1.0) == 3600.0


def test_global_inheritance_override_and_later_global(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """; a comment
[global]
rw=randwrite
bs=8k
size=2g
direct=1
ioengine=libaio
iodepth=16
runtime=30
time_based

[first job]
iodepth=4          ; inline comment

[global]
rw=randread

[second]
""",
    )
    imported = import_workload(path, format="fio-job")
    groups = by_name(imported)
    assert list(groups) == ["first_job", "second"]
    first, second = groups["first_job"]["workload"], groups["second"]["workload"]
    assert first == {
        "mode": "closed",
        "workers": 1,
        "outstanding": 4,
        "read_fraction": 0.0,
        "sizes": {"8KiB": 1.0},
        "working_set": 2 * 1024**3,
        "access": "uniform",
    }
    assert (
        second["read_fraction"] == 1.0
        and second["outstanding"] == 16
        and second["sizes"] == {"8KiB": 1.0}
    )
    assert imported.duration == 30.0
    assert imported.facts[0] == ("jobs", "2")
    assert imported.facts[1] == (
        "job first job",
        "randwrite (writes), sizes 8KiB, closed loop, 1 worker x 4 outstanding, 1 VM, "
        "uniform over 2GiB, 30 s",
    )
    assert imported.warnings == []
    scenario = imported.scenario()
    assert [g.name for g in scenario.groups] == ["first_job", "second"]
    assert scenario.run.duration == 30.0


def test_bssplit_with_read_and_write_halves_and_mix(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """[mixed]
rw=randrw
rwmixread=75
bssplit=2k/50:4k/50,4k/90:8k/
direct=1
size=1g
""",
    )
    imported = import_workload(path, format="fio-job")
    workload = imported.groups[0]["workload"]
    assert workload["read_fraction"] == 0.75
    # Reads 2k/4k half and half, writes 4k 90% and 8k the 10% left: each op its own mix.
    assert "sizes" not in workload
    assert workload["read_sizes"] == {"2KiB": 0.5, "4KiB": 0.5}
    assert workload["write_sizes"] == {"4KiB": 0.9, "8KiB": 0.1}
    assert imported.warnings == []
    assert imported.duration is None
    scenario = imported.scenario()
    assert scenario.groups[0].workload.op_mean_size(False) == 3072.0
    assert scenario.groups[0].workload.op_mean_size(True) == pytest.approx(0.9 * 4096 + 0.1 * 8192)


def test_bs_read_write_form_range_and_rwmixwrite(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """[rw]
rw=rw
rwmixread=10
rwmixwrite=40
bs=4k,64k
direct=1
size=100m
[ranged]
rw=randread
bsrange=4k-16k
direct=1
size=100m
""",
    )
    groups = by_name(import_workload(path, format="fio-job"))
    rw = groups["rw"]["workload"]
    assert rw["read_fraction"] == 0.6  # the later of rwmixread and rwmixwrite wins
    assert rw["access"] == "sequential"
    assert (rw["read_sizes"], rw["write_sizes"]) == (
        {"4KiB": 1.0},
        {"64KiB": 1.0},
    ) and "sizes" not in rw
    assert groups["ranged"]["workload"]["sizes"] == {
        "4KiB": 0.25,
        "8KiB": 0.25,
        "12KiB": 0.25,
        "16KiB": 0.25,
    }


@pytest.mark.parametrize(
    ("option", "fields"),
    [
        # fio's HOWTO (bs): "bs=8k,32k" is 8k for reads and 32k for writes (and trims); "bs=8k,"
        # leaves writes at the default 4096; "bs=,8k" leaves reads at 4096; one value applies to
        # every direction.
        ("bs=8k,32k", {"read_sizes": {"8KiB": 1.0}, "write_sizes": {"32KiB": 1.0}}),
        ("bs=8k,", {"read_sizes": {"8KiB": 1.0}, "write_sizes": {"4KiB": 1.0}}),
        ("bs=,8k", {"read_sizes": {"4KiB": 1.0}, "write_sizes": {"8KiB": 1.0}}),
        ("bs=16k", {"sizes": {"16KiB": 1.0}}),
        (
            "bssplit=4k/50:64k/50,8k/100",
            {"read_sizes": {"4KiB": 0.5, "64KiB": 0.5}, "write_sizes": {"8KiB": 1.0}},
        ),
        # the same mix both ways: one
        ("bssplit=4k/25:8k/75,8k/75:4k/25", {"sizes": {"4KiB": 0.25, "8KiB": 0.75}}),
        (
            "blocksize_range=4k-8k,16k-32k",
            {"read_sizes": {"4KiB": 0.5, "8KiB": 0.5}, "write_sizes": {"16KiB": 0.5, "32KiB": 0.5}},
        ),
    ],
)
def test_per_direction_block_sizes_become_per_op_mixes(
    tmp_path: Path, option: str, fields: dict[str, Any]
) -> None:
    path = write(tmp_path, f"[j]\nrw=randrw\nrwmixread=70\n{option}\ndirect=1\nsize=1g\n")
    imported = import_workload(path, format="fio-job")
    workload = imported.groups[0]["workload"]
    assert {
        key: workload[key] for key in ("sizes", "read_sizes", "write_sizes") if key in workload
    } == fields
    assert imported.warnings == []
    imported.scenario()


def test_per_op_sizes_of_a_one_direction_job_are_its_directions(tmp_path: Path) -> None:
    # A write-only job with bs=4k,64k writes 64 KiB: one mix, the writes'.
    path = write(tmp_path, "[w]\nrw=randwrite\nbs=4k,64k\ndirect=1\nsize=1g\n")
    workload = import_workload(path, format="fio-job").groups[0]["workload"]
    assert workload["sizes"] == {"64KiB": 1.0} and "write_sizes" not in workload


def test_numjobs_as_vms_or_workers(tmp_path: Path) -> None:
    path = write(
        tmp_path, "[w]\nrw=randwrite\nnumjobs=4\niodepth=8\nioengine=libaio\ndirect=1\nsize=1g\n"
    )
    as_vms = import_workload(path, format="fio-job").groups[0]
    assert as_vms["vms_per_host"] == 4 and as_vms["workload"]["workers"] == 1
    as_workers = import_workload(path, format="fio-job", numjobs="workers").groups[0]
    assert as_workers["vms_per_host"] == 1 and as_workers["workload"]["workers"] == 4
    assert as_workers["workload"]["outstanding"] == 8
    with pytest.raises(WorkloadFileError, match=r"options\.numjobs.*use one of vms, workers"):
        import_workload(path, format="fio-job", numjobs="threads")
    with pytest.raises(
        WorkloadFileError,
        match=r"options\.depth: unknown option for the fio-job format; use numjobs",
    ):
        import_workload(path, format="fio-job", depth=3)


def test_rate_forms(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """[global]
direct=1
size=1g
[iops]
rw=randwrite
rate_iops=500
[both]
rw=randrw
rate_iops=300,100
[bytes]
rw=randrw
bs=4k,16k
rate=1m,512k
[reads_only]
rw=randrw
rate=1m,
[workers]
rw=randwrite
rate_iops=200
numjobs=3
""",
    )
    imported = import_workload(path, format="fio-job", numjobs="workers")
    groups = by_name(imported)
    assert (
        groups["iops"]["workload"]["mode"] == "open" and groups["iops"]["workload"]["iops"] == 500.0
    )
    both = groups["both"]["workload"]
    # The 50/50 mix holds; writes reach their cap first: 100 writes/s at a write share of 0.5 is 200
    # I/Os per second.
    assert both["iops"] == 200.0 and both["read_fraction"] == 0.5
    data = groups["bytes"]["workload"]
    # 50/50 mix: reads (4 KiB) cap the total at 1 MiB/s / (0.5 x 4 KiB) = 512 I/Os/s, writes (16
    # KiB) at 512 KiB/s / (0.5 x 16 KiB) = 64: 64 I/Os/s of a mean 10 KiB.
    assert data["throughput"] == pytest.approx(64 * (0.5 * 4096 + 0.5 * 16384))
    assert data["read_fraction"] == 0.5
    assert groups["reads_only"]["workload"]["mode"] == "closed"
    assert groups["workers"]["workload"]["iops"] == 600.0  # each clone is capped: 3 workers x 200
    assert "[reads_only]: rate caps only one direction" in "\n".join(imported.warnings)
    imported.scenario()


def test_thinktime_distribution_compression_and_duration(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """[global]
direct=1
size=4g
[zipf]
rw=randread
random_distribution=zipf:1.2
thinktime=250
runtime=2m
ramp_time=10
buffer_compress_percentage=60
[pareto]
rw=randwrite
random_distribution=pareto:0.2
thinktime=2ms
zero_buffers
runtime=45
""",
    )
    imported = import_workload(path, format="fio-job")
    groups = by_name(imported)
    zipf = groups["zipf"]["workload"]
    assert zipf["access"] == "zipf" and zipf["zipf_theta"] == 1.2
    assert zipf["think_time"] == pytest.approx(250e-6)
    assert zipf["compressibility"] == 0.6
    pareto = groups["pareto"]["workload"]
    assert pareto["access"] == "uniform" and pareto["think_time"] == pytest.approx(0.002)
    assert pareto["compressibility"] == 0.99
    assert imported.duration == 130.0  # ramp_time + runtime of the longest job
    assert imported.warnings == [
        "fio options not modelled (ignored): random_distribution=pareto:0.2 in [pareto] "
        "(not modelled: uniform access is used, so the hit rate is lower than fio's skew gives)",
        "[pareto]: zero_buffers: zero-filled data compresses to almost nothing, so compressibility "
        "= 0.99 "
        "(real data compresses far less; lower it for a realistic run)",
    ]
    imported.scenario()


def test_unknown_and_unsupported_keys_in_one_warning(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """[global]
direct=1
size=1g
fsync=0
[a]
rw=randwrite
fsync=32
loops=3
[b]
rw=write
fsync=8
dedupe_percentage=30
[t]
rw=randtrim
""",
    )
    imported = import_workload(path, format="fio-job")
    assert [g["name"] for g in imported.groups] == ["a", "b"]
    assert imported.warnings == [
        "fio options not modelled (ignored): fsync in [a], [b] (no flushes are modelled: a write "
        "completes once cached or replicated); "
        "loops in [a] (the run lasts run.duration, whatever the number of passes); "
        "dedupe_percentage in [b] (the model has no deduplication); "
        "rw=randtrim in [t] (trims are not modelled; the job is left out)"
    ]


def test_warnings_for_engine_buffered_io_and_iec_size(tmp_path: Path) -> None:
    path = write(tmp_path, "[j]\nrw=randread\niodepth=32\nbs=4KiB\n")
    imported = import_workload(path, format="fio-job")
    workload = imported.groups[0]["workload"]
    assert workload["outstanding"] == 1 and workload["sizes"] == {"4000": 1.0}
    assert "working_set" not in workload
    assert imported.warnings == [
        "[j]: bs=4KiB: with fio's default kb_base=1024 the IEC spellings KiB, MiB, GiB mean powers "
        "of 1000 "
        "(fio swaps them for old scripts), so 4KiB is 4000 bytes; write 4k, or set kb_base=1000",
        "[j]: iodepth > 1 with the synchronous ioengine psync: fio keeps one I/O in flight, so "
        "outstanding = 1",
        "[j]: no size: fio uses the whole file or device; the working set is the scenario's "
        "default (set working_set)",
        "[j]: buffered I/O (direct=0, fio's default): the guest's page cache absorbs I/O that the "
        "model sends to the host",
    ]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("[a]\nrw=randwrite\nbs=4q\n", "line 3, bs", "bs: cannot read size '4q'"),
        ("[a]\nrw=sideways\n", "line 2, rw", "rw is 'sideways'; use one of read, write"),
        ("rw=read\n[a]\n", "line 1, rw", "an option before any section"),
        ("[a\nrw=read\n", "line 1, section", "a section header is [name]"),
        ("[a]\nrw=read\nbad key=1\n", "line 3, bad key", "fio job lines are key=value"),
        ("[a]\nrw=read\ninclude other.fio\n", "line 3, include", "include is not followed"),
        ("[a]\nrw=read\nsize=${SIZE}\n", "line 3, size", "filled in by fio when it runs"),
        (
            "[a]\nrw=randrw\nbssplit=4k/70:8k/50\n",
            "line 3, bssplit",
            "add up to 120, more than 100",
        ),
        ("[a]\nrw=randrw\nrwmixread=140\n", "line 3, rwmixread", "give a number from 0 to 100"),
        ("[global]\nrw=read\n", "", "no job section to import"),
    ],
)
def test_malformed_lines_name_file_line_and_key(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(WorkloadFileError) as info:
        import_workload(path, format="fio-job")
    error = str(info.value)
    assert str(path) in error
    assert f"{where}: " in error if where else "(top level)" in error
    assert message in error


def test_group_names_sanitised_and_unique(tmp_path: Path) -> None:
    path = write(tmp_path, "[global]\nsize=1m\ndirect=1\n[job one/x]\n[job one/x]\n[ok-name.2]\n")
    assert [g["name"] for g in import_workload(path, format="fio-job").groups] == [
        "job_one_x",
        "job_one_x_2",
        "ok-name_2",
    ]


def test_sniff_and_guess(tmp_path: Path) -> None:
    job = "; fio\n[global]\nioengine=libaio\n[a]\nrw=randread\n"
    assert fio_job.sniff(job)
    assert not fio_job.sniff("[run]\nduration = 10\n[[groups]]\nname = 'x'\n")  # a scenario TOML
    assert not fio_job.sniff("[core]\nbare = false\nfilemode = true\n")  # INI without fio keys
    assert not fio_job.sniff('{"fio version": "fio-3.35", "jobs": []}')
    assert not fio_job.sniff("8,0 1 1 0.000000000 100 Q W 2048 + 8 [dd]\n")
    path = write(tmp_path, job, name="bench.txt")
    imported = import_workload(path)
    assert imported.format == "fio-job"
    assert imported.groups[0]["workload"]["access"] == "uniform"
