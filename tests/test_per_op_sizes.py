"""Per-op size mixes (``read_sizes``, ``write_sizes``): the fields, the generator's draws and the estimate.

Each op's own mix replaces ``sizes`` for that op. The generator draws an
I/O's size from its op's mix, so the mean size of a stream's reads (writes)
is the read (write) mix's mean to within its standard error; the estimate
takes each op's size moments, so per-op latencies follow each op's sizes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from builders import small_scenario

import simcache
from simcache import ScenarioError
from simcache.estimate import estimate
from simcache.scenario import Workload
from simcache.workload import IOStream

KiB = 1024


def problems(workload: dict[str, Any], **extra: Any) -> list[tuple[str, str]]:
    """The problems of loading a small scenario whose group ``db`` has ``workload``."""
    with pytest.raises(ScenarioError) as info:
        simcache.load_scenario(small_scenario("per-op", workload={"mode": "open", "iops": 100, **workload}, **extra))
    return info.value.problems


# ---- the fields ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "where", "message"),
    [
        (
            {"sizes": "8KiB", "read_sizes": "4KiB", "write_sizes": "64KiB"},
            "groups.0(db).workload",
            "sizes is unused when read_sizes and write_sizes are both given (each op takes its own mix): remove sizes, "
            "or remove read_sizes or write_sizes so that op takes sizes",
        ),
        ({"read_sizes": {"4KiB": 0}}, "groups.0(db).workload.read_sizes.4KiB", "must be more than 0 (got 0)"),
        ({"write_sizes": {}}, "groups.0(db).workload.write_sizes", "needs at least 1 entry"),
        ({"write_sizes": {"0B": 1}}, "groups.0(db).workload.write_sizes", "I/O size '0B' must be more than 0 bytes"),
        (
            {"read_sizes": {"2GiB": 1}},
            "groups.0(db).workload.read_sizes",
            "I/O size '2GiB' is more than 1GiB; block devices take a few MiB at most in one I/O",
        ),
        (
            {"write_sizes": {"4KiB": 1, "4096": 1}},
            "groups.0(db).workload.write_sizes",
            "'4KiB' and '4096' are the same size (4,096 bytes); give each size once",
        ),
        (
            {"read_sizes": ["4KiB"]},
            "groups.0(db).workload.read_sizes",
            'a size mix is a table of sizes and their relative weights, e.g. { "8KiB" = 0.7, "64KiB" = 0.3 }, '
            "or one size alone (read_sizes = \"4KiB\") (got ['4KiB'])",
        ),
        (
            {"write_sizes": {"4KiB": 1e13}},
            "groups.0(db).workload.write_sizes.4KiB",
            "must be at most 1,000,000,000,000; weights are relative: 10^12 to 1 is already beyond any mix (got 10000000000000.0)",
        ),
    ],
)
def test_bad_per_op_mixes_are_named(fields: dict[str, Any], where: str, message: str) -> None:
    assert problems(fields) == [(where, message)]


def test_a_trace_workload_rejects_per_op_mixes() -> None:
    workload = {"mode": "trace", "trace": {"path": "x.csv"}, "write_sizes": "8KiB"}
    with pytest.raises(ScenarioError) as info:
        simcache.load_scenario({"groups": [{"name": "g", "workload": workload}]})
    message = (
        "write_sizes describe a synthetic workload; a trace brings its own I/Os: remove them "
        "(or derive a synthetic workload with simcache fit)"
    )
    assert ("groups.0(g).workload", message) in info.value.problems


def test_an_op_without_its_own_mix_takes_sizes() -> None:
    workload = Workload(sizes={"8KiB": 3, "64KiB": 1}, write_sizes="256KiB")
    assert workload.op_size_mix(False) == ((8 * KiB, 64 * KiB), (0.75, 0.25))
    assert workload.op_size_mix(True) == ((256 * KiB,), (1.0,))
    assert workload.per_op_sizes
    assert not Workload(sizes="8KiB", read_sizes={"8KiB": 5}).per_op_sizes  # the same law: one mix


def test_the_mix_of_all_ios_weights_each_op_by_its_share() -> None:
    workload = Workload(mode="open", throughput=50176 * 100, read_fraction=0.25, read_sizes="4KiB", write_sizes="64KiB")
    assert workload.size_mix == ((4 * KiB, 64 * KiB), (0.25, 0.75))
    assert workload.mean_size == 0.25 * 4096 + 0.75 * 65536 == 50176
    assert workload.mean_rate == 100.0  # throughput / mean bytes of an I/O of either op
    assert (workload.op_mean_size(False), workload.op_mean_size(True)) == (4096.0, 65536.0)
    # Reads never happen: the mix of all I/Os has the writes' sizes only.
    assert Workload(read_fraction=0.0, read_sizes="4KiB", write_sizes="64KiB").size_mix == ((64 * KiB,), (1.0,))


def test_the_destager_buffer_must_hold_the_largest_write_not_the_largest_read() -> None:
    reads_large = small_scenario("per-op", cluster={"destager": {"capacity": "256KiB"}}, workload={"read_sizes": "1MiB"})
    assert simcache.load_scenario(reads_large).cluster.destager.capacity == 256 * KiB
    writes_large = small_scenario("per-op", cluster={"destager": {"capacity": "256KiB"}}, workload={"write_sizes": "1MiB"})
    with pytest.raises(ScenarioError) as info:
        simcache.load_scenario(writes_large)
    assert info.value.problems == [
        (
            "cluster.destager.capacity",
            f"the buffer ({256 * KiB} bytes) is smaller than the largest write of group 'db' ({1024**2} bytes); "
            "make it at least that large",
        )
    ]


# ---- the generator ------------------------------------------------------------------------------------------------


def draw(workload: Workload, count: int, seed: int = 7) -> list[tuple[bool, int, int]]:
    stream = IOStream(workload, np.random.SeedSequence(seed))
    return [stream.next_io() for _ in range(count)]


def mix_moments(mix: dict[int, float]) -> tuple[float, float]:
    """(mean, standard deviation) in bytes of a size mix (weights need not sum to 1)."""
    total = sum(mix.values())
    mean = sum(s * w for s, w in mix.items()) / total
    return mean, math.sqrt(sum(s * s * w for s, w in mix.items()) / total - mean * mean)


def test_each_op_draws_from_its_own_mix() -> None:
    read_mix, write_mix = {4 * KiB: 3.0, 16 * KiB: 1.0}, {8 * KiB: 1.0, 64 * KiB: 1.0}
    workload = Workload(
        read_fraction=0.3, read_sizes={"4KiB": 3, "16KiB": 1}, write_sizes={"8KiB": 1, "64KiB": 1}, working_set=2**30, access="uniform"
    )
    ios = draw(workload, 20_000)
    reads = np.array([size for write, size, _ in ios if not write], dtype=np.float64)
    writes = np.array([size for write, size, _ in ios if write], dtype=np.float64)
    assert set(reads.tolist()) == set(read_mix) and set(writes.tolist()) == set(write_mix)
    # Read share: binomial, standard error sqrt(p (1 - p) / n).
    assert abs(len(reads) / len(ios) - 0.3) < 4 * math.sqrt(0.3 * 0.7 / len(ios))
    # Mean size per op: the mix's mean within 4 standard errors (sd / sqrt(n)): read 7,168 B (sd 5,321), write 36,864 B (sd 28,672).
    for sizes, mix, (mean, sd) in ((reads, read_mix, (7168.0, 5320.9)), (writes, write_mix, (36864.0, 28672.0))):
        assert mix_moments(mix) == pytest.approx((mean, sd), abs=0.1)
        assert abs(sizes.mean() - mean) < 4 * sd / math.sqrt(len(sizes)), (sizes.mean(), mean)


def test_per_op_draws_are_deterministic_and_one_mix_draws_as_before() -> None:
    per_op = Workload(read_fraction=0.5, read_sizes="4KiB", write_sizes={"8KiB": 1, "64KiB": 1})
    assert draw(per_op, 5000) == draw(per_op, 5000)
    assert draw(per_op, 5000) != draw(per_op, 5000, seed=8)
    # Per-op fields that give both ops the same law draw exactly what sizes alone draws (no extra random numbers).
    one = Workload(read_fraction=0.5, sizes={"8KiB": 0.7, "64KiB": 0.3})
    same = Workload(read_fraction=0.5, read_sizes={"8KiB": 7, "64KiB": 3}, write_sizes={"8KiB": 0.7, "64KiB": 0.3})
    assert not same.per_op_sizes
    assert draw(one, 5000) == draw(same, 5000)


# ---- the estimate -------------------------------------------------------------------------------------------------


def per_op_scenario(read_sizes: str, write_sizes: str) -> simcache.Scenario:
    """Two hosts, WB+1 over 1GbE peer links, 800 IOPS half reads over 4 MiB: after the 1 s warmup every read hits
    the tier, and every write waits for its replica's transfer, whose time grows with the write's size."""
    workload = {"mode": "open", "iops": 800, "read_fraction": 0.5, "read_sizes": read_sizes, "write_sizes": write_sizes}
    run, cluster = {"duration": "3s", "warmup": "1s"}, {"peer_link": "1GbE"}
    return simcache.load_scenario(small_scenario("per-op", run=run, cluster=cluster, workload={**workload, "working_set": "4MiB"}))


def test_per_op_latencies_follow_each_ops_sizes_in_estimate_and_simulation() -> None:
    # Low load (peer link ~22% busy with 64 KiB writes, tier a few %): each op's mean latency is nearly its own service
    # time, which the estimate takes from that op's size moments. Measured: reads 0.0221/0.0435 ms (4/64 KiB), writes
    # 0.871/0.158 ms (64/4 KiB), the estimate within 1% of each; 5% leaves room for the ~1,600 I/Os' sampling error.
    means: dict[tuple[str, str, str], float] = {}
    for reads, writes in (("4KiB", "64KiB"), ("64KiB", "4KiB")):
        scenario = per_op_scenario(reads, writes)
        simulated = simcache.simulate(scenario, seed=1).summary.set_index(["group", "op"])
        estimated = estimate(scenario).summary.set_index(["group", "op"])
        for op in ("read", "write"):
            sim_ms, est_ms = float(simulated["mean_ms"].to_dict()["db", op]), float(estimated["mean_ms"].to_dict()["db", op])
            assert est_ms == pytest.approx(sim_ms, rel=0.05), (reads, writes, op)
            means[reads, writes, op] = sim_ms
    # The 64 KiB replica takes 16 times the 4 KiB one's wire time (plus fixed latencies): writes are over 4 times slower.
    assert means["4KiB", "64KiB", "write"] > 4 * means["64KiB", "4KiB", "write"]
    # A 64 KiB tier read moves 16 times the bytes of a 4 KiB one.
    assert means["64KiB", "4KiB", "read"] > 1.5 * means["4KiB", "64KiB", "read"]
