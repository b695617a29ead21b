"""fio JSON results (``fio --output-format=json``): the jobs' workloads, and what fio measured as
checks.

Layout (fio's stat.c, ``show_thread_status_json`` and ``add_ddir_status_json``):
the top-level object has ``"fio version"``, ``"global options"`` and ``"jobs"``;
each job has ``"jobname"``, ``"groupid"``, ``"error"``, ``"job options"`` (option
strings as written) and one object per direction, ``"read"``, ``"write"``,
``"trim"`` (``"mixed"`` with ``unified_rw_reporting``), holding ``io_bytes``,
``bw_bytes``, ``bw`` (KiB/s), ``iops``, ``runtime`` (ms), ``total_ios`` and the
latencies ``slat_ns``, ``clat_ns``, ``lat_ns`` (``min``, ``max``, ``mean``,
``stddev``, ``N`` and, when percentiles are on, ``percentile`` keyed
``"99.000000"``, in ns). fio before 3.0 writes ``slat``/``clat``/``lat`` in µs
and ``io_bytes`` in KiB (without ``io_kbytes``). Some fio versions print other
lines before the object; reading starts at the first ``{``. With
``--status-interval`` the file holds several objects: the last (the whole run)
is used.

The workloads come from ``"global options"`` + ``"job options"`` through
:func:`simcache.traces.formats.fio_job.job_group`, so every option is read exactly as
in a job file. Each job direction gives ``[[expect]]`` checks on the job's group
and op (``mixed`` -> ``any``): ``iops``, ``mb_s`` (10^6 bytes/s), ``mean_ms``
(fio's ``lat``: submission + completion) and the percentiles that have a
record metric (p50, p95, p99, p99.9 -> ``p50_ms``, ``p95_ms``, ``p99_ms``,
``p999_ms``). Percentiles come from ``lat_ns`` when fio computed them there
(``lat_percentiles=1``), else from ``clat_ns`` (completion only; fio's
default), and the check's text says which. Every check is ``approx`` = fio's
figure with ``rel`` = 0.25 (option ``rel``): a simulated cluster is a model of
the one fio ran on, so a quarter either way is a match. Figures without a
record metric, or too noisy to check (other percentiles, the largest
latency, I/O counts), are listed in the facts.

A job with ``numjobs`` > 1 is one group of ``numjobs`` VMs (or workers, option
``numjobs = "workers"``). With ``group_reporting`` fio prints one entry for all
clones, whose figures are already the group's; without it, each clone has
its own entry (same ``jobname``): their IOPS and bandwidth are summed and
their mean latency weighted by I/O count, and their percentiles, which cannot
be merged, are listed in the facts only. With ``group_reporting`` across
several job sections fio prints only the first job's options: the other
sections' workloads are not in the file.

Source: fio's stat.c and HOWTO.rst (axboe/fio), "--output-format" and
"Interpreting the output".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcache.base.errors import WorkloadFileError, counted
from simcache.base.metrics import PERCENTILES
from simcache.traces.formats.base import FileReading, read_text
from simcache.traces.formats.fio_job import OPTIONS as JOB_OPTIONS
from simcache.traces.formats.fio_job import (
    JobResult,
    JobSpec,
    Notes,
    Setting,
    check_options,
    job_group,
)

__all__ = [
    "DEFAULT_REL",
    "KIND",
    "NAME",
    "Figures",
    "MeasuredJob",
    "Measurements",
    "measured_jobs",
    "read",
    "sniff",
]

NAME = "fio-json"
KIND = "measurement"

DEFAULT_REL = 0.25
"""Relative tolerance of the checks made from fio's figures (option ``rel``)."""
OPTIONS: dict[str, str] = {
    **JOB_OPTIONS,
    "rel": f"relative tolerance of the checks, a number above 0 (default {DEFAULT_REL})",
}
_DIRECTIONS = {"read": "read", "write": "write", "mixed": "any"}
_CHECKED_PERCENTILES = {pct: name for name, pct in PERCENTILES.items()}
"""fio percentile (e.g. 99.0) -> the record metric holding it."""


def sniff(head: str) -> bool:
    """JSON with fio's top-level ``"fio version"`` key."""
    return "{" in head and '"fio version"' in head


@dataclass
class Figures:
    """One direction's figures of one fio job (its clones combined): latencies in ms."""

    ios: int
    iops: float
    bytes_per_s: float
    runtime_s: float
    mean_ms: float | None
    max_ms: float | None
    percentiles: dict[float, float] = field(default_factory=dict)
    percentile_source: str = "clat"


@dataclass
class MeasuredJob:
    """One fio job of a result file: its options as written, the job as a group, and what fio
    measured."""

    jobname: str
    groupid: Any
    """fio's group: jobs of one group ran at the same time (``stonewall`` or ``new_group`` starts
    the next)."""
    index: int
    """Position of the job's first entry in ``jobs``."""
    settings: dict[str, Setting]
    """``"global options"`` with the job's ``"job options"`` over them."""
    result: JobResult | None
    """The job as a scenario group; ``None`` for a job that only trims."""
    entries: int
    """fio's entries for the job: 1 with ``group_reporting`` (or ``numjobs`` = 1), else one per
    clone."""
    figures: dict[str, Figures] = field(default_factory=dict)
    """``read``, ``write`` or ``mixed`` -> the clones' figures combined (directions without I/O
    left out)."""
    sections: set[str] = field(default_factory=set)
    """The directions (``read``, ``write``, ``mixed``) the job's entries have an object for, with
    I/O or not."""
    trimmed: bool = False


@dataclass
class Measurements:
    """The jobs of one fio JSON result, with the notes of reading it."""

    document: dict[str, Any]
    jobs: list[MeasuredJob]
    notes: list[str]
    """What reading the file skipped (fio's messages, earlier status objects, jobs that ended in
    error)."""
    job_notes: Notes
    """What the jobs' options could not become in the model."""


def measured_jobs(path: Path, numjobs_as: str = "workers") -> Measurements:
    """Every job of an fio JSON result, its entries merged (clones without ``group_reporting``:
    IOPS and bandwidth summed, mean latency weighted by I/Os). ``numjobs_as``: ``workers`` or
    ``vms``, as the import's option."""
    document, notes = _document(path)
    jobs = document.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise WorkloadFileError.at(
            path, None, "jobs", "no jobs list; is this fio --output-format=json output?"
        )
    globals_ = _options(path, document.get("global options", {}), '"global options"', 0)
    entries: dict[tuple[str, Any], list[tuple[int, dict[str, Any]]]] = {}
    for i, job in enumerate(jobs):
        if not isinstance(job, dict) or not isinstance(job.get("jobname"), str):
            raise WorkloadFileError.at(
                path, None, f"jobs[{i}].jobname", "each job is an object with a jobname"
            )
        groupid = job.get("groupid")
        if groupid is not None and (not isinstance(groupid, int) or isinstance(groupid, bool)):
            raise WorkloadFileError.at(
                path,
                None,
                f"jobs[{i}].groupid",
                f"fio writes a job's group as a whole number; got {json.dumps(groupid)[:40]}",
            )
        entries.setdefault((job["jobname"], groupid), []).append((i, job))
    job_notes = Notes()
    names: set[str] = set()
    measured = []
    for (jobname, groupid), clones in entries.items():
        first_index, first = clones[0]
        settings = dict(globals_)
        settings.update(
            _options(
                path,
                first.get("job options", {}),
                f'jobs[{first_index}]."job options"',
                len(settings),
            )
        )
        result = job_group(path, JobSpec(jobname, settings), numjobs_as, job_notes, names)
        for index, clone in clones:
            if clone.get("error"):
                notes.append(
                    f"job {jobname} (jobs[{index}]) ended with error {clone['error']}: its figures "
                    "may cover part of the run"
                )
        job = MeasuredJob(jobname, groupid, first_index, settings, result, len(clones))
        for key in _DIRECTIONS:
            if any(isinstance(entry.get(key), dict) for _, entry in clones):
                job.sections.add(key)
            per_clone = [
                _direction(path, entry[key], f"jobs[{index}].{key}")
                for index, entry in clones
                if isinstance(entry.get(key), dict)
            ]
            per_clone = [d for d in per_clone if d.ios > 0 or d.iops > 0]
            if per_clone:
                job.figures[key] = _combine(per_clone)
        job.trimmed = isinstance(first.get("trim"), dict) and bool(
            _number(path, first["trim"].get("total_ios", 0), f"jobs[{first_index}].trim.total_ios")
        )
        measured.append(job)
    return Measurements(document, measured, notes, job_notes)


def read(path: Path, options: Mapping[str, Any]) -> FileReading:
    """The jobs of an fio JSON result as groups, and their measured figures as checks; see the
    module docstring."""
    checked = check_options(path, options, OPTIONS, NAME)
    rel = _rel(path, checked.get("rel", DEFAULT_REL))
    measurements = measured_jobs(path, checked["numjobs"])
    notes = measurements.notes
    groups: list[dict[str, Any]] = []
    expect: list[dict[str, Any]] = []
    facts: list[tuple[str, str]] = [
        ("fio version", str(measurements.document.get("fio version", "not given")))
    ]
    runtimes: list[float] = []
    durations: list[float] = []
    for job in measurements.jobs:
        result, jobname = job.result, job.jobname
        if result is None:
            continue
        group = result.group["name"]
        groups.append(result.group)
        facts.append((f"job {jobname}", result.description))
        if result.duration is not None:
            durations.append(result.duration)
        if result.numjobs > 1:
            how = (
                "one entry (group_reporting): its figures are the sum over the clones"
                if job.entries == 1
                else (
                    f"{job.entries} entries, one per clone: IOPS and bandwidth summed, mean "
                    "latency weighted by I/Os"
                )
            )
            facts.append((f"job {jobname} clones", f"numjobs={result.numjobs}, {how}"))
        if job.entries not in (1, result.numjobs):
            notes.append(
                f"job {jobname}: numjobs={result.numjobs} but {job.entries} entries; the figures "
                "are summed over the entries"
            )
        notes += _measured_directions(job, result)
        for key, figures in job.figures.items():
            runtimes.append(figures.runtime_s)
            if figures.mean_ms is None and not figures.percentiles:
                notes.append(
                    f"job {jobname} {key}: fio's latency figures are missing (jobs[{job.index}]."
                    f"{key} has no lat_ns or clat_ns with a mean or percentiles; lat and clat "
                    "before fio 3): its latency is not checked, only IOPS and bandwidth"
                )
            checks, unchecked = _checks(
                group, jobname, _DIRECTIONS[key], figures, rel, merged=job.entries > 1
            )
            expect += checks
            facts.append((f"job {jobname} {key} not checked", ", ".join(unchecked)))
        if job.trimmed:
            facts.append((f"job {jobname} trim", "trims were measured but are not modelled"))
    if not groups:
        raise WorkloadFileError.at(path, None, "jobs", "no job that reads or writes to import")
    facts.insert(1, ("jobs", str(len(groups))))
    duration = (
        max(runtimes) if runtimes and max(runtimes) > 0 else max(durations) if durations else None
    )
    return FileReading(
        path,
        NAME,
        groups,
        expect=expect,
        warnings=measurements.job_notes.warnings() + notes,
        facts=facts,
        duration=duration,
    )


def _measured_directions(job: MeasuredJob, result: JobResult) -> list[str]:
    """Warnings when what fio measured does not fit the job's options: a direction the workload
    does that has no section in the file (nothing to check it against), or one fio measured no
    I/O in, or measured I/O in a direction the workload does not do (review 65: a job whose
    ``rw`` came from an included file was imported as fio's default, ``rw=read``, while fio
    measured writes only, and every check then failed)."""
    if "mixed" in job.sections:  # unified_rw_reporting: one figure for both directions
        return []
    read_fraction = float(result.group["workload"].get("read_fraction", 1.0))
    rw = job.settings.get("rw") or job.settings.get("readwrite")
    written = (
        f"rw={rw.value}" if rw is not None and rw.value else "rw not given: fio's default, read"
    )
    if "rwmixread" in job.settings or "rwmixwrite" in job.settings:
        written += f", so {read_fraction:.0%} reads"
    where = f"jobs[{job.index}]"
    fix = (
        f'put the options the job ran with into {where}."job options" (rw, rwmixread; an '
        "included file's are not in the JSON) and import again"
    )
    notes = []
    for direction, does in (("read", read_fraction > 0), ("write", read_fraction < 1)):
        measured = direction in job.figures
        if does and direction not in job.sections:
            notes.append(
                f"job {job.jobname}: the workload {direction}s ({written}) but {where} has no "
                f'"{direction}" section: fio\'s {direction} figures are missing, so its '
                f"{direction}s are not checked; import the file fio wrote, whole"
            )
        elif does and not measured:
            notes.append(
                f"job {job.jobname}: the workload {direction}s ({written}) but fio measured no "
                f"{direction}s ({where}.{direction} has no I/O); {fix}"
            )
        elif measured and not does:
            figures = job.figures[direction]
            notes.append(
                f"job {job.jobname}: fio measured {direction}s ({where}.{direction}: "
                f"{figures.iops:,.6g} IOPS) but the workload does none ({written}): the checks "
                f"of its {direction}s will fail; {fix}"
            )
    return notes


def _rel(path: Path, value: Any) -> float:
    try:
        rel = float(value)
    except (TypeError, ValueError):
        rel = math.nan
    if not rel > 0 or not math.isfinite(rel):
        raise WorkloadFileError.at(
            path,
            None,
            "options.rel",
            f"rel is {value!r}; give a relative tolerance above 0, e.g. 0.25 for ±25%",
        )
    return rel


def _document(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The result object (the last one when fio wrote several), and notes about what was skipped."""
    text = read_text(path)
    start = text.find("{")
    if start < 0:
        raise WorkloadFileError.at(
            path, None, "", "no JSON object; run fio with --output-format=json"
        )
    notes = []
    if text[:start].strip():
        notes.append(
            f"skipped {counted(len(text[:start].splitlines()), 'line')} before the JSON object "
            "(fio's messages)"
        )
    decoder = json.JSONDecoder()
    documents: list[Any] = []
    position = start
    while position < len(text):
        try:
            document, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            if documents:  # what follows the last complete object is fio's trailing output
                break
            line = text.count("\n", 0, exc.pos) + 1
            raise WorkloadFileError.at(path, line, "", f"not valid JSON: {exc.msg}") from None
        documents.append(document)
        following = text.find("{", end)
        if following < 0:
            break
        position = following
    if len(documents) > 1:
        notes.append(
            f"{len(documents)} JSON objects (fio --status-interval); the last, covering the whole "
            "run, is used"
        )
    document = documents[-1]
    if not isinstance(document, dict):
        raise WorkloadFileError.at(path, None, "", "the JSON is not an object with fio's jobs")
    return document, notes


def _options(path: Path, table: Any, where: str, order: int) -> dict[str, Setting]:
    if not isinstance(table, dict):
        raise WorkloadFileError.at(
            path, None, where, "options are an object of name: value strings"
        )
    settings = {}
    for i, (key, value) in enumerate(table.items()):
        text = None if value is None or value == "" else str(value)
        settings[str(key).lower()] = Setting(text, None, f"{where}.{key}", order + i)
    return settings


def _number(path: Path, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise WorkloadFileError.at(path, None, where, f"{value!r} is not a number")
    return float(value)


def _direction(path: Path, data: dict[str, Any], where: str) -> Figures:
    def number(key: str, default: float = 0.0) -> float:
        """A count, rate or time of fio's: never negative (an edited or damaged file)."""
        value = _number(path, data.get(key, default), f"{where}.{key}")
        if value < 0:
            raise WorkloadFileError.at(
                path,
                None,
                f"{where}.{key}",
                f"{data[key]!r} is negative: fio never measures a negative {key}; the file was "
                "edited or damaged, so take fio's output again",
            )
        return value

    if "clat_ns" in data or "lat_ns" in data:
        suffix, to_ms = "_ns", 1e-6
        io_bytes = number("io_bytes")
    else:  # fio before 3.0: latencies in µs, io_bytes in KiB
        suffix, to_ms = "", 1e-3
        io_bytes = number("io_bytes") * (1 if "io_kbytes" in data else 1024)
    runtime_ms = number("runtime")
    bytes_per_s = number("bw_bytes") if "bw_bytes" in data else number("bw") * 1024
    if not bytes_per_s and runtime_ms:
        bytes_per_s = io_bytes / (runtime_ms / 1e3)
    lat = _latency(path, data, "lat" + suffix, where)
    clat = _latency(path, data, "clat" + suffix, where)
    summary = lat if lat.get("mean") else clat
    figures = Figures(
        ios=int(number("total_ios")),
        iops=number("iops"),
        bytes_per_s=bytes_per_s,
        runtime_s=runtime_ms / 1e3,
        mean_ms=summary["mean"] * to_ms if summary.get("mean") else None,
        max_ms=summary["max"] * to_ms if summary.get("max") else None,
    )
    for source, table in (("lat", lat), ("clat", clat)):
        percentiles = table.get("percentile")
        if isinstance(percentiles, dict) and any(percentiles.values()):
            figures.percentile_source = source
            for key, value in percentiles.items():
                try:
                    pct = round(float(key), 6)
                except ValueError:
                    raise WorkloadFileError.at(
                        path,
                        None,
                        f"{where}.{source}{suffix}.percentile",
                        f"key {key!r} is not a percentile",
                    ) from None
                value = _number(path, value, f"{where}.{source}{suffix}.percentile.{key}")
                if pct > 0 and value > 0:  # fio 2 pads the list with "0.00": 0
                    figures.percentiles[pct] = value * to_ms
            break
    return figures


def _latency(path: Path, data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    table = data.get(key, {})
    if not isinstance(table, dict):
        raise WorkloadFileError.at(
            path, None, f"{where}.{key}", "a latency is an object with min, max, mean, stddev"
        )
    for name in ("mean", "max"):
        if name in table and _number(path, table[name], f"{where}.{key}.{name}") < 0:
            raise WorkloadFileError.at(
                path, None, f"{where}.{key}.{name}", f"{table[name]!r}: a latency is never negative"
            )
    return table


def _combine(clones: list[Figures]) -> Figures:
    if len(clones) == 1:
        return clones[0]
    ios = sum(c.ios for c in clones)
    means = [(c.mean_ms, c.ios) for c in clones if c.mean_ms is not None]
    weight = sum(n for _, n in means)
    maxima = [c.max_ms for c in clones if c.max_ms is not None]
    return Figures(
        ios=ios,
        iops=sum(c.iops for c in clones),
        bytes_per_s=sum(c.bytes_per_s for c in clones),
        runtime_s=max(c.runtime_s for c in clones),
        mean_ms=sum(m * n for m, n in means) / weight if means and weight else None,
        max_ms=max(maxima) if maxima else None,
        percentiles={},
    )


def _checks(
    group: str, jobname: str, op: str, figures: Figures, rel: float, *, merged: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """The checks of one job direction, and the figures left unchecked (as text)."""
    what = "reads and writes" if op == "any" else f"{op}s"
    measured: list[tuple[str, float, str, str]] = [
        ("iops", figures.iops, f"{figures.iops:,.6g} IOPS", "IOPS"),
        ("mb_s", figures.bytes_per_s / 1e6, f"{figures.bytes_per_s / 1e6:.6g} MB/s", "bandwidth"),
    ]
    if figures.mean_ms is not None:
        measured.append(("mean_ms", figures.mean_ms, f"{figures.mean_ms:.6g} ms", "mean latency"))
    unchecked = []
    source = "completion latency (clat)" if figures.percentile_source == "clat" else "latency"
    for pct, value in sorted(figures.percentiles.items()):
        metric = _CHECKED_PERCENTILES.get(pct)
        if metric is None:
            unchecked.append(f"p{pct:g} {value:.6g} ms")
        else:
            measured.append((metric, value, f"{value:.6g} ms", f"p{pct:g} {source}"))
    if merged:
        unchecked.append("percentiles of separately reported clones (they cannot be merged)")
    if figures.max_ms is not None:
        unchecked.append(f"max {figures.max_ms:.6g} ms (one I/O: too noisy to check)")
    unchecked.append(f"{figures.ios:,} I/Os in {figures.runtime_s:g} s")
    checks = []
    for metric, value, figure, label in measured:
        if value <= 0:
            continue
        checks.append(
            {
                "name": _check_name(f"{group}-{op}-{metric}"),
                "metric": metric,
                "group": group,
                "op": op,
                "approx": round(value, 6),
                "rel": rel,
                "observation": f"fio measured {label} {figure} on the {what} of job {jobname}",
                "field_figure": figure,
                "tolerance": (
                    f"±{rel:.0%}: fio's figure, within the import's relative tolerance (option rel)"
                ),
            }
        )
    return checks, unchecked


def _check_name(text: str) -> str:
    return "".join(c if c.isascii() and (c.isalnum() or c in "_.+-") else "_" for c in text)
