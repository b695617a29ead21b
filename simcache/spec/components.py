"""Scenario components: the hardware of each host of a cluster.

A host's acceleration tier (:class:`TierSpec`), its network ports
(:class:`LinkSpec`), and its destager, read cache and replica compression,
gathered in :class:`ClusterSpec` (all hosts alike). Tiers and links may name a
built-in profile and override their fields. The shared array behind the
storage port, and its drives, are in :mod:`simcache.spec.array`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from simcache.physics.cluster import INTERFACE_RATES
from simcache.spec.fields import (
    MAX_HOSTS,
    MAX_PEER_LINKS,
    Bytes,
    Count,
    Fraction,
    LinkLatency,
    LinkRate,
    Number,
    PositiveBytes,
    PositiveRate,
    Seconds,
    SectorBytes,
    Why,
    _Profiled,
    _Spec,
)

__all__ = [
    "CacheSpec",
    "ClusterSpec",
    "CompressionSpec",
    "DestagerSpec",
    "LinkSpec",
    "TierSpec",
]


class TierSpec(_Profiled):
    """A flash, storage-class memory or RAM acceleration tier on one host."""

    _profile_kind: ClassVar[str] = "tier"

    kind: Literal["flash", "scm", "ram"] = "flash"
    """What the device is: ``flash`` (NAND SSD), ``scm`` (storage-class memory such as 3D XPoint:
    non-volatile, written in place, no erase blocks) or ``ram`` (host memory). A name for reports
    and the app ("the host0 ram-ddr4 ram tier"); nothing is simulated or checked by it: the fields
    say how the device behaves (``clean_pool`` and ``write_amplification`` for garbage collection,
    ``volatile``, the channels)."""
    read_latency: Seconds
    write_latency: Seconds
    read_bandwidth: PositiveRate
    write_bandwidth: PositiveRate
    channels: Annotated[
        Count, Field(ge=1, le=4096), Why(high="more parallel units than any device has")
    ] = 1
    """Independent channels of the device (flash: NAND channels; RAM: copy threads)."""
    dies: Annotated[
        Count, Field(ge=1, le=64), Why(high="no flash channel carries more than 64 dies")
    ] = 1
    """Dies (or planes that work independently) on each channel: the device has ``channels x dies``
    parallel units, each holding an operation for its ``read_latency`` or ``write_latency``."""
    interface: str | None = None
    """The device's host port, capping every transfer at its payload rate: ``sata-3g``,
    ``sata-6g``, ``sas-12g``, ``sas-24g``, ``pcie3-x4``, ``pcie4-x4``, ``pcie5-x4`` (and
    x1/x2/x8/x16 of each PCIe generation) or ``memory`` (see
    simcache.physics.cluster.INTERFACE_RATES). Unset: no cap."""
    controller_bandwidth: PositiveRate | None = None
    """A host bus adapter or RAID controller between the device and the host, capping every
    transfer (bytes/s): a property of the host, so set it in the scenario, not in a drive's
    profile. Unset: none."""
    command_overhead: Annotated[
        Seconds,
        Field(le=0.1),
        Why(high="a command costing 100 ms outside the media is a hung device"),
    ] = 0.0
    """Time every command spends outside the media, not queued (host driver, interface protocol,
    firmware): added to each operation's latency. Default 0."""
    read_iops_limit: (
        Annotated[
            Number,
            Field(gt=0.0, le=1e9),
            Why(high="a billion commands a second is beyond any device"),
        ]
        | None
    ) = None
    """The controller's command rate for reads (commands/s): one command processor, first come first
    served, in which a read takes ``1 / read_iops_limit`` seconds; the datasheet's "up to N random
    read IOPS". Unset: reads cost the processor nothing."""
    write_iops_limit: (
        Annotated[
            Number,
            Field(gt=0.0, le=1e9),
            Why(high="a billion commands a second is beyond any device"),
        ]
        | None
    ) = None
    """As ``read_iops_limit``, for writes (the fresh-drive random-write ceiling)."""
    read_channel_bandwidth: (
        Annotated[
            PositiveRate,
            Field(ge=1e6, le=1e11),
            Why(
                "below it a 4 KiB read holds its die over 4 ms, longer than a disk's seek: a "
                "unit is missing (write e.g. '600MB/s')",
                "no flash channel moves 100 GB/s: a unit is wrong",
            ),
        ]
        | None
    ) = None
    """The rate (bytes/s) at which one read's data leaves its die for the controller: the NAND
    channel bus and the error-correction decoder the data passes through. A read then holds its unit
    for ``read_latency`` plus ``size / read_channel_bandwidth`` before its transfer on the shared
    pipe, so a lone read's latency grows with its size at this rate, far below the device's
    ``read_bandwidth``, which many reads in parallel reach (FEMU and MQSim model the page's channel
    transfer the same way, per operation). The dies of a channel do not contend for its bus here.
    Unset: the media time does not depend on the size (only the pipe's transfer does)."""
    write_channel_bandwidth: (
        Annotated[
            PositiveRate,
            Field(ge=1e6, le=1e12),
            Why(
                "below it a 4 KiB write holds its unit over 4 ms: a unit is missing (write e.g. "
                "'5GB/s')",
                "no single copy or channel moves a TB/s: a unit is wrong",
            ),
        ]
        | None
    ) = None
    """As ``read_channel_bandwidth``, for writes: the rate at which one write's data reaches its
    unit, which it holds for ``write_latency`` plus ``size / write_channel_bandwidth`` before its
    transfer on the shared pipe. For a RAM tier, one copy thread's rate (each unit a copy thread),
    the pipe then being the memory's bandwidth that all copies share. Unset: the write's unit time
    does not depend on its size."""
    capacity: Annotated[PositiveBytes, Field(title="Tier capacity per host")]
    """Bytes of flash/RAM on each host; the read cache lives in it."""
    clean_pool: Bytes | None = None
    """Clean (pre-erased) bytes sustained writes may take before garbage collection must make room:
    the free blocks whose exhaustion is the sustained-write cliff. Unset: no cliff."""
    gc_rate: PositiveRate | None = None
    """Bytes/s at which garbage collection refills the clean pool, given directly. Unset: derived
    from ``write_amplification`` as ``write_bandwidth / write_amplification``."""
    write_amplification: (
        Annotated[
            Number,
            Field(ge=1.0, le=100.0),
            Why(
                "the device cannot program fewer bytes than the host wrote",
                "garbage collection copying 99 valid bytes per byte it frees is a device full to "
                "the brim: a typo",
            ),
        ]
        | None
    ) = None
    """Bytes the device programs per byte the host writes once the clean pool is gone (1 to 100):
    the host's byte plus the valid data garbage collection copies to free room for it. The device's
    program bandwidth (``write_bandwidth``) is then shared between host data and GC copies, so the
    clean pool refills, and sustained writes run, at ``write_bandwidth / write_amplification``
    (used when ``gc_rate`` is unset; ``gc_rate`` overrides it)."""
    gc_pass: Bytes | None = None
    """Bytes one foreground garbage-collection pass reclaims (see model/tier.py): the write that
    finds the clean pool empty stalls the device's writes until GC has made this much room. Unset
    or 0: garbage collection refills the clean pool smoothly."""
    read_interference: (
        Annotated[Fraction, Why(high="a read cannot wait for more than the whole program")] | None
    ) = None
    """How reads meet programs on the device's dies (0 to 1; see model/tier.py). Unset: a read takes
    the earliest-free of ``channels``, as any operation. Set: a read goes to the die that holds its
    data (one of ``channels``, uniformly at random) and waits for this share of the work already
    queued on that die, including a foreground GC pass under way: 1 is a device without program
    suspension (the read waits for the program in progress), less is a device that suspends a
    program to let a read through."""
    placement: Literal["any-unit", "addressed"] = "any-unit"
    """Which of the ``channels x dies`` units an operation waits for. ``any-unit`` (default): the
    earliest-free unit, as if any die could serve any operation (one first-come first-served queue
    in front of all units, M/G/c). ``addressed``: the unit that holds (reads) or receives (writes)
    the operation's data, uniformly at random for random I/O (the flash translation layer stripes
    logical pages over all dies), where it waits first-come first-served behind that unit's own
    queue (c separate queues). Queues of the dies then differ, which spreads latency at load (the
    p99 of a saturated drive) and leaves units idle at low depth (the queue-depth curve climbs
    slower). Unset ``read_interference`` reads then wait for the whole work booked on their die.
    With ``any-unit`` and ``read_interference`` set, reads are addressed and writes take the
    earliest-free unit: a flash translation layer that places each write on whichever die is free
    (log-structured, dynamic allocation) while a read must go where its data lies."""
    erase_block: Bytes | None = None
    """Bytes garbage collection erases at once (a flash block, or a superblock striped over dies).
    Writes that arrive in runs at least this long invalidate whole blocks and cost no copies
    (amplification 1: sequential writes keep their rate past the cliff); scattered writes pay the
    full ``write_amplification``, linearly in between (simcache.physics.cluster.write_gc_factor).
    Unset: every write pays the full amplification."""
    condition: Literal["preconditioned", "fresh"] = "preconditioned"
    """The device's state when the run starts. ``preconditioned`` (default): in steady state,
    only the ``clean_pool`` reserve is clean. ``fresh``: fresh out of the box, every block
    erased, so writes take ``capacity`` bytes of clean space before garbage collection starts
    (SNIA PTS-E's FOB state)."""
    volatile: bool = False
    service: Literal["deterministic", "exponential", "lognormal"] = "deterministic"
    """Service-time distribution of a unit's ``read_latency`` / ``write_latency``:
    ``deterministic``; ``lognormal``, the latency times a lognormal factor of mean 1 and
    coefficient of variation ``service_cv`` (per-operation spread of NAND read and program
    times); ``exponential`` exists to check the model against M/M/c theory (latency and transfer
    together, on the unit)."""
    service_cv: (
        Annotated[
            Number,
            Field(gt=0.0, le=10.0),
            Why(high="a spread ten times the mean is no longer a device"),
        ]
        | None
    ) = None
    """With ``service = "lognormal"``: the coefficient of variation (standard deviation / mean) of a
    unit's service time."""
    write_service_cv: (
        Annotated[
            Number,
            Field(gt=0.0, le=10.0),
            Why(high="a spread ten times the mean is no longer a device"),
        ]
        | None
    ) = None
    """With ``service = "lognormal"``: the coefficient of variation of a write's unit time, where it
    differs from a read's (``service_cv``). A write's unit time is its share of a page program,
    whose time varies more than a page read's (upper against lower pages: 2.7x in tPROG, 1.3x in tR
    on 2014-era MLC per FEMU's L95B profile). Unset: ``service_cv`` for writes too."""
    stall_probability: (
        Annotated[
            Fraction,
            Field(le=0.5),
            Why(high="a stall every other operation is the normal speed, not a stall"),
        ]
        | None
    ) = None
    """Probability that an operation meets a stall on its unit (a media read retry, a background
    program or erase it cannot pass): it then holds the unit an extra exponentially distributed time
    of mean ``stall_time``. The rare millisecond tails (p99.9, p99.99) of real drives."""
    stall_time: (
        Annotated[
            Seconds,
            Field(gt=0.0, le=10.0),
            Why(high="a stall of over 10 s is a failure: use a device_slow event"),
        ]
        | None
    ) = None
    """Mean extra time (s) of a stall (see ``stall_probability``)."""
    # -- foreground/background scheduling (issue 16; see model/tier.py) --
    scheduling: Literal["fcfs", "priority", "weighted"] = "priority"
    """How the device orders the destager's reads against the VMs' I/O. ``priority`` (default): a
    destage read request starts only when the device is idle, so a VM's I/O waits at most for the
    requests already started (one ``background_request`` each); the way real write-back caches keep
    destaging out of the foreground's way (bcache writes back at idle I/O priority when it is not
    rate-limited; field reports: destage reads are throttled or deprioritised so foreground latency
    holds). ``weighted``: the same, and the destager also gets ``background_share`` of the device's
    transfer time when the VMs keep it busy (``priority`` starves the destager while the VMs keep
    the device booked without a gap, e.g. writes stalled on garbage collection). ``fcfs``: destage
    reads queue with the VMs' I/O in arrival order, as a device with no I/O priorities does."""
    background_share: Annotated[
        Fraction,
        Field(gt=0.0),
        Why(
            low=(
                "a background with no share never runs while the VMs are busy: use scheduling = "
                "'priority'"
            )
        ),
    ] = 0.2
    """With ``scheduling = "weighted"``: the share of the device's transfer time the destager gets
    while the VMs keep it busy (0 < share <= 1; default 0.2, an assumption: a fifth, enough to keep
    a backlog moving without doubling foreground latency)."""
    background_request: Annotated[
        SectorBytes, Field(le=64 * 1024**2), Why(high="larger than any device's largest transfer")
    ] = 64 * 1024
    """Largest request a destage read is split into (bytes, 512 B to 64 MiB). Under ``priority`` and
    ``weighted`` a VM's I/O waits at most about one such request; under ``fcfs`` a destage batch is
    read as one operation, as before. Default 64 KiB, the largest cache line of Open CAS, which
    cleans line by line (assumption: the unit a caching layer reads dirty data back in). On the
    SATA profile a 64 KiB request holds the controller's pipe about 0.3 ms, about two 32 KiB VM
    writes' worth; 128 KiB requests raised the burst scenario's p99 write latency by 30% over a
    steady load where 64 KiB raise it by 8% (scenarios/burst_absorb.toml)."""

    @model_validator(mode="after")
    def _cliff_complete(self) -> TierSpec:
        refill = self.gc_rate is not None or self.write_amplification is not None
        if self.clean_pool is not None and not refill:
            raise ValueError(
                "clean_pool needs a refill rate: set write_amplification (garbage collection then "
                "refills at "
                "write_bandwidth / write_amplification) or gc_rate"
            )
        if self.clean_pool is None and refill:
            field = "gc_rate" if self.gc_rate is not None else "write_amplification"
            raise ValueError(
                f"{field} needs a sustained-write cliff: set clean_pool too (the clean bytes "
                "garbage collection refills)"
            )
        if self.gc_pass and self.clean_pool is None:
            raise ValueError(
                "gc_pass needs a sustained-write cliff: set clean_pool and gc_rate too"
            )
        if self.erase_block is not None and self.clean_pool is None:
            raise ValueError(
                "erase_block sets what garbage collection costs sequential writes: set clean_pool "
                "and write_amplification too"
            )
        if self.condition == "fresh" and self.clean_pool is None:
            raise ValueError(
                'condition = "fresh" starts the clean pool at the capacity: '
                "set clean_pool (the steady-state reserve) and write_amplification"
            )
        return self

    @model_validator(mode="after")
    def _spread_complete(self) -> TierSpec:
        if (self.service == "lognormal") != (self.service_cv is not None):
            raise ValueError(
                'service = "lognormal" and service_cv go together: set both (the spread of unit '
                "times) or neither"
            )
        if self.write_service_cv is not None and self.service != "lognormal":
            raise ValueError(
                'write_service_cv is the lognormal spread of writes: set service = "lognormal" and '
                "service_cv (the reads' spread) too, or drop write_service_cv"
            )
        if (self.stall_probability is None) != (self.stall_time is None):
            raise ValueError(
                "stall_probability and stall_time go together: set both (how often a stall comes, "
                "and its mean length) or neither"
            )
        return self

    @field_validator("interface")
    @classmethod
    def _known_interface(cls, interface: str | None) -> str | None:
        if interface is not None and interface not in INTERFACE_RATES:
            raise ValueError(
                f"unknown interface {interface!r}: use one of {', '.join(INTERFACE_RATES)}"
            )
        return interface


class LinkSpec(_Profiled):
    """One full-duplex network port type (each host has one per network)."""

    _profile_kind: ClassVar[str] = "link"

    bandwidth: LinkRate
    latency: LinkLatency
    mtu: Annotated[
        Count,
        Field(ge=64, le=65536),
        Why(low="the smallest Ethernet frame", high="the largest IP packet"),
    ] = 1500
    header_bytes: Annotated[
        Count, Field(ge=0, le=65535), Why(high="headers fit in the largest packet")
    ] = 40
    framing_bytes: Annotated[
        Count, Field(ge=0, le=65536), Why(high="wire framing is tens of bytes a packet")
    ] = 38
    window: (
        Annotated[
            Bytes,
            Field(ge=1024, le=2**30),
            Why("below one packet a flow cannot move", "TCP windows scale to 1 GiB"),
        ]
        | None
    ) = None
    """Most bytes one flow keeps in flight unacknowledged (its TCP window or the application's
    outstanding request bytes): a flow longer than the window runs at most at window / round trip
    (twice the link's latency), so one stream reaches a fraction of the link and many streams
    saturate it. 65,535 bytes is TCP's window without window scaling (RFC 7323). Unset: no limit."""

    @model_validator(mode="after")
    def _payload_fits(self) -> LinkSpec:
        if self.header_bytes >= self.mtu:
            raise ValueError(
                f"header_bytes ({self.header_bytes}) must be smaller than mtu ({self.mtu})"
            )
        return self


class DestagerSpec(_Spec):
    """Per-host destage buffer, its flushers and their policy (when to destage and how fast).

    The defaults destage whenever data is dirty, as fast as the array takes it, with the tier
    giving the VMs' I/O priority over destage reads (``cluster.tier.scheduling``): what a demanding
    user expects of a write-back cache whose buffer exists to absorb bursts. Draining at once leaves
    the most room for the next burst and the least data at risk, and with priority scheduling it
    costs a VM's I/O at most one destage request of waiting. Watermarks, pacing, idle-only
    destaging and an eligibility delay are the policies of Linux dm-writecache, bcache and Open
    CAS, each with its own defaults cited below.
    """

    capacity: Annotated[PositiveBytes, Field(title="Destager buffer per host")] = 4 * 1024**3
    """Bytes of written data each host holds until they are copied to the array. When it is full,
    writers wait (destage_wait in the breakdown)."""
    concurrency: Annotated[
        Count, Field(ge=1, le=1024), Why(high="more flushers than a host runs")
    ] = 4
    max_batch: Annotated[
        PositiveBytes, Field(ge=4096), Why(low="a destage write is at least one 4 KiB block")
    ] = 1024**2
    """Largest coalesced write the destager sends to the array in one go."""
    # -- destage policy (issue 16; see model/destager.py) --
    trigger: Literal["always", "watermarks", "idle"] = "always"
    """When the flushers run. ``always`` (default): whenever data is dirty. ``watermarks``: start
    when the dirty bytes reach ``high_watermark`` of the capacity, stop once they are down to
    ``low_watermark`` (Linux dm-writecache). ``idle``: only once the host's tier has seen no VM I/O
    for ``idle_time``, or above ``high_watermark`` (Open CAS's ALRU cleaning policy)."""
    high_watermark: Annotated[
        Fraction,
        Field(gt=0.0),
        Why(low="destaging would start with nothing dirty: use trigger = 'always'"),
    ] = 0.5
    """Dirty share of the capacity at which ``watermarks`` (and ``idle``, whatever the VMs do)
    start destaging (0 < x <= 1). Default 0.5: dm-writecache's ``high_watermark`` default of 50%
    (Linux Documentation/admin-guide/device-mapper/writecache.rst)."""
    low_watermark: Fraction = 0.45
    """Dirty share of the capacity down to which ``watermarks`` destage before stopping, at most
    ``high_watermark``. Default 0.45: dm-writecache's ``low_watermark`` default of 45% (same
    source)."""
    idle_time: Annotated[
        Seconds, Field(le=3600.0), Why(high="an hour without I/O is not 'idle' but 'off'")
    ] = 10.0
    """With ``trigger = "idle"``: seconds without VM I/O on the host's tier before destaging
    starts (0 to 1 h). Default 10 s: Open CAS ALRU's ``activity_threshold`` default of 10,000 ms
    (OCF_ALRU_DEFAULT_ACTIVITY_THRESHOLD, "idle time before flushing thread can start", in OCF's
    cleaning_alru.h)."""
    pacing: Literal["none", "rate", "pd"] = "none"
    """How fast the flushers may go. ``none`` (default): as fast as the tier, link and array allow.
    ``rate``: at most ``rate`` bytes/s. ``pd``: a rate that a proportional-derivative controller
    moves toward keeping ``target_dirty`` of the capacity dirty (bcache's writeback rate, Linux
    3.13 to 4.15: every ``pd_update`` seconds the rate changes by ``(dirty - target) x pd_update /
    pd_p_inverse + pd_d_term x d(dirty)/dt / pd_p_inverse``; the derivative is averaged over
    ``pd_d_term / pd_update`` updates; never below 4 KiB/s)."""
    rate: PositiveRate | None = None
    """With ``pacing = "rate"``: the destage rate limit, bytes/s of VM data destaged."""
    target_dirty: Fraction = 0.1
    """With ``pacing = "pd"``: the dirty share of the capacity the controller aims for. Default 0.1:
    bcache's ``writeback_percent`` default of 10 (Linux Documentation/admin-guide/bcache.rst)."""
    pd_p_inverse: Annotated[
        Number,
        Field(gt=0.0, le=1e9),
        Why("a controller with an infinite gain", "a controller that never moves"),
    ] = 6000.0
    """With ``pacing = "pd"``: the inverse proportional gain, in s^2 (the rate changes by the dirty
    excess / pd_p_inverse per second). Default 6000: bcache's ``writeback_rate_p_term_inverse``
    (drivers/md/bcache/writeback.c, Linux 3.13); with it the controller's natural period is about
    ``2 pi sqrt(6000)`` = 490 s, so a run of seconds sees the rate barely move."""
    pd_d_term: Annotated[
        Seconds, Field(le=3600.0), Why(high="a derivative averaged over more than an hour")
    ] = 30.0
    """With ``pacing = "pd"``: the derivative gain, seconds (0 to 1 h). Default 30: bcache's
    ``writeback_rate_d_term`` (same source)."""
    pd_update: Annotated[
        Seconds,
        Field(ge=0.001, le=3600.0),
        Why("updates faster than a millisecond", "an hour between updates"),
    ] = 5.0
    """With ``pacing = "pd"``: seconds between rate updates (1 ms to 1 h). Default 5 s: bcache's
    ``writeback_rate_update_seconds`` (same source)."""
    delay: Annotated[
        Seconds, Field(le=3600.0), Why(high="data held dirty for over an hour on purpose")
    ] = 0.0
    """Seconds a write stays in the buffer before it may be destaged (0 to 1 h), so that rewrites
    of hot data are absorbed. Default 0: destage at once (bcache waits ``writeback_delay`` = 30 s
    by default, Linux Documentation/admin-guide/bcache.rst; set 30 for that)."""

    order: Literal["arrival", "hash"] = "arrival"
    """Which dirty data a flusher takes next. ``arrival`` (default): the oldest writes first (a
    write-back log's order, FIFO/LRU), sorted by address within a batch, so a sequential stream
    reaches the array in address order. ``hash``: the cache holds dirty data in aligned blocks of
    ``max_batch`` bytes of a VM's disk, indexed by a hash of the block's address, and a cleaner
    walks that index in hash order, a block at a time (several small blocks per batch up to
    ``max_batch``): consecutive blocks of a sequential stream reach the array in an order
    unrelated to their addresses, scattered over the dirty data's span. Linux dm-cache's smq
    policy writes back this way: one cache block per writeback work item, taken from its dirty
    queue (``queue_writeback``: ``q_peek(&mq->dirty, ...)``), whose order is the policy's hotness
    levels, not the origin address (drivers/md/dm-cache-policy-smq.c); a hash walk stands for any
    such order. Takes no ``delay`` (a hash walk has no age order)."""

    @model_validator(mode="after")
    def _policy_complete(self) -> DestagerSpec:
        if self.order == "hash" and self.delay > 0:
            raise ValueError(
                'order = "hash" takes dirty blocks in hash order, not oldest first, so it cannot '
                f"hold them for delay ({self.delay:g} s): "
                'set delay = 0 or order = "arrival"'
            )
        if self.low_watermark > self.high_watermark:
            raise ValueError(
                f"low_watermark ({self.low_watermark:g}) is above high_watermark "
                f"({self.high_watermark:g}): "
                "destaging stops at the low one, so it must be at most the high one"
            )
        if (self.pacing == "rate") != (self.rate is not None):
            raise ValueError(
                'pacing = "rate" and rate go together: set both (a destage rate limit) or neither'
            )
        return self


class CacheSpec(_Spec):
    """Per-host LRU read cache kept in the tier."""

    line: SectorBytes = 64 * 1024
    """Bytes one cached block holds: at least a 512-byte sector."""
    capacity: PositiveBytes | None = None
    """Bytes of the tier used for cached blocks; defaults to the tier's capacity."""
    warm: bool = False
    """Start with each VM's disk (its working set, or its trace's span) in its host's cache, from
    the first byte, each VM on a host taking an equal share of the cache: reads hit from the
    first second, as on a cache that has run for a while, or a device read directly (a device
    test). Default: empty."""


class CompressionSpec(_Spec):
    """Compression of replica traffic on the peer network."""

    mode: Literal["off", "always", "adaptive"] = "off"
    throughput: PositiveRate = 500e6
    """CPU compression rate on the sending host, bytes/s of input."""
    threshold: Fraction = 0.7
    """Adaptive mode compresses only while the sending port's recent utilization is above this."""


class ClusterSpec(_Spec):
    """Hosts (all alike), their tier, networks, destager and cache."""

    hosts: Annotated[
        Count,
        Field(title="Hosts", ge=1, le=MAX_HOSTS),
        Why(high="a bigger cluster is beyond what one run simulates in reasonable time"),
    ] = 4
    """Hosts in the cluster, all alike. WB+1 needs at least 2 hosts, WB+2 at least 3."""
    tier: Annotated[TierSpec, Field(title="Tier (flash, SCM or RAM)")]
    """The acceleration tier on each host: flash, storage-class memory or RAM that completes
    write-back writes and holds the read cache."""
    peer_link: Annotated[LinkSpec, Field(title="Peer network link")]
    """The port type between hosts: carries the WB+1/WB+2 replicas and vMotions."""
    peer_links: Annotated[
        Count,
        Field(title="Peer links per host", ge=1, le=MAX_PEER_LINKS),
        Why(
            "a host needs one peer_link port",
            f"a host has at most {MAX_PEER_LINKS} peer ports; the default, 1, is a single port",
        ),
    ] = 1
    """Peer-network ports of the ``peer_link`` profile on every host, 1 to 16 (e.g. 2 for 2 x 10GbE
    dedicated to replication). Transfers to one peer always use the same port, as per-destination
    hashing (LACP layer-3 hash, multipath per target) does: a host sends to the peer ``d`` steps
    ahead of it around the ring on its port ``(d - 1) mod peer_links``, and the peer receives on
    its port of the same number, so WB+2 with 2 ports sends the two replicas of a write on
    different ports, and one flow never runs faster than one port's line rate. A vMotion spreads
    its streams over the source's ports round-robin (multi-NIC vMotion). So with more ports than
    peer hosts (``hosts - 1``) the extra ones carry only vMotion streams, and validation warns
    (:class:`~simcache.spec.consistency.ScenarioWarning`)."""
    storage_link: Annotated[LinkSpec, Field(title="Storage network link")]
    """Each host's port type to the storage network that reaches the backing array: carries its
    destages and read misses. The array has a port of its own (``array.port``) that every host's
    traffic shares; a transfer runs no faster than either."""
    peer_selection: Literal["ring", "random"] = "ring"
    peer_fabric: Literal["switched", "shared"] = "switched"
    """``switched``: each host's ports into a non-blocking switch. ``shared``: all peer traffic
    also crosses one segment of the peer link's bandwidth (a single uplink or inter-switch link),
    however many ports each host has."""
    destager: DestagerSpec = DestagerSpec()
    cache: CacheSpec = CacheSpec()
    compression: CompressionSpec = CompressionSpec()
