"""What every format shares: the :class:`FileReading` result, safe file reading, and the trace cache
step.

A format reads one file and returns a :class:`FileReading`: scenario
``[[groups]]`` tables (the workload), ``[[expect]]`` tables (what the file
measured, for formats that are measurements), warnings about what it could not
use, and facts about what it read, as plain data.
:class:`simcache.workloads.ingest.imported.Imported` places the groups on a base
scenario's cluster (the built-in ``default`` unless told otherwise).

Every problem is a :class:`~simcache.base.errors.WorkloadFileError` naming the
file, the line and the field; an importer stops at the first one.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

from simcache.base.errors import WorkloadFileError
from simcache.base.files import file_problem
from simcache.base.metrics import PERCENTILES
from simcache.base.names import group_name
from simcache.traces.trace import Trace, TraceBuilder, cache_folder, cache_key, file_digest

__all__ = [
    "FileReading",
    "LineError",
    "cached_trace",
    "check_option_names",
    "check_regular_file",
    "head_bytes",
    "is_gzip",
    "no_reads_or_writes",
    "numbered_lines",
    "open_bytes",
    "option_choice",
    "read_head",
    "read_text",
    "trace_imported",
]

HEAD_BYTES = 8192
"""How much of a file format guessing looks at."""


class LineError(WorkloadFileError):
    """A :class:`WorkloadFileError` at one line of a file, which it keeps as :attr:`line`: of the
    problems several checks find in a block of lines, the importer reports the earliest."""

    def __init__(
        self, source: str, problems: Sequence[tuple[str, str]], line: int | None = None
    ) -> None:
        super().__init__(source, problems)
        self.line = line
        """The file's line (from 1), or None."""

    @classmethod
    def on(cls, path: object, line: int, field: str, message: str) -> LineError:
        """The problem ``message`` at ``line`` (from 1) of ``path``, in ``field`` (a column or key;
        empty for the whole line)."""
        located = WorkloadFileError.at(path, line, field, message)
        return cls(located.source, located.problems, line)


@dataclass
class FileReading:
    """What one file gave: groups (workloads), expectations (measurements), warnings and facts.

    Plain tables; :class:`simcache.workloads.ingest.imported.Imported` places them on a scenario."""

    source: Path
    format: str
    groups: list[dict[str, Any]]
    expect: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    facts: list[tuple[str, str]] = field(default_factory=list)
    """(what, value) pairs for people: ``("jobs", "2")``, ``("I/Os", "1,204,331")``."""
    duration: float | None = None
    """Seconds the workload runs as the file describes it (fio runtime, a trace's length), if it
    says."""
    trace: Trace | None = None


def check_option_names(
    path: Path,
    options: Mapping[str, Any],
    allowed: Collection[str] | Mapping[str, str],
    format_name: str,
) -> None:
    """Refuse the first option the format does not take, naming it and listing the ones it does
    (with what each does when ``allowed`` maps names to descriptions)."""
    for name in options:
        if name not in allowed:
            if not allowed:
                listing = "it takes none"
            elif isinstance(allowed, Mapping):
                listing = "use " + "; ".join(f"{key}: {what}" for key, what in allowed.items())
            else:
                listing = "use " + ", ".join(allowed)
            raise WorkloadFileError.at(
                path,
                None,
                f"options.{name}",
                f"unknown option for the {format_name} format; {listing}",
            )


def option_choice(
    path: Path, options: Mapping[str, Any], name: str, choices: Collection[str], default: str
) -> str:
    """The option ``name`` (a string, one of ``choices``), or ``default`` when it is not given."""
    value = options.get(name, default)
    if not isinstance(value, str) or value not in choices:
        raise WorkloadFileError.at(
            path,
            None,
            f"options.{name}",
            f"{value!r} is not allowed; use one of {', '.join(choices)}",
        )
    return value


def check_regular_file(path: Path) -> None:
    """Refuse anything that is not a readable regular file (a FIFO or device would block or never
    end)."""
    problem = file_problem(path)
    if problem is not None:
        raise WorkloadFileError.at(path, None, "", problem)


GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: Path) -> bool:
    """Whether the file is gzip-compressed (by its first two bytes, whatever its name): the MSR
    traces ship so."""
    with path.open("rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_bytes(path: Path) -> BinaryIO:
    """The file's bytes, decompressed on the fly when it is gzip; a damaged gzip stream raises
    :class:`WorkloadFileError` when read through :func:`numbered_lines` or :func:`read_text`."""
    check_regular_file(path)
    if is_gzip(path):
        return cast(BinaryIO, gzip.open(path, "rb"))
    return path.open("rb")


def read_head(path: Path, size: int = HEAD_BYTES) -> str:
    """The file's first ``size`` bytes (decompressed) as text (undecodable bytes replaced), for
    guessing its format."""
    return head_bytes(path, size).decode("utf-8", errors="replace")


def head_bytes(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The file's first ``size`` bytes, decompressed when it is gzip."""
    with open_bytes(path) as handle:
        try:
            return handle.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise WorkloadFileError.at(path, None, "", f"a damaged gzip file: {exc}") from None


def read_text(path: Path, encoding: str = "utf-8") -> str:
    """The whole file as text (decompressed); bytes that are not ``encoding`` raise naming their
    line."""
    with open_bytes(path) as handle:
        try:
            data = handle.read()
        except (OSError, EOFError, zlib.error) as exc:
            raise WorkloadFileError.at(path, None, "", f"a damaged gzip file: {exc}") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise WorkloadFileError.at(
            path, line, "", f"not {encoding} text (byte {exc.start}); is this the right file?"
        ) from None


def numbered_lines(path: Path, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """(line number from 1, line without its end) for each line, read lazily.

    A line that is not valid text raises :class:`WorkloadFileError` naming it.
    """
    with open_bytes(path) as handle:
        number = 0
        while True:
            try:
                raw = handle.readline()
            except (OSError, EOFError, zlib.error) as exc:
                raise WorkloadFileError.at(
                    path, number + 1, "", f"a damaged gzip file: {exc}"
                ) from None
            if not raw:
                return
            number += 1
            try:
                yield number, raw.decode(encoding).rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise LineError.on(
                    path,
                    number,
                    "",
                    f"not {encoding} text (byte {exc.start}); is this the right file?",
                ) from None


def cached_trace(
    path: Path,
    format_name: str,
    options: Mapping[str, Any],
    fill: Callable[[TraceBuilder], Mapping[str, Any]],
    folder: Path | None = None,
) -> Trace:
    """The trace of ``path`` from the cache, or parsed now by ``fill`` and cached.

    ``fill`` adds the file's chunks to the builder and returns what it wants
    kept in the description (counts of skipped lines, the clock's origin, ...).
    A failed parse leaves nothing in the cache.
    """
    check_regular_file(path)
    folder = cache_folder() if folder is None else folder
    key = cache_key(file_digest(path), format_name, options)
    trace = Trace.cached(key, folder)
    if trace is not None:
        return trace
    builder = TraceBuilder(folder, key)
    try:
        extra = fill(builder)
    except BaseException:
        builder.abandon()
        raise
    return builder.finish(
        {"source": str(path), "format": format_name, "options": dict(options), **extra}
    )


def no_reads_or_writes(
    path: Path, format_name: str, trace: Trace, warnings: list[str], example: str
) -> WorkloadFileError:
    """The error for a trace file without reads or writes: its lines (read again, as this is the
    error path), what they held instead (syncs, trims, the format's ``warnings``) and what an I/O
    line looks like (``example``)."""
    lines = blank = 0
    for _, text in numbered_lines(path):
        lines += 1
        blank += not text.strip()
    fix = f"{format_name} traces have {example}"
    if lines == blank:
        empty = "the file is empty" + (f" ({lines:,} blank lines)" if lines else "")
        return WorkloadFileError.at(
            path, 1, "", f"the trace holds no reads or writes to replay: {empty}; {fix}"
        )
    commands = "command" if trace.count == 1 else "commands"
    skipped = [f"{trace.count:,} sync or trim {commands}, not replayed"] if trace.count else []
    held = "; ".join([*skipped, *warnings])
    return WorkloadFileError.at(
        path,
        None,
        "line 1" if lines == 1 else f"lines 1-{lines:,}",
        "the trace holds no reads or writes to replay"
        + (f" ({held})" if held else "")
        + f"; {fix}",
    )


def trace_imported(
    path: Path,
    format_name: str,
    trace: Trace,
    options: Mapping[str, Any],
    warnings: list[str],
    example: str,
) -> FileReading:
    """A trace as groups: one group of one VM per trace device, replaying that device's I/Os at
    their timestamps.

    ``example`` says what the format's I/O lines are, for the error about a file without reads or
    writes (:func:`no_reads_or_writes`): "<format> traces have " + ``example``.
    """
    summary = trace.summary()
    groups = []
    used: set[str] = set()
    for device, stats in summary.items():
        if stats.ios == 0:
            continue
        name = group_name(device, used)
        trace_table: dict[str, Any] = {
            "path": str(path.resolve()),
            "format": format_name,
            "devices": [device],
        }
        if options:
            trace_table["options"] = dict(options)
        groups.append(
            {"name": name, "vms_per_host": 1, "workload": {"mode": "trace", "trace": trace_table}}
        )
    if not groups:
        raise no_reads_or_writes(path, format_name, trace, warnings, example)
    reads = sum(s.counts["read"] for s in summary.values())
    writes = sum(s.counts["write"] for s in summary.values())
    skipped = {op: sum(s.counts[op] for s in summary.values()) for op in ("sync", "trim")}
    facts = [
        ("I/Os", f"{reads + writes:,} ({reads:,} reads, {writes:,} writes)"),
        (
            "bytes",
            f"{sum(s.bytes['read'] for s in summary.values()):,} read, "
            f"{sum(s.bytes['write'] for s in summary.values()):,} written",
        ),
        ("devices", ", ".join(summary) or "none"),
        ("length", f"{trace.duration:.6g} s"),
    ]
    for op, (count, mean, values) in trace.measured_latency(list(PERCENTILES.values())).items():
        # A percentile is shown only when at least one I/O lies above it (p99.9 needs 1,000 I/Os).
        shown = [
            f", {name.removesuffix('_ms')} {value * 1e3:.4g} ms"
            for (name, q), value in zip(PERCENTILES.items(), values, strict=True)
            # 1,000 x (1 - 0.999) is 0.99999... in floats
            if count * (1.0 - q / 100.0) >= 1.0 - 1e-9
        ]
        facts.append(
            (
                f"{op} latency in the trace",
                f"mean {mean * 1e3:.4g} ms{''.join(shown)} over {count:,} I/Os (the traced "
                "system's)",
            )
        )
    notes = list(warnings)
    if any(skipped.values()):
        notes.append(
            f"{skipped['sync']:,} sync/flush and {skipped['trim']:,} trim commands are counted but "
            "not replayed "
            "(the model acknowledges a write when it is cached or replicated, so a flush adds no "
            "wait)"
        )
    # The run lasts a second past the last I/O, so that it is issued and, unless the cluster is
    # overloaded, completes; a trace without timestamps (replayed closed loop) runs for the base
    # scenario's duration.
    duration = trace.duration + 1.0 if trace.meta.get("has_times", True) else None
    if duration is not None:
        notes += _no_time_extent(trace, reads + writes, duration)
    return FileReading(
        path, format_name, groups, warnings=notes, facts=facts, duration=duration, trace=trace
    )


def _no_time_extent(trace: Trace, ios: int, duration: float) -> list[str]:
    """A warning when the trace's I/Os span no time, or all fall in the imported run's warm-up
    (a tenth of ``duration``, the run's seconds): the run would then measure none of them
    (review 65: 20,000 I/Os of one timestamp gave a run whose every latency row was empty)."""
    warmup = duration / 10
    fix = (
        "check the file's timestamps (their unit, or a clock that did not advance); to measure "
        "the I/Os as one burst, set run.warmup = 0 in the scenario"
    )
    if ios > 1 and trace.duration == 0:
        return [
            f"the trace has no time extent: its {ios:,} I/Os all have one timestamp, so a replay "
            f"issues them all at once at time 0, inside the run's {warmup:g} s warm-up, and "
            f"measures none of them; {fix}"
        ]
    if ios > 1 and trace.duration < warmup:
        return [
            f"the trace spans only {trace.duration:.3g} s: a replay issues all its {ios:,} I/Os "
            f"inside the run's {warmup:.3g} s warm-up and measures none of them; {fix}"
        ]
    return []
