"""Addressed die placement of the tier (``placement = "addressed"``) and a drive's command queueing
(``command_queueing``, ``reorder``, ``reorder_lag``) against exact queueing and order-statistics
theory."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError
from support.arrays import nearest_distance_mean

from simcache.physics import drive as drive_physics
from simcache.sim.components.array import Array
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.tier import Tier
from simcache.spec import ArraySpec, DriveSpec, LinkSpec, TierSpec

UNIT_TIME = 60e-6  # s, deterministic read time of one unit
UNITS = 8


def _poisson_sojourns(placement: str, load: float, count: int, seed: int) -> np.ndarray:
    """Sojourn times (s) of ``count`` 1-byte reads arriving as a Poisson stream that loads each
    of the tier's ``UNITS`` units to ``load`` (its transfer, 1 byte at 4 GB/s, is negligible)."""
    spec = TierSpec(
        kind="flash",
        read_latency=UNIT_TIME,
        write_latency=UNIT_TIME,
        read_bandwidth=4e9,
        write_bandwidth=4e9,
        channels=UNITS,
        capacity=10**12,
        placement=placement,
    )
    tier = Tier(spec, UniformStream(np.random.SeedSequence(seed)))
    rate = load * UNITS / UNIT_TIME
    arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, count))
    return np.array([tier.submit(float(now), 1, False) - now for now in arrivals])


def _batch_error(values: np.ndarray, batches: int = 50) -> float:
    """Standard error of the mean of ``values`` from the spread of ``batches`` batch means (the
    batches are long against a busy period, so their means are about independent)."""
    means = values[: len(values) // batches * batches].reshape(batches, -1).mean(axis=1)
    return float(means.std(ddof=1) / math.sqrt(batches))


def test_addressed_units_are_separate_md1_queues() -> None:
    # Each read goes to a uniformly random unit: a Poisson stream of rate lambda split at random is
    # UNITS independent Poisson streams of rate lambda / UNITS, each into its own M/D/1 queue of
    # load rho = lambda s / UNITS. Pollaczek-Khinchine for deterministic service: mean wait W = rho
    # s / (2 (1 - rho)); sojourn s + W.
    load = 0.6
    # the first arrivals meet an empty device
    sojourns = _poisson_sojourns("addressed", load, 120_000, seed=3)[2_000:]
    theory = UNIT_TIME + load * UNIT_TIME / (2.0 * (1.0 - load))
    error = _batch_error(sojourns)
    assert abs(sojourns.mean() - theory) < 4.0 * error, (sojourns.mean(), theory, error)


def test_any_unit_placement_waits_far_less_than_addressed() -> None:
    # Earliest-free (one queue before 8 units, M/D/8) at 60% load: Erlang C probability of waiting
    # for M/M/8 at rho = 0.6 is about 0.15, and M/D/8 waits less still, so its mean wait is a small
    # fraction of the separate queues' P-K wait (0.75 s at rho 0.6: 45 us); a quarter of it bounds
    # it with room.
    load = 0.6
    shared = _poisson_sojourns("any-unit", load, 60_000, seed=5)[2_000:]
    separate_wait = load * UNIT_TIME / (2.0 * (1.0 - load))
    assert shared.mean() - UNIT_TIME < 0.25 * separate_wait


def _drive_array(
    command_queueing: int, reorder: str = "positioning", lag: int = 0, queue_depth: int = 32
) -> Array:
    drive = DriveSpec(
        rpm=7200,
        avg_seek=7.8e-3,
        settle=0.275e-3,
        full_seek=15.6e-3,
        media_rate=150e6,
        capacity=10**12,
        queue_depth=queue_depth,
        command_queueing=command_queueing,
        reorder=reorder,
        reorder_lag=lag,
    )
    spec = ArraySpec(
        drive=drive, spindles=1, raid="raid0", port=LinkSpec(bandwidth=1.25e9, latency=50e-6)
    )
    return Array(spec, UniformStream(np.random.SeedSequence(11)), [10**12])


def test_shortest_seek_first_picks_the_nearest_of_n_uniform_positions() -> None:
    # The head at a uniform position, n candidates uniform over the stroke: the nearest lies
    # (n + 3) / (2 (n + 1) (n + 2)) of the stroke away on average (1/3 for one: a random seek;
    # support.arrays.nearest_distance_mean, integrated from P(D > d)). Each draw's distance is at
    # most 1 with variance below its mean square, so 4 standard errors of 4,000 draws bound it.
    array = _drive_array(32, reorder="seek")
    rng = np.random.default_rng(5)
    stroke = 10**12
    for n in (1, 2, 4, 16):
        distances = []
        for _ in range(4_000):
            head = int(rng.integers(1, stroke))
            array.spindles.head[0] = head
            array.spindles._pool[0] = [(int(rng.integers(0, stroke)), 0.5) for _ in range(n - 1)]
            array.spindles._span[0] = [0, stroke]
            place, _, _ = array.spindles._reorder(0, int(rng.integers(0, stroke)), 0.0, False, n)
            distances.append(abs(place - head) / stroke)
        expected = nearest_distance_mean(n)
        error = math.sqrt(np.var(distances) / len(distances))
        assert abs(np.mean(distances) - expected) < 4.0 * error + 1e-12, (n, expected)


def test_shortest_positioning_first_waits_the_least_of_n_rotations() -> None:
    # With every candidate on the head's track (equal seeks, the settle), the charged positioning
    # is the settle plus R min(U_1..U_n) of their uniform angles: expected R / (n + 1), variance
    # R^2 n / ((n + 1)^2 (n + 2)); the mean of 4,000 within 4 standard errors.
    array = _drive_array(32)
    revolution = 60.0 / 7200
    rng = np.random.default_rng(2)
    head = 5 * 10**11
    for n in (2, 4, 16):
        waits = []
        for _ in range(4_000):
            array.spindles.head[0] = head
            array.spindles._pool[0] = [(head + 512, float(rng.uniform())) for _ in range(n - 1)]
            array.spindles._span[0] = [head, head + 512]
            start = float(rng.uniform()) * revolution
            _, seek, rotation = array.spindles._reorder(0, head + 512, start, False, n)
            assert seek == array.spindles._seek.seconds(512 / 10**12)
            waits.append(rotation)
        expected = revolution / (n + 1)
        error = revolution * math.sqrt(n / ((n + 1) ** 2 * (n + 2)) / len(waits))
        assert abs(np.mean(waits) - expected) < 4.0 * error, (n, np.mean(waits), expected)


def test_candidates_follow_the_waiting_commands_less_the_lag_and_the_cap() -> None:
    # Booked at a spindle where k commands are pending (one in service, k - 1 waiting), a command
    # is chosen among k (the waiting and itself; the drive holds at most queue_depth with the one
    # in service, so k <= queue_depth - 1) less reorder_lag, at most command_queueing, at least 1;
    # the pool keeps its entries either way, and 0 keeps no pool at all.
    array = _drive_array(8, lag=2)
    for pending, expected in ((0, 1), (1, 1), (3, 1), (4, 2), (9, 7), (20, 8)):
        array.spindles._pending[0] = [math.inf] * pending
        array.spindles._pool[0] = [(0, 0.0)]
        assert array.spindles._candidates(0, 0.0) == expected
        assert array.spindles._pool[0] == [(0, 0.0)]
    shallow = _drive_array(6, lag=2, queue_depth=6)
    for pending, expected in ((4, 2), (5, 3), (9, 3), (40, 3)):
        shallow.spindles._pending[0] = [math.inf] * pending
        assert shallow.spindles._candidates(0, 0.0) == expected
    assert _drive_array(0).spindles._pending == [] and _drive_array(0).spindles._pool == []


def test_passed_over_commands_stay_in_the_pool() -> None:
    # A pool entry served gives its place to the booked command; the others stay, also those
    # beyond the candidates when the queue shrinks, and they are chosen among again (before any
    # new draw) when it grows. Shortest seek first, the head at byte 0: the nearest is served.
    array = _drive_array(8, reorder="seek")
    array.spindles.head[0] = 1
    array.spindles._span[0] = [0, 10**12]
    array.spindles._pool[0] = [(9 * 10**9, 0.25), (2 * 10**9, 0.5), (5 * 10**9, 0.75)]
    place, _, _ = array.spindles._reorder(0, 7 * 10**9, 0.0, False, 4)
    assert place == 2 * 10**9
    assert [entry[0] for entry in array.spindles._pool[0]] == [9 * 10**9, 7 * 10**9, 5 * 10**9]
    # two candidates: the booked command and the pool's first entry; the rest wait
    place, _, _ = array.spindles._reorder(0, 6 * 10**9, 0.0, False, 2)
    assert place == 6 * 10**9
    assert [entry[0] for entry in array.spindles._pool[0]] == [9 * 10**9, 7 * 10**9, 5 * 10**9]
    # the queue grows back to four: the three kept entries are the other candidates, none drawn
    drawn = array._stream._next  # bytes of the stream's block read so far, 8 a draw
    place, _, _ = array.spindles._reorder(0, 8 * 10**9, 0.0, False, 4)
    assert place == 5 * 10**9
    assert [entry[0] for entry in array.spindles._pool[0]] == [9 * 10**9, 7 * 10**9, 8 * 10**9]
    assert array._stream._next == drawn + 8  # the booked command's angle only
    # first come first served (one candidate) leaves the pool as it is
    array.spindles._pending[0] = [math.inf]
    array.read(0.0, 0, 3 * 10**9, 4096)
    assert [entry[0] for entry in array.spindles._pool[0]] == [9 * 10**9, 7 * 10**9, 8 * 10**9]


def test_a_reordering_drive_moves_the_bytes_requested() -> None:
    # Each command booked is one slot, which transfers the command's own bytes from the position
    # served: in a closed loop of 80 % 4 KiB and 20 % 512 KiB random reads the drives' media move
    # exactly the bytes read, with and without reordering (media_bytes counts each chunk
    # operation's bytes; RAID 0 on one spindle, no cache). The slot's service is the positioning
    # plus the booked command's transfer, whatever the length of the command whose position it
    # serves.
    rng = np.random.default_rng(8)
    for array in (_drive_array(0), _drive_array(16), _drive_array(16, "seek", lag=2)):
        depth = 16

        def read(now: float, array: Array = array) -> float:
            size = 4096 if rng.uniform() < 0.8 else 512 * 1024
            offset = int(rng.integers(0, (10**12 - size) // 4096)) * 4096
            return array.read(now, 0, offset, size)

        in_flight = [read(0.0) for _ in range(depth)]
        for _ in range(3_000):
            now = min(in_flight)
            in_flight.remove(now)
            in_flight.append(read(now))
        assert array.media_bytes == array.bytes_read
    array = _drive_array(8, reorder="seek")
    array.spindles.head[0] = 10**9
    array.spindles._spindle_free[0] = 1.0
    array.spindles._span[0] = [0, 10**12]
    # a pool entry where the head is: it streams on, no seek, no rotation
    array.spindles._pool[0] = [(10**9, 0.0)]
    array.spindles._pending[0] = [1.0, 1.0, 1.0]
    finish = array.spindles.operate(0, 5 * 10**11, 4096, 0.5, False, 1.0)
    assert finish == 1.0 + 4096 / 150e6
    assert array.spindles.head[0] == 10**9 + 4096


def _closed_loop_rate(array: Array, depth: int, seconds: float = 60.0) -> float:
    """Reads per second of a closed loop keeping ``depth`` random 4 KiB reads over the whole
    stroke in flight on one spindle."""
    rng = np.random.default_rng(4)
    in_flight = [
        array.read(0.0, 0, int(rng.integers(0, 10**12 // 4096)) * 4096, 4096) for _ in range(depth)
    ]
    done = 0
    now = 0.0
    while now < seconds:
        now = min(in_flight)
        in_flight.remove(now)
        in_flight.append(array.read(now, 0, int(rng.integers(0, 10**12 // 4096)) * 4096, 4096))
        done += 1
    return done / now


def test_closed_loop_gains_from_reordering_as_the_candidates_allow() -> None:
    # FCFS serves one read per average positioning (7.8 ms seek + 4.17 ms half revolution + the
    # transfer, about 83/s). With a lag of k the drive has no choice up to k + 2 outstanding
    # (lag 6 at 8: 7 pending less 6 is one candidate), so it serves first come first served with
    # the same draws: the same rate exactly. Shortest seek first among 7 (QD8, no lag) is at most
    # what 7 candidates drawn afresh allow (queued_positioning_moments, an upper bound: a queue
    # keeps those it passed over) and well above FCFS; shortest positioning first gains more than
    # shortest seek first (it also cuts the rotational wait); all stay below one read per settle
    # plus R / 8.
    fcfs = _closed_loop_rate(_drive_array(0), 8)
    assert 75 < fcfs < 90
    assert _closed_loop_rate(_drive_array(32, "seek", lag=6), 8) == fcfs
    by_seek = _closed_loop_rate(_drive_array(32, "seek"), 8)
    by_position = _closed_loop_rate(_drive_array(32), 8)
    drive = _drive_array(32).spec.drive
    revolution = 60.0 / 7200
    curve = drive_physics.drive_seek_curve(drive)
    fresh, _ = drive_physics.queued_positioning_moments(curve, 1.0, revolution, 0.0, 7, True)
    assert 1.3 * fcfs < by_seek < 1.03 / (fresh + 4096 / 150e6)
    assert by_position > 1.08 * by_seek
    assert by_position < 1.0 / (drive.settle + revolution / 8)


def _disk(**fields: object) -> DriveSpec:
    return DriveSpec.model_validate(
        {"rpm": 7200, "avg_seek": 7.8e-3, "media_rate": 150e6, "capacity": 10**12, **fields}
    )


def test_the_spec_refuses_queueing_a_drive_cannot_do() -> None:
    flash = {"media": "flash", "read_time": 80e-6, "write_time": 1e-4}
    for field, value in (("command_queueing", 32), ("reorder_lag", 2), ("reorder", "seek")):
        with pytest.raises(ValidationError, match=f"{field} describe a spinning drive: remove"):
            DriveSpec.model_validate({"media_rate": 2e9, "capacity": 10**12, **flash, field: value})
    # a dumped flash drive writes the defaults out (reorder = "positioning"): it loads again
    drive = DriveSpec.model_validate({"media_rate": 2e9, "capacity": 10**12, **flash})
    assert DriveSpec.model_validate(drive.model_dump()) == drive
    with pytest.raises(
        ValidationError,
        match=r"command_queueing \(200\) exceeds queue_depth \(4\).*at most 4 or raise",
    ):
        _disk(command_queueing=200, queue_depth=4)
    with pytest.raises(
        ValidationError, match=r"reorder_lag \(200\) leaves the drive no choice.*at most 29"
    ):
        _disk(command_queueing=8, reorder_lag=200)
    with pytest.raises(ValidationError, match=r"reorder_lag \(6\).*at most 5 \(queue_depth - 3"):
        _disk(command_queueing=8, queue_depth=8, reorder_lag=6)
    with pytest.raises(ValidationError, match=r"never reorders with queue_depth \(2\)"):
        _disk(command_queueing=2, queue_depth=2)
    # the most the bounds allow loads, and so does a lag on a drive that does not reorder
    assert _disk(command_queueing=8, queue_depth=8, reorder_lag=5).reorder_lag == 5
    assert _disk(command_queueing=0, reorder_lag=200).command_queueing == 0
