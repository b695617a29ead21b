"""The seeds of a run's random streams, made without ``numpy.random.SeedSequence`` objects.

Every component's stream is seeded as ``SeedSequence(seed, spawn_key=key)`` would seed it (its
pool, then the words :meth:`StreamSeed.generate_state` gives the bit generator), by the same
arithmetic: the hash and mix functions of numpy's ``SeedSequence`` (numpy/random/bit_generator.pyx;
M. E. O'Neill's seed_seq design, "Developing a seed_seq Alternative", pcg-random.org, 2015), on
32-bit words. A ``SeedSequence`` and the generator seeded from it took about 12 us a stream (7
and 5), a ``StreamSeed`` and its generator 4.6 (compiled): a build of the 32-host scenario makes
417 streams. From its Python source it is slower than numpy's (Cython): :func:`stream_seed` then
makes ``SeedSequence`` objects. ``tests/workloads/test_seeds.py`` checks the words against numpy's
for random seeds and keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
from numpy.random.bit_generator import ISeedSequence

if TYPE_CHECKING:  # compiled, a C int64; to Python, int
    from mypy_extensions import i64

__all__ = ["StreamSeed", "generator", "stream_seed"]

_MASK: Final = 0xFFFFFFFF
_POOL: Final = 4  # SeedSequence's default pool size (words)
_INIT_A: Final = 0x43B0D7E5
_MULT_A: Final = 0x931E8875
_INIT_B: Final = 0x8B51F9DD
_MULT_B: Final = 0x58F38DED
_MIX_MULT_L: Final = 0xCA01F9DD
_MIX_MULT_R: Final = 0x4973F715
_XSHIFT: Final = 16
# compiled (mypyc), the arithmetic below is faster than numpy's; from the Python source, slower
_COMPILED: Final = not __file__.endswith((".py", ".pyc"))
_UINT32: Final = np.dtype(np.uint32)
_UINT64: Final = np.dtype(np.uint64)


def _times(a: i64, b: i64) -> i64:
    """``a * b`` modulo 2**32, for words ``a`` and ``b``: in halves of ``b``, so that no product
    passes 2**49 (compiled, no integer leaves the machine word)."""
    return (a * (b & 0xFFFF) + (((a * (b >> 16)) & 0xFFFF) << 16)) & _MASK


def _words(value: int) -> list[int]:
    """``value``'s 32-bit words, lowest first (``[0]`` for 0), as numpy takes an entropy int."""
    if value < 0:
        raise ValueError(f"a seed must not be negative, not {value}")
    if value == 0:
        return [0]
    words = []
    while value > 0:
        words.append(value & _MASK)
        value >>= 32
    return words


class StreamSeed:
    """``numpy.random.SeedSequence(entropy, spawn_key=key)``'s pool, and the state words it gives
    a bit generator (:meth:`generate_state`, the one method ``numpy.random.default_rng`` and the
    bit generators call). Not spawnable."""

    __slots__ = ("pool",)

    def __init__(self, entropy: int, spawn_key: tuple[int, ...] = ()) -> None:
        words = _words(entropy)
        spawned: list[int] = []
        for part in spawn_key:
            spawned.extend(_words(part))
        if spawned and len(words) < _POOL:  # padded only with a spawn key (numpy 1.19 on)
            words.extend([0] * (_POOL - len(words)))
        words.extend(spawned)
        self.pool = _mixed(words)

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        """``n_words`` words of ``dtype`` (uint32 or uint64: two 32-bit words each, the first
        the low half) drawn from the pool, as ``SeedSequence.generate_state``."""
        kind = np.dtype(dtype)
        if kind == _UINT64:
            count = 2 * n_words
        elif kind == _UINT32:
            count = n_words
        else:
            raise ValueError("only uint32 or uint64 words")
        pool = self.pool
        hash_const: i64 = _INIT_B
        value: i64 = 0
        out: list[i64] = []
        for i in range(count):
            value = pool[i % _POOL] ^ hash_const
            hash_const = _times(hash_const, _MULT_B)
            value = _times(value, hash_const)
            out.append(value ^ (value >> _XSHIFT))
        words = np.array(out, dtype="<u4")
        if kind == _UINT32:
            return words.astype(np.uint32)
        # as numpy: the pairs read as little-endian 64-bit words, then in the machine's order
        return words.view("<u8").astype(np.uint64)


def stream_seed(seed: int, key: tuple[int, ...]) -> np.random.SeedSequence | StreamSeed:
    """The seed of the stream ``key`` of a run of ``seed``: a :class:`StreamSeed` where this
    module is compiled, else numpy's ``SeedSequence`` (the same words either way)."""
    if _COMPILED:
        return StreamSeed(seed, key)
    return np.random.SeedSequence(seed, spawn_key=key)


def generator(seed: np.random.SeedSequence | StreamSeed) -> np.random.Generator:
    """``numpy.random.default_rng(seed)`` (numpy's type hints know no seed sequence of ours)."""
    return np.random.default_rng(cast(Any, seed))


def _mixed(entropy: list[int]) -> list[i64]:
    """SeedSequence.mix_entropy: ``entropy`` (32-bit words) hashed into the pool. Its hashmix
    multiplies the hash constant by MULT_A at each call: ``const`` is the constant before the
    call, ``after`` after it."""
    const: i64 = _INIT_A
    after: i64 = 0
    pool: list[i64] = []
    for i in range(_POOL):
        after = _times(const, _MULT_A)
        pool.append(_hashed(entropy[i] if i < len(entropy) else 0, const, after))
        const = after
    for source in range(_POOL):
        for target in range(_POOL):
            if source != target:
                after = _times(const, _MULT_A)
                pool[target] = _mix(pool[target], _hashed(pool[source], const, after))
                const = after
    for source in range(_POOL, len(entropy)):
        for target in range(_POOL):
            after = _times(const, _MULT_A)
            pool[target] = _mix(pool[target], _hashed(entropy[source], const, after))
            const = after
    return pool


def _hashed(value: i64, const: i64, after: i64) -> i64:
    """SeedSequence's hashmix of ``value`` with the hash constant ``const`` (``after``: times
    MULT_A)."""
    value = _times(value ^ const, after)
    return value ^ (value >> _XSHIFT)


def _mix(x: i64, y: i64) -> i64:
    """SeedSequence's mix of two words."""
    result = (_times(_MIX_MULT_L, x) - _times(_MIX_MULT_R, y)) & _MASK
    return result ^ (result >> _XSHIFT)


ISeedSequence.register(StreamSeed)
