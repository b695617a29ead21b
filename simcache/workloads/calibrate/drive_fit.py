"""The fit of a spinning drive's DriveSpec figures to measured points (``simcache calibrate --kind
drive``).

What pins what (:mod:`.drive_model` is the drive as the simulator serves it):

- the mean of random I/Os at one or two outstanding (the drive never has two waiting commands to
  choose between, so it cannot reorder): ``overhead + avg_seek + half a revolution + transfer`` (the
  rotation from ``rpm``, given);
- the spread of those latencies (fio's percentiles at one outstanding): the shortest pin
  ``overhead`` (a short seek and hardly any rotation), the longest ``full_seek`` (a full stroke and
  nearly a whole revolution), the body the seek curve between them;
- sequential runs: ``media_rate`` (the largest rate they reached: a drive streams at its outer zone
  from the start of the device);
- deeper queues: what the drive gains by reordering, which the fitted file does not follow (it
  writes no ``command_queueing``, so the simulator reorders only chunks that reach a drive
  together); they are compared, not fitted, and the fit says by how much the file misses and which
  DriveSpec fields follow it.

Fitted by scipy.optimize.least_squares over ``log overhead``, ``log full_seek`` and where
``avg_seek`` lies between the averages a seek curve through ``settle`` and ``full_seek`` can have
(so every step is a valid curve). Residuals: log(fitted / measured) of IOPS and mean of the points
at one or two outstanding, and of each percentile from 1 to 99.9 of the points at one (together
weighted as much as one point's mean). Without percentiles, ``overhead`` and ``avg_seek`` cannot be
told apart: the base's overhead is kept and ``avg_seek`` fitted, ``full_seek`` at the base's ratio
to it. Relative standard errors from the Jacobian, as in :mod:`.fit`; a figure the optimiser left at
(or within 0.1 % of) a bound of its range is said to be at it instead (the points cannot pin it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import least_squares

from simcache.physics.drive import revolution_seconds, seek_curve_bounds, track_fraction
from simcache.workloads.calibrate.drive_model import (
    Drive,
    DrivePoint,
    mean_service,
    predict_drive,
    service_quantiles,
)
from simcache.workloads.calibrate.model import Floats, Prediction
from simcache.workloads.calibrate.points import Point

__all__ = ["DRIVE_BOUNDS", "DriveFit", "fit_drive", "write_cached"]

DRIVE_BOUNDS: dict[str, tuple[float, float, str]] = {
    "overhead": (
        1e-6,
        0.01,
        "1 µs to 10 ms (DriveSpec's range: a command overhead is a fraction of a millisecond)",
    ),
    "full_seek": (
        1e-3,
        0.05,
        "1 ms to 50 ms (a 3.5-inch desktop drive's full stroke is about 20 ms)",
    ),
    "avg_seek": (
        0.0,
        1.0,
        "between the averages a seek curve through settle and full_seek can have",
    ),
}
"""Each fitted quantity's range, SI units, and why."""

_PINNED = 0.3
"""Relative standard error below which a parameter counts as pinned (as in :mod:`.fit`)."""
_LEVELS = (1.0, 99.9)
"""Percentiles fitted: from 1 to 99.9 (beyond them, a few I/Os of a 60 s run decide)."""
_GAIN = 0.1
"""A deeper point the simulator misses by more than this (IOPS) is named in a warning."""
_CACHED_ROTATION = 0.1
"""A write whose first percentile is below this share of a revolution was acknowledged from the
drive's cache."""
_CACHED_MEAN = 0.6
"""Writes whose mean is below this share of the reads' at the same depth were acknowledged from
the drive's cache."""
_ROBUST = 0.1
_AT_BOUND = math.log1p(1e-3)
"""A fitted figure within 0.1 % of a bound of its range (in the optimiser's space) is at it."""


@dataclass(frozen=True)
class DriveFit:
    """The fitted drive, each point's fitted IOPS, mean and p99, and what the points left
    unpinned."""

    drive: Drive
    points: tuple[Point, ...]
    """Every point compared (fitted or not), in the order read."""
    fitted: Prediction
    fitted_fields: tuple[str, ...]
    """The DriveSpec fields the points set."""
    spans: tuple[float, ...]
    """The stroke fraction each point ranged over."""
    warnings: tuple[str, ...] = field(default=())
    relative_errors: Mapping[str, float] = field(default_factory=dict)
    gains: Mapping[int, float] = field(default_factory=dict)
    """Measured over fitted IOPS of random reads by outstanding I/Os, beyond two: the drive's
    reordering gain."""
    at_bounds: Mapping[str, str] = field(default_factory=dict)
    """The fitted figures the optimiser left at a bound of their range: ``lower`` or ``upper``."""

    def predict(self, points: Sequence[Point], spans: Sequence[float] | None = None) -> Prediction:
        """Fitted IOPS, mean and p99 of any points of this drive (e.g. ones the fit did not see)."""
        spans = spans if spans is not None else [1.0] * len(points)
        return predict_drive(
            self.drive, [DrivePoint.of(p, s) for p, s in zip(points, spans, strict=True)]
        )


def write_cached(points: Sequence[Point], rpm: float) -> str | None:
    """Why the random writes among ``points`` were acknowledged from the drive's write cache, or
    ``None``.

    The model's drive has no write-back cache: a write costs a read's seek and rotation. A write run
    whose first percentile is below a tenth of a revolution (no seek and rotation is that short, 1 %
    of the time), or whose mean is below 0.6 of the reads' at the same depth, did not wait for the
    media."""
    revolution = revolution_seconds(rpm)
    reads = {p.outstanding: p.mean for p in points if p.op == "read" and not p.sequential}
    for point in points:
        if point.op != "write" or point.sequential:
            continue
        first = point.percentiles[0] if point.percentiles else None
        if first is not None and first[0] <= 1.0 and first[1] < _CACHED_ROTATION * revolution:
            return (
                f"{point.source}: {first[0]:g} % of the writes took {first[1] * 1e3:.3g} ms or "
                "less, under a tenth of a "
                f"revolution ({revolution * 1e3:.3g} ms at {rpm:g} RPM)"
            )
        read = reads.get(point.outstanding)
        if read is not None and point.mean < _CACHED_MEAN * read:
            return (
                f"{point.source}: mean {point.mean * 1e3:.3g} ms against the reads' "
                f"{read * 1e3:.3g} ms at the same depth"
            )
    return None


@dataclass(frozen=True)
class _Given:
    """What the fit holds fixed: rpm, settle, media and inner rates, capacity, and the base's
    overhead and seek ratio."""

    rpm: float
    settle: float
    media_rate: float
    inner_rate: float | None
    capacity: float
    overhead: float
    full_ratio: float


def _drive(vector: Floats, given: _Given, shape: bool) -> Drive:
    """The drive at a point of the optimiser's space (see the module docstring)."""
    track = track_fraction(given.media_rate, given.rpm, given.capacity)
    if shape:
        overhead, full = math.exp(vector[0]), math.exp(vector[1])
        low, high = seek_curve_bounds(given.settle, full, track)
        place = 1.0 / (1.0 + math.exp(-vector[2]))
        avg = low + place * (high - low)
    else:
        overhead = given.overhead
        avg = math.exp(vector[0])
        full = avg * given.full_ratio
    return Drive(
        given.rpm,
        overhead,
        given.settle,
        avg,
        full,
        given.media_rate,
        given.inner_rate,
        given.capacity,
    )


def _residuals(
    drive: Drive,
    fitted: Sequence[tuple[Point, DrivePoint]],
    shape: Sequence[tuple[Point, DrivePoint]],
) -> Floats:
    curve = drive.curve()
    out: list[float] = []
    for point, model in fitted:
        service = mean_service(drive, model, curve)
        out += [
            math.log(1.0 / service / point.iops),
            math.log(model.outstanding * service / point.mean),
        ]
    for point, model in shape:
        levels = [
            (pct, value) for pct, value in point.percentiles if _LEVELS[0] <= pct <= _LEVELS[1]
        ]
        quantiles = service_quantiles(
            drive, model, np.array([pct / 100.0 for pct, _ in levels]), curve
        )
        # all of one point's percentiles weigh as much as its IOPS and mean
        weight = math.sqrt(2.0 / len(levels))
        out += [
            weight * math.log(q / value) for q, (_, value) in zip(quantiles, levels, strict=True)
        ]
    return np.array(out)


def fit_drive(
    points: Sequence[Point], spans: Sequence[float], given_rpm: float, base: Drive
) -> DriveFit:
    """The drive figures that best reproduce ``points`` (``spans``: each one's stroke fraction),
    the rotation at ``given_rpm`` and the other figures from ``base``; see the module docstring."""
    warnings: list[str] = []
    models = [DrivePoint.of(p, s) for p, s in zip(points, spans, strict=True)]
    pairs = list(zip(points, models, strict=True))
    sequential = [p for p in points if p.sequential]
    media_rate = base.media_rate
    fields = ["overhead", "avg_seek"]
    if sequential:
        best = max(sequential, key=lambda p: p.iops * p.size)
        media_rate = best.iops * best.size
        fields.append("media_rate")
    inner = None if base.inner_rate is None else base.inner_rate / base.media_rate * media_rate
    given = _Given(
        given_rpm,
        base.settle,
        media_rate,
        inner,
        base.capacity,
        base.overhead,
        base.full_seek / base.avg_seek,
    )
    random = [(p, m) for p, m in pairs if not p.sequential]
    if not random:
        raise ValueError(
            "no random-read or random-write run: the seek and rotation need random I/O at queue "
            "depth 1 or 2"
        )
    lowest = min(p.outstanding for p, _ in random)
    fitted = [(p, m) for p, m in random if p.outstanding <= max(2, lowest)]
    shape = [
        (p, m)
        for p, m in random
        if p.outstanding == 1
        and len([1 for pct, _ in p.percentiles if _LEVELS[0] <= pct <= _LEVELS[1]]) >= 3
    ]
    if lowest > 2:
        warnings.append(
            f"no random run at 1 or 2 outstanding: the fit takes the runs at {lowest}, where the "
            "drive already reorders "
            "its queue, so the fitted seek is shorter than the drive's; add a run at iodepth=1"
        )
    revolution = revolution_seconds(given_rpm)
    first = min(fitted, key=lambda pm: pm[0].outstanding)
    positioning = (
        first[0].mean / first[0].outstanding - revolution / 2.0 - first[1].size / media_rate
    )
    if positioning <= 0.0:
        raise ValueError(
            f"{first[0].source}: a random I/O took "
            f"{first[0].mean / first[0].outstanding * 1e3:.3g} ms, less than half a "
            f"revolution at {given_rpm:g} RPM ({revolution / 2.0 * 1e3:.3g} ms): not a "
            f"{given_rpm:g} RPM drive's media "
            "(check --rpm, or the runs hit a cache)"
        )
    use_shape = bool(shape)
    names = ["overhead", "full_seek", "avg_seek"] if use_shape else ["avg_seek"]
    if use_shape:
        starts = []
        for share in (0.03, 0.15):
            for ratio in (1.8, 2.4):
                avg = positioning * (1.0 - share)
                full = min(max(avg * ratio, 2e-3), 0.045)
                track = track_fraction(media_rate, given_rpm, base.capacity)
                low, high = seek_curve_bounds(base.settle, full, track)
                place = min(max((avg - low) / (high - low), 0.05), 0.95)
                starts.append(
                    np.array(
                        [
                            math.log(positioning * share),
                            math.log(full),
                            math.log(place / (1.0 - place)),
                        ]
                    )
                )
        lows = [math.log(DRIVE_BOUNDS["overhead"][0]), math.log(DRIVE_BOUNDS["full_seek"][0]), -8.0]
        highs = [math.log(DRIVE_BOUNDS["overhead"][1]), math.log(DRIVE_BOUNDS["full_seek"][1]), 8.0]
        fields.append("full_seek")
    else:
        starts = [np.array([math.log(max(positioning - base.overhead, 1e-4))])]
        lows, highs = [math.log(1e-4)], [math.log(0.05)]
        warnings.append(
            "overhead and avg_seek are not told apart: no random run at one outstanding with "
            "percentiles; their sum "
            f"({positioning * 1e3:.3g} ms) is fitted, the overhead kept at the base's "
            f"{base.overhead * 1e3:.3g} ms and full_seek at the "
            "base's ratio to avg_seek (fio prints completion percentiles by default: keep them, "
            "with iodepth=1 numjobs=1)"
        )

    def residuals(vector: Floats) -> Floats:
        return _residuals(_drive(vector, given, use_shape), fitted, shape)

    best_result = None
    for start in starts:
        start = np.clip(start, np.array(lows) + 1e-9, np.array(highs) - 1e-9)
        result = least_squares(
            residuals, start, bounds=(lows, highs), loss="soft_l1", f_scale=_ROBUST, x_scale=1.0
        )
        if best_result is None or result.cost < best_result.cost:
            best_result = result
    assert best_result is not None
    drive = _drive(best_result.x, given, use_shape)
    errors = _errors(drive, fitted, shape, use_shape)
    predicted = predict_drive(drive, models)
    gains: dict[int, float] = {}
    for i, point in enumerate(points):
        if not point.sequential and point.outstanding > 2:
            gains[point.outstanding] = point.iops / float(predicted.iops[i])
    misses = [(n, g) for n, g in sorted(gains.items()) if abs(g - 1.0) > _GAIN]
    if misses:
        listed = ", ".join(f"{g:.2f}x at {n} outstanding" for n, g in misses)
        warnings.append(
            f"deeper queues: the drive served {listed} the I/Os per second the simulator gives "
            "with this file (the drive reorders its queue, NCQ); by default (command_queueing = 0, "
            "as written here) the simulator serves I/Os that reach a drive separately in arrival "
            "order (it reorders only chunks that arrive together: a destage batch, a multi-chunk "
            "run, up to queue_depth), so at those depths its IOPS are low and its latency high by "
            "those factors; set command_queueing, reorder and reorder_lag in the [drive] table to "
            "follow the drive's gain (scenarios/validate_hdd_7200_qd.toml does, for this kind of "
            "drive; docs/model.md, Command queueing)"
        )
    for point in sequential:
        if point.outstanding == 1:
            warnings.append(
                f"{point.source}: a sequential run at one outstanding: the simulator has no "
                "read-ahead, so each I/O waits "
                "a rotation (fitted below); media_rate is taken from the rate the drive reached"
            )
            break
    if not sequential:
        warnings.append(
            "media_rate not measured: no sequential run; kept the base's "
            f"{base.media_rate / 1e6:.4g} MB/s (a sequential "
            "128k read at iodepth 8 or more from the start of the device pins it)"
        )
    at_bounds = {}
    for name, x, low, high in zip(names, best_result.x, lows, highs, strict=True):
        if x - low < _AT_BOUND or high - x < _AT_BOUND:
            side = "lower" if x - low < _AT_BOUND else "upper"
            at_bounds[name] = side
            shown = f"{getattr(drive, name) * 1e3:.4g} ms"
            allowed = (
                DRIVE_BOUNDS[name][2]
                if use_shape
                else "0.1 to 50 ms (overhead and full_seek held at the base's)"
            )
            warnings.append(
                f"{name} = {shown} is at its {side} bound (the fit's range: {allowed}): the points "
                f"cannot pin it; {_LOOSE[name]}"
            )
    for name, spread in errors.items():
        if name not in at_bounds and spread > _PINNED:
            shown = "±∞" if not math.isfinite(spread) else f"±{spread:.0%}"
            warnings.append(f"{name} not pinned ({shown}): {_LOOSE[name]}")
    return DriveFit(
        drive,
        tuple(points),
        predicted,
        tuple(fields),
        tuple(spans),
        tuple(warnings),
        errors,
        gains,
        at_bounds,
    )


_LOOSE = {
    "overhead": (
        "the fastest reads at one outstanding pin it: a QD1 random-read run with percentiles (fio "
        "prints them by default)"
    ),
    "avg_seek": "the mean of random reads at one outstanding pins it, with overhead",
    "full_seek": (
        "the slowest reads at one outstanding (p99 to p99.9 of a QD1 random-read run over the "
        "whole device) pin it"
    ),
}


def _errors(
    drive: Drive,
    fitted: Sequence[tuple[Point, DrivePoint]],
    shape: Sequence[tuple[Point, DrivePoint]],
    use_shape: bool,
) -> dict[str, float]:
    """Relative standard errors of the fitted figures: ``s^2 (J^T J)^-1`` over their logarithms
    (numerical Jacobian)."""
    names = ["overhead", "avg_seek", "full_seek"] if use_shape else ["avg_seek"]
    values = [getattr(drive, name) for name in names]

    def at(logs: Sequence[float]) -> Floats:
        changed = replace(drive, **{name: math.exp(v) for name, v in zip(names, logs, strict=True)})
        if not use_shape:
            changed = replace(
                changed, full_seek=changed.avg_seek * drive.full_seek / drive.avg_seek
            )
        return _residuals(changed, fitted, shape)

    logs = [math.log(v) for v in values]
    try:
        base = at(logs)
        step = 1e-3
        columns = []
        for i in range(len(logs)):
            up = list(logs)
            up[i] += step
            down = list(logs)
            down[i] -= step
            columns.append((at(up) - at(down)) / (2.0 * step))
    except ValueError:  # a step left the curves a settle and full stroke allow: at a bound
        return {name: math.inf for name in names}
    jac = np.column_stack(columns)
    dof = max(len(base) - len(names), 1)
    s2 = float(base @ base) / dof
    try:
        diagonal = np.diag(np.linalg.inv(jac.T @ jac) * s2)
    except np.linalg.LinAlgError:
        diagonal = np.full(len(names), np.inf)
    return {
        name: math.sqrt(v) if v >= 0 and math.isfinite(v) else math.inf
        for name, v in zip(names, diagonal, strict=True)
    }
