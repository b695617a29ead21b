"""The backing array's geometry: the datasheet-fitted seek curve, head positions and queueing on a
spindle.

The seek curve is the two-regime law of Ruemmler and Wilkes ("An introduction to disk drive
modeling", IEEE Computer 1994): ``a + b sqrt(x)`` for short seeks, ``c + e x`` for long ones. The
average seek of a datasheet is the mean over random seeks, i.e. over the distance between two
uniform positions, whose density is ``2 (1 - x)`` on the stroke. Queueing: Pollaczek-Khinchine for
M/G/1, ``W = lambda E[S^2] / (2 (1 - rho))`` (Kleinrock, Queueing Systems vol. 1, 1975).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError
from support.arrays import DRIVE, LINK

from simcache.physics import array as array_physics
from simcache.physics import drive as drive_physics
from simcache.sim.components.array import Array
from simcache.sim.components.randomness import UniformStream
from simcache.spec import ArraySpec, DriveSpec
from simcache.spec.profiles import list_profiles

SATA_7200 = DRIVE  # 7,200 RPM, 7.8 ms average and 15.6 ms full seek, 0.8 ms settle
DATASHEETS = [
    (0.8e-3, 7.8e-3, 15.6e-3, 6.25e-7),  # sata-7200
    (0.3e-3, 3.1e-3, 6.2e-3, 1.3e-6),  # sas-15k
    (0.5e-3, 5.5e-3, 13e-3, 1e-6),  # ceph-tools defaults: 5.5 ms average, 13 ms maximum
    # IBM Ultrastar 146Z10 spec: 4.7 ms average, 10.5 ms full stroke
    (0.5e-3, 4.7e-3, 10.5e-3, 1e-5),
]


def one_spindle(drive: DriveSpec = SATA_7200, seed: int = 1) -> Array:
    """A RAID 0 array of one spindle whose single VM disk covers the whole stroke (logical byte =
    position)."""
    spec = ArraySpec(drive=drive, spindles=1, raid="raid0", stripe=64 * 1024, port=LINK)
    return Array(spec, UniformStream(np.random.SeedSequence(seed)), [drive.capacity])


@pytest.mark.parametrize(("settle", "avg_seek", "full_seek", "track"), DATASHEETS)
def test_seek_curve_holds_its_three_calibration_points(
    settle: float, avg_seek: float, full_seek: float, track: float
) -> None:
    """One track takes ``settle``, the full stroke ``full_seek``, and the mean over random seeks
    is ``avg_seek``."""
    curve = drive_physics.seek_curve(settle, avg_seek, full_seek, track)
    assert curve(track) == pytest.approx(settle, rel=1e-9)
    assert curve(1.0) == pytest.approx(full_seek, rel=1e-9)
    assert curve.moments(1.0)[0] == pytest.approx(avg_seek, rel=1e-9)
    # no movement: no seek; within a track: the settle
    assert curve(0.0) == 0.0 and curve(track / 2) == settle


@pytest.mark.parametrize(("settle", "avg_seek", "full_seek", "track"), DATASHEETS)
def test_seek_curve_is_monotone_and_continuous(
    settle: float, avg_seek: float, full_seek: float, track: float
) -> None:
    curve = drive_physics.seek_curve(settle, avg_seek, full_seek, track)
    x = np.concatenate((np.geomspace(track, 1.0, 20001), [curve.knee]))
    x.sort()
    t = np.array([curve(v) for v in x])
    assert np.all(np.diff(t) >= 0.0)
    assert track < curve.knee < 1.0
    # The regimes meet at the knee with the same value and slope, and the square root meets the
    # settle at one track.
    assert curve.a + curve.b * math.sqrt(curve.knee) == pytest.approx(
        curve.c + curve.e * curve.knee, rel=1e-12
    )
    assert curve.b / (2.0 * math.sqrt(curve.knee)) == pytest.approx(curve.e, rel=1e-12)
    epsilon = 1e-12
    assert curve(curve.knee + epsilon) - curve(curve.knee - epsilon) == pytest.approx(
        0.0, abs=1e-12
    )
    assert curve(track + epsilon) - curve(track) == pytest.approx(0.0, abs=1e-7)


def test_seek_curve_moments_match_quadrature() -> None:
    """The closed-form mean and mean square over ``span x |U1 - U2|`` against a fine midpoint
    rule."""
    curve = drive_physics.seek_curve(*DATASHEETS[0])
    for span in (1e-4, 0.01, 0.2, curve.knee, 0.7, 1.0):
        n = 400_000
        x = (np.arange(n) + 0.5) / n * span
        weight = 2.0 * (1.0 - x / span) / span * (span / n)
        t = np.array([curve(v) for v in x])
        mean, square = curve.moments(span)
        assert mean == pytest.approx(float(np.sum(weight * t)), rel=1e-4)
        assert square == pytest.approx(float(np.sum(weight * t * t)), rel=1e-4)


def test_every_drive_profile_fits_a_curve_and_a_misfit_is_refused() -> None:
    for name in list_profiles("drive"):
        drive = DriveSpec.model_validate({"profile": name})
        if drive.media == "flash":  # no seek curve: a flash drive's operations have no positioning
            with pytest.raises(ValueError, match="has no seek curve"):
                drive_physics.drive_seek_curve(drive)
            continue
        assert drive.rpm is not None and drive.avg_seek is not None
        curve = drive_physics.drive_seek_curve(drive)
        assert curve.moments(1.0)[0] == pytest.approx(drive.avg_seek, rel=1e-9)
    default = DriveSpec(
        rpm=7200, avg_seek=7.8e-3, settle=0.8e-3, media_rate=150e6, capacity=2 * 10**12
    )
    # full stroke unset: 2 x average
    assert drive_physics.drive_seek_curve(default)(1.0) == pytest.approx(2 * 7.8e-3, rel=1e-12)
    low, high = drive_physics.seek_curve_bounds(
        0.8e-3, 10e-3, drive_physics.track_fraction(150e6, 7200, 2 * 10**12)
    )
    assert low == pytest.approx(0.8e-3 + 9.2e-3 / 3, rel=1e-5) and high == pytest.approx(
        0.8e-3 + 9.2e-3 * 8 / 15, rel=1e-3
    )
    with pytest.raises(ValidationError, match="the average must lie between"):
        DriveSpec(
            rpm=7200,
            avg_seek=7.8e-3,
            settle=0.8e-3,
            full_seek=10e-3,
            media_rate=150e6,
            capacity=2 * 10**12,
        )


def test_sequential_chunks_on_one_spindle_pay_no_seek_and_no_rotation() -> None:
    """64 KiB writes queued back to back, each where the last ended: one positioning (the first),
    then media time."""
    array = one_spindle(seed=5)
    first_rotation = UniformStream(
        np.random.SeedSequence(5)
    ).uniform() * drive_physics.revolution_seconds(7200)
    start = 10**12  # the middle of the stroke; the head starts at the outer edge
    chunk = 64 * 1024
    done = [array.submit(0.0, ((0, start + i * chunk, chunk),), True) for i in range(100)]
    seek = drive_physics.drive_seek_curve(SATA_7200)(start / SATA_7200.capacity)
    assert done[-1] == pytest.approx(seek + first_rotation + 100 * chunk / 150e6, rel=1e-12)
    assert np.allclose(np.diff(done), chunk / 150e6, rtol=1e-9)
    # After an idle gap the data has rotated away: the next block costs a rotation but no seek.
    later = array.submit(1.0, ((0, start + 100 * chunk, chunk),), True) - 1.0
    assert chunk / 150e6 <= later < chunk / 150e6 + drive_physics.revolution_seconds(7200)


def _positioning(array: Array, offsets: np.ndarray, size: int) -> np.ndarray:
    """Positioning time (s) of reads at ``offsets``, one per second (no queueing): service minus
    media time."""
    return (
        np.array([array.read(float(i), 0, int(o), size) - i for i, o in enumerate(offsets)])
        - size / 150e6
    )


def test_uniform_random_reads_over_the_stroke_average_avg_seek_plus_half_a_revolution() -> None:
    """Mean positioning = avg_seek + revolution / 2. Tolerance: 5 standard errors of the sample
    mean (consecutive distances share an endpoint, a weak positive correlation the plain standard
    error leaves out)."""
    rng = np.random.default_rng(11)
    n = 40_000
    offsets = rng.integers(0, SATA_7200.capacity // 512, n) * 512
    # the first read seeks from the edge
    positioning = _positioning(one_spindle(seed=3), offsets, 512)[1:]
    expected = SATA_7200.avg_seek + drive_physics.revolution_seconds(7200) / 2.0
    error = positioning.std(ddof=1) / math.sqrt(len(positioning))
    assert abs(positioning.mean() - expected) < 5 * error, (positioning.mean(), expected, error)


def test_a_stream_confined_to_a_small_region_seeks_less_than_uniform_over_the_span() -> None:
    """A zipf-like stream (power-law ranks over 1% of the stroke, hot blocks near each other)
    against uniform access over the whole span: its mean seek is far shorter, and at least the
    curve's mean over the region."""
    rng = np.random.default_rng(12)
    n = 20_000
    blocks = SATA_7200.capacity // 100 // 4096
    ranks = (
        np.minimum(
            np.floor((rng.random(n) * (blocks ** (1 - 0.9) - 1) + 1) ** (1 / (1 - 0.9))).astype(
                np.int64
            ),
            blocks,
        )
        - 1
    )
    confined = _positioning(one_spindle(seed=4), ranks * 4096, 4096)[1:]
    uniform = _positioning(
        one_spindle(seed=4), rng.integers(0, SATA_7200.capacity // 4096, n) * 4096, 4096
    )[1:]
    half_revolution = drive_physics.revolution_seconds(7200) / 2.0
    curve = drive_physics.drive_seek_curve(SATA_7200)
    assert confined.mean() - half_revolution < 0.5 * (uniform.mean() - half_revolution)
    assert confined.mean() - half_revolution < curve.moments(0.01)[0] * 1.1


def test_single_spindle_wait_matches_pollaczek_khinchine() -> None:
    """Poisson reads at uniform positions over the stroke on one spindle (rho = 0.6): the mean
    wait in queue against W = lambda E[S^2] / (2 (1 - rho)), E[S] and E[S^2] from the seek
    curve's moments, a uniform rotation and the media time. Tolerance: 4 standard errors of the
    mean over 10 independent replications (seeds)."""
    size = 4096
    revolution = drive_physics.revolution_seconds(7200)
    transfer = size / 150e6
    seek_mean, seek_square = drive_physics.drive_seek_curve(SATA_7200).moments(1.0)
    rest_mean = revolution / 2.0 + transfer  # rotation (uniform) plus media time
    rest_square = revolution**2 / 3.0 + revolution * transfer + transfer**2
    mean_service = seek_mean + rest_mean
    square_service = seek_square + 2.0 * seek_mean * rest_mean + rest_square
    rate = 0.6 / mean_service
    theory = rate * square_service / (2.0 * (1.0 - 0.6))
    waits = []
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        n = 30_000
        arrivals = np.cumsum(rng.exponential(1.0 / rate, n))
        offsets = rng.integers(0, SATA_7200.capacity // size, n) * size
        array = one_spindle(seed=200 + seed)
        finish = [
            array.read(float(t), 0, int(o), size) for t, o in zip(arrivals, offsets, strict=True)
        ]
        previous = np.concatenate(([0.0], finish[:-1]))
        wait = np.maximum(previous - arrivals, 0.0)
        waits.append(wait[n // 10 :].mean())  # drop the first tenth: the queue starts empty
    error = np.std(waits, ddof=1) / math.sqrt(len(waits))
    assert abs(np.mean(waits) - theory) < 4 * error, (np.mean(waits), theory, error)


def test_raid_layouts_place_consecutive_units_on_consecutive_spindles() -> None:
    assert [array_physics.stripe_unit_spindles("raid0", 4, u) for u in range(5)] == [
        (0, (0,)),
        (0, (1,)),
        (0, (2,)),
        (0, (3,)),
        (1, (0,)),
    ]
    assert [array_physics.stripe_unit_spindles("raid10", 6, u) for u in range(4)] == [
        (0, (0, 3)),
        (0, (1, 4)),
        (0, (2, 5)),
        (1, (0, 3)),
    ]
    # RAID 5, 4 spindles: row 0 has parity on spindle 3 and data on 0, 1, 2; row 1 parity on 2, data
    # on 3, 0, 1.
    assert [array_physics.stripe_unit_spindles("raid5", 4, u) for u in range(6)] == [
        (0, (0, 3)),
        (0, (1, 3)),
        (0, (2, 3)),
        (1, (3, 2)),
        (1, (0, 2)),
        (1, (1, 2)),
    ]
    assert array_physics.stripe_unit_spindles("raid6", 5, 0) == (0, (1, 4, 0))
    for raid, n in (("raid0", 5), ("raid10", 8), ("raid5", 5), ("raid6", 6)):
        width = array_physics.stripe_width(raid, n)
        # every spindle holds one data unit or redundancy per row, and no two things
        for row in range(n):
            used = [
                s
                for u in range(row * width, (row + 1) * width)
                for s in array_physics.stripe_unit_spindles(raid, n, u)[1]
            ]
            assert (
                len(set(used)) == len(used) if raid in ("raid0", "raid10") else len(set(used)) == n
            )


def test_vm_disks_follow_each_other_on_the_array() -> None:
    spec = ArraySpec(drive=SATA_7200, spindles=4, raid="raid10", port=LINK)
    array = Array(spec, UniformStream(np.random.SeedSequence(1)), [10**9, 3 * 10**9, 10**9])
    assert [array.logical_address(vm, 4096) for vm in range(3)] == [
        4096,
        10**9 + 4096,
        4 * 10**9 + 4096,
    ]


def test_same_seed_same_completions() -> None:
    spec = ArraySpec(drive=SATA_7200, spindles=6, raid="raid5", port=LINK)
    runs = [((i % 3, (i * 7919 % 1000) * 65536, 65536 * (1 + i % 3)),) for i in range(200)]

    def completions() -> list[float]:
        array = Array(spec, UniformStream(np.random.SeedSequence(9)), [10**11] * 3)
        return [array.submit(i * 1e-3, run, i % 2 == 0) for i, run in enumerate(runs)]

    assert completions() == completions()
