"""The HA-restart set-up: three hosts, two WB+1 VMs each, host1 fails at 1 s and its VMs restart
elsewhere after 0.5 s."""

from __future__ import annotations

from typing import Any

import simcache
from support.builders import small_scenario

AT, DELAY, END = 1.0, 0.5, 8.0


RATE = 200  # I/Os per second per VM


HOLD = 1.0  # destager delay, s


def scenario(mode: str = "open", **event: Any) -> simcache.Scenario:
    workload: dict[str, Any] = {
        "mode": mode,
        "read_fraction": 0.5,
        "sizes": "4KiB",
        "working_set": "1MiB",
        "access": "uniform",
    }
    workload |= (
        {"iops": RATE, "arrivals": "uniform"}
        if mode == "open"
        else {"outstanding": 1, "think_time": 1 / RATE}
    )
    spec = small_scenario(
        groups=[{"name": "db", "policy": "WB+1", "vms_per_host": 2, "workload": workload}],
        run={"duration": END, "warmup": 0.5, "sample_interval": 0.5},
        cluster={
            "hosts": 3,
            "storage_link": "10GbE",
            "cache": {"line": "4KiB"},
            "destager": {"delay": HOLD},
        },
        array="array-24x15k",
        events=[{"kind": "host_failure", "at": AT, "host": 1, "restart_delay": DELAY, **event}],
    )
    return simcache.load_scenario(spec)
