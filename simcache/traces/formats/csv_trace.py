"""A block trace from any delimited text file with named columns: the way in for traces with no
importer of their own.

Each line is one I/O. The columns the importer uses, by their default names
(matched without regard to case or surrounding spaces):

| column | what | default unit | |---|---|---| | ``time`` | when the I/O was issued; absolute or
relative (the first line's time becomes 0) | ``time_unit`` (s) | | ``op`` | read (``R``, ``read``),
write (``W``, ``write``), sync (``sync``, ``flush``), trim (``trim``, ``discard``); any case | | |
``offset`` or ``lba`` | where on the device | ``offset_unit``: bytes for ``offset``, 512 B sectors
for ``lba`` | | ``size`` | how much | ``size_unit`` (bytes) | | ``device`` | optional: which device
(any text); one device named ``disk`` without it | | | ``latency`` | optional: how long the I/O
took, as measured (empty = not measured) | ``latency_unit`` (as ``time_unit``) |

Other columns are listed in one warning. Options (all scalar, so a scenario's
``trace.options`` table can hold them):

- ``header`` (default true): the first line names the columns. With
  ``header = false``, ``columns`` names them by position instead:
  ``columns = "time,op,lba,size"`` (an empty name or ``-`` leaves a column unused).
- ``time_column``, ``op_column``, ``offset_column``, ``lba_column``,
  ``size_column``, ``device_column``, ``latency_column``: the name of the
  column holding each (``time_column = "timestamp_us"``). Naming
  ``lba_column`` reads positions as LBAs (512 B sectors unless ``offset_unit`` says).
- ``time_unit``, ``latency_unit``: ``s``, ``ms``, ``us`` (or ``µs``), ``ns``.
- ``offset_unit``, ``size_unit``: ``B``, ``sector`` (512 B) or a size such as
  ``4KiB`` (one unit of the column is that many bytes).
- ``read_values``, ``write_values``: comma-separated op values meaning read
  and write, replacing the defaults ``R,read`` and ``W,write`` (e.g. a trace
  writing 1 for read and 0 for write: ``read_values = "1"``, ``write_values = "0"``).
  Numeric op codes are not guessed: conventions differ between tools.
- ``delimiter`` (default ``,``, or a tab when the header line has tabs and no comma): one
  character, or ``tab``.

Offsets and sizes must be whole numbers of their unit; times and latencies
may have fractions. Timestamps given as integers (e.g. ns since the epoch) are
subtracted as integers before scaling, so no digits are lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from simcache.base.errors import WorkloadFileError
from simcache.base.units import UnitError, parse_size
from simcache.traces.formats.base import (
    FileReading,
    cached_trace,
    check_option_names,
    numbered_lines,
    trace_imported,
)
from simcache.traces.formats.csv_rows import RowChunks, Rows, option_text, split_line
from simcache.traces.formats.rows import TimeOrder, time_order_note
from simcache.traces.trace import (
    MAX_OFFSET,
    MAX_OFFSET_WHY,
    READ,
    SYNC,
    TRIM,
    WRITE,
    Trace,
    TraceBuilder,
    TraceChunk,
)

__all__ = ["KIND", "NAME", "load", "read", "sniff"]

NAME = "csv"
KIND = "trace"

ROLES = ("time", "op", "offset", "lba", "size", "device", "latency")
"""What a column can hold; each has a ``<role>_column`` option naming it."""
OPTIONS = (
    "header",
    "columns",
    "delimiter",
    *(f"{role}_column" for role in ROLES),
    "time_unit",
    "latency_unit",
    "offset_unit",
    "size_unit",
    "read_values",
    "write_values",
)
TIME_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "µs": 1_000_000, "ns": 1_000_000_000}
"""Time unit -> units per second (times are divided by it, which keeps whole milliseconds exact
in seconds)."""
SECTOR = 512
DEFAULT_DEVICE = "disk"
_MAX_SIZE = int(np.iinfo(np.uint32).max)
_FIXED_OPS = {"sync": SYNC, "flush": SYNC, "trim": TRIM, "discard": TRIM}
_TIME_WORDS = ("time", "timestamp", "ts")
_OP_WORDS = (
    "op",
    "type",
    "rw",
    "operation",
    "opcode",
    "iotype",
    "io_type",
    "op_type",
    "optype",
    "cmd",
    "command",
    "direction",
    "mode",
)


@dataclass(frozen=True)
class _Settings:
    """The options, checked: where each role's column is and how to read it."""

    header: bool
    delimiter: str
    names: tuple[str, ...]
    """The file's columns (from the header line or the ``columns`` option)."""
    positions: dict[str, int]
    """Role -> column position, for the roles the file has."""
    time_per_second: int
    latency_per_second: int
    offset_bytes: int
    size_bytes: int
    ops: dict[str, int]
    """Lower-case op value -> trace op code."""

    @property
    def unused(self) -> list[str]:
        used = set(self.positions.values())
        return [
            name for i, name in enumerate(self.names) if i not in used and name not in ("", "-")
        ]


def sniff(head: str) -> bool:
    """A header line naming at least three columns, among them a time and an op column, then a
    row as wide; comma-separated, or tab-separated (:func:`_header_delimiter`).

    Names must look like names (letters first), so a data line, an INI file
    (fio job) or blkparse's space-separated lines never pass.
    """
    lines = [line for line in head.lstrip("\ufeff").splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    delimiter = _delimiter_of(lines[0])
    names = [name.strip().strip('"').lower() for name in lines[0].split(delimiter)]
    if len(names) < 3 or not all(
        name[:1].isalpha() and all(c.isalnum() or c in "_-./ ()" for c in name) for name in names
    ):
        return False
    has_time = any(name in _TIME_WORDS or "time" in name for name in names)
    has_op = any(name in _OP_WORDS for name in names)
    return has_time and has_op and len(lines[1].split(delimiter)) == len(names)


def _header_delimiter(path: Path) -> str:
    """The delimiter of a file whose first line names its columns: a tab when that line has tabs
    and no comma (unambiguous: no column name holds a tab), else a comma."""
    for _, text in numbered_lines(path):
        return _delimiter_of(text)
    return ","


def _delimiter_of(header: str) -> str:
    return "\t" if "\t" in header and "," not in header else ","


def load(path: Path, options: Mapping[str, Any]) -> Trace:
    """The trace's rows (parsed once, then from the cache): see the module docstring for columns
    and options."""
    settings = _settings(path, options)
    return cached_trace(path, NAME, options, lambda builder: _fill(path, settings, builder))


def read(path: Path, options: Mapping[str, Any]) -> FileReading:
    """One group per device, replaying its I/Os at their timestamps."""
    trace = load(path, options)
    warnings = []
    if trace.meta.get("unused_columns"):
        warnings.append(f"columns not used: {', '.join(trace.meta['unused_columns'])}")
    if trace.meta.get("empty_lines"):
        warnings.append(f"{trace.meta['empty_lines']:,} empty lines skipped")
    warnings += _unit_doubts(path, options, trace)
    warnings += time_order_note(trace.meta)
    return trace_imported(path, NAME, trace, options, warnings, _EXAMPLE)


_EXAMPLE = (
    "one line per I/O under their header line, e.g. 0.001,read,4096,4096 under time,op,offset,size"
)


_DAY = 86_400.0
_LONGEST_RUN = 1e6  # run.duration's bound (simcache.spec.workload)


def _unit_doubts(path: Path, options: Mapping[str, Any], trace: Trace) -> list[str]:
    """Units the numbers make doubtful, said before anything is built from them: I/Os mostly
    under a sector (the size column counting sectors or blocks, read as bytes), and a trace
    longer than a day (timestamps in ms or us, read as seconds), each with the option to give."""
    doubts: list[str] = []
    if not trace.count:
        return doubts
    sizes = trace.rows["size"]
    if "size_unit" not in options and float(np.median(sizes)) < SECTOR:
        doubts.append(
            f"half the I/Os are under {SECTOR} bytes (median {float(np.median(sizes)):g} B, read "
            "as bytes): if the size column counts sectors or blocks, give -O size_unit=sector "
            "(512 B) or the block size (e.g. -O size_unit=4KiB)"
        )
    span = trace.duration
    if "time_unit" not in options and span > _LONGEST_RUN:
        raise WorkloadFileError.at(
            path,
            None,
            "options.time_unit",
            f"the timestamps span {span:,.0f} s read as seconds, longer than a run may last "
            f"({_LONGEST_RUN:,.0f} s): they are likely in milliseconds or microseconds; give "
            "-O time_unit=ms or -O time_unit=us",
        )
    if "time_unit" not in options and span > _DAY:
        doubts.append(
            f"the trace spans {span:,.0f} s ({span / 3600:,.1f} hours, times read as seconds): if "
            "the timestamps are in milliseconds or microseconds, give -O time_unit=ms or "
            "-O time_unit=us"
        )
    return doubts


def _fill(path: Path, settings: _Settings, builder: TraceBuilder) -> dict[str, Any]:
    chunks = RowChunks(
        path, settings.names, settings.delimiter, skip_lines=1 if settings.header else 0
    )
    where = settings.positions
    offset_role = "offset" if "offset" in where else "lba"
    first_time: Any = None
    single_device = builder.device(DEFAULT_DEVICE) if "device" not in where else 0
    order = TimeOrder(settings.time_per_second, "time")
    for rows in chunks:
        # every column checked, so that the earliest bad line is the one reported
        times, ops, offsets, sizes, device_codes, latency = rows.earliest(
            partial(
                rows.numbers,
                where["time"],
                f"a time in {_unit_name(settings.time_per_second)}",
                minimum=0,
            ),
            partial(
                rows.codes,
                where["op"],
                partial(_op_code, settings.ops),
                _ops_allowed(settings.ops),
            ),
            partial(
                rows.integers,
                where[offset_role],
                _whole_units(settings.offset_bytes),
                maximum=MAX_OFFSET // settings.offset_bytes,
                limit=MAX_OFFSET_WHY,
            ),
            partial(
                rows.integers,
                where["size"],
                _whole_units(settings.size_bytes),
                maximum=_MAX_SIZE // settings.size_bytes,
                limit=f"{_MAX_SIZE:,} bytes, the largest I/O a trace row holds",
            ),
            partial(_device_codes, rows, where, builder, single_device),
            partial(_latency, rows, where, settings),
        )
        order.see(times, rows.lines())
        if first_time is None:
            first_time = times[0]
        builder.add(
            TraceChunk(
                time=(times - first_time) / settings.time_per_second,
                op=ops.astype(np.uint8),
                offset=offsets * settings.offset_bytes,
                size=sizes * settings.size_bytes,
                device=device_codes,
                latency=latency,
            )
        )
    return {
        "unused_columns": settings.unused,
        "empty_lines": chunks.empty_lines,
        **order.meta(),
    }


def _op_code(ops: Mapping[str, int], text: str) -> int | None:
    """The trace op an op column's ``text`` means (any case), or None."""
    return ops.get(text.lower())


def _device_codes(
    rows: Rows, where: Mapping[str, int], builder: TraceBuilder, single_device: int
) -> np.ndarray:
    """Each row's trace device: from the device column, else the one device of the file."""
    if "device" not in where:
        return np.full(len(rows), single_device, dtype=np.int64)
    codes, names = rows.categories(where["device"])
    devices = np.array([builder.device(name) for name in names], dtype=np.int64)
    per_row: np.ndarray = devices[codes]
    return per_row


def _latency(rows: Rows, where: Mapping[str, int], settings: _Settings) -> np.ndarray:
    """Each row's measured latency in seconds (NaN when empty or when the file has no latency
    column)."""
    if "latency" not in where:
        return np.full(len(rows), np.nan)
    measured = rows.numbers(
        where["latency"],
        f"a latency in {_unit_name(settings.latency_per_second)}",
        minimum=0,
        allow_missing=True,
    )
    seconds: np.ndarray = measured / settings.latency_per_second
    return seconds


def _settings(path: Path, options: Mapping[str, Any]) -> _Settings:
    check_option_names(path, options, OPTIONS, NAME)
    header = _flag(path, options, "header", True)
    delimiter = option_text(path, options, "delimiter", _header_delimiter(path) if header else ",")
    delimiter = {"tab": "\t", "\\t": "\t"}.get(delimiter, delimiter)
    if len(delimiter) != 1 or delimiter in '"\r\n':
        raise WorkloadFileError.at(
            path, None, "options.delimiter", f"expected one character (or tab), found {delimiter!r}"
        )
    time_unit = _time_unit(path, options, "time_unit", "s")
    latency_unit = _time_unit(
        path, options, "latency_unit", option_text(path, options, "time_unit", "s")
    )
    names = _column_names(path, options, header, delimiter)
    positions = _positions(path, options, header, names)
    offset_default = "sector" if "lba" in positions else "B"
    return _Settings(
        header=header,
        delimiter=delimiter,
        names=names,
        positions=positions,
        time_per_second=time_unit,
        latency_per_second=latency_unit,
        offset_bytes=_size_unit(path, options, "offset_unit", offset_default),
        size_bytes=_size_unit(path, options, "size_unit", "B"),
        ops=_op_values(path, options),
    )


def _flag(path: Path, options: Mapping[str, Any], name: str, default: bool) -> bool:
    value = options.get(name, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0"):
        return False
    raise WorkloadFileError.at(
        path, None, f"options.{name}", f"expected true or false, found {value!r}"
    )


def _time_unit(path: Path, options: Mapping[str, Any], name: str, default: str) -> int:
    unit = option_text(path, options, name, default)
    per_second = TIME_UNITS.get(unit.strip() if unit.strip() == "µs" else unit.strip().lower())
    if per_second is None:
        raise WorkloadFileError.at(
            path, None, f"options.{name}", f"unknown time unit {unit!r}; use s, ms, us or ns"
        )
    return per_second


def _size_unit(path: Path, options: Mapping[str, Any], name: str, default: str) -> int:
    unit = options.get(name, default)
    if isinstance(unit, str) and unit.strip().lower() in ("sector", "sectors"):
        return SECTOR
    try:
        if isinstance(unit, bool):
            raise UnitError("not a size")
        # A bare unit ("B", "KiB") is one of it.
        size = parse_size(
            "1" + unit.strip() if isinstance(unit, str) and unit.strip()[:1].isalpha() else unit
        )
    except UnitError:
        size = 0
    if size <= 0:
        raise WorkloadFileError.at(
            path,
            None,
            f"options.{name}",
            f'expected B, sector (512 B) or a size such as "4KiB", found {unit!r}',
        )
    return size


def _whole_units(unit_bytes: int) -> str:
    return (
        f"a whole number of {unit_bytes}-byte units"
        if unit_bytes > 1
        else "a whole number of bytes"
    )


def _unit_name(per_second: int) -> str:
    return next(unit for unit, value in TIME_UNITS.items() if value == per_second)


def _column_names(
    path: Path, options: Mapping[str, Any], header: bool, delimiter: str
) -> tuple[str, ...]:
    """The file's column names: its first line, or the ``columns`` option for a file without a
    header."""
    if header:
        if "columns" in options:
            raise WorkloadFileError.at(
                path,
                None,
                "options.columns",
                "names the columns of a file without a header; set header = false, or drop columns "
                "to use the header line",
            )
        for number, text in numbered_lines(path):
            return tuple(
                name.strip() for name in split_line(path, number, text.lstrip("\ufeff"), delimiter)
            )
        raise WorkloadFileError.at(
            path,
            1,
            "header",
            "the file is empty; expected a header line naming the columns (time, op, offset, size)",
        )
    if "columns" not in options:
        raise WorkloadFileError.at(
            path,
            None,
            "options.columns",
            "a file without a header needs its columns named in order, e.g. columns = "
            '"time,op,offset,size"',
        )
    return tuple(name.strip() for name in option_text(path, options, "columns", "").split(","))


def _positions(
    path: Path, options: Mapping[str, Any], header: bool, names: tuple[str, ...]
) -> dict[str, int]:
    """Role -> the position of its column; an error names a required column that is missing."""
    folded = [name.lower() for name in names]
    where = "the header line" if header else "options.columns"

    def find(role: str) -> int | None:
        option = f"{role}_column"
        wanted = option_text(path, options, option, role).strip().lower()
        matches = [i for i, name in enumerate(folded) if name == wanted]
        if len(matches) > 1:
            raise WorkloadFileError.at(
                path,
                1 if header else None,
                "header" if header else "options.columns",
                f"two columns are named {wanted!r}",
            )
        if not matches and option in options:
            raise WorkloadFileError.at(
                path,
                None,
                f"options.{option}",
                f"no column named {wanted!r} in {where} ({', '.join(names)})",
            )
        return matches[0] if matches else None

    if "offset_column" in options and "lba_column" in options:
        raise WorkloadFileError.at(
            path,
            None,
            "options.lba_column",
            "give offset_column (bytes) or lba_column (sectors), not both",
        )
    found = {
        role: find(role)
        for role in ROLES
        if not (role == "lba" and "offset_column" in options)
        and not (role == "offset" and "lba_column" in options)
    }
    if found.get("offset") is not None:
        found.pop("lba", None)  # a file with both: offset is the one used; lba is listed as unused
    for role in ("time", "op", "offset", "size"):
        if role == "offset" and (found.get("offset") is not None or found.get("lba") is not None):
            continue
        if found.get(role) is None:
            wanted = "offset (or lba)" if role == "offset" else role
            option = "offset_column (or lba_column)" if role == "offset" else f"{role}_column"
            raise WorkloadFileError.at(
                path,
                1 if header else None,
                "header" if header else "options.columns",
                f"no {wanted} column among {', '.join(repr(n) for n in names)}; name it with the "
                f"{option} option",
            )
    return {role: position for role, position in found.items() if position is not None}


def _op_values(path: Path, options: Mapping[str, Any]) -> dict[str, int]:
    ops: dict[str, int] = dict(_FIXED_OPS)
    for name, default, code in (
        ("read_values", "R,read", READ),
        ("write_values", "W,write", WRITE),
    ):
        for value in option_text(path, options, name, default).split(","):
            key = value.strip().lower()
            if not key:
                raise WorkloadFileError.at(
                    path,
                    None,
                    f"options.{name}",
                    'expected comma-separated values, e.g. "R,read"; found an empty one',
                )
            if key in ops and ops[key] != code:
                raise WorkloadFileError.at(
                    path,
                    None,
                    f"options.{name}",
                    f"{value.strip()!r} already means {_OP_LABELS[ops[key]]}",
                )
            ops[key] = code
    return ops


_OP_LABELS = {READ: "read", WRITE: "write", SYNC: "sync", TRIM: "trim"}


def _ops_allowed(ops: dict[str, int]) -> str:
    by_op: dict[int, list[str]] = {}
    for value, code in ops.items():
        by_op.setdefault(code, []).append(value)
    listing = "; ".join(
        f"{_OP_LABELS[code]}: {', '.join(values)}" for code, values in sorted(by_op.items())
    )
    return f"{listing} (any case; read_values/write_values set others)"
