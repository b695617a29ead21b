"""The built components of one run (:class:`Model`): what the engine builds, the scheduled events
act on, the sampler reads and :func:`simcache.sim.recording.record_run` turns into a plain record.

It sits below the engine and the event modules (:mod:`simcache.sim.host_events`,
:mod:`simcache.sim.outages`, :mod:`simcache.sim.degradations`), which all take a model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from simcache.sim.collect import Record, RecordBlocks, RecordBuffer
from simcache.sim.components.adopted import PendingDestage
from simcache.sim.components.array import Array
from simcache.sim.components.host import Host
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.components.pending import PendingWrite
from simcache.sim.components.vm import VM
from simcache.sim.kernel.clock import Clock
from simcache.sim.record import SeriesSample
from simcache.sim.stream import StreamStats
from simcache.spec import Scenario

__all__ = ["Model"]


@dataclass
class Model:
    """The built components of one run, for the sampler and for inspection in tests."""

    env: simpy.Environment
    clock: Clock
    """Runs ``env``'s events (:mod:`simcache.sim.kernel.clock`); the components read the
    time from it."""
    scenario: Scenario
    network: FlowNetwork
    array: Array
    array_rx: Port
    array_tx: Port
    hosts: list[Host]
    vms: list[VM]
    record_buffer: RecordBuffer
    """Where the VMs put their completed I/Os' records until :meth:`hand_on_records` moves them
    on (at each sample, and whenever it holds :data:`simcache.sim.collect.BUFFER_ROWS` of them)."""
    peer_fabric: Port | None = None
    record_blocks: RecordBlocks = field(default_factory=RecordBlocks)
    """The records of a run with records, moved out of :attr:`record_buffer`."""
    stream: StreamStats | None = None
    """A run without records: the histograms and counters the records go to at each sample
    instead of the blocks."""
    samples: list[SeriesSample] = field(default_factory=list)
    next_sample: Any = None
    """The sampler's next timeout (a native run takes the sample's figures natively before it:
    :func:`simcache.sim.native_run.run`)."""
    native_sampler: Any = None
    """The native engine, for the sample about to be taken (native_run.run sets it before the
    sampler's event: the engine holds the state, and takes the sample's figures,
    ``Engine.sample``), else None: the sampler reads the components."""
    native: Any = None
    """The native engine that runs the VMs' I/O (:mod:`simcache.sim.native_run`), or None: the
    Python engine runs them."""
    vmotions: list[dict[str, Any]] = field(default_factory=list)
    """One record per ``vmotion`` event (:func:`simcache.sim.host_events.vmotion`): hosts, transfer
    times and, for a VM that moves, the move."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """One record per ``host_failure`` / ``device_failure``: kind, host, time, backlog, bytes
    lost and handed over."""
    outages: list[dict[str, Any]] = field(default_factory=list)
    """One record per ``peer_loss`` / ``link_down`` event (:func:`simcache.sim.outages.outage`)."""
    degradations: list[dict[str, Any]] = field(default_factory=list)
    """One record per ``array_degraded`` / ``array_rebuild`` / ``link_slow`` / ``device_slow``
    event (:mod:`simcache.sim.degradations`)."""
    resyncs: list[dict[str, Any]] = field(default_factory=list)
    """One record per resync flow: host, peer, start, end and bytes."""
    resyncing: set[int] = field(default_factory=set)
    """Indices of the hosts whose resync process runs."""
    restarts: list[dict[str, Any]] = field(default_factory=list)
    """One record per VM restarted by HA (``host_failure`` with ``restart_delay``): VM, hosts,
    times."""
    pending_destage: PendingDestage | None = None
    """The writes surviving holders took over and have not destaged, once a failure with HA
    happened."""

    @property
    def records(self) -> list[Record]:
        """The records :attr:`record_buffer` holds, as tuples (a model run without the sampler
        keeps them all there)."""
        return self.record_buffer.rows()

    def records_sink(self) -> Callable[[np.ndarray], None]:
        """Where completed records go: the run's counters (:attr:`stream`), or
        :attr:`record_blocks` for a run with records."""
        return self.stream.add if self.stream is not None else self.record_blocks.append

    def hand_on_records(self) -> None:
        """Move the records :attr:`record_buffer` holds to :meth:`records_sink`."""
        if self.record_buffer.count:
            self.records_sink()(self.record_buffer.take())

    # -- what a scheduled event's Python process asks of the flows and destage buffers, which the
    # native engine holds while it runs (native_run): the same calls either way

    def transfer(
        self,
        path: Sequence[Port],
        wire: float,
        packets: int,
        latency: float,
        weight: float = 1.0,
    ) -> simpy.Event:
        """``FlowNetwork.transfer`` over ``path``, or the native engine's flow when it runs."""
        if self.native is not None:
            flow: simpy.Event = self.native.transfer(
                self.clock, list(path), wire, packets, latency, weight
            )
            return flow
        return self.network.transfer(path, wire, packets, latency=latency, weight=weight)

    def buffered(self, host: Host) -> Iterable[PendingWrite]:
        """``host``'s ``Destager.buffered``."""
        if self.native is not None:
            items: list[PendingWrite] = self.native.buffered(host.index)
            return items
        return host.destager.buffered()

    def add_holder(self, host: Host, items: Counter[PendingWrite], holder: Host) -> int:
        """``host``'s ``Destager.add_holder``."""
        if self.native is not None:
            added: int = self.native.add_holder(host.index, items, holder.index)
            return added
        return host.destager.add_holder(items, holder)

    def untaken(self, host: Host, vm: int) -> list[PendingWrite]:
        """``host``'s ``Destager.untaken``."""
        if self.native is not None:
            untaken: list[PendingWrite] = self.native.untaken(host.index, vm)
            return untaken
        return host.destager.untaken(vm)

    def hand_over(
        self, host: Host, items: Counter[tuple[int, int, int]], vm: int
    ) -> list[PendingWrite]:
        """``host``'s ``Destager.hand_over``."""
        if self.native is not None:
            taken: list[PendingWrite] = self.native.hand_over(self.clock, host.index, items, vm)
            return taken
        return host.destager.hand_over(items, vm)

    def adopt(self, host: Host, item: PendingWrite) -> None:
        """``host``'s ``Destager.adopt``."""
        if self.native is not None:
            self.native.adopt(self.clock, host.index, item)
        else:
            host.destager.adopt(item)

    def pending_add(
        self, registry: PendingDestage, holder: Host, vm: int, offset: int, size: int
    ) -> None:
        """``registry.add``: ``holder`` took over VM ``vm``'s write (the native engine's registry
        when it runs the destagers, whose destage it waits for)."""
        if self.native is not None and self.native.destaging:
            self.native.pending_add(holder.index, vm, offset, size)
        else:
            registry.add(holder.index, vm, offset, size)

    def pending_holder_failed(self, registry: PendingDestage, holder: Host) -> None:
        """``registry.holder_failed``: ``holder``'s taken-over writes are handed over again or
        lost."""
        if self.native is not None and self.native.destaging:
            self.native.pending_holder_failed(self.clock, holder.index)
        else:
            registry.holder_failed(holder.index)

    def fail_destager(self, host: Host) -> list[PendingWrite]:
        """``host``'s ``Destager.fail``."""
        if self.native is not None and self.native.destaging:
            items: list[PendingWrite] = self.native.fail_destager(self.clock, host.index)
            return items
        return host.destager.fail()

    def peer_failed(self, host: Host, dead: Host) -> None:
        """``host``'s ``Host.peer_failed``: ``dead``'s copies of its buffered writes are gone."""
        if self.native is not None and self.native.destaging:
            self.native.peer_failed(host.index, dead.index)
            host.replica_lag.peer_failed(dead)
        else:
            host.peer_failed(dead)

    @property
    def ports(self) -> list[Port]:
        """Every port, in the order the series' ``util.<port>`` columns take: the hosts', the shared
        peer fabric, the array's."""
        fabric = [self.peer_fabric] if self.peer_fabric is not None else []
        return (
            [port for host in self.hosts for port in host.ports]
            + fabric
            + [self.array_rx, self.array_tx]
        )
