"""Analytic estimate of a scenario: queueing approximations and a fluid destage model, in milliseconds.

:func:`estimate` answers with the figures :func:`simcache.simulate` reports
(the summary table, the utilization of every station under the simulator's
``util.*`` names, the bottleneck) plus a fluid model of each host's destage
buffer, without simulating. This docstring is the specification of the
analytic model: every approximation it makes is listed here.

Stations (named as the simulator's ``util.*`` columns)
    ``host<i>.tier``: the tier's ``channels`` servers (each operation holds one
    for its latency and transfer), followed by the tier's shared transfer pipe
    (one server at ``min(bandwidth, controller_bandwidth)``) whose *waiting*
    time adds to the channel holding time. The reported utilization is the
    simulator's: channel time including the pipe wait, over ``channels``.
    ``host<i>.peer.tx|rx``, ``host<i>.storage.tx|rx``, ``array.rx|tx``,
    ``peer.fabric``: processor-sharing ports; utilization = framed wire bytes
    per second / line rate. ``array``: the spindles, utilization = spindle busy
    time over the spindle count. Two internal stations are not reported: the
    post-cliff garbage-collection server of a flash tier and the admission
    server of a full destage buffer.

Service times (means over the workload's size mix; the mix's spread gives the
squared coefficient of variation, SCV)
    - tier: ``latency + size / pipe rate`` on a channel; the pipe is busy
      ``size / pipe rate``. ``service = "exponential"`` puts everything on the
      channel with SCV 1 and no pipe, as the simulator does.
    - transfer: framed bytes (payload + per-packet headers at the MTU, as
      :func:`simcache.model.link.framed_bytes`) / line rate on each port of the
      path, plus one link latency; a replica's acknowledgement adds one latency
      and a 64-byte frame; compression adds ``size / throughput`` CPU time and
      shrinks the payload by the compressibility.
    - array: each stripe-unit chunk of each run on each RAID copy is one
      spindle operation of ``settle + k sqrt(span x scale x |U1-U2|)`` seek
      (mean ``settle + k (8/15) sqrt(span x scale)``) + half a revolution +
      media transfer, plus a revolution and a second transfer for RAID 5/6
      read-modify-write; seek and rotation variances give the SCV. Spindles are
      chosen uniformly, so each is an M/G/1 queue with 1/n of the operations.
      A request completes with its slowest chunk operation: mean + sd x the
      expected maximum of that many standard normals. A controller write cache
      acknowledges a write after ``cache_latency`` (its room is assumed free).

Queueing
    - Waiting at an FCFS station of ``c`` servers (c = 1 for the pipe, the GC
      server, each spindle) is ``(S/c) [Q_wait + P_wait (1 + SCV) / 2]``, with
      ``Q_wait`` the customers waiting (not in service) that an arrival sees
      and ``P_wait = rho^(sqrt(2(c+1)) - 1)`` (Sakasegawa's approximation of
      Erlang's C). With Poisson arrivals this is exactly the
      Pollaczek-Khinchine M/G/1 wait for c = 1 and the Allen-Cunneen M/G/c
      wait otherwise.
    - Ports are processor sharing: a flow takes ``x (1 + n)`` at a port where
      it would take ``x`` alone and sees ``n`` other flows (``x / (1 - rho)``
      with Poisson arrivals, M/G/1-PS). A flow crossing several ports takes the
      slowest port's time (bottleneck fair share, no max-min redistribution).
    - Open-loop groups are Poisson streams (constant-gap streams too: no
      credit for their lower arrival variability). Closed-loop groups are
      chains of ``vms x workers x outstanding`` customers with ``think_time``
      as a delay station. The network is solved by mean value analysis: exact
      MVA (population recursion) when there is one closed chain of at most
      16 customers, Schweitzer's approximate MVA otherwise (an arriving
      customer sees the queues less its own chain's share ``Q_c / N_c``). Open
      traffic (open groups, destaging, cache fills) is folded in as in mixed
      MVA: closed customers see the open customers' queues, open customers see
      the time-averaged closed queues.
    - Parallel legs (the local tier write and each replica leg of a WB+N
      write; the tier fill and the array leg of a WT write) are joined with
      the largest leg mean (no synchronization penalty); per station, queue
      lengths come from Little's law on each leg.
    - A station that an open stream overloads (utilization >= 1) adds a fluid
      queue: waiting grows as ``(rho - 1) t`` from the start of the overload,
      averaged over the measured window.

Read cache
    LRU per host under the independent reference model with Che's
    approximation, including the cold start: a line is present at time ``t``
    with probability ``1 - exp(-lambda_line min(t, T_C))``, with ``T_C`` the
    characteristic time at which the expected number of lines referenced
    fills the cache (infinite when everything fits). Writes and read misses
    insert lines. Zipf popularity is binned over log-spaced ranks; a line's
    rate is its hottest block's plus the mean of its other blocks (ranks are
    scattered over the disk). An I/O spanning two lines hits only if both
    are present (their presence is taken as independent). The hit ratio is the
    average over the measured window.

Destager
    Each WB write is one batch unless all ``concurrency`` flushers are busy
    (probability ``P_wait`` at the flushers' utilization); then a freed
    flusher takes what arrived in ``cycle / concurrency``, up to
    ``max_batch``. Writes in a batch coalesce only for sequential streams (one
    run per distinct VM); a batch of ``m`` runs seeks over ``span / (m + 1)``.
    A batch costs a tier read, a storage transfer, the array write and one
    latency. The drain capacity of a host with a backlog is
    ``concurrency x max_batch / cycle`` with the cycle taken under the current
    load, at most what the array, the ports and the tier pipe have left.

Fluid timeline
    The run is cut at every duty-cycle edge and vMotion start/end. Each piece
    is a *state* (groups on, vMotions running, per host: GC cliff reached or
    not, destage buffer keeping up / backlogged / full, adaptive compression
    on or off), solved once. Over each piece the destage buffer level moves at
    ``accepted - drained`` bytes/s and the flash clean pool at ``gc_rate -
    written``; crossing a bound (buffer full or empty, pool empty) splits the
    piece. While a buffer is full a closed group's writes pass an admission
    server of rate ``drain`` (their throughput falls to the drain rate); an open
    group's waiting grows as a fluid queue. Past the GC cliff, tier writes pass
    a server of rate ``gc_rate`` (foreground passes, ``gc_pass``, bunch the
    waiting into stalls but leave the mean alone: not modelled). A vMotion
    is ``streams x weight`` permanent flows on its ports (they run at 100%
    while it lasts); its duration is its framed size over the capacity the
    other flows leave. Adaptive compression is on when
    the uncompressed peer port would be at least ``threshold`` busy.
    Percentages, rates and latencies are averaged over the measured window:
    rates by time, latencies by I/O count.

Percentiles
    Each I/O class's response is taken as a gamma distribution with the
    estimated mean and SCV (SCV from the service spread plus an exponential
    waiting time with the probability of waiting, mixed over states);
    p50/p95/p99/p99.9 are its quantiles. They are rough, much rougher than the
    means.

Not covered: host failures (the estimate ignores them), random peer selection
(estimated as ring), controller write-cache exhaustion, partial-batch
coalescing of zipf overwrites, transients shorter than a state (the GC pass
stalls of observation 8 are averaged into a mean).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simcache.model.array import _MEAN_SQRT_RANDOM_DISTANCE as _MEAN_SQRT
from simcache.model.array import _RAID_LAYOUT, span_fraction
from simcache.model.link import framed_bytes
from simcache.results import _strict
from simcache.scenario import HostFailure, LinkSpec, Scenario, VMotion, load_scenario
from simcache.workload import BLOCK, DutyClock

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DestageFluid", "Estimate", "estimate", "mgc_wait", "mva_closed"]

ACK_BYTES = 64
_VAR_SQRT = 1.0 / 3.0 - _MEAN_SQRT**2  # Var[sqrt(|U1 - U2|)]
_EXACT_MVA_LIMIT = 16
_TOLERANCE = 1e-5
_MAX_ITERATIONS = 500
_OVERLOAD_FLOOR = 0.02  # 1 - utilization used for the steady-state part of an overloaded station
_SUMMARY_COLUMNS = ["group", "op", "count", "iops", "mb_s", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms"]

# Step kinds of an I/O leg.
_DELAY, _QUEUE, _PIPE, _FLOW, _SPINDLE = range(5)
# Station slots per host; shared stations follow the hosts'.
_TIER, _PIPE_SLOT, _GC, _ADMIT, _PEER_TX, _PEER_RX, _STORAGE_TX, _STORAGE_RX = range(8)
_PER_HOST = 8
_ARRAY, _ARRAY_RX, _ARRAY_TX, _FABRIC = range(4)
# Destage buffer modes of a host within a state.
_KEEPING_UP, _BACKLOGGED, _FULL = range(3)


# --------------------------------------------------------------------------- queueing formulas


def waiting_probability(utilization: float, servers: int) -> float:
    """Probability that an arrival waits at ``servers`` FCFS servers (Sakasegawa's approximation of Erlang C)."""
    if utilization <= 0.0:
        return 0.0
    if servers == 1:
        return min(utilization, 1.0)
    return min(1.0, float(utilization ** (math.sqrt(2.0 * (servers + 1)) - 1.0)))


def mgc_wait(arrival_rate: float, service: float, scv: float, servers: int = 1) -> float:
    """Mean wait in queue (s) of an M/G/c station: Pollaczek-Khinchine for c = 1, Allen-Cunneen otherwise.

    ``service`` is the mean service time (s), ``scv`` its squared coefficient of variation.
    Infinite at or above saturation.
    """
    rho = arrival_rate * service / servers
    if rho >= 1.0:
        return math.inf
    return waiting_probability(rho, servers) * service * (1.0 + scv) / 2.0 / (servers * (1.0 - rho))


def mva_closed(demands: list[float], think: float, customers: int) -> tuple[float, float, list[float]]:
    """Exact single-class MVA of queueing stations (exponential, FCFS or PS) and a think-time delay.

    Returns (throughput per s, response time s, mean queue length per station).
    """
    queues = [0.0] * len(demands)
    throughput = response = 0.0
    for population in range(1, customers + 1):
        residences = [d * (1.0 + q) for d, q in zip(demands, queues, strict=True)]
        response = sum(residences)
        throughput = population / (think + response)
        queues = [throughput * r for r in residences]
    return throughput, response, queues


def _expected_max_normal(count: float) -> float:
    """E[max of ``count`` independent standard normals] (Blom-type approximation; 0 for one)."""
    if count <= 1.0:
        return 0.0
    table = (0.0, 0.0, 0.5642, 0.8463, 1.0294, 1.1630, 1.2672, 1.3522, 1.4236)
    if count < len(table) - 1:
        low = int(count)
        return table[low] + (count - low) * (table[low + 1] - table[low])
    return math.sqrt(2.0 * math.log(count)) - (math.log(math.log(count)) + math.log(4.0 * math.pi)) / (
        2.0 * math.sqrt(2.0 * math.log(count))
    )


# --------------------------------------------------------------------------- compiled scenario


@dataclass
class _Step:
    kind: int
    station: int = -1  # _QUEUE / _PIPE / _SPINDLE: station index
    ports: tuple[int, ...] = ()  # _FLOW: port station indices
    service: float = 0.0  # s: delay, service at the station, or transfer time alone
    scv: float = 0.0
    visits: float = 1.0  # _SPINDLE: spindle operations per request (run in parallel)
    siblings: float = 0.0  # _FLOW: flows of the same request that start with it on ``sibling_ports``
    sibling_ports: tuple[int, ...] = ()


@dataclass
class _Op:
    """One kind of I/O of a chain: the legs it waits for (in parallel) and its off-path load."""

    name: str  # "write" | "read"
    path: str  # "write" | "hit" | "miss"
    probability: float
    size: float  # mean bytes
    legs: list[list[_Step]]
    background: list[_Step] = field(default_factory=list)
    after: list[_Step] = field(default_factory=list)  # sequential steps after the join (buffer admission)


class _Mix:
    """A group's I/O size mix: moments and transfer times (s at line rate) of the framed sizes."""

    def __init__(self, workload: Any, peer: LinkSpec, storage: LinkSpec):
        pairs = list(zip(*workload.size_mix, strict=True))
        self.size = sum(p * s for s, p in pairs)
        self.size_sq = sum(p * s * s for s, p in pairs)
        shrink = 1.0 - workload.compressibility
        self.storage_seconds = sum(p * framed_bytes(storage, s)[0] for s, p in pairs) / storage.bandwidth
        self.peer_seconds = sum(p * framed_bytes(peer, s)[0] for s, p in pairs) / peer.bandwidth
        self.peer_compressed_seconds = sum(p * framed_bytes(peer, s * shrink)[0] for s, p in pairs) / peer.bandwidth


@dataclass
class _Chain:
    """One group's VMs on one host."""

    group: int
    host: int
    closed: bool
    customers: int  # closed: slots; open: VMs
    rate: float  # open: I/Os per s per VM while on
    think: float
    write_back: bool
    replicas: int
    write_size: float
    read_fraction: float
    compressible: bool

    @property
    def nominal_rate(self) -> float:
        """I/Os per s before any solution: open chains' rate, closed ones' customers / (think time + 1 ms)."""
        return self.customers / (self.think + 1e-3) if self.closed else self.rate * self.customers


@dataclass(frozen=True)
class DestageFluid:
    """Fluid model of one host's destage buffer over the run (bytes, seconds, bytes/s)."""

    host: str
    capacity_bytes: float
    accept_rate_bytes_s: float  # write-back bytes/s the VMs write while their groups are on (peak state)
    drain_rate_bytes_s: float  # what the flushers can destage with a backlog, in that state
    fill_time_s: float  # from empty to full at accept - drain (inf: never fills)
    drain_time_s: float  # from full to empty with no new writes (inf: cannot drain)
    first_full_s: float  # when the buffer first fills in the run (nan: never)
    full_fraction: float  # fraction of the measured window it is full
    accepted_while_full_bytes_s: float  # = the drain rate: writers are admitted as space frees
    peak_backlog_bytes: float


class _Compiled:
    """Everything about a scenario that does not depend on the queueing solution."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        cluster = scenario.cluster
        self.hosts = cluster.hosts
        self.shared = self.hosts * _PER_HOST
        self.station_count = self.shared + 4
        tier = cluster.tier
        self.exponential_tier = tier.service == "exponential"
        cap = tier.controller_bandwidth or math.inf
        self.read_rate = min(tier.read_bandwidth, cap)
        self.write_rate = min(tier.write_bandwidth, cap)
        self.gc_rate = tier.gc_rate or math.inf
        self.clean_pool = float(tier.clean_pool) if tier.clean_pool is not None else math.inf
        self.servers = [1] * self.station_count
        for h in range(self.hosts):
            self.servers[h * _PER_HOST + _TIER] = 1 if self.exponential_tier else tier.channels
        self.is_port = [False] * self.station_count
        self.capacity = [1.0] * self.station_count
        for h in range(self.hosts):
            for slot, link in ((_PEER_TX, cluster.peer_link), (_PEER_RX, cluster.peer_link)):
                self.is_port[h * _PER_HOST + slot] = True
                self.capacity[h * _PER_HOST + slot] = link.bandwidth
            for slot in (_STORAGE_TX, _STORAGE_RX):
                self.is_port[h * _PER_HOST + slot] = True
                self.capacity[h * _PER_HOST + slot] = cluster.storage_link.bandwidth
        for slot, link in ((_ARRAY_RX, scenario.array.port), (_ARRAY_TX, scenario.array.port), (_FABRIC, cluster.peer_link)):
            self.is_port[self.shared + slot] = True
            self.capacity[self.shared + slot] = link.bandwidth
        self.names = self._station_names()
        array = scenario.array
        drive = array.drive
        self.spindles = array.spindles
        self.revolution = 60.0 / drive.rpm
        self.seek_k = (drive.avg_seek - drive.settle) / _MEAN_SQRT
        self.settle = drive.settle
        self.media = drive.media_rate
        self.span = min(1.0, max(0.0, span_fraction(array, scenario.data_bytes)))
        self.copies = min(_RAID_LAYOUT[array.raid][0], array.spindles)
        self.rmw = array.raid in ("raid5", "raid6")
        self.stripe = array.stripe
        self.cache_ack = array.cache_latency if array.controller_cache > 0 else None
        self.destager = cluster.destager
        self.chains = self._chains()
        self.mixes = [_Mix(group.workload, cluster.peer_link, cluster.storage_link) for group in scenario.groups]
        peer = cluster.peer_link
        self.ack_seconds = peer.latency + framed_bytes(peer, ACK_BYTES)[0] / peer.bandwidth
        writers = [ch for ch in self.chains if ch.write_back and ch.read_fraction < 1.0]
        self.destaging_hosts = [any(ch.host == h for ch in writers) for h in range(self.hosts)]
        self.adaptive = cluster.compression.mode == "adaptive"
        self._batch_mix = [self._host_write_mix(h) for h in range(self.hosts)]
        self.vmotions = [e for e in scenario.events if isinstance(e, VMotion)]
        run = scenario.run
        self.window = (run.warmup, run.duration)
        self.cuts = self._cuts()
        self.clocks = [DutyClock(group.workload.duty_cycle) for group in scenario.groups]
        self.hit = self._hit_ratios()
        readers = [i for i, ch in enumerate(self.chains) if ch.closed and ch.read_fraction > 0]
        for _ in range(3 if readers else 0):
            # A closed group's access rate, hence its hit ratio, depends on its latency: refine both together.
            everyone = frozenset(range(len(scenario.groups)))
            hosts = self.hosts
            key = _StateKey(everyone, frozenset(), (False,) * hosts, (_KEEPING_UP,) * hosts, (False,) * hosts, (0.0,) * hosts)
            solver = _Solver(self, key)
            solver.solve()
            self.hit = self._hit_ratios({i: solver.solution.throughput.get(i, 0.0) for i in readers})

    def _station_names(self) -> list[str]:
        names = [""] * self.station_count
        for h in range(self.hosts):
            base = h * _PER_HOST
            names[base + _TIER] = f"host{h}.tier"
            names[base + _PEER_TX] = f"host{h}.peer.tx"
            names[base + _PEER_RX] = f"host{h}.peer.rx"
            names[base + _STORAGE_TX] = f"host{h}.storage.tx"
            names[base + _STORAGE_RX] = f"host{h}.storage.rx"
        names[self.shared + _ARRAY] = "array"
        names[self.shared + _ARRAY_RX] = "array.rx"
        names[self.shared + _ARRAY_TX] = "array.tx"
        if self.scenario.cluster.peer_fabric == "shared":
            names[self.shared + _FABRIC] = "peer.fabric"
        return names

    def _chains(self) -> list[_Chain]:
        scenario = self.scenario
        chains = []
        for g, group in enumerate(scenario.groups):
            w = group.workload
            for h in scenario.group_hosts(group):
                closed = w.mode == "closed"
                chains.append(
                    _Chain(
                        group=g,
                        host=h,
                        closed=closed,
                        customers=group.vms_per_host * (w.workers * w.outstanding if closed else 1),
                        rate=0.0 if closed else w.mean_rate,
                        think=w.think_time,
                        write_back=group.policy != "WT",
                        replicas=group.replicas,
                        write_size=w.mean_size,
                        read_fraction=w.read_fraction,
                        compressible=w.compressibility > 0 and scenario.cluster.compression.mode != "off",
                    )
                )
        return chains

    # -- service times ---------------------------------------------------------------------------

    def tier_steps(self, host: int, size: float, size_sq: float, is_write: bool, gc: bool) -> list[_Step]:
        """Steps of one tier operation of mean ``size`` (``size_sq``: mean squared size)."""
        base = host * _PER_HOST
        latency = self.scenario.cluster.tier.write_latency if is_write else self.scenario.cluster.tier.read_latency
        per_byte = 1.0 / (self.write_rate if is_write else self.read_rate)
        steps = []
        if gc and is_write and self.gc_rate < math.inf:
            # Past the cliff the pool refills at gc_rate: a server of that rate. Foreground passes (gc_pass)
            # bunch the waiting into stalls but leave the rate, hence a saturated closed loop's mean, alone.
            scv = max(0.0, size_sq / size**2 - 1.0)
            steps.append(_Step(_QUEUE, station=base + _GC, service=size / self.gc_rate, scv=scv))
        mean = latency + size * per_byte
        if self.exponential_tier:
            steps.append(_Step(_QUEUE, station=base + _TIER, service=mean, scv=1.0))
            return steps
        variance = per_byte**2 * max(0.0, size_sq - size * size)
        steps.append(_Step(_QUEUE, station=base + _TIER, service=mean, scv=variance / mean**2 if mean > 0 else 0.0))
        transfer = size * per_byte
        if transfer > 0:
            steps.append(_Step(_PIPE, station=base + _PIPE_SLOT, service=transfer, scv=max(0.0, size_sq / size**2 - 1.0)))
        return steps

    def spindle_op(self, chunk: float, is_write: bool, seek_scale: float) -> tuple[float, float]:
        """Mean and variance (s, s^2) of one chunk operation on one spindle."""
        distance = self.span * seek_scale
        seek = self.settle + self.seek_k * _MEAN_SQRT * math.sqrt(distance) if distance > 0 else 0.0
        variance = self.seek_k**2 * distance * _VAR_SQRT + self.revolution**2 / 12.0
        mean = seek + self.revolution / 2.0 + chunk / self.media
        if is_write and self.rmw:
            mean += self.revolution + chunk / self.media
        return mean, variance

    def array_request(self, runs: list[float], is_write: bool, seek_scale: float) -> tuple[float, float, float]:
        """(spindle operations, mean and variance of one operation) of a request of contiguous ``runs`` bytes."""
        operations = 0.0
        busy = 0.0
        second = 0.0
        stripe = self.stripe
        copies = self.copies if is_write else 1
        for run in runs:
            full, rest = divmod(run, stripe)
            for chunk, count in ((stripe, full), (rest, 1 if rest > 0 else 0)):
                if count:
                    mean, variance = self.spindle_op(chunk, is_write, seek_scale)
                    operations += count * copies
                    busy += count * copies * mean
                    second += count * copies * (variance + mean * mean)
        mean = busy / operations
        return operations, mean, max(0.0, second / operations - mean * mean)

    def batch_request(self, batch: float, runs: int) -> tuple[float, float, float]:
        """:meth:`array_request` of a destage batch of ``runs`` equal runs, sorted: seeks over ``span / (runs + 1)``."""
        return self.array_request([batch / runs] * runs, True, 1.0 / (runs + 1))

    def spindle_step(self, operations: float, mean: float, variance: float) -> _Step:
        """The array step of a request of ``operations`` spindle operations of ``mean`` and ``variance`` each."""
        return _Step(_SPINDLE, station=self.shared + _ARRAY, service=mean, scv=variance / mean**2, visits=operations)

    def storage_seconds(self, nbytes: float) -> float:
        """Time (s) of ``nbytes`` of payload, framed, at the storage link's line rate."""
        storage = self.scenario.cluster.storage_link
        return framed_bytes(storage, nbytes)[0] / storage.bandwidth

    def peer_ports(self, source: int, target: int) -> list[int]:
        """Ports of a peer transfer: the source's tx, the target's rx, then a shared fabric if there is one."""
        ports = [source * _PER_HOST + _PEER_TX, target * _PER_HOST + _PEER_RX]
        if self.scenario.cluster.peer_fabric == "shared":
            ports.append(self.shared + _FABRIC)
        return ports

    def vmotion_ports(self, event: VMotion) -> list[int]:
        return self.peer_ports(event.source_host, event.target_host)

    # -- destage batches -------------------------------------------------------------------------

    def _host_write_mix(self, host: int) -> tuple[float, float, float]:
        """(mean write bytes, share of random writes, VMs writing sequentially) of a host's write-back writes.

        Chains are weighted by their nominal write rate (closed chains by customers / (think + 1 ms)).
        """
        weights = []
        for ch in self.chains:
            if ch.host == host and ch.write_back and ch.read_fraction < 1.0:
                weights.append((ch, ch.nominal_rate * (1.0 - ch.read_fraction)))
        total = sum(w for _, w in weights)
        if total <= 0:
            return 1.0, 1.0, 0.0
        size = sum(ch.write_size * w for ch, w in weights) / total
        sequential = [(ch, w) for ch, w in weights if self.scenario.groups[ch.group].workload.access == "sequential"]
        random_share = 1.0 - sum(w for _, w in sequential) / total
        vms = float(sum(self.scenario.groups[ch.group].vms_per_host for ch, _ in sequential))
        return size, random_share, vms

    def batch_shape(self, host: int, byte_rate: float, backlogged: bool) -> tuple[float, int]:
        """(mean batch bytes, contiguous runs per batch) of a host's destaging at ``byte_rate`` bytes/s.

        With a backlog every batch is full. Otherwise a write gets a batch of its own unless all flushers
        are busy; then a freed flusher takes what arrived in ``cycle / concurrency``.
        """
        size, random_share, sequential_vms = self._batch_mix[host]
        spec = self.destager
        largest = max(1.0, spec.max_batch / size)
        if backlogged or not math.isfinite(byte_rate):
            writes = largest
        else:
            write_rate = byte_rate / size
            writes = 1.0
            storage = self.scenario.cluster.storage_link
            for _ in range(6):
                batch = writes * size
                runs = self.runs(writes, random_share, sequential_vms)
                operations, mean, _ = self.batch_request(batch, runs)
                array_time = self.cache_ack if self.cache_ack is not None else mean * max(1.0, operations / self.spindles)
                cycle = (
                    self.scenario.cluster.tier.read_latency
                    + batch / self.read_rate
                    + self.storage_seconds(batch)
                    + 2.0 * storage.latency
                    + array_time
                )
                busy = write_rate / writes * cycle / spec.concurrency
                if busy >= 1.0:
                    writes = largest
                    break
                waiting = waiting_probability(busy, spec.concurrency)
                writes = min(largest, (1.0 - waiting) + waiting * max(1.0, write_rate * cycle / spec.concurrency))
        return writes * size, self.runs(writes, random_share, sequential_vms)

    @staticmethod
    def runs(writes: float, random_share: float, sequential_vms: float) -> int:
        """Contiguous runs in a batch of ``writes``: random writes stay apart, each sequential VM's merge into one."""
        runs = writes * random_share
        sequential = writes * (1.0 - random_share)
        if sequential > 0 and sequential_vms >= 1:
            runs += sequential_vms * (1.0 - (1.0 - 1.0 / sequential_vms) ** sequential)
        return max(1, round(runs))

    # -- the read cache --------------------------------------------------------------------------

    def _hit_ratios(self, rates: dict[int, float] | None = None) -> list[float]:
        """Window-averaged read hit probability of each chain.

        ``rates``: chain -> I/Os per s; open chains default to their rate, closed ones to
        customers / (think time + 1 ms) until a solution refines them.
        """
        rates = rates or {}
        scenario = self.scenario
        cache = scenario.cluster.cache
        line = cache.line
        capacity_lines = (cache.capacity if cache.capacity is not None else scenario.cluster.tier.capacity) // line
        start, end = self.window
        times = [start + (end - start) * x for x in (0.1127, 0.5, 0.8873)]  # 3-point Gauss-Legendre
        weights = (5.0 / 18.0, 8.0 / 18.0, 5.0 / 18.0)
        hits = [0.0] * len(self.chains)
        for h in range(self.hosts):
            members = [i for i, c in enumerate(self.chains) if c.host == h]
            if not any(self.chains[i].read_fraction > 0 for i in members):
                continue
            # (chain, lines in the bin, access rate per line, probability mass of the bin, lines per I/O)
            bins: list[tuple[int, float, float, float, float]] = []
            for i in members:
                chain = self.chains[i]
                group = scenario.groups[chain.group]
                w = group.workload
                vms = group.vms_per_host
                per_vm = rates.get(i, chain.nominal_rate) / vms
                spans = sum(p * (1.0 + max(0.0, s - BLOCK) / line) for s, p in zip(*w.size_mix, strict=True))
                blocks = max(1, w.working_set // BLOCK)
                lines = max(1.0, w.working_set / line)
                per_line = line / BLOCK
                for mass, count in _popularity_bins(w.access, w.zipf_theta, blocks):
                    line_rate = per_vm * spans * (mass / count + (per_line - 1.0) / blocks)
                    bins.append((i, vms * min(count, lines) * lines / blocks, line_rate, mass, spans))
            total_lines = sum(b[1] for b in bins)
            characteristic = math.inf if total_lines <= capacity_lines else _che_time(bins, capacity_lines)
            for t, weight in zip(times, weights, strict=True):
                horizon = min(t, characteristic)
                for i, _, line_rate, mass, spans in bins:
                    if self.chains[i].read_fraction > 0:
                        present = 1.0 - math.exp(-line_rate * horizon)
                        hits[i] += weight * mass * present**spans
        return hits

    # -- the timeline ----------------------------------------------------------------------------

    def _cuts(self) -> list[float]:
        """Times in [0, duration] where a duty cycle switches or a vMotion starts."""
        scenario = self.scenario
        end = scenario.run.duration
        cuts = {0.0, end, *(e.at for e in self.vmotions if e.at < end)}
        for group in scenario.groups:
            duty = group.workload.duty_cycle
            if duty is not None and duty.shape == "onoff":
                assert duty.on is not None and duty.off is not None
                cycle = duty.on + duty.off
                t = -duty.phase
                while t < end:
                    cuts.update(x for x in (t, t + duty.on) if 0.0 < x < end)
                    t += cycle
        return sorted(cuts)

    def next_cut(self, t: float) -> float:
        return next((x for x in self.cuts if x > t + 1e-9), self.cuts[-1])

    def groups_on(self, t: float) -> frozenset[int]:
        """Groups whose duty cycle is on just after ``t``."""
        middle = (t + self.next_cut(t)) / 2.0
        return frozenset(g for g, clock in enumerate(self.clocks) if clock.is_on(middle))


def _popularity_bins(access: str, theta: float, blocks: int) -> list[tuple[float, float]]:
    """(probability mass, number of blocks) bins of a VM's block popularity."""
    if access != "zipf" or blocks < 16:
        return [(1.0, float(blocks))]
    n = float(blocks)

    def cdf(rank: float) -> float:  # P(rank <= r) of the continuous inverse the workload uses
        if abs(theta - 1.0) < 1e-9:
            return math.log(rank + 1.0) / math.log(n + 1.0)
        return float(((rank + 1.0) ** (1.0 - theta) - 1.0) / ((n + 1.0) ** (1.0 - theta) - 1.0))

    edges = [0.0]
    edge = 1.0
    while edge < n:
        edges.append(edge)
        edge *= 4.0
    edges.append(n)
    return [(cdf(b) - cdf(a), b - a) for a, b in itertools.pairwise(edges) if b > a]


def _che_time(bins: list[tuple[int, float, float, float, float]], capacity: float) -> float:
    """Che's characteristic time: the expected number of lines referenced within it equals the capacity."""
    low, high = 0.0, 1.0

    def occupied(t: float) -> float:
        return sum(lines * (1.0 - math.exp(-rate * t)) for _, lines, rate, _, _ in bins)

    while occupied(high) < capacity:
        high *= 4.0
        if high > 1e12:
            return math.inf
    for _ in range(50):
        middle = (low + high) / 2.0
        if occupied(middle) < capacity:
            low = middle
        else:
            high = middle
    return high


# --------------------------------------------------------------------------- one state


@dataclass(frozen=True)
class _StateKey:
    groups: frozenset[int]
    vmotions: frozenset[int]
    gc: tuple[bool, ...]  # per host: past the clean-pool cliff
    buffer: tuple[int, ...]  # per host: _KEEPING_UP, _BACKLOGGED or _FULL
    compress: tuple[bool, ...]  # per host: replicas compressed
    drain: tuple[float, ...]  # per host: drain rate of a full buffer's admission server (bytes/s)


@dataclass
class _OpResult:
    chain: int
    name: str  # write | read
    throughput: float  # I/Os per s
    size: float  # mean bytes
    response: float  # s
    variance: float  # s^2
    stations: tuple[int, ...]  # stations on its paths (for overload waits)


@dataclass
class _StateResult:
    ops: list[_OpResult]
    utilization: list[float]  # per station, as the simulator reports it
    write_back_bytes: list[float]  # per host: write-back bytes/s accepted (VM writes)
    tier_write_bytes: list[float]  # per host: bytes/s written into the tier
    peer_tx_uncompressed: list[float]  # per host: peer tx utilization if replicas were not compressed
    drain: list[float]  # per host: destage capacity with a backlog (bytes/s)
    overload: list[float]  # per station: open offered utilization above 1 (0 if none)
    vmotion_rate: dict[int, float]  # running vMotion -> framed bytes/s it gets


class _Solver:
    """The routing of one state and its mean value analysis."""

    def __init__(self, compiled: _Compiled, key: _StateKey, warm: _Sweep | None = None):
        self.c = compiled
        self.key = key
        self.warm = warm  # a neighbouring state's solution to start the fixed point from
        self.destage_rates = [0.0] * compiled.hosts  # per host, bytes/s the flushers move in this state
        self.ops: list[tuple[int, _Op]] = []
        self.background: list[tuple[int, float, _Step]] = []  # (chain or -1, rate or share, step)
        self._route()
        c = compiled
        self.permanent = [0.0] * c.station_count  # vMotion flows, in units of one flow's weight
        for v in key.vmotions:
            event = c.vmotions[v]
            for port in c.vmotion_ports(event):
                self.permanent[port] += event.streams * event.weight

    # -- routing ---------------------------------------------------------------------------------

    def _route(self) -> None:
        c = self.c
        key = self.key
        for index, chain in enumerate(c.chains):
            if chain.group not in key.groups:
                continue
            h = chain.host
            if chain.read_fraction < 1.0:
                self.ops.append((index, self._write(index, chain)))
            if chain.read_fraction > 0.0:
                hit = c.hit[index]
                mix = c.mixes[chain.group]
                size, size_sq = mix.size, mix.size_sq
                if hit > 0.0:
                    legs = [c.tier_steps(h, size, size_sq, False, key.gc[h])]
                    self.ops.append((index, _Op("read", "hit", chain.read_fraction * hit, size, legs)))
                if hit < 1.0:
                    storage = c.scenario.cluster.storage_link
                    base = h * _PER_HOST
                    leg = [
                        _Step(_DELAY, service=storage.latency * 2.0),
                        c.spindle_step(*c.array_request([size], False, 1.0)),
                        _Step(_FLOW, ports=(c.shared + _ARRAY_TX, base + _STORAGE_RX), service=mix.storage_seconds),
                    ]
                    fill = c.tier_steps(h, size, size_sq, True, key.gc[h])
                    self.ops.append((index, _Op("read", "miss", chain.read_fraction * (1.0 - hit), size, [leg], background=fill)))

    def _write(self, index: int, chain: _Chain) -> _Op:
        c = self.c
        key = self.key
        cluster = c.scenario.cluster
        h = chain.host
        base = h * _PER_HOST
        mix = c.mixes[chain.group]
        size, size_sq = mix.size, mix.size_sq
        probability = 1.0 - chain.read_fraction
        legs = [c.tier_steps(h, size, size_sq, True, key.gc[h])]
        if not chain.write_back:
            storage = cluster.storage_link
            leg = [
                _Step(_DELAY, service=storage.latency * 2.0),
                _Step(_FLOW, ports=(base + _STORAGE_TX, c.shared + _ARRAY_RX), service=mix.storage_seconds),
            ]
            spindles = c.spindle_step(*c.array_request([size], True, 1.0))
            background = []
            if c.cache_ack is not None:  # the controller cache answers; the spindles work off the path
                leg.append(_Step(_DELAY, service=c.cache_ack))
                background.append(spindles)
            else:
                leg.append(spindles)
            legs.append(leg)
            return _Op("write", "write", probability, size, legs, background=background)
        peer = cluster.peer_link
        compress = chain.compressible and key.compress[h]
        cpu = size / cluster.compression.throughput if compress else 0.0
        seconds = mix.peer_compressed_seconds if compress else mix.peer_seconds
        for r in range(1, chain.replicas + 1):
            target = (h + r) % c.hosts
            ports = c.peer_ports(h, target)
            # The replicas of one write leave together: each shares the source port (and a shared fabric)
            # with its siblings for its whole transfer.
            shared = (ports[0], *ports[2:])
            flow = _Step(_FLOW, ports=tuple(ports), service=seconds, siblings=chain.replicas - 1.0, sibling_ports=shared)
            leg = [_Step(_DELAY, service=cpu + peer.latency + c.ack_seconds), flow]
            leg += c.tier_steps(target, size, size_sq, True, key.gc[target])
            legs.append(leg)
        after = []
        if key.buffer[h] == _FULL and chain.closed:
            after.append(_Step(_QUEUE, station=base + _ADMIT, service=size / key.drain[h], scv=0.0))
        return _Op("write", "write", probability, size, legs, after=after)

    def _destage(self, host: int, byte_rate: float) -> None:
        """Open load of destaging ``byte_rate`` bytes/s from ``host``: tier reads, storage transfers, array writes."""
        c = self.c
        batch, runs = c.batch_shape(host, byte_rate, self.key.buffer[host] != _KEEPING_UP)
        batches = byte_rate / batch
        for step in c.tier_steps(host, batch, batch * batch, False, False):
            self.background.append((-1, batches, step))
        wire = c.storage_seconds(batch)
        self.background.append((-1, batches, _Step(_FLOW, ports=(host * _PER_HOST + _STORAGE_TX, c.shared + _ARRAY_RX), service=wire)))
        self.background.append((-1, batches, c.spindle_step(*c.batch_request(batch, runs))))

    # -- mean value analysis ---------------------------------------------------------------------

    def solve(self) -> _StateResult:
        """Mean value analysis of the state, with the destage load it implies: the flushers move what the
        VMs write while the buffer keeps up, and their drain capacity when there is a backlog."""
        c = self.c
        closed = sorted({i for i, _ in self.ops if c.chains[i].closed})
        population = {i: c.chains[i].customers for i in closed}
        warm = self.warm
        throughput = {i: warm.throughput.get(i, 0.0) if warm else 0.0 for i in closed}
        queue = list(warm.queue) if warm else [0.0] * c.station_count
        chain_queue = {i: list(warm.chain_queue[i]) if warm and i in warm.chain_queue else [0.0] * c.station_count for i in closed}
        routed = list(self.background)
        result = None
        for _ in range(6):
            self.background = list(routed)
            for h in range(c.hosts):
                if self.destage_rates[h] > 0:
                    self._destage(h, self.destage_rates[h])
            if len(closed) == 1 and population[closed[0]] <= _EXACT_MVA_LIMIT:
                only = closed[0]
                queue = [0.0] * c.station_count
                chain_queue = {only: [0.0] * c.station_count}
                throughput = {only: 0.0}
                for n in range(1, population[only] + 1):  # exact MVA: the population recursion
                    sweep = self._sweep({only: n}, throughput, queue, chain_queue, exact=True)
                    throughput, queue, chain_queue = sweep.throughput, sweep.queue, sweep.chain_queue
            else:
                if closed and not any(queue):
                    throughput, queue, chain_queue = self._bound_start(population, throughput, queue, chain_queue)
                history: list[dict[int, list[float]]] = []
                for _ in range(_MAX_ITERATIONS):  # Schweitzer's fixed point (one pass if all traffic is open)
                    sweep = self._sweep(population, throughput, queue, chain_queue, exact=False)
                    change = max((abs(a - b) for a, b in zip(sweep.queue, queue, strict=True)), default=0.0)
                    throughput, queue, chain_queue = sweep.throughput, sweep.queue, sweep.chain_queue
                    if change <= _TOLERANCE * (1.0 + max(queue, default=0.0)):
                        break
                    history.append(chain_queue)
                    if len(history) == 3:
                        # A queue next to saturation creeps towards its fixed point by a factor of about its
                        # utilization per pass: jump there (Aitken's delta-squared, station by station).
                        chain_queue = {i: _aitken(history[0][i], history[1][i], history[2][i]) for i in chain_queue}
                        queue = [sum(qs[k] for qs in chain_queue.values()) for k in range(len(queue))]
                        history = []
                sweep = self._sweep(population, throughput, queue, chain_queue, exact=False)
            self.solution = sweep
            result = self._collect(sweep)
            rates = [
                (result.drain[h] if self.key.buffer[h] != _KEEPING_UP else min(result.write_back_bytes[h], result.drain[h]))
                if c.destaging_hosts[h]
                else 0.0
                for h in range(c.hosts)
            ]
            settled = all(abs(r - old) <= 0.01 * max(r, 1.0) for r, old in zip(rates, self.destage_rates, strict=True))
            self.destage_rates = rates
            if settled:
                break
        assert result is not None
        return result

    def _bound_start(
        self,
        population: dict[int, int],
        throughput: dict[int, float],
        queue: list[float],
        chain_queue: dict[int, list[float]],
    ) -> tuple[dict[int, float], list[float], dict[int, list[float]]]:
        """A starting point near the solution in saturation: throughputs cut to the busiest station's
        capacity (asymptotic bound) and the customers that leaves over waiting at that station."""
        first = self._sweep(population, throughput, queue, chain_queue, exact=False)
        second = self._sweep(population, first.throughput, first.queue, first.chain_queue, exact=False)
        busiest = max(range(len(second.utilization)), key=lambda k: second.utilization[k])
        scale = 1.0 / max(1.0, second.utilization[busiest])
        throughput = {i: x * scale for i, x in second.throughput.items()}
        chain_queue = {i: [q * scale for q in qs] for i, qs in second.chain_queue.items()}
        for i, qs in chain_queue.items():
            present = sum(qs) + throughput[i] * self.c.chains[i].think
            qs[busiest] += max(0.0, population[i] - present)
        queue = [sum(qs[k] for qs in chain_queue.values()) for k in range(len(queue))]
        return throughput, queue, chain_queue

    def _sweep(
        self,
        population: dict[int, int],
        throughput: dict[int, float],
        queue: list[float],
        chain_queue: dict[int, list[float]],
        exact: bool,
    ) -> _Sweep:
        """Residences from the current queues, then new throughputs and queues (one MVA step)."""
        c = self.c
        count = c.station_count
        chains = c.chains
        busy = [0.0] * count  # per station: server-seconds per second (ports: line-rate seconds per second)
        arrivals = [0.0] * count
        second = [0.0] * count
        open_busy = [0.0] * count

        def rate_of(chain: int) -> float:
            ch = chains[chain]
            return throughput.get(chain, 0.0) if ch.closed else ch.rate * ch.customers

        def load(rate: float, step: _Step, is_open: bool) -> None:
            if step.kind == _DELAY:
                return
            if step.kind == _FLOW:
                for port in step.ports:
                    busy[port] += rate * step.service
                    if is_open:
                        open_busy[port] += rate * step.service
                return
            k = step.station
            r = rate * step.visits / c.spindles if step.kind == _SPINDLE else rate
            busy[k] += r * step.service
            arrivals[k] += r
            second[k] += r * step.service * step.service * (1.0 + step.scv)
            if is_open:
                open_busy[k] += r * step.service

        def load_all() -> None:
            for i, op in self.ops:
                is_open = not chains[i].closed
                rate = rate_of(i) * op.probability
                for leg in op.legs:
                    for step in leg:
                        load(rate, step, is_open)
                for step in op.after:
                    load(rate, step, is_open)
                for step in op.background:
                    load(rate, step, True)
            for _, rate, step in self.background:
                load(rate, step, True)

        load_all()
        servers = c.servers
        utilization = [busy[k] / servers[k] for k in range(count)]
        open_utilization = [open_busy[k] / servers[k] for k in range(count)]
        # MVA with non-exponential residuals can admit more than a station serves: hold the closed chains
        # to the busiest station's capacity (what the open traffic leaves of it).
        scale = min(
            (
                (1.0 - min(open_utilization[k], 1.0)) / (utilization[k] - open_utilization[k])
                for k in range(count)
                if utilization[k] > 1.0 and utilization[k] > open_utilization[k]
            ),
            default=1.0,
        )
        if scale < 1.0 and throughput:
            throughput = {i: x * scale for i, x in throughput.items()}
            for vector in (busy, arrivals, second, open_busy):
                vector[:] = [0.0] * count
            load_all()
            utilization = [busy[k] / servers[k] for k in range(count)]
        mean_service = [busy[k] / arrivals[k] if arrivals[k] > 0 else 0.0 for k in range(count)]
        residual = [second[k] / (2.0 * busy[k]) if busy[k] > 0 else 0.0 for k in range(count)]
        permanent = self.permanent

        def fcfs_wait(k: int, waiting: float, util: float) -> float:
            return (mean_service[k] * waiting + waiting_probability(min(util, 1.0), servers[k]) * residual[k]) / servers[k]

        # Open arrivals see the closed queues time-averaged (PASTA) and queue behind each other.
        open_wait = [0.0] * count
        open_slowdown = [1.0] * count
        for k in range(count):
            # An overloaded station never reaches a steady state: its queue is the fluid one the timeline adds.
            free = 1.0 - open_utilization[k] if open_utilization[k] < 1.0 - _OVERLOAD_FLOOR else 1.0
            if c.is_port[k]:
                open_slowdown[k] = (1.0 + queue[k] + permanent[k]) / free
            elif busy[k] > 0:
                open_wait[k] = fcfs_wait(k, queue[k], utilization[k]) / free

        def residence(step: _Step, chain: int | None, seen_open: list[float]) -> tuple[float, float]:
            """(time on the request's path, time waiting in the station's queue) of one step."""
            if step.kind == _DELAY:
                return step.service, 0.0
            if step.kind == _FLOW:
                slowest = 0.0
                for port in step.ports:
                    if chain is None:
                        slowdown = open_slowdown[port]
                    else:
                        own = 0.0 if exact else chain_queue[chain][port] / population[chain]
                        slowdown = 1.0 + queue[port] - own + seen_open[port] + permanent[port]
                    if port in step.sibling_ports:
                        slowdown += step.siblings
                    slowest = max(slowest, step.service * slowdown)
                return slowest, slowest
            k = step.station
            if chain is None:
                wait = open_wait[k]
            else:
                own = 0.0 if exact else chain_queue[chain][k] / population[chain]
                wait = fcfs_wait(k, max(0.0, queue[k] - own) + seen_open[k], utilization[k])
            if step.kind == _PIPE:
                return wait, wait
            if step.kind == _SPINDLE:
                spread = math.sqrt(step.service**2 * step.scv + wait * wait)
                return step.service + wait + spread * _expected_max_normal(step.visits), wait
            return step.service + wait, wait

        def enqueue(target: list[float], rate: float, step: _Step, waited: float) -> None:
            """Little's law: requests at ``rate`` waiting ``waited`` (FCFS) or present ``waited`` (PS) on ``step``."""
            if step.kind == _DELAY:
                return
            if step.kind == _FLOW:
                for port in step.ports:
                    target[port] += rate * waited
                return
            visits = step.visits / c.spindles if step.kind == _SPINDLE else 1.0
            target[step.station] += rate * visits * waited

        no_open = [0.0] * count
        open_queue = [0.0] * count
        for i, op in self.ops:
            if not chains[i].closed:
                rate = rate_of(i) * op.probability
                for leg in op.legs:
                    for step in leg:
                        enqueue(open_queue, rate, step, residence(step, None, no_open)[1])
                for step in op.background:
                    enqueue(open_queue, rate, step, residence(step, None, no_open)[1])
            else:
                for step in op.background:
                    enqueue(open_queue, rate_of(i) * op.probability, step, residence(step, None, no_open)[1])
        for _, rate, step in self.background:
            enqueue(open_queue, rate, step, residence(step, None, no_open)[1])

        timed: list[tuple[int, _Op, list[list[tuple[float, float]]], float, float]] = []
        cycle = dict.fromkeys(population, 0.0)
        for i, op in self.ops:
            chain = i if i in population else None
            seen = open_queue if chain is not None else no_open
            legs = [[residence(step, chain, seen) for step in leg] for leg in op.legs]
            after = [residence(step, chain, seen) for step in op.after]
            sums = [sum(t for t, _ in leg) for leg in legs]
            critical = max(range(len(sums)), key=lambda j: sums[j])
            response = sums[critical] + sum(t for t, _ in after)
            waits = [w for _, w in legs[critical]] + [w for _, w in after]
            services = [s for s in op.legs[critical] + op.after]
            variance = sum(s.service**2 * s.scv for s in services if s.kind in (_QUEUE, _SPINDLE)) + sum(w * w for w in waits)
            timed.append((i, op, legs + [after], response, variance))
            if chain is not None:
                cycle[i] += op.probability * response
        new_throughput = {i: population[i] / (chains[i].think + cycle[i]) if chains[i].think + cycle[i] > 0 else 0.0 for i in population}
        new_chain_queue = {i: [0.0] * count for i in population}
        for i, op, legs, _, _ in timed:
            if i in population:
                rate = new_throughput[i] * op.probability
                for steps, times in zip(op.legs + [op.after], legs, strict=True):
                    for step, (_, waited) in zip(steps, times, strict=True):
                        enqueue(new_chain_queue[i], rate, step, waited)
        new_queue = [0.0] * count
        for per_chain in new_chain_queue.values():
            for k, q in enumerate(per_chain):
                new_queue[k] += q
        return _Sweep(new_throughput, new_queue, new_chain_queue, utilization, open_utilization, busy, open_queue, timed)

    def _collect(self, sweep: _Sweep) -> _StateResult:
        c = self.c
        hosts = c.hosts
        reported = list(sweep.utilization)
        for h in range(hosts):
            # The simulator counts a channel busy while its transfer waits for the pipe.
            base = h * _PER_HOST
            pipe_waiting = sweep.queue[base + _PIPE_SLOT] + sweep.open_queue[base + _PIPE_SLOT]
            reported[base + _TIER] = (sweep.busy[base + _TIER] + pipe_waiting) / c.servers[base + _TIER]
        vmotion_rate: dict[int, float] = {}
        for v in self.key.vmotions:
            event = c.vmotions[v]
            ports = c.vmotion_ports(event)
            left = min(max(0.0, 1.0 - sweep.utilization[p]) * c.capacity[p] for p in ports)
            vmotion_rate[v] = max(left, 1e-3 * min(c.capacity[p] for p in ports))
            for p in ports:
                reported[p] = 1.0
        results = []
        write_back = [0.0] * hosts
        tier_writes = [0.0] * hosts
        peer_tx = [0.0] * hosts
        for i, op, _, response, variance in sweep.timed:
            chain = c.chains[i]
            rate = (sweep.throughput[i] if chain.closed else chain.rate * chain.customers) * op.probability
            stations = tuple(
                {p for leg in op.legs + [op.after] for s in leg for p in (s.ports if s.kind == _FLOW else (s.station,)) if p >= 0}
            )
            results.append(_OpResult(i, op.name, rate, op.size, response, variance, stations))
            h = chain.host
            if op.name == "write":
                if chain.write_back:
                    write_back[h] += rate * op.size
                    peer_tx[h] += rate * chain.replicas * c.mixes[chain.group].peer_seconds
                tier_writes[h] += rate * op.size
                for r in range(1, chain.replicas + 1 if chain.write_back else 1):
                    tier_writes[(h + r) % hosts] += rate * op.size
            elif op.path == "miss":
                tier_writes[h] += rate * op.size
        drain = [self._drain_capacity(h, sweep) for h in range(hosts)]
        overload = [u - 1.0 if u >= 1.0 else 0.0 for u in sweep.open_utilization]
        return _StateResult(results, [min(1.0, u) for u in reported], write_back, tier_writes, peer_tx, drain, overload, vmotion_rate)

    def _drain_capacity(self, host: int, sweep: _Sweep) -> float:
        """Bytes/s the host's flushers destage with a backlog: full batches, at most what the shared stations leave."""
        c = self.c
        if not c.destaging_hosts[host]:
            return math.inf
        spec = c.destager
        batch, runs = c.batch_shape(host, math.inf, True)
        operations, mean, variance = c.batch_request(batch, runs)
        array_per_byte = operations * mean / batch / c.spindles  # spindle-seconds per byte, per spindle
        own = self.destage_rates[host]
        array_left = 1.0 - max(0.0, sweep.utilization[c.shared + _ARRAY] - own * self._array_per_byte(host, own))
        storage = c.scenario.cluster.storage_link
        batch_wire = c.storage_seconds(batch)
        port_left = min(
            1.0 - sweep.utilization[port] + own * batch_wire / batch for port in (host * _PER_HOST + _STORAGE_TX, c.shared + _ARRAY_RX)
        )
        # The flushers are a closed loop of `concurrency` customers: the storage transfer and the array's
        # spindle work are queues (slowed by the other traffic there, as in mixed MVA); the tier read, the
        # latencies and the wait for the batch's most loaded spindle (binomial operation counts) are delays.
        tier = c.scenario.cluster.tier
        if c.cache_ack is not None:
            array_demand, imbalance = 0.0, c.cache_ack
        else:
            per_spindle = operations / c.spindles
            spread = math.sqrt(per_spindle * (1.0 - 1.0 / c.spindles))
            array_demand = per_spindle * mean / max(array_left, _OVERLOAD_FLOOR)
            imbalance = (spread * mean + math.sqrt(variance)) * _expected_max_normal(min(operations, c.spindles))
        wire = batch_wire / max(port_left, _OVERLOAD_FLOOR)
        delays = tier.read_latency + batch / c.read_rate + 2.0 * storage.latency + imbalance
        batches = mva_closed([wire, array_demand], delays, spec.concurrency)[0]
        limit = max(array_left, 0.0) / array_per_byte if c.cache_ack is not None else math.inf
        return max(min(batches * batch, limit), 1.0)

    def _array_per_byte(self, host: int, byte_rate: float) -> float:
        if byte_rate <= 0:
            return 0.0
        c = self.c
        batch, runs = c.batch_shape(host, byte_rate, self.key.buffer[host] != _KEEPING_UP)
        operations, mean, _ = c.batch_request(batch, runs)
        return operations * mean / batch / c.spindles


@dataclass
class _Sweep:
    throughput: dict[int, float]
    queue: list[float]
    chain_queue: dict[int, list[float]]
    utilization: list[float]
    open_utilization: list[float]
    busy: list[float]
    open_queue: list[float]
    timed: list[tuple[int, _Op, list[list[tuple[float, float]]], float, float]]


# --------------------------------------------------------------------------- the run: states over time


class _Timeline:
    """Walks the run piece by piece, solving each state once and moving the fluid levels."""

    def __init__(self, compiled: _Compiled):
        self.c = compiled
        self.cache: dict[_StateKey, _StateResult] = {}
        self.last: _Sweep | None = None

    def state(self, key: _StateKey) -> _StateResult:
        if key not in self.cache:
            solver = _Solver(self.c, key, self.last)
            self.cache[key] = solver.solve()
            self.last = solver.solution
        return self.cache[key]

    def settle(self, key: _StateKey) -> tuple[_StateKey, _StateResult]:
        """The state's solution; with adaptive compression, the compression that state switches on or off."""
        c = self.c
        result = self.state(key)
        if c.adaptive:
            threshold = c.scenario.cluster.compression.threshold
            compress = tuple(result.peer_tx_uncompressed[h] >= threshold for h in range(c.hosts))
            if compress != key.compress:
                key = _StateKey(key.groups, key.vmotions, key.gc, key.buffer, compress, key.drain)
                result = self.state(key)
        return key, result

    def run(self) -> list[_Piece]:
        c = self.c
        hosts = c.hosts
        end = c.scenario.run.duration
        buffer_level = [0.0] * hosts
        pool = [c.clean_pool] * hosts
        remaining = {v: framed_bytes(c.scenario.cluster.peer_link, e.size / e.streams)[0] * e.streams for v, e in enumerate(c.vmotions)}
        modes = [_KEEPING_UP] * hosts
        gc = [False] * hosts
        drain_of_full = [0.0] * hosts
        full_since = [math.nan] * hosts
        overload_since: dict[int, float] = {}
        entered: list[frozenset[int]] = [frozenset()] * hosts  # groups running when the buffer filled
        gc_entered: list[frozenset[int]] = [frozenset()] * hosts  # groups running when the clean pool ran out
        compress = tuple(c.scenario.cluster.compression.mode == "always" for _ in range(hosts))
        pieces: list[_Piece] = []
        t = 0.0
        guard = 0
        while t < end - 1e-9 and guard < 8 * len(c.cuts) + 400:
            guard += 1
            groups = c.groups_on(t)
            running = frozenset(v for v, e in enumerate(c.vmotions) if e.at <= t + 1e-12 and remaining[v] > 0)
            key = _StateKey(groups, running, tuple(gc), tuple(modes), compress, tuple(_round(d) for d in drain_of_full))
            key, result = self.settle(key)
            compress = key.compress
            changed = False
            for h in range(hosts):
                accepted, drain = result.write_back_bytes[h], result.drain[h]
                if modes[h] == _KEEPING_UP and accepted > drain * 1.001:
                    modes[h], changed = _BACKLOGGED, True
                elif modes[h] == _BACKLOGGED and buffer_level[h] <= 0.0 and accepted <= drain:
                    modes[h], changed = _KEEPING_UP, True
                elif modes[h] == _FULL and groups != entered[h]:
                    # A throttled state cannot tell whether its demand has fallen below the drain rate: try
                    # the buffer without the throttle whenever the running groups change.
                    modes[h], changed = _BACKLOGGED, True
                if not gc[h] and pool[h] <= 0.0 and result.tier_write_bytes[h] > c.gc_rate:
                    gc[h], changed = True, True
                    gc_entered[h] = groups
                elif gc[h] and groups != gc_entered[h]:
                    gc[h], changed = False, True
            if changed:
                continue
            # How long this state lasts: the next cut, a buffer filling or emptying, a clean pool running out,
            # a vMotion finishing.
            step = c.next_cut(t) - t
            for h in range(hosts):
                net = result.write_back_bytes[h] - result.drain[h]
                if modes[h] == _BACKLOGGED and net > 0:
                    step = min(step, (c.destager.capacity - buffer_level[h]) / net)
                elif modes[h] == _BACKLOGGED and net < 0:
                    step = min(step, buffer_level[h] / -net)
                if not gc[h] and result.tier_write_bytes[h] > c.gc_rate and c.clean_pool < math.inf:
                    step = min(step, pool[h] / (result.tier_write_bytes[h] - c.gc_rate))
            for v, rate in result.vmotion_rate.items():
                step = min(step, remaining[v] / rate)
            step = max(step, 1e-6)
            for k, over in enumerate(result.overload):
                if over > 0 and k not in overload_since:
                    overload_since[k] = t
                elif over <= 0:
                    overload_since.pop(k, None)
            pieces.append(_Piece(t, t + step, result, list(modes), list(buffer_level), list(full_since), dict(overload_since), key))
            for h in range(hosts):
                net = result.write_back_bytes[h] - result.drain[h]
                if modes[h] == _BACKLOGGED:
                    buffer_level[h] = min(c.destager.capacity, max(0.0, buffer_level[h] + net * step))
                    if buffer_level[h] >= c.destager.capacity * (1 - 1e-9):
                        modes[h] = _FULL
                        entered[h] = groups
                        drain_of_full[h] = result.drain[h]
                        full_since[h] = t + step
                    elif buffer_level[h] <= 0.0:
                        modes[h] = _KEEPING_UP
                if modes[h] != _FULL:
                    drain_of_full[h] = 0.0
                    full_since[h] = math.nan
                if c.clean_pool < math.inf and not gc[h]:
                    pool[h] = min(c.clean_pool, pool[h] + (c.gc_rate - result.tier_write_bytes[h]) * step)
                    if pool[h] <= 1e-6 * c.clean_pool:
                        pool[h] = 0.0
            for v, rate in result.vmotion_rate.items():
                remaining[v] -= rate * step
                if remaining[v] <= 1.0:
                    remaining[v] = 0.0
            t += step
        return pieces


def _aitken(first: list[float], second: list[float], third: list[float]) -> list[float]:
    """Aitken's delta-squared extrapolation of three successive iterates, component by component."""
    out = []
    for a, b, c in zip(first, second, third, strict=True):
        denominator = c - 2.0 * b + a
        jump = c - (c - b) ** 2 / denominator if abs(denominator) > 1e-12 and (c - b) * (b - a) > 0 else c
        out.append(jump if jump >= 0.0 else c)
    return out


def _round(value: float) -> float:
    """Rates rounded to 4 significant digits, so that states reached twice share one solution."""
    if value <= 0 or not math.isfinite(value):
        return value
    return round(value, 3 - math.floor(math.log10(value)))


@dataclass
class _Piece:
    start: float
    end: float
    result: _StateResult
    modes: list[int]
    buffer_level: list[float]  # at the start
    full_since: list[float]
    overload_since: dict[int, float]
    key: _StateKey


# --------------------------------------------------------------------------- estimate()


_COMPILED: dict[int, tuple[Scenario, _Compiled]] = {}
_COMPILED_LIMIT = 256


def _compiled(scenario: Scenario) -> _Compiled:
    """The compiled form of ``scenario``, kept for the last few scenarios (by identity: scenarios are frozen)."""
    entry = _COMPILED.get(id(scenario))
    if entry is not None and entry[0] is scenario:
        return entry[1]
    compiled = _Compiled(scenario)
    if len(_COMPILED) >= _COMPILED_LIMIT:
        _COMPILED.pop(next(iter(_COMPILED)))
    _COMPILED[id(scenario)] = (scenario, compiled)
    return compiled


def estimate(scenario: Scenario | str | Any, *, duration: float | None = None) -> Estimate:
    """Analytic estimate of ``scenario`` (a Scenario, path, built-in name or dict), in about a millisecond.

    ``duration`` (s) overrides ``run.duration`` and caps the warm-up at a tenth
    of it, as :func:`simcache.simulate` does. See the module docstring for the
    model and its approximations.
    """
    scenario = load_scenario(scenario)
    if duration is not None:
        scenario = scenario.with_overrides(
            {"run.duration": duration, "run.warmup": min(scenario.run.warmup, duration / 10)},
            source="the duration argument (estimate(duration=...))",
        )
    compiled = _compiled(scenario)
    pieces = _Timeline(compiled).run()
    return _summarize(compiled, pieces)


def _summarize(c: _Compiled, pieces: list[_Piece]) -> Estimate:
    scenario = c.scenario
    start, end = c.window
    span = max(end - start, 1e-12)
    groups = [g.name for g in scenario.groups]
    # (group, op) -> [I/Os, bytes, sum of latency, sum of squared latency]
    totals: dict[tuple[str, str], list[float]] = {}
    for name in [*groups, "all"]:
        for kind in ("read", "write"):
            totals[(name, kind)] = [0.0, 0.0, 0.0, 0.0]
    utilization = [0.0] * c.station_count
    notes: list[str] = []
    for piece in pieces:
        a, b = max(piece.start, start), min(piece.end, end)
        if b <= a:
            continue
        width = b - a
        result = piece.result
        for k in range(c.station_count):
            utilization[k] += result.utilization[k] * width / span
        for op in result.ops:
            chain = c.chains[op.chain]
            extra = 0.0
            h = chain.host
            if op.name == "write" and chain.write_back and piece.modes[h] == _FULL and not chain.closed:
                # Open writers queue for buffer space: the queue grows at (accepted - drain) from the moment it filled.
                drain = result.drain[h]
                offered = result.write_back_bytes[h]
                since = piece.full_since[h] if math.isfinite(piece.full_since[h]) else piece.start
                extra += max(0.0, offered - drain) / drain * ((a + b) / 2.0 - since)
            for k in op.stations:
                if k in piece.overload_since:
                    extra = max(extra, result.overload[k] * ((a + b) / 2.0 - piece.overload_since[k]))
            count = op.throughput * width
            latency = op.response + extra
            for name in (groups[chain.group], "all"):
                row = totals[(name, op.name)]
                row[0] += count
                row[1] += count * op.size
                row[2] += count * latency
                row[3] += count * (latency * latency + op.variance)
    rows = []
    for (name, kind), (count, nbytes, total, square) in totals.items():
        mean = total / count if count > 0 else math.nan
        scv = max(0.0, square / count / mean**2 - 1.0) if count > 0 and mean > 0 else 0.0
        rows.append((name, kind, count / span, nbytes / span / 1e6, mean, scv))
    reported = {c.names[k]: utilization[k] for k in range(c.station_count) if c.names[k]}
    fluid = _destage_fluid(c, pieces)
    for d in fluid:
        if d.full_fraction > 0:
            notes.append(f"{d.host}: destage buffer full for {d.full_fraction:.0%} of the window (writers wait for the array)")
    if any(any(piece.key.gc) for piece in pieces if piece.end > start):
        notes.append("a flash tier is past its clean-pool cliff: writes run at gc_rate (GC stalls averaged)")
    if any(any(piece.result.overload) for piece in pieces if piece.end > start):
        notes.append("an open-loop stream overloads a station: latency grows through the run (fluid estimate)")
    if any(isinstance(e, HostFailure) for e in scenario.events):
        notes.append("host failures are not modelled by the estimate")
    return Estimate(scenario, rows, reported, fluid, notes, c.window)


def _destage_fluid(c: _Compiled, pieces: list[_Piece]) -> list[DestageFluid]:
    start, end = c.window
    span = max(end - start, 1e-12)
    capacity = float(c.destager.capacity)
    out = []
    for h in range(c.hosts):
        peak = max(pieces, key=lambda p: p.result.write_back_bytes[h])
        accepted = peak.result.write_back_bytes[h]
        drain = peak.result.drain[h]
        fill = capacity / (accepted - drain) if accepted > drain else math.inf
        first_full = next((p.start for p in pieces if p.modes[h] == _FULL), math.nan)
        full = sum(max(0.0, min(p.end, end) - max(p.start, start)) for p in pieces if p.modes[h] == _FULL) / span
        peak_level = max([p.buffer_level[h] for p in pieces] + [capacity if math.isfinite(first_full) else 0.0])
        out.append(
            DestageFluid(
                host=f"host{h}",
                capacity_bytes=capacity,
                accept_rate_bytes_s=accepted,
                drain_rate_bytes_s=drain if math.isfinite(drain) else 0.0,
                fill_time_s=fill,
                drain_time_s=capacity / drain if drain > 0 and math.isfinite(drain) else math.inf,
                first_full_s=first_full,
                full_fraction=full,
                accepted_while_full_bytes_s=drain if math.isfinite(drain) else 0.0,
                peak_backlog_bytes=peak_level,
            )
        )
    return out


# --------------------------------------------------------------------------- the result


class Estimate:
    """The analytic answer for one scenario. Times in ms in the summary; utilizations as fractions."""

    def __init__(
        self,
        scenario: Scenario,
        rows: list[tuple[str, str, float, float, float, float]],
        utilization: dict[str, float],
        destager: list[DestageFluid],
        notes: list[str],
        window: tuple[float, float],
    ):
        self.scenario = scenario
        self._rows = rows  # (group, op, iops, mb_s, mean_s, scv)
        self.utilization = utilization
        self.destager = destager
        self.notes = notes
        self.window = window
        self._summary: pd.DataFrame | None = None

    def bottleneck(self) -> tuple[str, float]:
        """The station with the highest mean utilization over the window, and that utilization (as Result.bottleneck)."""
        name = max(self.utilization, key=lambda n: self.utilization[n])
        return name, self.utilization[name]

    def mean_ms(self, group: str = "all", op: str = "write") -> float:
        """Mean latency (ms) of one summary row, without building the DataFrame."""
        for row in self._rows:
            if row[0] == group and row[1] == op:
                return row[4] * 1e3
        raise KeyError(f"no summary row for group {group!r} op {op!r}")

    @property
    def summary(self) -> pd.DataFrame:
        """The same columns as :attr:`simcache.Result.summary` (without the interval and max columns)."""
        if self._summary is None:
            import pandas as pd

            start, end = self.window
            span = end - start
            records = []
            for group, op, iops, mb_s, mean, scv in self._rows:
                p50, p95, p99, p999 = _gamma_quantiles(mean, scv)
                records.append(
                    {
                        "group": group,
                        "op": op,
                        "count": round(iops * span),
                        "iops": iops,
                        "mb_s": mb_s,
                        "mean_ms": mean * 1e3,
                        "p50_ms": p50 * 1e3,
                        "p95_ms": p95 * 1e3,
                        "p99_ms": p99 * 1e3,
                        "p999_ms": p999 * 1e3,
                    }
                )
            self._summary = pd.DataFrame(records, columns=_SUMMARY_COLUMNS)
        return self._summary

    def to_json(self) -> dict[str, Any]:
        name, value = self.bottleneck()
        return {
            "scenario": self.scenario.name,
            "summary": _strict(self.summary.to_dict("records")),
            "utilization": self.utilization,
            "bottleneck": {"station": name, "utilization": value},
            "destager": [_strict(d.__dict__) for d in self.destager],
            "notes": self.notes,
        }


def _gamma_quantiles(mean: float, scv: float) -> tuple[float, float, float, float]:
    if not math.isfinite(mean) or mean <= 0 or scv < 1e-6:
        return (mean, mean, mean, mean)
    from scipy import stats

    shape = 1.0 / scv
    values = stats.gamma.ppf([0.5, 0.95, 0.99, 0.999], shape, scale=mean * scv)
    return (float(values[0]), float(values[1]), float(values[2]), float(values[3]))
