"""The events table of ``simcache run``: host and device failures, HA restarts, link outages, slowed components, resyncs and
the VMs short of peers."""

from __future__ import annotations

import math
from typing import Any

from simcache.results import Result

__all__ = ["event_lines"]

MiB = 2**20


def event_lines(result: Result) -> list[str]:
    """One line per host or device failure, HA restart, outage, slowed component and resync flow, and one for the VMs short of
    peers ([] without any)."""
    meta = result.meta
    lines = [_failure(f) for f in meta.get("failures", [])]
    lines += _restarts(meta.get("restarts", []))
    lines += [_outage(o) for o in meta.get("outages", [])]
    lines += [_degradation(d) for d in meta.get("degradations", [])]
    lines += [_resync(r) for r in meta.get("resyncs", [])]
    degraded = meta.get("degraded_vms", [])
    if degraded:
        seconds = sum(vm["degraded_s"] for vm in degraded)
        policies = ", ".join(sorted({vm["on_peer_loss"] for vm in degraded}))
        resynced = sum(vm["resync_bytes"] for vm in degraded)
        lines.append(
            f"  {len(degraded)} VM(s) short of peers for {seconds:.3f} VM-seconds in all (on_peer_loss {policies}); "
            f"{resynced / MiB:.1f} MiB of their writes resynced"
        )
    return ["", "Events:", *lines] if lines else []


def _failure(f: dict[str, Any]) -> str:
    kind = f.get("kind", "host_failure")
    after = "; its VMs write through from then on" if kind == "device_failure" else ""
    return (
        f"  {kind} host{f['host']} at {f['at_s']:.3f} s: {f['lost_bytes'] / MiB:.1f} MiB lost, "
        f"{f['handed_over_bytes'] / MiB:.1f} MiB handed over to replica holders{after}"
    )


def _restarts(restarts: list[dict[str, Any]]) -> list[str]:
    """One line per HA restart (the VMs of one failed host restarted at one time)."""
    batches: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in restarts:
        batches.setdefault((r["from_host"], r["restart_s"]), []).append(r)
    return [
        f"  HA restart of {len(vms)} VM(s) of {host} at {at:.3f} s: "
        + ", ".join(f"{vm['vm']} on {vm['to_host']}" for vm in vms)
        + f"; {sum(vm['dropped_arrivals'] for vm in vms)} open-loop arrivals dropped while down"
        for (host, at), vms in batches.items()
    ]


def _span(record: dict[str, Any]) -> tuple[str, str]:
    """An outage's or slowdown's end (or "end of run") and its destage backlog at start and end, in words."""
    end = "end of run" if math.isnan(record["end_s"]) else f"{record['end_s']:.3f} s"
    after = "" if math.isnan(record["backlog_at_end_bytes"]) else f" -> {record['backlog_at_end_bytes'] / MiB:.1f} MiB"
    return end, f"backlog {record['backlog_at_start_bytes'] / MiB:.1f} MiB{after}"


def _outage(o: dict[str, Any]) -> str:
    end, backlog = _span(o)
    return f"  {o['kind']} host{o['host']} {o['link']} link down {o['start_s']:.3f} s to {end}: {backlog}"


def _degradation(d: dict[str, Any]) -> str:
    end, backlog = _span(d)
    if "fraction" in d:
        what = f"at {d['fraction']:.3g} of its speed"
    else:
        what = f"service times x{d['read_factor']:.3g} reads, x{d['write_factor']:.3g} writes"
    return f"  {d['kind']} {d['component']} {d['start_s']:.3f} s to {end}: {what}; {backlog}"


def _resync(r: dict[str, Any]) -> str:
    end = "still running at the end" if math.isnan(r["end_s"]) else f"done in {r['end_s'] - r['start_s']:.4f} s"
    return f"  resync host{r['host']} -> host{r['peer']} from {r['start_s']:.3f} s: {r['bytes'] / MiB:.1f} MiB, {end}"
