"""What a scenario asks for that the analytic estimate does not follow, in words
(:func:`not_modelled`).

The estimate is a steady-state queueing model (``docs/estimate.md``). Some
behaviours the simulator models it leaves out or approximates; when a scenario
uses one, the estimate's notes say which, and which way its figures lean, so
a number shown without a simulation never hides an event or a policy it
ignored. Each sentence names the field as the scenario file spells it.
"""

from __future__ import annotations

from simcache.base.units import format_duration
from simcache.spec import (
    ArrayDegraded,
    ArrayRebuild,
    DeviceFailure,
    DeviceSlow,
    Event,
    Group,
    HostFailure,
    LinkSlow,
    PeerLoss,
    Scenario,
    VMotion,
    array_event_seconds,
)

__all__ = ["not_modelled", "scheduling_note"]


def not_modelled(scenario: Scenario) -> list[str]:
    """One sentence per behaviour of ``scenario`` that the estimate leaves out (empty: it follows
    them all)."""
    notes = [note for event in scenario.events if (note := _event_note(event, scenario))]
    destager = scenario.cluster.destager
    policy = [
        setting
        for setting, used in (
            (f"trigger = {destager.trigger!r}", destager.trigger != "always"),
            (f"pacing = {destager.pacing!r}", destager.pacing != "none"),
            (f"delay = {format_duration(destager.delay)}", destager.delay > 0),
        )
        if used
    ]
    if policy:
        notes.append(
            f"cluster.destager {', '.join(policy)} is not modelled: the estimate destages at once "
            "and "
            "unpaced, so its destage backlog is a lower bound and its array load follows the "
            "writes without delay"
        )
    if scenario.cluster.peer_selection == "random":
        notes.append(
            "cluster.peer_selection = 'random' is estimated as 'ring': each host's replicas go to "
            "its next hosts"
        )
    cluster = scenario.cluster
    links = [
        name
        for name, link in (("peer_link", cluster.peer_link), ("storage_link", cluster.storage_link))
        if link.window
    ]
    if links:
        notes.append(
            f"cluster.{' and cluster.'.join(links)} window is not modelled: transfers run at their "
            "fair share of the "
            "link, uncapped, so a lone large transfer is estimated faster than the window allows"
        )
    array = scenario.array
    caches = [
        field
        for field, used in (
            ("array.read_cache", array.read_cache > 0),
            ("array.drive.cache", array.drive.cache > 0),
        )
        if used
    ]
    if caches:
        verb = "are" if len(caches) > 1 else "is"
        notes.append(
            f"{' and '.join(caches)} {verb} not modelled: the estimate sends every array read to "
            "the drives' media, "
            "so its array read latency and load lean high for skewed (zipf, hotspot) reads that "
            "the caches would answer"
        )
    for group in scenario.groups:
        notes += _group_notes(group)
    return notes


def _event_note(event: Event, scenario: Scenario) -> str | None:
    """The note for a scheduled event the estimate leaves out, or None (a vMotion without a VM:
    the estimate follows its traffic)."""
    if isinstance(event, VMotion):
        if event.vm is None:
            return None
        handover = ", nor the handover of its buffered writes," if event.handover else ""
        return (
            f"vmotion of {event.vm} at {format_duration(event.at)} is followed as traffic only: "
            "the estimate keeps the VM "
            f"on host{event.source_host}, so its reads after the move are estimated as local hits "
            "and misses (no remote "
            f"hits over the peer network{handover} no cold cache on host{event.target_host}) and "
            "its writes load "
            f"host{event.source_host}'s tier and destager"
        )
    if isinstance(event, ArrayDegraded | ArrayRebuild):
        rebuild = (
            f" with a rebuild at {event.rebuild_rate / 1e6:g} MB/s"
            if isinstance(event, ArrayRebuild)
            else ""
        )
        seconds = array_event_seconds(event, scenario.array.drive.capacity)
        return (
            f"{event.kind} at {format_duration(event.at)} for {format_duration(seconds)}{rebuild} "
            "is not modelled: "
            "the estimate keeps the array healthy, so its array latency and the destage backlog "
            "built while the array "
            "drains slower are lower bounds"
        )
    when = f"host{event.host} at {format_duration(event.at)}"
    if isinstance(event, LinkSlow | DeviceSlow):
        what = f"{event.link} link" if isinstance(event, LinkSlow) else "tier"
        return (
            f"{event.kind} of {when} for {format_duration(event.duration)} at {event.fraction:g} "
            "of its speed is not "
            f"modelled: the estimate runs the {what} at full speed, so its latencies and destage "
            "backlog are lower bounds"
        )
    if isinstance(event, HostFailure):
        return (
            f"host_failure of {when} is not modelled: the estimate keeps every host running, so "
            "the figures are those before the failure"
        )
    if isinstance(event, DeviceFailure):
        return (
            f"device_failure of {when} is not modelled: the estimate keeps the host's tier, so its "
            "VMs' figures are "
            "those before the failure (write-back latencies, read hits), not write-through to the "
            "array"
        )
    link = "peer" if isinstance(event, PeerLoss) else event.link
    kind = "peer_loss" if isinstance(event, PeerLoss) else f"link_down ({link})"
    outage = (
        f"{kind} of {when} for {format_duration(event.duration)} is not modelled: the estimate "
        "keeps the link up"
    )
    if link == "peer":
        return (
            f"{outage}, so write-back groups keep their replicas (no on_peer_loss fallback) and no "
            "resync follows"
        )
    return (
        f"{outage}, so neither the destage backlog built while it is down nor the writes and read "
        "misses it holds appear"
    )


def scheduling_note(scenario: Scenario) -> str | None:
    """The note for a tier that puts VM I/O ahead of destage reads, or None (``fcfs``, which the
    estimate follows).

    Asked only when the estimate finds a destage backlog at some point of the
    run: with none the scheduling modes give the same means.
    """
    scheduling = scenario.cluster.tier.scheduling
    if scheduling == "fcfs":
        return None
    return (
        f"cluster.tier.scheduling = {scheduling!r} is estimated as 'fcfs' while the destage "
        "backlog drains: the "
        "estimate's tier wait for VM I/O is an upper bound then"
    )


def _group_notes(group: Group) -> list[str]:
    where = f"group {group.name!r}"
    notes = []
    if group.replication == "async" and group.replicas > 0:
        notes.append(
            f"{where}: replication_buffer is not modelled: a closed loop writing faster than its "
            "peer link is "
            "estimated as paced by its local tier, where the buffer fills and the link paces it"
        )
    if group.metadata_write and group.metadata_batched:
        notes.append(
            f"{where}: metadata_batched is not modelled: every write pays its own metadata write, "
            "so under many "
            "outstanding writes the estimate is an upper bound"
        )
    if group.workload.sync_serialize:
        notes.append(
            f"{where}: workload.sync_serialize is not modelled: the closed loop keeps its full "
            "depth, so the estimate's "
            "queues are deeper and its throughput higher than one synchronous writer at a time "
            "gives"
        )
    return notes
