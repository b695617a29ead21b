"""``simcache calibrate`` and its base profile (review 62, items 4 and 9): an operation not measured
keeps the base's lone time (the shared ``command_overhead`` is not fitted from the other operation
alone), every field the base gives is listed with what would pin it, a default base is said, and a
fitted parameter left at a bound is said to be.

Data: tests/data/calibrate/ (fio 3.1 runs of an Intel D3-S4610), and synthetic fio 3.x results of
an NVMe drive written here (the reviewer's: a PCIe 4.0 class drive's QD1 and QD32 4 KiB randoms).
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.paths import DATA

from simcache.cli.main import main
from simcache.physics.cluster import pipe_rate, read_channel_seconds
from simcache.spec.array import DriveSpec
from simcache.spec.components import TierSpec
from simcache.spec.profiles import get_profile, list_profiles
from simcache.workloads.calibrate.device import Calibration, calibrate
from simcache.workloads.calibrate.drive_fit import fit_drive
from simcache.workloads.calibrate.drive_model import Drive, span_of
from simcache.workloads.calibrate.fit import Fit
from simcache.workloads.calibrate.points import read_points

INTEL = DATA / "calibrate" / "intel-d3-s4610"
F1 = DATA / "calibrate" / "samsung-f1"
SIZE = 4096

NVME_RUNS = {
    # name: (op, iodepth, IOPS, mean µs, p99 µs)
    "rr1": ("read", 1, 12_400.0, 80.0, 110.0),
    "rr32": ("read", 32, 380_000.0, 84.0, 160.0),
    "rw1": ("write", 1, 62_000.0, 16.0, 25.0),
    "rw32": ("write", 32, 200_000.0, 160.0, 400.0),
}
"""The reviewer's synthetic runs (/tmp/review62/fio_*.json) by name."""


def _fio(folder: Path, name: str) -> Path:
    """A fio 3.x JSON result of one job of :data:`NVME_RUNS` on /dev/nvme0n1."""
    op, depth, iops, mean, p99 = NVME_RUNS[name]
    ios = int(iops * 30)
    latency = {"mean": mean * 1e3, "percentile": {"50.000000": mean * 1e3, "99.000000": p99 * 1e3}}
    idle = {"io_bytes": 0, "iops": 0.0, "runtime": 0, "total_ios": 0}
    measured = {
        "io_bytes": ios * SIZE,
        "iops": iops,
        "runtime": 30000,
        "total_ios": ios,
        "clat_ns": latency,
        "lat_ns": latency,
    }
    document: dict[str, Any] = {
        "fio version": "fio-3.36",
        "global options": {"ioengine": "libaio", "direct": "1", "filename": "/dev/nvme0n1"},
        "jobs": [
            {
                "jobname": name,
                "groupid": 0,
                "error": 0,
                "job options": {
                    "name": name,
                    "rw": f"rand{op}",
                    "bs": "4k",
                    "iodepth": str(depth),
                    "numjobs": "1",
                },
                "read": measured if op == "read" else idle,
                "write": measured if op == "write" else idle,
            }
        ],
    }
    path = folder / f"fio_{name}.json"
    path.write_text(json.dumps(document))
    return path


def _lone(spec: TierSpec, op: str) -> float:
    """The simulator's time of one ``SIZE`` operation on an idle tier, stalls aside
    (simcache.physics.cluster.read_channel_seconds): command_overhead, the command processor, the
    unit (with a read's channel time) and the transfer."""
    limit = spec.read_iops_limit if op == "read" else spec.write_iops_limit
    latency = spec.read_latency if op == "read" else spec.write_latency
    bandwidth = spec.read_bandwidth if op == "read" else spec.write_bandwidth
    channel = SIZE * read_channel_seconds(spec) if op == "read" else 0.0
    command = 1.0 / limit if limit else 0.0
    pipe = SIZE / pipe_rate(bandwidth, None, spec.interface)
    return spec.command_overhead + command + latency + channel + pipe


def _spread(spec: TierSpec, op: str) -> float:
    """The coefficient of variation of ``op``'s unit time (0: deterministic)."""
    if spec.service != "lognormal":
        return 0.0
    assert spec.service_cv is not None
    if op == "write" and spec.write_service_cv is not None:
        return spec.write_service_cv
    return spec.service_cv


def _base_spec(name: str) -> TierSpec:
    return TierSpec.model_validate(get_profile("tier", name))


# -- review 62 item 4: the operation not measured keeps the base's lone time
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("base", ["nvme-pm9a3", "nvme-p3700"])
def test_a_read_only_calibration_keeps_the_base_lone_write(tmp_path: Path, base: str) -> None:
    """Reads alone cannot split their lone time between command_overhead (which writes pay too)
    and read_latency: the base's overhead is held, so a lone write is the base's to the
    nanosecond (the reviewer's case: 53 µs fitted onto every write, 0.058 ms against 0.015 ms), and
    the writes keep the base's spread. The note says what was kept."""
    calibration = calibrate([_fio(tmp_path, "rr1"), _fio(tmp_path, "rr32")], base=base)
    spec, base_spec = TierSpec.model_validate(calibration.table()), _base_spec(base)
    assert _lone(spec, "write") == pytest.approx(_lone(base_spec, "write"), rel=1e-9)
    assert spec.command_overhead + spec.write_latency == pytest.approx(
        base_spec.command_overhead + base_spec.write_latency, rel=1e-9
    )
    assert _spread(spec, "write") == pytest.approx(_spread(base_spec, "write"))
    # the reads are still fitted: the lone read near the QD1 run's mean
    assert _lone(spec, "read") == pytest.approx(80e-6, rel=0.1)
    assert "command_overhead" not in calibration.fit.fitted_fields
    (note,) = [w for w in calibration.fit.warnings if w.startswith("write_latency not measured")]
    lone = (base_spec.command_overhead + base_spec.write_latency) * 1e6
    assert f"{base_spec.command_overhead * 1e6:.4g} µs, held" in note
    assert f"a lone write takes the base's {lone:.4g} µs" in note
    assert "held: only reads measured" in calibration.toml


def test_a_write_only_calibration_keeps_the_base_lone_read(tmp_path: Path) -> None:
    """As for reads, with a base whose reads hold their die per byte (read_channel_bandwidth) and
    queue at their die (read_interference): the reads, not measured, keep both."""
    base = "nvme-qlc-p5336"
    calibration = calibrate([_fio(tmp_path, "rw1"), _fio(tmp_path, "rw32")], base=base)
    spec, base_spec = TierSpec.model_validate(calibration.table()), _base_spec(base)
    assert _lone(spec, "read") == pytest.approx(_lone(base_spec, "read"), rel=1e-9)
    assert spec.read_channel_bandwidth == base_spec.read_channel_bandwidth
    assert spec.read_interference == base_spec.read_interference
    assert _spread(spec, "read") == pytest.approx(_spread(base_spec, "read"))
    assert _lone(spec, "write") == pytest.approx(16e-6, rel=0.2)
    assert any(w.startswith("read_latency not measured") for w in calibration.fit.warnings)


def test_a_base_overhead_longer_than_the_lone_op_moves_the_other_latency(tmp_path: Path) -> None:
    """The SATA base's 50 µs overhead is longer than the NVMe drive's lone write (16 µs): it cannot
    be held, so it is fitted to the writes and read_latency moves by the opposite amount: a lone
    read is still the base's, and the note says how."""
    base = "sata-ssd-s3700"
    calibration = calibrate([_fio(tmp_path, "rw1"), _fio(tmp_path, "rw32")], base=base)
    spec, base_spec = TierSpec.model_validate(calibration.table()), _base_spec(base)
    fit = calibration.fit
    assert isinstance(fit, Fit)
    assert fit.compensated == ("read_latency",)
    assert spec.command_overhead < base_spec.command_overhead
    # written to 0.1 ns of a µs figure's four digits: the table's text
    assert _lone(spec, "read") == pytest.approx(_lone(base_spec, "read"), rel=1e-3)
    (note,) = [w for w in fit.warnings if w.startswith("read_latency not measured")]
    assert "to keep a lone read's command_overhead + read_latency at the base profile's" in note


def test_the_read_only_case_of_the_review_runs_writes_as_the_base(tmp_path: Path) -> None:
    """The reviewer's check through the CLI: the written file's lone write equals nvme-pm9a3's."""
    out = tmp_path / "my2.toml"
    files = [str(_fio(tmp_path, name)) for name in ("rr1", "rr32")]
    assert main(["calibrate", *files, "--base", "nvme-pm9a3", "-o", str(out)]) == 0
    spec = TierSpec.model_validate(tomllib.loads(out.read_text())["tier"])
    assert _lone(spec, "write") == pytest.approx(_lone(_base_spec("nvme-pm9a3"), "write"))


# -- review 62 item 9: the base's fields said, the default base said, fits at a bound said
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def default_base(tmp_path_factory: pytest.TempPathFactory) -> Calibration:
    """The reviewer's four NVMe runs with no --base (nvme-p3700 completes them)."""
    folder = tmp_path_factory.mktemp("nvme")
    return calibrate([_fio(folder, name) for name in NVME_RUNS])


def test_every_field_from_the_base_is_listed_with_what_would_pin_it(
    default_base: Calibration,
) -> None:
    """Every row of the table that is the base's (interface, bandwidths, clean pool, write
    amplification, erase block, capacity ...) is in the list, in the file's notes and
    the report, each with the measurement that would pin it."""
    calibration = default_base
    text = calibration.toml
    rows = {
        line.split(" = ", 1)[0]
        for line in text.split("\n[tier]\n", 1)[1].splitlines()
        if "# base profile nvme-p3700" in line
    }
    assert rows >= {
        "interface",
        "read_bandwidth",
        "write_bandwidth",
        "clean_pool",
        "write_amplification",
        "erase_block",
        "capacity",
    }
    assert "placement" not in rows  # the fit's routing, written as such (review 66c F13)
    heading, *listed = calibration.inherited
    assert "From the base profile nvme-p3700, not measured" in heading
    named = {line.strip().split(" = ", 1)[0] for line in listed}
    assert named == rows
    for line in listed:
        field, pin = line.strip().split(": ", 1)
        assert pin, field
        assert f"# {line}" in text  # in the file's notes
    assert any("3938 MB/s" in line for line in listed if "interface" in line)
    (summary,) = [w for w in calibration.fit.warnings if "come from the base profile" in w]
    assert all(name in summary for name in rows)


def test_the_report_lists_the_base_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(_fio(tmp_path, name)) for name in ("rr1", "rr32")]
    assert main(["calibrate", *files, "--base", "nvme-pm9a3", "-o", str(tmp_path / "d.toml")]) == 0
    printed = capsys.readouterr().out
    assert "From the base profile nvme-pm9a3, not measured" in printed
    for field in ("interface", "clean_pool", "write_amplification", "erase_block", "capacity"):
        assert f"\n  {field} = " in printed
    # the overhead held, with what would pin it
    assert '\n  command_overhead = "11us": runs of both reads and writes' in printed


def test_no_base_given_warns_and_names_profiles_of_the_class(default_base: Calibration) -> None:
    (warning,) = [w for w in default_base.fit.warnings if w.startswith("no --base given")]
    assert "nvme-p3700" in warning and "PCIe 3.0" in warning and "simcache profiles tier" in warning
    modern = [
        name
        for name, fields in list_profiles("tier").items()
        if str(fields.get("interface", "")).startswith(("pcie4", "pcie5"))
    ]
    assert modern and all(name in warning for name in modern)
    assert f"# Notes:\n#   - {warning}" in default_base.toml


def test_a_named_base_is_not_warned_about() -> None:
    files = [INTEL / "randread-1-1.json", INTEL / "randread-1-32.json"]
    calibration = calibrate(files, base="sata-ssd-d3-s4610")
    assert not any(w.startswith("no --base given") for w in calibration.fit.warnings)
    unnamed = calibrate(files)
    (warning,) = [w for w in unnamed.fit.warnings if w.startswith("no --base given")]
    assert "sata-ssd-s3700" in warning and "sata-ssd-d3-s4610" in warning


def test_a_parameter_fitted_at_its_bound_is_said_to_be(default_base: Calibration) -> None:
    """The four runs leave command_overhead at its lower bound (0.1 µs): said as such, with the
    runs that would pin it, instead of a meaningless standard error."""
    fit = default_base.fit
    assert isinstance(fit, Fit)
    assert fit.at_bounds.get("command_overhead") == "lower"
    assert math.isclose(fit.command_overhead, 1e-7, rel_tol=1e-3)
    (warning,) = [w for w in fit.warnings if w.startswith("command_overhead")]
    assert warning.startswith("command_overhead = 0.1 µs is at its lower bound")
    assert "the points cannot pin it" in warning and "runs between QD1 and the knee" in warning
    assert 'command_overhead = "0.1us"  # fitted to 4 fio runs' in default_base.toml
    assert "at its lower bound: not pinned" in default_base.toml
    assert not any(w.startswith("command_overhead not pinned") for w in fit.warnings)


def test_a_drive_figure_fitted_at_its_bound_is_said_to_be() -> None:
    """The F1's QD1 and QD2 reads with 12 ms added to every I/O: no 7,200 RPM seek curve and
    overhead within DriveSpec's range give that, so the overhead ends at its 10 ms upper bound
    (said, with the runs that would pin it, in the warnings and the field's comment)."""
    points = read_points([F1 / "randread-1-1.json", F1 / "randread-2-1.json"]).points
    extra = 0.012
    slow = [
        replace(
            p,
            mean=p.mean + extra * p.outstanding,
            iops=p.outstanding / (p.mean + extra * p.outstanding),
            p99=None if p.p99 is None else p.p99 + extra * p.outstanding,
            percentiles=tuple((level, v + extra * p.outstanding) for level, v in p.percentiles),
        )
        for p in points
    ]
    spec = DriveSpec.model_validate(get_profile("drive", "sata-7200"))
    assert spec.rpm is not None and spec.avg_seek is not None and spec.full_seek is not None
    base = Drive(
        spec.rpm,
        spec.overhead,
        spec.settle,
        spec.avg_seek,
        spec.full_seek,
        spec.media_rate,
        spec.inner_rate,
        spec.capacity,
    )
    fit = fit_drive(slow, [span_of(p, spec.capacity) for p in slow], 7200.0, base)
    assert fit.at_bounds.get("overhead") == "upper"
    assert fit.drive.overhead == pytest.approx(0.01, rel=1e-3)
    (warning,) = [w for w in fit.warnings if w.startswith("overhead")]
    assert warning.startswith("overhead = 10 ms is at its upper bound")
    assert "the points cannot pin it" in warning and "QD1 random-read run" in warning
