"""fio iolog traces (``write_iolog=`` / ``read_iolog=``), versions 2 and 3.

Format (fio's HOWTO, "Trace file format"; fio's ``iolog.c``, which writes and
replays these files):

- The first line is ``fio version 2 iolog`` or ``fio version 3 iolog``
  (version 1 is not read by fio since 1.20 and not here either).
- Version 2 lines are ``FILENAME ACTION`` (file actions ``add``, ``open``,
  ``close``) or ``FILENAME ACTION OFFSET LENGTH`` (``read``, ``write``,
  ``sync``, ``datasync``, ``trim``, and ``wait``), offsets and lengths in
  bytes. A file must be added before it is used. They have no timestamps.
- Version 3 lines start with a timestamp, then as version 2 (``wait`` is
  not allowed). The HOWTO says only that the timestamp is relative to the
  start of the run; fio writes it as ``utime_since_now(io_log_start_time)``
  and sleeps for the difference between timestamps with ``usec_sleep``, so
  its unit is **microseconds** (``time_unit`` overrides it for files other
  tools wrote in another unit).
- fio itself writes ``sync_file_range`` for that kind of sync (its reader
  refuses it); it is read here as a sync.

What a row becomes: ``read``/``write`` -> READ/WRITE, ``sync``/``datasync``/
``sync_file_range`` -> SYNC, ``trim`` -> TRIM (syncs and trims are counted,
not replayed). The device is the file name. Version 2 has no clock: every
row's time is 0, the description says ``"has_times": false`` and the
imported groups replay the trace closed-loop, in file order.

Choices where fio is loose: an I/O on a file that no ``add`` line named is an
error (fio would index no file); an I/O on a file added but not open (fio
does not log the opens done before its log starts) is counted and warned
about. ``wait`` lines are counted and ignored: fio's HOWTO calls their value
microseconds since the previous wait while its replay code treats it as
milliseconds since the job began, so neither reading can be trusted.

Option: ``time_unit`` = ``us`` (default) | ``ms`` | ``ns`` | ``s``, the unit
of version 3 timestamps; it is refused for version 2 files.

The trace's description adds ``version``, ``has_times``, ``time_unit`` and
``first_timestamp`` (version 3: the first I/O's timestamp, time 0 of the
rows), ``file_actions`` (add/open/close counts), ``skipped`` (``wait`` and
``blank`` lines) and ``io_on_unopened_file``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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

__all__ = ["KIND", "NAME", "TIME_UNITS", "load", "read", "sniff"]

NAME = "fio-iolog"
KIND = "trace"

HEADERS = {"fio version 2 iolog": 2, "fio version 3 iolog": 3}
TIME_UNITS = {"us": 1_000_000, "ms": 1_000, "ns": 1_000_000_000, "s": 1}
"""Ticks per second of a version 3 timestamp, by ``time_unit`` option value."""
DEFAULT_TIME_UNIT = "us"
_IO_ACTIONS = {
    "read": READ,
    "write": WRITE,
    "sync": SYNC,
    "datasync": SYNC,
    "sync_file_range": SYNC,
    "trim": TRIM,
}
_FILE_ACTIONS = ("add", "open", "close")
_MAX_LENGTH = (1 << 32) - 1  # the trace row's size field is 32 bits


def sniff(head: str) -> bool:
    """True when the first line is fio's version 2 or 3 iolog header."""
    first = head.split("\n", 1)[0].strip()
    return first in HEADERS


def load(path: Path, options: Mapping[str, Any]) -> Trace:
    """The iolog's cached trace (parsed now if not cached yet)."""
    check_option_names(path, options, ("time_unit",), NAME)
    unit = option_choice(path, options, "time_unit", tuple(TIME_UNITS), DEFAULT_TIME_UNIT)
    return cached_trace(
        path, NAME, options, lambda builder: _fill(path, builder, unit, "time_unit" in options)
    )


def read(path: Path, options: Mapping[str, Any]) -> FileReading:
    """The iolog as one group per file; a version 2 log (no timestamps) is replayed closed-loop
    in file order."""
    trace = load(path, options)
    meta = trace.meta
    warnings = []
    ignored = meta.get("skipped", {})
    if ignored.get("wait"):
        warnings.append(
            f"{ignored['wait']:,} wait lines ignored (fio's HOWTO and replay code disagree on what "
            "their value means)"
        )
    if meta.get("io_on_unopened_file"):
        warnings.append(
            f"{meta['io_on_unopened_file']:,} I/Os on a file that was added but not open at that "
            "point (kept)"
        )
    warnings += time_order_note(meta, "I/O line")
    imported = trace_imported(path, NAME, trace, options, warnings, _example(meta.get("version")))
    if not meta.get("has_times"):
        # after the import, so that the error for a log without I/Os does not give it as a cause
        imported.warnings.append(
            "a version 2 iolog has no timestamps: every I/O is at time 0 and the trace is replayed "
            "closed-loop, in file order"
        )
        for group in imported.groups:
            group["workload"]["trace"]["replay"] = "closed"
    imported.facts.insert(0, ("iolog version", str(meta.get("version"))))
    return imported


def _example(version: int | None) -> str:
    """What the I/O lines of an iolog of ``version`` look like, for the error about a log without
    any."""
    stamp = "TIMESTAMP " if version == 3 else ""
    first = "1200 " if version == 3 else ""
    return (
        f"'{stamp}FILE add' and '{stamp}FILE open' lines after their 'fio version {version} iolog' "
        f"line, then one '{stamp}FILE read|write OFFSET LENGTH' line per I/O, e.g. "
        f"'{first}/dev/sda read 4096 4096'"
    )


def _fill(path: Path, builder: TraceBuilder, unit: str, unit_given: bool) -> dict[str, Any]:
    lines = numbered_lines(path)
    version = _version(path, next(lines, None))
    if version == 2 and unit_given:
        raise WorkloadFileError.at(
            path, None, "options.time_unit", "a version 2 iolog has no timestamps; remove time_unit"
        )
    per_second = TIME_UNITS[unit]
    # times are kept as whole ticks from the first I/O until divided, so they are exact
    first_stamp: int | None = None
    rows = RowBuffer(builder)
    order = TimeOrder(per_second, "timestamp")
    files: dict[str, bool] = {}  # added file name -> open now
    skipped: Counter[str] = Counter()
    file_actions: Counter[str] = Counter()
    unopened = 0
    first_field = 1 if version == 3 else 0
    stamp = 0
    for number, line in lines:
        fields = line.split()
        if not fields:
            skipped["blank"] += 1
            continue
        if version == 3:
            stamp = _whole(
                path,
                number,
                "timestamp",
                fields[0],
                f"a whole number of {unit} since the run began",
            )
        rest = fields[first_field:]
        if len(rest) not in (2, 4):
            layout = (
                "TIMESTAMP FILENAME ACTION [OFFSET LENGTH]"
                if version == 3
                else "FILENAME ACTION [OFFSET LENGTH]"
            )
            raise WorkloadFileError.at(
                path, number, "", f"expected {layout}, got {len(fields)} fields"
            )
        name, action = rest[0], rest[1]
        if len(rest) == 2:
            _file_action(path, number, files, name, action)
            file_actions[action] += 1
            continue
        if action == "wait":
            skipped["wait"] += 1
            continue
        op = _IO_ACTIONS.get(action)
        if op is None:
            allowed = ", ".join([*_IO_ACTIONS, "wait"])
            raise WorkloadFileError.at(
                path, number, "action", f"unknown I/O action {action!r}; fio's iolog has {allowed}"
            )
        is_open = files.get(name)
        if is_open is None:
            message = (
                f"I/O on {name!r}, which no earlier 'add' line named (fio needs '{name} add' first)"
            )
            raise WorkloadFileError.at(path, number, "filename", message)
        if not is_open:
            unopened += 1
        offset = _whole(path, number, "offset", rest[2], "bytes from the file's start")
        length = _whole(path, number, "length", rest[3], "bytes")
        if offset > MAX_OFFSET:
            raise WorkloadFileError.at(
                path,
                number,
                "offset",
                f"{offset:,} must be at most {MAX_OFFSET:,} ({MAX_OFFSET_WHY})",
            )
        if length > _MAX_LENGTH:
            raise WorkloadFileError.at(
                path,
                number,
                "length",
                f"{length} bytes is more than one I/O can be here (at most {_MAX_LENGTH})",
            )
        if first_stamp is None:
            first_stamp = stamp
        order.see_one(stamp, number)
        rows.add((stamp - first_stamp) / per_second, op, offset, length, builder.device(name))
    rows.flush()
    return {
        **order.meta(),
        "version": version,
        "has_times": version == 3,
        "time_unit": unit if version == 3 else None,
        "first_timestamp": first_stamp if version == 3 else None,
        "file_actions": dict(file_actions),
        "skipped": dict(skipped),
        "io_on_unopened_file": unopened,
    }


def _version(path: Path, first: tuple[int, str] | None) -> int:
    header = "" if first is None else first[1].strip()
    version = HEADERS.get(header)
    if version is None:
        shown = repr(header[:60]) if header else "nothing"
        raise WorkloadFileError.at(
            path,
            1,
            "header",
            "expected 'fio version 2 iolog' or 'fio version 3 iolog' as the first line, found "
            f"{shown}",
        )
    return version


def _file_action(path: Path, number: int, files: dict[str, bool], name: str, action: str) -> None:
    if action == "add":
        files.setdefault(name, False)
    elif action in ("open", "close"):
        if name not in files:
            raise WorkloadFileError.at(
                path, number, "filename", f"{action} of {name!r}, which no earlier 'add' line named"
            )
        files[name] = action == "open"
    elif action in _IO_ACTIONS:
        raise WorkloadFileError.at(
            path, number, "action", f"{action} needs OFFSET and LENGTH after it (bytes)"
        )
    else:
        raise WorkloadFileError.at(
            path,
            number,
            "action",
            f"unknown file action {action!r}; fio's iolog has {', '.join(_FILE_ACTIONS)}",
        )


def _whole(path: Path, number: int, field: str, text: str, meaning: str) -> int:
    """A non-negative decimal integer, or an error naming the line and field."""
    if not text.isdecimal():
        raise WorkloadFileError.at(
            path, number, field, f"{text!r} is not {meaning} (a whole number, 0 or more)"
        )
    return int(text)
