"""blkparse text output (Linux block-layer traces from blktrace) as a trace.

Format (blkparse(1) man page; blktrace's ``blkparse_fmt.c``, which prints
every line, and ``blkparse.c``, which prints the summary):

- Each event line starts with the header ``%3d,%-3d %2d %8d %5d.%09lu %5u
  %2s %3s``: ``MAJ,MIN`` device, CPU, sequence number, timestamp (seconds
  and nanoseconds since the trace began), PID, action, RWBS.
- Then, for Q (queued), D (issued to the driver), I (inserted), B (bounced),
  C (completed), R (requeued), M/F (back/front merge), G (get request) and
  S (sleep): ``SECTOR + NSECTORS`` in 512-byte sectors, then ``[PROCESS]``
  (or ``[ERROR]`` after a C or R); with ``-t``, ``(ELAPSED)`` before it. A
  request without sectors (a flush) shows no ``SECTOR + NSECTORS`` (C and R
  show the sector alone); SCSI pass-through requests show bytes and a CDB
  instead. P/U/T (plug, unplug), A (remap), X (split) and m (message) lines
  have other tails.
- RWBS: an optional leading F (pre-flush), then D (discard), W (write), R
  (read) or N (no data), then F (FUA), A (read-ahead), S (sync), M (metadata).
- At the end blkparse prints summary blocks (``CPU0 (8,0):``, ``Total
  (8,0):``, ``Throughput (R/W):``, ``Events (8,0):``, ``Skips:``, and the
  per-process blocks of ``-s``). Reading stops at the first of them.

Only blkparse's default output is read (``-f``/``-F`` formats are not).
blkparse merges its per-CPU streams by time, but lines can still arrive
out of order (slightly, or wholly when per-CPU outputs are concatenated). A
first pass reads only the timestamps; when any line is earlier than one above
it, the event lines are held in memory and handled in time order (stably, so
lines of one timestamp keep the file's order), so that each C meets the D or
Q of its (device, sector) before it and the latencies are right. The trace
description counts those lines (``out_of_order``, ``first_out_of_order``) and
:func:`read` says they were sorted.

Option ``event`` picks which events become I/Os:

- ``D`` (default): requests issued to the device. Latency = the C time
  minus the D time of the same (device, sector) request: device service
  time. A requeue (R) cancels the pending D; the request is issued again
  later by another D, which counts.
- ``Q``: bios queued by the upper layers (what the application asked for).
  Latency = C time minus Q time. A bio merged into another request (M/F)
  has no C of its own: it is kept with no latency and counted.
- ``C``: completions, at their completion time, with the D-to-C latency when
  the D was seen.

A flush (RWBS starting with F and no sectors) of the chosen event becomes a
SYNC row (counted, not replayed). Requests that never complete are kept with
no latency; at most :data:`MAX_PENDING` requests wait for their completion,
the oldest losing its latency beyond that (counted).

The trace's description adds ``event``, ``has_times`` (true),
``first_timestamp`` (blkparse's clock at time 0: the first event of the
chosen kind), ``summary_line`` (where the summary began, or null),
``events`` (lines by action) and ``not_used`` (what did not become an I/O or
a latency, by reason); :func:`read` lists ``not_used`` in one warning.
"""

from __future__ import annotations

import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from simcache.base.errors import WorkloadFileError
from simcache.traces.formats.base import (
    FileReading,
    cached_trace,
    check_option_names,
    numbered_lines,
    option_choice,
    trace_imported,
)
from simcache.traces.formats.rows import RowBuffer, TimeOrder, time_order_note
from simcache.traces.trace import (
    MAX_OFFSET,
    MAX_OFFSET_WHY,
    READ,
    SYNC,
    TRIM,
    WRITE,
    Trace,
    TraceBuilder,
)

__all__ = ["EVENTS", "KIND", "MAX_PENDING", "NAME", "SECTOR_BYTES", "load", "read", "sniff"]

NAME = "blkparse"
KIND = "trace"

EVENTS = ("D", "Q", "C")
"""Values of the ``event`` option: issue (default), queue, completion."""
SECTOR_BYTES = 512
MAX_PENDING = 1 << 20
"""Requests waiting for their completion at most; the oldest loses its latency beyond this."""

_HEADER_FIELDS = ("device", "cpu", "sequence", "timestamp", "pid", "action", "rwbs")
_DEVICE = re.compile(r"\d+,\d+$")
_EVENT_LINE = re.compile(r"\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+[A-Za-z]{1,2}\s+[A-Z]+(\s|$)")
_SUMMARY = re.compile(
    r"(CPU\d+|Total) \(.*\):\s*$|Throughput \(R/W\):|Events \(.*\): |Skips: |\S.* \(\d+(, "
    r"\.\.\.)?\)\s*$"
)
_RWBS_LETTERS = frozenset("FDWRNASMEB")
_DATA_OPS = {"R": READ, "W": WRITE, "D": TRIM}
# actions whose tail is SECTOR + NSECTORS (or no sectors at all)
_SECTOR_ACTIONS = frozenset("QDICRMFGSB")
_MAX_SECTORS = ((1 << 32) - 1) // SECTOR_BYTES  # the trace row's size field is 32 bits
_MAX_SECTOR = MAX_OFFSET // SECTOR_BYTES


class _Request(NamedTuple):
    """An I/O waiting for its completion."""

    time: int
    """Nanoseconds on blkparse's clock."""
    op: int
    offset: int
    size: int
    device: int


def sniff(head: str) -> bool:
    """True when the first lines (up to five) are all blkparse event lines."""
    # the last piece may be cut off
    lines = [line for line in head.split("\n")[:-1] if line.strip()][:5]
    return bool(lines) and all(_EVENT_LINE.match(line) for line in lines)


def load(path: Path, options: Mapping[str, Any]) -> Trace:
    """The blkparse output's cached trace (parsed now if not cached yet)."""
    check_option_names(path, options, ("event",), NAME)
    event = option_choice(path, options, "event", EVENTS, "D")
    return cached_trace(path, NAME, options, lambda builder: _Parser(path, builder, event).run())


def read(path: Path, options: Mapping[str, Any]) -> FileReading:
    """The trace as one group per device, with one warning listing what was not used."""
    trace = load(path, options)
    meta = trace.meta
    unused = [f"{count:,} {what}" for what, count in meta.get("not_used", {}).items() if count]
    warnings = time_order_note(meta, "event line")
    if meta.get("out_of_order"):
        warnings[0] += " (each completion was matched to its request after sorting)"
    if unused:
        warnings.append(f"not turned into I/Os: {'; '.join(unused)}")
    event = meta["event"]
    example = (
        f"one event line per I/O as blkparse prints them by default, {event} events with "
        f"SECTOR + NSECTORS (the event option picks D, Q or C), e.g. "
        f"'8,0 1 1 0.000100000 1234 {event} R 2048 + 8 [fio]'"
    )
    imported = trace_imported(path, NAME, trace, options, warnings, example)
    imported.facts.insert(0, ("event", f"{meta['event']} ({_EVENT_NAMES[meta['event']]})"))
    return imported


_EVENT_NAMES = {"D": "issued to the device", "Q": "queued", "C": "completed"}


def _nanoseconds(fields: list[str]) -> int:
    """An event line's timestamp in nanoseconds, for ordering; -1 when it is not
    SECONDS.NANOSECONDS (the line is refused when handled, naming it)."""
    seconds, _, nanos = fields[3].partition(".") if len(fields) > 3 else ("", "", "")
    if not (seconds.isdecimal() and nanos.isdecimal() and len(nanos) <= 9):
        return -1
    return int(seconds) * 1_000_000_000 + int(nanos.ljust(9, "0"))


class _Parser:
    """One pass over the file: header checks, the pending-request table and the rows."""

    def __init__(self, path: Path, builder: TraceBuilder, event: str):
        self.path = path
        self.builder = builder
        self.event = event
        self.start = "Q" if event == "Q" else "D"  # the event a latency is measured from
        # the actions this event's rows and latencies come from
        self.used = frozenset("QCMF" if event == "Q" else "DCR")
        self.rows = RowBuffer(builder)
        self.pending: OrderedDict[tuple[int, int], _Request] = OrderedDict()
        self.counts: Counter[str] = Counter()
        self.not_used: Counter[str] = Counter()
        self.summary_line: int | None = None
        """Where blkparse's summary blocks begin (reading stops there), if they do."""
        self.origin: int | None = None
        """Nanoseconds of blkparse's clock at the first event of the chosen kind: time 0 of the
        rows (kept whole, so exact)."""

    def run(self) -> dict[str, Any]:
        order = TimeOrder(1e9, "timestamp")
        for number, fields in self._event_lines():
            order.see_one(_nanoseconds(fields), number)
        events = self._event_lines()
        if order.late_rows:
            events = iter(sorted(events, key=lambda event: _nanoseconds(event[1])))
        for number, fields in events:
            self._line(number, fields)
        for request in self.pending.values():
            self._lost(request, "requests never completed (kept, no latency)")
        self.pending.clear()
        self.rows.flush()
        return {
            "event": self.event,
            "has_times": True,
            "first_timestamp": None
            if self.origin is None
            else f"{self.origin // 1_000_000_000}.{self.origin % 1_000_000_000:09d}",
            "summary_line": self.summary_line,
            "events": dict(self.counts),
            "not_used": {what: n for what, n in self.not_used.items() if n},
            **order.meta(),
        }

    def _event_lines(self) -> Iterator[tuple[int, list[str]]]:
        """(line number, fields) of each event line, up to the summary blocks (whose first line
        becomes :attr:`summary_line`); a line that is neither raises."""
        for number, line in numbered_lines(self.path):
            fields = line.split()
            if not fields:
                continue
            if not _DEVICE.match(fields[0]):
                if _SUMMARY.match(line):
                    self.summary_line = number
                    return
                raise WorkloadFileError.at(
                    self.path,
                    number,
                    "device",
                    f"{fields[0][:40]!r} does not start a blkparse event line (MAJ,MIN CPU SEQ "
                    "SECONDS.NANOSECONDS PID ACTION RWBS ...); "
                    "only blkparse's default output is read",
                )
            yield number, fields

    def _line(self, number: int, fields: list[str]) -> None:
        if len(fields) < len(_HEADER_FIELDS):
            missing = _HEADER_FIELDS[len(fields)]
            raise WorkloadFileError.at(
                self.path,
                number,
                missing,
                f"missing: an event line has {', '.join(_HEADER_FIELDS)} first",
            )
        device, cpu, sequence, stamp, pid, action, rwbs = fields[:7]
        if not (cpu.isdecimal() and sequence.isdecimal() and pid.isdecimal()):
            name, value = next(
                (n, v)
                for n, v in (("cpu", cpu), ("sequence", sequence), ("pid", pid))
                if not v.isdecimal()
            )
            raise WorkloadFileError.at(self.path, number, name, f"{value!r} is not a whole number")
        seconds, dot, nanos = stamp.partition(".")
        if not (dot and seconds.isdecimal() and nanos.isdecimal() and len(nanos) <= 9):
            raise WorkloadFileError.at(
                self.path,
                number,
                "timestamp",
                f"{stamp!r} is not SECONDS.NANOSECONDS (e.g. 12.000345678)",
            )
        if not (action.isalpha() and len(action) <= 2):
            raise WorkloadFileError.at(
                self.path,
                number,
                "action",
                f"{action!r} is not a blkparse action (Q, D, C, M, ...)",
            )
        self.counts[action] += 1
        if action not in _SECTOR_ACTIONS:
            self.not_used[f"{action} events"] += 1
            return
        if not _RWBS_LETTERS.issuperset(rwbs):
            raise WorkloadFileError.at(
                self.path,
                number,
                "rwbs",
                f"{rwbs!r} has letters other than {''.join(sorted(_RWBS_LETTERS))}",
            )
        sector, sectors = self._sectors(number, fields)
        if action not in self.used:
            return
        time = int(seconds) * 1_000_000_000 + int(nanos.ljust(9, "0"))
        if self.origin is None and action == self.event:
            self.origin = time
        flush = rwbs[0] == "F"
        op = _DATA_OPS.get(rwbs[1] if flush and len(rwbs) > 1 else rwbs[0])
        code = self.builder.device(device)
        if not sectors or op is None:
            if action != self.event:
                return
            if flush:
                self._emit(_Request(time, SYNC, 0, 0, code), None)
            else:
                self.not_used[f"{action} events without data sectors (pass-through or RWBS N)"] += 1
            return
        self._event(
            action,
            time,
            _Request(time, op, sector * SECTOR_BYTES, sectors * SECTOR_BYTES, code),
            sector,
        )

    def _sectors(self, number: int, fields: list[str]) -> tuple[int, int]:
        """(first sector, sector count) of the event's tail; count 0 when the tail has no
        ``SECTOR + NSECTORS``."""
        tail = fields[7:]
        # a process name may hold " + "
        if len(tail) >= 2 and tail[1] == "+" and tail[0][0] not in "[(":
            if len(tail) < 3 or not tail[2].isdecimal():
                found = repr(tail[2]) if len(tail) > 2 else "nothing"
                raise WorkloadFileError.at(
                    self.path,
                    number,
                    "nsectors",
                    f"expected a sector count after '+', found {found}",
                )
            if not tail[0].isdecimal():
                raise WorkloadFileError.at(
                    self.path, number, "sector", f"{tail[0]!r} is not a sector number"
                )
            sectors = int(tail[2])
            if sectors > _MAX_SECTORS:
                raise WorkloadFileError.at(
                    self.path,
                    number,
                    "nsectors",
                    f"{sectors} sectors is more than one I/O can be here",
                )
            sector = int(tail[0])
            if sector > _MAX_SECTOR:
                raise WorkloadFileError.at(
                    self.path,
                    number,
                    "sector",
                    f"{sector:,} must be at most {_MAX_SECTOR:,} (512-byte sectors: "
                    f"{MAX_OFFSET_WHY})",
                )
            return sector, sectors
        if tail and not (tail[0].isdecimal() or tail[0][0] in "[("):
            raise WorkloadFileError.at(
                self.path,
                number,
                "sector",
                f"expected SECTOR + NSECTORS or [PROCESS], found {tail[0]!r}",
            )
        return 0, 0

    def _event(self, action: str, time: int, request: _Request, sector: int) -> None:
        key = (request.device, sector)
        if action == self.start:
            previous = self.pending.pop(key, None)
            if previous is not None:  # issued again with no completion or requeue seen between
                self._lost(previous, "requests issued again before completing (kept, no latency)")
            self.pending[key] = request
            if len(self.pending) > MAX_PENDING:
                self._lost(
                    self.pending.popitem(last=False)[1],
                    f"requests still pending beyond {MAX_PENDING:,} (kept, no latency)",
                )
        elif action == "C":
            self._complete(time, request, key)
        elif action == "R" and self.start == "D":
            if self.pending.pop(key, None) is not None:
                self.not_used["requeues (the request is issued again later)"] += 1
        elif action in "MF" and self.event == "Q":
            self._merge(action, request, key)

    def _complete(self, time: int, request: _Request, key: tuple[int, int]) -> None:
        started = self.pending.pop(key, None)
        if self.event == "C":
            if started is None:
                self.not_used["completions without a D (kept, no latency)"] += 1
            self._emit(request, None if started is None else time - started.time)
        elif started is not None:
            self._emit(started, time - started.time)
        else:
            self.not_used[f"completions without a {self.start}"] += 1

    def _merge(self, action: str, bio: _Request, key: tuple[int, int]) -> None:
        """A queued bio joined another request: it completes as part of that one, so it gets no
        latency."""
        merged = self.pending.pop(key, None)
        if merged is None:
            self.not_used["merges of bios not seen queued"] += 1
            return
        self._lost(merged, "bios merged into another request (kept, no latency)")
        # the request it joined now starts at this bio's sector: its C will name that sector
        if action == "F":
            joined = self.pending.pop((key[0], key[1] + bio.size // SECTOR_BYTES), None)
            if joined is not None:
                self.pending[key] = joined

    def _lost(self, request: _Request, why: str) -> None:
        """A started request whose completion will not be matched: an I/O without latency (a lost
        D when rows are completions)."""
        if self.event == "C":
            self.not_used["issues never matched to a completion"] += 1
        else:
            self._emit(request, None)
            self.not_used[why] += 1

    def _emit(self, request: _Request, latency: int | None) -> None:
        """One row: ``request`` at its time from the origin, ``latency`` in nanoseconds
        (``None``: unknown)."""
        origin = request.time if self.origin is None else self.origin
        seconds = math.nan if latency is None else latency / 1e9
        self.rows.add(
            (request.time - origin) / 1e9,
            request.op,
            request.offset,
            request.size,
            request.device,
            seconds,
        )
