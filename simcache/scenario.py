"""Scenario: the validated, frozen description of a cluster and its workload.

A scenario is data, separate from any run of it. It is read from TOML (or a
dict), every quantity is parsed into SI units (bytes, seconds, bytes/s), named
profiles are resolved and merged with the file's overrides, and the result is
frozen. Every mistake raises :class:`~simcache.errors.ScenarioError` naming the
file, the field path and what is allowed.

The schema below is the single place where defaults live.
"""

from __future__ import annotations

import copy
import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from simcache.errors import ScenarioError
from simcache.metrics import RECORD_METRICS, TOTALS, bound_value
from simcache.profiles import get_profile
from simcache.units import UnitError, parse_bandwidth, parse_duration, parse_size

__all__ = [
    "ArraySpec",
    "CacheSpec",
    "ClusterSpec",
    "CompressionSpec",
    "DestagerSpec",
    "DriveSpec",
    "DutyCycle",
    "Event",
    "Group",
    "HostFailure",
    "LinkSpec",
    "Policy",
    "RunSpec",
    "Scenario",
    "TierSpec",
    "VMotion",
    "Workload",
    "load_scenario",
]


def _unit(parser: Any) -> BeforeValidator:
    def parse(value: Any) -> Any:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            try:
                return parser(value)
            except UnitError as exc:
                raise ValueError(str(exc)) from None
        return value

    return BeforeValidator(parse)


Bytes = Annotated[int, _unit(parse_size)]
Seconds = Annotated[float, _unit(parse_duration)]
Rate = Annotated[float, _unit(parse_bandwidth)]
PositiveBytes = Annotated[Bytes, Field(gt=0)]
PositiveRate = Annotated[Rate, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]

Policy = Literal["WT", "WB+0", "WB+1", "WB+2"]
REPLICAS: dict[str, int] = {"WT": 0, "WB+0": 0, "WB+1": 1, "WB+2": 2}
MAX_PEER_LINKS = 16
"""Most peer-network ports a host may have (``cluster.peer_links``)."""
BASE = "base"
"""The variant name of a scenario as written (checks select it by default)."""


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def _resolve_profile(kind: str, value: Any) -> Any:
    """``"name"`` or ``{profile = "name", field = override, ...}`` -> the profile's fields with the overrides."""
    if isinstance(value, str):
        value = {"profile": value}
    if isinstance(value, Mapping) and value.get("profile"):
        try:
            merged = get_profile(kind, str(value["profile"]))
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        merged.update(value)
        return merged
    return value


class _Profiled(_Spec):
    """A spec that may name a built-in profile of ``_profile_kind`` and override its fields."""

    _profile_kind: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, value: Any) -> Any:
        return _resolve_profile(cls._profile_kind, value)


class TierSpec(_Profiled):
    """A flash or RAM acceleration tier on one host."""

    _profile_kind: ClassVar[str] = "tier"

    profile: str | None = None
    description: str = ""
    source: str = ""
    kind: Literal["flash", "ram"] = "flash"
    read_latency: Annotated[Seconds, Field(ge=0)]
    write_latency: Annotated[Seconds, Field(ge=0)]
    read_bandwidth: PositiveRate
    write_bandwidth: PositiveRate
    channels: Annotated[int, Field(ge=1, le=4096)] = 1
    controller_bandwidth: PositiveRate | None = None
    capacity: PositiveBytes
    clean_pool: Annotated[Bytes, Field(ge=0)] | None = None
    gc_rate: PositiveRate | None = None
    gc_pass: Annotated[Bytes, Field(ge=0)] | None = None
    """Mean bytes one foreground garbage-collection pass reclaims (exponentially distributed; see
    model/tier.py). Unset or 0: garbage collection refills the clean pool smoothly."""
    volatile: bool = False
    service: Literal["deterministic", "exponential"] = "deterministic"
    """Service-time distribution; ``exponential`` exists to check the model against M/M/c theory."""

    @model_validator(mode="after")
    def _cliff_complete(self) -> TierSpec:
        if (self.clean_pool is None) != (self.gc_rate is None):
            raise ValueError("clean_pool and gc_rate go together: set both (a sustained-write cliff) or neither")
        if self.gc_pass and self.clean_pool is None:
            raise ValueError("gc_pass needs a sustained-write cliff: set clean_pool and gc_rate too")
        return self


class LinkSpec(_Profiled):
    """One full-duplex network port type (each host has one per network)."""

    _profile_kind: ClassVar[str] = "link"

    profile: str | None = None
    description: str = ""
    source: str = ""
    bandwidth: PositiveRate
    latency: Annotated[Seconds, Field(ge=0)]
    mtu: Annotated[int, Field(ge=64, le=65536)] = 1500
    header_bytes: Annotated[int, Field(ge=0)] = 40
    framing_bytes: Annotated[int, Field(ge=0)] = 38

    @model_validator(mode="after")
    def _payload_fits(self) -> LinkSpec:
        if self.header_bytes >= self.mtu:
            raise ValueError(f"header_bytes ({self.header_bytes}) must be smaller than mtu ({self.mtu})")
        return self


class DriveSpec(_Profiled):
    """One spinning drive."""

    _profile_kind: ClassVar[str] = "drive"

    profile: str | None = None
    description: str = ""
    source: str = ""
    rpm: Annotated[float, Field(gt=0, le=30000)]
    avg_seek: Annotated[Seconds, Field(ge=0)]
    settle: Annotated[Seconds, Field(ge=0)] = 0.0
    media_rate: PositiveRate
    capacity: PositiveBytes

    @model_validator(mode="after")
    def _settle_below_avg(self) -> DriveSpec:
        if self.settle > self.avg_seek:
            raise ValueError("settle (track-to-track seek) cannot exceed avg_seek")
        return self


class ArraySpec(_Profiled):
    """The shared backing array: spindles behind a controller, reached over a storage port."""

    _profile_kind: ClassVar[str] = "array"

    profile: str | None = None
    description: str = ""
    source: str = ""
    drive: DriveSpec
    spindles: Annotated[int, Field(ge=1, le=4096)]
    raid: Literal["raid0", "raid1", "raid10", "raid5", "raid6"] = "raid10"
    stripe: PositiveBytes = 64 * 1024
    controller_cache: Annotated[Bytes, Field(ge=0)] = 0
    cache_latency: Annotated[Seconds, Field(ge=0)] = 0.0002
    port: LinkSpec

    @model_validator(mode="after")
    def _enough_spindles(self) -> ArraySpec:
        minimum = {"raid0": 1, "raid1": 2, "raid10": 2, "raid5": 3, "raid6": 4}[self.raid]
        if self.spindles < minimum:
            raise ValueError(f"{self.raid} needs at least {minimum} spindles, got {self.spindles}")
        return self


class DestagerSpec(_Spec):
    """Per-host destage buffer and its flushers."""

    capacity: PositiveBytes = 4 * 1024**3
    concurrency: Annotated[int, Field(ge=1, le=1024)] = 4
    max_batch: PositiveBytes = 1024**2
    """Largest coalesced write the destager sends to the array in one go."""


class CacheSpec(_Spec):
    """Per-host LRU read cache kept in the tier."""

    line: PositiveBytes = 64 * 1024
    capacity: PositiveBytes | None = None
    """Bytes of the tier used for cached blocks; defaults to the tier's capacity."""


class CompressionSpec(_Spec):
    """Compression of replica traffic on the peer network."""

    mode: Literal["off", "always", "adaptive"] = "off"
    throughput: PositiveRate = 500e6
    """CPU compression rate on the sending host, bytes/s of input."""
    threshold: Fraction = 0.7
    """Adaptive mode compresses only while the sending port's recent utilization is above this."""


class ClusterSpec(_Spec):
    """Hosts (all alike), their tier, networks, destager and cache."""

    hosts: Annotated[int, Field(ge=1, le=256)] = 4
    tier: TierSpec
    peer_link: LinkSpec
    peer_links: int = 1
    """Peer-network ports of the ``peer_link`` profile on every host, 1 to 16 (e.g. 2 for 2 x 10GbE
    dedicated to replication). Transfers to one peer always use the same port, as per-destination
    hashing (LACP layer-3 hash, multipath per target) does: a host sends to the peer ``d`` steps
    ahead of it around the ring on its port ``(d - 1) mod peer_links``, and the peer receives on
    its port of the same number, so WB+2 with 2 ports sends the two replicas of a write on
    different ports, and one flow never runs faster than one port's line rate. A vMotion spreads
    its streams over the source's ports round-robin (multi-NIC vMotion)."""
    storage_link: LinkSpec
    peer_selection: Literal["ring", "random"] = "ring"
    peer_fabric: Literal["switched", "shared"] = "switched"
    """``switched``: each host's ports into a non-blocking switch. ``shared``: all peer traffic
    also crosses one segment of the peer link's bandwidth (a single uplink or inter-switch link),
    however many ports each host has."""
    destager: DestagerSpec = DestagerSpec()
    cache: CacheSpec = CacheSpec()
    compression: CompressionSpec = CompressionSpec()

    @field_validator("peer_links")
    @classmethod
    def _peer_link_count(cls, value: int) -> int:
        if not 1 <= value <= MAX_PEER_LINKS:
            raise ValueError(
                f"peer_links is the number of peer_link ports on each host; set it to a whole number from 1 "
                f"to {MAX_PEER_LINKS} (the default, 1, is a single port)"
            )
        return value


class DutyCycle(_Spec):
    """Time-varying intensity: on/off bursts, or a sinusoid around the mean rate."""

    shape: Literal["onoff", "sine"]
    on: Annotated[Seconds, Field(gt=0)] | None = None
    off: Annotated[Seconds, Field(ge=0)] | None = None
    period: Annotated[Seconds, Field(gt=0)] | None = None
    amplitude: Fraction = 0.5
    phase: Annotated[Seconds, Field(ge=0)] = 0.0
    """Start offset into the cycle."""

    @model_validator(mode="after")
    def _shape_fields(self) -> DutyCycle:
        if self.shape == "onoff" and (self.on is None or self.off is None):
            raise ValueError('shape "onoff" needs both on and off durations, e.g. on = "10s", off = "20s"')
        if self.shape == "sine" and self.period is None:
            raise ValueError('shape "sine" needs a period, e.g. period = "60s"')
        return self


class Workload(_Spec):
    """What one VM of a group does."""

    mode: Literal["closed", "open"] = "closed"
    workers: Annotated[int, Field(ge=1, le=1024)] = 1
    outstanding: Annotated[int, Field(ge=1, le=1024)] = 1
    """I/Os each worker keeps in flight (closed loop)."""
    think_time: Annotated[Seconds, Field(ge=0)] = 0.0
    iops: Annotated[float, Field(gt=0)] | None = None
    throughput: PositiveRate | None = None
    arrivals: Literal["poisson", "uniform"] = "poisson"
    read_fraction: Fraction = 0.0
    sizes: dict[str, Annotated[float, Field(gt=0)]] = {"4KiB": 1.0}
    """I/O size mix: size -> relative weight."""
    working_set: PositiveBytes = 10 * 1024**3
    access: Literal["uniform", "zipf", "sequential"] = "uniform"
    zipf_theta: Annotated[float, Field(gt=0, le=5)] = 0.99
    compressibility: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    """Fraction of bytes compression removes from this VM's data (0 = incompressible)."""
    duty_cycle: DutyCycle | None = None

    @field_validator("sizes", mode="before")
    @classmethod
    def _size_mix(cls, value: Any) -> Any:
        if isinstance(value, (str, int)):
            return {str(value): 1.0}
        if isinstance(value, Mapping):
            for key in value:
                try:
                    if parse_size(key) <= 0:
                        raise ValueError(f"I/O size {key!r} must be positive")
                except UnitError as exc:
                    raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _mode_fields(self) -> Workload:
        if self.mode == "open" and (self.iops is None) == (self.throughput is None):
            raise ValueError('an open-loop workload needs exactly one of iops or throughput (e.g. throughput = "5MB/s")')
        if self.mode == "closed" and (self.iops is not None or self.throughput is not None):
            raise ValueError(
                'iops/throughput set the rate of an open loop; for a closed loop use workers and outstanding, or set mode = "open"'
            )
        if self.mode == "closed" and self.duty_cycle is not None and self.duty_cycle.shape == "sine":
            raise ValueError('a sine duty cycle modulates an arrival rate: use mode = "open", or shape = "onoff" for a closed loop')
        return self

    @property
    def size_mix(self) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """Sizes in bytes and their probabilities (summing to 1)."""
        total = sum(self.sizes.values())
        return (
            tuple(parse_size(s) for s in self.sizes),
            tuple(w / total for w in self.sizes.values()),
        )

    @property
    def mean_size(self) -> float:
        sizes, probs = self.size_mix
        return float(sum(s * p for s, p in zip(sizes, probs, strict=True)))

    @property
    def mean_rate(self) -> float:
        """Open-loop mean arrival rate in I/Os per second (before the duty cycle)."""
        if self.iops is not None:
            return self.iops
        assert self.throughput is not None
        return self.throughput / self.mean_size


class Group(_Spec):
    """A set of identical VMs: same policy and workload, placed on some hosts."""

    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")]
    policy: Policy = "WB+0"
    vms_per_host: Annotated[int, Field(ge=1, le=1024)] = 1
    hosts: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)] | None = None
    """Host indices the group runs on; all hosts when omitted."""
    workload: Workload = Workload()

    @property
    def replicas(self) -> int:
        return REPLICAS[self.policy]


class VMotion(_Spec):
    """A live migration at ``at``: a background transfer between two hosts' peer ports."""

    kind: Literal["vmotion"]
    at: Annotated[Seconds, Field(ge=0)]
    source_host: Annotated[int, Field(ge=0)] = 0
    target_host: Annotated[int, Field(ge=0)] = 1
    size: PositiveBytes = 8 * 1024**3
    """Bytes to move (a VM's memory image)."""
    weight: Annotated[float, Field(gt=0)] = 1.0
    """Share weight against other flows on the same port (1 = one flow's fair share)."""
    streams: Annotated[int, Field(ge=1, le=64)] = 4
    """Parallel streams the migration opens; each takes a fair share."""


class HostFailure(_Spec):
    """A host dies at ``at``: its VMs stop, its unreplicated destage backlog is lost,
    surviving replica holders destage the rest, and VMs that replicated to it pick another peer."""

    kind: Literal["host_failure"]
    at: Annotated[Seconds, Field(ge=0)]
    host: Annotated[int, Field(ge=0)]


Event = Annotated[VMotion | HostFailure, Field(discriminator="kind")]
EVENT_KINDS: dict[str, type[_Spec]] = {"vmotion": VMotion, "host_failure": HostFailure}


class RunSpec(_Spec):
    duration: Annotated[Seconds, Field(gt=0)] = 30.0
    warmup: Annotated[Seconds, Field(ge=0)] = 0.0
    """Records issued before this time are kept but left out of the summary."""
    seed: Annotated[int, Field(ge=0)] = 1
    sample_interval: Annotated[Seconds, Field(gt=0)] = 1.0

    @model_validator(mode="after")
    def _warmup_inside(self) -> RunSpec:
        if self.warmup >= self.duration:
            raise ValueError(f"warmup ({self.warmup}s) must be shorter than duration ({self.duration}s)")
        return self


class Selection(_Spec):
    """What a check measures: which variant's run, which I/Os, which time window."""

    variant: str = BASE
    """A name from the scenario's ``[variants]``, or ``base``: the scenario as written."""
    group: str = "all"
    op: Literal["read", "write", "any"] = "write"
    host: str | None = None
    """Only I/Os of VMs on this host (``"host0"``)."""
    window: Annotated[list[Seconds], Field(min_length=2, max_length=2)] | None = None
    """[start, end) of issue times (series: sample times); the measured window after warm-up when omitted."""
    stat: Literal["mean", "max", "min", "last"] = "mean"
    """How a ``series.*`` metric's samples in the window are reduced to one number."""

    @model_validator(mode="after")
    def _window_order(self) -> Selection:
        if self.window is not None and not self.window[0] < self.window[1]:
            raise ValueError(f"window start ({self.window[0]}s) must be before its end ({self.window[1]}s)")
        return self


class Denominator(_Spec):
    """The other side of a ratio: fields given here replace the numerator's."""

    metric: str | None = None
    variant: str | None = None
    group: str | None = None
    op: Literal["read", "write", "any"] | None = None
    host: str | None = None
    window: Annotated[list[Seconds], Field(min_length=2, max_length=2)] | None = None
    stat: Literal["mean", "max", "min", "last"] | None = None


Bound = float | str
"""A number in the metric's unit, or a quantity with a unit ("5ms", "120MB/s", "1GiB")."""


class Expectation(Selection):
    """A check: a metric of a selection, or a ratio of two, against a bound.

    ``metric`` is one of :data:`RECORD_METRICS`, ``totals.<key>`` (a whole-run
    total, e.g. ``totals.array_write_mb_s``) or ``series.<column>`` (a sampled
    time series reduced by ``stat``). With ``over`` the checked value is
    metric / the same metric of the ``over`` selection. The check passes when
    the bound holds for every seed it is run with.
    """

    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_.+-]+$")]
    metric: str
    over: Denominator | None = None
    at_least: Bound | None = None
    at_most: Bound | None = None
    approx: Bound | None = None
    rel: Annotated[float, Field(gt=0)] | None = None
    """Relative tolerance of ``approx``."""
    observation: str = ""
    """What the field saw, in words (shown in reports)."""
    field_figure: str = ""
    """The field's number, as reported ("about 70 ms")."""
    tolerance: str = ""
    """Why the bound is where it is."""

    @model_validator(mode="after")
    def _one_bound(self) -> Expectation:
        if self.at_least is None and self.at_most is None and self.approx is None:
            raise ValueError("give a bound: at_least, at_most, or approx with rel")
        if (self.approx is None) != (self.rel is None):
            raise ValueError("approx and rel go together: approx = 120, rel = 0.05 means within 5% of 120")
        if self.approx is not None and (self.at_least is not None or self.at_most is not None):
            raise ValueError("use either approx/rel or at_least/at_most, not both")
        return self

    def sides(self) -> list[tuple[Selection, str]]:
        """The numerator and, for a ratio, the denominator, each as (selection, metric).

        The denominator is the numerator's selection with the fields ``over`` gives replaced.
        """
        numerator = Selection(**self.model_dump(include=set(Selection.model_fields)))
        pair = [(numerator, self.metric)]
        if self.over is not None:
            update = self.over.model_dump(exclude={"metric"}, exclude_none=True)
            pair.append((numerator.model_copy(update=update), self.over.metric or self.metric))
        return pair


class CheckSpec(_Spec):
    """How ``simcache check`` runs the scenario's expectations."""

    seeds: Annotated[int, Field(ge=1, le=1000)] = 5
    """Seeds run.seed, run.seed + 1, ...: every check must hold for each of them."""
    observation: str = ""
    """The field observation the scenario reproduces (for reports), e.g. "2. Interconnect comparison"."""


class Scenario(_Spec):
    """A whole cluster, its workload and how to run it. Build with :func:`load_scenario`."""

    name: str = "scenario"
    description: str = ""
    run: RunSpec = RunSpec()
    cluster: ClusterSpec
    array: ArraySpec
    groups: Annotated[list[Group], Field(min_length=1)]
    events: list[Event] = []
    variants: dict[str, dict[str, Any]] = {}
    """Named sets of dotted-path overrides (``[variants.ib]`` ``"cluster.peer_link" = "ib-sdr-ipoib"``)."""
    expect: list[Expectation] = []
    check: CheckSpec = CheckSpec()

    @property
    def vm_count(self) -> int:
        return sum(g.vms_per_host * len(self.group_hosts(g)) for g in self.groups)

    @property
    def data_bytes(self) -> int:
        """The VMs' working sets added up: what the array holds for them."""
        return sum(g.workload.working_set * g.vms_per_host * len(self.group_hosts(g)) for g in self.groups)

    def group_hosts(self, group: Group) -> list[int]:
        return list(range(self.cluster.hosts)) if group.hosts is None else list(group.hosts)

    def variant(self, name: str) -> Scenario:
        """The scenario with variant ``name``'s overrides applied (``"base"``: as written).

        A variant is a plain scenario without variants or expectations of its own.
        """
        if name == BASE:
            return self
        if name not in self.variants:
            raise ScenarioError("<variants>", [(f"variants.{name}", f"no such variant; defined: {', '.join(self.variants) or 'none'}")])
        return self._without_checks().with_overrides(self.variants[name], source=f"variants.{name}")

    def _without_checks(self) -> Scenario:
        return self.model_copy(update={"variants": {}, "expect": [], "check": CheckSpec()})

    def with_overrides(self, overrides: Mapping[str, Any], source: str = "<overrides>") -> Scenario:
        """A new scenario with dotted-path fields replaced, e.g. ``{"cluster.peer_link": "10GbE"}``.

        List items are addressed by index or, for groups, by name
        (``"groups.db.policy"``). The result is validated like a file.
        """
        data = self.model_dump(mode="python")
        for path, value in overrides.items():
            if path.endswith(".profile"):
                # Switching profile takes all of the new profile's values, not just its name.
                path, value = path.removesuffix(".profile"), {"profile": value}
            _set_path(data, path, value, source)
        return _validate(data, source, checks=False)


def _set_path(data: dict[str, Any], path: str, value: Any, source: str) -> None:
    node: Any = data
    parts = path.split(".")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            index = _list_index(node, part, path, source)
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if part not in node or node[part] is None:
                    node[part] = {}
                if isinstance(node[part], str):  # a profile name: expand so a field can be overridden
                    node[part] = {"profile": node[part]}
                node = node[part]
        else:
            raise ScenarioError(source, [(path, f"{'.'.join(parts[:i])} is a value, not a table")])


def _list_index(items: list[Any], part: str, path: str, source: str) -> int:
    if part.isdigit() and int(part) < len(items):
        return int(part)
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == part:
            return index
    names = [str(item.get("name")) for item in items if isinstance(item, dict) and "name" in item]
    raise ScenarioError(source, [(path, f"no item {part!r}; use an index 0..{len(items) - 1} or one of {names}")])


def _loc(loc: tuple[Any, ...], data: Any) -> str:
    """Dotted field path; list indices of named items become their names."""
    parts: list[str] = []
    node = data
    for part in loc:
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            item = node[part]
            name = item.get("name") if isinstance(item, dict) else None
            parts.append(f"{part}" if name is None else f"{part}({name})")
            node = item
        else:
            parts.append(str(part))
            node = node.get(part) if isinstance(node, dict) else None
    # Pydantic adds pseudo-locations for constrained types and union tags; drop them.
    noise = {"function-before[parse(), float]", "function-before[parse(), int]", "constrained-float", "constrained-int", *EVENT_KINDS}
    return ".".join(p for p in parts if p not in noise and not p.startswith("function-"))


def _message(error: Any, data: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_fields(error["loc"][:-1], data)
        return f"unknown field {error['loc'][-1]!r}" + (f"; allowed here: {', '.join(allowed)}" if allowed else "")
    if kind == "missing":
        return "required field is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    if "input" in error and kind not in ("model_type", "dict_type"):
        message += f" (got {error['input']!r})"
    return message


def _allowed_fields(loc: tuple[Any, ...], data: Any) -> list[str]:
    model: Any = Scenario
    for part in loc:
        if isinstance(part, int):
            continue
        if part in EVENT_KINDS:  # the tag pydantic puts after an event's index
            model = EVENT_KINDS[part]
            continue
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        annotation = field.annotation
        for candidate in getattr(annotation, "__args__", (annotation,)):
            inner = getattr(candidate, "__args__", (candidate,))
            found = next((c for c in inner if isinstance(c, type) and issubclass(c, BaseModel)), None)
            if found is None and isinstance(candidate, type) and issubclass(candidate, BaseModel):
                found = candidate
            if found is not None:
                model = found
                break
        else:
            model = None  # a list of tagged unions: the tag that follows names the model
    return sorted(model.model_fields) if hasattr(model, "model_fields") else []


def _validate(data: Mapping[str, Any], source: str, *, checks: bool = True) -> Scenario:
    """Schema, then cross-field rules; with ``checks`` also the variants and [[expect]] tables.

    Overrides skip the checks part: a shorter run or a changed base must not be
    refused because of a check's window or a variant; :mod:`simcache.checks`
    validates those again before it runs anything.
    """
    raw = copy.deepcopy(dict(data))
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        problems = [(_loc(e["loc"], raw), _message(e, raw)) for e in exc.errors()]
        raise ScenarioError(source, problems) from None
    problems = _semantic_problems(scenario)
    if checks:
        problems += check_problems(scenario)
    if problems:
        raise ScenarioError(source, problems)
    return scenario


def _semantic_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """Checks that span several fields: replicas vs peers, host indices, event hosts."""
    hosts = scenario.cluster.hosts
    problems = _repeated_names("groups", "group", [g.name for g in scenario.groups])
    for i, group in enumerate(scenario.groups):
        where = f"groups.{i}({group.name})"
        if group.replicas > hosts - 1:
            problems.append(
                (
                    f"{where}.policy",
                    f"{group.policy} needs {group.replicas} peer host(s) but the cluster has {hosts} host(s) "
                    f"({hosts - 1} peer(s)); raise cluster.hosts to at least {group.replicas + 1} or use a policy "
                    f"with fewer replicas",
                )
            )
        largest = max(group.workload.size_mix[0])
        if largest > scenario.cluster.destager.capacity:
            problems.append(
                (
                    "cluster.destager.capacity",
                    f"the buffer ({scenario.cluster.destager.capacity} bytes) is smaller than group {group.name!r}'s "
                    f"largest write ({largest} bytes); make it at least that large",
                )
            )
        if group.hosts is not None and len(set(group.hosts)) != len(group.hosts):
            problems.append(
                (f"{where}.hosts", f"host indices repeat in {group.hosts}; list each host once and use vms_per_host for more VMs")
            )
        for host in group.hosts or []:
            if host >= hosts:
                problems.append((f"{where}.hosts", f"host index {host} does not exist; hosts are 0..{hosts - 1}"))
    for i, event in enumerate(scenario.events):
        fields = ("host",) if isinstance(event, HostFailure) else ("source_host", "target_host")
        for field in fields:
            if getattr(event, field) >= hosts:
                problems.append((f"events.{i}.{field}", f"host index {getattr(event, field)} does not exist; hosts are 0..{hosts - 1}"))
        if isinstance(event, VMotion) and event.source_host == event.target_host:
            problems.append((f"events.{i}.target_host", "a vMotion needs two different hosts"))
    if scenario.run.sample_interval > scenario.run.duration:
        problems.append(("run.sample_interval", "must not exceed run.duration"))
    total_working_set = scenario.data_bytes
    array_bytes = scenario.array.drive.capacity * scenario.array.spindles
    if total_working_set > array_bytes:
        problems.append(
            (
                "groups",
                f"the VMs' working sets add up to {total_working_set / 1e9:.1f} GB, more than the array's "
                f"{array_bytes / 1e9:.1f} GB raw; shrink workload.working_set or add spindles",
            )
        )
    if not math.isfinite(scenario.run.duration):
        problems.append(("run.duration", "must be finite"))
    return problems


def _repeated_names(table: str, what: str, names: list[str]) -> list[tuple[str, str]]:
    """A problem for each item whose name an earlier item already has."""
    seen: set[str] = set()
    problems = []
    for i, name in enumerate(names):
        if name in seen:
            problems.append((f"{table}.{i}({name}).name", f"{what} name {name!r} is used twice; names must be unique"))
        seen.add(name)
    return problems


def check_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """Variants must apply cleanly; expectations must name things that exist."""
    problems: list[tuple[str, str]] = []
    runs: dict[str, Scenario] = {BASE: scenario}
    if BASE in scenario.variants:
        problems.append((f"variants.{BASE}", f"{BASE!r} means the scenario as written; give the variant another name"))
    for name in scenario.variants:
        try:
            runs[name] = scenario.variant(name)
        except ScenarioError as exc:
            problems += [(f"variants.{name}.{path}" if path else f"variants.{name}", message) for path, message in exc.problems]
    problems += _repeated_names("expect", "check", [e.name for e in scenario.expect])
    for i, expectation in enumerate(scenario.expect):
        where = f"expect.{i}({expectation.name})"
        for prefix, (side, metric) in zip(("", "over."), expectation.sides(), strict=False):
            problems += _selection_problems(f"{where}.{prefix}", side, metric, runs)
        for bound in ("at_least", "at_most", "approx"):
            value = getattr(expectation, bound)
            if value is None:
                continue
            try:
                bound_value(expectation.metric, value, ratio=expectation.over is not None)
            except ValueError as exc:
                problems.append((f"{where}.{bound}", str(exc)))
    return problems


def _selection_problems(where: str, side: Selection, metric: str, runs: Mapping[str, Scenario]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    source, _, key = metric.partition(".")
    if not (metric in RECORD_METRICS or (source == "totals" and key in TOTALS) or (source == "series" and key)):
        problems.append(
            (
                f"{where}metric",
                f"unknown metric {metric!r}; use one of {', '.join(RECORD_METRICS)}, totals.<name> "
                f"(names: {', '.join(TOTALS)}) or series.<column>",
            )
        )
    if side.variant not in runs:
        problems.append(
            (f"{where}variant", f"no variant {side.variant!r}; use base (the scenario as written) or one of: {', '.join(runs)}")
        )
        return problems
    run = runs[side.variant]
    groups = [g.name for g in run.groups]
    if side.group != "all" and side.group not in groups:
        problems.append((f"{where}group", f"no group {side.group!r}; use all or one of {', '.join(groups)}"))
    hosts = [f"host{i}" for i in range(run.cluster.hosts)]
    if side.host is not None and side.host not in hosts:
        problems.append((f"{where}host", f"no host {side.host!r}; hosts are {', '.join(hosts)}"))
    if side.window is not None and side.window[1] > run.run.duration:
        problems.append(
            (f"{where}window", f"ends at {side.window[1]}s, after the run ({run.run.duration}s); shorten it or lengthen run.duration")
        )
    return problems


def load_scenario(source: Scenario | str | Path | Mapping[str, Any]) -> Scenario:
    """Read and validate a scenario from a TOML path, a built-in name, or a dict.

    Raises :class:`ScenarioError` (file, field path, what is allowed) for any
    bad input: unreadable or malformed TOML, unknown fields, impossible values.
    """
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        return _validate(source, "<dict>")
    path = _find(Path(source))
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise ScenarioError(str(source), [("", f"cannot read the file: {exc.strerror or exc}")]) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(str(path), [("", f"not UTF-8 text (byte {exc.start}); save the scenario as UTF-8 TOML")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(str(path), [("", f"malformed TOML: {exc}")]) from None
    return _validate(data, str(path))


def builtin_scenarios() -> dict[str, Path]:
    """Scenario files shipped in the repository's scenarios/ folder, by stem."""
    folder = Path(__file__).resolve().parent.parent / "scenarios"
    return {p.stem: p for p in sorted(folder.glob("*.toml"))} if folder.is_dir() else {}


def _find(path: Path) -> Path:
    if path.exists() or path.suffix:
        return path
    builtin = builtin_scenarios()
    if str(path) in builtin:
        return builtin[str(path)]
    raise ScenarioError(str(path), [("", f"no such file and no built-in scenario of that name; built-in: {', '.join(builtin) or 'none'}")])
