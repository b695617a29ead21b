"""``simcache calibrate`` with a base profile that sets ``read_channel_bandwidth`` (issue 34): the
fit's model has no per-byte time on the unit, so its fitted ``read_latency`` holds the channel time
of the sizes measured, and the fitted table must not keep the base's rate beside it."""

from __future__ import annotations

from support.paths import DATA

from simcache.spec.components import TierSpec
from simcache.workloads.calibrate.device import calibrate
from simcache.workloads.calibrate.fit import Fit

INTEL = DATA / "calibrate" / "intel-d3-s4610"


def test_a_fitted_table_leaves_the_base_read_channel_out() -> None:
    files = [INTEL / "randread-1-1.json", INTEL / "randread-1-32.json"]
    calibration = calibrate(files, base="nvme-qlc-p5336")
    table = calibration.table()
    assert "read_channel_bandwidth" not in table
    assert "read_channel_bandwidth" not in calibration.toml
    # the rest of the base still completes it: a valid tier whose reads pay no channel time
    spec = TierSpec.model_validate(table)
    assert spec.read_channel_bandwidth is None
    fit = calibration.fit
    assert isinstance(fit, Fit)
    # written to 0.1 us (the table's microsecond text)
    assert abs(spec.read_latency - fit.read_latency) <= 0.05e-6


def test_a_fitted_table_leaves_the_base_write_channel_out_when_writes_are_measured() -> None:
    """The same for writes on a RAM base (its copy threads' write_channel_bandwidth): measured
    writes' fitted write_latency holds their per-byte time; unmeasured, they keep the base's."""
    writes = [INTEL / "randwrite-1-1.json", INTEL / "randwrite-1-32.json"]
    table = calibrate(writes, base="ram-ddr5").table()
    assert "write_channel_bandwidth" not in table
    assert TierSpec.model_validate(table).write_channel_bandwidth is None
    reads = [INTEL / "randread-1-1.json", INTEL / "randread-1-32.json"]
    kept = TierSpec.model_validate(calibrate(reads, base="ram-ddr5").table())
    base = TierSpec.model_validate("ram-ddr5")
    assert kept.write_channel_bandwidth == base.write_channel_bandwidth
