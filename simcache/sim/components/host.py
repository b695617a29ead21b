"""A virtualization host: its tier, read cache, destager and network ports.

Besides wiring, two pieces of write-path bookkeeping live here, one per host:
:class:`MetadataLog` (the metadata or activity-log writes of ``metadata_write``
groups, one at a time when batched: group commit) and :class:`ReplicaLag`
(``replication = "async"``: the writes acknowledged to their VMs whose replicas
have not reached any peer yet, the data at risk of asynchronous replication).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import simpy

from simcache.physics.cluster import PortName, peer_port, read_cache_lines
from simcache.sim.components.adopted import PendingDestage
from simcache.sim.components.array import Array
from simcache.sim.components.cache import ReadCache
from simcache.sim.components.destager import Destager
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.components.pending import (
    WRITE_HOLDERS,
    WRITE_OFFSET,
    WRITE_SIZE,
    WRITE_VM,
    PendingWrite,
    without,
)
from simcache.sim.components.randomness import UniformStream
from simcache.sim.components.tier import Tier
from simcache.sim.kernel.clock import Clock, clock_of
from simcache.sim.kernel.signals import Signal, on_processed
from simcache.sim.kernel.waits import sleep, succeed
from simcache.spec import ClusterSpec

__all__ = ["AsyncWrite", "Host", "MetadataLog", "ReplicaLag"]


class Host:
    """One host, wired to the shared flow network and the array's storage port.

    It has ``spec.peer_links`` full-duplex ports on the peer network (each a
    transmit and a receive :class:`Port`), named ``host<i>.peer.tx|rx`` when
    there is one and ``host<i>.peer<k>.tx|rx`` when there are several, and
    one port on the storage network.
    """

    def __init__(
        self,
        env: simpy.Environment,
        index: int,
        spec: ClusterSpec,
        stream: UniformStream,
        network: FlowNetwork,
        array: Array,
        array_rx: Port,
        array_tx: Port,
        peer_fabric: Port | None = None,
    ):
        self.index = index
        self.name = f"host{index}"
        self.network = network
        self.array = array
        self.array_rx = array_rx
        self.array_tx = array_tx
        self.tier = Tier(spec.tier, stream, name=f"{self.name}.tier")
        self.cache = ReadCache(read_cache_lines(spec), spec.cache.line)
        self.host_count = spec.hosts
        links = spec.peer_links
        numbers: list[int | None] = [None] if links == 1 else list(range(links))
        self.peer_txs = tuple(
            Port(PortName(index, "peer", k, "tx"), spec.peer_link) for k in numbers
        )
        self.peer_rxs = tuple(
            Port(PortName(index, "peer", k, "rx"), spec.peer_link) for k in numbers
        )
        self.storage_tx = Port(PortName(index, "storage", None, "tx"), spec.storage_link)
        self.storage_rx = Port(PortName(index, "storage", None, "rx"), spec.storage_link)
        self.peer_fabric = peer_fabric
        self.alive = True
        # False once its tier is gone (host_failure, device_failure): it holds no copy of anything
        self.tier_up = True
        self.peer_down = 0  # peer_loss / link_down outages now holding its peer ports down
        self.storage_down = 0  # link_down outages now holding its storage port down
        # processed when the storage port comes back up (then replaced: simcache.sim.outages)
        self.storage_back = Signal(None)
        self.replica_bytes = 0  # peers' data held here until their primary destages it
        self.replica_payload_sent = 0.0  # replica bytes this host sent to peers (after compression)
        self.destager = Destager(env, spec.destager, self)
        self.destager.on_destaged = self._drop_replicas
        self.metadata_log = MetadataLog(env, self.tier)
        self.replica_lag = ReplicaLag(env)
        # set once a host_failure with restart_delay happened
        self.pending_destage: PendingDestage | None = None

    def _drop_replicas(self, item: PendingWrite) -> None:
        if self.pending_destage is not None:
            self.pending_destage.destaged(
                self.index, item[WRITE_VM], item[WRITE_OFFSET], item[WRITE_SIZE]
            )
        lag = self.replica_lag
        if lag.tracking:
            lag.destaged(item)
            return
        for peer in item[WRITE_HOLDERS]:
            peer.replica_bytes -= item[WRITE_SIZE]

    def surviving_holders(self, item: PendingWrite) -> list[Host]:
        """This host died holding ``item``, not yet destaged: the live peers holding a copy of it.

        An asynchronous write whose replicas are still on their way has none (its bytes are lost);
        the peers whose copy has not arrived do not hold it.
        """
        if self.replica_lag.tracking:
            return self.replica_lag.forget(item)
        return [peer for peer in item[WRITE_HOLDERS] if peer.tier_up]

    def peer_failed(self, peer: Host) -> None:
        """``peer``, holding replicas of this host's writes, died (see
        :meth:`Destager.peer_failed`)."""
        self.destager.peer_failed(peer)
        self.replica_lag.peer_failed(peer)

    def reaches(self, peer: Host) -> bool:
        """Can this host replicate to ``peer`` now: ``peer``'s tier up, and neither's peer ports
        down."""
        return peer.tier_up and not peer.peer_down and not self.peer_down

    def peer_port(self, peer: Host) -> int:
        """The number of the peer port a transfer to ``peer`` leaves on here and arrives on there
        (:func:`simcache.physics.cluster.peer_port`). With ring peer selection a VM's N replicas go
        to the next N hosts, so they leave on different ports when there are at least N.
        """
        return peer_port(self.index, peer.index, self.host_count, len(self.peer_txs))

    def peer_path(self, peer: Host, port: int | None = None) -> tuple[Port, ...]:
        """Ports a transfer from this host to ``peer`` crosses on the peer network.

        ``port``: the number of the port pair to use (vMotion streams pick
        theirs); by default the one :meth:`peer_port` hashes the pair to.
        """
        k = self.peer_port(peer) if port is None else port
        if self.peer_fabric is None:
            return (self.peer_txs[k], peer.peer_rxs[k])
        return (self.peer_txs[k], self.peer_fabric, peer.peer_rxs[k])

    @property
    def ports(self) -> tuple[Port, ...]:
        """Every port direction of this host: each peer port's tx and rx, then storage tx and rx."""
        peer = tuple(
            port for pair in zip(self.peer_txs, self.peer_rxs, strict=True) for port in pair
        )
        return (*peer, self.storage_tx, self.storage_rx)


class MetadataLog:
    """A host's metadata (activity log) writes to its tier.

    Unbatched, every write-back write of a ``metadata_write`` group writes its own record after its
    data (:meth:`write`). Batched (group commit), one metadata write is in flight at a time: a write
    whose data is done joins the next one, which starts when the one in flight ends and carries
    every write that joined it (:meth:`join`). At queue depth 1 both cost one device write more;
    with many writes outstanding, the batched log costs one device write per batch.
    """

    def __init__(self, env: simpy.Environment, tier: Tier):
        self.clock = clock_of(env)
        self.tier = tier
        self.writes = 0  # metadata writes sent to the tier
        self._busy_until = 0.0  # end of the metadata write in flight (or of the last one)
        self._next: Signal | None = None  # the metadata write waiting for the one in flight, if any
        self._next_size = 0

    def write(self, size: int) -> float:
        """An unbatched metadata write of ``size`` bytes submitted now; returns when it is done."""
        self.writes += 1
        return self.tier.submit(self.clock.now, size, True)

    def join(self, size: int) -> Signal:
        """The :class:`Signal` of the batched metadata write that records a write whose data is
        done now."""
        clock = self.clock
        if self._next is not None:
            return self._next
        now = clock.now
        if self._busy_until <= now:
            self.writes += 1
            done = self._busy_until = self.tier.submit(now, size, True)
            return sleep(clock, done - now)
        self._next = signal = Signal(None)
        self._next_size = size
        on_processed(sleep(clock, self._busy_until - now), self._start_next)
        return signal

    def _start_next(self, _: Signal) -> None:
        clock = self.clock
        signal = self._next
        assert signal is not None
        self._next = None
        self.writes += 1
        done = self._busy_until = self.tier.submit(clock.now, self._next_size, True)
        on_processed(sleep(clock, done - clock.now), lambda _: succeed(clock, signal))


class AsyncWrite:
    """One asynchronously replicated write, shared by its replica legs and its VM (see
    :class:`ReplicaLag`)."""

    __slots__ = ("arrived", "item", "lagging", "size")

    def __init__(self, size: int):
        self.size = size
        self.item: PendingWrite | None = None  # set at the acknowledgement
        self.lagging = False
        self.arrived: list[Host] = []  # peers its copy reached before the acknowledgement


class ReplicaLag:
    """``replication = "async"`` on one host: acknowledged writes whose replicas are still on their
    way.

    A write is *lagging* (data at risk: acknowledged to its VM, held by this host only) from its
    acknowledgement until the first of its replicas reaches a peer or the destager has written it to
    the array, whichever comes first; :attr:`bytes` sums them. A copy that arrives after its write
    was destaged is obsolete and not counted as held.

    Kept by the destager's item (VM, offset, size, peers, single copy?): equal items are
    interchangeable (same bytes, same peers), so each key holds a count.
    """

    def __init__(self, env: simpy.Environment) -> None:
        self.clock: Clock = clock_of(env)
        self.bytes = 0
        self.tracking = False  # has any asynchronous write been acknowledged here
        self._sending: dict[Host, int] = {}  # bytes of copies on their way to each peer
        # writes waiting for room to send
        self._blocked: deque[tuple[Signal, tuple[Host, ...], int, int]] = deque()
        self._lagging: dict[PendingWrite, int] = {}
        # copies on their way, by item and peer items rewritten when a peer died
        self._due: dict[tuple[PendingWrite, Host], int] = {}
        self._renamed: dict[PendingWrite, PendingWrite] = {}

    def room(self, peers: tuple[Host, ...], size: int, buffer: int) -> Signal | None:
        """Put a write's copies of ``size`` bytes for ``peers`` into the send buffer of ``buffer``
        bytes per peer.

        ``None`` if they fit now (or nothing is on its way to those peers), else the :class:`Signal`
        processed when they have gone in: writes enter in order, as copies already sent arrive.
        """
        if not self._blocked and self._fits(peers, size, buffer):
            self._enter(peers, size)
            return None
        signal = Signal(None)
        self._blocked.append((signal, peers, size, buffer))
        return signal

    def _fits(self, peers: tuple[Host, ...], size: int, buffer: int) -> bool:
        sending = self._sending
        for peer in peers:
            queued = sending.get(peer, 0)
            if queued and queued + size > buffer:
                return False
        return True

    def _enter(self, peers: tuple[Host, ...], size: int) -> None:
        sending = self._sending
        for peer in peers:
            sending[peer] = sending.get(peer, 0) + size

    def _landed(self, peer: Host, size: int) -> None:
        self._sending[peer] -= size
        blocked = self._blocked
        while blocked and self._fits(blocked[0][1], blocked[0][2], blocked[0][3]):
            signal, peers, size, _ = blocked.popleft()
            self._enter(peers, size)
            succeed(self.clock, signal)

    def acknowledged(self, write: AsyncWrite, item: PendingWrite) -> None:
        """``write`` was acknowledged to its VM as ``item`` of the destager."""
        self.tracking = True
        for peer in item[WRITE_HOLDERS]:
            # a peer died while the write waited for buffer space: as the destager rewrote it
            if not peer.tier_up:
                item = without(item, peer)
        kept = item[WRITE_HOLDERS]
        write.item = item
        missing = [peer for peer in kept if peer not in write.arrived]
        for peer in missing:
            key = (item, peer)
            self._due[key] = self._due.get(key, 0) + 1
        if missing and len(missing) == len(kept):
            self._lagging[item] = self._lagging.get(item, 0) + 1
            self.bytes += item[WRITE_SIZE]
            write.lagging = True

    def arrived(self, write: AsyncWrite, peer: Host) -> None:
        """``write``'s copy has reached ``peer``."""
        self._landed(peer, write.size)
        item = write.item
        if item is None:  # before the acknowledgement: it will not lag on this peer's account
            write.arrived.append(peer)
            if peer.tier_up:
                peer.replica_bytes += write.size
            return
        while item in self._renamed:
            item = self._renamed[item]
        key = (item, peer)
        due = self._due.get(key, 0)
        if not due:
            return  # destaged (or its primary died) before the copy arrived: an obsolete copy
        self._take(self._due, key)
        if peer.tier_up:
            peer.replica_bytes += item[WRITE_SIZE]
        if write.lagging:
            write.lagging = False
            if self._lagging.get(item, 0):
                self._take(self._lagging, item)
                self.bytes -= item[WRITE_SIZE]

    def destaged(self, item: PendingWrite) -> None:
        """``item`` reached the array: it no longer lags, and the peers holding its copy drop it."""
        for peer in item[WRITE_HOLDERS]:
            key = (item, peer)
            if self._due.get(key, 0):
                self._take(self._due, key)  # its copy has not arrived: nothing to drop there
            else:
                peer.replica_bytes -= item[WRITE_SIZE]
        if self._lagging.get(item, 0):
            self._take(self._lagging, item)
            self.bytes -= item[WRITE_SIZE]

    def forget(self, item: PendingWrite) -> list[Host]:
        """This host died holding ``item``: the live peers holding its copy (none if it lagged)."""
        lagging = bool(self._lagging.get(item, 0))
        if lagging:
            self._take(self._lagging, item)
            self.bytes -= item[WRITE_SIZE]
        holders = []
        for peer in item[WRITE_HOLDERS]:
            key = (item, peer)
            if self._due.get(key, 0):
                self._take(self._due, key)
            elif peer.tier_up and not lagging:
                holders.append(peer)
        return holders

    def peer_failed(self, dead: Host) -> None:
        """``dead`` died: its copies are gone; items lose it from their peers as the destager's
        do."""
        if not self.tracking:
            return

        def renamed(item: PendingWrite) -> PendingWrite:
            new = without(item, dead)
            self._renamed[item] = new
            return new

        for key in [key for key in self._due if dead in key[0][3]]:
            count = self._due.pop(key)
            if key[1] is not dead:
                new_key = (renamed(key[0]), key[1])
                self._due[new_key] = self._due.get(new_key, 0) + count
        for item in [item for item in self._lagging if dead in item[WRITE_HOLDERS]]:
            count = self._lagging.pop(item)
            new = renamed(item)
            if new[3]:
                self._lagging[new] = self._lagging.get(new, 0) + count
            else:
                # no peer left: a single copy, counted by the destager
                self.bytes -= count * item[WRITE_SIZE]

    def short_bytes(self, promised: list[int]) -> int:
        """Bytes of the lagging writes that are also short of peers (fewer than ``promised[vm]``,
        by VM index): the destager counts those as short too."""
        return sum(
            item[WRITE_SIZE] * count
            for item, count in self._lagging.items()
            if len(item[WRITE_HOLDERS]) < promised[item[WRITE_VM]]
        )

    @staticmethod
    def _take(counts: dict[Any, int], key: Any) -> None:
        left = counts[key] - 1
        if left:
            counts[key] = left
        else:
            del counts[key]
