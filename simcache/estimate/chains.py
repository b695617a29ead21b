"""The scenario's groups as chains (one group's VMs on one host) and their I/O size mixes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simcache.physics.cluster import framed_bytes
from simcache.spec import LinkSpec, Scenario

__all__ = ["Chain", "SizeMix", "chains"]


class SizeMix:
    """A group's I/O size mix: moments and transfer times (s at line rate) of the framed sizes."""

    def __init__(
        self,
        workload: Any,
        peer: LinkSpec,
        storage: LinkSpec,
        storage_rate: float | None = None,
        write: bool | None = None,
    ):
        """``storage_rate``: bytes/s of a storage transfer, the slower of the storage link and
        the array's port (default: the storage link's line rate). ``write``: the mix of the
        writes (True) or of the reads (False), which differ when the workload has per-op mixes;
        of all I/Os when ``None``."""
        sizes, probabilities = workload.size_mix if write is None else workload.op_size_mix(write)
        pairs = list(zip(sizes, probabilities, strict=True))
        self.pairs = pairs
        self.size = sum(p * s for s, p in pairs)
        self.size_sq = sum(p * s * s for s, p in pairs)

        def seconds(link: LinkSpec, shrink: float = 1.0, rate: float | None = None) -> float:
            """Mean time (s) of the mix's sizes, times ``shrink``, framed, at ``rate`` (default
            the link's line rate)."""
            framed: float = sum(p * framed_bytes(link, s * shrink)[0] for s, p in pairs)
            return framed / (rate if rate is not None else link.bandwidth)

        self.storage_seconds = seconds(storage, rate=storage_rate)
        self.peer_seconds = seconds(peer)
        self.peer_compressed_seconds = seconds(peer, 1.0 - workload.compressibility)


@dataclass
class Chain:
    """One group's VMs on one host."""

    group: int
    host: int
    closed: bool
    customers: int  # closed: slots; open: VMs
    rate: float  # open: I/Os per s per VM while on
    think: float
    write_back: bool
    replicas: int
    read_fraction: float
    compressible: bool
    sequential: bool  # the group's access is sequential (destage batches coalesce its writes)
    vms: int  # VMs on the host

    @property
    def nominal_rate(self) -> float:
        """I/Os per s before any solution: open chains' rate, closed ones' customers / (think
        time + 1 ms)."""
        return self.customers / (self.think + 1e-3) if self.closed else self.rate * self.customers


def chains(scenario: Scenario) -> list[Chain]:
    """Every group's chains, group by group and host by host."""
    built = []
    compression = scenario.cluster.compression.mode != "off"
    for g, group in enumerate(scenario.groups):
        w = group.workload
        closed = w.mode == "closed"
        rate = 0.0 if closed else w.mean_rate
        for h in scenario.group_hosts(group):
            built.append(
                Chain(
                    group=g,
                    host=h,
                    closed=closed,
                    customers=group.vms_per_host * (w.workers * w.outstanding if closed else 1),
                    rate=rate,
                    think=w.think_time,
                    write_back=group.policy != "WT",
                    replicas=group.replicas,
                    read_fraction=w.read_fraction,
                    compressible=w.compressibility > 0 and compression,
                    sequential=w.access == "sequential",
                    vms=group.vms_per_host,
                )
            )
    return built
