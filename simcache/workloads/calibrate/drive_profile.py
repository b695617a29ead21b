"""A fitted spinning drive written out: the ``[drive]`` table (a complete DriveSpec, each value with
where it came from) and the TOML file with the fit table, the warnings and the inputs' SHA-256, as
:mod:`.profile` does for a tier.

The fields the points set are the fit's (``overhead``, ``avg_seek``, ``full_seek`` with QD1
percentiles, ``media_rate`` with sequential runs); ``rpm`` is the user's (``--rpm``) or the base's;
``inner_rate`` keeps the base's ratio to the outer rate; every other field (``settle``,
``capacity``, ``queue_depth``, the read cache) is the base profile's, with its own source note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simcache.base.units import format_figure
from simcache.workloads.calibrate.drive_fit import DriveFit
from simcache.workloads.calibrate.points import Points
from simcache.workloads.calibrate.profile import fit_table, mb_s_text, pinned_text, toml_value

__all__ = ["drive_table", "drive_toml"]

_FITTED_OR_SET = (
    "description",
    "source",
    "media",
    "rpm",
    "overhead",
    "avg_seek",
    "full_seek",
    "media_rate",
    "inner_rate",
)


def _ms(seconds: float) -> str:
    return f"{format_figure(seconds * 1e3, 4).replace(',', '')}ms"


def drive_table(
    fit: DriveFit,
    points: Points,
    base_name: str,
    base: Mapping[str, Any],
    base_notes: Mapping[str, str],
    rpm_given: bool,
) -> list[tuple[str, Any, str]]:
    """The ``[drive]`` table as (field, value, note) rows: the fitted fields, then the base
    profile's others."""
    errors, bounds = fit.relative_errors, fit.at_bounds
    drive = fit.drive
    depths = sorted({p.outstanding for p in fit.points if not p.sequential and p.outstanding <= 2})
    runs = f"{len(fit.points)} fio runs of {points.device}"
    fitted_on = (
        f"fitted to the random runs at {' and '.join(map(str, depths))} outstanding of {runs}"
    )
    if rpm_given:
        rpm_note = "given (--rpm): fio cannot tell the rotation from the seeks"
    else:
        why = "fio cannot tell the rotation from the seeks; give --rpm for another drive"
        rpm_note = f"base profile {base_name} ({why}): {base_notes.get('rpm', 'no note')}"
    rows: list[tuple[str, Any, str]] = [
        ("description", f"{points.device} as measured by fio, fitted by simcache calibrate", ""),
        ("media", "disk", "a spinning drive"),
        ("rpm", int(drive.rpm) if float(drive.rpm).is_integer() else drive.rpm, rpm_note),
        (
            "overhead",
            _ms(drive.overhead),
            f"{fitted_on}{pinned_text(errors, bounds, 'overhead')}: the time outside seek, "
            "rotation and transfer, including the host's I/O stack as fio saw it (a scenario adds "
            "its own link on top)",
        ),
        (
            "avg_seek",
            _ms(drive.avg_seek),
            f"{fitted_on}{pinned_text(errors, bounds, 'avg_seek')}: the seek curve's mean over "
            "the whole stroke",
        ),
    ]
    if "full_seek" in fit.fitted_fields:
        rows.append(
            (
                "full_seek",
                _ms(drive.full_seek),
                "fitted to the QD1 latencies' percentiles"
                f"{pinned_text(errors, bounds, 'full_seek')}",
            )
        )
    else:
        rows.append(
            (
                "full_seek",
                _ms(drive.full_seek),
                f"base profile {base_name}'s ratio to avg_seek (not measured: no QD1 percentiles)",
            )
        )
    if "media_rate" in fit.fitted_fields:
        rows.append(
            (
                "media_rate",
                mb_s_text(drive.media_rate),
                "the largest rate a sequential run reached (the outer zone)",
            )
        )
    else:
        rows.append(
            (
                "media_rate",
                base["media_rate"],
                f"base profile {base_name} (not measured): "
                f"{base_notes.get('media_rate', 'no note')}",
            )
        )
    if drive.inner_rate is not None:
        ratio = drive.inner_rate / drive.media_rate
        rows.append(
            (
                "inner_rate",
                mb_s_text(drive.inner_rate),
                f"base profile {base_name}'s inner/outer ratio ({ratio:.2f}) x media_rate (fio "
                "runs from the start of a "
                "device never reach the inner zone)",
            )
        )
    for name, value in base.items():
        if name in _FITTED_OR_SET:
            continue
        why = ""
        if name == "capacity":
            why = (
                " (fio does not report the device's size: set capacity beside file = ... for yours)"
            )
        elif name.startswith("cache"):
            why = " (not measured: random reads over a whole drive never hit its buffer)"
        note = f"base profile {base_name}{why}: {base_notes.get(name, 'no note')}"
        rows.append((name, value, note))
    hashes = "; ".join(f"{name} sha256:{digest[:16]}" for name, digest in points.hashes)
    rows.append(
        (
            "source",
            f"simcache calibrate: {runs} ({', '.join(points.fio_versions)}; {hashes}); fields not "
            f"measured from base profile {base_name}",
            "",
        )
    )
    return rows


def drive_toml(
    fit: DriveFit,
    points: Points,
    base_name: str,
    base: Mapping[str, Any],
    base_notes: Mapping[str, str],
    rpm_given: bool,
) -> str:
    """The TOML file: a comment block (inputs and their SHA-256, the fit table, the warnings),
    then ``[drive]``."""
    depths = " and ".join(
        str(n)
        for n in sorted(
            {p.outstanding for p in fit.points if not p.sequential and p.outstanding <= 2}
        )
    )
    lines = [
        f"# A spinning drive fitted by simcache calibrate to fio results of {points.device} "
        f"({', '.join(points.fio_versions)}).",
        '# Use it in a scenario as  [array] drive = { file = "THIS.toml" }  (a path relative to '
        "the scenario), or paste",
        "# the [drive] table's fields into [array.drive].",
        "#",
        "# Input files (SHA-256):",
        *[f"#   {digest}  {name}" for name, digest in points.hashes],
        "#",
        "# Measured against fitted, as the simulator serves the drive (one spindle, I/Os in "
        "arrival order; err = fitted /",
        f"# measured - 1; QD = iodepth x numjobs; fitted on the random runs at {depths} "
        "outstanding, the others compared):",
        *[f"#   {line}" for line in fit_table(fit)],
    ]
    if fit.warnings or points.notes:
        lines += ["#", "# Notes:"] + [f"#   - {text}" for text in (*fit.warnings, *points.notes)]
    lines += ["", "[drive]"]
    for name, value, note in drive_table(fit, points, base_name, base, base_notes, rpm_given):
        text = f"{name} = {toml_value(value)}"
        lines.append(f"{text}  # {note}" if note else text)
    return "\n".join(lines) + "\n"
