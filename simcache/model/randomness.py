"""Per-component random streams drawn in blocks, so the hot path never calls numpy per draw."""

from __future__ import annotations

import math
from typing import Final

import numpy as np

__all__ = ["UniformStream"]

_BLOCK: Final = 4096


class UniformStream:
    """Uniform [0, 1) numbers from one ``numpy.random.Generator``, drawn ``_BLOCK`` at a time.

    Each component owns one, spawned from the run's ``SeedSequence``, so adding
    a VM or a host never changes another component's draws.
    """

    __slots__ = ("_generator", "_next", "_values")

    def __init__(self, seed: np.random.SeedSequence):
        self._generator = np.random.default_rng(seed)
        self._values: list[float] = []
        self._next = 0

    @property
    def generator(self) -> np.random.Generator:
        """The underlying generator, for vectorised draws by the owner."""
        return self._generator

    def uniform(self) -> float:
        if self._next >= len(self._values):
            self._values = self._generator.random(_BLOCK).tolist()
            self._next = 0
        value = self._values[self._next]
        self._next += 1
        return value

    def uniforms(self, count: int) -> list[float]:
        """The next ``count`` uniforms (the same numbers, in the same order, as ``count`` calls of :meth:`uniform`)."""
        start = self._next
        end = start + count
        if end <= len(self._values):
            self._next = end
            return self._values[start:end]
        return [self.uniform() for _ in range(count)]

    def exponential(self, mean: float) -> float:
        """An exponential variate with the given mean (inverse transform of a uniform)."""
        return -mean * math.log1p(-self.uniform())
