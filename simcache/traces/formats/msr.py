"""SNIA MSR-Cambridge block traces: one CSV line per I/O, no header.

Fields, as the traces' README (SNIA IOTTA repository, "MSR Cambridge Traces",
iotta.snia.org/traces/block-io/388, README.txt section 3) gives them:
``Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime``. Timestamp
is when the I/O was issued as a Windows FILETIME: 100 ns intervals since
1601-01-01 UTC (Microsoft, [MS-DTYP] 2.3.3 FILETIME); Type is ``Read`` or
``Write`` (accepted in any case here); Offset and Size are bytes from the
start of the logical disk; ResponseTime is the time the I/O took, in the same
100 ns units. The traces come from Narayanan, Donnelly and Rowstron, "Write
Off-Loading: Practical Power Management for Enterprise Storage", FAST 2008.

Each (Hostname, DiskNumber) pair is a trace device named ``"host:disk"``
(``"usr:0"``). Times are seconds from the earliest I/O: ticks are subtracted
as integers before dividing, because a FILETIME (about 1.28e17 in 2007) has
no room left in a float64 for the 100 ns digits. That earliest I/O's date is
kept in the trace description as ``origin_utc`` (ISO 8601, 100 ns digits).
ResponseTime becomes the trace's measured latency in seconds.

The format takes no options.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcache.traces.formats.base import (
    FileReading,
    cached_trace,
    check_option_names,
    read_head,
    trace_imported,
)
from simcache.traces.formats.csv_rows import RowChunks
from simcache.traces.formats.rows import TimeOrder, time_order_note
from simcache.traces.trace import (
    MAX_OFFSET,
    MAX_OFFSET_WHY,
    READ,
    WRITE,
    Trace,
    TraceBuilder,
    TraceChunk,
)

__all__ = ["KIND", "NAME", "load", "read", "sniff"]

NAME = "msr"
KIND = "trace"

FIELDS = ("Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime")
TICKS_PER_SECOND = 10_000_000
"""FILETIME and ResponseTime count 100 ns intervals."""
_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)
_LAST_TICK = (
    (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1) * 10
)
"""The last FILETIME a date can show (the end of year 9999)."""
_MAX_SIZE = int(np.iinfo(np.uint32).max)
_OPS = {"read": READ, "write": WRITE}
_LINE = re.compile(
    r"\s*(\d{17,19}),([^,]+),\s*(\d+),\s*(read|write),\s*(\d+),\s*(\d+),\s*(\d+)\s*", re.IGNORECASE
)
"""A line as sniffing expects it: a FILETIME of 17 to 19 digits (a date from 1633 on), then the
six fields."""
_HEADER = re.compile(
    r"\s*timestamp\s*,\s*hostname\s*,\s*disknumber\s*,\s*type\s*,\s*offset\s*,\s*size\s*,"
    r"\s*responsetime\s*",
    re.IGNORECASE,
)
"""The header line some copies of the traces start with (the columns' names): skipped."""


def sniff(head: str) -> bool:
    """Seven comma-separated fields: a FILETIME-sized integer, a host, a disk number, Read/Write,
    then three integers."""
    lines = [line for line in head.splitlines() if line.strip()]
    if len(lines) > 1 and not head.endswith(("\n", "\r")):
        lines.pop()  # the head may end inside a line
    if lines and _HEADER.fullmatch(lines[0]):
        lines.pop(0)  # a copy with the columns' names first
    return bool(lines) and all(_LINE.fullmatch(line) for line in lines[:6])


def load(path: Path, options: Mapping[str, Any]) -> Trace:
    """The trace's rows (parsed once, then from the cache): see the module docstring for the
    mapping."""
    check_option_names(path, options, (), NAME)
    return cached_trace(path, NAME, options, lambda builder: _fill(path, builder))


def read(path: Path, options: Mapping[str, Any]) -> FileReading:
    """One group per (host, disk) device, replaying its I/Os at their timestamps."""
    trace = load(path, options)
    warnings = []
    if trace.meta.get("empty_lines"):
        warnings.append(f"{trace.meta['empty_lines']:,} empty lines skipped")
    if trace.meta.get("zero_size"):
        warnings.append(
            f"{trace.meta['zero_size']:,} I/O{'' if trace.meta['zero_size'] == 1 else 's'} of "
            "Size 0 dropped (they move no data; replayed, "
            "they would count in IOPS and latency)"
        )
    warnings += time_order_note(trace.meta)
    imported = trace_imported(path, NAME, trace, options, warnings, _EXAMPLE)
    if trace.meta.get("origin_utc"):
        imported.facts.append(("first I/O", trace.meta["origin_utc"]))
    return imported


_EXAMPLE = (
    f"one line per I/O, {','.join(FIELDS)}, e.g. 128166372003061629,usr,0,Read,4096,4096,1000 "
    "(Type is Read or Write)"
)


def _fill(path: Path, builder: TraceBuilder) -> dict[str, Any]:
    first = read_head(path).splitlines()[:1]
    chunks = RowChunks(path, FIELDS, skip_lines=1 if first and _HEADER.fullmatch(first[0]) else 0)
    first_tick: int | None = None
    earliest = 0
    device_names: dict[tuple[str, int], int] = {}
    order = TimeOrder(TICKS_PER_SECOND, "Timestamp")
    zero_size = 0
    for rows in chunks:
        # every column checked, so that the earliest bad line is the one reported
        ticks, disks, ops, offsets, sizes, response, (hosts, host_names) = rows.earliest(
            partial(
                rows.integers,
                0,
                "a Windows FILETIME (100 ns ticks since 1601-01-01 UTC)",
                maximum=_LAST_TICK,
                limit="the end of year 9999",
            ),
            partial(rows.integers, 2, "a disk number (a whole number)"),
            partial(rows.codes, 3, _op_code, "Read or Write"),
            partial(
                rows.integers,
                4,
                "a whole number of bytes",
                maximum=MAX_OFFSET,
                limit=MAX_OFFSET_WHY,
            ),
            partial(
                rows.integers,
                5,
                "a whole number of bytes",
                maximum=_MAX_SIZE,
                limit="the largest I/O a trace row holds",
            ),
            partial(rows.integers, 6, "a whole number of 100 ns ticks"),
            partial(rows.categories, 1),
        )
        order.see(ticks, rows.lines())
        # a zero-size I/O moves no data: dropped and counted, as blkparse's D events without
        # sectors are (review 65, 11)
        has_data = sizes > 0
        zero_size += int(len(has_data) - has_data.sum())
        if first_tick is None:
            first_tick = earliest = int(ticks[0])
        earliest = min(earliest, int(ticks.min()))
        disk_codes, disk_numbers = pd.factorize(disks)
        pairs, pair_keys = pd.factorize(hosts * len(disk_numbers) + disk_codes)
        table = np.array(
            [
                _device(
                    builder,
                    device_names,
                    host_names[key // len(disk_numbers)],
                    int(disk_numbers[key % len(disk_numbers)]),
                )
                for key in pair_keys
            ],
            dtype=np.int64,
        )
        builder.add(
            TraceChunk(
                time=(ticks[has_data] - first_tick) / TICKS_PER_SECOND,
                op=ops[has_data].astype(np.uint8),
                offset=offsets[has_data],
                size=sizes[has_data],
                device=table[pairs][has_data],
                latency=response[has_data] / TICKS_PER_SECOND,
            )
        )
    return {
        "origin_utc": _utc(earliest) if first_tick is not None else None,
        "empty_lines": chunks.empty_lines,
        "zero_size": zero_size,
        **order.meta(),
    }


def _op_code(text: str) -> int | None:
    """The trace op of a Type field (``Read``, ``Write``, any case), or None."""
    return _OPS.get(text.lower())


def _device(builder: TraceBuilder, known: dict[tuple[str, int], int], host: str, disk: int) -> int:
    key = (host, disk)
    code = known.get(key)
    if code is None:
        code = known[key] = builder.device(f"{host}:{disk}")
    return code


def _utc(ticks: int) -> str:
    """A FILETIME as an ISO 8601 UTC date with its 100 ns digits
    (``2007-02-22T00:00:00.0000000Z``)."""
    seconds, fraction = divmod(ticks, TICKS_PER_SECOND)
    return f"{_EPOCH + timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%S}.{fraction:07d}Z"
