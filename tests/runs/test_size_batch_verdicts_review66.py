"""A configuration ``simcache size`` simulated keeps its own verdict (review 66c F2): a batch-mate's
miss along a monotone dimension prunes only configurations never simulated, and the frontier holds
only configurations with verdicts of their own.

Before the fix, a batch of two (a pool of two workers) simulated 1 GiB and 2 GiB destage buffers
together; the 2 GiB one missed and relabelled the simulated 1 GiB one "pruned", which then stood on
the frontier with its simulated figure and out of the miss count."""

from __future__ import annotations

from concurrent.futures import Future
from contextlib import ExitStack
from typing import Any

import pytest
from support.builders import small_scenario

import simcache
from simcache.runs import size as size_module
from simcache.runs.size import size
from simcache.spec import Scenario


class InlineExecutor:
    """A pool that runs each task as it is submitted: the search batches as for two workers."""

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args))
        return future


def writing_cluster() -> Scenario:
    """Two hosts writing 1,500 IOPS of 64 KiB each: 1 s runs."""
    return simcache.load_scenario(
        small_scenario(
            workload={"mode": "open", "iops": 1500, "read_fraction": 0.0, "sizes": {"64KiB": 1.0}},
            array="array-24x15k",
            run={"duration": "1s", "warmup": "0.2s"},
        )
    )


def test_a_simulated_configuration_keeps_its_own_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    def inline(stack: ExitStack, **_: Any) -> InlineExecutor:
        return InlineExecutor()

    monkeypatch.setattr(size_module, "replication_executor", inline)
    monkeypatch.setattr(size_module, "_capacity", lambda *_: 2)
    answer = size(
        writing_cluster(),
        ["write p99 <= 0.001ms"],  # missed by every configuration
        ["cluster.destager.capacity = 1GiB:4GiB"],
        seeds=[1],
        confirm_seeds=0,
        prune=False,
        workers=2,
    )
    cands = answer.candidates
    # a batch of four: all three simulated, none relabelled by a batch-mate's miss
    assert [c.verdict for c in cands] == ["misses", "misses", "misses"]
    assert all(c.seeds == [1] for c in cands)
    counts = answer.counts()
    assert counts["misses"] == 3 and counts["pruned"] == 0
    assert all(c.verdict in ("meets", "misses", "unknown") for c in answer.frontier())
    assert all(f["verdict"] != "pruned" for f in answer.to_json()["frontier"])


def test_a_miss_still_prunes_a_configuration_never_simulated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One worker and two seeds, batches of one: the largest buffer goes first, misses, and prunes
    the smaller ones unsimulated: pruned, with no seeds and off the frontier."""
    answer = size(
        writing_cluster(),
        ["write p99 <= 0.001ms"],
        ["cluster.destager.capacity = 1GiB:4GiB"],
        seeds=[1, 2],
        confirm_seeds=0,
        prune=False,
        workers=1,
    )
    verdicts = [c.verdict for c in answer.candidates]
    assert verdicts == ["pruned", "pruned", "misses"]
    assert [c.seeds for c in answer.candidates[:2]] == [[], []]
    assert [c.index for c in answer.frontier()] == [2]
