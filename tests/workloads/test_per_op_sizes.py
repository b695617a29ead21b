"""Per-op size mixes (``read_sizes``, ``write_sizes``): the fields, the generator's draws, the
estimate and the fit.

Each op's own mix replaces ``sizes`` for that op. The generator draws an
I/O's size from its op's mix, so the mean size of a stream's reads (writes)
is the read (write) mix's mean to within its standard error; the estimate
takes each op's size moments, so per-op latencies follow each op's sizes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.builders import small_scenario

import simcache
from simcache import ScenarioError
from simcache.estimate import estimate
from simcache.spec import Workload
from simcache.traces.trace import Trace, TraceBuilder, TraceChunk
from simcache.workloads.generators import IOStream
from simcache.workloads.ingest.compare import compare, synthetic_rows
from simcache.workloads.ingest.fit import fit_trace, op_mixes_differ, trace_stats
from simcache.workloads.replay import mean_equivalent

KiB = 1024


def problems(workload: dict[str, Any], **extra: Any) -> list[tuple[str, str]]:
    """The problems of loading a small scenario whose group ``db`` has ``workload``."""
    with pytest.raises(ScenarioError) as info:
        simcache.load_scenario(
            small_scenario("per-op", workload={"mode": "open", "iops": 100, **workload}, **extra)
        )
    return info.value.problems


# ---- the fields
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "where", "message"),
    [
        (
            {"sizes": "8KiB", "read_sizes": "4KiB", "write_sizes": "64KiB"},
            "groups.0(db).workload",
            "sizes is unused when read_sizes and write_sizes are both given (each op takes its own "
            "mix): remove sizes, "
            "or remove read_sizes or write_sizes so that op takes sizes",
        ),
        (
            {"read_sizes": {"4KiB": 0}},
            "groups.0(db).workload.read_sizes.4KiB",
            "must be more than 0 (got 0)",
        ),
        ({"write_sizes": {}}, "groups.0(db).workload.write_sizes", "needs at least 1 entry"),
        (
            {"write_sizes": {"0B": 1}},
            "groups.0(db).workload.write_sizes",
            "I/O size '0B' must be more than 0 bytes",
        ),
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
            'a size mix is a table of sizes and their relative weights, e.g. { "8KiB" = 0.7, '
            '"64KiB" = 0.3 }, '
            "or one size alone (read_sizes = \"4KiB\") (got ['4KiB'])",
        ),
        (
            {"write_sizes": {"4KiB": 1e13}},
            "groups.0(db).workload.write_sizes.4KiB",
            "must be at most 1,000,000,000,000; weights are relative: 10^12 to 1 is already beyond "
            "any mix (got 10000000000000.0)",
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
    workload = Workload(
        mode="open",
        throughput=50176 * 100,
        read_fraction=0.25,
        read_sizes="4KiB",
        write_sizes="64KiB",
    )
    assert workload.size_mix == ((4 * KiB, 64 * KiB), (0.25, 0.75))
    assert workload.mean_size == 0.25 * 4096 + 0.75 * 65536 == 50176
    assert workload.mean_rate == 100.0  # throughput / mean bytes of an I/O of either op
    assert (workload.op_mean_size(False), workload.op_mean_size(True)) == (4096.0, 65536.0)
    # Reads never happen: the mix of all I/Os has the writes' sizes only.
    assert Workload(read_fraction=0.0, read_sizes="4KiB", write_sizes="64KiB").size_mix == (
        (64 * KiB,),
        (1.0,),
    )


def test_the_destager_buffer_must_hold_the_largest_write_not_the_largest_read() -> None:
    reads_large = small_scenario(
        "per-op", cluster={"destager": {"capacity": "256KiB"}}, workload={"read_sizes": "1MiB"}
    )
    assert simcache.load_scenario(reads_large).cluster.destager.capacity == 256 * KiB
    writes_large = small_scenario(
        "per-op", cluster={"destager": {"capacity": "256KiB"}}, workload={"write_sizes": "1MiB"}
    )
    with pytest.raises(ScenarioError) as info:
        simcache.load_scenario(writes_large)
    assert info.value.problems == [
        (
            "cluster.destager.capacity",
            f"the buffer ({256 * KiB} bytes) is smaller than the largest write of group 'db' "
            f"({1024**2} bytes); "
            "make it at least that large",
        )
    ]


# ---- the generator
# ------------------------------------------------------------------------------------------------


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
        read_fraction=0.3,
        read_sizes={"4KiB": 3, "16KiB": 1},
        write_sizes={"8KiB": 1, "64KiB": 1},
        working_set=2**30,
        access="uniform",
    )
    ios = draw(workload, 20_000)
    reads = np.array([size for write, size, _ in ios if not write], dtype=np.float64)
    writes = np.array([size for write, size, _ in ios if write], dtype=np.float64)
    assert set(reads.tolist()) == set(read_mix) and set(writes.tolist()) == set(write_mix)
    # Read share: binomial, standard error sqrt(p (1 - p) / n).
    assert abs(len(reads) / len(ios) - 0.3) < 4 * math.sqrt(0.3 * 0.7 / len(ios))
    # Mean size per op: the mix's mean within 4 standard errors (sd / sqrt(n)): read 7,168 B (sd
    # 5,321), write 36,864 B (sd 28,672).
    for sizes, mix, (mean, sd) in (
        (reads, read_mix, (7168.0, 5320.9)),
        (writes, write_mix, (36864.0, 28672.0)),
    ):
        assert mix_moments(mix) == pytest.approx((mean, sd), abs=0.1)
        assert abs(sizes.mean() - mean) < 4 * sd / math.sqrt(len(sizes)), (sizes.mean(), mean)


def test_per_op_draws_are_deterministic_and_one_mix_draws_as_before() -> None:
    per_op = Workload(read_fraction=0.5, read_sizes="4KiB", write_sizes={"8KiB": 1, "64KiB": 1})
    assert draw(per_op, 5000) == draw(per_op, 5000)
    assert draw(per_op, 5000) != draw(per_op, 5000, seed=8)
    # Per-op fields that give both ops the same law draw exactly what sizes alone draws (no extra
    # random numbers).
    one = Workload(read_fraction=0.5, sizes={"8KiB": 0.7, "64KiB": 0.3})
    same = Workload(
        read_fraction=0.5,
        read_sizes={"8KiB": 7, "64KiB": 3},
        write_sizes={"8KiB": 0.7, "64KiB": 0.3},
    )
    assert not same.per_op_sizes
    assert draw(one, 5000) == draw(same, 5000)


# ---- the estimate
# -------------------------------------------------------------------------------------------------


def per_op_scenario(read_sizes: str, write_sizes: str) -> simcache.Scenario:
    """Two hosts, WB+1 over 1GbE peer links, 800 IOPS half reads over 4 MiB: after the 1 s warmup
    every read hits the tier, and every write waits for its replica's transfer, whose time grows
    with the write's size."""
    workload = {
        "mode": "open",
        "iops": 800,
        "read_fraction": 0.5,
        "read_sizes": read_sizes,
        "write_sizes": write_sizes,
    }
    run, cluster = {"duration": "3s", "warmup": "1s"}, {"peer_link": "1GbE"}
    return simcache.load_scenario(
        small_scenario(
            "per-op", run=run, cluster=cluster, workload={**workload, "working_set": "4MiB"}
        )
    )


def test_per_op_latencies_follow_each_ops_sizes_in_estimate_and_simulation() -> None:
    # Low load (peer link ~22% busy with 64 KiB writes, tier a few %): each op's mean latency is
    # nearly its own service time, which the estimate takes from that op's size moments. Measured:
    # reads 0.0221/0.0435 ms (4/64 KiB), writes 0.871/0.158 ms (64/4 KiB), the estimate within 1% of
    # each; 5% leaves room for the ~1,600 I/Os' sampling error.
    means: dict[tuple[str, str, str], float] = {}
    for reads, writes in (("4KiB", "64KiB"), ("64KiB", "4KiB")):
        scenario = per_op_scenario(reads, writes)
        simulated = simcache.simulate(scenario, seed=1).summary.set_index(["group", "op"])
        estimated = estimate(scenario).summary.set_index(["group", "op"])
        for op in ("read", "write"):
            sim_ms, est_ms = (
                float(simulated["mean_ms"].to_dict()["db", op]),
                float(estimated["mean_ms"].to_dict()["db", op]),
            )
            assert est_ms == pytest.approx(sim_ms, rel=0.05), (reads, writes, op)
            means[reads, writes, op] = sim_ms
    # The 64 KiB replica takes 16 times the 4 KiB one's wire time (plus fixed latencies): writes are
    # over 4 times slower.
    assert means["4KiB", "64KiB", "write"] > 4 * means["64KiB", "4KiB", "write"]
    # A 64 KiB tier read moves 16 times the bytes of a 4 KiB one.
    assert means["64KiB", "4KiB", "read"] > 1.5 * means["4KiB", "64KiB", "read"]


# ---- fit and compare
# ----------------------------------------------------------------------------------------------


def generated_trace(folder: Path, workload: Workload, duration: float, seed: int) -> Trace:
    """The I/Os one VM of ``workload`` issues in ``duration`` s, as a cached trace (no
    simulation)."""
    rows = synthetic_rows(workload, duration, seed)
    builder = TraceBuilder(folder, "t")
    builder.device("sda")
    device = np.zeros(len(rows), dtype=np.int64)
    builder.add(
        TraceChunk(
            rows["time"],
            rows["op"],
            rows["offset"],
            rows["size"].astype(np.int64),
            device,
            np.full(len(rows), np.nan),
        )
    )
    return builder.finish({"source": "test"})


def test_the_chi_square_test_of_one_mix_is_exact() -> None:
    # Reads 30 x 4 KiB + 10 x 8 KiB, writes 10 + 30: every expected count is 20, the statistic 4 x
    # 10^2 / 20 = 20 with 1 degree of freedom, whose tail is erfc(sqrt(20 / 2)).
    differ, p_value = op_mixes_differ({4096: 30, 8192: 10}, {4096: 10, 8192: 30})
    assert differ and p_value == pytest.approx(math.erfc(math.sqrt(10.0)), rel=1e-9)
    # the same shares: statistic 0
    same, p_same = op_mixes_differ({4096: 30, 8192: 10}, {4096: 60, 8192: 20})
    assert not same and p_same == pytest.approx(1.0)
    assert op_mixes_differ({4096: 30}, {4096: 50}) == (False, 1.0)  # one size
    assert op_mixes_differ({4096: 30, 8192: 10}, {}) == (False, 1.0)  # no writes


def test_a_trace_with_per_op_mixes_fits_back_to_them(tmp_path: Path) -> None:
    """60% reads of 4/8 KiB (3:1), writes of 64/128 KiB (1:1), 1000 I/O/s for 20 s: each op's
    fitted shares within 4 standard errors (sqrt(p (1 - p) / n) with n that op's I/Os: about
    0.013 for reads, 0.018 for writes)."""
    truth = Workload(
        mode="open",
        iops=1000.0,
        read_fraction=0.6,
        read_sizes={"4KiB": 3, "8KiB": 1},
        write_sizes={"64KiB": 1, "128KiB": 1},
        working_set=20_000 * 4096,
    )
    trace = generated_trace(tmp_path, truth, 20.0, seed=1)
    fitted = fit_trace(trace)
    workload = fitted.workload
    assert workload.sizes == {"4KiB": 1.0}  # the default: unused, both ops have their own mix
    assert workload.read_sizes is not None and workload.write_sizes is not None
    assert set(workload.read_sizes) == {"4KiB", "8KiB"} and set(workload.write_sizes) == {
        "64KiB",
        "128KiB",
    }
    reads, writes = fitted.stats.reads, fitted.stats.ios - fitted.stats.reads
    for write, expected, n in ((False, (0.75, 0.25), reads), (True, (0.5, 0.5), writes)):
        _, shares = workload.op_size_mix(write)
        for share, p in zip(shares, expected, strict=True):
            assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / n), (write, shares)
    assert dict(fitted.facts)["per-op size mixes"].startswith(
        "read_sizes and write_sizes: chi-square test of one mix for reads and writes, p = 0"
    )
    # compare-trace's per-op rows: the synthetic's per-op mean sizes within 5% of the trace's (sd /
    # mean <= 0.6 for these mixes over thousands of I/Os: a standard error well under 1%).
    table = compare(trace, workload, seed=2)
    error = dict(zip(table["statistic"], table["relative_error"].astype(float), strict=True))
    measured = dict(zip(table["statistic"], table["trace"].astype(float), strict=True))
    read_sizes = fitted.stats.sizes_by_op["read"]
    assert measured["mean read size (bytes)"] == pytest.approx(
        (4096 * read_sizes[4096] + 8192 * read_sizes[8192]) / reads
    )
    assert {name for name in error if " among " in name} == {
        "share of 4KiB among reads",
        "share of 8KiB among reads",
        "share of 64KiB among writes",
        "share of 128KiB among writes",
    }
    assert (
        abs(error["mean read size (bytes)"]) < 0.05 and abs(error["mean write size (bytes)"]) < 0.05
    )
    assert all(abs(error[name]) < 0.1 for name in error if " among " in name), error


def test_a_stream_with_one_mix_is_one_mix_to_the_test() -> None:
    # 10,000 I/Os of one mix for both ops: the per-op counts differ by chance only (p well above
    # 0.001), so a fit writes one sizes (as the hotspot fits in test_fit do for their 3:1 mix of 4
    # and 64 KiB).
    truth = Workload(
        mode="open",
        iops=1000.0,
        read_fraction=0.5,
        sizes={"4KiB": 3, "64KiB": 1},
        working_set=20_000 * 4096,
    )
    stats = trace_stats(synthetic_rows(truth, 10.0, seed=3))
    differ, p_value = op_mixes_differ(stats.sizes_by_op["read"], stats.sizes_by_op["write"])
    assert not differ and p_value > 0.01, p_value


def test_the_apps_upload_summary_names_each_ops_mix() -> None:
    from simcache_app.uploads import workload_summary

    per_op = Workload(read_fraction=0.7, read_sizes="4KiB", write_sizes={"64KiB": 1})
    assert workload_summary(per_op) == (
        "closed loop, 1 worker x 1 outstanding, 70% reads, read sizes 4KiB: 1, write sizes "
        "64KiB: 1, uniform over 10GiB"
    )
    assert (
        workload_summary(Workload())
        == "closed loop, 1 worker x 1 outstanding, 0% reads, sizes 4KiB: 1, uniform over 10GiB"
    )


def test_the_estimate_of_a_replayed_trace_takes_each_ops_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 30 reads of 4 KiB and 10 writes of 64 KiB: the steady stream that stands for the replay in the
    # estimate has a mix per op (the trace's counts as weights).
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))
    ops = ["write" if i % 4 == 3 else "read" for i in range(40)]
    lines = ["time,op,offset,size"] + [
        f"{i * 0.01:.2f},{op},{i * 65536},{65536 if op == 'write' else 4096}"
        for i, op in enumerate(ops)
    ]
    (tmp_path / "vm.csv").write_text("\n".join(lines) + "\n")
    workload = {"mode": "trace", "trace": {"path": str(tmp_path / "vm.csv"), "format": "csv"}}
    scenario = simcache.load_scenario(small_scenario("per-op-trace", workload=workload))
    steady, notes = mean_equivalent(scenario)
    stream = steady.groups[0].workload
    # Two VMs (one per host) replay the device: their counts add up.
    assert (stream.read_fraction, stream.read_sizes, stream.write_sizes) == (
        0.75,
        {"4096B": 60.0},
        {"65536B": 20.0},
    )
    assert "read fraction and size mix (per op)" in notes[0]
    assert (
        estimate(scenario).summary.set_index(["group", "op"])["mean_ms"].to_dict()["db", "write"]
        > 0
    )
