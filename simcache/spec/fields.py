"""Scenario field types and the spec base: quantities parsed into SI units, and named profiles.

Every quantity a scenario holds is parsed here into bytes, seconds or bytes/s
(``"64KiB"``, ``"2ms"``, ``"10Gbit/s"``), and every spec is a frozen model
that refuses unknown fields. A spec that names a built-in profile
(:mod:`simcache.spec.profiles`) gets the profile's fields, merged with the ones
written beside its name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

from simcache.base.errors import ECHO_CHARS, echo
from simcache.base.names import (
    MAX_NAME_CHARS,
    NAME_PATTERN,
    RESERVED_GROUP_NAMES,
    group_name_problem,
)
from simcache.base.spelling import did_you_mean
from simcache.base.units import (
    UnitError,
    format_bandwidth,
    format_duration,
    format_size,
    parse_bandwidth,
    parse_duration,
    parse_size,
)
from simcache.spec.profiles import get_profile, list_profiles

__all__ = [
    "BASE",
    "MAX_BYTES",
    "MAX_HOSTS",
    "MAX_IOPS",
    "MAX_NAME_CHARS",
    "MAX_PEER_LINKS",
    "MAX_RATE",
    "MAX_SECONDS",
    "MAX_SEED",
    "MAX_WEIGHT",
    "MIN_RATE",
    "NAME_PATTERN",
    "REPLICAS",
    "RESERVED_GROUP_NAMES",
    "SECTOR",
    "Bytes",
    "Count",
    "Fraction",
    "HostIndex",
    "LinkLatency",
    "LinkRate",
    "Measure",
    "Name",
    "Number",
    "Policy",
    "PositiveBytes",
    "PositiveRate",
    "PositiveSeconds",
    "Rate",
    "Seconds",
    "SectorBytes",
    "Weight",
    "Why",
    "group_name_problem",
]

# -- physical ranges: every quantity of a scenario lies between these, and each says why
# ---------------------------

MAX_BYTES = 2**53
"""Largest size of any field, 8 PiB: the largest whole number a float holds exactly, so byte
counts stay exact when the model turns them into times and rates (and far beyond any array: a
scenario's sizes are per VM or per host)."""
SECTOR = 512
"""Smallest block a disk addresses (bytes): a cache line or RAID stripe unit below it cannot
exist, and each byte less multiplies the blocks one I/O touches (a 1 MiB I/O over 1-byte lines is
a million cache entries)."""
MAX_SECONDS = 1e6
"""Longest time of any field, 10^6 s (11.6 days): the simulated clock is a float in seconds, and
beyond this it can no longer tell 0.1 ns apart, the scale of a RAM tier's latency."""
MIN_RATE = 1.0
"""Slowest rate of any bandwidth field, 1 byte/s: below it one 4 KiB I/O takes over an hour, and
the transfer time of a large I/O would overflow the clock."""
MIN_LINK_RATE = 125_000.0
"""Slowest network link, 1 Mbit/s (bytes/s): slower than any storage or peer network."""
MAX_LINK_LATENCY = 1.0
"""Longest one-way latency of a network link, 1 s: a geostationary satellite hop is 0.25 s."""
MAX_RATE = 1e13
"""Fastest rate of any bandwidth field, 10 TB/s: a hundred times a 400GbE port and ten times a
server's memory bandwidth; more is a typo (a missing unit or an extra exponent)."""
MAX_IOPS = 1e8
"""Most I/Os per second one VM may issue: a hundred times the fastest NVMe device; more is a
typo."""
MAX_WEIGHT = 1e12
"""Largest relative weight (a size mix's, a rate profile's level, a vMotion's share): weights are
divided by their sum, and 10^12 to 1 is already beyond what a run can draw; larger ones could add
up past a float's range."""
MAX_HOSTS = 256
"""Most hosts a cluster may have (``cluster.hosts``); host indices are 0 to 255."""
MAX_GROUPS = 256
"""Most VM groups a scenario may have. A group is a class of alike VMs (its ``vms_per_host`` says
how many); the tables print two rows per group, and the estimate's cost grows with groups x
hosts."""
MAX_EVENTS = 10_000
"""Most events (failures, vMotions) a scenario may schedule: one a second over a run of nearly
three hours."""
MAX_VARIANTS = 256
"""Most variants a scenario may define: ``simcache check`` runs each of them."""
MAX_EXPECTATIONS = 1024
"""Most ``[[expect]]`` checks a scenario may carry: four per group and variant at the group and
variant limits."""
MAX_VMS_PER_HOST = 1024
"""Most VMs one host may run, over all groups: vSphere 8's configuration maximum (1,024 virtual
machines per host, VMware/Broadcom "Configuration Maximums", vSphere 8.0), also Hyper-V's on
Windows Server 2022 (1,024 running VMs per host, Microsoft Learn "Plan for Hyper-V scalability in
Windows Server")."""
MAX_PEER_LINKS = 16
"""Most peer-network ports a host may have (``cluster.peer_links``)."""
MAX_SEED = 2**53 - 1
"""Largest seed: the largest whole number JSON (results' meta.json, the page's inputs) holds
exactly."""


def _show_number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Measure:
    """What a number field holds, for messages: what one is called, how to write one, how a bound
    is shown."""

    what: str
    """``a size``, ``a time``, ``a whole number``..."""
    examples: str
    """How to write one, e.g. ``4096, "4KiB", "1.5GB"``."""
    show: Callable[[float], str] = _show_number
    """A bound as the message shows it."""


@dataclass(frozen=True)
class Why:
    """Why a field's bounds are where they are, in a few words: messages show the reason of the
    bound a value breaks."""

    low: str = ""
    high: str = ""
    bare: str = ""
    """Said after either reason only when the value was written as a bare number (review 67a
    F13: "-10Gb/s" was told to give the unit it had)."""


def _show_bytes(value: float) -> str:
    return "0" if value == 0 else f"{int(value):,} bytes" if value < 1024 else format_size(value)


def _show_seconds(value: float) -> str:
    return "0" if value == 0 else format_duration(value)


def _show_rate(value: float) -> str:
    return "0" if value == 0 else format_bandwidth(value)


SIZE = Measure("a size", '4096, "4KiB", "256k", "1.5GB"', _show_bytes)
TIME = Measure("a time", '0.002, "2ms", "65us", "60s"', _show_seconds)
RATE = Measure("a rate", '125e6, "125MB/s", "1Gbit/s", "10GbE"', _show_rate)
WHOLE = Measure("a whole number", "4")
NUMBER = Measure("a number", "0.5 or 100")


def _not_bool(measure: Measure) -> BeforeValidator:
    """Refuse ``true``/``false`` where a number belongs (Python would take them as 1 and 0)."""

    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(
                f"must be {measure.what}, not true or false; write it like {measure.examples}"
            )
        return value

    return BeforeValidator(check)


def _unit(parser: Any, measure: Measure) -> BeforeValidator:
    def parse(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(
                f"must be {measure.what}, not true or false; write it like {measure.examples}"
            )
        if isinstance(value, (str, int, float)):
            try:
                return parser(value)
            except UnitError as exc:
                raise ValueError(str(exc)) from None
        return value

    return BeforeValidator(parse)


# Each kind of number is declared once: its parser, its refusal of booleans, NaN and infinity, and
# its physical range.
Bytes = Annotated[
    int,
    _unit(parse_size, SIZE),
    Field(ge=0, le=MAX_BYTES),
    SIZE,
    Why(high="the largest byte count a float holds exactly"),
]
PositiveBytes = Annotated[Bytes, Field(gt=0)]
SectorBytes = Annotated[
    Bytes, Field(ge=SECTOR), Why(low="one disk sector, the smallest block a disk addresses")
]
Seconds = Annotated[
    float,
    _unit(parse_duration, TIME),
    Field(ge=0, le=MAX_SECONDS),
    TIME,
    Why(high="about 11.6 days; beyond it the simulated clock cannot resolve a nanosecond"),
]
PositiveSeconds = Annotated[Seconds, Field(gt=0)]
Rate = Annotated[
    float,
    _unit(parse_bandwidth, RATE),
    Field(ge=0, le=MAX_RATE),
    RATE,
    Why(high="beyond any bus or port; a unit is missing or wrong"),
]
PositiveRate = Annotated[Rate, Field(ge=MIN_RATE), Why(low="slower than this, one I/O takes hours")]
LinkRate = Annotated[
    Rate,
    Field(ge=MIN_LINK_RATE),
    Why(
        low="1 Mbit/s, slower than any storage or peer network",
        bare='a bare number is bytes per second: give the unit, e.g. "10Gbit/s"',
    ),
]
"""A network link's line rate: at least :data:`MIN_LINK_RATE` (review 65: ``bandwidth = 25``,
meant as 25 Gbit/s, ran as a 25 B/s link)."""
LinkLatency = Annotated[
    Seconds,
    Field(le=MAX_LINK_LATENCY),
    Why(
        high="one second one way, beyond any network a cluster runs on",
        bare='a bare number is seconds: give the unit, e.g. "10us"',
    ),
]
"""A network link's one-way latency: at most :data:`MAX_LINK_LATENCY` (review 65: ``latency =
10``, meant as 10 us, ran as 10 s and completed no I/O)."""
Count = Annotated[int, _not_bool(WHOLE), WHOLE]
"""A whole number; each field gives its own range (``Annotated[Count, Field(ge=1, le=256)]``)."""
Number = Annotated[float, _not_bool(NUMBER), NUMBER]
"""A finite number (the specs refuse NaN and infinity); each field gives its own range."""
Fraction = Annotated[
    Number,
    Field(ge=0.0, le=1.0),
    Why(high="a fraction of the whole: write 0.6 for 60%"),
]
Weight = Annotated[
    Number,
    Field(gt=0, le=MAX_WEIGHT),
    Why(high="weights are relative: 10^12 to 1 is already beyond any mix"),
]
HostIndex = Annotated[
    Count, Field(ge=0, le=MAX_HOSTS - 1), Why(high=f"a cluster has at most {MAX_HOSTS} hosts")
]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN)]
"""A group's or variant's name: letters, digits, ``_`` and ``-``, at most 64 characters."""

Policy = Literal["WT", "WB+0", "WB+1", "WB+2"]
REPLICAS: dict[str, int] = {"WT": 0, "WB+0": 0, "WB+1": 1, "WB+2": 2}
BASE = "base"
"""The variant name of a scenario as written (checks select it by default)."""


def field_metadata(field: FieldInfo) -> list[Any]:
    """A field's metadata (constraints, :class:`Measure`, :class:`Why`) and, for an optional
    field (``Bytes | None``), that of its value's type."""
    found = list(field.metadata)
    for arm in get_args(field.annotation):
        if get_origin(arm) is Annotated:
            for extra in arm.__metadata__:
                found += getattr(extra, "metadata", [extra])
    return found


class _Spec(BaseModel):
    # Attribute docstrings become field descriptions: the what-if page shows them as its widgets'
    # help.
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True
    )


def _rate_not_profile(kind: str, name: Any, known: Mapping[str, Any]) -> str:
    """For a link named by a line rate (``"25Gbps"``), how to write a link of that rate: the
    profile nearest it, its ``bandwidth`` set (review 65: "unknown link profile '25Gbps'" said
    nothing of how to get one); else nothing."""
    if kind != "link" or not isinstance(name, str):
        return ""
    try:
        rate = parse_bandwidth(name)
    except (UnitError, ValueError):
        return ""
    if not rate > 0:
        return ""

    def distance(profile: str) -> float:
        line = known[profile]["bandwidth"]
        return abs(math.log((parse_bandwidth(line) if isinstance(line, str) else line) / rate))

    nearest = min(known, key=distance)
    return (
        f"{echo(name)} is a line rate, not a profile: a link of that rate is "
        f'{{ profile = "{nearest}", bandwidth = "{name}" }} (the nearest profile\'s latency and '
        "framing); "
    )


def _resolve_profile(kind: str, value: Any) -> Any:
    """``"name"`` or ``{profile = "name", field = override, ...}`` -> the profile's fields with
    the overrides."""
    if isinstance(value, str):
        value = {"profile": value}
    if isinstance(value, Mapping) and value.get("profile"):
        name = value["profile"]
        known = list_profiles(kind)
        if not isinstance(name, str) or name not in known:
            # no typo of a name: point to the list, keep it short
            if isinstance(name, str) and len(name) > ECHO_CHARS:
                raise ValueError(
                    f"unknown {kind} profile {echo(name)}; `simcache profiles {kind}` lists the "
                    "built-in ones"
                )
            hint = did_you_mean(name, known) or _rate_not_profile(kind, name, known)
            raise ValueError(
                f"unknown {kind} profile {echo(name)}; {hint}built-in {kind} profiles: "
                f"{', '.join(known)}"
            )
        merged = get_profile(kind, name)
        merged.update(value)
        return merged
    return value


class _Profiled(_Spec):
    """A spec that may name a built-in profile of ``_profile_kind`` and override its fields."""

    _profile_kind: ClassVar[str]

    profile: str | None = None
    """The built-in profile this spec started from (``simcache profiles`` lists them), if any."""
    description: str = ""
    """What the component is, in a few words (shown by ``simcache profiles`` and in the app)."""
    source: str = ""
    """Where the figures come from (a datasheet, a paper, or "assumption")."""

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, value: Any) -> Any:
        return _resolve_profile(cls._profile_kind, value)
