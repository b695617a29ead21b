"""A destager's flusher as callbacks (:class:`Flusher`), beside the generator it mirrors
(:func:`flusher_steps`).

A flusher loops: wait until the destager has a batch for it (:meth:`Destager.work_wait`), take it
(:meth:`Destager.take`), read it back from the tier (one request, or background requests one after
another when the tier schedules background I/O), wait for the storage link if it is down, send it to
the array (:meth:`Destager.send`), write it there and wait for the array's acknowledgement
(:meth:`Destager.write`), and count it destaged (:meth:`Destager.destaged`). After each wait but a
background request's it stops if the destager was stopped (its host failed). :class:`Flusher` runs
that loop as one callback called once per wait, in phases; the destager's methods compute
everything, this module only orders the waits. The same events at the same times in the same order
as the generator (``tests/sim/test_fast_paths.py`` runs every library scenario both ways).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Final

from simcache.sim.kernel.clock import URGENT, current_time, schedule_at
from simcache.sim.kernel.signals import Signal, Wait, on_processed
from simcache.sim.kernel.waits import sleep

if TYPE_CHECKING:
    from simcache.sim.components.destager import Destager
    from simcache.sim.components.pending import FlushBatch

__all__ = ["Flusher", "flusher_steps"]

_START: Final = -1  # not started: its first step looks for work without a stop check
_WORK: Final = 0  # waiting for the destager to have a batch
_READ: Final = 1  # reading the batch back from the tier in one request
_CHUNK: Final = 2  # reading it back in background requests, one after another
_LINK: Final = 3  # waiting for the storage link to come back
_SEND: Final = 4  # sending it to the array
_ARRAY: Final = 5  # waiting for the array's acknowledgement


class Flusher:
    """One of a destager's flushers (``concurrency`` of them), started when ``start_detached``
    would start the generator: now, ahead of normal events. ``phase`` says what it waits for;
    ``batch`` is the batch it carries."""

    __slots__ = ("batch", "booked", "callback", "destager", "left", "phase", "request")

    def __init__(self, destager: Destager):
        self.destager = destager
        self.phase = _START
        self.batch: FlushBatch | None = None
        self.left = 0  # bytes of the batch still to read back (background requests)
        self.request = 0  # the background request in hand (bytes)
        self.booked = False  # whether the tier booked it (else the flusher waits to offer it again)
        # bound once: the flusher lives as long as the run
        self.callback: Callable[[Any], None] = self._step
        clock = destager.clock
        schedule_at(clock, current_time(clock), Signal(None, self.callback), URGENT)

    def _step(self, _: Any) -> None:
        """Go on from the wait that just ended (or from the start)."""
        phase = self.phase
        destager = self.destager
        if phase == _CHUNK:
            if self.booked:
                self.left -= self.request
                if self._read_chunk(False):
                    return
            elif self._read_chunk(True):
                return
            self._read_done()
            return
        # the generator's first step has no stop check before it
        if phase != _START and destager.stopped:
            return
        if phase <= _WORK:  # _START or _WORK
            self._look_for_work()
        elif phase == _READ:
            self._read_done()
        elif phase == _LINK:
            self._send()
        elif phase == _SEND:
            batch = self.batch
            assert batch is not None
            clock = destager.clock
            now = current_time(clock)
            self.phase = _ARRAY
            # = sleep()'s time
            schedule_at(clock, now + destager.write(batch, now), Signal(None, self.callback))
        else:  # _ARRAY: the batch is on the array
            batch = self.batch
            assert batch is not None
            self.batch = None
            destager.destaged(batch)
            self._look_for_work()

    def _look_for_work(self) -> None:
        """Take a batch if the destager has one for this flusher now, else wait for what it
        names."""
        destager = self.destager
        clock = destager.clock
        now = current_time(clock)
        work = destager.work_wait(now)
        if work is not None:
            self.phase = _WORK
            on_processed(work, self.callback)
            return
        batch = destager.take(now)
        self.batch = batch
        if destager.reads_in_chunks:
            self.phase = _CHUNK
            self.left = batch.unique_bytes
            if not self._read_chunk(False):
                self._read_done()
            return
        read_done = destager.host.tier.submit(now, batch.unique_bytes, False)
        self.phase = _READ
        schedule_at(clock, now + (read_done - now), Signal(None, self.callback))  # = sleep()'s time

    def _read_chunk(self, again: bool) -> bool:
        """Offer the tier the batch's next background request (``again``: the one it turned
        down); False once the whole batch has been read back (:meth:`Destager._read_back`,
        request by request)."""
        destager = self.destager
        if not again:
            left = self.left
            if left <= 0:
                return False
            tier = destager.host.tier
            self.request = tier.background_request if left > tier.background_request else left
        clock = destager.clock
        now = current_time(clock)
        booked, at = destager.host.tier.submit_background(now, self.request, False)
        self.booked = booked
        schedule_at(clock, now + (at - now), Signal(None, self.callback))  # = sleep()'s time
        return True

    def _read_done(self) -> None:
        """The batch is read back: wait for the storage link if it is down, else send the batch."""
        destager = self.destager
        if destager.stopped:
            return
        host = destager.host
        # link_down: the batch waits for the storage port (simcache.sim.outages)
        if host.storage_down:
            self.phase = _LINK
            on_processed(host.storage_back, self.callback)
            return
        self._send()

    def _send(self) -> None:
        batch = self.batch
        assert batch is not None
        self.phase = _SEND
        self.destager.send(batch, self.callback)


def flusher_steps(destager: Destager) -> Generator[Wait, Any, None]:
    """A flusher of ``destager`` as a generator: the reference :class:`Flusher` mirrors, wait for
    wait (``build(..., paths="generators")`` runs it; ``tests/sim/test_fast_paths.py``)."""
    clock = destager.clock
    host = destager.host
    while True:
        while True:
            work = destager.work_wait(current_time(clock))
            if work is None:
                break
            yield work
            if destager.stopped:
                return
        batch = destager.take(current_time(clock))
        if destager.reads_in_chunks:
            yield from destager._read_back(batch.unique_bytes)
        else:
            read_done = host.tier.submit(current_time(clock), batch.unique_bytes, False)
            yield sleep(clock, read_done - current_time(clock))
        if destager.stopped:
            return
        # link_down: the batch waits for the storage port (simcache.sim.outages)
        if host.storage_down:
            yield host.storage_back
            if destager.stopped:
                return
        yield destager.send(batch, None)
        if destager.stopped:
            return
        yield sleep(clock, destager.write(batch, current_time(clock)))
        if destager.stopped:
            return  # the batch was handed to the replica holders when the host failed
        destager.destaged(batch)
