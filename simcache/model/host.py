"""A virtualization host: its tier, read cache, destager and network ports."""

from __future__ import annotations

import simpy

from simcache.model.array import Array
from simcache.model.cache import ReadCache
from simcache.model.destager import Destager, PendingWrite
from simcache.model.link import FlowNetwork, Port
from simcache.model.randomness import UniformStream
from simcache.model.tier import Tier
from simcache.scenario import ClusterSpec

__all__ = ["Host"]


class Host:
    """One host, wired to the shared flow network and the array's storage port."""

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
        cache_bytes = spec.cache.capacity if spec.cache.capacity is not None else spec.tier.capacity
        self.cache = ReadCache(cache_bytes, spec.cache.line)
        self.peer_tx = Port(f"{self.name}.peer.tx", spec.peer_link)
        self.peer_rx = Port(f"{self.name}.peer.rx", spec.peer_link)
        self.storage_tx = Port(f"{self.name}.storage.tx", spec.storage_link)
        self.storage_rx = Port(f"{self.name}.storage.rx", spec.storage_link)
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

    def peer_path(self, peer: Host) -> tuple[Port, ...]:
        """Ports a transfer from this host to ``peer`` crosses on the peer network."""
        if self.peer_fabric is None:
            return (self.peer_tx, peer.peer_rx)
        return (self.peer_tx, self.peer_fabric, peer.peer_rx)

    @property
    def ports(self) -> tuple[Port, ...]:
        return (self.peer_tx, self.peer_rx, self.storage_tx, self.storage_rx)
