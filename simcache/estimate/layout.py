"""The layout of a scenario: its stations, chains, peer ports, vMotions and I/O paths, before any
solving.

:class:`Layout` gathers everything about a scenario that does not depend on
the queueing solution; :mod:`simcache.estimate.solver` solves its states.
"""

from __future__ import annotations

from dataclasses import dataclass

from simcache.estimate.batches import DestageBatches
from simcache.estimate.chains import Chain, SizeMix, chains
from simcache.estimate.network import Network
from simcache.estimate.paths import templates
from simcache.estimate.readcache import ReadCache
from simcache.estimate.schedule import Schedule
from simcache.estimate.services import ServiceTimes
from simcache.estimate.theory.numeric import Floats
from simcache.estimate.theory.stations import (
    ARRAY,
    ARRAY_RX,
    ARRAY_TX,
    FABRIC,
    PEER_RX,
    PEER_TX,
    PER_HOST,
    STORAGE_RX,
    STORAGE_TX,
    TIER,
)
from simcache.physics.cluster import (
    PortName,
    peer_port,
    ring_peers,
    tier_units,
    vmotion_stream_port,
    write_gc_factor,
    write_run_bytes,
)
from simcache.spec import Scenario, VMotion, Workload

__all__ = ["Layout", "VMotionPair"]


@dataclass(frozen=True)
class VMotionPair:
    """The streams of a vMotion on one port pair: a transfer of its own, which ends when they
    have moved their bytes."""

    vmotion: int  # the vMotion's number among the scenario's
    event: VMotion
    pair: int  # the port pair's number
    streams: int


class Layout:
    """Everything about a scenario that does not depend on the queueing solution."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        cluster = scenario.cluster
        self.hosts = cluster.hosts
        self.peer_links = cluster.peer_links
        self.per_host = PER_HOST + 2 * (self.peer_links - 1)  # station slots per host
        # compression switches: one per (host, sending peer port)
        self.lanes = self.hosts * self.peer_links
        self.shared = self.hosts * self.per_host
        self.station_count = self.shared + 4
        self.services = ServiceTimes(scenario, self.per_host, self.shared)
        self.peer_link = cluster.peer_link
        self.shared_fabric = cluster.peer_fabric == "shared"
        self.servers = [1] * self.station_count
        # Stations whose servers each have a queue of their own, an arrival joining a uniformly
        # random one: a tier of addressed placement, whose every operation waits on the unit that
        # holds or receives its data.
        self.addressed = [False] * self.station_count
        for h in range(self.hosts):
            self.servers[h * self.per_host + TIER] = (
                1 if self.services.exponential_tier else tier_units(cluster.tier)
            )
            self.addressed[h * self.per_host + TIER] = cluster.tier.placement == "addressed"
        self.is_port = [False] * self.station_count
        self.capacity = [1.0] * self.station_count
        for h in range(self.hosts):
            for k in range(self.peer_links):  # each peer port at one port's line rate
                for station in (self.peer_station(h, k, True), self.peer_station(h, k, False)):
                    self.is_port[station] = True
                    self.capacity[station] = cluster.peer_link.bandwidth
            for slot in (STORAGE_TX, STORAGE_RX):
                self.is_port[h * self.per_host + slot] = True
                self.capacity[h * self.per_host + slot] = cluster.storage_link.bandwidth
        for slot, link in (
            (ARRAY_RX, scenario.array.port),
            (ARRAY_TX, scenario.array.port),
            (FABRIC, cluster.peer_link),
        ):
            self.is_port[self.shared + slot] = True
            self.capacity[self.shared + slot] = link.bandwidth
        self.names = self._station_names()
        self.destager = cluster.destager
        # a transfer runs at the slower port
        storage_rate = min(cluster.storage_link.bandwidth, scenario.array.port.bandwidth)
        self.mixes = [
            SizeMix(group.workload, cluster.peer_link, cluster.storage_link, storage_rate)
            for group in scenario.groups
        ]
        # Per op: the reads' and the writes' own mixes (the same as ``mixes`` unless the workload
        # has per-op mixes).
        self.read_mixes = [
            self._op_mix(group.workload, storage_rate, False) for group in scenario.groups
        ]
        self.write_mixes = [
            self._op_mix(group.workload, storage_rate, True) for group in scenario.groups
        ]
        self.chains = chains(scenario)
        writers = [ch for ch in self.chains if ch.write_back and ch.read_fraction < 1.0]
        self.destaging_hosts = [any(ch.host == h for ch in writers) for h in range(self.hosts)]
        self.adaptive = cluster.compression.mode == "adaptive"
        self.compression_threshold = cluster.compression.threshold
        self.compress_always = cluster.compression.mode == "always"
        self.batches = DestageBatches(
            self.hosts, self.chains, self.write_mixes, self.destager, self.services
        )
        self.vmotions = [e for e in scenario.events if isinstance(e, VMotion)]
        # What the timeline runs and ends: each vMotion's streams on each port pair they use.
        self.vmotion_pairs = [
            VMotionPair(v, e, k, streams)
            for v, e in enumerate(self.vmotions)
            for k, streams in self.vmotion_streams(e)
        ]
        run = scenario.run
        self.duration = run.duration
        self.window = (run.warmup, run.duration)
        self.schedule = Schedule(scenario, self.vmotions)
        self.network = Network(self, templates(self))
        self.read_cache = ReadCache(self)

    def gc_factor(self, chain: Chain) -> float:
        """Share of a chain's write bytes its tier's clean pool is charged
        (:func:`write_gc_factor`: runs of ``sequential_run`` writes of the mean write size,
        endless for sequential access)."""
        workload = self.scenario.groups[chain.group].workload
        run_bytes = write_run_bytes(
            workload.access, workload.sequential_run, self.write_mixes[chain.group].size
        )
        return write_gc_factor(self.scenario.cluster.tier, run_bytes)

    def _op_mix(self, workload: Workload, storage_rate: float, write: bool) -> SizeMix:
        """The size mix of one op of a workload (:attr:`mixes`' own when the ops share one mix)."""
        cluster = self.scenario.cluster
        return SizeMix(
            workload,
            cluster.peer_link,
            cluster.storage_link,
            storage_rate,
            write if workload.per_op_sizes else None,
        )

    def _station_names(self) -> list[str]:
        names = [""] * self.station_count
        for h in range(self.hosts):
            base = h * self.per_host
            names[base + TIER] = f"host{h}.tier"
            for k in range(self.peer_links):
                # the simulator's numbering (Host.peer_txs)
                number = None if self.peer_links == 1 else k
                names[self.peer_station(h, k, True)] = PortName(h, "peer", number, "tx").label
                names[self.peer_station(h, k, False)] = PortName(h, "peer", number, "rx").label
            names[base + STORAGE_TX] = PortName(h, "storage", None, "tx").label
            names[base + STORAGE_RX] = PortName(h, "storage", None, "rx").label
        names[self.shared + ARRAY] = "array"
        names[self.shared + ARRAY_RX] = PortName(None, "array", None, "rx").label
        names[self.shared + ARRAY_TX] = PortName(None, "array", None, "tx").label
        if self.shared_fabric:
            names[self.shared + FABRIC] = PortName(None, "fabric").label
        return names

    # -- peer ports and vMotions ------------------------------------------------------------------

    def peer_station(self, host: int, port: int, tx: bool) -> int:
        """The station of the host's peer port number ``port``, sending (``tx``) or receiving
        direction."""
        slot = (
            (PEER_TX if tx else PEER_RX)
            if port == 0
            else PER_HOST + 2 * (port - 1) + (0 if tx else 1)
        )
        return host * self.per_host + slot

    def peer_port(self, source: int, target: int) -> int:
        """The peer port pair a transfer from ``source`` to ``target`` uses
        (:func:`simcache.physics.cluster.peer_port`, as the simulator's ``Host.peer_port``), the
        same number at both ends."""
        return peer_port(source, target, self.hosts, self.peer_links)

    def peer_ports(self, source: int, target: int, port: int | None = None) -> list[int]:
        """Ports of a peer transfer: the source's tx, the target's rx (of the pair ``port``, by
        default the one :meth:`peer_port` hashes the host pair to), then a shared fabric if there
        is one."""
        k = self.peer_port(source, target) if port is None else port
        ports = [self.peer_station(source, k, True), self.peer_station(target, k, False)]
        if self.shared_fabric:
            ports.append(self.shared + FABRIC)
        return ports

    def replica_targets(self, host: int, count: int) -> list[tuple[int, int]]:
        """(target host, sending peer port) of each of the ``count`` replicas of a write on
        ``host``: to the ring peers ``host + 1 .. host + count``, each on the port
        :meth:`peer_port` hashes that pair to."""
        targets = ring_peers(host, self.hosts)[:count]
        return [(target, self.peer_port(host, target)) for target in targets]

    def lane(self, host: int, port: int) -> int:
        """The compression switch of the replicas leaving ``host`` on its peer port ``port``:
        lane ``host + hosts x port`` (lanes below ``hosts`` are also the host switches of the
        other kinds)."""
        return host + self.hosts * port

    def vmotion_streams(self, event: VMotion) -> list[tuple[int, int]]:
        """(port pair, streams on it) of a vMotion, pairs that carry none left out: stream ``i``
        uses the pair :func:`simcache.physics.cluster.vmotion_stream_port` gives it, as in the
        simulator's ``_vmotion``."""
        counts = [0] * self.peer_links
        for i in range(event.streams):
            counts[vmotion_stream_port(i, self.peer_links)] += 1
        return [(k, streams) for k, streams in enumerate(counts) if streams > 0]

    def vmotion_ports(self, v: int) -> list[int]:
        """The ports of the vMotion pair ``v`` (of :attr:`vmotion_pairs`): the source's tx and
        the target's rx of its port pair, then a shared fabric if there is one."""
        pair = self.vmotion_pairs[v]
        return self.peer_ports(pair.event.source_host, pair.event.target_host, pair.pair)

    def permanent_flows(self, vmotions: frozenset[int]) -> list[float]:
        """Per station, the permanent flows of these running vMotion pairs, in units of one
        flow's weight."""
        permanent = [0.0] * self.station_count
        for v in vmotions:
            pair = self.vmotion_pairs[v]
            for port in self.vmotion_ports(v):
                permanent[port] += pair.streams * pair.event.weight
        return permanent

    def vmotion_rates(self, vmotions: frozenset[int], utilization: Floats) -> dict[int, float]:
        """Framed bytes/s each running vMotion pair moves, its flows taking what the other
        traffic leaves of each port (``utilization``: the other traffic's, per station): the
        smaller of what its tx and its rx leave and of its streams' share of what a shared fabric
        leaves (shared with the vMotion's other running pairs by stream count); at least 0.1% of
        a port's rate. While all pairs of a vMotion run, their sum is the sum over the pairs of
        min(tx left, rx left), at most what the fabric leaves if each takes its share."""

        def left(port: int) -> float:
            return max(0.0, 1.0 - float(utilization[port])) * self.capacity[port]

        rates = {}
        for v in vmotions:
            pair = self.vmotion_pairs[v]
            tx, rx, *fabric = self.vmotion_ports(v)
            rate = min(left(tx), left(rx))
            if fabric:
                streams = sum(
                    self.vmotion_pairs[u].streams
                    for u in vmotions
                    if self.vmotion_pairs[u].vmotion == pair.vmotion
                )
                rate = min(rate, left(fabric[0]) * (pair.streams / streams))
            rates[v] = max(rate, 1e-3 * self.peer_link.bandwidth)
        return rates
