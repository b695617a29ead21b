"""The physics of one drive of the backing array: its revolution, seek curve and zones, how long
it holds one chunk, how far queued commands cut its positioning, and the order it serves its queue
in.

Pure functions of the drive's spec and of plain numbers, as in :mod:`simcache.physics.cluster`
(tiers, links, peers): the array's spindles (:mod:`simcache.sim.spindles.mechanics`) and its
elevator (:mod:`simcache.sim.components.array`) call them when built and per chunk with the draws
they made, and the analytic estimate for its mean service times, so both agree by construction.
What the RAID level makes of a request (where each stripe unit lives, what a failed spindle costs)
is :mod:`simcache.physics.array`. docs/model.md says why the drives are modelled so.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

import numpy as np

from simcache.physics.shapes import DriveShape

__all__ = [
    "SeekCurve",
    "default_full_seek",
    "drive_seek_curve",
    "elevator_order",
    "flash_op_seconds",
    "mean_transfer_seconds",
    "queued_positioning_moments",
    "revolution_seconds",
    "seek_curve",
    "seek_curve_bounds",
    "seek_span",
    "sorted_seek_scale",
    "spindle_op_seconds",
    "spindle_op_variance",
    "track_fraction",
    "zone_rate",
    "zone_shrink",
]


def revolution_seconds(rpm: float) -> float:
    """Time (s) of one revolution of a drive turning at ``rpm`` revolutions per minute: ``60 /
    rpm``."""
    return 60.0 / rpm


def track_fraction(media_rate: float, rpm: float, capacity: float) -> float:
    """One track as a fraction of the full stroke: the bytes that pass under the head in one
    revolution (``media_rate`` bytes/s x :func:`revolution_seconds`) over the drive's ``capacity``
    bytes.

    The model's position quantum: a move shorter than this stays on the track (a settle, no arm
    travel).
    """
    return min(1.0, media_rate * revolution_seconds(rpm) / capacity)


def default_full_seek(avg_seek: float) -> float:
    """Full-stroke seek (s) of a drive whose datasheet gives none: ``2 x avg_seek`` (assumption;
    datasheets that give both put the full stroke at 1.7 to 2.4 times the average, see
    simcache/spec/profiles/arrays.toml)."""
    return 2.0 * avg_seek


@dataclass(frozen=True)
class SeekCurve:
    """Seek time (s) against distance ``x`` (fraction of the full stroke), two regimes (Ruemmler and
    Wilkes 1994):

    - ``x = 0``: no seek;
    - ``0 < x <= track``: ``settle`` (the head stays on, or settles onto, the next track);
    - ``track < x <= knee``: ``a + b sqrt(x)`` (the arm accelerates and decelerates: short seeks);
    - ``x > knee``: ``c + e x`` (the arm coasts at top speed: long seeks), with the same value and
      slope as the square-root regime at the knee.

    Built by :func:`seek_curve`, which fits it to a datasheet's three figures.
    """

    settle: float
    track: float
    a: float
    b: float
    knee: float
    c: float
    e: float

    def __call__(self, x: float) -> float:
        """Seek time (s) over distance ``x`` (fraction of the full stroke, 0 to 1)."""
        return self.seconds(x)

    def seconds(self, x: float) -> float:
        """``self(x)``: compiled, a method call is a native call, a call of the instance a
        generic one."""
        if x <= 0.0:
            return 0.0
        if x <= self.track:
            return self.settle
        if x <= self.knee:
            return self.a + self.b * math.sqrt(x)
        return self.c + self.e * x

    def seconds_of(self, x: np.ndarray) -> np.ndarray:
        """:meth:`seconds` of each distance of ``x`` (fractions of the stroke), at once: the same
        floating-point operations, so the same values."""
        root = np.sqrt(np.maximum(x, 0.0))
        out = np.where(x <= self.knee, self.a + self.b * root, self.c + self.e * x)
        out = np.where(x <= self.track, self.settle, out)
        return np.where(x <= 0.0, 0.0, out)

    def moments(self, span: float) -> tuple[float, float]:
        """Mean (s) and mean square (s^2) of the seek over ``span x |U1 - U2|`` (U1, U2 independent
        uniforms: two random positions in the first ``span`` of the stroke), in closed form.

        The distance ``span x |U1 - U2|`` has density ``2 (1 - x / span) / span`` on [0, span]; each
        regime contributes its polynomial in ``sqrt(x)`` integrated against it.
        """
        if span <= 0.0:
            return 0.0, 0.0
        s = min(span, 1.0)

        def integral(power: float, low: float, high: float) -> float:
            """Integral of x^power times the distance density over [low, high] clipped to [0, s]."""
            low, high = min(max(low, 0.0), s), min(max(high, 0.0), s)
            if high <= low:
                return 0.0

            def antiderivative(x: float) -> float:
                return float(
                    x ** (power + 1.0) / (power + 1.0) - x ** (power + 2.0) / (s * (power + 2.0))
                )

            return 2.0 / s * (antiderivative(high) - antiderivative(low))

        settle, track, a, b, knee, c, e = (
            self.settle,
            self.track,
            self.a,
            self.b,
            self.knee,
            self.c,
            self.e,
        )
        mean = (
            settle * integral(0.0, 0.0, track)
            + a * integral(0.0, track, knee)
            + b * integral(0.5, track, knee)
            + c * integral(0.0, knee, 1.0)
            + e * integral(1.0, knee, 1.0)
        )
        square = (
            settle**2 * integral(0.0, 0.0, track)
            + a * a * integral(0.0, track, knee)
            + 2.0 * a * b * integral(0.5, track, knee)
            + b * b * integral(1.0, track, knee)
            + c * c * integral(0.0, knee, 1.0)
            + 2.0 * c * e * integral(1.0, knee, 1.0)
            + e * e * integral(2.0, knee, 1.0)
        )
        return mean, square


def _curve_with_knee(settle: float, full_seek: float, track: float, knee: float) -> SeekCurve:
    """The curve through ``settle`` at one track and ``full_seek`` at the full stroke whose
    regimes meet at ``knee`` with equal value and slope (so ``e = b / (2 sqrt(knee))`` and ``c =
    a + b sqrt(knee) / 2``)."""
    root_knee = math.sqrt(knee)
    b = (full_seek - settle) / (root_knee / 2.0 + 1.0 / (2.0 * root_knee) - math.sqrt(track))
    a = settle - b * math.sqrt(track)
    return SeekCurve(
        settle=settle,
        track=track,
        a=a,
        b=b,
        knee=knee,
        c=a + b * root_knee / 2.0,
        e=b / (2.0 * root_knee),
    )


def seek_curve_bounds(settle: float, full_seek: float, track: float) -> tuple[float, float]:
    """The average seeks (s) a curve through ``settle`` and ``full_seek`` can have: from the
    straight line (knee at one track) to the pure square root (knee at the full stroke), both
    excluded."""
    return _curve_with_knee(settle, full_seek, track, track).moments(1.0)[0], _curve_with_knee(
        settle, full_seek, track, 1.0
    ).moments(1.0)[0]


# Each build of an array of spindles fits its drive's curve (about 60 bisection steps, 0.3 ms):
# remembered (a SeekCurve is frozen), as are the last few drives' a calibration tries.
@lru_cache(maxsize=64)
def seek_curve(settle: float, avg_seek: float, full_seek: float, track: float) -> SeekCurve:
    """Fit the :class:`SeekCurve` to a datasheet: ``settle`` (s) at one track (``track``:
    :func:`track_fraction`), ``full_seek`` (s) over the full stroke, and a mean of ``avg_seek`` (s)
    over random seeks (two uniform positions over the whole stroke: the datasheets' weighted average
    of all seek lengths).

    The knee is found by bisection: the mean grows with the knee, from the straight line's to the
    square root's (:func:`seek_curve_bounds`). ``ValueError`` if ``avg_seek`` is outside those
    bounds.
    """
    low_mean, high_mean = seek_curve_bounds(settle, full_seek, track)
    if not low_mean < avg_seek < high_mean:
        raise ValueError(
            f"no seek curve has settle {settle * 1e3:.3g} ms, full stroke {full_seek * 1e3:.3g} ms "
            "and average "
            f"{avg_seek * 1e3:.3g} ms: with that settle and full stroke the average must lie "
            "between "
            f"{low_mean * 1e3:.4g} and {high_mean * 1e3:.4g} ms; check avg_seek, settle and "
            "full_seek"
        )
    low, high = track, 1.0
    for _ in range(200):
        knee = 0.5 * (low + high)
        if knee in (low, high):
            break
        if _curve_with_knee(settle, full_seek, track, knee).moments(1.0)[0] < avg_seek:
            low = knee
        else:
            high = knee
    return _curve_with_knee(settle, full_seek, track, 0.5 * (low + high))


def drive_seek_curve(drive: DriveShape) -> SeekCurve:
    """:func:`seek_curve` of a drive spec: its ``settle``, ``avg_seek`` and ``full_seek``
    (default :func:`default_full_seek`), one track from its media rate, rpm and capacity.
    ``ValueError`` for a drive without ``rpm`` or ``avg_seek`` (a flash drive has no seek curve)."""
    if drive.rpm is None or drive.avg_seek is None:
        raise ValueError("a drive without rpm and avg_seek (a flash drive) has no seek curve")
    full = drive.full_seek if drive.full_seek is not None else default_full_seek(drive.avg_seek)
    return seek_curve(
        drive.settle,
        drive.avg_seek,
        full,
        track_fraction(drive.media_rate, drive.rpm, drive.capacity),
    )


def flash_op_seconds(
    access: float, transfer: float, write_access: float, read_modify_write: bool
) -> float:
    """Time (s) a flash drive's unit spends on one chunk: its ``access`` time (read or write)
    plus the ``transfer``; a parity read-modify-write reads then writes: ``access`` (the read's)
    + ``write_access`` + two transfers."""
    if read_modify_write:
        return access + write_access + 2.0 * transfer
    return access + transfer


def spindle_op_seconds(
    seek: float, rotation: float, transfer: float, revolution: float, read_modify_write: bool
) -> float:
    """Time (s) a spindle spends on one chunk: ``seek + rotation + transfer`` (rotational latency
    ``rotation``, media ``transfer``), plus a ``revolution`` and a second transfer to write back
    in place after reading (RAID 5/6 read-modify-write). With the mean seek, half a
    ``revolution`` and the mean transfer, the mean."""
    service = seek + rotation + transfer
    if read_modify_write:
        service += revolution + transfer
    return service


def spindle_op_variance(seek_mean: float, seek_square: float, revolution: float) -> float:
    """Variance (s^2) of a chunk operation: the seek's, from its mean (s) and mean square (s^2)
    (:meth:`SeekCurve.moments`), plus the rotational latency's, ``revolution^2 / 12`` (uniform
    over one revolution)."""
    return max(0.0, seek_square - seek_mean * seek_mean) + revolution**2 / 12.0


def queued_positioning_moments(
    curve: SeekCurve,
    span: float,
    revolution: float,
    overhead: float,
    candidates: int,
    by_seek: bool,
    steps: int = 240,
) -> tuple[float, float]:
    """Mean (s) and mean square (s^2) of the positioning (seek plus the command ``overhead`` plus
    rotational wait) of the command a drive serves next out of ``candidates`` waiting, each at an
    independent uniform position over the first ``span`` of the stroke and an independent uniform
    angle, the head at a uniform position: the least positioning of them (``by_seek`` False:
    shortest positioning time first) or the least seek with its own uniform wait (``by_seek``:
    shortest seek time first). One candidate: a random seek and half a revolution.

    Numerical: for the head at the midpoints of ``steps`` equal slices of the span, each
    candidate's positioning has distribution ``F_h(x) = P(seek(|U - h|) + R V <= x)`` (U, V
    uniform), the least of n ``1 - (1 - F_h)^n``; for shortest seek first the seek's law is
    ``P(seek(|U - h|) <= s)`` the same way and the wait adds ``R / 2`` and ``R^2 / 12`` of
    variance. Candidates drawn afresh: a real queue keeps those it passed over, so this is the
    gain of a queue whose waiting commands are as spread as new ones (an upper bound).

    Kept by its arguments (the estimate builds its service times for every state it solves, with
    the same drive and candidates): the last 256 answers are looked up, not computed again.
    """
    return _queued_moments_kept(curve, span, revolution, overhead, candidates, by_seek, steps)


def _queued_positioning_moments(
    curve: SeekCurve,
    span: float,
    revolution: float,
    overhead: float,
    candidates: int,
    by_seek: bool,
    steps: int,
) -> tuple[float, float]:
    """:func:`queued_positioning_moments`, computed."""
    n = max(1, candidates)
    s = min(max(span, 0.0), 1.0)
    if n == 1 or s <= 0.0:
        mean, square = curve.moments(s)
        mean += overhead
        square = square + 2.0 * overhead * (mean - overhead) + overhead * overhead
        return (
            mean + revolution / 2.0,
            square + mean * revolution + revolution**2 / 3.0,
        )
    cells = (np.arange(steps) + 0.5) / steps
    # seek (with overhead) from the head at cell i to a position at cell j
    seeks = curve.seconds_of(np.abs(cells[None, :] - cells[:, None]) * s) + overhead
    top = float(seeks.max()) + (0.0 if by_seek else revolution)
    width = top / steps
    grid = (np.arange(steps) + 0.5) * width
    if by_seek:
        ordered = np.sort(seeks, axis=1)
        below = np.stack([np.searchsorted(row, grid, side="right") for row in ordered]) / steps
    else:
        below = np.stack(
            [
                np.clip((grid[None, :] - row[:, None]) / revolution, 0.0, 1.0).mean(axis=0)
                for row in seeks
            ]
        )
    # survival of the least of n at each grid point, averaged over the head, by the midpoint rule
    survival = ((1.0 - below) ** n).mean(axis=0)
    mean = float((survival * width).sum())
    square = float((2.0 * grid * survival * width).sum())
    if by_seek:
        square += mean * revolution + revolution**2 / 3.0
        mean += revolution / 2.0
    return mean, square


# queued_positioning_moments's results by its arguments (a SeekCurve is frozen: hashed by its
# fields); a ServiceTimes is built for every state the estimate solves, with the same drive
_queued_moments_kept = functools.lru_cache(maxsize=256)(_queued_positioning_moments)


def seek_span(fraction: float) -> float:
    """The stroke fraction random seeks range over: :func:`~simcache.physics.array.span_fraction`
    within [0, 1]."""
    return min(1.0, max(fraction, 0.0))


def sorted_seek_scale(runs: int) -> float:
    """The estimate's seek span factor for a destage batch of ``runs`` runs written in sorted
    (elevator) order: ``1 / (runs + 1)``, the mean gap between ``runs`` sorted uniform points
    (the simulator seeks between the runs' real positions instead)."""
    return 1.0 / (runs + 1)


_Request = TypeVar("_Request", bound=tuple[int, ...])


def zone_shrink(outer_rate: float, inner_rate: float | None) -> float:
    """``1 - (inner / outer)^2``: how much of the outer zone's rate squared is lost by the inner
    diameter (0 without zones). See :func:`zone_rate`."""
    return 0.0 if inner_rate is None else 1.0 - (inner_rate / outer_rate) ** 2


def zone_rate(outer_rate: float, shrink: float, fraction: float) -> float:
    """Media rate (bytes/s) at ``fraction`` of the drive's capacity from its outer edge (zoned
    recording).

    Constant linear density: a track holds bytes in proportion to its radius ``r``, so the rate is
    ``outer x r / r_outer`` and the bytes outside radius ``r`` grow as ``r_outer^2 - r^2``. The byte
    at ``fraction`` of the capacity is at ``r^2 = r_outer^2 (1 - fraction x shrink)``, whence
    ``outer x sqrt(1 - fraction x shrink)``, ``shrink`` from :func:`zone_shrink`: the outer rate at
    0, the inner rate at 1.
    """
    return outer_rate * math.sqrt(1.0 - min(max(fraction, 0.0), 1.0) * shrink)


def mean_transfer_seconds(
    size: float, outer_rate: float, inner_rate: float | None, span: float
) -> float:
    """Mean media transfer time (s) of ``size`` bytes at a uniform position over the first
    ``span`` of the capacity: ``size x E[1 / zone_rate]``, with ``E[(1 - s u)^(-1/2)] = 2 (1 -
    sqrt(1 - s span)) / (s span)``."""
    shrink = zone_shrink(outer_rate, inner_rate)
    reach = shrink * min(max(span, 0.0), 1.0)
    if reach <= 0.0:
        return size / outer_rate
    return size / outer_rate * 2.0 * (1.0 - math.sqrt(1.0 - reach)) / reach


def elevator_order(head: int, requests: Sequence[_Request], depth: int) -> list[_Request]:
    """The order a drive serves ``requests`` (position, length, ...; bytes) that reach its queue
    together, its head at ``head`` (-1: unknown, taken as 0): an elevator (LOOK) sweep, at most
    ``depth`` requests reordered at once (the drive's command queue; later ones wait for a slot in
    arrival order).

    Each window of ``depth`` requests is served in one sweep: first toward the nearer end of the
    window's span from the head, then back over the rest. Requests that continue one another (a
    position where the one before ends) form a segment, always served upward (a drive streams
    forward; backward it would wait a revolution each), so a downward sweep visits the segments from
    the top one down, each upward.
    """
    if len(requests) == 1:
        return [requests[0]]  # what the sweep below gives, without it (the most common case)
    order: list[_Request] = []
    position = max(head, 0)
    for first in range(0, len(requests), depth):
        window = sorted(requests[first : first + depth])
        # Segments as index ranges of the sorted window: segment k is window[starts[k]:starts[k +
        # 1]]. Their first positions rise with k, so those below the head come first.
        starts = [0]
        below = 1 if window[0][0] < position else 0  # segments starting below the head
        for i in range(1, len(window)):
            before = window[i - 1]
            request = window[i]
            if before[0] + before[1] != request[0]:
                starts.append(i)
                if request[0] < position:
                    below += 1
        starts.append(len(window))
        if below == 0:
            order += window  # all above: one upward pass
            end = window[-1]
        else:
            # the segments below the head, from the top one down, each upward
            down: list[_Request] = []
            for k in range(below - 1, -1, -1):
                down += window[starts[k] : starts[k + 1]]
            if below == len(starts) - 1:
                order += down
            elif window[starts[-2]][0] - position <= position - window[0][0]:
                order += window[starts[below] :]  # the top end is nearer: up first, then down
                order += down
            else:
                order += down
                order += window[starts[below] :]
            end = order[-1]
        position = end[0] + end[1]
    return order
