"""Scenario dicts that several test files build the same way."""

from __future__ import annotations

import copy
from typing import Any

# a fast array: with peer_bound_cluster, the peer ports are the only limit
PEER_BOUND_ARRAY = "array-24x15k"


def small_scenario(
    name: str = "small",
    *,
    run: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = None,
    array: Any = "array-14x7200",
    workload: dict[str, Any] | None = None,
    groups: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A small valid scenario dict: by default two hosts and one WB+1 group ``db`` of one open-loop
    VM per host.

    Defaults: a 1 s run (0.1 s warmup, 0.25 s samples, seed 5); NVMe P3700 tiers, 10GbE peer links,
    1GbE storage links; a 14-drive 7200 rpm array; ``db`` issues 200 IOPS of 4 KiB (the schema's
    default size), 30 % reads. ``run`` and ``cluster`` update those tables key by key; ``workload``
    replaces db's workload and ``groups`` the whole group list; ``extra`` adds top-level tables
    (``expect``, ``variants``, ``events``). The dict is a deep copy: callers may change it freely.
    """
    if groups is None:
        groups = [
            {
                "name": "db",
                "policy": "WB+1",
                "workload": workload or {"mode": "open", "iops": 200, "read_fraction": 0.3},
            }
        ]
    elif workload is not None:
        raise ValueError("give workload or groups, not both")
    return copy.deepcopy(
        {
            "name": name,
            "run": {
                "duration": "1s",
                "warmup": "0.1s",
                "sample_interval": "0.25s",
                "seed": 5,
                **(run or {}),
            },
            "cluster": {
                "hosts": 2,
                "tier": "nvme-p3700-field",
                "peer_link": "10GbE",
                "storage_link": "1GbE",
                **(cluster or {}),
            },
            "array": array,
            "groups": groups,
            **extra,
        }
    )


def peer_bound_cluster(hosts: int, peer_links: int, **extra: Any) -> dict[str, Any]:
    """A ``[cluster]`` whose only limit is its 1GbE peer ports: RAM tiers, 10GbE storage, a 16 GiB
    destage buffer.

    Use with :data:`PEER_BOUND_ARRAY`; ``extra`` adds or replaces cluster fields.
    """
    return {
        "hosts": hosts,
        "peer_links": peer_links,
        "tier": "ram-ddr4",
        "peer_link": "1GbE",
        "storage_link": "10GbE",
        "destager": {"capacity": "16GiB"},
        **extra,
    }


def handover_into_a_full_buffer() -> dict[str, Any]:
    """Found by tests/scenarios/test_properties.py at random (stop 54): 2 hosts, 1 MiB buffers
    destaging to a 4-bay NAS over 1GbE (full: writers wait for room), a WB+0 VM moved with
    handover at 0.1 s. The handed-over writes leave the new host's buffer past its capacity (they
    are adopted without room: they are stored there already); and the native engine, whose
    handover admitted the old host's waiting writers, lost their accepted bytes to the Python
    destager's stale copy (both fixed). A fresh dict each call."""
    return {
        "name": "generated",
        "run": {"duration": 0.5, "warmup": 0.0, "sample_interval": 0.25, "seed": 0},
        "cluster": {
            "hosts": 2,
            "tier": "nvme-micron-9550",
            "peer_link": "100GbE",
            "storage_link": "1GbE",
            "destager": {"capacity": "1MiB", "concurrency": 1, "max_batch": "512KiB"},
            "compression": {"mode": "always"},
        },
        "array": "nas-4bay",
        "groups": [
            {
                "name": name,
                "policy": "WB+0",
                "vms_per_host": 1,
                "workload": {
                    "read_fraction": 0.0,
                    "sizes": {"4KiB": 1.0, "32KiB": 1.0},
                    "working_set": "64MiB",
                    "mode": "closed",
                    "outstanding": 1,
                    "think_time": "3ms",
                    "compressibility": 0.5,
                },
            }
            for name in ("g0", "g1", "g2")
        ],
        "events": [
            {
                "kind": "vmotion",
                "at": 0.1,
                "source_host": 0,
                "target_host": 1,
                "size": "32MiB",
                "vm": "g0-h0-0",
                "handover": True,
            }
        ],
    }


def writes_waiting_for_a_port(at: float, link: str, duration: float = 1.0) -> dict[str, Any]:
    """Two hosts whose VMs write 3,000 IOPS of 512 B each, host0's ``link`` port down until
    ``at``: on the peer port one WB+1 VM a host, whose writes stall while its peer is out of
    reach (``on_peer_loss = "stall"``); on the storage port two write-through VMs a host, whose
    writes wait for host0's port to send to the array. About 600 writes wait on each path and
    resume in the one event of the port's return, each transfer joining the others on the port
    (a run of ``duration`` seconds)."""
    peer = link == "peer"
    group: dict[str, Any] = {
        "name": "db",
        "policy": "WB+1" if peer else "WT",
        "vms_per_host": 1 if peer else 2,
        "workload": {"mode": "open", "iops": 3000, "read_fraction": 0.0, "sizes": "512B"},
    }
    if peer:
        group["on_peer_loss"] = "stall"
    return small_scenario(
        "waiting-storm",
        run={"duration": duration},
        groups=[group],
        events=[{"kind": "link_down", "at": 0.0, "host": 0, "link": link, "duration": at}],
    )


def writers_waiting_for_room(data: dict[str, Any]) -> None:
    """Change ``data`` (device_failure.toml's kind: one write-back group) so that writers wait for
    room in the destage buffers when a failure comes: a 256 KiB buffer destaged at once, each VM 8
    closed-loop 64 KiB writes outstanding over 8 GiB, the 7,200 rpm array."""
    data["cluster"]["destager"] |= {"capacity": "256KiB", "delay": 0.0}
    data["groups"][0]["workload"] = {
        "mode": "closed",
        "outstanding": 8,
        "read_fraction": 0.0,
        "sizes": "64KiB",
        "working_set": "8GiB",
    }
    data["array"] = {"profile": "array-14x7200"}


def nvme_ingest_host(throughput: str, **destager: Any) -> dict[str, Any]:
    """Review 65's one host writing 1 MiB sequential blocks (4 VMs at ``throughput`` each, WB+0)
    into a PCIe 5.0 tier (priority scheduling), destaged over NVMe/RDMA 100GbE to the all-flash
    array; ``destager`` adds fields to its 64 GiB destager. No ``[run]`` table: the callers set
    theirs."""
    return {
        "name": "nvme-ingest",
        "cluster": {
            "hosts": 1,
            "tier": "nvme-micron-9550",
            "peer_link": "25GbE",
            "storage_link": "nvmeof-rdma-100GbE",
            "destager": {"capacity": "64GiB", **destager},
        },
        "array": {"profile": "afa-24x-nvme"},
        "groups": [
            {
                "name": "vm",
                "policy": "WB+0",
                "vms_per_host": 4,
                "workload": {
                    "mode": "open",
                    "throughput": throughput,
                    "read_fraction": 0.0,
                    "sizes": "1MiB",
                    "working_set": "100GiB",
                    "access": "sequential",
                },
            }
        ],
    }
