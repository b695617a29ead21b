"""The scenario model: a cluster, its groups and events, how to run it, and the runs derived from
it.

:class:`Scenario` is validated in two steps (:func:`validate_scenario`): the
schema (every spec's fields and their own rules), then the rules that span
several specs (replicas against peers, host indices, the destage buffer
against the largest write, working sets against the array). A scenario read
from a file has its variants and checks validated too.

A scenario makes its derived runs and keeps the ones worth keeping: each
variant is validated once, the first time it is asked for, and a run with
another duration or seed validates only its ``[run]`` table and the rules
that involve it. :meth:`Scenario.with_overrides` is the one derivation that
validates everything again, since it may change anything.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Any, Self

from pydantic import Field, ValidationError, model_validator

from simcache.base.errors import ScenarioError, echo, listing
from simcache.physics.array import rebuild_share
from simcache.spec.array import ArraySpec
from simcache.spec.checks import CheckSpec, Expectation, check_problems, repeated_names
from simcache.spec.components import ClusterSpec
from simcache.spec.events import (
    ArrayDegraded,
    ArrayRebuild,
    DeviceSlow,
    Event,
    HostFailure,
    LinkSlow,
    VMotion,
    array_event_seconds,
)
from simcache.spec.fields import (
    BASE,
    MAX_EVENTS,
    MAX_EXPECTATIONS,
    MAX_GROUPS,
    MAX_SEED,
    MAX_VARIANTS,
    MAX_VMS_PER_HOST,
    Count,
    PositiveSeconds,
    Seconds,
    Why,
    _Spec,
)
from simcache.spec.messages import TOO_DEEP, schema_problems, too_many
from simcache.spec.workload import Group
from simcache.traces.trace import DeviceSummary

__all__ = ["RunSpec", "Scenario", "validate_scenario"]

_PATH_PART = re.compile(r"[A-Za-z0-9_-]+")
DURATION_SOURCE = "the duration argument (simulate(duration=...), CLI --duration)"
SEED_SOURCE = "simulate(seed=...)"


MIN_SAMPLE_INTERVAL = 1e-3
"""Shortest sample interval, 1 ms: each sample is a row of every series, and below about one disk
I/O's service time a sample shows single I/Os rather than load; a 1 s run already gets 1,000
rows."""
_SAMPLE_WHY = "about one disk I/O's time; finer samples show single I/Os, not load"
MAX_SCENARIO_NAME_CHARS = 200
"""Longest scenario name: it heads reports and names result folders."""


class RunSpec(_Spec):
    """How the scenario is run: simulated time, warm-up and sample interval in seconds, and the
    random seed."""

    duration: Annotated[PositiveSeconds, Field(title="Simulated seconds")] = 30.0
    """Simulated time in seconds; a longer run narrows the tails (p99)."""
    warmup: Seconds = 0.0
    """Records issued before this time are kept but left out of the summary."""
    seed: Annotated[
        Count,
        Field(title="Seed", ge=0, le=MAX_SEED),
        Why(high="the largest whole number JSON holds exactly"),
    ] = 1
    """Random seed: the same scenario and seed always give the same result; another seed shows the
    run-to-run spread."""
    sample_interval: Annotated[Seconds, Field(ge=MIN_SAMPLE_INTERVAL), Why(low=_SAMPLE_WHY)] = 1.0
    """Seconds between samples of the time series (queues, backlogs, utilizations): from 1 ms to
    the run's duration."""

    @model_validator(mode="after")
    def _warmup_inside(self) -> RunSpec:
        if self.warmup >= self.duration:
            raise ValueError(
                f"warmup ({self.warmup}s) must be shorter than duration ({self.duration}s)"
            )
        return self


_WHY_LIMIT = {
    "groups": (
        "a group is a class of alike VMs; give a group more VMs with vms_per_host instead of "
        "repeating it"
    ),
    "events": "a run schedules a few failures or moves; split a long story into several runs",
    "variants": (
        "simcache check runs every variant; sweep one parameter with simcache sweep instead"
    ),
    "expect": "a scenario carries a few checks per group and variant",
}
"""Why each of the scenario's collections has a limit; :func:`validate_scenario` refuses a longer
one before it reads any entry."""
_LIMITS = {
    "groups": MAX_GROUPS,
    "events": MAX_EVENTS,
    "variants": MAX_VARIANTS,
    "expect": MAX_EXPECTATIONS,
}


class Scenario(_Spec):
    """A whole cluster, its workload and how to run it. Build with :func:`load_scenario`."""

    name: Annotated[str, Field(min_length=1, max_length=MAX_SCENARIO_NAME_CHARS)] = "scenario"
    description: str = ""
    run: RunSpec = RunSpec()
    cluster: ClusterSpec
    array: ArraySpec
    groups: Annotated[
        list[Group], Field(min_length=1, max_length=MAX_GROUPS), Why(high=_WHY_LIMIT["groups"])
    ]
    events: Annotated[list[Event], Field(max_length=MAX_EVENTS), Why(high=_WHY_LIMIT["events"])] = (
        Field(default_factory=list)
    )
    variants: Annotated[
        dict[str, dict[str, Any]], Field(max_length=MAX_VARIANTS), Why(high=_WHY_LIMIT["variants"])
    ] = Field(default_factory=dict)
    """Named sets of dotted-path overrides (``[variants.ib]`` ``"cluster.peer_link" =
    "ib-sdr-ipoib"``)."""
    expect: Annotated[
        list[Expectation], Field(max_length=MAX_EXPECTATIONS), Why(high=_WHY_LIMIT["expect"])
    ] = Field(default_factory=list)
    check: CheckSpec = CheckSpec()

    @property
    def vm_count(self) -> int:
        return sum(self.group_vm_count(g) for g in self.groups)

    @property
    def data_bytes(self) -> int:
        """The VMs' working sets added up: what the array holds for them (a replayed trace's: its
        span)."""
        return sum(self.group_data_bytes(g) for g in self.groups)

    def group_data_bytes(self, group: Group) -> int:
        """The bytes ``group``'s VMs touch: working set times VMs, or each replaying VM's trace
        device span."""
        vms = self.group_vm_count(group)
        spec = group.workload.trace
        if spec is None:
            return group.workload.working_set * vms
        trace = spec.open()
        summary = trace.summary()
        return sum(summary[device].span for device in spec.vm_devices(trace, vms))

    def trace_device_summaries(self, group: Group) -> list[DeviceSummary]:
        """The trace summary of the device each of a trace group's VMs replays, in the order the
        engine builds them."""
        spec = group.workload.trace
        assert spec is not None
        trace = spec.open()
        summary = trace.summary()
        return [summary[name] for name in spec.vm_devices(trace, self.group_vm_count(group))]

    def group_vm_count(self, group: Group) -> int:
        """VMs of ``group``: ``vms_per_host`` on each of its hosts."""
        return group.vms_per_host * len(self.group_hosts(group))

    def group_hosts(self, group: Group) -> list[int]:
        return list(range(self.cluster.hosts)) if group.hosts is None else list(group.hosts)

    def variant(self, name: str) -> Scenario:
        """The scenario with variant ``name``'s overrides applied (``"base"``: as written).

        A variant is a plain scenario without variants or expectations of its own.
        Each is validated once, the first time it is asked for, and kept.
        """
        if name == BASE:
            return self
        if name not in self.variants:
            raise ScenarioError(
                "<variants>",
                [
                    (
                        f"variants.{name}",
                        f"no such variant; defined: {listing(list(self.variants)) or 'none'}",
                    )
                ],
            )
        runs = self._variant_runs
        if name not in runs:
            runs[name] = self._without_checks().with_overrides(
                self.variants[name], source=f"variants.{name}"
            )
        return runs[name]

    @cached_property
    def _variant_runs(self) -> dict[str, Scenario]:
        """The variants validated so far, by name (filled by :meth:`variant`)."""
        return {}

    def validate_checks(self, source: str) -> None:
        """Raise :class:`ScenarioError`, naming ``source``, if a variant does not apply or a check
        names something missing.

        Worked out once per scenario: a file's checks are validated when it
        loads, and for it this returns at once.
        """
        if self._check_problems:
            raise ScenarioError(source, list(self._check_problems))

    @cached_property
    def _check_problems(self) -> list[tuple[str, str]]:
        return check_problems(self)

    def _without_checks(self) -> Scenario:
        return self.model_copy(update={"variants": {}, "expect": [], "check": CheckSpec()})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update`` it forgets the variants and check problems worked out for the
        original."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            copied.__dict__.pop("_variant_runs", None)
            copied.__dict__.pop("_check_problems", None)
        return copied

    def with_duration(self, duration: float, source: str = DURATION_SOURCE) -> Scenario:
        """This scenario run for ``duration`` seconds, its warm-up cut to a tenth of that if longer.

        Validates the new ``[run]`` table only. Raises :class:`ScenarioError`,
        naming ``source``, if the duration does not fit the scenario (e.g.
        shorter than its sample interval).
        """
        # Only a duration that can be run cuts the warm-up: a bad one is reported alone, not with a
        # warm-up the user never wrote.
        runnable = (
            isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration > 0
        )
        warmup = min(self.run.warmup, duration / 10) if runnable else self.run.warmup
        return self._with_run(source, duration=duration, warmup=warmup)

    def with_seed(self, seed: int, source: str = SEED_SOURCE) -> Scenario:
        """This scenario run with random seed ``seed`` (a whole number >= 0).

        Validates the new ``[run]`` table only. Raises :class:`ScenarioError`, naming ``source``,
        for a bad seed.
        """
        return self._with_run(source, seed=seed)

    def _with_run(self, source: str, **changes: Any) -> Scenario:
        """A copy with ``[run]`` fields changed; only the run and the rules that involve it are
        validated."""
        data = {**self.run.model_dump(), **changes}
        try:
            run = RunSpec.model_validate(data)
        except ValidationError as exc:
            raise ScenarioError(
                source, schema_problems(exc, {"run": data}, Scenario, within=("run",))
            ) from None
        scenario = self.model_copy(update={"run": run})
        problems = _run_problems(scenario)
        if problems:
            raise ScenarioError(source, problems)
        return scenario

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
        return validate_scenario(data, source, checks=False)


def _set_path(data: dict[str, Any], path: str, value: Any, source: str) -> None:
    node: Any = data
    parts = path.split(".")
    if not all(_PATH_PART.fullmatch(part) for part in parts):
        raise ScenarioError(
            source,
            [
                (
                    echo(path),
                    "not a dotted path of field names, indices and group names (letters, digits, _ "
                    "and -), "
                    "e.g. cluster.peer_link or groups.db.policy",
                )
            ],
        )
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
                # a profile name: expand so a field can be overridden
                if isinstance(node[part], str):
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
    listed = (
        "[" + ", ".join(echo(name) for name in names[:20]) + (", ...]" if len(names) > 20 else "]")
    )
    raise ScenarioError(
        source,
        [(path, f"no item {echo(part)}; use an index 0..{len(items) - 1} or one of {listed}")],
    )


def validate_scenario(data: Mapping[str, Any], source: str, *, checks: bool = True) -> Scenario:
    """Schema, then cross-field rules; with ``checks`` also the variants and [[expect]] tables.

    Overrides skip the checks part: a shorter run or a changed base must not be
    refused because of a check's window or a variant; :mod:`simcache.runs.checks`
    validates those (:meth:`Scenario.validate_checks`) before it runs anything.
    """
    _refuse_long_collections(data, source)
    try:
        raw = copy.deepcopy(dict(data))
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(source, schema_problems(exc, raw, Scenario)) from None
    except RecursionError:
        raise ScenarioError(source, [("", TOO_DEEP)]) from None
    problems = _semantic_problems(scenario)
    if checks:
        problems += scenario._check_problems
    if problems:
        raise ScenarioError(source, problems)
    return scenario


def _refuse_long_collections(data: Mapping[str, Any], source: str) -> None:
    """Refuse a groups, events, variants or expect collection past its limit at once, as the schema
    would.

    A file of thousands of groups, each with a deeply nested value, would
    otherwise be copied and validated entry by entry (seconds of work) only to
    be refused for its length.
    """
    problems = [
        (key, too_many(most, len(value), _WHY_LIMIT[key]))
        for key, most in _LIMITS.items()
        if isinstance(value := data.get(key), list | dict) and len(value) > most
    ]
    if problems:
        raise ScenarioError(source, problems)


def _semantic_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """Checks that span several fields: replicas vs peers, host indices, event hosts."""
    hosts = scenario.cluster.hosts
    problems = repeated_names("groups", "group", [g.name for g in scenario.groups])
    for i, group in enumerate(scenario.groups):
        where = f"groups.{i}({group.name})"
        if group.replicas > hosts - 1:
            problems.append(
                (
                    f"{where}.policy",
                    f"{group.policy} needs {group.replicas} peer host(s) but the cluster has "
                    f"{hosts} host(s) "
                    f"({hosts - 1} peer(s)); raise cluster.hosts to at least {group.replicas + 1} "
                    "or use a policy "
                    f"with fewer replicas",
                )
            )
        largest = max(group.workload.op_size_mix(True)[0])
        if group.workload.trace is not None:
            trace_problems = _trace_problems(scenario, group, where)
            problems += trace_problems
            largest = 0 if trace_problems else _largest_traced_write(scenario, group)
        if largest > scenario.cluster.destager.capacity:
            problems.append(
                (
                    "cluster.destager.capacity",
                    f"the buffer ({scenario.cluster.destager.capacity} bytes) is smaller than the "
                    "largest write of "
                    f"group {group.name!r} ({largest} bytes); make it at least that large",
                )
            )
        if group.hosts is not None and len(set(group.hosts)) != len(group.hosts):
            problems.append(
                (
                    f"{where}.hosts",
                    f"host indices repeat in {group.hosts}; list each host once and use "
                    "vms_per_host for more VMs",
                )
            )
        for host in group.hosts or []:
            if host >= hosts:
                problems.append(
                    (
                        f"{where}.hosts",
                        f"host index {host} does not exist; hosts are 0..{hosts - 1}",
                    )
                )
    problems += _crowded_hosts(scenario)
    problems += _slowdown_problems(scenario)
    problems += _vmotion_problems(scenario)
    for i, event in enumerate(scenario.events):
        fields = (
            ("source_host", "target_host")
            if isinstance(event, VMotion)
            else ()
            if isinstance(event, ArrayDegraded | ArrayRebuild)
            else ("host",)
        )
        for field in fields:
            if getattr(event, field) >= hosts:
                problems.append(
                    (
                        f"events.{i}.{field}",
                        f"host index {getattr(event, field)} does not exist; hosts are "
                        f"0..{hosts - 1}",
                    )
                )
        if isinstance(event, VMotion) and event.source_host == event.target_host:
            problems.append((f"events.{i}.target_host", "a vMotion needs two different hosts"))
        if not isinstance(event, VMotion | HostFailure) and event.at >= scenario.run.duration:
            problems.append(
                (
                    f"events.{i}.at",
                    f"{event.at:g}s is not inside the run (0 to {scenario.run.duration:g}s); move "
                    "it earlier or lengthen run.duration",
                )
            )
        if isinstance(event, HostFailure) and event.restart_delay is not None:
            restart = event.at + event.restart_delay
            if restart >= scenario.run.duration:
                problems.append(
                    (
                        f"events.{i}.restart_delay",
                        f"the restart at {restart:g}s ({event.at:g}s + {event.restart_delay:g}s) "
                        "is not inside the run "
                        f"(0 to {scenario.run.duration:g}s); shorten restart_delay or lengthen "
                        "run.duration",
                    )
                )
    problems += _run_problems(scenario)
    if any(path.endswith(".workload.trace") or ".workload.trace." in path for path, _ in problems):
        return problems  # a trace that cannot be read has no span to add up
    total_working_set = scenario.data_bytes
    array_bytes = scenario.array.drive.capacity * scenario.array.spindles
    if total_working_set > array_bytes:
        problems.append(
            (
                "groups",
                f"the VMs' working sets add up to {total_working_set / 1e9:.1f} GB, more than the "
                "array's "
                f"{array_bytes / 1e9:.1f} GB raw; shrink workload.working_set or add spindles",
            )
        )
    return problems


_VM_NAME = re.compile(r"(?P<group>.+)-h(?P<host>[0-9]+)-(?P<k>[0-9]+)")


def _vmotion_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """A vMotion's ``vm`` names a VM of the scenario that runs on its ``source_host`` then (after
    the vMotions of it that start earlier); ``handover`` needs a VM, and one whose replicas are
    not asynchronous."""
    problems: list[tuple[str, str]] = []
    groups = {group.name: group for group in scenario.groups}
    # VM name -> the host it runs on after the vMotions checked so far
    where_now: dict[str, int] = {}
    moves = sorted(
        (event.at, i, event)
        for i, event in enumerate(scenario.events)
        if isinstance(event, VMotion)
    )
    for _, i, event in moves:
        if event.vm is None:
            if event.handover:
                problems.append(
                    (
                        f"events.{i}.handover",
                        "a handover needs a VM that moves: set vm, or drop handover",
                    )
                )
            continue
        match = _VM_NAME.fullmatch(event.vm)
        group = groups.get(match["group"]) if match else None
        if match is None or group is None:
            known = ", ".join(f"{name}-h<host>-<k>" for name in groups)
            problems.append(
                (
                    f"events.{i}.vm",
                    f"{event.vm!r} names no VM; VMs are named as in the records' vm column: "
                    f"{known}",
                )
            )
            continue
        host, k = int(match["host"]), int(match["k"])
        if host not in scenario.group_hosts(group) or k >= group.vms_per_host:
            problems.append(
                (
                    f"events.{i}.vm",
                    f"group {group.name!r} has no VM {event.vm!r}: it places VMs "
                    f"{group.name}-h<host>-0 to "
                    f"-{group.vms_per_host - 1} on hosts {scenario.group_hosts(group)}",
                )
            )
            continue
        runs_on = where_now.get(event.vm, host)
        if event.source_host != runs_on:
            earlier = " after the vMotions of it before this one" if event.vm in where_now else ""
            problems.append(
                (
                    f"events.{i}.source_host",
                    f"{event.vm} runs on host{runs_on}{earlier}; set source_host = {runs_on}",
                )
            )
        where_now[event.vm] = event.target_host
        if event.handover and group.replication == "async" and group.replicas:
            problems.append(
                (
                    f"events.{i}.handover",
                    f"group {group.name!r} replicates asynchronously: the source tracks its "
                    "lagging replicas, so its "
                    "writes cannot be handed over; drop handover (the source destages them)",
                )
            )
    return problems


def _slowdown_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """An array degraded needs redundancy and a rebuild slower than the survivors' media; each
    array, link or tier is slowed by one event at a time (a second failed spindle, or two
    slowdowns of one port, are not modelled)."""
    problems: list[tuple[str, str]] = []
    array = scenario.array
    windows: dict[str, list[tuple[float, float, int]]] = {}
    for i, event in enumerate(scenario.events):
        if isinstance(event, LinkSlow):
            component, state = f"host{event.host}'s {event.link} link", "slowed"
        elif isinstance(event, DeviceSlow):
            component, state = f"host{event.host}'s tier", "slowed"
        elif isinstance(event, ArrayDegraded | ArrayRebuild):
            component, state = "the array", "degraded"
            problems += _array_event_problems(i, event, array)
        else:
            continue
        seconds = (
            array_event_seconds(event, array.drive.capacity)
            if isinstance(event, ArrayDegraded | ArrayRebuild)
            else event.duration
        )
        for start, end, j in windows.get(component, []):
            if event.at < end and start < event.at + seconds:
                problems.append(
                    (
                        f"events.{i}.at",
                        f"{component} is already {state} by events.{j} from {start:g}s to {end:g}s "
                        "(one event at a time "
                        "is modelled); move it after that window",
                    )
                )
                break
        windows.setdefault(component, []).append((event.at, event.at + seconds, i))
    return problems


def _array_event_problems(
    i: int, event: ArrayDegraded | ArrayRebuild, array: ArraySpec
) -> list[tuple[str, str]]:
    if array.raid == "raid0":
        return [
            (
                f"events.{i}.kind",
                f"{event.kind} needs a redundant array; array.raid is raid0, whose failed spindle "
                "loses the array",
            )
        ]
    if not isinstance(event, ArrayRebuild):
        return []
    if rebuild_share(array.raid, array.spindles, event.rebuild_rate, array.drive.media_rate) >= 1.0:
        return [
            (
                f"events.{i}.rebuild_rate",
                f"{event.rebuild_rate:.4g} B/s takes all of the surviving spindles' time (media "
                "rate "
                f"{array.drive.media_rate:.4g} B/s); make it lower",
            )
        ]
    whole = array.drive.capacity / event.rebuild_rate
    if event.duration is not None and event.duration > whole:
        return [
            (
                f"events.{i}.duration",
                f"{event.duration:g}s is longer than rewriting the whole "
                f"{array.drive.capacity / 1e9:g} GB drive at "
                f"{event.rebuild_rate / 1e6:g} MB/s takes ({whole:g}s); shorten it, or leave it "
                "out to rebuild the whole drive",
            )
        ]
    return []


def _crowded_hosts(scenario: Scenario) -> list[tuple[str, str]]:
    """A host running more VMs than a hypervisor allows (over all groups): the first such host,
    with its groups."""
    on_host = [0] * scenario.cluster.hosts
    for group in scenario.groups:
        for host in scenario.group_hosts(group):
            if host < len(on_host):
                on_host[host] += group.vms_per_host
    crowded = next((h for h, count in enumerate(on_host) if count > MAX_VMS_PER_HOST), None)
    if crowded is None:
        return []
    groups = [g for g in scenario.groups if crowded in scenario.group_hosts(g)]
    names = listing([repr(g.name) for g in groups], most=3)
    return [
        (
            "groups",
            f"host {crowded} runs {on_host[crowded]:,} VMs ({len(groups):,} groups: {names}), more "
            "than the "
            f"{MAX_VMS_PER_HOST:,} a hypervisor runs on one host (vSphere 8 and Hyper-V 2022 "
            "maximums); lower "
            f"vms_per_host, spread the groups over more hosts (groups.hosts) or add hosts",
        )
    ]


def _trace_problems(scenario: Scenario, group: Group, where: str) -> list[tuple[str, str]]:
    """The trace must be readable, name the devices the group replays, and have timestamps for an
    open replay."""
    spec = group.workload.trace
    assert spec is not None
    field = f"{where}.workload.trace"
    try:
        trace = spec.open()
    except ScenarioError as exc:
        return [
            (f"{field}.path", f"{exc.source}: {place + ': ' if place else ''}{message}")
            for place, message in exc.problems
        ]
    problems = []
    missing = [d for d in spec.devices or [] if d not in trace.devices]
    if missing:
        known = listing(list(trace.devices))
        problems.append(
            (
                f"{field}.devices",
                f"not in the trace: {listing(missing)}; the trace's devices are {known}",
            )
        )
    if spec.replay == "open" and not trace.meta.get("has_times", True):
        problems.append(
            (
                f"{field}.replay",
                "the trace has no timestamps (fio iolog v2: order only); replay it with replay = "
                '"closed"',
            )
        )
    if spec.start > 0 and spec.start >= trace.duration:
        problems.append(
            (
                f"{field}.start",
                f"{spec.start}s is at or after the trace's last I/O ({trace.duration:.6g}s)",
            )
        )
    return problems


def _largest_traced_write(scenario: Scenario, group: Group) -> int:
    return max(device.largest["write"] for device in scenario.trace_device_summaries(group))


def _run_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """The cross-field rules that involve ``[run]`` (all a changed duration or seed can break)."""
    if scenario.run.sample_interval > scenario.run.duration:
        return [("run.sample_interval", "must not exceed run.duration")]
    return []
