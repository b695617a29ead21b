"""fio job files: one scenario group per job, its workload from the job's options.

A job file is INI text (fio's HOWTO, "Job file format"): ``[global]`` sets
defaults for the job sections after it (a later ``[global]`` adds to them for
the jobs after it); every other ``[name]`` is a job. Lines starting with ``;``
or ``#`` are comments, and fio cuts a line at a ``;`` or ``#`` anywhere.

How options become a :class:`~simcache.spec.Workload` (per VM):

| fio option | scenario | |---|---| | ``rw``/``readwrite`` | ``read_fraction`` (1, 0, or
``rwmixread``/``rwmixwrite``, default 50%) and ``access`` | | | (``rand*``: uniform, else
sequential); trims are not modelled | | ``bs``, ``bsrange``, ``bssplit`` | ``sizes``; read,write
values that differ: ``read_sizes``, ``write_sizes`` | | ``iodepth`` | closed loop ``outstanding`` (1
for the synchronous engines sync, psync, vsync, pvsync, pvsync2, mmap) | | ``rate_iops`` / ``rate``
| open loop ``iops`` / ``throughput``: the rw mix holds, the first direction at its cap sets the
total | | ``thinktime`` | ``think_time`` (µs when no unit is given) | | ``numjobs`` |
``vms_per_host`` (one VM per fio job clone), or ``workers`` with option ``numjobs = "workers"`` | |
``size`` / ``filesize`` x ``nrfiles`` | ``working_set`` | | ``random_distribution`` | ``zipf:θ`` ->
``access = "zipf"``, ``zipf_theta = θ``; pareto, normal, zoned: uniform | | ``percentage_random`` |
random when 50 or more, else sequential (the model has no mix of the two) | |
``buffer_compress_percentage`` / ``zero_buffers`` | ``compressibility`` (zero-filled buffers: 0.99)
| | ``runtime``, ``ramp_time``, ``time_based`` | the job's length; :attr:`FileReading.duration` is
the longest job's ``ramp_time + runtime`` |

The INI reading (sections, ``[global]`` inheritance, comments), the parsing of
values (sizes with ``kb_base``, times, ranges, read,write directions; how sizes
and times are read is told there) and the catalogue of options are in
:mod:`simcache.traces.formats.fio_options`; :class:`Setting`, :class:`JobSpec`,
:class:`Notes`, :func:`parse_job_file`, :func:`fio_size` and :func:`fio_time`
stay importable from here. This module maps a job's options to a workload
(:func:`job_group`).

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

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcache.base.errors import WorkloadFileError, counted
from simcache.base.names import group_name
from simcache.traces.formats.base import FileReading, check_option_names
from simcache.traces.formats.fio_options import (
    JobSpec,
    Notes,
    Setting,
    _Job,
    fio_size,
    fio_time,
    note_unused,
    parse_job_file,
)

__all__ = [
    "KIND",
    "NAME",
    "JobResult",
    "JobSpec",
    "Notes",
    "Setting",
    "check_options",
    "fio_size",
    "fio_time",
    "job_group",
    "parse_job_file",
    "read",
    "sniff",
]

NAME = "fio-job"
KIND = "workload"

NUMJOBS_AS = ("vms", "workers")
"""Option ``numjobs``: each fio job clone is a VM (``vms_per_host``, the default) or a worker of
one VM."""
OPTIONS: dict[str, str] = {
    "numjobs": (
        'how fio job clones are modelled: "vms" (one VM each, the default) or "workers" (workers '
        "of one VM)"
    )
}

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

_SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap"})
"""Engines that issue one I/O at a time whatever iodepth says (HOWTO, "I/O depth")."""
_RW_VALUES = (
    "read",
    "write",
    "randread",
    "randwrite",
    "rw",
    "readwrite",
    "randrw",
    "trim",
    "randtrim",
    "trimwrite",
    "randtrimwrite",
)
_RANGE_SIZES = 16
"""A block-size range becomes at most this many sizes (fio draws multiples of the smallest; the
mean is kept)."""
_MAX_COMPRESSIBILITY = 0.99
"""The model's compressibility is below 1; zero-filled buffers (fio's zero_buffers) get this."""


@dataclass
class JobResult:
    """A job as a group, with a one-line description and its length in seconds (``None`` if it
    has no runtime)."""

    group: dict[str, Any]
    description: str
    duration: float | None
    numjobs: int


def sniff(head: str) -> bool:
    """INI text whose first line that is not blank or a comment is a ``[section]``, with fio's
    own option names."""
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


def check_options(
    path: Path, options: Mapping[str, Any], allowed: Mapping[str, str], format_name: str = NAME
) -> dict[str, Any]:
    """The options, each checked: an unknown name is an error naming ``options.<name>`` and the
    allowed ones."""
    check_option_names(path, options, allowed, format_name)
    checked = dict(options)
    numjobs = checked.setdefault("numjobs", "vms")
    if numjobs not in NUMJOBS_AS:
        raise WorkloadFileError.at(
            path,
            None,
            "options.numjobs",
            f"numjobs is {numjobs!r}; use one of {', '.join(NUMJOBS_AS)}",
        )
    return checked


def read(path: Path, options: Mapping[str, Any]) -> FileReading:
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
        raise WorkloadFileError.at(
            path,
            None,
            "",
            f"{what} to import; a job is a [name] section after [global] with rw=read, write, ...",
        )
    facts.insert(0, ("jobs", str(len(groups))))
    return FileReading(
        path,
        NAME,
        groups,
        warnings=notes.warnings(),
        facts=facts,
        duration=max(durations) if durations else None,
    )


def _size_text(nbytes: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    return str(nbytes)


def job_group(
    source: Path, spec: JobSpec, numjobs_as: str, notes: Notes, names: set[str]
) -> JobResult | None:
    """The job as a scenario group (``None`` when it only trims), noting in ``notes`` what it
    could not use."""
    job = _Job(source, spec, notes)
    name = spec.name
    note_unused(source, spec, notes)

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
    numjobs = int(job.number("numjobs", 1, low=1, high=1024))
    workload: dict[str, Any] = {
        "read_fraction": read_fraction,
        **_size_fields(reads, writes, read_sizes, write_sizes),
    }
    rate = _rate(job, notes, reads, writes, read_fraction, read_sizes, write_sizes)
    clones = numjobs if numjobs_as == "workers" else 1
    if rate is not None:
        kind, per_job, read_fraction = rate
        workload = {
            "mode": "open",
            kind: per_job * clones,
            **workload,
            "read_fraction": read_fraction,
        }
        loop = f"open loop {kind} {per_job * clones:.6g}{' B/s' if kind == 'throughput' else ''}"
    else:
        depth = int(job.number("iodepth", 1, low=1, high=1024))
        engine = (job.text("ioengine") or "psync").lower()
        if engine in _SYNC_ENGINES and depth > 1:
            notes.add(
                name,
                f"iodepth > 1 with the synchronous ioengine {engine}: fio keeps one I/O in flight, "
                "so outstanding = 1",
            )
            depth = 1
        workload = {"mode": "closed", "workers": clones, "outstanding": depth, **workload}
        loop = f"closed loop, {counted(clones, 'worker')} x {depth} outstanding"
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
        notes.add(
            name,
            "buffered I/O (direct=0, fio's default): the guest's page cache absorbs I/O that the "
            "model sends to the host",
        )

    ramp = job.seconds("ramp_time", 1.0) or 0.0
    runtime = job.seconds("runtime", 1.0)
    duration = ramp + runtime if runtime else None
    group = {
        "name": group_name(name, names, fallback="job"),
        "vms_per_host": numjobs if numjobs_as == "vms" else 1,
        "workload": workload,
    }
    vms = counted(numjobs, "VM") if numjobs_as == "vms" else "1 VM"
    length = (
        "no runtime"
        if runtime is None
        else f"{'' if job.flag('time_based') else 'at most '}{runtime:g} s"
    )
    if ramp:
        length += f" after {ramp:g} s ramp"
    mix = f"{read_fraction:.0%} reads" if reads and writes else "reads" if reads else "writes"
    ws = _size_text(working_set) if working_set else "default working set"
    description = (
        f"{rw} ({mix}), {_sizes_text(workload)}, {loop}, {vms}, {workload['access']} over {ws}, "
        f"{length}"
    )
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
                    key,
                    f"{key}: cannot read percentage {percent_text!r} in {entry!r}; write "
                    "size/percent, e.g. 4k/50",
                ) from None
            weights[size] = weights.get(size, 0.0) + percent
        else:
            blanks.append(size)
    total = sum(weights.values())
    if total > 100 + 1e-9:
        raise job.fail(
            key, f"{key}: the percentages of {text!r} add up to {total:g}, more than 100"
        )
    for size in blanks:  # fio shares what is left evenly among sizes given without a percentage
        weights[size] = weights.get(size, 0.0) + (100 - total) / len(blanks)
    weights = {s: w for s, w in weights.items() if w > 0}
    if not weights:
        raise job.fail(key, f"{key}: {text!r} gives no size a share; write e.g. 4k/50:64k/50")
    return weights


def _size_fields(
    reads: bool, writes: bool, read: dict[int, float], write: dict[int, float]
) -> dict[str, dict[str, float]]:
    """``sizes`` when the job's I/Os share one mix (or only one direction runs), else
    ``read_sizes`` and ``write_sizes``."""
    if reads and writes and _shares(read) != _shares(write):
        return {"read_sizes": _mix_field(read), "write_sizes": _mix_field(write)}
    return {"sizes": _mix_field(read if reads else write)}


def _shares(mix: dict[int, float]) -> dict[int, float]:
    total = sum(mix.values())
    return {size: round(weight / total, 6) for size, weight in sorted(mix.items())}


def _mix_field(mix: dict[int, float]) -> dict[str, float]:
    """A size mix as the scenario writes it: sizes by increasing bytes, weights as shares of 1 (6
    decimals)."""
    return {_size_text(size): share for size, share in _shares(mix).items()}


def _sizes_text(workload: Mapping[str, Any]) -> str:
    if "sizes" in workload:
        return f"sizes {', '.join(workload['sizes'])}"
    return (
        f"read sizes {', '.join(workload['read_sizes'])}, write sizes "
        f"{', '.join(workload['write_sizes'])}"
    )


def _mean(mix: dict[int, float]) -> float:
    return sum(s * w for s, w in mix.items()) / sum(mix.values())


def _rate(
    job: _Job,
    notes: Notes,
    reads: bool,
    writes: bool,
    read_fraction: float,
    read_sizes: dict[int, float],
    write_sizes: dict[int, float],
) -> tuple[str, float, float] | None:
    """(``"iops"`` or ``"throughput"``, rate per fio job, read fraction) when the job's I/O is
    capped; ``None`` for a closed loop."""
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
            job.spec.name,
            f"{key} caps only one direction; the model cannot cap reads and writes apart, so the "
            "job runs as a closed loop",
        )
        return None
    # The mix (rwmixread) holds and the direction that reaches its cap first sets the pace: at a
    # total of T I/Os per second, reads run at T x read share and writes at T x write share, each at
    # most its cap.
    shares = (read_fraction, 1.0 - read_fraction)
    if key == "rate_iops":
        per_op = (1.0, 1.0)
    else:
        per_op = (_mean(read_sizes) if reads else 1.0, _mean(write_sizes) if writes else 1.0)
    limits = [
        cap / (share * unit)
        for cap, share, unit in zip(caps, shares, per_op, strict=True)
        if cap is not None and share > 0
    ]
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
        notes.add(
            job.spec.name,
            "no size: fio uses the whole file or device; the working set is the scenario's default "
            "(set working_set)",
        )
        return None
    if text.strip().endswith("%"):
        notes.ignore(
            job.spec.name,
            f"size={text}",
            "a share of the device; the scenario's default working set is used",
        )
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
            raise job.fail(
                "percentage_random", f"percentage_random is {text!r}; give a number from 0 to 100"
            ) from None
        if percent < 50:
            if percent > 0:
                notes.add(
                    job.spec.name,
                    f"percentage_random={percent:g}: the model has no mix of random and sequential "
                    "I/O; sequential is used",
                )
            return {"access": "sequential"}
        if percent < 100:
            notes.add(
                job.spec.name,
                f"percentage_random={percent:g}: the model has no mix of random and sequential "
                "I/O; random is used",
            )
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
            raise job.fail(
                "random_distribution", f"zipf needs a theta, e.g. zipf:1.2, not {text!r}"
            ) from None
        if not 0 < theta <= 5:
            raise job.fail(
                "random_distribution",
                f"zipf theta {theta:g} is outside what the model draws (above 0, at most 5)",
            )
        if ":" in args:
            notes.ignore(
                job.spec.name,
                "random_distribution zipf centre",
                "the hot spot is at the start of the working set",
            )
        return {"access": "zipf", "zipf_theta": theta}
    if kind in ("pareto", "normal", "gauss", "zoned", "zoned_abs"):
        notes.ignore(
            job.spec.name,
            f"random_distribution={text}",
            "not modelled: uniform access is used, so the hit rate is lower than fio's skew gives",
        )
        return {"access": "uniform"}
    raise job.fail(
        "random_distribution",
        f"random_distribution is {text!r}; use random, zipf:θ, pareto:h, normal:σ or zoned:...",
    )


def _compressibility(job: _Job, notes: Notes) -> float:
    if job.has("buffer_compress_percentage"):
        return min(
            job.number("buffer_compress_percentage", 0, low=0, high=100) / 100, _MAX_COMPRESSIBILITY
        )
    if job.flag("zero_buffers"):
        notes.add(
            job.spec.name,
            "zero_buffers: zero-filled data compresses to almost nothing, so compressibility = "
            f"{_MAX_COMPRESSIBILITY} "
            "(real data compresses far less; lower it for a realistic run)",
        )
        return _MAX_COMPRESSIBILITY
    return 0.0
