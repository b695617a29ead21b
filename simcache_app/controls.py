"""Sidebar controls. Each section shows the scenario's current values and returns the
dotted-path overrides (``Scenario.with_overrides``) for the ones the user changed.

Widget keys start with the scenario's identity, so picking another scenario
starts from that file's values.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

import simcache
from simcache.profiles import list_profiles
from simcache.units import parse_bandwidth, parse_size
from simcache_app.parameters import POLICIES, POLICY_HELP, read_fraction

DEFAULT_DURATION_S = 8.0
"""Simulated seconds of the first run: short, so that the first result shows in a couple of seconds."""
PEER_LINKS_SHOWN = 8
"""Most peer links per host the sidebar offers (a scenario file may have up to 16)."""
Overrides = dict[str, Any]
_DUTY_SHAPES = {"none": "steady", "onoff": "on/off bursts", "sine": "sine wave around the mean rate"}


def run_controls(scenario: simcache.Scenario, key: str) -> tuple[float, int]:
    """Simulated duration (s) and seed; they are passed to ``simulate``, not written into the scenario."""
    duration = st.number_input(
        "Simulated seconds",
        min_value=1.0,
        max_value=600.0,
        value=min(scenario.run.duration, DEFAULT_DURATION_S),
        step=1.0,
        format="%g",
        key=f"{key}.duration",
        help=f"Length of the simulated run. The file says {scenario.run.duration:g} s; a short run shows a first answer fast, "
        "a longer one narrows the tails (p99).",
    )
    seed = st.number_input(
        "Seed",
        min_value=0,
        value=scenario.run.seed,
        step=1,
        key=f"{key}.seed",
        help="Random seed. The same settings and seed always give the same result; another seed shows the run-to-run spread.",
    )
    return float(duration), int(seed)


def cluster_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """Host count, peer network and destager buffer."""
    overrides: Overrides = {}
    cluster = scenario.cluster
    _count(
        overrides,
        "Hosts",
        "cluster.hosts",
        cluster.hosts,
        256,
        key,
        help="Hosts in the cluster. WB+1 needs at least 2 hosts, WB+2 at least 3.",
    )
    link = _profile_select("Peer network (replica link)", "link", cluster.peer_link.profile, f"{key}.peer_link")
    _changed(overrides, "cluster.peer_link", link, cluster.peer_link.profile)
    _count(
        overrides,
        "Peer links per host",
        "cluster.peer_links",
        cluster.peer_links,
        max(PEER_LINKS_SHOWN, cluster.peer_links),
        key,
        help="Ports of that link on each host for replicas and vMotion (e.g. 2 x 10GbE). Each pair of hosts uses one port "
        "(per-destination hashing), so one replica stream never gets more than one link's speed; with ring peers, WB+2 sends "
        "its two copies on different ports when there are 2 or more.",
    )
    _quantity(
        overrides,
        "Destager buffer per host (MiB)",
        "cluster.destager.capacity",
        cluster.destager.capacity,
        "MiB",
        key,
        help="Written data waiting to be copied to the array. When it is full, writers wait (destage_wait in the breakdown).",
    )
    return overrides


def tier_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """The flash/RAM tier profile and its capacity."""
    overrides: Overrides = {}
    tier = scenario.cluster.tier
    profile = _profile_select("Tier (flash or RAM)", "tier", tier.profile, f"{key}.tier")
    _changed(overrides, "cluster.tier", profile, tier.profile)
    capacity = scenario.with_overrides(overrides).cluster.tier.capacity if overrides else tier.capacity
    _quantity(
        overrides,
        "Tier capacity per host (GiB)",
        "cluster.tier.capacity",
        capacity,
        "GiB",
        f"{key}.{profile}",
        help="Bytes of flash/RAM per host; the read cache uses it.",
    )
    return overrides


def array_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """Spindle count, drive profile and drive RPM of the backing array."""
    overrides: Overrides = {}
    array = scenario.array
    _count(
        overrides,
        "Array spindles",
        "array.spindles",
        array.spindles,
        4096,
        key,
        help=f"Drives in the array ({array.raid}). More spindles: more random I/Os per second for destaging and read misses.",
    )
    drive = _profile_select("Array drive", "drive", array.drive.profile, f"{key}.drive")
    _changed(overrides, "array.drive", drive, array.drive.profile)
    rpm = scenario.with_overrides(overrides).array.drive.rpm if "array.drive" in overrides else array.drive.rpm
    chosen = st.number_input(
        "Drive RPM",
        min_value=1000.0,
        max_value=30000.0,
        value=float(rpm),
        step=600.0,
        key=f"{key}.{drive}.rpm",
        help="Rotational speed: sets the rotational latency of every array I/O.",
    )
    _changed(overrides, "array.drive.rpm", float(chosen), float(rpm))
    return overrides


def group_controls(group: Any, key: str) -> Overrides:
    """Policy and workload knobs of one VM group."""
    overrides: Overrides = {}
    prefix = f"groups.{group.name}"
    key = f"{key}.{group.name}"
    workload = group.workload
    policy = st.selectbox("Write policy", POLICIES, index=POLICIES.index(group.policy), key=f"{key}.policy", help=POLICY_HELP)
    _changed(overrides, f"{prefix}.policy", policy, group.policy)
    current_writes = round((1 - workload.read_fraction) * 100)
    writes = st.slider("Write %", 0, 100, current_writes, key=f"{key}.writes", help="Share of the group's I/Os that are writes.")
    _changed(overrides, f"{prefix}.workload.read_fraction", read_fraction(writes), read_fraction(current_writes))
    overrides |= _intensity_controls(workload, f"{prefix}.workload", key)
    sizes = st.text_input(
        "I/O size mix",
        _size_mix_text(workload.sizes),
        key=f"{key}.sizes",
        help="Sizes and their weights, e.g. 8KiB: 0.7, 64KiB: 0.3 (KiB/MiB are powers of 1024).",
    )
    _changed(overrides, f"{prefix}.workload.sizes", parse_size_mix(sizes, f"{prefix}.workload.sizes"), dict(workload.sizes))
    _quantity(
        overrides,
        "Working set per VM (GiB)",
        f"{prefix}.workload.working_set",
        workload.working_set,
        "GiB",
        key,
        help="Bytes each VM touches; with the tier capacity it sets the read hit rate.",
    )
    overrides |= _duty_cycle_controls(workload, f"{prefix}.workload.duty_cycle", key)
    return overrides


def _intensity_controls(workload: Any, prefix: str, key: str) -> Overrides:
    overrides: Overrides = {}
    if workload.mode == "closed":
        _count(
            overrides,
            "Workers per VM",
            f"{prefix}.workers",
            workload.workers,
            1024,
            key,
            help=f"Closed loop: each worker keeps {workload.outstanding} I/O(s) in flight and issues the next when one completes.",
        )
    elif workload.iops is not None:
        iops = st.number_input(
            "IOPS per VM", min_value=0.1, value=float(workload.iops), key=f"{key}.iops", help="Open loop: mean I/Os per second per VM."
        )
        _changed(overrides, f"{prefix}.iops", float(iops), float(workload.iops))
    else:
        _quantity(
            overrides,
            "MB/s per VM",
            f"{prefix}.throughput",
            workload.throughput,
            "MB/s",
            key,
            help="Open loop: mean bytes per second per VM (MB = 10^6 bytes).",
        )
    return overrides


def _duty_cycle_controls(workload: Any, path: str, key: str) -> Overrides:
    duty = workload.duty_cycle
    shapes = [s for s in _DUTY_SHAPES if s != "sine" or workload.mode == "open"]
    current = duty.shape if duty else "none"
    shape = st.selectbox(
        "Duty cycle",
        shapes,
        index=shapes.index(current),
        format_func=_DUTY_SHAPES.__getitem__,
        key=f"{key}.duty",
        help="On/off: bursts at full intensity with rests in between. Sine: the rate swings around its mean (open loop only).",
    )
    if shape == "none":
        return {path: None} if duty else {}
    same = duty is not None and duty.shape == shape
    if shape == "onoff":
        on = st.number_input("Burst length (s)", min_value=0.01, value=duty.on if same else 5.0, key=f"{key}.on")
        off = st.number_input("Rest time (s)", min_value=0.0, value=duty.off if same else 5.0, key=f"{key}.off")
        chosen = {"shape": "onoff", "on": on, "off": off}
    else:
        period = st.number_input("Period (s)", min_value=0.01, value=duty.period if same else 10.0, key=f"{key}.period")
        amplitude = st.slider("Amplitude", 0.0, 1.0, duty.amplitude if same else 0.5, key=f"{key}.amplitude")
        chosen = {"shape": "sine", "period": period, "amplitude": amplitude}
    unchanged = same and all(getattr(duty, field) == value for field, value in chosen.items())
    return {} if unchanged else {path: {**chosen, "phase": duty.phase if duty else 0.0}}


def parse_size_mix(text: str, path: str) -> dict[str, float]:
    """``"8KiB: 0.7, 64KiB: 0.3"`` -> ``{"8KiB": 0.7, "64KiB": 0.3}``; a size alone weighs 1.

    The sizes themselves are checked by the scenario loader; this only splits the text.
    """
    mix: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        size, _, weight = item.partition(":")
        try:
            mix[size.strip()] = float(weight) if weight.strip() else 1.0
        except ValueError:
            raise simcache.ScenarioError("sidebar", [(path, f"weight {weight.strip()!r} of {size.strip()} is not a number")]) from None
    if not mix:
        raise simcache.ScenarioError("sidebar", [(path, "give at least one size, e.g. 4KiB or 8KiB: 0.7, 64KiB: 0.3")])
    return mix


def _size_mix_text(sizes: dict[str, float]) -> str:
    return ", ".join(f"{size}: {weight:g}" for size, weight in sizes.items())


def _profile_select(label: str, kind: str, current: str | None, key: str) -> str | None:
    """A built-in profile of ``kind``; ``None`` keeps a table defined in the file without a profile."""
    profiles = list_profiles(kind)
    options: list[str | None] = [*profiles] if current in profiles else [None, *profiles]
    notes = "\n".join(f"- **{name}**: {fields.get('description', '')}" for name, fields in profiles.items())
    return st.selectbox(
        label,
        options,
        index=options.index(current),
        format_func=lambda name: name or "as defined in the file",
        key=key,
        help=f"Built-in profiles (`simcache profiles {kind}` lists their sources):\n\n{notes}",
    )


def _count(overrides: Overrides, label: str, path: str, current: int, most: int, key: str, help: str) -> None:
    """A whole-number input from 1 to ``most`` that overrides ``path`` when changed."""
    value = st.number_input(label, min_value=1, max_value=most, value=current, step=1, key=f"{key}.{path}", help=help)
    _changed(overrides, path, int(value), current)


def _quantity(overrides: Overrides, label: str, path: str, current: float, unit: str, key: str, help: str) -> None:
    """A number input in ``unit`` (GiB, MiB, MB/s) that overrides ``path`` with ``"<value><unit>"``."""
    per_unit = parse_bandwidth(f"1{unit}") if unit.endswith("/s") else parse_size(f"1{unit}")
    shown = round(current / per_unit, 3)
    value = st.number_input(label, min_value=0.001, value=float(shown), key=f"{key}.{path}", help=help, format="%g")
    _changed(overrides, path, f"{value:g}{unit}", f"{shown:g}{unit}")


def _changed(overrides: Overrides, path: str, value: Any, current: Any) -> None:
    if value != current:
        overrides[path] = value
