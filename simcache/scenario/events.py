"""Scenario events: what happens to a running cluster at a given time (a vMotion, a host failure)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from simcache.scenario.fields import PositiveBytes, Seconds, _Spec

__all__ = ["EVENT_KINDS", "Event", "HostFailure", "VMotion"]


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
