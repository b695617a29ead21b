"""Per-host destage buffer: accepted write-back data waiting to reach the array.

Assumptions (see docs/architecture.md):
- The buffer holds at most ``capacity`` bytes. A write-back write enters it
  after its acknowledgement legs complete; if it does not fit, the write waits
  (and so does the VM's acknowledgement) in first-come first-served order.
- ``concurrency`` flushers drain it continuously. Each takes the oldest
  pending writes up to ``max_batch`` bytes, sorts them by VM and offset,
  merges adjacent ones into contiguous runs (coalescing), reads them from the
  tier, sends them over the storage network and writes them to the array as
  one sorted batch (shorter seeks: elevator order).
- Data leaves the buffer, and peers drop their replica copies, only when the
  array has acknowledged the batch.
- When the host fails, the flushers stop; every write not yet destaged is
  either lost (no replica) or taken over by a surviving replica holder, whose
  destager writes it to the array (see :meth:`fail` and :meth:`adopt`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import simpy

from simcache.model.detached import start_detached
from simcache.physics import message_seconds, sorted_seek_scale
from simcache.scenario import DestagerSpec

if TYPE_CHECKING:
    from simcache.model.host import Host

__all__ = ["Destager", "PendingWrite"]

# (vm id, offset, size, hosts holding replicas, single copy?)
PendingWrite = tuple[int, int, int, tuple["Host", ...], bool]


class Destager:
    """The buffer, its waiting writers and its flusher processes."""

    def __init__(self, env: simpy.Environment, spec: DestagerSpec, host: Host):
        self.env = env
        self.spec = spec
        self.host = host
        self.capacity = spec.capacity
        self.backlog_bytes = 0
        self.single_copy_bytes = 0
        self._pending: deque[PendingWrite] = deque()
        self._waiting: deque[tuple[simpy.Event, PendingWrite]] = deque()
        self._flushing: list[list[PendingWrite]] = []  # batches on their way to the array
        self._work: simpy.Event = env.event()
        self.accepted_bytes = 0
        self.destaged_bytes = 0
        self.batches = 0
        self.runs = 0
        self.on_destaged: Callable[[PendingWrite], None] = lambda item: None
        for _ in range(spec.concurrency):
            start_detached(env, self._flusher())

    def admit(self, item: PendingWrite) -> simpy.Event | None:
        """Accept ``item``; return ``None`` if accepted now, else an event that fires on acceptance."""
        if not self._waiting and self.backlog_bytes + item[2] <= self.capacity:
            self._accept(item)
            return None
        event = self.env.event()
        self._waiting.append((event, item))
        return event

    def _accept(self, item: PendingWrite) -> None:
        self.accepted_bytes += item[2]
        self._enqueue(item)

    def _enqueue(self, item: PendingWrite) -> None:
        size = item[2]
        self.backlog_bytes += size
        if item[4]:
            self.single_copy_bytes += size
        self._pending.append(item)
        if not self._work.triggered:
            self._work.succeed()

    def adopt(self, item: PendingWrite) -> None:
        """Take over destaging a failed primary's write whose replica this host holds.

        The bytes are already stored here, so the buffer's capacity is not checked.
        """
        self._enqueue(item)

    def peer_failed(self, peer: Host) -> None:
        """A host holding replicas of this buffer's writes died: those writes lose that copy.

        Writes left with no replica become single copies (data at risk). That holds for the buffered
        writes and for the writers still waiting for buffer space (their data is in the tier and on the
        peers already; they enter the buffer with the copies that are left).
        """
        for queue in (self._pending, *self._flushing):
            for i, item in enumerate(queue):
                replicas = item[3]
                if peer in replicas:
                    kept = tuple(h for h in replicas if h is not peer)
                    if not kept and not item[4]:
                        self.single_copy_bytes += item[2]
                    queue[i] = (item[0], item[1], item[2], kept, not kept)
        waiting = self._waiting
        for i, (event, item) in enumerate(waiting):
            if peer in item[3]:
                kept = tuple(h for h in item[3] if h is not peer)
                waiting[i] = (event, (item[0], item[1], item[2], kept, not kept))

    def fail(self) -> list[PendingWrite]:
        """The host died: return every write not yet destaged (the flushers stop on seeing ``host.alive`` false).

        Writers waiting for space are dropped with their VMs; the backlog
        counters drop to zero (the caller decides what was lost and what a
        surviving replica holder takes over).
        """
        items = [item for batch in self._flushing for item in batch] + list(self._pending)
        self._flushing.clear()
        self._pending.clear()
        self._waiting.clear()
        self.backlog_bytes = 0
        self.single_copy_bytes = 0
        return items

    def _take_batch(self) -> list[PendingWrite]:
        pending = self._pending
        batch = [pending.popleft()]
        total = batch[0][2]
        limit = self.spec.max_batch
        while pending and total + pending[0][2] <= limit:
            item = pending.popleft()
            total += item[2]
            batch.append(item)
        return batch

    @staticmethod
    def coalesce(batch: list[PendingWrite]) -> list[int]:
        """Contiguous run lengths (bytes) of a batch sorted by VM and offset."""
        runs: list[int] = []
        last_vm = -1
        last_end = -1
        for vm, offset, size, _, _ in sorted(batch, key=lambda w: (w[0], w[1])):
            if vm == last_vm and offset <= last_end and runs:
                extra = offset + size - last_end
                if extra > 0:
                    runs[-1] += extra
                    last_end += extra
            else:
                runs.append(size)
                last_vm, last_end = vm, offset + size
        return runs

    def _flusher(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        host = self.host
        while True:
            while not self._pending:
                if self._work.triggered:
                    self._work = env.event()
                yield self._work
                if not host.alive:
                    return
            batch = self._take_batch()
            self._flushing.append(batch)
            nbytes = sum(item[2] for item in batch)
            runs = self.coalesce(batch)
            unique_bytes = sum(runs)  # overwrites within the batch are read and sent once
            read_done = host.tier.submit(env.now, unique_bytes, False)
            yield env.timeout(read_done - env.now)
            if not host.alive:
                return
            link = host.storage_tx.spec
            wire, packets = host.storage_tx.framing[unique_bytes]
            yield host.network.transfer((host.storage_tx, host.array_rx), wire, packets, latency=link.latency)
            if not host.alive:
                return
            array_done = host.array.submit(env.now, runs, True, seek_scale=sorted_seek_scale(len(runs)))
            yield env.timeout(array_done - env.now + message_seconds(link))  # the array's acknowledgement
            if not host.alive:
                return  # the batch was handed to the replica holders when the host failed
            self._flushing.remove(batch)
            self.batches += 1
            self.runs += len(runs)
            self._release(batch, nbytes)

    def _release(self, batch: list[PendingWrite], nbytes: int) -> None:
        self.backlog_bytes -= nbytes
        self.destaged_bytes += nbytes
        for item in batch:
            if item[4]:
                self.single_copy_bytes -= item[2]
            self.on_destaged(item)
        waiting = self._waiting
        while waiting and self.backlog_bytes + waiting[0][1][2] <= self.capacity:
            event, item = waiting.popleft()
            self._accept(item)
            event.succeed()

    @property
    def waiting_writers(self) -> int:
        return len(self._waiting)

    @property
    def waiting_bytes(self) -> int:
        """Bytes of the writes waiting for buffer space (stored, not yet acknowledged to their VMs)."""
        return sum(item[2] for _, item in self._waiting)
