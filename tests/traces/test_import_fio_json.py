"""fio JSON results: workloads and measured figures as checks (simcache.traces.formats.fio_json)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

import simcache.traces.formats as importers
from simcache.base.errors import WorkloadFileError
from simcache.base.metrics import RECORD_METRICS
from simcache.traces.formats import fio_json
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


def latency(
    mean_ns: float, max_ns: float, percentiles: dict[str, float] | None = None
) -> dict[str, Any]:
    table: dict[str, Any] = {"min": 1000, "max": max_ns, "mean": mean_ns, "stddev": 10.0, "N": 1000}
    if percentiles is not None:
        table["percentile"] = percentiles
    return table


def direction(
    iops: float, bw_bytes: int, ios: int, runtime_ms: int, lat: dict[str, Any], clat: dict[str, Any]
) -> dict[str, Any]:
    return {
        "io_bytes": bw_bytes * runtime_ms // 1000,
        "io_kbytes": bw_bytes * runtime_ms // 1000 // 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,
        "iops": iops,
        "runtime": runtime_ms,
        "total_ios": ios,
        "slat_ns": latency(2000, 9000),
        "clat_ns": clat,
        "lat_ns": lat,
    }


IDLE = {
    "io_bytes": 0,
    "bw_bytes": 0,
    "bw": 0,
    "iops": 0.0,
    "runtime": 0,
    "total_ios": 0,
    "clat_ns": latency(0, 0),
    "lat_ns": latency(0, 0),
}


def result(
    jobs: list[dict[str, Any]], global_options: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "fio version": "fio-3.35",
        "timestamp": 1700000000,
        "global options": global_options or {},
        "jobs": jobs,
    }


CLAT_PERCENTILES = {
    "50.000000": 400_000,
    "90.000000": 900_000,
    "95.000000": 1_100_000,
    "99.000000": 2_000_000,
    "99.900000": 5_000_000,
}


def write_job() -> dict[str, Any]:
    return {
        "jobname": "randwrite",
        "groupid": 0,
        "error": 0,
        "job options": {
            "rw": "randwrite",
            "bs": "4k",
            "iodepth": "16",
            "ioengine": "libaio",
            "size": "1g",
            "runtime": "60",
        },
        "read": IDLE,
        "write": direction(
            12000.5,
            49_154_048,
            720_030,
            60_000,
            latency(1_330_000, 40_000_000),
            latency(1_320_000, 39_000_000, CLAT_PERCENTILES),
        ),
        "trim": IDLE,
    }


def write_json(
    tmp_path: Path, document: dict[str, Any], prefix: str = "", name: str = "out.json"
) -> Path:
    path = tmp_path / name
    path.write_text(prefix + json.dumps(document, indent=2) + "\n")
    return path


def checks_by_metric(imported: importers.Imported) -> dict[str, dict[str, Any]]:
    return {e["metric"]: e for e in imported.expect}


def test_percentiles_and_figures_to_expectations(tmp_path: Path) -> None:
    path = write_json(tmp_path, result([write_job()], {"direct": "1"}))
    imported = import_workload(path, format="fio-json")
    assert imported.format == "fio-json"
    assert imported.groups == [
        {
            "name": "randwrite",
            "vms_per_host": 1,
            "workload": {
                "mode": "closed",
                "workers": 1,
                "outstanding": 16,
                "read_fraction": 0.0,
                "sizes": {"4KiB": 1.0},
                "working_set": 1024**3,
                "access": "uniform",
            },
        }
    ]
    checks = checks_by_metric(imported)
    assert list(checks) == ["iops", "mb_s", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms"]
    assert all(metric in RECORD_METRICS for metric in checks)
    assert checks["iops"] == {
        "name": "randwrite-write-iops",
        "metric": "iops",
        "group": "randwrite",
        "op": "write",
        "approx": 12000.5,
        "rel": 0.25,
        "observation": "fio measured IOPS 12,000.5 IOPS on the writes of job randwrite",
        "field_figure": "12,000.5 IOPS",
        "tolerance": "±25%: fio's figure, within the import's relative tolerance (option rel)",
    }
    assert checks["mb_s"]["approx"] == 49.154048
    assert checks["mean_ms"]["approx"] == 1.33  # lat_ns (submission + completion), not clat
    assert checks["p99_ms"]["approx"] == 2.0
    assert checks["p999_ms"]["approx"] == 5.0
    assert (
        checks["p99_ms"]["observation"]
        == "fio measured p99 completion latency (clat) 2 ms on the writes of job randwrite"
    )
    facts = dict(imported.facts)
    assert facts["fio version"] == "fio-3.35"
    assert facts["jobs"] == "1"
    assert (
        facts["job randwrite write not checked"]
        == "p90 0.9 ms, max 40 ms (one I/O: too noisy to check), 720,030 I/Os in 60 s"
    )
    assert imported.duration == 60.0
    assert imported.warnings == []
    scenario = imported.scenario()
    assert [e.metric for e in scenario.expect] == list(checks)
    assert scenario.expect[0].group == "randwrite"


def test_leading_non_json_lines_and_rel_option(tmp_path: Path) -> None:
    prefix = (
        "note: both iodepth >= 1 and synchronous I/O engine are selected\nfio: some other message\n"
    )
    path = write_json(tmp_path, result([write_job()], {"direct": "1"}), prefix=prefix)
    imported = import_workload(path, format="fio-json", rel=0.1)
    assert {e["rel"] for e in imported.expect} == {0.1}
    assert imported.warnings == ["skipped 2 lines before the JSON object (fio's messages)"]
    imported.scenario()
    with pytest.raises(
        WorkloadFileError, match=r"options\.rel: rel is '-1'; give a relative tolerance above 0"
    ):
        import_workload(path, format="fio-json", rel="-1")


def test_old_fio_clat_in_microseconds(tmp_path: Path) -> None:
    old_read = {
        "io_bytes": 409600,  # KiB before fio 3.0
        "bw": 6826,
        "iops": 1706.5,
        "runtime": 60000,
        "total_ios": 102400,
        "slat": {"min": 2, "max": 50, "mean": 4.5, "stddev": 1.0},
        "clat": {
            "min": 100,
            "max": 25000,
            "mean": 580.25,
            "stddev": 90.0,
            "percentile": {
                "1.000000": 150,
                "50.000000": 540,
                "99.000000": 1800,
                "99.900000": 6000,
                "0.00": 0,
            },
        },
        "lat": {"min": 105, "max": 25010, "mean": 585.0, "stddev": 90.0},
    }
    job = {
        "jobname": "old",
        "groupid": 0,
        "error": 0,
        "job options": {"rw": "randread", "size": "512m", "direct": "1"},
        "read": old_read,
    }
    path = write_json(tmp_path, {"fio version": "fio-2.2.10", "jobs": [job]})
    imported = import_workload(path, format="fio-json")
    checks = checks_by_metric(imported)
    assert checks["iops"]["op"] == "read"
    assert checks["mb_s"]["approx"] == pytest.approx(6826 * 1024 / 1e6)
    assert checks["mean_ms"]["approx"] == 0.585
    assert checks["p50_ms"]["approx"] == 0.54
    assert checks["p99_ms"]["approx"] == 1.8
    assert checks["p999_ms"]["approx"] == 6.0
    not_checked = "p1 0.15 ms, max 25.01 ms (one I/O: too noisy to check), 102,400 I/Os in 60 s"
    assert dict(imported.facts)["job old read not checked"] == not_checked
    imported.scenario()


def test_numjobs_with_group_reporting_is_one_aggregate_entry(tmp_path: Path) -> None:
    job = write_job()
    job["job options"] |= {"numjobs": "4", "direct": "1"}
    path = write_json(tmp_path, result([job], {"group_reporting": "1"}))
    imported = import_workload(path, format="fio-json")
    assert imported.groups[0]["vms_per_host"] == 4
    assert checks_by_metric(imported)["iops"]["approx"] == 12000.5
    assert (
        dict(imported.facts)["job randwrite clones"]
        == "numjobs=4, one entry (group_reporting): its figures are the sum over the clones"
    )
    imported.scenario()


def test_numjobs_without_group_reporting_sums_the_clones(tmp_path: Path) -> None:
    clones = []
    for iops, mean in ((1000.0, 1_000_000), (3000.0, 2_000_000)):
        job = write_job()
        job["job options"] |= {"numjobs": "2", "direct": "1"}
        job["write"] = direction(
            iops,
            int(iops * 4096),
            int(iops * 60),
            60_000,
            latency(mean, 9e6),
            latency(mean, 9e6, CLAT_PERCENTILES),
        )
        clones.append(job)
    imported = import_workload(
        write_json(tmp_path, result(clones)), format="fio-json", numjobs="workers"
    )
    assert (
        imported.groups[0]["vms_per_host"] == 1 and imported.groups[0]["workload"]["workers"] == 2
    )
    checks = checks_by_metric(imported)
    assert list(checks) == ["iops", "mb_s", "mean_ms"]
    assert checks["iops"]["approx"] == 4000.0
    # weighted by I/O count: (60000 x 1 + 180000 x 2) / 240000
    assert checks["mean_ms"]["approx"] == 1.75
    facts = dict(imported.facts)
    assert facts["job randwrite clones"] == (
        "numjobs=2, 2 entries, one per clone: IOPS and bandwidth summed, mean latency weighted "
        "by I/Os"
    )
    assert facts["job randwrite write not checked"].startswith(
        "percentiles of separately reported clones (they cannot be merged)"
    )
    imported.scenario()


def test_mixed_reporting_and_job_options_warnings(tmp_path: Path) -> None:
    job = {
        "jobname": "mix me",
        "groupid": 0,
        "error": 5,
        "job options": {
            "rw": "randrw",
            "rwmixread": "70",
            "size": "1g",
            "direct": "1",
            "fsync": "4",
        },
        "mixed": direction(
            5000.0,
            20_480_000,
            300_000,
            60_000,
            latency(800_000, 9e6),
            latency(790_000, 9e6, {"99.000000": 3_000_000}),
        ),
    }
    imported = import_workload(write_json(tmp_path, result([job])), format="fio-json")
    assert imported.groups[0]["name"] == "mix_me"
    assert {(e["op"], e["group"]) for e in imported.expect} == {("any", "mix_me")}
    assert imported.warnings == [
        "fio options not modelled (ignored): fsync in [mix me] (no flushes are modelled: a write "
        "completes once cached or replicated)",
        "job mix me (jobs[0]) ended with error 5: its figures may cover part of the run",
    ]
    imported.scenario()


def test_status_interval_dumps_use_the_last(tmp_path: Path) -> None:
    early, final = write_job(), write_job()
    early["write"]["iops"] = 10.0
    path = tmp_path / "status.json"
    path.write_text(
        json.dumps(result([early], {"direct": "1"}))
        + "\n"
        + json.dumps(result([final], {"direct": "1"}))
        + "\n"
    )
    imported = import_workload(path, format="fio-json")
    assert checks_by_metric(imported)["iops"]["approx"] == 12000.5
    assert imported.warnings == [
        "2 JSON objects (fio --status-interval); the last, covering the whole run, is used"
    ]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('{"fio version": "fio-3.35", "jobs": [}', "line 1", "not valid JSON"),
        ('{"fio version": "fio-3.35"}', "jobs", "no jobs list"),
        (
            '{"fio version": "x", "jobs": [{"jobname": "a", "job options": {"bs": "4q"}}]}',
            'jobs[0]."job options".bs',
            "cannot read size",
        ),
        (
            '{"fio version": "x", "jobs": [{"jobname": "a", "read": {"iops": "fast"}}]}',
            "jobs[0].read.iops",
            "'fast' is not a number",
        ),
        ("fio: no JSON here\n", "", "no JSON object"),
        # found by bench/fuzz_calibrate.py: a group that is not a number could not key the jobs
        (
            '{"fio version": "x", "jobs": [{"jobname": "a", "groupid": {"a": 1}}]}',
            "jobs[0].groupid",
            'as a whole number; got {"a": 1}',
        ),
        # found by tests/workloads/test_calibrate_fuzz.py at random: a negative mean latency made a
        # calibration point with a negative mean
        (
            '{"fio version": "x", "jobs": [{"jobname": "a", "read": {"iops": 10,'
            ' "lat_ns": {"mean": -1}}}]}',
            "jobs[0].read.lat_ns.mean",
            "a latency is never negative",
        ),
    ],
)
def test_errors_name_the_field(tmp_path: Path, text: str, where: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(WorkloadFileError) as info:
        import_workload(path, format="fio-json")
    error = str(info.value)
    assert str(path) in error and message in error
    assert f"{where}: " in error if where else "(top level)" in error


def test_sniff_and_guess(tmp_path: Path) -> None:
    assert fio_json.sniff('{\n  "fio version" : "fio-3.35",\n')
    assert not fio_json.sniff("[global]\nrw=randread\n")
    assert not fio_json.sniff('{"name": "scenario"}')
    path = write_json(
        tmp_path, result([write_job()], {"direct": "1"}), prefix="fio: warning\n", name="run.txt"
    )
    assert import_workload(path).format == "fio-json"


def test_a_job_with_per_direction_block_sizes_gets_per_op_mixes(tmp_path: Path) -> None:
    # fio's JSON keeps the job's options as given: bs=4k,64k is 4 KiB reads and 64 KiB writes, as in
    # a job file.
    job = write_job()
    job["job options"] = {**job["job options"], "rw": "randrw", "rwmixread": "70", "bs": "4k,64k"}
    job["read"] = direction(
        28000.0,
        114_688_000,
        1_680_000,
        60_000,
        latency(400_000, 9_000_000),
        latency(390_000, 8_000_000),
    )
    imported = import_workload(
        write_json(tmp_path, result([job], {"direct": "1"})), format="fio-json"
    )
    workload = imported.groups[0]["workload"]
    assert (workload["read_sizes"], workload["write_sizes"]) == (
        {"4KiB": 1.0},
        {"64KiB": 1.0},
    ) and "sizes" not in workload
    sizes, probabilities = imported.scenario().groups[0].workload.size_mix
    assert sizes == (4096, 65536) and probabilities == pytest.approx((0.7, 0.3))
