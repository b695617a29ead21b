"""StreamTables: the VMs of a group share what their streams derive from the workload alone, and a
stream draws the same I/Os and gaps with shared tables as with its own."""

from __future__ import annotations

import numpy as np
import pytest

from simcache.spec import load_scenario
from simcache.workloads.generators import IOStream, StreamTables


def _workloads() -> list:
    """The default scenario's workloads (Zipf and uniform access, open and closed loops) and a
    sequential, hot-spot one with a duty cycle."""
    scenario = load_scenario("scenarios/default.toml")
    first = scenario.groups[0].workload
    hot = type(first).model_validate(
        first.model_dump()
        | {
            "access": "hotspot",
            "hot_io_fraction": 0.8,
            "hot_span_fraction": 0.1,
            "sequential_run": 8.0,
            "duty_cycle": {"shape": "onoff", "on": 2.0, "off": 1.0},
        }
    )
    return [group.workload for group in scenario.groups] + [hot]


@pytest.mark.parametrize("index", range(4))
def test_shared_tables_draw_what_own_tables_draw(index: int) -> None:
    workload = _workloads()[index % len(_workloads())]
    tables = StreamTables(workload)
    for key in (1, 2, 3):
        shared = IOStream(workload, np.random.SeedSequence(5, spawn_key=(key,)), tables)
        own = IOStream(workload, np.random.SeedSequence(5, spawn_key=(key,)))
        assert [shared.next_io() for _ in range(3000)] == [own.next_io() for _ in range(3000)]
        if workload.mode == "open":
            assert [shared.next_gap(0.0) for _ in range(500)] == [
                own.next_gap(0.0) for _ in range(500)
            ]
    # the tables are not changed by the streams that share them
    again = StreamTables(workload)
    assert np.array_equal(tables.sizes, again.sizes)
    assert np.array_equal(tables.choice_cdf, again.choice_cdf)


def test_tables_of_another_workload_are_refused() -> None:
    first, second = _workloads()[:2]
    with pytest.raises(ValueError, match="another workload's"):
        IOStream(first, np.random.SeedSequence(1), StreamTables(second))
