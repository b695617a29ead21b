"""The page's device upload: fio results of one device, the fit shown point by point, the device
used as the tier."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support.paths import DATA, ROOT

import simcache
from simcache.spec.components import TierSpec
from simcache_app.device_upload import calibrate_uploads, device_overrides, fit_frame

APP = ROOT / "app.py"
DATA = DATA / "calibrate"
FILES = [
    DATA / "intel-d3-s4610" / "randread-1-1.json",
    DATA / "intel-d3-s4610" / "randread-1-32.json",
]


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # uploads are kept beside the trace cache
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def _uploads(paths: list[Path]) -> list[tuple[str, bytes]]:
    return [(path.name, path.read_bytes()) for path in paths]


def test_the_fit_table_has_a_row_per_run_and_names_the_uploaded_files() -> None:
    calibration = calibrate_uploads(_uploads(FILES))
    frame = fit_frame(calibration)
    assert sorted(frame["QD"]) == [1, 32]
    assert set(frame["file"]) == {f"{path.name} [iotest]" for path in FILES}
    assert all(name in calibration.toml for name in ("randread-1-1.json", "randread-1-32.json"))


def test_using_the_device_puts_the_fitted_tier_on_every_host() -> None:
    calibration = calibrate_uploads(_uploads(FILES))
    scenario = simcache.load_scenario("default").with_overrides(device_overrides(calibration))
    assert scenario.cluster.tier == TierSpec.model_validate(calibration.table())


def test_the_page_fits_uploaded_results_and_uses_the_device() -> None:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    uploads = [(name, data, "application/json") for name, data in _uploads(FILES)]
    at.sidebar.file_uploader(key="calibrate-upload").set_value(uploads).run()
    assert not at.exception and not at.error
    assert any("points of /dev/sda" in caption.value for caption in at.sidebar.caption)
    assert len(at.sidebar.dataframe[0].value) == len(FILES)
    # "1 setting changed ...: cluster.tier"
    assert any("cluster.tier" in caption.value for caption in at.sidebar.caption)
    # the fields the fit took from its base, each with what would pin it, as calibrate prints them
    calibration = calibrate_uploads(_uploads(FILES))
    expander = next(e for e in at.sidebar.expander if "not measured" in e.label)
    assert expander.label.startswith(f"{len(calibration.inherited) - 1} fields taken from ")
    shown = expander.markdown[0].value
    assert all(line.strip() in shown for line in calibration.inherited[1:])


def test_the_page_shows_why_results_cannot_be_fitted() -> None:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    mixed = [FILES[0], DATA / "samsung-pm883" / "randread-1-8.json"]
    at.sidebar.file_uploader(key="calibrate-upload").set_value(
        [(p.name, p.read_bytes(), "application/json") for p in mixed]
    ).run()
    assert not at.exception
    assert "cannot be fitted" in at.error[0].value and "one device" in at.error[0].value
