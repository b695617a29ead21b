"""``simcache calibrate``: fio results of one device become a device profile (points, fit, the TOML file).

Only the tier is fitted (``kind = "tier"``); a spinning drive's fit (``kind = "drive"``: seek, rotation, media
rate from random-read queue depths) is refused with a message until it exists. The base profile gives every field
fio cannot measure (capacity, the sustained-write cliff, scheduling); unnamed, it is ``nvme-p3700`` for a
``/dev/nvme*`` device and ``sata-ssd-s3700`` otherwise. The written table is validated as a TierSpec before it is
returned, so a file that would not load is never written.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcache.base.errors import ScenarioError
from simcache.base.units import parse_bandwidth, parse_duration
from simcache.physics.cluster import pipe_rate
from simcache.spec.components import TierSpec
from simcache.spec.profiles import field_notes, get_profile, list_profiles
from simcache.workloads.calibrate.fit import Fit, Fixed, fit_tier
from simcache.workloads.calibrate.points import Points, read_points
from simcache.workloads.calibrate.profile import tier_toml

__all__ = ["KINDS", "Calibration", "calibrate", "default_base"]

KINDS = ("tier", "drive")


@dataclass(frozen=True)
class Calibration:
    """A fitted device: the points, the fit, the base profile it completes, and the TOML text of its file."""

    points: Points
    fit: Fit
    base: str
    toml: str

    def table(self) -> dict[str, Any]:
        """The ``[tier]`` table as a dict (what ``tier = { file = ... }`` reads, and what a pasted table holds)."""
        table: dict[str, Any] = tomllib.loads(self.toml)["tier"]
        return table


def default_base(device: str) -> str:
    """The base tier profile for a device path: NVMe for ``/dev/nvme*``, SATA flash otherwise."""
    return "nvme-p3700" if device.startswith("/dev/nvme") else "sata-ssd-s3700"


def calibrate(paths: Sequence[Path], kind: str = "tier", base: str | None = None) -> Calibration:
    """Fit ``kind`` (``tier``) to the fio JSON results ``paths`` of one device, completing it from ``base``.

    Raises :class:`~simcache.base.errors.ScenarioError` (a WorkloadFileError for a file) naming the file and reason.
    """
    if kind == "drive":
        raise ScenarioError(
            "calibrate",
            [
                (
                    "--kind",
                    "drive is not supported yet: fitting a spinning drive's seek curve, rotation and media rate from fio "
                    "runs is not built; use --kind tier (flash or RAM) or write the [drive] fields from the datasheet",
                )
            ],
        )
    if kind not in KINDS:
        raise ScenarioError("calibrate", [("--kind", f"{kind!r} is not a device kind; give tier")])
    points = read_points(paths)
    base_name = base or default_base(points.device)
    known = list_profiles("tier")
    if base_name not in known:
        raise ScenarioError("calibrate", [("--base", f"unknown tier profile {base_name!r}; built-in: {', '.join(known)}")])
    profile = get_profile("tier", base_name)
    interface = profile.get("interface")
    fixed = Fixed(  # the pipe as the base's interface caps it; the host's controller cap is the user's, in the runs
        read_bandwidth=pipe_rate(parse_bandwidth(profile["read_bandwidth"]), None, interface),
        write_bandwidth=pipe_rate(parse_bandwidth(profile["write_bandwidth"]), None, interface),
        read_latency=parse_duration(profile["read_latency"]),
        write_latency=parse_duration(profile["write_latency"]),
    )
    fit = fit_tier(points.points, fixed)
    text = tier_toml(fit, points, base_name, profile, field_notes("tier").get(base_name, {}))
    calibration = Calibration(points, fit, base_name, text)
    try:
        TierSpec.model_validate(calibration.table())
    except ValueError as exc:  # a fitted value outside TierSpec's ranges: a bug here, not the user's
        raise ScenarioError("calibrate", [("tier", f"the fitted table does not validate: {exc}")]) from None
    return calibration
