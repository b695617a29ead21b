"""Where a VM's I/Os land in its working set: exact Zipf ranks, a bijective scatter of ranks, a hot
spot, sequential runs.

Every draw is vectorised over a block of I/Os (numpy); nothing here is called
per I/O, and no table grows with the working set.

- :class:`ZipfRanks`: ranks ``1..n`` with probability ``r^-theta / H(n, theta)``
  exactly (``H(n, theta) = sum_{k<=n} k^-theta``, the generalised harmonic
  number), by rejection-inversion: W. Hörmann and G. Derflinger, "Rejection-
  inversion to generate variates from monotone discrete distributions", ACM
  Transactions on Modeling and Computer Simulation 6(3), 1996, 169-184.
- :func:`scatter`: rank -> block by ``r -> a r mod n`` with ``gcd(a, n) = 1``,
  a bijection for every ``n``; ``a`` is the integer coprime to ``n`` nearest
  ``n (sqrt(5) - 1) / 2``, so successive ranks land far apart (a golden-ratio
  Weyl sequence spreads them evenly).
- :func:`hot_blocks`: the hot region of a hot-spot workload, the first blocks
  of the working set (one contiguous region).
- :func:`harmonic`: ``H(n, theta)`` for the estimate's popularity bins.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np

__all__ = ["ZipfRanks", "harmonic", "hot_blocks", "multiplier", "run_starts", "scatter"]

_GOLDEN: Final = (math.sqrt(5.0) - 1.0) / 2.0
# H(n, theta) sums this many terms one by one, the rest by Euler-Maclaurin
_EXACT_TERMS: Final = 4096
_LIMB: Final = 16  # bits per limb of the modular multiplication (keeps every product below 2^64)
# |t| below which log1p(t) / t and expm1(t) / t are taken from their series
_SERIES_BELOW: Final = 1e-8
# below this many blocks, a r < n^2 < 2^64: the scatter multiplies once
_ONE_PRODUCT: Final = 1 << 32
MAX_BLOCKS: Final = 1 << 47
"""Largest block count :func:`scatter` handles (2^47 blocks of 4 KiB: 512 PiB)."""


def _log1p_over(t: np.ndarray) -> np.ndarray:
    """``log1p(t) / t``, 1 at ``t = 0`` (its series where the quotient would lose digits)."""
    small = np.abs(t) < _SERIES_BELOW
    # the usual case (theta not near 1): the quotient alone, the same values, half the passes
    if not small.any():
        return np.asarray(np.log1p(t) / t)
    safe = np.where(small, 1.0, t)
    return np.where(small, 1.0 - t / 2.0 + t * t / 3.0, np.log1p(safe) / safe)


def _expm1_over(t: np.ndarray) -> np.ndarray:
    """``expm1(t) / t``, 1 at ``t = 0``."""
    small = np.abs(t) < _SERIES_BELOW
    if not small.any():
        return np.asarray(np.expm1(t) / t)
    safe = np.where(small, 1.0, t)
    return np.where(small, 1.0 + t / 2.0 + t * t / 6.0, np.expm1(safe) / safe)


def _integral(x: np.ndarray, theta: float) -> np.ndarray:
    """``H(x) = integral from 1 to x of t^-theta dt``, ``(x^(1-theta) - 1) / (1 - theta)`` or
    ``log x`` at theta 1."""
    log_x = np.log(x)
    return np.asarray(_expm1_over((1.0 - theta) * log_x) * log_x)


def _integral_inverse(u: np.ndarray, theta: float) -> np.ndarray:
    """The inverse of :func:`_integral`."""
    return np.asarray(np.exp(_log1p_over((1.0 - theta) * u) * u))


def _scalar_integral(x: float, theta: float) -> float:
    return float(_integral(np.array([x]), theta)[0])


class ZipfRanks:
    """Draws ranks ``1..n`` with ``P(r) = r^-theta / H(n, theta)``, exactly, by rejection-inversion.

    The hat is the continuous ``h(x) = x^-theta``: a uniform ``u`` over
    ``[H(1.5) - 1, H(n + 0.5)]`` is inverted to ``x = H^-1(u)`` and rounded to
    ``k``; ``k`` is kept when ``u >= H(k + 0.5) - h(k)``. So each ``k`` is kept on
    a stretch of ``u`` of length exactly ``h(k)`` (for ``k = 1`` the whole
    stretch below ``H(1.5)``), which is the target law; ``h`` is convex, so the
    stretch fits in ``[H(k - 0.5), H(k + 0.5)]``. Rejected draws are redrawn as a
    block; at least 98% are kept for any n and theta in (0, 5].
    """

    def __init__(self, n: int, theta: float):
        if n < 1 or not 0 < theta <= 5:
            raise ValueError(
                f"a Zipf law needs n >= 1 and 0 < theta <= 5, got n={n}, theta={theta}"
            )
        self.n = n
        self.theta = theta
        self._low = _scalar_integral(1.5, theta) - 1.0
        self._high = _scalar_integral(n + 0.5, theta)

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` ranks (int64, 1-based)."""
        n, theta = float(self.n), self.theta
        k, kept = self._candidates(rng, count, n, theta)
        if kept.all():  # most batches: no draw rejected (at least 98% are kept)
            return k.astype(np.int64)
        ranks = np.empty(count, dtype=np.int64)
        pending = np.arange(count)
        while True:
            ranks[pending[kept]] = k[kept].astype(np.int64)
            pending = pending[~kept]
            if not pending.size:
                return ranks
            k, kept = self._candidates(rng, pending.size, n, theta)

    def _candidates(
        self, rng: np.random.Generator, count: int, n: float, theta: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """``count`` candidate ranks (as floats) and whether each is kept."""
        u = self._low + rng.random(count) * (self._high - self._low)
        x = _integral_inverse(u, theta)
        # NaN and infinity (from overflow) to n; x = exp(...) is never -inf
        x = np.where(x < np.inf, x, n)
        k = np.clip(np.floor(x + 0.5), 1.0, n)
        kept = (k == 1.0) | (u >= _integral(k + 0.5, theta) - k**-theta)
        return k, kept


def multiplier(n: int) -> int:
    """The ``a`` of :func:`scatter` for ``n`` blocks: coprime to ``n``, nearest ``n (sqrt(5) - 1)
    / 2`` (1 for n <= 2)."""
    if n <= 2:
        return 1
    centre = max(1, round(n * _GOLDEN))
    for step in range(n):
        for a in (centre - step, centre + step):
            if 0 < a < n and math.gcd(a, n) == 1:
                return a
    raise AssertionError("1 is coprime to every n")


def scatter(ranks: np.ndarray, n: int, a: int) -> np.ndarray:
    """Block of each 0-based rank: ``a r mod n`` (a bijection of ``0..n-1`` when ``gcd(a, n) = 1``).

    The product is formed limb by limb (16 bits of ``r`` at a time, Horner's
    rule mod ``n``), so no intermediate exceeds 2^64 for ``n`` up to 2^47.
    """
    if n > MAX_BLOCKS:
        raise ValueError(f"{n} blocks is more than the {MAX_BLOCKS} the scatter handles")
    r = ranks.astype(np.uint64)
    modulus, factor = np.uint64(n), np.uint64(a)
    # a, r < n <= 2^32: the product is below 2^64, so exact at once (the same blocks)
    if n <= _ONE_PRODUCT:
        return np.asarray((factor * r) % modulus).astype(np.int64)
    acc = np.zeros_like(r)
    mask = np.uint64((1 << _LIMB) - 1)
    for shift in (32, 16, 0):
        limb = (r >> np.uint64(shift)) & mask
        acc = ((acc << np.uint64(_LIMB)) % modulus + factor * limb) % modulus
    return acc.astype(np.int64)


def hot_blocks(n: int, hot_span_fraction: float) -> int:
    """Blocks of the hot region (the first ones of the working set): the fraction rounded,
    leaving each region a block."""
    if n < 2:
        return n
    return min(max(1, round(n * hot_span_fraction)), n - 1)


def run_starts(rng: np.random.Generator, count: int, mean_run: float) -> np.ndarray:
    """Which of ``count`` I/Os start a new run (True) rather than continue where the previous one
    ended.

    Each I/O continues with probability ``1 - 1 / mean_run``, so run lengths are
    geometric with mean ``mean_run`` (1: every I/O starts afresh).
    """
    if mean_run <= 1.0:
        return np.ones(count, dtype=bool)
    return np.asarray(rng.random(count) < 1.0 / mean_run)


def harmonic(n: float, theta: float) -> float:
    """``H(n, theta) = sum_{k=1}^{floor(n)} k^-theta``.

    The first 4096 terms are summed; the rest by Euler-Maclaurin (``sum_a^b f = integral + (f(a) +
    f(b)) / 2 + (f'(b) - f'(a)) / 12 - (f'''(b) - f'''(a)) / 720``), whose remainder is below 1e-20
    of the sum from there on. Values are kept (a pure function of ``n`` and ``theta``): the estimate
    asks for the same few bin edges for every VM of a group and every run of a sweep.
    """
    key = (n, theta)
    known = _HARMONIC.get(key)
    if known is not None:
        return known
    value = _harmonic(n, theta)
    if len(_HARMONIC) >= _HARMONIC_LIMIT:
        _HARMONIC.clear()
    _HARMONIC[key] = value
    return value


_HARMONIC: Final[dict[tuple[float, float], float]] = {}
_HARMONIC_LIMIT: Final = 1 << 16


def _harmonic(n: float, theta: float) -> float:
    top = math.floor(n)
    if top <= 0:
        return 0.0
    exact = min(top, _EXACT_TERMS)
    total = float(np.sum(np.arange(1, exact + 1, dtype=np.float64) ** -theta))
    if top <= exact:
        return total
    a, b = float(exact + 1), float(top)

    def d1(x: float) -> float:
        return -theta * math.pow(x, -theta - 1.0)

    def d3(x: float) -> float:
        return -theta * (theta + 1.0) * (theta + 2.0) * math.pow(x, -theta - 3.0)

    integral = _scalar_integral(b, theta) - _scalar_integral(a, theta)
    return (
        total
        + integral
        + (math.pow(a, -theta) + math.pow(b, -theta)) / 2.0
        + (d1(b) - d1(a)) / 12.0
        - (d3(b) - d3(a)) / 720.0
    )
