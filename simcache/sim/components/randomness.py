"""Per-component random streams drawn in blocks, so the hot path never calls numpy per draw."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

import numpy as np
from librt.strings import read_f64_le

from simcache.workloads.seeds import StreamSeed, generator

if TYPE_CHECKING:  # compiled, a C int64; to Python, int
    from mypy_extensions import i64

__all__ = ["UniformStream"]

_BLOCK: Final = 4096
_F64: Final = np.dtype("<f8")


class UniformStream:
    """Uniform [0, 1) numbers from one ``numpy.random.Generator``, drawn ``_BLOCK`` at a time.

    Each component owns one, spawned from the run's ``SeedSequence``, so adding
    a VM or a host never changes another component's draws.
    """

    __slots__ = ("_end", "_generator", "_next", "_values")

    def __init__(self, seed: np.random.SeedSequence | StreamSeed):
        self._generator = generator(seed)
        # The block as float64 bytes (little-endian), read in place: compiled, one native read a
        # draw, no float object.
        self._values = b""
        self._next: i64 = 0  # byte offset of the next draw
        self._end: i64 = 0

    @property
    def generator(self) -> np.random.Generator:
        """The underlying generator, for vectorised draws by the owner."""
        return self._generator

    def uniform(self) -> float:
        if self._next >= self._end:
            self._values = np.asarray(self._generator.random(_BLOCK), dtype=_F64).tobytes()
            self._next = 0
            self._end = 8 * _BLOCK
        value = read_f64_le(self._values, self._next)
        self._next += 8
        return value

    def uniforms(self, count: int) -> list[float]:
        """The next ``count`` uniforms (the same numbers, in the same order, as ``count`` calls
        of :meth:`uniform`)."""
        return [self.uniform() for _ in range(count)]

    def exponential(self, mean: float) -> float:
        """An exponential variate with the given mean (inverse transform of a uniform)."""
        return -mean * math.log1p(-self.uniform())
