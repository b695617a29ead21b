"""vscsiStats CSV prints read into histograms: the section titles, the parser and the merging of
repeated prints.

Used by :mod:`.vscsistats` (the format and what each histogram counts are described there):
:func:`parse_sections` reads the ``Histogram: ...`` sections of a file,
:func:`merged_histograms` merges a histogram printed more than once per disk (``snapshots``:
``sum``, ``last`` or ``auto``).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from simcache.base.errors import WorkloadFileError, plural
from simcache.traces.formats.base import numbered_lines

COLLECT = (
    "collect them all with `vscsiStats -s -w <worldGroupID>`, then `vscsiStats -p all -c -w "
    "<worldGroupID>`"
)

TITLE_OF: dict[tuple[str, str], str] = {
    ("length", "any"): "IO lengths of commands",
    ("length", "read"): "IO lengths of Read commands",
    ("length", "write"): "IO lengths of Write commands",
    ("seek", "any"): "distance (in LBNs) between successive commands",
    ("seek", "read"): "distance (in LBNs) between successive Read commands",
    ("seek", "write"): "distance (in LBNs) between successive Write commands",
    ("seek16", "any"): "distance (in LBNs) between each command from the closest of previous 16",
    ("latency", "any"): "latency of IOs in Microseconds (us)",
    ("latency", "read"): "latency of Read IOs in Microseconds (us)",
    ("latency", "write"): "latency of Write IOs in Microseconds (us)",
    ("outstanding", "any"): "number of outstanding IOs when a new IO is issued",
    ("outstanding", "read"): "number of outstanding Read IOs when a new Read IO is issued",
    ("outstanding", "write"): "number of outstanding Write IOs when a new Write IO is issued",
    ("interarrival", "any"): "latency of IO interarrival time in Microseconds (us)",
    ("interarrival", "read"): "latency of IO interarrival time for Reads in Microseconds (us)",
    ("interarrival", "write"): "latency of IO interarrival time for Writes in Microseconds (us)",
}
"""(what a histogram counts, which commands) -> its title as vscsiStats prints it."""
TITLES = {title.lower(): kind_op for kind_op, title in TITLE_OF.items()}
"""The same, by lower-case title (titles are matched without regard to case)."""

STAT_NAMES = ("min", "max", "mean", "count")
FREQUENCY_HEADER = "frequency,histogram bucket limit"

_HANDLE = re.compile(r"^\s*(?P<id>[^\s(]+)\s*(?:\((?P<device>[^)]*)\))?\s*$")


@dataclass(frozen=True)
class Disk:
    """One virtual disk: its VM's worldGroupID, its handleID and device name (``scsi0:0``)."""

    vm: str
    handle: str
    device: str

    @property
    def label(self) -> str:
        return f"VM {self.vm} disk {self.device or self.handle}"


@dataclass
class Histogram:
    """One printed histogram: its summary lines and buckets (``limits[i]`` is bucket i's largest
    value)."""

    title: str
    line: int
    """The line of its title (of the first print, when several were merged)."""
    stats: dict[str, float] = field(default_factory=dict)
    counts: list[int] = field(default_factory=list)
    limits: list[float] = field(default_factory=list)

    @property
    def count(self) -> int:
        return int(self.stats["count"])

    @property
    def mean(self) -> float:
        return self.stats["mean"]

    @property
    def overflow(self) -> bool:
        """The last row repeats the limit before it: it counts everything above that limit."""
        return len(self.limits) >= 2 and self.limits[-1] == self.limits[-2]

    def buckets(self) -> Iterator[tuple[float | None, float | None, int]]:
        """(lower edge exclusive or None, limit or None for the overflow bucket, count) per
        bucket."""
        for i, (count, limit) in enumerate(zip(self.counts, self.limits, strict=True)):
            lower = self.limits[i - 1] if i else None
            if self.overflow and i == len(self.limits) - 1:
                yield lower, None, count
            else:
                yield lower, limit, count


# ---------------------------------------------------------------- parsing


@dataclass
class ParsedSections:
    sections: dict[tuple[Disk, str], list[Histogram]] = field(default_factory=dict)
    unknown: dict[str, int] = field(default_factory=dict)
    """Unknown title -> its first line."""
    stray: list[int] = field(default_factory=list)
    """Lines outside any section that are not blank."""


def vscsi_error(path: Path, line: int | None, where: str, message: str) -> WorkloadFileError:
    return WorkloadFileError.at(path, line, where, message)


def _title(path: Path, number: int, text: str) -> tuple[str, Disk]:
    fields = [f.strip() for f in text.split(",")]
    title = fields[0][len("Histogram:") :].strip()
    keys = {k.lower(): i for i, k in enumerate(fields)}
    vm_at, disk_at = keys.get("virtual machine worldgroupid"), keys.get("virtual disk handleid")
    form = (
        "expected 'Histogram: <title>,virtual machine worldGroupID,<id>,virtual disk handleID,<id> "
        "(<device>)'"
    )
    if (
        not title
        or vm_at is None
        or disk_at is None
        or vm_at + 1 >= len(fields)
        or disk_at + 1 >= len(fields)
    ):
        raise vscsi_error(path, number, "Histogram title", f"{form}, got {text!r}")
    handle = _HANDLE.match(fields[disk_at + 1])
    if not fields[vm_at + 1] or handle is None:
        raise vscsi_error(path, number, "Histogram title", f"{form}, got {text!r}")
    return title, Disk(
        fields[vm_at + 1], handle.group("id"), (handle.group("device") or "").strip()
    )


def _number(
    path: Path, number: int, where: str, text: str, form: str, *, whole: bool = False
) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (whole and (value != int(value) or value < 0)):
        kind = "a whole number of at least 0" if whole else "a number"
        raise vscsi_error(path, number, where, f"expected {form} with {kind}, got {text!r}")
    return value


def parse_sections(path: Path) -> ParsedSections:
    parsed = ParsedSections()
    current: Histogram | None = None
    state = "outside"  # outside -> stats -> rows
    for number, raw in numbered_lines(path):
        text = raw.strip()
        if text.startswith("Histogram:"):
            _close(path, current, state)
            title, disk = _title(path, number, text)
            current, state = Histogram(title, number), "stats"
            if title.lower() not in TITLES:
                parsed.unknown.setdefault(title, number)
            parsed.sections.setdefault((disk, title.lower()), []).append(current)
        elif not text:
            continue
        elif current is None:
            parsed.stray.append(number)
        elif state == "stats":
            state = _stat_line(path, number, text, current)
        else:
            _bucket_row(path, number, text, current)
    _close(path, current, state)
    if not parsed.sections:
        raise vscsi_error(
            path, None, "", f"no 'Histogram: ...' sections: not a vscsiStats CSV print; {COLLECT}"
        )
    return parsed


def _stat_line(path: Path, number: int, text: str, histogram: Histogram) -> str:
    """A ``min``/``max``/``mean``/``count`` line or the frequency header; the parser's next
    state."""
    if text.lower().replace(" ", "") == FREQUENCY_HEADER.replace(" ", ""):
        missing = [name for name in STAT_NAMES if name not in histogram.stats]
        if missing:
            raise vscsi_error(
                path,
                number,
                "Frequency header",
                f"{', '.join(missing)} {plural(len(missing), 'line')} missing before "
                "it (a section gives min, max, mean, count)",
            )
        return "rows"
    name, _, value = (part.strip() for part in text.partition(","))
    name = name.lower()
    if name not in STAT_NAMES:
        raise vscsi_error(
            path,
            number,
            "section",
            "expected min, max, mean, count or 'Frequency,Histogram Bucket Limit' after a title, "
            f"got {text!r}",
        )
    if name in histogram.stats:
        raise vscsi_error(
            path,
            number,
            name,
            f"a second {name} line in the section of line {histogram.line}; a section gives each "
            "once",
        )
    histogram.stats[name] = _number(
        path, number, name, value, f"'{name},<value>'", whole=name == "count"
    )
    return "stats"


def _plain(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _bucket_row(path: Path, number: int, text: str, histogram: Histogram) -> None:
    form = "'<count>,<limit>'"
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise vscsi_error(path, number, "Frequency row", f"expected {form}, got {text!r}")
    count = _number(path, number, "Frequency row", parts[0], form, whole=True)
    limit = _number(path, number, "Frequency row", parts[1], form)
    if histogram.limits and limit < histogram.limits[-1]:
        raise vscsi_error(
            path,
            number,
            "Histogram Bucket Limit",
            f"limits must not decrease: {parts[1]} after {_plain(histogram.limits[-1])}",
        )
    if histogram.overflow:
        raise vscsi_error(
            path,
            number,
            "Frequency row",
            "a row after the overflow row (the one repeating the limit before it)",
        )
    histogram.counts.append(int(count))
    histogram.limits.append(limit)


def _close(path: Path, histogram: Histogram | None, state: str) -> None:
    if histogram is not None and (state != "rows" or not histogram.counts):
        raise vscsi_error(
            path,
            histogram.line,
            "Histogram section",
            "ends before any 'Frequency,Histogram Bucket Limit' rows",
        )


# ---------------------------------------------------------------- snapshots


def _merge(path: Path, prints: list[Histogram], how: str) -> Histogram:
    if how == "last" or len(prints) == 1:
        return replace(prints[-1], line=prints[0].line)
    first = prints[0]
    for other in prints[1:]:
        if other.limits != first.limits:
            raise vscsi_error(
                path,
                other.line,
                "Histogram Bucket Limit",
                f"bucket limits differ from the same histogram's at line {first.line}",
            )
    total = sum(p.count for p in prints)
    stats = {
        "min": min(p.stats["min"] for p in prints),
        "max": max(p.stats["max"] for p in prints),
        "mean": sum(p.mean * p.count for p in prints) / total if total else 0.0,
        "count": float(total),
    }
    counts = [sum(column) for column in zip(*(p.counts for p in prints), strict=True)]
    return Histogram(first.title, first.line, stats, counts, list(first.limits))


def _cumulative(prints: list[Histogram]) -> bool:
    """Every bucket and the count only grow from one print to the next (vscsiStats printed
    without -r between)."""
    return all(
        later.count >= earlier.count
        and all(b >= a for a, b in zip(earlier.counts, later.counts, strict=False))
        for earlier, later in itertools.pairwise(prints)
    )


def merged_histograms(
    path: Path, parsed: ParsedSections, how: str, warnings: list[str]
) -> dict[Disk, dict[tuple[str, str], Histogram]]:
    repeated = {key: prints for key, prints in parsed.sections.items() if len(prints) > 1}
    if repeated:
        if how == "auto":
            how = "last" if all(_cumulative(p) for p in repeated.values()) else "sum"
        most = max(len(p) for p in repeated.values())
        meaning = (
            "cumulative prints: the last one used"
            if how == "last"
            else "prints reset with -r between them: added up"
        )
        warnings.append(
            f"histograms are printed up to {most} times per disk; taken as {meaning} (option "
            'snapshots = "sum" or "last")'
        )
    disks: dict[Disk, dict[tuple[str, str], Histogram]] = {}
    for (disk, title), prints in parsed.sections.items():
        if title in TITLES:
            disks.setdefault(disk, {})[TITLES[title]] = _merge(path, prints, how)
    return disks
