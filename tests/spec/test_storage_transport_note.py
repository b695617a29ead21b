"""The hosts' storage link and the array's port of different transports (RDMA at one end, TCP/IP
at the other): a valid scenario that runs as written, and a ScenarioWarning naming the file, the
field and the fix (review 65e: the app's "As set" read "1GbE storage link per host, to the
array's nvmeof-rdma-100GbE port" without a word). A slower host link than the array's port of
the same transport is ordinary (many hosts share the port): no note."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from support.builders import small_scenario
from support.strategies import to_toml

import simcache
from simcache.spec import ScenarioWarning


def _notes(spec: dict[str, Any], tmp_path: Path) -> tuple[Path, list[ScenarioWarning]]:
    path = tmp_path / "transports.toml"
    path.write_text(to_toml(spec))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        simcache.load_scenario(path)
    return path, [w.message for w in caught if isinstance(w.message, ScenarioWarning)]


def test_tcp_hosts_to_an_rdma_array_port_are_said_with_the_fix(tmp_path: Path) -> None:
    spec = small_scenario(cluster={"storage_link": "1GbE"}, array="afa-24x-nvme")
    path, notes = _notes(spec, tmp_path)
    [note] = [n for n in notes if n.field == "cluster.storage_link"]
    assert note.source == str(path)
    said = str(note)
    assert "the hosts' storage link is 1GbE and the array's port nvmeof-rdma-100GbE" in said
    assert "the array's port (nvmeof-rdma-100GbE) speaks RDMA, which the other end (1GbE)" in said
    assert 'cluster.storage_link = { profile = "nvmeof-rdma-100GbE" }' in said


def test_rdma_hosts_to_a_tcp_array_port_are_said(tmp_path: Path) -> None:
    spec = small_scenario(cluster={"storage_link": "roce-25GbE"}, array="array-14x7200")
    _, notes = _notes(spec, tmp_path)
    [note] = [n for n in notes if n.field == "cluster.storage_link"]
    assert "the hosts' storage link (roce-25GbE) speaks RDMA, which the other end (1GbE)" in str(
        note
    )


@pytest.mark.parametrize(
    ("storage_link", "array"),
    [
        ("1GbE", "array-14x7200"),  # the 2014 field: same link both ends
        ("1GbE", "array-24x15k"),  # 1GbE hosts behind a 10GbE array port: ordinary
        ("nvmeof-rdma-100GbE", "afa-24x-nvme"),
        ("roce-25GbE", "afa-24x-nvme"),  # slower RDMA hosts to an RDMA port
    ],
)
def test_one_transport_at_both_ends_is_not_said(
    tmp_path: Path, storage_link: str, array: str
) -> None:
    spec = small_scenario(cluster={"storage_link": storage_link}, array=array)
    _, notes = _notes(spec, tmp_path)
    assert not [n for n in notes if n.field == "cluster.storage_link"]
