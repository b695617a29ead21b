"""Backing array: spindles behind a RAID controller with an optional write cache.

Assumptions (see docs/architecture.md):
- A front-end I/O is cut into stripe-unit chunks on consecutive spindles. Each
  chunk costs one positioning (seek + rotational latency) plus media transfer
  on each spindle it touches.
- Seek time grows with the square root of the distance for the short and
  medium seeks that dominate: ``settle + k * sqrt(x)``, x the fraction of the
  full stroke; k is set so that a uniformly random seek over the full stroke
  (mean sqrt(x) = 8/15) takes the datasheet's average seek. The distance is
  drawn over the span the VMs' data occupy, shrunk by the destager's sorting
  (a sorted batch of k runs seeks about span/(k+1) between runs).
- Rotational latency is uniform over one revolution (mean half a revolution).
- RAID write penalty: RAID 1/10 writes the chunk on two spindles; RAID 5 and 6
  read-modify-write data and parity (2 and 3 spindles, each reading then
  writing one revolution later), i.e. 4 and 6 back-end I/Os.
- Each spindle serves first-come first-served, so completion times are
  computed at submission (no SimPy events inside the array).
- An optional controller write cache acknowledges writes after
  ``cache_latency`` while it has room; a write that does not fit waits for its
  spindles like an uncached write.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from simcache.model.meter import BusyMeter
from simcache.model.randomness import UniformStream
from simcache.physics import (
    cache_ack_seconds,
    chunk_copies,
    read_modify_write,
    revolution_seconds,
    seek_coefficient,
    seek_seconds,
    seek_span,
    spindle_op_seconds,
    write_penalty,
)
from simcache.scenario import ArraySpec

__all__ = ["Array"]


class Array:
    """The shared backing array. Times in seconds, sizes in bytes."""

    def __init__(self, spec: ArraySpec, stream: UniformStream, span_fraction: float):
        """``span_fraction``: the part of each drive's stroke the VMs' data occupies
        (see :func:`simcache.physics.span_fraction`)."""
        self.spec = spec
        self._stream = stream
        drive = spec.drive
        self._revolution = revolution_seconds(drive.rpm)
        self._settle = drive.settle
        self._seek_k = seek_coefficient(drive.avg_seek, drive.settle)
        self._span = seek_span(span_fraction)
        self._seconds_per_byte = 1.0 / drive.media_rate
        self._spindle_free = [0.0] * spec.spindles
        self._copies = chunk_copies(spec.raid, spec.spindles)
        self._read_modify_write = read_modify_write(spec.raid)
        self._cache_capacity = spec.controller_cache
        self._cache_ack = cache_ack_seconds(spec)
        self._cache_used = 0
        self._cache_drains: list[tuple[float, int]] = []  # (time the spindles finish, bytes)
        self.front_end_ios = 0
        self.back_end_ios = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.busy = BusyMeter()  # spindle busy intervals, for utilization

    @property
    def write_penalty(self) -> int:
        """Back-end I/Os per front-end write of one chunk (2 for RAID 10, 4 for RAID 5, 6 for RAID 6)."""
        return write_penalty(self.spec.raid, self.spec.spindles)

    def submit(self, now: float, runs: Sequence[int], is_write: bool, seek_scale: float = 1.0) -> float:
        """Submit contiguous runs (bytes each) arriving at ``now``; return when all are done.

        ``seek_scale`` < 1 shortens seeks for a sorted batch (the destager's elevator order).
        """
        spindles = self.spec.spindles
        stripe = self.spec.stripe
        stream = self._stream
        copies = self._copies if is_write else 1
        copy_spacing = spindles // copies
        read_modify_write = is_write and self._read_modify_write
        stroke = self._span * seek_scale
        settle = self._settle
        seek_k = self._seek_k
        revolution = self._revolution
        seconds_per_byte = self._seconds_per_byte
        free = self._spindle_free
        busy_add = self.busy.add
        done = now
        total = 0
        chunks = 0
        for run in runs:
            total += run
            chunks_in_run = -(-run // stripe)
            # All of this run's uniforms at once, in the order they are used: its first spindle,
            # then for each chunk and copy the seek's two ends and the rotation.
            draws = stream.uniforms(1 + 3 * copies * chunks_in_run)
            spindle = int(draws[0] * spindles)
            next_draw = 1
            left = run
            while left > 0:
                chunk = stripe if left > stripe else left
                left -= chunk
                transfer = chunk * seconds_per_byte
                for copy in range(copies):
                    target = (spindle + copy * copy_spacing) % spindles
                    u_from, u_to, u_rotation = draws[next_draw : next_draw + 3]
                    next_draw += 3
                    seek = seek_seconds(settle, seek_k, stroke * abs(u_from - u_to))
                    service = spindle_op_seconds(seek, u_rotation * revolution, transfer, revolution, read_modify_write)
                    start = free[target] if free[target] > now else now
                    finish = start + service
                    free[target] = finish
                    busy_add((start, finish))
                    if finish > done:
                        done = finish
                chunks += copies
                spindle = (spindle + 1) % spindles
        self.front_end_ios += len(runs)
        self.back_end_ios += 2 * chunks if read_modify_write else chunks
        if is_write:
            self.bytes_written += total
            return self._through_cache(now, total, done)
        self.bytes_read += total
        return done

    def read(self, now: float, size: int) -> float:
        """``submit(now, (size,), False)`` for the common read of one stripe unit or less; return when it is done.

        The same draws and arithmetic as :meth:`submit`, without its loops: one
        chunk, one copy, no read-modify-write, no seek scaling.
        """
        if size > self.spec.stripe:
            return self.submit(now, (size,), False)
        u_spindle, u_from, u_to, u_rotation = self._stream.uniforms(4)
        spindle = int(u_spindle * self.spec.spindles)
        seek = seek_seconds(self._settle, self._seek_k, self._span * abs(u_from - u_to))
        revolution = self._revolution
        free = self._spindle_free
        start = free[spindle] if free[spindle] > now else now
        finish = start + spindle_op_seconds(seek, u_rotation * revolution, size * self._seconds_per_byte, revolution, False)
        free[spindle] = finish
        self.busy.add((start, finish))
        self.front_end_ios += 1
        self.back_end_ios += 1
        self.bytes_read += size
        return finish

    def _through_cache(self, now: float, nbytes: int, spindles_done: float) -> float:
        ack = self._cache_ack
        if ack is None:
            return spindles_done
        drains = self._cache_drains
        while drains and drains[0][0] <= now:
            self._cache_used -= heapq.heappop(drains)[1]
        if self._cache_used + nbytes > self._cache_capacity:
            return spindles_done
        self._cache_used += nbytes
        heapq.heappush(drains, (spindles_done, nbytes))
        return now + ack
