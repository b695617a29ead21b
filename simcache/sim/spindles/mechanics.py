"""The drives behind the backing array, one chunk operation at a time: a spindle's seek, rotation
and transfer, its command queueing and buffer, or a flash drive's units.

The array (:class:`simcache.sim.components.array.Array`) cuts each request into chunk operations,
each for one spindle at a byte position on it, and books them here in the order it sends them.

Assumptions (see docs/model.md, Backing array):
- Each spindle serves first-come first-served, so completion times are computed at submission
  (no SimPy events inside the array).
- Each spindle remembers where its head is (the end of its last chunk). A
  chunk's seek follows the distance from there, as a fraction of the stroke,
  on the datasheet-fitted seek curve (:class:`simcache.physics.drive.SeekCurve`).
- Rotational latency is uniform over one revolution, except that a chunk that
  starts exactly where the head is, on a spindle still busy with the chunk
  before it, streams on: no seek and no rotation.
- ``drive.overhead`` (command overhead) is added to every chunk operation that
  positions the head (not to one that streams on).
- Each drive's buffer (``drive.cache``, off by default) is an LRU of ``cache_segments`` segments,
  each the data of one chunk operation on that drive (its position and length), that answers a
  chunk read it holds in ``cache_hit_time`` without moving the arm. It keeps what was read and
  what was written. Deterministic: no draws (a hit skips the rotation's).
- ``drive.command_queueing`` (> 1): each spindle keeps a pool of the positions (and rotational
  angles) it has not served. The slot a command books (first come first served, so completions
  stay known at submission) serves, of the command's own position and the first ``k - 1`` of the
  pool, ``k`` the commands waiting when it is booked less ``drive.reorder_lag`` (committed
  ahead), at most ``command_queueing``, the one nearest the head by ``drive.reorder`` (seek plus
  rotational wait, or seek alone; :meth:`Spindles._reorder`), and transfers the command's own bytes
  from there; a pool entry served gives its place to the command's position, and entries passed
  over stay. The sequence of positions the spindle visits is a shortest-positioning (or
  shortest-seek) first schedule over the commands waiting; the latencies are handed out in
  arrival order, so the mean is the reordering drive's and its starvation tail is not.
- A flash drive (``drive.media = "flash"``) has no head: each of its ``parallelism`` units serves
  an operation, first come first served on the earliest free unit, in its read or write time plus
  the transfer.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from simcache.physics.drive import (
    SeekCurve,
    drive_seek_curve,
    flash_op_seconds,
    revolution_seconds,
    spindle_op_seconds,
    zone_shrink,
)
from simcache.sim.components.meter import BusyMeter
from simcache.sim.components.randomness import UniformStream
from simcache.spec import ArraySpec

__all__ = ["Spindles"]


class Spindles:
    """The drives of one array, by spindle index. Times in seconds, sizes and positions in bytes.

    The array resolves this object once per request it dispatches and calls :meth:`operate` (or
    :meth:`buffered`, with the drives' buffers on) for each of its chunk operations: the
    per-spindle state is this object's own, so an operation costs what it did as a method of the
    array."""

    def __init__(self, spec: ArraySpec, stream: UniformStream):
        """``stream``: the array's random stream (rotational angles), shared with the array's own
        draws so that they interleave in the order the operations are booked."""
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
        self.writing = False
        """Whether the request being dispatched writes (the array sets it; read by the flash
        drives' operations)."""
        self._seek = (
            drive_seek_curve(drive)
            if not self._flash
            else SeekCurve(0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
        )
        self._stroke = float(drive.capacity)
        self._seconds_per_byte = 1.0 / drive.media_rate
        self._outer_rate = drive.media_rate
        self._zone_shrink = zone_shrink(drive.media_rate, drive.inner_rate)
        self.head = [-1] * spec.spindles
        """Byte position on each spindle after its last chunk (-1: none yet)."""
        self._spindle_free = [0.0] * spec.spindles
        self._queue_depth = drive.queue_depth
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
        # Each drive's buffer: LRU of segments, position -> bytes held from there, per spindle.
        self._segments = drive.cache_segments if drive.cache > 0 else 0
        self.buffering = self._segments > 0
        """Whether the drives' buffers are on (then the array books through :meth:`buffered`)."""
        self._segment_bytes = drive.cache // drive.cache_segments
        self._segment_caches: list[OrderedDict[int, int]] = (
            [OrderedDict() for _ in range(spec.spindles)] if self._segments else []
        )
        self._drive_hit = drive.cache_hit_time
        self.drive_cache_hits = 0  # chunk reads answered by a drive's buffer
        # bytes the drives' media transferred: each chunk operation's, on every copy it goes to,
        # twice for a read-modify-write (read, then write back); none for a drive-cache hit
        self.media_bytes = 0
        self.busy = BusyMeter()  # spindle busy intervals, for utilization

    def buffered(
        self,
        spindle: int,
        position: int,
        chunk: int,
        now: float,
        read_modify_write: bool,
        scale: float,
        is_read: bool,
    ) -> float:
        """:meth:`operate` with the drive's read cache on: a read of a chunk a segment of
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
        finish = self.operate(spindle, position, chunk, now, read_modify_write, scale)
        if chunk <= self._segment_bytes:
            cache[position] = chunk
            cache.move_to_end(position)
            if len(cache) > self._segments:
                cache.popitem(last=False)
        return finish

    def operate(
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
        head = self.head[spindle]
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
        self.head[spindle] = position + chunk
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
        head = self.head[spindle]
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
        (:func:`simcache.physics.drive.flash_op_seconds`) times ``scale``. The busy meter counts
        a unit's interval over ``parallelism``: the share of the drive it takes."""
        units = self._units[drive]
        unit = 0
        free = units[0]
        for k in range(1, len(units)):
            if units[k] < free:
                unit = k
                free = units[k]
        start = free if free > now else now
        access = self._write_time if self.writing and not read_modify_write else self._read_time
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
