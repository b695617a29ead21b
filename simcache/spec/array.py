"""The shared backing array: its drives (spinning or solid-state) and the RAID controller in front.

:class:`DriveSpec` describes one drive of the array, a spinning drive (seek
curve, rotation, zoned media rate, command queueing, buffer read cache) or a
solid-state one (read and write times, parallel units); :class:`ArraySpec` the
spindles of that drive behind a controller (RAID level, stripe, write and read
caches) and the storage port that reaches it. Both may name a built-in profile
and override its fields. A host's own hardware is in
:mod:`simcache.spec.components`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from simcache.physics.drive import drive_seek_curve, revolution_seconds
from simcache.spec.components import LinkSpec
from simcache.spec.fields import (
    Bytes,
    Count,
    Fraction,
    Number,
    PositiveBytes,
    PositiveRate,
    PositiveSeconds,
    Seconds,
    SectorBytes,
    Why,
    _Profiled,
)

__all__ = ["ArraySpec", "DriveSpec"]


_RPM_WHY = "hard drives spin at 3,600 to 15,000 RPM, so a value outside is a typo"


MIN_TRACKS = 100
"""Fewest tracks a disk drive's capacity may hold: below it the seek curve has no stroke to span
(real drives hold hundreds of thousands)."""


class DriveSpec(_Profiled):
    """One drive of the array: a spinning drive (``media = "disk"``) or a solid-state one
    (``"flash"``)."""

    _profile_kind: ClassVar[str] = "drive"

    media: Literal["disk", "flash"] = "disk"
    """``disk`` (default): a spinning drive, each operation a seek, a rotation and a transfer
    (``rpm``, ``avg_seek`` required). ``flash``: a solid-state drive of an all-flash array: each
    operation takes ``read_time`` or ``write_time`` plus its transfer at ``media_rate``, and the
    drive serves ``parallelism`` operations at once (its independent flash units as the host sees
    them); no seek, rotation or zones."""
    rpm: (
        Annotated[Number, Field(title="Drive RPM", ge=1000, le=30000), Why(_RPM_WHY, _RPM_WHY)]
        | None
    ) = None
    """Rotational speed in revolutions per minute (disk drives; required for them): half a
    revolution is the mean rotational latency of every array I/O. 1,000 to 30,000: hard drives
    spin at 3,600 to 15,000 RPM, so a value outside is a typo."""
    avg_seek: PositiveSeconds | None = None
    """Datasheet average seek (disk drives; required for them): the mean over random seeks across
    the whole stroke."""
    read_time: (
        Annotated[PositiveSeconds, Field(le=0.1), Why(high="a flash read slower than a disk seek")]
        | None
    ) = None
    """Flash drives (required for them): the time (s) one read takes inside the drive before its
    transfer, as a host sees it at queue depth 1 (the drive's 4 KiB QD1 read latency less the 4
    KiB transfer)."""
    write_time: (
        Annotated[PositiveSeconds, Field(le=0.1), Why(high="a flash write slower than a disk seek")]
        | None
    ) = None
    """Flash drives (required for them): the time (s) one write takes inside the drive before its
    transfer (its QD1 write latency less the transfer; a drive with a power-protected write
    buffer acknowledges from it)."""
    parallelism: Annotated[
        Count, Field(ge=1, le=4096), Why(high="more parallel units than any drive has")
    ] = 1
    """Flash drives: operations the drive serves at once (1 to 4,096): its QD-saturated
    random-read IOPS times ``read_time`` (Little's law), about its channels x dies as the host
    sees them. Disk drives: 1 (one arm)."""
    settle: Seconds = 0.0
    """Track-to-track seek: the shortest seek the array's seek curve makes (one track's
    distance)."""
    full_seek: PositiveSeconds | None = None
    """Full-stroke seek from the datasheet. Unset: twice ``avg_seek`` (an assumption; see
    simcache.physics.drive.default_full_seek)."""
    media_rate: PositiveRate
    """Sustained media rate at the outer diameter (the datasheet's maximum sustained transfer
    rate)."""
    inner_rate: PositiveRate | None = None
    """Sustained media rate at the inner diameter (the datasheet's minimum); the rate in between
    follows the radius (zoned recording, see simcache.physics.drive.zone_rate). Unset:
    ``media_rate`` over the whole stroke."""
    capacity: PositiveBytes
    queue_depth: Annotated[
        Count, Field(ge=1, le=256), Why(high="SAS allows 256 tagged commands a drive; SATA NCQ 32")
    ] = 32
    """Commands the drive accepts at once and reorders (SATA native command queuing: 32; SAS
    tagged command queuing: up to 256). The array's ``elevator`` scheduling reorders at most this
    many at a time; 1: none."""
    command_queueing: Annotated[
        Count, Field(ge=0, le=256), Why(high="SAS allows 256 tagged commands a drive; SATA NCQ 32")
    ] = 0
    """Disk drives: how many queued commands the drive chooses among for its next one (SATA
    native command queuing: up to 32, SATA 2.6; SAS: up to 256). The drive serves next the
    waiting command (at most this many of them, past the ``reorder_lag`` committed) that is
    nearest by ``reorder``: positioning time (seek plus rotational wait) or seek alone. 0 or 1
    (default): first come first served. At most ``queue_depth`` (the commands the drive holds);
    spinning drives only. Unlike the array's ``elevator`` (which sorts the chunks of
    one request), this reorders the commands of separate requests (a VM's queue depth)."""
    reorder: Literal["positioning", "seek"] = "positioning"
    """Disk drives with ``command_queueing`` > 1: what the drive minimizes when it picks its next
    command. ``positioning`` (default): seek plus rotational wait, shortest positioning time first
    (rotational position ordering, the SATA native command queuing white paper's algorithm, Intel
    and Seagate 2003; Jacobson and Wilkes 1991, Seltzer, Chen and Ousterhout 1990). ``seek``: the
    seek alone, shortest seek time first (the earlier algorithm the same white paper describes:
    the rotational wait after the seek is left to chance)."""
    reorder_lag: Annotated[
        Count, Field(ge=0, le=255), Why(high="more commands committed ahead than any queue holds")
    ] = 0
    """Disk drives with ``command_queueing`` > 1: commands the drive has already committed to
    serve next, in the order it chose them, and no longer reorders (0 to 255; default 0: it picks
    each next command when the one before ends). A drive that picks its next command while the
    current one is in service, so the seek can start on time, chooses among the commands waiting
    then; with ``reorder_lag = k`` it chooses among all waiting but the ``k`` committed, so with
    ``k + 2`` or fewer outstanding it serves first come first served; since it holds at most
    ``queue_depth`` commands, ``k`` is at most ``queue_depth - 3``."""
    overhead: Annotated[
        Seconds,
        Field(le=0.01),
        Why(high="a drive's command overhead is a fraction of a millisecond"),
    ] = 0.0
    """Command (controller) overhead of each operation the drive serves from its media, on top of
    seek, rotation and transfer (0 to 10 ms): the time from the command's receipt to the start of
    the seek. Datasheets that give access times with and without it put it at 0.2 ms (Seagate
    Savvio 10K.4 SAS product manual: average read access 4.0 ms with controller overhead, 3.8 ms
    without). Default 0: none (the model before issue 34). An operation that streams on from the
    one before (no seek, no rotation) pays none: the drive prepared it while the one before was
    transferring."""
    cache: Bytes = 0
    """Bytes of the drive's buffer that keep data for later reads (its read cache; the Seagate
    Exos X18 SAS product manual, section 4.4: with read caching enabled, data read or written is
    kept in the buffer's segments for later read hits). 0 (default): no read cache, every read
    goes to the media. Each of ``cache_segments`` segments holds the data of one read or write
    (at most ``cache / cache_segments`` bytes), replaced least recently used first; a read of a
    chunk a segment holds is served from the buffer in ``cache_hit_time`` without moving the head
    (the drive's command queue serves it while the arm works on others)."""
    cache_segments: Annotated[
        Count, Field(ge=1, le=65536), Why(high="more segments than any drive's buffer is cut into")
    ] = 16
    """Segments the read cache is cut into (1 to 65,536): the most reads it remembers at once.
    Drives set it in their caching mode page (SCSI mode page 08h, "number of cache segments");
    default 16, an assumption."""
    cache_hit_time: Annotated[
        Seconds, Field(le=0.01), Why(high="a buffer hit slower than 10 ms is slower than the media")
    ] = 0.0002
    """Time (s) to serve a read from the drive's buffer: the command overhead plus the transfer
    over the interface (default 0.2 ms, an assumption: the Savvio 10K.4's 0.2 ms controller
    overhead; a 4 KiB transfer at SATA's 600 MB/s adds 7 us)."""

    @model_validator(mode="after")
    def _seek_curve_fits(self) -> DriveSpec:
        if self.media == "flash":
            return self._flash_complete()
        missing = [name for name in ("rpm", "avg_seek") if getattr(self, name) is None]
        if missing:
            raise ValueError(
                f"a disk drive needs {' and '.join(missing)}; for a solid-state drive set media = "
                "'flash'"
            )
        stray = [name for name in ("read_time", "write_time") if getattr(self, name) is not None]
        if stray or self.parallelism != 1:
            names = " and ".join([*stray, *(["parallelism"] if self.parallelism != 1 else [])])
            raise ValueError(
                f"{names} describe a flash drive: set media = 'flash', or remove them for a disk "
                "drive"
            )
        assert self.avg_seek is not None
        if self.settle > self.avg_seek:
            raise ValueError("settle (track-to-track seek) cannot exceed avg_seek")
        if self.inner_rate is not None and self.inner_rate > self.media_rate:
            raise ValueError(
                f"inner_rate ({self.inner_rate:.4g} B/s) cannot exceed media_rate "
                f"({self.media_rate:.4g} B/s)"
            )
        assert self.rpm is not None
        track = self.media_rate * revolution_seconds(self.rpm)
        if self.capacity < MIN_TRACKS * track:
            raise ValueError(
                f"capacity ({self.capacity:,} B) holds fewer than {MIN_TRACKS} tracks of "
                f"{track:,.0f} B (media_rate x one revolution): a disk drive's seek curve needs a "
                "stroke; give the capacity with its unit, e.g. '1TB'"
            )
        drive_seek_curve(self)  # a ValueError says which averages the settle and full stroke allow
        self._check_command_queueing()
        self._check_cache_segments()
        return self

    def _check_command_queueing(self) -> None:
        """A reordering drive chooses among commands it holds (at most ``queue_depth``): one in
        service, ``reorder_lag`` committed, the rest candidates, so it has a choice (two
        candidates) only with ``reorder_lag + 3`` commands or more."""
        if self.command_queueing <= 1:
            return
        if self.command_queueing > self.queue_depth:
            raise ValueError(
                f"command_queueing ({self.command_queueing}) exceeds queue_depth "
                f"({self.queue_depth}): the drive chooses among the commands it holds; set "
                f"command_queueing to at most {self.queue_depth} or raise queue_depth"
            )
        if self.queue_depth < 3:
            raise ValueError(
                f"command_queueing ({self.command_queueing}) never reorders with queue_depth "
                f"({self.queue_depth}): of the commands the drive holds one is in service, so it "
                "has two to choose from only with 3; raise queue_depth or set command_queueing to 0"
            )
        if self.reorder_lag > self.queue_depth - 3:
            raise ValueError(
                f"reorder_lag ({self.reorder_lag}) leaves the drive no choice: it holds at most "
                f"queue_depth ({self.queue_depth}) commands, one in service and reorder_lag "
                "committed, and reorders only with two left to choose from; set reorder_lag to "
                f"at most {self.queue_depth - 3} (queue_depth - 3), or command_queueing "
                "to 0 for first come first served"
            )

    def _check_cache_segments(self) -> None:
        if self.cache and self.cache // self.cache_segments < 512:
            raise ValueError(
                f"cache ({self.cache} B) over cache_segments ({self.cache_segments}) leaves "
                "segments smaller than one "
                "512-byte sector: give the cache more bytes or fewer segments"
            )

    def _flash_complete(self) -> DriveSpec:
        missing = [name for name in ("read_time", "write_time") if getattr(self, name) is None]
        if missing:
            raise ValueError(
                f"a flash drive needs {' and '.join(missing)} (its QD1 latencies less the transfer)"
            )
        spinning = [
            name
            for name in ("rpm", "avg_seek", "full_seek", "inner_rate")
            if getattr(self, name) is not None
        ]
        spinning += [
            name for name in ("settle", "command_queueing", "reorder_lag") if getattr(self, name)
        ]
        # (the default, which a dumped spec writes out, says nothing; "seek" asks for a disk's
        # reordering)
        if self.reorder != "positioning":
            spinning.append("reorder")
        if spinning:
            names = " and ".join(spinning)
            raise ValueError(
                f"{names} describe a spinning drive: remove them from a media = 'flash' drive"
            )
        self._check_cache_segments()
        return self


class ArraySpec(_Profiled):
    """The shared backing array: spindles behind a controller, reached over a storage port."""

    _profile_kind: ClassVar[str] = "array"

    drive: Annotated[DriveSpec, Field(title="Array drive")]
    """The drive type of every spindle."""
    spindles: Annotated[
        Count,
        Field(title="Array spindles", ge=1, le=4096),
        Why(high="more drives than one controller drives"),
    ]
    """Drives in the array. More spindles: more random I/Os per second for destaging and read
    misses."""
    raid: Literal["raid0", "raid1", "raid10", "raid5", "raid6"] = "raid10"
    stripe: SectorBytes = 64 * 1024
    """RAID stripe unit: the bytes of one drive before the next; at least a 512-byte sector."""
    scheduling: Literal["fcfs", "elevator"] = "elevator"
    """How each spindle orders the chunks that reach it together (a destage batch, a multi-chunk
    run): ``elevator`` (the controller's and the drive's queue reordering: one sweep over up to
    the drive's ``queue_depth`` chunks, nearer end first) or ``fcfs`` (in the order they were
    sent). I/Os that reach the array separately are served in arrival order either way."""
    controller_cache: Bytes = 0
    cache_latency: Seconds = 0.0002
    cache_flush: Literal["immediate", "watermark"] = "immediate"
    """When the controller write cache (``controller_cache`` > 0) writes to the spindles:
    ``immediate`` (each write goes to its spindles at once; the cache only acknowledges early
    while it has room) or ``watermark`` (writes stay in the cache until it is
    ``cache_high_watermark`` full, then everything held is flushed as one batch, sorted by
    address and merged, so contiguous writes become whole stripe rows on parity RAID)."""
    cache_high_watermark: Annotated[
        Fraction, Field(gt=0.0), Why(low="a flush at 0% is the immediate policy")
    ] = 0.8
    """Fill level of the controller cache at which ``watermark`` flushing starts (0 < x <= 1).
    Default 0.8: storage controllers flush at a fill level of around 80% (DOMAIN.md, write-back
    cache policies)."""
    read_cache: Bytes = 0
    """Bytes of the controller's memory that keep data for later reads (its read cache): an LRU
    over the array's logical address space in lines of ``read_cache_line`` bytes. A read whose
    lines are all there is answered from it in ``read_cache_latency`` without reaching the
    spindles; a read that misses goes to the spindles and leaves the lines it covered whole in
    the cache, as does every write (the written data passes through the controller's memory). 0
    (default): no controller read cache."""
    read_cache_line: Annotated[
        SectorBytes, Field(le=64 * 1024**2), Why(high="a cache line larger than any stripe")
    ] = 4096
    """Bytes of one line of the controller read cache (512 B to 64 MiB; default 4 KiB, an
    assumption: the page size controllers manage their cache in). Only whole lines a read or
    write covers are kept."""
    read_cache_latency: Annotated[
        Seconds, Field(le=0.1), Why(high="a cache hit slower than a disk seek")
    ] = 0.0002
    """Time (s) the controller takes to answer a read from its read cache (default 0.2 ms, an
    assumption: the same as ``cache_latency``, a copy out of the controller's memory)."""
    port: LinkSpec

    @model_validator(mode="after")
    def _enough_spindles(self) -> ArraySpec:
        minimum = {"raid0": 1, "raid1": 2, "raid10": 2, "raid5": 3, "raid6": 4}[self.raid]
        if self.spindles < minimum:
            raise ValueError(f"{self.raid} needs at least {minimum} spindles, got {self.spindles}")
        if 0 < self.read_cache < self.read_cache_line:
            raise ValueError(
                f"read_cache ({self.read_cache} B) is smaller than one read_cache_line "
                f"({self.read_cache_line} B): "
                "give it at least one line, or 0 for none"
            )
        return self
