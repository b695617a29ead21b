"""Flash or RAM acceleration tier of one host.

Assumptions (see docs/model.md, Tier):
- Every operation first spends ``command_overhead`` outside the media (not
  queued), then, with ``read_iops_limit`` / ``write_iops_limit`` set, its turn
  in the controller's one first-come first-served command processor
  (``1 / limit`` seconds each).
- ``channels x dies`` identical internal units, first-come first-served. An
  operation holds a unit for its latency (times a lognormal factor of mean 1
  with ``service = "lognormal"``, of CV ``service_cv``, for writes
  ``write_service_cv`` where set, plus an exponential stall with probability
  ``stall_probability``) and then its data transfer.
- With ``read_channel_bandwidth`` set, a read then holds its unit ``size /
  read_channel_bandwidth`` seconds more, its data crossing from the die to the
  controller (:func:`simcache.physics.cluster.read_channel_seconds`):
  deterministic, after the lognormal factor and any stall, which apply to the
  latency alone; with ``write_channel_bandwidth`` set, a write likewise (a RAM
  tier's copy thread). Unset, an operation pays no such time.
- Data transfers of all units share one pipe whose rate is the device's read
  or write bandwidth, capped by its ``interface`` and the host's
  ``controller_bandwidth``. A transfer takes the earliest idle stretch of the
  pipe, long enough for it, after its unit has paid the latency: the pipe never idles while a ready
  transfer fits, and transfers already booked are never moved.
- Writes consume a pool of clean (pre-erased) bytes that garbage collection
  refills (a token bucket of depth ``clean_pool``); once it is empty, writes
  wait for refill: the sustained-write cliff. The refill rate is ``gc_rate``,
  or ``write_bandwidth / write_amplification`` (:func:`simcache.physics.cluster.gc_refill_rate`):
  freeing a byte costs GC ``write_amplification - 1`` bytes of copying, so
  the device's program bandwidth, shared by host data and copies, sustains
  that many host bytes per second. A write is charged ``gc_factor`` of its
  bytes (:func:`simcache.physics.cluster.write_gc_factor`: sequential runs
  cost GC less); ``condition = "fresh"`` starts the pool at the capacity.
- With ``gc_pass`` set, an exhausted pool is refilled in foreground
  garbage-collection passes instead of smoothly: the write that finds the
  pool empty stalls the device's writes until GC has paid back the deficit
  plus ``gc_pass`` bytes (at most ``clean_pool``), the room one pass frees.
  The long-run write rate is unchanged, but the waiting comes in sporadic
  long stalls (one pass of ``gc_pass / refill rate`` seconds every
  ``gc_pass`` bytes written) rather than as a uniform slowdown of every write.
  Nothing in it is random: the stalls come from the pool, the rate and the
  pass size alone.
- With ``read_interference`` set (a share ``s``), a read is addressed to one
  die, the one holding its data: a uniformly random one of the channels (the
  tier's random stream). It waits for ``s`` of the work already booked on
  that die (``max(die free, end of the GC pass under way) - now``): with
  ``s = 1`` behind the whole program in progress, as on a device without
  program suspension; with ``s < 1`` the die lets it through earlier, and the
  work it overtook is not delayed (an optimistic suspension). The die is then
  busy until the later of its old work and the read. Writes and, with the
  share unset, reads take the earliest-free channel (so ``placement =
  "any-unit"`` with the share set is a flash translation layer that places
  each write on whichever die is free, log-structured, while each read goes
  where its data lies). Because the channels are
  identical, a uniformly random entry of the channel heap is a uniformly
  random die.
- With ``placement = "addressed"``, every operation (reads and writes) goes to
  a uniformly random unit, the die that holds or receives its data, and waits
  first-come first-served behind that unit's own work (as a read with
  ``read_interference`` does; with the share unset, for all of it): ``c``
  separate queues instead of one in front of ``c`` units. One draw of the
  tier's stream per operation, after the service draws.

Because service is first-come first-served and each operation's service time
is known when it is submitted, the completion time is computed at submission
(Lindley's recursion per channel) and the caller waits one timeout: no SimPy
events are spent inside the tier.

Background I/O (the destager's reads of dirty data) goes through
:meth:`Tier.submit_background`, one request of at most ``background_request``
bytes at a time, under the tier's ``scheduling``:

- ``fcfs``: a background request is booked at once, in the same queue as the
  VMs' I/O (the behaviour of a device with no I/O priorities).
- ``priority``: non-preemptive priority for foreground I/O. A background
  request is booked only when it would wait for nothing: a channel is idle now
  and the transfer pipe is free by the time the request's latency is paid.
  Otherwise the caller is told when to ask again (the earliest moment both
  could be true with what is booked so far; foreground I/O booked meanwhile
  pushes it further). Foreground I/O is still booked at submission, so its
  speed is untouched; a foreground operation that arrives while background
  requests are in service waits at most for the ones already started, each
  at most one request long (with ``c`` channels, at most one per channel,
  and on the pipe at most one transfer: a request is only booked onto an
  idle pipe).
- ``weighted``: as ``priority``, and besides, a background request may join
  the FCFS queue behind busy foreground I/O while its credit lasts: credit
  accrues at ``background_share`` seconds of pipe transfer per second (at
  most one request's worth is saved up), and a request booked into the queue
  spends its transfer time. Under a saturating foreground load the
  background so gets about ``background_share`` of the pipe's time (less if
  its own requests cannot keep it busy); requests booked on an idle device
  spend nothing (the scheduler is work-conserving).

Background requests are never moved once booked (no preemption), and a
background request's channel and pipe time count in the utilization as any
other operation's.
"""

from __future__ import annotations

import heapq
import math
from typing import Final

from simcache.physics.cluster import (
    LOGNORMAL_POINTS,
    clean_pool_at_start,
    clean_pool_depth,
    gc_refill_rate,
    lognormal_quantiles,
    pipe_rate,
    read_channel_seconds,
    tier_service_seconds,
    tier_units,
    write_channel_seconds,
)
from simcache.sim.components.meter import BusyMeter
from simcache.sim.components.randomness import UniformStream
from simcache.spec import TierSpec

__all__ = ["Tier", "TransferPipe"]

# heapq's C functions as Final names: compiled, a call is then a generic call of a C static, without
# a lookup of the module attribute first (heapq on a list of floats is faster than a native loop:
# mypyc boxes each float it stores).
_heapreplace: Final = heapq.heapreplace


def _bisect_right(values: list[float], x: float) -> int:
    """``bisect.bisect_right``: the index after the last element of the sorted ``values`` at most
    ``x`` (compiled, a native call instead of a generic one, faster on the few bookings a pipe
    holds)."""
    low = 0
    high = len(values)
    while low < high:
        middle = (low + high) >> 1
        if x < values[middle]:
            high = middle
        else:
            low = middle + 1
    return low


class TransferPipe:
    """Booked, non-overlapping transfer intervals of a shared pipe, earliest first."""

    __slots__ = ("_ends", "_starts")

    def __init__(self) -> None:
        self._starts: list[float] = []
        self._ends: list[float] = []

    def book(self, now: float, ready: float, duration: float) -> float:
        """Book ``duration`` seconds in the first idle stretch at or after ``ready``; return its
        start."""
        starts, ends = self._starts, self._ends
        # bookings finished by now (ends are in order: bookings never overlap)
        done = _bisect_right(ends, now)
        if done:
            # the usual case, one booking and done: reused in place (a slice
            if done == 1 and len(ends) == 1:
                # deletion costs a slice object and a generic call, 2% of a run's instructions)
                starts[0] = ready
                ends[0] = ready + duration
                return ready
            del starts[:done], ends[:done]
        if not ends or ready >= ends[-1]:
            starts.append(ready)
            ends.append(ready + duration)
            return ready
        index = _bisect_right(ends, ready)  # the first booking still running at `ready`
        start = ready
        while index < len(starts) and starts[index] - start < duration:
            if ends[index] > start:
                start = ends[index]
            index += 1
        starts.insert(index, start)
        ends.insert(index, start + duration)
        return start

    def free_from(self, now: float) -> float:
        """When the last booked transfer ends (``now`` or earlier if none runs after ``now``)."""
        ends = self._ends
        return ends[-1] if ends and ends[-1] > now else now


class Tier:
    """One host's tier. Times in seconds, sizes in bytes."""

    def __init__(self, spec: TierSpec, stream: UniformStream, name: str = "tier"):
        self.spec = spec
        self.name = name
        self._stream = stream
        self._exponential = spec.service == "exponential"
        # a heap of the times each parallel unit is next free
        self._channel_free = [0.0] * tier_units(spec)
        self._pipe = TransferPipe()
        self._read_seconds_per_byte = 1.0 / pipe_rate(
            spec.read_bandwidth, spec.controller_bandwidth, spec.interface
        )
        self._write_seconds_per_byte = 1.0 / pipe_rate(
            spec.write_bandwidth, spec.controller_bandwidth, spec.interface
        )
        self._read_latency = spec.read_latency
        self._write_latency = spec.write_latency
        # seconds per byte a read's data takes from its die to the controller (0: none)
        self._read_channel_full = read_channel_seconds(spec)
        self._read_channel = self._read_channel_full
        # seconds per byte a write's data takes to its unit (0: none)
        self._write_channel_full = write_channel_seconds(spec)
        self._write_channel = self._write_channel_full
        self._overhead = spec.command_overhead
        self._read_command = 1.0 / spec.read_iops_limit if spec.read_iops_limit else 0.0
        self._write_command = 1.0 / spec.write_iops_limit if spec.write_iops_limit else 0.0
        self._has_processor = self._read_command > 0.0 or self._write_command > 0.0
        self._processor_free = 0.0  # when the controller's command processor is next free
        self._full_speed = (
            self._read_seconds_per_byte,
            self._write_seconds_per_byte,
            self._read_latency,
            self._write_latency,
            self._overhead,
            self._read_command,
            self._write_command,
        )
        # Lognormal unit times of mean 1 and CV service_cv, by inverse transform from a quantile
        # table.
        self._lognormal = spec.service == "lognormal"
        self._log_table: list[float] = (
            list(lognormal_quantiles(spec.service_cv or 0.0)) if self._lognormal else []
        )
        # writes' factors: their own spread (write_service_cv) or the reads' table
        self._write_log_table: list[float] = (
            list(lognormal_quantiles(spec.write_service_cv))
            if self._lognormal and spec.write_service_cv is not None
            else self._log_table
        )
        self._stall_probability = spec.stall_probability or 0.0
        self._stall_time = spec.stall_time or 0.0
        self._pool_depth = clean_pool_depth(spec.clean_pool)
        self._has_clean_pool = self._pool_depth != math.inf
        self._pool = clean_pool_at_start(spec)
        self._pool_time = 0.0
        self._gc_rate = gc_refill_rate(spec)
        self._gc_pass = min(float(spec.gc_pass or 0), self._pool_depth)
        # when the last foreground GC pass ends (reads addressed to a die wait for it)
        self._gc_until = 0.0
        self._read_share = spec.read_interference
        self._addressed = spec.placement == "addressed"
        self.operations = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.busy = BusyMeter()  # channel busy intervals, for utilization
        self.gc_wait_seconds = 0.0
        # when a write first found the clean pool short (the cliff; -1: never), for the results
        self.ran_dry_at = -1.0
        self._scheduling = spec.scheduling
        self._share = spec.background_share
        # seconds of pipe transfer the background may still book into the queue (weighted)
        self._credit = 0.0
        self._credit_time = 0.0
        self._credit_depth = spec.background_request * max(
            self._read_seconds_per_byte, self._write_seconds_per_byte
        )
        self.background_request = spec.background_request
        self.background_operations = 0
        self.foreground_until = 0.0
        """When the last foreground operation booked so far completes (the destager's ``idle``
        trigger)."""

    def set_speed(self, fraction: float) -> None:
        """Run at ``fraction`` of the device's speed from now on (``device_slow``; 1: full
        speed): each operation's latency and transfer time are divided by ``fraction``.
        Operations already booked keep their times; the clean pool's refill rate and the
        background credit are left at full speed."""
        (
            read_per_byte,
            write_per_byte,
            read_latency,
            write_latency,
            overhead,
            read_command,
            write_command,
        ) = self._full_speed
        self._read_seconds_per_byte = read_per_byte / fraction
        self._write_seconds_per_byte = write_per_byte / fraction
        self._read_latency = read_latency / fraction
        self._read_channel = self._read_channel_full / fraction
        self._write_channel = self._write_channel_full / fraction
        self._write_latency = write_latency / fraction
        self._overhead = overhead / fraction
        self._read_command = read_command / fraction
        self._write_command = write_command / fraction

    def submit(self, now: float, size: int, is_write: bool, gc_factor: float = 1.0) -> float:
        """Submit an operation arriving at ``now``; return the time it completes.

        ``gc_factor``: the share of a write's bytes its clean pool is charged
        (:func:`simcache.physics.cluster.write_gc_factor`; 1 for scattered writes).
        """
        ready = now + self._overhead
        if self._has_processor:
            command = self._write_command if is_write else self._read_command
            if command > 0.0:
                free = self._processor_free
                ready = (ready if ready > free else free) + command
                self._processor_free = ready
        if is_write:
            self.bytes_written += size
            per_byte = self._write_seconds_per_byte
            latency = self._write_latency
            if self._has_clean_pool:
                ready = self._take_clean_bytes(ready, size * gc_factor)
        else:
            self.bytes_read += size
            per_byte = self._read_seconds_per_byte
            latency = self._read_latency
        if self._lognormal:
            table = self._write_log_table if is_write else self._log_table
            latency *= self._lognormal_factor(table)
        if self._stall_probability > 0.0 and self._stream.uniform() < self._stall_probability:
            latency += self._stream.exponential(self._stall_time)
        if is_write:
            if self._write_channel > 0.0:
                latency += size * self._write_channel
        elif self._read_channel > 0.0:
            latency += size * self._read_channel
        if self._exponential:
            # Test-only: exponential service with the same mean, spent on the channel.
            latency = self._stream.exponential(tier_service_seconds(latency, size, per_byte))
            transfer = 0.0
        else:
            transfer = size * per_byte
        channels = self._channel_free
        if not self._addressed and (is_write or self._read_share is None):
            start = channels[0] if channels[0] > ready else ready
            transfer_start = (
                self._pipe.book(now, start + latency, transfer) if transfer else start + latency
            )
            finish = transfer_start + transfer
            _heapreplace(channels, finish)
        else:
            die = int(self._stream.uniform() * len(channels))
            busy = channels[die]
            share = 1.0
            if not is_write and self._read_share is not None:
                share = self._read_share
                if busy < self._gc_until:
                    busy = self._gc_until
            start = (
                ready if busy <= ready else busy if share >= 1.0 else ready + share * (busy - ready)
            )
            transfer_start = (
                self._pipe.book(now, start + latency, transfer) if transfer else start + latency
            )
            finish = transfer_start + transfer
            if finish > channels[die]:
                _raise_key(channels, die, finish)
        if finish > self.foreground_until:
            self.foreground_until = finish
        self.operations += 1
        # also what in_system counts: no heap of completion times of its own
        self.busy.add(start, finish, now)
        return finish

    def submit_background(self, now: float, size: int, is_write: bool) -> tuple[bool, float]:
        """Offer a background request of ``size`` bytes (at most ``background_request``) at ``now``.

        Returns ``(True, completion time)`` if the scheduling books it now, or
        ``(False, time to offer it again)`` if it must wait (see the module
        docstring). Background I/O waits in the caller, so the tier itself still
        schedules no events.
        """
        scheduling = self._scheduling
        if scheduling != "fcfs":
            channel_free = self._channel_free[0]
            latency = (
                self._write_latency + size * self._write_channel
                if is_write
                else self._read_latency + size * self._read_channel
            )
            # the request's transfer may start when the pipe is free
            pipe_free = self._pipe.free_from(now) - latency
            idle_at = channel_free if channel_free > pipe_free else pipe_free
            if idle_at > now:
                if scheduling == "priority":
                    return False, idle_at
                cost = size * (
                    self._write_seconds_per_byte if is_write else self._read_seconds_per_byte
                )
                credit = self._credit + (now - self._credit_time) * self._share
                depth = cost if cost > self._credit_depth else self._credit_depth
                if credit > depth:
                    credit = depth
                self._credit = credit
                self._credit_time = now
                # (a retry at the exact refill time must pass despite rounding)
                if credit < cost * (1.0 - 1e-9):
                    ready = now + (cost - credit) / self._share
                    return False, ready if ready < idle_at else idle_at
                self._credit = credit - cost if credit > cost else 0.0
        self.background_operations += 1
        foreground_until = self.foreground_until
        finish = self.submit(now, size, is_write)
        self.foreground_until = foreground_until
        return True, finish

    def _lognormal_factor(self, table: list[float]) -> float:
        """A lognormal factor of mean 1 from ``table`` (the quantiles of ``service_cv``, or of
        ``write_service_cv`` for writes): one uniform of the tier's stream, by inverse transform
        with linear interpolation in :func:`~simcache.physics.cluster.lognormal_quantiles` (one draw
        and a lookup where Box-Muller takes two draws and four transcendental functions;
        bench/README.md, "The device model")."""
        position = self._stream.uniform() * LOGNORMAL_POINTS
        index = int(position)
        low = table[index]
        return low + (position - index) * (table[index + 1] - low)

    def _take_clean_bytes(self, now: float, size: float) -> float:
        """Token bucket of clean space: return when a write of ``size`` may start.

        The pool is known at ``_pool_time``, which lies in the future while a
        garbage-collection stall is under way: a write arriving then starts
        when the stall ends. A write that overdraws the pool stalls until GC
        has refilled the deficit plus one pass's ``gc_pass`` bytes (0 without
        ``gc_pass``, which gives the smooth bucket: each waiting write starts
        as soon as its own bytes are refilled).
        """
        start = now if now > self._pool_time else self._pool_time
        pool = self._pool + (start - self._pool_time) * self._gc_rate
        # GC refills to the depth; a fresh device's surplus above it only drains
        if pool > self._pool_depth:
            pool = self._pool_depth if self._pool < self._pool_depth else self._pool
        pool -= size
        if pool >= 0:
            self._pool = pool
            self._pool_time = start
        else:
            if self.ran_dry_at < 0:
                self.ran_dry_at = start
            reclaimed = self._gc_pass
            self._pool = reclaimed
            self._pool_time = start = start + (reclaimed - pool) / self._gc_rate
            if reclaimed:
                self._gc_until = start
        self.gc_wait_seconds += start - now
        return start

    def in_system(self, now: float) -> int:
        """Operations submitted and not complete at ``now`` (for sampling queue length): the busy
        meter's intervals that go on past ``now`` (:meth:`BusyMeter.open_at`; ``now`` at or after
        the last submission, and times asked for in order). The sampler reads
        :meth:`BusyMeter.open_count` right after the window's utilization instead."""
        return self.busy.open_at(now)

    def clean_pool_bytes(self, now: float) -> float:
        """Clean space left at ``now`` (negative: writes are waiting for garbage collection)."""
        if not self._has_clean_pool:
            return math.inf
        pool = self._pool + (now - self._pool_time) * self._gc_rate
        return pool if pool <= self._pool_depth else max(self._pool_depth, self._pool)


def _raise_key(heap: list[float], index: int, value: float) -> None:
    """Raise ``heap[index]`` to ``value`` (at least its old value) and restore the min-heap below
    it."""
    size = len(heap)
    child = 2 * index + 1
    while child < size:
        right = child + 1
        if right < size and heap[right] < heap[child]:
            child = right
        if heap[child] >= value:
            break
        heap[index] = heap[child]
        index = child
        child = 2 * index + 1
    heap[index] = value
