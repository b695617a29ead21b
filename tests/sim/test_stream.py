"""A run without records (simcache.sim.stream): histogram percentiles within the stated error,
merging, the same figures as a records run, and memory that does not grow with the I/Os.

The bound (simcache.sim.stream's docstring): bucket k holds (GAMMA**(k-1), GAMMA**k] ms and stands
for 2 GAMMA**k / (GAMMA + 1), within a = REL_ERROR of every value in it; np.percentile interpolates
between two order statistics with weights adding to 1, so |p_hat - p| <= a p + MIN_MS (MIN_MS for
latencies counted as 0). Bucket edges come from a float64 logarithm: a value within an ulp of an
edge may land in the next bucket, which is still within a (1 + 1e-12).
"""

from __future__ import annotations

import contextlib
import io
import math
import pickle

import numpy as np
import pandas as pd
import pytest

import simcache
from simcache.base.metrics import HEADLINE_PERCENTILES, PERCENTILES
from simcache.cli.main import main
from simcache.results.result import RecordsNotKept, Result
from simcache.results.validity import in_flight_series
from simcache.sim.collect import COMPONENTS
from simcache.sim.control import Limits
from simcache.sim.stream import (
    BUCKETS,
    MIN_MS,
    REL_ERROR,
    LatencyHistogram,
    counts_of,
    percentile_of_counts,
)

TOLERANCE = REL_ERROR * (1 + 1e-12)
DURATION = 6.0
SEED = 4


def within_error(estimate: float, exact: float) -> bool:
    if math.isnan(exact):
        return math.isnan(estimate)
    return abs(estimate - exact) <= TOLERANCE * abs(exact) + MIN_MS


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 50_000])
def test_histogram_percentiles_are_within_the_stated_error(n: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.lognormal(mean=0.0, sigma=2.0, size=n)  # ms: from microseconds to seconds
    values[: n // 10] = 0.0  # zero latencies count as 0 (bucket 0)
    histogram = LatencyHistogram.of(values)
    for q in [0.0, 1.0, 50.0, 95.0, 99.0, 99.9, 100.0]:
        exact = float(np.percentile(values, q))
        assert within_error(histogram.percentile(q), exact), (q, histogram.percentile(q), exact)
    assert histogram.percentile(100.0) <= values.max()


def test_every_bucket_value_is_within_the_error_of_its_edges() -> None:
    """Bucket k's value against its lowest and highest latency: the worst relative error is a, at
    both edges."""
    edges = np.geomspace(2e-6, 1e7, 10_000)
    estimates = np.array([LatencyHistogram.of(np.array([v])).percentile(50.0) for v in edges[::97]])
    exact = edges[::97]
    assert np.all(np.abs(estimates - exact) <= TOLERANCE * exact)


def test_merging_two_histograms_is_the_histogram_of_the_union() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.exponential(2.0, 3000), rng.lognormal(1.0, 1.0, 5000)
    merged = LatencyHistogram.of(a) + LatencyHistogram.of(b)
    assert merged == LatencyHistogram.of(np.concatenate((a, b)))
    assert merged.count == 8000 and len(merged.counts) == BUCKETS
    assert merged.percentile(99.0) == LatencyHistogram.of(np.concatenate((b, a))).percentile(99.0)


def test_an_empty_histogram_has_no_percentile() -> None:
    assert math.isnan(percentile_of_counts(counts_of(np.empty(0)), 50.0))


@pytest.fixture(scope="module")
def pair() -> tuple[Result, Result]:
    records = simcache.simulate("default", duration=DURATION, seed=SEED)
    stream = simcache.simulate("default", duration=DURATION, seed=SEED, keep_records=False)
    return records, stream


EXACT = ["count", "unfinished", "iops", "mb_s", "max_ms", "lower_bounds"]
SUMMED = ["mean_ms", "mean_ci95_ms"]  # the same values added in another order


def assert_summaries_agree(kept: pd.DataFrame, streamed: pd.DataFrame, key: str) -> None:
    kept, streamed = kept.set_index([key, "op"]), streamed.set_index([key, "op"])
    assert sorted(kept.index) == sorted(streamed.index)
    streamed = streamed.loc[kept.index]
    pd.testing.assert_frame_equal(kept[EXACT], streamed[EXACT], check_exact=True)
    pd.testing.assert_frame_equal(kept[SUMMED], streamed[SUMMED], rtol=1e-12)
    for column in PERCENTILES:
        for exact, estimate in zip(kept[column], streamed[column], strict=True):
            assert within_error(estimate, exact), (column, estimate, exact)


def test_a_run_without_records_gives_the_records_runs_summary_within_the_error(
    pair: tuple[Result, Result],
) -> None:
    kept, streamed = pair
    assert kept.has_records and not streamed.has_records and streamed.meta["records"] is False
    assert kept.summary["unfinished"].sum() > 0, (
        "the comparison covers censored I/Os (lower bounds)"
    )
    assert_summaries_agree(kept.summary, streamed.summary, "group")
    assert_summaries_agree(kept.summary_by_vm(), streamed.summary_by_vm(), "vm")
    assert kept.totals == streamed.totals
    assert kept.meta["ios"] == streamed.meta["ios"] == len(kept.records)


def test_a_run_without_records_gives_the_same_histograms(pair: tuple[Result, Result]) -> None:
    """Each latency is computed as the records' latency_ms, value for value, so the buckets are
    the same."""
    kept, streamed = pair
    for by in ("group", "vm"):
        assert kept.latency_histograms(by) == streamed.latency_histograms(by)


def test_a_run_without_records_gives_the_breakdown_and_series(pair: tuple[Result, Result]) -> None:
    kept, streamed = pair
    a, b = (
        kept.breakdown.set_index("group"),
        streamed.breakdown.set_index("group").loc[kept.breakdown["group"]],
    )
    assert list(a["dominant"]) == list(b["dominant"])
    # records' components are float32 (simcache.sim.collect.COMPONENT_DTYPE: within 2**-24), the
    # stream's sums float64
    pd.testing.assert_frame_equal(
        a[["write_mean_ms", *COMPONENTS]],
        b[["write_mean_ms", *COMPONENTS]],
        rtol=2.0**-24 * 2,
        atol=1e-12,
    )
    series_a, series_b = kept.series, streamed.series
    assert list(series_a.columns) == list(series_b.columns)
    percentiles = [f"{op}_{name}" for op in ("read", "write") for name in HEADLINE_PERCENTILES]
    others = [c for c in series_a.columns if c not in percentiles]
    pd.testing.assert_frame_equal(series_a[others], series_b[others], check_exact=True)
    for column in percentiles:
        assert all(
            within_error(e, x) for e, x in zip(series_b[column], series_a[column], strict=True)
        ), column
    times = series_a.index.to_numpy()
    in_flight, counted = in_flight_series(kept, times), in_flight_series(streamed, times)
    assert in_flight.keys() == counted.keys() and all(
        np.array_equal(in_flight[k], counted[k]) for k in in_flight
    )
    assert [w.to_json() for w in kept.warnings] == [w.to_json() for w in streamed.warnings]


def test_a_run_without_records_says_so_when_asked_for_them(pair: tuple[Result, Result]) -> None:
    with pytest.raises(RecordsNotKept, match="keep_records=False"):
        _ = pair[1].records


def test_memory_of_a_run_without_records_does_not_grow_with_its_ios() -> None:
    """Four times the run: the held arrays grow by the per-interval counters only (a sparse
    histogram per op: 10 bytes per occupied bucket, about a hundred of the 1,613 occupied in a
    0.5 s interval), not by the I/Os; a records run holds 53 or more bytes per I/O
    (simcache.sim.collect)."""
    short = simcache.simulate("default", duration=2.0, seed=SEED, keep_records=False)
    long = simcache.simulate("default", duration=8.0, seed=SEED, keep_records=False)
    assert short.stream is not None and long.stream is not None
    extra_ios = long.meta["ios"] - short.meta["ios"]
    extra_intervals = len(long.stream.intervals) - len(short.stream.intervals)
    assert extra_ios > 10_000 and extra_intervals == 12
    grown = long.stream.nbytes() - short.stream.nbytes()
    occupied = sum(
        len(where)
        for part in long.stream.intervals
        if part.hist is None
        for where, _ in part.sparse
    )
    sparse_intervals = sum(part.hist is None for part in long.stream.intervals)
    assert occupied / sparse_intervals < 300  # both ops
    assert grown / extra_intervals < 10 * 300 + 200, (
        "a few sparse histograms and counters per interval"
    )
    # at most 2 x 1,613 occupied buckets an interval, however many I/Os it has: flat in I/Os
    assert grown / extra_intervals <= 10 * 2 * BUCKETS + 200
    assert grown < 0.05 * 53 * extra_ios, (
        "under 5% of what a records run holds for the same I/Os (at 1,750 I/Os/s)"
    )
    # one per sample, and the open one (empty at the end)
    assert len(long.stream.intervals) == len(long.series) + 1


def call(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue()


def test_cli_no_records_and_records_file(
    tmp_path: pytest.TempPathFactory, pair: tuple[Result, Result]
) -> None:
    path = tmp_path / "out.parquet"  # type: ignore[operator]
    code, out = call(
        [
            "run",
            "default",
            "--duration",
            f"{DURATION}s",
            "--seed",
            str(SEED),
            "--records",
            str(path),
        ]
    )
    assert code == 0 and f"records written to {path}" in out
    pd.testing.assert_frame_equal(pd.read_parquet(path), pair[0].records, check_exact=True)
    folder = tmp_path / "streamed"  # type: ignore[operator]
    code, out = call(
        [
            "run",
            "default",
            "--duration",
            f"{DURATION}s",
            "--seed",
            str(SEED),
            "--no-records",
            "--out",
            str(folder),
        ]
    )
    assert code == 0 and "no records kept: percentiles from latency histograms, within 1%" in out
    assert (
        f"results written to {folder}/ (unfinished, series, summary, breakdown as CSV and Parquet"
        in out
    )
    assert not (folder / "records.csv").exists() and (folder / "summary.parquet").exists()
    assert (
        pd.read_csv(folder / "summary.csv")["count"].tolist() == pair[0].summary["count"].tolist()
    )


def test_the_record_buffer_hands_rows_on_in_order_at_its_limit() -> None:
    """:class:`simcache.sim.collect.RecordBuffer`: the VMs' records go to the sink, as one
    float64 array a row a record, whenever ``limit`` of them are held, in the order they came;
    without a sink they wait for the sample (and grow the buffer past its first room). The fields
    come back as given: integers exact, floats bit for bit."""
    from simcache.sim.collect import RECORD_FIELDS, Record, RecordBuffer

    taken: list[np.ndarray] = []

    def record(k: int) -> Record:
        return (
            k,
            k % 2 == 1,
            4096 * (k + 1),
            k / 3,
            k / 3 + 1e-4,
            1e-4 / 7,
            0.0,
            0.0,
            0.0,
            0.0,
            k % 4,
        )

    def as_rows(data: np.ndarray) -> list[tuple[float, ...]]:
        return [tuple(row) for row in data.tolist()]

    buffer = RecordBuffer(limit=3)
    for k in range(4):
        buffer.add(*record(k))
    # no sink yet: all wait
    assert buffer.rows() == [record(k) for k in range(4)] and buffer.count == 4
    buffer.sink = taken.append
    for k in range(4, 9):
        buffer.add(*record(k))
    # handed on at 5 rows, then at 3
    assert [len(data) for data in taken] == [5, 3] and buffer.rows() == [record(8)]
    assert as_rows(np.vstack(taken)) == [tuple(map(float, record(k))) for k in range(8)]
    assert all(data.shape[1] == len(RECORD_FIELDS) and data.dtype == np.float64 for data in taken)
    big = RecordBuffer()
    for k in range(3000):  # past the first room (1,024 records) twice
        big.add(*record(k))
    data = big.take()
    assert (
        as_rows(data) == [tuple(map(float, record(k))) for k in range(3000)]
        and big.count == 0
        and big.rows() == []
    )


def test_a_sample_interval_of_more_ios_than_the_buffer_holds() -> None:
    """One VM at 200,000 I/Os per second with 1 s samples: each interval completes about three
    buffers' worth (BUFFER_ROWS = 65,536), handed on before the sample. The records run keeps
    every I/O once (the table's rows are the completed I/Os in completion order, as without the
    buffer) and the run without records counts them all, with the same counts and bytes per op,
    and percentiles within the histograms' error."""
    from simcache.sim.collect import BUFFER_ROWS

    scenario = simcache.load_scenario("default").model_copy(deep=True)
    spec = scenario.model_dump(mode="json", exclude_none=True)
    spec["run"] = {"duration": 2.0, "warmup": 0.5, "seed": 3, "sample_interval": 1.0}
    spec["cluster"]["hosts"] = 1
    spec["cluster"]["tier"] = "ram-ddr4"
    spec["events"] = []
    spec["groups"] = [
        {
            "name": "fast",
            "policy": "WB+0",
            "vms_per_host": 1,
            "workload": {
                "mode": "open",
                "iops": 200_000,
                "read_fraction": 0.5,
                "sizes": {"4KiB": 1.0},
                "working_set": "16MiB",
            },
        }
    ]
    spec.pop("checks", None)
    scenario = simcache.Scenario.model_validate(spec)
    kept = simcache.simulate(scenario)
    streamed = simcache.simulate(scenario, keep_records=False)
    records = kept.records
    assert len(records) > 4 * BUFFER_ROWS and streamed.stream is not None
    assert streamed.stream.completed == len(records)
    # kept in the order they completed, across the hand-overs
    assert records["complete_s"].is_monotonic_increasing
    assert not records["issue_s"].duplicated().any()  # one VM, open loop: no I/O twice
    for op in ("read", "write"):
        row_kept = kept.summary.query("group == 'fast' and op == @op").iloc[0]
        row_streamed = streamed.summary.query("group == 'fast' and op == @op").iloc[0]
        assert row_streamed["count"] == row_kept["count"] and row_streamed["mb_s"] == pytest.approx(
            row_kept["mb_s"], rel=1e-12
        )
        for q in ("p50_ms", "p99_ms"):
            assert within_error(row_streamed[q], row_kept[q]), (op, q)


def test_what_crosses_to_worker_processes_pickles() -> None:
    """A check's and a sweep's workers get ``Limits`` and send back Results holding
    ``StreamStats``: both must survive pickling, compiled or not (mypyc's native classes would
    not: see ``simcache.native.sources.NOT_COMPILED``)."""
    limits = Limits(1e6, 2e9)
    assert pickle.loads(pickle.dumps(limits)) == limits
    result = simcache.simulate(simcache.load_scenario("default"), duration=1.0, keep_records=False)
    again = pickle.loads(pickle.dumps(result))
    assert again.stream is not None and again.stream.completed == result.stream.completed
    pd.testing.assert_frame_equal(again.summary, result.summary)
