"""The outage set-up the event tests share: two hosts, one WB+1 VM on each, host0's peer ports down
for a second.

Two hosts, one WB+1 VM on each writing 4 KiB at a steady 2,000 per second (uniform arrivals: evenly
spaced, so a window of T seconds holds 2,000 T writes per VM up to one at either end), NVMe tiers,
10GbE peer and storage links and a 24 x 15K array. host0's peer ports are down from 1 s to 2 s:
neither VM reaches its only peer. Nothing contends outside the outage, so a write-back write's
latency is one fixed figure.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

import simcache
from support.builders import small_scenario

AT, DURATION, END = 1.0, 1.0, 3.0


BACK = AT + DURATION


RATE = 2000  # writes per second per VM


SIZE = 4096


LOSS = {"kind": "peer_loss", "at": AT, "host": 0, "duration": DURATION}


def scenario(
    on_peer_loss: str = "write_through",
    *,
    policy: str = "WB+1",
    events: list[dict[str, Any]] | None = None,
    **cluster: Any,
) -> simcache.Scenario:
    group = {
        "name": "db",
        "policy": policy,
        "on_peer_loss": on_peer_loss,
        "workload": {
            "mode": "open",
            "iops": RATE,
            "read_fraction": 0.0,
            "arrivals": "uniform",
            "sizes": "4KiB",
        },
    }
    spec = small_scenario(
        groups=[group],
        run={"duration": END},
        cluster={"storage_link": "10GbE", **cluster},
        array="array-24x15k",
        events=[LOSS] if events is None else events,
    )
    return simcache.load_scenario(spec)


def writes(result: simcache.Result) -> pd.DataFrame:
    return result.records[result.records["op"] == "write"]


def issued_in(frame: pd.DataFrame, start: float, end: float) -> pd.DataFrame:
    return frame[(frame["issue_s"] >= start) & (frame["issue_s"] < end)]
