"""The analytic estimate (simcache.estimate): queueing theory, and agreement with the simulator on
the library.

Theory cases are exact: the station formulas against Pollaczek-Khinchine and
Erlang C (Kleinrock, Queueing Systems Vol. 1, ch. 5 and 3), the MVA recursion
against the machine-repairman (finite-source M/M/1//N) result, and a whole
scenario that reduces to an M/M/1 queue.

Library comparisons run each scenario (and its cheap variants) once through
``simulate(seed=1)`` and ``estimate()`` with the same duration.

Bottleneck rule. Symmetric stations carry the same flows and tie
(``host0.peer.tx`` and ``host1.peer.rx``; ``host0.storage.tx`` and
``array.rx``), and saturated stations all sit at 100%. So the estimate's
bottleneck matches when, in the *simulator's* utilizations, that station is
within ``TIE`` of the highest one; that also makes its kind (peer link, storage
link, tier, array) one of the kinds tied for the top.

Latency rule. Where the model's assumptions hold, the mean write latency (of
each group, and of all writes) is within ``AGREE`` (15%) of the simulator's.
The cases where it is not are listed in ``GAPS`` with the reason, and a test
pins the size and direction of each gap so that a model change that closes or
widens it is noticed.

Several peer ports (``cluster.peer_links``). With one port the estimate is
the one it was before ports could be counted. With two, a few cases built to
load the ports unevenly are simulated over two seeds, and each peer port's
utilization is within ``PORT_AGREE`` (10%) of the simulator's, on top of the
bottleneck and latency rules.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from functools import cache
from typing import Any

import pytest
from support.builders import PEER_BOUND_ARRAY, peer_bound_cluster
from support.paths import ROOT

import simcache
from simcache.base.kept import Kept
from simcache.cli.main import main
from simcache.estimate import Estimate, estimate, mgc_wait, mva_closed
from simcache.estimate.coverage import not_modelled
from simcache.estimate.solver import TOLERANCE
from simcache.estimate.theory.queueing import waiting_probability
from simcache.physics.cluster import framed_bytes
from simcache.results.result import Result
from simcache.spec import Scenario, VMotion, builtin_scenarios

TIE = 0.02  # utilizations this close to the simulator's highest count as tied for bottleneck
AGREE = 0.15  # relative tolerance of mean write latency where the model's assumptions hold
PORT_AGREE = 0.10  # relative tolerance of a peer port's utilization (several peer ports per host)

# (scenario, variant, duration in s or None for the scenario's own): cheap enough to simulate in a
# test.
CASES = [
    ("backing_array", "base", None),
    ("burst_absorb", "base", None),
    ("burst_absorb", "fcfs", None),
    ("full_dirty_cache", "base", None),
    ("full_dirty_cache", "bare", None),
    ("backing_array", "writes", None),
    ("backing_array", "raid5", None),
    ("backing_array", "wt", None),
    ("backing_array", "wb", None),
    ("compile_workload", "base", None),
    ("compile_workload", "incr_late", None),
    ("compile_workload", "wb0", None),
    ("compile_workload", "nvme", None),
    ("compression_1gbe", "base", None),
    ("compression_1gbe", "nocomp", None),
    ("compression_1gbe", "wb0", None),
    ("compression_1gbe", "lone-always", None),
    ("compression_1gbe", "lone-off", None),
    ("default", "base", 12.0),
    ("destager_fill", "base", None),
    ("destager_fill", "bursty", None),
    ("destager_fill", "wt", None),
    ("destager_fill", "sustained", None),
    ("interconnect_comparison", "base", None),
    # under WT a peer outage changes nothing; the estimate does not model outages
    ("peer_loss", "wt", None),
    ("interconnect_comparison", "gbe_256k", None),
    ("interconnect_comparison", "wb0_32k", None),
    ("large_writes_flash", "base", None),
    ("large_writes_flash", "ram", None),
    ("large_writes_flash", "smooth_gc", None),
    ("validate_sata_ssd_s3700", "base", None),
    ("validate_sata_ssd_s3700", "randwrite", None),
    ("validate_sata_ssd_s3700", "seqread", None),
    ("validate_nvme_p3700", "qd256-read", None),
    ("validate_nvme_p3700", "randwrite", None),
    ("validate_nvme_pm9a3_ignalina", "base", None),
    ("validate_sata_ssd_d3_s4610_louwrentius", "qd32-read", None),
    ("validate_sata_ssd_d3_s4610_louwrentius", "qd8-read", None),
    ("validate_scm_optane_p4800x_anandtech", "qd16-read", None),
    ("validate_nvme_qlc_p5336_storagereview", "base", None),
    ("validate_nvme_qlc_p5336_storagereview_writes", "qd1-16k", None),
    ("validate_nvme_micron_9550_storagereview", "base", None),
    ("validate_nvmeof_100gbe_spdk2405", "base", None),
    ("validate_nvmeof_100gbe_spdk2405", "tcp", None),
    ("validate_nvmeof_rdma_100gbe_systor17", "base", None),
    ("validate_roce_100gbe_perftest", "base", None),
    ("validate_roce_100gbe_perftest", "bw", None),
    ("ram_tier", "base", 6.0),
    ("ram_tier", "wb1", 6.0),
    ("ram_tier", "sata-wb1", 6.0),
    ("redundancy_multiplier", "base", 4.0),
    ("redundancy_multiplier", "wb2", 4.0),
    ("redundancy_multiplier_1gbe", "base", 6.0),
    ("redundancy_multiplier_1gbe", "shared", 2.0),
    ("replication_protocols", "base", None),
    ("replication_protocols", "memory", None),
    ("replication_protocols", "async", None),
    # reads only: the bottleneck (the one drive) is what is compared (qd2: at one
    ("validate_hdd_7200_qd", "qd2", 10.0),
    # outstanding I/O the estimate reports every utilization as 0, on main too: a closed loop of one
    # customer)
]


def one_group_gap(
    name: str, variant: str, group: str, low: float, high: float, why: str
) -> dict[tuple[str, str, str], tuple[float, float, str]]:
    """The gap of a scenario whose writes all come from ``group``: the same for "all" and for
    that group."""
    return {
        (name, variant, "all"): (low, high, why),
        (name, variant, group): (low, high, "as for all: one group"),
    }


# (scenario, variant, group) -> (lowest, highest estimate/simulation ratio of mean write latency,
# why).
GAPS = {
    ("backing_array", "wb", "log"): (
        1.1,
        1.3,
        "the log's 1 s bursts: the estimate destages unpaced (docs/estimate.md, Not covered) and "
        "in a burst reads each "
        "max_batch (2 MiB here) from the tier as one FCFS operation ahead of the log's writes; the "
        "simulator's log mean "
        "hardly moves with pacing or tier scheduling (0.397-0.404 ms), the estimate's grows with "
        "max_batch (1.09 at "
        "1 MiB); 1.18 measured",
    ),
    **one_group_gap(
        "destager_fill",
        "sustained",
        "burst",
        0.5,
        0.85,
        "saturation: the buffer fills under a steady 2 x R, and the fluid drain rate (flushers' "
        "MVA with a binomial spindle "
        "imbalance) is ~10% above the simulator's; the time spent full, hence the blocked writes, "
        "is underestimated",
    ),
    **one_group_gap(
        "compile_workload",
        "nvme",
        "writes",
        1.1,
        1.45,
        "10 ms micro-bursts (10 ms on, 70 ms off): each burst is solved as a steady state at the "
        "burst rate (peer port ~75% "
        "busy), but a 10 ms burst never builds the steady-state queue, so the estimate over-counts "
        "the queueing",
    ),
    **one_group_gap(
        "redundancy_multiplier_1gbe",
        "shared",
        "writers",
        math.inf,
        math.inf,
        "overload: the shared 1GbE fabric is offered 101% of its rate, so there is no steady state "
        "and the estimate says "
        "unbounded (Estimate.warnings); the simulator's mean only measures the run's length",
    ),
    **one_group_gap(
        "compression_1gbe",
        "wb0",
        "build",
        0.75,
        1.0,
        "the tier pipe runs at ~98% (384 KiB writes on the 215 MB/s controller plus destage "
        "reads); MVA with deterministic "
        "residuals is optimistic for the last few per cent before saturation (0.93 since destage "
        "reads yield to VM I/O in "
        "the simulator: the estimate still queues them FCFS, docs/estimate.md Not covered)",
    ),
    **one_group_gap(
        "burst_absorb",
        "base",
        "db",
        1.25,
        1.6,
        "destage reads: the estimate queues them FCFS with the VMs' writes, as the fcfs variant "
        "does (there they agree), "
        "the simulator's default priority scheduling lets the writes go first (docs/estimate.md, "
        "Not covered); 1.41 measured",
    ),
    **one_group_gap(
        "full_dirty_cache",
        "base",
        "stream",
        0.65,
        0.85,
        "one spindle with 4 outstanding large requests: the estimate's queue at the single drive "
        "is short by the same "
        "factor as written through (variant bare, 0.80), so the gap is the array's, not the "
        "destager's; 0.83 measured",
    ),
    **one_group_gap(
        "full_dirty_cache",
        "bare",
        "stream",
        0.7,
        0.85,
        "one spindle with 4 outstanding 4 MiB writes (28 ms each, streaming): the estimate's queue "
        "at the drive is short; 0.80 measured",
    ),
    **one_group_gap(
        "compile_workload",
        "base",
        "writes",
        1.1,
        1.3,
        "destage reads: the estimate queues them FCFS with the VMs' writes on the SATA tier, the "
        "simulator's default "
        "priority scheduling lets the writes go first (docs/estimate.md, Not covered); 1.20 "
        "measured",
    ),
}


def kind(station: str) -> str:
    """peer link, storage link, tier or array: what a bottleneck is, whatever its host."""
    if station == "array":
        return "array"
    if station.endswith(".tier"):
        return "tier"
    if ".peer" in station or station == "peer.fabric":  # host0.peer.tx, host0.peer1.rx, peer.fabric
        return "peer link"
    return "storage link"


@cache
def pair(name: str, variant: str, duration: float | None) -> tuple[Result, Estimate]:
    scenario = simcache.load_scenario(name).variant(variant)
    return simcache.simulate(scenario, seed=1, duration=duration), estimate(
        scenario, duration=duration
    )


def write_means(result: Result) -> dict[str, float]:
    writes = result.summary[result.summary["op"] == "write"]
    return {
        str(g): float(m)
        for g, m in zip(writes["group"], writes["mean_ms"], strict=True)
        if not math.isnan(m)
    }


def simulated_utilization(result: Result) -> dict[str, float]:
    """Mean utilization of every station over the measured window (the intervals after warm-up)."""
    start, _ = result.window
    series = result.series[result.series.index > start]
    return {
        c.removeprefix("util."): float(series[c].mean())
        for c in series.columns
        if c.startswith("util.")
    }


def assert_bottleneck_tied(simulated: Result, estimated: Estimate) -> None:
    """The estimate's bottleneck is within TIE of the simulator's busiest station, and of a kind
    tied for the top."""
    utilization = simulated_utilization(simulated)
    top = max(utilization.values())
    tied = {s for s, u in utilization.items() if u >= top - TIE}
    station, _ = estimated.bottleneck()
    assert station in tied, (
        f"estimate names {station}; the simulator's top stations are {sorted(tied)} at {top:.2f}"
    )
    assert kind(station) in {kind(s) for s in tied}


# --------------------------------------------------------------------------- theory


def test_mm1_wait_is_pollaczek_khinchine_with_exponential_service() -> None:
    # M/M/1: Wq = rho / (1 - rho) * S (Kleinrock vol. 1, eq. 3.26)
    arrival, service = 800.0, 1e-3
    rho = arrival * service
    assert mgc_wait(arrival, service, 1.0) == pytest.approx(rho / (1 - rho) * service, rel=1e-12)


def test_md1_wait_is_half_of_mm1() -> None:
    # M/D/1: Wq = rho S / (2 (1 - rho)) (Pollaczek-Khinchine with zero service variance)
    arrival, service = 500.0, 1.5e-3
    rho = arrival * service
    assert mgc_wait(arrival, service, 0.0) == pytest.approx(
        rho * service / (2 * (1 - rho)), rel=1e-12
    )


def test_mmc_wait_is_close_to_erlang_c() -> None:
    # M/M/c: Wq = C(c, a) S / (c (1 - rho)), Erlang C exact; the estimate uses Sakasegawa's
    # approximation of C.
    for servers, rho in ((2, 0.8), (8, 0.9)):
        service = 1e-3
        arrival = rho * servers / service
        a = arrival * service
        tail = a**servers / math.factorial(servers) / (1 - rho)
        erlang_c = tail / (sum(a**k / math.factorial(k) for k in range(servers)) + tail)
        exact = erlang_c * service / (servers * (1 - rho))
        assert mgc_wait(arrival, service, 1.0, servers) == pytest.approx(exact, rel=0.1)
        assert waiting_probability(rho, servers) == pytest.approx(erlang_c, rel=0.1)


def test_saturated_station_waits_forever() -> None:
    assert mgc_wait(1000.0, 1e-3, 1.0) == math.inf


def test_mva_on_one_station_is_the_machine_repairman() -> None:
    # N customers thinking Z (exponential) and one exponential server S: p0 = 1 / sum_n N!/(N-n)!
    # (S/Z)^n, X = (1 - p0) / S, R = N / X - Z (Kleinrock vol. 1, sec. 3.8, finite-source M/M/1//N).
    service, think = 2e-3, 10e-3
    for customers in (1, 3, 8, 20):
        p0 = 1.0 / sum(
            math.factorial(customers) / math.factorial(customers - n) * (service / think) ** n
            for n in range(customers + 1)
        )
        throughput = (1.0 - p0) / service
        x, r, queues = mva_closed([service], think, customers)
        assert x == pytest.approx(throughput, rel=1e-12)
        assert r == pytest.approx(customers / throughput - think, rel=1e-12)
        assert queues[0] + x * think == pytest.approx(customers, rel=1e-12)


def single_tier_scenario(rate: float) -> dict[str, object]:
    """One host, a one-channel RAM tier with exponential service, Poisson WB+0 writes of 4 KiB."""
    return {
        "name": "mm1",
        "run": {"duration": "10s", "warmup": "1s", "sample_interval": "1s"},
        "cluster": {
            "hosts": 1,
            "tier": {
                "profile": "ram-ddr4",
                "channels": 1,
                "service": "exponential",
                "read_latency": "50us",
                "write_latency": "50us",
                # a plain unit: no copy-thread time per byte (the RAM profile's channels)
                "read_channel_bandwidth": None,
                "write_channel_bandwidth": None,
            },
            "peer_link": "10GbE",
            "storage_link": "10GbE",
        },
        "array": {"profile": "array-24x15k"},
        "groups": [
            {
                "name": "w",
                "policy": "WB+0",
                "workload": {"mode": "open", "iops": rate, "sizes": "4KiB", "working_set": "1GiB"},
            }
        ],
    }


def test_single_tier_station_is_mm1() -> None:
    # Each write is a tier write and, destaged alone at this load, a tier read of the same size and
    # service: an M/M/1 queue at twice the write rate, R = S / (1 - 2 lambda S).
    rate = 3000.0
    scenario = simcache.load_scenario(single_tier_scenario(rate))
    tier = scenario.cluster.tier
    service = tier.write_latency + 4096 / tier.write_bandwidth
    result = estimate(scenario)
    assert result.mean_ms("w", "write") == pytest.approx(
        service / (1 - 2 * rate * service) * 1e3, rel=1e-6
    )
    assert result.utilization["host0.tier"] == pytest.approx(2 * rate * service, rel=1e-6)
    assert result.bottleneck()[0] in ("host0.tier", "array")


# --------------------------------------------------------------------------- the estimate's shape


def test_summary_has_the_simulators_columns_and_groups() -> None:
    result = estimate("default")
    columns = [
        "group",
        "op",
        "count",
        "iops",
        "mb_s",
        "mean_ms",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "p999_ms",
    ]
    assert list(result.summary.columns) == columns
    assert list(result.summary["group"].unique()) == ["db", "build", "web", "all"]
    writes = result.summary[result.summary["op"] == "write"].set_index("group")
    assert (writes["p50_ms"] <= writes["p99_ms"]).all()
    assert (writes["p99_ms"] <= writes["p999_ms"]).all()


@pytest.mark.parametrize("links", [1, 3])
def test_utilization_names_are_the_simulators(links: int) -> None:
    # One peer port per host: host0.peer.tx; several: host0.peer0.tx, host0.peer1.tx, ...; one
    # peer.fabric either way.
    scenario = (
        simcache.load_scenario("redundancy_multiplier_1gbe")
        .variant("shared")
        .with_overrides({"cluster.peer_links": links})
    )
    result = estimate(scenario)
    simulated = simcache.simulate(scenario, duration=0.5)
    names = {c.removeprefix("util.") for c in simulated.series.columns if c.startswith("util.")}
    assert set(result.utilization) == names


def test_destager_fluid_fills_and_drains_like_the_field_report() -> None:
    # destager_fill: a 256 MiB buffer offered ~5 x R fills in about 1.6 s and then accepts R (~38
    # MB/s).
    fluid = estimate("destager_fill").destager[0]
    assert fluid.first_full_s == pytest.approx(1.6, rel=0.2)
    assert fluid.accepted_while_full_bytes_s == pytest.approx(38e6, rel=0.2)
    assert fluid.drain_time_s == pytest.approx(fluid.capacity_bytes / 38e6, rel=0.25)
    assert 0.0 < fluid.full_fraction < 0.5


def test_duration_override_shortens_the_window() -> None:
    result = estimate("default", duration=8.0)
    assert result.window == (0.8, 8.0)


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("default", "base"),
        ("destager_fill", "base"),
        ("compile_workload", "base"),
        ("compression_1gbe", "base"),
        ("large_writes_flash", "base"),
    ],
)
def test_cold_and_warm_estimates_agree_exactly(name: str, variant: str) -> None:
    # A scenario object seen before reuses its compiled form (warm); a copy of it is compiled afresh
    # (cold). What is kept between calls (the compiled network, the all-groups-on solution with its
    # hit ratios, batch shapes) must not change the answer, not even in the last bit, whatever was
    # estimated in between.
    scenario = simcache.load_scenario(name).variant(variant)
    reference = estimate(scenario.model_copy()).to_json()
    assert estimate(scenario).to_json() == reference
    estimate("redundancy_multiplier")
    assert estimate(scenario).to_json() == reference
    assert estimate(scenario.model_copy()).to_json() == reference


def test_kept_layouts_leave_least_recently_used_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # estimate() keeps the layout of the scenario objects it estimated last (by identity), at most
    # _PREPARED_LIMIT of them; one estimated again is the most recently used, the one estimated
    # longest ago leaves first. Shown with room for two, on three objects of the smallest library
    # scenario.
    prepared = sys.modules["simcache.estimate"]
    monkeypatch.setattr(prepared, "_PREPARED", Kept(2))
    first, second, third = (simcache.load_scenario("ram_tier") for _ in range(3))
    estimate(first)
    estimate(second)
    estimate(first)  # kept: now the most recently used
    estimate(third)  # evicts second, estimated longest ago
    kept = [entry[0] for entry in prepared._PREPARED.values()]
    assert [id(scenario) for scenario in kept] == [id(first), id(third)]


def test_the_whole_library_fits_among_the_kept_layouts() -> None:
    # A pass over the library (a check of it, bench_estimate.py's warm figure) finds every scenario
    # it estimated before only if all of them are kept: with fewer places than scenarios and
    # variants, each leaves before its turn comes again and every call is a cold one.
    count = sum(1 + len(simcache.load_scenario(name).variants) for name in builtin_scenarios())
    assert count <= sys.modules["simcache.estimate"]._PREPARED_LIMIT


def test_solver_copy_shares_every_attribute() -> None:
    # Timeline states that differ only in vMotions or in buffer modes reuse a solved state through
    # Solver.copy(), which lists the attributes to carry over (compiled classes have no copy.copy).
    # An attribute added to Solver but not to that list would be missing from the copies: compare
    # the list with a solved solver's attributes (its __dict__ from the sources, mypyc's attribute
    # list when compiled).
    from simcache.estimate.layout import Layout
    from simcache.estimate.solver import SOLVER_STATE, Solver, solve_hit_ratios

    solved = solve_hit_ratios(Layout(simcache.load_scenario("default"))).solved
    assert solved is not None
    key, solver, _ = solved
    attributes = getattr(Solver, "__mypyc_attrs__", None) or tuple(vars(solver))
    assert set(attributes) == {"c", "key", "net", *SOLVER_STATE}
    other_key = dataclasses.replace(key, vmotions=frozenset({0}))
    twin = solver.copy(other_key)
    assert twin.key is other_key and twin.c is solver.c and twin.net is solver.net
    for name in SOLVER_STATE:
        copied, original = getattr(twin, name), getattr(solver, name)
        # compiled, a tuple attribute is rebuilt at each access: compare its items
        if isinstance(original, tuple):
            assert all(a is b for a, b in zip(copied, original, strict=True)), name
        # compiled, a number attribute is unboxed: boxed anew at each access
        elif isinstance(original, int | float):
            assert copied == original, name
        else:
            assert copied is original, name


def test_repeated_duty_periods_are_copied_with_the_answer_of_walking_them() -> None:
    # compile_workload: a 10 ms burst every 80 ms for 5 s, the destage backlog growing by the same
    # amount each period. After two alike periods the timeline copies the next ones (shifted in time
    # and level) instead of walking them; walking every period must give the same figures to
    # rounding.
    from simcache.estimate.layout import Layout
    from simcache.estimate.result import summarize
    from simcache.estimate.solver import solve_hit_ratios
    from simcache.estimate.timeline import Timeline

    layout = Layout(simcache.load_scenario("compile_workload"))
    hits = solve_hit_ratios(layout)
    pieces = Timeline(layout, hits).run()
    copied = summarize(layout, pieces).to_json()
    assert max(piece.copies for piece in pieces) > 50
    layout.schedule.period_intervals = 0  # no period: walk every piece
    walked = summarize(layout, Timeline(layout, hits).run()).to_json()
    for row, other in zip(copied["summary"], walked["summary"], strict=True):
        for column in ("iops", "mb_s", "mean_ms", "p99_ms"):
            if row[column] is not None:
                assert row[column] == pytest.approx(other[column], rel=1e-9)
    for station, value in copied["utilization"].items():
        assert value == pytest.approx(walked["utilization"][station], rel=1e-9, abs=1e-12)
    assert copied["destager"][0]["peak_backlog_bytes"] == pytest.approx(
        walked["destager"][0]["peak_backlog_bytes"], rel=1e-9
    )


def test_peak_backlog_counts_a_backlog_still_rising_at_the_end() -> None:
    # large_writes_flash, ram variant: the RAM tier accepts ~311 MB/s of write-back that the NAS
    # drains at ~8 MB/s; the 8 GiB buffer never fills in the 8 s run, so the backlog peaks at the
    # end: (accept - drain) x 8 s.
    scenario = simcache.load_scenario("large_writes_flash").variant("ram")
    fluid = estimate(scenario).destager[0]
    assert math.isnan(fluid.first_full_s)
    rise = fluid.accept_rate_bytes_s - fluid.drain_rate_bytes_s
    assert fluid.peak_backlog_bytes == pytest.approx(rise * scenario.run.duration, rel=1e-9)


def test_cli_estimate_prints_table_bottleneck_and_destager(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["estimate", "destager_fill"]) == 0
    out = capsys.readouterr().out
    assert (
        "mean_ms" in out
        and "bottleneck: array" in out
        and "Destage buffer" in out
        and "fills in" in out
    )
    assert main(["estimate", "destager_fill", "--json"]) == 0
    assert '"bottleneck"' in capsys.readouterr().out


# --------------------------------------------------------------------------- the library


# Library scenarios made to show a scheduled event (failures, moves, slowdowns, rebuilds): their
# figures come from the event, which the estimate leaves out (a steady-state model). Their test here
# is that the estimate says so.
EVENT_SCENARIOS = (
    "array_rebuild",
    "device_failure",
    "device_slow",
    "host_failure_ha",
    "link_down",
    "link_slow",
    "vmotion",
)


def test_every_library_scenario_is_covered() -> None:
    """A scenario added to scenarios/ must be added to CASES (a new scenario is where the model
    is untested), or to EVENT_SCENARIOS when its point is an event the estimate does not model."""
    assert set(builtin_scenarios()) <= {name for name, _, _ in CASES} | set(EVENT_SCENARIOS)


@pytest.mark.parametrize("name", EVENT_SCENARIOS)
def test_an_event_scenarios_estimate_names_each_event_it_leaves_out(name: str) -> None:
    """Every variant's estimate carries a note naming each of its events by kind
    (simcache.estimate.coverage), so its steady-state figures are never shown as if the event had
    been followed."""
    scenario = simcache.load_scenario(name)
    for variant in ["base", *scenario.variants]:
        run = scenario.variant(variant) if variant != "base" else scenario
        notes = " ".join(not_modelled(run)).lower()
        assert run.events, (name, variant)
        for event in run.events:
            assert event.kind in notes, (name, variant, event.kind)


@pytest.mark.parametrize(
    ("name", "variant", "duration"), CASES, ids=[f"{n}:{v}" for n, v, _ in CASES]
)
def test_bottleneck_matches_the_simulator(name: str, variant: str, duration: float | None) -> None:
    simulated, estimated = pair(name, variant, duration)
    assert_bottleneck_tied(simulated, estimated)


@pytest.mark.parametrize(
    ("name", "variant", "duration"), CASES, ids=[f"{n}:{v}" for n, v, _ in CASES]
)
def test_mean_write_latency_matches_or_the_gap_is_documented(
    name: str, variant: str, duration: float | None
) -> None:
    simulated, estimated = pair(name, variant, duration)
    for group, simulated_ms in write_means(simulated).items():
        estimated_ms = estimated.mean_ms(group, "write")
        ratio = estimated_ms / simulated_ms
        gap = GAPS.get((name, variant, group))
        where = (
            f"{name}:{variant} {group}: estimate {estimated_ms:.3f} ms vs simulated "
            f"{simulated_ms:.3f} ms (ratio {ratio:.2f})"
        )
        if gap is None:
            assert abs(ratio - 1.0) <= AGREE, where
        else:
            low, high, why = gap
            assert low <= ratio <= high, f"{where}; documented gap {low}-{high}: {why}"


# --------------------------------------------------------------------------- several peer ports per
# host


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("default", "base"),  # with a vMotion
        ("redundancy_multiplier_1gbe", "base"),  # a vMotion sharing its port with replicas
        ("redundancy_multiplier_1gbe", "shared"),  # a shared fabric
        ("redundancy_multiplier", "wb2"),  # two replicas leaving one port together
        ("compression_1gbe", "base"),  # adaptive compression
    ],
)
def test_one_peer_link_keeps_the_single_port_names(name: str, variant: str) -> None:
    # One port per host (the default) keeps the station names scenario checks and docs refer to.
    scenario = simcache.load_scenario(name).variant(variant)
    assert scenario.cluster.peer_links == 1
    one = estimate(scenario)
    assert "host0.peer.tx" in one.utilization
    assert not [n for n in one.utilization if ".peer0." in n]


def two_port_case(
    hosts: int, log: dict[str, Any], compressibility: float = 0.0, **cluster: Any
) -> Scenario:
    """Two 1GbE peer ports per host. A WB+2 group "db" writes 30 MB/s of 64 KiB blocks on every
    host; its replicas to host+1 (d = 1) leave on port 0 and those to host+2 (d = 2) on port 1. A
    WB+1 group "log" on host0 alone sends all its replicas to host1 on port 0. RAM tiers, 10GbE
    storage and a 24 x 15K array keep the peer ports the only limit (``log``: the log group's
    workload, writes of 64 KiB)."""
    blocks = {
        "read_fraction": 0.0,
        "sizes": "64KiB",
        "working_set": "4GiB",
        "access": "sequential",
        "compressibility": compressibility,
    }
    return simcache.load_scenario(
        {
            "name": "two-ports",
            "run": {"duration": "8s", "warmup": "1s", "sample_interval": "0.25s"},
            "cluster": peer_bound_cluster(hosts, 2, **cluster),
            "array": PEER_BOUND_ARRAY,
            "groups": [
                {
                    "name": "db",
                    "policy": "WB+2",
                    "workload": {"mode": "open", "throughput": "30MB/s", **blocks},
                },
                {"name": "log", "policy": "WB+1", "hosts": [0], "workload": {**log, **blocks}},
            ],
        }
    )


def two_port_vmotion() -> Scenario:
    """redundancy_multiplier_1gbe (4 hosts, WB+1 replicas at 30 MB/s per host, all on port 0)
    with two peer ports and a 512 MiB vMotion from host0 to host1 in 3 streams: two on port pair
    0, one on the idle pair 1."""
    return simcache.load_scenario("redundancy_multiplier_1gbe").with_overrides(
        {"cluster.peer_links": 2, "events.0.streams": 3}
    )


def writes_per_host(scenario: Scenario, group: int) -> float:
    """Writes/s a write-only group of one write size issues on each of its hosts: VMs x
    throughput / size."""
    spec = scenario.groups[group]
    (size,), _ = spec.workload.size_mix
    assert spec.workload.throughput is not None
    return spec.vms_per_host * spec.workload.throughput / size


def port_load(scenario: Scenario, rate: float, payload: float) -> float:
    """Utilization of a port carrying ``rate`` transfers/s of ``payload`` bytes: rate x framed
    bytes / line rate."""
    link = scenario.cluster.peer_link
    return rate * framed_bytes(link, payload)[0] / link.bandwidth


TWO_PORT_CASES = {
    # host0's port 0 carries db's replicas to host1 and the closed log group's (8 outstanding),
    # which fill it: it saturates (with host1's port 0 rx, which receives the same flows); every
    # other peer port carries only one db replica stream, at 25%.
    "wb2-3-hosts-port0-saturated": lambda: two_port_case(
        3, {"mode": "closed", "workers": 1, "outstanding": 8}
    ),
    # The same with 4 hosts and an open log group of 60 MB/s: host0's port 0 at 76%, every other
    # port at 25%.
    "wb2-4-hosts-port0-at-76pct": lambda: two_port_case(
        4, {"mode": "open", "throughput": "60MB/s"}
    ),
    # The 3-host open case with data that compresses by half and adaptive compression at 50%:
    # host0's port 0 would be 76% busy uncompressed, so its replicas are compressed; port 1 (25%)
    # sends its own uncompressed. (At a 70% threshold the simulator's per-interval judgement flips
    # some VMs' port 0 back off now and then, about 10% of its replicas leave uncompressed, and the
    # estimate, which compresses them all, is 13-17% low on the log group's latency: a gap of the
    # compression switch, not of the ports.)
    "wb2-adaptive-compression-port0-only": lambda: two_port_case(
        3,
        {"mode": "open", "throughput": "60MB/s"},
        0.5,
        compression={"mode": "adaptive", "threshold": 0.5},
    ),
    "vmotion-3-streams-over-2-links": two_port_vmotion,
}


@cache
def two_port_estimate(case: str) -> Estimate:
    return estimate(TWO_PORT_CASES[case]())


@cache
def two_port_simulation(case: str, seed: int) -> Result:
    return simcache.simulate(TWO_PORT_CASES[case](), seed=seed)


def test_two_port_cases_follow_the_port_formulas() -> None:
    # Per-port utilization = transfers/s x framed bytes / line rate (port_load), with the port rule
    # k = ((target - source) mod hosts - 1) mod peer_links. Open traffic's loads are exact (to
    # rounding); what depends on the closed chain is solved to the fixed point's tolerance
    # (TOLERANCE).
    exact = 1e-9
    saturated = TWO_PORT_CASES["wb2-3-hosts-port0-saturated"]()
    (write_bytes,), _ = saturated.groups[0].workload.size_mix  # every write of the two-port cases
    db = writes_per_host(saturated, 0)
    u = two_port_estimate("wb2-3-hosts-port0-saturated").utilization
    quiet = port_load(saturated, db, write_bytes)
    assert u["host0.peer0.tx"] == pytest.approx(1.0, rel=TOLERANCE)
    assert u["host1.peer0.rx"] == pytest.approx(1.0, rel=TOLERANCE)
    for port in (
        "host0.peer1.tx",
        "host2.peer1.rx",
        "host1.peer0.tx",
        "host1.peer1.tx",
        "host0.peer0.rx",
        "host0.peer1.rx",
    ):
        assert u[port] == pytest.approx(quiet, rel=exact), port
    # The closed log group gets what db leaves of the port: X = (1 - rho_db) C / w, and (Little, no
    # think time) its N customers take R = N / X each.
    log = saturated.groups[1]
    customers = log.vms_per_host * log.workload.workers * log.workload.outstanding
    throughput = (1.0 - quiet) / port_load(saturated, 1.0, write_bytes)
    summary = two_port_estimate("wb2-3-hosts-port0-saturated").summary.set_index(["group", "op"])
    assert summary.loc[("log", "write"), "iops"] == pytest.approx(throughput, rel=TOLERANCE)
    assert summary.loc[("log", "write"), "mean_ms"] == pytest.approx(
        customers / throughput * 1e3, rel=TOLERANCE
    )

    four = TWO_PORT_CASES["wb2-4-hosts-port0-at-76pct"]()
    db, log_rate = writes_per_host(four, 0), writes_per_host(four, 1)
    u = two_port_estimate("wb2-4-hosts-port0-at-76pct").utilization
    assert u["host0.peer0.tx"] == pytest.approx(
        port_load(four, db + log_rate, write_bytes), rel=exact
    )
    assert u["host0.peer1.tx"] == pytest.approx(port_load(four, db, write_bytes), rel=exact)
    # host3 -> host0 is d = 1
    assert u["host3.peer0.tx"] == pytest.approx(port_load(four, db, write_bytes), rel=exact)

    # Adaptive compression is judged per sending port: port 0 sends half-size payloads, port 1 full
    # ones.
    compressing = TWO_PORT_CASES["wb2-adaptive-compression-port0-only"]()
    db, log_rate = writes_per_host(compressing, 0), writes_per_host(compressing, 1)
    u = two_port_estimate("wb2-adaptive-compression-port0-only").utilization
    assert (
        port_load(compressing, db + log_rate, write_bytes)
        >= 0.5
        > port_load(compressing, db, write_bytes)
    )
    assert u["host0.peer0.tx"] == pytest.approx(
        port_load(compressing, db + log_rate, write_bytes / 2), rel=exact
    )
    assert u["host0.peer1.tx"] == pytest.approx(port_load(compressing, db, write_bytes), rel=exact)

    # vMotion: each port pair's streams take what the replicas leave of it until they have moved
    # their bytes, so over the window T a port carrying n_k streams of w framed bytes is at rho_k +
    # n_k w / (C T) (it ends in T).
    migrating = two_port_vmotion()
    event = migrating.events[0]
    assert isinstance(event, VMotion)
    link = migrating.cluster.peer_link
    stream = framed_bytes(link, event.size / event.streams)[0] / link.bandwidth  # s at line rate
    start, end = migrating.run.warmup, migrating.run.duration
    (write_size,), _ = migrating.groups[0].workload.size_mix
    # 6 VMs x 5 MB/s on host0, all on port 0
    replicas = port_load(migrating, writes_per_host(migrating, 0), write_size)
    u = two_port_estimate("vmotion-3-streams-over-2-links").utilization
    assert u["host0.peer0.tx"] == pytest.approx(replicas + 2 * stream / (end - start), rel=exact)
    assert u["host0.peer1.tx"] == pytest.approx(stream / (end - start), rel=exact)
    assert u["host1.peer1.rx"] == u["host0.peer1.tx"]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", list(TWO_PORT_CASES))
def test_two_peer_links_agree_with_the_simulator(case: str, seed: int) -> None:
    simulated, estimated = two_port_simulation(case, seed), two_port_estimate(case)
    assert_bottleneck_tied(simulated, estimated)
    utilization = simulated_utilization(simulated)
    peer = [s for s in utilization if kind(s) == "peer link"]
    assert peer and set(peer) == {s for s in estimated.utilization if kind(s) == "peer link"}
    for station in peer:
        assert estimated.utilization[station] == pytest.approx(
            utilization[station], rel=PORT_AGREE, abs=0.01
        ), station
    for group, simulated_ms in write_means(simulated).items():
        ratio = estimated.mean_ms(group, "write") / simulated_ms
        assert abs(ratio - 1.0) <= AGREE, (
            f"{case} seed {seed} {group}: estimate/simulated mean write latency {ratio:.3f}"
        )


def test_an_estimate_a_run_and_a_confidence_interval_leave_scipy_stats_unimported() -> None:
    """Importing ``scipy.stats`` took 0.66 s, paid by the first estimate and the first run of
    every process (the run's work check estimates first): the gamma percentiles and Student's t
    use ``scipy.special``, with the same floats (``gammaincinv``, ``stdtrit``)."""
    code = (
        "import sys, simcache\n"
        "from simcache.base.metrics import ci95_half_width\n"
        "scenario = simcache.load_scenario('scenarios/default.toml')\n"
        "simcache.estimate(scenario)\n"
        "simcache.simulate(scenario, duration=1.0)\n"
        "assert ci95_half_width([1.0, 2.0, 4.0]) > 0\n"
        "print(sorted(name for name in sys.modules if name.startswith('scipy.stats')))\n"
    )
    root = ROOT
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_gamma_percentiles_are_scipy_stats_gamma_ppf() -> None:
    """gamma_quantiles(mean, scv) against scipy.stats.gamma.ppf at shape 1/scv, scale mean * scv:
    the same floats."""
    from scipy import stats

    from simcache.estimate.theory.queueing import gamma_quantiles

    for mean, scv in ((1e-3, 0.5), (2.5e-4, 1.0), (7e-2, 3.7), (1e-5, 1e-5), (4e-3, 120.0)):
        expected = stats.gamma.ppf([0.5, 0.95, 0.99, 0.999], 1.0 / scv, scale=mean * scv)
        assert gamma_quantiles(mean, scv) == tuple(float(x) for x in expected)


def test_an_exact_closed_loops_utilization_is_its_own() -> None:
    """A single closed chain solved by exact MVA reports the utilization of its final throughput
    (Utilization law: U = X S / c), not of one customer fewer: a loop of one outstanding read
    once showed every station idle."""
    scenario = simcache.load_scenario("validate_nvme_p3700").variant("qd1-read")
    estimated = simcache.estimate(scenario)
    row = estimated.summary.query("group == 'fio' and op == 'read'").iloc[0]
    tier = scenario.cluster.tier
    unit_seconds = (
        tier.read_latency + tier.stall_probability * tier.stall_time + 4096 / tier.read_bandwidth
    )
    # the tier's channels count busy from the unit's start to its transfer's end, over channels x
    # dies units
    expected = row.iops * unit_seconds / (tier.channels * tier.dies)
    assert estimated.utilization["host0.tier"] == pytest.approx(expected, rel=1e-6)
