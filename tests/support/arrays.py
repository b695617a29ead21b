"""A backing array built by hand, for the array tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from simcache.sim.components.array import Array
from simcache.sim.components.randomness import UniformStream
from simcache.spec import ArraySpec, DriveSpec, LinkSpec

LINK = LinkSpec(bandwidth=125e6, latency=50e-6)
DRIVE = DriveSpec(
    rpm=7200,
    avg_seek=7.8e-3,
    settle=0.8e-3,
    full_seek=15.6e-3,
    media_rate=150e6,
    capacity=2 * 10**12,
)

KIB = 1024


def array_of(
    raid: str, spindles: int, seed: int = 1, drive: DriveSpec = DRIVE, **fields: Any
) -> Array:
    spec = ArraySpec(
        drive=drive, spindles=spindles, raid=raid, stripe=64 * KIB, port=LINK, **fields
    )
    return Array(spec, UniformStream(np.random.SeedSequence(seed)), [drive.capacity * spindles])


def nearest_distance_mean(candidates: int) -> float:
    """Mean distance (fraction of the span) from a head at a uniform position to the nearest of
    ``candidates`` = n independent uniform positions: ``(n + 3) / (2 (n + 1) (n + 2))`` (1/3 for
    one: a random seek).

    From ``P(D > d) = (1 - 2d)^(n+1) + 2 ((1 - d)^(n+1) - (1 - 2d)^(n+1)) / (n + 1)`` for ``d <=
    1/2`` (the head at least ``d`` from both ends, or within ``d`` of one) and ``2 (1 - d)^(n+1) /
    (n + 1)`` beyond, integrated over ``d``.
    """
    n = candidates
    return (n + 3) / (2.0 * (n + 1) * (n + 2))
