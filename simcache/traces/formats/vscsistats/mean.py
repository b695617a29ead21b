"""Values for a vscsiStats histogram's buckets that reproduce its printed mean.

A histogram counts values in buckets, and its summary lines give the values' ``min``, ``max``
and ``mean``. A bucket holds the values above the previous limit up to its own; the first one
starts at the min line, the last (overflow) one ends at the max line, and every one lies within
min..max (:func:`bucket_bounds`). :func:`place` gives each bucket one value at the same fraction
``t`` of the way from its lowest to its highest value: the count-weighted mean of those values
is linear in ``t``, so one ``t`` (closed form) makes it the printed mean, every value staying
inside its bucket. ``t = 1`` is every bucket's limit, ``t = 0`` the first value above the
previous limit. A printed mean beyond what the buckets allow (:func:`reach`: an inconsistent
file) is met as closely as they allow; :func:`matched` places and warns of it.

Used by :mod:`.vscsistats.sizes` for the I/O length size mixes (whole bytes) and by
:mod:`.vscsistats.disk` for the inter-arrival times' coefficient of variation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from simcache.traces.formats.vscsistats.sections import Histogram

MEAN_SLACK = 1.0
"""How far (in the histogram's unit) a mean line may lie beyond what its buckets allow and still
be theirs: vscsiStats prints the mean as a whole number."""


@dataclass(frozen=True)
class Placement:
    """One value per bucket, inside its bounds, and the weighted mean they give."""

    values: tuple[float, ...]
    """In the order of the bounds given."""
    fraction: float
    """``t``: 0 puts every bucket at its lowest value, 1 at its highest (its limit)."""
    mean: float
    """The weighted mean of ``values``."""


def bucket_bounds(
    histogram: Histogram,
    *,
    whole: bool,
    smallest: float = -math.inf,
) -> list[tuple[float, float]]:
    """(lowest, highest) value of each bucket of ``histogram``, in its order.

    A bucket holds the values above the previous limit up to its own: the first one from the min
    line, the overflow one up to the max line, each narrowed to min..max where that leaves it any
    room (a bucket that min..max misses keeps its own bounds). ``whole``: whole numbers only
    (the lowest is the first whole number above the previous limit). ``smallest`` bounds every
    lowest value from below (1 for I/O sizes).
    """
    lowest, highest = histogram.stats["min"], histogram.stats["max"]
    if whole:
        lowest, highest = math.ceil(lowest), math.floor(highest)
    bounds = []
    for lower, limit, _count in histogram.buckets():
        low = -math.inf if lower is None else (math.floor(lower) + 1 if whole else lower)
        high = math.inf if limit is None else (math.floor(limit) if whole else limit)
        low = max(low, smallest)
        if max(low, lowest) <= min(high, highest):
            low, high = max(low, lowest), min(high, highest)
        # Still open on one side (min or max line on the wrong side of the bucket): its one edge.
        low = high if math.isinf(low) else low
        high = low if math.isinf(high) or high < low else high
        bounds.append((low, high))
    return bounds


def reach(bounds: Sequence[tuple[float, float]], weights: Sequence[float]) -> tuple[float, float]:
    """The least and the most weighted mean the buckets allow: all lowest, all highest."""
    total = sum(weights)
    least = sum(w * low for w, (low, _) in zip(weights, bounds, strict=True)) / total
    most = sum(w * high for w, (_, high) in zip(weights, bounds, strict=True)) / total
    return least, most


def place(
    bounds: Sequence[tuple[float, float]],
    weights: Sequence[float],
    target: float,
    *,
    whole: bool,
) -> Placement:
    """Values inside ``bounds``, one ``t`` of the way up each, weighted mean ``target``.

    ``t`` is clipped to 0..1: a target beyond :func:`reach` gets the nearest mean the buckets allow.
    Buckets of one value each leave nothing to move (``t`` is then 1). ``whole``: each value rounded
    to the nearest whole number (bounds whole too), so the mean is within 0.5 of the target.
    """
    least, most = reach(bounds, weights)
    fraction = 1.0
    if most > least:
        fraction = min(max((target - least) / (most - least), 0.0), 1.0)
    values = [low + fraction * (high - low) for low, high in bounds]
    if whole:
        pairs = zip(values, bounds, strict=True)
        values = [min(max(float(round(v)), low), high) for v, (low, high) in pairs]
    total = sum(weights)
    mean = sum(w * v for w, v in zip(weights, values, strict=True)) / total
    return Placement(tuple(values), fraction, mean)


def matched(
    label: str,
    buckets: list[tuple[tuple[float, float], int]],
    target: float,
    notes: list[str],
    unit: str,
    use: str,
    *,
    weights: list[float] | None = None,
) -> Placement:
    """``buckets`` ((lowest, highest), count) placed so their mean is ``target`` (see
    :func:`place`): whole numbers for bytes, ``weights`` in place of the counts (as the
    mix writes them). A target the buckets cannot reach (by the counts, beyond the mean line's
    rounding) is warned about, ``use`` saying what takes the closest mean instead; ``label`` names
    the histogram in the warning (:func:`histogram_label`)."""
    bounds = [bound for bound, _ in buckets]
    counts = [float(count) for _, count in buckets]
    placement = place(bounds, counts if weights is None else weights, target, whole=unit == "B")
    least, most = reach(bounds, counts)
    if not least - MEAN_SLACK <= target <= most + MEAN_SLACK:
        notes.append(
            f"{label}: the mean line "
            f"says {target:,.6g} {unit}, but its buckets (with the min and max lines) allow "
            f"{least:,.6g} to {most:,.6g} {unit}; {use} takes the closest mean, "
            f"{placement.mean:,.6g} {unit}"
        )
    return placement


def histogram_label(path: Path, histogram: Histogram, where: str) -> str:
    """How a warning names ``histogram`` of the disk (or its reads or writes) ``where`` in
    ``path``: the file, the histogram's title and the line it starts on."""
    return f"{path.name}: '{histogram.title}' of {where} (line {histogram.line})"
