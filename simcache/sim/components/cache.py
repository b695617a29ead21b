"""Per-host LRU read cache over fixed-size lines of each VM's disk.

An I/O touches the lines from ``offset // line`` to ``(offset + size - 1) // line``;
it hits only if every line is present (a partial hit is served as a miss, which
over-counts array reads slightly for I/Os larger than a line). Writes and
read-miss fills insert their lines; the least recently used lines are evicted
when the capacity (in lines) is exceeded.

A line's key is ``vm << 40`` plus its line index (below 2^40: 4 PiB of disk in 4 KiB lines; VM
numbers below 2^23). From the first line on, the cached lines are two vectors of machine integers
(``librt.vecs.vec``: compiled by mypyc, their reads and writes are C array accesses), with no
Python object per line: 16 to 32 bytes of entries a line (18.5 at 200,000 lines), up to about 35
with the vectors' spare room (``tests/sim/test_read_cache_lru.py``; measured in bench/README.md,
"Compact state").

- The recency log (``_log``, 8-byte keys) lists the cached lines from least to
  most recently used: inserting or refreshing a line appends its key and marks
  its earlier entry dead. The least recently used line is the first live entry
  from ``_head`` on; eviction consumes the log from there.
- The index (``_slots``, 4-byte log positions) is a hash table with linear
  probing: a slot holds the log position of one cached line (0 when empty; the
  log's entry 0 is never used), and ``_log[position]`` is the line's key. It is
  at most half full after each insert (doubled past that), so a lookup probes
  about 1.5 slots, and a removal moves back the entries after it that probed
  past it, so no slot is left as a tombstone.
- When the log's consumed and dead entries outnumber the cached lines, the live
  entries move to its front in order and the index gets their new positions:
  the log stays under about twice the lines cached.

Every step is amortized O(1) per line, and the lines evicted are exactly those an
``OrderedDict`` kept in recency order evicts (``tests/sim/test_read_cache_lru.py``).

A warm cache that holds each of its VMs' whole disks (``cache.warm``, a device test reading its
tier) starts with its lines *whole* instead (:meth:`ReadCache.hold_whole`): per VM, only the count
of lines held from the disk's start, no entry per line. Every read of those VMs hits and every
write only refreshes lines, so no line leaves and recency never decides anything: the cache
answers as one filled line by line would, in no time and no memory (a 64 GiB disk in 4 KiB lines
is 16.8 million lines: seconds and 270 MB to fill one by one). The build uses it only where no VM
moves (no vMotion of a VM, no HA restart): a moved VM's lines or a discard would need the
recency, and the first such call fills the lines one by one, oldest first (:meth:`_fill_whole`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i32, i64

from simcache.physics.cluster import MAX_CACHED_LINES

__all__ = ["ReadCache", "holds_whole"]

_VM_SHIFT: Final = 40  # line index bits per VM in the cache key (2^40 lines is plenty)
_LINE_MASK: Final = (1 << _VM_SHIFT) - 1
_DEAD: Final = -1  # a log entry whose line was refreshed since, or is no longer cached
_EMPTY: Final = 0  # an index slot holding no line (log position 0 is never used)
_MIN_SLOTS: Final = 16
# waste the log may carry beyond one entry per cached line, so small caches compact rarely
_LOG_SLACK: Final = 64
# The hash (:func:`_spread`, then :func:`_slot`): each VM's line indexes are offset by its multiple
# of _VM_MIX (kept below 2^39) and multiplied by the odd _LINE_MIX (below 2^21, so the product stays
# below 2^62: short machine integers in the compiled build); the product's high bits are folded onto
# its low ones, so strided lines (I/Os aligned to 64 KiB, say) spread over the table as well as
# consecutive ones do. Linear probing then takes about 1.5 probes a lookup at half load, the figure
# of random hashing, for every access pattern tried.
_VM_MIX: Final = 0x9E3779B9
_VM_OFFSET_MASK: Final = (1 << 39) - 1
_LINE_MIX: Final = 0x13C6EF
_FOLD: Final = 29


def _spread(key: int) -> int:
    """``key``'s hash before folding; the next line's is this plus ``_LINE_MIX``, which the loops
    over an I/O's lines use."""
    return ((key & _LINE_MASK) + ((key >> _VM_SHIFT) * _VM_MIX & _VM_OFFSET_MASK)) * _LINE_MIX


def _slot(spread: int, mask: int) -> int:
    """The first index slot probed for a key whose :func:`_spread` is ``spread``, in a table of
    ``mask + 1`` slots."""
    return (spread ^ spread >> _FOLD) & mask


def holds_whole(disk_lines: list[int], capacity_lines: int) -> bool:
    """Whether a cache of ``capacity_lines`` holds each of its VMs' disks (``disk_lines``, one per
    VM) whole in the equal share a warm start gives each: what :meth:`ReadCache.hold_whole` takes.
    """
    return bool(disk_lines) and max(disk_lines) <= capacity_lines // len(disk_lines)


_SLOTS_BETWEEN_POLLS: Final = 1 << 20
"""Empty slots :func:`_empty_slots` makes between two polls of its stop test (about 10 ms
compiled)."""


def _empty_slots(size: int, stop_requested: Callable[[], bool] | None = None) -> vec[i32]:
    """An index of ``size`` empty slots; fewer if ``stop_requested()`` turned true on the way
    (asked every :data:`_SLOTS_BETWEEN_POLLS` slots: a warm start's index of hundreds of millions
    of slots takes seconds, which a deadline or a cancel must not wait for)."""
    slots = vec[i32](capacity=size)
    made = 0
    while made < size:
        if stop_requested is not None and stop_requested():
            return slots
        end = min(size, made + _SLOTS_BETWEEN_POLLS)
        for _ in range(made, end):
            slots = append(slots, _EMPTY)
        made = end
    return slots


class ReadCache:
    """LRU set of (vm, line) keys holding ``capacity_lines`` lines of ``line_bytes`` bytes
    (:func:`simcache.physics.cluster.read_cache_lines`).

    ``hits`` and ``misses`` count :meth:`lookup` answers (the VM's read path moves a remote hit from
    one host's misses to the other's hits); ``inserted_lines`` and ``evicted_lines`` count lines
    added and pushed out.
    """

    def __init__(self, capacity_lines: int, line_bytes: int) -> None:
        self.line = line_bytes
        self.capacity_lines = capacity_lines
        self.hits = 0
        self.misses = 0
        self.inserted_lines = 0
        self.evicted_lines = 0
        self._slots: vec[i32] = _empty_slots(_MIN_SLOTS)
        self._mask = _MIN_SLOTS - 1  # len(_slots) - 1
        self._log: vec[i64] = vec[i64]([_DEAD])
        self._head = 1  # the log's first entry not yet consumed by eviction
        self._dead = 0  # dead entries in _log[_head:]
        self._count = 0  # lines cached
        # hold_whole: per VM index, the lines held from its disk's start; none while empty
        self._whole: vec[i64] = vec[i64]()

    def _keys(self, vm: int, offset: int, size: int) -> tuple[int, int]:
        """The keys of the I/O's lines: ``range(*self._keys(...))`` (written out at each loop, so
        that compiled it is a native loop over unboxed integers, not a ``range`` object)."""
        base = vm << _VM_SHIFT
        line = self.line
        return base + offset // line, base + (offset + size - 1) // line + 1

    def _find(self, key: int) -> int:
        """The index slot holding ``key``, or -1 if it is not cached."""
        slots = self._slots
        log = self._log
        mask = self._mask
        slot = _slot(_spread(key), mask)
        position: int = slots[slot]
        while position != _EMPTY:
            if log[position] == key:
                return slot
            slot = (slot + 1) & mask
            position = slots[slot]
        return -1

    def _remove(self, slot: int) -> None:
        """Empty ``slot``, moving back the entries after it that probed past it (so every probe
        still finds its line)."""
        slots = self._slots
        log = self._log
        mask = self._mask
        hole = slot
        slot = (slot + 1) & mask
        position: int = slots[slot]
        while position != _EMPTY:
            key = log[position]
            # _spread and _slot inlined
            spread = (
                (key & _LINE_MASK) + ((key >> _VM_SHIFT) * _VM_MIX & _VM_OFFSET_MASK)
            ) * _LINE_MIX
            # The entry may fill the hole if the hole lies on its probe path, from its first slot to
            # here.
            if (slot - ((spread ^ spread >> _FOLD) & mask)) & mask >= (slot - hole) & mask:
                slots[hole] = position
                hole = slot
            slot = (slot + 1) & mask
            position = slots[slot]
        slots[hole] = _EMPTY
        self._count -= 1

    def _evict(self, lines: int) -> None:
        """Remove the ``lines`` least recently used lines."""
        log = self._log
        slots = self._slots
        mask = self._mask
        position: int = self._head
        for _ in range(lines):
            key = log[position]
            while key == _DEAD:
                self._dead -= 1
                position += 1
                key = log[position]
            slot = _slot(_spread(key), mask)
            while slots[slot] != position:
                slot = (slot + 1) & mask
            self._remove(slot)
            position += 1
        self._head = position

    def _grow(self) -> None:
        """Double the index and place every cached line again."""
        # The scenario check refuses a cache that could hold more (spec/consistency.py): this
        # is the engine's own guard, should a path ever bypass it.
        if self._count > MAX_CACHED_LINES:
            raise MemoryError(
                f"a host's read cache holds more than {MAX_CACHED_LINES} lines: use larger cache "
                "lines (cache.line) or a smaller cache"
            )
        self._slots = _empty_slots(2 * len(self._slots))
        self._mask = len(self._slots) - 1
        self._place_lines()

    def reserve(self, lines: int, stop_requested: Callable[[], bool] | None = None) -> None:
        """Size the index now for ``lines`` more lines (a warm start's fill): the size the inserts'
        doublings would reach, without placing every cached line again at each doubling (the same
        table, so the same answers; about half the fill's time). If ``stop_requested()`` turns
        true while the empty index is made, the index stays as it was (the fill then stops at
        once)."""
        size = len(self._slots)
        while 2 * (self._count + lines) > size:
            size *= 2
        if size > len(self._slots):
            slots = _empty_slots(size, stop_requested)
            if len(slots) < size:  # stopped
                return
            self._slots = slots
            self._mask = size - 1
            self._place_lines()

    def _place_lines(self) -> None:
        """Put the log position of every cached line into the (empty) index."""
        slots = self._slots
        mask = self._mask
        log = self._log
        for position in range(self._head, len(log)):
            key = log[position]
            if key != _DEAD:
                slot = _slot(_spread(key), mask)
                while slots[slot] != _EMPTY:
                    slot = (slot + 1) & mask
                slots[slot] = i32(position)

    def _compact_log(self) -> None:
        """Move the log's live entries to its front (in order) and index them again at their new
        positions: done when its consumed and dead entries outnumber the lines cached (by
        ``_LOG_SLACK``). The index is emptied in place, so the only copy made is the shorter
        log's (at most 8 bytes a cached line, beside the old log)."""
        log = self._log
        write = 1
        for read in range(self._head, len(log)):
            key = log[read]
            if key != _DEAD:
                log[write] = key
                write += 1
        self._log = log[:write]
        self._head = 1
        self._dead = 0
        slots = self._slots
        for slot in range(len(slots)):
            slots[slot] = _EMPTY
        self._place_lines()

    def hold_whole(self, lines: list[int]) -> None:
        """Start holding ``lines[vm]`` lines from the start of each VM's disk (0: none), as many
        inserts from the disk's start would, without an entry per line (see the module's notes).
        The cache must be empty and hold them all (at most ``capacity_lines`` in all); the reads
        and writes of a VM must stay inside its lines (or the first that does not fills them one
        by one)."""
        if self._count or len(self._whole):
            raise ValueError("hold_whole starts an empty cache")
        if sum(lines) > self.capacity_lines:
            raise ValueError(
                f"{sum(lines)} lines do not fit a cache of {self.capacity_lines} lines"
            )
        if any(lines):
            self._whole = vec[i64]([i64(n) for n in lines])

    @property
    def whole(self) -> bool:
        """Whether the cache holds its VMs' disks whole (:meth:`hold_whole`), with no line entries:
        every read of them hits."""
        return len(self._whole) > 0

    def _in_whole(self, vm: int, offset: int, size: int) -> bool:
        """Whether the I/O's lines lie inside the lines ``vm`` holds whole."""
        whole = self._whole
        return vm < len(whole) and (offset + size - 1) // self.line < whole[vm]

    def _fill_whole(self) -> None:
        """Put the lines held whole into the index and the log, VM by VM from each disk's start (as
        the build's inserts would have), and leave whole mode: a call whole mode cannot answer (an
        I/O outside them, a discard) needs line entries. The recency is the fill's, not the reads'
        since (the build does not hold disks whole where a VM can move, the only source of such
        calls)."""
        whole = self._whole
        self._whole = vec[i64]()
        for vm in range(len(whole)):
            self.fill(vm, whole[vm], None)
            self.inserted_lines -= whole[vm]  # (lines of the start, not fills of the run)

    def fill(self, vm: int, lines: int, stop_requested: Callable[[], bool] | None) -> None:
        """Insert ``vm``'s first ``lines`` lines (a warm start), 4,096 to an insert; stop early
        once ``stop_requested()`` (asked before each insert). Counted as inserts."""
        line = self.line
        chunk = 4096  # lines per insert: one call covers many lines without one huge range
        for first in range(0, lines, chunk):
            if stop_requested is not None and stop_requested():
                return
            self.insert(vm, first * line, min(chunk, lines - first) * line)

    def lookup(self, vm: int, offset: int, size: int) -> bool:
        """True if every line of the I/O is cached; a hit refreshes their recency."""
        if len(self._whole):
            if self._in_whole(vm, offset, size):
                self.hits += 1
                return True
            self._fill_whole()
        line = self.line
        first = offset // line
        lines = (offset + size - 1) // line - first + 1
        key = (vm << _VM_SHIFT) + first
        slots = self._slots
        log = self._log
        mask = self._mask
        # _spread(key) and _slot inlined: the hot path
        spread = (first + (vm * _VM_MIX & _VM_OFFSET_MASK)) * _LINE_MIX
        if lines == 1:  # the common case, without the list of slots
            slot = (spread ^ spread >> _FOLD) & mask
            position: int = slots[slot]
            while position and log[position] != key:  # (position 0: an empty slot)
                slot = (slot + 1) & mask
                position = slots[slot]
            if not position:
                self.misses += 1
                return False
            log[position] = _DEAD
            slots[slot] = i32(len(log))
            log = append(log, key)
        else:
            found: list[int] = []
            for _ in range(lines):
                slot = (spread ^ spread >> _FOLD) & mask
                position = slots[slot]
                while position and log[position] != key:
                    slot = (slot + 1) & mask
                    position = slots[slot]
                if not position:
                    self.misses += 1
                    return False
                found.append(slot)
                key += 1
                spread += _LINE_MIX
            for slot in found:
                position = slots[slot]
                slots[slot] = i32(len(log))
                log = append(log, log[position])
                log[position] = _DEAD
        self._log = log
        self._dead += lines
        self.hits += 1
        if self._head + self._dead > self._count + _LOG_SLACK:
            self._compact_log()
        return True

    def holds(self, vm: int, offset: int, size: int) -> bool:
        """True if every line of the I/O is cached; neither counted nor refreshed (a moved VM's
        old host asked for a remote hit: its own reads no longer run here)."""
        if len(self._whole):
            return self._in_whole(vm, offset, size)  # (no line entries beside them)
        first, end = self._keys(vm, offset, size)
        return all(self._find(key) >= 0 for key in range(first, end))

    def discard(self, vm: int, offset: int, size: int) -> None:
        """Drop the I/O's lines (a moved VM wrote them on its new host: this copy is stale)."""
        if len(self._whole):
            self._fill_whole()
        first, end = self._keys(vm, offset, size)
        for key in range(first, end):
            slot = self._find(key)
            if slot >= 0:
                self._log[i64(self._slots[slot])] = _DEAD
                self._dead += 1
                self._remove(slot)
        if self._head + self._dead > self._count + _LOG_SLACK:
            self._compact_log()

    def insert(self, vm: int, offset: int, size: int) -> None:
        """Cache the I/O's lines as the most recently used (refreshing those present), then evict
        the least recently used lines past ``capacity_lines``."""
        if len(self._whole):
            if self._in_whole(vm, offset, size):
                return  # every line held: refreshed, and recency decides nothing here
            self._fill_whole()
        line = self.line
        first = offset // line
        lines = (offset + size - 1) // line - first + 1
        # an I/O as large as the index: room for every line
        while self._count + lines >= len(self._slots):
            self._grow()
        key = (vm << _VM_SHIFT) + first
        slots = self._slots
        log = self._log
        mask = self._mask
        # _spread(key) and _slot inlined
        spread = (first + (vm * _VM_MIX & _VM_OFFSET_MASK)) * _LINE_MIX
        refreshed = 0
        for _ in range(lines):
            slot = (spread ^ spread >> _FOLD) & mask
            position: int = slots[slot]
            while position and log[position] != key:  # (position 0: an empty slot)
                slot = (slot + 1) & mask
                position = slots[slot]
            if position:
                log[position] = _DEAD
                refreshed += 1
            slots[slot] = i32(len(log))
            log = append(log, key)
            key += 1
            spread += _LINE_MIX
        self._log = log
        self._dead += refreshed
        inserted = lines - refreshed
        if inserted:
            self._count += inserted
            self.inserted_lines += inserted
            if self._count > self.capacity_lines:
                self.evicted_lines += self._count - self.capacity_lines
                self._evict(self._count - self.capacity_lines)
            if 2 * self._count > len(self._slots):
                self._grow()
        if self._head + self._dead > self._count + _LOG_SLACK:
            self._compact_log()

    def clear(self) -> None:
        """Forget every line: the device holding them failed (``device_failure``); not counted as
        evictions. The index and the log go back to their smallest."""
        self._whole = vec[i64]()
        self._slots = _empty_slots(_MIN_SLOTS)
        self._mask = _MIN_SLOTS - 1
        self._log = vec[i64]([_DEAD])
        self._head = 1
        self._dead = 0
        self._count = 0

    def recency(self) -> list[tuple[int, int]]:
        """The cached lines as (vm, line index) pairs, least recently used first (lines held whole:
        in the order of their fill)."""
        whole = self._whole
        if len(whole):
            return [(vm, index) for vm in range(len(whole)) for index in range(whole[vm])]
        log = self._log
        return [
            (log[position] >> _VM_SHIFT, log[position] & _LINE_MASK)
            for position in range(self._head, len(log))
            if log[position] != _DEAD
        ]

    @property
    def occupied_bytes(self) -> int:
        whole = self._whole
        return (self._count + sum([whole[vm] for vm in range(len(whole))])) * self.line

    @property
    def memory_bytes(self) -> int:
        """Bytes the index and the log hold (their entries: a vector's spare room, up to about
        a quarter of the log more, is not counted)."""
        return 4 * len(self._slots) + 8 * len(self._log) + 8 * len(self._whole)
