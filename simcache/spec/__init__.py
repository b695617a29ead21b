"""Scenario: the validated, frozen description of a cluster and its workload.

A scenario is data, separate from any run of it. It is read from TOML (or a
dict), every quantity is parsed into SI units (bytes, seconds, bytes/s), named
profiles are resolved and merged with the file's overrides, and the result is
frozen. Every mistake raises :class:`~simcache.base.errors.ScenarioError` naming the
file, the field path and what is allowed; a valid setting that may not do what was
meant gives a :class:`~simcache.spec.consistency.ScenarioWarning` naming the same.

The schema in this package is the single place where defaults live, split by concern:

- :mod:`~simcache.spec.fields`: quantity field types, the spec base, profile resolution;
- :mod:`~simcache.spec.components`: each host's tier, links, destager and cache, and the cluster;
- :mod:`~simcache.spec.array`: the shared array and its drives;
- :mod:`~simcache.spec.workload`: groups of VMs and their workloads;
- :mod:`~simcache.spec.events`: vMotions, host failures and link outages;
- :mod:`~simcache.spec.checks`: the ``[[expect]]`` and ``[check]`` tables and their validation;
- :mod:`~simcache.spec.scenario`: :class:`Scenario`, its validation and the runs derived from it;
- :mod:`~simcache.spec.consistency`: the rules that span several specs, and the notes;
- :mod:`~simcache.spec.messages`: validation errors as field paths and messages;
- :mod:`~simcache.spec.load`: reading TOML files, built-in scenarios and dicts.
"""

from simcache.spec.array import ArraySpec, DriveSpec
from simcache.spec.checks import (
    Bound,
    CheckSpec,
    Denominator,
    Expectation,
    Selection,
    check_problems,
)
from simcache.spec.components import (
    CacheSpec,
    ClusterSpec,
    CompressionSpec,
    DestagerSpec,
    LinkSpec,
    TierSpec,
)
from simcache.spec.consistency import ScenarioWarning
from simcache.spec.events import (
    EVENT_KINDS,
    ArrayDegraded,
    ArrayEvent,
    ArrayRebuild,
    DeviceFailure,
    DeviceSlow,
    Event,
    HostFailure,
    LinkDown,
    LinkSlow,
    Outage,
    PeerLoss,
    Slowdown,
    VMotion,
    array_event_seconds,
)
from simcache.spec.fields import (
    BASE,
    MAX_PEER_LINKS,
    REPLICAS,
    Bytes,
    Fraction,
    Policy,
    PositiveBytes,
    PositiveRate,
    Rate,
    Seconds,
)
from simcache.spec.load import builtin_scenarios, load_scenario
from simcache.spec.scenario import RunSpec, Scenario
from simcache.spec.workload import TRACE_FORMATS, DutyCycle, Group, TraceSpec, Workload

__all__ = [
    "BASE",
    "EVENT_KINDS",
    "MAX_PEER_LINKS",
    "REPLICAS",
    "TRACE_FORMATS",
    "ArrayDegraded",
    "ArrayEvent",
    "ArrayRebuild",
    "ArraySpec",
    "Bound",
    "Bytes",
    "CacheSpec",
    "CheckSpec",
    "ClusterSpec",
    "CompressionSpec",
    "Denominator",
    "DestagerSpec",
    "DeviceFailure",
    "DeviceSlow",
    "DriveSpec",
    "DutyCycle",
    "Event",
    "Expectation",
    "Fraction",
    "Group",
    "HostFailure",
    "LinkDown",
    "LinkSlow",
    "LinkSpec",
    "Outage",
    "PeerLoss",
    "Policy",
    "PositiveBytes",
    "PositiveRate",
    "Rate",
    "RunSpec",
    "Scenario",
    "ScenarioWarning",
    "Seconds",
    "Selection",
    "Slowdown",
    "TierSpec",
    "TraceSpec",
    "VMotion",
    "Workload",
    "array_event_seconds",
    "builtin_scenarios",
    "check_problems",
    "load_scenario",
]
