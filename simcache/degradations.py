"""Components that run slower for a while (issue 17): a degraded or rebuilding array.

``array_degraded``: from ``at`` for ``duration`` seconds every spindle operation's service time is scaled by
its RAID level's factor (:func:`simcache.physics.degraded_factors`); ``array_rebuild`` divides those by
``1 - share``, the share of the survivors' time the rebuild's reads take
(:func:`simcache.physics.rebuild_share`). Operations already queued keep the times they were given at
submission (the array computes completion times then). The destage backlog grows while the writes arrive
faster than the slowed array drains them; each event's record holds the cluster's backlog at its start and end.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from simcache.physics import degraded_factors, rebuild_share
from simcache.scenario import ArrayEvent, ArrayRebuild

if TYPE_CHECKING:
    from simcache.engine import Model

__all__ = ["array_event"]


def _backlog(model: Model) -> int:
    return sum(host.destager.backlog_bytes for host in model.hosts)


def array_event(model: Model, event: ArrayEvent) -> Generator[simpy.Event, Any, None]:
    """Degrade the array at ``event.at`` for ``event.duration`` seconds; record it in ``model.degradations``."""
    env = model.env
    yield env.timeout(event.at)
    spec = model.array.spec
    read, rmw = degraded_factors(spec.raid, spec.spindles)
    share = rebuild_share(spec.raid, spec.spindles, event.rebuild_rate, spec.drive.media_rate) if isinstance(event, ArrayRebuild) else 0.0
    slow = 1.0 / (1.0 - share)
    record: dict[str, Any] = {
        "kind": event.kind,
        "component": "array",
        "start_s": env.now,
        "end_s": math.nan,
        "read_factor": read * slow,
        "write_factor": rmw * slow,
        "rebuild_share": share,
        "backlog_at_start_bytes": _backlog(model),
        "backlog_at_end_bytes": math.nan,
    }
    model.degradations.append(record)
    model.array.degrade(read * slow, rmw * slow, slow)
    yield env.timeout(event.duration)
    model.array.degrade(1.0, 1.0, 1.0)
    record["end_s"] = env.now
    record["backlog_at_end_bytes"] = _backlog(model)
