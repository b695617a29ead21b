"""Hypothesis strategies: small valid scenario dicts, and mutations that make them invalid.

The valid scenarios are deliberately small (2-4 hosts, 1-3 groups, short runs,
bounded I/O rates) so that one simulation takes well under a second: the
property tests run dozens of them.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
import re
import tomllib
from typing import Any, NamedTuple

from hypothesis import strategies as st

from simcache.base.units import parse_size
from simcache.spec.profiles import list_profiles
from support.paths import ROOT

TIERS = sorted(list_profiles("tier"))
LINKS = sorted(list_profiles("link"))
ARRAYS = sorted(list_profiles("array"))
# Arrays of spinning drives, with their drive's profile: the ones command_queueing applies to.
SPINNING = {
    name: spec["drive"]
    for name, spec in list_profiles("array").items()
    if isinstance(spec.get("drive"), str)
    and list_profiles("drive")[spec["drive"]].get("media", "disk") != "flash"
}
POLICIES = ("WT", "WB+0", "WB+1", "WB+2")
REPLICAS = {"WT": 0, "WB+0": 0, "WB+1": 1, "WB+2": 2}
MAX_VM_BYTES_PER_S = 4e6  # a cap on each open-loop VM's offered load
SIZES = ("4KiB", "8KiB", "32KiB", "64KiB", "128KiB", "256KiB", "512KiB")
WRITE_BACK = ("WB+0", "WB+1", "WB+2")

ScenarioDict = dict[str, Any]


@st.composite
def duty_cycles(draw: st.DrawFn, open_loop: bool) -> dict[str, Any]:
    """An on/off duty cycle, or for an open loop also a sine one (the schema refuses sine on a
    closed loop).

    The on/off lengths include ones whose period ends are not exact in binary (0.3 s on, 0.2 s off)
    and ones where they are (0.25 s): an on period ending within rounding distance of an arrival
    once stalled open loops (test_onoff_clock_always_moves_on). An off length of zero is a cycle
    that never pauses.
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
    mixes = [sizes]
    # a mix per op: the writes keep the drawn mix, the reads get their own
    if draw(st.integers(0, 3)) == 0:
        read_keys = draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=2, unique=True))
        workload["read_sizes"] = {key: draw(st.floats(0.1, 1.0)) for key in read_keys}
        workload["write_sizes"] = workload.pop("sizes")
        mixes.append(workload["read_sizes"])
    if draw(st.booleans()):
        # Bounded offered load: an open loop above what a link or the array can carry piles up flows
        # without limit, and the flow network's cost per event grows with the number in flight.
        workload["mode"] = "open"
        mean_size = max(
            sum(parse_size(k) * w for k, w in mix.items()) / sum(mix.values()) for mix in mixes
        )
        most_iops = max(20, min(400, int(MAX_VM_BYTES_PER_S / mean_size)))
        if draw(st.booleans()):
            workload["iops"] = draw(st.integers(20, most_iops))
        else:
            workload["throughput"] = int(draw(st.integers(20, most_iops)) * mean_size)
        workload["arrivals"] = draw(st.sampled_from(["poisson", "uniform"]))
    else:
        workload["mode"] = "closed"
        # At most two slots per VM, each bounded by a think time to a few hundred IOPS even on a RAM
        # tier.
        workers = draw(st.integers(1, 2))
        workload["workers"] = workers
        workload["outstanding"] = draw(st.integers(1, 3 - workers))
        workload["think_time"] = f"{draw(st.integers(3, 10))}ms"
    if draw(st.integers(0, 3)) == 0:
        workload["duty_cycle"] = draw(duty_cycles(open_loop=workload["mode"] == "open"))
    return workload


@st.composite
def valid_scenarios(
    draw: st.DrawFn, policies: tuple[str, ...] = POLICIES, host_failures: bool = False
) -> ScenarioDict:
    """A small valid scenario dict (policies respect ``hosts - 1 >= replicas``); with
    ``host_failures``, sometimes a host dying, its VMs restarted by HA or not (the fuzzer's:
    the properties of random runs that the suite checks hold where no host dies)."""
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
        if draw(st.integers(0, 3)) == 0:  # issue 16's write-path options
            group["replication"] = draw(st.sampled_from(["memory", "async"]))
            group["metadata_write"] = draw(st.booleans())
            group["workload"]["sync_serialize"] = draw(st.booleans())
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
    if draw(st.integers(0, 3)) == 0:  # issue 34: where a tier's operations wait
        placement = draw(st.sampled_from(["any-unit", "addressed"]))
        scenario["cluster"]["tier"] = {
            "profile": scenario["cluster"]["tier"],
            "placement": placement,
        }
    array = scenario["array"]
    if array in SPINNING and draw(st.integers(0, 3)) == 0:  # issue 34: a drive's command queueing
        queueing = draw(st.sampled_from([0, 1, 4, 32]))
        drive = {
            "profile": SPINNING[array],
            "command_queueing": queueing,
            "reorder": draw(st.sampled_from(["positioning", "seek"])),
            "reorder_lag": draw(st.integers(0, 6)),
        }
        scenario["array"] = {"profile": array, "drive": drive}
    if draw(st.integers(0, 3)) == 0:
        vmotion: dict[str, Any] = {
            "kind": "vmotion",
            "at": 0.1,
            "source_host": 0,
            "target_host": 1,
            "size": "32MiB",
        }
        movable = [g for g in groups if 0 in g.get("hosts", [0])]
        # issue 17: the vMotion moves a VM, its buffered writes handed over or not
        if movable and draw(st.booleans()):
            vmotion["vm"] = f"{movable[0]['name']}-h0-0"
            vmotion["handover"] = movable[0].get("replication") != "async" and draw(st.booleans())
        scenario["events"] = [vmotion]
        if "vm" in vmotion and draw(st.booleans()):
            # the same VM moved again, back or on to a third host, while its first move's remote
            # hits and destage may still run
            again = dict(vmotion, at=draw(st.sampled_from([0.15, 0.3, duration / 2])))
            again |= {"source_host": 1, "target_host": draw(st.sampled_from([0, hosts - 1]))}
            again["handover"] = vmotion["handover"] and draw(st.booleans())
            if again["target_host"] != 1:
                scenario["events"].append(again)
    # issue 17: a link down for a while, and what write-back groups do about it
    if draw(st.integers(0, 3)) == 0:
        link = draw(st.sampled_from(["peer", "storage"]))
        at = draw(st.sampled_from([0.0, 0.2, duration / 2]))
        outage = {
            "kind": "link_down",
            "at": at,
            "host": draw(st.integers(0, hosts - 1)),
            "link": link,
            "duration": draw(st.sampled_from([0.1, 0.3, 5.0])),
        }
        scenario.setdefault("events", []).append(outage)
        for group in groups:
            group["on_peer_loss"] = draw(st.sampled_from(["write_through", "degrade", "stall"]))
    if draw(st.integers(0, 3)) == 0:  # issue 17: a component at a fraction of its speed for a while
        slow: dict[str, Any] = {
            "at": draw(st.sampled_from([0.0, 0.2, duration / 2])),
            "duration": draw(st.sampled_from([0.1, 5.0])),
        }
        kind = draw(
            st.sampled_from(["array_degraded", "array_rebuild", "link_slow", "device_slow"])
        )
        if kind == "array_rebuild":
            slow["rebuild_rate"] = draw(st.sampled_from(["20MB/s", "100MB/s"]))
            if draw(st.booleans()):
                # the rebuild of the whole drive: capacity / rate, past the run's end
                del slow["duration"]
        elif kind in ("link_slow", "device_slow"):
            slow |= {
                "host": draw(st.integers(0, hosts - 1)),
                "fraction": draw(st.sampled_from([0.01, 0.5, 1.0])),
            }
            if kind == "link_slow":
                slow["link"] = draw(st.sampled_from(["peer", "storage"]))
        scenario.setdefault("events", []).append({"kind": kind, **slow})
    if draw(st.integers(0, 3)) == 0:  # issue 17: a host's tier fails for good
        failure = {
            "kind": "device_failure",
            "at": draw(st.sampled_from([0.0, 0.2, duration / 2])),
            "host": draw(st.integers(0, hosts - 1)),
        }
        scenario.setdefault("events", []).append(failure)
    if host_failures and draw(st.integers(0, 3)) == 0:  # issue 17: a host dies
        death: dict[str, Any] = {
            "kind": "host_failure",
            "at": draw(st.sampled_from([0.0, 0.2, duration / 2])),
            "host": draw(st.integers(0, hosts - 1)),
        }
        if draw(st.booleans()):  # vSphere HA restarts its VMs on the survivors
            death["restart_delay"] = draw(st.sampled_from([0.05, 0.3]))
        scenario.setdefault("events", []).append(death)
    return scenario


# -- invalid variants
# -------------------------------------------------------------------------------

Mutation = tuple[str, ScenarioDict]


def _negative(data: ScenarioDict, draw: st.DrawFn) -> Mutation:
    choices: list[tuple[str, tuple[str, ...], Any]] = [
        (
            "negative bandwidth",
            ("cluster", "peer_link"),
            {"profile": "1GbE", "bandwidth": "-1Gbit/s"},
        ),
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
        ("zero read size", ("groups", "0", "workload", "read_sizes"), {"0B": 1.0}),
        ("negative write size weight", ("groups", "0", "workload", "write_sizes"), {"4KiB": -1.0}),
        (
            "negative tier latency",
            ("cluster", "tier"),
            {"profile": "nvme-p3700-field", "write_latency": "-1us"},
        ),
        (
            "unknown tier placement",
            ("cluster", "tier"),
            {"profile": "nvme-p3700", "placement": "anywhere"},
        ),
        (
            "zero read channel",
            ("cluster", "tier"),
            {"profile": "nvme-qlc-p5336", "read_channel_bandwidth": 0},
        ),
        (
            "negative write channel",
            ("cluster", "tier"),
            {"profile": "ram-ddr4", "write_channel_bandwidth": "-4.74GB/s"},
        ),
        (
            "read channel below its floor",
            ("cluster", "tier"),
            {"profile": "nvme-p3700", "read_channel_bandwidth": "500kB/s"},
        ),
        (
            "write channel past its ceiling",
            ("cluster", "tier"),
            {"profile": "ram-ddr5", "write_channel_bandwidth": "2000GB/s"},
        ),
        (
            "negative command queueing",
            ("array",),
            {"profile": "array-14x7200", "drive": {"profile": "sata-7200", "command_queueing": -1}},
        ),
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
        (
            "bad duration unit",
            ("run", "duration"),
            draw(st.sampled_from(["5 parsecs", "1 fortnight", "fast", "s5", "1..5s"])),
        ),
        (
            "bad rate unit",
            ("cluster", "peer_link"),
            {
                "profile": "1GbE",
                "bandwidth": draw(st.sampled_from(["1 furlong/s", "10 GbX", "lots"])),
            },
        ),
        (
            "bad size unit",
            ("cluster", "destager", "capacity"),
            draw(st.sampled_from(["4 XiB", "big", "4 KiB/s", "KiB"])),
        ),
        (
            "bad I/O size key",
            ("groups", "0", "workload", "sizes"),
            {draw(st.sampled_from(["4Kibble", "huge", "4 QB"])): 1.0},
        ),
        ("bad think time", ("groups", "0", "workload", "think_time"), "3 jiffies"),
        (
            "write channel as a size",
            ("cluster", "tier"),
            {"profile": "ram-ddr4", "write_channel_bandwidth": "4GiB"},
        ),
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
        (
            "non-finite bandwidth",
            ("cluster", "storage_link"),
            {"profile": "1GbE", "bandwidth": value},
        ),
        ("non-finite open-loop rate", ("groups", "0", "workload"), {"mode": "open", "iops": value}),
        (
            "non-finite read channel",
            ("cluster", "tier"),
            {"profile": "nvme-qlc-p5336", "read_channel_bandwidth": value},
        ),
        (
            "non-finite write channel",
            ("cluster", "tier"),
            {"profile": "ram-ddr4", "write_channel_bandwidth": value},
        ),
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
    mutate = draw(
        st.sampled_from([_negative, _unknown_key, _bad_unit, _too_many_replicas, _non_finite])
    )
    mutation: Mutation = mutate(data, draw)
    return mutation


# -- writing scenario dicts as TOML files ---------------------------------------------------------


class RawToml(str):
    """TOML text written as it is: values no dict can hold (1000-deep nesting, a dotted key) or
    that must stay unparsed."""


def _toml_string(text: str) -> str:
    # JSON's escapes are TOML's, but JSON leaves DEL raw (TOML forbids it) and writes characters
    # outside the basic plane as surrogate pairs (TOML refuses those escapes): keep the characters,
    # escape DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any) -> str:
    if isinstance(value, RawToml):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if not isinstance(value, float) or value == value else "nan"
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{_toml_string(str(k))} = {_toml_value(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def to_toml(data: ScenarioDict) -> str:
    """A scenario dict as TOML text (top-level keys, values as inline tables and arrays;
    :class:`RawToml` as written)."""
    return "".join(
        f"{_toml_string(str(key))} = {_toml_value(value)}\n" for key, value in data.items()
    )


# -- fuzzed scenario files: valid scenarios mutated at random, as the bytes of a TOML file
# ---------------------------------------


class FuzzCase:
    """One fuzzed scenario file: what was done to a valid scenario (``mutations``, in order) and
    the file's bytes."""

    __slots__ = ("mutations", "text")

    def __init__(self, mutations: list[str], text: bytes):
        self.mutations = mutations
        self.text = text

    # what hypothesis prints for a failing example: the steps, and the head of the file
    def __repr__(self) -> str:
        head = self.text[:2000]
        more = "..." if len(self.text) > len(head) else ""
        return (
            f"FuzzCase(mutations={self.mutations!r}, text={head!r}{more} ({len(self.text)} bytes))"
        )


LIBRARY = sorted(ROOT.glob("scenarios/*.toml"))
_QUANTITY = re.compile(
    r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>[^\d\s].*?)?\s*$"
)
HUGE_INT = 10**40
NAME_FIELDS = (
    "name",
    "source_host",
    "target_host",
    "host",
    "kind",
    "policy",
    "profile",
    "shape",
    "access",
    "mode",
    "tier",
    "array",
)
ODD_NAMES = [
    "",
    "all",
    "base",
    " ",
    "\x00",
    "a\nb",
    "a\rb",
    "\t",
    "\u202egnp.exe",  # right-to-left override
    "e\u0301",  # combining accent
    "\U0001f600",
    "\ufeff",
    "\u2028",
    "\u200b",
    "groups.g0",
    "a.b",
    "*",
    "../../etc/passwd",
    "$(rm -rf /)",
    "%s%n",
    "{0}",
    "nan",
    "null",
    "None",
    "-1",
    "0",
    "x" * 1000,
    RawToml('"' + "x" * 10_000_000 + '"'),
    RawToml('"' + "\\u0000" * 100_000 + '"'),
]
UNKNOWN_KEYS = [
    "colour",
    "",
    " ",
    "Policy",
    "policy ",
    "hostz",
    "__class__",
    "__dict__",
    "model_config",
    "__proto__",
    "\x00",
    "é",
    "a.b",
]
FACTORS: list[Any] = [
    0,
    1e-12,
    1e-6,
    1e-3,
    1e3,
    1e6,
    1e12,
    1e30,
    HUGE_INT,
    2**63,
    2**64,
    1e308,
    5e-324,
]
UNIT_FORMS = [
    "{num} parsecs",
    "{lower}",
    "{upper}",
    "{num} {unit}",
    "{exp}{unit}",
    "",
    "-{text}",
    "{num}{unit}{unit}",
    " {text} ",
    "{num}_{unit}",
    "{wide}{unit}",
    "{num}{unit}/s",
    "{num}µs",
    "{num}\u03bcs",
    "0x10{unit}",
    "1e400{unit}",
    "1e-400{unit}",
    "nan{unit}",
    "inf{unit}",
    "-inf{unit}",
    "1,000{unit}",
    "{num}",
    "{unit}",
    "{num}{unit}\x00",
    "{num} {unit} {unit}",
    "+{text}",
    "--{text}",
    "{num}.{unit}",
]
NON_FINITE: list[Any] = [
    math.inf,
    -math.inf,
    math.nan,
    "nan",
    "inf",
    "-inf",
    "NaN",
    "Infinity",
    "nan s",
    "infKiB",
    "-nanMiB",
]
TYPE_SWAPS: list[Any] = [
    "4KiB",
    "",
    "x",
    "1",
    "true",
    0,
    1,
    -1,
    1.5,
    True,
    False,
    {},
    {"a": 1},
    {"profile": "x"},
    [],
    [1, 2],
    [{}],
    [[]],
    ["4KiB"],
    dt.datetime(1979, 5, 27, 7, 32, tzinfo=dt.UTC),
    dt.date(1979, 5, 27),
    dt.time(7, 32),
]
NEST_DEPTHS = [2, 10, 100, 1000, 5000]
MANY_GROUPS_BYTES = 8 * 1024**2  # TOML text of the copies the "many groups" mutation adds, at most

Path_ = tuple[str | int, ...]


def _paths(node: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every place in a parsed scenario: tables, arrays and values, depth first (the root
    excluded)."""
    found: list[Path_] = []
    items: list[tuple[str | int, Any]] = []
    if isinstance(node, dict):
        items = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node))
    for key, value in items:
        path = (*prefix, key)
        found.append(path)
        found += _paths(value, path)
    return found


def _get(data: Any, path: Path_) -> Any:
    for part in path:
        data = data[part]
    return data


def _put(data: Any, path: Path_, value: Any) -> None:
    _get(data, path[:-1])[path[-1]] = value


def _pick(draw: st.DrawFn, data: ScenarioDict, keep: Any = None) -> Path_ | None:
    """A place in ``data`` (only those whose value passes ``keep``, if given); ``None`` if there is
    none.

    A top-level section first, then a place in it: a library file's many ``[[expect]]`` tables would
    otherwise draw most of the mutations.
    """
    places = [p for p in _paths(data) if keep is None or keep(p, _get(data, p))]
    if not places:
        return None
    sections = sorted({p[0] for p in places}, key=str)
    section = sections[draw(st.integers(0, len(sections) - 1))]
    inside = [p for p in places if p[0] == section]
    return inside[draw(st.integers(0, len(inside) - 1))]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _quantity(value: Any) -> re.Match[str] | None:
    return (
        _QUANTITY.match(value)
        if isinstance(value, str) and not isinstance(value, RawToml)
        else None
    )


def _is_quantity(path: Path_, value: Any) -> bool:
    """A size, time, rate or plain number that a mutation can rewrite (finite: ``inf`` has no
    digits to change)."""
    return _quantity(value) is not None or (_is_number(value) and math.isfinite(value))


def _scaled(number: str | float, factor: Any) -> Any:
    value = float(number) if isinstance(number, str) else number
    if isinstance(factor, int) and factor > 1e20 and float(value).is_integer():
        return int(value) * factor  # an exact huge integer, not a float
    try:
        return value * factor
    except OverflowError:
        return math.inf


def _mutate_type(draw: st.DrawFn, data: ScenarioDict) -> str:
    path = _pick(draw, data)
    if path is None:
        return "type: nothing to change"
    value = draw(st.sampled_from(TYPE_SWAPS))
    _put(data, path, copy.deepcopy(value))
    return f"type: {_dotted(path)} = {_toml_value(value)}"


def _mutate_unit(draw: st.DrawFn, data: ScenarioDict) -> str:
    path = _pick(draw, data, _is_quantity)
    if path is None:
        return "unit: no quantity"
    value = _get(data, path)
    match = _quantity(value) if isinstance(value, str) else _QUANTITY.match(repr(value))
    assert match is not None
    num, unit = match["num"], match["unit"] or "B"
    text = value if isinstance(value, str) else repr(value)
    form = draw(st.sampled_from(UNIT_FORMS))
    wide = num.translate(
        str.maketrans(
            "0123456789.", "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19\uff0e"
        )
    )
    new = form.format(
        num=num,
        unit=unit,
        text=text,
        lower=text.lower(),
        upper=text.upper(),
        exp=f"{float(num):e}",
        wide=wide,
    )
    _put(data, path, new)
    return f"unit: {_dotted(path)} = {new!r}"


def _mutate_sign(draw: st.DrawFn, data: ScenarioDict) -> str:
    path = _pick(draw, data, _is_quantity)
    if path is None:
        return "sign: no quantity"
    value = _get(data, path)
    new = (
        -value
        if _is_number(value)
        else value[1:]
        if value.lstrip().startswith("-")
        else "-" + value.lstrip()
    )
    _put(data, path, new)
    return f"sign: {_dotted(path)} = {new!r}"


def _mutate_magnitude(draw: st.DrawFn, data: ScenarioDict) -> str:
    path = _pick(draw, data, _is_quantity)
    if path is None:
        return "magnitude: no quantity"
    value = _get(data, path)
    factor = draw(st.sampled_from(FACTORS))
    if _is_number(value):
        new: Any = _scaled(value, factor)
    else:
        match = _quantity(value)
        assert match is not None
        scaled = _scaled(match["num"], factor)
        new = (
            f"{scaled}{match['unit'] or ''}"
            if isinstance(scaled, int)
            else f"{scaled!r}{match['unit'] or ''}"
        )
    _put(data, path, new)
    return f"magnitude: {_dotted(path)} = {_short(new)}"


def _mutate_non_finite(draw: st.DrawFn, data: ScenarioDict) -> str:
    path = _pick(draw, data, _is_quantity)
    if path is None:
        return "non-finite: no quantity"
    value = draw(st.sampled_from(NON_FINITE))
    _put(data, path, value)
    return f"non-finite: {_dotted(path)} = {_toml_value(value)}"


def _mutate_nesting(draw: st.DrawFn, data: ScenarioDict) -> str:
    path = _pick(draw, data)
    if path is None:
        return "nesting: nothing to wrap"
    depth = draw(st.sampled_from(NEST_DEPTHS))
    inner = _toml_value(_get(data, path))
    shape = draw(st.sampled_from(["array", "table", "dotted"]))
    if shape == "array":
        new = RawToml("[" * depth + inner + "]" * depth)
    elif shape == "table":
        new = RawToml("{a = " * depth + inner + "}" * depth)
    else:  # a dotted key as deep as the nesting, inside an inline table: {a.a.a...a = value}
        new = RawToml("{" + ".".join(["a"] * depth) + " = " + inner + "}")
    _put(data, path, new)
    return f"nesting: {_dotted(path)} wrapped {depth} deep ({shape})"


def _mutate_name(draw: st.DrawFn, data: ScenarioDict) -> str:
    kind = draw(st.sampled_from(["field", "duplicate group", "variant", "many groups"]))
    groups = data.get("groups")
    # earlier mutations may have changed it
    first_is_table = isinstance(groups, list) and bool(groups) and isinstance(groups[0], dict)
    if kind == "duplicate group" and isinstance(data.get("groups"), list) and data["groups"]:
        data["groups"].append(copy.deepcopy(data["groups"][0]))
        return "name: group 0 twice"
    if kind == "many groups" and first_is_table:
        count = draw(st.sampled_from([50, 1000]))
        # Copies of a group holding a long list (a rate profile of 100,000 levels) would take the
        # harness minutes to write as TOML: at most MANY_GROUPS_BYTES of copies, still twice the
        # scenario file limit.
        count = max(1, min(count, MANY_GROUPS_BYTES // len(_toml_value(data["groups"][0]))))
        data["groups"] += [
            {**copy.deepcopy(data["groups"][0]), "name": f"n{i}"} for i in range(count)
        ]
        return f"name: {count} more groups"
    name = draw(st.sampled_from(ODD_NAMES))
    if kind == "variant":
        data.setdefault("variants", {})
        if isinstance(data["variants"], dict):
            data["variants"][name] = {"run.seed": 2}
            return f"name: variant {_short(name)}"
    path = _pick(draw, data, lambda p, v: p[-1] in NAME_FIELDS)
    if path is None:
        return "name: no name field"
    _put(data, path, name)
    return f"name: {_dotted(path)} = {_short(name)}"


def _mutate_delete(draw: st.DrawFn, data: ScenarioDict) -> str:
    path = _pick(draw, data)
    if path is None:
        return "delete: nothing to delete"
    parent = _get(data, path[:-1])
    del parent[path[-1]]
    return f"delete: {_dotted(path)}"


def _mutate_unknown(draw: st.DrawFn, data: ScenarioDict) -> str:
    path = _pick(draw, data, lambda p, v: isinstance(v, dict))
    table = data if path is None else _get(data, path)
    key = draw(st.sampled_from(UNKNOWN_KEYS))
    value = draw(st.sampled_from(TYPE_SWAPS[:8]))
    table[key] = value
    return f"unknown: {_dotted((*(path or ()), key))} = {_toml_value(value)}"


def _corrupt_bytes(draw: st.DrawFn, text: bytes) -> tuple[str, bytes]:
    kind = draw(
        st.sampled_from(
            ["truncate", "flip", "invalid utf-8", "bom", "nul", "crlf", "repeat line", "drop line"]
        )
    )
    at = draw(st.integers(0, max(0, len(text) - 1)))
    if kind == "truncate":
        return f"bytes: truncated at {at}", text[:at]
    if kind == "flip" and text:
        return f"bytes: byte {at} flipped", text[:at] + bytes(
            [text[at] ^ draw(st.integers(1, 255))]
        ) + text[at + 1 :]
    if kind == "invalid utf-8":
        junk = draw(
            st.sampled_from(
                [b"\xff", b"\xc3", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]
            )
        )
        return f"bytes: {junk!r} at {at}", text[:at] + junk + text[at:]
    if kind == "bom":
        return "bytes: UTF-8 byte order mark", b"\xef\xbb\xbf" + text
    if kind == "nul":
        return f"bytes: NUL at {at}", text[:at] + b"\x00" + text[at:]
    if kind == "crlf":
        return "bytes: CRLF line ends", text.replace(b"\n", b"\r\n")
    lines = text.split(b"\n")
    i = draw(st.integers(0, max(0, len(lines) - 1)))
    if kind == "repeat line":
        return f"bytes: line {i + 1} twice", b"\n".join(lines[: i + 1] + lines[i:])
    return f"bytes: line {i + 1} dropped", b"\n".join(lines[:i] + lines[i + 1 :])


class _Set(NamedTuple):
    """A setting's value, set as it is (a table too: a size mix), not merged."""

    value: Any


def _at(path: tuple[str | int, ...], values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each of ``values`` as the nested tables that put it at ``path`` (keys; an int indexes a
    list): what :func:`_merge_setting` merges into a scenario."""
    nested: list[Any] = [_Set(value) for value in values]
    for name in reversed(path):
        nested = [{name: value} for value in nested]
    return tuple(nested)


# Valid settings a scenario may not have, each a list of nested tables to merge into it. Each is
# legal on its own, so most cases they make stay valid; with the engines compared (bench/fuzz.py
# --engines) they reach the settings the native engine must handle as the Python one does (a
# controller read cache with lines larger than the I/Os' alignment differed once: bench/README.md,
# stop 52, which takes a read cache, its line and a host cache cold and small enough to send reads
# to the array, merged at once).
VALID_SETTINGS: tuple[tuple[Any, ...], ...] = (
    _at(("array", "read_cache"), ("8MiB", 0)),
    tuple(
        {
            "array": {"read_cache": _Set("8MiB"), "read_cache_line": _Set(line)},
            "cluster": {"cache": {"warm": _Set(False), "capacity": _Set("1MiB")}},
        }
        for line in ("512B", "6KiB", "64KiB")
    ),
    _at(("array", "stripe"), ("16KiB", "24KiB", "1MiB")),
    _at(("array", "raid"), ("raid0", "raid1", "raid5", "raid6", "raid10")),
    _at(("array", "scheduling"), ("fcfs", "elevator")),
    # a tier's per-operation channels (a read's data leaving its die, a write's copy into its unit)
    # on any tier, as slow as a QLC die's, as fast as a RAM copy thread's and past it
    _at(("cluster", "tier", "read_channel_bandwidth"), ("630MB/s", "4.74GB/s", "40GB/s")),
    _at(("cluster", "tier", "write_channel_bandwidth"), ("630MB/s", "4.74GB/s", "40GB/s")),
    _at(("cluster", "cache", "line"), ("4KiB", "6KiB", "1MiB")),
    _at(("cluster", "cache", "capacity"), ("1MiB", "64MiB")),
    _at(("cluster", "cache", "warm"), (True, False)),
    _at(("cluster", "destager", "max_batch"), ("96KiB", "3MiB")),
    _at(("cluster", "destager", "concurrency"), (1, 3, 16)),
    _at(("run", "sample_interval"), ("0.1s", "0.33s")),
    _at(("groups", 0, "workload", "sizes"), ("3KiB", "512B", {"6KiB": 0.5, "1MiB": 0.5})),
    # asynchronous replicas (a WB+1 or WB+2 group's; ignored by the others) through a send buffer
    # that rarely fills, or one that holds a single copy of most writes
    tuple(
        {"groups": {0: {"replication": _Set("async"), "replication_buffer": _Set(size)}}}
        for size in ("4MiB", "64KiB")
    ),
)


def _merge_setting(table: Any, setting: dict[Any, Any], path: tuple[Any, ...] = ()) -> list[str]:
    """Merge ``setting`` (nested tables) into ``table``: tables made where missing, an array or
    cache named by its profile made a table of that profile, an int key indexing a list; the
    dotted places set (none where the scenario has something else there)."""
    done = []
    for name, value in setting.items():
        place = (*path, name)
        if isinstance(name, int):
            if not isinstance(table, list) or len(table) <= name:
                continue
            inner = table[name]
        elif not isinstance(table, dict):
            continue
        elif isinstance(value, _Set):
            table[name] = value.value
            done.append(f"{_dotted(place)} = {_toml_value(value.value)}")
            continue
        else:
            if isinstance(table.get(name), str):
                table[name] = {"profile": table[name]}
            inner = table.setdefault(name, {})
        done += _merge_setting(inner, value, place)
    return done


def _mutate_setting(draw: st.DrawFn, data: ScenarioDict) -> str:
    """A valid setting from :data:`VALID_SETTINGS` merged into the scenario."""
    done = _merge_setting(
        data, copy.deepcopy(draw(st.sampled_from(draw(st.sampled_from(VALID_SETTINGS)))))
    )
    return f"setting: {', '.join(done)}" if done else "setting: no place for it"


MUTATIONS = (
    _mutate_setting,
    _mutate_type,
    _mutate_unit,
    _mutate_sign,
    _mutate_magnitude,
    _mutate_non_finite,
    _mutate_nesting,
    _mutate_name,
    _mutate_delete,
    _mutate_unknown,
)


def _dotted(path: Path_) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


@st.composite
def fuzzed_scenario_files(draw: st.DrawFn, settings_only: bool = False) -> FuzzCase:
    """A valid scenario (a generated one or a library file) mutated 1-3 times, written as TOML,
    sometimes corrupted byte-wise; ``settings_only``: by valid settings only
    (:data:`VALID_SETTINGS`), never corrupted, so that most cases stay valid (the engines'
    comparison, ``bench/fuzz.py --valid-settings``)."""
    library = draw(st.sampled_from([None, None, *LIBRARY]))
    if library is None:
        data: ScenarioDict = copy.deepcopy(draw(valid_scenarios(host_failures=True)))
        mutations = ["base: generated"]
    else:
        with library.open("rb") as file:
            data = tomllib.load(file)
        mutations = [f"base: scenarios/{library.name}"]
    for _ in range(draw(st.integers(1, 3))):
        mutate = _mutate_setting if settings_only else draw(st.sampled_from(MUTATIONS))
        mutations.append(mutate(draw, data))
    text = to_toml(data).encode("utf-8")
    if not settings_only and draw(st.integers(0, 4)) == 0:
        done, text = _corrupt_bytes(draw, text)
        mutations.append(done)
    return FuzzCase(mutations, text)
