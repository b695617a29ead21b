"""What one virtual disk's vscsiStats histograms become: a group (its workload: read fraction,
size mix, arrival rate or outstanding I/Os, locality), the facts behind each field, and its
measured latency as checks.

The fields and how each is derived are described in :mod:`.vscsistats` (the table, and "Seek
distances", "Sizes" and the paragraphs after them); the size mixes are :mod:`.vscsistats.sizes`,
the locality fit :mod:`.vscsistats.locality`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcache.base.errors import plural
from simcache.base.metrics import PERCENTILES
from simcache.traces.formats.vscsistats.locality import SHORT_SEEK, fit_locality, near_fraction
from simcache.traces.formats.vscsistats.mean import bucket_bounds, histogram_label, matched
from simcache.traces.formats.vscsistats.sections import (
    COLLECT,
    TITLE_OF,
    Disk,
    Histogram,
    vscsi_error,
)
from simcache.traces.formats.vscsistats.sizes import size_fields, size_key

__all__ = ["DiskGroup", "disk_group"]


def _gap_mean(arrivals: Histogram, where: str, notes: list[str]) -> tuple[float, int]:
    """Mean inter-arrival time (µs) and the number of gaps it is over, without a leading gap from
    before collection."""
    gaps, total = arrivals.count, arrivals.count * arrivals.mean
    largest = arrivals.stats["max"]
    if gaps > 1 and total > 0 and largest > total / 2:
        # Most likely the first command's gap, counted from the disk's last command before
        # collection started.
        notes.append(
            f"{where}: the largest inter-arrival time ({largest / 1e6:,.6g} s) is over half of all "
            "gaps together; "
            "taken as the gap from before collection began and left out of the rate"
        )
        return (total - largest) / (gaps - 1), gaps - 1
    return arrivals.mean, gaps


def _cv(path: Path, histogram: Histogram, where: str, notes: list[str]) -> float | None:
    """Coefficient of variation of the buckets, each at one value inside it, placed so their mean is
    the mean line (see :mod:`.vscsistats.mean`)."""
    bounds = bucket_bounds(histogram, whole=False)
    counted = zip(bounds, histogram.counts, strict=True)
    buckets = [(bound, count) for bound, count in counted if count > 0]
    n = sum(count for _, count in buckets)
    if n < 2:
        return None
    label, use = histogram_label(path, histogram, where), "the inter-arrival CV in the facts"
    placement = matched(label, buckets, histogram.mean, notes, "µs", use)
    mean = placement.mean
    spread = zip(buckets, placement.values, strict=True)
    var = sum(count * (v - mean) ** 2 for (_, count), v in spread) / n
    return math.sqrt(var) / mean if mean > 0 else None


def _percentile_bucket(latency: Histogram, pct: float) -> tuple[float, float]:
    """(lower, upper) µs of the bucket the ``pct`` percentile falls in, narrowed by the min and
    max lines (true bounds)."""
    total = sum(latency.counts)
    cumulative = 0
    for lower, limit, count in latency.buckets():
        cumulative += count
        if cumulative * 100 >= pct * total:
            low = max(0.0 if lower is None else lower, latency.stats["min"])
            high = latency.stats["max"] if limit is None else min(limit, latency.stats["max"])
            return low, max(high, low)
    raise AssertionError("the cumulative count always reaches the total")


def _latency_checks(
    group: str, disk: Disk, op: str, latency: Histogram, rel: float
) -> list[dict[str, Any]]:
    n = latency.count
    mean_ms = latency.mean / 1e3
    checks: list[dict[str, Any]] = [
        {
            "name": f"{group}.{op}.mean_ms",
            "metric": "mean_ms",
            "group": group,
            "op": op,
            "approx": round(mean_ms, 6),
            "rel": rel,
            "observation": (
                f"vscsiStats measured a mean {op} latency of {mean_ms:.4g} ms over {n:,} {op}s on "
                f"{disk.label}"
            ),
            "field_figure": f"{mean_ms:.4g} ms",
            "tolerance": (
                f"within {rel:.0%}: the file measured its host's hardware, the scenario models "
                "its own"
            ),
        }
    ]
    total = sum(latency.counts)
    for metric, pct in PERCENTILES.items():
        if total * (100 - pct) / 100 < 1:
            continue  # fewer I/Os than this percentile needs to differ from the max
        low, high = _percentile_bucket(latency, pct)
        check: dict[str, Any] = {
            "name": f"{group}.{op}.{metric}",
            "metric": metric,
            "group": group,
            "op": op,
        }
        if low > 0:
            check["at_least"] = round(low / 1e3, 6)
        check.update(
            at_most=round(high / 1e3, 6),
            observation=f"vscsiStats counted the {pct:g}th percentile {op} latency on {disk.label} "
            "in the bucket "
            f"{low / 1e3:.4g}..{high / 1e3:.4g} ms",
            field_figure=f"{low / 1e3:.4g}..{high / 1e3:.4g} ms",
            tolerance=(
                "the histogram bucket it falls in: vscsiStats counts latencies in buckets, so the "
                "percentile is known no closer"
            ),
        )
        checks.append(check)
    return checks


@dataclass
class DiskGroup:
    """What one disk becomes: its group (a scenario ``[[groups]]`` table), its latency checks
    (``[[expect]]`` tables), its facts, and the collection window its arrivals span (s; ``None``
    without an inter-arrival histogram)."""

    group: dict[str, Any]
    expect: list[dict[str, Any]]
    facts: list[tuple[str, str]]
    window: float | None


def _others(count: int) -> str:
    return f", {count:,} other commands, not modelled" if count > 0 else ""


def _need(
    path: Path,
    disk: Disk,
    histograms: Mapping[tuple[str, str], Histogram],
    wanted: Iterable[tuple[str, str]],
) -> None:
    missing = [TITLE_OF[key] for key in wanted if key not in histograms]
    if missing:
        names = "; ".join(f"'{title}'" for title in missing)
        noun = plural(len(missing), "histogram")
        raise vscsi_error(path, None, disk.label, f"no {names} {noun} for this disk; {COLLECT}")


def disk_group(
    path: Path,
    disk: Disk,
    group: str,
    hist: Mapping[tuple[str, str], Histogram],
    notes: list[str],
    *,
    mode: str,
    working_set: int,
    sequential_within: int,
    rel: float,
) -> DiskGroup:
    """The group named ``group`` for one disk's histograms ``hist``, with its facts and latency
    checks; warnings are added to ``notes``. ``mode``, ``working_set`` (bytes),
    ``sequential_within`` (LBNs) and ``rel``: the options of the same names."""
    where = disk.label
    wanted = [("length", "any"), ("length", "read"), ("length", "write"), ("seek", "any")]
    wanted.append(("interarrival", "any") if mode == "open" else ("outstanding", "any"))
    _need(path, disk, hist, wanted)
    lengths = hist["length", "any"]
    reads, writes = hist["length", "read"].count, hist["length", "write"].count
    if reads + writes == 0:
        raise vscsi_error(
            path,
            lengths.line,
            where,
            "no read or write commands counted: nothing to model (was the VM idle?)",
        )
    sizes, how = size_fields(path, hist, where, notes, reads > 0 and writes > 0)
    workload: dict[str, Any] = {
        "mode": mode,
        "read_fraction": float(f"{reads / (reads + writes):.6g}"),
        **sizes,
        "working_set": size_key(working_set),
    }
    facts = [
        (
            f"{where} I/Os",
            f"{lengths.count:,} ({reads:,} reads, {writes:,} "
            f"writes{_others(lengths.count - reads - writes)})",
        ),
        (f"{where} sizes", how),
    ]
    window = None
    if ("interarrival", "any") in hist:
        arrivals = hist["interarrival", "any"]
        gap_us, gaps = _gap_mean(arrivals, where, notes)
        if gap_us <= 0:
            raise vscsi_error(
                path,
                arrivals.line,
                "mean",
                f"{where}: a mean inter-arrival time of {gap_us:g} µs gives no rate (the "
                "histogram's mean line); check that it is the value vscsiStats printed, or "
                "import with option mode=closed (the outstanding-I/O histogram, not the rate)",
            )
        window = gaps * gap_us / 1e6
        cv = _cv(path, arrivals, where, notes)
        cv_text = f"{cv:.2f}" if cv is not None else "unknown"
        rate = f"mean {gap_us:,.6g} µs -> {1e6 / gap_us:,.6g} IOPS"
        spread = f"CV ≈ {cv_text} (buckets, placed to the mean line; Poisson: 1)"
        facts.append((f"{where} inter-arrival", f"{rate}; {spread}"))
        facts.append((f"{where} collection window", f"{window:,.6g} s (gaps x mean inter-arrival)"))
        if mode == "open":
            workload.update(iops=float(f"{1e6 / gap_us:.6g}"), arrivals="poisson")
    if ("outstanding", "any") in hist:
        depth = hist["outstanding", "any"].mean
        facts.append((f"{where} outstanding I/Os", f"mean {depth:.4g} when one is issued"))
        if mode == "closed":
            workload.update(workers=1, outstanding=max(1, min(1024, round(depth))))
    locality = fit_locality(hist["seek", "any"], sequential_within, working_set)
    near = locality.near
    if near >= 1.0:
        workload["access"] = "sequential"
    else:
        workload["access"] = "uniform"
        if locality.hotspot is not None:
            workload.update(
                access="hotspot",
                hot_io_fraction=locality.hotspot[0],
                hot_span_fraction=locality.hotspot[1],
            )
        if near > 0:
            workload["sequential_run"] = float(f"{1.0 / (1.0 - near):.4g}")
    seek_text = f"{near:.1%} of successive commands"
    if ("seek16", "any") in hist:
        seek_text += (
            f", {near_fraction(hist['seek16', 'any'], sequential_within):.1%} from the "
            "closest of the previous 16"
        )
    run_text = (
        f"sequential_run = {workload['sequential_run']:g}"
        if "sequential_run" in workload
        else f"access = {workload['access']!r}"
    )
    facts.append(
        (f"{where} seeks within +1..+{sequential_within} LBN", f"{seek_text} -> {run_text}")
    )
    excess = (
        "no other seeks"
        if math.isnan(locality.excess)
        else f"{locality.excess:.3g}x as likely as uniform access gives"
    )
    place = (
        f"hot_io_fraction = {locality.hotspot[0]:g}, hot_span_fraction = {locality.hotspot[1]:g}"
        if locality.hotspot
        else "not a hot spot"
    )
    facts.append(
        (f"{where} other seeks", f"within {SHORT_SEEK} LBN: {excess}; {place} ({locality.reason})")
    )
    expect = []
    for op in ("read", "write"):
        latency = hist.get(("latency", op))
        if latency is not None and latency.count > 0 and sum(latency.counts) > 0:
            expect += _latency_checks(group, disk, op, latency, rel)
    return DiskGroup(
        {"name": group, "vms_per_host": 1, "workload": workload}, expect, facts, window
    )
