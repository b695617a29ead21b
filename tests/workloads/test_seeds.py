"""StreamSeed against numpy's SeedSequence: the same pool and the same state words for any seed and
spawn key, so every stream draws what it drew when it was seeded by a SeedSequence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcache.workloads import seeds
from simcache.workloads.seeds import StreamSeed, stream_seed

# ints of one to three 32-bit words, and the edges of a word
words = st.one_of(
    st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**64 - 1, 2**64]),
    st.integers(min_value=0, max_value=2**96),
)


@given(seed=words, key=st.lists(words, max_size=6), n_words=st.integers(1, 9))
def test_the_words_are_numpys(seed: int, key: list[int], n_words: int) -> None:
    ours = StreamSeed(seed, tuple(key))
    numpys = np.random.SeedSequence(seed, spawn_key=tuple(key))
    assert ours.pool == [int(word) for word in numpys.pool]
    for dtype in (np.uint32, np.uint64):
        state = ours.generate_state(n_words, dtype)
        assert state.dtype == np.dtype(dtype)
        assert np.array_equal(state, numpys.generate_state(n_words, dtype))


def test_a_generator_draws_the_same_numbers() -> None:
    """The engine's use: ``default_rng`` of the seed of VM 3 of group 0 on host 2."""
    ours = np.random.default_rng(StreamSeed(7, (2, 0, 2, 3)))
    numpys = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(2, 0, 2, 3)))
    assert np.array_equal(ours.random(1000), numpys.random(1000))
    assert np.array_equal(ours.integers(0, 2**40, 100), numpys.integers(0, 2**40, 100))


def test_bad_seeds_are_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        StreamSeed(-1)
    with pytest.raises(ValueError, match="must not be negative"):
        StreamSeed(1, (0, -2))
    with pytest.raises(ValueError, match="uint32 or uint64"):
        StreamSeed(1).generate_state(4, np.float64)


def test_a_stream_seed_is_ours_when_compiled() -> None:
    """From the compiled module a StreamSeed (faster than numpy's), from the source numpy's
    SeedSequence (faster than the arithmetic in Python): the same words."""
    made = stream_seed(3, (1, 2))
    assert isinstance(made, StreamSeed if seeds._COMPILED else np.random.SeedSequence)
    assert np.array_equal(
        made.generate_state(4, np.uint64),
        np.random.SeedSequence(3, spawn_key=(1, 2)).generate_state(4, np.uint64),
    )
