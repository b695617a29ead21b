"""The writes of a destager with ``order = "hash"`` (:class:`HashWalk`): each cut into the blocks
of a hash-indexed cache and taken in the order of the blocks' hash (:func:`block_hash`), a write
of which part is on the array handed on as the rest alone (:func:`undestaged`).

Columns of machine integers (``librt.vecs.vec``), no Python object per write or block, as in the
arrival-order queue (:class:`simcache.sim.components.pending.WriteQueue`).
"""

from __future__ import annotations

from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i32, i64

from simcache.sim.components.pending import (
    MIN_ROOM,
    WRITE_HOLDERS,
    WRITE_OFFSET,
    WRITE_SINGLE,
    WRITE_SIZE,
    WRITE_VM,
    HolderSets,
    PendingWrite,
)

__all__ = ["HashWalk", "block_hash", "undestaged"]


def undestaged(item: PendingWrite, left: int) -> PendingWrite:
    """A hash-walk write ``item`` with ``left`` of its bytes not yet on the array, as the write of
    those bytes alone.

    Its blocks are destaged one by one, so a write spanning several can be partly on the array when
    its host dies: the part already there is neither lost nor handed over (the destager has the
    replica holders drop their copy of it). The bytes left are counted exactly; they are placed at
    the write's tail (which blocks they are is not kept)."""
    done = item[WRITE_SIZE] - left
    if not done:
        return item
    return (
        item[WRITE_VM],
        item[WRITE_OFFSET] + done,
        left,
        item[WRITE_HOLDERS],
        item[WRITE_SINGLE],
    )


_MASK64: Final = (1 << 64) - 1


def block_hash(vm: int, block: int) -> int:
    """Where block ``block`` of VM ``vm``'s disk sits in a hash-indexed cache's walk (``order =
    "hash"``): splitmix64's finalizer of the pair, a fixed order unrelated to the block's
    address."""
    x = ((vm + 1) * 0x9E3779B97F4A7C15 + block) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


_SIGN: Final = 1 << 63  # a block's hash less this is its key: a signed 64-bit number, same order
_I32_MAX: Final = (1 << 31) - 1


def _grown_i64(column: vec[i64], room: int) -> vec[i64]:
    """``column`` copied into ``room`` places (the new ones 0)."""
    out = vec[i64](capacity=room)
    for value in column:
        out = append(out, value)
    for _ in range(room - len(column)):
        out = append(out, 0)
    return out


def _grown_i32(column: vec[i32], room: int) -> vec[i32]:
    """``column``'s first ``room`` places, or all of them and 0s up to ``room``."""
    out = vec[i32](capacity=room)
    keep = min(room, len(column))
    for i in range(keep):
        out = append(out, column[i])
    for _ in range(room - keep):
        out = append(out, 0)
    return out


def _cut_i64(column: vec[i64], room: int) -> vec[i64]:
    """``column``'s first ``room`` places, or all of them and 0s up to ``room``."""
    if room >= len(column):
        return _grown_i64(column, room)
    out = vec[i64](capacity=room)
    for i in range(room):
        out = append(out, column[i])
    return out


class _BlockHeap:
    """Dirty blocks of a hash walk as a binary heap: three columns (the block's key, its write's
    slot in the pool, the piece's index in the write: 16 bytes a block), no object per block.

    Ordered by key, then by the piece's arrival tick (its write's number, which the caller's
    ``number`` column gives, plus its index: unique). Sifted exactly as :mod:`heapq` sifts a list
    of the tuples (key, tick, ...), so the array holds the blocks in the same order as such a list
    would: what a walk of the array (:meth:`HashWalk.untaken`) sees is the same. The columns grow
    by half when full and halve when less than a quarter full."""

    def __init__(self) -> None:
        self.count = 0
        self.room = MIN_ROOM
        self.key: vec[i64] = vec[i64]([0] * MIN_ROOM)
        self.slot: vec[i32] = vec[i32]([0] * MIN_ROOM)
        self.piece: vec[i32] = vec[i32]([0] * MIN_ROOM)

    def _resize(self, room: int) -> None:
        self.key = _cut_i64(self.key, room)
        self.slot = _grown_i32(self.slot, room)
        self.piece = _grown_i32(self.piece, room)
        self.room = room

    def _below(self, i: int, j: int, number: vec[i64]) -> bool:
        """Whether the block at ``i`` comes before the one at ``j``."""
        key = self.key
        ki: i64 = key[i]
        kj: i64 = key[j]
        if ki != kj:
            return ki < kj
        slot = self.slot
        piece = self.piece
        tick_i: i64 = number[i64(slot[i])] + i64(piece[i])
        return tick_i < number[i64(slot[j])] + i64(piece[j])

    def _sift_down(self, start: int, position: int, number: vec[i64]) -> None:
        """heapq's ``_siftdown``: the block at ``position`` moved up towards ``start`` to its
        place."""
        key = self.key
        slot = self.slot
        piece = self.piece
        new_key: i64 = key[position]
        new_slot: i32 = slot[position]
        new_piece: i32 = piece[position]
        new_tick: i64 = number[i64(new_slot)] + i64(new_piece)
        while position > start:
            parent = (position - 1) >> 1
            parent_key: i64 = key[parent]
            if new_key < parent_key or (
                new_key == parent_key and new_tick < number[i64(slot[parent])] + i64(piece[parent])
            ):
                key[position] = parent_key
                slot[position] = slot[parent]
                piece[position] = piece[parent]
                position = parent
                continue
            break
        key[position] = new_key
        slot[position] = new_slot
        piece[position] = new_piece

    def _sift_up(self, position: int, number: vec[i64]) -> None:
        """heapq's ``_siftup``: the block at ``position`` taken down the smaller children to a leaf,
        then back up to its place."""
        key = self.key
        slot = self.slot
        piece = self.piece
        end = self.count
        start = position
        new_key: i64 = key[position]
        new_slot: i32 = slot[position]
        new_piece: i32 = piece[position]
        child = 2 * position + 1
        while child < end:
            right = child + 1
            if right < end and not self._below(child, right, number):
                child = right
            key[position] = key[child]
            slot[position] = slot[child]
            piece[position] = piece[child]
            position = child
            child = 2 * position + 1
        key[position] = new_key
        slot[position] = new_slot
        piece[position] = new_piece
        self._sift_down(start, position, number)

    def push(self, key: int, slot: int, piece: int, number: vec[i64]) -> None:
        """heapq's ``heappush``."""
        if self.count == self.room:
            self._resize(self.room + self.room // 2)
        position = self.count
        self.key[position] = key
        self.slot[position] = slot
        self.piece[position] = piece
        self.count += 1
        self._sift_down(0, position, number)

    def pop(self, number: vec[i64]) -> None:
        """heapq's ``heappop``, the first block dropped (read it first)."""
        self.count -= 1
        last = self.count
        if last:
            self.key[0] = self.key[last]
            self.slot[0] = self.slot[last]
            self.piece[0] = self.piece[last]
            self._sift_up(0, number)
        if 4 * self.count < self.room and self.room > MIN_ROOM:
            self._shrink()

    def _shrink(self) -> None:
        """Halve the room until a quarter of it is at most the blocks held (or it is
        ``MIN_ROOM``): a :meth:`drop` can take many blocks at once."""
        room = self.room
        while 4 * self.count < room and room > MIN_ROOM:
            room = max(MIN_ROOM, room // 2)
        self._resize(room)

    def drop(self, slots: set[int], number: vec[i64]) -> None:
        """Remove the blocks of the writes in ``slots``, the others kept in their order, then
        heapq's ``heapify``."""
        key = self.key
        slot = self.slot
        piece = self.piece
        kept = 0
        for i in range(self.count):
            if slot[i] not in slots:
                key[kept] = key[i]
                slot[kept] = slot[i]
                piece[kept] = piece[i]
                kept += 1
        self.count = kept
        for i in range(kept // 2 - 1, -1, -1):
            self._sift_up(i, number)
        if 4 * self.count < self.room and self.room > MIN_ROOM:
            self._shrink()

    def clear(self) -> None:
        self.count = 0
        self._resize(MIN_ROOM)


class HashWalk:
    """The writes of a destager with ``order = "hash"`` and their dirty blocks: each write cut into
    the aligned blocks of ``unit`` bytes of its VM's disk it covers, taken in the order of the
    blocks' hash (:func:`block_hash`) by a cursor passing over the hash space; a block dirtied
    behind the cursor waits for the next pass. Columns of machine integers, no Python object per
    write or block.

    The writes sit in a pool of slots reused through a free list: VM, interned holder set
    (:class:`HolderSets`), size and bytes not yet on the array 4 bytes each, offset and the write's
    number (its arrival tick) 8: 32 bytes a slot. A write of 2 GiB or more keeps its size and bytes
    left in a dictionary instead (exact at any size). The blocks wait in two heaps (ahead of the
    cursor, behind it; :class:`_BlockHeap`, 16 bytes a block). A write of one block: 48 bytes, up
    to half as much again while the columns grow (each grows by half when full). The pool keeps its
    size until it is empty (its slots cannot move: batches in flight name them).

    A block's order is (hash, tick): the tick counts pieces as they arrive (a write's number is
    the tick of its first piece, and the tick skips one after each write). Given the same writes,
    the heaps hold the blocks in the same array order as :mod:`heapq` on tuples
    ``(hash, tick, number, vm, offset, size)`` does (the order :meth:`untaken` reports).
    """

    def __init__(self, unit: int) -> None:
        self.count = 0  # writes held
        self._unit = unit
        self._ticks = 0
        self._cursor = -_SIGN  # the walk's key: blocks with a key below it wait for the next pass
        self._sets = HolderSets()
        self._walk = _BlockHeap()  # blocks ahead of the cursor
        self._behind = _BlockHeap()  # blocks behind it: the next pass
        self._room = MIN_ROOM
        self._used = 0  # slots below this have held a write since the pool was last emptied
        self._free = -1  # the first free slot below _used (each free slot's _left: the next)
        self._vm: vec[i32] = vec[i32]([0] * MIN_ROOM)
        self._copies: vec[i32] = vec[i32]([0] * MIN_ROOM)
        self._size: vec[i32] = vec[i32]([0] * MIN_ROOM)  # -1: in _big_size
        self._left: vec[i32] = vec[i32]([0] * MIN_ROOM)  # -1: in _big_left
        self._offset: vec[i64] = vec[i64]([0] * MIN_ROOM)
        self._number: vec[i64] = vec[i64]([0] * MIN_ROOM)  # -1: a free slot
        self._big_size: dict[int, int] = {}
        self._big_left: dict[int, int] = {}

    def __len__(self) -> int:
        return self.count

    @property
    def memory_bytes(self) -> int:
        """Bytes the columns hold (32 a slot of the pool, 16 a place in a heap; the holder sets
        and writes of 2 GiB or more not counted)."""
        return 32 * self._room + 16 * (self._walk.room + self._behind.room)

    # -- the pool --

    def _new_slot(self) -> int:
        slot = self._free
        if slot >= 0:
            self._free = self._left[slot]
            return slot
        if self._used == self._room:
            room = self._room + self._room // 2
            self._vm = _grown_i32(self._vm, room)
            self._copies = _grown_i32(self._copies, room)
            self._size = _grown_i32(self._size, room)
            self._left = _grown_i32(self._left, room)
            self._offset = _grown_i64(self._offset, room)
            self._number = _grown_i64(self._number, room)
            self._room = room
        slot = self._used
        self._used += 1
        return slot

    def _free_slot(self, slot: int) -> None:
        self._number[slot] = -1
        if self._size[slot] < 0:
            del self._big_size[slot]
            del self._big_left[slot]
        self._left[slot] = self._free
        self._free = slot
        self.count -= 1
        if not self.count and self._room > MIN_ROOM:
            self._reset()

    def _reset(self) -> None:
        """Back to an empty pool of the smallest size."""
        self._room = MIN_ROOM
        self._used = 0
        self._free = -1
        self._vm = vec[i32]([0] * MIN_ROOM)
        self._copies = vec[i32]([0] * MIN_ROOM)
        self._size = vec[i32]([0] * MIN_ROOM)
        self._left = vec[i32]([0] * MIN_ROOM)
        self._offset = vec[i64]([0] * MIN_ROOM)
        self._number = vec[i64]([0] * MIN_ROOM)
        self._big_size.clear()
        self._big_left.clear()

    def _size_of(self, slot: int) -> int:
        size: int = self._size[slot]
        return size if size >= 0 else self._big_size[slot]

    def _left_of(self, slot: int) -> int:
        left: int = self._left[slot]
        return left if left >= 0 else self._big_left[slot]

    def write(self, slot: int) -> PendingWrite:
        """The write in ``slot``, as pushed (its holders as last set)."""
        holders, single = self._sets.pairs[self._copies[slot]]
        return (self._vm[slot], self._offset[slot], self._size_of(slot), holders, single)

    def __setitem__(self, slot: int, item: PendingWrite) -> None:
        """Rewrite the holders of the write in ``slot`` (a peer holding its replica died, a resync
        gave it another); its VM, offset and size stay."""
        if (item[0], item[1], item[2]) != (
            self._vm[slot],
            self._offset[slot],
            self._size_of(slot),
        ):
            raise ValueError(f"slot {slot} holds another write than {item[:3]}")
        self._copies[slot] = self._sets.number(item[3], item[4])

    def arrival(self) -> list[int]:
        """The slots of the writes held, oldest first."""
        number = self._number
        slots = [slot for slot in range(self._used) if number[slot] >= 0]
        slots.sort(key=lambda slot: number[slot])
        return slots

    # -- the walk --

    def push(self, item: PendingWrite) -> int:
        """File ``item``'s pieces under the blocks they fall in, ahead of or behind the cursor;
        return its slot."""
        slot = self._new_slot()
        self.count += 1
        vm: int = item[0]
        offset: int = item[1]
        size: int = item[2]
        number = self._ticks
        self._vm[slot] = vm
        self._copies[slot] = self._sets.number(item[3], item[4])
        self._offset[slot] = offset
        self._number[slot] = number
        if size <= _I32_MAX:
            self._size[slot] = size
            self._left[slot] = size
        else:
            self._size[slot] = -1
            self._left[slot] = -1
            self._big_size[slot] = size
            self._big_left[slot] = size
        unit = self._unit
        end = offset + size
        piece = 0
        numbers = self._number
        while offset < end:
            block = offset // unit
            key: i64 = block_hash(vm, block) - _SIGN
            heap = self._walk if key >= self._cursor else self._behind
            heap.push(key, slot, piece, numbers)
            piece += 1
            offset = (block + 1) * unit
        self._ticks += piece + 1
        return slot

    def _piece(self, slot: int, piece: int) -> tuple[int, int]:
        """Where piece ``piece`` of the write in ``slot`` starts, and its size."""
        unit = self._unit
        offset: int = self._offset[slot]
        end = offset + self._size_of(slot)
        block = offset // unit + piece
        start = offset if piece == 0 else block * unit
        stop = (block + 1) * unit
        if stop > end:
            stop = end
        return start, stop - start

    def ready(self) -> bool:
        """Whether a dirty block is left (starting a new pass when the current one is done)."""
        if not self._walk.count:
            if not self._behind.count:
                return False
            self._walk, self._behind = self._behind, self._walk
            self._cursor = -_SIGN
        return True

    def head_size(self) -> int:
        """The size of the next piece the walk takes (after :meth:`ready`)."""
        walk = self._walk
        return self._piece(walk.slot[0], walk.piece[0])[1]

    def take_block(self, pieces: list[PendingWrite], owners: list[tuple[int, int]]) -> int:
        """Take the next block's pieces out of the walk (after :meth:`ready`), the cursor moved
        on to it: each as a write (vm, offset, size, no holders) onto ``pieces``, and (its write's
        slot, its size) onto ``owners``. Returns their bytes."""
        walk = self._walk
        numbers = self._number
        key: i64 = walk.key[0]
        total = 0
        while walk.count and walk.key[0] == key:
            slot: int = walk.slot[0]
            start, size = self._piece(slot, walk.piece[0])
            walk.pop(numbers)
            self._cursor = key
            pieces.append((self._vm[slot], start, size, (), False))
            owners.append((slot, size))
            total += size
        return total

    def release(self, slot: int, size: int) -> PendingWrite | None:
        """``size`` bytes of the write in ``slot`` reached the array: the write if that was its
        last block (it leaves), else ``None``."""
        left: int = self._left[slot]
        if left >= 0:
            left -= size
            self._left[slot] = left
        else:
            left = self._big_left[slot] - size
            self._big_left[slot] = left
        if left:
            return None
        item = self.write(slot)
        self._free_slot(slot)
        return item

    def untaken(self, vm: int) -> list[int]:
        """The slots of VM ``vm``'s writes whose blocks are all still in the walk, in the order
        their first block appears in the heaps' arrays (ahead of the cursor, then behind it)."""
        queued: dict[int, int] = {}
        vms = self._vm
        for heap in (self._walk, self._behind):
            for i in range(heap.count):
                slot: int = heap.slot[i]
                if vms[slot] == vm:
                    size = self._piece(slot, heap.piece[i])[1]
                    queued[slot] = queued.get(slot, 0) + size
        return [slot for slot, size in queued.items() if size == self._size_of(slot)]

    def remove(self, slots: list[int]) -> None:
        """Take the writes in ``slots`` (each with every block still in the walk) out."""
        gone = set(slots)
        numbers = self._number
        self._walk.drop(gone, numbers)
        self._behind.drop(gone, numbers)
        for slot in slots:
            self._free_slot(slot)

    def drain(self) -> list[tuple[PendingWrite, int]]:
        """Every write held, oldest first, with its bytes not yet on the array; the walk left
        empty (the cursor and the ticks go on)."""
        items = [(self.write(slot), self._left_of(slot)) for slot in self.arrival()]
        self.count = 0
        self._walk.clear()
        self._behind.clear()
        self._reset()
        return items
