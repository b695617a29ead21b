"""Bounded and stoppable runs (simcache.sim.control): expected work and its limit, the cancel token
and deadline of simulate(), Ctrl-C and SIGTERM in `simcache run` and `simcache check`, and the app's
lease on its runs.

The signal tests start the command line in a subprocess, wait for its first line, send the signal
and check the exit status and the "stopped at" text; the bound on the time to exit is generous (not
a timing benchmark).
"""

from __future__ import annotations

import importlib
import math
import re
import signal
import threading
import time
from collections.abc import Generator

import pandas as pd
import pytest
import simpy
from support.builders import small_scenario, writes_waiting_for_a_port
from support.paths import ROOT
from support.signals import interrupt

import simcache
from simcache.base.errors import RunTooLargeError, ScenarioError
from simcache.cli.main import main
from simcache.sim import control, memory, native_run
from simcache.sim.collect import RECORD_BYTES
from simcache.sim.control import (
    BYTES_PER_IO,
    BYTES_PER_SAMPLE_VALUE,
    CACHE_LINE_BYTES,
    DEFAULT_LIMITS,
    NO_LIMITS,
    SLOT_BYTES,
    Cancel,
    Limits,
    Stopped,
    check_work,
    exit_status,
    expected_work,
    stopped_at,
)
from simcache.sim.engine import build
from simcache.sim.kernel import clock as kernel


def small(**changes: object) -> simcache.Scenario:
    return simcache.load_scenario(small_scenario("stop-small", **changes))  # type: ignore[arg-type]


# -- expected work
# ----------------------------------------------------------------------------------


def test_expected_work_of_an_open_loop_is_rate_times_duration_times_vms() -> None:
    scenario = small(run={"duration": "10s", "sample_interval": "0.5s"})
    work = expected_work(scenario)
    # two VMs (one per host) at 200 IOPS for 10 s
    assert work.ios_by_group == {"db": 2 * 200 * 10.0}
    assert work.ios == 4000
    assert work.samples == 20
    assert work.series_columns == 12 + 10 * 2
    # a cold cache gains at most an I/O's lines an I/O: 4 KiB in 64 KiB lines, 2 at most (of
    # 163,840 lines of each VM's 10 GiB disk, 6.1 million of the tier)
    assert work.cache_lines == 4000 * 2
    assert (
        work.memory_bytes
        == 4000 * BYTES_PER_IO
        + 4000 / 20 * RECORD_BYTES
        + 20 * 32 * BYTES_PER_SAMPLE_VALUE
        + 8000 * CACHE_LINE_BYTES
    )
    assert work.describe() == (
        "about 4,000 I/Os, 20 samples x 32 columns, up to 8,000 cached lines, 1.2 MiB of memory"
    )


def test_expected_work_counts_the_lines_a_cache_may_hold() -> None:
    """Each line a host's read cache may come to hold counts CACHE_LINE_BYTES: a cold cache's at
    most its capacity, its VMs' disks, or the lines its I/Os bring; a warm cache's from the start,
    unless it holds its VMs' disks whole (no line entries: ReadCache.hold_whole)."""
    run = {"duration": "10s", "sample_interval": "0.5s"}
    disk = {"mode": "open", "iops": 200, "read_fraction": 0.3, "working_set": "8GiB"}
    # warm, each host's one VM's 8 GiB (131,072 lines of 64 KiB) inside its 1 GiB cache? no: the
    # cache holds its 16,384 lines from the start
    warm = small(run=run, workload=disk, cluster={"cache": {"warm": True, "capacity": "1GiB"}})
    assert expected_work(warm).cache_lines == 2 * 16_384
    # a cache as large as the disks holds them whole
    whole = small(run=run, workload=disk, cluster={"cache": {"warm": True, "capacity": "8GiB"}})
    assert expected_work(whole).cache_lines == 0
    # ... unless a VM can move (its lines could be on two hosts: every host's capacity counts)
    moving = small(
        run=run,
        workload=disk,
        cluster={"cache": {"warm": True, "capacity": "8GiB"}},
        events=[{"kind": "host_failure", "host": 1, "at": "5s", "restart_delay": "1s"}],
    )
    assert expected_work(moving).cache_lines == 2 * 131_072
    # cold, large I/Os: the I/Os bring the lines (1 MiB in 4 KiB lines: 256, 257 if unaligned)
    big = {**disk, "sizes": {"1MiB": 1}}
    cold = small(run=run, workload=big, cluster={"cache": {"line": "4KiB", "capacity": "1GiB"}})
    assert expected_work(cold).cache_lines == 2 * 262_144  # the capacity, before 4,000 x 258


def test_closed_loop_slots_count_their_memory_and_their_first_ios() -> None:
    """Each closed-loop slot holds an I/O from the start (SLOT_BYTES with its record), so a closed
    loop issues at least its slots; millions of them are refused before the engine allocates them
    (found by bench/fuzz.py: 16 million slots of the P3700 validation, a MemoryError in the
    native engine's set-up), naming the slots and the fix."""
    scenario = small(
        run={"duration": "0.01s", "warmup": "0s", "sample_interval": "0.01s"},
        workload={"mode": "closed", "workers": 1000, "outstanding": 1000, "think_time": "1s"},
    )
    work = expected_work(scenario)
    assert work.slots == 2 * 1000 * 1000
    assert work.ios >= work.slots  # one I/O each at the start, whatever the think time
    assert work.memory_bytes >= work.slots * SLOT_BYTES
    with pytest.raises(RunTooLargeError) as caught:
        check_work(scenario, Limits(max_memory_bytes=2 * 2**30))
    assert "groups: this run is expected to take" in str(caught.value)
    assert "2,000,000 closed-loop slots (VMs x workers x outstanding) each hold an I/O" in str(
        caught.value
    )


def test_a_warm_cache_too_large_for_memory_is_refused_before_it_fills() -> None:
    """A warm cache of 4 KiB lines over terabytes of disks would take its memory before the first
    I/O: the work check counts it and refuses, naming the figures and the fix."""
    scenario = small(
        workload={"mode": "open", "iops": 10, "working_set": "2TiB"},
        cluster={"cache": {"warm": True, "line": "4KiB", "capacity": "1TiB"}},
        array={"profile": "array-14x7200", "spindles": 64},
    )
    work = expected_work(scenario)
    assert work.cache_lines == 2 * 2**28
    with pytest.raises(RunTooLargeError) as caught:
        check_work(scenario)
    message = str(caught.value)
    assert (
        "cluster.cache.line: this run is expected to take 32.0 GiB of memory (limit 8.0 GiB)"
        in message
    )
    assert "up to 536,870,912 cached lines" in message
    assert "Use larger lines (cluster.cache.line) or a smaller cluster.cache.capacity" in message


def test_expected_work_of_an_onoff_open_loop_counts_the_on_time() -> None:
    workload = {
        "mode": "open",
        "iops": 100,
        "duty_cycle": {"shape": "onoff", "on": "1s", "off": "3s"},
    }
    work = expected_work(small(run={"duration": "20s"}, workload=workload))
    # a quarter of the time on, and one more burst at most
    assert work.ios == 2 * 100 * 20 * (0.25 + 1 / 20)


def test_expected_work_of_a_closed_loop_is_near_what_it_simulates() -> None:
    scenario = small(
        run={"duration": "2s"}, workload={"mode": "closed", "outstanding": 2, "read_fraction": 0.3}
    )
    simulated = simcache.simulate(scenario).meta["ios"]
    assert 0.5 * simulated < expected_work(scenario).ios < 2 * simulated


def test_expected_work_of_a_closed_loop_without_an_estimate_is_bounded_by_think_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise ValueError("no estimate")

    # the package, not its function
    monkeypatch.setattr(importlib.import_module("simcache.estimate"), "estimate", fail)
    scenario = small(
        run={"duration": "2s"},
        workload={"mode": "closed", "workers": 2, "outstanding": 3, "think_time": "10ms"},
    )
    tier = scenario.cluster.tier
    fastest = min(tier.read_latency, tier.write_latency)
    # 2 VMs x 6 slots x 2 s / (10 ms + the tier's latency)
    assert expected_work(scenario).ios == 2 * 2 * 3 * 2 / (0.01 + fastest)


def test_expected_work_of_many_closed_chains_does_not_wait_for_the_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ESTIMATED_CHAINS_MAX closed chains the estimate's fixed point can take seconds (51
    groups: 14 s, found by bench/fuzz.py), so the work is bounded from the slots, the think time
    and the tier's latency instead."""
    calls: list[object] = []
    monkeypatch.setattr(
        importlib.import_module("simcache.estimate"), "estimate", lambda *a, **k: calls.append(a)
    )
    base = small(
        run={"duration": "2s"}, workload={"mode": "closed", "outstanding": 1, "think_time": "10ms"}
    )
    groups = [
        dict(base.groups[0].model_dump(mode="json"), name=f"g{i}")
        for i in range(control.ESTIMATED_CHAINS_MAX + 1)
    ]
    many = simcache.load_scenario({**base.model_dump(mode="json"), "groups": groups})
    work = expected_work(many)
    assert calls == []
    tier = many.cluster.tier
    per_vm = 2 / (0.01 + min(tier.read_latency, tier.write_latency))
    assert work.ios == pytest.approx(
        sum(many.group_vm_count(g) for g in many.groups) * per_vm, rel=1e-12
    )


def test_a_run_checks_its_closed_loops_at_their_bound_and_estimates_only_past_the_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A closed loop issues at most slots / (think time + the tier's latency) I/Os a second
    (Little's law, no response faster than the tier), and expected_work never counts more than
    that: within the limits at that bound, a run (``bound_first``) needs no estimate; past them
    the estimate decides, as without ``bound_first``."""
    calls: list[object] = []
    package = importlib.import_module("simcache.estimate")
    estimate = package.estimate

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return estimate(*args, **kwargs)

    monkeypatch.setattr(package, "estimate", counting)
    scenario = small(
        run={"duration": "2s"},
        workload={"mode": "closed", "workers": 2, "outstanding": 3, "think_time": "1ms"},
    )
    bound = expected_work(scenario, estimate=False)
    assert calls == []
    estimated = expected_work(scenario)
    assert len(calls) == 1
    # the estimate's figure for these misses to the array is below the bound, never above it
    assert estimated.ios < bound.ios
    calls.clear()
    assert check_work(scenario, Limits(max_ios=bound.ios), bound_first=True) == bound
    simcache.simulate(scenario, limits=Limits(max_ios=bound.ios))  # the run checks bound first
    assert calls == []
    # between the two figures: the estimate passes the run, with or without bound_first
    between = Limits(max_ios=(estimated.ios + bound.ios) / 2)
    assert check_work(scenario, between, bound_first=True) == estimated
    assert len(calls) == 1
    # below both: refused, naming the estimate's figure either way
    below = Limits(max_ios=estimated.ios / 2)
    messages = []
    for first in (True, False):
        with pytest.raises(RunTooLargeError) as caught:
            check_work(scenario, below, bound_first=first)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert f"{estimated.ios:,.0f} I/Os" in messages[0]


def test_a_run_past_the_limit_is_refused_before_it_starts_with_the_figures_and_the_option() -> None:
    scenario = small(run={"duration": "10s"})
    with pytest.raises(RunTooLargeError) as caught:
        simcache.simulate(scenario, limits=Limits(max_ios=1000))
    assert isinstance(caught.value, ScenarioError)
    assert str(caught.value) == (
        "scenario 'stop-small': run too large (1 problem)\n"
        "  run.duration: this run is expected to take 4,000 I/Os (limit 1,000): about 4,000 I/Os, "
        "40 samples x 32 columns, up to 8,000 cached lines, 1.3 MiB of memory over 10 simulated "
        "seconds. Shorten run.duration (or --duration), lower the load, or allow it with "
        "--max-ios N / --max-memory SIZE / --no-limit (run, check, report), SIMCACHE_MAX_IOS=N / "
        "SIMCACHE_MAX_MEMORY=SIZE (every command, sweep and size included; none for no limit) or "
        "simulate(limits=Limits(...))"
    )


def test_the_memory_limit_names_both_figures() -> None:
    with pytest.raises(
        RunTooLargeError,
        match=r"expected to take 1.3 MiB of memory \(limit 1 KiB\): about 4,000 I/Os",
    ):
        check_work(small(run={"duration": "10s"}), Limits(max_memory_bytes=1024))


def test_limits_come_from_the_environment() -> None:
    assert Limits.from_env({}) == DEFAULT_LIMITS
    assert Limits.from_env({"SIMCACHE_MAX_IOS": "1_000", "SIMCACHE_MAX_MEMORY": "2GiB"}) == Limits(
        1000, 2 * 2**30
    )
    assert Limits.from_env({"SIMCACHE_MAX_IOS": "none"}) == Limits(
        math.inf, DEFAULT_LIMITS.max_memory_bytes
    )
    with pytest.raises(ScenarioError) as caught:
        Limits.from_env({"SIMCACHE_MAX_MEMORY": "-4KiB"})
    assert str(caught.value).startswith(
        "environment variable SIMCACHE_MAX_MEMORY: invalid scenario"
    )
    assert caught.value.problems == [
        ("SIMCACHE_MAX_MEMORY", "must be a positive number or 'none' (got '-4KiB')")
    ]


def test_the_default_limits_allow_every_library_scenario() -> None:
    for path in sorted((ROOT / "scenarios").glob("*.toml")):
        check_work(simcache.load_scenario(path))


def test_no_limits_skips_the_estimate() -> None:
    work = check_work(small(run={"duration": "1e6s"}), NO_LIMITS)
    assert math.isnan(work.ios)


# -- cancel and deadline
# ----------------------------------------------------------------------------


def test_an_unset_token_changes_nothing() -> None:
    scenario = small(run={"duration": "2s"})
    plain = simcache.simulate(scenario)
    watched = simcache.simulate(scenario, cancel=Cancel(), deadline=3600)
    pd.testing.assert_frame_equal(plain.records, watched.records)
    pd.testing.assert_frame_equal(plain.series, watched.series)
    assert plain.totals == watched.totals
    assert watched.meta["stopped_at_s"] is None and watched.meta["stop_reason"] is None
    assert stopped_at(watched) is None


def test_a_cancelled_run_returns_the_partial_result_up_to_where_it_stopped() -> None:
    scenario = small(run={"duration": "3600s", "warmup": "1s", "sample_interval": "0.5s"})
    token = Cancel()
    timer = threading.Timer(0.5, token.cancel, args=("enough",))
    timer.start()
    result = simcache.simulate(scenario, cancel=token, limits=NO_LIMITS)
    at = stopped_at(result)
    assert at is not None and 0 < at < 3600
    assert result.meta["stop_reason"] == "enough"
    assert result.meta["planned_s"] == 3600
    assert result.meta["simulated_s"] == at == result.totals["duration_s"]
    assert result.window == ((1.0, at) if at > 1 else (at / 10, at))
    assert result.series.index[-1] == at  # a last sample where it stopped
    assert result.records["complete_s"].max() <= at
    # the scenario as asked for
    assert simcache.load_scenario(result.meta["scenario"]).run.duration == 3600
    count = int(result.summary.query("group == 'all' and op == 'write'")["count"].iloc[0])
    assert (
        count
        == (
            (result.records["op"] == "write") & (result.records["issue_s"] >= result.window[0])
        ).sum()
    )


def test_a_deadline_stops_the_run_with_its_reason() -> None:
    result = simcache.simulate(small(run={"duration": "3600s"}), deadline=0.2, limits=NO_LIMITS)
    assert result.meta["stop_reason"] == "deadline of 0.2 s wall time passed"
    assert result.meta["wall_time_s"] < 5


def test_a_token_cancelled_before_the_run_stops_it_at_its_first_poll() -> None:
    token = Cancel()
    token.cancel("before")
    result = simcache.simulate(small(run={"duration": "60s"}), cancel=token)
    assert result.meta["stop_reason"] == "before"
    assert stopped_at(result) is not None and stopped_at(result) < 60  # type: ignore[operator]


def test_a_deadline_stops_a_warm_cache_filling_line_by_line() -> None:
    """A warm cache smaller than its VMs' disks is filled line by line before the run (2 million
    lines of 4 KiB here, about a second); the fill heeds the deadline (it counts from the build),
    so the run stops at its first poll (some thousands of events in) rather than after the fill."""
    scenario = small(
        run={"duration": "60s"},
        workload={"mode": "open", "iops": 100, "working_set": "16GiB"},
        cluster={"cache": {"warm": True, "line": "4KiB", "capacity": "8GiB"}},
    )
    result = simcache.simulate(scenario, deadline=0.001)
    assert result.meta["stop_reason"] == "deadline of 0.001 s wall time passed"
    assert stopped_at(result) is not None and stopped_at(result) < 60  # type: ignore[operator]
    # the fill asks before each insert of 4,096 lines: a stop asked for already fills nothing
    stopped = build(scenario, 1, stop_requested=lambda: True)
    assert [host.cache.occupied_bytes for host in stopped.hosts] == [0, 0]
    filled = build(scenario, 1)
    assert [host.cache.occupied_bytes for host in filled.hosts] == [8 * 2**30] * 2


def test_a_stop_while_a_huge_warm_index_is_made_leaves_it_unmade() -> None:
    """A warm start sizes each cache's index for every line it will fill (``ReadCache.reserve``):
    for hundreds of millions of lines that alone took seconds before the fill's first poll (a
    fuzzed case with 51 warm VMs overshot a 1 s deadline by 6 s, stop 53). The empty index is made
    a million slots between polls: a stop asked for while it is made leaves the index as it was,
    and the fill then inserts nothing. Here 16 GiB of 4 KiB lines a host to fill from a 64 GiB
    disk (8 million slots): the stop test turns true at its third question."""
    scenario = small(
        workload={"mode": "open", "iops": 100, "working_set": "64GiB"},
        cluster={"cache": {"warm": True, "line": "4KiB", "capacity": "16GiB"}},
    )
    asked = []

    def third_question() -> bool:
        asked.append(True)
        return len(asked) >= 3

    stopped = build(scenario, 1, stop_requested=third_question)
    # host0's index: two million slots made, stopped at the third question; then one question
    # each for host0's fill, host1's index and host1's fill
    assert len(asked) == 6
    assert [len(host.cache._slots) for host in stopped.hosts] == [16, 16]  # still the smallest
    assert [host.cache.occupied_bytes for host in stopped.hosts] == [0, 0]


def test_run_until_polls_every_so_many_events_and_stops_where_it_is() -> None:
    env = simpy.Environment()

    def ticks() -> Generator[simpy.Event, None, None]:
        while True:
            yield env.timeout(1.0)

    env.process(ticks())
    polls: list[float] = []

    def stop_requested() -> bool:
        polls.append(env.now)
        return len(polls) == 3

    assert kernel.run_until(kernel.clock_of(env), 1e6, stop_requested, every=10) is False
    # the process's start, then one timeout per second: 10 events in 9 s
    assert polls == [9.0, 19.0, 29.0]
    assert env.now == 29.0
    # reaching the end
    assert (
        kernel.run_until(kernel.clock_of(simpy.Environment()), 5.0, stop_requested, every=10)
        is True
    )


def _run_to(scenario: simcache.Scenario, native: bool, until: float, stop_at: float | None) -> int:
    """The transfers still sending at the end of a run of ``scenario`` (seed 1) to ``until``,
    stopped at the first poll of its stop request at or after ``stop_at``."""
    model = build(scenario, 1, native=native)
    assert (model.native is not None) == native
    clock = model.clock
    stop_requested = None if stop_at is None else (lambda: clock.now >= stop_at)
    if native:
        finished = native_run.run(model, until, stop_requested, control.POLL_EVENTS)
    else:
        finished = kernel.run_until(clock, until, stop_requested, control.POLL_EVENTS)
    assert finished == (stop_at is None)
    if stop_at is not None:
        assert clock.now == stop_at  # stopped in the event of the port's return
        assert clock.cut_short  # mid-event: it runs no further
        with pytest.raises(RuntimeError, match="stopped inside an event"):
            kernel.run_until(clock, until)
    return model.network.in_flight()


@pytest.mark.parametrize("link", ["peer", "storage"])
@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_a_stop_is_heard_inside_the_event_that_resumes_waiting_writes(
    native: bool, link: str
) -> None:
    """Writes that waited for a port all resume in the one event of its return (stalled while
    their peer was out of reach, or waiting to send to the array), and each resumed write's
    transfer joins the others on the port, re-rating them all: that event's work grows as the
    waiting writes squared (17,000 stalled writes took a minute, with a deadline of seconds:
    bench/fuzz.py's thirty-fifth run). The stop request is polled inside the event once it has
    re-rated a poll's worth of transfers (512 in the Python engine: ``stopping.poll_within_event``;
    65,536 in the native one: ``_poll_within``). Here about 600 writes wait on each path (about
    360,000 re-ratings in all); a stop asked for from the port's return on is heard long before
    the event is done: fewer than half of the transfers the whole event starts are on their way
    (a poll after the event would have found them all)."""
    if native and not native_run.available():
        pytest.skip("the native engine is not built here")
    back = 0.2
    scenario = simcache.load_scenario(writes_waiting_for_a_port(back, link))
    assert _run_to(scenario, native, back, None) < 20  # before the return: waiting
    whole = _run_to(scenario, native, back + 1e-9, None)
    stopped = _run_to(scenario, native, 1.0, back)
    assert whole > 1100  # a transfer each
    assert 0 < stopped < whole / 2


def test_cancel_keeps_the_first_reason_and_reports_deadlines() -> None:
    token = Cancel()
    assert not token.cancelled and token.reason == ""
    token.cancel("first", signal.SIGTERM)
    token.cancel("second")
    assert token.cancelled and token.reason == "first" and exit_status(token) == 143
    timed = Cancel(deadline=0)
    assert (
        timed.cancelled
        and timed.reason == "deadline of 0 s wall time passed"
        and exit_status(timed) == 1
    )


def test_checks_raise_stopped_and_keep_the_checks_before() -> None:
    plan = simcache.runs.checks.prepare(ROOT / "scenarios" / "ram_tier.toml")
    token = Cancel()
    token.cancel("enough")
    with pytest.raises(Stopped) as caught:
        next(plan.outcomes(seeds=1, cancel=token))
    assert caught.value.result is None
    assert str(
        caught.value
    ) == "stopped in scenarios/ram_tier.toml: variant base, seed 1 (enough)".replace(
        "scenarios/ram_tier.toml", str(ROOT / "scenarios" / "ram_tier.toml")
    )


# -- the command line
# -------------------------------------------------------------------------------


def test_run_refuses_a_run_past_the_limit_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "default", "--duration", "100s", "--max-ios", "1000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: scenario 'default': run too large (1 problem)\n  run.duration: this run is "
        "expected to take "
    )
    assert "(limit 1,000)" in err and "--no-limit" in err


def test_check_refuses_before_any_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            ["check", str(ROOT / "scenarios" / "ram_tier.toml"), "--max-memory", "1KiB", "--quiet"]
        )
        == 2
    )
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "of memory (limit 1 KiB)" in captured.err


def test_no_limit_lets_a_run_through(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["run", "default", "--duration", "1s", "--max-ios", "1", "--no-limit", "--json"]) == 0
    )
    assert '"stopped_at_s": null' in capsys.readouterr().out


def _interrupt(argv: list[str], sig: int, after: str) -> tuple[int, str, str, float]:
    """:func:`support.signals.interrupt` once a stderr line starts with ``after``, 0.3 s into the
    run."""
    return interrupt(argv, sig, lambda line: line.startswith(after), settle_s=0.3)


@pytest.mark.parametrize(
    ("sig", "status", "name"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")]
)
def test_run_stops_on_a_signal_and_prints_the_partial_result(
    sig: int, status: int, name: str
) -> None:
    code, out, err, seconds = _interrupt(
        ["run", "default", "--duration", "3000s"], sig, "simulating 'default' for 3000 s"
    )
    assert code == status, err
    marks = re.findall(
        rf"STOPPED at simulated time ([0-9.]+) s of 3000 s \({name}\): partial result, every "
        r"figure covers 0-\1 s only",
        out,
    )
    assert len(marks) == 2, out  # above and below the report
    assert "Latency per VM group (ms), IOPS and MB/s:" in out
    assert "Traceback" not in err
    assert seconds < 5


def test_check_stops_on_ctrl_c_and_marks_the_rest_not_run() -> None:
    path = "scenarios/ram_tier.toml"
    # 30,000 s: about a million writes a variant, seconds of run even in the native engine (3,000
    # s of it took less than the 0.3 s the signal waits)
    code, out, err, seconds = _interrupt(
        ["check", path, "--duration", "30000s", "--seeds", "1"], signal.SIGINT, "  running "
    )
    assert code == 130, err
    lines = out.splitlines()
    assert lines[0] == "== 4. RAM tier  (scenarios/ram_tier.toml)"
    assert lines[1] == "NOT RUN  ram_tier:ram-device-latency  (stopped before it was simulated)"
    assert re.fullmatch(
        rf"STOPPED at simulated time [0-9.]+ s of 30000 s in {path}: variant base, seed 1 "
        r"\(SIGINT\): the checks after it were not run",
        lines[-1],
    )
    assert "0 of 0 checks passed" in lines
    assert seconds < 5


def test_check_with_a_pool_stops_its_runs_on_ctrl_c() -> None:
    """Seeds run in a pool: Ctrl-C ends the worker processes (a run there cannot be stopped at a
    time step), so the command exits at once, without a partial result, the runs under way named."""
    path = "scenarios/ram_tier.toml"
    argv = ["check", path, "--duration", "3000s", "--seeds", "2", "--workers", "2"]
    code, out, err, seconds = _interrupt(argv, signal.SIGINT, "  running ")
    assert code == 130, err
    lines = out.splitlines()
    assert lines[1] == "NOT RUN  ram_tier:ram-device-latency  (stopped before it was simulated)"
    assert (
        lines[-1]
        == f"STOPPED in {path}: variant base, seed 1 (SIGINT): the checks after it were not run"
    )
    assert "Traceback" not in err
    assert seconds < 10


# -- the app's lease
# --------------------------------------------------------------------------------


def test_an_app_run_nobody_polls_cancels_itself() -> None:
    from simcache_app.runs import _lease

    lease = _lease(0.05)
    assert not lease.cancelled
    lease.renew()
    time.sleep(0.1)
    assert lease.cancelled and lease.reason == "no page polled it for 0.05 s"


# -- the memory limit kept while a run goes (MemoryWatch)
# ---------------------------------------------------------------------------------------


def test_the_memory_watch_stops_once_the_run_grows_past_its_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the resident size as a script: 100 MiB at the start, then +10, +40 MiB; a 90 MiB limit
    # stops at a third of it (30 MiB grown: the partial result takes about twice that again)
    sizes = iter([100, 110, 140, 140])
    monkeypatch.setattr(memory, "resident_bytes", lambda: next(sizes) * 2**20)
    monkeypatch.setattr(memory, "MEMORY_CHECK_S", 0.0)
    watch = memory.MemoryWatch(90 * 2**20)
    assert not watch.cancelled  # 10 MiB grown
    assert watch.cancelled and "grew by 40.0 MiB" in watch.reason  # 40 > 30
    assert watch.cancelled and watch.signal is None  # it stays stopped, not a signal's


def test_the_memory_watch_reads_no_more_often_than_its_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[int] = []
    monkeypatch.setattr(memory, "resident_bytes", lambda: reads.append(1) or 2**30)
    watch = memory.MemoryWatch(2**20)  # one read at the start
    for _ in range(1000):  # the engine polls far more often than every 0.25 s
        assert not watch.cancelled
    assert len(reads) == 1


def test_an_overloaded_run_is_stopped_at_its_memory_limit_with_its_partial_result() -> None:
    # review 65: 3 hosts writing 18,000 8 KiB writes a second into a 14-spindle array that takes
    # about 1,500: the writes waiting for destage room pile up (about 300 bytes each natively)
    # past any estimate of the run's rates. With a 48 MiB limit the run stops once it has grown
    # by 16 MiB, long before its 200 s; a calm run under the same limit is not stopped.
    overloaded = simcache.Scenario.model_validate(
        small_scenario(
            "pileup",
            run={"duration": "200s", "warmup": "2s", "sample_interval": "0.5s"},
            cluster={"hosts": 3, "tier": "sata-ssd-s3700-field", "destager": {"capacity": "64MiB"}},
            workload={
                "mode": "open",
                "iops": 3000,
                "read_fraction": 0.0,
                "sizes": {"8KiB": 1.0},
                "working_set": "1GiB",
            },
        )
    )
    limits = control.Limits(math.inf, 48 * 2**20)
    result = simcache.simulate(overloaded, keep_records=False, limits=limits)
    assert result.meta["stopped_at_s"] is not None and result.meta["stopped_at_s"] < 200
    assert "memory grew by" in result.meta["stop_reason"]
    assert not result.stable and len(result.summary)
    calm = simcache.simulate(
        simcache.Scenario.model_validate(small_scenario(run={"duration": "3s"})), limits=limits
    )
    assert calm.meta["stopped_at_s"] is None
