"""The host's read cache under Zipf access against Che's approximation of LRU (tests/support/che.py:
a line of reference probability p is cached with probability 1 - exp(-p T), T set so that the
cached lines fill the cache). Uniform access was checked against LRU's exact C / N
(tests/sim/test_device_model.py); skewed access had no test against theory (review 66d, F9).

The stream: one VM's 4 KiB reads (one 4 KiB line each: the generator's offsets are 4 KiB aligned,
docs/model.md), the model's exact discrete Zipf law over the working set's n blocks, its ranks
scattered by a bijection (which leaves the hit ratio as it is: Che's sum does not depend on which
block holds which probability). Every read misses into a fast all-flash array and its line is
cached when it completes, a fraction of a millisecond later: at 5,000 reads a second the lines
near the cache's edge are not re-referenced in that time, so the cache sees the independent
reference stream Che's formula is about. Tolerance: 4 binomial standard errors of the measured
reads plus 0.01 for the approximation's own error at these sizes (as the array's read-cache
tests, tests/sim/test_array_read_cache.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.che import che_hit_ratio

import simcache

LINE = 4096


def _scenario(blocks: int, lines: int, theta: float) -> simcache.Scenario:
    return simcache.load_scenario(
        {
            "name": "host-cache-che",
            "run": {"duration": 20.0, "warmup": 4.0, "sample_interval": 0.5, "seed": 1},
            "cluster": {
                "hosts": 1,
                "tier": "nvme-p3700",
                "peer_link": "100GbE",
                "storage_link": "100GbE",
                "cache": {"line": LINE, "capacity": lines * LINE},
            },
            "array": {"profile": "afa-24x-nvme", "port": "100GbE"},
            "groups": [
                {
                    "name": "r",
                    "policy": "WB+0",
                    "vms_per_host": 1,
                    "workload": {
                        "mode": "open",
                        "iops": 5000,
                        "read_fraction": 1.0,
                        "sizes": {"4KiB": 1.0},
                        "working_set": blocks * LINE,
                        "access": "zipf",
                        "zipf_theta": theta,
                    },
                }
            ],
        }
    )


@pytest.mark.parametrize(
    ("blocks", "lines", "theta"),
    [(4096, 512, 0.9), (4096, 1024, 0.6), (8192, 512, 1.1)],
)
def test_zipf_reads_hit_the_host_cache_as_che_says(blocks: int, lines: int, theta: float) -> None:
    result = simcache.simulate(_scenario(blocks, lines, theta))
    measured = result.measured
    reads = measured[measured["op"] == "read"]
    n = len(reads)
    assert n > 70_000  # 16 s measured at 5,000 reads a second
    hit = float(reads["path"].isin(["hit", "remote_hit"]).mean())
    rank = np.arange(1, blocks + 1, dtype=float)
    probabilities = rank**-theta / np.sum(rank**-theta)
    expected = che_hit_ratio(probabilities, lines)
    error = math.sqrt(expected * (1.0 - expected) / n)
    assert abs(hit - expected) < 4 * error + 0.01, (hit, expected)
