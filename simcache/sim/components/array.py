"""Backing array: spindles behind a RAID controller with an optional write cache.

Assumptions (see docs/model.md, Backing array):
- Each VM's disk is a region of the array's logical space, VM after VM in index order (each as large
  as its working set or trace span). A front-end run at (VM, offset, length) is cut into
  stripe-sized chunks from its start (as if runs were stripe-aligned: a run costs ceil(length /
  stripe) chunks wherever it starts); each chunk goes to the spindles of the stripe unit its first
  byte is in (:func:`simcache.physics.array.stripe_unit_spindles`, through a
  :class:`~simcache.physics.array.StripeLayout`), at ``row x stripe`` plus its offset in the unit on
  each of them.
- Each spindle remembers where its head is (the end of its last chunk). A
  chunk's seek follows the distance from there, as a fraction of the stroke,
  on the datasheet-fitted seek curve (:class:`simcache.physics.array.SeekCurve`).
- Rotational latency is uniform over one revolution, except that a chunk that
  starts exactly where the head is, on a spindle still busy with the chunk
  before it, streams on: no seek and no rotation.
- RAID write penalty: RAID 1/10 writes the chunk on its mirrored pair; RAID 5
  and 6 read-modify-write data and parity (2 and 3 spindles, each reading then
  writing one revolution later), i.e. 4 and 6 back-end I/Os. A mirrored read
  goes to either copy at random (no load balancing between the two).
- Each spindle serves first-come first-served, so completion times are
  computed at submission (no SimPy events inside the array).
- A degraded array (``array_degraded`` / ``array_rebuild`` events, :meth:`Array.degrade`) scales
  each spindle operation's service time by its RAID level's factor
  (:func:`simcache.physics.array.degraded_factors`), over ``1 - share`` while a rebuild takes that
  share of the spindles (:func:`simcache.physics.array.rebuild_share`): the survivors' mean load,
  not which spindle failed.
- An optional controller write cache acknowledges writes after
  ``cache_latency`` while it has room; a write that does not fit waits for its
  spindles like an uncached write.
- Read caches (both off by default): the controller's (``read_cache``), an LRU of
  ``read_cache_line`` lines of the logical address space that answers a read all
  of whose lines it holds in ``read_cache_latency``; and each drive's buffer
  (``drive.cache``), an LRU of ``cache_segments`` segments, each the data of one
  chunk operation on that drive (its position and length), that answers a chunk
  read it holds in ``cache_hit_time`` without moving the arm. Both keep what was
  read and what was written. Deterministic: no draws (a hit skips the rotation's).
- ``drive.overhead`` (command overhead) is added to every chunk operation that
  positions the head (not to one that streams on).
- ``drive.command_queueing`` (> 1): each spindle keeps a pool of the positions (and rotational
  angles) it has not served. The slot a command books (first come first served, so completions
  stay known at submission) serves, of the command's own position and the first ``k - 1`` of the
  pool, ``k`` the commands waiting when it is booked less ``drive.reorder_lag`` (committed
  ahead), at most ``command_queueing``, the one nearest the head by ``drive.reorder`` (seek plus
  rotational wait, or seek alone; :meth:`Array._reorder`), and transfers the command's own bytes
  from there; a pool entry served gives its place to the command's position, and entries passed
  over stay. The sequence of positions the spindle visits is a shortest-positioning (or
  shortest-seek) first schedule over the commands waiting; the latencies are handed out in
  arrival order, so the mean is the reordering drive's and its starvation tail is not.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import accumulate

from simcache.physics.array import (
    SeekCurve,
    StripeLayout,
    cache_ack_seconds,
    drive_seek_curve,
    elevator_order,
    flash_op_seconds,
    read_modify_write,
    revolution_seconds,
    spindle_op_seconds,
    stripe_width,
    write_penalty,
    zone_shrink,
)
from simcache.sim.components.meter import BusyMeter
from simcache.sim.components.randomness import UniformStream
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
        # A flash drive (media = "flash"): no revolution, no seek; each of its `parallelism` units
        # serves an operation in its read or write time plus the transfer (:meth:`_flash_operate`).
        self._flash = drive.media == "flash"
        self._revolution = revolution_seconds(drive.rpm) if drive.rpm is not None else 0.0
        self._read_time = drive.read_time if drive.read_time is not None else 0.0
        self._write_time = drive.write_time if drive.write_time is not None else 0.0
        self._parallelism = drive.parallelism
        self._units = (
            [[0.0] * drive.parallelism for _ in range(spec.spindles)] if self._flash else []
        )
        # whether the request being dispatched writes (read by the flash drives' operations)
        self._writing = False
        # The spec's fields as typed attributes: compiled, a read of the spec's (an interpreted
        # class) is a generic lookup.
        self._stripe = spec.stripe
        self._spindles = spec.spindles
        self._layout = StripeLayout(spec.raid, spec.spindles)
        self._seek = (
            drive_seek_curve(drive)
            if not self._flash
            else SeekCurve(0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
        )
        self._stroke = float(drive.capacity)
        self._seconds_per_byte = 1.0 / drive.media_rate
        self._vm_start = [0, *accumulate(vm_bytes)]
        rows = max(1, drive.capacity // spec.stripe)
        # data bytes of one stripe row
        self._row_bytes = stripe_width(spec.raid, spec.spindles) * spec.stripe
        self._logical_bytes = rows * self._row_bytes
        self._outer_rate = drive.media_rate
        self._zone_shrink = zone_shrink(drive.media_rate, drive.inner_rate)
        # byte position on each spindle after its last chunk (-1: none yet)
        self._head = [-1] * spec.spindles
        self._spindle_free = [0.0] * spec.spindles
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
        self._overhead = drive.overhead
        # Command queueing (drive.command_queueing > 1): per spindle, the finish times of the
        # commands booked and not yet done, in booking order (first come first served, so they
        # ascend; the first is in service), and the pool of positions not yet served (position,
        # angle as a fraction of a revolution; :meth:`_reorder`).
        self._choose_among = drive.command_queueing if not self._flash else 0
        self._reorder_lag = drive.reorder_lag
        self._by_seek = drive.reorder == "seek"
        self._pending: list[list[float]] = (
            [[] for _ in range(spec.spindles)] if self._choose_among > 1 else []
        )
        self._pool: list[list[tuple[int, float]]] = (
            [[] for _ in range(spec.spindles)] if self._choose_among > 1 else []
        )
        # lowest and highest position requested on each spindle (the pool's draws range over it)
        self._span: list[list[int]] = (
            [[drive.capacity, 0] for _ in range(spec.spindles)] if self._choose_among > 1 else []
        )
        # Read caches (both off by default). The controller's: LRU of line numbers of the logical
        # address space.
        self._line = spec.read_cache_line
        self._read_lines = spec.read_cache // spec.read_cache_line
        self._lines: OrderedDict[int, None] = OrderedDict()
        self._read_hit = spec.read_cache_latency
        # Each drive's buffer: LRU of segments, position -> bytes held from there, per spindle.
        self._segments = drive.cache_segments if drive.cache > 0 else 0
        self._segment_bytes = drive.cache // drive.cache_segments
        self._segment_caches: list[OrderedDict[int, int]] = (
            [OrderedDict() for _ in range(spec.spindles)] if self._segments else []
        )
        self._drive_hit = drive.cache_hit_time
        self.read_cache_hits = 0  # front-end reads answered by the controller's read cache
        self.drive_cache_hits = 0  # chunk reads answered by a drive's buffer
        self.cache_flushes = 0
        self.front_end_ios = 0
        self.back_end_ios = 0
        # parity RAID stripe rows written whole (data and parity, no reads)
        self.full_stripe_writes = 0
        self.bytes_read = 0
        self.bytes_written = 0
        # bytes the drives' media transferred: each chunk operation's, on every copy it goes to,
        # twice for a read-modify-write (read, then write back); none for a drive-cache hit
        self.media_bytes = 0
        self.busy = BusyMeter()  # spindle busy intervals, for utilization
        self.requests: list[tuple[float, float, tuple[Run, ...]]] | None = None
        """Set to a list to log each :meth:`submit` as (submitted at, done at, runs), in the
        order they arrive (tests read the order a destager's runs reach the array); None, the
        default, logs nothing."""

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
        spindles = self._spindles
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
        segments = self._segments
        self._writing = is_write
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
                                self._buffered(
                                    target,
                                    row * stripe,
                                    stripe,
                                    now,
                                    False,
                                    self._plain_scale,
                                    False,
                                )
                                if segments
                                else self._operate(
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
                            self._buffered(
                                target, position, chunk, now, read_modify_write, scale, not is_write
                            )
                            if segments
                            else self._operate(
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
                    self._head[target], queued[target], self._queue_depth
                ):
                    finish = (
                        self._buffered(
                            target, position, chunk, now, rmw, scale if rmw else plain, not is_write
                        )
                        if segments
                        else self._operate(
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

    def _buffered(
        self,
        spindle: int,
        position: int,
        chunk: int,
        now: float,
        read_modify_write: bool,
        scale: float,
        is_read: bool,
    ) -> float:
        """:meth:`_operate` with the drive's read cache on: a read of a chunk a segment of
        ``spindle``'s buffer holds is done ``cache_hit_time`` after ``now`` (the arm stays where
        it is); any other operation goes to the media and its data takes the most recent segment
        (if it fits one), evicting the least recent."""
        cache = self._segment_caches[spindle]
        if is_read:
            held = cache.get(position)
            if held is not None and held >= chunk:
                cache.move_to_end(position)
                self.drive_cache_hits += 1
                return now + self._drive_hit
        finish = self._operate(spindle, position, chunk, now, read_modify_write, scale)
        if chunk <= self._segment_bytes:
            cache[position] = chunk
            cache.move_to_end(position)
            if len(cache) > self._segments:
                cache.popitem(last=False)
        return finish

    def _operate(
        self,
        spindle: int,
        position: int,
        chunk: int,
        now: float,
        read_modify_write: bool,
        scale: float,
    ) -> float:
        """Queue one chunk operation on ``spindle`` at byte ``position``, its service time times
        ``scale``; return when it finishes."""
        if self._flash:
            return self._flash_operate(spindle, chunk, now, read_modify_write, scale)
        free = self._spindle_free
        busy_until = free[spindle]
        start = busy_until if busy_until > now else now
        revolution = self._revolution
        head = self._head[spindle]
        candidates = self._candidates(spindle, now) if self._choose_among > 1 else 1
        if candidates > 1:
            position, seek, rotation = self._reorder(
                spindle, position, start, busy_until >= now, candidates
            )
        elif head == position and busy_until >= now:
            # streams on from the chunk before, which the spindle is still busy with
            seek = rotation = 0.0
        else:
            seek = self._seek_from(head, position)
            if self._overhead:
                seek += self._overhead  # the command overhead, counted with the positioning
            rotation = self._stream.uniform() * revolution
        shrink = self._zone_shrink
        if shrink:
            # array_physics.zone_rate
            transfer = chunk / (
                self._outer_rate * math.sqrt(1.0 - position / self._stroke * shrink)
            )
        else:
            transfer = chunk * self._seconds_per_byte
        finish = (
            start
            + spindle_op_seconds(seek, rotation, transfer, revolution, read_modify_write) * scale
        )
        free[spindle] = finish
        self._head[spindle] = position + chunk
        self.media_bytes += 2 * chunk if read_modify_write else chunk
        if self._choose_among > 1:
            self._pending[spindle].append(finish)
        self.busy.add(start, finish, now)
        return finish

    def _seek_from(self, head: int, place: int) -> float:
        """The seek (s) from byte ``head`` to byte ``place`` on the seek curve, the distance as a
        fraction of the stroke; a spindle that has served nothing yet (``head`` -1) seeks from
        byte 0."""
        distance = place - head if head > 0 else place
        return self._seek.seconds((distance if distance >= 0 else -distance) / self._stroke)

    def _candidates(self, spindle: int, now: float) -> int:
        """Command queueing: how many commands the drive chooses among for the slot booked on
        ``spindle`` at ``now``: the one booked and those waiting (booked, not started: all
        pending but the first, which is in service; the drive holds at most ``queue_depth`` with
        the one in service), less ``reorder_lag``, at most ``command_queueing``; at least 1
        (first come first served)."""
        pending = self._pending[spindle]
        done = 0
        while done < len(pending) and pending[done] <= now:
            done += 1
        if done:
            del pending[:done]
        # the commands the drive holds (at most queue_depth, with the one booked) less the one in
        # service and those committed
        held = len(pending) if len(pending) < self._queue_depth else self._queue_depth - 1
        candidates = held - self._reorder_lag  # waiting (held - 1) and the one booked
        if candidates > self._choose_among:
            candidates = self._choose_among
        return candidates if candidates > 1 else 1

    def _reorder(
        self, spindle: int, position: int, start: float, busy: bool, candidates: int
    ) -> tuple[int, float, float]:
        """Command queueing: the position the drive serves in the slot booked on ``spindle`` for
        a command at ``position`` (drawn a uniform rotational angle), starting at ``start``; the
        slot transfers the booked command's bytes from there (one slot per command booked, so
        the spindle moves the bytes requested).

        The drive chooses among the booked command and the first ``candidates - 1`` entries of
        the spindle's pool of unserved (position, angle) pairs (:meth:`_candidates`; a pool short
        of them after the queue grew gets positions drawn uniform over those requested on the
        spindle so far): the nearest to the head by positioning time (the seek, plus the command
        overhead, then the wait for its angle to come round, the platter's angle being ``start +
        seek`` over the revolution), the first of equals, or with ``reorder = "seek"`` by seek
        alone, i.e. the nearest by distance (the seek curve rises with it; the rotational wait
        then falls as it falls). One that continues where the head is, on a spindle still
        ``busy``, streams on: no seek, no rotation. A pool entry chosen gives its place to the
        booked command; entries passed over stay in the pool, those beyond the first
        ``candidates - 1`` until the queue grows again. Returns the position served, its seek
        (with the overhead) and its rotational wait."""
        pool = self._pool[spindle]
        uniform = self._stream.uniform
        angle = uniform()
        span = self._span[spindle]
        if position < span[0]:
            span[0] = position
        if position > span[1]:
            span[1] = position
        window = candidates - 1
        while len(pool) < window:
            # The queue grew: the commands booked ahead of this one hold the positions they were
            # charged, so the drive's other waiting commands are drawn, uniform over the positions
            # requested on the spindle so far (a uniform stream's own law).
            place = span[0] + int(uniform() * (span[1] - span[0]))
            pool.append((place, uniform()))
        head = self._head[spindle]
        best = window  # the booked command, the most recent: pool entries first among equals
        best_place = position
        if self._by_seek:
            origin = head if head > 0 else 0
            nearest = position - origin if position >= origin else origin - position
            for k in range(window):
                place = pool[k][0]
                distance = place - origin if place >= origin else origin - place
                if distance <= nearest and (distance < nearest or best == window):
                    best, nearest, best_place = k, distance, place
            best_angle = angle
            if best < window:
                best_angle = pool[best][1]
                pool[best] = (position, angle)
            if busy and best_place == head:
                return best_place, 0.0, 0.0
            seek = self._seek_from(head, best_place) + self._overhead
            turn = best_angle - (start + seek) / self._revolution
            return best_place, seek, (turn - math.floor(turn)) * self._revolution
        revolution = self._revolution
        overhead = self._overhead
        best_cost = math.inf
        best_seek = best_rotation = 0.0
        for k in range(window + 1):
            place, turn_at = pool[k] if k < window else (position, angle)
            if busy and place == head:
                seek = rotation = 0.0
            else:
                seek = self._seek_from(head, place) + overhead
                turn = turn_at - (start + seek) / revolution
                rotation = (turn - math.floor(turn)) * revolution
            cost = seek + rotation
            if cost < best_cost:
                best, best_cost, best_seek, best_rotation, best_place = (
                    k,
                    cost,
                    seek,
                    rotation,
                    place,
                )
        if best < window:
            pool[best] = (position, angle)
        return best_place, best_seek, best_rotation

    def _flash_operate(
        self, drive: int, chunk: int, now: float, read_modify_write: bool, scale: float
    ) -> float:
        """One chunk operation on flash drive ``drive``: on its earliest free unit, first come
        first served, for the read or write time plus the transfer
        (:func:`simcache.physics.array.flash_op_seconds`) times ``scale``. The busy meter counts
        a unit's interval over ``parallelism``: the share of the drive it takes."""
        units = self._units[drive]
        unit = 0
        free = units[0]
        for k in range(1, len(units)):
            if units[k] < free:
                unit = k
                free = units[k]
        start = free if free > now else now
        access = self._write_time if self._writing and not read_modify_write else self._read_time
        service = (
            flash_op_seconds(
                access, chunk * self._seconds_per_byte, self._write_time, read_modify_write
            )
            * scale
        )
        finish = start + service
        units[unit] = finish
        self.media_bytes += 2 * chunk if read_modify_write else chunk
        self.busy.add(start, start + service / self._parallelism, now)
        return finish

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
