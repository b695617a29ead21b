"""TierSpec ``read_channel_bandwidth`` (issue 34): a rate with physical bounds, a clear error naming
the field and the fix, and unset by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.builders import small_scenario
from support.strategies import to_toml

from simcache import ScenarioError, load_scenario
from simcache.spec import TierSpec

WHERE = "cluster.tier.read_channel_bandwidth"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            "0.5MB/s",
            "must be at least 1MB/s; below it a 4 KiB read holds its die over 4 ms, longer than a "
            "disk's seek: a unit is missing (write e.g. '600MB/s') (got '0.5MB/s')",
            id="too-slow",
        ),
        pytest.param(
            "200GB/s",
            "must be at most 100GB/s; no flash channel moves 100 GB/s: a unit is wrong "
            "(got '200GB/s')",
            id="too-fast",
        ),
        pytest.param(
            True,
            'must be a rate, not true or false; write it like 125e6, "125MB/s", "1Gbit/s", '
            '"10GbE" (got true)',
            id="bool",
        ),
    ],
)
def test_a_bad_read_channel_names_the_field_and_the_fix(
    tmp_path: Path, value: Any, message: str
) -> None:
    data = small_scenario(
        "errors", cluster={"tier": {"profile": "nvme-p3700", "read_channel_bandwidth": value}}
    )
    path = tmp_path / "scenario.toml"
    path.write_text(to_toml(data), "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.source == str(path)
    assert info.value.problems == [(WHERE, message)]


def test_a_read_channel_takes_a_rate_with_its_unit_and_defaults_to_none() -> None:
    assert TierSpec.model_validate("nvme-p3700").read_channel_bandwidth is None
    spec = TierSpec.model_validate({"profile": "nvme-p3700", "read_channel_bandwidth": "630MB/s"})
    assert spec.read_channel_bandwidth == 630e6
