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
    ``host<i>.peer.tx|rx`` (one peer port per host) or ``host<i>.peer<k>.tx|rx``
    (``peer_links`` ports, k = 0, 1, ..., each at the peer link's line rate),
    ``host<i>.storage.tx|rx``, ``array.rx|tx``, ``peer.fabric`` (one, whatever
    the port count): processor-sharing ports; utilization = framed wire bytes
    per second / line rate. ``array``: the spindles, utilization = spindle busy
    time over the spindle count. Two internal stations are not reported: the
    post-cliff garbage-collection server of a flash tier and the admission
    server of a full destage buffer.

Peer ports
    A transfer from host A to host B leaves on A's tx port k and arrives on
    B's rx port k, ``k = ((B - A) mod hosts - 1) mod peer_links``, as the
    simulator's ``Host.peer_port``; with a shared fabric it also crosses
    ``peer.fabric``. A WB+N write's replicas (to the ring peers A + 1 .. A + N)
    leave together: each shares its sending port with the siblings that leave
    on the same port (all of them with one port, none of WB+2's with two or
    more) and a shared fabric with all of them.

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
    - Schweitzer's fixed point is iterated until no queue moves by more than
      ``1e-4 x (1 + the longest queue)`` in a pass, with Aitken's
      delta-squared jump every three passes. The destage load (and, in the
      state with every group on, the hit ratios) are solved together with the
      queues: see Destager and Read cache. With their settling tolerances
      (1%, 1e-3) the library's figures are within 0.5% of a solution
      converged to 1e-10.
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
    average over the measured window. A closed group's access rate depends on
    its latency: its hit ratio is solved together with the state in which
    every group is on (updated from the closed throughputs until it moves by
    less than 1e-3), and every state uses it.

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
    The flushers move what the VMs write while the buffer keeps up (at most the
    drain capacity) and the drain capacity with a backlog; that load and the
    queues are solved together: whenever the queues move by less than 1% in a
    pass, the destage rates they imply replace the ones in use, unless within
    1% of them. A state starts from the previous state's queues and destage
    rates; the first state from the asymptotic bound without destaging, and a
    population recursion from the load two Schweitzer steps imply.
    Where destaging in small batches nearly saturates the array, the equations
    can have two solutions, one with the closed groups cycling fast and one
    congested, and the estimate gives the one this iteration reaches. In
    ``default`` cut to 12 s it is the congested one (web reads 534/s; the
    simulator 449/s; an older procedure that restarted the destage load from
    zero at each hit-ratio refinement found the other, 939/s).

Fluid timeline
    The run is cut where the set of groups on changes (a duty-cycle edge) and
    where a vMotion starts or one of its port pairs ends. Each piece is a
    *state* (groups on, vMotion pairs running, per host: GC cliff reached or
    not, destage buffer keeping up / backlogged / full; per host and peer port:
    adaptive compression on or off), solved once. Over each piece the destage
    buffer level moves at ``accepted - drained`` bytes/s and the flash clean
    pool at ``gc_rate - written``; crossing a bound (buffer full or empty, pool
    empty) splits the piece. While a buffer is full a closed group's writes
    pass an admission server of rate ``drain`` (their throughput falls to the
    drain rate); an open group's waiting grows as a fluid queue. Past the GC
    cliff, tier writes pass a server of rate ``gc_rate`` (foreground passes,
    ``gc_pass``, bunch the waiting into stalls but leave the mean alone: not
    modelled). A vMotion sends stream ``i`` on port pair ``i mod peer_links``; the ``n_k`` streams on
    pair k are a transfer of their own: ``n_k x weight`` permanent flows on the
    source's tx k and the target's rx k, and on a shared fabric (ports that
    carry streams run at 100% while they last). It moves its ``n_k`` streams'
    framed bytes at ``min(left(tx k), left(rx k), n_k / n x left(fabric))``,
    with ``left`` the capacity the other flows leave and ``n`` the vMotion's
    streams still running. So while every pair runs the vMotion moves the sum
    over its pairs of ``min(left(tx k), left(rx k))`` (less where its share of
    a shared fabric's leftover binds), and a pair on quieter ports finishes
    first. Adaptive compression is decided per sending port: the replicas that
    leave a host on one port are compressed when that port would be at least
    ``threshold`` busy with uncompressed replicas.
    A state that differs from a solved one only by vMotion pairs whose ports no
    closed path crosses keeps that state's closed solution (the vMotion flows
    only slow open transfers), re-evaluated with one MVA step; one that
    differs only by buffers keeping up rather than backlogged, with the same
    destage rates and batches (a drain-limited buffer), has its solution.
    When two consecutive duty periods run the same states at the same times,
    with the buffer and clean-pool levels moving the same way, the next periods
    repeat the last one (shifted in time, levels drifting linearly) until a
    level would reach a bound, the pattern changes, a vMotion starts or the run
    ends: they are copied, not walked, with the same figures as walking them.
    Percentages, rates and latencies are averaged over the measured window:
    rates by time, latencies by I/O count. The peak backlog is the highest
    buffer level at the start or end of any piece.

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

import dataclasses
import gc
import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from simcache.model.array import _MEAN_SQRT_RANDOM_DISTANCE as _MEAN_SQRT
from simcache.model.array import _RAID_LAYOUT, span_fraction
from simcache.model.link import framed_bytes
from simcache.model.vm import ACK_BYTES
from simcache.mva_step import OVERLOAD_FLOOR as _OVERLOAD_FLOOR
from simcache.mva_step import StepNetwork, StepRates, Sweep, aitken, mva_step, station_sums
from simcache.results import _strict
from simcache.scenario import DutyCycle, HostFailure, LinkSpec, Scenario, VMotion, load_scenario
from simcache.workload import BLOCK, DutyClock

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DestageFluid", "Estimate", "estimate", "mgc_wait", "mva_closed"]

_Floats = npt.NDArray[np.float64]
_Indices = npt.NDArray[np.intp]

_VAR_SQRT = 1.0 / 3.0 - _MEAN_SQRT**2  # Var[sqrt(|U1 - U2|)]
_EXACT_MVA_LIMIT = 16
_TOLERANCE = 1e-4
_MAX_ITERATIONS = 500
_MAX_OUTER = 6  # exact MVA: population recursions until the destage load settles
_LOOSE = 1e-2  # queue change (relative) at which a fixed point checks its destage load and hit ratios
_SETTLED = 0.01  # destage rates within this (relative) of the ones solved with are settled
_HIT_SETTLED = 1e-3  # hit ratios within this of the ones solved with are settled
_UNLIMITED = 1 << 40  # periods: as many as there are
_SUMMARY_COLUMNS = ["group", "op", "count", "iops", "mb_s", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms"]

# Step kinds of an I/O leg.
_DELAY, _QUEUE, _PIPE, _FLOW, _SPINDLE = range(5)
# Station slots per host; shared stations follow the hosts'. _PEER_TX and _PEER_RX are peer port 0's; with
# several peer ports, port k >= 1 has its tx and rx at _PER_HOST + 2 (k - 1) and the slot after it.
_TIER, _PIPE_SLOT, _GC, _ADMIT, _PEER_TX, _PEER_RX, _STORAGE_TX, _STORAGE_RX = range(8)
_PER_HOST = 8  # slots of a host with one peer port (see _Compiled.per_host)
_ARRAY, _ARRAY_RX, _ARRAY_TX, _FABRIC = range(4)
# Destage buffer modes of a host within a state.
_KEEPING_UP, _BACKLOGGED, _FULL = range(3)
# What part of a state's key switches a step's service (see _Step): nothing; the host's tier past its GC
# cliff; the host's destage buffer full (the service is bytes over the drain rate); the host compressing the
# replicas that leave on one of its peer ports (switched per lane: see _Compiled.lane).
_ALWAYS, _PAST_CLIFF, _ADMISSION, _COMPRESSED = range(4)
_SWITCHES = 4
_MAX_PORTS = 3  # a flow crosses a source port, a target port and at most one shared fabric


# --------------------------------------------------------------------------- queueing formulas


def _sakasegawa_exponent(servers: int) -> float:
    """The exponent of Sakasegawa's ``P_wait = rho^(sqrt(2(c+1)) - 1)``; 1 for one server (``P_wait = rho``)."""
    return math.sqrt(2.0 * (servers + 1)) - 1.0


def waiting_probability(utilization: float, servers: int) -> float:
    """Probability that an arrival waits at ``servers`` FCFS servers (Sakasegawa's approximation of Erlang C)."""
    if utilization <= 0.0:
        return 0.0
    if servers == 1:
        return min(utilization, 1.0)
    return min(1.0, float(utilization ** _sakasegawa_exponent(servers)))


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
    """One step of an I/O leg. A state's key may switch its service: see ``switch``."""

    kind: int
    station: int = -1  # _QUEUE / _PIPE / _SPINDLE: station index
    ports: tuple[int, ...] = ()  # _FLOW: port station indices
    service: float = 0.0  # s: delay, service at the station, or transfer time alone (with the switch off)
    scv: float = 0.0
    visits: float = 1.0  # _SPINDLE: spindle operations per request (run in parallel)
    siblings: tuple[float, ...] = ()  # _FLOW: per port of ``ports``, flows of the same request that start with it there
    switch: int = _ALWAYS  # _PAST_CLIFF / _ADMISSION: absent (service 0) unless switched on; _COMPRESSED: two services
    switch_host: int = 0  # the host whose state flips the switch (_COMPRESSED: the lane, host and sending port)
    switched_service: float = 0.0  # service with the switch on (_ADMISSION: bytes, divided by the state's drain rate)


@dataclass
class _Op:
    """One kind of I/O of a chain: the legs it waits for (in parallel) and its off-path load."""

    chain: int
    name: str  # "write" | "read"
    path: str  # "write" | "hit" | "miss"
    probability: float  # of the chain's I/Os, before the hit ratio (reads: the read fraction)
    size: float  # mean bytes
    legs: list[list[_Step]]
    background: list[_Step] = field(default_factory=list)
    after: list[_Step] = field(default_factory=list)  # sequential steps after the join (buffer admission)


class _Mix:
    """A group's I/O size mix: moments and transfer times (s at line rate) of the framed sizes."""

    def __init__(self, workload: Any, peer: LinkSpec, storage: LinkSpec):
        sizes, probabilities = workload.size_mix
        pairs = list(zip(sizes, probabilities, strict=True))
        self.pairs = pairs
        self.size = sum(p * s for s, p in pairs)
        self.size_sq = sum(p * s * s for s, p in pairs)

        def seconds(link: LinkSpec, shrink: float = 1.0) -> float:
            """Mean time (s) of the mix's sizes, times ``shrink``, framed, at the link's line rate."""
            framed: float = sum(p * framed_bytes(link, s * shrink)[0] for s, p in pairs)
            return framed / link.bandwidth

        self.storage_seconds = seconds(storage)
        self.peer_seconds = seconds(peer)
        self.peer_compressed_seconds = seconds(peer, 1.0 - workload.compressibility)


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
    read_fraction: float
    compressible: bool
    sequential: bool  # the group's access is sequential (destage batches coalesce its writes)
    vms: int  # VMs on the host

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


@dataclass(frozen=True)
class _VMotionPair:
    """The streams of a vMotion on one port pair: a transfer of its own, which ends when they have moved their bytes."""

    vmotion: int  # the vMotion's number among the scenario's
    event: VMotion
    pair: int  # the port pair's number
    streams: int


@dataclass(frozen=True)
class _Interval:
    """A stretch of the run (s) over which the same groups are on."""

    start: float
    end: float
    groups: frozenset[int]


@dataclass(frozen=True)
class _DestageSteps:
    """Service times of one destage batch (see :meth:`_Compiled.destage_steps`)."""

    service: _Floats  # s, per FCFS step
    scv: _Floats
    share: _Floats  # arrivals per batch at the step's station
    spread: _Floats  # E[max of normals] of a spindle step's operations, else 0
    wire: float  # s on the storage link at line rate


@dataclass(frozen=True)
class _FullBatch:
    """A host's destage batch with a backlog, and what it costs (see :meth:`_Solver._drain_capacity`)."""

    size: float  # bytes
    wire: float  # s on the storage link at line rate
    spindle_demand: float  # spindle-seconds per spindle
    delays: float  # s off the queues: tier read, link latencies, wait for the most loaded spindle
    array_per_byte: float  # spindle-seconds per byte, per spindle


class _Compiled:
    """Everything about a scenario that does not depend on the queueing solution."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        cluster = scenario.cluster
        self.hosts = cluster.hosts
        self.peer_links = cluster.peer_links
        self.per_host = _PER_HOST + 2 * (self.peer_links - 1)  # station slots per host
        self.lanes = self.hosts * self.peer_links  # compression switches: one per (host, sending peer port)
        self.shared = self.hosts * self.per_host
        self.station_count = self.shared + 4
        tier = cluster.tier
        self.tier_read_latency = tier.read_latency
        self.tier_write_latency = tier.write_latency
        self.exponential_tier = tier.service == "exponential"
        cap = tier.controller_bandwidth or math.inf
        self.read_rate = min(tier.read_bandwidth, cap)
        self.write_rate = min(tier.write_bandwidth, cap)
        self.gc_rate = tier.gc_rate or math.inf
        self.clean_pool = float(tier.clean_pool) if tier.clean_pool is not None else math.inf
        self.storage_link = cluster.storage_link
        self.peer_link = cluster.peer_link
        self.shared_fabric = cluster.peer_fabric == "shared"
        self.servers = [1] * self.station_count
        for h in range(self.hosts):
            self.servers[h * self.per_host + _TIER] = 1 if self.exponential_tier else tier.channels
        self.is_port = [False] * self.station_count
        self.capacity = [1.0] * self.station_count
        for h in range(self.hosts):
            for k in range(self.peer_links):  # each peer port at one port's line rate
                for station in (self.peer_station(h, k, True), self.peer_station(h, k, False)):
                    self.is_port[station] = True
                    self.capacity[station] = cluster.peer_link.bandwidth
            for slot in (_STORAGE_TX, _STORAGE_RX):
                self.is_port[h * self.per_host + slot] = True
                self.capacity[h * self.per_host + slot] = cluster.storage_link.bandwidth
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
        self.mixes = [_Mix(group.workload, cluster.peer_link, cluster.storage_link) for group in scenario.groups]
        self.chains = self._chains()
        peer = cluster.peer_link
        self.ack_seconds = peer.latency + framed_bytes(peer, ACK_BYTES)[0] / peer.bandwidth
        writers = [ch for ch in self.chains if ch.write_back and ch.read_fraction < 1.0]
        self.destaging_hosts = [any(ch.host == h for ch in writers) for h in range(self.hosts)]
        self.adaptive = cluster.compression.mode == "adaptive"
        self.compression_threshold = cluster.compression.threshold
        self.compress_always = cluster.compression.mode == "always"
        self._batch_mix = [self._host_write_mix(h) for h in range(self.hosts)]
        self._batch_shapes: dict[tuple[tuple[float, float, float], float], tuple[float, int]] = {}
        self._batch_requests: dict[tuple[float, int], tuple[float, float, float]] = {}
        self._full_batches: dict[tuple[float, float, float], _FullBatch] = {}
        self._destage_steps: dict[tuple[float, int], _DestageSteps] = {}
        self.vmotions = [e for e in scenario.events if isinstance(e, VMotion)]
        # What the timeline runs and ends: each vMotion's streams on each port pair they use.
        self.vmotion_pairs = [_VMotionPair(v, e, k, streams) for v, e in enumerate(self.vmotions) for k, streams in self.vmotion_streams(e)]
        run = scenario.run
        self.duration = run.duration
        self.window = (run.warmup, run.duration)
        self.cuts = self._cuts()
        self.clocks = [DutyClock(group.workload.duty_cycle) for group in scenario.groups]
        self.intervals = self._intervals()
        self.period, self.period_intervals, self.repeats = self._period()
        self.network = _Network(self, self._paths())
        self.read_cache = _ReadCache(self)
        self.hit = self.read_cache.hit_ratios({})
        self.presolved: tuple[_StateKey, _Solver, _StateResult] | None = None
        if self.network.closed_readers:
            # A closed group's access rate, hence its hit ratio, depends on its latency: solve both together,
            # with every group on, and keep that state's solution for the timeline.
            everyone = frozenset(range(len(scenario.groups)))
            hosts = self.hosts
            key = _StateKey(everyone, frozenset(), (False,) * hosts, (_KEEPING_UP,) * hosts, (False,) * self.lanes, (0.0,) * hosts)
            solver = _Solver(self, key, self.hit)
            result = solver.solve(refine_hits=True)
            self.hit = solver.hit
            self.presolved = (key, solver, result)

    def _station_names(self) -> list[str]:
        names = [""] * self.station_count
        for h in range(self.hosts):
            base = h * self.per_host
            names[base + _TIER] = f"host{h}.tier"
            for k in range(self.peer_links):
                port = "peer" if self.peer_links == 1 else f"peer{k}"  # the simulator's names (Host.peer_txs)
                names[self.peer_station(h, k, True)] = f"host{h}.{port}.tx"
                names[self.peer_station(h, k, False)] = f"host{h}.{port}.rx"
            names[base + _STORAGE_TX] = f"host{h}.storage.tx"
            names[base + _STORAGE_RX] = f"host{h}.storage.rx"
        names[self.shared + _ARRAY] = "array"
        names[self.shared + _ARRAY_RX] = "array.rx"
        names[self.shared + _ARRAY_TX] = "array.tx"
        if self.shared_fabric:
            names[self.shared + _FABRIC] = "peer.fabric"
        return names

    def _chains(self) -> list[_Chain]:
        scenario = self.scenario
        chains = []
        compression = scenario.cluster.compression.mode != "off"
        for g, group in enumerate(scenario.groups):
            w = group.workload
            closed = w.mode == "closed"
            rate = 0.0 if closed else (w.iops if w.iops is not None else cast(float, w.throughput) / self.mixes[g].size)
            for h in scenario.group_hosts(group):
                chains.append(
                    _Chain(
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
        return chains

    # -- service times ---------------------------------------------------------------------------

    def tier_steps(self, host: int, size: float, size_sq: float, is_write: bool) -> list[_Step]:
        """Steps of one tier operation of mean ``size`` (``size_sq``: mean squared size).

        A write's first step is the GC server, present only while the host's tier is past its cliff.
        """
        base = host * self.per_host
        latency = self.tier_write_latency if is_write else self.tier_read_latency
        per_byte = 1.0 / (self.write_rate if is_write else self.read_rate)
        size_scv = max(0.0, size_sq / size**2 - 1.0)
        steps = []
        if is_write and self.gc_rate < math.inf:
            # Past the cliff the pool refills at gc_rate: a server of that rate. Foreground passes (gc_pass)
            # bunch the waiting into stalls but leave the rate, hence a saturated closed loop's mean, alone.
            steps.append(
                _Step(_QUEUE, station=base + _GC, scv=size_scv, switch=_PAST_CLIFF, switch_host=host, switched_service=size / self.gc_rate)
            )
        mean = latency + size * per_byte
        if self.exponential_tier:
            steps.append(_Step(_QUEUE, station=base + _TIER, service=mean, scv=1.0))
            return steps
        variance = per_byte**2 * max(0.0, size_sq - size * size)
        steps.append(_Step(_QUEUE, station=base + _TIER, service=mean, scv=variance / mean**2 if mean > 0 else 0.0))
        transfer = size * per_byte
        if transfer > 0:
            steps.append(_Step(_PIPE, station=base + _PIPE_SLOT, service=transfer, scv=size_scv))
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
        key = (batch, runs)
        request = self._batch_requests.get(key)
        if request is None:
            # The runs are equal: the request is `runs` times one run's operations, of the same mean and variance.
            operations, mean, variance = self.array_request([batch / runs], True, 1.0 / (runs + 1))
            request = self._batch_requests[key] = (operations * runs, mean, variance)
        return request

    def full_batch(self, host: int) -> _FullBatch:
        """The host's destage batch with a backlog (full batches), for its drain capacity."""
        full = self._full_batches.get(self._batch_mix[host])
        if full is None:
            batch, runs = self.batch_shape(host, math.inf, True)
            operations, mean, variance = self.batch_request(batch, runs)
            if self.cache_ack is not None:
                imbalance = self.cache_ack
            else:
                per_spindle = operations / self.spindles
                spread = math.sqrt(per_spindle * (1.0 - 1.0 / self.spindles))
                imbalance = (spread * mean + math.sqrt(variance)) * _expected_max_normal(min(operations, self.spindles))
            full = self._full_batches[self._batch_mix[host]] = _FullBatch(
                size=batch,
                wire=self.storage_seconds(batch),
                spindle_demand=operations / self.spindles * mean,
                delays=self.tier_read_latency + batch / self.read_rate + 2.0 * self.storage_link.latency + imbalance,
                array_per_byte=operations * mean / batch / self.spindles,
            )
        return full

    def destage_steps(self, batch: float, runs: int) -> _DestageSteps:
        """Service times of one destage batch of ``batch`` bytes in ``runs`` runs: the tier read's steps then the
        array write's spindle step (the order of :attr:`_Network.destage_fcfs`), and the storage transfer."""
        key = (batch, runs)
        steps = self._destage_steps.get(key)
        if steps is None:
            fcfs = self.tier_steps(0, batch, batch * batch, False) + [self.spindle_step(*self.batch_request(batch, runs))]
            steps = self._destage_steps[key] = _DestageSteps(
                service=np.array([s.service for s in fcfs]),
                scv=np.array([s.scv for s in fcfs]),
                share=np.array([s.visits / self.spindles if s.kind == _SPINDLE else 1.0 for s in fcfs]),
                spread=np.array([_expected_max_normal(s.visits) if s.kind == _SPINDLE else 0.0 for s in fcfs]),
                wire=self.storage_seconds(batch),
            )
        return steps

    def spindle_step(self, operations: float, mean: float, variance: float) -> _Step:
        """The array step of a request of ``operations`` spindle operations of ``mean`` and ``variance`` each."""
        return _Step(_SPINDLE, station=self.shared + _ARRAY, service=mean, scv=variance / mean**2, visits=operations)

    def storage_seconds(self, nbytes: float) -> float:
        """Time (s) of ``nbytes`` of payload, framed, at the storage link's line rate."""
        storage = self.storage_link
        return framed_bytes(storage, nbytes)[0] / storage.bandwidth

    def peer_station(self, host: int, port: int, tx: bool) -> int:
        """The station of the host's peer port number ``port``, sending (``tx``) or receiving direction."""
        slot = (_PEER_TX if tx else _PEER_RX) if port == 0 else _PER_HOST + 2 * (port - 1) + (0 if tx else 1)
        return host * self.per_host + slot

    def peer_port(self, source: int, target: int) -> int:
        """The peer port pair a transfer from ``source`` to ``target`` uses, as the simulator's ``Host.peer_port``:
        ``(d - 1) mod peer_links`` with ``d = (target - source) mod hosts``, the same number at both ends."""
        return ((target - source) % self.hosts - 1) % self.peer_links

    def peer_ports(self, source: int, target: int, port: int | None = None) -> list[int]:
        """Ports of a peer transfer: the source's tx, the target's rx (of the pair ``port``, by default the
        one :meth:`peer_port` hashes the host pair to), then a shared fabric if there is one."""
        k = self.peer_port(source, target) if port is None else port
        ports = [self.peer_station(source, k, True), self.peer_station(target, k, False)]
        if self.shared_fabric:
            ports.append(self.shared + _FABRIC)
        return ports

    def replica_targets(self, host: int, count: int) -> list[tuple[int, int]]:
        """(target host, sending peer port) of each of the ``count`` replicas of a write on ``host``: to the ring
        peers ``host + 1 .. host + count``, each on the port :meth:`peer_port` hashes that pair to."""
        targets = [(host + r) % self.hosts for r in range(1, count + 1)]
        return [(target, self.peer_port(host, target)) for target in targets]

    def lane(self, host: int, port: int) -> int:
        """The compression switch of the replicas leaving ``host`` on its peer port ``port``: lane
        ``host + hosts x port`` (lanes below ``hosts`` are also the host switches of the other kinds)."""
        return host + self.hosts * port

    def vmotion_streams(self, event: VMotion) -> list[tuple[int, int]]:
        """(port pair, streams on it) of a vMotion, pairs that carry none left out: stream ``i`` uses the pair
        ``i mod peer_links`` (multi-NIC vMotion, as the simulator's ``_vmotion``)."""
        links = self.peer_links
        split = ((k, event.streams // links + (1 if k < event.streams % links else 0)) for k in range(links))
        return [(k, streams) for k, streams in split if streams > 0]

    def vmotion_ports(self, v: int) -> list[int]:
        """The ports of the vMotion pair ``v`` (of :attr:`vmotion_pairs`): the source's tx and the target's rx
        of its port pair, then a shared fabric if there is one."""
        pair = self.vmotion_pairs[v]
        return self.peer_ports(pair.event.source_host, pair.event.target_host, pair.pair)

    def permanent_flows(self, vmotions: frozenset[int]) -> list[float]:
        """Per station, the permanent flows of these running vMotion pairs, in units of one flow's weight."""
        permanent = [0.0] * self.station_count
        for v in vmotions:
            pair = self.vmotion_pairs[v]
            for port in self.vmotion_ports(v):
                permanent[port] += pair.streams * pair.event.weight
        return permanent

    def vmotion_rates(self, vmotions: frozenset[int], utilization: _Floats) -> dict[int, float]:
        """Framed bytes/s each running vMotion pair moves, its flows taking what the other traffic leaves of
        each port (``utilization``: the other traffic's, per station): the smaller of what its tx and its rx
        leave and of its streams' share of what a shared fabric leaves (shared with the vMotion's other running
        pairs by stream count); at least 0.1% of a port's rate. While all pairs of a vMotion run, their sum is
        the sum over the pairs of min(tx left, rx left), at most what the fabric leaves if each takes its share."""

        def left(port: int) -> float:
            return max(0.0, 1.0 - float(utilization[port])) * self.capacity[port]

        rates = {}
        for v in vmotions:
            pair = self.vmotion_pairs[v]
            tx, rx, *fabric = self.vmotion_ports(v)
            rate = min(left(tx), left(rx))
            if fabric:
                streams = sum(self.vmotion_pairs[u].streams for u in vmotions if self.vmotion_pairs[u].vmotion == pair.vmotion)
                rate = min(rate, left(fabric[0]) * (pair.streams / streams))
            rates[v] = max(rate, 1e-3 * self.peer_link.bandwidth)
        return rates

    # -- the paths of every chain's I/Os -----------------------------------------------------------

    def _paths(self) -> list[list[_Op]]:
        """Per group, the ops of a chain of it on host 0 (a template: its chains differ only by host), with the
        steps a state can switch (GC server, buffer admission, compression)."""
        templates = []
        for g in range(len(self.scenario.groups)):
            first = next((i for i, ch in enumerate(self.chains) if ch.group == g), None)
            templates.append(self._chain_paths(first, dataclasses.replace(self.chains[first], host=0)) if first is not None else [])
        return templates

    def _chain_paths(self, index: int, chain: _Chain) -> list[_Op]:
        """The ops of one chain: its writes, then its read hits and read misses."""
        h = chain.host
        mix = self.mixes[chain.group]
        size, size_sq = mix.size, mix.size_sq
        ops = []
        if chain.read_fraction < 1.0:
            ops.append(self._write(index, chain))
        if chain.read_fraction > 0.0:
            ops.append(_Op(index, "read", "hit", chain.read_fraction, size, [self.tier_steps(h, size, size_sq, False)]))
            leg = [
                _Step(_DELAY, service=self.storage_link.latency * 2.0),
                self.spindle_step(*self.array_request([size], False, 1.0)),
                _Step(_FLOW, ports=(self.shared + _ARRAY_TX, h * self.per_host + _STORAGE_RX), service=mix.storage_seconds),
            ]
            fill = self.tier_steps(h, size, size_sq, True)
            ops.append(_Op(index, "read", "miss", chain.read_fraction, size, [leg], background=fill))
        return ops

    def _write(self, index: int, chain: _Chain) -> _Op:
        h = chain.host
        base = h * self.per_host
        mix = self.mixes[chain.group]
        size, size_sq = mix.size, mix.size_sq
        probability = 1.0 - chain.read_fraction
        legs = [self.tier_steps(h, size, size_sq, True)]
        if not chain.write_back:
            storage = self.storage_link
            leg = [
                _Step(_DELAY, service=storage.latency * 2.0),
                _Step(_FLOW, ports=(base + _STORAGE_TX, self.shared + _ARRAY_RX), service=mix.storage_seconds),
            ]
            spindles = self.spindle_step(*self.array_request([size], True, 1.0))
            background = []
            if self.cache_ack is not None:  # the controller cache answers; the spindles work off the path
                leg.append(_Step(_DELAY, service=self.cache_ack))
                background.append(spindles)
            else:
                leg.append(spindles)
            legs.append(leg)
            return _Op(index, "write", "write", probability, size, legs, background=background)
        peer = self.peer_link
        compression = self.scenario.cluster.compression
        switch = _COMPRESSED if chain.compressible else _ALWAYS
        delay = peer.latency + self.ack_seconds
        compressed_delay = size / compression.throughput + peer.latency + self.ack_seconds
        replicas = self.replica_targets(h, chain.replicas)
        sending = [k for _, k in replicas]
        for target, k in replicas:
            ports = self.peer_ports(h, target)
            # The replicas of one write leave together: each shares its sending port with the siblings that
            # leave on the same port (all of them with one port), and a shared fabric with all of them, for its
            # whole transfer. Their targets, hence receiving ports, differ.
            siblings = (sending.count(k) - 1.0, 0.0, *(chain.replicas - 1.0 for _ in ports[2:]))
            lane = self.lane(h, k)  # compression is judged per sending port
            flow = _Step(
                _FLOW,
                ports=tuple(ports),
                service=mix.peer_seconds,
                siblings=siblings,
                switch=switch,
                switch_host=lane,
                switched_service=mix.peer_compressed_seconds,
            )
            leg = [_Step(_DELAY, service=delay, switch=switch, switch_host=lane, switched_service=compressed_delay), flow]
            leg += self.tier_steps(target, size, size_sq, True)
            legs.append(leg)
        after = []
        if chain.closed:
            after.append(_Step(_QUEUE, station=base + _ADMIT, switch=_ADMISSION, switch_host=h, switched_service=size))
        return _Op(index, "write", "write", probability, size, legs, after=after)

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
        size = sum(self.mixes[ch.group].size * w for ch, w in weights) / total
        sequential = [(ch, w) for ch, w in weights if ch.sequential]
        random_share = 1.0 - sum(w for _, w in sequential) / total
        vms = float(sum(ch.vms for ch, _ in sequential))
        return size, random_share, vms

    def batch_shape(self, host: int, byte_rate: float, backlogged: bool) -> tuple[float, int]:
        """(mean batch bytes, contiguous runs per batch) of a host's destaging at ``byte_rate`` bytes/s.

        With a backlog every batch is full. Otherwise a write gets a batch of its own unless all flushers
        are busy; then a freed flusher takes what arrived in ``cycle / concurrency``. Remembered per
        (write mix, rate): a solution asks for the same shape several times, and alike hosts share them.
        """
        if backlogged or not math.isfinite(byte_rate):
            byte_rate = math.inf
        key = (self._batch_mix[host], byte_rate)  # hosts with the same write mix share their shapes
        shape = self._batch_shapes.get(key)
        if shape is None:
            shape = self._batch_shapes[key] = self._batch_shape(self._batch_mix[host], byte_rate)
        return shape

    def _batch_shape(self, mix: tuple[float, float, float], byte_rate: float) -> tuple[float, int]:
        size, random_share, sequential_vms = mix
        spec = self.destager
        largest = max(1.0, spec.max_batch / size)
        if not math.isfinite(byte_rate):
            writes = largest
        else:
            write_rate = byte_rate / size
            writes = 1.0
            storage = self.storage_link
            for _ in range(6):
                batch = writes * size
                runs = self.runs(writes, random_share, sequential_vms)
                operations, mean, _ = self.batch_request(batch, runs)
                array_time = self.cache_ack if self.cache_ack is not None else mean * max(1.0, operations / self.spindles)
                cycle = self.tier_read_latency + batch / self.read_rate + self.storage_seconds(batch) + 2.0 * storage.latency + array_time
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

    # -- the timeline ----------------------------------------------------------------------------

    def _cuts(self) -> list[float]:
        """Times in [0, duration] where a duty cycle switches or a vMotion starts."""
        scenario = self.scenario
        end = scenario.run.duration
        cuts = {0.0, end, *(e.at for e in self.vmotions if e.at < end)}
        for duty in self._pausing_duties():
            assert duty.on is not None and duty.off is not None
            cycle = duty.on + duty.off
            t = -duty.phase
            while t < end:
                cuts.update(x for x in (t, t + duty.on) if 0.0 < x < end)
                t += cycle
        return sorted(cuts)

    def _pausing_duties(self) -> list[DutyCycle]:
        """The groups' on/off duty cycles that pause (without pauses, off = 0, a group is always on)."""
        return [d for g in self.scenario.groups if (d := g.workload.duty_cycle) is not None and d.shape == "onoff" and d.off]

    def _intervals(self) -> list[_Interval]:
        """The run cut into intervals over which the same groups are on: cuts where no group switches are
        dropped; a vMotion start always begins an interval."""
        starts = {e.at for e in self.vmotions}
        cycled = [(g, clock) for g, clock in enumerate(self.clocks) if clock.duty is not None and clock.duty.shape == "onoff"]
        always = frozenset(range(len(self.clocks))) - {g for g, _ in cycled}
        bounds: list[tuple[float, float, frozenset[int]]] = []
        for start, end in itertools.pairwise(self.cuts):
            middle = (start + end) / 2.0
            groups = always | frozenset(g for g, clock in cycled if clock.is_on(middle))
            if bounds and bounds[-1][2] == groups and start not in starts:
                bounds[-1] = (bounds[-1][0], end, groups)
            else:
                bounds.append((start, end, groups))
        return [_Interval(*bound) for bound in bounds]

    def _period(self) -> tuple[float, int, list[int]]:
        """The duty cycles' common period (s, 0 if they have none), the intervals in one period, and per
        interval how many intervals from it on repeat the one a period earlier (same groups, same times
        shifted by the period)."""
        intervals = self.intervals
        cycles = {(duty.on or 0.0) + (duty.off or 0.0) for duty in self._pausing_duties()}
        if len(cycles) != 1 or len(intervals) < 6:
            return 0.0, 0, [0] * len(intervals)
        period = cycles.pop()
        middle = len(intervals) // 3
        start = intervals[middle].start
        count = next(
            (m for m in range(1, len(intervals) - middle) if abs(intervals[middle + m].start - start - period) <= 1e-9 * period), 0
        )
        if count == 0:
            return 0.0, 0, [0] * len(intervals)
        repeats = [0] * (len(intervals) + 1)
        for i in range(len(intervals) - 1, count - 1, -1):
            now, before = intervals[i], intervals[i - count]
            same = (
                now.groups == before.groups
                and abs(now.start - before.start - period) <= 1e-9 * period
                and abs(now.end - before.end - period) <= 1e-9 * period
            )
            repeats[i] = repeats[i + 1] + 1 if same else 0
        return period, count, repeats[:-1]


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


class _ReadCache:
    """The hosts' read caches under Che's approximation, every chain's popularity bins as arrays.

    A line of a bin is referenced at ``rate_per_io`` times its chain's I/O rate (its hottest block's rate plus
    the mean of its other blocks'). Hosts without reads have no bins.
    """

    def __init__(self, c: _Compiled):
        scenario = c.scenario
        cache = scenario.cluster.cache
        line = cache.line
        per_line = line / BLOCK
        self.capacity = float((cache.capacity if cache.capacity is not None else scenario.cluster.tier.capacity) // line)
        start, end = c.window
        self.times = np.array([[start + (end - start) * x] for x in (0.1127, 0.5, 0.8873)])  # 3-point Gauss-Legendre
        self.weights = np.array([[5.0 / 18.0], [8.0 / 18.0], [5.0 / 18.0]])
        self.nominal = np.array([ch.nominal_rate for ch in c.chains], dtype=np.float64)
        self.hosts = c.hosts
        self.chains = len(c.chains)
        per_group: list[list[tuple[float, float, float, float]]] = []  # (lines, rate per I/O, mass, spans) per bin
        for g, group in enumerate(scenario.groups):
            w = group.workload
            vms = group.vms_per_host
            spans = sum(p * (1.0 + max(0.0, s - BLOCK) / line) for s, p in c.mixes[g].pairs)
            blocks = max(1, w.working_set // BLOCK)
            lines = max(1.0, w.working_set / line)
            per_group.append(
                [
                    (vms * min(count, lines) * lines / blocks, spans * (mass / count + (per_line - 1.0) / blocks) / vms, mass, spans)
                    for mass, count in _popularity_bins(w.access, w.zipf_theta, blocks)
                ]
            )
        bins: list[tuple[int, int, float, float, float, float]] = []  # (host, chain, lines, rate per I/O, mass, spans)
        for h in range(c.hosts):
            members = [i for i, ch in enumerate(c.chains) if ch.host == h]
            if any(c.chains[i].read_fraction > 0 for i in members):
                bins += [(h, i, *b) for i in members for b in per_group[c.chains[i].group]]
        self.host = np.array([b[0] for b in bins], dtype=np.intp)
        self.chain = np.array([b[1] for b in bins], dtype=np.intp)
        self.lines = np.array([b[2] for b in bins], dtype=np.float64)
        self.rate_per_io = np.array([b[3] for b in bins], dtype=np.float64)
        self.mass = np.array([b[4] for b in bins], dtype=np.float64)
        self.spans = np.array([b[5] for b in bins], dtype=np.float64)
        self.reads = np.array([c.chains[b[1]].read_fraction > 0 for b in bins], dtype=bool)
        self.weighted_mass = self.weights * self.mass  # Gauss-Legendre weight x bin mass
        # A host evicts only if its chains' lines do not all fit.
        self.evicting = _sums(self.host, self.lines, c.hosts) > self.capacity
        self.any_evicting = bool(self.evicting.any())

    def hit_ratios(self, rates: dict[int, float]) -> list[float]:
        """Hit probability of each chain's reads, averaged over the window (Gauss-Legendre, 3 points).

        ``rates``: chain -> I/Os per s; open chains default to their rate, closed ones to
        customers / (think time + 1 ms) until a solution refines them. A line is present at ``t`` with
        probability ``1 - exp(-rate min(t, T_C))``; an I/O hits if all the lines it spans are present.
        """
        if not self.host.size:
            return [0.0] * self.chains
        chain_rates = self.nominal.copy()
        for chain, rate in rates.items():
            chain_rates[chain] = rate
        line_rates = chain_rates[self.chain] * self.rate_per_io
        horizon = np.minimum(self.times, self._che_times(line_rates)[self.host])
        present = 1.0 - np.exp(-line_rates * horizon)
        weight = np.add.reduce(self.weighted_mass * present**self.spans, axis=0)
        hits = _sums(self.chain[self.reads], weight[self.reads], self.chains)
        return hits.tolist()  # type: ignore[no-any-return]

    def _che_times(self, line_rates: _Floats) -> _Floats:
        """Per host, Che's characteristic time (s): the expected number of lines referenced within it equals
        the capacity (infinite for a host that never fills).

        Newton's method from t = 0: the expected number referenced, ``sum lines (1 - exp(-rate t))``, is
        increasing and concave, so the iterates rise monotonically to the root.
        """
        hosts = self.hosts
        times = np.full(hosts, math.inf)
        if not self.any_evicting:
            return times
        reachable = _sums(self.host, self.lines * (line_rates > 0), hosts) > self.capacity
        filling = self.evicting & reachable
        if not filling.any():
            return times
        t = np.zeros(hosts)
        weighted = self.lines * line_rates
        for _ in range(_MAX_ITERATIONS):
            decay = np.exp(-line_rates * t[self.host])
            referenced = _sums(self.host, self.lines * (1.0 - decay), hosts)
            slope = _sums(self.host, weighted * decay, hosts)
            step = np.divide(self.capacity - referenced, slope, out=np.zeros(hosts), where=filling & (slope > 0))
            t = t + step
            if (step <= 1e-13 * t).all() or (t > 1e12).any():
                break
        times[filling] = np.where(t[filling] > 1e12, math.inf, t[filling])
        return times


# --------------------------------------------------------------------------- the paths as arrays


class _Rows:
    """Steps of one kind as arrays, one row per step (see :class:`_Network`).

    ``rate`` indexes the rates (an op, or ``ops + h`` for host h's destage batches), ``slot`` the leg slot the
    step's time adds to, ``chain`` the closed chain of the op and ``local`` the leg slot among the closed
    ops only (closed rows). A state's key can switch a row's service: see :func:`_switched`.
    """

    _COMMON: ClassVar[int] = 8  # columns of _columns() shared by every kind of step

    def __init__(self, table: _Floats):
        columns = table.T.copy()  # one contiguous row per column
        self.columns = columns
        indices = columns[[0, 1, 2, 3, 6, 7]].astype(np.intp)
        self.rate: _Indices = indices[0]
        self.slot: _Indices = indices[1]
        self.chain: _Indices = indices[2]
        self.local: _Indices = indices[3]
        self.switch: _Indices = indices[4]
        self.host: _Indices = indices[5]
        self.plain: _Floats = columns[4]
        self.switched: _Floats = columns[5]

    @staticmethod
    def _columns(row: _Row) -> tuple[float, ...]:
        step = row.step
        switched = step.switched_service if step.switch != _ALWAYS else step.service
        return (row.rate, row.slot, 0.0, 0.0, step.service, switched, step.switch, step.switch_host)

    @staticmethod
    def table(rows: list[tuple[float, ...]], width: int) -> _Floats:
        """Row tuples as a 2-D array (``width`` columns, also when there are none)."""
        return np.array(rows, dtype=np.float64).reshape(len(rows), width)


class _FcfsRows(_Rows):
    """Steps at FCFS stations: tier channels, tier pipe, GC and admission servers, spindles."""

    WIDTH: ClassVar[int] = _Rows._COMMON + 5

    def __init__(self, table: _Floats):
        super().__init__(table)
        columns = self.columns
        self.station = columns[8].astype(np.intp)
        self.scv: _Floats = columns[9]
        self.share: _Floats = columns[10]
        self.spread: _Floats = columns[11]
        self.timed: _Floats = columns[12]

    @classmethod
    def row(cls, row: _Row, spindles: int) -> tuple[float, ...]:
        return cls._columns(row) + cls._fcfs(row.step, spindles)

    @staticmethod
    def _fcfs(step: _Step, spindles: int) -> tuple[float, ...]:
        """(station, scv, share, spread, timed): the arrivals per request at the station (a request's spindle
        operations spread uniformly over the spindles); E[max of that many normals] for a spindle step (a
        request waits for its slowest operation: mean + sd x that); 0 for a pipe step, whose service is
        already in its channel step (only its wait is on the path), else 1."""
        if step.kind == _SPINDLE:
            return (step.station, step.scv, step.visits / spindles, _expected_max_normal(step.visits), 1.0)
        return (step.station, step.scv, 1.0, 0.0, 0.0 if step.kind == _PIPE else 1.0)


class _FlowRows(_Rows):
    """Transfers (processor sharing on each port they cross).

    ``ports`` is padded to three columns by repeating the first port, which leaves the slowest port alone;
    ``port_row`` and ``port_station`` list the real (row, port) pairs, for loads and queue lengths.
    """

    WIDTH: ClassVar[int] = _Rows._COMMON + 2 * _MAX_PORTS + 1

    def __init__(self, table: _Floats):
        super().__init__(table)
        columns = self.columns
        # Port by port (one row per port column): each column a contiguous array.
        self.ports_t = columns[8 : 8 + _MAX_PORTS].astype(np.intp)
        self.siblings_t = columns[8 + _MAX_PORTS : 8 + 2 * _MAX_PORTS]
        self.ports = self.ports_t.T
        real = np.arange(_MAX_PORTS) < table[:, -1:]
        self.port_row = np.nonzero(real)[0]
        self.port_station = self.ports[real]

    @classmethod
    def row(cls, row: _Row) -> tuple[float, ...]:
        return cls._columns(row) + cls._flow(row.step)

    @staticmethod
    def _flow(step: _Step) -> tuple[float, ...]:
        """(ports padded, siblings on each, number of real ports)."""
        pad = _MAX_PORTS - len(step.ports)
        ports = step.ports + (step.ports[0],) * pad
        siblings = step.siblings or (0.0,) * len(step.ports)
        return (*ports, *siblings, *(siblings[0],) * pad, len(step.ports))


@dataclass
class _Row:
    """A step of a template op (see :meth:`_Network._template`): the op's index and the step's leg slot."""

    step: _Step
    rate: int
    slot: int


@dataclass(frozen=True)
class _Copy:
    """A template table moved to one chain (or a host's destager): see :meth:`_Network._replicate`."""

    table: _Floats
    host: int
    rate_shift: int  # added to the template's rate indices
    first_op: int  # the copy's first op: its leg slots start at first_op * width
    first_closed: int  # the same among the closed ops; -1 for an open group's copy
    chain_slot: int  # a closed copy's chain among the closed chains


@dataclass(frozen=True)
class _StateServices:
    """Service times (s) of the network's rows in one state, and what follows from them (see :meth:`_Network.services`)."""

    open_fcfs: _Floats  # per open FCFS row
    open_flows: _Floats  # per open flow row
    closed_base: _Floats  # per closed FCFS row: its service on the path (0 for a pipe step)
    closed_svar: _Floats  # per closed FCFS row: its service variance on the path (s^2)
    closed_flows: _Floats  # per closed flow row
    delay_sums: _Floats  # per leg slot: the delays on it
    closed_delays: _Floats  # closed op x leg: the delays on it
    op_loads: _Floats  # station loads per I/O per s of each op (see _Network.op_loads)


# Kinds of rows in a template table, the last column of _UNIFIED (see _Network._template).
_OPEN_FCFS, _CLOSED_FCFS, _OPEN_FLOWS, _CLOSED_FLOWS, _DELAYS = range(5)
_UNIFIED = _FlowRows.WIDTH + 1


def _unified(row: tuple[float, ...], kind: int) -> tuple[float, ...]:
    """A row of any kind padded to the template table's width, its kind last."""
    return row + (0.0,) * (_UNIFIED - 1 - len(row)) + (float(kind),)


def _switched(rows: _Rows, on: npt.NDArray[np.bool_], scale: _Floats) -> _Floats:
    """Service times (s) of ``rows`` in a state: ``on[switch, host]`` picks the switched service, scaled by ``scale[switch, host]``."""
    flip = on[rows.switch, rows.host]
    return np.where(flip, rows.switched * scale[rows.switch, rows.host], rows.plain)


class _Network:
    """Every chain's ops as arrays, built once per scenario; a state only changes rates and services.

    Rows are split by how the station treats them. *Open* rows are evaluated as an open customer sees the
    station (time-averaged queues): open chains' paths, every op's off-path background (cache fills, a
    write-through's spindle work behind a controller cache) and the destagers. *Closed* rows are closed
    chains' paths, which see the other customers' queues less their own chain's share. Delays only add to
    their leg.

    Op ``o`` owns leg slots ``o * width`` to ``o * width + width - 1``: one per leg, the last for the steps
    after the join. Off-path rows add their time to the dump slot (``dump``), which nothing reads. Closed
    rows also have a ``local`` slot among the closed ops, which the fixed point iterates over. Rate indices
    ``0 .. len(ops) - 1`` are the ops, ``len(ops) + h`` host h's destage batches.
    """

    def __init__(self, c: _Compiled, templates: list[list[_Op]]):
        hosts = c.hosts
        k = c.station_count
        self.stations = k
        self.hosts = hosts
        members = [[i for i, ch in enumerate(c.chains) if ch.group == g] for g in range(len(templates))]
        self.count = count = sum(len(ops) * len(chains) for ops, chains in zip(templates, members, strict=True))
        self.width = max((len(op.legs) for ops in templates for op in ops), default=1) + 1
        self.dump = count * self.width
        closed_chains = [i for i, ch in enumerate(c.chains) if ch.closed]
        self.closed_chains = closed_chains
        closed_slot = {chain: slot for slot, chain in enumerate(closed_chains)}
        copies: list[_Copy] = []
        op_info: list[tuple[int, _Op]] = []  # (chain, template op) per op, in op order
        first_op = 0
        first_closed = 0
        for ops, chains in zip(templates, members, strict=True):
            if not chains:
                continue
            closed = c.chains[chains[0]].closed
            table = _Rows.table(self._template(c, ops, closed), _UNIFIED)
            for n, chain in enumerate(chains):
                shift = n * len(ops)
                closed_base = first_closed + shift if closed else -1
                copies.append(
                    _Copy(table, c.chains[chain].host, first_op + shift, first_op + shift, closed_base, closed_slot.get(chain, 0))
                )
            op_info += [(chain, op) for chain in chains for op in ops]
            first_op += len(ops) * len(chains)
            if closed:
                first_closed += len(ops) * len(chains)
        # The destagers' rows come last, with placeholder services: each solution sets them (_Solver._set_destage).
        destage_steps = c.tier_steps(0, 1.0, 1.0, False) + [c.spindle_step(1.0, 1.0, 0.0)]
        destage_flow = _Step(_FLOW, ports=(_STORAGE_TX, c.shared + _ARRAY_RX), service=1.0)
        destage = [_unified(_FcfsRows.row(_Row(step, count, -1), c.spindles), _OPEN_FCFS) for step in destage_steps]
        destage.append(_unified(_FlowRows.row(_Row(destage_flow, count, -1)), _OPEN_FLOWS))
        destage_table = _Rows.table(destage, _UNIFIED)
        copies += [_Copy(destage_table, h, h, count, -1, 0) for h in range(hosts)]
        merged = self._replicate(c, copies)
        kind = merged[:, -1]
        parts = [merged[kind == code] for code in range(_DELAYS + 1)]
        # The destagers' rows are the last of the open FCFS rows and flows, host by host.
        per_host = len(destage_steps)
        open_rows, open_flows = len(parts[_OPEN_FCFS]) - hosts * per_host, len(parts[_OPEN_FLOWS]) - hosts
        self.destage_fcfs = [slice(open_rows + h * per_host, open_rows + (h + 1) * per_host) for h in range(hosts)]
        self.destage_flow = [open_flows + h for h in range(hosts)]
        self.open_fcfs = _FcfsRows(parts[_OPEN_FCFS][:, : _FcfsRows.WIDTH])
        self.closed_fcfs = _FcfsRows(parts[_CLOSED_FCFS][:, : _FcfsRows.WIDTH])
        self.open_flows = _FlowRows(parts[_OPEN_FLOWS][:, : _FlowRows.WIDTH])
        self.closed_flows = _FlowRows(parts[_CLOSED_FLOWS][:, : _FlowRows.WIDTH])
        self.delays = _Rows(parts[_DELAYS][:, : _Rows._COMMON])
        self.op_chain_slot = np.array([closed_slot.get(chain, len(closed_chains)) for chain, _ in op_info], dtype=np.intp)
        self.op_closed = np.array([c.chains[chain].closed for chain, _ in op_info], dtype=bool)
        self.closed_ops = np.flatnonzero(self.op_closed)
        self.op_open = (~self.op_closed).astype(np.float64)  # 1 for an open op
        self.op_of_chain = (self.op_chain_slot[:, None] == np.arange(len(closed_chains))).astype(np.float64)  # op x closed chain
        self.closed_ports = {int(p) for p in self.closed_flows.port_station}
        self._op_arrays(c, op_info)
        self._closed_arrays(c)
        self._station_arrays(c)
        self.step = self._step_network(c)
        self._users: dict[int, list[int]] | None = None
        self._plain: _StateServices | None = None

    def _step_network(self, c: _Compiled) -> StepNetwork:
        """The lists an MVA step reads (see :mod:`simcache.mva_step`). Cells index flattened closed chain x
        station lists; a closed row's op is its index among the closed ops."""
        rows, flows, flows_c = self.closed_fcfs, self.open_flows, self.closed_flows
        k = self.stations
        row_cells = rows.chain * k + rows.station
        servers = np.array(c.servers, dtype=np.float64)
        closed = self.closed_ops
        return StepNetwork(
            stations=k,
            chains=len(self.closed_chains),
            per_server=self.per_server.tolist(),
            fcfs_per_server=(np.where(c.is_port, 0.0, 1.0) / servers).tolist(),  # 0 at ports: they have no FCFS wait
            half_per_server=(0.5 / servers).tolist(),
            exponent=[_sakasegawa_exponent(n) for n in c.servers],
            open_ports=flows.ports_t.tolist(),
            open_siblings=flows.siblings_t.tolist(),
            open_port_row=flows.port_row.tolist(),
            open_port_station=flows.port_station.tolist(),
            closed_station=rows.station.tolist(),
            closed_cell=row_cells.tolist(),
            closed_spread=rows.spread.tolist(),
            closed_share=rows.share.tolist(),
            closed_row_op=(rows.local // self.width).tolist(),
            closed_ports=flows_c.ports_t.tolist(),
            closed_siblings=flows_c.siblings_t.tolist(),
            closed_port_cells=(flows_c.chain * k + flows_c.ports_t).tolist(),
            closed_port_row=flows_c.port_row.tolist(),
            closed_flow_op=(flows_c.local // self.width).tolist(),
            closed_local_slots=np.concatenate((rows.local, flows_c.local)).tolist(),
            width=self.width,
            closed_missing=self.missing_legs[closed].ravel().tolist(),
            closed_op_chain=self.op_chain_slot[closed].tolist(),
            closed_cells=np.concatenate((row_cells, flows_c.chain[flows_c.port_row] * k + flows_c.port_station)).tolist(),
            think=[float(c.chains[chain].think) for chain in self.closed_chains],
        )

    def station_users(self, station: int) -> list[int]:
        """The ops whose paths cross ``station`` (they queue behind an overload there)."""
        if self._users is None:
            users: dict[int, set[int]] = {}
            for rows in (self.open_fcfs, self.closed_fcfs):
                for op, slot, k in zip(rows.rate.tolist(), rows.slot.tolist(), rows.station.tolist(), strict=True):
                    if slot != self.dump:
                        users.setdefault(k, set()).add(op)
            for flows in (self.open_flows, self.closed_flows):
                for row, k in zip(flows.port_row.tolist(), flows.port_station.tolist(), strict=True):
                    if flows.slot[row] != self.dump:
                        users.setdefault(k, set()).add(int(flows.rate[row]))
            self._users = {k: sorted(ops) for k, ops in users.items()}
        return self._users.get(station, [])

    def _template(self, c: _Compiled, ops: list[_Op], closed: bool) -> list[tuple[float, ...]]:
        """A group's rows for its chain on host 0, each padded by :func:`_unified` and ending with its kind.
        Rates are the template's op indices and leg slots ``o * width + j`` (-1 off the path): :meth:`_replicate`
        moves them to each chain's ops."""
        width = self.width
        rows: list[tuple[float, ...]] = []
        fcfs, flows = (_CLOSED_FCFS, _CLOSED_FLOWS) if closed else (_OPEN_FCFS, _OPEN_FLOWS)
        for o, op in enumerate(ops):
            steps = [(step, j) for j, leg in enumerate(op.legs) for step in leg] + [(step, width - 1) for step in op.after]
            for step, j in steps:
                row = _Row(step, o, o * width + j)
                if step.kind == _DELAY:
                    rows.append(_unified(_Rows._columns(row), _DELAYS))
                elif step.kind == _FLOW:
                    rows.append(_unified(_FlowRows.row(row), flows))
                else:
                    rows.append(_unified(_FcfsRows.row(row, c.spindles), fcfs))
            for step in op.background:
                # Off-path work is FCFS (cache fills, spindles behind a controller cache): its rate is the op's.
                assert step.kind not in (_DELAY, _FLOW)
                rows.append(_unified(_FcfsRows.row(_Row(step, o, -1), c.spindles), _OPEN_FCFS))
        return rows

    def _replicate(self, c: _Compiled, copies: list[_Copy]) -> _Floats:
        """The template tables (:meth:`_template`) of ``copies`` one after the other, each moved to its copy:
        rates renumbered by ``rate_shift``, leg slots by ``first_op``, stations and switch hosts moved to the
        copy's host, and for a closed group (``first_closed`` >= 0) the chain's slot and its ops' leg slots
        among the closed ops (numbered from ``first_closed``)."""
        hosts = c.hosts
        out = np.concatenate([copy.table for copy in copies])
        sizes = [len(copy.table) for copy in copies]
        per_copy = np.array(
            [(copy.host, copy.rate_shift, copy.first_op, copy.first_closed, copy.chain_slot) for copy in copies], dtype=np.float64
        ).reshape(len(copies), 5)
        per_row = np.repeat(per_copy, sizes, axis=0)
        host, rate_shift, first_op, first_closed, chain_slot = per_row.T
        template_slot = out[:, 1].copy()
        on_path = template_slot >= 0
        closed = first_closed >= 0
        out[:, 3] = np.where(on_path & closed, template_slot + first_closed * self.width, np.where(closed, 0.0, out[:, 3]))
        out[:, 2] = np.where(closed, chain_slot, out[:, 2])
        out[:, 1] = np.where(on_path, template_slot + first_op * self.width, self.dump)
        out[:, 0] += rate_shift
        # Switch hosts move to the copy's host; a compression lane keeps its port (see _Compiled.lane).
        out[:, 7] = (out[:, 7] % hosts + host) % hosts + out[:, 7] // hosts * hosts
        # Stations: the FCFS rows' one, the flows' ports (three columns); delays have none.
        kind = out[:, -1:]
        stations = out[:, 8:11]
        is_station = (kind < _DELAYS) & ((np.arange(3) == 0) | (kind >= _OPEN_FLOWS))
        per_host = c.per_host
        moved = ((stations // per_host + host[:, None]) % hosts) * per_host + stations % per_host
        out[:, 8:11] = np.where(is_station & (stations < c.shared), moved, stations)
        return out

    def services(self, key: _StateKey) -> _StateServices:
        """Service times in the state ``key``: switched by its GC cliffs, full buffers and compression.
        The services with no switch on (most states) are computed once."""
        switched = any(key.gc) or _FULL in key.buffer or any(key.compress)
        if not switched and self._plain is not None:
            return self._plain
        closed = self.closed_fcfs
        if switched:
            hosts = self.hosts
            flags = np.zeros((_SWITCHES, len(key.compress)), dtype=bool)  # switch x lane (a host's lane is the host)
            flags[_PAST_CLIFF, :hosts] = key.gc
            flags[_ADMISSION, :hosts] = [mode == _FULL for mode in key.buffer]
            flags[_COMPRESSED] = key.compress
            scale = np.ones(flags.shape)
            scale[_ADMISSION, :hosts] = [1.0 / d if d > 0 else 0.0 for d in key.drain]
            closed_service = _switched(closed, flags, scale)
            open_fcfs = _switched(self.open_fcfs, flags, scale)
            open_flows = _switched(self.open_flows, flags, scale)
            closed_flows = _switched(self.closed_flows, flags, scale)
            delays = _switched(self.delays, flags, scale)
        else:
            closed_service, open_fcfs, open_flows = closed.plain, self.open_fcfs.plain, self.open_flows.plain
            closed_flows, delays = self.closed_flows.plain, self.delays.plain
        delay_sums = _sums(self.delays.slot, delays, self.dump + 1)
        services = _StateServices(
            open_fcfs=open_fcfs,
            open_flows=open_flows,
            closed_base=closed_service * closed.timed,
            closed_svar=closed_service**2 * closed.scv * closed.timed,
            closed_flows=closed_flows,
            delay_sums=delay_sums,
            closed_delays=delay_sums[self.closed_op_slots],
            op_loads=self.op_loads(open_fcfs, closed_service, open_flows, closed_flows),
        )
        if not switched:
            self._plain = services
        return services

    def op_loads(self, open_fcfs: _Floats, closed_fcfs: _Floats, open_flows: _Floats, closed_flows: _Floats) -> _Floats:
        """Station loads per I/O per s of each op (5 x stations rows: busy, arrivals, second moment of service,
        then the open rows' busy and arrivals), with these services."""
        rows = self.op_fcfs_rows
        open_rows = self.open_fcfs
        closed = self.closed_fcfs
        share = open_rows.share[rows]
        service = open_fcfs[rows]
        open_busy = share * service
        closed_busy = closed.share * closed_fcfs
        ports = open_flows[self.open_flows.port_row[self.op_flow_ports]]
        weights = (
            open_busy,
            share,
            open_busy * service * (1.0 + open_rows.scv[rows]),
            open_busy,
            share,
            closed_busy,
            closed.share,
            closed_busy * closed_fcfs * (1.0 + closed.scv),
            ports,
            ports,
            closed_flows[self.closed_flows.port_row],
        )
        count = self.count
        flat = _sums(self.op_load_cells, np.concatenate(weights), 5 * self.stations * count)
        return flat.reshape(5 * self.stations, count)

    def _op_arrays(self, c: _Compiled, op_info: list[tuple[int, _Op]]) -> None:
        ops = [op for _, op in op_info]
        count = len(ops)
        chains = [c.chains[chain] for chain, _ in op_info]
        self.op_chain = np.array([chain for chain, _ in op_info], dtype=np.intp)
        self.op_group = np.array([ch.group for ch in chains], dtype=np.intp)
        # I/Os per s of an open op's chain; 1 for a closed op, whose chain's throughput multiplies it.
        self.op_unit_rate = np.array([1.0 if ch.closed else ch.rate * ch.customers for ch in chains], dtype=np.float64)
        self.op_probability = np.array([op.probability for op in ops], dtype=np.float64)
        self.op_hit = np.array([op.path == "hit" for op in ops], dtype=bool)
        self.op_miss = np.array([op.path == "miss" for op in ops], dtype=bool)
        self.op_is_write = np.array([op.name == "write" for op in ops], dtype=np.intp)
        self.op_size = np.array([op.size for op in ops], dtype=np.float64)
        # Per host, the write ops of its open write-back chains (they queue for a full buffer); per station,
        # the ops whose paths cross it (they queue behind an overload there).
        self.open_write_back_writes = [
            [
                o
                for o, (op, ch) in enumerate(zip(ops, chains, strict=True))
                if op.name == "write" and ch.write_back and not ch.closed and ch.host == h
            ]
            for h in range(c.hosts)
        ]
        # Missing legs never win the join: their slot sums get -inf.
        missing = np.full((count, self.width - 1), -math.inf)
        for o, op in enumerate(ops):
            missing[o, : len(op.legs)] = 0.0
        self.missing_legs = missing
        self.op_first_slot = np.arange(count, dtype=np.intp) * self.width
        # Per host, each times the op rates: write-back bytes accepted, bytes written into its tier; then per
        # compression lane (host and sending peer port), the port's utilization without compression.
        hosts = c.hosts
        flows = np.zeros((2 * hosts + c.lanes, count))
        for o, (op, chain) in enumerate(zip(ops, chains, strict=True)):
            h = chain.host
            if op.name == "write":
                replicas = c.replica_targets(h, chain.replicas) if chain.write_back else []
                if chain.write_back:
                    flows[h, o] += op.size
                    sending = [k for _, k in replicas]
                    for k in set(sending):
                        flows[2 * hosts + c.lane(h, k), o] += sending.count(k) * c.mixes[chain.group].peer_seconds
                flows[hosts + h, o] += op.size
                for target, _ in replicas:
                    flows[hosts + target, o] += op.size
            elif op.path == "miss":
                flows[hosts + h, o] += op.size
        self.host_flows = flows

    def _closed_arrays(self, c: _Compiled) -> None:
        closed = self.closed_ops
        self.closed_op_slots = closed[:, None] * self.width + np.arange(self.width)  # global slots of each closed op
        self.closed_readers = [slot for slot, chain in enumerate(self.closed_chains) if c.chains[chain].read_fraction > 0]
        self.all_slots = np.concatenate((self.open_fcfs.slot, self.closed_fcfs.slot, self.open_flows.slot, self.closed_flows.slot))

    def _station_arrays(self, c: _Compiled) -> None:
        servers = np.array(c.servers, dtype=np.float64)
        self.per_server = 1.0 / servers
        self.tier_stations = np.arange(c.hosts, dtype=np.intp) * c.per_host + _TIER
        self.pipe_stations = np.arange(c.hosts, dtype=np.intp) * c.per_host + _PIPE_SLOT
        # Load matrix cells (see _Solver._op_loads): blocks busy, arrivals, second moment, open busy, open arrivals.
        k = self.stations
        count = self.count
        block = k * count
        rows, closed = self.open_fcfs, self.closed_fcfs
        op_rows = np.flatnonzero(rows.rate < count)
        self.op_fcfs_rows = op_rows
        open_cell = rows.station[op_rows] * count + rows.rate[op_rows]
        closed_cell = closed.station * count + closed.rate
        flows, flows_c = self.open_flows, self.closed_flows
        op_ports = np.flatnonzero(flows.rate[flows.port_row] < count)
        self.op_flow_ports = op_ports
        flow_cell = flows.port_station[op_ports] * count + flows.rate[flows.port_row[op_ports]]
        closed_flow_cell = flows_c.port_station * count + flows_c.rate[flows_c.port_row]
        self.op_load_cells = np.concatenate(
            (
                open_cell,
                block + open_cell,
                2 * block + open_cell,
                3 * block + open_cell,
                4 * block + open_cell,
                closed_cell,
                block + closed_cell,
                2 * block + closed_cell,
                flow_cell,
                3 * block + flow_cell,
                closed_flow_cell,
            )
        )
        destage_rows = np.flatnonzero(rows.rate >= count)
        self.destage_fcfs_rows = destage_rows
        hosts = c.hosts
        dblock = k * hosts
        destage_cell = rows.station[destage_rows] * hosts + (rows.rate[destage_rows] - count)
        destage_ports = np.flatnonzero(flows.rate[flows.port_row] >= count)
        self.destage_flow_ports = destage_ports
        destage_flow_cell = flows.port_station[destage_ports] * hosts + (flows.rate[flows.port_row[destage_ports]] - count)
        self.destage_load_cells = np.concatenate(
            (
                destage_cell,
                dblock + destage_cell,
                2 * dblock + destage_cell,
                3 * dblock + destage_cell,
                4 * dblock + destage_cell,
                destage_flow_cell,
                3 * dblock + destage_flow_cell,
            )
        )


# --------------------------------------------------------------------------- one state


@dataclass(frozen=True)
class _StateKey:
    groups: frozenset[int]
    vmotions: frozenset[int]  # running vMotion pairs (of _Compiled.vmotion_pairs)
    gc: tuple[bool, ...]  # per host: past the clean-pool cliff
    buffer: tuple[int, ...]  # per host: _KEEPING_UP, _BACKLOGGED or _FULL
    compress: tuple[bool, ...]  # per compression lane (host and sending peer port, _Compiled.lane): replicas compressed
    drain: tuple[float, ...]  # per host: drain rate of a full buffer's admission server (bytes/s)


def _same_but_vmotions(one: _StateKey, other: _StateKey) -> bool:
    """Whether two state keys differ at most by their running vMotion pairs."""
    return (one.groups, one.gc, one.buffer, one.compress, one.drain) == (other.groups, other.gc, other.buffer, other.compress, other.drain)


@dataclass
class _StateResult:
    rates: _Floats  # per op of the network: I/Os per s (0 for ops that are off)
    response: _Floats  # per op: mean response (s)
    variance: _Floats  # per op: variance of the response (s^2)
    utilization: _Floats  # per station, as the simulator reports it
    write_back_bytes: list[float]  # per host: write-back bytes/s accepted (VM writes)
    tier_write_bytes: list[float]  # per host: bytes/s written into the tier
    peer_tx_uncompressed: list[float]  # per compression lane: its peer tx port's utilization if replicas were not compressed
    drain: list[float]  # per host: destage capacity with a backlog (bytes/s)
    overload: _Floats  # per station: open offered utilization above 1 (0 if none)
    overloaded: tuple[int, ...]  # stations with an overload
    vmotion_rate: dict[int, float]  # running vMotion pair -> framed bytes/s it gets


# What _Solver.copy() carries over besides the compiled scenario, the state key and the network: every other
# attribute (tests/test_analytic.py checks the list against a solved solver's).
_SOLVER_STATE = (
    "active",
    "batches",
    "closed_svar",
    "delay_sums",
    "destage_loads",
    "destage_rates",
    "drain",
    "exact",
    "hit",
    "on",
    "op_loads",
    "op_scale",
    "open_flow_service",
    "open_rates",
    "open_scv",
    "open_service",
    "open_share",
    "open_spread",
    "population",
    "rates",
    "result",
    "solution",
)


class _Solver:
    """One state: its op rates and service times, and the mean value analysis that solves it.

    Station loads are linear in the rates: ``rates.open_loads`` (open ops and destagers) plus
    ``rates.closed_loads`` times the closed chains' throughputs; both are kept up to date when the hit
    ratios or the destage load change (:meth:`_rates_changed`).
    """

    def __init__(self, compiled: _Compiled, key: _StateKey, hit: list[float] | None):
        """The state ``key`` with these read hit ratios; with ``hit`` None an empty shell for :meth:`copy`."""
        self.c = compiled
        self.key = key
        net = compiled.network
        self.net = net
        if hit is None:
            return
        hosts = compiled.hosts
        on_groups = np.zeros(len(compiled.scenario.groups))
        on_groups[list(key.groups)] = 1.0
        self.on = on_groups[net.op_group]
        chains = [compiled.chains[chain] for chain in net.closed_chains]
        self.population = [float(chain.customers) if chain.group in key.groups else 0.0 for chain in chains]  # 0: off
        self.active = [slot for slot, customers in enumerate(self.population) if customers > 0]
        self.exact = len(self.active) == 1 and self.population[self.active[0]] <= _EXACT_MVA_LIMIT
        own_share = [1.0 / customers if customers > 0 else 0.0 for customers in self.population]  # Schweitzer: 1 / N
        services = net.services(key)
        rows = net.open_fcfs
        self.open_service = services.open_fcfs.copy()  # copies: the destage rows change with the destage load
        self.open_scv = rows.scv.copy()
        self.open_share = rows.share.copy()
        self.open_spread = rows.spread.copy()
        self.open_flow_service = services.open_flows.copy()
        self.closed_svar = services.closed_svar
        self.delay_sums = services.delay_sums
        self.op_loads = services.op_loads
        self.batches = np.zeros(hosts)  # destage batches per s
        self.destage_rates = [0.0] * hosts  # bytes/s each host's flushers move
        self.destage_loads = np.zeros((5 * compiled.station_count, hosts))
        self.drain = [math.inf] * hosts
        self.solution: Sweep  # set by solve(): its last MVA step
        self.result: _StateResult  # set by solve()
        # What mva_step reads, as lists; the loads and probabilities are set by _set_hits.
        self.rates = StepRates(
            open_loads=[],
            closed_load_cells=[],
            closed_loads=[],
            permanent=compiled.permanent_flows(key.vmotions),
            open_flow_service=self.open_flow_service.tolist(),
            open_port_rates=[],
            population=self.population,
            own_rows=[own_share[chain] for chain in net.closed_fcfs.chain.tolist()],
            own_flows=[own_share[chain] for chain in net.closed_flows.chain.tolist()],
            closed_base=services.closed_base.tolist(),
            closed_svar=self.closed_svar.tolist(),
            closed_flow_service=services.closed_flows.tolist(),
            closed_delays=services.closed_delays.ravel().tolist(),
            closed_probability=[],
            active=bool(self.active),
        )
        self._set_hits(hit)

    def _set_hits(self, hit: list[float]) -> None:
        """Op probabilities with these read hit ratios (0 for ops of groups that are off)."""
        net = self.net
        self.hit = hit
        chain_hit = np.array(hit)[net.op_chain]
        split = np.where(net.op_hit, chain_hit, np.where(net.op_miss, 1.0 - chain_hit, 1.0))
        probability = net.op_probability * split * self.on
        self.op_scale = probability * net.op_unit_rate  # I/Os per s of an open op; per unit throughput of a closed one
        self.rates.closed_probability = probability[net.closed_ops].tolist()
        self._rates_changed()

    def _set_destage(self, byte_rates: list[float]) -> None:
        """Open load of destaging ``byte_rates`` bytes/s per host: tier reads, storage transfers, array writes."""
        c = self.c
        net = self.net
        for host, byte_rate in enumerate(byte_rates):
            if byte_rate <= 0:
                self.batches[host] = 0.0
                continue
            batch, runs = c.batch_shape(host, byte_rate, self.key.buffer[host] != _KEEPING_UP)
            self.batches[host] = byte_rate / batch
            steps = c.destage_steps(batch, runs)
            rows = net.destage_fcfs[host]
            self.open_service[rows] = steps.service
            self.open_scv[rows] = steps.scv
            self.open_share[rows] = steps.share
            self.open_spread[rows] = steps.spread
            self.open_flow_service[net.destage_flow[host]] = steps.wire
        self.rates.open_flow_service = self.open_flow_service.tolist()
        self.destage_rates = list(byte_rates)
        every = net.destage_fcfs_rows
        share = self.open_share[every]
        service = self.open_service[every]
        busy = share * service
        ports = self.open_flow_service[net.open_flows.port_row[net.destage_flow_ports]]
        weights = (busy, share, busy * service * (1.0 + self.open_scv[every]), busy, share, ports, ports)
        hosts = c.hosts
        flat = _sums(net.destage_load_cells, np.concatenate(weights), 5 * net.stations * hosts)
        self.destage_loads = flat.reshape(5 * net.stations, hosts)
        self._open_rates_changed()

    def _rates_changed(self) -> None:
        """Station loads and open flow rates after the op probabilities changed."""
        net = self.net
        self.open_rates = self.op_scale * net.op_open
        per_chain = self.op_loads.dot(net.op_of_chain * self.op_scale[:, None]).T  # closed chain x load cell
        cells = [np.flatnonzero(loads) for loads in per_chain]
        self.rates.closed_load_cells = [nonzero.tolist() for nonzero in cells]
        self.rates.closed_loads = [loads[nonzero].tolist() for loads, nonzero in zip(per_chain, cells, strict=True)]
        self._open_rates_changed()

    def _open_rates_changed(self) -> None:
        """The open station loads and open flow rates after the open op rates or the destage load changed."""
        net = self.net
        self.rates.open_loads = (self.op_loads.dot(self.open_rates) + self.destage_loads.dot(self.batches)).tolist()
        rates = np.concatenate((self.open_rates, self.batches))
        flows = net.open_flows
        self.rates.open_port_rates = rates[flows.rate[flows.port_row]].tolist()

    # -- mean value analysis ---------------------------------------------------------------------

    def solve(self, warm: _Solver | None = None, refine_hits: bool = False) -> _StateResult:
        """Mean value analysis of the state, with the destage load it implies (and, with ``refine_hits``, the
        read hit ratios its closed chains' rates imply): the flushers move what the VMs write while the
        buffer keeps up, and their drain capacity when there is a backlog.

        ``warm``: a solved neighbouring state, whose queues and destage load start the iteration.
        """
        chains = len(self.population)
        stations = self.net.stations
        throughput = [0.0] * chains
        queue = [0.0] * stations
        chain_queue = [0.0] * (chains * stations)
        if warm is not None:
            solution = warm.solution
            for k in self.active:
                throughput[k] = solution.throughput[k]
                cells = slice(k * stations, (k + 1) * stations)
                chain_queue[cells] = solution.chain_queue[cells]
            queue = list(solution.queue)
            self._set_destage(self._implied_destage(throughput, warm.drain))
        if self.exact:
            if warm is None:
                self._guess_destage()
            return self._solve_exact(refine_hits)
        if warm is None and self.active:
            throughput, queue, chain_queue = self._bound_start(throughput, queue, chain_queue)
        self.solution = self._fixed_point(throughput, queue, chain_queue, refine_hits)
        self.result = self._collect(self.solution)
        return self.result

    def _fixed_point(self, throughput: list[float], queue: list[float], chain_queue: list[float], refine_hits: bool) -> Sweep:
        """Schweitzer's fixed point from this start, with the destage load (and hit ratios) it implies: until no
        queue moves by more than ``_TOLERANCE`` times 1 + the longest queue. One pass if all traffic is open."""
        history: list[list[float]] = []
        checked = False  # the destage load (and hit ratios) were checked since they last changed
        for _ in range(_MAX_ITERATIONS):
            sweep = self._sweep(throughput, queue, chain_queue)
            change = max([abs(new - old) for new, old in zip(sweep.queue, queue, strict=True)])
            throughput, queue, chain_queue = sweep.throughput, sweep.queue, sweep.chain_queue
            limit = 1.0 + max(queue)
            converged = change <= _TOLERANCE * limit
            if converged or (not checked and change <= _LOOSE * limit):
                # Near the fixed point for the current destage load: is that load (and the hit ratios) settled?
                self.drain = self._drains(sweep)
                if self._destage_moved(sweep) | (refine_hits and self._hits_moved(sweep)):
                    checked = False
                    history = []
                    continue
                checked = True
                if converged:
                    return sweep
            history.append(chain_queue)
            if len(history) == 3:
                # A queue next to saturation creeps towards its fixed point by a factor of about its
                # utilization per pass: jump there (Aitken's delta-squared, station by station).
                chain_queue = aitken(history[0], history[1], history[2])
                queue = station_sums(chain_queue, len(throughput), len(queue))
                history = []
        self.drain = self._drains(sweep)
        return sweep

    def _solve_exact(self, refine_hits: bool) -> _StateResult:
        """Exact MVA of one closed chain (the population recursion), repeated until the destage load settles."""
        chains = len(self.population)
        stations = self.net.stations
        only = self.active[0]
        population = [0.0] * chains
        for _ in range(_MAX_OUTER):
            throughput = [0.0] * chains
            queue = [0.0] * stations
            chain_queue = [0.0] * (chains * stations)
            for n in range(1, int(self.population[only]) + 1):
                population[only] = float(n)
                sweep = self._sweep(throughput, queue, chain_queue, population)
                throughput, queue, chain_queue = sweep.throughput, sweep.queue, sweep.chain_queue
            self.drain = self._drains(sweep)
            if not self._destage_moved(sweep) and not (refine_hits and self._hits_moved(sweep)):
                break
        self.solution = sweep
        self.result = self._collect(sweep)
        return self.result

    def _op_rates(self, throughput: list[float]) -> _Floats:
        """I/Os per s of every op at these closed chains' throughputs (an open op's rate is its own)."""
        return cast(_Floats, self.op_scale * np.array([*throughput, 1.0])[self.net.op_chain_slot])

    def _implied_destage(self, throughput: list[float], drain: list[float]) -> list[float]:
        """Bytes/s each host's flushers move at these closed throughputs: their drain capacity with a backlog,
        else what the VMs write (at most that capacity)."""
        c = self.c
        write_back = self.net.host_flows[: c.hosts].dot(self._op_rates(throughput)).tolist()
        return [_flusher_rate(self.key.buffer[h], write_back[h], drain[h]) if c.destaging_hosts[h] else 0.0 for h in range(c.hosts)]

    def _destage_moved(self, sweep: Sweep) -> bool:
        """Whether the destage load this solution implies moved (by more than 1%) from the one it was solved
        with; if so it is set to the new one."""
        rates = self._implied_destage(sweep.throughput, self.drain)
        if all(abs(r - old) <= _SETTLED * max(r, 1.0) for r, old in zip(rates, self.destage_rates, strict=True)):
            return False
        self._set_destage(rates)
        return True

    def _hits_moved(self, sweep: Sweep) -> bool:
        """Whether the read hit ratios the closed chains' throughputs imply moved (by more than
        ``_HIT_SETTLED``) from the ones the solution was solved with; if so they are set to the new ones."""
        net = self.net
        hit = self.c.read_cache.hit_ratios({net.closed_chains[slot]: float(sweep.throughput[slot]) for slot in net.closed_readers})
        if all(abs(a - b) <= _HIT_SETTLED for a, b in zip(hit, self.hit, strict=True)):
            return False
        self._set_hits(hit)
        return True

    def _guess_destage(self) -> None:
        """A first destage load for a population recursion, which otherwise runs once without any: the one
        that two Schweitzer steps from empty queues imply (cheaper than a recursion of many customers)."""
        chains = len(self.population)
        stations = self.net.stations
        first = self._sweep([0.0] * chains, [0.0] * stations, [0.0] * (chains * stations))
        second = self._sweep(first.throughput, first.queue, first.chain_queue)
        self.drain = self._drains(second)
        self._set_destage(self._implied_destage(second.throughput, self.drain))

    def _bound_start(
        self, throughput: list[float], queue: list[float], chain_queue: list[float]
    ) -> tuple[list[float], list[float], list[float]]:
        """A starting point near the solution in saturation: throughputs cut to the busiest station's
        capacity (asymptotic bound) and the customers that leaves over waiting at that station."""
        first = self._sweep(throughput, queue, chain_queue)
        second = self._sweep(first.throughput, first.queue, first.chain_queue)
        utilization = second.utilization
        stations = len(utilization)
        busiest = max(range(stations), key=utilization.__getitem__)
        scale = 1.0 / max(1.0, utilization[busiest])
        throughput = [x * scale for x in second.throughput]
        chain_queue = [x * scale for x in second.chain_queue]
        think = self.net.step.think
        for k, customers in enumerate(self.rates.population):
            present = sum(chain_queue[k * stations : (k + 1) * stations]) + throughput[k] * think[k]
            chain_queue[k * stations + busiest] += max(0.0, customers - present)
        return throughput, station_sums(chain_queue, len(throughput), stations), chain_queue

    def _sweep(self, throughput: list[float], queue: list[float], chain_queue: list[float], exact: list[float] | None = None) -> Sweep:
        """One MVA step from these closed throughputs and queues (see :func:`simcache.mva_step.mva_step`)."""
        return mva_step(self.net.step, self.rates, throughput, queue, chain_queue, exact)

    def _responses(self, sweep: Sweep) -> tuple[_Floats, _Floats]:
        """Per op: mean response (s) and its variance (s^2): the critical (slowest) leg's and the after-join
        steps' service variances plus their squared waits."""
        net = self.net
        rows = net.open_fcfs
        wait = np.array(sweep.open_wait)[rows.station]
        open_svar = self.open_service**2 * self.open_scv * rows.timed
        open_time = self.open_service * rows.timed + wait + self.open_spread * np.sqrt(open_svar + wait * wait)
        times = np.concatenate((open_time, sweep.closed_time, sweep.open_flow_time, sweep.closed_flow_time))
        waits = np.concatenate((wait, sweep.closed_wait, sweep.open_flow_time, sweep.closed_flow_time))
        slots = net.dump + 1
        sums = _sums(net.all_slots, times, slots) + self.delay_sums
        legs = sums[:-1].reshape(net.count, net.width)
        critical = np.argmax(legs[:, :-1] + net.missing_legs, axis=1)
        response = sums[net.op_first_slot + critical] + legs[:, -1]
        spread = (
            _sums(net.all_slots, waits * waits, slots)
            + _sums(rows.slot, open_svar, slots)
            + _sums(net.closed_fcfs.slot, self.closed_svar, slots)
        )
        variance = spread[net.op_first_slot + critical] + spread[:-1].reshape(legs.shape)[:, -1]
        return response, variance

    def _collect(self, sweep: Sweep) -> _StateResult:
        c = self.c
        net = self.net
        hosts = c.hosts
        utilization = np.array(sweep.utilization)
        reported = utilization.copy()
        # The simulator counts a channel busy while its transfer waits for the pipe.
        pipes = net.pipe_stations
        pipe_waiting = np.array(sweep.queue)[pipes] + np.array(sweep.open_queue)[pipes]
        reported[net.tier_stations] = (np.array(sweep.busy)[net.tier_stations] + pipe_waiting) * net.per_server[net.tier_stations]
        vmotion_rate = c.vmotion_rates(self.key.vmotions, utilization)
        for v in self.key.vmotions:
            reported[c.vmotion_ports(v)] = 1.0  # the ports carrying its streams run at 100% while they last
        rates = self._op_rates(sweep.throughput)
        response, variance = self._responses(sweep)
        per_host = net.host_flows.dot(rates).tolist()
        overload = np.maximum(np.array(sweep.open_utilization) - 1.0, 0.0)
        return _StateResult(
            rates,
            response,
            variance,
            np.minimum(reported, 1.0),
            per_host[:hosts],
            per_host[hosts : 2 * hosts],
            per_host[2 * hosts :],
            list(self.drain),
            overload,
            tuple(np.flatnonzero(overload > 0).tolist()),
            vmotion_rate,
        )

    def copy(self, key: _StateKey) -> _Solver:
        """This solver, as the state ``key``: a shallow copy (its arrays shared), as ``copy.copy`` would make,
        which the compiled module's classes do not support."""
        other = _Solver(self.c, key, None)
        for name in _SOLVER_STATE:
            setattr(other, name, getattr(self, name))
        return other

    def same_destage(self, key: _StateKey) -> bool:
        """Whether the state ``key`` has this solved state's solution: the same but for buffers keeping up
        rather than backlogged (or the reverse), where that leaves the destage rates and batch shapes as
        they are (a drain-limited buffer destages at its drain capacity either way)."""
        own = self.key
        if (own.groups, own.gc, own.compress, own.drain) != (key.groups, key.gc, key.compress, key.drain) or own == key:
            return False
        c = self.c
        result = self.result
        for h in range(c.hosts):
            mode, before = key.buffer[h], own.buffer[h]
            if (mode == _FULL) != (before == _FULL):
                return False
            if mode == before or not c.destaging_hosts[h]:
                continue
            rate = _flusher_rate(mode, result.write_back_bytes[h], result.drain[h])
            if rate != self.destage_rates[h] or c.batch_shape(h, rate, mode != _KEEPING_UP) != c.batch_shape(
                h, rate, before != _KEEPING_UP
            ):
                return False
        return True

    def with_vmotions(self, key: _StateKey) -> tuple[_Solver, _StateResult]:
        """This solved state with other vMotions running, when no closed path or destager crosses their ports.

        The vMotions' flows then only slow open transfers: the closed chains' fixed point, the destage load
        and the drain rates stay as they are, and one MVA step from the solution re-evaluates the rest.
        """
        other = self.copy(key)
        other.rates = dataclasses.replace(self.rates, permanent=self.c.permanent_flows(key.vmotions))
        solution = self.solution
        other.solution = other._sweep(
            solution.throughput, solution.queue, solution.chain_queue, None if not self.exact else self.rates.population
        )
        other.result = other._collect(other.solution)
        return other, other.result

    def _drains(self, sweep: Sweep) -> list[float]:
        """Per host, the bytes/s its flushers destage with a backlog (infinite for a host that never destages):
        full batches, at most what the shared stations leave.

        The flushers are a closed loop of ``concurrency`` customers: the storage transfer and the array's
        spindle work are queues (slowed by the other traffic there, as in mixed MVA); the tier read, the
        latencies and the wait for the batch's most loaded spindle (binomial operation counts) are delays.
        """
        c = self.c
        utilization = sweep.utilization
        array_util = utilization[c.shared + _ARRAY]
        array_rx = utilization[c.shared + _ARRAY_RX]
        drains = []
        known: dict[tuple[Any, ...], float] = {}  # alike hosts (same write mix, load and port) drain alike
        for host in range(c.hosts):
            if not c.destaging_hosts[host]:
                drains.append(math.inf)
                continue
            own = self.destage_rates[host]
            port = utilization[host * c.per_host + _STORAGE_TX]
            inputs = (c._batch_mix[host], own, port, self.key.buffer[host] != _KEEPING_UP)
            drain = known.get(inputs)
            if drain is None:
                drain = known[inputs] = self._drain(host, own, array_util, array_rx, port)
            drains.append(drain)
        return drains

    def _drain(self, host: int, own: float, array_util: float, array_rx: float, port: float) -> float:
        """One host's drain capacity (bytes/s, see :meth:`_drains`) with its flushers moving ``own`` bytes/s, at
        these utilizations of the array, the array's receiving port and the host's storage sending port."""
        c = self.c
        full = c.full_batch(host)
        array_left = 1.0 - max(0.0, array_util - own * self._array_per_byte(host, own))
        own_wire = own * full.wire / full.size
        port_left = min(1.0 - port + own_wire, 1.0 - array_rx + own_wire)
        array_demand = 0.0 if c.cache_ack is not None else full.spindle_demand / max(array_left, _OVERLOAD_FLOOR)
        wire = full.wire / max(port_left, _OVERLOAD_FLOOR)
        batches, _, _ = mva_closed([wire, array_demand], full.delays, c.destager.concurrency)
        limit = max(array_left, 0.0) / full.array_per_byte if c.cache_ack is not None else math.inf
        return max(min(batches * full.size, limit), 1.0)

    def _array_per_byte(self, host: int, byte_rate: float) -> float:
        """Spindle-seconds per byte, per spindle, of the host's destage batches at ``byte_rate`` bytes/s."""
        if byte_rate <= 0:
            return 0.0
        c = self.c
        batch, runs = c.batch_shape(host, byte_rate, self.key.buffer[host] != _KEEPING_UP)
        operations, mean, _ = c.batch_request(batch, runs)
        return operations * mean / batch / c.spindles


def _flusher_rate(mode: int, write_back: float, drain: float) -> float:
    """Bytes/s a destaging host's flushers move with its buffer in ``mode``: their drain capacity with a
    backlog, else what the VMs write (``write_back`` bytes/s), at most that capacity (``drain`` bytes/s)."""
    return drain if mode != _KEEPING_UP else min(write_back, drain)


def _sums(index: _Indices, weights: _Floats, length: int) -> _Floats:
    """``np.bincount`` with weights, as floats also when there is nothing to count."""
    return cast(_Floats, np.bincount(index, weights, minlength=length).astype(np.float64, copy=False))


# --------------------------------------------------------------------------- the run: states over time


class _Timeline:
    """Walks the run piece by piece, solving each state once and moving the fluid levels."""

    def __init__(self, compiled: _Compiled):
        self.c = compiled
        self.cache: dict[_StateKey, _StateResult] = {}
        self.solvers: dict[_StateKey, _Solver] = {}
        if compiled.presolved is not None:
            key, solver, result = compiled.presolved
            self.solvers[key] = solver
            self.cache[key] = result
        self.last: _Solver | None = None

    def state(self, key: _StateKey) -> _StateResult:
        """The state's solution, solved once per run, starting from the last one solved."""
        result = self.cache.get(key)
        if result is None:
            solver, result = self._solve(key)
            self.cache[key] = result
            self.solvers[key] = solver
        self.last = self.solvers[key]
        return result

    def _solve(self, key: _StateKey) -> tuple[_Solver, _StateResult]:
        """A new state: a solved one's answer when they differ only by buffers keeping up rather than backlogged
        with the same destage load (:meth:`_Solver.same_destage`); re-evaluated from a solved one when they differ
        only by vMotions that no closed path crosses (:meth:`_Solver.with_vmotions`); else solved."""
        closed_ports = self.c.network.closed_ports
        for other_key, other in self.solvers.items():
            if other_key.vmotions == key.vmotions and other.same_destage(key):
                twin = other.copy(key)
                return twin, other.result
            if _same_but_vmotions(other_key, key):
                moved = key.vmotions ^ other_key.vmotions
                if not any(set(self.c.vmotion_ports(v)) & closed_ports for v in moved):
                    return other.with_vmotions(key)
        solver = _Solver(self.c, key, self.c.hit)
        return solver, solver.solve(self.last)

    def settle(self, key: _StateKey) -> tuple[_StateKey, _StateResult]:
        """The state's solution; with adaptive compression, the compression that state switches on or off."""
        c = self.c
        result = self.state(key)
        if c.adaptive:
            threshold = c.compression_threshold
            compress = tuple(busy >= threshold for busy in result.peer_tx_uncompressed)
            if compress != key.compress:
                key = dataclasses.replace(key, compress=compress)
                result = self.state(key)
        return key, result

    def run(self) -> list[_Piece]:
        c = self.c
        hosts = c.hosts
        end = c.duration
        capacity = float(c.destager.capacity)
        buffer_level = [0.0] * hosts
        pool = [c.clean_pool] * hosts
        remaining = {v: framed_bytes(c.peer_link, p.event.size / p.event.streams)[0] * p.streams for v, p in enumerate(c.vmotion_pairs)}
        modes = [_KEEPING_UP] * hosts
        gc = [False] * hosts
        drain_of_full = [0.0] * hosts
        full_since = [math.nan] * hosts
        overload_since: dict[int, float] = {}
        entered: list[frozenset[int]] = [frozenset()] * hosts  # groups running when the buffer filled
        gc_entered: list[frozenset[int]] = [frozenset()] * hosts  # groups running when the clean pool ran out
        compress = (c.compress_always,) * c.lanes
        pieces: list[_Piece] = []
        pools: list[list[float]] = []  # per piece: the clean pools at its start
        checkpoints: dict[int, _Checkpoint] = {}  # interval -> the state where its first piece starts
        intervals = c.intervals
        index = 0
        t = 0.0
        guard = 0
        while t < end - 1e-9 and guard < 8 * len(c.cuts) + 400:
            guard += 1
            while index + 1 < len(intervals) and intervals[index].end <= t + 1e-9:
                index += 1
            interval = intervals[index]
            groups = interval.groups
            running = frozenset(v for v, p in enumerate(c.vmotion_pairs) if p.event.at <= t + 1e-12 and remaining[v] > 0)
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
            if index not in checkpoints and abs(t - interval.start) <= 1e-9 * max(1.0, t):
                discrete = (tuple(modes), tuple(gc), compress, tuple(entered), tuple(gc_entered), tuple(drain_of_full))
                quiet = not overload_since and all(math.isnan(f) for f in full_since)
                checkpoint = _Checkpoint(index, len(pieces), t, list(buffer_level), list(pool), discrete, quiet)
                checkpoints[index] = checkpoint
                periods = self._repeats(checkpoints, checkpoint, pieces, pools, remaining)
                if periods:
                    # The last period repeats: copy its pieces `periods` times, shifted in time and level.
                    t, buffer_level, pool = self._copy_periods(checkpoints, checkpoint, periods, pieces, pools)
                    index += periods * c.period_intervals
                    continue
            # How long this state lasts: the interval's end, a buffer filling or emptying, a clean pool running
            # out, a vMotion finishing.
            step = interval.end - t
            for h in range(hosts):
                net = result.write_back_bytes[h] - result.drain[h]
                if modes[h] == _BACKLOGGED and net > 0:
                    step = min(step, (capacity - buffer_level[h]) / net)
                elif modes[h] == _BACKLOGGED and net < 0:
                    step = min(step, buffer_level[h] / -net)
                if not gc[h] and result.tier_write_bytes[h] > c.gc_rate and c.clean_pool < math.inf:
                    step = min(step, pool[h] / (result.tier_write_bytes[h] - c.gc_rate))
            for v, rate in result.vmotion_rate.items():
                step = min(step, remaining[v] / rate)
            step = max(step, 1e-6)
            overload_since = {k: overload_since.get(k, t) for k in result.overloaded}
            pieces.append(_Piece(t, t + step, result, list(modes), list(buffer_level), list(full_since), dict(overload_since), key))
            pools.append(list(pool))
            for h in range(hosts):
                net = result.write_back_bytes[h] - result.drain[h]
                if modes[h] == _BACKLOGGED:
                    buffer_level[h] = min(capacity, max(0.0, buffer_level[h] + net * step))
                    if buffer_level[h] >= capacity * (1 - 1e-9):
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

    def _repeats(
        self,
        checkpoints: dict[int, _Checkpoint],
        checkpoint: _Checkpoint,
        pieces: list[_Piece],
        pools: list[list[float]],
        remaining: dict[int, float],
    ) -> int:
        """How many duty periods from ``checkpoint`` on repeat the last one (0 if it did not repeat the one before).

        The last two periods repeat when they ran the same states in the same pieces, at the same times in the
        period, with buffer and clean-pool levels moving the same way; the levels then keep drifting linearly.
        The repeats stop before the interval pattern changes, a vMotion starts, the run ends, or a drifting
        level would reach a bound (a buffer full or empty, a clean pool empty or full), where the walk resumes.
        """
        c = self.c
        count = c.period_intervals
        earlier = checkpoints.get(checkpoint.interval - 2 * count)
        middle = checkpoints.get(checkpoint.interval - count)
        if not count or earlier is None or middle is None:
            return 0
        if not (checkpoint.quiet and middle.quiet and earlier.quiet and earlier.discrete == middle.discrete == checkpoint.discrete):
            return 0
        previous = range(earlier.piece, middle.piece)
        last = range(middle.piece, checkpoint.piece)
        period = c.period
        unfinished = [p.event.at for v, p in enumerate(c.vmotion_pairs) if remaining[v] > 0]  # start times (s)
        if len(previous) != len(last) or not last or any(at <= checkpoint.t for at in unfinished):
            return 0
        tolerance = 1e-9 * period
        fill = 1e-9 * c.destager.capacity + 1e-6
        for i, j in zip(previous, last, strict=True):
            a, b = pieces[i], pieces[j]
            if a.result is not b.result or a.key != b.key or a.modes != b.modes:
                return 0
            if abs(b.start - a.start - period) > tolerance or abs(b.end - a.end - period) > tolerance:
                return 0
            if a.overload_since.keys() != b.overload_since.keys() or any(
                abs(b.overload_since[k] - a.overload_since[k] - period) > tolerance for k in a.overload_since
            ):
                return 0
            if any(
                math.isnan(x) != math.isnan(y) or (not math.isnan(x) and abs(y - x - period) > tolerance)
                for x, y in zip(a.full_since, b.full_since, strict=True)
            ):
                return 0
            for h in range(c.hosts):
                if abs((b.buffer_level[h] - middle.levels[h]) - (a.buffer_level[h] - earlier.levels[h])) > fill:
                    return 0
                if c.clean_pool < math.inf and abs((pools[j][h] - middle.pools[h]) - (pools[i][h] - earlier.pools[h])) > fill:
                    return 0
        for h in range(c.hosts):
            drifts = (checkpoint.levels[h] - middle.levels[h], middle.levels[h] - earlier.levels[h])
            pool_drifts = (checkpoint.pools[h] - middle.pools[h], middle.pools[h] - earlier.pools[h])
            if abs(drifts[0] - drifts[1]) > fill or (c.clean_pool < math.inf and abs(pool_drifts[0] - pool_drifts[1]) > fill):
                return 0
        periods = min(
            c.repeats[checkpoint.interval] // count,
            int((c.duration - checkpoint.t) / period) - 1,
            *(int((at - checkpoint.t) / period) - 1 for at in unfinished),
        )
        capacity = float(c.destager.capacity)
        for h in range(c.hosts):
            path = [pieces[j].buffer_level[h] - middle.levels[h] for j in last]
            drift = checkpoint.levels[h] - middle.levels[h]
            periods = min(periods, _drift_periods(checkpoint.levels[h], drift, path, fill, 1e-6 * capacity, (1.0 - 1e-6) * capacity))
            if c.clean_pool < math.inf:
                path = [pools[j][h] - middle.pools[h] for j in last]
                drift = checkpoint.pools[h] - middle.pools[h]
                periods = min(periods, _drift_periods(checkpoint.pools[h], drift, path, fill, 2e-6 * c.clean_pool, c.clean_pool))
        return max(periods, 0)

    def _copy_periods(
        self, checkpoints: dict[int, _Checkpoint], checkpoint: _Checkpoint, periods: int, pieces: list[_Piece], pools: list[list[float]]
    ) -> tuple[float, list[float], list[float]]:
        """Append the last period's pieces again, each with ``periods`` copies one period apart, the first a
        period after it, levels moving by the period's drift; returns the time, buffer and pool levels after them."""
        c = self.c
        middle = checkpoints[checkpoint.interval - c.period_intervals]
        period = c.period
        drift = [now - before for now, before in zip(checkpoint.levels, middle.levels, strict=True)]
        pool_drift = [now - before for now, before in zip(checkpoint.pools, middle.pools, strict=True)]
        for j in range(middle.piece, checkpoint.piece):
            piece = pieces[j]
            pieces.append(
                _Piece(
                    piece.start + period,
                    piece.end + period,
                    piece.result,
                    piece.modes,
                    [level + d for level, d in zip(piece.buffer_level, drift, strict=True)],
                    [since + period for since in piece.full_since],
                    {station: since + period for station, since in piece.overload_since.items()},
                    piece.key,
                    copies=periods,
                    period=period,
                    drift=tuple(drift),
                )
            )
            pools.append(pools[j])  # unused: repeats compare walked periods only
        levels = [level + periods * d for level, d in zip(checkpoint.levels, drift, strict=True)]
        pool = [level + periods * d for level, d in zip(checkpoint.pools, pool_drift, strict=True)]
        return checkpoint.t + periods * period, levels, pool


def _drift_periods(start: float, drift: float, path: list[float], tolerance: float, floor: float, ceiling: float) -> int:
    """How many more periods a level moving by ``drift`` per period can repeat without reaching ``floor`` or
    ``ceiling``: ``start`` is its level now, ``path`` its level at each piece start of a period relative to the
    period's start. Without drift (within ``tolerance``) the period repeats exactly, bounds or not."""
    if abs(drift) <= tolerance:
        return _UNLIMITED
    points = [*path, drift]
    if drift > 0:
        return int((ceiling - start - max(points)) / drift)
    return int((start + min(points) - floor) / -drift)


def _round(value: float) -> float:
    """Rates rounded to 4 significant digits, so that states reached twice share one solution."""
    if value <= 0 or not math.isfinite(value):
        return value
    return round(value, 3 - math.floor(math.log10(value)))


@dataclass
class _Checkpoint:
    """The timeline's state where an interval's first piece starts (see :meth:`_Timeline._repeats`)."""

    interval: int
    piece: int  # index of that first piece
    t: float
    levels: list[float]  # per host: destage buffer bytes
    pools: list[float]  # per host: clean-pool bytes
    discrete: tuple[Any, ...]  # modes, GC cliffs, compression, groups when filled / out of pool, drain of a full buffer
    quiet: bool  # no buffer full and no overload under way (their waits grow with absolute time)


@dataclass
class _Piece:
    """A stretch of the run in one state; with ``copies`` > 1, that many stretches ``period`` apart (a repeated
    duty period, see :meth:`_Timeline._repeats`), the k-th with levels moved by k times ``drift``."""

    start: float
    end: float
    result: _StateResult
    modes: list[int]
    buffer_level: list[float]  # per host, at the start (bytes)
    full_since: list[float]
    overload_since: dict[int, float]
    key: _StateKey
    copies: int = 1
    period: float = 0.0  # s between copies
    drift: tuple[float, ...] = ()  # per host: buffer level change from one copy to the next (bytes)

    def windowed(self, start: float, end: float) -> list[tuple[float, float, float, int]]:
        """The copies' overlaps with the window [start, end]: (shift s, overlap start, overlap end, how many
        copies) where the copies that lie wholly inside share one entry (their times differ by the shift only)."""
        width = self.end - self.start
        out = []
        if self.copies == 1:
            a, b = max(self.start, start), min(self.end, end)
            return [(0.0, a, b, 1)] if b > a else []
        period = self.period
        first = max(0, math.ceil((start - self.start) / period - 1e-9))  # first copy starting inside the window
        last = min(self.copies - 1, math.floor((end - self.end) / period + 1e-9))  # last copy ending inside it
        if last >= first:
            shift = first * period
            out.append((shift, self.start + shift, self.start + shift + width, last - first + 1))
        for k in sorted({first - 1, last + 1, 0, self.copies - 1}):
            if 0 <= k < self.copies and not first <= k <= last:
                shift = k * period
                a, b = max(self.start + shift, start), min(self.end + shift, end)
                if b > a:
                    out.append((shift, a, b, 1))
        return out


# --------------------------------------------------------------------------- estimate()


_COMPILED: dict[int, tuple[Scenario, _Compiled]] = {}
_COMPILED_LIMIT = 64  # the library's 48 scenarios and variants; more only gives the cyclic collector more to walk


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
    """Analytic estimate of ``scenario`` (a Scenario, path, built-in name or dict), in a few milliseconds.

    ``duration`` (s) overrides ``run.duration`` and caps the warm-up at a tenth
    of it, as :func:`simcache.simulate` does. See the module docstring for the
    model and its approximations. The compiled form of the last 64
    scenario objects (their network and the all-groups-on solution) is kept:
    estimating the same object again skips that work, with the same answer.
    """
    scenario = load_scenario(scenario)
    if duration is not None:
        scenario = scenario.with_duration(duration, source="the duration argument (estimate(duration=...))")
    collecting = gc.isenabled()
    gc.disable()  # an estimate allocates many small arrays and objects; cyclic GC passes over them cost ~20%
    try:
        compiled = _compiled(scenario)
        pieces = _Timeline(compiled).run()
        return _summarize(compiled, pieces)
    finally:
        if collecting:
            gc.enable()


def _summarize(c: _Compiled, pieces: list[_Piece]) -> Estimate:
    """Window averages over the pieces: rates and utilizations by time, latencies by I/O count.

    Pieces without extra waits (a full buffer's open writers, an overloaded station's fluid queue) add up
    per state, so a state met many times (a short duty cycle) is summed once.
    """
    scenario = c.scenario
    net = c.network
    start, end = c.window
    span = max(end - start, 1e-12)
    ops = net.count
    ios = np.zeros(ops)
    latency = np.zeros(ops)  # sum over I/Os of the latency (s)
    square = np.zeros(ops)  # sum over I/Os of the second moment (s^2)
    utilization = np.zeros(c.station_count)
    plain: dict[int, tuple[_StateResult, float]] = {}  # result id -> (result, time in the window without extra waits)

    def add(result: _StateResult, width: float, extra: _Floats | float) -> None:
        count = result.rates * width
        mean = result.response + extra
        ios[:] += count
        latency[:] += count * mean
        square[:] += count * (mean * mean + result.variance)

    waiting: dict[tuple[Any, ...], tuple[_StateResult, float, _Floats]] = {}  # the same extra waits, summed once
    for piece in pieces:
        result = piece.result
        quiet = not piece.overload_since and _FULL not in piece.modes
        for shift, a, b, copies in piece.windowed(start, end):
            width = (b - a) * copies
            if quiet:
                seen = plain.get(id(result))
                plain[id(result)] = (result, (seen[1] if seen else 0.0) + width)
                continue
            middle = (a + b) / 2.0
            signature = (id(result), round(middle - piece.start - shift, 9), round(b - a, 9), piece.start == piece.end)
            known = waiting.get(signature)
            if known is None:
                waiting[signature] = (result, width, _extra_waits(c, piece, middle, shift))
            else:
                waiting[signature] = (result, known[1] + width, known[2])
    for result, width in plain.values():
        utilization += result.utilization * (width / span)
        add(result, width, 0.0)
    for result, width, extra in waiting.values():
        utilization += result.utilization * (width / span)
        add(result, width, extra)
    groups = [g.name for g in scenario.groups]
    cells = net.op_group * 2 + net.op_is_write
    bins = 2 * len(groups)
    per_cell = [_sums(cells, values, bins) for values in (ios, ios * net.op_size, latency, square)]
    rows = []
    for g, name in enumerate([*groups, "all"]):
        for kind in (0, 1):
            if name == "all":
                count, nbytes, total, second = (float(v[kind::2].sum()) for v in per_cell)
            else:
                count, nbytes, total, second = (float(v[2 * g + kind]) for v in per_cell)
            mean = total / count if count > 0 else math.nan
            scv = max(0.0, second / count / mean**2 - 1.0) if count > 0 and mean > 0 else 0.0
            rows.append((name, ("read", "write")[kind], count / span, nbytes / span / 1e6, mean, scv))
    reported = {c.names[k]: float(utilization[k]) for k in range(c.station_count) if c.names[k]}
    fluid = _destage_fluid(c, pieces)
    notes: list[str] = []
    for d in fluid:
        if d.full_fraction > 0:
            notes.append(f"{d.host}: destage buffer full for {d.full_fraction:.0%} of the window (writers wait for the array)")
    if any(any(piece.key.gc) for piece in pieces if piece.end > start):
        notes.append("a flash tier is past its clean-pool cliff: writes run at gc_rate (GC stalls averaged)")
    if any(piece.result.overloaded for piece in pieces if piece.end > start):
        notes.append("an open-loop stream overloads a station: latency grows through the run (fluid estimate)")
    if any(isinstance(e, HostFailure) for e in scenario.events):
        notes.append("host failures are not modelled by the estimate")
    return Estimate(scenario, rows, reported, fluid, notes, c.window)


def _extra_waits(c: _Compiled, piece: _Piece, middle: float, shift: float) -> _Floats:
    """Per op, the fluid wait (s) added in ``piece`` (its copy ``shift`` s later) at time ``middle``.

    An open group's writers queue for a full buffer's space: the queue grows at (accepted - drain) from
    the moment it filled. An open stream overloading a station queues there from the overload's start.
    """
    net = c.network
    result = piece.result
    extra = np.zeros(net.count)
    for h in range(c.hosts):
        if piece.modes[h] == _FULL:
            drain = result.drain[h]
            offered = result.write_back_bytes[h]
            since = (piece.full_since[h] if math.isfinite(piece.full_since[h]) else piece.start) + shift
            extra[net.open_write_back_writes[h]] = max(0.0, offered - drain) / drain * (middle - since)
    for k, since in piece.overload_since.items():
        users = net.station_users(k)
        extra[users] = np.maximum(extra[users], float(result.overload[k]) * (middle - since - shift))
    return extra


def _end_level(piece: _Piece, host: int, capacity: float) -> float:
    """The host's highest destage buffer level (bytes) over ``piece`` (its last copy's, if the level drifts up):
    the level moves only while backlogged."""
    level = piece.buffer_level[host]
    if piece.copies > 1:
        level += max(0.0, (piece.copies - 1) * piece.drift[host])
    if piece.modes[host] != _BACKLOGGED:
        return level
    net = piece.result.write_back_bytes[host] - piece.result.drain[host]
    return min(capacity, max(level, level + net * (piece.end - piece.start)))


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
        full = sum((b - a) * copies for p in pieces if p.modes[h] == _FULL for _, a, b, copies in p.windowed(start, end)) / span
        peak_level = max([_end_level(p, h, capacity) for p in pieces] + [capacity if math.isfinite(first_full) else 0.0])
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
            "destager": [_strict(dataclasses.asdict(d)) for d in self.destager],
            "notes": self.notes,
        }


def _gamma_quantiles(mean: float, scv: float) -> tuple[float, float, float, float]:
    if not math.isfinite(mean) or mean <= 0 or scv < 1e-6:
        return (mean, mean, mean, mean)
    from scipy import stats

    shape = 1.0 / scv
    values = stats.gamma.ppf([0.5, 0.95, 0.99, 0.999], shape, scale=mean * scv)
    return (float(values[0]), float(values[1]), float(values[2]), float(values[3]))
