"""fio JSON results of one device made the points a device fit takes: pattern, outstanding I/Os,
IOPS, mean and p99.

Each fio job that reads or writes one way (``randread``, ``randwrite``, ``read``, ``write``) is one
point: its block size, whether it is sequential, its outstanding I/Os (``iodepth`` x ``numjobs``; a
synchronous engine keeps one I/O in flight per job), and what fio measured: IOPS (clones summed),
mean latency (fio's ``lat``: submission + completion, weighted by I/Os over clones) and p99 (``lat``
percentiles when fio computed them, else ``clat``; not available when the clones were reported
apart). Jobs that mix reads and writes, are rate-capped or think between I/Os are left out with a
note: the fit takes one pattern at a time, each as fast as the device goes.

Refused, naming the file and the reason, are results that cannot describe one device: buffered I/O
(``direct=0``: the page cache answers), a target that is not a ``/dev/`` path (a file system in the
way), several devices (a ``filename`` of several paths, or files naming different devices), jobs of
one file that ran at the same time (one fio group, no ``stonewall``), and fewer than two distinct
outstanding-I/O counts over all points (one queue depth cannot tell a device's fixed latency from
its parallelism).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from simcache.base.errors import CalibrationError, WorkloadFileError, counted
from simcache.base.units import parse_size
from simcache.traces.formats.fio_json import Figures, MeasuredJob, measured_jobs

__all__ = ["Point", "Points", "read_points", "sha256"]

_P99 = 99.0


@dataclass(frozen=True)
class Point:
    """One measured job: a pattern at one number of outstanding I/Os, and what fio measured
    (seconds, I/Os per s)."""

    source: str
    """The file and job, as messages name it (``randread-4-8.json [iotest]``)."""
    op: Literal["read", "write"]
    size: int
    """Bytes per I/O (the mean of a block-size mix)."""
    sequential: bool
    outstanding: int
    """I/Os in flight: iodepth x numjobs."""
    iops: float
    mean: float
    """Mean latency, submission + completion (s)."""
    p99: float | None
    """99th percentile latency (s); ``None`` when fio did not report one that can be used."""
    percentiles: tuple[tuple[float, float], ...] = ()
    """Every percentile fio reported (percent, seconds), rising; empty when the p99 is ``None``.
    A drive's fit reads the shape of its QD1 latencies from them."""
    region: str | None = None
    """fio's ``size`` option (``"100g"``, ``"10%"``): the part of the device the job ran over;
    ``None``: the whole device."""

    @property
    def pattern(self) -> str:
        """``rand-read 4KiB`` and the like: the points of one pattern share the fit's
        per-operation times."""
        kind = "seq" if self.sequential else "rand"
        return f"{kind}-{self.op} {_size(self.size)}"


@dataclass(frozen=True)
class Points:
    """The points of a set of fio results of one device, with the device path and notes of what
    was left out."""

    points: tuple[Point, ...]
    device: str
    """The ``filename`` every job ran on (a /dev/ path)."""
    hashes: tuple[tuple[str, str], ...]
    """(file name, SHA-256 hex digest) of each input file, in the order given."""
    notes: tuple[str, ...]
    fio_versions: tuple[str, ...]


def sha256(path: Path) -> str:
    """The SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_points(paths: Sequence[Path]) -> Points:
    """The points of fio JSON results of one device; see the module docstring for what is
    refused."""
    if not paths:
        raise CalibrationError.at(
            "calibrate",
            None,
            "FILE",
            "give at least one fio JSON result (fio --output-format=json)",
        )
    points: list[Point] = []
    notes: list[str] = []
    device: tuple[str, Path] | None = None
    versions: list[str] = []
    for path in paths:
        try:
            measurements = measured_jobs(path)
        except CalibrationError:
            raise
        # a file that cannot be read: said under calibrate's heading
        except WorkloadFileError as error:
            raise CalibrationError(error.source, error.problems) from error
        version = str(measurements.document.get("fio version", "not given"))
        if version not in versions:
            versions.append(version)
        notes += [f"{path.name}: {note}" for note in measurements.notes]
        groups: dict[object, str] = {}
        for job in measurements.jobs:
            target = _device(path, job)
            if device is None:
                device = (target, path)
            elif target != device[0]:
                raise CalibrationError.at(
                    path,
                    None,
                    f"jobs[{job.index}].filename",
                    f"ran on {target}, but {device[1].name} ran on {device[0]}: calibrate fits one "
                    "device; give the results "
                    "of one device at a time",
                )
            if job.groupid in groups:
                raise CalibrationError.at(
                    path,
                    None,
                    f"jobs[{job.index}]",
                    f"jobs {groups[job.groupid]} and {job.jobname} ran at the same time (fio group "
                    f"{job.groupid}): a point "
                    "is one pattern alone on the device; put stonewall between the jobs",
                )
            groups[job.groupid] = job.jobname
            point = _point(path, job, notes)
            if point is not None:
                points.append(point)
    assert device is not None
    if not points:
        raise CalibrationError.at(
            paths[0],
            None,
            "jobs",
            "no job that reads or writes one way at full speed; nothing to fit",
        )
    depths = sorted({p.outstanding for p in points})
    if len(depths) < 2:
        raise CalibrationError.at(
            paths[0],
            None,
            "iodepth x numjobs",
            f"every job ran with {counted(depths[0], 'I/O')} outstanding: one queue depth "
            "cannot tell the device's fixed latency from "
            "its parallelism; add runs at another depth (e.g. iodepth=1 and iodepth=32)",
        )
    return Points(
        tuple(points),
        device[0],
        tuple((p.name, sha256(p)) for p in paths),
        tuple(notes),
        tuple(versions),
    )


def _device(path: Path, job: MeasuredJob) -> str:
    setting = job.settings.get("filename")
    target = setting.value.strip() if setting is not None and setting.value else ""
    where = f"jobs[{job.index}] ({job.jobname}) filename"
    if not target:
        raise CalibrationError.at(
            path,
            None,
            where,
            "no filename: fio wrote to a file it made in a file system; calibrate needs the raw "
            "device (filename=/dev/...)",
        )
    if ":" in target:
        raise CalibrationError.at(
            path,
            None,
            where,
            f"{target!r} names several files or devices; calibrate fits one device",
        )
    if not target.startswith("/dev/"):
        raise CalibrationError.at(
            path,
            None,
            where,
            f"{target!r} is not a /dev/ path: a file system is in the way (its cache, journal and "
            "allocation); run fio on the raw "
            "device (filename=/dev/...)",
        )
    if not _direct(job):
        raise CalibrationError.at(
            path,
            None,
            f"jobs[{job.index}] ({job.jobname}) direct",
            "buffered I/O (direct=0, fio's default): the page cache answered part of it; run fio "
            "with direct=1",
        )
    return target


def _direct(job: MeasuredJob) -> bool:
    def flag(key: str) -> bool | None:
        setting = job.settings.get(key)
        if setting is None:
            return None
        return setting.value is None or setting.value.strip().lower() in ("1", "true", "yes", "on")

    direct, buffered = flag("direct"), flag("buffered")
    return bool(direct) or buffered is False


def _point(path: Path, job: MeasuredJob, notes: list[str]) -> Point | None:
    source = f"{path.name} [{job.jobname}]"
    result = job.result
    if result is None:
        notes.append(f"{source}: trims only; left out")
        return None
    workload = result.group["workload"]
    if workload.get("mode") != "closed" or workload.get("think_time"):
        notes.append(
            f"{source}: rate-capped or thinking between I/Os; left out (the fit takes runs at the "
            "device's full speed)"
        )
        return None
    measured = [key for key in ("read", "write", "mixed") if key in job.figures]
    if len(measured) != 1 or measured[0] == "mixed" or workload["read_fraction"] not in (0.0, 1.0):
        notes.append(
            f"{source}: reads and writes at once; left out (the fit takes one pattern at a time)"
        )
        return None
    op: Literal["read", "write"] = "read" if measured[0] == "read" else "write"
    figures: Figures = job.figures[op]
    if figures.iops <= 0 or figures.mean_ms is None:
        notes.append(f"{source}: no IOPS or mean latency measured; left out")
        return None
    sizes = workload[f"{op}_sizes" if f"{op}_sizes" in workload else "sizes"]
    total = sum(sizes.values())
    size = round(sum(_bytes(text) * weight for text, weight in sizes.items()) / total)
    outstanding = int(workload["workers"]) * int(workload["outstanding"])
    p99 = figures.percentiles.get(_P99)
    if job.entries > 1:
        p99 = None  # clones reported apart: their percentiles cannot be merged
    percentiles = (
        ()
        if p99 is None
        else tuple(
            sorted((pct, ms / 1e3) for pct, ms in figures.percentiles.items() if 0.0 < pct < 100.0)
        )
    )
    region = job.settings.get("size")
    return Point(
        source=source,
        op=op,
        size=size,
        sequential=workload.get("access") == "sequential",
        outstanding=outstanding,
        iops=figures.iops,
        mean=figures.mean_ms / 1e3,
        p99=None if p99 is None else p99 / 1e3,
        percentiles=percentiles,
        region=region.value.strip() if region is not None and region.value else None,
    )


def _bytes(text: str | int) -> int:
    return int(parse_size(text))


def _size(size: int) -> str:
    for unit, factor in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"
