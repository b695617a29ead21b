"""What the sweep and compare views can vary: sweepable parameters, value lists and compare presets.

Everything here is data about a scenario's dotted paths (see
``Scenario.with_overrides``); no model logic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import simcache
from simcache.profiles import list_profiles
from simcache.scenario import REPLICAS

POLICIES = ("WT", "WB+0", "WB+1", "WB+2")
POLICY_HELP = (
    "WT: write-through, a write completes when the array has it. "
    "WB+0: write-back, complete once in this host's flash/RAM tier (no copy elsewhere until destaged). "
    "WB+1 / WB+2: write-back plus a copy on 1 or 2 peer hosts over the peer network before the write completes."
)


@dataclass(frozen=True)
class Parameter:
    """One sweepable knob: a dotted path and how a value typed by the user becomes an override."""

    label: str
    path: str
    help: str
    default_values: str
    """Comma-separated values shown in the values box to start from."""
    numeric: bool = True
    to_override: Callable[[Any], Any] = field(default=lambda value: value)


def _with_unit(unit: str) -> Callable[[Any], Any]:
    return lambda value: f"{value}{unit}"


def read_fraction(write_percent: Any) -> float:
    """A write share in percent (the sidebar's and the sweep's knob) as the scenario's ``read_fraction``."""
    return round(1.0 - float(write_percent) / 100.0, 6)


def sweep_parameters(scenario: simcache.Scenario) -> list[Parameter]:
    """The parameters the sweep view offers for ``scenario``: cluster-wide ones, then per group."""
    links = ", ".join(name for name in ("1GbE", "10GbE", "25GbE") if name in list_profiles("link"))
    params = [
        Parameter("Peer network link", "cluster.peer_link", "Link profile between hosts (carries WB+1/WB+2 replicas).", links, False),
        Parameter(
            "Peer links per host",
            "cluster.peer_links",
            "Ports of the peer link on each host; each pair of hosts uses one of them (per-destination hashing).",
            "1, 2, 4",
        ),
        Parameter("Hosts", "cluster.hosts", "Number of hosts; every group without a host list runs on all of them.", "3, 4, 6, 8"),
        Parameter(
            "Destager buffer (MiB)",
            "cluster.destager.capacity",
            "Per-host buffer of written data waiting to be destaged to the array.",
            "64, 256, 1024, 4096",
            to_override=_with_unit("MiB"),
        ),
        Parameter("Tier profile", "cluster.tier", "Flash or RAM acceleration tier on each host.", ", ".join(list_profiles("tier")), False),
        Parameter(
            "Tier capacity (GiB)",
            "cluster.tier.capacity",
            "Bytes of each host's tier (the read cache lives in it).",
            "1, 4, 16, 64",
            to_override=_with_unit("GiB"),
        ),
        Parameter("Array spindles", "array.spindles", "Drives in the backing array.", "4, 8, 14, 24"),
        Parameter("Drive RPM", "array.drive.rpm", "Rotational speed of the array's drives.", "5400, 7200, 10000, 15000"),
    ]
    for group in scenario.groups:
        params += _group_parameters(scenario, group)
    return params


def _group_parameters(scenario: simcache.Scenario, group: Any) -> list[Parameter]:
    prefix = f"groups.{group.name}"
    policies = [p for p in POLICIES if REPLICAS[p] < scenario.cluster.hosts]
    params = [
        Parameter(f"{group.name}: policy", f"{prefix}.policy", POLICY_HELP, ", ".join(policies), False),
        Parameter(
            f"{group.name}: write %",
            f"{prefix}.workload.read_fraction",
            "Share of this group's I/Os that are writes.",
            "10, 30, 50, 70, 90",
            to_override=read_fraction,
        ),
        Parameter(
            f"{group.name}: working set (GiB)",
            f"{prefix}.workload.working_set",
            "Bytes each VM of the group touches.",
            "1, 4, 16, 64",
            to_override=_with_unit("GiB"),
        ),
    ]
    intensity = _intensity_parameter(group)
    return params + ([intensity] if intensity else [])


def _intensity_parameter(group: Any) -> Parameter | None:
    workload = group.workload
    path = f"groups.{group.name}.workload"
    if workload.mode == "closed":
        scaled = _scaled(workload.workers, integer=True)
        return Parameter(f"{group.name}: workers per VM", f"{path}.workers", "Closed-loop workers per VM.", scaled)
    if workload.iops is not None:
        return Parameter(f"{group.name}: IOPS per VM", f"{path}.iops", "Mean I/Os per second each VM issues.", _scaled(workload.iops))
    if workload.throughput is not None:
        return Parameter(
            f"{group.name}: MB/s per VM",
            f"{path}.throughput",
            "Mean bytes per second each VM issues (10^6 bytes).",
            _scaled(workload.throughput / 1e6),
            to_override=_with_unit("MB/s"),
        )
    return None


def _scaled(current: float, integer: bool = False) -> str:
    values = [current * f for f in (0.5, 1.0, 1.5, 2.0)]
    if integer:
        values = sorted({max(1, round(v)) for v in values})
    return ", ".join(_number_text(v) for v in values)


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def parse_values(text: str, numeric: bool) -> list[Any]:
    """``"1, 2, 4"`` or a range ``"2:8:2"`` (start:stop:step, stop included) -> a list of values.

    Raises ValueError with a message for the page when the text is not a list of values.
    """
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ValueError("give at least one value, e.g. 1, 2, 4 or a range 2:8:2")
    if not numeric:
        return items
    values: list[float] = []
    for item in items:
        values += _range(item) if ":" in item else [_number(item)]
    return [int(v) if float(v).is_integer() else v for v in values]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number; write numbers separated by commas, or a range start:stop:step") from None


def _range(text: str) -> list[float]:
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"{text!r}: a range is start:stop:step, e.g. 2:8:2")
    start, stop, step = (_number(p) for p in parts)
    if step <= 0 or stop < start:
        raise ValueError(f"{text!r}: a range needs start <= stop and a positive step")
    count = int((stop - start) / step + 1e-9) + 1
    if count > 50:
        raise ValueError(f"{text!r} gives {count} values; keep a sweep to 50 values or fewer")
    return [round(start + i * step, 9) for i in range(count)]


def compare_presets(scenario: simcache.Scenario) -> dict[str, dict[str, Any]]:
    """Named override sets for the compare view: the sidebar's settings, the file's variants, policy/network what-ifs."""
    presets: dict[str, dict[str, Any]] = {"As set in the sidebar": {}}
    presets |= {f"Variant from file: {name}": dict(overrides) for name, overrides in scenario.variants.items()}
    links = list_profiles("link")
    for policy, link in (("WB+0", None), ("WB+1", "1GbE"), ("WB+1", "10GbE"), ("WB+2", "10GbE"), ("WT", None)):
        if REPLICAS[policy] >= scenario.cluster.hosts or (link and link not in links):
            continue
        overrides: dict[str, Any] = {f"groups.{g.name}.policy": policy for g in scenario.groups}
        if link:
            overrides["cluster.peer_link"] = link
        presets[f"Every group {policy}" + (f" over {link}" if link else "")] = overrides
    return presets


DEFAULT_COMPARE = ("Every group WB+0", "Every group WB+1 over 1GbE", "Every group WB+1 over 10GbE")
