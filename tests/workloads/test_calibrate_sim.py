"""A calibrated tier in the simulator: one VM's closed loop at a queue depth the fit did not see
runs as the drive measured (issue 34's done criterion, through the simulator rather than the fit's
own model).

The scenario is fio's run as simcache has it: one host, one WB+0 VM of ``n`` workers x 1 outstanding
4 KiB I/O, its disk held in the read cache from the start (``[cluster.cache] warm``) so that every
read is served by the tier, and the destager held back (``watermarks`` over a 64 GiB buffer the run
never fills) so that no destage read shares the tier with the measured writes. 0.3 s at 50,000 IOPS
is 15,000 I/Os: the run's own noise in IOPS is far below the tolerances (a closed loop's throughput
varies by well under 1 % over that many I/Os).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.paths import DATA

from simcache.runs.simulate import simulate
from simcache.spec import load_scenario
from simcache.workloads.calibrate.device import Calibration, calibrate
from simcache.workloads.calibrate.points import read_points

INTEL = DATA / "calibrate" / "intel-d3-s4610"

DONE_TOLERANCE = 0.20
"""Issue 34: a third queue depth within 20 % of the measurement."""
MODEL_TOLERANCE = 0.12
"""The fit's closed-loop model against the simulator: approximate mean value analysis
(Schweitzer's estimate of the queue an arrival sees) is within about 10 % of exact closed
networks near the knee, where this point is."""


@pytest.fixture(scope="module")
def device(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Calibration]:
    calibration = calibrate(
        [INTEL / f"rand{op}-1-{n}.json" for op in ("read", "write") for n in (1, 32)]
    )
    folder = tmp_path_factory.mktemp("sim")
    (folder / "d3-s4610.toml").write_text(calibration.toml)
    return folder, calibration


def _run(folder: Path, op: str, workers: int, placement: str = "") -> tuple[float, float]:
    """IOPS and mean latency (s) of ``workers`` closed-loop ``op`` streams on the fitted tier
    (with ``placement``, when given, written beside the file)."""
    path = folder / f"{op}-{workers}{placement}.toml"
    beside = f', placement = "{placement}"' if placement else ""
    path.write_text(
        f"""name = "fio-{op}-{workers}"
[run]
duration = "0.3s"
warmup = "0.05s"
seed = 3
sample_interval = "0.05s"
[cluster]
hosts = 1
tier = {{ file = "d3-s4610.toml"{beside} }}
peer_link = "10GbE"
storage_link = "10GbE"
[cluster.destager]
trigger = "watermarks"
capacity = "64GiB"
high_watermark = 0.9
low_watermark = 0.5
[cluster.cache]
warm = true
[array]
profile = "array-24x15k"
[[groups]]
name = "fio"
policy = "WB+0"
[groups.workload]
mode = "closed"
workers = {workers}
outstanding = 1
read_fraction = {1.0 if op == "read" else 0.0}
sizes = {{ "4KiB" = 1.0 }}
working_set = "1GiB"
access = "uniform"
"""
    )
    summary = simulate(load_scenario(path)).summary
    row = summary[(summary["group"] == "fio") & (summary["op"] == op)].iloc[0]
    return float(row["iops"]), float(row["mean_ms"]) / 1e3


@pytest.mark.parametrize("op", ["read", "write"])
def test_an_unseen_queue_depth_runs_as_measured(device: tuple[Path, Calibration], op: str) -> None:
    folder, calibration = device
    (point,) = [
        p
        for p in read_points([INTEL / f"rand{op}-1-8.json", INTEL / "randread-1-1.json"]).points
        if p.outstanding == 8
    ]
    iops, mean = _run(folder, op, point.outstanding)
    model = calibration.fit.predict([point])
    assert abs(iops / point.iops - 1.0) < DONE_TOLERANCE
    assert abs(mean / point.mean - 1.0) < DONE_TOLERANCE
    assert abs(iops / model.iops[0] - 1.0) < MODEL_TOLERANCE


def test_the_written_file_routes_writes_as_the_fit_did(device: tuple[Path, Calibration]) -> None:
    """Review 66c F13: the file once inherited the base sata-ssd-s3700's ``placement =
    "addressed"``, so the simulator sent every write to a random die where the fit has the
    earliest-free unit: 52,584 write IOPS at QD4 against 54,779 routed as the fit does. The file
    now says ``any-unit`` itself, and simulates as that routing does."""
    import tomllib

    folder, _ = device
    table = tomllib.loads((folder / "d3-s4610.toml").read_text())["tier"]
    assert table["placement"] == "any-unit"
    as_written, _ = _run(folder, "write", 4)
    as_fitted, _ = _run(folder, "write", 4, placement="any-unit")
    addressed, _ = _run(folder, "write", 4, placement="addressed")
    assert as_written == as_fitted
    assert as_written > 1.02 * addressed  # what a random die per write costs at QD4
