"""The ``destage_starved`` note (simcache.results.starved): a destage backlog that grows while its
whole destage path has room, because the tier schedules destage reads behind the VMs' I/O, names
the tier and the scheduling; fcfs scheduling (destage reads queue with the VMs' I/O) and a
watermark destager below its high mark (it waits by design) say nothing."""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import nvme_ingest_host

import simcache
from simcache.results.assessed import ValidityWarning
from simcache.results.bottleneck import bottleneck_line, bottleneck_sentence, run_bottleneck


def _tier_bound(**destager: Any) -> simcache.Scenario:
    """Review 65's case at a tenth of its length: one host writing 9.6 GB/s of 1 MiB sequential
    blocks (4 VMs) into a PCIe 5.0 tier, destaged over NVMe/RDMA 100GbE to an all-flash array.
    The storage port could carry about 12 GB/s and the array more; the tier, booked by the VMs'
    writes, lets its flushers read little."""
    data = nvme_ingest_host("2.4GB/s", **destager)
    data["run"] = {"duration": "1s", "warmup": "0.2s", "sample_interval": "0.05s"}
    return simcache.Scenario.model_validate(data)


def _starved(scenario: simcache.Scenario) -> list[ValidityWarning]:
    result = simcache.simulate(scenario, seed=1, keep_records=False)
    return [w for w in result.warnings if w.kind == "destage_starved"]


def test_a_backlog_held_back_by_its_tier_names_the_tier_and_its_scheduling() -> None:
    [note] = _starved(_tier_bound())
    assert note.component == "host0.tier" and note.severity == "short"
    assert 'scheduling = "priority"' in note.message
    assert "the tier, not the array or the network, limits the drain" in note.message.lower()


@pytest.mark.parametrize(
    ("tier", "destager"),
    [
        # destage reads queue with the VMs' I/O: the tier's utilization shows them
        ({"scheduling": "fcfs"}, {}),
        # the backlog never reaches the high mark in 1 s: the destager waits by design
        ({}, {"trigger": "watermarks", "high_watermark": 0.9}),
    ],
)
def test_fcfs_or_a_destager_not_yet_asked_to_run_says_nothing(
    tier: dict[str, Any], destager: dict[str, Any]
) -> None:
    scenario = _tier_bound(**destager)
    if tier:
        scenario = scenario.with_overrides({"cluster.tier.scheduling": tier["scheduling"]})
    assert not _starved(scenario)


def test_the_bottleneck_names_the_tier_that_holds_its_destage_back() -> None:
    """Review 65e: the bottleneck line named a storage port 19 % busy and said nothing was close
    to its limit beside the note that the tier held the destage back. The tier is the bottleneck
    then, as a tier past its GC cliff is."""
    result = simcache.simulate(_tier_bound(), seed=1, keep_records=False)
    found = run_bottleneck(result)
    assert found.parts == ("host0.tier",) and found.starved and not found.past_cliff
    assert bottleneck_line(result).startswith("bottleneck: host0.tier holding back its destage")
    assert "holding back its destage reads" in bottleneck_sentence(result, result.scenario)
