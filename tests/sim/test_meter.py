"""The busy meter (:class:`simcache.sim.components.meter.BusyMeter`): a window's busy seconds are
the overlap of every recorded interval with it, whether or not the meter folded finished intervals
early to bound its memory.

Exact figure: busy(w0, w1) = sum over intervals of max(0, min(finish, w1) - max(start, w0)).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcache.sim.components.meter import _FOLD_AT, BusyMeter


def overlap(intervals: list[tuple[float, float]], w0: float, w1: float) -> float:
    return sum(max(0.0, min(finish, w1) - max(start, w0)) for start, finish in intervals)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    ops=st.integers(1, 3 * _FOLD_AT),
    windows=st.integers(1, 6),
    lag=st.floats(0.0, 0.5),
)
def test_window_sums_equal_the_exact_overlap(seed: int, ops: int, windows: int, lag: float) -> None:
    """Operations submitted at increasing times ``now`` in [0, windows), each busy from ``now``
    plus a queueing delay up to ``lag`` s for up to 0.3 s (so some outlast the window they start
    in); windows of 1 s asked at their ends. Each window's figure equals the exact overlap to
    rounding (1e-9 s over up to 12,288 additions of at most 0.3 s: the sum's rounding error is
    below 12,288 x 2^-52 x its size)."""
    rng = random.Random(seed)
    meter = BusyMeter()
    times = sorted(rng.uniform(0.0, windows) for _ in range(ops))
    intervals = []
    edge = 1.0
    for now in times:
        while now >= edge:
            assert meter.busy_between(edge - 1.0, edge) == pytest.approx(
                overlap(intervals, edge - 1.0, edge), abs=1e-9
            )
            edge += 1.0
        start = now + rng.uniform(0.0, lag)
        interval = (start, start + rng.uniform(0.0, 0.3))
        intervals.append(interval)
        meter.add(*interval, now)
    while edge <= windows + 1.0:
        assert meter.busy_between(edge - 1.0, edge) == pytest.approx(
            overlap(intervals, edge - 1.0, edge), abs=1e-9
        )
        edge += 1.0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ops=st.integers(1, 2 * _FOLD_AT), lag=st.floats(0.0, 0.5))
def test_open_at_counts_the_operations_in_system_and_keeps_the_window_sums(
    seed: int, ops: int, lag: float
) -> None:
    """``open_at(t)`` between submissions (what the tier's ``in_system`` is) counts the intervals
    finishing after t, as a heap of completion times popped up to t did, and the windows' sums
    asked for after it (each ending at or after t) still equal the exact overlap (its fold
    regroups the additions: equal to rounding, the bound of the test above). Everything happens
    in time order, as in a run."""
    rng = random.Random(seed)
    meter = BusyMeter()
    times = sorted(rng.uniform(0.0, 3.0) for _ in range(ops))
    intervals: list[tuple[float, float]] = []
    probes = iter(sorted(rng.uniform(0.0, 3.0) for _ in range(50)))
    probe = next(probes, None)
    edge = 1.0
    for now in times:  # in time order: window ends, probes, then the submission at now
        while (probe is not None and probe < now) or now >= edge:
            if probe is None or probe >= edge:
                assert meter.busy_between(edge - 1.0, edge) == pytest.approx(
                    overlap(intervals, edge - 1.0, edge), abs=1e-9
                )
                # as the sampler reads it
                assert meter.open_count() == sum(1 for _, finish in intervals if finish > edge)
                edge += 1.0
            else:
                assert meter.open_at(probe) == sum(1 for _, finish in intervals if finish > probe)
                probe = next(probes, None)
        start = now + rng.uniform(0.0, lag)
        interval = (start, start + rng.uniform(0.0, 0.3))
        intervals.append(interval)
        meter.add(*interval, now)
    while edge <= 4.0:
        assert meter.busy_between(edge - 1.0, edge) == pytest.approx(
            overlap(intervals, edge - 1.0, edge), abs=1e-9
        )
        edge += 1.0


def test_memory_is_bounded_by_the_work_in_flight() -> None:
    """A million 1 us operations back to back inside one window: the meter folds the finished
    ones, so it never holds more than twice its fold limit (the open ones are at most the one
    still running), and the window's sum is their total, 1 s, to rounding."""
    meter = BusyMeter()
    held = 0
    for k in range(1_000_000):
        now = k * 1e-6
        meter.add(now, now + 1e-6, now)
        held = max(held, meter.open_count())
    assert held <= 2 * _FOLD_AT
    assert meter.busy_between(0.0, 2.0) == pytest.approx(1.0, rel=1e-9)
