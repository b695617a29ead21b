"""Flash drives in the array (``media = "flash"``): a read or write time plus the transfer,
``parallelism`` units.

Theory: an operation on an idle drive takes ``read_time`` (or ``write_time``) + bytes /
``media_rate`` (:func:`simcache.physics.drive.flash_op_seconds`); a drive with ``p`` units serves
``p`` operations at once, first come first served on its earliest free unit, so a burst of ``k``
equal operations finishes in ``ceil(k / p)`` services (deterministic service: an exact count, no
tolerance needed).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from support.builders import small_scenario
from support.paths import ROOT

import simcache
from simcache.estimate import estimate
from simcache.physics import drive as drive_physics
from simcache.sim.components.array import Array
from simcache.sim.components.randomness import UniformStream
from simcache.spec import ArraySpec, DriveSpec, LinkSpec

LINK = LinkSpec(bandwidth=125e6, latency=50e-6)
FLASH = DriveSpec(
    media="flash",
    read_time=80e-6,
    write_time=300e-6,
    parallelism=4,
    media_rate=2e9,
    capacity=10**12,
)


def flash_array(raid: str = "raid0", spindles: int = 1, drive: DriveSpec = FLASH) -> Array:
    spec = ArraySpec(drive=drive, spindles=spindles, raid=raid, port=LINK)
    return Array(spec, UniformStream(np.random.SeedSequence(1)), [drive.capacity * spindles])


def test_an_idle_flash_drive_reads_and_writes_in_its_times_plus_the_transfer() -> None:
    array = flash_array()
    assert array.read(1.0, 0, 10**9, 4096) == pytest.approx(1.0 + 80e-6 + 4096 / 2e9)
    assert array.submit(2.0, ((0, 5 * 10**9, 8192),), True) == pytest.approx(
        2.0 + 300e-6 + 8192 / 2e9
    )
    # Position does not matter: no seek, no rotation.
    assert array.read(3.0, 0, 0, 4096) - 3.0 == pytest.approx(
        array.read(4.0, 0, 9 * 10**11, 4096) - 4.0
    )


@pytest.mark.parametrize("burst", [1, 4, 5, 9, 16])
def test_a_burst_finishes_in_ceil_k_over_p_services(burst: int) -> None:
    array = flash_array()
    service = 80e-6 + 4096 / 2e9
    last = max(array.read(0.0, 0, i * 10**6, 4096) for i in range(burst))
    assert last == pytest.approx(math.ceil(burst / 4) * service)


def test_raid5_on_flash_reads_then_writes_data_and_parity() -> None:
    """A small RAID 5 write: the data and the parity drive each read then write
    (flash_op_seconds), in parallel."""
    array = flash_array(raid="raid5", spindles=4)
    done = array.submit(0.0, ((0, 0, 4096),), True)
    assert done == pytest.approx(drive_physics.flash_op_seconds(80e-6, 4096 / 2e9, 300e-6, True))
    assert array.back_end_ios == 4


def test_flash_and_disk_fields_do_not_mix() -> None:
    with pytest.raises(ValidationError, match="a flash drive needs write_time"):
        DriveSpec(media="flash", read_time=80e-6, media_rate=2e9, capacity=10**12)
    with pytest.raises(ValidationError, match="rpm and avg_seek describe a spinning drive"):
        DriveSpec(
            media="flash",
            read_time=80e-6,
            write_time=1e-4,
            rpm=7200,
            avg_seek=8e-3,
            media_rate=2e9,
            capacity=10**12,
        )
    with pytest.raises(ValidationError, match="a disk drive needs avg_seek"):
        DriveSpec(rpm=7200, media_rate=150e6, capacity=10**12)
    with pytest.raises(ValidationError, match="parallelism describe a flash drive"):
        DriveSpec(rpm=7200, avg_seek=8e-3, parallelism=8, media_rate=150e6, capacity=10**12)


def test_the_all_flash_profile_reads_at_qd1_in_its_read_time_and_the_estimate_agrees() -> None:
    """The afa-24x-nvme array behind the validation scenario's host, read cache off, one 4 KiB
    read outstanding: the array's time per read is the drive's read time plus the transfer, in
    the simulator and in the estimate."""
    scenario = simcache.load_scenario(
        ROOT / "scenarios" / "validate_hdd_7200_qd.toml"
    ).with_overrides(
        {
            "array": {"profile": "afa-24x-nvme", "read_cache": 0},
            "run.duration": "2s",
            "run.warmup": "0.5s",
        }
    )
    drive = scenario.array.drive
    assert drive.read_time is not None
    expected_ms = 1e3 * (drive.read_time + 4096 / drive.media_rate)
    result = simcache.simulate(scenario, limits=None)
    reads = result.records[result.records["op"] == "read"]
    assert len(reads) > 1000
    assert float(reads["array_ms"].mean()) == pytest.approx(expected_ms, rel=1e-6)
    simulated = float(result.summary.set_index(["group", "op"]).loc[("all", "read"), "mean_ms"])
    assert estimate(scenario).mean_ms("all", "read") == pytest.approx(simulated, rel=1e-3)


def test_the_all_flash_array_serves_reads_while_it_destages() -> None:
    """afa-24x-nvme flushes its NVRAM continuously (review 65: its 16 GiB watermark flush held every
    read behind it for about 150 ms at 6 % load). Here 20,000 I/Os a second, half 64 KiB writes
    destaged into a 512 MiB controller cache, half reads that miss the hosts' caches: as shipped,
    the reads' p99 stays within a fifth of their p50 (a flash read, its port and nothing to wait
    behind); with cache_flush = "watermark" a flush of 410 MiB (80 % of the cache) is one request
    that the reads wait behind, and their p99 is many times their p50."""
    data = small_scenario(
        "afa-reads",
        run={"duration": "2s", "warmup": "0.5s", "sample_interval": "0.1s"},
        cluster={
            "tier": "nvme-micron-9550",
            "peer_link": "roce-100GbE",
            "storage_link": "nvmeof-rdma-100GbE",
            "cache": {"capacity": "1GiB"},
        },
        array={"profile": "afa-24x-nvme", "controller_cache": "512MiB", "read_cache": 0},
        workload={
            "mode": "open",
            "iops": 20000,
            "read_fraction": 0.5,
            "sizes": {"64KiB": 1.0},
            "working_set": "64GiB",
            "access": "uniform",
        },
    )
    data["groups"][0]["policy"] = "WB+0"
    scenario = simcache.Scenario.model_validate(data)
    assert scenario.array.cache_flush == "immediate"

    def reads(flush: str) -> pd.Series:
        result = simcache.simulate(scenario.with_overrides({"array.cache_flush": flush}), seed=1)
        return result.summary.set_index(["group", "op"]).loc[("db", "read")]

    shipped, bursts = reads("immediate"), reads("watermark")
    assert shipped.p99_ms < 1.2 * shipped.p50_ms
    assert bursts.p99_ms > 5 * bursts.p50_ms
