"""The size mixes of :mod:`.vscsistats`: an I/O length histogram becomes a workload's ``sizes``
(or ``read_sizes`` and ``write_sizes``), one whole-byte size inside each bucket, placed so the
mix's mean is the histogram's mean line.

How the sizes are placed, and what the facts say of each mix, is described in :mod:`.vscsistats`
under "Sizes"; the placement itself is :mod:`.vscsistats.mean`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from simcache.base.units import parse_size
from simcache.traces.formats.vscsistats.mean import bucket_bounds, histogram_label, matched, reach
from simcache.traces.formats.vscsistats.sections import Histogram, vscsi_error

__all__ = ["size_fields", "size_key"]


def size_key(nbytes: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    return f"{nbytes}B"


def _weight(count: int, total: int) -> float:
    return float(f"{count / total:.6g}")


@dataclass(frozen=True)
class _Mix:
    """A size mix and how its sizes were placed in their buckets."""

    sizes: dict[str, float]
    mean: float
    """Bytes: the mix's mean (its weights as written)."""
    target: float
    """Bytes: the mean it was placed to reach (the mean line, over the I/Os with data)."""
    fraction: float
    """How far up its bucket each size is (0 its lowest, 1 its limit)."""
    at_limits: float
    """Bytes: the mean with each size at the top of its bucket (limit; the last: the max line)."""

    def text(self, label: str) -> str:
        return (
            f"{label} {self.mean:,.1f} B, mean line {self.target:,.6g} B (sizes t = "
            f"{self.fraction:.3g} of the way up their buckets; "
            f"at their tops {self.at_limits:,.1f} B)"
        )


def _sizes(path: Path, lengths: Histogram, where: str, notes: list[str]) -> _Mix:
    """The size mix of an I/O length histogram: a whole-byte size inside each bucket, placed so the
    mix's mean is the mean line (within half a byte; see :mod:`.vscsistats.mean`)."""
    bounds = bucket_bounds(lengths, whole=True, smallest=1)
    data = [
        (bound, count)
        for (_lower, limit, count), bound in zip(lengths.buckets(), bounds, strict=True)
        if count > 0 and (limit is None or limit > 0)
    ]
    total = sum(count for _, count in data)
    zero = sum(lengths.counts) - total
    if zero:
        notes.append(
            f"{where}: {zero:,} commands of length 0 (not reads or writes of data) are left out "
            "of the size mix (its mean: the mean line's bytes over the other commands)"
        )
    if not data:
        raise vscsi_error(
            path,
            lengths.line,
            lengths.title,
            "no bucket counts an I/O with data: no size mix to model",
        )
    weights = [_weight(count, total) for _, count in data]
    target = lengths.mean * (total + zero) / total  # commands of length 0 count in the mean line
    label = histogram_label(path, lengths, where)
    placement = matched(label, data, target, notes, "B", "the size mix", weights=weights)
    mix: dict[str, float] = {}
    for weight, size in zip(weights, placement.values, strict=True):
        key = size_key(int(size))
        mix[key] = mix.get(key, 0.0) + weight
    over = lengths.counts[-1] if lengths.overflow else 0
    if over:
        above, largest = size_key(int(lengths.limits[-2])), size_key(int(placement.values[-1]))
        notes.append(
            f"{where}: {over:,} I/Os are larger than {above} (the overflow bucket); modelled as "
            f"{largest} (placed up to the max line, {lengths.stats['max']:,.0f} B, with the other "
            "buckets)"
        )
    at_limits = reach([bound for bound, _ in data], weights)[1]
    return _Mix(mix, placement.mean, target, placement.fraction, at_limits)


def size_fields(
    path: Path,
    hist: Mapping[tuple[str, str], Histogram],
    where: str,
    notes: list[str],
    both_ops: bool,
) -> tuple[dict[str, dict[str, float]], str]:
    """(``sizes``, or ``read_sizes`` and ``write_sizes`` when the Read and Write histograms' mixes
    differ; how, with each mix's mean against its mean line, in words)."""
    if both_ops:
        op_notes: list[str] = []
        read = _sizes(path, hist["length", "read"], f"{where} reads", op_notes)
        write = _sizes(path, hist["length", "write"], f"{where} writes", op_notes)
        if _shares(read.sizes) != _shares(write.sizes):
            notes += op_notes
            means = read.text("mean read") + "; " + write.text("mean write")
            how = f"read and write mixes of the Read and Write histograms: {means}"
            return {"read_sizes": read.sizes, "write_sizes": write.sizes}, how
    mix = _sizes(path, hist["length", "any"], where, notes)
    how = "one mix for reads and writes, of the all-commands histogram: " + mix.text("mean")
    lines = f"{hist['length', 'read'].mean:,.0f} B and {hist['length', 'write'].mean:,.0f} B"
    return {"sizes": mix.sizes}, f"{how}; the Read and Write histograms' mean lines {lines}"


def _shares(mix: Mapping[str, float]) -> dict[int, float]:
    """A size mix by bytes, weights as shares of 1 (6 significant digits): mixes that differ only
    in rounding are one."""
    total = sum(mix.values())
    return {parse_size(size): float(f"{weight / total:.6g}") for size, weight in mix.items()}
