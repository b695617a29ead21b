"""A spinning drive in a closed loop, in numbers, as the simulator's array serves it: IOPS, mean and
p99 of ``n`` outstanding I/Os of one pattern on one drive (a RAID 0 array of one spindle).

One random I/O of ``size`` bytes over the first ``span`` of the stroke holds the drive for
``overhead + seek(span x |U1 - U2|) + R x revolution + transfer`` (U1, U2, R independent uniforms;
:mod:`simcache.physics.drive`: the seek curve fitted to settle, avg_seek and full_seek, zoned media
rate; the transfer at its mean over the span). The distribution of that time is exact up to
quadrature: the seek is a function of the distance, the rotation uniform, so ``P(service <= y)`` is
the mean over distances of ``clip((y - fixed - seek) / revolution, 0, 1)``.

By default (``command_queueing = 0``, as the fitted file has it) the simulator serves I/Os that
reach a drive one at a time in arrival order (it reorders only chunks that reach it together: a
destage batch, a multi-chunk run). In fio's closed loop of ``n`` I/Os each
completion issues the next, which finds ``n - 1`` ahead of it, the first just started: its latency
is the sum of ``n`` independent services (mean ``n S``, IOPS ``1 / S`` at every depth; the p99 from
the ``n``-fold convolution). A real drive reorders its queue (NCQ) once it holds two or more waiting
commands (``n >= 3``); at ``n <= 2`` it has never more than one to choose, so the model is exact
there and the fit uses those depths.

Sequential I/O: at one outstanding, each I/O reaches a drive that has finished the one before, so it
pays the command overhead and a rotation (the simulator has no read-ahead: a real drive streams from
its buffer); at two or more, the next I/O is queued while the one before transfers and streams on at
the media rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcache.base.units import parse_size
from simcache.physics.drive import (
    SeekCurve,
    mean_transfer_seconds,
    revolution_seconds,
    seek_curve,
    track_fraction,
)
from simcache.workloads.calibrate.model import Floats, Prediction
from simcache.workloads.calibrate.points import Point

__all__ = ["Drive", "DrivePoint", "mean_service", "predict_drive", "service_quantiles", "span_of"]

_DISTANCES = 800
"""Cells of the quadrature over seek distances."""
_GRID = 2048
"""Points of one service time's distribution (for the n-fold convolution)."""


@dataclass(frozen=True)
class Drive:
    """The DriveSpec figures the model reads, SI units (seconds, bytes/s, bytes)."""

    rpm: float
    overhead: float
    settle: float
    avg_seek: float
    full_seek: float
    media_rate: float
    inner_rate: float | None
    capacity: float

    @property
    def revolution(self) -> float:
        return revolution_seconds(self.rpm)

    def curve(self) -> SeekCurve:
        """The simulator's seek curve of this drive
        (:func:`simcache.physics.drive.drive_seek_curve`)."""
        return seek_curve(
            self.settle,
            self.avg_seek,
            self.full_seek,
            track_fraction(self.media_rate, self.rpm, self.capacity),
        )


@dataclass(frozen=True)
class DrivePoint:
    """A point as the drive model sees it: bytes, sequential or not, outstanding I/Os, the stroke
    fraction it spans."""

    size: float
    sequential: bool
    outstanding: int
    span: float

    @classmethod
    def of(cls, point: Point, span: float) -> DrivePoint:
        return cls(float(point.size), point.sequential, point.outstanding, span)


def _seeks(curve: SeekCurve, span: float) -> tuple[Floats, Floats]:
    """Seek times (s) at the midpoints of cells over [0, span] and each cell's probability
    (density 2 (1 - x/s) / s)."""
    edges = np.linspace(0.0, span, _DISTANCES + 1)
    x = 0.5 * (edges[1:] + edges[:-1])
    weights = 2.0 * (1.0 - x / span) / span * np.diff(edges)
    weights = weights / weights.sum()
    return np.asarray(curve.seconds_of(x), dtype=float), np.asarray(weights, dtype=float)


def _service(drive: Drive, curve: SeekCurve, point: DrivePoint) -> tuple[float, Floats, Floats]:
    """(fixed seconds, seek times, their probabilities) of one I/O of ``point`` when the drive
    positions for it."""
    if point.sequential:
        return drive.overhead + point.size / drive.media_rate, np.zeros(1), np.ones(1)
    transfer = mean_transfer_seconds(point.size, drive.media_rate, drive.inner_rate, point.span)
    seeks, weights = _seeks(curve, point.span)
    return drive.overhead + transfer, seeks, weights


def _cdf(fixed: float, seeks: Floats, weights: Floats, revolution: float, y: Floats) -> Floats:
    """``P(fixed + seek + R revolution <= y)`` at each ``y``."""
    share = np.clip((y[:, None] - fixed - seeks[None, :]) / revolution, 0.0, 1.0)
    return np.asarray(share @ weights, dtype=float)


def service_quantiles(
    drive: Drive, point: DrivePoint, levels: Floats, curve: SeekCurve | None = None
) -> Floats:
    """Quantiles (s) at ``levels`` (fractions) of the latency of ``point``: its service when one
    I/O is outstanding (or a sequential one positions), else the sum of ``outstanding`` services
    (module docstring)."""
    curve = curve or drive.curve()
    revolution = drive.revolution
    if point.sequential and point.outstanding > 1:
        return np.full(len(levels), point.outstanding * point.size / drive.media_rate)
    fixed, seeks, weights = _service(drive, curve, point)
    top = fixed + float(seeks.max()) + revolution
    y = np.linspace(0.0, top, _GRID + 1)
    cdf = _cdf(fixed, seeks, weights, revolution, y)
    n = 1 if point.sequential else point.outstanding
    if n > 1:
        pmf = np.diff(cdf, prepend=0.0)
        length = n * (_GRID + 1)
        size = 1 << (length - 1).bit_length()
        total = np.fft.irfft(np.fft.rfft(pmf, size) ** n, size)[:length]
        cdf = np.asarray(np.clip(np.cumsum(np.maximum(total, 0.0)), 0.0, 1.0), dtype=float)
        y = np.asarray(np.arange(length) * (top / _GRID), dtype=np.float64)
    cdf = np.maximum.accumulate(cdf)
    # the last grid point still at 0: where the mass starts
    first = int(np.searchsorted(cdf, 0.0, side="right")) - 1
    cdf, y = cdf[max(first, 0) :], y[max(first, 0) :]
    keep = np.concatenate(([True], np.diff(cdf) > 0))
    return np.asarray(np.interp(levels, cdf[keep], y[keep]), dtype=float)


def mean_service(drive: Drive, point: DrivePoint, curve: SeekCurve | None = None) -> float:
    """Mean time (s) the drive holds one I/O of ``point`` (see the module docstring)."""
    if point.sequential:
        streams = point.outstanding > 1
        return point.size / drive.media_rate + (
            0.0 if streams else drive.overhead + drive.revolution / 2.0
        )
    curve = curve or drive.curve()
    seek = curve.moments(point.span)[0]
    return (
        drive.overhead
        + seek
        + drive.revolution / 2.0
        + mean_transfer_seconds(point.size, drive.media_rate, drive.inner_rate, point.span)
    )


def predict_drive(drive: Drive, points: list[DrivePoint]) -> Prediction:
    """IOPS, mean and p99 (s) of each point on ``drive`` as the simulator serves it."""
    curve = drive.curve()
    iops, mean, p99 = [], [], []
    for point in points:
        service = mean_service(drive, point, curve)
        iops.append(1.0 / service)
        mean.append(point.outstanding * service)
        p99.append(float(service_quantiles(drive, point, np.array([0.99]), curve)[0]))
    return Prediction(np.array(iops), np.array(mean), np.array(p99))


def span_of(point: Point, capacity: float) -> float:
    """The stroke fraction a point's I/Os ranged over: fio's ``size`` (bytes or a percentage)
    over ``capacity``; the whole device without one. ``ValueError`` for a size fio would not
    take."""
    if point.region is None:
        return 1.0
    text = point.region.strip().lower()
    if text.endswith("%"):
        fraction = float(text[:-1]) / 100.0
    else:
        fraction = float(parse_size(text)) / capacity
    if not math.isfinite(fraction) or fraction <= 0.0:
        raise ValueError(f"size={point.region!r} is not a part of the device")
    return min(fraction, 1.0)
