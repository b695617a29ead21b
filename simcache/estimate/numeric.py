"""Array aliases and helpers shared by the estimate's modules."""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_ITERATIONS", "TOLERANCE", "Floats", "Indices", "sums"]

Floats = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]

MAX_ITERATIONS = 500  # passes of a fixed point (the solver's) or Newton steps (the read cache's) before giving up
TOLERANCE = 1e-4  # a fixed point's largest queue change, relative to 1 + the longest queue, when it stops


def sums(index: Indices, weights: Floats, length: int) -> Floats:
    """``np.bincount`` with weights, as floats also when there is nothing to count."""
    return cast(Floats, np.bincount(index, weights, minlength=length).astype(np.float64, copy=False))
