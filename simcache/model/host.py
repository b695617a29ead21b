"""A virtualization host: its tier, read cache, destager and network ports."""

from __future__ import annotations

import simpy

from simcache.model.array import Array
from simcache.model.cache import ReadCache
from simcache.model.destager import Destager, PendingWrite
from simcache.model.link import FlowNetwork, Port
from simcache.model.randomness import UniformStream
from simcache.model.tier import Tier
from simcache.physics import PortName, peer_port, read_cache_lines
from simcache.scenario import ClusterSpec

__all__ = ["Host"]


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
        self.peer_txs = tuple(Port(PortName(index, "peer", k, "tx"), spec.peer_link) for k in numbers)
        self.peer_rxs = tuple(Port(PortName(index, "peer", k, "rx"), spec.peer_link) for k in numbers)
        self.storage_tx = Port(PortName(index, "storage", None, "tx"), spec.storage_link)
        self.storage_rx = Port(PortName(index, "storage", None, "rx"), spec.storage_link)
        self.peer_fabric = peer_fabric
        self.alive = True
        self.replica_bytes = 0  # peers' data held here until their primary destages it
        self.replica_payload_sent = 0.0  # replica bytes this host sent to peers (after compression)
        self.destager = Destager(env, spec.destager, self)
        self.destager.on_destaged = self._drop_replicas

    @staticmethod
    def _drop_replicas(item: PendingWrite) -> None:
        for peer in item[3]:
            peer.replica_bytes -= item[2]

    def peer_port(self, peer: Host) -> int:
        """The number of the peer port a transfer to ``peer`` leaves on here and arrives on there
        (:func:`simcache.physics.peer_port`). With ring peer selection a VM's N replicas go to the
        next N hosts, so they leave on different ports when there are at least N.
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
        peer = tuple(port for pair in zip(self.peer_txs, self.peer_rxs, strict=True) for port in pair)
        return (*peer, self.storage_tx, self.storage_rx)
