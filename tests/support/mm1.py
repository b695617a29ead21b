"""A run of a plain M/M/1 queue's records, as the validity and report tests read them."""

from __future__ import annotations

from typing import Any

from support.builders import small_scenario

TIER_S = 1e-3  # mean service time of the one-channel tier below (exponential): mu = 1,000 writes/s


def mm1_data(rate: float) -> dict[str, Any]:
    """One host, one VM writing 4 KiB Poisson arrivals at ``rate``/s, WB+0 onto a one-channel
    tier with exponential 1 ms service: an M/M/1 queue with rho = rate / 1,000 (the destage
    buffer and array are far from busy)."""
    tier = {
        "kind": "flash",
        "read_latency": TIER_S,
        "write_latency": TIER_S,
        "read_bandwidth": 1e12,
        "write_bandwidth": 1e12,
        "channels": 1,
        "capacity": 10**12,
        "service": "exponential",
    }
    data = small_scenario(
        "mm1",
        run={"duration": "6s", "warmup": "1s", "sample_interval": "0.25s"},
        cluster={"hosts": 1, "tier": tier, "destager": {"capacity": "16GiB"}},
        array="array-24x15k",
        groups=[
            {
                "name": "db",
                "policy": "WB+0",
                "workload": {"mode": "open", "iops": rate, "read_fraction": 0.0},
            }
        ],
    )
    return data
