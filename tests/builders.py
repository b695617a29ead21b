"""Pieces of scenario dicts that several test files build the same way."""

from __future__ import annotations

from typing import Any

PEER_BOUND_ARRAY = "array-24x15k"  # a fast array: with peer_bound_cluster, the peer ports are the only limit


def peer_bound_cluster(hosts: int, peer_links: int, **extra: Any) -> dict[str, Any]:
    """A ``[cluster]`` whose only limit is its 1GbE peer ports: RAM tiers, 10GbE storage, a 16 GiB destage buffer.

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
