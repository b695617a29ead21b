"""Hypothesis strategies: small valid scenario dicts, and mutations that make them invalid.

The valid scenarios are deliberately small (2-4 hosts, 1-3 groups, short runs,
bounded I/O rates) so that one simulation takes well under a second: the
property tests run dozens of them.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from hypothesis import strategies as st

from simcache.profiles import list_profiles
from simcache.units import parse_size

TIERS = sorted(list_profiles("tier"))
LINKS = sorted(list_profiles("link"))
ARRAYS = sorted(list_profiles("array"))
POLICIES = ("WT", "WB+0", "WB+1", "WB+2")
REPLICAS = {"WT": 0, "WB+0": 0, "WB+1": 1, "WB+2": 2}
MAX_VM_BYTES_PER_S = 4e6  # a cap on each open-loop VM's offered load
SIZES = ("4KiB", "8KiB", "32KiB", "64KiB", "128KiB", "256KiB", "512KiB")
WRITE_BACK = ("WB+0", "WB+1", "WB+2")

ScenarioDict = dict[str, Any]


@st.composite
def duty_cycles(draw: st.DrawFn, open_loop: bool) -> dict[str, Any]:
    """An on/off duty cycle, or for an open loop also a sine one (the schema refuses sine on a closed loop).

    The on/off lengths include ones whose period ends are not exact in binary (0.3 s on, 0.2 s off) and
    ones where they are (0.25 s): an on period ending within rounding distance of an arrival once stalled
    open loops (test_onoff_clock_always_moves_on). An off length of zero is a cycle that never pauses.
    """
    phase = draw(st.sampled_from([0.0, 0.0, 0.15, 1.0]))
    if not open_loop or draw(st.booleans()):
        return {
            "shape": "onoff",
            "on": draw(st.sampled_from(["0.1s", "0.25s", "0.3s", "1.1s"])),
            "off": draw(st.sampled_from(["0s", "0.2s", "0.25s", "0.9s"])),
            "phase": phase,
        }
    return {
        "shape": "sine",
        "period": draw(st.sampled_from(["0.3s", "0.5s", "2s"])),
        "amplitude": draw(st.sampled_from([0.3, 0.9, 1.0])),
        "phase": phase,
    }


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    """One VM's workload, open or closed loop, with a bounded I/O rate."""
    size_keys = draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=3, unique=True))
    sizes = {key: draw(st.floats(0.1, 1.0)) for key in size_keys}
    workload: dict[str, Any] = {
        "read_fraction": draw(st.sampled_from([0.0, 0.0, 0.2, 0.5, 0.9, 1.0])),
        "sizes": sizes,
        "working_set": draw(st.sampled_from(["64MiB", "512MiB", "2GiB"])),
        "access": draw(st.sampled_from(["uniform", "zipf", "hotspot", "sequential"])),
    }
    if workload["access"] == "hotspot":
        workload["hot_span_fraction"] = draw(st.sampled_from([0.01, 0.2, 0.5]))
        workload["hot_io_fraction"] = draw(st.sampled_from([0.6, 0.9, 0.99]))
    if workload["access"] != "sequential" and draw(st.booleans()):
        workload["sequential_run"] = draw(st.sampled_from([1.5, 4.0, 32.0]))
    if draw(st.booleans()):
        # Bounded offered load: an open loop above what a link or the array can carry piles up flows
        # without limit, and the flow network's cost per event grows with the number in flight.
        workload["mode"] = "open"
        mean_size = sum(parse_size(k) * w for k, w in sizes.items()) / sum(sizes.values())
        most_iops = max(20, min(400, int(MAX_VM_BYTES_PER_S / mean_size)))
        if draw(st.booleans()):
            workload["iops"] = draw(st.integers(20, most_iops))
        else:
            workload["throughput"] = int(draw(st.integers(20, most_iops)) * mean_size)
        workload["arrivals"] = draw(st.sampled_from(["poisson", "uniform"]))
    else:
        workload["mode"] = "closed"
        # At most two slots per VM, each bounded by a think time to a few hundred IOPS even on a RAM tier.
        workers = draw(st.integers(1, 2))
        workload["workers"] = workers
        workload["outstanding"] = draw(st.integers(1, 3 - workers))
        workload["think_time"] = f"{draw(st.integers(3, 10))}ms"
    if draw(st.integers(0, 3)) == 0:
        workload["duty_cycle"] = draw(duty_cycles(open_loop=workload["mode"] == "open"))
    return workload


@st.composite
def valid_scenarios(draw: st.DrawFn, policies: tuple[str, ...] = POLICIES) -> ScenarioDict:
    """A small valid scenario dict (policies respect ``hosts - 1 >= replicas``)."""
    hosts = draw(st.integers(2, 4))
    allowed = [p for p in policies if REPLICAS[p] <= hosts - 1]
    groups = []
    for index in range(draw(st.integers(1, 3))):
        group: dict[str, Any] = {
            "name": f"g{index}",
            "policy": draw(st.sampled_from(allowed)),
            "vms_per_host": draw(st.integers(1, 2)),
            "workload": draw(workloads()),
        }
        if draw(st.booleans()):
            group["hosts"] = sorted(draw(st.sets(st.integers(0, hosts - 1), min_size=1)))
        groups.append(group)
    duration = draw(st.sampled_from([0.5, 1.0, 1.5, 2.0]))
    scenario: ScenarioDict = {
        "name": "generated",
        "run": {
            "duration": duration,
            "warmup": draw(st.sampled_from([0.0, 0.1, 0.25])),
            "sample_interval": 0.25,
            "seed": draw(st.integers(0, 2**32 - 1)),
        },
        "cluster": {
            "hosts": hosts,
            "tier": draw(st.sampled_from(TIERS)),
            "peer_link": draw(st.sampled_from(LINKS)),
            "storage_link": draw(st.sampled_from(["1GbE", "10GbE"])),
            "peer_fabric": draw(st.sampled_from(["switched", "switched", "shared"])),
            "peer_links": draw(st.sampled_from([1, 1, 2, 3])),
            "peer_selection": draw(st.sampled_from(["ring", "random"])),
            "destager": {
                "capacity": draw(st.sampled_from(["1MiB", "8MiB", "256MiB"])),
                "concurrency": draw(st.integers(1, 4)),
                "max_batch": draw(st.sampled_from(["512KiB", "1MiB"])),
            },
        },
        "array": draw(st.sampled_from(ARRAYS)),
        "groups": groups,
    }
    if draw(st.integers(0, 3)) == 0:
        scenario["cluster"]["compression"] = {"mode": draw(st.sampled_from(["always", "adaptive"]))}
        for group in groups:
            group["workload"]["compressibility"] = 0.5
    if draw(st.integers(0, 3)) == 0:
        scenario["events"] = [{"kind": "vmotion", "at": 0.1, "source_host": 0, "target_host": 1, "size": "32MiB"}]
    return scenario


# -- invalid variants -------------------------------------------------------------------------------

Mutation = tuple[str, ScenarioDict]


def _negative(data: ScenarioDict, draw: st.DrawFn) -> Mutation:
    choices: list[tuple[str, tuple[str, ...], Any]] = [
        ("negative bandwidth", ("cluster", "peer_link"), {"profile": "1GbE", "bandwidth": "-1Gbit/s"}),
        ("negative duration", ("run", "duration"), -1.0),
        ("negative warmup", ("run", "warmup"), "-1s"),
        ("negative destager capacity", ("cluster", "destager", "capacity"), "-8MiB"),
        ("zero destager capacity", ("cluster", "destager", "capacity"), 0),
        ("negative hosts", ("cluster", "hosts"), -2),
        ("zero peer links", ("cluster", "peer_links"), 0),
        ("negative working set", ("groups", "0", "workload", "working_set"), "-1GiB"),
        ("negative read fraction", ("groups", "0", "workload", "read_fraction"), -0.5),
        ("read fraction above 1", ("groups", "0", "workload", "read_fraction"), 1.5),
        ("zero vms per host", ("groups", "0", "vms_per_host"), 0),
        ("negative size", ("groups", "0", "workload", "sizes"), {"-4KiB": 1.0}),
        ("zero size", ("groups", "0", "workload", "sizes"), {"0B": 1.0}),
        ("negative size weight", ("groups", "0", "workload", "sizes"), {"4KiB": -1.0}),
        ("negative tier latency", ("cluster", "tier"), {"profile": "nvme-p3700", "write_latency": "-1us"}),
    ]
    label, path, value = draw(st.sampled_from(choices))
    _set(data, path, value)
    return label, data


def _unknown_key(data: ScenarioDict, draw: st.DrawFn) -> Mutation:
    key = draw(st.sampled_from(["colour", "hostz", "polcy", "bandwith", "extra_field"]))
    where = draw(st.sampled_from(["top", "run", "cluster", "destager", "group", "workload"]))
    table = {
        "top": data,
        "run": data["run"],
        "cluster": data["cluster"],
        "destager": data["cluster"]["destager"],
        "group": data["groups"][0],
        "workload": data["groups"][0]["workload"],
    }[where]
    table[key] = 1
    return f"unknown key {key!r} in {where}", data


def _bad_unit(data: ScenarioDict, draw: st.DrawFn) -> Mutation:
    choices: list[tuple[str, tuple[str, ...], Any]] = [
        ("bad duration unit", ("run", "duration"), draw(st.sampled_from(["5 parsecs", "1 fortnight", "fast", "s5", "1..5s"]))),
        (
            "bad rate unit",
            ("cluster", "peer_link"),
            {"profile": "1GbE", "bandwidth": draw(st.sampled_from(["1 furlong/s", "10 GbX", "lots"]))},
        ),
        ("bad size unit", ("cluster", "destager", "capacity"), draw(st.sampled_from(["4 XiB", "big", "4 KiB/s", "KiB"]))),
        ("bad I/O size key", ("groups", "0", "workload", "sizes"), {draw(st.sampled_from(["4Kibble", "huge", "4 QB"])): 1.0}),
        ("bad think time", ("groups", "0", "workload", "think_time"), "3 jiffies"),
    ]
    label, path, value = draw(st.sampled_from(choices))
    _set(data, path, value)
    return label, data


def _too_many_replicas(data: ScenarioDict, draw: st.DrawFn) -> Mutation:
    hosts = data["cluster"]["hosts"]
    policy = draw(st.sampled_from([p for p in POLICIES if REPLICAS[p] > hosts - 1] or ["WB+2"]))
    if REPLICAS[policy] <= hosts - 1:  # every policy fits this cluster: shrink it instead
        data["cluster"]["hosts"] = REPLICAS[policy]
        for group in data["groups"]:
            group.pop("hosts", None)
        data.pop("events", None)
    group = draw(st.integers(0, len(data["groups"]) - 1))
    data["groups"][group]["policy"] = policy
    return f"{policy} on {data['cluster']['hosts']} host(s)", data


def _non_finite(data: ScenarioDict, draw: st.DrawFn) -> Mutation:
    value = draw(st.sampled_from([math.inf, -math.inf, math.nan]))
    choices: list[tuple[str, tuple[str, ...], Any]] = [
        ("non-finite duration", ("run", "duration"), value),
        ("non-finite working set", ("groups", "0", "workload", "working_set"), value),
        ("non-finite think time", ("groups", "0", "workload", "think_time"), value),
        ("non-finite read fraction", ("groups", "0", "workload", "read_fraction"), value),
        ("non-finite bandwidth", ("cluster", "storage_link"), {"profile": "1GbE", "bandwidth": value}),
        ("non-finite open-loop rate", ("groups", "0", "workload"), {"mode": "open", "iops": value}),
    ]
    label, path, chosen = draw(st.sampled_from(choices))
    _set(data, path, chosen)
    return f"{label} ({value})", data


def _set(data: ScenarioDict, path: tuple[str, ...], value: Any) -> None:
    node: Any = data
    for part in path[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[path[-1]] = value


@st.composite
def invalid_scenarios(draw: st.DrawFn) -> Mutation:
    """A valid scenario turned invalid by one mutation; returns (what was done, the dict)."""
    data = copy.deepcopy(draw(valid_scenarios()))
    mutate = draw(st.sampled_from([_negative, _unknown_key, _bad_unit, _too_many_replicas, _non_finite]))
    return mutate(data, draw)


# -- writing scenario dicts as TOML files ---------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if not isinstance(value, float) or value == value else "nan"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def to_toml(data: ScenarioDict) -> str:
    """A scenario dict as TOML text (top-level keys, values as inline tables and arrays)."""
    return "".join(f"{json.dumps(str(key))} = {_toml_value(value)}\n" for key, value in data.items())
