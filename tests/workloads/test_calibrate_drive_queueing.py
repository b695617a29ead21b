"""``simcache calibrate --kind drive`` on a drive whose IOPS grow with depth (review 66c F14): the
warning says the simulator serves a drive's I/Os in arrival order only by default
(``command_queueing = 0``, as the fitted file has it) and names the DriveSpec fields, and the
scenario, that follow the drive's reordering; docs/calibrate.md says the same."""

from __future__ import annotations

import tomllib

from support.paths import DATA, ROOT

from simcache.workloads.calibrate.device import calibrate

F1 = DATA / "calibrate" / "samsung-f1"
VALIDATION = "scenarios/validate_hdd_7200_qd.toml"


def test_the_depth_warning_names_the_queueing_fields_that_follow_the_drive() -> None:
    calibration = calibrate(
        [F1 / "randread-1-1.json", F1 / "randread-2-1.json", F1 / "randread-8-1.json"],
        kind="drive",
        rpm=7200,
    )
    (warning,) = [w for w in calibration.fit.warnings if w.startswith("deeper queues")]
    assert "at 8 outstanding" in warning
    assert "by default (command_queueing = 0" in warning
    assert "set command_queueing, reorder and reorder_lag" in warning
    assert VALIDATION in warning
    drive = tomllib.loads(calibration.toml)["drive"]
    assert drive.get("command_queueing", 0) == 0  # what "as written here" says


def test_the_validation_scenario_named_uses_the_queueing_fields() -> None:
    text = (ROOT / VALIDATION).read_text("utf-8")
    assert "command_queueing = 8" in text and 'reorder = "seek"' in text


def test_the_doc_no_longer_says_the_simulator_cannot_reorder() -> None:
    doc = (ROOT / "docs" / "calibrate.md").read_text("utf-8")
    assert "so it keeps the QD1 rate" in doc  # still said, but now of the default only
    assert "By default (`command_queueing = 0`" in doc
    assert "validate_hdd_7200_qd.toml" in doc
    assert "(the drive's NCQ gain, not followed)" not in doc
