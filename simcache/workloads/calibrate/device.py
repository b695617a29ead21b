"""``simcache calibrate``: fio results of one device become a device profile (points, fit, the TOML
file).

``kind = "tier"``: a flash or RAM tier (:mod:`.fit`); the base profile gives every field fio cannot
measure (capacity, the sustained-write cliff, scheduling); unnamed, it is ``nvme-p3700`` for a
``/dev/nvme*`` device and ``sata-ssd-s3700`` otherwise. ``kind = "drive"``: a spinning drive of the
array (:mod:`.drive_fit`): seek, command overhead and media rate from random-read queue depths and
sequential runs, the rotation from ``rpm`` (given, or the base's), the rest from a drive profile
(default ``sata-7200``). The written table is validated as a TierSpec or DriveSpec before it is
returned, so a file that would not load is never written.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from simcache.base.errors import ScenarioError
from simcache.base.units import parse_bandwidth, parse_duration
from simcache.physics.cluster import pipe_rate
from simcache.spec.array import DriveSpec
from simcache.spec.components import TierSpec
from simcache.spec.profiles import field_notes, get_profile, list_profiles
from simcache.workloads.calibrate.drive_fit import DriveFit, fit_drive, write_cached
from simcache.workloads.calibrate.drive_model import Drive, span_of
from simcache.workloads.calibrate.drive_profile import drive_toml
from simcache.workloads.calibrate.fit import Fit, Fixed, fit_tier
from simcache.workloads.calibrate.points import Points, read_points
from simcache.workloads.calibrate.profile import inherited, inherited_lines, tier_toml

__all__ = ["DEFAULT_DRIVE", "KINDS", "Calibration", "calibrate", "default_base"]

KINDS = ("tier", "drive")
DEFAULT_DRIVE = "sata-7200"
"""The base drive profile when none is named."""


@dataclass(frozen=True)
class Calibration:
    """A fitted device: the points, the fit, the base profile it completes, and the TOML text of
    its file."""

    points: Points
    fit: Fit | DriveFit
    base: str
    toml: str
    kind: str = "tier"
    inherited: tuple[str, ...] = ()
    """The fields taken from the base that shape performance, a heading and one line each with what
    would pin it (a tier's; empty for a drive, whose table notes say it field by field)."""

    def table(self) -> dict[str, Any]:
        """The ``[tier]`` (or ``[drive]``) table as a dict (what ``tier = { file = ... }`` reads,
        and what a pasted table holds)."""
        table: dict[str, Any] = tomllib.loads(self.toml)[self.kind]
        return table


def default_base(device: str) -> str:
    """The base tier profile for a device path: NVMe for ``/dev/nvme*``, SATA flash otherwise."""
    return "nvme-p3700" if device.startswith("/dev/nvme") else "sata-ssd-s3700"


def calibrate(
    paths: Sequence[Path], kind: str = "tier", base: str | None = None, rpm: float | None = None
) -> Calibration:
    """Fit ``kind`` (``tier`` or ``drive``) to the fio JSON results ``paths`` of one device,
    completing it from ``base`` (``rpm``: a drive's rotational speed; default the base's).

    Raises :class:`~simcache.base.errors.ScenarioError` (a WorkloadFileError for a file) naming the
    file and reason.
    """
    if kind not in KINDS:
        raise ScenarioError(
            "calibrate", [("--kind", f"{kind!r} is not a device kind; give tier or drive")]
        )
    if kind == "drive":
        return _calibrate_drive(paths, base, rpm)
    if rpm is not None:
        raise ScenarioError(
            "calibrate", [("--rpm", "a tier does not turn: --rpm is for --kind drive")]
        )
    points = read_points(paths)
    base_name = base or default_base(points.device)
    known = list_profiles("tier")
    if base_name not in known:
        raise ScenarioError(
            "calibrate",
            [("--base", f"unknown tier profile {base_name!r}; built-in: {', '.join(known)}")],
        )
    profile = get_profile("tier", base_name)
    interface = profile.get("interface")
    # the pipe as the base's interface caps it; the host's controller cap is the user's, in the runs
    fixed = Fixed(
        read_bandwidth=pipe_rate(parse_bandwidth(profile["read_bandwidth"]), None, interface),
        write_bandwidth=pipe_rate(parse_bandwidth(profile["write_bandwidth"]), None, interface),
        read_latency=parse_duration(profile["read_latency"]),
        write_latency=parse_duration(profile["write_latency"]),
        command_overhead=parse_duration(profile.get("command_overhead", 0.0)),
    )
    fit = fit_tier(points.points, fixed)
    notes = field_notes("tier").get(base_name, {})
    kept = inherited(fit, points, base_name, profile, notes)
    warnings = [] if base is not None else [_default_base_warning(base_name, points.device)]
    if kept:
        warnings.append(
            f"{len(kept)} fields that shape the tier's performance come from the base profile "
            f"{base_name}, not from these runs: {', '.join(name for name, _, _ in kept)} (check "
            "them against your device; the device file lists what would pin each)"
        )
    fit = replace(fit, warnings=(*warnings, *fit.warnings))
    text = tier_toml(fit, points, base_name, profile, notes)
    calibration = Calibration(
        points, fit, base_name, text, inherited=tuple(inherited_lines(kept, base_name))
    )
    try:
        TierSpec.model_validate(calibration.table())
    # a fitted value outside TierSpec's ranges: a bug here, not the user's
    except ValueError as exc:
        raise ScenarioError(
            "calibrate", [("tier", f"the fitted table does not validate: {exc}")]
        ) from None
    return calibration


def _default_base_warning(base_name: str, device: str) -> str:
    """The warning when no ``--base`` was given: which profile completes the tier, and the
    catalogue's profiles of the device's class to choose from instead."""
    port = "pcie" if device.startswith("/dev/nvme") else "sata"
    others = [
        name
        for name, fields in list_profiles("tier").items()
        if name != base_name and str(fields.get("interface", "")).startswith(port)
    ]
    description = get_profile("tier", base_name).get("description", base_name)
    return (
        f"no --base given: every field these runs do not measure (the interface, the bandwidths "
        f"not measured, the garbage collection, the capacity) is the default base {base_name}'s "
        f"({description}) whatever your device is; give --base with a profile of its class"
        + (f", e.g. {', '.join(others)}" if others else "")
        + " (all of them: simcache profiles tier)"
    )


def _calibrate_drive(paths: Sequence[Path], base: str | None, rpm: float | None) -> Calibration:
    """:func:`calibrate` of a spinning drive: the points the drive model takes, the fit, the
    ``[drive]`` file."""
    base_name = base or DEFAULT_DRIVE
    known = list_profiles("drive")
    if base_name not in known:
        raise ScenarioError(
            "calibrate",
            [("--base", f"unknown drive profile {base_name!r}; built-in: {', '.join(known)}")],
        )
    profile = get_profile("drive", base_name)
    spec = DriveSpec.model_validate(profile)
    if spec.media != "disk":
        spinning = ", ".join(
            name for name, fields in known.items() if fields.get("media", "disk") == "disk"
        )
        raise ScenarioError(
            "calibrate",
            [
                (
                    "--base",
                    f"{base_name} is a flash drive; a drive fit needs a spinning one: {spinning}",
                )
            ],
        )
    if rpm is not None and not 1000 <= rpm <= 30000:
        raise ScenarioError(
            "calibrate",
            [
                (
                    "--rpm",
                    f"{rpm:g} RPM: hard drives spin at 3,600 to 15,000 RPM (1,000 to 30,000 "
                    "allowed)",
                )
            ],
        )
    assert spec.rpm is not None and spec.avg_seek is not None
    turning = float(rpm if rpm is not None else spec.rpm)
    points = read_points(paths)
    notes = list(points.notes)
    cached = write_cached(points.points, turning)
    kept = points.points
    if cached is not None:
        kept = tuple(p for p in kept if not (p.op == "write" and not p.sequential))
        notes.append(
            f"random writes left out: the drive's write cache acknowledged them ({cached}); the "
            "simulator's drive has no "
            "write-back cache (a write costs a read's seek and rotation): measure writes with the "
            "cache off (hdparm -W0, "
            "sdparm --clear WCE) to fit them"
        )
    if len({p.outstanding for p in kept if not p.sequential}) < 2:
        raise ScenarioError(
            "calibrate",
            [
                (
                    ", ".join(name for name, _ in points.hashes),
                    "the random runs the drive model takes are all at one queue depth: give random "
                    "reads at two depths or "
                    "more (iodepth=1 and 2 pin the drive; deeper ones show its reordering)",
                )
            ],
        )
    spans = []
    for point in kept:
        try:
            spans.append(span_of(point, spec.capacity))
        except ValueError as exc:
            raise ScenarioError(
                "calibrate", [(point.source, f"{exc}; give size= as bytes or a percentage")]
            ) from None
    full = spec.full_seek if spec.full_seek is not None else 2.0 * spec.avg_seek
    base_drive = Drive(
        spec.rpm,
        spec.overhead,
        spec.settle,
        spec.avg_seek,
        full,
        spec.media_rate,
        spec.inner_rate,
        spec.capacity,
    )
    try:
        fit = fit_drive(kept, spans, turning, base_drive)
    except ValueError as exc:
        raise ScenarioError("calibrate", [("points", str(exc))]) from None
    points = replace(points, points=kept, notes=tuple(notes))
    if rpm is None:
        fit = replace(
            fit,
            warnings=(
                f"rpm not given: took the base profile {base_name}'s {turning:g} RPM (give --rpm "
                "for your drive)",
                *fit.warnings,
            ),
        )
    text = drive_toml(
        fit, points, base_name, profile, field_notes("drive").get(base_name, {}), rpm is not None
    )
    calibration = Calibration(points, fit, base_name, text, "drive")
    try:
        DriveSpec.model_validate(calibration.table())
    # a fitted value outside DriveSpec's ranges: a bug here, not the user's
    except ValueError as exc:
        raise ScenarioError(
            "calibrate", [("drive", f"the fitted table does not validate: {exc}")]
        ) from None
    return calibration
