"""fio job files: one scenario group per job, its workload from the job's options.

A job file is INI text (fio's HOWTO, "Job file format"): ``[global]`` sets
defaults for the job sections after it (a later ``[global]`` adds to them for
the jobs after it); every other ``[name]`` is a job. Lines starting with ``;``
or ``#`` are comments, and fio cuts a line at a ``;`` or ``#`` anywhere.

How options become a :class:`~simcache.scenario.Workload` (per VM):

| fio option | scenario |
|---|---|
| ``rw``/``readwrite`` | ``read_fraction`` (1, 0, or ``rwmixread``/``rwmixwrite``, default 50%) and ``access`` |
| | (``rand*``: uniform, else sequential); trims are not modelled |
| ``bs``, ``bsrange``, ``bssplit`` | ``sizes``; separate read,write values are merged into one mix weighted by the read share |
| ``iodepth`` | closed loop ``outstanding`` (1 for the synchronous engines sync, psync, vsync, pvsync, pvsync2, mmap) |
| ``rate_iops`` / ``rate`` | open loop ``iops`` / ``throughput``: the rw mix holds, the first direction at its cap sets the total |
| ``thinktime`` | ``think_time`` (µs when no unit is given) |
| ``numjobs`` | ``vms_per_host`` (one VM per fio job clone), or ``workers`` with option ``numjobs = "workers"`` |
| ``size`` / ``filesize`` x ``nrfiles`` | ``working_set`` |
| ``random_distribution`` | ``zipf:θ`` -> ``access = "zipf"``, ``zipf_theta = θ``; pareto, normal, zoned: uniform |
| ``percentage_random`` | random when 50 or more, else sequential (the model has no mix of the two) |
| ``buffer_compress_percentage`` / ``zero_buffers`` | ``compressibility`` (zero-filled buffers: 0.99) |
| ``runtime``, ``ramp_time``, ``time_based`` | the job's length; :attr:`Imported.duration` is the longest job's ``ramp_time + runtime`` |

Sizes follow fio's rules (HOWTO "Parameter types", parse.c ``__get_mult_bytes``):
with ``kb_base=1024`` (fio's default) ``k``/``kb``/``m``/``g``... are powers of
1024 and the IEC spellings ``KiB``/``MiB``... are powers of 1000 (fio keeps this
swap for old scripts); with ``kb_base=1000`` it is the other way round. Times
take ``us``, ``ms``, ``s``, ``m``, ``h``, ``d``; ``runtime`` and ``ramp_time``
are seconds and ``thinktime`` microseconds without a unit. Separate
read,write values (``bs=4k,64k``, ``rate=1m,500k``) follow the HOWTO's
"blocksize" rule: a value not ended by a comma also applies to the next
direction. ``bs=4k-64k`` is read as a range, like ``bsrange``.

Not supported: ``include`` (an error: paste the included lines in), ``$VAR``,
``${VAR}``, ``$ncpus``-style keywords and ``(...)`` arithmetic in an option
this importer reads (an error: fio fills them in at run time, from an
environment simcache does not have). Every other option is either read, known
to have no bearing on the model (file names, ``direct``, logging, ...), or
listed in one warning of options not modelled.

Source: fio's HOWTO.rst (axboe/fio), sections "Job file format", "Parameter
types", "I/O type", "Block size", "I/O size", "I/O rate", "Buffers and memory".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcache.errors import WorkloadFileError
from simcache.importers.base import Imported, check_option_names, group_name, numbered_lines

__all__ = [
    "KIND",
    "NAME",
    "JobResult",
    "JobSpec",
    "Notes",
    "Setting",
    "check_options",
    "job_group",
    "read",
    "sniff",
]

NAME = "fio-job"
KIND = "workload"

NUMJOBS_AS = ("vms", "workers")
"""Option ``numjobs``: each fio job clone is a VM (``vms_per_host``, the default) or a worker of one VM."""
OPTIONS: dict[str, str] = {"numjobs": 'how fio job clones are modelled: "vms" (one VM each, the default) or "workers" (workers of one VM)'}

_SNIFF_KEYS = frozenset(
    [
        "rw",
        "readwrite",
        "ioengine",
        "iodepth",
        "bs",
        "blocksize",
        "bssplit",
        "bsrange",
        "blocksize_range",
        "numjobs",
        "rwmixread",
        "rwmixwrite",
        "rate_iops",
        "thinktime",
        "random_distribution",
        "time_based",
        "direct",
    ]
)
"""Keys that mark INI text as a fio job file (generic ones such as size or filename do not)."""

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
"""Options known to change nothing the model describes (where the I/O goes, how fio logs or schedules itself)."""
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
"""Options that matter to fio's I/O but have no counterpart in the model, with what the model does instead."""
_OFF_VALUES = frozenset({"0", "none", "false", "no", "off"})
_SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap"})
"""Engines that issue one I/O at a time whatever iodepth says (HOWTO, "I/O depth")."""
_RW_VALUES = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite", "randtrimwrite")
_RANGE_SIZES = 16
"""A block-size range becomes at most this many sizes (fio draws multiples of the smallest; the mean is kept)."""
_MAX_COMPRESSIBILITY = 0.99
"""The model's compressibility is below 1; zero-filled buffers (fio's zero_buffers) get this."""


@dataclass(frozen=True)
class Setting:
    """One option as written: its value (``None`` for a bare key), where it was, and how errors name it."""

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
class JobResult:
    """A job as a group, with a one-line description and its length in seconds (``None`` if it has no runtime)."""

    group: dict[str, Any]
    description: str
    duration: float | None
    numjobs: int


@dataclass
class Notes:
    """What a file's jobs could not use: one warning of options not modelled, then one warning per other topic."""

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
            parts = [f"{label} in {_jobs(jobs)} ({reason})" for label, (reason, jobs) in self.ignored.items()]
            out.append("fio options not modelled (ignored): " + "; ".join(parts))
        out += [f"{_jobs(jobs)}: {message}" for message, jobs in self.topics.items()]
        return out


def _jobs(names: list[str]) -> str:
    return ", ".join(f"[{name}]" for name in names)


def sniff(head: str) -> bool:
    """INI text whose first line that is not blank or a comment is a ``[section]``, with fio's own option names."""
    first = None
    keys = set()
    for raw in head.splitlines():
        text = raw.strip()
        if not text or text[0] in ";#":
            continue
        if first is None:
            first = text
            if not (text.startswith("[") and text.endswith("]")) or text.startswith("[["):
                return False
            continue
        if text.startswith("[["):
            return False
        keys.add(text.partition("=")[0].strip().lower())
    return first is not None and bool(keys & _SNIFF_KEYS)


def check_options(path: Path, options: Mapping[str, Any], allowed: Mapping[str, str], format_name: str = NAME) -> dict[str, Any]:
    """The options, each checked: an unknown name is an error naming ``options.<name>`` and the allowed ones."""
    check_option_names(path, options, allowed, format_name)
    checked = dict(options)
    numjobs = checked.setdefault("numjobs", "vms")
    if numjobs not in NUMJOBS_AS:
        raise WorkloadFileError.at(path, None, "options.numjobs", f"numjobs is {numjobs!r}; use one of {', '.join(NUMJOBS_AS)}")
    return checked


def read(path: Path, options: Mapping[str, Any]) -> Imported:
    """One group per job of the job file at ``path``; see the module docstring for the mapping."""
    checked = check_options(path, options, OPTIONS)
    jobs = parse_job_file(path)
    notes = Notes()
    names: set[str] = set()
    groups, facts, durations = [], [], []
    for job in jobs:
        result = job_group(path, job, checked["numjobs"], notes, names)
        if result is None:
            continue
        groups.append(result.group)
        facts.append((f"job {job.name}", result.description))
        if result.duration is not None:
            durations.append(result.duration)
    if not groups:
        what = "no job section" if not jobs else "no job that reads or writes"
        raise WorkloadFileError.at(path, None, "", f"{what} to import; a job is a [name] section after [global] with rw=read, write, ...")
    facts.insert(0, ("jobs", str(len(groups))))
    return Imported(path, NAME, groups, warnings=notes.warnings(), facts=facts, duration=max(durations) if durations else None)


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
                    path, number, "section", f"cannot read {text!r}: a section header is [name], e.g. [global] or [randwrite]"
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
                path, number, "include", "include is not followed; paste the included file's options into this section instead"
            )
        if not re.fullmatch(r"[a-z0-9_.+-]+", key):
            raise WorkloadFileError.at(
                path, number, key or "key", f"cannot read {text!r}: fio job lines are key=value, a bare key, or [section]"
            )
        if current is None:
            raise WorkloadFileError.at(path, number, key, "an option before any section; start with [global] or a [job] header")
        current[key] = Setting(value.strip() if sep else None, number, key, order)
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
                f"{value!r} is filled in by fio when it runs ($VAR, ${{VAR}}, $ncpus or (arithmetic)); write the value itself",
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

    def number(self, key: str, default: float, *, low: float = 0, high: float = math.inf, choices: tuple[int, ...] = ()) -> float:
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
                f"{key}={self.spec.settings[key].value}: with fio's default kb_base=1024 the IEC spellings KiB, MiB, GiB mean "
                "powers of 1000 (fio swaps them for old scripts), so 4KiB is 4000 bytes; write 4k, or set kb_base=1000",
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
        """(read value, write value) of an option with separate read,write[,trim] values; ``None`` where unset."""
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
    """Bytes of a fio size (``4k``, ``1m``, ``64KiB``, ``0x1000``) as fio reads it with this ``kb_base``.

    Raises :class:`ValueError` for a percentage (``20%``: a share of a device
    this importer does not see) or an unreadable value.
    """
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(f"cannot read size {text!r}; give bytes with an optional suffix, e.g. 4096, 4k, 64k, 1m, 10g")
    num, unit = match["num"], match["unit"]
    number = int(num, 16) if num.startswith("0x") else float(num)
    if unit == "%":
        raise ValueError(f"{text!r} is a share of the file or device, which this importer does not know")
    if unit in ("", "b"):
        return round(number)
    # As fio's parse.c: "kib", "mib", ... are the IEC spellings; anything else goes by its first letter ("kb" = "k").
    iec = len(unit) == 3 and unit.endswith("ib")
    power = _POWERS.get(unit[0])
    if power is None or unit not in (unit[0], unit[0] + "b", unit[0] + "ib"):
        raise ValueError(f"cannot read size {text!r}; suffixes are k, m, g, t, p (also kb, KiB, ...)")
    # fio's kb_base=1024 swaps the prefixes for old scripts: k is 1024 and KiB is 1000 (HOWTO, kb_base).
    base = (1000 if kb_base == 1024 else 1024) if iec else kb_base
    return round(number * float(base) ** power)


_TIME = re.compile(r"(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[a-z]*)")
_TIME_UNITS = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def fio_time(text: str, default_unit: float) -> float:
    """Seconds of a fio time (``10``, ``500ms``, ``2m``); a bare number is in ``default_unit`` seconds."""
    match = _TIME.fullmatch(text.strip().lower())
    if match is None or (match["unit"] and match["unit"] not in _TIME_UNITS):
        raise ValueError(f"cannot read time {text!r}; give a number with an optional unit us, ms, s, m, h or d")
    factor = _TIME_UNITS[match["unit"]] if match["unit"] else default_unit
    return float(match["num"]) * factor


def _size_text(nbytes: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    return str(nbytes)


def job_group(source: Path, spec: JobSpec, numjobs_as: str, notes: Notes, names: set[str]) -> JobResult | None:
    """The job as a scenario group (``None`` when it only trims), noting in ``notes`` what it could not use."""
    job = _Job(source, spec, notes)
    name = spec.name
    for key, setting in spec.settings.items():
        if key in _USED or key in _NO_EFFECT:
            continue
        if key in _NOT_MODELLED:
            if setting.value is None or setting.value.strip().lower() not in _OFF_VALUES:
                notes.ignore(name, key, _NOT_MODELLED[key])
        else:
            notes.ignore(name, key, "not read by this importer")

    rw_key = job.latest("rw", "readwrite")
    rw_text = (job.text(rw_key) if rw_key else None) or "read"
    rw, _, modifier = rw_text.lower().partition(":")
    if rw not in _RW_VALUES:
        assert rw_key is not None
        raise job.fail(rw_key, f"rw is {rw_text!r}; use one of {', '.join(_RW_VALUES)}")
    if rw in ("trim", "randtrim"):
        notes.ignore(name, f"rw={rw}", "trims are not modelled; the job is left out")
        return None
    if rw in ("trimwrite", "randtrimwrite"):
        notes.ignore(name, f"rw={rw}", "trims are not modelled; only the writes are")
    if modifier:
        notes.ignore(name, f"rw={rw_text}", "the offset modifier after ':' is not modelled")
    reads = rw in ("read", "randread", "rw", "readwrite", "randrw")
    writes = rw not in ("read", "randread")
    read_fraction = 1.0 if not writes else 0.0 if not reads else _read_mix(job)

    read_sizes, write_sizes = _block_sizes(job)
    sizes = _merge_sizes(read_sizes, write_sizes, read_fraction)
    if reads and writes and read_sizes != write_sizes:
        notes.add(
            name,
            "reads and writes have different block sizes; the model draws every I/O's size from one mix weighted by the read share",
        )

    numjobs = int(job.number("numjobs", 1, low=1, high=1024))
    workload: dict[str, Any] = {"read_fraction": read_fraction, "sizes": {_size_text(s): w for s, w in sizes.items()}}
    rate = _rate(job, notes, reads, writes, read_fraction, read_sizes, write_sizes)
    clones = numjobs if numjobs_as == "workers" else 1
    if rate is not None:
        kind, per_job, read_fraction = rate
        workload = {"mode": "open", kind: per_job * clones, **workload, "read_fraction": read_fraction}
        workload["sizes"] = {_size_text(s): w for s, w in _merge_sizes(read_sizes, write_sizes, read_fraction).items()}
        loop = f"open loop {kind} {per_job * clones:.6g}{' B/s' if kind == 'throughput' else ''}"
    else:
        depth = int(job.number("iodepth", 1, low=1, high=1024))
        engine = (job.text("ioengine") or "psync").lower()
        if engine in _SYNC_ENGINES and depth > 1:
            notes.add(name, f"iodepth > 1 with the synchronous ioengine {engine}: fio keeps one I/O in flight, so outstanding = 1")
            depth = 1
        workload = {"mode": "closed", "workers": clones, "outstanding": depth, **workload}
        loop = f"closed loop, {clones} worker(s) x {depth} outstanding"
    think = job.seconds("thinktime", 1e-6)
    if think:
        if rate is not None:
            notes.add(name, "thinktime with a rate cap: the open loop's arrivals ignore think time")
        else:
            workload["think_time"] = think
            loop += f", think {think * 1e6:.6g} µs"

    working_set = _working_set(job, notes)
    if working_set is not None:
        workload["working_set"] = working_set
    workload.update(_access(job, notes, rw.startswith("rand"), read_fraction))
    compressibility = _compressibility(job, notes)
    if compressibility:
        workload["compressibility"] = compressibility
    direct = job.flag("direct") or (job.has("buffered") and not job.flag("buffered"))
    if not direct:
        notes.add(name, "buffered I/O (direct=0, fio's default): the guest's page cache absorbs I/O that the model sends to the host")

    ramp = job.seconds("ramp_time", 1.0) or 0.0
    runtime = job.seconds("runtime", 1.0)
    duration = ramp + runtime if runtime else None
    group = {"name": group_name(name, names, fallback="job"), "vms_per_host": numjobs if numjobs_as == "vms" else 1, "workload": workload}
    vms = f"{numjobs} VM(s)" if numjobs_as == "vms" else "1 VM"
    length = "no runtime" if runtime is None else f"{'' if job.flag('time_based') else 'at most '}{runtime:g} s"
    if ramp:
        length += f" after {ramp:g} s ramp"
    mix = f"{read_fraction:.0%} reads" if reads and writes else "reads" if reads else "writes"
    ws = _size_text(working_set) if working_set else "default working set"
    description = f"{rw} ({mix}), sizes {', '.join(workload['sizes'])}, {loop}, {vms}, {workload['access']} over {ws}, {length}"
    return JobResult(group, description, duration, numjobs)


def _read_mix(job: _Job) -> float:
    key = job.latest("rwmixread", "rwmixwrite")
    if key is None:
        return 0.5
    percent = job.number(key, 50, low=0, high=100)
    return percent / 100 if key == "rwmixread" else 1 - percent / 100


def _block_sizes(job: _Job) -> tuple[dict[int, float], dict[int, float]]:
    """Read and write size mixes, bytes -> weight."""
    if job.has("bssplit"):
        return _split_mix(job, "bssplit")
    key = job.latest("bs", "blocksize", "bsrange", "blocksize_range")
    if key is None:
        return {4096: 1.0}, {4096: 1.0}
    read, write = job.directions(key)
    return _range_mix(job, key, read), _range_mix(job, key, write)


def _range_mix(job: _Job, key: str, text: str | None) -> dict[int, float]:
    if text is None:
        return {4096: 1.0}
    low, high = job.size_range(key, text)
    if low <= 0:
        raise job.fail(key, f"{key}: block sizes must be positive, not {text!r}")
    multiples = high // low
    steps = (
        sorted({round(1 + i * (multiples - 1) / (_RANGE_SIZES - 1)) for i in range(_RANGE_SIZES)})
        if multiples > _RANGE_SIZES
        else range(1, multiples + 1)
    )
    return {k * low: 1.0 for k in steps}


def _split_mix(job: _Job, key: str) -> tuple[dict[int, float], dict[int, float]]:
    read, write = job.directions(key)
    return _one_split(job, key, read), _one_split(job, key, write)


def _one_split(job: _Job, key: str, text: str | None) -> dict[int, float]:
    if text is None:
        return {4096: 1.0}
    weights: dict[int, float] = {}
    blanks: list[int] = []
    for entry in filter(None, (e.strip() for e in text.split(":"))):
        size_text, _, percent_text = entry.partition("/")
        size = job.size(key, size_text)
        if size <= 0:
            raise job.fail(key, f"{key}: block sizes must be positive, not {size_text!r}")
        if percent_text.strip():
            try:
                percent = float(percent_text)
            except ValueError:
                raise job.fail(
                    key, f"{key}: cannot read percentage {percent_text!r} in {entry!r}; write size/percent, e.g. 4k/50"
                ) from None
            weights[size] = weights.get(size, 0.0) + percent
        else:
            blanks.append(size)
    total = sum(weights.values())
    if total > 100 + 1e-9:
        raise job.fail(key, f"{key}: the percentages of {text!r} add up to {total:g}, more than 100")
    for size in blanks:  # fio shares what is left evenly among sizes given without a percentage
        weights[size] = weights.get(size, 0.0) + (100 - total) / len(blanks)
    weights = {s: w for s, w in weights.items() if w > 0}
    if not weights:
        raise job.fail(key, f"{key}: {text!r} gives no size a share; write e.g. 4k/50:64k/50")
    return weights


def _merge_sizes(read: dict[int, float], write: dict[int, float], read_fraction: float) -> dict[int, float]:
    merged: dict[int, float] = {}
    for mix, share in ((read, read_fraction), (write, 1 - read_fraction)):
        total = sum(mix.values())
        for size, weight in mix.items():
            if share > 0:
                merged[size] = merged.get(size, 0.0) + share * weight / total
    return {size: round(weight, 6) for size, weight in sorted(merged.items())}


def _mean(mix: dict[int, float]) -> float:
    return sum(s * w for s, w in mix.items()) / sum(mix.values())


def _rate(
    job: _Job, notes: Notes, reads: bool, writes: bool, read_fraction: float, read_sizes: dict[int, float], write_sizes: dict[int, float]
) -> tuple[str, float, float] | None:
    """(``"iops"`` or ``"throughput"``, rate per fio job, read fraction) when the job's I/O is capped; ``None`` for a closed loop."""
    keys = [k for k in ("rate_iops", "rate") if job.has(k)]
    if not keys:
        return None
    key = keys[0]
    if len(keys) == 2:
        notes.ignore(job.spec.name, "rate", "rate_iops is used; the model takes one of the two")
    caps = []
    for active, text in zip((reads, writes), job.directions(key), strict=True):
        caps.append(float(job.size(key, text)) if active and text is not None else None)
    read_cap, write_cap = caps
    if (reads and read_cap is None) or (writes and write_cap is None):
        if read_cap is None and write_cap is None:
            return None
        notes.add(
            job.spec.name, f"{key} caps only one direction; the model cannot cap reads and writes apart, so the job runs as a closed loop"
        )
        return None
    # The mix (rwmixread) holds and the direction that reaches its cap first sets the pace: at a total of T I/Os per
    # second, reads run at T x read share and writes at T x write share, each at most its cap.
    shares = (read_fraction, 1.0 - read_fraction)
    if key == "rate_iops":
        per_op = (1.0, 1.0)
    else:
        per_op = (_mean(read_sizes) if reads else 1.0, _mean(write_sizes) if writes else 1.0)
    limits = [cap / (share * unit) for cap, share, unit in zip(caps, shares, per_op, strict=True) if cap is not None and share > 0]
    if not limits:
        return None
    total_ios = min(limits)
    if key == "rate_iops":
        return "iops", total_ios, read_fraction
    mean_size = shares[0] * per_op[0] + shares[1] * per_op[1]
    return "throughput", total_ios * mean_size, read_fraction


def _working_set(job: _Job, notes: Notes) -> int | None:
    files = int(job.number("nrfiles", 1, low=1))
    if job.has("filesize") and job.text("filesize") is not None:
        low, high = job.size_range("filesize", job.text("filesize") or "")
        return (low + high) // 2 * files
    text = job.text("size")
    if text is None:
        notes.add(job.spec.name, "no size: fio uses the whole file or device; the working set is the scenario's default (set working_set)")
        return None
    if text.strip().endswith("%"):
        notes.ignore(job.spec.name, f"size={text}", "a share of the device; the scenario's default working set is used")
        return None
    size = job.size("size", text)
    if size <= 0:
        raise job.fail("size", f"size must be positive, not {text!r}")
    return size


def _access(job: _Job, notes: Notes, random: bool, read_fraction: float) -> dict[str, Any]:
    if not random:
        return {"access": "sequential"}
    if job.has("percentage_random"):
        read, write = job.directions("percentage_random")
        text = (read if read_fraction >= 0.5 else write) or "100"
        try:
            percent = float(text)
        except ValueError:
            raise job.fail("percentage_random", f"percentage_random is {text!r}; give a number from 0 to 100") from None
        if percent < 50:
            if percent > 0:
                notes.add(
                    job.spec.name, f"percentage_random={percent:g}: the model has no mix of random and sequential I/O; sequential is used"
                )
            return {"access": "sequential"}
        if percent < 100:
            notes.add(job.spec.name, f"percentage_random={percent:g}: the model has no mix of random and sequential I/O; random is used")
    distribution = job.text("random_distribution")
    if distribution is None:
        return {"access": "uniform"}
    text = distribution
    kind, _, args = text.split(",")[0].partition(":")
    kind = kind.strip().lower()
    if kind == "random":
        return {"access": "uniform"}
    if kind == "zipf":
        theta_text = args.partition(":")[0]
        try:
            theta = float(theta_text)
        except ValueError:
            raise job.fail("random_distribution", f"zipf needs a theta, e.g. zipf:1.2, not {text!r}") from None
        if not 0 < theta <= 5:
            raise job.fail("random_distribution", f"zipf theta {theta:g} is outside what the model draws (above 0, at most 5)")
        if ":" in args:
            notes.ignore(job.spec.name, "random_distribution zipf centre", "the hot spot is at the start of the working set")
        return {"access": "zipf", "zipf_theta": theta}
    if kind in ("pareto", "normal", "gauss", "zoned", "zoned_abs"):
        notes.ignore(
            job.spec.name,
            f"random_distribution={text}",
            "not modelled: uniform access is used, so the hit rate is lower than fio's skew gives",
        )
        return {"access": "uniform"}
    raise job.fail("random_distribution", f"random_distribution is {text!r}; use random, zipf:θ, pareto:h, normal:σ or zoned:...")


def _compressibility(job: _Job, notes: Notes) -> float:
    if job.has("buffer_compress_percentage"):
        return min(job.number("buffer_compress_percentage", 0, low=0, high=100) / 100, _MAX_COMPRESSIBILITY)
    if job.flag("zero_buffers"):
        notes.add(
            job.spec.name,
            f"zero_buffers: zero-filled data compresses to almost nothing, so compressibility = {_MAX_COMPRESSIBILITY} "
            "(real data compresses far less; lower it for a realistic run)",
        )
        return _MAX_COMPRESSIBILITY
    return 0.0
