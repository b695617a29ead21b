"""Formats: workload, measurement and trace files users already hold, read into plain tables and
traces.

``simcache import PATH [--format F] -o OUT.toml`` and
:func:`read_file` read one file; the format is guessed from its first
few KiB when not given. Each format has its own module with the same four
names: ``NAME`` (the format's name on the command line), ``KIND``
(``"workload"``, ``"measurement"`` or ``"trace"``), ``sniff(head) -> bool``
and ``read(path, options) -> FileReading``. Trace formats also have
``load(path, options) -> Trace``, which replay uses (:mod:`simcache.workloads.replay`):
the trace is parsed once into the cache of :mod:`simcache.traces.trace`.

| format | module | what it gives | |---|---|---| | ``fio-job`` | :mod:`.fio_job` | one group per
job (synthetic workload) | | ``fio-json`` | :mod:`.fio_json` | the jobs' workloads and their
measured IOPS, bandwidth, latency as checks | | ``fio-iolog`` | :mod:`.fio_iolog` | a trace (v2:
order only; v3: timestamps) | | ``vscsistats`` | :mod:`.vscsistats` | one VM per virtual disk from
its histograms, measured latency as checks | | ``blkparse`` | :mod:`.blkparse` | a trace (issue,
queue or completion events) | | ``msr`` | :mod:`.msr` | a trace (SNIA MSR-Cambridge CSV) | | ``csv``
| :mod:`.csv_trace` | a trace from any CSV with named columns |
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from simcache.base.errors import WorkloadFileError
from simcache.traces.formats.base import HEAD_BYTES, FileReading, head_bytes, read_head
from simcache.traces.trace import Trace

__all__ = [
    "FORMATS",
    "TRACE_FORMATS",
    "FileReading",
    "guess_format",
    "load_trace",
    "open_trace",
    "parse_option",
    "parse_options",
    "read_file",
]

FORMATS: dict[str, str] = {
    "fio-job": "fio_job",
    "fio-json": "fio_json",
    "fio-iolog": "fio_iolog",
    "vscsistats": "vscsistats",
    "blkparse": "blkparse",
    "msr": "msr",
    "csv": "csv_trace",
}
"""Format name -> module under simcache.traces.formats. Guessing tries them in this order (most
specific first)."""
TRACE_FORMATS = ("fio-iolog", "blkparse", "msr", "csv")
"""The formats that hold a trace (replayed I/O by I/O); the others describe a workload or a
measurement."""
_GUESS_ORDER = ("fio-json", "fio-iolog", "vscsistats", "blkparse", "msr", "fio-job", "csv")


def _module(format_name: str) -> ModuleType:
    return importlib.import_module(f"simcache.traces.formats.{FORMATS[format_name]}")


def _known(path: Path, format_name: str) -> str:
    if format_name not in FORMATS:
        raise WorkloadFileError.at(
            path, None, "format", f"unknown format {format_name!r}; use one of {', '.join(FORMATS)}"
        )
    return format_name


def guess_format(path: str | Path) -> str:
    """The format of ``path`` judged from its first few KiB; raises :class:`WorkloadFileError`
    when none fits, saying why when the start shows it (not UTF-8 text, tab-separated lines)."""
    path = Path(path)
    head = read_head(path)
    for name in _GUESS_ORDER:
        if _module(name).sniff(head):
            return name
    lines = [line.strip() for line in head.splitlines() if line.strip()]
    if not lines:
        raise WorkloadFileError.at(
            path,
            1,
            "",
            "the file is empty"
            + (" (blank lines only)" if head else "")
            + ": nothing to import; give the file the trace, job or results were written to",
        )
    _refuse_not_text(path)
    if _tab_separated(lines):
        raise WorkloadFileError.at(path, None, "format", _TABS)
    alone = (
        f" (its only line is {lines[0][:80]!r}: a header without the lines it names?)"
        if len(lines) == 1 and len(head) < HEAD_BYTES
        else ""
    )
    raise WorkloadFileError.at(
        path,
        None,
        "format",
        f"cannot tell the format from the file's start{alone}; give it with --format (one of "
        f"{', '.join(FORMATS)})",
    )


def _refuse_not_text(path: Path) -> None:
    """Refuse a file whose start is not UTF-8 text, naming the line and byte: every format is
    text (review 65: such a file was refused only as "cannot tell the format")."""
    data = head_bytes(path)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end >= len(data) and len(data) == HEAD_BYTES:
            return  # a character cut by the end of the head, not a bad byte
        encoding = "utf-16" if _utf16(data) else "latin1"
        raise WorkloadFileError.at(
            path,
            data[: exc.start].count(b"\n") + 1,
            "",
            f"not UTF-8 text (byte {exc.start}), so no format fits: every format simcache "
            "imports is UTF-8 text (gzip-compressed or not); is this the right file? (one in "
            f"another encoding: convert it, e.g. iconv -f {encoding} -t utf-8)",
        ) from None


def _utf16(data: bytes) -> bool:
    """Whether ``data`` reads as UTF-16 text: a byte-order mark, then a NUL byte beside most
    ASCII characters."""
    sample = data[2:66]
    return data[:2] in (b"\xff\xfe", b"\xfe\xff") and sample.count(0) >= len(sample) // 3


def _tab_separated(lines: list[str]) -> bool:
    """Whether the head's lines are tab-separated values: every line (the last may be cut off)
    has a tab and none a comma."""
    whole = lines[:-1] or lines
    return all("\t" in line and "," not in line for line in whole)


_TABS = (
    "the lines are tab-separated and fit no format: msr and vscsistats lines are "
    "comma-separated (convert with tr '\\t' ','); a csv trace may be tab-separated, with a "
    "header line naming its time and op columns (e.g. time, op, offset, size), or give "
    "--format csv -O delimiter=tab -O header=false -O columns=time,op,offset,size; blkparse and "
    "fio-iolog lines may use tabs, but these are neither"
)
"""Why a tab-separated file fits no format, and what each format takes."""


def read_file(path: str | Path, format: str | None = None, **options: Any) -> FileReading:
    """Read a workload, measurement or trace file: groups, expectations, warnings and facts, as
    plain tables.

    ``options`` are the format's own (a CSV trace's column names and units, blkparse's event,
    vscsiStats' disk layout, ...). :func:`simcache.workloads.ingest.imported.import_workload` makes
    the reading a scenario.
    """
    path = Path(path)
    name = guess_format(path) if format is None else _known(path, format)
    reading: FileReading = _module(name).read(path, options)
    return reading


def load_trace(
    path: str | Path, format: str | None = None, options: Mapping[str, Any] | None = None
) -> Trace:
    """The cached columnar trace of ``path`` (parsed now if it is not cached yet)."""
    path = Path(path)
    name = guess_format(path) if format is None else _known(path, format)
    module = _module(name)
    if module.KIND != "trace":
        replayable = ", ".join(TRACE_FORMATS)
        raise WorkloadFileError.at(
            path,
            None,
            "format",
            f"{name} is a {module.KIND} file, not a trace; replay takes {replayable}",
        )
    trace: Trace = module.load(path, dict(options or {}))
    return trace


_OPENED: dict[tuple[str, int, int, str | None, str], Trace] = {}


def open_trace(
    path: str | Path, format: str | None = None, options: Mapping[str, Any] | None = None
) -> Trace:
    """The trace of ``path``, parsed once and cached on disk (:func:`load_trace`); within a process,
    opened once per file version (its path, modification time and size, with the format and
    options).

    Raises :class:`~simcache.base.errors.WorkloadFileError` for a file that cannot be read or
    parsed.
    """
    options = dict(options or {})
    path = Path(path)
    try:
        status = path.stat()
        key = (
            str(path.resolve()),
            status.st_mtime_ns,
            status.st_size,
            format,
            repr(sorted(options.items())),
        )
    except OSError:
        key = None
    if key is not None and key in _OPENED:
        return _OPENED[key]
    trace = load_trace(path, format, options)
    if key is not None:
        if len(_OPENED) > 64:
            _OPENED.clear()
        _OPENED[key] = trace
    return trace


def parse_option(text: str, source: str = "--option") -> tuple[str, Any]:
    """One format option written ``KEY=VALUE``: VALUE read as a TOML value when it is one
    (numbers, booleans), else as text. Raises :class:`WorkloadFileError` naming ``source`` for
    text without a key."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise WorkloadFileError(
            source, [(text, "give an import option as KEY=VALUE, e.g. time_unit=ms")]
        )
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    # options are scalars (a CSV's columns are one comma-separated text)
    if isinstance(parsed, (list, dict)):
        parsed = value.strip()
    return key.strip(), parsed


def parse_options(text: str, source: str = "import options") -> dict[str, Any]:
    """Format options written ``KEY=VALUE``, one per line or separated by ``;`` (commas belong to
    values such as ``columns=time,op,offset,size``)."""
    pairs = [part.strip() for line in text.splitlines() for part in line.split(";")]
    return dict(parse_option(pair, source) for pair in pairs if pair)
