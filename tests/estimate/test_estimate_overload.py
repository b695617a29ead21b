"""The estimate reports overload instead of huge numbers (issue 15): ``Estimate.warnings`` and
``Estimate.stable``.

Before, an open-loop load above a component's capacity gave the fluid queue's mean over the window:
write-through onto the old array at twice its capacity (the first test's scenario) estimated a mean
write latency of 30,511 ms over a minute and 1,800,511 ms over an hour, numbers that only measure
the run's length. Now such cells are infinite ("unbounded") and a warning says which component,
offered vs capacity.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.builders import small_scenario
from support.paths import DATA

import simcache
from simcache.cli.main import main
from simcache.estimate import EstimateWarning, NamedBottleneck
from simcache.spec import builtin_scenarios
from simcache_app.describe import estimate_sentence

OVERLOADED_ON_PURPOSE = {
    "redundancy_multiplier_1gbe/shared",  # its check: "wb1-saturates-shared-1gbe"
    # write-through onto the old array at about twice its IOPS; its checks: the run says so
    "backing_array/wt-overload",
}


def write_through(iops: float, *, duration: str = "60s", **extra: Any) -> dict[str, Any]:
    """Open-loop write-through of 4 KiB writes, ``iops`` per host on two hosts, onto the old
    array (14 x 7.2K RAID 10)."""
    scenario = small_scenario(
        "wt_overload",
        run={"duration": duration, "warmup": "1s"},
        workload={"mode": "open", "iops": iops, "read_fraction": 0.0},
        **extra,
    )
    scenario["groups"][0]["policy"] = "WT"
    return scenario


def array_capacity_iops() -> float:
    """The array's capacity in writes/s for this workload: rho = lambda x S / spindles is linear
    in lambda for an open stream (the service S of a write does not depend on the load), so
    capacity = lambda / rho at any stable load."""
    stable = simcache.estimate(write_through(300.0))
    assert stable.stable and stable.warnings == []
    return 600.0 / stable.utilization["array"]


def only(estimate: simcache.Estimate, kind: str, component: str) -> EstimateWarning:
    found = [w for w in estimate.warnings if w.kind == kind and w.component == component]
    assert len(found) == 1, [str(w) for w in estimate.warnings]
    return found[0]


def test_write_through_at_twice_the_array_capacity_is_unbounded_not_a_huge_number() -> None:
    capacity = array_capacity_iops()
    # 2 hosts x capacity: 200%
    estimate = simcache.estimate(write_through(capacity, duration="3600s"))
    assert not estimate.stable
    warning = only(estimate, "overload", "array")
    assert warning.offered == pytest.approx(2 * capacity, rel=1e-9)
    assert warning.capacity == pytest.approx(capacity, rel=1e-9)
    assert warning.unit == "IOPS" and warning.utilization == pytest.approx(2.0, rel=1e-9)
    assert warning.severity == "unstable"
    assert (
        str(warning)
        == warning.message
        == (
            f"the write latency of group db grows without bound: array offered {2 * capacity:,.0f} "
            f"IOPS vs {capacity:,.0f} IOPS "
            "capacity (200%); an open-loop load above capacity has no steady state, so the "
            "estimate shows those cells as unbounded"
        )
    )
    writes = next(
        r for r in estimate.summary.to_dict("records") if (r["group"], r["op"]) == ("db", "write")
    )
    for column in ("mean_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms"):
        assert writes[column] == math.inf, column
    assert writes["iops"] == pytest.approx(2 * capacity)  # the offered rate
    assert estimate.mean_ms("all", "write") == math.inf
    answer = estimate.to_json()
    assert answer["stable"] is False
    assert (
        answer["warnings"][0]["kind"] == "overload"
        and answer["warnings"][0]["component"] == "array"
    )
    # strict JSON
    assert [row["mean_ms"] for row in answer["summary"] if row["op"] == "write"] == [None, None]
    json.dumps(answer, allow_nan=False)


def test_port_overload_figures_are_framed_bytes_over_the_line_rate() -> None:
    # One host writes 3,000 x 64 KiB/s through to a cached array behind a 1GbE port, over a 1GbE
    # storage link. Framed bytes of a 64 KiB write at MTU 1500 (1,460 payload bytes a packet, 40
    # header + 38 framing bytes each): 65,536 + ceil(65,536 / 1,460) x 78 = 65,536 + 45 x 78 =
    # 69,046 B; offered 3,000 x 69,046 = 207,138,000 B/s against 1 Gbit/s = 125,000,000 B/s: rho =
    # 1.657.
    scenario = small_scenario(
        cluster={"hosts": 1},
        array={"profile": "array-24x15k", "port": "1GbE"},
        workload={"mode": "open", "iops": 3000, "read_fraction": 0.0, "sizes": "64KiB"},
    )
    scenario["groups"][0]["policy"] = "WT"
    estimate = simcache.estimate(scenario)
    assert not estimate.stable
    for component in ("host0.storage.tx", "array.rx"):
        warning = only(estimate, "overload", component)
        assert warning.offered == pytest.approx(207_138_000.0)
        assert (warning.capacity, warning.unit) == (125_000_000.0, "bytes/s")
        assert f"{component} offered 207.1 MB/s vs 125.0 MB/s capacity (166%)" in warning.message


def test_closed_loop_saturation_is_a_bottleneck_and_stable() -> None:
    # 2 VMs x 64 outstanding writes through to the old array: the throughput is held to the array's
    # capacity.
    scenario = small_scenario(
        workload={"mode": "closed", "workers": 1, "outstanding": 64, "read_fraction": 0.0}
    )
    scenario["groups"][0]["policy"] = "WT"
    estimate = simcache.estimate(scenario)
    assert estimate.stable
    assert [w.kind for w in estimate.warnings] == ["bottleneck"]
    warning = only(estimate, "bottleneck", "array")
    # as a simulation's warnings say it: only an overload is "unstable"
    assert warning.severity == "note"
    busy = estimate.utilization["array"]
    assert busy >= 0.95 and (warning.offered, warning.capacity, warning.unit) == (busy, 1.0, "busy")
    assert warning.message == (
        f"array is saturated ({busy:.0%} busy): the closed loops through it (group db) are held to "
        "its capacity; this is a "
        "bottleneck, not an overload: their latency stays finite"
    )
    assert math.isfinite(estimate.mean_ms("db", "write"))


def test_destage_fill_time_is_buffer_over_write_minus_drain() -> None:
    # destager_fill: closed writers at about 5 x the drain rate into a 256 MiB buffer. t_fill = C /
    # (a - d).
    estimate = simcache.estimate(simcache.load_scenario("destager_fill"))
    assert estimate.stable  # closed writers slow to the drain rate: no overload
    warning = only(estimate, "destage_full", "host0.destager")
    fluid = estimate.destager[0]
    assert (warning.offered, warning.capacity) == (
        fluid.accept_rate_bytes_s,
        fluid.drain_rate_bytes_s,
    )
    assert fluid.fill_time_s == pytest.approx(
        256 * 2**20 / (warning.offered - warning.capacity), rel=1e-12
    )
    # it starts empty under the same load
    assert fluid.first_full_s == pytest.approx(fluid.fill_time_s, rel=1e-9)
    assert (
        f"host0's destage buffer fills at {fluid.first_full_s:.3g} s into the 14 s run: writes "
        "arrive at "
        f"{warning.offered / 1e6:.1f} MB/s and the destager drains {warning.capacity / 1e6:.1f} "
        "MB/s, so its 256 MiB buffer "
        f"(268.4 MB) fills in 268.4 MB / {(warning.offered - warning.capacity) / 1e6:.1f} MB/s = "
        f"{fluid.fill_time_s:.3g} s; "
        f"while full, writes run at the drain rate, {warning.capacity / 1e6:.1f} MB/s (full for "
        f"{fluid.full_fraction:.0%} of "
        "the window)"
    ) == warning.message


def test_open_writers_into_a_full_destage_buffer_are_unbounded() -> None:
    # 2,000 x 64 KiB/s = 131,072,000 B/s per host, write-back, into a 64 MiB buffer that drains
    # about 40 MB/s.
    scenario = small_scenario(
        run={"duration": "10s", "warmup": "1s"},
        cluster={"destager": {"capacity": "64MiB"}},
        workload={"mode": "open", "iops": 2000, "read_fraction": 0.0, "sizes": "64KiB"},
    )
    scenario["groups"][0]["policy"] = "WB+0"
    estimate = simcache.estimate(scenario)
    assert not estimate.stable
    for host in ("host0", "host1"):
        warning = only(estimate, "overload", f"{host}.destager")
        assert warning.offered == pytest.approx(131_072_000.0) and warning.unit == "bytes/s"
        assert warning.message.startswith(
            f"the write latency of group db grows without bound: {host}'s destage buffer is full "
            "from "
            f"{estimate.destager[0].first_full_s:.3g} s to the end of the run with open-loop "
            "writers offering 131.1 MB/s vs "
            f"{warning.capacity / 1e6:.1f} MB/s drained on average"
        )
    assert estimate.mean_ms("db", "write") == math.inf


def test_a_backlog_that_outlasts_the_run_gives_its_fill_time_from_empty() -> None:
    estimate = simcache.estimate(simcache.load_scenario("interconnect_comparison"))
    assert estimate.stable
    warning = only(estimate, "destage_backlog", "host0.destager")
    # t_fill = C / (a - d), window averages
    fill = 16 * 2**30 / (warning.offered - warning.capacity)
    assert fill > estimate.scenario.run.duration
    assert f"= {fill:.3g} s from empty; the 2 s run ends first" in warning.message


def library() -> list[tuple[str, simcache.Scenario]]:
    out = []
    for path in sorted(builtin_scenarios().values()):
        base = simcache.load_scenario(path)
        out += [
            (f"{Path(path).stem}/{name}", base.variant(name)) for name in ["base", *base.variants]
        ]
    return out


def test_the_library_is_stable_but_for_the_scenario_overloaded_on_purpose() -> None:
    unstable = set()
    for name, scenario in library():
        estimate = simcache.estimate(scenario)
        means = estimate.summary["mean_ms"].dropna()
        if estimate.stable:
            assert (means < 1000.0).all(), name  # no huge numbers
        else:
            unstable.add(name)
            assert (means == math.inf).all(), name
    assert unstable == OVERLOADED_ON_PURPOSE
    shared = simcache.estimate(
        simcache.load_scenario("redundancy_multiplier_1gbe").variant("shared")
    )
    warning = only(shared, "overload", "peer.fabric")
    assert (
        "writers grows without bound: peer.fabric offered" in warning.message
        and warning.utilization > 1.0
    )


def test_bursts_above_capacity_are_reported_but_stable() -> None:
    estimate = simcache.estimate(simcache.load_scenario("compile_workload"))
    assert estimate.stable
    warning = only(estimate, "burst_overload", "host0.tier")
    assert warning.utilization > 1.0
    assert warning.message.startswith(
        f"overloaded in bursts: host0.tier (its transfer pipe) offered {warning.offered:,.0f} IOPS "
        "vs "
    )
    assert math.isfinite(estimate.mean_ms("all", "write"))


def test_cli_estimate_prints_unbounded_cells_and_the_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capacity = array_capacity_iops()
    path = tmp_path / "wt.toml"
    lines = [
        'name = "wt_overload"',
        '[run]\nduration = "60s"\nwarmup = "1s"',
        '[cluster]\nhosts = 2\ntier = "nvme-p3700-field"\npeer_link = "10GbE"\nstorage_link = '
        '"1GbE"',
        '[array]\nprofile = "array-14x7200"',
        '[[groups]]\nname = "db"\npolicy = "WT"\nvms_per_host = 1',
        f'[groups.workload]\nmode = "open"\niops = {capacity!r}\nread_fraction = 0.0',
    ]
    path.write_text("\n".join(lines) + "\n")
    assert main(["estimate", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "NOT STABLE: an open-loop load exceeds a component's capacity; latency there is unbounded "
        "(see warnings)" in out
    )
    write_row = next(line for line in out.splitlines() if line.split()[:2] == ["db", "write"])
    assert write_row.split()[-5:] == ["unbounded"] * 5
    assert (
        "warning: the write latency of group db grows without bound: array offered "
        f"{2 * capacity:,.0f} IOPS vs "
        f"{capacity:,.0f} IOPS capacity (200%)"
    ) in out
    assert main(["estimate", str(path), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["stable"] is False and answer["warnings"][0]["component"] == "array"


def test_app_estimate_sentence_says_unbounded_and_why() -> None:
    scenario = simcache.load_scenario(write_through(array_capacity_iops()))
    sentence = estimate_sentence(simcache.estimate(scenario), scenario)
    assert "writes unbounded mean (db unbounded)" in sentence
    assert "Overload: the write latency of group db grows without bound: array offered" in sentence


def test_a_faster_array_port_is_busy_for_the_bytes_at_its_own_rate() -> None:
    """A storage transfer runs at the slower port of its path; the faster port carries the same
    bytes in less of its time. With 1GbE host links in front of a 10GbE array port:
    util(array.rx) = sum over hosts of util(host.storage.tx) x 1GbE / 10GbE (both framed the same
    way), and no overload is reported where the simulator's port counters see a tenth of it (the
    estimate once charged the array port at the host link's rate: 4 hosts at 5% showed 21%, and
    enough hosts a false overload)."""
    scenario = simcache.load_scenario("default").with_overrides(
        {"cluster.storage_link": "1GbE", "array.profile": "array-24x15k"}
    )
    assert scenario.array.port.bandwidth == 10 * scenario.cluster.storage_link.bandwidth
    estimate = simcache.estimate(scenario)
    hosts = range(scenario.cluster.hosts)
    sent = sum(estimate.utilization[f"host{h}.storage.tx"] for h in hosts)
    received = sum(estimate.utilization[f"host{h}.storage.rx"] for h in hosts)
    assert sent > 0.1
    assert estimate.utilization["array.rx"] == pytest.approx(sent / 10, rel=1e-9)
    assert estimate.utilization["array.tx"] == pytest.approx(received / 10, rel=1e-9)
    assert estimate.stable


def test_a_fixed_point_that_does_not_settle_says_so() -> None:
    """The solver stops after its pass limit; a state it left unsettled is reported with the
    passes it took and how far its last pass still moved the queues (here set by hand on a
    converged estimate's pieces: no small scenario needs 500 passes)."""
    from simcache.estimate.overload import explain
    from simcache.estimate.theory.numeric import MAX_ITERATIONS, MIN_PASSES, TOLERANCE, pass_limit

    # 500 passes up to 3,000 closed rows; 1.5 million row evaluations beyond, and never fewer than
    # 100.
    assert (pass_limit(7), pass_limit(3_000), pass_limit(14_014), pass_limit(10**6)) == (
        MAX_ITERATIONS,
        500,
        107,
        MIN_PASSES,
    )

    estimate = simcache.estimate(write_through(300.0))
    assert [w.kind for w in estimate.warnings] == []  # every state settled
    evidence = estimate._evidence
    for piece in evidence.inside:
        piece.result.residual = 0.0321
        piece.result.passes = MAX_ITERATIONS
    warnings = explain(evidence)
    assert [(w.kind, w.component, w.offered, w.capacity, w.unit, w.severity) for w in warnings] == [
        ("not_converged", "estimate", 0.0321, TOLERANCE, "relative change", "note")
    ]
    assert str(warnings[0]) == (
        f"the estimate did not settle in {MAX_ITERATIONS} passes for 100% of the window (its last "
        "pass still moved the "
        "queues by 3.21% of the longest, against 0.01% to stop): the figures there are "
        "approximate; simulate the "
        "scenario to check them"
    )


def test_an_oscillating_fixed_point_stops_early() -> None:
    """A fixed point whose change stops shrinking (no 10% cut of its smallest change in
    ``STALL_PASSES`` passes) stops there and says so, instead of running out its 500 passes (a
    fuzzed 53-group scenario: 7 states x 500 passes x 1,244 closed rows, 2.2 s compiled, 6 s from
    source; then 100-210 passes a state).

    Its three hosts' flushers swung between the whole array and none of it, each taking what the
    others left in the last pass; held to fair shares of the array (drain.py) it settles, so the
    swing is put back by hand: the flushers' drain capacity alternates between half and one and a
    half times the model's at each check. Monkeypatching reaches the solver only from the Python
    sources (compiled, it calls drains() directly), so this runs in a process that uses them."""
    script = f"""
import itertools, json, sys
import simcache
from simcache.estimate.solver import STALL_PASSES
from simcache.estimate.theory.numeric import MAX_ITERATIONS
solver = sys.modules["simcache.estimate.solver"]
real = solver.drains
factors = itertools.cycle([0.5, 1.5])
def swinging(*args):
    factor = next(factors)
    return [rate * factor for rate in real(*args)]
solver.drains = swinging
estimate = simcache.estimate({str(DATA / "oscillating_fixed_point.toml")!r})
passes = [p.result.passes for p in estimate._evidence.inside if p.result.residual > 0]
kinds = [w.kind for w in estimate.warnings]
print(json.dumps([passes, kinds, STALL_PASSES, MAX_ITERATIONS]))
"""
    environment = {**os.environ, "SIMCACHE_PURE_PYTHON": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, text=True, check=True
    )
    passes, kinds, stall, limit = json.loads(done.stdout.splitlines()[-1])
    assert passes and all(stall < count < limit for count in passes), passes
    assert kinds.count("not_converged") == 1


def test_the_fuzzed_oscillating_fixed_point_settles() -> None:
    """The fuzzed scenario whose destage load swung until the stall stop (three hosts with full
    1 MiB buffers on an array without a write cache) settles in every state once each host's
    flushers are held to fair shares of the array: every piece converged, no warning that it did
    not."""
    estimate = simcache.estimate(DATA / "oscillating_fixed_point.toml")
    assert all(piece.result.residual == 0.0 for piece in estimate._evidence.inside)
    assert "not_converged" not in [w.kind for w in estimate.warnings]
    assert all(d.drain_rate_bytes_s > 1e6 for d in estimate.destager)  # none starved


# Review 62's s2_qlc: four hosts of 4 VMs writing 50 MB/s each (16 KiB, WB+1) onto QLC tiers whose
# 512 MiB clean pools run out at about 2.2 s (then offered 180% of the tiers' GC rate), destaged to
# a hybrid array whose spindles the four hosts' flushers fill (each drains a quarter of what the
# RAID 6 spindles take of random 16 KiB writes, about 2.4 MB/s; tests/estimate/
# test_estimate_drain_shares.py). The array is the busiest component by mean utilization (100%),
# but overloaded less than the tiers. (Before the fair shares its flushers swung between the whole
# array and none of it: the estimate printed a drain of 0 before the cliff, 9.7 MB/s after, and
# an array "offered 120%" at 30% mean utilization.)
QLC_PAST_ITS_CLIFF = """
name = "qlc_past_its_cliff"
[run]
duration = "5s"
warmup = "1s"
[cluster]
hosts = 4
tier = { profile = "nvme-qlc-p5336", clean_pool = "512MiB" }
peer_link = "25GbE"
storage_link = "25GbE"
[cluster.destager]
capacity = "8GiB"
concurrency = 8
[array]
profile = "hybrid-24x18tb-ssd"
[[groups]]
name = "ingest"
policy = "WB+1"
vms_per_host = 4
[groups.workload]
mode = "open"
throughput = "50MB/s"
read_fraction = 0.0
sizes = { "16KiB" = 1.0 }
working_set = "200GiB"
access = "uniform"
"""


def estimate_lines(scenario: Path | str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What ``simcache estimate`` prints for a scenario file or built-in name, line by line."""
    assert main(["estimate", str(scenario)]) == 0
    return capsys.readouterr().out.splitlines()


def test_the_bottleneck_line_names_the_most_overloaded_station(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 62 (item 6a): "bottleneck: array at 30% mean utilization" beside warnings that the
    tiers are offered 180% and the array 120% of their capacity. With an overload, the line names
    the station of the largest offered / capacity, as its warning gives it, and the others
    overloaded; a stable estimate keeps the busiest by mean utilization. (The array is now at 100%,
    its flushers held to fair shares of it, and still not the worst.)"""
    path = tmp_path / "qlc.toml"
    path.write_text(QLC_PAST_ITS_CLIFF)
    estimate = simcache.estimate(simcache.load_scenario(path))
    assert not estimate.stable and estimate.bottleneck()[0] == "array"
    worst = max((w for w in estimate.warnings if w.kind == "overload"), key=lambda w: w.utilization)
    overloads = estimate.overloads()
    component, name, rho = overloads[0]
    assert component == worst.component == "host0.tier" and rho > 1.5
    assert rho == pytest.approx(worst.utilization, rel=1e-9)
    assert [load for *_, load in overloads] == sorted(
        (load for *_, load in overloads), reverse=True
    )
    assert {c for c, *_ in overloads} == {
        w.component for w in estimate.warnings if w.kind == "overload"
    }
    line = next(line for line in estimate_lines(path, capsys) if line.startswith("bottleneck:"))
    assert line.startswith(
        f"bottleneck: {name} is overloaded, offered {rho:.0%} of its capacity; also overloaded: "
        "host1.tier (180%), host2.tier (180%), host3.tier (180%), array (100%)"
    )
    stable = estimate_lines("destager_fill", capsys)
    name, busy = simcache.estimate(simcache.load_scenario("destager_fill")).bottleneck()
    assert f"bottleneck: {name} at {busy:.0%} mean utilization" in stable


def test_json_and_the_app_sentence_name_the_bottleneck_the_line_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Estimate.to_json`` and the app's instant-estimate sentence named the busiest part by mean
    utilization (the array) where the printed line names the tier its garbage collection overloads
    (180%): all three now take the one rule of ``Estimate.named_bottleneck``. A stable estimate's
    is the busiest by mean utilization, and a full destage buffer, which has no utilization, is
    null in the JSON."""
    path = tmp_path / "qlc.toml"
    path.write_text(QLC_PAST_ITS_CLIFF)
    scenario = simcache.load_scenario(path)
    estimate = simcache.estimate(scenario)
    assert estimate.bottleneck()[0] == "array"  # the busiest by mean utilization, not the worst
    named = estimate.named_bottleneck()
    assert (named.component, named.offered_load) == ("host0.tier", estimate.overloads()[0][2])
    assert estimate.to_json()["bottleneck"] == {
        "station": "host0.tier",
        "utilization": estimate.utilization["host0.tier"],
    }
    assert main(["estimate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bottleneck"]["station"] == "host0.tier"
    sentence = estimate_sentence(estimate, scenario)
    assert (
        "; bottleneck the host0 nvme-qlc-p5336 flash tier, overloaded: offered 180% of its "
        "capacity. Overload: "
    ) in sentence

    default = simcache.load_scenario("default")
    stable = simcache.estimate(default)
    busiest, utilization = stable.bottleneck()
    assert stable.to_json()["bottleneck"] == {"station": busiest, "utilization": utilization}
    assert (
        f"; bottleneck the array's 14 spindles, at {utilization:.0%} mean utilization."
        in estimate_sentence(stable, default)
    )

    full = simcache.estimate(
        small_scenario(
            run={"duration": "10s", "warmup": "1s"},
            cluster={"destager": {"capacity": "64MiB"}},
            workload={"mode": "open", "iops": 2000, "read_fraction": 0.0, "sizes": "64KiB"},
        )
    )
    answer = full.to_json()
    assert answer["bottleneck"] == {"station": "host0.destager", "utilization": None}
    json.dumps(answer, allow_nan=False)


def test_times_print_as_words_where_there_are_none() -> None:
    """Review 62 (item 6b): "fills in infs" and "drains in 8.59e+09s". An infinite time, or one
    past a year (a rate next to nothing: a starved destager's 1 byte/s floor), prints as a word;
    others in seconds, with minutes, hours or days past 1,000 s."""
    from simcache.estimate.overload import duration_text

    assert duration_text(math.inf) == "never"
    assert duration_text(math.inf, "does not fill") == "does not fill"
    assert duration_text(8 * 2**30 / 1.0, "does not empty") == "does not empty"
    assert duration_text(1.72) == "1.72 s"
    assert duration_text(1165.0) == "1,165 s (19.4 min)"
    assert duration_text(9000.0) == "9,000 s (2.5 h)"
    assert duration_text(30 * 86400.0) == "2,592,000 s (30 days)"


# One host writing 40 MB/s (64 KiB, WB+0) onto a QLC tier under priority scheduling, while 256
# closed-loop reads (and a few writes) of a scan keep its tier booked one second in two: the
# flushers' reads start only when no VM I/O is there, so while the scan runs they are starved (a
# few bytes a second: 8 GiB would take some 90 years), and in between they drain what the array
# takes. The scan's writes make its on-state the peak-write one.
STARVED_WHILE_SCANNING = """
name = "starved_while_scanning"
[run]
duration = "6s"
warmup = "1s"
[cluster]
hosts = 1
tier = "nvme-qlc-p5336"
peer_link = "25GbE"
storage_link = "25GbE"
[cluster.destager]
capacity = "8GiB"
concurrency = 8
[array]
profile = "hybrid-24x18tb-ssd"
[[groups]]
name = "ingest"
policy = "WB+0"
vms_per_host = 2
[groups.workload]
mode = "open"
throughput = "20MB/s"
read_fraction = 0.0
sizes = { "64KiB" = 1.0 }
working_set = "200GiB"
access = "uniform"
[[groups]]
name = "scan"
policy = "WB+0"
vms_per_host = 4
[groups.workload]
mode = "closed"
workers = 16
outstanding = 4
think_time = "0s"
read_fraction = 0.99
sizes = { "64KiB" = 1.0 }
working_set = "1GiB"
access = "uniform"
[groups.workload.duty_cycle]
shape = "onoff"
on = "1s"
off = "1s"
"""


def test_the_destage_table_says_never_and_agrees_with_the_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 62 (items 6b, 6c): the destage table printed "drains 0.0 MB/s" (its peak-write
    state's, the flushers starved) beside a warning that "the destager drains 6.8 MB/s" (the
    window's average), "drains in 8.59e+09s" (8 GiB at the 1 byte/s floor), and, for a buffer that
    never fills, "fills in infs". Now the table gives both rates, labelled, the warning says which
    is the table's, and times are words where there are none."""
    path = tmp_path / "starved.toml"
    path.write_text(STARVED_WHILE_SCANNING)
    estimate = simcache.estimate(simcache.load_scenario(path))
    fluid = estimate.destager[0]
    accepted, drained = estimate.destage_window_rates()[0]
    year = 365.25 * 86400.0
    assert fluid.drain_rate_bytes_s < 1e3 and drained > 1e6 and fluid.drain_time_s > year
    warning = only(estimate, "destage_backlog", "host0.destager")
    assert (warning.offered, warning.capacity) == (accepted, drained)
    assert (
        f"the destager drains {drained / 1e6:.1f} MB/s (in its peak-write state it accepts "
        f"{fluid.accept_rate_bytes_s / 1e6:.1f} MB/s and drains 0.0 MB/s, as the destage table "
        "shows)"
    ) in warning.message
    lines = estimate_lines(path, capsys)
    row = next(line for line in lines if line.startswith("  host0:"))
    assert row.startswith(
        f"  host0: at peak accepts {fluid.accept_rate_bytes_s / 1e6:,.1f} MB/s, drains 0.0 MB/s "
        f"(on average over the window accepts {accepted / 1e6:,.1f} MB/s, drains "
        f"{drained / 1e6:,.1f} MB/s); fills in {fluid.fill_time_s:.3g} s from empty; a full buffer "
        "does not empty (its flushers are starved); peak backlog "
    )
    # the default's buffers keep up: they never fill, and hold no backlog
    keeping_up = simcache.estimate(simcache.load_scenario("default"))
    assert all(math.isinf(d.fill_time_s) for d in keeping_up.destager)
    rows = [line for line in estimate_lines("default", capsys) if ": at peak accepts" in line]
    assert rows and all(line.endswith("; does not fill; no backlog") for line in rows)
    assert not any("inf" in line or "e+" in line for line in rows)


def test_an_overload_that_gets_nothing_through_is_said_in_words() -> None:
    """A full buffer whose flushers are starved drains at the 1 B/s floor: its offered load over
    that is no percentage ('offered 10000000000% of its capacity', a code review's finding)."""

    def overloaded(load: float, *also: tuple[str, float]) -> NamedBottleneck:
        return NamedBottleneck("host0.destager", "host0's destage buffer", None, load, also)

    assert overloaded(1.8).load_words() == "offered 180% of its capacity"
    assert overloaded(math.inf).load_words() == "it gets nothing through (starved)"
    assert overloaded(1e8).load_words() == "offered over 100x its capacity"
    also = (("host1.tier", 1.2), ("array", 250.0), ("host1.destager", math.inf))
    assert overloaded(2.0, *also).also_words() == (
        "host1.tier (120%), array (over 100x), host1.destager (starved)"
    )
    assert overloaded(2.0).also_words() == ""
    stable = NamedBottleneck("array", "array", 0.755, None)
    assert stable.load_words() == "at 76% mean utilization"


def test_a_load_share_past_100x_or_starved_is_said_in_words() -> None:
    # A buffer drained at the 1 byte/s floor was "offered ... (4096000000000%)" (a review, 64: F9).
    from simcache.estimate.overload import load_share

    assert [load_share(r) for r in (0.5, 1.8, 99.99, 100.0, 4.096e10, math.inf)] == [
        "50%",
        "180%",
        "9999%",
        "over 100x",
        "over 100x",
        "starved",
    ]
