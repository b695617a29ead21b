"""The drive's seek curve over the whole stroke, checked at short, medium and full-span random
reads.

Theory: random reads at uniform positions in the first ``s`` of the stroke seek over ``s |U1 -
U2|``, whose mean seek is the curve's closed-form :meth:`SeekCurve.moments` at ``s``; each read also
waits half a revolution on average (uniform rotational latency) and pays the drive's command
overhead. At ``s = 1`` the mean seek is the datasheet's average seek, by the curve's construction;
one track takes the datasheet's track-to-track seek and the full stroke its full-stroke seek.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.arrays import nearest_distance_mean
from support.paths import ROOT

import simcache
from simcache.estimate import estimate
from simcache.physics import drive as drive_physics
from simcache.sim.components.array import Array
from simcache.sim.components.randomness import UniformStream
from simcache.spec import ArraySpec, DriveSpec, LinkSpec
from simcache.spec.profiles import list_profiles

LINK = LinkSpec(bandwidth=125e6, latency=50e-6)


def drive_profile(name: str) -> DriveSpec:
    return DriveSpec.model_validate({"profile": name})


DISK_PROFILES = [name for name in list_profiles("drive") if drive_profile(name).media == "disk"]


@pytest.mark.parametrize("name", DISK_PROFILES)
def test_every_drive_profile_curve_holds_its_datasheet_figures(name: str) -> None:
    """Track-to-track = settle, full stroke = full_seek (or its default), mean over the whole
    stroke = avg_seek."""
    drive = drive_profile(name)
    curve = drive_physics.drive_seek_curve(drive)
    full = (
        drive.full_seek
        if drive.full_seek is not None
        else drive_physics.default_full_seek(drive.avg_seek)
    )
    assert curve(curve.track) == pytest.approx(drive.settle, rel=1e-9)
    assert curve(1.0) == pytest.approx(full, rel=1e-9)
    assert curve.moments(1.0)[0] == pytest.approx(drive.avg_seek, rel=1e-9)


@pytest.mark.parametrize("span", [0.001, 0.05, 0.5, 1.0])
@pytest.mark.parametrize("overhead", [0.0, 0.2e-3])
def test_random_reads_over_a_span_seek_the_curves_mean_over_it(
    span: float, overhead: float
) -> None:
    """Reads one per second (no queueing) at uniform 4 KiB positions in the first ``span`` of a
    sata-7200's stroke: mean service = moments(span) + revolution / 2 + overhead + 4 KiB at the
    zones' mean rate over the span. Tolerance: 5 standard errors of the sample mean (consecutive
    seeks share an endpoint, a weak correlation)."""
    drive = drive_profile("sata-7200").model_copy(update={"overhead": overhead})
    spec = ArraySpec(drive=drive, spindles=1, raid="raid0", port=LINK)
    array = Array(spec, UniformStream(np.random.SeedSequence(7)), [drive.capacity])
    rng = np.random.default_rng(int(span * 1000) + int(overhead * 1e5))
    n = 20_000
    offsets = rng.integers(0, int(drive.capacity * span) // 4096, n) * 4096
    first = array.read(0.0, 0, int(offsets[0]), 4096)  # from the edge: not a random seek
    assert first > 0.0
    service = np.array(
        [array.read(float(i), 0, int(o), 4096) - i for i, o in enumerate(offsets[1:], start=1)]
    )
    curve = drive_physics.drive_seek_curve(drive)
    expected = (
        curve.moments(span)[0]
        + drive_physics.revolution_seconds(drive.rpm) / 2.0
        + overhead
        + drive_physics.mean_transfer_seconds(4096, drive.media_rate, drive.inner_rate, span)
    )
    error = service.std(ddof=1) / math.sqrt(len(service))
    assert abs(service.mean() - expected) < 5 * error, (service.mean(), expected, error)


def test_a_span_of_half_the_drive_seeks_shorter_than_the_datasheet_average() -> None:
    """Why random reads over 1,000 GB of the 2 TB sata-7200 come out faster than a 1 TB drive
    read whole: the datasheet average is over the full stroke; half of it averages less (the
    curve's mean at 0.5), and without a command overhead the read pays none. Closed form against
    numerical quadrature of the curve over the distance density ``2 (1 - x / s) / s``."""
    drive = drive_profile("sata-7200")
    curve = drive_physics.drive_seek_curve(drive)
    x = np.linspace(0.0, 0.5, 400_001)
    density = 2.0 * (1.0 - x / 0.5) / 0.5
    quadrature = float(np.trapezoid(np.array([curve(v) for v in x]) * density, x))
    assert curve.moments(0.5)[0] == pytest.approx(quadrature, rel=1e-3)
    assert curve.moments(0.5)[0] < 0.8 * drive.avg_seek
    # The same reads over a whole 1 TB drive of the same figures seek the datasheet average.
    whole = drive_physics.drive_seek_curve(drive.model_copy(update={"capacity": 10**12}))
    assert whole.moments(1.0)[0] == pytest.approx(drive.avg_seek, rel=1e-9)


def test_the_estimate_adds_the_command_overhead_to_each_random_read() -> None:
    """The QD1 validation scenario (one drive read whole, one read outstanding): the estimate's
    mean read latency grows by exactly the overhead it is given (every read positions the head),
    and with the scenario's 0.2 ms it is the theory's avg_seek + overhead + half a revolution +
    transfer + the network, within 1 %."""
    scenario = simcache.load_scenario(ROOT / "scenarios" / "validate_hdd_7200_qd.toml")
    with_overhead = estimate(scenario).mean_ms("all", "read")
    without = estimate(scenario.with_overrides({"array.drive.overhead": 0})).mean_ms("all", "read")
    # the closed loop is solved iteratively: 1e-4 of slack
    assert with_overhead - without == pytest.approx(0.2, rel=1e-4)
    drive = scenario.array.drive
    theory_ms = 1e3 * (
        drive.avg_seek
        + drive.overhead
        + drive_physics.revolution_seconds(drive.rpm) / 2.0
        + drive_physics.mean_transfer_seconds(4096, drive.media_rate, drive.inner_rate, 1.0)
    )
    assert theory_ms < with_overhead < theory_ms * 1.01


def test_queued_positioning_by_seek_is_the_nearest_candidates_seek_and_half_a_turn() -> None:
    """Shortest seek first on a linear seek curve (``seek(x) = e x``): the least seek of n
    candidates is ``e`` times the nearest one's distance, ``span x (n + 3) / (2 (n + 1) (n + 2))``
    on average (support.arrays.nearest_distance_mean), and its rotational wait half a revolution:
    mean = overhead + e span nearest(n) + R / 2. The numerical law puts the head and the
    candidates at the midpoints of ``steps`` cells (each distance off by at most half a cell,
    ``e span / (2 steps)`` of seek) and integrates the least seek's survival over ``steps`` bins
    of its range ``top = e span + overhead`` by the midpoint rule (off by at most one bin for a
    monotone function): within ``(e span / 2 + top) / steps``. One candidate: the closed form,
    a random seek (SeekCurve.moments) plus the overhead and an independent uniform wait."""
    e, revolution, overhead, steps = 0.012, 60.0 / 7200, 0.2e-3, 240
    line = drive_physics.SeekCurve(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, e)
    assert line.seconds(0.5) == e * 0.5
    for span in (1.0, 0.25):
        bound = (e * span / 2 + e * span + overhead) / steps
        for n in (2, 8, 31):
            mean, _ = drive_physics.queued_positioning_moments(
                line, span, revolution, overhead, n, True, steps
            )
            theory = overhead + e * span * nearest_distance_mean(n) + revolution / 2
            assert abs(mean - theory) < bound, (span, n, mean, theory, bound)
    curve = drive_physics.drive_seek_curve(drive_profile("sata-7200"))
    seek, seek_square = curve.moments(0.5)
    mean, square = drive_physics.queued_positioning_moments(
        curve, 0.5, revolution, overhead, 1, False
    )
    assert mean == pytest.approx(seek + overhead + revolution / 2, rel=1e-12)
    # E[(S + o + R V)^2], V uniform and independent of S: E[V] = 1/2, E[V^2] = 1/3
    assert square == pytest.approx(
        seek_square
        + 2 * overhead * seek
        + overhead**2
        + (seek + overhead) * revolution
        + revolution**2 / 3,
        rel=1e-12,
    )
    assert drive_physics.queued_positioning_moments(curve, 0.5, revolution, overhead, 1, True) == (
        mean,
        square,
    )
