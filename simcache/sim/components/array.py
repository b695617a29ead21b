"""Backing array: spindles behind a RAID controller with an optional write cache.

The controller's part: where a request's bytes land, what RAID makes of them, the controller's
caches. What each chunk operation costs on its spindle (seek, rotation, transfer, command
queueing, the drive's buffer, a flash drive's units) is :mod:`simcache.sim.spindles.mechanics`.

Assumptions (see docs/model.md, Backing array):
- Each VM's disk is a region of the array's logical space, VM after VM in index order (each as large
  as its working set or trace span). A front-end run at (VM, offset, length) is cut into
  stripe-sized chunks from its start (as if runs were stripe-aligned: a run costs ceil(length /
  stripe) chunks wherever it starts); each chunk goes to the spindles of the stripe unit its first
  byte is in (:func:`simcache.physics.array.stripe_unit_spindles`, through a
  :class:`~simcache.physics.array.StripeLayout`), at ``row x stripe`` plus its offset in the unit on
  each of them.
- RAID write penalty: RAID 1/10 writes the chunk on its mirrored pair; RAID 5
  and 6 read-modify-write data and parity (2 and 3 spindles, each reading then
  writing one revolution later), i.e. 4 and 6 back-end I/Os. A mirrored read
  goes to either copy at random (no load balancing between the two).
- Completion times are computed at submission (no SimPy events inside the array): each spindle
  serves first-come first-served.
- A degraded array (``array_degraded`` / ``array_rebuild`` events, :meth:`Array.degrade`) scales
  each spindle operation's service time by its RAID level's factor
  (:func:`simcache.physics.array.degraded_factors`), over ``1 - share`` while a rebuild takes that
  share of the spindles (:func:`simcache.physics.array.rebuild_share`): the survivors' mean load,
  not which spindle failed.
- An optional controller write cache acknowledges writes after
  ``cache_latency`` while it has room; a write that does not fit waits for its
  spindles like an uncached write.
- The controller's read cache (``read_cache``, off by default): an LRU of ``read_cache_line``
  lines of the logical address space that answers a read all of whose lines it holds in
  ``read_cache_latency``. It keeps what was read and what was written. Deterministic: no draws.
  (Each drive's own buffer, ``drive.cache``, is the spindles'.)
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import accumulate

from simcache.physics.array import (
    StripeLayout,
    cache_ack_seconds,
    read_modify_write,
    stripe_width,
    write_penalty,
)
from simcache.physics.drive import elevator_order
from simcache.sim.components.meter import BusyMeter
from simcache.sim.components.randomness import UniformStream
from simcache.sim.spindles.mechanics import Spindles
from simcache.spec import ArraySpec

__all__ = ["Array", "Run", "merge_runs"]

Run = tuple[int, int, int]  # (VM index, offset in the VM's disk, length), bytes


def merge_runs(runs: Sequence[Run], address: Callable[[int, int], int]) -> list[Run]:
    """``runs`` sorted by array address (``address(vm, offset)``), overlapping or adjacent runs
    of one VM merged: what a controller flushing its cache sends (so contiguous writes become
    whole stripe rows)."""
    merged: list[Run] = []
    for vm, offset, length in sorted(
        runs, key=lambda run: (address(run[0], run[1]), run[0], run[1])
    ):
        if merged:
            last_vm, last_offset, last_length = merged[-1]
            if last_vm == vm and offset <= last_offset + last_length:
                merged[-1] = (vm, last_offset, max(last_length, offset + length - last_offset))
                continue
        merged.append((vm, offset, length))
    return merged


class Array:
    """The shared backing array. Times in seconds, sizes and positions in bytes."""

    def __init__(self, spec: ArraySpec, stream: UniformStream, vm_bytes: Sequence[int]):
        """``vm_bytes``: the size of each VM's disk (its working set, or its trace's span), by VM
        index; VM ``i``'s disk starts where VM ``i - 1``'s ends. Addresses past the array's
        usable capacity wrap around."""
        self.spec = spec
        self._stream = stream
        drive = spec.drive
        self.spindles = Spindles(spec, stream)
        """The drives, which serve the chunk operations :meth:`_dispatch` books on them."""
        # The spec's fields as typed attributes: compiled, a read of the spec's (an interpreted
        # class) is a generic lookup.
        self._stripe = spec.stripe
        self._spindle_count = spec.spindles
        self._layout = StripeLayout(spec.raid, spec.spindles)
        self._vm_start = [0, *accumulate(vm_bytes)]
        rows = max(1, drive.capacity // spec.stripe)
        # data bytes of one stripe row
        self._row_bytes = stripe_width(spec.raid, spec.spindles) * spec.stripe
        self._logical_bytes = rows * self._row_bytes
        self._elevator = spec.scheduling == "elevator"
        self._queue_depth = drive.queue_depth
        self._read_modify_write = read_modify_write(spec.raid)
        self._cache_capacity = spec.controller_cache
        self._cache_ack = cache_ack_seconds(spec)
        self._cache_used = 0
        self._cache_drains: list[tuple[float, int]] = []  # (time the spindles finish, bytes)
        self._hold = spec.controller_cache > 0 and spec.cache_flush == "watermark"
        self._flush_level = spec.cache_high_watermark * spec.controller_cache
        self._cache_ack_held = spec.cache_latency
        self._held: list[Run] = []  # writes held in the controller cache, not yet flushed
        self._held_bytes = 0
        # service-time factors (:meth:`degrade`)
        self._read_scale = self._rmw_scale = self._plain_scale = 1.0
        # The controller's read cache (off by default): LRU of line numbers of the logical address
        # space.
        self._line = spec.read_cache_line
        self._read_lines = spec.read_cache // spec.read_cache_line
        self._lines: OrderedDict[int, None] = OrderedDict()
        self._read_hit = spec.read_cache_latency
        self.read_cache_hits = 0  # front-end reads answered by the controller's read cache
        self.cache_flushes = 0
        self.front_end_ios = 0
        self.back_end_ios = 0
        # parity RAID stripe rows written whole (data and parity, no reads)
        self.full_stripe_writes = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.busy: BusyMeter = self.spindles.busy  # spindle busy intervals, for utilization
        self.requests: list[tuple[float, float, tuple[Run, ...]]] | None = None
        """Set to a list to log each :meth:`submit` as (submitted at, done at, runs), in the
        order they arrive (tests read the order a destager's runs reach the array); None, the
        default, logs nothing."""

    @property
    def drive_cache_hits(self) -> int:
        """Chunk reads answered by a drive's buffer."""
        return self.spindles.drive_cache_hits

    @property
    def media_bytes(self) -> int:
        """Bytes the drives' media transferred: each chunk operation's, on every copy it goes to,
        twice for a read-modify-write (read, then write back); none for a drive-cache hit."""
        return self.spindles.media_bytes

    @property
    def write_penalty(self) -> int:
        """Back-end I/Os per front-end write of one chunk (2 for RAID 10, 4 for RAID 5, 6 for
        RAID 6)."""
        return write_penalty(self.spec.raid, self.spec.spindles)

    def degrade(self, read: float, read_modify_write: float, plain_write: float) -> None:
        """Scale the service time of the spindle operations submitted from now on: reads by
        ``read``, parity read-modify-writes by ``read_modify_write``, other writes by
        ``plain_write`` (all 1: healthy)."""
        self._read_scale, self._rmw_scale, self._plain_scale = read, read_modify_write, plain_write

    def logical_address(self, vm: int, offset: int) -> int:
        """The array logical byte address of byte ``offset`` of VM ``vm``'s disk."""
        return (self._vm_start[vm] + offset) % self._logical_bytes

    def submit(self, now: float, runs: Sequence[Run], is_write: bool) -> float:
        """Submit contiguous runs (VM, offset, length) arriving at ``now``, in order; return when
        all are done (a write the controller cache holds: when the cache has acknowledged it).
        With :attr:`requests` a list, the request is logged there."""
        done = self._submit(now, runs, is_write)
        if self.requests is not None:
            self.requests.append((now, done, tuple(runs)))
        return done

    def _submit(self, now: float, runs: Sequence[Run], is_write: bool) -> float:
        total = 0
        # a loop, not sum() over a generator: compiled, no generator object per request
        for run in runs:
            total += run[2]
        if not is_write:
            self.bytes_read += total
            if self._read_lines:
                return self._read_through_cache(now, runs)
            return self._dispatch(now, runs, False)
        self.bytes_written += total
        if self._read_lines:
            for run in runs:
                self._keep_lines(run)
        if self._hold:
            held = self._hold_in_cache(now, runs, total)
            if held is not None:
                return held
        return self._through_cache(now, total, self._dispatch(now, runs, True))

    def _hold_in_cache(self, now: float, runs: Sequence[Run], total: int) -> float | None:
        """``watermark`` flushing: keep the write in the controller cache if it fits (return its
        acknowledgement time), flushing everything held as one sorted, merged batch once the
        cache is ``cache_high_watermark`` full; ``None`` if it does not fit (it goes to its
        spindles)."""
        self._drain(now)
        if self._cache_used + total > self._cache_capacity:
            return None
        self._cache_used += total
        self._held.extend(runs)
        self._held_bytes += total
        if self._cache_used >= self._flush_level:
            held = merge_runs(self._held, self.logical_address)
            heapq.heappush(self._cache_drains, (self._dispatch(now, held, True), self._held_bytes))
            self.cache_flushes += 1
            self._held = []
            self._held_bytes = 0
        return now + self._cache_ack_held

    def _read_through_cache(self, now: float, runs: Sequence[Run]) -> float:
        """A read with the controller read cache on: the runs whose lines it all holds are
        answered from it after ``read_cache_latency``, the others go to their spindles and leave
        their whole lines in it."""
        missed = [run for run in runs if not self._lines_held(run)]
        hits = len(runs) - len(missed)
        self.read_cache_hits += hits
        if not missed:
            self.front_end_ios += hits
            return now + self._read_hit
        done = self._dispatch(now, missed, False)
        self.front_end_ios += hits
        for run in missed:
            self._keep_lines(run)
        return max(done, now + self._read_hit) if hits else done

    def _lines_held(self, run: Run) -> bool:
        """Whether the controller read cache holds every line ``run`` touches (each then becomes
        most recent)."""
        address = self.logical_address(run[0], run[1])
        line = self._line
        lines = self._lines
        first = address // line
        last = (address + run[2] - 1) // line
        for number in range(first, last + 1):
            if number not in lines:
                return False
        for number in range(first, last + 1):
            lines.move_to_end(number)
        return True

    def _keep_lines(self, run: Run) -> None:
        """Put the lines ``run`` covers whole into the controller read cache as the most recent,
        evicting the least recent beyond its capacity."""
        address = self.logical_address(run[0], run[1])
        line = self._line
        lines = self._lines
        for number in range(-(-address // line), (address + run[2]) // line):
            lines[number] = None
            lines.move_to_end(number)
        while len(lines) > self._read_lines:
            lines.popitem(last=False)

    def _drain(self, now: float) -> None:
        drains = self._cache_drains
        while drains and drains[0][0] <= now:
            self._cache_used -= heapq.heappop(drains)[1]

    def _dispatch(self, now: float, runs: Sequence[Run], is_write: bool) -> float:
        """Send runs to their spindles at ``now``; return when the last chunk is done."""
        stripe = self._stripe
        spindles = self._spindle_count
        read_modify_write = is_write and self._read_modify_write
        row_bytes = self._row_bytes
        done = now
        chunks = 0
        full_rows = 0
        elevator = self._elevator and (len(runs) > 1 or runs[0][2] > stripe)
        queued: dict[int, list[tuple[int, int, bool]]] = {}
        plain = self._plain_scale if is_write else self._read_scale
        scale = self._rmw_scale if read_modify_write else plain
        vm_start = self._vm_start
        logical_bytes = self._logical_bytes
        layout = self._layout
        # the drives, resolved once per request: each chunk operation below is one method call
        drives = self.spindles
        buffering = drives.buffering
        drives.writing = is_write
        for vm, offset, length in runs:
            address = (vm_start[vm] + offset) % logical_bytes
            left = length
            lead = left
            if read_modify_write and length >= row_bytes:
                # Parity RAID: whole stripe rows inside the run are written data and parity at once,
                # without reads.
                lead = -address % row_bytes
                if left - lead < row_bytes:
                    lead = left
            while left > 0:
                if lead == 0 and left >= row_bytes:
                    row = address // row_bytes
                    for target in range(spindles):
                        if elevator:
                            queued.setdefault(target, []).append((row * stripe, stripe, False))
                        else:
                            finish = (
                                drives.buffered(
                                    target,
                                    row * stripe,
                                    stripe,
                                    now,
                                    False,
                                    self._plain_scale,
                                    False,
                                )
                                if buffering
                                else drives.operate(
                                    target, row * stripe, stripe, now, False, self._plain_scale
                                )
                            )
                            if finish > done:
                                done = finish
                    full_rows += 1
                    left -= row_bytes
                    address = (address + row_bytes) % logical_bytes
                    if left < row_bytes:
                        lead = left
                    continue
                chunk = stripe if lead > stripe else lead
                unit = address // stripe
                within = address % stripe
                row, targets = layout.unit_spindles(unit)
                position = row * stripe + within
                if not is_write and len(targets) > 1:
                    # a mirrored read: either copy
                    targets = (targets[int(self._stream.uniform() * len(targets))],)
                if elevator:
                    for target in targets:
                        queued.setdefault(target, []).append((position, chunk, read_modify_write))
                else:
                    for target in targets:
                        finish = (
                            drives.buffered(
                                target, position, chunk, now, read_modify_write, scale, not is_write
                            )
                            if buffering
                            else drives.operate(
                                target, position, chunk, now, read_modify_write, scale
                            )
                        )
                        if finish > done:
                            done = finish
                chunks += len(targets)
                left -= chunk
                lead -= chunk
                address = (address + chunk) % logical_bytes
        if elevator:
            for target in sorted(queued):
                for position, chunk, rmw in elevator_order(
                    drives.head[target], queued[target], self._queue_depth
                ):
                    finish = (
                        drives.buffered(
                            target, position, chunk, now, rmw, scale if rmw else plain, not is_write
                        )
                        if buffering
                        else drives.operate(
                            target, position, chunk, now, rmw, scale if rmw else plain
                        )
                    )
                    if finish > done:
                        done = finish
        self.front_end_ios += len(runs)
        self.back_end_ios += (2 * chunks if read_modify_write else chunks) + full_rows * spindles
        self.full_stripe_writes += full_rows
        return done

    def read(self, now: float, vm: int, offset: int, size: int) -> float:
        """``submit(now, ((vm, offset, size),), False)``: one read; return when it is done."""
        return self.submit(now, ((vm, offset, size),), False)

    def _through_cache(self, now: float, nbytes: int, spindles_done: float) -> float:
        ack = self._cache_ack
        if ack is None:
            return spindles_done
        drains = self._cache_drains
        self._drain(now)
        if self._cache_used + nbytes > self._cache_capacity:
            return spindles_done
        self._cache_used += nbytes
        heapq.heappush(drains, (spindles_done, nbytes))
        return now + ack
