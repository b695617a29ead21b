"""A write load that drives a QLC tier past its clean-pool cliff, as the validity and sweep tests
build it.

One host, WB+0, a QLC tier (nvme-qlc-p5336) with a 256 MiB clean pool, four VMs writing 16 KiB
at random over 100 GiB. Its garbage collection refills about 156 MB/s of clean space
(write_bandwidth / write_amplification): at 100 MB/s a VM, 400 MB/s in all, the writes pass the
cliff and pile up waiting for clean space while the tier's units, held by nothing, look idle; at
20 MB/s a VM (80 MB/s in all) they do not.
"""

from __future__ import annotations

import simcache
from support.builders import small_scenario

THROUGHPUT = "groups.ingest.workload.throughput"
"""The dotted path of each VM's write rate (100 MB/s in :func:`qlc_ingest`)."""


def qlc_ingest() -> simcache.Scenario:
    """The scenario: a 4 s run (0.5 s warm-up, 0.25 s samples, seed 1) at 100 MB/s a VM."""
    return simcache.load_scenario(
        small_scenario(
            "qlc-ingest",
            run={"duration": "4s", "warmup": "0.5s", "sample_interval": "0.25s", "seed": 1},
            cluster={
                "hosts": 1,
                "tier": {"profile": "nvme-qlc-p5336", "clean_pool": "256MiB"},
                "destager": {"capacity": "64GiB"},
            },
            array="afa-24x-nvme",
            groups=[
                {
                    "name": "ingest",
                    "policy": "WB+0",
                    "vms_per_host": 4,
                    "workload": {
                        "mode": "open",
                        "throughput": "100MB/s",
                        "read_fraction": 0.0,
                        "sizes": {"16KiB": 1},
                        "working_set": "100GiB",
                    },
                }
            ],
        )
    )
