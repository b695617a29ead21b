"""The hosts' read cache (simcache.sim.components.cache.ReadCache): exactly an LRU, in a few bytes a
line once large.

The cache keeps its lines in two vectors of machine integers from the first line on (a recency log
and a hash index of log positions). Every simulation result depends on which lines it holds and
evicts, so these tests run it side by side with the ``OrderedDict`` LRU (:class:`ReferenceLRU`, the
original implementation's logic verbatim) and require the same answers, counters, cached lines and
recency order after every operation, through index growth, removals (eviction, ``discard``) and
log compaction.
"""

from __future__ import annotations

import random
import tracemalloc
from collections import OrderedDict

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from simcache.sim.components import cache as cache_module
from simcache.sim.components.cache import ReadCache

LINE = 4096
VM_SHIFT = 40


class ReferenceLRU:
    """The ``OrderedDict`` read cache the array version replaced, operation by operation."""

    def __init__(self, capacity_lines: int, line_bytes: int) -> None:
        self.line = line_bytes
        self.capacity_lines = capacity_lines
        self.lines: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.inserted_lines = 0
        self.evicted_lines = 0

    def _keys(self, vm: int, offset: int, size: int) -> range:
        base = vm << VM_SHIFT
        return range(base + offset // self.line, base + (offset + size - 1) // self.line + 1)

    def lookup(self, vm: int, offset: int, size: int) -> bool:
        keys = self._keys(vm, offset, size)
        if any(key not in self.lines for key in keys):
            self.misses += 1
            return False
        for key in keys:
            self.lines.move_to_end(key)
        self.hits += 1
        return True

    def holds(self, vm: int, offset: int, size: int) -> bool:
        return all(key in self.lines for key in self._keys(vm, offset, size))

    def discard(self, vm: int, offset: int, size: int) -> None:
        for key in self._keys(vm, offset, size):
            self.lines.pop(key, None)

    def insert(self, vm: int, offset: int, size: int) -> None:
        inserted = 0
        for key in self._keys(vm, offset, size):
            if key in self.lines:
                self.lines.move_to_end(key)
            else:
                self.lines[key] = None
                inserted += 1
        if inserted:
            self.inserted_lines += inserted
            while len(self.lines) > self.capacity_lines:
                self.lines.popitem(last=False)
                self.evicted_lines += 1

    def clear(self) -> None:
        self.lines.clear()

    @property
    def occupied_bytes(self) -> int:
        return len(self.lines) * self.line

    def recency(self) -> list[tuple[int, int]]:
        return [(key >> VM_SHIFT, key & ((1 << VM_SHIFT) - 1)) for key in self.lines]


def assert_same(cache: ReadCache, reference: ReferenceLRU) -> None:
    """Same counters, lines and recency order, and the vectors consistent: every cached line found
    in the index at a slot holding its live log position, no other slot used, the index at most
    half full and the log under twice the lines cached (plus the compaction slack)."""
    counters = ("hits", "misses", "inserted_lines", "evicted_lines", "occupied_bytes")
    assert [getattr(cache, name) for name in counters] == [
        getattr(reference, name) for name in counters
    ]
    assert cache.recency() == reference.recency()
    log = cache._log
    live = [
        position for position in range(cache._head, len(log)) if log[position] != cache_module._DEAD
    ]
    for position in live:
        assert cache._slots[cache._find(log[position])] == position
    assert (
        sum(1 for position in cache._slots if position != cache_module._EMPTY)
        == len(live)
        == cache._count
    )
    assert 2 * cache._count <= len(cache._slots)
    assert cache._dead == len(log) - cache._head - len(live)
    assert len(log) <= 2 * cache._count + cache_module._LOG_SLACK + 1


def apply(
    op: str, vm: int, offset: int, size: int, cache: ReadCache, reference: ReferenceLRU
) -> None:
    if op == "clear":
        cache.clear()
        reference.clear()
    else:
        assert getattr(cache, op)(vm, offset, size) == getattr(reference, op)(vm, offset, size)


class LRUMachine(RuleBasedStateMachine):
    """Random interleavings of every operation, with I/Os of 1 to 24 lines (some larger than the
    cache), over 4 VMs and 96 lines each, so lines are often re-read, evicted and re-inserted."""

    cache: ReadCache
    reference: ReferenceLRU

    @initialize(capacity=st.integers(1, 64))
    def start(self, capacity: int) -> None:
        self.cache = ReadCache(capacity, LINE)
        self.reference = ReferenceLRU(capacity, LINE)

    @rule(
        op=st.sampled_from(["lookup", "lookup", "insert", "insert", "holds", "discard"]),
        vm=st.integers(0, 3),
        line=st.integers(0, 95),
        skew=st.sampled_from([0, 512, LINE - 1]),
        size=st.sampled_from([512, LINE, 2 * LINE, 3 * LINE + 100, 8 * LINE, 24 * LINE]),
    )
    def io(self, op: str, vm: int, line: int, skew: int, size: int) -> None:
        apply(op, vm, line * LINE + skew, size, self.cache, self.reference)

    @rule()
    def clear(self) -> None:
        apply("clear", 0, 0, 0, self.cache, self.reference)

    @invariant()
    def same(self) -> None:
        assert_same(self.cache, self.reference)


TestLRUMachine = LRUMachine.TestCase
TestLRUMachine.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)


def test_long_random_runs_grow_the_index_and_compact_the_log() -> None:
    """Longer runs than the stateful test (4,000 operations per capacity, 1 to 64 lines), mostly
    one-line I/Os as in a simulation, still identical to the reference after every step; and they
    do exercise the rare paths: the index doubles, and the log is compacted (its head returns to 1
    after having moved on). A final phase of hits alone (no insert to compact the log) keeps it
    under its bound too."""
    for capacity in (1, 2, 7, 16, 33, 64):
        rng = random.Random(capacity)
        cache = ReadCache(capacity, LINE)
        reference = ReferenceLRU(capacity, LINE)
        grew = compacted = False
        for _ in range(4000):
            op = rng.choice(
                ["lookup"] * 4
                + ["insert"] * 3
                + ["holds", "discard"]
                + ["clear"] * (rng.random() < 0.01)
            )
            size = LINE if rng.random() < 0.7 else rng.randint(1, 20 * LINE)
            head, slots = cache._head, len(cache._slots)
            apply(
                op, rng.randrange(3), rng.randrange(3 * capacity + 4) * LINE, size, cache, reference
            )
            grew |= len(cache._slots) > slots
            compacted |= cache._head < head and op != "clear"
            assert_same(cache, reference)
        # then hits alone: the log grows by refreshes, compacted by lookups
        cache.insert(0, 0, capacity * LINE)
        reference.insert(0, 0, capacity * LINE)
        for _ in range(1000):
            apply("lookup", 0, rng.randrange(capacity) * LINE, LINE, cache, reference)
            assert_same(cache, reference)
        assert compacted
        assert grew or capacity < 8  # 16 slots hold 8 lines


def test_memory_per_line() -> None:
    """200,000 cached lines take about 19 bytes each, and never more than 33 (a dict took about
    84, an ``OrderedDict`` about 137: a 32-byte key object, a 24-byte entry and its index, an
    ``OrderedDict``'s 32-byte list node and node pointer).

    The index has 4 bytes per slot and is doubled when over half full, so it holds 2 to 4 slots a
    line: 8 to 16 bytes. The log has 8 bytes per entry, at least one per cached line and at most two
    (plus a constant slack, ``_LOG_SLACK``) before compaction: 8 to 16 bytes. At most 32 bytes a
    line and the slack. Here 200,000 lines need 2^19 = 524,288 slots (2,097,152 bytes, 10.5 a line)
    and 200,001 log entries (8 a line): 18.5 bytes a line. A churned cache (every line refreshed,
    then as many new ones inserted, evicting the first) stays under the bound throughout. By
    tracemalloc, which also sees a vector's spare room (its buffer grows by a quarter at a time),
    the same 200,000 lines take at most 35 bytes each."""
    lines = 200_000
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache = ReadCache(lines, LINE)
    for line in range(lines):
        cache.insert(line % 16, line * LINE, LINE)
    allocated = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert 18 <= cache.memory_bytes / lines <= 19
    assert allocated / lines <= 35
    worst = 0.0
    for line in range(lines):
        assert cache.lookup(line % 16, line * LINE, LINE)
        worst = max(worst, cache.memory_bytes / lines)
    for line in range(lines, 2 * lines):
        cache.insert(line % 16, line * LINE, LINE)
        worst = max(worst, cache.memory_bytes / lines)
    assert cache.evicted_lines == lines
    assert worst <= 32 + 8 * cache_module._LOG_SLACK / lines


def test_clear_frees_the_vectors() -> None:
    """A failed device's cache (``clear``) goes back to the smallest index and an empty log;
    counters stay."""
    cache = ReadCache(10_000, LINE)
    cache.insert(0, 0, 5000 * LINE)
    assert cache.lookup(0, 0, LINE)
    cache.clear()
    assert (cache.occupied_bytes, cache.recency(), cache.hits, cache.inserted_lines) == (
        0,
        [],
        1,
        5000,
    )
    assert cache.memory_bytes < 500
    assert not cache.holds(0, 0, LINE)


def _filled(whole: list[int], capacity: int) -> ReferenceLRU:
    """The reference filled as the build fills a warm cache line by line: VM by VM, each disk from
    its start, the fill not counted as inserts."""
    reference = ReferenceLRU(capacity, LINE)
    for vm, lines in enumerate(whole):
        if lines:
            reference.insert(vm, 0, lines * LINE)
    reference.inserted_lines = 0
    return reference


_WHOLE = st.lists(st.integers(0, 40), min_size=1, max_size=4).filter(any)


@settings(max_examples=150, deadline=None)
@given(
    whole=_WHOLE,
    spare=st.integers(0, 20),
    ios=st.lists(
        st.tuples(
            st.sampled_from(["lookup", "insert", "holds"]),
            st.integers(0, 3),
            st.integers(0, 39),
            st.sampled_from([512, LINE, 3 * LINE + 100, 8 * LINE]),
        ),
        max_size=60,
    ),
)
def test_disks_held_whole_answer_as_the_lines_filled_one_by_one(
    whole: list[int], spare: int, ios: list[tuple[str, int, int, int]]
) -> None:
    """A cache holding its VMs' disks whole (``hold_whole``, the warm start of a device test)
    answers every read, write and ``holds`` inside those disks as the same cache filled line by
    line does: the same answers and counters (hits, inserts, evictions, bytes held). Recency is
    not compared: no line can leave such a cache, so nothing reads it."""
    capacity = sum(whole) + spare
    cache = ReadCache(capacity, LINE)
    cache.hold_whole(whole)
    reference = _filled(whole, capacity)
    assert cache.whole and cache.recency() == reference.recency()
    for op, vm, line, size in ios:
        if vm >= len(whole) or (line * LINE + size - 1) // LINE >= whole[vm]:
            continue  # outside the disks: the next test's case
        assert getattr(cache, op)(vm, line * LINE, size) == getattr(reference, op)(
            vm, line * LINE, size
        )
    counters = ("hits", "misses", "inserted_lines", "evicted_lines", "occupied_bytes")
    assert [getattr(cache, name) for name in counters] == [
        getattr(reference, name) for name in counters
    ]
    assert cache.whole and cache._count == 0  # still no entry per line
    assert cache.memory_bytes <= 4 * 16 + 8 + 8 * len(whole)


@settings(max_examples=150, deadline=None)
@given(
    whole=_WHOLE,
    spare=st.integers(0, 20),
    first=st.sampled_from(["lookup", "insert", "discard", "holds", "clear"]),
    vm=st.integers(0, 4),
    line=st.integers(0, 60),
    ios=st.lists(
        st.tuples(
            st.sampled_from(["lookup", "insert", "holds", "discard"]),
            st.integers(0, 4),
            st.integers(0, 60),
            st.sampled_from([512, LINE, 3 * LINE + 100, 8 * LINE]),
        ),
        max_size=40,
    ),
)
def test_a_call_outside_the_disks_fills_their_lines_oldest_first(
    whole: list[int],
    spare: int,
    first: str,
    vm: int,
    line: int,
    ios: list[tuple[str, int, int, int]],
) -> None:
    """The first call whole mode cannot answer (an I/O of another VM or past a disk's lines, a
    discard; a clear empties it) puts the lines in the index and the log as the build's fill would
    have; from then on the cache is the line-by-line LRU, identical to the reference after every
    step (recency included)."""
    assume(first in ("discard", "clear") or vm >= len(whole) or line >= whole[vm])
    capacity = sum(whole) + spare
    cache = ReadCache(capacity, LINE)
    cache.hold_whole(whole)
    reference = _filled(whole, capacity)
    apply(first, vm, line * LINE, LINE, cache, reference)
    assert first == "holds" or not cache.whole  # (holds answers without filling)
    if first == "holds":
        return
    assert_same(cache, reference)
    for op, io_vm, io_line, size in ios:
        apply(op, io_vm, io_line * LINE, size, cache, reference)
        assert_same(cache, reference)


def test_hold_whole_refuses_what_does_not_fit() -> None:
    """Whole disks go into an empty cache that holds them all."""
    cache = ReadCache(10, LINE)
    with pytest.raises(ValueError, match="do not fit"):
        cache.hold_whole([6, 5])
    cache.insert(0, 0, LINE)
    with pytest.raises(ValueError, match="empty cache"):
        cache.hold_whole([1])


def test_reserve_sizes_the_index_as_the_inserts_would() -> None:
    """A warm start's fill sizes the index once (``reserve``) instead of doubling it as it goes:
    the same index and log, line for line, so the same answers."""
    for lines in (10, 5000, 70_000):
        grown, reserved = ReadCache(lines, LINE), ReadCache(lines, LINE)
        reserved.reserve(lines)
        for first in range(0, lines, 4096):
            count = min(4096, lines - first)
            grown.insert(0, first * LINE, count * LINE)
            reserved.insert(0, first * LINE, count * LINE)
        assert list(grown._slots) == list(reserved._slots)
        assert list(grown._log) == list(reserved._log)
        assert grown._mask == reserved._mask
