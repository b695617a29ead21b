"""The native engine's event queue (``simcache/native/engine/queue.pxi``, a radix heap over the
events' times) against a list sorted by (time, key): the same events come out in the same order
under random pushes, looks, pops and drops, including the two cases a plain radix heap does not
take: an event queued at the time of the last one taken with a smaller key (an URGENT one among
NORMAL ones), and one queued before the first event after the loop looked at it (a Python event
that stops the loop schedules a native event before the native one it saw), and the front the
queue sorts a small bucket into growing past its bound and spilling into buckets again.

Skipped when the extension is not built (install with ``SIMCACHE_NATIVE=1``).
"""

from __future__ import annotations

import bisect
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcache.sim import native_run

pytestmark = pytest.mark.skipif(
    not native_run.available(),
    reason="the native engine is not built (pip install with SIMCACHE_NATIVE=1, Cython 3)",
)

URGENT, NORMAL = 0, 1
PRIORITY_SHIFT = 52  # the kernel's key: priority * 2**52 + event id


def _probe() -> Any:
    from simcache.native._engine import QueueProbe

    return QueueProbe()


# An operation: ("push", gap, urgent, kind) queues an event `gap` after the last one taken (0: at
# its time), ("look",) settles the queue as the loop does before comparing with a Python event,
# ("early", fraction, kind) queues one between the last taken and the first queued (what a Python
# event before the first native one may do), ("pop",), ("drop", kind).
_gaps = st.one_of(
    st.just(0.0),
    st.sampled_from([1e-9, 1e-6, 1e-3, 0.5, 1.0, 7.0]),
    st.floats(min_value=0.0, max_value=100.0, allow_nan=False),
)
_operations = st.lists(
    st.one_of(
        st.tuples(st.just("push"), _gaps, st.booleans(), st.integers(0, 2)),
        st.tuples(st.just("look")),
        st.tuples(st.just("early"), st.floats(0.0, 1.0), st.integers(0, 2)),
        st.tuples(st.just("pop")),
        st.tuples(st.just("drop"), st.integers(0, 2)),
    ),
    max_size=400,
)


@given(_operations)
def test_events_come_out_in_time_and_key_order(operations: list[tuple[Any, ...]]) -> None:
    _replay(operations)


# Many events between the last taken and the last queued, a few taken between: the front (a small
# bucket sorted whole, ending at the last queued) takes them in order until it spills.
_dense = st.lists(
    st.one_of(
        st.tuples(st.just("early"), st.floats(0.0, 1.0), st.integers(0, 2)),
        st.tuples(
            st.just("push"),
            st.sampled_from([0.0, 1e-9, 1e-6, 2.0]),
            st.booleans(),
            st.integers(0, 2),
        ),
        st.tuples(st.just("pop")),
        st.tuples(st.just("look")),
    ),
    min_size=50,
    max_size=400,
)


@given(_dense)
def test_a_front_crowded_past_its_bound_spills_in_order(operations: list[tuple[Any, ...]]) -> None:
    _replay(operations)


def test_a_crowded_front_spills() -> None:
    """Events at 100 s and 101 s, the first taken (the second is the front, its small bucket
    sorted), one at 150 s (a bucket above), then 200 events between 100 s and 101 s, taken in
    order with pushes among them: they spill from the front into buckets below the 150 s one."""
    operations: list[tuple[Any, ...]] = [
        ("push", 100.0, False, 0),
        ("push", 101.0, False, 0),
        ("pop",),
        ("push", 50.0, False, 1),
    ]
    operations += [("early", (k * 37 % 101) / 101, k % 3) for k in range(200)]
    operations += [("pop",), ("push", 1e-6, True, 1), ("look",)] * 60
    _replay(operations)


def _replay(operations: list[tuple[Any, ...]]) -> None:
    """The operations on the queue and on a sorted list: the same events out, in the same order."""
    queue = _probe()
    expected: list[tuple[float, int, int]] = []  # (time, key, kind), sorted
    now = 0.0  # the time of the last event taken (nothing is queued before it)
    eid = 0
    for operation in operations:
        name = operation[0]
        if name in ("push", "early"):
            if name == "push":
                _, gap, urgent, kind = operation
                time = now + gap
            else:
                _, fraction, kind = operation
                urgent = False
                first = expected[0][0] if expected else now + 1.0
                time = now + fraction * (first - now)
            key = ((URGENT if urgent else NORMAL) << PRIORITY_SHIFT) + eid
            eid += 1
            queue.push(time, key, kind)
            bisect.insort(expected, (time, key, kind))
        elif name == "look":
            assert queue.first() == (expected[0] if expected else None)
        elif name == "pop":
            if not expected:
                with pytest.raises(IndexError):
                    queue.pop()
                continue
            taken = queue.pop()
            assert taken == expected.pop(0)
            now = taken[0]
        else:
            kind = operation[1]
            queue.drop(kind)
            expected = [event for event in expected if event[2] != kind]
        assert len(queue) == len(expected)
    while expected:  # the rest, in order
        assert queue.pop() == expected.pop(0)
    assert len(queue) == 0 and queue.first() is None


def test_negative_zero_is_time_zero() -> None:
    """-0.0 and 0.0 are the same time (their bits differ): ordered by key alone."""
    queue = _probe()
    queue.push(0.0, (NORMAL << PRIORITY_SHIFT) + 2)
    queue.push(-0.0, (NORMAL << PRIORITY_SHIFT) + 1)
    queue.push(0.0, (URGENT << PRIORITY_SHIFT) + 3)
    assert [queue.pop()[1] for _ in range(3)] == [
        (URGENT << PRIORITY_SHIFT) + 3,
        (NORMAL << PRIORITY_SHIFT) + 1,
        (NORMAL << PRIORITY_SHIFT) + 2,
    ]


def test_many_events_at_one_time_come_out_by_key() -> None:
    """The closed loops' starts: thousands of events at time 0, URGENT and NORMAL interleaved,
    then one after another."""
    queue = _probe()
    keys = [((eid % 2) << PRIORITY_SHIFT) + eid for eid in range(3000)]
    for key in keys:
        queue.push(0.0, key)
    queue.push(1e-3, (NORMAL << PRIORITY_SHIFT) + 5000)
    assert [queue.pop()[1] for _ in range(3000)] == sorted(keys)
    assert queue.pop()[0] == 1e-3
