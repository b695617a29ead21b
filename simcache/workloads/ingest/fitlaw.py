"""The synthetic generator's predicted LRU hit ratios under an access law, and the law fitted to a
trace.

Split out of :mod:`simcache.workloads.ingest.fit` (which re-exports the public names): :class:`Law`,
the generator's block probabilities and Che's approximation with a finite
horizon (:func:`predicted_hit_ratios`), the working set that touches a footprint
(:func:`expected_footprint`, :func:`fitted_blocks`), and the least-squares fit of
uniform, Zipf and hotspot laws to a trace's read hit ratios (``_fit_access``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize, minimize_scalar

from simcache.physics.locality import harmonic, hot_blocks
from simcache.workloads.ingest.tracestats import LINE, TraceStats

__all__ = [
    "FIT_FRACTIONS",
    "WORKING_SET_BOUND",
    "Law",
    "expected_footprint",
    "fitted_blocks",
    "predicted_hit_ratios",
]

FIT_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
"""Cache sizes, as fractions of the footprint, at which the access pattern is fitted."""
WORKING_SET_BOUND = 1000
"""The most times its footprint :func:`fitted_blocks` makes a working set: a law that touches fewer
blocks than the trace did even there leaves the working set unidentified."""
SIMPLER_BY = 0.005
"""Uniform access is chosen when its hit ratios are within this (rms) of the best Zipf law's: a
nearly flat Zipf law (theta near 0) fits a uniform trace's noise a little better, and the simpler
law says the same."""


@dataclass(frozen=True)
class Law:
    """An access law of the generator: ``uniform``, ``zipf`` (``theta``) or ``hotspot``
    (``hot_io`` of the I/Os uniform over the first ``hot_span`` of the working set, the rest
    uniform over the remainder)."""

    access: str
    theta: float = 1.0
    hot_io: float = 0.0
    hot_span: float = 0.0
    hot_count: int = 0
    """While fitting: the hot region in blocks, whatever the working set (0: ``hot_span`` of it)."""

    def describe(self) -> str:
        if self.access == "zipf":
            return f"zipf theta {self.theta:.4g}"
        if self.access == "hotspot":
            return (
                f"hotspot: {self.hot_io:.4g} of the I/Os to {self.hot_span:.4g} of the working set"
            )
        return self.access


def _popularity(law: Law, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(probability of one block, number of blocks) per rank bin of the generator's law over
    ``blocks`` blocks."""
    if law.access == "hotspot" and blocks >= 2:
        # the generator's rounding
        hot = min(law.hot_count, blocks - 1) if law.hot_count else hot_blocks(blocks, law.hot_span)
        return np.array([law.hot_io / hot, (1.0 - law.hot_io) / (blocks - hot)]), np.array(
            [float(hot), float(blocks - hot)]
        )
    if law.access != "zipf":
        return np.array([1.0 / blocks]), np.array([float(blocks)])
    theta = law.theta
    n = float(blocks)
    edges = np.unique(
        np.concatenate(
            (np.arange(0, min(blocks, 64) + 1), np.geomspace(64, n, 400) if blocks > 64 else [])
        ).round()
    )
    # The generator's law is the exact discrete Zipf (simcache.physics.locality): ranks 1..k hold
    # H(k, theta) / H(n, theta).
    cdf = np.array(
        [harmonic(float(edge), theta) if edge > 0 else 0.0 for edge in edges]
    ) / harmonic(n, theta)
    mass, count = np.diff(cdf), np.diff(edges)
    keep = count > 0
    return mass[keep] / count[keep], count[keep]


def _line_rates(
    law: Law, blocks: int, sizes: dict[int, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[int, float]]:
    """(block probability, blocks, share of line references per line, background) per rank bin, and
    the mix of lines per I/O.

    A line is referenced by the I/Os that start on it and by those that start on the ``s - 1``
    blocks before it (the background, per I/O). Zipf ranks are scattered, so the blocks before a
    line are of any rank: the background is ``(mean span - 1) / blocks`` everywhere. Uniform and
    ``hotspot`` regions are contiguous, so they are the line's own region: ``(mean span - 1)`` times
    its block probability (edges neglected).
    """
    total = sum(sizes.values())
    span_mix: dict[int, float] = {}
    for size, weight in sizes.items():
        span = max(1, -(-int(size) // LINE))
        span_mix[span] = span_mix.get(span, 0.0) + weight / total
    mean_span = sum(s * p for s, p in span_mix.items())
    block_probability, count = _popularity(law, blocks)
    background = (mean_span - 1.0) * (
        np.full(len(count), 1.0 / blocks) if law.access == "zipf" else block_probability
    )
    rate = (block_probability + background) / mean_span
    return block_probability, count, rate, background, span_mix


def expected_footprint(law: Law, blocks: int, ios: int, sizes: dict[int, float]) -> float:
    """Distinct blocks the synthetic generator is expected to touch in ``ios`` I/Os (each block
    touched at its Poisson rate)."""
    _, count, rate, _, span_mix = _line_rates(law, blocks, sizes)
    horizon = ios * sum(s * p for s, p in span_mix.items())
    return float(np.sum(count * -np.expm1(-rate * horizon)))


def fitted_blocks(law: Law, footprint: int, ios: int, sizes: dict[int, float]) -> int:
    """The working set (blocks) over which the generator touches ``footprint`` distinct blocks in
    ``ios`` I/Os.

    A trace's footprint is what it touched, not what its law could touch: a
    Zipf law over exactly the footprint would touch fewer blocks in as many
    I/Os and make the tail hotter than it was. At most :data:`WORKING_SET_BOUND`
    times the footprint (a steep law may never touch as many blocks).
    """
    if expected_footprint(law, footprint, ios, sizes) >= footprint - 0.5:
        return footprint

    def short(log_blocks: float) -> float:
        return expected_footprint(law, round(math.exp(log_blocks)), ios, sizes) - footprint

    top = math.log(footprint * float(WORKING_SET_BOUND))
    if short(top) < 0:
        return round(math.exp(top))
    return max(footprint, round(math.exp(brentq(short, math.log(footprint), top, xtol=1e-4))))


def _present(rate: np.ndarray, characteristic: float, horizon: float) -> np.ndarray:
    """Mean over references t in [0, horizon] of 1 - exp(-rate min(t, characteristic)): Che's
    presence with cold starts."""
    absent_time = np.divide(
        -np.expm1(-rate * characteristic),
        rate,
        out=np.full(len(rate), characteristic),
        where=rate > 0,
    )
    present: np.ndarray = (
        1.0 - (absent_time + (horizon - characteristic) * np.exp(-rate * characteristic)) / horizon
    )
    return present


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(12)


def _covered(
    rate: np.ndarray,
    span: int,
    cover: float,
    mean_span: float,
    characteristic: float,
    horizon: float,
) -> np.ndarray:
    """Mean over references t in [0, horizon] of the chance that ``span`` adjacent lines of a
    contiguous region were all referenced within ``w = min(t, characteristic)``.

    The region's I/Os are a Boolean model on the line: each line is covered at ``rate`` (per line
    reference), so it is present with ``1 - exp(-rate w)``; I/Os end at ``rate / mean_span`` per
    line, and each end followed by an absent line opens a gap, ``(span - 1) (rate w / mean span)
    exp(-rate w)`` of them expected inside the span (taken as Poisson). Where the region is sparse
    that overstates the chance (the line present is most likely covered by one I/O, which may end
    inside the span): there one I/O must cover all ``span`` lines, which ``cover`` (lines per I/O,
    mean of ``max(0, t - span + 1)`` over the I/Os' spans ``t``) of every ``mean_span`` line
    references do. The two are blended by the line's presence ``1 - exp(-rate w)`` (within 0.03 of
    the generator's hit ratios on the vm-burst size mix, sparse or dense).
    """

    def at(w: np.ndarray) -> np.ndarray:
        x = rate[:, None] * w[None, :]
        boolean = -np.expm1(-x) * np.exp(-(span - 1) * x / mean_span * np.exp(-x))
        single = -np.expm1(-x * cover / mean_span)
        # Sparse (x small): one I/O covers the span; dense: the Boolean model. Weighted by the
        # line's presence.
        return np.asarray(np.maximum(single, single + (boolean - single) * -np.expm1(-x)))

    nodes = characteristic * (_NODES + 1.0) / 2.0
    rising = at(nodes) @ _WEIGHTS * characteristic / 2.0
    flat = at(np.array([characteristic]))[:, 0] * (horizon - characteristic)
    covered: np.ndarray = (rising + flat) / horizon
    return covered


def predicted_hit_ratios(
    law: Law,
    blocks: int,
    ios: int,
    sizes: dict[int, float],
    cache_lines: Sequence[int],
    hit_sizes: dict[int, float] | None = None,
) -> list[float]:
    """Hit ratio of ``ios`` I/Os of the synthetic generator (``law`` over ``blocks``, this size mix)
    at each cache size.

    ``hit_sizes``: the size mix of the I/Os whose hit ratio is wanted (the reads', when reads and
    writes have their own mixes); ``sizes`` (all I/Os, which refresh the cache) when ``None``.

    Che's approximation with a finite horizon, time counted in line
    references (``ios`` times the mean lines per I/O): the characteristic time
    fills the cache with lines at their reference rates. An I/O of ``s``
    lines starting at block ``b`` hits when an I/O at least as long started
    at ``b`` within the characteristic time (its lines are refreshed
    together, so they are present or absent together); the other I/Os'
    references to those lines add a background rate (:func:`_line_rates`),
    shared by the ``s`` lines (a heuristic: exact for ``s = 1``). A
    ``hotspot`` law is two uniform classes of blocks, hot and cold, each with
    its own block probability.

    The generator draws an I/O's position independently of its op and size,
    so its reads hit as its I/Os of the reads' sizes do: their predicted hit
    ratio (reads that hit, every I/O refreshing the cache) is this one over
    ``hit_sizes``, the all-I/O one when the ops share one mix.
    """
    block_probability, count, rate, background, span_mix = _line_rates(law, blocks, sizes)
    hit_spans = span_mix if hit_sizes is None else _line_rates(law, blocks, hit_sizes)[4]
    mean_span = sum(s * p for s, p in span_mix.items())
    horizon = ios * mean_span
    spans = sorted(span_mix)
    at_least = {s: sum(span_mix[t] for t in spans if t >= s) for s in {*spans, *hit_spans}}
    cover = {
        s: sum(span_mix[t] * (t - s + 1) for t in spans if t >= s) for s in {*spans, *hit_spans}
    }
    contiguous = law.access != "zipf"
    ratios = []
    for lines in cache_lines:

        def cached(t: float, lines: int = lines) -> float:
            return float(np.sum(count * -np.expm1(-rate * t))) - lines

        characteristic = (
            horizon if cached(horizon) <= 0 else brentq(cached, 0.0, horizon, xtol=1e-9 * horizon)
        )
        hit = 0.0
        for s, share in hit_spans.items():
            if contiguous:
                present = _covered(rate, s, cover[s], mean_span, characteristic, horizon)
            else:
                present = _present(
                    (block_probability * at_least[s] + background / s) / mean_span,
                    characteristic,
                    horizon,
                )
            hit += share * float(np.sum(count * block_probability * present))
        ratios.append(hit)
    return ratios


HOT_SPANS = tuple(float(x) for x in np.geomspace(1e-4, 0.5, 24))
"""Hot-region shares of the working set on the hotspot grid."""
HOT_IOS = tuple(float(x) for x in np.arange(0.05, 0.991, 0.05))
"""Hot shares of the I/Os on the hotspot grid (only those above the hot span are tried)."""


@dataclass
class _Fit:
    law: Law
    blocks: int
    error: float
    lines: list[int]
    target: list[float]
    errors: dict[str, float]
    """The best rms error of each law considered."""


def _fit_access(
    stats: TraceStats, sizes: dict[int, float], read_sizes: dict[int, float] | None = None
) -> _Fit:
    """The access law whose predicted hit ratios are nearest the trace's READ hit ratios (least
    squares).

    Laws: Zipf (theta on a grid of 0.05 refined by bounded Brent), hotspot (hot I/O share x hot span
    share on a grid, refined by bounded Nelder-Mead, hot I/O share above hot span share) and
    uniform, each over the working set that touches the trace's footprint (:func:`fitted_blocks`).
    Uniform is preferred within :data:`SIMPLER_BY` of the best of the others. The target is the
    trace's read hit ratio (reads that hit, every read and write refreshing the cache: what
    :func:`compare` reports, and what a read cache serves); a trace without reads is fitted on all
    its I/Os. ``read_sizes``: the reads' own size mix, when reads and writes have their own
    (:func:`predicted_hit_ratios`' ``hit_sizes``).
    """
    lines = sorted(set(stats.cache_lines(FIT_FRACTIONS)))
    target = np.array(stats.hit_ratios(lines, reads_only=stats.reads > 0))
    footprint = max(1, stats.footprint_lines)

    def error(law: Law) -> tuple[float, int]:
        blocks = fitted_blocks(law, footprint, stats.ios, sizes)
        predicted = np.array(
            predicted_hit_ratios(
                law, blocks, stats.ios, sizes, lines, read_sizes if stats.reads else None
            )
        )
        return float(np.sqrt(np.mean((predicted - target) ** 2))), blocks

    grid = np.arange(0.05, 5.0001, 0.05)
    errors = [error(Law("zipf", float(theta)))[0] for theta in grid]
    best = int(np.argmin(errors))
    low, high = float(grid[max(best - 1, 0)]), float(grid[min(best + 1, len(grid) - 1)])
    refined = minimize_scalar(
        lambda theta: error(Law("zipf", float(theta)))[0],
        bounds=(low, high),
        method="bounded",
        options={"xatol": 1e-4},
    )
    zipf = Law(
        "zipf", round(float(refined.x) if refined.fun < errors[best] else float(grid[best]), 4)
    )
    hotspot = _fit_hotspot(lambda law: error(law)[0], footprint)
    candidates = {law.access: (law, *error(law)) for law in (zipf, hotspot, Law("uniform"))}
    hot_law, hot_error, hot_blocks_ = candidates["hotspot"]
    candidates["hotspot"] = (_hot_span(hot_law, hot_blocks_), hot_error, hot_blocks_)
    best_law, best_error, best_blocks = min(
        (candidates["zipf"], candidates["hotspot"]), key=lambda c: c[1]
    )
    errors_by_law = {name: c[1] for name, c in candidates.items()}
    uniform = candidates["uniform"]
    if uniform[1] <= best_error + SIMPLER_BY:
        best_law, best_error, best_blocks = uniform
    return _Fit(best_law, best_blocks, best_error, lines, target.tolist(), errors_by_law)


def _fit_hotspot(error: Callable[[Law], float], footprint: int) -> Law:
    """The hotspot law of least ``error``: the best of a grid, refined by Nelder-Mead in (hot I/O
    share, log hot blocks).

    While fitting, the hot region is a number of blocks (:data:`HOT_SPANS` of the footprint), not a
    share of the working set: the working set that touches the footprint grows as the hot share of
    the I/Os grows, and a share of it would grow the hot region with it. The result's ``hot_span``
    is the region over the working set.
    """

    def law(hot_io: float, hot: float) -> Law:
        return Law("hotspot", hot_io=hot_io, hot_count=max(1, round(hot)))

    grid = [
        (error(law(io, span * footprint)), io, span * footprint)
        for span in HOT_SPANS
        for io in HOT_IOS
    ]
    _, io, hot = min(grid)
    # 1 block to half the footprint
    low, high = 0.0, max(math.log(max(1.0, HOT_SPANS[-1] * footprint)), 1e-6)

    def objective(x: np.ndarray) -> float:
        return error(law(float(x[0]), math.exp(float(x[1]))))

    refined = minimize(
        objective,
        np.array([io, math.log(max(hot, 1.0))]),
        method="Nelder-Mead",
        bounds=[(0.01, 0.995), (low, high)],
        options={"xatol": 1e-3, "fatol": 1e-5, "maxfev": 120},
    )
    if refined.fun < error(law(io, hot)):
        io, hot = float(refined.x[0]), math.exp(float(refined.x[1]))
    return law(round(io, 4), hot)


def _hot_span(law: Law, blocks: int) -> Law:
    """``law`` with its hot region as a share of ``blocks`` (4 significant digits), hot I/O share
    kept above it."""
    if law.access != "hotspot" or not law.hot_count:
        return law
    span = float(f"{min(law.hot_count, blocks - 1) / blocks:.4g}")
    span = min(max(span, 1.0 / blocks), 0.999)
    hot_io = max(law.hot_io, min(0.999, float(f"{span * 1.01:.4g}")))
    return Law("hotspot", hot_io=hot_io, hot_span=span)
