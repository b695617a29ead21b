"""The writes surviving replica holders took over from failed hosts, until they have destaged them
(HA restart).

A VM restarted after its host failed (``host_failure`` with ``restart_delay``) reads from the array
on a miss. For a block whose last write a surviving holder took over and has not destaged yet, the
array holds an older version, so the read waits until that holder has destaged every taken-over
write its extent overlaps (:meth:`PendingDestage.wait`). How such a write is found: each one is kept
under its VM by (holder, offset, size) with a count (equal writes are interchangeable), and leaves
when the holder's destager reports an item with the same VM, offset and size destaged
(:meth:`simcache.sim.components.host.Host._drop_replicas`). A restarted VM that rewrote the same
extent on that very holder could release the wait with its own destage of it; its read of that
extent is then a hit in the holder's cache, unless evicted.
"""

from __future__ import annotations

from typing import Any

import simpy

from simcache.sim.kernel.clock import clock_of
from simcache.sim.kernel.signals import Signal, on_processed
from simcache.sim.kernel.waits import AllOf, succeed

__all__ = ["PendingDestage"]


class PendingDestage:
    """The cluster's taken-over writes not yet destaged, by VM: (holder index, offset, size) ->
    [count, Signal or None] (the :class:`Signal` the reads waiting for that write's last copy
    wait for, processed when it is destaged)."""

    def __init__(self, env: simpy.Environment) -> None:
        self.clock = clock_of(env)
        self._by_vm: dict[int, dict[tuple[int, int, int], list[Any]]] = {}

    def add(self, holder: int, vm: int, offset: int, size: int) -> None:
        """``holder`` took over the write of ``size`` bytes at ``offset`` of VM ``vm``'s disk."""
        entries = self._by_vm.setdefault(vm, {})
        key = (holder, offset, size)
        entry = entries.get(key)
        if entry is None:
            entries[key] = [1, None]
        else:
            entry[0] += 1

    def destaged(self, holder: int, vm: int, offset: int, size: int) -> None:
        """``holder``'s destager wrote one such write to the array: wake the reads waiting for
        its last copy."""
        entries = self._by_vm.get(vm)
        if entries is None:
            return
        key = (holder, offset, size)
        entry = entries.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if not entry[0]:
            self._drop(vm, entries, key)

    def handed_over(self, holder: int, new_holder: int, vm: int, offset: int, size: int) -> None:
        """``holder`` handed one of VM ``vm``'s writes to ``new_holder`` (a vMotion with
        handover): if it was a taken-over write, it is now ``new_holder``'s to destage, and the
        reads waiting for its last copy wait for that."""
        entries = self._by_vm.get(vm)
        entry = None if entries is None else entries.get((holder, offset, size))
        if entries is None or entry is None:
            return
        entry[0] -= 1
        signal: Signal | None = None
        if not entry[0]:
            signal = entries.pop((holder, offset, size))[1]
        self.add(new_holder, vm, offset, size)
        if signal is not None:
            moved = entries[(new_holder, offset, size)]
            if moved[1] is None:
                moved[1] = signal
            else:
                clock = self.clock
                waiting = signal
                on_processed(moved[1], lambda _: succeed(clock, waiting))

    def holder_failed(self, holder: int) -> None:
        """``holder`` died: its taken-over writes are handed over again (and added again) or
        lost; reads stop waiting for its copies."""
        for vm, entries in list(self._by_vm.items()):
            for key in [key for key in entries if key[0] == holder]:
                self._drop(vm, entries, key)

    def _drop(
        self, vm: int, entries: dict[tuple[int, int, int], list[Any]], key: tuple[int, int, int]
    ) -> None:
        signal = entries.pop(key)[1]
        if signal is not None:
            succeed(self.clock, signal)
        if not entries:
            del self._by_vm[vm]

    def wait(self, vm: int, offset: int, size: int) -> Signal | None:
        """``None`` if no taken-over write of VM ``vm`` overlapping ``[offset, offset + size)``
        is still to be destaged, else the :class:`Signal` processed when all of them have been."""
        entries = self._by_vm.get(vm)
        if entries is None:
            return None
        end = offset + size
        signals: list[Signal] = []
        for key, entry in entries.items():
            if key[1] < end and offset < key[1] + key[2]:
                if entry[1] is None:
                    entry[1] = Signal(None)
                signals.append(entry[1])
        if not signals:
            return None
        return signals[0] if len(signals) == 1 else AllOf(self.clock, signals).done

    def pending_bytes(self, vm: int) -> int:
        """Bytes of VM ``vm``'s taken-over writes not yet destaged."""
        return sum(key[2] * entry[0] for key, entry in self._by_vm.get(vm, {}).items())

    def extents(self, vm: int) -> set[tuple[int, int]]:
        """The (offset, size) extents of VM ``vm``'s taken-over writes not yet destaged."""
        return {(key[1], key[2]) for key in self._by_vm.get(vm, {})}
