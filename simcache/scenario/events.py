"""Scenario events: what happens to a running cluster at a given time (a vMotion, a host failure)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from simcache.scenario.fields import Count, HostIndex, Number, PositiveBytes, Seconds, Why, _Spec

__all__ = ["EVENT_KINDS", "Event", "HostFailure", "VMotion"]


_SHARE_WHY = "a thousand times another flow's share already takes the whole port"


class VMotion(_Spec):
    """A live migration at ``at``: a background transfer between two hosts' peer ports."""

    kind: Literal["vmotion"]
    at: Seconds
    source_host: HostIndex = 0
    target_host: HostIndex = 1
    size: PositiveBytes = 8 * 1024**3
    """Bytes to move (a VM's memory image)."""
    weight: Annotated[Number, Field(ge=1e-3, le=1e3), Why(_SHARE_WHY, _SHARE_WHY)] = 1.0
    """Share weight against other flows on the same port (1 = one flow's fair share)."""
    streams: Annotated[Count, Field(ge=1, le=64), Why(high="vMotion opens a few streams per NIC")] = 4
    """Parallel streams the migration opens; each takes a fair share."""


class HostFailure(_Spec):
    """A host dies at ``at``: its VMs stop, its unreplicated destage backlog is lost,
    surviving replica holders destage the rest, and VMs that replicated to it pick another peer."""

    kind: Literal["host_failure"]
    at: Seconds
    host: HostIndex


Event = Annotated[VMotion | HostFailure, Field(discriminator="kind")]
EVENT_KINDS: dict[str, type[_Spec]] = {"vmotion": VMotion, "host_failure": HostFailure}
