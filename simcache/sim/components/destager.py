"""Per-host destage buffer: accepted write-back data waiting to reach the array.

Assumptions (see docs/model.md):
- The buffer holds at most ``capacity`` bytes. A write-back write enters it
  after its acknowledgement legs complete; if it does not fit, the write waits
  (and so does the VM's acknowledgement) in first-come first-served order.
- ``concurrency`` flushers drain it continuously. Each takes the oldest
  pending writes up to ``max_batch`` bytes, sorts them by VM and offset,
  merges adjacent ones into contiguous runs (coalescing), reads them from the
  tier, sends them over the storage network and writes them to the array as
  one batch in that order, at their real positions (so a sorted batch seeks
  short distances between its runs on each spindle). A run longer than
  ``max_batch`` (a single write larger than it) goes to the array as
  requests of at most ``max_batch`` bytes: the destager writes back in units
  of at most ``max_batch``.
- Data leaves the buffer, and peers drop their replica copies, only when the
  array has acknowledged the batch.
- When the host fails, the flushers stop; every write not yet destaged is
  either lost (no replica) or taken over by a surviving replica holder, whose
  destager writes it to the array (see :meth:`fail` and :meth:`adopt`).

Policy (``DestagerSpec``: when to destage, how fast; see docs/model.md):
- ``trigger``: ``always`` takes a batch whenever a write is pending.
  ``watermarks`` starts once the dirty bytes (``backlog_bytes``: every
  accepted byte not yet on the array, batches in flight included) reach
  ``high_watermark x capacity``, and then takes batches only while the bytes
  not yet taken stay at or above ``low_watermark x capacity``: it stops with
  exactly the oldest writes down to the low watermark taken (the pending
  bytes end at the low watermark rounded up to whole writes). ``idle``
  destages everything while the host's tier has seen no foreground I/O for
  ``idle_time`` (:attr:`Tier.foreground_until`), and otherwise as
  ``watermarks`` once the high watermark is reached.
- ``delay``: a write may be taken only ``delay`` seconds after it entered
  the buffer (oldest first, so the oldest write's age decides).
- ``pacing``: ``rate`` spaces batch starts so that the VM bytes taken never
  exceed ``rate`` per second (a token schedule shared by the flushers: a batch
  of ``b`` bytes moves the next start ``b / rate`` later). ``pd`` does the
  same with a rate that a proportional-derivative controller updates every
  ``pd_update`` seconds (bcache's, see :meth:`Destager._controller`).
- ``order``: ``arrival`` takes the oldest writes, as above. ``hash`` cuts
  each accepted write into the aligned blocks of ``max_batch`` bytes of its
  VM's disk it covers and takes them in the order of a hash of the block's
  address (a cleaner walking a hash-indexed cache: a cursor passes over the
  hash space, and a block dirtied behind it waits for the next pass), whole
  blocks up to ``max_batch`` a batch. A write leaves the buffer (its peers
  drop their copies) when its last block has reached the array; if the host
  fails, every write with a block not yet on the array is handed over whole.
- Each batch is read from the tier under the tier's ``scheduling``: with
  ``fcfs`` as one operation in the VMs' queue; with ``priority`` or
  ``weighted`` in requests of at most ``background_request`` bytes, one at a
  time per flusher, each offered to :meth:`Tier.submit_background` until the
  tier takes it.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, Final, Protocol

import simpy

from simcache.sim.components.flusher import Flusher, flusher_steps
from simcache.sim.components.hash_walk import HashWalk, undestaged
from simcache.sim.components.pending import (
    WRITE_HOLDERS,
    WRITE_OFFSET,
    WRITE_SINGLE,
    WRITE_SIZE,
    WRITE_VM,
    FlushBatch,
    PendingWrite,
    WriteQueue,
    pieces,
    without,
)
from simcache.sim.kernel.clock import clock_of, current_time, schedule_at
from simcache.sim.kernel.detached import start_detached
from simcache.sim.kernel.signals import Signal, Wait
from simcache.sim.kernel.waits import sleep, succeed, timeout_or
from simcache.spec import DestagerSpec

if TYPE_CHECKING:
    from simcache.sim.components.array import Run
    from simcache.sim.components.host import Host

__all__ = ["MIN_PD_RATE", "Destager"]


class _Rewritable(Protocol):
    """Where a buffered write is stored: the pending queue, a batch, the hash walk."""

    def __setitem__(self, i: int, item: Any, /) -> None: ...


MIN_PD_RATE: Final = 4096.0
"""Slowest rate (bytes/s) the ``pd`` controller sets: a trickle that always moves (bcache's floor
is one sector per second; a 4 KiB floor keeps a paced batch from waiting for hours)."""
PD_START_RATE: Final = 512.0 * 1024
"""The ``pd`` controller's rate before its first update, bytes/s: bcache starts at 1,024
sectors/s."""


class Destager:
    """The buffer, its waiting writers and its flusher processes."""

    def __init__(self, env: simpy.Environment, spec: DestagerSpec, host: Host):
        self.env = env
        self.clock = clock_of(env)
        self.spec = spec
        self.host = host
        self.capacity = spec.capacity
        self.backlog_bytes = 0
        self.single_copy_bytes = 0
        self.short_bytes = 0
        """Bytes of the buffered writes with fewer copies than their VM's policy promises (data
        at risk): fewer replica holders than ``promised[vm]``."""
        self.promised: list[int] = []
        """The replicas each VM's policy promises, by VM index (set by
        :func:`simcache.sim.engine.build`)."""
        self.stopped = False  # its tier is gone (fail): the flushers stop
        # the writes not yet taken, oldest first, with when each entered the buffer (for ``delay``)
        self._pending = WriteQueue()
        self.pending_bytes = 0  # bytes of the writes not yet taken into a batch
        # writers waiting for room, in arrival order
        self._waiting: deque[tuple[Signal, PendingWrite]] = deque()
        self._flushing: list[list[PendingWrite]] = []  # batches on their way to the array
        # fires when a write enters the buffer (every flusher waiting for work wakes)
        self._work = Signal(None)
        self.accepted_bytes = 0
        self.destaged_bytes = 0
        self.batches = 0
        self.runs = 0
        self.on_destaged: Callable[[PendingWrite], None] = lambda item: None
        capacity = float(spec.capacity)
        self._trigger = spec.trigger
        self._high_bytes = spec.high_watermark * capacity
        self._low_bytes = spec.low_watermark * capacity
        # watermarks: between reaching the high watermark and getting down to the low one
        self._draining = False
        self._delay = spec.delay
        # a typed field: compiled, a read of the spec's (pydantic) is a generic lookup
        self._max_batch = spec.max_batch
        self._paced = spec.pacing != "none"
        self.rate = float(spec.rate) if spec.rate is not None else PD_START_RATE
        self._next_start = 0.0  # pacing: the earliest time the next batch may be taken
        # batches read back as background requests
        self.reads_in_chunks = host.tier.spec.scheduling != "fcfs"
        self._hashed = spec.order == "hash"
        # order = "hash": the writes and their dirty blocks, in the walk's order
        self._walk = HashWalk(spec.max_batch)
        for _ in range(spec.concurrency):
            if self.clock.callbacks:
                Flusher(self)
            else:
                start_detached(self.clock, flusher_steps(self))
        if spec.pacing == "pd":
            start_detached(self.clock, self._controller())

    def admit(self, item: PendingWrite) -> Signal | None:
        """Accept ``item``; return ``None`` if accepted now, else a :class:`Signal` processed on
        acceptance (or when the tier fails: the writer checks ``host.tier_up``)."""
        if not self._waiting and self.backlog_bytes + item[WRITE_SIZE] <= self.capacity:
            self._accept(item)
            return None
        signal = Signal(None)
        self._waiting.append((signal, item))
        return signal

    def _accept(self, item: PendingWrite) -> None:
        self.accepted_bytes += item[WRITE_SIZE]
        self._enqueue(item)

    def _enqueue(self, item: PendingWrite) -> None:
        size = item[WRITE_SIZE]
        self.backlog_bytes += size
        self.pending_bytes += size
        if item[WRITE_SINGLE]:
            self.single_copy_bytes += size
        if len(item[WRITE_HOLDERS]) < self.promised[item[WRITE_VM]]:
            self.short_bytes += size
        if self._hashed:
            self._walk.push(item)
        else:
            self._pending.push(item, current_time(self.clock))
        if not self._work.triggered:
            # as Event.succeed(): queued now
            schedule_at(self.clock, current_time(self.clock), self._work)

    def adopt(self, item: PendingWrite) -> None:
        """Take over destaging a failed primary's write whose replica this host holds.

        The bytes are already stored here, so the buffer's capacity is not checked.
        """
        self._enqueue(item)

    def peer_failed(self, peer: Host) -> None:
        """A host holding replicas of this buffer's writes died: those writes lose that copy.

        Writes left with no replica become single copies (data at risk). That holds for the buffered
        writes and for the writers still waiting for buffer space (their data is in the tier and on
        the peers already; they enter the buffer with the copies that are left).
        """
        for slot, i, item in self._slots():
            if peer in item[WRITE_HOLDERS]:
                slot[i] = self._lose_copy(item, peer)
        waiting = self._waiting
        for i, (signal, item) in enumerate(waiting):
            if peer in item[WRITE_HOLDERS]:
                waiting[i] = (signal, without(item, peer))

    def _lose_copy(self, item: PendingWrite, peer: Host) -> PendingWrite:
        """``item`` without ``peer``'s copy, the copy counters updated."""
        rewritten = without(item, peer)
        size = item[WRITE_SIZE]
        if rewritten[WRITE_SINGLE] and not item[WRITE_SINGLE]:
            self.single_copy_bytes += size
        promised = self.promised[item[WRITE_VM]]
        if len(rewritten[WRITE_HOLDERS]) < promised <= len(item[WRITE_HOLDERS]):
            self.short_bytes += size
        return rewritten

    def fail(self) -> list[PendingWrite]:
        """The tier died (with its host, or alone): return every write not yet destaged; the
        flushers stop.

        A hash-ordered write some of whose blocks already reached the array comes back as its bytes
        not yet there (see :func:`~simcache.sim.components.hash_walk.undestaged`). Writers waiting
        for space are dropped (their writes failed: a host still up sees them fail); the backlog
        counters drop to zero (the caller decides what was lost and what a surviving replica holder
        takes over).
        """
        self.stopped = True
        for signal, _ in self._waiting:
            if self.host.alive:
                succeed(self.clock, signal)
            else:
                # dropped with the host: what waits for it (a write's generator or callback) is
                # let go of now, which closes a generator at once (vm_paths.serialized_write),
                # rather than left in a reference cycle for a garbage collection at no set time
                signal.callbacks = []
        items = [item for batch in self._flushing for item in batch] + list(self._pending)
        for item, left in self._walk.drain():
            done = item[WRITE_SIZE] - left
            if done:  # the part on the array: its replica holders drop their copies
                for holder in item[WRITE_HOLDERS]:
                    holder.replica_bytes -= done
            items.append(undestaged(item, left))
        self._flushing.clear()
        self._pending.clear()
        self._waiting.clear()
        self.backlog_bytes = 0
        self.pending_bytes = 0
        self.single_copy_bytes = 0
        self.short_bytes = 0
        return items

    def _take_batch(self, now: float) -> list[PendingWrite]:
        """The oldest pending writes up to ``max_batch`` bytes (at least one), all eligible at
        ``now``, leaving at least the low watermark pending while a watermark drain runs."""
        pending = self._pending
        batch = [pending.pop()]
        total = batch[0][WRITE_SIZE]
        limit = self._max_batch
        floor = self._low_bytes if self._draining else 0.0
        eligible_before = now - self._delay
        left = self.pending_bytes - total
        while pending.count:
            size = pending.head_size()
            if not (
                total + size <= limit
                and pending.head_since() <= eligible_before
                and left - size >= floor
            ):
                break
            batch.append(pending.pop())
            total += size
            left -= size
        self.pending_bytes = left
        return batch

    def _take_blocks(self) -> tuple[list[PendingWrite], list[tuple[int, int]]]:
        """``order = "hash"``: the next dirty blocks in the walk, whole, up to ``max_batch``
        bytes (at least one), leaving at least the low watermark pending while a watermark drain
        runs; as pieces (vm, offset, size) and, for each, (its write's slot in the walk, bytes)."""
        limit = self._max_batch
        floor = self._low_bytes if self._draining else 0.0
        pieces: list[PendingWrite] = []
        owners: list[tuple[int, int]] = []
        total = 0
        left = self.pending_bytes
        walk = self._walk
        while walk.ready():
            size = walk.head_size()
            if pieces and (total + size > limit or left - size < floor):
                break
            # the block's pieces come together
            taken = walk.take_block(pieces, owners)
            total += taken
            left -= taken
        self.pending_bytes = left
        return pieces, owners

    def _ready_at(self, now: float) -> float:
        """When a flusher may take the next batch: ``now``, a later time to look again, or ``inf``
        (wait for new writes).

        Updates the watermark state on the way (see the module docstring).
        """
        if self._hashed:
            if not self._walk.ready():
                return math.inf
            oldest = self._walk.head_size()
        elif not self._pending.count:
            return math.inf
        else:
            oldest = self._pending.head_size()
        trigger = self._trigger
        if trigger != "always":
            if self._draining and self.pending_bytes - oldest < self._low_bytes:
                self._draining = False
            if (
                not self._draining
                and self.backlog_bytes >= self._high_bytes
                and self.pending_bytes - oldest >= self._low_bytes
            ):
                self._draining = True
            if not self._draining:
                if trigger == "watermarks":
                    return math.inf
                quiet_from = self.host.tier.foreground_until + self.spec.idle_time
                if quiet_from > now:
                    return quiet_from
        ready = now
        if self._delay:
            eligible = self._pending.head_since() + self._delay
            if eligible > ready:
                ready = eligible
        if self._paced and self._next_start > ready:
            ready = self._next_start
        return ready

    def _controller(self) -> Generator[Wait, Any, None]:
        """bcache's writeback-rate PD controller (Linux 3.13 to 4.15, ``__update_writeback_rate``),
        in bytes.

        Every ``pd_update`` seconds: proportional = (dirty - target) x update / p_inverse;
        derivative = the change of dirty bytes per second, averaged as bcache's ``ewma_add`` with
        weight ``d_term / update`` (at least 1), times d_term / p_inverse; the rate moves by their
        sum, but does not rise while the flushers lag behind the rate they have (their next start
        more than 1 ms past), and never falls below :data:`MIN_PD_RATE`.
        """
        spec = self.spec
        update = spec.pd_update
        target = spec.target_dirty * spec.capacity
        weight = max(1, int(spec.pd_d_term / update))
        last = float(self.backlog_bytes)
        derivative = 0.0
        while not self.stopped:
            yield sleep(self.clock, update)
            dirty = float(self.backlog_bytes)
            derivative += ((dirty - last) / update - derivative) / weight
            last = dirty
            change = ((dirty - target) * update + derivative * spec.pd_d_term) / spec.pd_p_inverse
            if change > 0 and self._next_start + 0.001 < current_time(self.clock):
                change = 0.0
            self.rate = max(MIN_PD_RATE, self.rate + change)

    @staticmethod
    def coalesce(batch: list[PendingWrite]) -> list[Run]:
        """Contiguous runs (VM, offset, length in bytes) of a batch, sorted by VM and offset."""
        runs: list[Run] = []
        last_vm = -1
        last_end = -1
        for vm, offset, size, _, _ in sorted(batch, key=lambda w: (w[WRITE_VM], w[WRITE_OFFSET])):
            if vm == last_vm and offset <= last_end and runs:
                extra = offset + size - last_end
                if extra > 0:
                    start = runs[-1]
                    runs[-1] = (vm, start[1], start[2] + extra)
                    last_end += extra
            else:
                runs.append((vm, offset, size))
                last_vm, last_end = vm, offset + size
        return runs

    def work_wait(self, now: float) -> Signal | None:
        """None if a flusher may take a batch ``now``; else what to wait for before looking
        again: new writes (:attr:`_work`), or the first of them and the time :meth:`_ready_at`
        names."""
        ready = self._ready_at(now)
        if ready <= now:
            return None
        if self._work.triggered:
            self._work = Signal(None)
        return self._work if ready == math.inf else timeout_or(self.clock, ready - now, self._work)

    def take(self, now: float) -> FlushBatch:
        """Take the next batch to destage (paced: push the next one's earliest start back by its
        bytes)."""
        if self._hashed:
            items, owners = self._take_blocks()
        else:
            items, owners = self._take_batch(now), []
            self._flushing.append(items)
        nbytes = sum(item[WRITE_SIZE] for item in items)
        if self._paced:
            start = self._next_start if self._next_start > now else now
            self._next_start = start + nbytes / self.rate
        return FlushBatch(items, owners, nbytes, self.coalesce(items))

    def send(self, batch: FlushBatch, then: Callable[[Signal], None] | None) -> Signal:
        """Send ``batch``'s bytes over the storage network to the array (``then``: the transfer's
        callback, if any)."""
        host = self.host
        port = host.storage_tx
        wire, packets = port.framing[batch.unique_bytes]
        # the link spec's
        return host.network.send(
            (port, host.array_rx), wire, packets, latency=port.latency, then=then
        )

    def write(self, batch: FlushBatch, now: float) -> float:
        """Write ``batch`` on the array at ``now`` (its bytes have arrived), in requests of at
        most ``max_batch``; return how long from ``now`` until the array's acknowledgement is
        back."""
        host = self.host
        runs = batch.runs
        limit = self._max_batch
        requests = (
            runs
            if max(run[2] for run in runs) <= limit
            else [piece for run in runs for piece in pieces(run, limit)]
        )
        array_done = host.array.submit(now, requests, True)
        return array_done - now + host.storage_tx.acknowledgement

    def destaged(self, batch: FlushBatch) -> None:
        """``batch`` is on the array: count it, free its bytes in the buffer."""
        self.batches += 1
        self.runs += len(batch.runs)
        if self._hashed:
            self._release_blocks(batch.owners, batch.nbytes)
        else:
            self._flushing.remove(batch.items)
            self._release(batch.items, batch.nbytes)

    def _read_back(self, nbytes: int) -> Generator[Wait, Any, None]:
        """Read ``nbytes`` of a batch from the tier as background requests, one after another."""
        clock = self.clock
        tier = self.host.tier
        request = tier.background_request
        left = nbytes
        while left > 0:
            size = request if left > request else left
            booked, at = tier.submit_background(current_time(clock), size, False)
            while not booked:
                yield sleep(clock, at - current_time(clock))
                booked, at = tier.submit_background(current_time(clock), size, False)
            yield sleep(clock, at - current_time(clock))
            left -= size

    def _release(self, batch: list[PendingWrite], nbytes: int) -> None:
        self.backlog_bytes -= nbytes
        self.destaged_bytes += nbytes
        promised = self.promised
        for item in batch:
            if item[WRITE_SINGLE]:
                self.single_copy_bytes -= item[WRITE_SIZE]
            if len(item[WRITE_HOLDERS]) < promised[item[WRITE_VM]]:
                self.short_bytes -= item[WRITE_SIZE]
            self.on_destaged(item)
        self._admit_waiting()

    def _release_blocks(self, owners: list[tuple[int, int]], nbytes: int) -> None:
        """``order = "hash"``: blocks reached the array; the writes whose last block this was
        leave the buffer."""
        self.backlog_bytes -= nbytes
        self.destaged_bytes += nbytes
        walk = self._walk
        for slot, size in owners:
            item = walk.release(slot, size)
            if item is not None:
                if item[WRITE_SINGLE]:
                    self.single_copy_bytes -= item[WRITE_SIZE]
                if len(item[WRITE_HOLDERS]) < self.promised[item[WRITE_VM]]:
                    self.short_bytes -= item[WRITE_SIZE]
                self.on_destaged(item)
        self._admit_waiting()

    def _admit_waiting(self) -> None:
        waiting = self._waiting
        while waiting and self.backlog_bytes + waiting[0][1][2] <= self.capacity:
            signal, item = waiting.popleft()
            self._accept(item)
            succeed(self.clock, signal)

    # -- handover of a moved VM's writes (vMotion with handover; simcache.sim.engine) --

    def untaken(self, vm: int) -> list[PendingWrite]:
        """VM ``vm``'s writes accepted and not yet taken into a batch (not a piece of one, in
        ``hash`` order)."""
        if self._hashed:
            walk = self._walk
            return [walk.write(slot) for slot in walk.untaken(vm)]
        return [item for item in self._pending if item[WRITE_VM] == vm]

    def hand_over(self, items: Counter[tuple[int, int, int]], vm: int) -> list[PendingWrite]:
        """Remove VM ``vm``'s writes that are still untaken and match ``items`` (VM, offset,
        size, each as many times as counted) from the buffer, and return them: another host
        destages them from now on. Writers waiting for the room they leave are admitted."""
        left = Counter(items)
        taken: list[PendingWrite] = []
        if self._hashed:
            walk = self._walk
            slots = []
            for slot in walk.untaken(vm):
                item = walk.write(slot)
                if left[item[:3]]:
                    left[item[:3]] -= 1
                    taken.append(item)
                    slots.append(slot)
            walk.remove(slots)
        else:
            pending = self._pending
            kept = WriteQueue()
            for i in range(pending.count):
                item = pending[i]
                if item[WRITE_VM] == vm and left[item[:3]]:
                    left[item[:3]] -= 1
                    taken.append(item)
                else:
                    kept.push(item, pending.since(i))
            self._pending = kept
        moved = sum(item[WRITE_SIZE] for item in taken)
        self.backlog_bytes -= moved
        self.pending_bytes -= moved
        self.single_copy_bytes -= sum(item[WRITE_SIZE] for item in taken if item[WRITE_SINGLE])
        self.short_bytes -= sum(
            item[WRITE_SIZE]
            for item in taken
            if len(item[WRITE_HOLDERS]) < self.promised[item[WRITE_VM]]
        )
        self._admit_waiting()
        return taken

    # -- resync after a peer loss (simcache.sim.outages) --

    def buffered(self) -> Iterator[PendingWrite]:
        """The writes accepted and not yet destaged: the pending ones, then the batches on their
        way to the array (``order = "hash"``: the writes with blocks still in the walk or on
        their way, in arrival order)."""
        for _, _, item in self._slots():
            yield item

    def _slots(self) -> Iterator[tuple[_Rewritable, int, PendingWrite]]:
        """Each write accepted and not yet destaged, with where it is stored (``slot[i]`` is the
        write; assigning it rewrites the write in place): the pending queue, a batch being
        flushed, or the hash walk's pool (``slot`` the walk, ``i`` the write's slot in it)."""
        pending = self._pending
        for i, item in enumerate(pending):
            yield pending, i, item
        for batch in self._flushing:
            for i, item in enumerate(batch):
                yield batch, i, item
        walk = self._walk
        for slot in walk.arrival():
            yield walk, slot, walk.write(slot)

    def add_holder(self, items: Counter[PendingWrite], holder: Host) -> int:
        """A resync copied ``items`` (each as many times as counted) to ``holder``: those still
        accepted and not yet destaged, matched by VM, offset and size among the writes ``holder``
        does not hold, name it among their replica holders. Returns the bytes that now have
        ``holder``'s copy."""
        # the copies of each (VM, offset, size), whatever holders each item carried
        left: Counter[tuple[int, int, int]] = Counter()
        for item, count in items.items():
            left[item[:3]] += count
        added = 0
        for slot, i, item in self._slots():
            key = item[:3]
            if left[key] and holder not in item[WRITE_HOLDERS]:
                left[key] -= 1
                if item[WRITE_SINGLE]:
                    self.single_copy_bytes -= item[WRITE_SIZE]
                if len(item[WRITE_HOLDERS]) + 1 == self.promised[item[WRITE_VM]]:
                    self.short_bytes -= item[WRITE_SIZE]
                slot[i] = (
                    item[WRITE_VM],
                    item[WRITE_OFFSET],
                    item[WRITE_SIZE],
                    (*item[WRITE_HOLDERS], holder),
                    False,
                )
                added += item[WRITE_SIZE]
        return added

    @property
    def waiting_writers(self) -> int:
        return len(self._waiting)

    @property
    def waiting_bytes(self) -> int:
        """Bytes of the writes waiting for buffer space (stored, not yet acknowledged to their
        VMs)."""
        return sum(item[WRITE_SIZE] for _, item in self._waiting)
