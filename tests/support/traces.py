"""Trace files written by the tests, and scenarios replaying them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import simcache

LINE = 4096


def write_trace(path: Path, rows: list[tuple[float, str, int, int]], device: bool = False) -> Path:
    header = "time,op,offset,size" + (",device" if device else "")
    lines = [header] + [",".join(str(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def random_rows(
    n: int, seed: int, rate: float = 200.0, blocks: int = 500
) -> list[tuple[float, str, int, int]]:
    rng = np.random.default_rng(seed)
    times = np.round(np.cumsum(rng.exponential(1 / rate, n)), 9)
    ops = np.where(rng.random(n) < 0.6, "read", "write")
    offsets = rng.integers(0, blocks, n) * LINE
    sizes = rng.choice([4096, 8192, 65536], n, p=[0.6, 0.3, 0.1])
    return [
        (float(t), str(o), int(b), int(s))
        for t, o, b, s in zip(times, ops, offsets, sizes, strict=True)
    ]


def trace_scenario(
    trace: Path,
    duration: float,
    *,
    policy: str = "WB+1",
    workload: dict[str, Any] | None = None,
    **trace_fields: Any,
) -> simcache.Scenario:
    data = {
        "name": "replay",
        "run": {"duration": duration, "warmup": 0.0, "sample_interval": min(1.0, duration)},
        "cluster": {
            "hosts": 3,
            "tier": "sata-ssd-s3700-field",
            "peer_link": "10GbE",
            "storage_link": "10GbE",
        },
        "array": {"profile": "array-14x7200"},
        "groups": [
            {
                "name": "traced",
                "policy": policy,
                "hosts": [0],
                "workload": {
                    "mode": "trace",
                    "trace": {"path": str(trace), "format": "csv", **trace_fields},
                    **(workload or {}),
                },
            }
        ],
    }
    return simcache.load_scenario(data)
