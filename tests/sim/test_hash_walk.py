"""A hash-ordered destager's writes and dirty blocks (simcache.sim.components.pending.HashWalk):
columns in a pool and two column heaps, exactly the heapq heaps of tuples and the dict of writes
the destager used before.

Every batch of ``order = "hash"`` depends on which blocks the walk holds and in what order, and a
vMotion's hand-over lists the untaken writes in the heaps' array order, so the walk runs side by
side with the former model (:class:`ReferenceWalk`: ``heapq`` on (hash, tick, number, vm, offset,
size) tuples, a dict of [write, bytes left]) through random pushes (blocks dirtied again, writes
spanning blocks, writes of 2 GiB and more), batches taken and released in any order, rewrites of
the holders, hand-overs, failures, the pool and the heaps growing and shrinking; the heaps' arrays,
the writes in arrival order and everything returned compared after each step.
"""

from __future__ import annotations

import heapq
import tracemalloc
from collections import Counter
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from librt.vecs import vec
from mypy_extensions import i64
from support.hosts import bare_hosts

from simcache.sim.components import hash_walk as hash_walk_module
from simcache.sim.components.hash_walk import HashWalk, block_hash, undestaged
from simcache.sim.components.pending import MIN_ROOM

KIB = 1024
GIB = 1 << 30


PEERS: list[Any] = bare_hosts(3)
HOLDER_SETS: list[tuple[Any, ...]] = [(PEERS[0],), (PEERS[1],), (PEERS[0], PEERS[1]), ()]


class ReferenceWalk:
    """The destager's hash walk before the columns (its code then, method by method)."""

    def __init__(self, unit: int) -> None:
        self.unit = unit
        self.walk: list[tuple[int, ...]] = []
        self.behind: list[tuple[int, ...]] = []
        self.cursor = 0
        self.ticks = 0
        self.writes: dict[int, list[Any]] = {}

    def push(self, item: tuple[Any, ...]) -> int:
        number = self.ticks
        self.writes[number] = [item, item[2]]
        vm, offset, size = item[:3]
        end = offset + size
        while offset < end:
            block = offset // self.unit
            piece_end = min(end, (block + 1) * self.unit)
            key = block_hash(vm, block)
            heapq.heappush(
                self.walk if key >= self.cursor else self.behind,
                (key, self.ticks, number, vm, offset, piece_end - offset),
            )
            self.ticks += 1
            offset = piece_end
        self.ticks += 1
        return number

    def next_block(self) -> tuple[int, ...] | None:
        if not self.walk:
            if not self.behind:
                return None
            self.walk, self.behind = self.behind, self.walk
            self.cursor = 0
        return self.walk[0]

    def take(self, limit: int) -> tuple[list[Any], list[tuple[int, int]]]:
        """The destager's ``_take_blocks`` without the watermark floor."""
        pieces: list[Any] = []
        owners: list[tuple[int, int]] = []
        total = 0
        block = self.next_block()
        while block is not None:
            key = block[0]
            if pieces and total + block[5] > limit:
                break
            while block is not None and block[0] == key:
                heapq.heappop(self.walk)
                self.cursor = key
                pieces.append((block[3], block[4], block[5], (), False))
                owners.append((block[2], block[5]))
                total += block[5]
                block = self.walk[0] if self.walk else None
            block = self.next_block()
        return pieces, owners

    def release(self, number: int, size: int) -> Any:
        entry = self.writes[number]
        entry[1] -= size
        if entry[1] == 0:
            del self.writes[number]
            return entry[0]
        return None

    def untaken(self, vm: int) -> list[int]:
        queued: Counter[int] = Counter()
        for block in (*self.walk, *self.behind):
            if block[3] == vm:
                queued[block[2]] += block[5]
        return [number for number, size in queued.items() if size == self.writes[number][0][2]]

    def remove(self, numbers: set[int]) -> None:
        for number in numbers:
            del self.writes[number]
        self.walk = [block for block in self.walk if block[2] not in numbers]
        self.behind = [block for block in self.behind if block[2] not in numbers]
        heapq.heapify(self.walk)
        heapq.heapify(self.behind)

    def drain(self) -> list[tuple[Any, ...]]:
        """What ``fail`` returned: each write as its bytes not yet on the array, oldest first."""
        items = []
        for item, left in self.writes.values():
            done = item[2] - left
            items.append(item if not done else (item[0], item[1] + done, left, *item[3:]))
        self.writes.clear()
        self.walk.clear()
        self.behind.clear()
        return items


def heap_rows(walk: HashWalk, heap: Any) -> list[tuple[int, ...]]:
    """A column heap's array as the reference's tuples."""
    rows = []
    for i in range(heap.count):
        slot, piece = heap.slot[i], heap.piece[i]
        number = walk._number[slot]
        start, size = walk._piece(slot, piece)
        key = heap.key[i] + hash_walk_module._SIGN
        rows.append((key, number + piece, number, walk._vm[slot], start, size))
    return rows


class WalkMachine(RuleBasedStateMachine):
    """Random operations on the walk and on the reference, compared after each."""

    walk: HashWalk
    reference: ReferenceWalk

    @initialize(unit=st.sampled_from([8 * KIB, GIB]))
    def start(self, unit: int) -> None:
        self.walk = HashWalk(unit)
        self.reference = ReferenceWalk(unit)
        self.unit = unit
        self.numbers: dict[int, int] = {}  # slot -> the reference's number of its write
        self.in_flight: list[list[tuple[int, int, int]]] = []  # (slot, number, size) a batch

    @rule(
        vm=st.integers(0, 2),
        block=st.integers(0, 40),
        size=st.sampled_from([512, 4 * KIB, 12 * KIB, 2 * GIB + 4 * KIB]),
        holders=st.sampled_from(HOLDER_SETS),
        times=st.integers(1, 30),
    )
    def push(self, vm: int, block: int, size: int, holders: tuple[Any, ...], times: int) -> None:
        """Writes of 512 B steps (so 8 KiB blocks are dirtied again and again, by writes that
        start inside them or span them); writes of 2 GiB and more only with 1 GiB blocks."""
        if size > GIB and self.unit < GIB:
            size = 20 * KIB
        for n in range(times):
            item = (vm, (block + 3 * n) * 512, size, holders, not holders)
            slot = self.walk.push(item)
            self.numbers[slot] = self.reference.push(item)

    @rule(limit=st.sampled_from([512, 8 * KIB, 32 * KIB, 4 * GIB]))
    def take(self, limit: int) -> None:
        pieces: list[Any] = []
        owners: list[tuple[int, int]] = []
        total = 0
        while self.walk.ready():
            if pieces and total + self.walk.head_size() > limit:
                break
            total += self.walk.take_block(pieces, owners)
        expected_pieces, expected_owners = self.reference.take(limit)
        assert pieces == expected_pieces
        assert [(self.numbers[slot], size) for slot, size in owners] == expected_owners
        if owners:
            self.in_flight.append([(slot, self.numbers[slot], size) for slot, size in owners])

    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        """A batch in flight reaches the array (batches finish in any order)."""
        if not self.in_flight:
            return
        batch = self.in_flight.pop(data.draw(st.integers(0, len(self.in_flight) - 1)))
        for slot, number, size in batch:
            assert self.walk.release(slot, size) == self.reference.release(number, size)

    @rule(data=st.data(), holders=st.sampled_from(HOLDER_SETS))
    def rewrite(self, data: st.DataObject, holders: tuple[Any, ...]) -> None:
        """A write's holders rewritten in place (a peer died, a resync added one)."""
        slots = self.walk.arrival()
        if not slots:
            return
        slot = slots[data.draw(st.integers(0, len(slots) - 1))]
        entry = self.reference.writes[self.numbers[slot]]
        entry[0] = (*entry[0][:3], holders, not holders)
        self.walk[slot] = entry[0]

    @rule(vm=st.integers(0, 2), data=st.data())
    def hand_over(self, vm: int, data: st.DataObject) -> None:
        """Some of a VM's untaken writes leave (a vMotion with hand-over)."""
        slots = self.walk.untaken(vm)
        assert [self.numbers[slot] for slot in slots] == self.reference.untaken(vm)
        assert [self.walk.write(slot) for slot in slots] == [
            self.reference.writes[number][0] for number in self.reference.untaken(vm)
        ]
        moved = [slot for slot in slots if data.draw(st.booleans())]
        self.walk.remove(moved)
        self.reference.remove({self.numbers[slot] for slot in moved})

    @rule()
    def fail(self) -> None:
        """The host dies: every write comes back, oldest first, with its bytes not yet on the
        array, and as those bytes alone (:func:`undestaged`; the destager has the replica
        holders drop the rest)."""
        expected = self.reference.drain()
        lefts = [self.walk._left_of(slot) for slot in self.walk.arrival()]
        drained = self.walk.drain()
        assert [left for _, left in drained] == lefts
        assert [undestaged(item, left) for item, left in drained] == expected
        self.in_flight.clear()

    @invariant()
    def same(self) -> None:
        walk, reference = self.walk, self.reference
        assert heap_rows(walk, walk._walk) == reference.walk
        assert heap_rows(walk, walk._behind) == reference.behind
        assert walk._cursor + hash_walk_module._SIGN == reference.cursor
        assert [self.numbers[slot] for slot in walk.arrival()] == list(reference.writes)
        assert [walk.write(slot) for slot in walk.arrival()] == [
            item for item, _ in reference.writes.values()
        ]
        assert len(walk) == len(reference.writes)
        assert walk._big_size.keys() == walk._big_left.keys()
        for heap in (walk._walk, walk._behind):
            assert heap.count <= heap.room <= max(MIN_ROOM, 4 * heap.count)


TestWalkMachine = WalkMachine.TestCase
TestWalkMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


def test_slots_are_reused_and_the_pool_empties_to_its_smallest() -> None:
    """A write's slot is free for the next write once its blocks are on the array; the pool
    grows by half when no slot is free (16, 24, 36, ...) and goes back to 16 when empty."""
    walk = HashWalk(4 * KIB)
    slots = [walk.push((0, n * 4 * KIB, 4 * KIB, (), True)) for n in range(40)]
    assert slots == list(range(40)) and walk._room == 54
    assert walk.release(slots[7], 4 * KIB) == (0, 7 * 4 * KIB, 4 * KIB, (), True)
    assert walk.push((1, 0, 4 * KIB, (), True)) == 7
    for n in range(40):
        assert walk.release(n, 4 * KIB) is not None
    assert walk.count == 0 and walk._room == MIN_ROOM


def test_bytes_per_write() -> None:
    """32 bytes a slot of the pool and 16 a block of a heap: a write of one block 48 bytes, up to
    1.5 times that while the columns grow, plus the empty heap's smallest room (16 places of 16
    bytes, over at least 1,000 writes); by tracemalloc (which also sees the vectors' headers and
    the holder table) at most 48 x 1.5 after 100,000 writes."""
    peers = (PEERS[0],)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    walk = HashWalk(4 * KIB)
    worst = 0.0
    for n in range(100_000):
        walk.push((n % 16, n * 4 * KIB, 4 * KIB, peers, False))
        if n >= 1000:
            worst = max(worst, walk.memory_bytes / walk.count)
    allocated = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert worst <= 48 * 1.5 + 16 * MIN_ROOM / 1000
    assert allocated / walk.count <= 48 * 1.5


def test_a_drop_of_most_blocks_gives_back_their_room() -> None:
    """Dropping 36 of 40 blocks at once leaves the heap's room at most four times the 4 kept (or
    its minimum), as one block at a time would: one halving is not enough after a big drop (the
    state machine found 18 places for 4 blocks)."""
    heap = hash_walk_module._BlockHeap()
    numbers = vec[i64]([0] * 40)
    for slot in range(40):
        heap.push(block_hash(0, slot) - hash_walk_module._SIGN, slot, 0, numbers)
    grown = heap.room
    heap.drop(set(range(36)), numbers)
    assert heap.count == 4 and grown > 4 * 4 * 2
    assert heap.room <= max(MIN_ROOM, 4 * heap.count)
    assert sorted(heap.slot[i] for i in range(heap.count)) == [36, 37, 38, 39]
