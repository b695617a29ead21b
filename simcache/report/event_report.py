"""The events table of ``simcache run``: VM moves (vMotions), host and device failures, HA
restarts, link outages, slowed components, resyncs and the VMs short of peers."""

from __future__ import annotations

import math
from typing import Any

from simcache.base.errors import counted
from simcache.base.units import human_size
from simcache.results.event_impact import PHASES, EventImpact, event_impacts
from simcache.results.result import Result

__all__ = ["event_lines", "impact_lines", "mib", "recovery_words"]

MiB = 2**20


def event_lines(result: Result) -> list[str]:
    """One line per vMotion that moves a VM, host or device failure, HA restart, outage, slowed
    component and resync flow, and one for the VMs short of peers ([] without any). A vMotion
    without a VM is traffic only: no line."""
    meta = result.meta
    lines = [_vmotion(m, result) for m in meta.get("vmotions", []) if "vm" in m]
    lines += [_failure(f) for f in meta.get("failures", [])]
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
            f"  {counted(len(degraded), 'VM')} short of peers for {seconds:.3f} VM-seconds in all "
            f"(on_peer_loss {policies}); "
            f"{mib(resynced)} of their writes resynced"
        )
    impacts = event_impacts(result)
    if impacts:
        interval = float(meta["scenario"]["run"]["sample_interval"])
        lines.append(
            "  Impact (latency of the I/Os issued before / during / after; recovery to the "
            f"{interval:g} s samples):"
        )
        lines += [line for impact in impacts for line in impact_lines(impact)]
    return ["", "Events:", *lines] if lines else []


def impact_lines(impact: EventImpact) -> list[str]:
    """Two lines for one event's impact: its latency before, during and after, then data at risk,
    lost and recovery."""
    latency = "; ".join(
        f"{op} p50/p99 "
        + " -> ".join(
            f"{_ms(impact.latency[p][f'{op}_p50_ms'])}/{_ms(impact.latency[p][f'{op}_p99_ms'])}"
            for p in PHASES
        )
        + " ms"
        for op in ("write", "read")
        if any(not math.isnan(impact.latency[p][f"{op}_p50_ms"]) for p in PHASES)
    )
    return [
        f"    {impact.what} {impact.start_s:.3f}-{impact.end_s:.3f} s (windows of "
        f"{impact.window_s:.3f} s): {latency or 'no I/O'}",
        f"      peak at risk {mib(impact.peak_at_risk_bytes)}, lost {mib(impact.lost_bytes)}; "
        f"backlog back to {mib(impact.backlog_before_bytes)}: "
        f"{recovery_words(impact.backlog_recovered_s, impact)}; "
        f"at risk back to {mib(impact.at_risk_before_bytes)}: "
        f"{recovery_words(impact.at_risk_recovered_s, impact)}",
    ]


def recovery_words(at: float | None, impact: EventImpact) -> str:
    """When a figure was back to its pre-event level (``at``), in words, from where ``impact``
    counts recovery."""
    if impact.ongoing:
        return "the event had not ended by the end of the run"
    if at is None:
        return "not recovered by the end of the run"
    since = "the failure" if impact.kind == "host_failure" else "the event's end"
    return f"at {at:.3f} s ({at - impact.recovery_from_s:.3f} s after {since})"


def mib(size: float) -> str:
    """Bytes in MiB as the events table shows them (``15.6 MiB``); a size that would round to
    0.0 MiB but is not zero in the largest unit that shows it (``16 KiB``, ``512 B``): a loss of
    data never reads as none (review 65: 16 KiB lost printed as 0.0 MiB)."""
    if size and abs(size) < 0.05 * MiB:
        return human_size(size, 3)
    return f"{size / MiB:.1f} MiB"


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def _vmotion(m: dict[str, Any], result: Result) -> str:
    """When the VM moved, the remote hits its old host's cache served and how they faded (half of
    them issued by when, the last when), and what became of its writes the old host had not
    destaged."""
    head = (
        f"  vmotion {m['vm']} host{m['source_host']} -> host{m['target_host']} from "
        f"{m['start_s']:.3f} s"
    )
    if "not_moved" in m:
        return f"{head}: transfer done at {m['end_s']:.3f} s, not moved ({m['not_moved']})"
    if math.isnan(m["moved_s"]):
        return f"{head}: transfer still running at the end, not moved"
    hits = (
        f"{m['remote_hits']:,} remote hits ({mib(m['remote_hit_bytes'])}) from "
        f"host{m['source_host']}"
    )
    if m["remote_hits"]:
        if result.stream is None:  # the median needs the records (a run without: the last only)
            records = result.records
            mine = records[
                (records["vm"] == m["vm"])
                & (records["path"] == "remote_hit")
                & (records["issue_s"] >= m["moved_s"])
            ]
            mine = mine[mine["host"] == f"host{m['target_host']}"]
            if len(mine):
                hits += f", half of them issued by {float(mine['issue_s'].median()):.3f} s"
        hits += f", the last at {m['last_remote_hit_s']:.3f} s"
    writes = f"its writes host{m['source_host']} had not destaged ({mib(m['pending_bytes'])})"
    if m["handover"] and not math.isnan(m["handover_end_s"]):
        writes += (
            f" handed over to host{m['target_host']} by {m['handover_end_s']:.3f} s "
            f"({mib(m['handed_over_bytes'])})"
        )
    elif m["handover"] and m["pending_bytes"]:
        writes += " on their way to the target at the end"
    else:
        writes += " destaged from there"
    return f"{head}: moved at {m['moved_s']:.3f} s; {hits}; {writes}"


def _failure(f: dict[str, Any]) -> str:
    kind = f.get("kind", "host_failure")
    after = "; its VMs write through from then on" if kind == "device_failure" else ""
    return (
        f"  {kind} host{f['host']} at {f['at_s']:.3f} s: {mib(f['lost_bytes'])} lost, "
        f"{mib(f['handed_over_bytes'])} handed over to replica holders{after}"
    )


def _restarts(restarts: list[dict[str, Any]]) -> list[str]:
    """One line per HA restart (the VMs of one failed host restarted at one time)."""
    batches: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in restarts:
        batches.setdefault((r["from_host"], r["restart_s"]), []).append(r)
    return [
        f"  HA restart of {counted(len(vms), 'VM')} of {host} at {at:.3f} s: "
        + ", ".join(f"{vm['vm']} on {vm['to_host']}" for vm in vms)
        + f"; {counted(sum(vm['dropped_arrivals'] for vm in vms), 'open-loop arrival')} dropped "
        "while down"
        for (host, at), vms in batches.items()
    ]


def _span(record: dict[str, Any]) -> tuple[str, str]:
    """An outage's or slowdown's end (or "end of run") and its destage backlog at start and end,
    in words."""
    end = "end of run" if math.isnan(record["end_s"]) else f"{record['end_s']:.3f} s"
    after = (
        ""
        if math.isnan(record["backlog_at_end_bytes"])
        else f" -> {mib(record['backlog_at_end_bytes'])}"
    )
    return end, f"backlog {mib(record['backlog_at_start_bytes'])}{after}"


def _outage(o: dict[str, Any]) -> str:
    end, backlog = _span(o)
    return (
        f"  {o['kind']} host{o['host']} {o['link']} link down {o['start_s']:.3f} s to {end}: "
        f"{backlog}"
    )


def _degradation(d: dict[str, Any]) -> str:
    end, backlog = _span(d)
    if "fraction" in d:
        what = f"at {d['fraction']:.3g} of its speed"
    else:
        what = f"service times x{d['read_factor']:.3g} reads, x{d['write_factor']:.3g} writes"
    return f"  {d['kind']} {d['component']} {d['start_s']:.3f} s to {end}: {what}; {backlog}"


def _resync(r: dict[str, Any]) -> str:
    end = (
        "still running at the end"
        if math.isnan(r["end_s"])
        else f"done in {r['end_s'] - r['start_s']:.4f} s"
    )
    return (
        f"  resync host{r['host']} -> host{r['peer']} from {r['start_s']:.3f} s: "
        f"{mib(r['bytes'])}, {end}"
    )
