"""Destage reads starved by the tier's own scheduling (``severity == "short"``): the
``destage_starved`` note of :mod:`simcache.results.validity`.

A host's destage backlog can grow while nothing between its flushers and the disks is busy: under
``cluster.tier.scheduling = "priority"`` a destage read starts only when the tier has no VM I/O
booked, and under ``"weighted"`` it gets only its share of the transfer path, which the tier's
reads and writes share (docs/model.md, "Foreground and background I/O"). Heavy foreground writes
then hold the flushers back, and the utilizations show no part near its limit: the tier's figure
counts its busy units, not its shared pipe, so a planner reading the bottleneck line would look
at the wrong part (review 65: 9.6 GB/s written into a PCIe 5.0 tier destaged 0.24 GB/s, the
bottleneck line naming a storage port 2 % busy). :func:`destage_starved` says so, for the hosts
whose backlog grows or is full while every part of their destage path is below
:data:`PATH_ROOM` busy and their destager has to run (under a ``watermarks`` or ``idle``
trigger, once the backlog reached the high mark: below it the destager waits by design).
"""

from __future__ import annotations

from simcache.base.units import format_figure
from simcache.results.assessed import (
    PINNED,
    AssessedRun,
    ValidityWarning,
    hosts_words,
    window_series,
)

__all__ = ["PATH_ROOM", "destage_starved"]

PATH_ROOM = 0.5
"""Busiest a destage path's part may be (mean over the window) for the path to count as having
room: at half busy a queue there waits about one service time, far from holding a backlog back."""


def destage_starved(result: AssessedRun, hosts: list[str]) -> list[ValidityWarning]:
    """One note for the ``hosts`` (their destage backlog grows or is full) whose destage path has
    room while their tier schedules destage reads behind the VMs' I/O; none under ``fcfs``, where
    destage reads queue with the VMs' and the tier's utilization shows them."""
    cluster = result.meta["scenario"]["cluster"]
    scheduling = cluster["tier"].get("scheduling", "priority")
    destager = cluster["destager"]
    series = window_series(result)
    if scheduling == "fcfs" or not hosts or not len(series):
        return []
    means = series.mean()
    starved, busiest = [], 0.0
    for host in hosts:
        if destager.get("trigger") in ("watermarks", "idle") and float(
            series[f"backlog.{host}"].max()
        ) < float(destager["high_watermark"]) * float(destager["capacity"]):
            continue  # below the high mark the destager runs only when asked (or idle)

        path = [f"util.{host}.storage.tx", "util.array", "util.array.rx"]
        busy = max(float(means.get(column, 0.0)) for column in path)
        # a tier pinned by its units shows itself (overload names it): not hidden, not this note
        shown = float(means.get(f"util.{host}.tier", 0.0)) >= PINNED
        if busy < PATH_ROOM and not shown:
            starved.append(host)
            busiest = max(busiest, busy)
    if not starved:
        return []
    one = len(starved) == 1
    rule = (
        "a destage read starts only when the tier has no VM I/O booked"
        if scheduling == "priority"
        else "destage reads get only their share of the tier's transfer time"
    )
    fix = (
        'cluster.tier.scheduling = "weighted" (with background_share) reserves them a share'
        if scheduling == "priority"
        else "a larger cluster.tier.background_share gives them more"
    )
    return [
        ValidityWarning(
            "destage_starved",
            ",".join(f"{host}.tier" for host in starved),
            "short",
            f"{hosts_words(starved)}'s destage backlog{'' if one else 's'} "
            f"{'grows' if one else 'grow'} though the destage path has room (its busiest part "
            f"{format_figure(100 * busiest, 2)}% busy): the flushers wait for the tier, where "
            f'under scheduling = "{scheduling}" {rule}, and the VMs\' I/O keeps it booked (the '
            "tier's utilization counts its units, not the transfer path its reads and writes "
            "share, so it looks idle). The tier, not the array or the network, limits the drain "
            f"here; {fix}, or fewer writes reach this tier",
        )
    ]
