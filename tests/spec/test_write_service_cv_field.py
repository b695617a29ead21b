"""TierSpec ``write_service_cv`` (issue 34): the lognormal spread of writes' unit times apart from
the reads' ``service_cv``; bounded, only with ``service = "lognormal"``, unset by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.builders import small_scenario
from support.strategies import to_toml

from simcache import ScenarioError, load_scenario
from simcache.spec import TierSpec


def _problems(tmp_path: Path, tier: dict[str, Any]) -> list[tuple[str, str]]:
    path = tmp_path / "scenario.toml"
    path.write_text(to_toml(small_scenario("errors", cluster={"tier": tier})), "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.source == str(path)
    return info.value.problems


def test_a_write_spread_without_lognormal_service_names_the_fix(tmp_path: Path) -> None:
    # the field profile's service is deterministic
    problems = _problems(tmp_path, {"profile": "nvme-p3700-field", "write_service_cv": 0.5})
    assert len(problems) == 1
    where, message = problems[0]
    assert where == "cluster.tier"
    assert "write_service_cv" in message and 'service = "lognormal"' in message


def test_a_write_spread_beyond_ten_names_the_field(tmp_path: Path) -> None:
    problems = _problems(tmp_path, {"profile": "nvme-p3700", "write_service_cv": 20})
    assert problems == [
        (
            "cluster.tier.write_service_cv",
            "must be at most 10; a spread ten times the mean is no longer a device (got 20)",
        )
    ]


def test_the_write_spread_defaults_to_none_and_is_set_on_the_p3700() -> None:
    assert TierSpec.model_validate("sata-ssd-s3700").write_service_cv is None
    p3700 = TierSpec.model_validate("nvme-p3700")
    assert p3700.write_service_cv == 1.0
    assert p3700.service_cv == 0.1
