"""The backing array's queue reordering, parity RAID writes, zoned media rate and controller cache
flushing.

Theory used: ``k`` uniform positions on [0, 1] sorted cut it into ``k + 1`` gaps of mean ``1 / (k +
1)`` each (the spacings of uniform order statistics; David and Nagaraja, Order Statistics, 2003,
section 6.4), so a sweep from one end over ``k`` uniform requests moves ``1 / (k + 1)`` of the span
per request on average, where first-come first-served moves ``1 / 3`` (the mean of ``|U1 - U2|``).
RAID 5 and 6 small writes read and rewrite data and parity: 4 and 6 back-end I/Os (Patterson, Gibson
and Katz 1988; REFERENCE.md); a write of a whole stripe row computes parity from the new data alone:
no reads, every spindle of the row written once. Zoned recording: a track's bytes grow with its
radius, so the rate at a fraction ``f`` of the capacity from the outer edge is ``outer x sqrt(1 - f
(1 - (inner / outer)^2))`` (see :func:`simcache.physics.drive.zone_rate`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.arrays import DRIVE, KIB, array_of
from support.builders import small_scenario
from support.strategies import to_toml

from simcache import ScenarioError, load_scenario
from simcache.physics import array as array_physics
from simcache.physics import drive as drive_physics
from simcache.sim.components.array import Run, merge_runs
from simcache.sim.components.destager import Destager
from simcache.sim.components.randomness import UniformStream
from simcache.spec import DriveSpec

# -- elevator
# --------------------------------------------------------------------------------------------------


def test_elevator_sweeps_toward_the_nearer_end_first() -> None:
    requests = [(900, 1), (100, 1), (600, 1), (400, 1)]
    # Head at 500: the top end (900) is 400 away, the bottom (100) 400 away too: up first on a tie.
    assert drive_physics.elevator_order(500, requests, 32) == [
        (600, 1),
        (900, 1),
        (400, 1),
        (100, 1),
    ]
    # Head at 700: the top (900) is nearer than the bottom (100): up, then down.
    assert drive_physics.elevator_order(700, requests, 32) == [
        (900, 1),
        (600, 1),
        (400, 1),
        (100, 1),
    ]
    # Head at 300: the bottom is nearer: down, then up.
    assert drive_physics.elevator_order(300, requests, 32) == [
        (100, 1),
        (400, 1),
        (600, 1),
        (900, 1),
    ]
    # No head yet (-1): from the stroke's start, ascending.
    assert drive_physics.elevator_order(-1, requests, 32) == [
        (100, 1),
        (400, 1),
        (600, 1),
        (900, 1),
    ]


def test_elevator_reorders_at_most_the_queue_depth_at_once() -> None:
    requests = [(900, 1), (100, 1), (600, 1), (400, 1)]
    # Depth 2: (900, 100) swept from 0, ending at 900 + 1; then (600, 400) swept downward from
    # there.
    assert drive_physics.elevator_order(0, requests, 2) == [(100, 1), (900, 1), (600, 1), (400, 1)]
    # Depth 1: arrival order.
    assert drive_physics.elevator_order(0, requests, 1) == requests


@pytest.mark.parametrize("k", [2, 4, 8, 16])
def test_a_sweep_over_k_uniform_requests_moves_a_span_over_k_plus_one_per_request(k: int) -> None:
    """From the stroke's start over ``k`` uniform requests: mean move ``1 / (k + 1)`` per request
    (spacings of order statistics); first-come first-served: the first move ``1 / 2``, the others
    ``1 / 3``."""
    rng = np.random.default_rng(16)
    trials = 20_000
    span = 10**9
    swept = np.empty(trials)
    arrival = np.empty(trials)
    for t in range(trials):
        positions = [(int(p), 0) for p in rng.random(k) * span]
        for out, order in (
            (swept, drive_physics.elevator_order(0, positions, 32)),
            (arrival, positions),
        ):
            head = 0
            moved = 0
            for position, _ in order:
                moved += abs(position - head)
                head = position
            out[t] = moved / k / span
    # Tolerance: 4 standard errors of the mean over the trials.
    assert swept.mean() == pytest.approx(1.0 / (k + 1), abs=4.0 * swept.std() / math.sqrt(trials))
    fcfs = (0.5 + (k - 1) / 3.0) / k
    assert arrival.mean() == pytest.approx(fcfs, abs=4.0 * arrival.std() / math.sqrt(trials))


def test_the_array_serves_a_batch_in_elevator_order_at_the_seek_curve_of_each_gap() -> None:
    """One spindle (RAID 0): a batch of runs is served in one upward sweep; its busy time is the
    seek curve of each gap plus the array's own rotation draws plus the transfers, bit for bit;
    ``fcfs`` serves arrival order and spends longer."""
    positions = [1_500_000_000_000, 200_000_000_000, 900_000_000_000, 400_000_000_000]
    runs: list[Run] = [(0, p, 8 * KIB) for p in positions]
    drive = DRIVE
    curve = drive_physics.drive_seek_curve(drive)
    revolution = drive_physics.revolution_seconds(drive.rpm)
    spent = {}
    for scheduling in ("elevator", "fcfs"):
        array = array_of("raid0", 1, scheduling=scheduling)
        rotations = UniformStream(np.random.SeedSequence(1)).uniforms(len(runs))
        order = sorted(positions) if scheduling == "elevator" else positions
        head = 0
        expected = 0.0
        for position, u in zip(order, rotations, strict=True):
            seek = curve(abs(position - head) / drive.capacity)
            transfer = 8 * KIB * (1.0 / drive.media_rate)
            expected = expected + drive_physics.spindle_op_seconds(
                seek, u * revolution, transfer, revolution, False
            )
            head = position + 8 * KIB
        assert array.submit(0.0, runs, True) == expected
        spent[scheduling] = expected
    assert spent["elevator"] < 0.85 * spent["fcfs"]


def test_a_single_io_is_served_alike_by_both_schedules() -> None:
    done = [
        array_of("raid10", 8, scheduling=s).read(0.0, 0, 10**11, 4 * KIB)
        for s in ("elevator", "fcfs")
    ]
    assert done[0] == done[1]


# -- parity RAID
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raid", "spindles", "penalty"),
    [("raid5", 5, 4), ("raid6", 6, 6), ("raid10", 4, 2), ("raid0", 4, 1)],
)
def test_a_small_write_costs_the_raid_write_penalty_in_back_end_ios(
    raid: str, spindles: int, penalty: int
) -> None:
    array = array_of(raid, spindles)
    array.submit(0.0, [(0, 3 * 10**9, 4 * KIB)], True)
    assert (array.front_end_ios, array.back_end_ios, array.full_stripe_writes) == (1, penalty, 0)
    assert array.write_penalty == penalty


@pytest.mark.parametrize(("raid", "spindles"), [("raid5", 5), ("raid6", 6)])
def test_a_whole_stripe_row_is_written_once_without_reads(raid: str, spindles: int) -> None:
    """An aligned write of one stripe row: one write per spindle (data and parity), no read, no
    extra revolution."""
    row = array_physics.stripe_width(raid, spindles) * 64 * KIB
    array = array_of(raid, spindles)
    done = array.submit(0.0, [(0, 7 * row, row)], True)
    assert (array.back_end_ios, array.full_stripe_writes) == (spindles, 1)
    revolution = drive_physics.revolution_seconds(DRIVE.rpm)
    # Each spindle's one operation: its seek from the start to row 7 + rotation + one unit's
    # transfer, no re-write.
    seek = drive_physics.drive_seek_curve(DRIVE)(7 * 64 * KIB / DRIVE.capacity)
    assert done <= seek + revolution + 64 * KIB / DRIVE.media_rate + 1e-12
    assert array.busy.busy_between(0.0, 1.0) < spindles * (
        seek + revolution + 64 * KIB / DRIVE.media_rate
    )


def test_a_long_unaligned_write_pays_read_modify_write_only_at_its_ends() -> None:
    """RAID 5 on 5 spindles (rows of 256 KiB): 512 KiB from 64 KiB into a row: the 192 KiB before
    the next row and the 64 KiB after it are 3 + 1 chunk read-modify-writes (4 I/Os each), the
    whole row in between 5 writes."""
    array = array_of("raid5", 5)
    array.submit(0.0, [(0, 64 * KIB, 512 * KIB)], True)
    assert (array.full_stripe_writes, array.back_end_ios) == (1, 4 * 4 + 5)
    short = array_of("raid5", 5)
    # a row's length, but not a whole row: 4 chunks of RMW
    short.submit(0.0, [(0, 64 * KIB, 256 * KIB)], True)
    assert (short.full_stripe_writes, short.back_end_ios) == (0, 16)


def test_the_destager_coalesces_small_writes_into_a_full_stripe_write() -> None:
    """64 adjacent 4 KiB writes (256 KiB from a row boundary), coalesced by the destager into one
    run, reach RAID 5 as one full-stripe write: 5 back-end I/Os where 64 separate writes cost
    256."""
    batch = [(0, 256 * KIB + i * 4 * KIB, 4 * KIB, (), False) for i in reversed(range(64))]
    runs = Destager.coalesce(batch)
    assert runs == [(0, 256 * KIB, 256 * KIB)]
    coalesced = array_of("raid5", 5)
    coalesced.submit(0.0, runs, True)
    assert (coalesced.back_end_ios, coalesced.full_stripe_writes) == (5, 1)
    separate = array_of("raid5", 5)
    for item in batch:
        separate.submit(0.0, [(item[0], item[1], item[2])], True)
    assert (separate.back_end_ios, separate.full_stripe_writes) == (256, 0)


# -- zones
# --------------------------------------------------------------------------------------------------


def test_zone_rate_runs_from_the_outer_to_the_inner_rate() -> None:
    shrink = drive_physics.zone_shrink(150e6, 80e6)
    assert drive_physics.zone_rate(150e6, shrink, 0.0) == pytest.approx(150e6, rel=1e-12)
    assert drive_physics.zone_rate(150e6, shrink, 1.0) == pytest.approx(80e6, rel=1e-12)
    # Half the capacity from the edge: the radius whose disc outside holds half the bytes, rms of
    # the two radii.
    assert drive_physics.zone_rate(150e6, shrink, 0.5) == pytest.approx(
        math.sqrt((150e6**2 + 80e6**2) / 2.0), rel=1e-12
    )
    assert drive_physics.zone_shrink(150e6, None) == 0.0


@pytest.mark.parametrize("span", [0.05, 0.5, 0.98, 1.0])
def test_mean_transfer_time_matches_quadrature(span: float) -> None:
    n = 200_000
    f = (np.arange(n) + 0.5) / n * span
    shrink = drive_physics.zone_shrink(150e6, 80e6)
    rates = 150e6 * np.sqrt(1.0 - f * shrink)
    assert drive_physics.mean_transfer_seconds(1e6, 150e6, 80e6, span) == pytest.approx(
        float(np.mean(1e6 / rates)), rel=1e-8
    )
    assert drive_physics.mean_transfer_seconds(1e6, 150e6, None, span) == 1e6 / 150e6


def test_an_inner_zone_transfer_takes_the_inner_rate() -> None:
    drive = DRIVE.model_copy(update={"inner_rate": 80e6})
    outer = array_of("raid0", 1, drive=drive, seed=3)
    inner = array_of("raid0", 1, drive=drive, seed=3)
    size = 1024 * KIB
    t_outer = outer.submit(0.0, [(0, 0, size)], False)
    t_inner = inner.submit(0.0, [(0, DRIVE.capacity - size, size)], False)
    revolution = drive_physics.revolution_seconds(DRIVE.rpm)
    u = UniformStream(np.random.SeedSequence(3)).uniforms(1)[0]
    full = drive_physics.drive_seek_curve(drive)((DRIVE.capacity - size) / DRIVE.capacity)
    # 16 chunks of 64 KiB streaming on: one rotation; the first from the start of the stroke (no
    # seek), the other far.
    assert t_outer == pytest.approx(u * revolution + size / 150e6, rel=1e-3)
    assert t_inner == pytest.approx(full + u * revolution + size / 80e6, rel=2e-3)


def test_a_span_larger_than_one_drive_spreads_over_the_raid_set() -> None:
    """Fourteen 2 TB drives in RAID 10: a 10 TB disk's last byte sits within a drive's stroke, on
    a spindle chosen by its stripe unit, and the array's logical space is 7 x 2 TB."""
    array = array_of("raid10", 14)
    assert array.logical_address(0, 10 * 10**12) == 10 * 10**12
    row, spindles = array_physics.stripe_unit_spindles("raid10", 14, 10 * 10**12 // (64 * KIB))
    assert row * 64 * KIB < DRIVE.capacity and len(spindles) == 2
    assert array._logical_bytes == DRIVE.capacity // (64 * KIB) * 7 * 64 * KIB


# -- controller cache flushing
# ----------------------------------------------------------------------------------


def test_watermark_flushing_holds_writes_then_flushes_them_sorted_as_full_stripes() -> None:
    """RAID 5 on 5 spindles, 1 MiB cache flushed at half full: 128 sequential 4 KiB writes in
    reverse order are acknowledged in the cache latency and touch no spindle; the 128th reaches
    512 KiB, and the flush sends them merged: two whole rows, 10 back-end I/Os."""
    array = array_of(
        "raid5",
        5,
        controller_cache=1024 * KIB,
        cache_latency=2e-4,
        cache_flush="watermark",
        cache_high_watermark=0.5,
    )
    for i in reversed(range(1, 128)):
        assert array.submit(0.0, [(0, i * 4 * KIB, 4 * KIB)], True) == pytest.approx(2e-4)
    assert (array.back_end_ios, array.cache_flushes) == (0, 0)
    assert array.busy.busy_between(0.0, 1.0) == 0.0
    assert array.submit(0.0, [(0, 0, 4 * KIB)], True) == pytest.approx(2e-4)
    assert (array.cache_flushes, array.full_stripe_writes, array.back_end_ios) == (1, 2, 10)
    assert array.bytes_written == 128 * 4 * KIB


def test_merge_runs_sorts_by_address_and_joins_adjacent_runs() -> None:
    address = {0: 0, 1: 10**6}
    runs: list[Run] = [(1, 0, 10), (0, 20, 10), (0, 0, 10), (0, 10, 5), (0, 12, 3)]
    assert merge_runs(runs, lambda vm, offset: address[vm] + offset) == [
        (0, 0, 15),
        (0, 20, 10),
        (1, 0, 10),
    ]


# -- fields
# --------------------------------------------------------------------------------------------------


def problems(tmp_path: Path, array: dict[str, Any]) -> list[tuple[str, str]]:
    data = small_scenario(
        "fields", array=array, workload={"mode": "open", "iops": 100, "sizes": {"4KiB": 1.0}}
    )
    path = tmp_path / "fields.toml"
    path.write_text(to_toml(data), "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.source == str(path)
    return info.value.problems


def test_the_new_array_fields_have_ranges_with_reasons(tmp_path: Path) -> None:
    (field, message), *_ = problems(
        tmp_path,
        {"profile": "array-14x7200", "drive": {"profile": "sata-7200", "queue_depth": 300}},
    )
    assert (
        field == "array.drive.queue_depth"
        and "SAS allows 256 tagged commands a drive; SATA NCQ 32" in message
    )
    (field, message), *_ = problems(tmp_path, {"profile": "array-14x7200", "scheduling": "sstf"})
    assert field == "array.scheduling" and "'fcfs'" in message and "'elevator'" in message
    (field, message), *_ = problems(
        tmp_path, {"profile": "array-14x7200", "cache_high_watermark": 0}
    )
    assert (
        field == "array.cache_high_watermark" and "a flush at 0% is the immediate policy" in message
    )
    (field, message), *_ = problems(
        tmp_path,
        {"profile": "array-14x7200", "drive": {"profile": "sata-7200", "inner_rate": "200MB/s"}},
    )
    assert (
        field == "array.drive"
        and "inner_rate (2e+08 B/s) cannot exceed media_rate (1.5e+08 B/s)" in message
    )


# -- calibration
# ------------------------------------------------------------------------------------------------


def test_every_drive_profile_is_calibrated_on_its_datasheet_figures() -> None:
    """Each profile's seek curve takes its track-to-track seek over one track, its full-stroke
    seek over the stroke (2 x average where the profile gives none) and its average seek on
    average over random seeks, to 1e-9; the rotation is 60 / rpm; the zone rates run from
    media_rate to inner_rate."""
    from simcache.spec.profiles import list_profiles

    for name in list_profiles("drive"):
        drive = DriveSpec.model_validate({"profile": name})
        if drive.media == "flash":  # no seek curve: a flash drive's operations have no positioning
            with pytest.raises(ValueError, match="has no seek curve"):
                drive_physics.drive_seek_curve(drive)
            continue
        assert drive.rpm is not None and drive.avg_seek is not None
        curve = drive_physics.drive_seek_curve(drive)
        track = drive_physics.track_fraction(drive.media_rate, drive.rpm, drive.capacity)
        full = drive.full_seek if drive.full_seek is not None else 2.0 * drive.avg_seek
        assert curve(track) == pytest.approx(drive.settle, rel=1e-9), name
        assert curve(1.0) == pytest.approx(full, rel=1e-9), name
        assert curve.moments(1.0)[0] == pytest.approx(drive.avg_seek, rel=1e-9), name
        assert drive_physics.revolution_seconds(drive.rpm) == 60.0 / drive.rpm
        shrink = drive_physics.zone_shrink(drive.media_rate, drive.inner_rate)
        assert drive_physics.zone_rate(drive.media_rate, shrink, 1.0) == pytest.approx(
            drive.inner_rate or drive.media_rate, rel=1e-12
        )
    sata = DriveSpec.model_validate({"profile": "sata-7200"})
    # HC310 spec; SATA NCQ
    assert (sata.settle, sata.avg_seek, sata.rpm, sata.queue_depth) == (0.275e-3, 7.8e-3, 7200, 32)


def test_a_contiguous_stretch_is_served_upward_even_on_a_downward_sweep() -> None:
    """Head at 10,000: the stretch 100-400 (three requests that continue one another) lies below
    it, as does 5,000; the sweep goes down, visiting 5,000 and then the stretch, the stretch
    upward (a drive streams forward only)."""
    requests = [(300, 100), (5000, 10), (100, 100), (200, 100)]
    assert drive_physics.elevator_order(10_000, requests, 32) == [
        (5000, 10),
        (100, 100),
        (200, 100),
        (300, 100),
    ]
