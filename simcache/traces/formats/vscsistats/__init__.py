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

| workload field | from |
|---|---|
| ``read_fraction`` | Read / (Read + Write) I/O length counts |
| ``sizes`` | the all-commands I/O length buckets: a size inside each, for the mean line (below) |
| ``read_sizes``, ``write_sizes`` | instead of ``sizes`` when the Read and Write I/O length |
| | histograms give different mixes |
| ``iops`` (open loop) | 1 / mean inter-arrival time (without a largest gap longer than all |
| | others together) |
| ``outstanding`` (``mode = "closed"``) | the outstanding-I/O histogram's mean, rounded |
| ``sequential_run`` | ``1 / (1 - p)``, ``p`` the share of successive seeks within |
| | +1..+``sequential_within`` LBN (near-sequential) |
| ``access`` | ``sequential`` if every seek is near-sequential; ``hotspot`` if the other seeks |
| | resolve one (below); else ``uniform`` |
| ``working_set`` | not in the histograms: the ``working_set`` option |

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
merging repeated prints) is in :mod:`.vscsistats.sections`; what one disk's
histograms become (its group's workload, facts and latency checks) in
:mod:`.vscsistats.disk`, with its size mixes in :mod:`.vscsistats.sizes`, the
locality fit of the seek-distance histogram (near-sequential share, hot-spot
maximum likelihood) in :mod:`.vscsistats.locality` and the values placed in
buckets to give the mean line in :mod:`.vscsistats.mean`. This module holds
the options and :func:`read`, which gathers the disks into one reading.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcache.base.errors import counted, plural
from simcache.base.names import group_name
from simcache.base.units import UnitError, format_size, parse_size
from simcache.traces.formats.base import FileReading, check_option_names
from simcache.traces.formats.vscsistats.disk import disk_group
from simcache.traces.formats.vscsistats.sections import (
    COLLECT,
    FREQUENCY_HEADER,
    TITLE_OF,
    Disk,
    Histogram,
    merged_histograms,
    parse_sections,
    vscsi_error,
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
                raise vscsi_error(
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
            raise vscsi_error(path, None, "options.working_set", str(exc)) from None
        if size <= 0:
            raise vscsi_error(
                path, None, "options.working_set", f"must be positive, e.g. {DEFAULT_WORKING_SET!r}"
            )
        values.update(working_set=size, working_set_given=True)
    if "rel" in options:
        rel = options["rel"]
        if isinstance(rel, bool) or not isinstance(rel, (int, float)) or not 0 < rel < 10:
            raise vscsi_error(
                path,
                None,
                "options.rel",
                f"a relative tolerance above 0, e.g. 0.25 (25%), not {rel!r}",
            )
        values["rel"] = float(rel)
    if "sequential_within" in options:
        within = options["sequential_within"]
        if isinstance(within, bool) or not isinstance(within, int) or within < 1:
            raise vscsi_error(
                path,
                None,
                "options.sequential_within",
                f"a whole number of LBNs (512 B) of at least 1, e.g. 128, not {within!r}",
            )
        values["sequential_within"] = within
    return _Options(**values)


def _bucket_mismatches(disks: Mapping[Disk, Mapping[tuple[str, str], Histogram]]) -> list[str]:
    return [
        f"line {h.line} ({h.title}): buckets hold {sum(h.counts):,}, count line {h.count:,}"
        for hist in disks.values()
        for h in hist.values()
        if sum(h.counts) != h.count
    ]


_EXAMPLE_TITLES = (("latency", "any"), ("interarrival", "any"))
"""Histograms whose titles the error for a file of unknown titles quotes, after the lengths'."""


def read(path: Path, options: Mapping[str, Any]) -> FileReading:
    """The file's virtual disks as groups, their measured latency as checks."""
    path = Path(path)
    opts = _options(path, options)
    parsed = parse_sections(path)
    notes: list[str] = []
    disks = merged_histograms(path, parsed, opts.snapshots, notes)
    if parsed.unknown and not disks:
        found = list(parsed.unknown.items())
        shown = "; ".join(f"'{title}' (line {line})" for title, line in found[:3])
        more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
        expected = ", ".join(f"'{TITLE_OF[key]}'" for key in (("length", "any"), *_EXAMPLE_TITLES))
        raise vscsi_error(
            path,
            found[0][1],
            "Histogram title",
            f"no histogram title recognised; expected vscsiStats' own titles, such as {expected}; "
            f"found {shown}{more}. Give the file vscsiStats printed (titles edited or copied "
            f"from elsewhere are not read); {COLLECT}",
        )
    if parsed.unknown:
        listed = "; ".join(f"'{title}' (line {line})" for title, line in parsed.unknown.items())
        notes.append(f"histograms not used (unknown titles): {listed}")
    if parsed.stray:
        shown = ", ".join(str(n) for n in parsed.stray[:5]) + (
            ", ..." if len(parsed.stray) > 5 else ""
        )
        stray = len(parsed.stray)
        notes.append(
            f"{counted(stray, 'line')} before the first histogram "
            f"{plural(stray, 'is', 'are')} not used ({plural(stray, 'line')} {shown})"
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
        result = disk_group(
            path,
            disk,
            group,
            hist,
            notes,
            mode=opts.mode,
            working_set=opts.working_set,
            sequential_within=opts.sequential_within,
            rel=opts.rel,
        )
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
        raise vscsi_error(path, None, "", "no disk did any I/O in the histograms: nothing to model")
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
            f"layout 'vm' puts each VM's disks on one host ({counted(vms, 'VM')}, round robin over "
            "the base "
            "cluster's hosts)"
        )
    vm_count = counted(len({d.vm for d in disks}), "VM")
    summary = [("virtual disks", f"{len(groups)} with I/O, of {vm_count}")]
    return FileReading(
        path,
        NAME,
        groups,
        expect=expect,
        warnings=notes,
        facts=summary + facts,
        duration=max(windows) if windows else None,
    )
