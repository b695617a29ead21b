"""Per-host LRU read cache over fixed-size lines of each VM's disk.

An I/O touches the lines from ``offset // line`` to ``(offset + size - 1) // line``;
it hits only if every line is present (a partial hit is served as a miss, which
over-counts array reads slightly for I/Os larger than a line). Writes and
read-miss fills insert their lines; the least recently used lines are evicted
when the capacity (in lines) is exceeded.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["ReadCache"]

_VM_SHIFT = 40  # line index bits per VM in the cache key (2^40 lines is plenty)


class ReadCache:
    """LRU set of (vm, line) keys holding ``capacity_lines`` lines of ``line_bytes`` bytes
    (:func:`simcache.physics.read_cache_lines`)."""

    def __init__(self, capacity_lines: int, line_bytes: int):
        self.line = line_bytes
        self.capacity_lines = capacity_lines
        self._lines: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.inserted_lines = 0
        self.evicted_lines = 0

    def _keys(self, vm: int, offset: int, size: int) -> range:
        base = vm << _VM_SHIFT
        line = self.line
        return range(base + offset // line, base + (offset + size - 1) // line + 1)

    def lookup(self, vm: int, offset: int, size: int) -> bool:
        """True if every line of the I/O is cached; a hit refreshes their recency."""
        lines = self._lines
        keys = self._keys(vm, offset, size)
        if len(keys) == 1:  # the common case, without the second loop
            key = keys[0]
            if key not in lines:
                self.misses += 1
                return False
            lines.move_to_end(key)
            self.hits += 1
            return True
        for key in keys:
            if key not in lines:
                self.misses += 1
                return False
        for key in keys:
            lines.move_to_end(key)
        self.hits += 1
        return True

    def holds(self, vm: int, offset: int, size: int) -> bool:
        """True if every line of the I/O is cached; neither counted nor refreshed (a moved VM's old host asked
        for a remote hit: its own reads no longer run here)."""
        lines = self._lines
        return all(key in lines for key in self._keys(vm, offset, size))

    def discard(self, vm: int, offset: int, size: int) -> None:
        """Drop the I/O's lines (a moved VM wrote them on its new host: this copy is stale)."""
        lines = self._lines
        for key in self._keys(vm, offset, size):
            lines.pop(key, None)

    def insert(self, vm: int, offset: int, size: int) -> None:
        lines = self._lines
        inserted = 0
        for key in self._keys(vm, offset, size):
            if key in lines:
                lines.move_to_end(key)
            else:
                lines[key] = None
                inserted += 1
        if inserted:
            self.inserted_lines += inserted
            while len(lines) > self.capacity_lines:
                lines.popitem(last=False)
                self.evicted_lines += 1

    def clear(self) -> None:
        """Forget every line: the device holding them failed (``device_failure``); not counted as evictions."""
        self._lines.clear()

    @property
    def occupied_bytes(self) -> int:
        return len(self._lines) * self.line
