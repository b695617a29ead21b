"""A degraded or rebuilding array (issue 17): ``array_degraded`` / ``array_rebuild``.

Set-up of the runs: one host, one WB+0 VM writing 4 KiB blocks at uniform arrivals over an 8 GiB
working set, RAM tier, 10GbE storage link, an array of six 7,200 rpm SATA drives (150 MB/s media
rate) in RAID 5: the array is the only limit of the destage drain. Degraded RAID 5 on n = 6
spindles: reads x 2, read-modify-writes x (5n - 8) / (4 (n - 1)) = 22 / 20 = 1.1
(:func:`simcache.physics.array.degraded_factors`); a rebuild at 50 MB/s takes 50 / 150 = 1/3 of each
survivor's time, so front-end operations run x 1.5 slower on top: writes x 1.65, reads x 3.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.arrays import KIB, array_of
from support.builders import small_scenario
from support.invariants import assert_conserved

import simcache
from simcache.physics import array as array_physics
from simcache.report.event_report import mib
from simcache.report.run_report import report

BLOCK = 4096
REBUILD_RATE = 50e6
WRITE_FACTOR = 1.1 * 1.5
SEEDS = range(8)


def scenario(
    iops: float,
    events: list[dict[str, Any]],
    *,
    seed: int = 5,
    duration: float = 10.0,
    raid: str = "raid5",
) -> simcache.Scenario:
    spec = small_scenario(
        run={"duration": duration, "warmup": 0.0, "seed": seed},
        cluster={"hosts": 1, "storage_link": "10GbE", "tier": "ram-ddr4"},
        array={"profile": "array-14x7200", "raid": raid, "spindles": 6},
        groups=[
            {
                "name": "db",
                "policy": "WB+0",
                "workload": {
                    "mode": "open",
                    "iops": iops,
                    "read_fraction": 0.0,
                    "arrivals": "uniform",
                    "sizes": "4KiB",
                    "working_set": "8GiB",
                },
            }
        ],
        events=events,
    )
    return simcache.load_scenario(spec)


def rebuild(at: float, duration: float) -> dict[str, Any]:
    return {"kind": "array_rebuild", "at": at, "duration": duration, "rebuild_rate": REBUILD_RATE}


@pytest.mark.parametrize(
    ("raid", "spindles", "read", "write"),
    [
        ("raid5", 6, 2.0, 22 / 20),
        ("raid5", 4, 2.0, 1.0),
        ("raid6", 6, 9 / 5, 31 / 30),
        ("raid10", 14, 14 / 13, 1.0),
        ("raid10", 15, 14 / 13, 1.0),
    ],
)
def test_degraded_factors_follow_the_raid_level(
    raid: str, spindles: int, read: float, write: float
) -> None:
    """RAID 5: (2, (5n-8)/(4(n-1))); RAID 6: ((2n-3)/(n-1), (7n-11)/(6(n-1))); RAID 10 over m = 2
    (n // 2) mirrored spindles (an odd one out is a spare): (m/(m-1), 1)."""
    assert array_physics.degraded_factors(raid, spindles) == pytest.approx((read, write), rel=1e-12)


def test_rebuild_share_is_the_rebuild_rate_over_each_survivors_media_rate() -> None:
    """RAID 5: every survivor reads 50 MB/s of its 150 MB/s; RAID 10 on 14: the partner alone,
    spread over 13."""
    assert array_physics.rebuild_share("raid5", 6, REBUILD_RATE, 150e6) == pytest.approx(
        1 / 3, rel=1e-12
    )
    assert array_physics.rebuild_share("raid10", 14, REBUILD_RATE, 150e6) == pytest.approx(
        1 / 39, rel=1e-12
    )
    with pytest.raises(ValueError, match="raid0 has no redundancy"):
        array_physics.degraded_factors("raid0", 4)


@pytest.mark.parametrize(("write", "factor"), [(False, 3.0), (True, WRITE_FACTOR)])
def test_a_lone_io_on_a_rebuilding_array_takes_the_factor_times_its_service(
    write: bool, factor: float
) -> None:
    """The same seed draws the same seek and rotation: the degraded I/O's time is the healthy
    one's x factor (reads 2 x 1.5 = 3, read-modify-writes 1.1 x 1.5 = 1.65), to rounding."""
    healthy = array_of("raid5", 6).submit(1.0, ((0, 10**9, 4 * KIB),), write) - 1.0
    array = array_of("raid5", 6)
    read, rmw = array_physics.degraded_factors("raid5", 6)
    array.degrade(read * 1.5, rmw * 1.5, 1.5)
    assert array.submit(1.0, ((0, 10**9, 4 * KIB),), write) - 1.0 == pytest.approx(
        factor * healthy, rel=1e-12
    )
    array.degrade(1.0, 1.0, 1.0)
    # healthy again after the window
    assert array.submit(5.0, ((0, 10**9, 4 * KIB),), write) - 5.0 < factor * healthy


def drain_rates(events_of: Any, iops: float, duration: float) -> np.ndarray:
    """Destaged writes per second of each seed's run."""
    return np.array(
        [
            simcache.simulate(
                scenario(iops, events_of(duration), seed=s, duration=duration)
            ).totals["destaged_bytes"]
            / duration
            / BLOCK
            for s in SEEDS
        ]
    )


def test_a_rebuild_slows_the_saturated_drain_by_the_write_factor() -> None:
    """Writes at 1,000/s, far above what the array drains, for 20 s: the destager always has a
    backlog, so the drain is the array's capacity. Healthy about 220 writes/s, rebuilding about
    132: their ratio is the read-modify-write factor 1.65 (the destager sends the same batches;
    each spindle operation takes 1.65 x). Tolerance: 3 standard errors of the ratio over 8 seeds
    (about 0.02 each)."""
    healthy = drain_rates(lambda d: [], 1000, 20.0)
    degraded = drain_rates(lambda d: [rebuild(0.0, d)], 1000, 20.0)
    ratio = healthy.mean() / degraded.mean()
    k = len(SEEDS)
    se = ratio * np.hypot(
        healthy.std(ddof=1) / np.sqrt(k) / healthy.mean(),
        degraded.std(ddof=1) / np.sqrt(k) / degraded.mean(),
    )
    assert ratio == pytest.approx(WRITE_FACTOR, abs=3 * se)
    assert 200 < healthy.mean() < 240 and 120 < degraded.mean() < 145


RATE, AT, WINDOW, END = 150.0, 2.0, 6.0, 14.0


def test_a_rebuild_raises_the_backlog_by_the_write_rate_less_the_degraded_drain() -> None:
    """Writes at 150/s: the healthy array keeps up (the backlog before 2 s stays under 10
    writes), the rebuilding one does not. The rebuild runs from 2 s to 8 s: the backlog grows by
    (150 - d) x 6 s, d the drain of the same writes on an array rebuilding from the start for 6 s
    (126 +- 4 writes/s over the seeds, below the saturated 132: with a small backlog the elevator
    sorts fewer writes). Growth measured: 26.7 +- 4.9 writes/s against 150 - 126.2 = 23.8.
    Tolerance: 3 standard errors of the difference over 8 seeds, hypot(4.9, 4.0) / sqrt 8 = 2.2
    writes/s each. Before the rebuild and 6 s after it the backlog is under a second of writes;
    byte conservation holds exactly."""
    k = len(SEEDS)
    drained = drain_rates(lambda d: [rebuild(0.0, d)], RATE, WINDOW)
    growth = []
    for seed in SEEDS:
        result = simcache.simulate(scenario(RATE, [rebuild(AT, WINDOW)], seed=seed, duration=END))
        (record,) = result.meta["degradations"]
        assert (record["start_s"], record["end_s"]) == (AT, AT + WINDOW)
        growth.append(
            (record["backlog_at_end_bytes"] - record["backlog_at_start_bytes"]) / BLOCK / WINDOW
        )
        backlog = result.series["backlog.host0"]
        assert backlog[backlog.index <= AT].max() < RATE * BLOCK
        assert backlog[backlog.index >= END - 0.5].max() < RATE * BLOCK
        assert_conserved(result)
    rates = np.array(growth)
    expected = RATE - drained.mean()
    se = np.hypot(rates.std(ddof=1), drained.std(ddof=1)) / np.sqrt(k)
    assert rates.mean() == pytest.approx(expected, abs=3 * se)
    assert rates.mean() > 5 * se  # the backlog does grow
    before, after = mib(record["backlog_at_start_bytes"]), mib(record["backlog_at_end_bytes"])
    line = (
        "  array_rebuild array 2.000 s to 8.000 s: service times x3 reads, x1.65 writes; backlog "
        f"{before} -> {after}"
    )
    assert line in report(result).splitlines()


def test_no_event_leaves_the_array_healthy() -> None:
    """Without an event the meta lists no degradation and the drain has no backlog to build at
    150 writes/s."""
    result = simcache.simulate(scenario(RATE, [], duration=4.0))
    assert result.meta["degradations"] == []
    assert result.series["backlog.host0"].max() < RATE * BLOCK


@pytest.mark.parametrize(
    ("event", "raid", "path", "message"),
    [
        (
            {"kind": "array_degraded", "at": 1.0, "duration": 1.0},
            "raid0",
            "events.0.kind",
            "array_degraded needs a redundant array; array.raid is raid0, whose failed spindle "
            "loses the array",
        ),
        (
            {**rebuild(1.0, 1.0), "rebuild_rate": "150MB/s"},
            "raid5",
            "events.0.rebuild_rate",
            "1.5e+08 B/s takes all of the surviving spindles' time (media rate 1.5e+08 B/s); make "
            "it lower",
        ),
        (
            {**rebuild(1.0, 1.0), "at": 10.0},
            "raid5",
            "events.0.at",
            "10s is not inside the run (0 to 10s); move it earlier or lengthen run.duration",
        ),
    ],
)
def test_array_events_are_validated(
    event: dict[str, Any], raid: str, path: str, message: str
) -> None:
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(RATE, [event], raid=raid)
    assert (path, message) in raised.value.problems


def test_overlapping_array_events_are_refused() -> None:
    events = [rebuild(1.0, 2.0), {"kind": "array_degraded", "at": 2.5, "duration": 1.0}]
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(RATE, events)
    assert raised.value.problems == [
        (
            "events.1.at",
            "the array is already degraded by events.0 from 1s to 3s (one event at a time is "
            "modelled); move it after that window",
        )
    ]


@pytest.mark.parametrize(("field", "value"), [("duration", 0), ("rebuild_rate", 0), ("at", -1)])
def test_array_event_fields_are_checked(field: str, value: Any) -> None:
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(RATE, [{**rebuild(1.0, 1.0), field: value}])
    assert [path for path, _ in raised.value.problems] == [f"events.0.{field}"]
