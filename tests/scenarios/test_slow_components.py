"""Links and tiers at a fraction of their speed for a while (issue 17): ``link_slow`` /
``device_slow``.

The network figures use one 1GbE-like port (125 MB/s, no framing: the flow network moves the wire
bytes it is given); the run figures use the set-up of ``test_peer_loss``: two hosts, one VM each
writing 4 KiB at a steady 2,000 per second, NVMe tiers, 10GbE storage links (1.25 GB/s) and a 24 x
15K array whose controller cache acknowledges every write after a fixed time. Nothing contends, so
each write's latency is one figure outside the window and another inside it.
"""

from __future__ import annotations

from typing import Any

import pytest
import simpy
from support.invariants import assert_conserved
from support.outage import AT, BACK, DURATION, END, issued_in, scenario, writes

import simcache
from simcache.physics.cluster import PortName, framed_bytes, pipe_rate, tier_service_seconds
from simcache.report.event_report import mib
from simcache.report.run_report import report
from simcache.sim.components.link import FlowNetwork, Port
from simcache.spec import LinkSpec

BANDWIDTH = 125e6
LATENCY = 50e-6
SIZE = 1.25e6  # 10 ms at full speed


def network() -> tuple[simpy.Environment, FlowNetwork, Port]:
    env = simpy.Environment()
    return (
        env,
        FlowNetwork(env),
        Port(PortName(0, "storage", None, "tx"), LinkSpec(bandwidth=BANDWIDTH, latency=LATENCY)),
    )


def at(env: simpy.Environment, when: float, action: Any) -> None:
    env.timeout(when).callbacks.append(lambda _: action())


def test_a_lone_transfer_takes_twice_the_wire_time_at_half_speed_and_not_outside() -> None:
    """1.25 MB at 125 MB/s: 10 ms + 50 us. The port at half speed from 100 ms to 200 ms: a
    transfer starting at 120 ms takes 20 ms + 50 us; one at 300 ms (speed restored) 10 ms + 50 us
    again."""
    env, net, port = network()
    at(env, 0.1, lambda: net.set_capacity(port, BANDWIDTH * 0.5))
    at(env, 0.2, lambda: net.set_capacity(port, BANDWIDTH))
    done: dict[float, float] = {}

    def send(start: float) -> None:
        event = net.transfer([port], SIZE, latency=LATENCY)
        event.callbacks.append(lambda e: done.__setitem__(start, e.value - start))

    for start in (0.0, 0.12, 0.3):
        at(env, start, lambda start=start: send(start))
    env.run()
    assert done[0.0] == pytest.approx(0.010 + LATENCY, rel=1e-12)
    assert done[0.12] == pytest.approx(0.020 + LATENCY, rel=1e-12)
    assert done[0.3] == pytest.approx(0.010 + LATENCY, rel=1e-12)


def test_a_flow_in_flight_is_re_rated_at_each_change_from_the_bytes_it_has_left() -> None:
    """1.25 MB from 0 s at 125 MB/s; at 4 ms (0.75 MB left) the port halves to 62.5 MB/s; at 10
    ms (0.75 MB - 62.5 MB/s x 6 ms = 0.375 MB left) it is restored: the last byte leaves at 10 ms
    + 0.375 / 125 = 13 ms, delivered at 13.05 ms. Two flows sharing the port halve again: each
    0.625 MB at 31.25 MB/s then 62.5 MB/s."""
    env, net, port = network()
    at(env, 0.004, lambda: net.set_capacity(port, BANDWIDTH * 0.5))
    at(env, 0.010, lambda: net.set_capacity(port, BANDWIDTH))
    lone = net.transfer([port], SIZE, latency=LATENCY)
    env.run()
    assert lone.value == pytest.approx(0.013 + LATENCY, rel=1e-12)
    env, net, port = network()
    at(env, 0.004, lambda: net.set_capacity(port, BANDWIDTH * 0.5))
    at(env, 0.010, lambda: net.set_capacity(port, BANDWIDTH))
    pair = [net.transfer([port], SIZE / 2, latency=LATENCY) for _ in range(2)]
    env.run()
    # 4 ms at 62.5 MB/s each: 0.375 MB left; 6 ms at 31.25 MB/s: 0.1875 MB left; then 3 ms at 62.5
    # MB/s
    for flow in pair:
        assert flow.value == pytest.approx(0.013 + LATENCY, rel=1e-12)


STORAGE_SLOW = {
    "kind": "link_slow",
    "at": AT,
    "host": 0,
    "link": "storage",
    "duration": DURATION,
    "fraction": 0.5,
}
TIER_SLOW = {"kind": "device_slow", "at": AT, "host": 0, "duration": DURATION, "fraction": 0.5}


def host0(result: simcache.Result, start: float, end: float) -> Any:
    w = writes(result)
    return issued_in(w[w["host"] == "host0"], start, end)["latency_ms"].to_numpy()


def test_a_write_through_write_pays_its_wire_time_twice_on_a_half_speed_storage_link() -> None:
    """WT: a 4 KiB write crosses host0's storage port as 4,330 framed bytes, 3.464 us at 1.25
    GB/s (the array's acknowledgement is a fixed time, not a flow). At half speed from 1 s to 2 s
    its latency grows by that 3.464 us, and only then; host1's writes do not change."""
    result = simcache.simulate(scenario(policy="WT", events=[STORAGE_SLOW]))
    wire = framed_bytes(result.scenario.cluster.storage_link, 4096)[0] / 1.25e9
    assert wire == pytest.approx(3.464e-6, rel=1e-12)
    before = host0(result, 0.0, AT)
    assert before == pytest.approx(before[0], rel=1e-9)
    assert host0(result, AT, BACK) == pytest.approx(before[0] + wire * 1e3, rel=1e-9)
    assert host0(result, BACK, END) == pytest.approx(before[0], rel=1e-9)
    w = writes(result)
    assert w[w["host"] == "host1"]["latency_ms"].to_numpy() == pytest.approx(before[0], rel=1e-9)
    assert_conserved(result)


def test_a_write_back_write_takes_twice_its_tier_service_on_a_half_speed_tier() -> None:
    """WB+0 on NVMe: a 4 KiB write's latency is its tier service, write latency + 4,096 B / write
    pipe rate = 22.156 us; at fraction 0.5 from 1 s to 2 s it is 44.312 us, and 22.156 us again
    after."""
    result = simcache.simulate(scenario(policy="WB+0", events=[TIER_SLOW]))
    tier = result.scenario.cluster.tier
    service = (
        tier_service_seconds(
            tier.write_latency,
            4096,
            1.0 / pipe_rate(tier.write_bandwidth, tier.controller_bandwidth),
        )
        * 1e3
    )
    assert service == pytest.approx(0.022156, rel=1e-4)
    assert host0(result, 0.0, AT) == pytest.approx(service, rel=1e-9)
    assert host0(result, AT, BACK) == pytest.approx(2 * service, rel=1e-9)
    assert host0(result, BACK, END) == pytest.approx(service, rel=1e-9)
    assert_conserved(result)
    (record,) = result.meta["degradations"]
    assert (record["component"], record["start_s"], record["end_s"], record["fraction"]) == (
        "host0 tier",
        AT,
        BACK,
        0.5,
    )
    before, after = mib(record["backlog_at_start_bytes"]), mib(record["backlog_at_end_bytes"])
    assert (
        f"  device_slow host0 tier 1.000 s to 2.000 s: at 0.5 of its speed; backlog {before} -> "
        f"{after}" in report(result).splitlines()
    )


@pytest.mark.parametrize(
    ("event", "path", "message"),
    [
        ({**TIER_SLOW, "host": 2}, "events.0.host", "host index 2 does not exist; hosts are 0..1"),
        (
            {**STORAGE_SLOW, "at": END},
            "events.0.at",
            "3s is not inside the run (0 to 3s); move it earlier or lengthen run.duration",
        ),
    ],
)
def test_slow_events_are_validated(event: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(events=[event])
    assert (path, message) in raised.value.problems


def test_two_slowdowns_of_one_component_may_not_overlap() -> None:
    """host0's storage link twice at once is refused; its peer link or another host's storage
    link meanwhile is not."""
    later = {**STORAGE_SLOW, "at": 1.5, "fraction": 0.25}
    events = [STORAGE_SLOW, {**STORAGE_SLOW, "link": "peer"}, {**STORAGE_SLOW, "host": 1}, later]
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(events=events)
    assert raised.value.problems == [
        (
            "events.3.at",
            "host0's storage link is already slowed by events.0 from 1s to 2s (one event at a time "
            "is modelled); move it after that window",
        )
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            0,
            "must be more than 0; a component at no speed is down: use link_down or host_failure "
            "(got 0)",
        ),
        (
            1.5,
            "must be at most 1; 1 is full speed; a faster component is another profile (got 1.5)",
        ),
    ],
)
def test_a_fraction_is_in_zero_to_one(value: float, message: str) -> None:
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(events=[{**STORAGE_SLOW, "fraction": value}])
    assert raised.value.problems == [("events.0.fraction", message)]


@pytest.mark.parametrize(("field", "value"), [("duration", 0), ("link", "wan"), ("host", -1)])
def test_slow_event_fields_are_checked(field: str, value: Any) -> None:
    with pytest.raises(simcache.ScenarioError) as raised:
        scenario(events=[{**STORAGE_SLOW, field: value}])
    assert [path for path, _ in raised.value.problems] == [f"events.0.{field}"]


def test_utilization_is_measured_against_the_capacity_the_port_had() -> None:
    """host0's peer link at 0.001 of its speed (10GbE: 1.25 MB/s) from 1.1 s to 1.5 s, mid sample
    interval, under 2,000 replicated 4 KiB writes a second (8.2 MB/s): the samples inside the
    window read 1 (saturated), and the interval 1-1.25 s, 0.1 s at full speed and 0.15 s slowed,
    reads its bytes over what the port could carry then (0.1 x 1.25 GB/s + 0.15 x 1.25 MB/s),
    well below 1; divided by the slowed capacity alone it read 3 and more."""
    result = simcache.simulate(
        scenario(
            events=[
                {
                    "kind": "link_slow",
                    "at": 1.1,
                    "host": 0,
                    "link": "peer",
                    "duration": 0.4,
                    "fraction": 0.001,
                }
            ]
        )
    )
    util = result.series["util.host0.peer.tx"]
    assert (util <= 1 + 1e-9).all()
    assert util[1.25] < 0.05
    assert util[1.5] == pytest.approx(1.0, rel=1e-6)
