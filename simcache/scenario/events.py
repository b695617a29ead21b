"""Scenario events: what happens to a running cluster at a given time (a vMotion, a host failure, a link outage)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from simcache.scenario.fields import Count, HostIndex, Number, PositiveBytes, PositiveSeconds, Seconds, Why, _Spec

__all__ = ["EVENT_KINDS", "Event", "HostFailure", "LinkDown", "Outage", "PeerLoss", "VMotion"]


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
    surviving replica holders destage the rest, and VMs that replicated to it pick another peer.

    With ``restart_delay`` (vSphere HA), its VMs restart on the surviving hosts that much later
    (:mod:`simcache.ha`); without it they stay down to the end of the run.
    """

    kind: Literal["host_failure"]
    at: Seconds
    host: HostIndex
    restart_delay: Seconds | None = None
    """Seconds from the failure to the restart of the failed host's VMs on surviving hosts (HA); absent: no HA.

    It is failure detection plus the guest's boot. vSphere HA declares a host failed after 15 s without
    heartbeats, and then restarts its VMs on other hosts (VMware, vSphere Availability, "Failure Detection
    and Host Network Isolation"); the boot (tens of seconds to minutes) is the user's figure for their guests.
    """


class PeerLoss(_Spec):
    """A host's peer ports go down at ``at`` for ``duration`` seconds; the host stays up.

    Its VMs cannot reach their peers and no other host can replicate to it: the write-back groups short of
    the peers their policy promises follow their ``on_peer_loss``. Transfers already on the wire finish.
    """

    kind: Literal["peer_loss"]
    at: Seconds
    host: HostIndex
    duration: PositiveSeconds
    """Seconds the peer ports stay down (past the run's end: down to the end)."""


class LinkDown(_Spec):
    """One of a host's links goes down at ``at`` for ``duration`` seconds; the host stays up.

    ``link = "peer"``: as :class:`PeerLoss`. ``link = "storage"``: the host's destage batches, write-through
    writes and read misses wait before the storage network until it returns (the destage backlog grows).
    Transfers already on the wire finish.
    """

    kind: Literal["link_down"]
    at: Seconds
    host: HostIndex
    link: Literal["peer", "storage"]
    duration: PositiveSeconds
    """Seconds the link stays down (past the run's end: down to the end)."""


Outage = PeerLoss | LinkDown
"""An event that takes a host's link down for a while."""
Event = Annotated[VMotion | HostFailure | PeerLoss | LinkDown, Field(discriminator="kind")]
EVENT_KINDS: dict[str, type[_Spec]] = {"vmotion": VMotion, "host_failure": HostFailure, "peer_loss": PeerLoss, "link_down": LinkDown}
