"""fio job files as text: the INI reading and the parsing of option values.

A job file is INI text (fio's HOWTO, "Job file format"): ``[global]`` sets
defaults for the job sections after it (a later ``[global]`` adds to them for
the jobs after it); every other ``[name]`` is a job. Lines starting with ``;``
or ``#`` are comments, and fio cuts a line at a ``;`` or ``#`` anywhere.
:func:`parse_job_file` gives each job's :class:`Setting` values, and ``_Job``
reads them as fio does; the catalogue of which options shape the workload,
have no effect, or are not modelled is here too. The mapping of a job's
options to a workload is in :mod:`simcache.traces.formats.fio_job`.

Sizes follow fio's rules (HOWTO "Parameter types", parse.c ``__get_mult_bytes``):
with ``kb_base=1024`` (fio's default) ``k``/``kb``/``m``/``g``... are powers of
1024 and the IEC spellings ``KiB``/``MiB``... are powers of 1000 (fio keeps this
swap for old scripts); with ``kb_base=1000`` it is the other way round. Times
take ``us``, ``ms``, ``s``, ``m``, ``h``, ``d``; ``runtime`` and ``ramp_time``
are seconds and ``thinktime`` microseconds without a unit. Separate
read,write values (``bs=4k,64k``, ``rate=1m,500k``) follow the HOWTO's
"blocksize" rule: a value not ended by a comma also applies to the next
direction. ``bs=4k-64k`` is read as a range, like ``bsrange``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from simcache.base.errors import WorkloadFileError
from simcache.base.spelling import close_name
from simcache.traces.formats.base import numbered_lines

__all__ = [
    "JobSpec",
    "Notes",
    "Setting",
    "fio_size",
    "fio_time",
    "note_unused",
    "parse_job_file",
]

_USED = frozenset(
    [
        "rw",
        "readwrite",
        "rwmixread",
        "rwmixwrite",
        "bs",
        "blocksize",
        "bssplit",
        "blocksize_range",
        "bsrange",
        "iodepth",
        "numjobs",
        "size",
        "filesize",
        "nrfiles",
        "runtime",
        "time_based",
        "ramp_time",
        "rate_iops",
        "rate",
        "thinktime",
        "random_distribution",
        "percentage_random",
        "buffer_compress_percentage",
        "zero_buffers",
        "direct",
        "buffered",
        "ioengine",
        "kb_base",
    ]
)
"""Options that shape the workload."""
_NO_EFFECT = frozenset(
    [
        "name",
        "description",
        "filename",
        "directory",
        "filename_format",
        "offset",
        "offset_align",
        "offset_increment",
        "refill_buffers",
        "scramble_buffers",
        "buffer_pattern",
        "group_reporting",
        "thread",
        "randrepeat",
        "allrandrepeat",
        "randseed",
        "norandommap",
        "softrandommap",
        "random_generator",
        "invalidate",
        "unit_base",
        "per_job_logs",
        "write_bw_log",
        "write_lat_log",
        "write_iops_log",
        "log_avg_msec",
        "clat_percentiles",
        "lat_percentiles",
        "slat_percentiles",
        "percentile_list",
        "disable_lat",
        "disable_clat",
        "disable_slat",
        "disable_bw_measurement",
        "significant_figures",
        "allow_mounted_write",
        "overwrite",
        "create_serialize",
        "create_fsync",
        "create_on_open",
        "unlink",
        "unlink_each_loop",
        "fallocate",
        "fadvise_hint",
        "cpus_allowed",
        "cpumask",
        "cpus_allowed_policy",
        "nice",
        "prio",
        "prioclass",
        "iodepth_batch",
        "iodepth_batch_submit",
        "iodepth_batch_complete",
        "iodepth_batch_complete_min",
        "iodepth_batch_complete_max",
        "iodepth_low",
        "exitall",
        "exitall_on_error",
        "clocksource",
        "gtod_reduce",
        "eta",
        "eta_newline",
        "continue_on_error",
        "ignore_error",
        "error_dump",
        "hugepage-size",
        "iomem",
        "mem",
        "iomem_align",
        "mem_align",
        "lockfile",
        "unified_rw_reporting",
    ]
)
"""Options known to change nothing the model describes (where the I/O goes, how fio logs or
schedules itself)."""
_NOT_MODELLED: dict[str, str] = {
    "fsync": "no flushes are modelled: a write completes once cached or replicated",
    "fdatasync": "no flushes are modelled: a write completes once cached or replicated",
    "sync": "no synchronous writes are modelled: a write completes once cached or replicated",
    "end_fsync": "no flushes are modelled",
    "fsync_on_close": "no flushes are modelled",
    "dedupe_percentage": "the model has no deduplication",
    "stonewall": "fio runs such jobs one after another; the scenario runs every group at once",
    "wait_for": "fio runs such jobs one after another; the scenario runs every group at once",
    "startdelay": "every group starts at time 0",
    "loops": "the run lasts run.duration, whatever the number of passes",
    "number_ios": "the run lasts run.duration, whatever the number of I/Os",
    "io_size": "the run lasts run.duration, whatever the amount of I/O",
    "thinktime_blocks": "think_time follows every I/O",
    "thinktime_spin": "think_time is idle time",
    "thinktime_iotime": "think_time follows every I/O",
    "rate_process": "open-loop arrivals are Poisson",
    "rw_sequencer": "the rw offset modifier is not modelled",
}
"""Options that matter to fio's I/O but have no counterpart in the model, with what the model
does instead."""
_OFF_VALUES = frozenset({"0", "none", "false", "no", "off"})
"""Values that turn an option off: a not-modelled option set so is not noted."""
_ALIASES = {
    "nr_files": "nrfiles",
    "timeout": "runtime",
    "io_limit": "io_size",
    "fileoffset": "offset",
    "wait_for_previous": "stonewall",
    "disable_bw": "disable_bw_measurement",
}
"""fio's other names for options of the catalogue above (``.alias`` in fio's options.c), whose
own names the catalogue does not list: read as the option they stand for."""


def note_unused(source: Path, spec: JobSpec, notes: Notes) -> None:
    """Note in ``notes`` each option of the job that is not modelled or not read (fio options
    turned off are not noted); refuse an option that is not fio's but one slip from one this
    importer reads (``bsplit`` for ``bssplit``), as fio itself refuses unknown options.

    No option of fio's (options.c and the engines' options, fio 3.41) is one slip from a name of
    :data:`_USED` but ``nr_files``, which :data:`_ALIASES` reads as ``nrfiles``.
    """
    for key, setting in spec.settings.items():
        if key in _USED or key in _NO_EFFECT:
            continue
        if key in _NOT_MODELLED:
            if setting.value is None or setting.value.strip().lower() not in _OFF_VALUES:
                notes.ignore(spec.name, key, _NOT_MODELLED[key])
            continue
        meant = close_name(key, _USED)
        if meant is not None:
            raise WorkloadFileError.at(
                source,
                setting.line,
                setting.field,
                f"unknown fio option {key!r}; did you mean {meant!r}? (fio refuses "
                "options it does not know)",
            )
        notes.ignore(spec.name, key, "not read by this importer")


@dataclass(frozen=True)
class Setting:
    """One option as written: its value (``None`` for a bare key), where it was, and how errors
    name it."""

    value: str | None
    line: int | None
    field: str
    order: int
    """Position in the file: of two aliases (rw, readwrite) the later one wins, as in fio."""


@dataclass
class JobSpec:
    """A job's name and its options after ``[global]`` inheritance."""

    name: str
    settings: dict[str, Setting]
    line: int | None = None


@dataclass
class Notes:
    """What a file's jobs could not use: one warning of options not modelled, then one warning
    per other topic."""

    ignored: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    topics: dict[str, list[str]] = field(default_factory=dict)

    def ignore(self, job: str, label: str, reason: str) -> None:
        jobs = self.ignored.setdefault(label, (reason, []))[1]
        if job not in jobs:
            jobs.append(job)

    def add(self, job: str, message: str) -> None:
        jobs = self.topics.setdefault(message, [])
        if job not in jobs:
            jobs.append(job)

    def warnings(self) -> list[str]:
        out = []
        if self.ignored:
            parts = [
                f"{label} in {_jobs(jobs)} ({reason})"
                for label, (reason, jobs) in self.ignored.items()
            ]
            out.append("fio options not modelled (ignored): " + "; ".join(parts))
        out += [f"{_jobs(jobs)}: {message}" for message, jobs in self.topics.items()]
        return out


def _jobs(names: list[str]) -> str:
    return ", ".join(f"[{name}]" for name in names)


def parse_job_file(path: Path) -> list[JobSpec]:
    """The job sections of an INI job file, each with the ``[global]`` options above it."""
    defaults: dict[str, Setting] = {}
    jobs: list[JobSpec] = []
    current: dict[str, Setting] | None = None
    order = 0
    for number, raw in numbered_lines(path):
        stripped = raw.strip()
        if not stripped or stripped[0] in ";#":
            continue
        text = re.split(r"[;#]", stripped, maxsplit=1)[0].strip()
        if text.startswith("["):
            name = text[1:-1].strip() if text.endswith("]") else ""
            if not name:
                raise WorkloadFileError.at(
                    path,
                    number,
                    "section",
                    f"cannot read {text!r}: a section header is [name], e.g. [global] or "
                    "[randwrite]",
                )
            if name == "global":
                current = defaults
            else:
                jobs.append(JobSpec(name, dict(defaults), number))
                current = jobs[-1].settings
            continue
        key, sep, value = text.partition("=")
        key = key.strip().lower()
        if key == "include" or key.startswith("include "):
            raise WorkloadFileError.at(
                path,
                number,
                "include",
                "include is not followed; paste the included file's options into this section "
                "instead",
            )
        if not re.fullmatch(r"[a-z0-9_.+-]+", key):
            raise WorkloadFileError.at(
                path,
                number,
                key or "key",
                f"cannot read {text!r}: fio job lines are key=value, a bare key, or [section]",
            )
        if current is None:
            raise WorkloadFileError.at(
                path,
                number,
                key,
                "an option before any section; start with [global] or a [job] header",
            )
        current[_ALIASES.get(key, key)] = Setting(
            value.strip() if sep else None, number, key, order
        )
        order += 1
    return jobs


class _Job:
    """Reads one job's options, raising a WorkloadFileError naming the option's line and key."""

    def __init__(self, source: Path, spec: JobSpec, notes: Notes):
        self.source = source
        self.spec = spec
        self.notes = notes
        self.kb_base = int(self.number("kb_base", 1024, choices=(1000, 1024)))

    def fail(self, key: str, message: str) -> WorkloadFileError:
        setting = self.spec.settings[key]
        return WorkloadFileError.at(self.source, setting.line, setting.field, message)

    def has(self, key: str) -> bool:
        return key in self.spec.settings

    def text(self, key: str) -> str | None:
        setting = self.spec.settings.get(key)
        if setting is None or setting.value is None:
            return None
        value = setting.value
        if "$" in value or value.startswith("("):
            raise self.fail(
                key,
                f"{value!r} is filled in by fio when it runs ($VAR, ${{VAR}}, $ncpus or "
                "(arithmetic)); write the value itself",
            )
        return value

    def latest(self, *keys: str) -> str | None:
        """Of aliases or competing options, the one written last (fio applies options in order)."""
        present = [k for k in keys if k in self.spec.settings]
        return max(present, key=lambda k: self.spec.settings[k].order) if present else None

    def flag(self, key: str) -> bool:
        if not self.has(key):
            return False
        value = self.text(key)
        if value is None or value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise self.fail(key, f"{key} is {value!r}; give 1 or 0")

    def number(
        self,
        key: str,
        default: float,
        *,
        low: float = 0,
        high: float = math.inf,
        choices: tuple[int, ...] = (),
    ) -> float:
        value = self.text(key)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            raise self.fail(key, f"{key} is {value!r}; give a number") from None
        if choices and number not in choices:
            raise self.fail(key, f"{key} is {value!r}; give one of {', '.join(map(str, choices))}")
        if not low <= number <= high:
            raise self.fail(key, f"{key} is {value!r}; give a number from {low:g} to {high:g}")
        return number

    def size(self, key: str, text: str) -> int:
        try:
            size = fio_size(text, self.kb_base)
        except ValueError as exc:
            raise self.fail(key, f"{key}: {exc}") from None
        if self.kb_base == 1024 and "ib" in text.lower():
            self.notes.add(
                self.spec.name,
                f"{key}={self.spec.settings[key].value}: with fio's default kb_base=1024 the IEC "
                "spellings KiB, MiB, GiB mean "
                "powers of 1000 (fio swaps them for old scripts), so 4KiB is 4000 bytes; write 4k, "
                "or set kb_base=1000",
            )
        return size

    def size_range(self, key: str, text: str) -> tuple[int, int]:
        low, sep, high = text.replace(":", "-").partition("-")
        if not sep:
            size = self.size(key, text)
            return size, size
        a, b = self.size(key, low), self.size(key, high)
        return min(a, b), max(a, b)

    def seconds(self, key: str, default_unit: float) -> float | None:
        value = self.text(key)
        if value is None:
            return None
        try:
            return fio_time(value, default_unit)
        except ValueError as exc:
            raise self.fail(key, f"{key}: {exc}") from None

    def directions(self, key: str) -> tuple[str | None, str | None]:
        """(read value, write value) of an option with separate read,write[,trim] values;
        ``None`` where unset."""
        value = self.text(key)
        if value is None:
            return None, None
        parts = value.split(",")
        read = parts[0].strip() or None
        write = (parts[1] if len(parts) > 1 else parts[0]).strip() or None
        return read, write


_SIZE = re.compile(r"(?P<num>0x[0-9a-f]+|\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[a-z%]*)")
_POWERS = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def fio_size(text: str, kb_base: int = 1024) -> int:
    """Bytes of a fio size (``4k``, ``1m``, ``64KiB``, ``0x1000``) as fio reads it with this
    ``kb_base``.

    Raises :class:`ValueError` for a percentage (``20%``: a share of a device
    this importer does not see) or an unreadable value.
    """
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(
            f"cannot read size {text!r}; give bytes with an optional suffix, e.g. 4096, 4k, 64k, "
            "1m, 10g"
        )
    num, unit = match["num"], match["unit"]
    number = int(num, 16) if num.startswith("0x") else float(num)
    if unit == "%":
        raise ValueError(
            f"{text!r} is a share of the file or device, which this importer does not know"
        )
    if unit in ("", "b"):
        return round(number)
    # As fio's parse.c: "kib", "mib", ... are the IEC spellings; anything else goes by its first
    # letter ("kb" = "k").
    iec = len(unit) == 3 and unit.endswith("ib")
    power = _POWERS.get(unit[0])
    if power is None or unit not in (unit[0], unit[0] + "b", unit[0] + "ib"):
        raise ValueError(
            f"cannot read size {text!r}; suffixes are k, m, g, t, p (also kb, KiB, ...)"
        )
    # fio's kb_base=1024 swaps the prefixes for old scripts: k is 1024 and KiB is 1000 (HOWTO,
    # kb_base).
    base = (1000 if kb_base == 1024 else 1024) if iec else kb_base
    return round(number * float(base) ** power)


_TIME = re.compile(r"(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[a-z]*)")
_TIME_UNITS = {
    "us": 1e-6,
    "usec": 1e-6,
    "ms": 1e-3,
    "msec": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}


def fio_time(text: str, default_unit: float) -> float:
    """Seconds of a fio time (``10``, ``500ms``, ``2m``); a bare number is in ``default_unit``
    seconds."""
    match = _TIME.fullmatch(text.strip().lower())
    if match is None or (match["unit"] and match["unit"] not in _TIME_UNITS):
        raise ValueError(
            f"cannot read time {text!r}; give a number with an optional unit us, ms, s, m, h or d"
        )
    factor = _TIME_UNITS[match["unit"]] if match["unit"] else default_unit
    return float(match["num"]) * factor
