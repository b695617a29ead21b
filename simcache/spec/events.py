"""Scenario events: what happens to a running cluster at a given time (a vMotion, a host failure,
a link outage)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from simcache.spec.fields import (
    Count,
    HostIndex,
    Number,
    PositiveBytes,
    PositiveRate,
    PositiveSeconds,
    Seconds,
    Why,
    _Spec,
)

__all__ = [
    "EVENT_KINDS",
    "ArrayDegraded",
    "ArrayEvent",
    "ArrayRebuild",
    "DeviceFailure",
    "DeviceSlow",
    "Event",
    "HostFailure",
    "LinkDown",
    "LinkSlow",
    "Outage",
    "PeerLoss",
    "Slowdown",
    "VMotion",
    "array_event_seconds",
]


_SHARE_WHY = "a thousand times another flow's share already takes the whole port"


class VMotion(_Spec):
    """A live migration at ``at``: the VM ``vm``'s memory image crosses from ``source_host``'s peer
    ports to ``target_host``'s, and once the last byte has arrived the VM runs on the target
    (:meth:`simcache.sim.components.vm.VM.migrate`).

    Without ``vm`` it is background traffic only (the scenarios written before VMs moved): the same
    transfer, and no VM moves. ``vm`` stays optional so that those files, and the estimate's
    treatment of a vMotion as traffic, keep their meaning.
    """

    kind: Literal["vmotion"]
    at: Seconds
    source_host: HostIndex = 0
    target_host: HostIndex = 1
    size: PositiveBytes = 8 * 1024**3
    """Bytes to move (a VM's memory image)."""
    weight: Annotated[Number, Field(ge=1e-3, le=1e3), Why(_SHARE_WHY, _SHARE_WHY)] = 1.0
    """Share weight against other flows on the same port (1 = one flow's fair share)."""
    streams: Annotated[
        Count, Field(ge=1, le=64), Why(high="vMotion opens a few streams per NIC")
    ] = 4
    """Parallel streams the migration opens; each takes a fair share."""
    vm: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    """The VM that moves, by its name in the records' ``vm`` column (``<group>-h<host>-<k>``,
    e.g. ``db-h0-1``: the ``k``-th VM of group ``db`` placed on host 0); it must run on
    ``source_host``. Absent: background traffic only."""
    handover: bool = False
    """Hand the VM's writes that ``source_host`` has not destaged to ``target_host`` at the move:
    they cross the peer network (one flow) and join the target's destager. False: the source
    destages them (its replicas stay)."""


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
    """Seconds from the failure to the restart of the failed host's VMs on surviving hosts (HA);
    absent: no HA.

    It is failure detection plus the guest's boot. vSphere HA declares a host failed after 15 s
    without heartbeats, and then restarts its VMs on other hosts (VMware, vSphere Availability,
    "Failure Detection and Host Network Isolation"); the boot (tens of seconds to minutes) is the
    user's figure for their guests.
    """


class DeviceFailure(_Spec):
    """A host's cache tier (its flash or RAM device) fails at ``at``, for good; the host stays up.

    Its VMs go write-through from then on: writes go to the array and are acknowledged by it, reads
    go to the array, and nothing is cached or replicated. What the device held is gone: its buffered
    writes without a copy on a live peer are lost, those with one are destaged by a surviving holder
    (as for ``host_failure``), and the replicas it held for other hosts' writes are gone (those VMs
    replicate to another host). Its VMs' reads of blocks whose newest write a holder took over wait
    for that holder's destage (the array is stale until then). I/Os on the device when it fails
    fail. The device is not replaced within the run: a replacement is a maintenance action hours
    later, and an empty device coming back would first warm up.
    """

    kind: Literal["device_failure"]
    at: Seconds
    host: HostIndex


class PeerLoss(_Spec):
    """A host's peer ports go down at ``at`` for ``duration`` seconds; the host stays up.

    Its VMs cannot reach their peers and no other host can replicate to it: the write-back groups
    short of the peers their policy promises follow their ``on_peer_loss``. Transfers already on the
    wire finish.
    """

    kind: Literal["peer_loss"]
    at: Seconds
    host: HostIndex
    duration: PositiveSeconds
    """Seconds the peer ports stay down (past the run's end: down to the end)."""


class LinkDown(_Spec):
    """One of a host's links goes down at ``at`` for ``duration`` seconds; the host stays up.

    ``link = "peer"``: as :class:`PeerLoss`. ``link = "storage"``: the host's destage batches,
    write-through writes and read misses wait before the storage network until it returns (the
    destage backlog grows). Transfers already on the wire finish.
    """

    kind: Literal["link_down"]
    at: Seconds
    host: HostIndex
    link: Literal["peer", "storage"]
    duration: PositiveSeconds
    """Seconds the link stays down (past the run's end: down to the end)."""


class ArrayDegraded(_Spec):
    """A spindle of the array fails at ``at``; the array runs degraded for ``duration`` seconds,
    without a rebuild.

    Every array I/O pays the RAID level's reconstruction: reads of the missing spindle's chunks read
    the others, writes whose data or parity it held compute around it
    (:func:`simcache.physics.array.degraded_factors`). RAID 0 has nothing to rebuild from: it is
    refused.
    """

    kind: Literal["array_degraded"]
    at: Seconds
    duration: PositiveSeconds
    """Seconds the array stays degraded (past the run's end: degraded to the end)."""


class ArrayRebuild(_Spec):
    """As :class:`ArrayDegraded`, with a rebuild onto a spare at ``rebuild_rate`` for ``duration``
    seconds.

    Without ``duration`` the rebuild lasts as long as rewriting the failed drive whole takes:
    ``duration = drive capacity / rebuild_rate`` (the array profile's ``drive.capacity``; a RAID
    controller rebuilds every stripe, used or not). The rebuild's own reads take the surviving
    spindles' time (:func:`simcache.physics.array.rebuild_share`).
    """

    kind: Literal["array_rebuild"]
    at: Seconds
    duration: PositiveSeconds | None = None
    """Seconds the rebuild runs (past the run's end: to the end); absent: drive capacity /
    ``rebuild_rate``."""
    rebuild_rate: PositiveRate
    """Bytes per second written to the spare (controllers default to a background rate: tens of
    MB/s)."""


_FRACTION_WHY = "a component at no speed is down: use link_down or host_failure"
SpeedFraction = Annotated[
    Number,
    Field(gt=0.0, le=1.0),
    Why(low=_FRACTION_WHY, high="1 is full speed; a faster component is another profile"),
]


class LinkSlow(_Spec):
    """One of a host's links runs at ``fraction`` of its bandwidth from ``at`` for ``duration``
    seconds (a flapping NIC renegotiating a lower speed, a congested uplink): both directions of
    each of the host's ports on that network. Flows on the wire are re-rated at each change,
    keeping the bytes they have left."""

    kind: Literal["link_slow"]
    at: Seconds
    host: HostIndex
    link: Literal["peer", "storage"]
    duration: PositiveSeconds
    """Seconds the link stays slow (past the run's end: slow to the end)."""
    fraction: SpeedFraction
    """Share of its bandwidth the link keeps (0 < fraction <= 1)."""


class DeviceSlow(_Spec):
    """A host's tier runs at ``fraction`` of its speed from ``at`` for ``duration`` seconds (a
    throttled controller, a device in thermal throttling): each operation's latency and transfer
    time divided by ``fraction``."""

    kind: Literal["device_slow"]
    at: Seconds
    host: HostIndex
    duration: PositiveSeconds
    """Seconds the tier stays slow (past the run's end: slow to the end)."""
    fraction: SpeedFraction
    """Share of its speed the tier keeps (0 < fraction <= 1)."""


def array_event_seconds(event: ArrayDegraded | ArrayRebuild, drive_capacity: int) -> float:
    """How long ``event`` degrades the array: its ``duration``, or for a rebuild without one the
    time to rewrite a drive of ``drive_capacity`` bytes at its ``rebuild_rate`` (capacity /
    rate)."""
    if event.duration is not None:
        return float(event.duration)
    assert isinstance(event, ArrayRebuild)
    return drive_capacity / event.rebuild_rate


Outage = PeerLoss | LinkDown
"""An event that takes a host's link down for a while."""
Slowdown = LinkSlow | DeviceSlow
"""An event that runs a host's link or tier at a fraction of its speed for a while."""
ArrayEvent = ArrayDegraded | ArrayRebuild
"""An event that degrades the backing array for a while."""
Event = Annotated[
    VMotion
    | HostFailure
    | DeviceFailure
    | PeerLoss
    | LinkDown
    | ArrayDegraded
    | ArrayRebuild
    | LinkSlow
    | DeviceSlow,
    Field(discriminator="kind"),
]
EVENT_KINDS: dict[str, type[_Spec]] = {
    "vmotion": VMotion,
    "host_failure": HostFailure,
    "device_failure": DeviceFailure,
    "peer_loss": PeerLoss,
    "link_down": LinkDown,
    "array_degraded": ArrayDegraded,
    "array_rebuild": ArrayRebuild,
    "link_slow": LinkSlow,
    "device_slow": DeviceSlow,
}
