"""The locality fit of :mod:`.vscsistats`: the near-sequential share and a hot spot fitted to a
seek-distance histogram.

The model and the tests a hot spot must pass (maximum likelihood on a grid, a likelihood-ratio test
against uniform access, a resolved size) are described in :mod:`.vscsistats` under "Seek distances".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcache.traces.formats.vscsistats.sections import Histogram


def near_fraction(seeks: Histogram, within: int) -> float:
    """Share of commands whose distance is in +1..+within LBN (whole buckets only)."""
    total = sum(seeks.counts)
    near = sum(c for lower, limit, c in seeks.buckets() if _near(lower, limit, within))
    return near / total if total else 0.0


def _near(lower: float | None, limit: float | None, within: int) -> bool:
    return limit is not None and lower is not None and lower >= 0 and 0 < limit <= within


def _distance_cdf(x: np.ndarray, span: float, hot: np.ndarray, share: np.ndarray) -> np.ndarray:
    """P(|distance| <= x) between two independent positions of a hot spot over ``span`` LBNs.

    A position is in the hot region ``[0, hot)`` with probability ``share`` and uniform within its
    region. Two positions in one region of length ``L`` are ``|d| <= x`` apart with probability ``1
    - (1 - x/L)^2``; one in each region are ``U + V`` apart (``U ~ U(0, hot)``, ``V ~ U(0, span -
    hot)``), whose distribution function is ``(g(x) - g(x - hot) - g(x - cold) + g(x - span)) / (hot
    cold)`` with ``g(t) = max(t, 0)^2 / 2``.
    """
    cold = span - hot

    def same(length: np.ndarray) -> np.ndarray:
        return np.asarray(1.0 - (1.0 - np.minimum(x / length, 1.0)) ** 2)

    def g(t: np.ndarray) -> np.ndarray:
        return np.asarray(np.maximum(t, 0.0) ** 2 / 2.0)

    across = (g(x) - g(x - hot) - g(x - cold) + g(x - span)) / (hot * cold)
    return np.asarray(
        share**2 * same(hot)
        + (1.0 - share) ** 2 * same(cold)
        + 2.0 * share * (1.0 - share) * across
    )


@dataclass(frozen=True)
class _Locality:
    """What the seek-distance histogram says about where a disk's I/Os land."""

    near: float
    """Share of near-sequential seeks (+1..+within LBN)."""
    excess: float
    """How much likelier than uniform access a short (non-sequential, at most 500 LBN) seek is;
    nan without any."""
    hotspot: tuple[float, float] | None
    """(hot_io_fraction, hot_span_fraction) when the histogram resolves a hot spot, else None."""
    reason: str


LIKELIHOOD_RATIO = 13.82
"""Twice the log-likelihood gain a hot spot needs over uniform access: chi-square, 2 degrees of
freedom, p = 0.001."""
SHORT_SEEK = 500
"""LBNs: a non-sequential seek this short or shorter counts as short in the facts."""


def fit_locality(seeks: Histogram, within: int, working_set: int) -> _Locality:
    """The near-sequential share, and a hot spot fitted to the other seeks by maximum likelihood
    (see the module doc)."""
    span = working_set / 512.0
    near = near_fraction(seeks, within)
    # (|d| from, |d| to, count, sides) of the seeks not near-sequential
    cells: list[tuple[float, float, int, float]] = []
    for lower, limit, count in seeks.buckets():
        if _near(lower, limit, within) or count == 0:
            continue
        low = -math.inf if lower is None else lower
        high = math.inf if limit is None else limit
        if high <= 0:
            cells.append((abs(high), abs(low), count, 0.5))
        elif low >= 0:
            cells.append((low, high, count, 0.5))
        else:  # a bucket across 0 (-1..0 and the like): both sides
            cells.append((0.0, max(abs(low), high), count, 1.0))
    total = sum(cell[2] for cell in cells)
    if total == 0:
        return _Locality(near, math.nan, None, "no seek other than near-sequential ones")
    counts = np.array([cell[2] for cell in cells], dtype=np.float64)
    short = sum(c for _, b, c, _ in cells if b <= SHORT_SEEK) / total
    excess = short / (1.0 - (1.0 - min(SHORT_SEEK / span, 1.0)) ** 2)
    shares = np.linspace(0.0, 0.99, 100)
    hots = np.geomspace(1e-5, 0.5, 120)
    hot_mesh, share_mesh = np.meshgrid(hots, shares)
    keep = share_mesh > hot_mesh  # a hot spot: its share of the I/Os above its share of the span
    # the last: uniform
    hot_grid, share_grid = np.append(hot_mesh[keep], 0.5), np.append(share_mesh[keep], 0.5)
    hot_lbn = hot_grid[:, None] * span

    def cdf(x: float) -> np.ndarray:
        return _distance_cdf(
            np.full(hot_lbn.shape, min(x, span)), span, hot_lbn, share_grid[:, None]
        )[:, 0]

    # The model's distances are symmetric: a cell on one side of 0 holds half of its |d| range.
    probabilities = np.stack([(cdf(b) - cdf(a)) * sides for a, b, _, sides in cells], axis=1)
    likelihood = (counts * np.log(np.maximum(probabilities, 1e-300))).sum(axis=1)
    best = int(np.argmax(likelihood[:-1]))
    gain = 2.0 * (likelihood[best] - likelihood[-1])
    if gain < LIKELIHOOD_RATIO:
        return _Locality(
            near,
            excess,
            None,
            f"a hot spot fits no better than uniform access (likelihood ratio {gain:.3g} < "
            f"{LIKELIHOOD_RATIO})",
        )
    # the fit's 95% region (chi-square, 2 degrees of freedom, halved)
    close = likelihood[:-1] >= likelihood[best] - 3.0
    low, high = hot_grid[:-1][close].min(), hot_grid[:-1][close].max()
    if high > 2.0 * low:
        return _Locality(
            near,
            excess,
            None,
            "short seeks point to a hot spot, but its size is not resolved by the buckets (hot "
            f"span {low:.2g} to {high:.2g} "
            "of the working set fit alike)",
        )
    fitted = (float(f"{share_grid[best]:.3g}"), float(f"{hot_grid[best]:.3g}"))
    return _Locality(
        near,
        excess,
        fitted,
        f"maximum likelihood fit (likelihood ratio {gain:.3g} against uniform access)",
    )
