"""The native engine's read cache (``simcache/native/engine/cache.pxi``) on its own against
``ReadCache``: the same answers to random lookups and inserts, and afterwards the same recency log,
the same index (each line in the same slot), the same counts and counters. (The engine tests
compare whole runs, whose caches reach the engine through a sync; this drives the two caches call
for call, through evictions, log compactions and index growth.)

Skipped when the extension is not built (install with ``SIMCACHE_NATIVE=1``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcache.sim import native_run
from simcache.sim.components.cache import ReadCache

pytestmark = pytest.mark.skipif(
    not native_run.available(),
    reason="the native engine is not built (pip install with SIMCACHE_NATIVE=1, Cython 3)",
)

LINE = 4096


def _probe(capacity_lines: int, line: int = LINE) -> Any:
    from simcache.native._engine import CacheProbe

    return CacheProbe(capacity_lines, line)


def _python_state(cache: ReadCache) -> dict[str, Any]:
    return {
        "log": list(cache._log),
        "slots": list(cache._slots),
        "head": cache._head,
        "dead": cache._dead,
        "count": cache._count,
        "hits": cache.hits,
        "misses": cache.misses,
        "inserted": cache.inserted_lines,
        "evicted": cache.evicted_lines,
    }


def _ios(last_start: int, most_units: int, max_size: int) -> st.SearchStrategy[Any]:
    """Lists of ("lookup" or "insert", vm, first unit, units) over 4 VMs."""
    return st.lists(
        st.tuples(
            st.sampled_from(["lookup", "insert"]),
            st.integers(0, 3),
            st.integers(0, last_start),
            st.integers(1, most_units),
        ),
        max_size=max_size,
    )


# I/Os of one to four lines over a few VMs' first 300 lines, so that lines are looked up again,
# refreshed and evicted.
_operations = _ios(300, 4, 600)


def _replay(python: ReadCache, native: Any, ios: list[tuple[str, int, int, int]]) -> None:
    """The same lookups and inserts, (kind, vm, offset, size), on both caches: the same answers,
    then the same state."""
    for kind, vm, offset, size in ios:
        if kind == "lookup":
            assert native.lookup(vm, offset, size) == python.lookup(vm, offset, size)
        else:
            native.insert(vm, offset, size)
            python.insert(vm, offset, size)
    assert native.state() == _python_state(python)


@given(_operations, st.integers(1, 200))
def test_the_native_cache_answers_and_holds_as_read_cache(operations, capacity):
    _replay(
        ReadCache(capacity, LINE),
        _probe(capacity),
        [(kind, vm, first * LINE, lines * LINE) for kind, vm, first, lines in operations],
    )


SECTOR = 512

# I/Os at sector granularity, so that most start and end inside a line, over a few VMs' first
# 2,400 sectors (1.2 MB)
_unaligned = _ios(2400, 64, 400)


@given(_unaligned, st.integers(1, 200), st.sampled_from([4096, 6144, 65536]))
def test_lines_of_any_size_hold_as_read_cache(operations, capacity, line):
    """Lines of a power of two and of another size (6 KiB), I/Os that start and end inside
    lines: the same answers and state."""
    _replay(
        ReadCache(capacity, line),
        _probe(capacity, line),
        [(kind, vm, first * SECTOR, n * SECTOR) for kind, vm, first, n in operations],
    )


def test_a_large_cache_grows_and_finds_every_line():
    """20,000 lines inserted over 7 VMs, then looked up: the index grows from 16 slots to 65,536
    and the log from its first 64 positions; every line is found again, and the index is
    ReadCache's slot for slot."""
    python, native = ReadCache(20_000, LINE), _probe(20_000)
    for line in range(20_000):
        native.insert(line % 7, line * LINE, LINE)
        python.insert(line % 7, line * LINE, LINE)
    assert len(native.state()["slots"]) == 65_536
    assert all(native.lookup(line % 7, line * LINE, LINE) for line in range(20_000))
    for line in range(20_000):
        python.lookup(line % 7, line * LINE, LINE)
    assert native.state() == _python_state(python)
