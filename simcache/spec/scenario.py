"""The scenario model: a cluster, its groups and events, how to run it, and the runs derived from
it.

:class:`Scenario` is validated in two steps (:func:`validate_scenario`): the
schema (every spec's fields and their own rules), then the rules that span
several specs (replicas against peers, host indices, the destage buffer
against the largest write, working sets against the array; they are in
:mod:`simcache.spec.consistency`). A scenario read from a file has its
variants and checks validated too. A valid setting that may not do what was
meant (more peer ports than peers) gives a
:class:`~simcache.spec.consistency.ScenarioWarning`, once per document: a
derived run warns only of what its own changes brought.

A scenario makes its derived runs and keeps the ones worth keeping: each
variant is validated once, the first time it is asked for, and a run with
another duration or seed validates only its ``[run]`` table and the rules
that involve it. :meth:`Scenario.with_overrides` is the one derivation that
validates everything again, since it may change anything.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Collection, Mapping
from functools import cached_property
from typing import Annotated, Any, Self

from pydantic import Field, ValidationError, model_validator

from simcache.base.errors import ScenarioError, echo, listing
from simcache.spec.array import ArraySpec
from simcache.spec.checks import CheckSpec, Expectation, check_problems
from simcache.spec.components import ClusterSpec
from simcache.spec.consistency import (
    ScenarioWarning,
    run_problems,
    scenario_notes,
    scenario_problems,
)
from simcache.spec.events import Event, HostFailure, VMotion
from simcache.spec.fields import (
    BASE,
    MAX_EVENTS,
    MAX_EXPECTATIONS,
    MAX_GROUPS,
    MAX_SEED,
    MAX_VARIANTS,
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
    array: Annotated[ArraySpec, Field(title="Backing array")]
    """The array behind every host's cache: its drives, RAID level, controller caches and port. A
    built-in profile (``simcache profiles array``) gives all of them; choosing another replaces
    every one, and a file may override any field."""
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

    @property
    def moves_vms(self) -> bool:
        """Whether a VM can change hosts during the run: a vMotion of a VM, or a host failure
        whose VMs HA restarts elsewhere (``restart_delay``)."""
        return any(
            (isinstance(event, VMotion) and event.vm is not None)
            or (isinstance(event, HostFailure) and event.restart_delay is not None)
            for event in self.events
        )

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
        """This scenario run for ``duration`` seconds, its warm-up as :meth:`cut_warmup` gives it
        (:meth:`warmup_cut` says when it changes); its own duration leaves it as it is.

        Validates the new ``[run]`` table only. Raises :class:`ScenarioError`,
        naming ``source``, if the duration does not fit the scenario (e.g.
        shorter than its sample interval).
        """
        if duration == self.run.duration and not isinstance(duration, bool):
            return self  # the run as written: the same window as without the duration
        # Only a duration that can be run cuts the warm-up: a bad one is reported alone, not with a
        # warm-up the user never wrote.
        runnable = (
            isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration > 0
        )
        warmup = self.cut_warmup(duration) if runnable else self.run.warmup
        return self._with_run(source, duration=duration, warmup=warmup)

    def cut_warmup(self, duration: float) -> float:
        """The warm-up of a run of ``duration`` seconds: the file's when the run is as long or
        longer; a shorter run loses its time from the warm-up first, down to a tenth of the run
        (then the warm-up is that tenth). So the warm-up never grows as the run shortens nor
        shrinks as it lengthens, and a run a little shorter than the file's keeps nearly its
        window (a sweep of ``run.duration`` through the file's own measures even windows)."""
        warmup, file = self.run.warmup, self.run.duration
        if duration >= file:
            return warmup
        # 12 significant digits: 4 s less (20 - 17.8) s is 1.8 s, not 1.8000000000000007
        taken = float(f"{warmup - (file - duration):.12g}")
        return min(warmup, max(duration / 10, taken))

    def warmup_cut(self, duration: float) -> str | None:
        """What :meth:`with_duration` does to the warm-up for ``duration`` seconds, in words (for
        a note beside the run), or None when it keeps it."""
        shortened = self.with_duration(duration)
        cut = shortened.run.warmup
        if cut == self.run.warmup:
            return None
        how = (
            f"a tenth of the {duration:g} s asked for"
            if cut == duration / 10
            else f"less the {self.run.duration - duration:g} s by which the run is shorter"
        )
        return (
            f"the warm-up is cut from {self.run.warmup:g} s to {cut:g} s, {how} (the file runs "
            f"{self.run.duration:g} s): the measured window starts at {cut:g} s"
        )

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
        problems = run_problems(scenario)
        if problems:
            raise ScenarioError(source, problems)
        return scenario

    def with_overrides(self, overrides: Mapping[str, Any], source: str = "<overrides>") -> Scenario:
        """A new scenario with dotted-path fields replaced, e.g. ``{"cluster.peer_link": "10GbE"}``.

        List items are addressed by index or, for groups, by name
        (``"groups.db.policy"``). The result is validated like a file; it warns
        (:class:`~simcache.spec.consistency.ScenarioWarning`) only of what this
        scenario did not already have.
        """
        data = self.model_dump(mode="python")
        for path, value in overrides.items():
            if path.endswith(".profile"):
                # Switching profile takes all of the new profile's values, not just its name.
                path, value = path.removesuffix(".profile"), {"profile": value}
            _set_path(data, path, value, source)
        return validate_scenario(data, source, checks=False, noted=scenario_notes(self))


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


def validate_scenario(
    data: Mapping[str, Any],
    source: str,
    *,
    checks: bool = True,
    noted: Collection[tuple[str, str]] = (),
) -> Scenario:
    """Schema, then cross-field rules; with ``checks`` also the variants and [[expect]] tables.

    Overrides skip the checks part: a shorter run or a changed base must not be
    refused because of a check's window or a variant; :mod:`simcache.runs.checks`
    validates those (:meth:`Scenario.validate_checks`) before it runs anything.

    A valid scenario's notes (:func:`~simcache.spec.consistency.scenario_notes`)
    are each a :class:`~simcache.spec.consistency.ScenarioWarning` naming
    ``source``, but for those in ``noted`` (the ones the scenario it was derived
    from already warned of).
    """
    _refuse_long_collections(data, source)
    try:
        raw = copy.deepcopy(dict(data))
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(source, schema_problems(exc, raw, Scenario)) from None
    except RecursionError:
        raise ScenarioError(source, [("", TOO_DEEP)]) from None
    problems = scenario_problems(scenario)
    if checks:
        problems += scenario._check_problems
    if problems:
        raise ScenarioError(source, problems)
    for field, message in scenario_notes(scenario):
        if (field, message) not in noted:
            # (the frame of whoever loaded or derived the scenario: load_scenario's or
            # with_overrides's caller)
            warnings.warn(ScenarioWarning(source, field, message), stacklevel=3)
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
