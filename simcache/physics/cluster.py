"""The physics of a scenario's devices and links: each derived quantity computed in one place.

Pure functions of the scenario's specs (the fields :mod:`simcache.physics.shapes` names) and of
plain numbers (no SimPy, no random draws): the simulator's components call them when they are built
(and the array per chunk, with the draws it made), and the analytic estimate calls the same
functions for its mean service times. Both then agree by construction, to the last bit where they
compute the same thing. The names of the link ports (:class:`PortName`), which both give their
utilization series under, are here for the same reason.

Times are in seconds, sizes in bytes, rates in bytes per second. Where a
function reads a spec, the spec's docstring in :mod:`simcache.spec` says
what each field means and docs/model.md why the model is so.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Final, Literal, cast

import numpy as np
from scipy.special import ndtri

from simcache.physics.shapes import ClusterShape, LinkShape, TierShape

__all__ = [
    "ACK_BYTES",
    "INTERFACE_RATES",
    "LOGNORMAL_POINTS",
    "MAX_CACHED_LINES",
    "Direction",
    "PortName",
    "Role",
    "ack_seconds",
    "clean_pool_depth",
    "compression_seconds",
    "framed_bytes",
    "gc_refill_rate",
    "lognormal_quantiles",
    "message_seconds",
    "peer_port",
    "pipe_rate",
    "read_cache_lines",
    "read_channel_seconds",
    "ring_peers",
    "tier_service_seconds",
    "tier_units",
    "vmotion_stream_port",
    "wire_seconds",
    "working_set_blocks",
    "write_channel_seconds",
    "write_gc_factor",
    "write_run_bytes",
]

ACK_BYTES: Final = 64  # payload of a replica's acknowledgement message


# --------------------------------------------------------------------------- tier


# Payload rate (bytes/s) of each host interface a tier can sit behind: the signalling rate after
# line coding. SATA: 8b/10b; SAS-3 12G: 8b/10b; SAS-4 "24G": 22.5 Gb/s with 128b/150b; PCIe 3.0 and
# later: 128b/130b per lane, at 8, 16 and 32 GT/s. Protocol framing (FIS, TLP headers) is left to
# the device's bandwidth.
INTERFACE_RATES: Final[dict[str, float]] = {
    "sata-3g": 3e9 * 8 / 10 / 8,  # SATA 2.x, 3 Gb/s, 8b/10b: 300 MB/s
    "sata-6g": 6e9 * 8 / 10 / 8,  # SATA 3.x, 6 Gb/s, 8b/10b: 600 MB/s
    "sas-12g": 12e9 * 8 / 10 / 8,  # SAS-3, 12 Gb/s, 8b/10b: 1,200 MB/s
    "sas-24g": 22.5e9 * 128 / 150 / 8,  # SAS-4, 22.5 Gb/s, 128b/150b: 2,400 MB/s
    **{
        f"pcie{generation}-x{lanes}": transfers * lanes * 128 / 130 / 8
        for generation, transfers in ((3, 8e9), (4, 16e9), (5, 32e9))
        for lanes in (1, 2, 4, 8, 16)
        # PCI-SIG base specifications 3.0/4.0/5.0: 8/16/32 GT/s per lane, 128b/130b (PCIe 3.0 x4:
        # 3.94 GB/s)
    },
    "memory": math.inf,  # a RAM tier: no interface between the copy and the memory
}


def pipe_rate(
    bandwidth: float, controller_bandwidth: float | None, interface: str | None = None
) -> float:
    """Rate (bytes/s) of a tier's shared transfer pipe: the device's read or write ``bandwidth``
    (bytes/s), capped by its host ``interface`` (:data:`INTERFACE_RATES`; ``None``: no cap) and
    by the host's HBA or controller, ``controller_bandwidth`` (bytes/s; ``None``: no cap)."""
    port = INTERFACE_RATES[interface] if interface is not None else math.inf
    return min(bandwidth, controller_bandwidth or math.inf, port)


def tier_units(spec: TierShape) -> int:
    """Parallel units of a tier: ``channels x dies`` (dies or independent planes on each
    channel)."""
    return spec.channels * spec.dies


LOGNORMAL_POINTS: Final = 16384
"""Intervals of the quantile table a lognormal unit-time factor is drawn from
(:func:`lognormal_quantiles`)."""


@functools.lru_cache(maxsize=32)
def lognormal_quantiles(cv: float) -> tuple[float, ...]:
    """Quantiles of a lognormal factor of mean 1 and coefficient of variation ``cv``, at ``i /
    LOGNORMAL_POINTS``.

    sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2, the p quantile exp(mu + sigma z_p). The two ends,
    whose quantiles are 0 and infinite, are taken at half a step in (p = 1 / 2N and 1 - 1 / 2N): a
    factor drawn by inverse transform with linear interpolation between the points (the tier's
    :meth:`~simcache.sim.components.tier.Tier.submit`) is the lognormal with the outer 1 / 2N of
    each tail folded onto its edge (z = +-4.17 for N = 16,384).
    """
    sigma = math.sqrt(math.log1p(cv * cv))
    mu = -0.5 * sigma * sigma
    points = np.arange(LOGNORMAL_POINTS + 1, dtype=np.float64) / LOGNORMAL_POINTS
    half = 0.5 / LOGNORMAL_POINTS
    points[0], points[-1] = half, 1.0 - half
    return tuple(np.exp(mu + sigma * ndtri(points)).tolist())


def write_run_bytes(access: str, sequential_run: float, mean_write: float) -> float:
    """Bytes a workload's writes arrive in, run by run (what :func:`write_gc_factor` charges by):
    endless for ``sequential`` access, else ``sequential_run`` writes of the mean write size
    ``mean_write``."""
    return math.inf if access == "sequential" else sequential_run * mean_write


def write_gc_factor(spec: TierShape, run_bytes: float) -> float:
    """Share of a write's bytes that a tier's clean pool is charged, for writes arriving in runs of
    ``run_bytes``.

    Garbage collection copies valid data out of the blocks it erases; a stream written in runs at
    least one ``erase_block`` long invalidates whole blocks, so they are erased without copies
    (amplification 1), while scattered small writes leave every block partly valid (the full
    ``write_amplification``). In between the amplification is taken linear in the share ``s = min(1,
    run_bytes / erase_block)``: ``a = 1 + (WA - 1)(1 - s)``. The pool refills at ``write_bandwidth /
    WA`` (:func:`gc_refill_rate`), so a write is charged ``a / WA`` of its bytes, which gives ``1 -
    s (1 - r / write_bandwidth)`` with the refill rate ``r``: sequential streams then sustain
    ``write_bandwidth``, random ones ``r``. Without an ``erase_block`` (or a cliff), every write
    pays the full amplification: 1.
    """
    refill = gc_refill_rate(spec)
    if spec.erase_block is None or refill == math.inf or refill >= spec.write_bandwidth:
        return 1.0
    share = min(1.0, run_bytes / spec.erase_block)
    return 1.0 - share * (1.0 - refill / spec.write_bandwidth)


def tier_service_seconds(latency: float, size: float, seconds_per_byte: float) -> float:
    """Time (s) one tier operation holds its channel when nothing else runs: ``latency + size x
    seconds_per_byte``.

    ``latency`` (s) is the device's read or write latency, ``size`` in bytes and
    ``seconds_per_byte`` the reciprocal of :func:`pipe_rate` (the transfer is ``size x
    seconds_per_byte``, not ``size / rate``: the simulator's tier multiplies by the reciprocal it
    keeps).
    """
    return latency + size * seconds_per_byte


def read_channel_seconds(spec: TierShape) -> float:
    """Seconds per byte a read holds its unit after its latency, moving its data from the die to the
    controller: ``1 / read_channel_bandwidth``, 0 if unset (the media time then does not depend on
    the size).

    A lone read of ``size`` bytes then takes ``command_overhead + 1 / read_iops_limit +
    read_latency + size x read_channel_seconds + size / pipe rate``.
    """
    rate = spec.read_channel_bandwidth
    return 1.0 / rate if rate else 0.0


def write_channel_seconds(spec: TierShape) -> float:
    """Seconds per byte a write holds its unit after its latency (``1 / write_channel_bandwidth``;
    0 if unset), as :func:`read_channel_seconds` for reads."""
    rate = spec.write_channel_bandwidth
    return 1.0 / rate if rate else 0.0


def gc_refill_rate(spec: TierShape) -> float:
    """Rate (bytes/s) at which garbage collection refills a tier's clean pool, and sustained writes
    run past the cliff.

    ``gc_rate`` if set; else ``write_bandwidth / write_amplification``: to free one byte, GC copies
    ``write_amplification - 1`` valid bytes, so each byte written past the cliff costs the device
    ``write_amplification`` bytes of program bandwidth (the host's byte and its share of the
    copies); infinite without a cliff.
    """
    if spec.gc_rate:
        return spec.gc_rate
    if spec.write_amplification and spec.clean_pool is not None:
        return spec.write_bandwidth / spec.write_amplification
    return math.inf


def clean_pool_depth(clean_pool: int | None) -> float:
    """Depth (bytes) of a tier's pool of clean (pre-erased) space: ``clean_pool``, infinite if
    unset (no cliff)."""
    return float(clean_pool) if clean_pool is not None else math.inf


def clean_pool_at_start(spec: TierShape) -> float:
    """Clean bytes a tier holds when the run starts: its pool's depth (:func:`clean_pool_depth`);
    fresh out of the box (``condition = "fresh"``) every block is erased, so the capacity, which
    garbage collection never refills above the depth."""
    depth = clean_pool_depth(spec.clean_pool)
    return max(depth, float(spec.capacity)) if spec.condition == "fresh" else depth


# --------------------------------------------------------------------------- links


def framed_bytes(spec: LinkShape, payload: float) -> tuple[float, int]:
    """Bytes on the wire and packet count for ``payload`` bytes sent on a link.

    The payload is cut into ``ceil(payload / (mtu - header_bytes))`` packets (at least one), each
    carrying ``header_bytes`` of headers and ``framing_bytes`` of wire framing (Ethernet preamble,
    FCS, gap).
    """
    per_packet = spec.mtu - spec.header_bytes
    packets = max(1, math.ceil(payload / per_packet))
    return payload + packets * (spec.header_bytes + spec.framing_bytes), packets


def wire_seconds(spec: LinkShape, payload: float) -> float:
    """Time (s) ``payload`` bytes, framed (:func:`framed_bytes`), take at the link's line rate
    (bytes/s), alone."""
    return framed_bytes(spec, payload)[0] / spec.bandwidth


def ack_seconds(spec: LinkShape) -> float:
    """Time (s) from a peer's tier write to its acknowledgement reaching the writer: one link
    latency plus an :data:`ACK_BYTES` message, framed, at the line rate (the acknowledgement's
    port is taken to be idle)."""
    return spec.latency + framed_bytes(spec, ACK_BYTES)[0] / spec.bandwidth


def message_seconds(spec: LinkShape) -> float:
    """Time (s) of a command or status message on the storage network (a read request, the array's
    acknowledgement of a write): one link latency, its few bytes neglected."""
    return spec.latency


def compression_seconds(size: float, throughput: float) -> float:
    """CPU time (s) to compress ``size`` bytes at ``throughput`` bytes/s before they are sent."""
    return size / throughput


# --------------------------------------------------------------------------- peers


def ring_peers(host: int, hosts: int) -> list[int]:
    """The other hosts in ring order from ``host``: ``host + 1, host + 2, ...`` modulo ``hosts``.

    A VM with N replicas sends them to the first N (ring peer selection); random selection draws
    from this list; a VM whose peer fails takes the next live host in it.
    """
    return [(host + i) % hosts for i in range(1, hosts)]


def peer_port(source: int, target: int, hosts: int, peer_links: int) -> int:
    """The number of the peer port a transfer from host ``source`` to host ``target`` leaves on (and
    arrives on).

    Per-destination hashing (an LACP layer-3 hash, or multipath per target) keeps every transfer
    between two hosts on one port: ``(d - 1) mod peer_links``, with ``d = (target - source) mod
    hosts`` the steps ``target`` is ahead of ``source`` around the ring.
    """
    return ((target - source) % hosts - 1) % peer_links


def vmotion_stream_port(stream: int, peer_links: int) -> int:
    """The peer port pair vMotion stream number ``stream`` uses: ``stream mod peer_links``
    (multi-NIC vMotion spreads its streams over the port pairs, whatever pair :func:`peer_port`
    hashes the hosts to)."""
    return stream % peer_links


# --------------------------------------------------------------------------- port names

Role = Literal["peer", "storage", "array", "fabric"]
Direction = Literal["tx", "rx"]


@dataclass(frozen=True)
class PortName:
    """Which port direction a :class:`simcache.sim.components.link.Port` (or an estimate's port
    station) is: its host, network role, number and direction.

    ``host``: the host's index (None for the array's port and the shared peer
    fabric); ``index``: the peer port's number when a host has several (None
    when it has one); ``direction``: ``tx`` (sending) or ``rx`` (receiving),
    None for the fabric, which carries both.
    """

    host: int | None
    role: Role
    index: int | None = None
    direction: Direction | None = None

    @property
    def port(self) -> str:
        """The port's name on its host: ``peer``, ``peer1``, ``storage`` (``array`` and ``peer``
        for the fabric)."""
        if self.role == "fabric":
            return "peer"
        return self.role if self.index is None else f"{self.role}{self.index}"

    @property
    def label(self) -> str:
        """The name in series columns (``util.<label>``): ``host0.peer.tx``, ``host0.peer1.rx``,
        ``array.rx``, ``peer.fabric``."""
        if self.role == "fabric":
            return "peer.fabric"
        if self.host is None:
            return f"{self.port}.{self.direction}"
        return f"host{self.host}.{self.port}.{self.direction}"

    def describe(self, profile: str | None = None) -> str:
        """In words, naming the link's ``profile`` if given: ``"the host0 1GbE peer link 1
        (sending)"``."""
        kind = f"{profile} " if profile else ""
        verb = "sending" if self.direction == "tx" else "receiving"
        if self.role == "fabric":
            return f"the shared {kind}peer segment"
        if self.role == "array":
            return f"the array's storage port ({verb})"
        which = "" if self.index is None else f" {self.index}"
        return f"the host{self.host} {kind}{self.role} link{which} ({verb})"

    @classmethod
    def parse(cls, label: str) -> PortName | None:
        """The port direction a :attr:`label` names; None if ``label`` names no port
        (``host0.tier``, ``array``)."""
        parts = label.split(".")
        if label == "peer.fabric":
            return cls(None, "fabric")
        if parts[-1] not in ("tx", "rx") or len(parts) not in (2, 3):
            return None
        direction = cast(Direction, parts[-1])
        if len(parts) == 2:
            return cls(None, "array", None, direction) if parts[0] == "array" else None
        host, port = parts[0].removeprefix("host"), parts[1]
        role = port.rstrip("0123456789")
        number = port[len(role) :]
        if not host.isdigit() or role not in ("peer", "storage"):
            return None
        name = cls(int(host), cast(Role, role), int(number) if number else None, direction)
        return name if name.label == label else None  # e.g. "host01.peer.tx" names no port


# --------------------------------------------------------------------------- workload and read
# cache


def working_set_blocks(working_set: int, block: int) -> int:
    """Aligned blocks of ``block`` bytes in a VM's ``working_set`` bytes (at least one)."""
    return max(1, working_set // block)


MAX_CACHED_LINES = 1 << 29
"""Lines one host's read cache may hold at once: the engine keeps positions in its recency log
(under twice the lines cached, plus one I/O's lines) in 4-byte integers, below 2^31. 2^29 lines
take about 10 GB of memory; ``spec/consistency.py`` refuses a scenario that could cache more."""


def read_cache_lines(spec: ClusterShape) -> int:
    """Lines a host's read cache holds (at least one): its ``cache.capacity`` bytes, by default
    the tier's ``capacity``, in lines of ``cache.line`` bytes."""
    capacity = spec.cache.capacity if spec.cache.capacity is not None else spec.tier.capacity
    return max(1, capacity // spec.cache.line)
