"""Addressed die placement of the tier (``placement = "addressed"``) and a drive's command queueing
(``command_queueing``) against exact queueing theory."""

from __future__ import annotations

import math

import numpy as np

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


def _drive_array(command_queueing: int) -> Array:
    drive = DriveSpec(
        rpm=7200,
        avg_seek=7.8e-3,
        settle=0.275e-3,
        full_seek=15.6e-3,
        media_rate=150e6,
        capacity=10**12,
        command_queueing=command_queueing,
    )
    spec = ArraySpec(
        drive=drive, spindles=1, raid="raid0", port=LinkSpec(bandwidth=1.25e9, latency=50e-6)
    )
    return Array(spec, UniformStream(np.random.SeedSequence(11)), [10**12])


def test_command_queueing_charges_the_shortest_of_q_positionings() -> None:
    # With q candidates whose seeks are all s0, the positioning charged is s0 + R min(U_1..U_q): the
    # expected minimum of q uniforms is 1 / (q + 1), its variance q / ((q + 1)^2 (q + 2)). The mean
    # of n draws is within 4 standard errors of s0 + R / (q + 1).
    array = _drive_array(32)
    revolution = 60.0 / 7200
    own_rotation = np.random.default_rng(2)
    s0 = 4e-3
    for q in (1, 4, 16, 32):
        positions = []
        for _ in range(4_000):
            # one in service and q - 1 waiting, each with its own seek s0
            array._pending[0] = [(math.inf, s0)] * q
            seek, rotation = array._shortest_positioning(
                0, 0.0, s0, float(own_rotation.uniform()) * revolution
            )
            assert seek == s0
            positions.append(seek + rotation)
        expected = s0 + revolution / (q + 1)
        error = revolution * math.sqrt(q / ((q + 1) ** 2 * (q + 2)) / len(positions))
        assert abs(np.mean(positions) - expected) < 4.0 * error, (q, np.mean(positions), expected)


def test_command_queueing_caps_the_candidates_and_leaves_fcfs_alone() -> None:
    # command_queueing = 4 chooses among at most 4 however many wait (expected s0 + R / 5); 0 keeps
    # first come first served (no pending bookkeeping, no extra draws).
    array = _drive_array(4)
    revolution = 60.0 / 7200
    draws = np.random.default_rng(3)
    s0 = 2e-3
    positions = []
    for _ in range(4_000):
        array._pending[0] = [(math.inf, s0)] * 20
        seek, rotation = array._shortest_positioning(
            0, 0.0, s0, float(draws.uniform()) * revolution
        )
        positions.append(seek + rotation)
    error = revolution * math.sqrt(4 / (25 * 6) / len(positions))
    assert abs(np.mean(positions) - (s0 + revolution / 5)) < 4.0 * error
    assert _drive_array(0)._pending == []


def test_closed_loop_on_one_spindle_gains_from_command_queueing() -> None:
    # A closed loop of 8 random 4 KiB reads over the whole stroke: FCFS serves about one per average
    # positioning (7.8 ms seek + 4.17 ms half revolution, about 82/s); choosing the shortest of 7
    # waiting gives about 146/s (E[min of 7 positionings] about 6.8 ms by Monte Carlo of the same
    # seek curve). Check that the rate at least rises by a third and stays below the bound of a zero
    # seek (one rotation's 1 / (R / 8) = 960/s).
    rates = {}
    for q in (0, 32):
        array = _drive_array(q)
        rng = np.random.default_rng(4)
        in_flight = [
            array.read(0.0, 0, int(rng.integers(0, 10**12 // 4096)) * 4096, 4096) for _ in range(8)
        ]
        done = 0
        now = 0.0
        while now < 60.0:
            now = min(in_flight)
            in_flight.remove(now)
            in_flight.append(array.read(now, 0, int(rng.integers(0, 10**12 // 4096)) * 4096, 4096))
            done += 1
        rates[q] = done / now
    assert 70 < rates[0] < 95
    assert rates[32] > 1.33 * rates[0]
    assert rates[32] < 960
