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
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import simpy

from simcache.model.link import framed_bytes
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
        self._work: simpy.Event = env.event()
        self.accepted_bytes = 0
        self.destaged_bytes = 0
        self.batches = 0
        self.runs = 0
        self.on_destaged: Callable[[PendingWrite], None] = lambda item: None
        for _ in range(spec.concurrency):
            env.process(self._flusher())

    def admit(self, item: PendingWrite) -> simpy.Event | None:
        """Accept ``item``; return ``None`` if accepted now, else an event that fires on acceptance."""
        if not self._waiting and self.backlog_bytes + item[2] <= self.capacity:
            self._accept(item)
            return None
        event = self.env.event()
        self._waiting.append((event, item))
        return event

    def _accept(self, item: PendingWrite) -> None:
        size = item[2]
        self.backlog_bytes += size
        self.accepted_bytes += size
        if item[4]:
            self.single_copy_bytes += size
        self._pending.append(item)
        if not self._work.triggered:
            self._work.succeed()

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
            batch = self._take_batch()
            nbytes = sum(item[2] for item in batch)
            runs = self.coalesce(batch)
            unique_bytes = sum(runs)  # overwrites within the batch are read and sent once
            read_done = host.tier.submit(env.now, unique_bytes, False)
            yield env.timeout(read_done - env.now)
            link = host.storage_tx.spec
            wire, packets = framed_bytes(link, unique_bytes)
            yield host.network.transfer((host.storage_tx, host.array_rx), wire, packets, latency=link.latency)
            array_done = host.array.submit(env.now, runs, True, seek_scale=1.0 / (len(runs) + 1))
            yield env.timeout(array_done - env.now + link.latency)  # the array's acknowledgement
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
