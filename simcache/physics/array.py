"""The physics of the backing array as a RAID set: where a RAID level puts each stripe unit, what
one chunk write costs in back-end I/Os, and what a failed spindle or a rebuild costs the survivors.

Pure functions of the array's specs and of plain numbers, as in :mod:`simcache.physics.cluster`
(tiers, links, peers): the array (:mod:`simcache.sim.components.array`) calls them when it is built
and per chunk, and the analytic estimate for its mean service times, so both agree by
construction. Each drive's own physics (its seek curve, zones and queue order) is
:mod:`simcache.physics.drive`. docs/model.md says why the array is modelled so.
"""

from __future__ import annotations

from typing import Final

from simcache.physics.shapes import ArrayShape

__all__ = [
    "RAID_LAYOUT",
    "StripeLayout",
    "cache_ack_seconds",
    "chunk_copies",
    "data_spindles",
    "degraded_factors",
    "read_modify_write",
    "rebuild_share",
    "span_fraction",
    "stripe_unit_spindles",
    "stripe_width",
    "write_penalty",
]

# RAID level -> (spindles a chunk write touches, spindles of redundancy per stripe row; None:
# mirrored)
RAID_LAYOUT: Final[dict[str, tuple[int, int | None]]] = {
    "raid0": (1, 0),
    "raid1": (2, None),
    "raid10": (2, None),
    "raid5": (2, 1),
    "raid6": (3, 2),
}


def data_spindles(raid: str, spindles: int) -> float:
    """Spindles' worth of usable capacity: n for RAID 0, n/2 mirrored, n - 1 for RAID 5, n - 2
    for RAID 6."""
    copies, parity = RAID_LAYOUT[raid]
    return spindles / copies if parity is None else float(spindles - parity)


def span_fraction(spec: ArrayShape, data_bytes: int) -> float:
    """Fraction of each drive's stroke that ``data_bytes`` spans on the array's usable capacity
    (unclamped)."""
    return data_bytes / (spec.drive.capacity * data_spindles(spec.raid, spec.spindles))


def stripe_width(raid: str, spindles: int) -> int:
    """Data stripe units in one stripe row: n for RAID 0, n // 2 mirrored pairs (an odd spindle
    out is a spare), n - 1 for RAID 5, n - 2 for RAID 6."""
    copies, parity = RAID_LAYOUT[raid]
    return spindles // copies if parity is None else spindles - parity


def stripe_unit_spindles(raid: str, spindles: int, unit: int) -> tuple[int, tuple[int, ...]]:
    """Where array stripe unit number ``unit`` lives: (its stripe row, the spindles holding it).

    The row is the unit's position on each of those spindles (row x stripe bytes from the start of
    the stroke). Spindles: the data spindle first, then its mirror or parity spindles. Consecutive
    units go to consecutive spindles (pairs). RAID 0: spindle ``unit mod n``. Mirrored: pair ``j =
    unit mod (n // 2)``, spindles ``j`` and ``j + n // 2``. RAID 5 and 6 rotate parity
    left-symmetrically: row ``r`` has its P parity on spindle ``p = n - 1 - (r mod n)``, Q (RAID 6)
    on ``p + 1``, and its data from the next spindle on.
    """
    return StripeLayout(raid, spindles).unit_spindles(unit)


class StripeLayout:
    """:func:`stripe_unit_spindles` for one array, its RAID level's figures looked up once (the
    array asks for every chunk it serves: a lookup of the level by name per chunk cost 1% of a
    run's instructions)."""

    __slots__ = ("_copies", "_parity", "_spindles", "_width")

    def __init__(self, raid: str, spindles: int):
        copies, parity = RAID_LAYOUT[raid]
        self._spindles = spindles
        self._width = stripe_width(raid, spindles)
        self._copies = copies
        self._parity = -1 if parity is None else parity  # -1: mirrored (no parity)

    def unit_spindles(self, unit: int) -> tuple[int, tuple[int, ...]]:
        """(row, spindles) of stripe unit ``unit``: see :func:`stripe_unit_spindles`."""
        width = self._width
        spindles = self._spindles
        row = unit // width
        k = unit % width
        parity = self._parity
        if parity < 0:
            return row, (k, k + width) if self._copies > 1 and spindles > 1 else (k,)
        if parity == 0:
            return row, (k,)
        p = spindles - 1 - row % spindles
        redundancy = tuple((p + i) % spindles for i in range(parity))
        return row, ((p + parity + k) % spindles, *redundancy)


def chunk_copies(raid: str, spindles: int) -> int:
    """Spindles one chunk write touches: 1 for RAID 0, 2 mirrored or RAID 5 (data and parity), 3
    for RAID 6."""
    return min(RAID_LAYOUT[raid][0], spindles)


def read_modify_write(raid: str) -> bool:
    """Whether a chunk write reads before it writes (RAID 5 and 6 update parity in place)."""
    return raid in ("raid5", "raid6")


def degraded_factors(raid: str, spindles: int) -> tuple[float, float]:
    """(read, read-modify-write) factors on the service time of each surviving spindle's operations
    while one spindle of ``n = spindles`` has failed: the back-end operations per front-end chunk,
    spread over the ``n - 1`` survivors, over those of the healthy array, spread over ``n``. Chunks
    lie evenly on all spindles (rotating parity, striped pairs), so a front-end chunk's data, parity
    or copy is on the failed one with probability 1/n each.

    - RAID 5 read: 1 operation, or n - 1 for a chunk on the failed spindle (the other data and the
      parity): ``((n-1)/n + (n-1)/n) / (n-1)`` over ``1/n``: **2**. Read-modify-write: 4 operations,
      n - 1 when the data spindle failed (read the other n - 2 data chunks, write parity), 1 when
      the parity spindle failed (write the data): ``((n-2) 4 + (n-1) + 1) / n / (n-1)`` over
      ``4/n``: **(5n - 8) / (4 (n - 1))** (1 for n = 4).
    - RAID 6 read: n - 2 for a lost chunk (the other n - 3 data and P): **(2n - 3) / (n - 1)**.
      Read-modify- write: 6, n - 1 when the data spindle failed (read n - 3 data, write P and Q), 4
      when P or Q did: ``((n-3) 6 + (n-1) + 8) / n / (n-1)`` over ``6/n``: **(7n - 11) / (6 (n -
      1))**.
    - RAID 1/10 (m = 2 (n // 2) mirrored spindles): a read goes to the survivor of its pair, the
      same operations over m - 1 spindles: **m / (m - 1)** (the mean; the failed spindle's partner
      takes twice its share, a hot spot the mean does not show). Writes lose the failed copy's
      operation: ``(2 - 2/m) / (m-1)`` over ``2/m``: 1.
    - Plain writes (mirrored copies, whole parity rows) keep one operation per surviving spindle: 1.

    RAID 0 has no redundancy: a failed spindle loses the array (ValueError).
    """
    n = spindles
    if raid == "raid5":
        return 2.0, (5 * n - 8) / (4 * (n - 1))
    if raid == "raid6":
        return (2 * n - 3) / (n - 1), (7 * n - 11) / (6 * (n - 1))
    if raid in ("raid1", "raid10"):
        m = 2 * (n // 2)
        return m / (m - 1), 1.0
    raise ValueError(f"{raid} has no redundancy to run degraded on")


def rebuild_share(raid: str, spindles: int, rebuild_rate: float, media_rate: float) -> float:
    """The share of each surviving spindle's time a rebuild writing the spare at ``rebuild_rate``
    (B/s) takes.

    RAID 5/6 reconstruct each row from every survivor: each reads ``rebuild_rate``, sequentially (no
    seek), a share ``rebuild_rate / media_rate``. Mirrored arrays copy from the failed spindle's
    partner alone; spread over the m - 1 survivors as the mean, ``rebuild_rate / (media_rate (m -
    1))``. The spare's writes take the spare's time, not the survivors'. Front-end operations get
    the rest: their service times scale by ``1 / (1 - share)``.
    """
    if raid in ("raid1", "raid10"):
        return rebuild_rate / (media_rate * (2 * (spindles // 2) - 1))
    return rebuild_rate / media_rate


def cache_ack_seconds(spec: ArrayShape) -> float | None:
    """Time (s) the array's controller write cache takes to acknowledge a write it has room for
    (``cache_latency``); ``None`` without a controller cache (the write waits for its spindles)."""
    return spec.cache_latency if spec.controller_cache > 0 else None


def write_penalty(raid: str, spindles: int) -> int:
    """Back-end I/Os per front-end write of one chunk (1 for RAID 0, 2 for RAID 10, 4 for RAID 5,
    6 for RAID 6)."""
    return chunk_copies(raid, spindles) * (2 if read_modify_write(raid) else 1)
