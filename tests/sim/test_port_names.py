"""Ports have structured names whose labels are the series columns' port names, and which parse
back."""

from __future__ import annotations

import pytest

import simcache
from simcache.physics.cluster import PortName
from simcache.sim.engine import build


@pytest.mark.parametrize("links", [1, 2])
def test_every_port_label_is_todays_name_and_parses_back(links: int) -> None:
    scenario = simcache.load_scenario("default").with_overrides(
        {"cluster.peer_links": links, "cluster.peer_fabric": "shared"}
    )
    model = build(scenario, seed=1)
    labels = [port.label for port in model.ports]
    peer = ["peer"] if links == 1 else ["peer0", "peer1"]
    host0 = [f"host0.{p}.{d}" for p in peer for d in ("tx", "rx")] + [
        "host0.storage.tx",
        "host0.storage.rx",
    ]
    assert labels[: len(host0)] == host0
    assert labels[-3:] == ["peer.fabric", "array.rx", "array.tx"]
    for port in model.ports:
        assert PortName.parse(port.label) == port.name


@pytest.mark.parametrize(
    "label", ["host0.tier", "array", "host01.peer.tx", "host0.peer.up", "hostx.peer.tx"]
)
def test_labels_of_no_port_parse_to_none(label: str) -> None:
    assert PortName.parse(label) is None


def test_ports_in_words() -> None:
    assert PortName(3, "peer", 1, "tx").describe("1GbE") == "the host3 1GbE peer link 1 (sending)"
    assert PortName(0, "storage", None, "rx").describe() == "the host0 storage link (receiving)"
    assert PortName(None, "array", None, "tx").describe() == "the array's storage port (sending)"
    assert PortName(None, "fabric").describe("10GbE") == "the shared 10GbE peer segment"
