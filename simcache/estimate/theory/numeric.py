"""Array aliases and helpers shared by the estimate's modules."""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_ITERATIONS",
    "MIN_PASSES",
    "PASS_WORK",
    "TOLERANCE",
    "Floats",
    "Indices",
    "pass_limit",
    "sums",
]

Floats = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]

# passes of a fixed point (the solver's) or Newton steps (the read cache's) before giving up
MAX_ITERATIONS = 500
# a fixed point's largest queue change, relative to 1 + the longest queue, when it stops
TOLERANCE = 1e-4
PASS_WORK = 1_500_000
"""Closed-chain rows a fixed point may evaluate (passes x rows) before it gives up: the full
MAX_ITERATIONS up to 3,000 rows (some 400 closed chains), fewer beyond. A fixed point that
settles takes tens of passes; one that oscillates over thousands of chains took 500 passes per
state (8.7 s compiled for 2,002 chains)."""
MIN_PASSES = 100  # passes a fixed point may always take, however many rows


def pass_limit(rows: int) -> int:
    """Passes a fixed point over ``rows`` closed-chain rows may take (see :data:`PASS_WORK`)."""
    return max(MIN_PASSES, min(MAX_ITERATIONS, PASS_WORK // max(rows, 1)))


def sums(index: Indices, weights: Floats, length: int) -> Floats:
    """``np.bincount`` with weights, as floats also when there is nothing to count."""
    return cast(
        Floats, np.bincount(index, weights, minlength=length).astype(np.float64, copy=False)
    )
