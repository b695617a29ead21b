"""Che's approximation of an LRU cache's hit ratio, the theory the read-cache tests compare with.

An LRU cache of ``C`` items under independent references with probabilities ``p_i`` hits with
probability ``sum_i p_i (1 - exp(-p_i T))``, ``T`` the characteristic time solving
``sum_i (1 - exp(-p_i T)) = C`` (Che, Tung and Wang, IEEE JSAC 2002; asymptotically exact as the
cache and the catalogue grow: Fricker, Robert and Roberts, ITC 2012).
"""

from __future__ import annotations

import numpy as np


def che_hit_ratio(probabilities: np.ndarray, items: int) -> float:
    """Che's approximation of an LRU cache's hit ratio, ``T`` by bisection."""
    low, high = 0.0, 1.0
    while np.sum(1.0 - np.exp(-probabilities * high)) < items:
        high *= 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if np.sum(1.0 - np.exp(-probabilities * middle)) < items:
            low = middle
        else:
            high = middle
    return float(np.sum(probabilities * (1.0 - np.exp(-probabilities * 0.5 * (low + high)))))
