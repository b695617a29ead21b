"""The components' random streams (:class:`simcache.sim.components.randomness.UniformStream`):
the numbers of numpy's generator, in its order, whatever the block they were drawn in (a block is
kept as float64 bytes and read in place)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simcache.sim.components.randomness import _BLOCK, UniformStream


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_uniforms_are_the_generators_draws_in_order_across_blocks(seed: int) -> None:
    count = 2 * _BLOCK + 123  # into a third block
    stream = UniformStream(np.random.SeedSequence(seed))
    drawn = [stream.uniform() for _ in range(count)]
    expected = np.random.default_rng(np.random.SeedSequence(seed)).random(3 * _BLOCK)[:count]
    assert drawn == expected.tolist()  # bit for bit: the bytes hold the float64 numpy drew
    assert all(isinstance(u, float) and 0.0 <= u < 1.0 for u in drawn)


def test_uniforms_and_exponentials_continue_the_same_stream() -> None:
    """``uniforms(n)`` gives the next n draws, as n calls would; ``exponential(mean)`` is ``-mean
    log1p(-u)`` of the next."""
    seed = np.random.SeedSequence(7)
    a, b = UniformStream(seed), UniformStream(seed)
    assert a.uniforms(_BLOCK - 2) == [b.uniform() for _ in range(_BLOCK - 2)]
    assert a.uniforms(5) == [b.uniform() for _ in range(5)]  # across the block's end
    u = b.uniform()
    assert a.exponential(2.5) == -2.5 * math.log1p(-u)
