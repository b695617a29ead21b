"""The hosts' read caches: LRU under the independent reference model, with Che's approximation.

The model is in ``docs/estimate.md`` (Read cache).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

from simcache.estimate.theory.numeric import MAX_ITERATIONS, Floats, sums
from simcache.physics.cluster import read_cache_lines, working_set_blocks
from simcache.physics.locality import harmonic, hot_blocks
from simcache.workloads.generators import BLOCK

if TYPE_CHECKING:
    from simcache.estimate.layout import Layout
    from simcache.spec import Workload

__all__ = ["ReadCache"]


def _popularity_bins(
    workload: Workload, blocks: int, lines: float
) -> list[tuple[float, float, float]]:
    """(probability mass, lines, each line's probability per I/O) bins of a VM's ``blocks`` blocks
    in ``lines`` lines.

    Uniform and ``hotspot`` regions are contiguous: a region of ``k`` blocks with mass ``m`` fills
    ``k lines / blocks`` lines, each referenced with probability ``m blocks / (k lines)`` per I/O.
    ``zipf``: ranks 1 to 8 one by one, then bins doubling in width (and one edge at rank ``lines``),
    each with its exact mass ``(H(b) - H(a)) / H(n)``. The scatter spreads the ``lines`` hottest
    ranks one to a line (a golden-ratio rotation), so each heads a line whose other blocks are
    colder ranks of mean probability ``(1 - M) / (n - lines)`` (``M`` the heads' mass). A colder
    rank heads no line (0 lines): its I/Os hit as often as an average line of the VM is present.
    """
    per_line = blocks / lines
    if workload.access == "zipf" and blocks >= 2:
        theta = workload.zipf_theta
        heads = min(blocks, round(lines))
        edges = list(range(min(blocks, 8) + 1))
        while edges[-1] < blocks:
            edges.append(min(2 * edges[-1], blocks))
        edges = sorted({*edges, heads})
        cumulative = [harmonic(edge, theta) for edge in edges]
        total = cumulative[-1]
        cold = (1.0 - harmonic(heads, theta) / total) / (blocks - heads) if blocks > heads else 0.0
        bins: list[tuple[float, float, float]] = []
        for (a, ha), (b, hb) in itertools.pairwise(zip(edges, cumulative, strict=True)):
            mass = (hb - ha) / total
            bins.append(
                (mass, float(b - a), mass / (b - a) + (per_line - 1.0) * cold)
                if b <= heads
                else (mass, 0.0, 0.0)
            )
        return bins
    regions = [(1.0, float(blocks))]
    if workload.access == "hotspot" and blocks >= 2:
        assert workload.hot_io_fraction is not None and workload.hot_span_fraction is not None
        hot = hot_blocks(blocks, workload.hot_span_fraction)
        regions = [
            (workload.hot_io_fraction, float(hot)),
            (1.0 - workload.hot_io_fraction, float(blocks - hot)),
        ]
    return [(mass, count / per_line, mass / count * per_line) for mass, count in regions]


def _spans(pairs: list[tuple[int, float]], line: int) -> float:
    """Mean lines an I/O of the mix (size, probability) spans at a uniform 4 KiB-aligned
    position."""
    return sum(p * (1.0 + max(0.0, s - BLOCK) / line) for s, p in pairs)


def _run_gain(workload: Workload, pairs: list[tuple[int, float]], per_line: float) -> float:
    """Share of a VM's misses that sequential runs turn into hits.

    An I/O that continues a run (probability ``1 - 1 / sequential_run``) starts in the line the
    previous I/O ended in, which is present; it is a hit for sure when it stays in that line, which
    for ``s`` blocks at a uniform position in a line of ``m`` blocks happens with probability
    ``max(0, 1 - s / m)``. Any line it enters is taken to be present as often as a random I/O's;
    Che's time is left as without runs.
    """
    if workload.sequential_run <= 1.0 or workload.access == "sequential":
        return 0.0
    stays = sum(p * max(0.0, 1.0 - math.ceil(size / BLOCK) / per_line) for size, p in pairs)
    return (1.0 - 1.0 / workload.sequential_run) * stays


class ReadCache:
    """The hosts' read caches under Che's approximation, every chain's popularity bins as arrays.

    A line of a bin is referenced at ``rate_per_io`` times its chain's I/O rate
    (:func:`_popularity_bins`); sequential runs add hits (:func:`_run_gain`). Hosts without reads
    have no bins.
    """

    def __init__(self, c: Layout):
        scenario = c.scenario
        cache = scenario.cluster.cache
        line = cache.line
        per_line = line / BLOCK
        self.capacity = float(read_cache_lines(scenario.cluster))
        start, end = c.window
        # 3-point Gauss-Legendre
        self.times = np.array([[start + (end - start) * x] for x in (0.1127, 0.5, 0.8873)])
        # a warm cache starts in its steady state: every line as present as Che's time makes it
        if cache.warm:
            self.times = np.full_like(self.times, 1e30)
        self.weights = np.array([[5.0 / 18.0], [8.0 / 18.0], [5.0 / 18.0]])
        self.nominal = np.array([ch.nominal_rate for ch in c.chains], dtype=np.float64)
        self.hosts = c.hosts
        self.chains = len(c.chains)
        # (lines, rate per I/O, mass, lines a read spans) per bin: a read hits if all the lines it
        # spans are present, and every I/O (of the mix of all ops) refreshes the lines it spans.
        per_group: list[list[tuple[float, float, float, float]]] = []
        gains: list[float] = []
        for g, group in enumerate(scenario.groups):
            w = group.workload
            vms = group.vms_per_host
            spans = _spans(c.mixes[g].pairs, line)
            read_spans = _spans(c.read_mixes[g].pairs, line)
            blocks = working_set_blocks(w.working_set, BLOCK)
            lines = max(1.0, blocks / per_line)
            bins_of_group = _popularity_bins(w, blocks, lines)
            per_group.append(
                [
                    (vms * count, spans * rate / vms, mass, read_spans)
                    for mass, count, rate in bins_of_group
                ]
            )
            gains.append(_run_gain(w, list(c.read_mixes[g].pairs), per_line))
        # (host, chain, lines, rate per I/O, mass, read spans)
        bins: list[tuple[int, int, float, float, float, float]] = []
        for h in range(c.hosts):
            members = [i for i, ch in enumerate(c.chains) if ch.host == h]
            if any(c.chains[i].read_fraction > 0 for i in members):
                bins += [(h, i, *b) for i in members for b in per_group[c.chains[i].group]]
        self.host = np.array([b[0] for b in bins], dtype=np.intp)
        self.chain = np.array([b[1] for b in bins], dtype=np.intp)
        self.lines = np.array([b[2] for b in bins], dtype=np.float64)
        self.rate_per_io = np.array([b[3] for b in bins], dtype=np.float64)
        self.mass = np.array([b[4] for b in bins], dtype=np.float64)
        self.spans = np.array([b[5] for b in bins], dtype=np.float64)
        # zipf ranks that head no line: they hit as often as the chain's average line
        self.headless = self.lines == 0.0
        self.any_headless = bool(self.headless.any())
        self.chain_lines = sums(self.chain, self.lines, self.chains)
        self.reads = np.array([c.chains[b[1]].read_fraction > 0 for b in bins], dtype=bool)
        self.run_gain = np.array(
            [gains[ch.group] if ch.read_fraction > 0 else 0.0 for ch in c.chains], dtype=np.float64
        )
        self.any_runs = bool(self.run_gain.any())
        self.weighted_mass = self.weights * self.mass  # Gauss-Legendre weight x bin mass
        # A host evicts only if its chains' lines do not all fit.
        self.evicting = sums(self.host, self.lines, c.hosts) > self.capacity
        self.any_evicting = bool(self.evicting.any())

    def hit_ratios(self, rates: dict[int, float]) -> list[float]:
        """Hit probability of each chain's reads, averaged over the window (Gauss-Legendre, 3
        points).

        ``rates``: chain -> I/Os per s; open chains default to their rate, closed ones to customers
        / (think time + 1 ms) until a solution refines them. A line is present at ``t`` with
        probability ``1 - exp(-rate min(t, T_C))``; an I/O hits if all the lines it spans are
        present.
        """
        if not self.host.size:
            return [0.0] * self.chains
        chain_rates = self.nominal.copy()
        for chain, rate in rates.items():
            chain_rates[chain] = rate
        line_rates = chain_rates[self.chain] * self.rate_per_io
        horizon = np.minimum(self.times, self._che_times(line_rates)[self.host])
        present = 1.0 - np.exp(-line_rates * horizon)
        if self.any_headless:
            lined = np.maximum(self.chain_lines, 1e-300)
            average = np.array(
                [sums(self.chain, self.lines * row, self.chains) / lined for row in present]
            )
            present[:, self.headless] = average[:, self.chain[self.headless]]
        weight = np.add.reduce(self.weighted_mass * present**self.spans, axis=0)
        hits = sums(self.chain[self.reads], weight[self.reads], self.chains)
        if self.any_runs:
            hits = hits + self.run_gain * (1.0 - hits)
        return hits.tolist()  # type: ignore[no-any-return]

    def _che_times(self, line_rates: Floats) -> Floats:
        """Per host, Che's characteristic time (s): the expected number of lines referenced within
        it equals the capacity (infinite for a host that never fills).

        Newton's method from t = 0: the expected number referenced, ``sum lines (1 - exp(-rate
        t))``, is increasing and concave, so the iterates rise monotonically to the root.
        """
        hosts = self.hosts
        times = np.full(hosts, math.inf)
        if not self.any_evicting:
            return times
        reachable = sums(self.host, self.lines * (line_rates > 0), hosts) > self.capacity
        filling = self.evicting & reachable
        if not filling.any():
            return times
        t = np.zeros(hosts)
        weighted = self.lines * line_rates
        for _ in range(MAX_ITERATIONS):
            decay = np.exp(-line_rates * t[self.host])
            referenced = sums(self.host, self.lines * (1.0 - decay), hosts)
            slope = sums(self.host, weighted * decay, hosts)
            step = np.divide(
                self.capacity - referenced, slope, out=np.zeros(hosts), where=filling & (slope > 0)
            )
            t = t + step
            if (step <= 1e-13 * t).all() or (t > 1e12).any():
                break
        times[filling] = np.where(t[filling] > 1e12, math.inf, t[filling])
        return times
