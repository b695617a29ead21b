"""The native engine against the Python engine: the same run by both, compared bit for bit
(``tests/sim/test_native_engine.py``, ``tests/sim/test_native_replay.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings

from simcache.sim import native_run
from simcache.sim.collect import PATH
from simcache.sim.engine import build, run_scenario
from simcache.sim.record import RunRecord
from simcache.spec import Scenario

FIELDS = range(PATH)  # the blocks' fields: the path shares the flags byte (IS_WRITE)


def random_examples(examples: int) -> Callable[[Any], Any]:
    """The random-scenario tests' settings: ``examples`` of them, the same every run (each example
    is two whole runs; a failing one is found again as is), no deadline."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def assert_both_engines_agree(scenario: Scenario) -> tuple[RunRecord, RunRecord, list[np.ndarray]]:
    """The native engine takes ``scenario`` and runs it bit-identically to the Python engine: the
    two runs and the records' fields (:func:`assert_same`)."""
    assert native_run.unsupported(scenario) is None
    assert build(scenario, scenario.run.seed, native=True).native is not None
    python, native = run_scenario(scenario, native=False), run_scenario(scenario, native=True)
    return python, native, assert_same(python, native)


def columns(record: RunRecord) -> list[np.ndarray]:
    blocks = record.record_blocks
    assert blocks is not None
    return [blocks.take(i) for i in FIELDS]


def assert_same(python: RunRecord, native: RunRecord) -> list[np.ndarray]:
    """Assert the two runs agree bit for bit; the records' fields (taken from the runs' blocks,
    which let go of them: :meth:`RecordBlocks.take`)."""
    fields = columns(python)
    for i, (a, b) in enumerate(zip(fields, columns(native), strict=True)):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"record field {i}"
    assert native.counters == python.counters, "counters"
    assert native.samples == python.samples, "samples"
    # (as text: a record of an event still under way at the end holds NaN, which equals nothing)
    assert repr(native.degradations) == repr(python.degradations), "degradations"
    assert repr(native.outages) == repr(python.outages), "outages"
    assert repr(native.vmotions) == repr(python.vmotions), "vmotions"
    assert repr(native.degraded_vms) == repr(python.degraded_vms), "degraded VMs"
    assert repr(native.resyncs) == repr(python.resyncs), "resyncs"
    assert repr(native.failures) == repr(python.failures), "failures"
    assert repr(native.restarts) == repr(python.restarts), "HA restarts"
    assert native.unfinished == python.unfinished, "unfinished I/Os"
    assert native.events == python.events, "events scheduled"
    return fields
