"""Scenario field types and the spec base: quantities parsed into SI units, and named profiles.

Every quantity a scenario holds is parsed here into bytes, seconds or bytes/s
(``"64KiB"``, ``"2ms"``, ``"10Gbit/s"``), and every spec is a frozen model
that refuses unknown fields. A spec that names a built-in profile
(:mod:`simcache.profiles`) gets the profile's fields, merged with the ones
written beside its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from simcache.profiles import get_profile
from simcache.units import UnitError, parse_bandwidth, parse_duration, parse_size

__all__ = [
    "BASE",
    "MAX_PEER_LINKS",
    "REPLICAS",
    "Bytes",
    "Fraction",
    "Policy",
    "PositiveBytes",
    "PositiveRate",
    "Rate",
    "Seconds",
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
    # Attribute docstrings become field descriptions: the what-if page shows them as its widgets' help.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)


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
