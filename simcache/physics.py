"""The physics of a scenario's devices and links: each derived quantity computed in one place.

Pure functions of the scenario's specs and of plain numbers (no SimPy, no
random draws): the simulator's components call them when they are built (and
the array per chunk, with the draws it made), and the analytic estimate calls
the same functions for its mean service times. Both then agree by
construction, to the last bit where they compute the same thing. The names of
the link ports (:class:`PortName`), which both give their utilization series
under, are here for the same reason.

Times are in seconds, sizes in bytes, rates in bytes per second. Where a
function reads a spec, the spec's docstring in :mod:`simcache.scenario` says
what each field means and docs/architecture.md why the model is so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, cast

from simcache.scenario import ArraySpec, ClusterSpec, LinkSpec, TierSpec

__all__ = [
    "ACK_BYTES",
    "MEAN_SQRT_RANDOM_DISTANCE",
    "RAID_LAYOUT",
    "VAR_SQRT_RANDOM_DISTANCE",
    "Direction",
    "PortName",
    "Role",
    "ack_seconds",
    "cache_ack_seconds",
    "chunk_copies",
    "clean_pool_depth",
    "compression_seconds",
    "data_spindles",
    "framed_bytes",
    "gc_refill_rate",
    "mean_seek_seconds",
    "message_seconds",
    "peer_port",
    "pipe_rate",
    "read_cache_lines",
    "read_modify_write",
    "revolution_seconds",
    "ring_peers",
    "seek_coefficient",
    "seek_seconds",
    "seek_span",
    "sorted_seek_scale",
    "span_fraction",
    "spindle_op_seconds",
    "spindle_op_variance",
    "tier_service_seconds",
    "vmotion_stream_port",
    "wire_seconds",
    "working_set_blocks",
    "write_penalty",
]

ACK_BYTES = 64  # payload of a replica's acknowledgement message

# E[sqrt(|U1 - U2|)] for independent uniforms U1, U2 on [0, 1]: |U1 - U2| has density 2 (1 - x), so the mean is
# the integral of 2 sqrt(x) (1 - x) over [0, 1] = 2 (2/3 - 2/5) = 8/15.
MEAN_SQRT_RANDOM_DISTANCE = 8.0 / 15.0
# Var[sqrt(|U1 - U2|)] = E[|U1 - U2|] - (8/15)^2, with E[|U1 - U2|] = 1/3.
VAR_SQRT_RANDOM_DISTANCE = 1.0 / 3.0 - MEAN_SQRT_RANDOM_DISTANCE**2

# RAID level -> (spindles a chunk write touches, spindles of redundancy per stripe row; None: mirrored)
RAID_LAYOUT: dict[str, tuple[int, int | None]] = {
    "raid0": (1, 0),
    "raid1": (2, None),
    "raid10": (2, None),
    "raid5": (2, 1),
    "raid6": (3, 2),
}


# --------------------------------------------------------------------------- tier


def pipe_rate(bandwidth: float, controller_bandwidth: float | None) -> float:
    """Rate (bytes/s) of a tier's shared transfer pipe: the device's read or write ``bandwidth`` (bytes/s),
    capped by the host's ``controller_bandwidth`` (bytes/s; ``None``: no cap)."""
    return min(bandwidth, controller_bandwidth or math.inf)


def tier_service_seconds(latency: float, size: float, seconds_per_byte: float) -> float:
    """Time (s) one tier operation holds its channel when nothing else runs: ``latency + size x seconds_per_byte``.

    ``latency`` (s) is the device's read or write latency, ``size`` in bytes and ``seconds_per_byte`` the
    reciprocal of :func:`pipe_rate` (the transfer is ``size x seconds_per_byte``, not ``size / rate``:
    the simulator's tier multiplies by the reciprocal it keeps).
    """
    return latency + size * seconds_per_byte


def gc_refill_rate(spec: TierSpec) -> float:
    """Rate (bytes/s) at which garbage collection refills a tier's clean pool, and sustained writes run past the cliff.

    ``gc_rate`` if set; else ``write_bandwidth / write_amplification``: to free one byte, GC copies
    ``write_amplification - 1`` valid bytes, so each byte written past the cliff costs the device
    ``write_amplification`` bytes of program bandwidth (the host's byte and its share of the copies);
    infinite without a cliff.
    """
    if spec.gc_rate:
        return spec.gc_rate
    if spec.write_amplification and spec.clean_pool is not None:
        return spec.write_bandwidth / spec.write_amplification
    return math.inf


def clean_pool_depth(clean_pool: int | None) -> float:
    """Depth (bytes) of a tier's pool of clean (pre-erased) space: ``clean_pool``, infinite if unset (no cliff)."""
    return float(clean_pool) if clean_pool is not None else math.inf


# --------------------------------------------------------------------------- links


def framed_bytes(spec: LinkSpec, payload: float) -> tuple[float, int]:
    """Bytes on the wire and packet count for ``payload`` bytes sent on a link.

    The payload is cut into ``ceil(payload / (mtu - header_bytes))`` packets (at least one), each carrying
    ``header_bytes`` of headers and ``framing_bytes`` of wire framing (Ethernet preamble, FCS, gap).
    """
    per_packet = spec.mtu - spec.header_bytes
    packets = max(1, math.ceil(payload / per_packet))
    return payload + packets * (spec.header_bytes + spec.framing_bytes), packets


def wire_seconds(spec: LinkSpec, payload: float) -> float:
    """Time (s) ``payload`` bytes, framed (:func:`framed_bytes`), take at the link's line rate (bytes/s), alone."""
    return framed_bytes(spec, payload)[0] / spec.bandwidth


def ack_seconds(spec: LinkSpec) -> float:
    """Time (s) from a peer's tier write to its acknowledgement reaching the writer: one link latency plus an
    :data:`ACK_BYTES` message, framed, at the line rate (the acknowledgement's port is taken to be idle)."""
    return spec.latency + framed_bytes(spec, ACK_BYTES)[0] / spec.bandwidth


def message_seconds(spec: LinkSpec) -> float:
    """Time (s) of a command or status message on the storage network (a read request, the array's
    acknowledgement of a write): one link latency, its few bytes neglected."""
    return spec.latency


def compression_seconds(size: float, throughput: float) -> float:
    """CPU time (s) to compress ``size`` bytes at ``throughput`` bytes/s before they are sent."""
    return size / throughput


# --------------------------------------------------------------------------- peers


def ring_peers(host: int, hosts: int) -> list[int]:
    """The other hosts in ring order from ``host``: ``host + 1, host + 2, ...`` modulo ``hosts``.

    A VM with N replicas sends them to the first N (ring peer selection); random selection draws from
    this list; a VM whose peer fails takes the next live host in it.
    """
    return [(host + i) % hosts for i in range(1, hosts)]


def peer_port(source: int, target: int, hosts: int, peer_links: int) -> int:
    """The number of the peer port a transfer from host ``source`` to host ``target`` leaves on (and arrives on).

    Per-destination hashing (an LACP layer-3 hash, or multipath per target) keeps every transfer between
    two hosts on one port: ``(d - 1) mod peer_links``, with ``d = (target - source) mod hosts`` the steps
    ``target`` is ahead of ``source`` around the ring.
    """
    return ((target - source) % hosts - 1) % peer_links


def vmotion_stream_port(stream: int, peer_links: int) -> int:
    """The peer port pair vMotion stream number ``stream`` uses: ``stream mod peer_links`` (multi-NIC vMotion
    spreads its streams over the port pairs, whatever pair :func:`peer_port` hashes the hosts to)."""
    return stream % peer_links


# --------------------------------------------------------------------------- port names

Role = Literal["peer", "storage", "array", "fabric"]
Direction = Literal["tx", "rx"]


@dataclass(frozen=True)
class PortName:
    """Which port direction a :class:`simcache.model.link.Port` (or an estimate's port station) is: its host,
    network role, number and direction.

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
        """The port's name on its host: ``peer``, ``peer1``, ``storage`` (``array`` and ``peer`` for the fabric)."""
        if self.role == "fabric":
            return "peer"
        return self.role if self.index is None else f"{self.role}{self.index}"

    @property
    def label(self) -> str:
        """The name in series columns (``util.<label>``): ``host0.peer.tx``, ``host0.peer1.rx``, ``array.rx``, ``peer.fabric``."""
        if self.role == "fabric":
            return "peer.fabric"
        if self.host is None:
            return f"{self.port}.{self.direction}"
        return f"host{self.host}.{self.port}.{self.direction}"

    def describe(self, profile: str | None = None) -> str:
        """In words, naming the link's ``profile`` if given: ``"the host0 1GbE peer link 1 (sending)"``."""
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
        """The port direction a :attr:`label` names; None if ``label`` names no port (``host0.tier``, ``array``)."""
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


# --------------------------------------------------------------------------- array


def revolution_seconds(rpm: float) -> float:
    """Time (s) of one revolution of a drive turning at ``rpm`` revolutions per minute: ``60 / rpm``."""
    return 60.0 / rpm


def seek_coefficient(avg_seek: float, settle: float) -> float:
    """``k`` (s) of the seek law ``settle + k sqrt(x)`` (x: fraction of the full stroke), set so that a uniformly
    random seek over the full stroke (mean sqrt(x) = 8/15) takes the datasheet's ``avg_seek`` (s)."""
    return (avg_seek - settle) / MEAN_SQRT_RANDOM_DISTANCE


def seek_seconds(settle: float, seek_k: float, distance: float) -> float:
    """Time (s) of a seek over ``distance`` (fraction of the full stroke): ``settle + seek_k sqrt(distance)``,
    0 without movement."""
    return settle + seek_k * math.sqrt(distance) if distance > 0 else 0.0


def mean_seek_seconds(settle: float, seek_k: float, span: float) -> float:
    """Mean (s) of :func:`seek_seconds` over ``span x |U1 - U2|``, U1 and U2 uniform:
    ``settle + seek_k (8/15) sqrt(span)`` (the settle time is paid even by the rare zero-length seek)."""
    return settle + seek_k * MEAN_SQRT_RANDOM_DISTANCE * math.sqrt(span) if span > 0 else 0.0


def spindle_op_seconds(seek: float, rotation: float, transfer: float, revolution: float, read_modify_write: bool) -> float:
    """Time (s) a spindle spends on one chunk: ``seek + rotation + transfer`` (rotational latency ``rotation``,
    media ``transfer``), plus a ``revolution`` and a second transfer to write back in place after reading
    (RAID 5/6 read-modify-write). With the mean seek, half a ``revolution`` and the mean transfer, the mean."""
    service = seek + rotation + transfer
    if read_modify_write:
        service += revolution + transfer
    return service


def spindle_op_variance(seek_k: float, span: float, revolution: float) -> float:
    """Variance (s^2) of a chunk operation: the seek's, ``seek_k^2 span Var[sqrt(|U1 - U2|)]``, plus the
    rotational latency's, ``revolution^2 / 12`` (uniform over one revolution)."""
    return seek_k**2 * span * VAR_SQRT_RANDOM_DISTANCE + revolution**2 / 12.0


def data_spindles(raid: str, spindles: int) -> float:
    """Spindles' worth of usable capacity: n for RAID 0, n/2 mirrored, n - 1 for RAID 5, n - 2 for RAID 6."""
    copies, parity = RAID_LAYOUT[raid]
    return spindles / copies if parity is None else float(spindles - parity)


def span_fraction(spec: ArraySpec, data_bytes: int) -> float:
    """Fraction of each drive's stroke that ``data_bytes`` spans on the array's usable capacity (unclamped)."""
    return data_bytes / (spec.drive.capacity * data_spindles(spec.raid, spec.spindles))


def seek_span(fraction: float) -> float:
    """The stroke fraction random seeks range over: :func:`span_fraction` within [0, 1]."""
    return min(1.0, max(fraction, 0.0))


def sorted_seek_scale(runs: int) -> float:
    """Seek distance factor of a destage batch of ``runs`` runs written in sorted (elevator) order:
    ``1 / (runs + 1)``, the mean gap between ``runs`` sorted uniform points."""
    return 1.0 / (runs + 1)


def chunk_copies(raid: str, spindles: int) -> int:
    """Spindles one chunk write touches: 1 for RAID 0, 2 mirrored or RAID 5 (data and parity), 3 for RAID 6."""
    return min(RAID_LAYOUT[raid][0], spindles)


def read_modify_write(raid: str) -> bool:
    """Whether a chunk write reads before it writes (RAID 5 and 6 update parity in place)."""
    return raid in ("raid5", "raid6")


def cache_ack_seconds(spec: ArraySpec) -> float | None:
    """Time (s) the array's controller write cache takes to acknowledge a write it has room for
    (``cache_latency``); ``None`` without a controller cache (the write waits for its spindles)."""
    return spec.cache_latency if spec.controller_cache > 0 else None


def write_penalty(raid: str, spindles: int) -> int:
    """Back-end I/Os per front-end write of one chunk (1 for RAID 0, 2 for RAID 10, 4 for RAID 5, 6 for RAID 6)."""
    return chunk_copies(raid, spindles) * (2 if read_modify_write(raid) else 1)


# --------------------------------------------------------------------------- workload and read cache


def working_set_blocks(working_set: int, block: int) -> int:
    """Aligned blocks of ``block`` bytes in a VM's ``working_set`` bytes (at least one)."""
    return max(1, working_set // block)


def read_cache_lines(spec: ClusterSpec) -> int:
    """Lines a host's read cache holds (at least one): its ``cache.capacity`` bytes, by default the tier's
    ``capacity``, in lines of ``cache.line`` bytes."""
    capacity = spec.cache.capacity if spec.cache.capacity is not None else spec.tier.capacity
    return max(1, capacity // spec.cache.line)
