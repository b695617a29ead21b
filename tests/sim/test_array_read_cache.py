"""The array's read caches: the controller's LRU of lines and each drive's LRU of buffer segments.

Theory for the hit ratio: an LRU cache of ``C`` items under independent references with
probabilities ``p_i`` hits with probability ``sum_i p_i (1 - exp(-p_i T))``, ``T`` the
characteristic time solving ``sum_i (1 - exp(-p_i T)) = C`` (Che, Tung and Wang, IEEE JSAC 2002;
asymptotically exact as the cache and the catalogue grow: Fricker, Robert and Roberts, ITC 2012).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError
from support.arrays import LINK
from support.che import che_hit_ratio
from support.paths import ROOT

from simcache.sim.components.array import Array
from simcache.sim.components.randomness import UniformStream
from simcache.spec import ArraySpec, DriveSpec

DRIVE = DriveSpec(
    rpm=7200,
    avg_seek=7.8e-3,
    settle=0.275e-3,
    full_seek=15.6e-3,
    media_rate=150e6,
    capacity=2 * 10**12,
)
BLOCK = 4096


def array(
    drive: DriveSpec = DRIVE,
    seed: int = 1,
    spindles: int = 1,
    raid: str = "raid0",
    **fields: object,
) -> Array:
    spec = ArraySpec.model_validate(
        {"drive": drive, "spindles": spindles, "raid": raid, "port": LINK, **fields}
    )
    return Array(spec, UniformStream(np.random.SeedSequence(seed)), [drive.capacity * spindles])


def zipf_blocks(
    rng: np.random.Generator, blocks: int, theta: float, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` block numbers drawn with Zipf(``theta``) popularity over ``blocks`` blocks, the
    ranks scattered over the blocks by a fixed permutation, and each block's probability (by
    block number)."""
    weights = np.arange(1, blocks + 1, dtype=float) ** -theta
    weights /= weights.sum()
    ranks = rng.choice(blocks, size=n, p=weights)
    order = rng.permutation(blocks)
    popularity = np.empty(blocks)
    popularity[order] = weights
    return order[ranks], popularity


def test_caches_that_never_hit_change_nothing() -> None:
    """Reads at distinct random positions: with both caches on, every completion time is the one
    without caches (no hit, so the same draws; keeping segments and lines costs no time)."""
    rng = np.random.default_rng(5)
    offsets = rng.choice(DRIVE.capacity // BLOCK, 2000, replace=False) * BLOCK
    plain = array(seed=2)
    cached = array(
        drive=DRIVE.model_copy(update={"cache": 256 * 1024**2, "cache_segments": 64}),
        seed=2,
        read_cache=512 * 1024**2,
    )
    for i, offset in enumerate(offsets):
        now = i * 0.004  # a queue builds up at times: completions depend on the spindle's state too
        assert cached.read(now, 0, int(offset), BLOCK) == plain.read(now, 0, int(offset), BLOCK)
    assert cached.read_cache_hits == 0 and cached.drive_cache_hits == 0


def test_the_controller_read_cache_answers_a_repeated_read_in_its_latency() -> None:
    a = array(read_cache=2 * BLOCK, read_cache_latency=0.5e-3)
    first = a.read(0.0, 0, 10 * BLOCK, BLOCK)
    assert first >= DRIVE.settle  # from the spindle: at least a settle, and a rotation
    assert a.read(1.0, 0, 10 * BLOCK, BLOCK) == pytest.approx(1.0005)
    assert a.read_cache_hits == 1 and a.front_end_ios == 2 and a.back_end_ios == 1


def test_the_controller_read_cache_evicts_the_least_recently_used_line() -> None:
    """Two lines: read A, B, A (A most recent), C evicts B; A still hits, B misses."""
    a = array(read_cache=2 * BLOCK)
    for i, block in enumerate((1, 2, 1, 3)):
        a.read(float(i), 0, block * BLOCK, BLOCK)
    assert a.read_cache_hits == 1
    a.read(10.0, 0, 1 * BLOCK, BLOCK)
    assert a.read_cache_hits == 2
    a.read(11.0, 0, 2 * BLOCK, BLOCK)
    assert a.read_cache_hits == 2


def test_the_controller_keeps_only_whole_lines_and_written_data() -> None:
    """A read covering part of a line leaves nothing of it; a write of a line leaves it for a
    later read."""
    a = array(read_cache=64 * BLOCK, read_cache_line=2 * BLOCK)
    a.read(0.0, 0, 2 * BLOCK, BLOCK)  # half of line 1
    a.read(1.0, 0, 2 * BLOCK, BLOCK)
    assert a.read_cache_hits == 0
    a.submit(2.0, ((0, 8 * BLOCK, 2 * BLOCK),), True)  # line 4, whole
    assert a.read(3.0, 0, 9 * BLOCK, BLOCK) == pytest.approx(3.0 + 0.2e-3)
    assert a.read_cache_hits == 1


def test_a_drive_buffer_hit_leaves_the_arm_where_it_is() -> None:
    """A chunk read its drive's buffer holds is done in cache_hit_time, while the spindle stays
    booked for the operation it is busy with; a read elsewhere queues behind that operation as
    without a cache."""
    drive = DRIVE.model_copy(
        update={"cache": 1024**2, "cache_segments": 4, "cache_hit_time": 0.3e-3}
    )
    a = array(drive=drive)
    a.read(0.0, 0, 100 * BLOCK, BLOCK)
    # two chunks: the spindle busy for a seek, a rotation and more
    long_read = a.read(1.0, 0, 10**9, 2 * 64 * 1024)
    assert a.read(1.001, 0, 100 * BLOCK, BLOCK) == pytest.approx(1.0013)
    assert a.drive_cache_hits == 1
    assert a.read(1.002, 0, 10**10, BLOCK) > long_read


def test_a_drive_buffer_remembers_cache_segments_operations() -> None:
    drive = DRIVE.model_copy(update={"cache": 1024**2, "cache_segments": 2})
    a = array(drive=drive)
    for i, block in enumerate((1, 2, 3)):  # 3 evicts 1
        a.read(float(i), 0, block * 10**6 * BLOCK, BLOCK)
    a.read(5.0, 0, 3 * 10**6 * BLOCK, BLOCK)
    a.read(6.0, 0, 2 * 10**6 * BLOCK, BLOCK)
    assert a.drive_cache_hits == 2
    a.read(7.0, 0, 1 * 10**6 * BLOCK, BLOCK)
    assert a.drive_cache_hits == 2


@pytest.mark.parametrize(("theta", "lines"), [(0.99, 200), (0.8, 1000), (1.2, 50)])
def test_controller_hit_ratio_under_zipf_follows_che(theta: float, lines: int) -> None:
    """Zipf reads over 20,000 blocks after a warm-up of 20,000 reads: the hit ratio of the next
    40,000 is Che's. Tolerance: 4 binomial standard errors of the measured ratio (the references
    are independent; the cache's state correlates successive hits, so the plain error is a lower
    bound and 4 leaves room), plus 0.01 for the approximation itself at this size (Fricker et al.
    report errors under 1% for such catalogues)."""
    rng = np.random.default_rng(int(theta * 100) + lines)
    blocks, warm, n = 20_000, 20_000, 40_000
    drawn, weights = zipf_blocks(rng, blocks, theta, warm + n)
    a = array(read_cache=lines * BLOCK)
    for i, block in enumerate(drawn[:warm]):
        a.read(i * 0.02, 0, int(block) * BLOCK, BLOCK)
    a.read_cache_hits = 0
    for i, block in enumerate(drawn[warm:]):
        a.read((warm + i) * 0.02, 0, int(block) * BLOCK, BLOCK)
    measured = a.read_cache_hits / n
    expected = che_hit_ratio(weights, lines)
    error = math.sqrt(expected * (1.0 - expected) / n)
    assert abs(measured - expected) < 4 * error + 0.01, (measured, expected)


def test_drive_buffers_hit_under_zipf_as_che_says_per_spindle() -> None:
    """RAID 0 over 4 spindles, 4 KiB Zipf reads: each drive's buffer is an LRU of its own
    segments under the references that reach it (the blocks striped onto it), so the array's hit
    ratio is the reference-weighted mean of the per-spindle Che ratios. Tolerance as in the
    controller's test."""
    rng = np.random.default_rng(3)
    blocks, warm, n, segments, stripe = 20_000, 20_000, 40_000, 64, 64 * 1024
    drawn, weights = zipf_blocks(rng, blocks, 0.99, warm + n)
    drive = DRIVE.model_copy(update={"cache": segments * stripe, "cache_segments": segments})
    a = array(drive=drive, spindles=4, stripe=stripe)
    for i, block in enumerate(drawn[:warm]):
        a.read(i * 0.02, 0, int(block) * BLOCK, BLOCK)
    warm_hits = a.drive_cache_hits
    for i, block in enumerate(drawn[warm:]):
        a.read((warm + i) * 0.02, 0, int(block) * BLOCK, BLOCK)
    spindle = np.arange(blocks) * BLOCK // stripe % 4  # RAID 0: stripe unit k on spindle k mod 4
    expected = 0.0
    for k in range(4):
        share = weights[spindle == k]
        expected += share.sum() * che_hit_ratio(share / share.sum(), segments)
    measured = (a.drive_cache_hits - warm_hits) / n
    error = math.sqrt(expected * (1.0 - expected) / n)
    assert abs(measured - expected) < 4 * error + 0.01, (measured, expected)


def test_bad_cache_fields_are_refused_with_the_fix() -> None:
    with pytest.raises(ValidationError, match="smaller than one 512-byte sector"):
        DRIVE.model_validate({**DRIVE.model_dump(), "cache": 4096, "cache_segments": 16})
    with pytest.raises(ValidationError, match="smaller than one read_cache_line"):
        ArraySpec(drive=DRIVE, spindles=1, raid="raid0", port=LINK, read_cache=1024)


def test_the_estimate_says_it_prices_reads_as_misses_when_a_read_cache_is_on() -> None:

    import simcache
    from simcache.estimate.coverage import not_modelled

    scenario = simcache.load_scenario(ROOT / "scenarios" / "validate_hdd_7200_qd.toml")
    assert not any("read_cache" in note for note in not_modelled(scenario))
    cached = scenario.with_overrides({"array.read_cache": "1GiB"})
    assert any(note.startswith("array.read_cache is not modelled") for note in not_modelled(cached))
    both = scenario.with_overrides({"array.read_cache": "1GiB", "array.drive.cache": "64MiB"})
    assert any(
        note.startswith("array.read_cache and array.drive.cache are not modelled")
        for note in not_modelled(both)
    )
