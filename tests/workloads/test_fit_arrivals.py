"""A fitted workload's arrivals (simcache.workloads.ingest.fitarrivals): the clock tick, the
inter-arrival SCV, the profile interval and law chosen by it, and compare's sub-second rows
(review 63, item 1).

Traces are CSV files read by the importer (the way users bring them), so their timestamps have the
clock the file was written at.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from support.cli import call
from support.traces import write_trace

from simcache.spec import Workload
from simcache.traces.formats import load_trace
from simcache.traces.trace import Trace
from simcache.workloads.ingest.compare import compare, synthetic_rows
from simcache.workloads.ingest.fit import fit_trace
from simcache.workloads.ingest.fitarrivals import fit_arrivals, profile_arrivals
from simcache.workloads.ingest.tracestats import clock_tick, interarrival_scv

LINE = 4096


@pytest.fixture(autouse=True)
def _trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def csv_trace(path: Path, times: np.ndarray, seed: int = 0, digits: int = 6) -> Trace:
    """Reads and writes of 4 KiB over 2000 blocks at ``times`` (s), written with ``digits``
    decimals."""
    rng = np.random.default_rng(seed)
    ops = rng.choice(["read", "write"], len(times))
    blocks = rng.integers(0, 2000, len(times))
    rows = [
        (round(float(t), digits), str(op), int(block) * LINE, LINE)
        for t, op, block in zip(times, ops, blocks, strict=True)
    ]
    return load_trace(write_trace(path, rows), "csv")


def microbursts(seconds: int = 30) -> np.ndarray:
    """100 I/Os 0.5 ms apart at the start of every second: all of each second's I/Os in its first
    50 ms."""
    return (np.arange(seconds)[:, None] + np.arange(100)[None, :] * 0.0005).ravel()


def table_of(trace: Trace, workload: Workload) -> dict[str, tuple[float, float, float]]:
    table = compare(trace, workload, seed=0)
    return {
        name: (float(t), float(s), float(e))
        for name, t, s, e in zip(
            table["statistic"],
            table["trace"],
            table["synthetic"],
            table["relative_error"],
            strict=True,
        )
    }


# ---- the trace's clock and gaps
# ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("times", "tick"),
    [
        ([0.0, 1.0, 7.0], 1.0),
        ([0.0, 0.5, 1.25], 0.01),
        ([0.0, 0.000001, 0.5], 1e-6),
        # 0.2 - 0.1 and 1.2 - 0.1 are not exactly 0.1 and 1.1 in floats
        ([0.2 - 0.1, 1.2 - 0.1, 61.5 - 0.1], 0.1),
        (np.random.default_rng(0).random(50).tolist(), 1e-9),
    ],
)
def test_clock_tick_is_the_coarsest_decade_every_time_is_a_multiple_of(
    times: list[float], tick: float
) -> None:
    assert clock_tick(np.array(times)) == tick


def test_interarrival_scv_is_variance_over_squared_mean() -> None:
    assert interarrival_scv(np.arange(10) * 0.01) == pytest.approx(0.0, abs=1e-20)
    # gaps 1 and 3: mean 2, population variance 1
    assert interarrival_scv(np.array([0.0, 1.0, 4.0])) == pytest.approx(0.25)
    assert math.isnan(interarrival_scv(np.array([2.0])))
    assert math.isnan(interarrival_scv(np.array([3.0, 3.0, 3.0])))


@pytest.mark.parametrize("arrivals", ["uniform", "poisson"])
def test_profile_arrivals_are_what_the_generator_gives(arrivals: str) -> None:
    """The closed form fit_arrivals judges candidates by, against the generator itself over 40
    passes of a profile: the same counts per interval (uniform: within one I/O each) and SCVs
    within 5% (Poisson: two draws of about 16,000 gaps)."""
    counts = np.array([5, 0, 20, 3, 12, 0, 0, 40] * 40)
    interval = 0.05
    duration = len(counts) * interval
    closed = profile_arrivals(counts, interval, arrivals, seed=1)
    workload = Workload(
        mode="open",
        iops=counts.sum() / duration,
        arrivals=arrivals,
        duty_cycle={"shape": "profile", "interval": interval, "levels": counts[:8].tolist()},
    )
    generated = synthetic_rows(workload, duration, seed=2)["time"]
    assert interarrival_scv(closed) == pytest.approx(interarrival_scv(generated), rel=0.05)
    if arrivals == "uniform":
        per_interval = np.bincount((closed / interval).astype(int), minlength=len(counts))
        assert per_interval.tolist() == counts.tolist()
        generated_counts = np.bincount((generated / interval).astype(int), minlength=len(counts))
        assert np.all(np.abs(generated_counts[: len(counts)] - counts) <= 1)


# ---- the choice
# ----------------------------------------------------------------------------------------------


def test_sub_second_bursts_get_a_sub_second_profile(tmp_path: Path) -> None:
    """Each second's I/Os in its first 50 ms: its SCV (92) is far from what any 1 s or 100 ms
    profile gives (0 and 1; about 82 at 100 ms), and a 10 ms profile of evenly spaced I/Os gives it
    back. compare's 100 ms rows see it: before, the fit spread each second's 100 I/Os evenly over it
    (10 in the busiest 100 ms against the trace's 100, SCV about 0)."""
    trace = csv_trace(tmp_path / "bursts.csv", microbursts())
    fitted = fit_trace(trace)
    duty = fitted.workload.duty_cycle
    assert duty is not None and duty.interval == pytest.approx(0.01)
    assert fitted.workload.arrivals == "uniform"
    assert fitted.arrivals.tick == pytest.approx(1e-4)
    facts = dict(fitted.facts)
    assert facts["clock tick"].startswith("100 µs")
    assert facts["arrivals"].startswith("uniform through a 10 ms profile: the trace's I/O count")
    assert (
        "SCV trace 92.11, fitted 92.11 (within 10%; tried uniform through a 1 s profile 0;"
        in (facts["inter-arrival time"])
    )
    rows = table_of(trace, fitted.workload)
    assert rows["I/Os in busiest 100 ms"][:2] == (100.0, 100.0)
    assert abs(rows["index of dispersion (100 ms counts)"][2]) < 0.1
    assert abs(rows["inter-arrival time SCV"][2]) < 0.1
    assert abs(rows["mean inter-arrival time (ms)"][2]) < 0.01


def test_a_poisson_trace_gets_poisson_arrivals_through_its_seconds(tmp_path: Path) -> None:
    """Poisson arrivals at 300 I/O/s: evenly spaced ones through the 1 s profile give an SCV near 0
    (what the fit did before), Poisson ones near the trace's 1. The price: their own variance on
    each second's count (about 1 more on the index of dispersion of the 1 s counts)."""
    times = np.cumsum(np.random.default_rng(3).exponential(1 / 300, 300 * 40))
    trace = csv_trace(tmp_path / "poisson.csv", times - times[0], digits=9)
    fitted = fit_trace(trace)
    assert fitted.workload.arrivals == "poisson"
    assert fitted.workload.duty_cycle is not None and fitted.workload.duty_cycle.interval == 1.0
    rows = table_of(trace, fitted.workload)
    assert rows["inter-arrival time SCV"][0] == pytest.approx(1.0, abs=0.05)
    assert abs(rows["inter-arrival time SCV"][2]) < 0.1
    trace_dispersion, synthetic_dispersion, _ = rows["index of dispersion (1 s counts)"]
    assert synthetic_dispersion == pytest.approx(trace_dispersion + 1.0, rel=0.5)


def test_whole_second_timestamps_keep_evenly_spaced_seconds(tmp_path: Path) -> None:
    """Timestamps in whole seconds say nothing finer: every second's count, evenly spaced, as
    before; compare has no 100 ms or inter-arrival rows (the trace's gaps are 0 or whole
    seconds)."""
    times = np.sort(np.random.default_rng(4).integers(0, 60, 3000)).astype(float)
    trace = csv_trace(tmp_path / "seconds.csv", times)
    fitted = fit_trace(trace)
    assert fitted.workload.arrivals == "uniform"
    assert fitted.workload.duty_cycle is not None and fitted.workload.duty_cycle.interval == 1.0
    assert dict(fitted.facts)["arrivals"].endswith("(the trace has no timing finer than 1 s)")
    rows = table_of(trace, fitted.workload)
    assert not [name for name in rows if "100 ms" in name or "inter-arrival" in name]
    # the same counts, but for the one I/O the generator's random phase moves across a second
    trace_busiest, synthetic_busiest, _ = rows["I/Os in busiest second"]
    assert abs(synthetic_busiest - trace_busiest) <= 1


def test_a_given_interval_is_the_only_one_tried(tmp_path: Path) -> None:
    fit = fit_arrivals(microbursts(5), interval=0.5)
    assert {choice.interval for choice in fit.tried} == {0.5}
    assert fit.interval == 0.5


def test_a_profile_longer_than_its_limit_takes_whole_multiples() -> None:
    """1 ms steps over 250 s would be 250,001 levels, past the 100,000 a profile takes: 3 ms."""
    times = np.cumsum(np.full(25_000, 0.01))
    fit = fit_arrivals(times - times[0], interval=0.001)
    assert fit.interval == pytest.approx(0.003)


# ---- the commands
# ---------------------------------------------------------------------------------------------


def test_fit_and_compare_trace_print_the_arrivals(tmp_path: Path) -> None:
    path = tmp_path / "bursts.csv"
    csv_trace(path, microbursts(10))
    out = tmp_path / "fitted.toml"
    code, printed, _ = call(["fit", str(path), "-o", str(out)])
    assert code == 0
    assert "  disk: arrivals: uniform through a 10 ms profile" in printed
    assert "  disk: inter-arrival time: mean " in printed
    code, table, _ = call(["compare-trace", str(path), str(out)])
    assert code == 0
    for row in ("I/Os in busiest 100 ms", "inter-arrival time SCV", "all-I/O hit ratio, cache 1%"):
        assert row in table
