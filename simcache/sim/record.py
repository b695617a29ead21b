"""A finished run as plain data (:class:`RunRecord`): what the results layer builds its tables from.

The engine fills one at the end of a run (:func:`simcache.sim.recording.record_run`). Nothing in it
refers to the engine's objects (environment, hosts, VMs), so the layers above read a run without
knowing how it was simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simcache.sim.collect import RecordBlocks
from simcache.sim.stream import StreamStats
from simcache.spec import Scenario

__all__ = ["RunCounters", "RunRecord", "SeriesSample", "UnfinishedIOs"]


@dataclass(frozen=True)
class SeriesSample:
    """Component state at the end of one sample interval (taken by the engine's sampler)."""

    time_s: float
    port_utilization: dict[str, float]
    """Per port label: the fraction of its capacity it carried over the interval."""
    tier_utilization: dict[str, float]
    """Per host name: the fraction of its tier's channels busy over the interval."""
    tier_in_system: dict[str, int]
    """Per host name: its tier's operations running or queued at ``time_s``."""
    array_utilization: float
    """The fraction of the array's spindles busy over the interval."""
    array_in_system: int
    """The array's back-end (spindle) operations running or queued at ``time_s``."""
    destage_backlog_bytes: dict[str, int]
    """Per host name: bytes in its destage buffer at ``time_s``."""
    destage_waiting: int
    """Writers blocked on a full destage buffer at ``time_s``, all hosts."""
    data_at_risk_bytes: int
    """Acknowledged bytes with fewer copies than their group's policy promises (a volatile tier:
    the whole backlog)."""
    single_copy_bytes: int
    """Acknowledged bytes held on one host only."""
    flows_in_flight: int
    """Network transfers under way at ``time_s``."""


@dataclass(frozen=True, eq=False)
class UnfinishedIOs:
    """The I/Os issued but not completed when the run ended, on VMs whose host is alive, as three
    columns of one row per I/O (an overloaded run leaves hundreds of thousands: an object each
    took seconds to make and to turn into a table)."""

    vm: np.ndarray
    """The VM's index (build order), int32."""
    write: np.ndarray
    """True for a write, False for a read."""
    issue_s: np.ndarray
    """Simulated time it was issued, seconds (float64)."""

    def __len__(self) -> int:
        return len(self.vm)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnfinishedIOs) and all(
            np.array_equal(a, b)
            for a, b in zip(
                (self.vm, self.write, self.issue_s),
                (other.vm, other.write, other.issue_s),
                strict=True,
            )
        )

    __hash__ = None  # type: ignore[assignment]  # (arrays: mutable)


@dataclass(frozen=True)
class RunCounters:
    """The cluster's cumulative counters at the end of a run, summed over hosts, VMs and ports."""

    issued_ios: int
    """I/Os the VMs started (completed ones plus those unfinished at the end)."""
    destage_accepted_bytes: int
    destaged_bytes: int
    destage_backlog_bytes: int
    """Bytes left in the destage buffers at the end."""
    destage_batches: int
    destage_runs: int
    replica_bytes_held: int
    """Bytes of other hosts' data held as replicas at the end."""
    wb_written_through_bytes: int
    """Bytes of write-back VMs' writes completed write-through (short of peers, or tier failed)."""
    array_written_bytes: int
    array_read_bytes: int
    array_front_end_ios: int
    array_back_end_ios: int
    replica_payload_bytes: float
    """Replica bytes the hosts sent to peers, after compression."""
    peer_wire_bytes: float
    """Wire bytes the hosts' peer ports carried (framing included)."""
    peer_packets: int
    storage_wire_bytes: float
    """Wire bytes the hosts' storage ports carried, both directions."""
    compression_saved_bytes: float
    tier_gc_wait_s_by_host: dict[str, float]
    """Per host name: seconds its tier's operations waited for garbage collection."""
    tier_clean_bytes_by_host: dict[str, float]
    """Per host name whose tier has a clean pool (``clean_pool``): its clean bytes left at the
    end (negative: writes waiting for garbage collection)."""
    tier_ran_dry_s_by_host: dict[str, float]
    """Per host name whose tier's clean pool ran short in the run: the simulated time (s) a write
    first found it short and waited for garbage collection (the sustained-write cliff)."""
    cache_hits: int
    cache_misses: int


@dataclass(frozen=True)
class RunRecord:
    """Everything one run produced, as plain data; built by
    :func:`simcache.sim.recording.record_run`.

    Exactly one of :attr:`record_blocks` (a run with records) and :attr:`stream` (a run without)
    is set. The blocks are the engine's own, not a copy: building the records table from them
    consumes them (:func:`simcache.sim.collect.records_frame`).
    """

    scenario: Scenario
    """The scenario as run; for a stopped run, cut at the stop (its duration, and its warm-up if
    that had not ended)."""
    planned: Scenario
    """The scenario as asked for (the same as :attr:`scenario` for a run that reached its end)."""
    seed: int
    version: str
    """The simcache version that ran it."""
    wall_time_s: float
    """Wall-clock seconds from the start of the build to the last sample."""
    events: int
    """SimPy events scheduled."""
    stopped_at_s: float | None
    """Simulated time a stopped run ended at, seconds; ``None`` for a run that reached its end."""
    stop_reason: str | None
    record_blocks: RecordBlocks | None
    stream: StreamStats | None
    vm_names: list[str]
    vm_groups: list[int]
    """Each VM's group index into ``scenario.groups``."""
    vm_hosts: list[str]
    """The host each VM ran on at the end."""
    unfinished: UnfinishedIOs
    """In issue order per VM (reads then writes), VMs in build order."""
    host_names: list[str]
    port_labels: list[str]
    """Every port sampled, in the order of the series' ``util.<port>`` columns."""
    samples: list[SeriesSample]
    counters: RunCounters
    degraded_vms: list[dict[str, Any]]
    """The write-back VMs ever short of the peers their policy promises: seconds degraded, bytes
    issued meanwhile, of those bytes written through, bytes re-replicated."""
    vmotions: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    outages: list[dict[str, Any]]
    degradations: list[dict[str, Any]]
    resyncs: list[dict[str, Any]]
    restarts: list[dict[str, Any]]
    """One per VM restarted by HA: VM, hosts, time (s) and the open-loop arrivals dropped while it
    was down."""
    run_by: str = "Python"
    """Which engine ran the I/O path, and why that one (:func:`simcache.sim.native_run.choose`):
    ``"native"`` or a line starting ``"Python"``."""
    warmup_cut: str | None = None
    """What a ``duration`` asked of the run did to the file's warm-up, in words
    (:meth:`simcache.spec.Scenario.warmup_cut`); ``None`` when it kept it."""
