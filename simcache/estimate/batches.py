"""Destage batches: how many bytes and contiguous runs a host's flushers take per batch, and a full
batch's cost.

The batching rules are in ``docs/estimate.md`` (Destager).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simcache.estimate.chains import Chain, SizeMix
from simcache.estimate.services import NO_STREAMING, ServiceTimes, Streaming
from simcache.estimate.theory.queueing import expected_max_normal, waiting_probability
from simcache.physics.cluster import message_seconds
from simcache.spec import DestagerSpec

__all__ = ["DestageBatches", "FullBatch"]


@dataclass(frozen=True)
class FullBatch:
    """A host's destage batch with a backlog, and what it costs (see
    :func:`simcache.estimate.drain.drains`)."""

    size: float  # bytes
    wire: float  # s on the storage link at line rate
    spindle_demand: float  # spindle-seconds per spindle
    delays: float  # s off the queues: tier read, link latencies, wait for the most loaded spindle
    array_per_byte: float  # spindle-seconds per byte, per spindle


class DestageBatches:
    """Each host's destage batches, remembered per host write mix (hosts with the same mix share
    them).

    ``destager``: the cluster's destager; ``services``: the scenario's service times.
    """

    def __init__(
        self,
        hosts: int,
        chains: list[Chain],
        mixes: list[SizeMix],
        destager: DestagerSpec,
        services: ServiceTimes,
    ):
        self.chains = chains
        self.mixes = mixes
        self.destager = destager
        self.services = services
        # Per host: (mean write bytes, share of random writes, VMs writing sequentially).
        self.write_mix = [self._host_write_mix(h) for h in range(hosts)]
        self._unmoved = [self._host_unmoved(h) for h in range(hosts)]
        self._shapes: dict[
            tuple[tuple[float, float, float], Streaming, float], tuple[float, int]
        ] = {}
        self._full_batches: dict[tuple[tuple[float, float, float], Streaming], FullBatch] = {}

    def _host_write_mix(self, host: int) -> tuple[float, float, float]:
        """(mean write bytes, share of random writes, VMs writing sequentially) of a host's
        write-back writes.

        Chains are weighted by their nominal write rate (closed chains by customers / (think + 1
        ms)).
        """
        weights = []
        for ch in self.chains:
            if ch.host == host and ch.write_back and ch.read_fraction < 1.0:
                weights.append((ch, ch.nominal_rate * (1.0 - ch.read_fraction)))
        total = sum(w for _, w in weights)
        if total <= 0:
            return 1.0, 1.0, 0.0
        size = sum(self.mixes[ch.group].size * w for ch, w in weights) / total
        sequential = [(ch, w) for ch, w in weights if ch.sequential]
        random_share = 1.0 - sum(w for _, w in sequential) / total
        vms = float(sum(ch.vms for ch, _ in sequential))
        return size, random_share, vms

    def unmoved(self, host: int) -> Streaming:
        """The shares of a host's destaged runs from sequentially writing VMs whose spindle head
        nothing else moved since their last run, and of those whose spindle is still busy with it
        (:meth:`ServiceTimes.head_unmoved` at the VMs' nominal rates), weighted by writes."""
        return self._unmoved[host]

    def _host_unmoved(self, host: int) -> Streaming:
        if self.destager.order == "hash":
            # blocks leave in hash order: no destaged run starts where the head is
            return NO_STREAMING
        # every I/O may reach the array (errs towards seeking)
        array_rate = sum(ch.nominal_rate for ch in self.chains)
        total = unmoved = busy = 0.0
        for ch in self.chains:
            if ch.host == host and ch.write_back and ch.read_fraction < 1.0:
                writes = ch.nominal_rate * (1.0 - ch.read_fraction)
                total += writes
                if ch.sequential:
                    at_head, on_the_fly = self.services.head_unmoved(
                        ch.nominal_rate / ch.vms, array_rate
                    )
                    unmoved += writes * at_head
                    busy += writes * on_the_fly
        return (unmoved / total, busy / total) if total > 0 else NO_STREAMING

    def shape(self, host: int, byte_rate: float, backlogged: bool) -> tuple[float, int]:
        """(mean batch bytes, contiguous runs per batch) of a host's destaging at ``byte_rate``
        bytes/s.

        With a backlog every batch is full. Otherwise a write gets a batch of its own unless all
        flushers are busy; then a freed flusher takes what arrived in ``cycle / concurrency``.
        Remembered per (write mix, rate): a solution asks for the same shape several times, and
        alike hosts share them.
        """
        if backlogged or not math.isfinite(byte_rate):
            byte_rate = math.inf
        # hosts with the same write mix share their shapes
        key = (self.write_mix[host], self._unmoved[host], byte_rate)
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = self._shape(
                self.write_mix[host], self._unmoved[host], byte_rate
            )
        return shape

    def _shape(
        self, mix: tuple[float, float, float], unmoved: Streaming, byte_rate: float
    ) -> tuple[float, int]:
        size, random_share, sequential_vms = mix
        spec = self.destager
        largest = max(1.0, spec.max_batch / size)
        if not math.isfinite(byte_rate):
            writes = largest
        else:
            write_rate = byte_rate / size
            writes = 1.0
            services = self.services
            storage = services.storage_link
            for _ in range(6):
                batch = writes * size
                runs = self.runs(writes, random_share, sequential_vms)
                operations, mean, _ = services.batch_request(batch, runs, unmoved)
                array_time = (
                    services.cache_ack
                    if services.cache_ack is not None
                    else mean * max(1.0, operations / services.spindles)
                )
                cycle = (
                    services.destage_read_latency(batch)
                    + batch * services.read_channel
                    + batch / services.read_rate
                    + services.storage_seconds(batch)
                    + 2.0 * message_seconds(storage)
                    + array_time
                )
                busy = write_rate / writes * cycle / spec.concurrency
                if busy >= 1.0:
                    writes = largest
                    break
                waiting = waiting_probability(busy, spec.concurrency)
                writes = min(
                    largest,
                    (1.0 - waiting) + waiting * max(1.0, write_rate * cycle / spec.concurrency),
                )
        batch = writes * size
        # A write larger than max_batch goes to the array in max_batch pieces, each its own request
        # (as the simulator's).
        return batch, max(
            self.runs(writes, random_share, sequential_vms), math.ceil(batch / spec.max_batch)
        )

    @staticmethod
    def runs(writes: float, random_share: float, sequential_vms: float) -> int:
        """Contiguous runs in a batch of ``writes``: random writes stay apart, each sequential
        VM's merge into one."""
        runs = writes * random_share
        sequential = writes * (1.0 - random_share)
        if sequential > 0 and sequential_vms >= 1:
            runs += sequential_vms * (1.0 - (1.0 - 1.0 / sequential_vms) ** sequential)
        return max(1, round(runs))

    def full(self, host: int) -> FullBatch:
        """The host's destage batch with a backlog (full batches), for its drain capacity."""
        full = self._full_batches.get((self.write_mix[host], self._unmoved[host]))
        if full is None:
            batch, runs = self.shape(host, math.inf, True)
            services = self.services
            operations, mean, variance = services.batch_request(batch, runs, self.unmoved(host))
            if services.cache_ack is not None:
                imbalance = services.cache_ack
            else:
                per_spindle = operations / services.spindles
                spread = math.sqrt(per_spindle * (1.0 - 1.0 / services.spindles))
                imbalance = (spread * mean + math.sqrt(variance)) * expected_max_normal(
                    min(operations, services.spindles)
                )
            full = self._full_batches[(self.write_mix[host], self._unmoved[host])] = FullBatch(
                size=batch,
                wire=services.storage_seconds(batch),
                spindle_demand=operations / services.spindles * mean,
                delays=services.destage_read_latency(batch)
                + batch * services.read_channel
                + batch / services.read_rate
                + 2.0 * message_seconds(services.storage_link)
                + imbalance,
                array_per_byte=operations * mean / batch / services.spindles,
            )
        return full
