"""Parts as busy as the bottleneck are named with it (simcache/results/bottleneck.py, ``as_busy``):
in ``interconnect_comparison`` (one VM on host0 writing WB+1 to host1, both SATA tiers pinned)
the bottleneck named host0's tier while the breakdown beside it gave 99 % of the write time to the
peer tier, host1's: two saturated tiers, one named, read as a contradiction (review 65e.11)."""

from __future__ import annotations

import pytest

import simcache
from simcache.results.bottleneck import (
    AS_BUSY,
    SATURATED,
    as_busy,
    bottleneck_line,
    bottleneck_sentence,
    run_bottleneck,
)


@pytest.fixture(scope="module")
def two_pinned_tiers() -> tuple[simcache.Result, simcache.Scenario]:
    scenario = simcache.load_scenario("interconnect_comparison")
    return simcache.simulate(scenario, duration=2.0, keep_records=False), scenario


def test_a_tier_as_busy_as_the_bottleneck_is_named_beside_it(
    two_pinned_tiers: tuple[simcache.Result, simcache.Scenario],
) -> None:
    result, scenario = two_pinned_tiers
    found = run_bottleneck(result)
    means = result.window_means()
    assert means["util.host0.tier"] >= SATURATED and means["util.host1.tier"] >= SATURATED
    other = "host1.tier" if found.busiest == "host0.tier" else "host0.tier"
    alike = as_busy(result, found)
    assert list(alike) == [other]
    assert alike[other] == pytest.approx(float(means[f"util.{other}"]))
    assert abs(alike[other] - found.busiest_utilization) <= AS_BUSY
    sentence = bottleneck_sentence(result, scenario)
    host = other.split(".")[0]
    assert f"As busy: the {host} sata-ssd-s3700-field flash tier at 100%." in sentence
    assert f"; as busy: {other} at 100%" in bottleneck_line(result)


def test_nothing_is_named_as_busy_below_saturation() -> None:
    """The default scenario's busiest part is under 90 %: no second part is named, whatever is
    close to it."""
    result = simcache.simulate(simcache.load_scenario("default"), keep_records=False)
    found = run_bottleneck(result)
    assert found.busiest_utilization < SATURATED
    assert as_busy(result, found) == {}
    assert "As busy" not in bottleneck_sentence(result, simcache.load_scenario("default"))
    assert "as busy" not in bottleneck_line(result)
