"""vscsiStats histograms (``vscsiStats -p all -c``): one synthetic workload per virtual disk,
measured latency as checks.

The ESXi tool ``vscsiStats`` counts each virtual disk's commands in
histograms. With ``-p all -c`` it prints them as CSV sections, one per
histogram and disk::

    Histogram: IO lengths of commands,virtual machine worldGroupID,2099979,virtual disk
    handleID,8194 (scsi0:0) min,512 max,65536 mean,5332 count,793 Frequency,Histogram Bucket Limit
    42,512 ... 0,524288

A row ``<count>,<limit>`` counts the values above the previous row's limit
up to its own; the last row repeats the previous limit and counts everything
above it (the overflow bucket). The histograms, each for all, Read and Write
commands: I/O length (bytes), distance in LBNs (512-byte blocks) between
successive commands (negative = backwards, +1 = the next block: sequential),
distance from the closest of the previous 16 commands (all commands only),
latency (µs), outstanding I/Os when one is issued, inter-arrival time (µs).
Sources: VMware's "Using vscsiStats for Storage Performance Analysis"
(communities.vmware.com, 2009) for the collection steps and ``-r``; the
tool's ``-h`` text (reproduced on buildvirtual.net) for ``-p all`` and
``-c``; virtualirfan.com/vscsistats (by the tool's author) for what a bucket
holds; the section titles as printed, e.g. the sample in
github.com/er0080/vscsiStats-helper (tests/fixtures). Scripts commonly append
several prints to one file, with ``-r`` (reset) between them or without.

What each disk becomes (one group of one VM; see ``layout``):

| workload field | from | |---|---| | ``read_fraction`` | Read / (Read + Write) I/O length counts |
| ``sizes`` | the all-commands I/O length buckets: a size inside each, for the mean line (below) | |
``read_sizes``, ``write_sizes`` | instead of ``sizes`` when the Read and Write I/O length histograms
give different mixes | | ``iops`` (open loop) | 1 / mean inter-arrival time (without a largest gap
longer than all others together) | | ``outstanding`` (``mode = "closed"``) | the outstanding-I/O
histogram's mean, rounded | | ``sequential_run`` | ``1 / (1 - p)``, ``p`` the share of successive
seeks within +1..+``sequential_within`` LBN (near-sequential) | | ``access`` | ``sequential`` if
every seek is near-sequential; ``hotspot`` if the other seeks resolve one (below); else ``uniform``
| | ``working_set`` | not in the histograms: the ``working_set`` option |

Seek distances. A near-sequential seek continues a run: with a share ``p`` of
them, runs (geometric, as the model draws them) have the mean length
``1 / (1 - p)``. The other seeks go from where a run ended to a fresh
position: under a hot spot (a share ``f`` of the I/Os uniform over the first
share ``s`` of the working set, the rest uniform over the remainder, two
successive positions independent) their absolute distance has a known
distribution (two points in one region, or one in each; see
``_distance_cdf``). ``f`` and ``s`` are fitted to the histogram's buckets
(both signs, near-sequential ones left out) by maximum likelihood on a grid
(``s`` from 1e-5 to 0.5, ``f`` above ``s``), and the hot spot is kept only if
(1) it beats uniform access by a likelihood-ratio test at p = 0.001 and
(2) its size is resolved: every ``s`` whose fit is within 3 log-likelihood
units of the best (about a 95% region) is within a factor of 2. The buckets
stop at ±500000 LBN (256 MB): a hot region much larger than that shows only
as an excess of short seeks, whose size the histogram cannot tell, so it is
left uniform (the facts give the excess). The fit depends on the
``working_set`` option, the span the distances are measured against.

Sizes. A bucket holds the lengths above the previous limit up to its own, the
first one from the min line, the overflow one up to the max line. Each bucket
becomes one whole-byte size inside it, every size the same fraction ``t`` of
the way from its bucket's lowest to its highest length; the mix's mean rises
with ``t`` (linearly), so one ``t`` gives the histogram's mean line. The mix
(weights as written, 6 significant digits) then has the mean line's mean to
within half a byte (the rounding of each size to whole bytes; at the very
edge of what the buckets allow, also the weights' rounding, 1e-5 of the mean).
``t = 1`` would be every bucket's limit, which overstates the mean of a bucket
such as 16385..32768 bytes. A mean line the buckets cannot reach (an
inconsistent file) gets the closest mean they allow, and a warning names the
file, the histogram, the mean line and the mean used. The facts give each
mix's mean, its mean line, ``t`` and the mean at the limits. The inter-arrival
CV in the facts places its buckets the same way (the rate itself is the mean
line's); the outstanding-I/O histogram gives only its mean line.

A largest inter-arrival gap longer than all the others together is most
likely the first command's, counted from before collection began: it is left
out of the rate and of the collection window (a warning says so).

Measured latency becomes ``[[expect]]`` checks per disk group and op: the
mean (``mean_ms``, within ``rel``) and the percentiles of
:data:`simcache.base.metrics.PERCENTILES` the count can resolve, each as the
bucket it falls in (``at_least`` the bucket's lower edge, ``at_most`` its
limit): a histogram tells a percentile no finer than its bucket.

Options:

- ``layout``: ``"disk"`` (default) one group per disk, placed round robin
  like any imported group; ``"vm"`` the same groups, but all disks of a
  virtual machine (worldGroupID) on one host, VMs round robin over the
  base cluster's hosts.
- ``mode``: ``"open"`` (default; Poisson arrivals at the measured rate) or
  ``"closed"`` (one worker keeping the measured mean of outstanding I/Os).
- ``working_set``: bytes per VM (default ``"10GiB"``; a warning says so).
- ``rel``: relative tolerance of the mean-latency checks (default 0.25).
- ``sequential_within``: LBNs ahead of the previous command a seek still
  counts as near-sequential (default 128, i.e. 64 KiB; only whole buckets
  count, so the buckets at or under it).
- ``snapshots``: a file with a histogram printed more than once per disk:
  ``"sum"`` (prints separated by ``-r``: add them), ``"last"`` (cumulative
  prints: the last holds everything) or ``"auto"`` (default: ``last`` when
  every bucket only grows from one print to the next, else ``sum``).

Where things are: reading the CSV sections into histograms (titles, parsing,
merging repeated prints) is in :mod:`.vscsistats_csv`; the locality fit of the
seek-distance histogram (near-sequential share, hot-spot maximum likelihood)
in :mod:`.vscsistats_locality`; the values placed in buckets to give the mean
line in :mod:`.vscsistats_mean`. What a disk becomes (workload, checks,
:func:`read`) stays here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcache.base.metrics import PERCENTILES
from simcache.base.names import group_name
from simcache.base.units import UnitError, format_size, parse_size
from simcache.traces.formats.base import FileReading, check_option_names
from simcache.traces.formats.vscsistats_csv import (
    COLLECT,
    FREQUENCY_HEADER,
    TITLE_OF,
    Disk,
    Histogram,
    _error,
    _histograms,
    _parse,
)
from simcache.traces.formats.vscsistats_locality import SHORT_SEEK, _locality, _near_fraction
from simcache.traces.formats.vscsistats_mean import (
    MEAN_SLACK,
    Placement,
    bucket_bounds,
    place,
    reach,
)

__all__ = ["KIND", "NAME", "read", "sniff"]

NAME = "vscsistats"
KIND = "measurement"

OPTIONS: dict[str, str] = {
    "layout": '"disk" (one group per virtual disk) or "vm" (a VM\'s disks on one host)',
    "mode": '"open" (measured arrival rate) or "closed" (measured outstanding I/Os)',
    "working_set": 'bytes each VM touches, e.g. "10GiB"',
    "rel": "relative tolerance of the mean-latency checks, e.g. 0.25",
    "sequential_within": "LBNs ahead a seek still counts as near-sequential, e.g. 128",
    "snapshots": '"auto", "sum" (prints reset with -r) or "last" (cumulative prints)',
}
DEFAULT_WORKING_SET = "10GiB"
DEFAULT_REL = 0.25
"""The mean-latency checks' tolerance: the file measured one host's hardware, the scenario models
another."""
DEFAULT_SEQUENTIAL_WITHIN = 128

_TITLE = re.compile(
    r"^Histogram: [^,\n]+,virtual machine worldGroupID,[^,\n]*,virtual disk handleID,", re.MULTILINE
)


def sniff(head: str) -> bool:
    """A vscsiStats CSV print: a ``Histogram: ...,virtual machine worldGroupID,...`` title and
    the frequency header."""
    return _TITLE.search(head) is not None and FREQUENCY_HEADER in head.lower()


# ---------------------------------------------------------------- options


@dataclass(frozen=True)
class _Options:
    layout: str = "disk"
    mode: str = "open"
    working_set: int = parse_size(DEFAULT_WORKING_SET)
    working_set_given: bool = False
    rel: float = DEFAULT_REL
    sequential_within: int = DEFAULT_SEQUENTIAL_WITHIN
    snapshots: str = "auto"


def _options(path: Path, options: Mapping[str, Any]) -> _Options:
    check_option_names(path, options, OPTIONS, NAME)
    choices = {
        "layout": ("disk", "vm"),
        "mode": ("open", "closed"),
        "snapshots": ("auto", "sum", "last"),
    }
    values: dict[str, Any] = {}
    for name, allowed in choices.items():
        if name in options:
            if options[name] not in allowed:
                raise _error(
                    path,
                    None,
                    f"options.{name}",
                    f"{options[name]!r} is not one of {', '.join(allowed)}",
                )
            values[name] = options[name]
    if "working_set" in options:
        try:
            size = parse_size(options["working_set"])
        except UnitError as exc:
            raise _error(path, None, "options.working_set", str(exc)) from None
        if size <= 0:
            raise _error(
                path, None, "options.working_set", f"must be positive, e.g. {DEFAULT_WORKING_SET!r}"
            )
        values.update(working_set=size, working_set_given=True)
    if "rel" in options:
        rel = options["rel"]
        if isinstance(rel, bool) or not isinstance(rel, (int, float)) or not 0 < rel < 10:
            raise _error(
                path,
                None,
                "options.rel",
                f"a relative tolerance above 0, e.g. 0.25 (25%), not {rel!r}",
            )
        values["rel"] = float(rel)
    if "sequential_within" in options:
        within = options["sequential_within"]
        if isinstance(within, bool) or not isinstance(within, int) or within < 1:
            raise _error(
                path,
                None,
                "options.sequential_within",
                f"a whole number of LBNs (512 B) of at least 1, e.g. 128, not {within!r}",
            )
        values["sequential_within"] = within
    return _Options(**values)


# ---------------------------------------------------------------- the workload


def _size_key(nbytes: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    return f"{nbytes}B"


def _weight(count: int, total: int) -> float:
    return float(f"{count / total:.6g}")


def _matched(
    path: Path,
    histogram: Histogram,
    where: str,
    buckets: list[tuple[tuple[float, float], int]],
    target: float,
    notes: list[str],
    unit: str,
    use: str,
    *,
    weights: list[float] | None = None,
) -> Placement:
    """``buckets`` ((lowest, highest), count) placed so their mean is ``target`` (see
    :mod:`.vscsistats_mean`): whole numbers for bytes, ``weights`` in place of the counts (as the
    mix writes them). A target the buckets cannot reach (by the counts, beyond the mean line's
    rounding) is warned about, ``use`` saying what takes the closest mean instead."""
    bounds = [bound for bound, _ in buckets]
    counts = [float(count) for _, count in buckets]
    placement = place(bounds, counts if weights is None else weights, target, whole=unit == "B")
    least, most = reach(bounds, counts)
    if not least - MEAN_SLACK <= target <= most + MEAN_SLACK:
        notes.append(
            f"{path.name}: '{histogram.title}' of {where} (line {histogram.line}): the mean line "
            f"says {target:,.6g} {unit}, but its buckets (with the min and max lines) allow "
            f"{least:,.6g} to {most:,.6g} {unit}; {use} takes the closest mean, "
            f"{placement.mean:,.6g} {unit}"
        )
    return placement


@dataclass(frozen=True)
class _Mix:
    """A size mix and how its sizes were placed in their buckets."""

    sizes: dict[str, float]
    mean: float
    """Bytes: the mix's mean (its weights as written)."""
    target: float
    """Bytes: the mean it was placed to reach (the mean line, over the I/Os with data)."""
    fraction: float
    """How far up its bucket each size is (0 its lowest, 1 its limit)."""
    at_limits: float
    """Bytes: the mean with each size at the top of its bucket (limit; the last: the max line)."""

    def text(self, label: str) -> str:
        return (
            f"{label} {self.mean:,.1f} B, mean line {self.target:,.6g} B (sizes t = "
            f"{self.fraction:.3g} of the way up their buckets; "
            f"at their tops {self.at_limits:,.1f} B)"
        )


def _sizes(path: Path, lengths: Histogram, where: str, notes: list[str]) -> _Mix:
    """The size mix of an I/O length histogram: a whole-byte size inside each bucket, placed so the
    mix's mean is the mean line (within half a byte; see :mod:`.vscsistats_mean`)."""
    bounds = bucket_bounds(lengths, whole=True, smallest=1)
    data = [
        (bound, count)
        for (_lower, limit, count), bound in zip(lengths.buckets(), bounds, strict=True)
        if count > 0 and (limit is None or limit > 0)
    ]
    total = sum(count for _, count in data)
    zero = sum(lengths.counts) - total
    if zero:
        notes.append(
            f"{where}: {zero:,} commands of length 0 (not reads or writes of data) are left out "
            "of the size mix (its mean: the mean line's bytes over the other commands)"
        )
    if not data:
        raise _error(
            path,
            lengths.line,
            lengths.title,
            "no bucket counts an I/O with data: no size mix to model",
        )
    weights = [_weight(count, total) for _, count in data]
    target = lengths.mean * (total + zero) / total  # commands of length 0 count in the mean line
    use = "the size mix"
    placement = _matched(path, lengths, where, data, target, notes, "B", use, weights=weights)
    mix: dict[str, float] = {}
    for weight, size in zip(weights, placement.values, strict=True):
        key = _size_key(int(size))
        mix[key] = mix.get(key, 0.0) + weight
    over = lengths.counts[-1] if lengths.overflow else 0
    if over:
        above, largest = _size_key(int(lengths.limits[-2])), _size_key(int(placement.values[-1]))
        notes.append(
            f"{where}: {over:,} I/Os are larger than {above} (the overflow bucket); modelled as "
            f"{largest} (placed up to the max line, {lengths.stats['max']:,.0f} B, with the other "
            "buckets)"
        )
    at_limits = reach([bound for bound, _ in data], weights)[1]
    return _Mix(mix, placement.mean, target, placement.fraction, at_limits)


def _size_fields(
    path: Path,
    hist: Mapping[tuple[str, str], Histogram],
    where: str,
    notes: list[str],
    both_ops: bool,
) -> tuple[dict[str, dict[str, float]], str]:
    """(``sizes``, or ``read_sizes`` and ``write_sizes`` when the Read and Write histograms' mixes
    differ; how, with each mix's mean against its mean line, in words)."""
    if both_ops:
        op_notes: list[str] = []
        read = _sizes(path, hist["length", "read"], f"{where} reads", op_notes)
        write = _sizes(path, hist["length", "write"], f"{where} writes", op_notes)
        if _shares(read.sizes) != _shares(write.sizes):
            notes += op_notes
            means = read.text("mean read") + "; " + write.text("mean write")
            how = f"read and write mixes of the Read and Write histograms: {means}"
            return {"read_sizes": read.sizes, "write_sizes": write.sizes}, how
    mix = _sizes(path, hist["length", "any"], where, notes)
    how = "one mix for reads and writes, of the all-commands histogram: " + mix.text("mean")
    lines = f"{hist['length', 'read'].mean:,.0f} B and {hist['length', 'write'].mean:,.0f} B"
    return {"sizes": mix.sizes}, f"{how}; the Read and Write histograms' mean lines {lines}"


def _shares(mix: Mapping[str, float]) -> dict[int, float]:
    """A size mix by bytes, weights as shares of 1 (6 significant digits): mixes that differ only
    in rounding are one."""
    total = sum(mix.values())
    return {parse_size(size): float(f"{weight / total:.6g}") for size, weight in mix.items()}


def _gap_mean(arrivals: Histogram, where: str, notes: list[str]) -> tuple[float, int]:
    """Mean inter-arrival time (µs) and the number of gaps it is over, without a leading gap from
    before collection."""
    gaps, total = arrivals.count, arrivals.count * arrivals.mean
    largest = arrivals.stats["max"]
    if gaps > 1 and largest > total / 2:
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
    the mean line (see :mod:`.vscsistats_mean`)."""
    bounds = bucket_bounds(histogram, whole=False)
    counted = zip(bounds, histogram.counts, strict=True)
    buckets = [(bound, count) for bound, count in counted if count > 0]
    n = sum(count for _, count in buckets)
    if n < 2:
        return None
    use = "the inter-arrival CV in the facts"
    placement = _matched(path, histogram, where, buckets, histogram.mean, notes, "µs", use)
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
class _DiskResult:
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
        raise _error(path, None, disk.label, f"no {names} histogram(s) for this disk; {COLLECT}")


def _disk(
    path: Path,
    disk: Disk,
    group: str,
    hist: Mapping[tuple[str, str], Histogram],
    opts: _Options,
    notes: list[str],
) -> _DiskResult:
    where = disk.label
    wanted = [("length", "any"), ("length", "read"), ("length", "write"), ("seek", "any")]
    wanted.append(("interarrival", "any") if opts.mode == "open" else ("outstanding", "any"))
    _need(path, disk, hist, wanted)
    lengths = hist["length", "any"]
    reads, writes = hist["length", "read"].count, hist["length", "write"].count
    if reads + writes == 0:
        raise _error(
            path,
            lengths.line,
            where,
            "no read or write commands counted: nothing to model (was the VM idle?)",
        )
    sizes, how = _size_fields(path, hist, where, notes, reads > 0 and writes > 0)
    workload: dict[str, Any] = {
        "mode": opts.mode,
        "read_fraction": float(f"{reads / (reads + writes):.6g}"),
        **sizes,
        "working_set": _size_key(opts.working_set),
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
            raise _error(
                path,
                arrivals.line,
                "mean",
                f"{where}: a mean inter-arrival time of {gap_us:g} µs gives no rate",
            )
        window = gaps * gap_us / 1e6
        cv = _cv(path, arrivals, where, notes)
        cv_text = f"{cv:.2f}" if cv is not None else "unknown"
        rate = f"mean {gap_us:,.6g} µs -> {1e6 / gap_us:,.6g} IOPS"
        spread = f"CV ≈ {cv_text} (buckets, placed to the mean line; Poisson: 1)"
        facts.append((f"{where} inter-arrival", f"{rate}; {spread}"))
        facts.append((f"{where} collection window", f"{window:,.6g} s (gaps x mean inter-arrival)"))
        if opts.mode == "open":
            workload.update(iops=float(f"{1e6 / gap_us:.6g}"), arrivals="poisson")
    if ("outstanding", "any") in hist:
        depth = hist["outstanding", "any"].mean
        facts.append((f"{where} outstanding I/Os", f"mean {depth:.4g} when one is issued"))
        if opts.mode == "closed":
            workload.update(workers=1, outstanding=max(1, min(1024, round(depth))))
    locality = _locality(hist["seek", "any"], opts.sequential_within, opts.working_set)
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
            f", {_near_fraction(hist['seek16', 'any'], opts.sequential_within):.1%} from the "
            "closest of the previous 16"
        )
    run_text = (
        f"sequential_run = {workload['sequential_run']:g}"
        if "sequential_run" in workload
        else f"access = {workload['access']!r}"
    )
    facts.append(
        (f"{where} seeks within +1..+{opts.sequential_within} LBN", f"{seek_text} -> {run_text}")
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
            expect += _latency_checks(group, disk, op, latency, opts.rel)
    return _DiskResult(
        {"name": group, "vms_per_host": 1, "workload": workload}, expect, facts, window
    )


def _bucket_mismatches(disks: Mapping[Disk, Mapping[tuple[str, str], Histogram]]) -> list[str]:
    return [
        f"line {h.line} ({h.title}): buckets hold {sum(h.counts):,}, count line {h.count:,}"
        for hist in disks.values()
        for h in hist.values()
        if sum(h.counts) != h.count
    ]


def read(path: Path, options: Mapping[str, Any]) -> FileReading:
    """The file's virtual disks as groups, their measured latency as checks."""
    path = Path(path)
    opts = _options(path, options)
    parsed = _parse(path)
    notes: list[str] = []
    disks = _histograms(path, parsed, opts.snapshots, notes)
    if parsed.unknown:
        listed = "; ".join(f"'{title}' (line {line})" for title, line in parsed.unknown.items())
        notes.append(f"histograms not used (unknown titles): {listed}")
    if parsed.stray:
        shown = ", ".join(str(n) for n in parsed.stray[:5]) + (
            ", ..." if len(parsed.stray) > 5 else ""
        )
        notes.append(
            f"{len(parsed.stray):,} line(s) before the first histogram are not used (lines {shown})"
        )
    mismatches = _bucket_mismatches(disks)
    if mismatches:
        notes.append(
            "bucket counts do not add up to the count line (counters reset or read "
            "mid-collection?); the buckets are used: "
            + "; ".join(mismatches[:5])
            + (f"; and {len(mismatches) - 5} more" if len(mismatches) > 5 else "")
        )
    used: set[str] = set()
    groups, expect, facts, windows, idle = [], [], [], [], []
    for disk, hist in disks.items():
        if ("length", "any") in hist and hist["length", "any"].count == 0:
            idle.append(disk.label)
            continue
        group = group_name(f"vm{disk.vm}_{disk.device or disk.handle}", used)
        result = _disk(path, disk, group, hist, opts, notes)
        if opts.layout == "vm":
            result.group["colocate"] = f"vm{disk.vm}"
        groups.append(result.group)
        expect += result.expect
        facts += result.facts
        if result.window:
            windows.append(result.window)
    if idle:
        notes.append(f"disks with no I/Os are left out: {', '.join(idle)}")
    if not groups:
        raise _error(path, None, "", "no disk did any I/O in the histograms: nothing to model")
    notes.append(
        "working_set is not in vscsiStats' histograms: each VM touches "
        f"{format_size(opts.working_set)}"
        + ("" if opts.working_set_given else " (the default; give option working_set)")
    )
    notes.append(
        "size mixes: each I/O length bucket becomes one whole-byte size inside it (above the "
        "previous limit, up to its own; the first bucket from the min line, the last up to the "
        "max line), every size the same fraction of the way up its bucket, that fraction chosen "
        "so the mix's mean is the histogram's mean line to within half a byte (each disk's means "
        "are in the facts)"
    )
    notes.append(
        "seek distances: the near-sequential share sets sequential_run (mean run 1 / (1 - share)); "
        "the other seeks are "
        "fitted with a hot spot over the working set, kept when it beats uniform access and its "
        "size is resolved "
        "(the fit depends on working_set; each disk's figures are in the facts)"
    )
    if opts.mode == "open":
        notes.append(
            "arrivals are modelled as Poisson at the measured mean rate (each disk's inter-arrival "
            "CV is in the facts)"
        )
    if opts.layout == "vm":
        vms = len(
            {
                d.vm
                for d, h in disks.items()
                if not (("length", "any") in h and h["length", "any"].count == 0)
            }
        )
        notes.append(
            f"layout 'vm' puts each VM's disks on one host ({vms} VM(s), round robin over the base "
            "cluster's hosts)"
        )
    summary = [("virtual disks", f"{len(groups)} with I/O, of {len({d.vm for d in disks})} VM(s)")]
    return FileReading(
        path,
        NAME,
        groups,
        expect=expect,
        warnings=notes,
        facts=summary + facts,
        duration=max(windows) if windows else None,
    )
