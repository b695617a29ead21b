"""Invariants every run with failures keeps: bytes conserved through the destage buffer, copies
counted."""

from __future__ import annotations

import simcache
from simcache.sim.built import Model


def copies_invariants(model: Model) -> list[str]:
    """What the data-at-risk accounting promises, checked against the buffered writes themselves:
    no buffered or waiting write counts a dead host (or a failed tier) as a copy, a host's
    single-copy bytes are exactly its buffered writes with no live replica, its short bytes those
    with fewer replicas than their VM's policy promises, and a dead host (or failed tier) holds
    no replica bytes."""
    problems = []
    for host in model.hosts:
        destager = host.destager
        if not host.tier_up:
            if host.replica_bytes:
                problems.append(f"dead {host.name} still holds {host.replica_bytes} replica bytes")
            continue
        buffered = [item for batch in destager._flushing for item in batch] + list(
            destager._pending
        )
        waiting = [item for _, item in destager._waiting]
        dead = [item for item in buffered + waiting if any(not peer.tier_up for peer in item[3])]
        if dead:
            problems.append(f"{host.name}: {len(dead)} writes count a dead host as a copy")
        single = sum(item[2] for item in buffered if not item[3])
        if single != destager.single_copy_bytes:
            problems.append(
                f"{host.name}: single-copy bytes {destager.single_copy_bytes}, buffered writes say "
                f"{single}"
            )
        short = sum(
            item[2] for item in buffered if len(item[3]) < model.vms[item[0]].peer_loss.promised
        )
        if short != destager.short_bytes:
            problems.append(
                f"{host.name}: short bytes {destager.short_bytes}, buffered writes say {short}"
            )
    return problems


def assert_conserved(result: simcache.Result) -> None:
    """Written to the buffers = destaged + still buffered + lost, to the byte."""
    t = result.totals
    assert (
        t["destage_accepted_bytes"]
        == t["destaged_bytes"] + t["destage_backlog_bytes"] + t["data_lost_bytes"]
    )
