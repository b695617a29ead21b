"""Transfers piling up on an overloaded port: the work check's count of them
(:func:`simcache.sim.pileup.network_pileup`) against processor sharing's fluid limit and the
engine, the refusal past the limit, and the native engine's stop polls while they pile up.

An open loop offering a port more bytes than it carries piles transfers up on it without bound,
and the network re-rates every transfer on a port when one joins (exact processor sharing), so
the run's cost grows as the square of the pile: bench/fuzz.py found a burst that took minutes for
10 ms of simulated time (bench/README.md, "Seventeenth run").
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from scipy.special import lambertw
from support.builders import writes_waiting_for_a_port
from support.cli import call
from support.native import assert_same
from support.paths import ROOT
from support.strategies import to_toml

from simcache import load_scenario
from simcache.base.errors import RunTooLargeError
from simcache.physics.cluster import framed_bytes
from simcache.sim import native_run
from simcache.sim.control import NO_LIMITS, Cancel, Limits, check_work
from simcache.sim.engine import build, record_run, run_scenario
from simcache.sim.kernel.clock import events_scheduled, run_until
from simcache.sim.pileup import RERATES_PER_IO, _ps_pileup, network_pileup

WRITES_PER_S = 2400
"""The overloaded stream: 64 KiB writes replicated over 1GbE, 1.33 times what the port carries."""


def _pileup_data(**workload: Any) -> dict[str, Any]:
    """One writing host, WB+1 to its peer over 1GbE, 64 KiB random writes (Poisson)."""
    return {
        "name": "pileup",
        "run": {"duration": "2s", "warmup": "0.2s", "seed": 1, "sample_interval": "0.25s"},
        "cluster": {
            "hosts": 2,
            "tier": "nvme-p3700",
            "peer_link": "1GbE",
            "storage_link": "10GbE",
            "destager": {"capacity": "64GiB"},
        },
        "array": {"profile": "array-24x15k"},
        "groups": [
            {
                "name": "w",
                "policy": "WB+1",
                "hosts": [0],
                "workload": {
                    "mode": "open",
                    "iops": WRITES_PER_S,
                    "read_fraction": 0.0,
                    "sizes": "64KiB",
                    "working_set": "8GiB",
                }
                | workload,
            }
        ],
    }


@pytest.mark.parametrize("rho", [1.001, 1.05, 1.33, 2.0, 10.0, 1e3])
def test_the_growth_solves_processor_sharings_fixed_point(rho: float) -> None:
    """x = rho (1 - exp(-x)), i.e. x = rho + W0(-rho exp(-rho)) with Lambert's W, between
    first-come first-served's rho - 1 and rho."""
    x = _ps_pileup(rho)
    assert x == pytest.approx(rho * (1.0 - math.exp(-x)), rel=1e-9)
    assert x == pytest.approx(rho + lambertw(-rho * math.exp(-rho)).real, rel=1e-6)
    assert rho - 1.0 < x <= rho


def test_an_overloaded_replica_port_piles_up_as_the_fluid_limit_says() -> None:
    """The transfers in flight at the run's end (the writes waiting for their replica) against
    the fluid limit: n(T) = a T with a = mu x, x = rho (1 - exp(-x)), mu = the port's bytes/s over
    a replica's framed bytes, rho = lam / mu. Five seeds; the mean within its 99 % Student-t
    interval of the prediction. (First-come first-served's lam - mu would predict 55 % of it.)"""
    scenario = load_scenario(_pileup_data())
    link = scenario.cluster.peer_link
    mu = link.bandwidth / framed_bytes(link, 65536)[0]
    rho = WRITES_PER_S / mu
    expected = mu * _ps_pileup(rho) * scenario.run.duration
    pileup = network_pileup(scenario)
    assert pileup is not None
    assert pileup.port == "host0's peer port"
    assert pileup.piled == pytest.approx(expected, rel=1e-9)
    assert pileup.rerates == pytest.approx(
        WRITES_PER_S * expected * scenario.run.duration / 2.0, rel=1e-9
    )
    piled = np.array([len(run_scenario(scenario, seed=seed).unfinished) for seed in range(1, 6)])
    half_width = stats.t.ppf(0.995, len(piled) - 1) * piled.std(ddof=1) / math.sqrt(len(piled))
    assert abs(piled.mean() - expected) <= half_width, (piled, expected)
    assert (WRITES_PER_S - mu) * scenario.run.duration < piled.mean() - half_width


def test_a_pileup_past_the_limit_is_refused_naming_the_group_and_the_port() -> None:
    """The fuzzed burst (4 M writes a second of up to 512 KiB, on for 10 ms in 80): refused
    before it runs, with the group's rate as the field and the port in the reason; a larger
    ``--max-ios`` or no limit lets it through."""
    scenario = load_scenario(ROOT / "scenarios" / "compile_workload.toml").with_overrides(
        {"groups.writes.workload.iops": 4e6}
    )
    with pytest.raises(RunTooLargeError) as caught:
        check_work(scenario, Limits(), bound_first=True)
    text = str(caught.value)
    assert "groups.writes.workload.iops" in text
    assert "host0's peer port is offered" in text
    assert "re-ratings of piled-up transfers" in text
    pileup = network_pileup(scenario)
    assert pileup is not None and pileup.rerates > 1e12
    check_work(scenario, NO_LIMITS)
    check_work(scenario, Limits(max_ios=pileup.rerates / RERATES_PER_IO * 1.01))


def test_no_library_scenario_comes_near_the_limit() -> None:
    """The library's own piles stay far below: under a tenth of the default limit (the most,
    peer_loss.toml's stall variant: 4,000 writes stalled for 2 s start together, 1.6e7
    re-ratings; the shared 1GbE fabric just past its capacity of redundancy_multiplier_1gbe.toml:
    6e5)."""
    limit = Limits().max_ios * RERATES_PER_IO
    for path in sorted(ROOT.glob("scenarios/*.toml")):
        scenario = load_scenario(path)
        for name in ["base", *scenario.variants]:
            pileup = network_pileup(scenario.variant(name))
            assert pileup is None or pileup.rerates < limit / 10, (path.name, name)


@pytest.mark.parametrize(
    ("link", "held", "port"),
    [("peer", 600, "host0's peer port"), ("storage", 1200, "host0's storage port")],
)
def test_writes_an_outage_holds_back_start_together_at_its_end(
    link: str, held: int, port: str
) -> None:
    """Writes that wait through an outage (stalled short of peers; write-through writes behind a
    storage port) all start in the event of its end, each transfer joining those already on its
    port: n of them cost n^2 / 2 re-ratings at least. Here 3,000 writes a second a VM, host0's
    port down for 0.2 s: on the peer port one stalled VM a host, each host's 600 writes on its
    own peer port (host1's VM stalls too: host0 is its peer), 2 x 600^2 / 2 = 360,000; on the
    storage port host0's two write-through VMs, 1,200^2 / 2 = 720,000. The transfers in flight
    just after the end (both hosts' for the peers) are the held ones, a Poisson count: within 4
    of its standard deviations."""
    scenario = load_scenario(writes_waiting_for_a_port(0.2, link))
    pileup = network_pileup(scenario)
    assert pileup is not None and pileup.port == port
    assert pileup.piled == pytest.approx(held)
    total = 2 * held if link == "peer" else held
    assert pileup.rerates == pytest.approx((held * held / 2) * (2 if link == "peer" else 1))
    assert "events[0]" in pileup.describe() and pileup.field == "groups.db.workload.iops"
    model = build(scenario, 1, native=native_run.available())
    until = 0.2 + 1e-9  # the event of the port's return, processed
    if model.native is None:
        assert run_until(model.clock, until)
    else:
        assert native_run.run(model, until)
    assert abs(model.network.in_flight() - total) < 4 * math.sqrt(total)


@pytest.mark.parametrize(
    ("hosts", "selection", "replicas", "held"),
    [
        # ring: host0's VM and the VMs host0 is 1..replicas steps ahead of (host2 for WB+1);
        # WB+2: two transfers a write on the one peer port
        (3, "ring", 1, {"host0's peer port": 600, "host2's peer port": 600}),
        (3, "ring", 2, {f"host{h}'s peer port": 1200 for h in range(3)}),
        # random peers: host0's VM, and the others' in the share that chose host0 (1/2, 2/2)
        (3, "random", 1, {"host0's peer port": 600, "host1's peer port": 300}),
        (3, "random", 2, {f"host{h}'s peer port": 1200 for h in range(3)}),
    ],
)
def test_the_writes_a_peer_outage_holds_back_by_peer_selection(
    hosts: int, selection: str, replicas: int, held: dict[str, float]
) -> None:
    """Which VMs stall when host0's peer ports are down, 3,000 writes a second a VM for 0.2 s (600
    a VM): those on host0 and those whose peers include host0 (VM.update_peers), each write's
    transfers on its own host's peer port; n^2 / 2 re-ratings a port."""
    data = writes_waiting_for_a_port(0.2, "peer")
    data["cluster"] |= {"hosts": hosts, "peer_selection": selection}
    data["groups"][0]["policy"] = f"WB+{replicas}"
    pileup = network_pileup(load_scenario(data))
    assert pileup is not None
    expected = dict(held)
    if selection == "random":  # host2's VMs alike host1's
        expected["host2's peer port"] = expected["host1's peer port"]
    assert pileup.piled == pytest.approx(max(expected.values()))
    assert pileup.rerates == pytest.approx(sum(n * n / 2 for n in expected.values()))


def test_rebuilding_the_heap_of_finish_marks_changes_no_run() -> None:
    """600 writes a path resuming together (the peer ports and the storage port), run by the
    Python engine with the heap of finish marks rebuilt for flows re-rated in bulk (the default)
    and with it never rebuilt so (``FlowNetwork.rebuild_at`` out of reach, the code before the
    rebuild): the same records, counters, unfinished I/Os and events, bit for bit."""
    for link in ("peer", "storage"):
        scenario = load_scenario(writes_waiting_for_a_port(0.2, link, duration=0.5))
        runs = []
        for rebuild_at in (None, 10**9):
            model = build(scenario, 1)
            if rebuild_at is not None:
                model.network.rebuild_at = rebuild_at
            model.record_buffer.sink = model.records_sink()
            assert run_until(model.clock, scenario.run.duration)
            runs.append(
                record_run(model, seed=1, wall_time_s=0.0, events=events_scheduled(model.clock))
            )
        assert_same(*runs)


def test_an_outage_to_the_runs_end_or_writes_that_go_on_start_no_pile() -> None:
    """No pile when the outage lasts past the run (its writes wait to the end) or when the
    group's writes go on while peers are out of reach (``degrade``, ``write_through``)."""
    data = writes_waiting_for_a_port(0.2, "peer")
    data["events"][0]["duration"] = 1.0
    assert network_pileup(load_scenario(data)) is None
    for policy in ("degrade", "write_through"):
        data = writes_waiting_for_a_port(0.2, "peer")
        data["groups"][0]["on_peer_loss"] = policy
        assert network_pileup(load_scenario(data)) is None


def test_an_outage_holding_back_too_many_writes_is_refused_naming_it_and_the_fixes() -> None:
    """30,000 writes a second a VM stalled for 1 s: 2 x 30,000^2 / 2 = 9e8 re-ratings at the
    outage's end, past the default 5e8: refused before it runs, the group's rate as the field,
    the outage and the ways out in the reason."""
    data = writes_waiting_for_a_port(1.0, "peer", duration=2.0)
    data["groups"][0]["workload"]["iops"] = 30000
    scenario = load_scenario(data)
    with pytest.raises(RunTooLargeError) as caught:
        check_work(scenario, Limits(), bound_first=True)
    text = str(caught.value)
    assert "groups.db.workload.iops" in text
    assert "events[0] (link_down of host0's peer ports, 0-1 s)" in text
    assert 'on_peer_loss = "degrade"' in text and "shorten the outage (events[0].duration)" in text
    pileup = network_pileup(scenario)
    assert pileup is not None and pileup.rerates == pytest.approx(9e8)


@pytest.mark.parametrize(
    ("change", "pileup"),
    [
        ({}, True),
        ({"read_fraction": 1.0}, False),  # nothing replicated
        ({"sync_serialize": True}, False),  # one write of the VM at a time
        ({"iops": 1000}, False),  # within the port's 1.25e8 bytes/s
        ({"duty_cycle": {"shape": "onoff", "on": "10ms", "off": "30ms"}}, False),  # 600 a second
    ],
)
def test_what_piles_up(change: dict[str, Any], pileup: bool) -> None:
    assert (network_pileup(load_scenario(_pileup_data(**change))) is not None) is pileup


def test_the_ports_that_pile_up() -> None:
    """WB+0 sends nothing; asynchronous copies wait in a bounded send buffer; WT writes pile up
    on the storage port; WB+2 over two peer ports sends one replica on each; a shared fabric
    carries every host's replicas; the count stops at the first scheduled event."""
    data = _pileup_data()
    group = data["groups"][0]
    assert network_pileup(load_scenario(data | {"groups": [group | {"policy": "WB+0"}]})) is None
    asynchronous = group | {"replication": "async"}
    assert network_pileup(load_scenario(data | {"groups": [asynchronous]})) is None
    through = group | {"policy": "WT", "workload": group["workload"] | {"iops": 24_000}}
    data_wt = data | {"groups": [through]}
    data_wt["cluster"] = data["cluster"] | {"storage_link": "1GbE"}
    wt = network_pileup(load_scenario(data_wt))
    assert wt is not None and wt.port == "host0's storage port"
    assert wt.link == "cluster.storage_link"
    with pytest.raises(RunTooLargeError, match=r"a faster cluster\.storage_link\)"):
        check_work(load_scenario(data_wt), Limits(max_ios=wt.rerates / RERATES_PER_IO / 2))
    two = data | {"groups": [group | {"policy": "WB+2"}]}
    two["cluster"] = data["cluster"] | {"hosts": 3, "peer_links": 2}
    one = network_pileup(load_scenario(data))
    split = network_pileup(load_scenario(two))
    assert one is not None and split is not None
    assert split.port in ("host0's peer port 0", "host0's peer port 1")
    assert split.rerates == pytest.approx(2 * one.rerates)  # two ports, each as the one
    shared = data | {"cluster": data["cluster"] | {"peer_fabric": "shared"}}
    fabric = network_pileup(load_scenario(shared))
    assert fabric is not None and fabric.rerates == pytest.approx(2 * one.rerates)
    early = data | {"events": [{"kind": "device_failure", "at": "1s", "host": 1}]}
    cut = network_pileup(load_scenario(early))
    assert cut is not None and cut.piled == pytest.approx(one.piled / 2)


@pytest.mark.parametrize(
    ("native", "most"),
    [
        pytest.param(
            True,
            1000,
            marks=pytest.mark.skipif(not native_run.available(), reason=native_run.NOT_BUILT),
        ),
        (False, 60),
    ],
)
def test_a_stop_request_is_heard_while_transfers_pile_up(native: bool, most: int) -> None:
    """Both engines count a transfer's re-ratings toward the events between two polls of a stop
    request (8 a native event, 4 an event of the Python engine): cancelled before it starts, a
    run piling up 11 times the port's capacity stops after 355 writes natively and 29 in the
    Python engine, where counting events alone let 8,176 and 116 through (one poll's 8,192
    native or 128 Python events, while each write re-rates all those before it: at 10,000 piled
    up, seconds of wall time between polls)."""
    scenario = load_scenario(_pileup_data(iops=20_000))
    token = Cancel()
    token.cancel("test")
    record = run_scenario(scenario, cancel=token, limits=NO_LIMITS, native=native)
    assert (record.run_by == native_run.NATIVE) is native
    assert record.counters.issued_ios < most


def test_run_says_before_it_starts_what_will_pile_up_or_refuses(tmp_path: Path) -> None:
    """`simcache run` prints the pile-up with the expected work, and past the limit refuses
    with the group's rate as the field (exit 2)."""
    path = tmp_path / "pileup.toml"
    path.write_text(to_toml(_pileup_data()))
    code, _, stderr = call(["run", str(path), "--duration", "0.5s"])
    assert code == 0
    assert "host0's peer port is offered 166 MB/s against the 125 MB/s it carries" in stderr
    path.write_text(to_toml(_pileup_data(iops=4_000_000)))
    code, _, stderr = call(["run", str(path)])
    assert code == 2
    assert "groups.w.workload.iops" in stderr and "re-ratings of piled-up transfers" in stderr
