"""The hosts' read caches: LRU under the independent reference model, with Che's approximation.

The model is in ``docs/estimate.md`` (Read cache).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

from simcache.estimate.numeric import MAX_ITERATIONS, Floats, sums
from simcache.physics import read_cache_lines, working_set_blocks
from simcache.workload import BLOCK

if TYPE_CHECKING:
    from simcache.estimate.layout import Layout

__all__ = ["ReadCache"]


def _popularity_bins(access: str, theta: float, blocks: int) -> list[tuple[float, float]]:
    """(probability mass, number of blocks) bins of a VM's block popularity."""
    if access != "zipf" or blocks < 16:
        return [(1.0, float(blocks))]
    n = float(blocks)

    def cdf(rank: float) -> float:  # P(rank <= r) of the continuous inverse the workload uses
        if abs(theta - 1.0) < 1e-9:
            return math.log(rank + 1.0) / math.log(n + 1.0)
        return float(((rank + 1.0) ** (1.0 - theta) - 1.0) / ((n + 1.0) ** (1.0 - theta) - 1.0))

    edges = [0.0]
    edge = 1.0
    while edge < n:
        edges.append(edge)
        edge *= 4.0
    edges.append(n)
    return [(cdf(b) - cdf(a), b - a) for a, b in itertools.pairwise(edges) if b > a]


class ReadCache:
    """The hosts' read caches under Che's approximation, every chain's popularity bins as arrays.

    A line of a bin is referenced at ``rate_per_io`` times its chain's I/O rate (its hottest block's rate plus
    the mean of its other blocks'). Hosts without reads have no bins.
    """

    def __init__(self, c: Layout):
        scenario = c.scenario
        cache = scenario.cluster.cache
        line = cache.line
        per_line = line / BLOCK
        self.capacity = float(read_cache_lines(scenario.cluster))
        start, end = c.window
        self.times = np.array([[start + (end - start) * x] for x in (0.1127, 0.5, 0.8873)])  # 3-point Gauss-Legendre
        self.weights = np.array([[5.0 / 18.0], [8.0 / 18.0], [5.0 / 18.0]])
        self.nominal = np.array([ch.nominal_rate for ch in c.chains], dtype=np.float64)
        self.hosts = c.hosts
        self.chains = len(c.chains)
        per_group: list[list[tuple[float, float, float, float]]] = []  # (lines, rate per I/O, mass, spans) per bin
        for g, group in enumerate(scenario.groups):
            w = group.workload
            vms = group.vms_per_host
            spans = sum(p * (1.0 + max(0.0, s - BLOCK) / line) for s, p in c.mixes[g].pairs)
            blocks = working_set_blocks(w.working_set, BLOCK)
            lines = max(1.0, w.working_set / line)
            per_group.append(
                [
                    (vms * min(count, lines) * lines / blocks, spans * (mass / count + (per_line - 1.0) / blocks) / vms, mass, spans)
                    for mass, count in _popularity_bins(w.access, w.zipf_theta, blocks)
                ]
            )
        bins: list[tuple[int, int, float, float, float, float]] = []  # (host, chain, lines, rate per I/O, mass, spans)
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
        self.reads = np.array([c.chains[b[1]].read_fraction > 0 for b in bins], dtype=bool)
        self.weighted_mass = self.weights * self.mass  # Gauss-Legendre weight x bin mass
        # A host evicts only if its chains' lines do not all fit.
        self.evicting = sums(self.host, self.lines, c.hosts) > self.capacity
        self.any_evicting = bool(self.evicting.any())

    def hit_ratios(self, rates: dict[int, float]) -> list[float]:
        """Hit probability of each chain's reads, averaged over the window (Gauss-Legendre, 3 points).

        ``rates``: chain -> I/Os per s; open chains default to their rate, closed ones to
        customers / (think time + 1 ms) until a solution refines them. A line is present at ``t`` with
        probability ``1 - exp(-rate min(t, T_C))``; an I/O hits if all the lines it spans are present.
        """
        if not self.host.size:
            return [0.0] * self.chains
        chain_rates = self.nominal.copy()
        for chain, rate in rates.items():
            chain_rates[chain] = rate
        line_rates = chain_rates[self.chain] * self.rate_per_io
        horizon = np.minimum(self.times, self._che_times(line_rates)[self.host])
        present = 1.0 - np.exp(-line_rates * horizon)
        weight = np.add.reduce(self.weighted_mass * present**self.spans, axis=0)
        hits = sums(self.chain[self.reads], weight[self.reads], self.chains)
        return hits.tolist()  # type: ignore[no-any-return]

    def _che_times(self, line_rates: Floats) -> Floats:
        """Per host, Che's characteristic time (s): the expected number of lines referenced within it equals
        the capacity (infinite for a host that never fills).

        Newton's method from t = 0: the expected number referenced, ``sum lines (1 - exp(-rate t))``, is
        increasing and concave, so the iterates rise monotonically to the root.
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
            step = np.divide(self.capacity - referenced, slope, out=np.zeros(hosts), where=filling & (slope > 0))
            t = t + step
            if (step <= 1e-13 * t).all() or (t > 1e12).any():
                break
        times[filling] = np.where(t[filling] > 1e12, math.inf, t[filling])
        return times
