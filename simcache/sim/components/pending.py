"""What a destager holds and hands on: a pending write (:data:`PendingWrite`) and the same write
once a replica holder has died (:func:`without`); the pending writes in arrival order
(:class:`WriteQueue`), their holder sets stored once (:class:`HolderSets`); and a batch a flusher
took (:class:`FlushBatch`, cut into array requests by :func:`pieces`). The writes of a
hash-indexed cache wait in :class:`simcache.sim.components.hash_walk.HashWalk` instead.

Values, pure functions and the arrival-order containers, shared by the destager
(:mod:`simcache.sim.components.destager`), its flushers (:mod:`simcache.sim.components.flusher`),
the hosts, the VMs and the failure events that hand writes over.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from librt.vecs import append, vec
from mypy_extensions import i32, i64

if TYPE_CHECKING:
    from simcache.sim.components.array import Run
    from simcache.sim.components.host import Host

__all__ = [
    "MIN_ROOM",
    "WRITE_HOLDERS",
    "WRITE_OFFSET",
    "WRITE_SINGLE",
    "WRITE_SIZE",
    "WRITE_VM",
    "FlushBatch",
    "HolderSets",
    "PendingWrite",
    "WriteQueue",
    "pieces",
    "without",
]

# (vm id, offset, size, hosts holding replicas, single copy?)
PendingWrite = tuple[int, int, int, tuple["Host", ...], bool]
# Where each field of a PendingWrite sits (a tuple: the destager holds millions; named fields would
# cost an object each).
WRITE_VM: Final = 0
WRITE_OFFSET: Final = 1
WRITE_SIZE: Final = 2
WRITE_HOLDERS: Final = 3
WRITE_SINGLE: Final = 4


def without(item: PendingWrite, dead: Host) -> PendingWrite:
    """``item`` with ``dead`` no longer among the hosts holding its replicas (a single copy if
    none is left)."""
    kept = tuple(h for h in item[WRITE_HOLDERS] if h is not dead)
    return (item[WRITE_VM], item[WRITE_OFFSET], item[WRITE_SIZE], kept, not kept)


def pieces(run: Run, limit: int) -> list[Run]:
    """A run cut into array requests of at most ``limit`` bytes (a single write larger than
    ``max_batch``), in order."""
    vm, offset, length = run
    return [(vm, offset + start, min(limit, length - start)) for start in range(0, length, limit)]


class FlushBatch:
    """A batch a flusher took: its writes (``items``), their hash-walk owners (``order =
    "hash"``), their bytes, and the runs they coalesce to, of ``unique_bytes`` (overwrites within
    the batch are read and sent once)."""

    __slots__ = ("items", "nbytes", "owners", "runs", "unique_bytes")

    def __init__(
        self, items: list[PendingWrite], owners: list[tuple[int, int]], nbytes: int, runs: list[Run]
    ):
        self.items = items
        self.owners = owners
        self.nbytes = nbytes
        self.runs = runs
        unique_bytes = 0
        for run in runs:
            unique_bytes += run[2]
        self.unique_bytes = unique_bytes


MIN_ROOM: Final = 16  # a store's smallest size (writes, blocks)


class HolderSets:
    """The distinct (hosts holding replicas, single copy?) pairs of a buffer's writes, each stored
    once and known by its number (a run has a handful: the peers each VM replicates to, and what is
    left of them after failures)."""

    def __init__(self) -> None:
        # the pairs, by number and by value
        self.pairs: list[tuple[tuple[Host, ...], bool]] = []
        self._numbers: dict[tuple[tuple[Host, ...], bool], int] = {}
        # the last pair interned: a VM's writes share its peers' tuple
        self._last_holders: tuple[Host, ...] | None = None
        self._last_single = False
        self._last_number = 0

    def number(self, holders: tuple[Host, ...], single: bool) -> int:
        """The number of the pair (``holders``, ``single``) (added if new)."""
        if holders is self._last_holders and single == self._last_single:
            return self._last_number
        key = (holders, single)
        number = self._numbers.get(key, -1)
        if number < 0:
            number = len(self.pairs)
            self.pairs.append(key)
            self._numbers[key] = number
        self._last_holders = holders
        self._last_single = single
        self._last_number = number
        return number


class WriteQueue:
    """Writes waiting in a destage buffer, oldest first, each with the time it entered: columns
    of machine integers, no Python object per write.

    ``count`` is how many there are. :meth:`push` adds one at the tail, :meth:`pop` takes the
    oldest; ``queue[i]`` is the ``i``-th oldest write, and ``queue[i] = item`` rewrites it in place
    (a peer holding its replica died, a resync gave it another).

    A write is five numbers: its VM, offset and size, which set of hosts holds its replicas (with
    its single-copy flag), and when it entered. Each is one ``librt.vecs.vec`` (compiled by mypyc,
    their reads and writes are C array accesses) used as a ring: the oldest write at ``_head``, the
    others after it, wrapping round. The holder sets are interned (:class:`HolderSets`): each
    distinct (holders, single copy?) pair is stored once and a write keeps its 4-byte number.

    32 bytes a write (4 + 8 + 8 + 4 + 8); the ring grows by half when full and halves when less
    than a quarter full, so it holds 32 to 48 bytes per write while it grows (at most 128 while it
    empties). A write's tuple (:data:`PendingWrite`) is made again when it is read, equal to the one
    pushed (its holders tuple is the interned one: the same hosts in the same order).
    """

    def __init__(self) -> None:
        self.count = 0
        self._head = 0  # ring position of the oldest write
        self._room = MIN_ROOM  # ring size
        self._vm: vec[i32] = vec[i32]([0] * MIN_ROOM)
        self._offset: vec[i64] = vec[i64]([0] * MIN_ROOM)
        self._size: vec[i64] = vec[i64]([0] * MIN_ROOM)
        self._copies: vec[i32] = vec[i32]([0] * MIN_ROOM)  # the write's number in _sets
        self._since: vec[float] = vec[float]([0.0] * MIN_ROOM)
        self._sets = HolderSets()

    def __len__(self) -> int:
        return self.count

    def _at(self, i: int) -> int:
        """The ring position of the ``i``-th oldest write (``0 <= i < count``)."""
        if not 0 <= i < self.count:
            raise IndexError(f"write {i} of a queue of {self.count}")
        position = self._head + i
        if position >= self._room:
            position -= self._room
        return position

    def _resize(self, room: int) -> None:
        """Move the writes to a ring of ``room`` places (at least ``count``), oldest first at
        place 0."""
        vm = vec[i32](capacity=room)
        offset = vec[i64](capacity=room)
        size = vec[i64](capacity=room)
        copies = vec[i32](capacity=room)
        since = vec[float](capacity=room)
        position = self._head
        for _ in range(self.count):
            vm = append(vm, self._vm[position])
            offset = append(offset, self._offset[position])
            size = append(size, self._size[position])
            copies = append(copies, self._copies[position])
            since = append(since, self._since[position])
            position += 1
            if position == self._room:
                position = 0
        for _ in range(room - self.count):
            vm = append(vm, 0)
            offset = append(offset, 0)
            size = append(size, 0)
            copies = append(copies, 0)
            since = append(since, 0.0)
        self._vm, self._offset, self._size, self._copies, self._since = (
            vm,
            offset,
            size,
            copies,
            since,
        )
        self._head = 0
        self._room = room

    def push(self, item: PendingWrite, since: float) -> None:
        """Add ``item`` (entered at ``since``) as the newest write."""
        if self.count == self._room:
            self._resize(self._room + self._room // 2)
        position = self._head + self.count
        if position >= self._room:
            position -= self._room
        self._vm[position] = item[0]
        self._offset[position] = item[1]
        self._size[position] = item[2]
        self._copies[position] = self._sets.number(item[3], item[4])
        self._since[position] = since
        self.count += 1

    def _item(self, position: int) -> PendingWrite:
        holders, single = self._sets.pairs[self._copies[position]]
        return (
            self._vm[position],
            self._offset[position],
            self._size[position],
            holders,
            single,
        )

    def head_size(self) -> int:
        """The oldest write's size (the queue is not empty)."""
        return self._size[self._at(0)]

    def head_since(self) -> float:
        """When the oldest write entered (the queue is not empty)."""
        return self._since[self._at(0)]

    def pop(self) -> PendingWrite:
        """Take the oldest write out."""
        item = self._item(self._at(0))
        self._head += 1
        if self._head == self._room:
            self._head = 0
        self.count -= 1
        if 4 * self.count < self._room and self._room > MIN_ROOM:
            self._resize(max(MIN_ROOM, self._room // 2))
        return item

    def since(self, i: int) -> float:
        """When the ``i``-th oldest write entered."""
        return self._since[self._at(i)]

    def __getitem__(self, i: int) -> PendingWrite:
        return self._item(self._at(i))

    def __setitem__(self, i: int, item: PendingWrite) -> None:
        position = self._at(i)
        self._vm[position] = item[0]
        self._offset[position] = item[1]
        self._size[position] = item[2]
        self._copies[position] = self._sets.number(item[3], item[4])

    def __iter__(self) -> Iterator[PendingWrite]:
        for i in range(self.count):
            yield self._item(self._at(i))

    def clear(self) -> None:
        """Drop every write (the ring back to its smallest)."""
        self.count = 0
        self._resize(MIN_ROOM)

    @property
    def memory_bytes(self) -> int:
        """Bytes the columns hold (32 a place of the ring; the holder sets' table not
        counted)."""
        return 32 * self._room
