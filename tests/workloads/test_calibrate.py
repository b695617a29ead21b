"""simcache calibrate: fio results become points, bad sets are refused, the fit predicts unseen
queue depths, and the written device file is a complete tier a scenario takes with ``tier = { file =
... }``.

Data: tests/data/calibrate/ (fio 3.1 runs of an Intel D3-S4610 and a Samsung PM883 from
louwrentius/fio-plot; see the README there).
"""

from __future__ import annotations

import copy
import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from support.paths import DATA

from simcache.base.errors import ScenarioError, WorkloadFileError
from simcache.cli.main import main
from simcache.spec import load_scenario
from simcache.spec.components import TierSpec
from simcache.spec.profiles import get_profile
from simcache.workloads.calibrate.device import calibrate
from simcache.workloads.calibrate.points import read_points

DATA = DATA / "calibrate"
INTEL = DATA / "intel-d3-s4610"
SAMSUNG = DATA / "samsung-pm883"

DONE_TOLERANCE = 0.20
"""Issue 34's target: a drive fitted at two queue depths predicts a third within 20 %."""


def _job(path: Path) -> dict[str, Any]:
    job: dict[str, Any] = json.loads(path.read_text())["jobs"][0]
    return job


def _write(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def _edited(tmp_path: Path, source: Path, name: str, **options: str) -> Path:
    document = json.loads(source.read_text())
    document["jobs"][0]["job options"].update(options)
    return _write(tmp_path, name, document)


# -- points
# --------------------------------------------------------------------------------------------------


def test_a_point_holds_what_fio_measured() -> None:
    path = INTEL / "randread-2-8.json"
    read = _job(path)["read"]
    (point,) = read_points([path, INTEL / "randread-1-1.json"]).points[:1]
    assert (point.op, point.size, point.sequential) == ("read", 4096, False)
    assert point.outstanding == 2 * 8  # iodepth x numjobs
    assert point.iops == read["iops"]
    assert point.mean == pytest.approx(read["lat_ns"]["mean"] * 1e-9)
    assert point.p99 == pytest.approx(read["clat_ns"]["percentile"]["99.000000"] * 1e-9)


def test_fio_2_results_give_the_same_point(tmp_path: Path) -> None:
    """fio before 3.0 writes latencies in µs under clat/lat and io_bytes in KiB; the point is the
    same."""
    source = INTEL / "randread-1-8.json"
    document = json.loads(source.read_text())
    document["fio version"] = "fio-2.2.10"
    read = document["jobs"][0]["read"]
    for key in ("lat", "clat", "slat"):
        table = read.pop(f"{key}_ns")
        table = {k: v / 1e3 for k, v in table.items() if k in ("min", "max", "mean", "stddev")} | (
            {"percentile": {k: v / 1e3 for k, v in table["percentile"].items()}}
            if "percentile" in table
            else {}
        )
        read[key] = table
    read["io_bytes"] = read.pop("io_kbytes")
    old = _write(tmp_path, "fio2.json", document)
    (new_point, _), (old_point, _) = (
        read_points([p, INTEL / "randread-1-1.json"]).points for p in (source, old)
    )
    assert old_point.outstanding == new_point.outstanding
    assert old_point.iops == new_point.iops
    assert old_point.mean == pytest.approx(new_point.mean, rel=1e-12)
    assert old_point.p99 == pytest.approx(new_point.p99, rel=1e-12)


def test_clones_reported_apart_are_summed(tmp_path: Path) -> None:
    """numjobs=2 without group_reporting: two entries; IOPS add, mean latency is weighted by
    I/Os, p99 is unknown."""
    document = json.loads((INTEL / "randread-1-2.json").read_text())
    first = document["jobs"][0]
    first["job options"].pop("group_reporting")
    second = copy.deepcopy(first)
    second["read"]["iops"] = first["read"]["iops"] / 2
    second["read"]["total_ios"] = first["read"]["total_ios"] // 2
    second["read"]["lat_ns"]["mean"] = first["read"]["lat_ns"]["mean"] * 2
    document["jobs"].append(second)
    path = _write(tmp_path, "apart.json", document)
    point = read_points([path, INTEL / "randread-1-1.json"]).points[0]
    ios = [first["read"]["total_ios"], second["read"]["total_ios"]]
    means = [first["read"]["lat_ns"]["mean"], second["read"]["lat_ns"]["mean"]]
    assert point.outstanding == 2
    assert point.iops == pytest.approx(first["read"]["iops"] + second["read"]["iops"])
    assert point.mean == pytest.approx((ios[0] * means[0] + ios[1] * means[1]) / sum(ios) * 1e-9)
    assert point.p99 is None


# -- refusals
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"direct": "0"}, "direct=0"),
        ({"filename": "/mnt/data/fio.test"}, "not a /dev/ path"),
        ({"filename": "/dev/sda:/dev/sdb"}, "several files or devices"),
    ],
)
def test_a_run_that_cannot_describe_the_device_is_refused(
    tmp_path: Path, options: dict[str, str], reason: str
) -> None:
    bad = _edited(tmp_path, INTEL / "randread-1-8.json", "bad.json", **options)
    with pytest.raises(WorkloadFileError) as caught:
        read_points([INTEL / "randread-1-1.json", bad])
    assert "bad.json" in str(caught.value) and reason in str(caught.value)


def test_a_run_without_filename_is_refused(tmp_path: Path) -> None:
    document = json.loads((INTEL / "randread-1-8.json").read_text())
    del document["jobs"][0]["job options"]["filename"]
    bad = _write(tmp_path, "nofile.json", document)
    with pytest.raises(WorkloadFileError, match=r"(?s)nofile\.json.*no filename"):
        read_points([bad, INTEL / "randread-1-1.json"])


def test_two_devices_are_refused() -> None:
    with pytest.raises(WorkloadFileError) as caught:
        read_points([INTEL / "randread-1-1.json", SAMSUNG / "randread-1-8.json"])
    message = str(caught.value)
    assert "/dev/sdc" in message and "/dev/sda" in message and "one device" in message


def test_jobs_that_ran_together_are_refused(tmp_path: Path) -> None:
    document = json.loads((INTEL / "randread-1-8.json").read_text())
    other = copy.deepcopy(document["jobs"][0])
    other["jobname"] = "second"
    document["jobs"].append(other)  # same groupid: no stonewall between them
    path = _write(tmp_path, "together.json", document)
    with pytest.raises(WorkloadFileError, match="stonewall"):
        read_points([path, INTEL / "randread-1-1.json"])


def test_one_queue_depth_is_refused() -> None:
    with pytest.raises(WorkloadFileError, match="one queue depth"):
        read_points([INTEL / "randread-1-8.json", INTEL / "randwrite-1-8.json"])


# -- the fit
# --------------------------------------------------------------------------------------------------


def _relative(fitted: float, measured: float) -> float:
    return abs(fitted / measured - 1.0)


@pytest.mark.parametrize("folder", [INTEL, SAMSUNG], ids=["intel-d3-s4610", "samsung-pm883"])
def test_two_queue_depths_predict_unseen_reads_within_20_percent(folder: Path) -> None:
    """Done criterion of issue 34: fitted at QD1 and QD32 (reads and writes), the reads at QD 8
    it did not see come out within 20 % in IOPS and mean latency."""
    seen = [folder / f"rand{op}-1-{n}.json" for op in ("read", "write") for n in (1, 32)]
    calibration = calibrate(seen)
    unseen = read_points([folder / "randread-1-1.json", folder / "randread-1-8.json"]).points[1:]
    prediction = calibration.fit.predict(unseen)
    for i, point in enumerate(unseen):
        assert point.outstanding == 8
        assert _relative(prediction.iops[i], point.iops) < DONE_TOLERANCE, point.source
        assert _relative(prediction.mean[i], point.mean) < DONE_TOLERANCE, point.source


def test_the_fit_reproduces_its_points() -> None:
    """Fitted at six depths of reads, every point within 20 % (the model's parameters leave no
    point far off)."""
    files = [INTEL / f"randread-1-{n}.json" for n in (1, 2, 4, 8, 16, 32)]
    calibration = calibrate(files)
    for i, point in enumerate(calibration.fit.points):
        assert _relative(calibration.fit.fitted.iops[i], point.iops) < DONE_TOLERANCE, point.source


def test_warnings_say_which_runs_would_pin_what_is_missing() -> None:
    calibration = calibrate([INTEL / "randread-1-1.json", INTEL / "randread-1-32.json"])
    text = "\n".join(calibration.fit.warnings)
    assert "write_latency not measured" in text and "randwrite runs" in text
    assert "read_bandwidth not measured" in text and "128k" in text
    # kept from the base
    assert (
        calibration.table()["write_latency"]
        == get_profile("tier", calibration.base)["write_latency"]
    )


# -- the device file
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def device_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    files = [
        SAMSUNG / name
        for name in (
            "randread-1-1.json",
            "randread-1-32.json",
            "randwrite-1-1.json",
            "randwrite-1-8.json",
        )
    ]
    out = tmp_path_factory.mktemp("device") / "pm883.toml"
    assert main(["calibrate", *map(str, files), "-o", str(out)]) == 0
    return out, files


def test_the_file_names_its_inputs_by_sha256(device_file: tuple[Path, list[Path]]) -> None:
    out, files = device_file
    text = out.read_text()
    for path in files:
        assert f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}" in text


def test_the_file_shows_measured_against_fitted(device_file: tuple[Path, list[Path]]) -> None:
    out, files = device_file
    rows = [line for line in out.read_text().splitlines() if line.startswith("#   rand-")]
    assert len(rows) == len(files)
    assert all("%" in row for row in rows)


def _scenario(folder: Path, tier: str) -> Path:
    path = folder / "scenario.toml"
    path.write_text(
        f"""name = "calibrated"
[run]
duration = "1s"
[cluster]
hosts = 1
tier = {tier}
peer_link = "10GbE"
storage_link = "10GbE"
[array]
profile = "array-24x15k"
[[groups]]
name = "fio"
policy = "WB+0"
[groups.workload]
mode = "closed"
workers = 4
"""
    )
    return path


def test_a_scenario_takes_the_tier_from_the_file(device_file: tuple[Path, list[Path]]) -> None:
    out, _ = device_file
    scenario = load_scenario(_scenario(out.parent, f'{{ file = "{out.name}" }}'))
    assert scenario.cluster.tier == TierSpec.model_validate(tomllib.loads(out.read_text())["tier"])


def test_fields_beside_file_override_it(device_file: tuple[Path, list[Path]]) -> None:
    out, _ = device_file
    scenario = load_scenario(
        _scenario(out.parent, f'{{ file = "{out.name}", capacity = "3.84TB" }}')
    )
    assert scenario.cluster.tier.capacity == 3_840_000_000_000


def test_the_table_pasted_is_the_same_tier(device_file: tuple[Path, list[Path]]) -> None:
    out, _ = device_file
    from_file = load_scenario(_scenario(out.parent, f'{{ file = "{out.name}" }}')).cluster.tier
    table = out.read_text().split("\n[tier]\n", 1)[1]
    pasted = (
        _scenario(out.parent, "{}")
        .read_text()
        .replace("tier = {}\n", "")
        .replace("[array]", f"[cluster.tier]\n{table}\n[array]")
    )
    path = out.parent / "pasted.toml"
    path.write_text(pasted)
    assert load_scenario(path).cluster.tier == from_file


@pytest.mark.parametrize(
    ("write", "reason"),
    [(None, "no such file"), ("[drive]\nrpm = 7200\n", "has no [tier] table")],
)
def test_a_missing_or_wrong_device_file_is_refused(
    tmp_path: Path, write: str | None, reason: str
) -> None:
    if write is not None:
        (tmp_path / "device.toml").write_text(write)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_scenario(tmp_path, '{ file = "device.toml" }'))
    assert "cluster.tier.file" in str(caught.value) and reason in str(caught.value)


def test_cli_prints_the_fit_and_refuses_bad_sets(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["calibrate", str(INTEL / "randread-1-1.json"), str(SAMSUNG / "randread-1-8.json")])
        == 2
    )
    assert "one device" in capsys.readouterr().err
    assert (
        main(["calibrate", str(INTEL / "randread-1-1.json"), str(INTEL / "randread-1-8.json")]) == 0
    )
    captured = capsys.readouterr()
    assert "rand-read 4KiB" in captured.err and "[tier]" in captured.out


def test_an_array_takes_its_drive_from_a_file(tmp_path: Path) -> None:
    """``[array] drive = { file = ... }`` reads the file's ``[drive]`` table as ``tier`` reads
    ``[tier]``."""
    drive = get_profile("drive", "sata-7200") | {"rpm": 5400}
    (tmp_path / "disk.toml").write_text(
        "[drive]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in drive.items())
    )
    path = _scenario(tmp_path, '"sata-ssd-s3700"')
    text = path.read_text().replace(
        'profile = "array-24x15k"', 'profile = "array-24x15k"\ndrive = { file = "disk.toml" }'
    )
    path.write_text(text)
    assert load_scenario(path).array.drive.rpm == 5400
