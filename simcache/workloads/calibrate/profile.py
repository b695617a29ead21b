"""A fitted tier written out: the ``[tier]`` table (a complete TierSpec, each value with where it
came from), the table of measured against fitted figures, and the TOML file with both and the
inputs' SHA-256.

The fields the points set are the fit's; every other field is the base profile's, with the base's
own source note. Left out: the base's ``controller_bandwidth`` (a host's controller is a scenario's
choice, and the fio runs measured the user's own host path anyway) and its stalls
(``stall_probability``, ``stall_time``: rare tails beyond the p99 the fit sees, whose mean time the
fit has already given to the other fields). ``read_interference`` follows the read routing the fit
chose (1.0, reads queue at the die holding their data, when random dies fitted better; unset
otherwise), so that the simulator routes reads as the fit did.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from simcache.base.units import format_figure
from simcache.workloads.calibrate.fit import Fit
from simcache.workloads.calibrate.model import Prediction
from simcache.workloads.calibrate.points import Point, Points

_MAX_DIES = 64
"""TierSpec's most dies per channel."""

__all__ = [
    "FitRow",
    "Fitted",
    "fit_rows",
    "fit_table",
    "mb_s_text",
    "spread_text",
    "tier_table",
    "tier_toml",
    "toml_value",
]


class Fitted(Protocol):
    """A fit of either kind as its table reads it: the points and their fitted IOPS, mean and
    p99."""

    @property
    def points(self) -> tuple[Point, ...]: ...

    @property
    def fitted(self) -> Prediction: ...


# Base fields the fitted table leaves out. read_channel_bandwidth: the fit's model has no per-byte
# time on the unit (simcache.workloads.calibrate.model), so its fitted read_latency already holds
# the channel time of the sizes measured; the base's rate kept beside it would count it twice.
_LEFT_OUT = (
    "profile",
    "description",
    "source",
    "controller_bandwidth",
    "read_channel_bandwidth",
    "stall_probability",
    "stall_time",
)


@dataclass(frozen=True)
class FitRow:
    """One point: measured and fitted IOPS, mean and p99 (ms), and the relative errors."""

    source: str
    pattern: str
    outstanding: int
    iops: float
    fitted_iops: float
    mean_ms: float
    fitted_mean_ms: float
    p99_ms: float | None
    fitted_p99_ms: float

    def errors(self) -> tuple[float, float, float | None]:
        """Relative errors (fitted / measured - 1) of IOPS, mean and p99 (``None`` without a
        measured p99)."""
        p99 = None if self.p99_ms is None else self.fitted_p99_ms / self.p99_ms - 1.0
        return self.fitted_iops / self.iops - 1.0, self.fitted_mean_ms / self.mean_ms - 1.0, p99


def fit_rows(fit: Fitted) -> list[FitRow]:
    """The fit's points, ordered by pattern then outstanding I/Os."""
    rows = [
        FitRow(
            p.source,
            p.pattern,
            p.outstanding,
            p.iops,
            float(fit.fitted.iops[i]),
            p.mean * 1e3,
            float(fit.fitted.mean[i]) * 1e3,
            None if p.p99 is None else p.p99 * 1e3,
            float(fit.fitted.p99[i]) * 1e3,
        )
        for i, p in enumerate(fit.points)
    ]
    return sorted(rows, key=lambda r: (r.pattern, r.outstanding, r.source))


def fit_table(fit: Fitted) -> list[str]:
    """Measured against fitted IOPS, mean and p99 per point, with the errors, as aligned text
    lines."""
    head = (
        "pattern",
        "QD",
        "IOPS",
        "fitted",
        "err",
        "mean ms",
        "fitted",
        "err",
        "p99 ms",
        "fitted",
        "err",
        "file",
    )
    lines = [head]
    for row in fit_rows(fit):
        iops_error, mean_error, p99_error = row.errors()
        lines.append(
            (
                row.pattern,
                str(row.outstanding),
                format_figure(row.iops, 4),
                format_figure(row.fitted_iops, 4),
                f"{iops_error:+.0%}",
                format_figure(row.mean_ms, 3),
                format_figure(row.fitted_mean_ms, 3),
                f"{mean_error:+.0%}",
                "-" if row.p99_ms is None else format_figure(row.p99_ms, 3),
                format_figure(row.fitted_p99_ms, 3),
                "-" if p99_error is None else f"{p99_error:+.0%}",
                row.source,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return [
        "  ".join(
            cell.ljust(w) if i in (0, len(head) - 1) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    ]


def _us(seconds: float) -> str:
    return f"{format_figure(seconds * 1e6, 4).replace(',', '')}us"


def mb_s_text(rate: float) -> str:
    """A rate as a profile writes it: ``"1234MB/s"`` (4 significant figures)."""
    return f"{format_figure(rate / 1e6, 4).replace(',', '')}MB/s"


def spread_text(relative_errors: Mapping[str, float], name: str) -> str:
    """How well the fit pinned ``name``, for its comment: ``", ±12%"``, ``", not pinned"`` or
    nothing."""
    spread = relative_errors.get(name)
    if spread is None:
        return ""
    if not math.isfinite(spread):
        return ", not pinned"
    return f", ±{spread:.2f}" if name == "service_cv" else f", ±{spread:.0%}"


def tier_table(
    fit: Fit, points: Points, base_name: str, base: Mapping[str, Any], base_notes: Mapping[str, str]
) -> list[tuple[str, Any, str]]:
    """The ``[tier]`` table as (field, value, note) rows: the fitted fields, then the base
    profile's others."""
    errors = fit.relative_errors
    runs = f"{len(points.points)} fio runs of {points.device}"
    rows: list[tuple[str, Any, str]] = [
        ("description", f"{points.device} as measured by fio, fitted by simcache calibrate", ""),
        ("kind", base.get("kind", "flash"), f"base profile {base_name}"),
        (
            "command_overhead",
            _us(fit.command_overhead),
            f"fitted to {runs}{spread_text(errors, 'command_overhead')}",
        ),
    ]
    base_channels = int(base.get("channels", 1))
    units = round(fit.units)
    split = units % base_channels == 0 and 1 <= units // base_channels <= _MAX_DIES
    channels, dies = (base_channels, units // base_channels) if split else (units, 1)
    pinned = spread_text(errors, "units")
    rows.append(
        (
            "channels",
            channels,
            f"fitted: channels x dies = {units} parallel units{pinned} (only the product is "
            "measured)",
        )
    )
    rows.append(("dies", dies, "fitted, with channels"))
    for op in ("read", "write"):
        latency = getattr(fit, f"{op}_latency")
        if f"{op}_latency" in fit.fitted_fields:
            rows.append(
                (
                    f"{op}_latency",
                    _us(latency),
                    f"fitted to {runs}{spread_text(errors, f'{op}_latency')}",
                )
            )
        else:
            rows.append(
                (
                    f"{op}_latency",
                    base[f"{op}_latency"],
                    f"base profile {base_name}: {base_notes.get(f'{op}_latency', 'no note')}",
                )
            )
        if f"{op}_bandwidth" in fit.fitted_fields:
            rows.append(
                (
                    f"{op}_bandwidth",
                    mb_s_text(getattr(fit, f"{op}_bandwidth")),
                    f"fitted{spread_text(errors, f'{op}_bandwidth')}",
                )
            )
        else:
            note = base_notes.get(f"{op}_bandwidth", "no note")
            rows.append(
                (
                    f"{op}_bandwidth",
                    base[f"{op}_bandwidth"],
                    f"base profile {base_name} (not measured): {note}",
                )
            )
        limit = getattr(fit, f"{op}_iops_limit")
        if limit is not None:
            rows.append(
                (
                    f"{op}_iops_limit",
                    round(limit),
                    f"fitted: the command rate ceiling{spread_text(errors, f'{op}_iops_limit')}",
                )
            )
    if "service_cv" in fit.fitted_fields and fit.service_cv > 1e-3:
        rows.append(("service", "lognormal", "fitted: the spread of latency at low queue depth"))
        rows.append(
            ("service_cv", round(fit.service_cv, 3), f"fitted{spread_text(errors, 'service_cv')}")
        )
    if fit.routing == "die":
        rows.append(
            (
                "read_interference",
                1.0,
                "fitted: reads queue at a random die (fitted better than the earliest-free unit)",
            )
        )
    # fitted, or left unset because the points never met one
    measured = {f"{p.op}_iops_limit" for p in fit.points}
    taken = (
        {name for name, _, _ in rows}
        | set(_LEFT_OUT)
        | measured
        | {"read_interference", "service", "service_cv", "write_service_cv", "dies"}
    )
    for name, value in base.items():
        if name not in taken:
            rows.append(
                (name, value, f"base profile {base_name}: {base_notes.get(name, 'no note')}")
            )
    hashes = "; ".join(f"{name} sha256:{digest[:16]}" for name, digest in points.hashes)
    versions = ", ".join(points.fio_versions)
    rows.append(
        (
            "source",
            f"simcache calibrate: {runs} ({versions}; {hashes}); fields not measured from base "
            f"profile {base_name}",
            "",
        )
    )
    return rows


def tier_toml(
    fit: Fit, points: Points, base_name: str, base: Mapping[str, Any], base_notes: Mapping[str, str]
) -> str:
    """The TOML file: a comment block (inputs and their SHA-256, the fit table, the warnings),
    then ``[tier]``."""
    lines = [
        f"# A tier fitted by simcache calibrate to fio results of {points.device} "
        f"({', '.join(points.fio_versions)}).",
        '# Use it in a scenario as  [cluster] tier = { file = "THIS.toml" }  (a path relative to '
        "the scenario), or paste",
        "# the [tier] table's fields into [cluster.tier].",
        "#",
        "# Input files (SHA-256):",
        *[f"#   {digest}  {name}" for name, digest in points.hashes],
        "#",
        "# Measured against fitted (err = fitted / measured - 1; QD = iodepth x numjobs):",
        *[f"#   {line}" for line in fit_table(fit)],
    ]
    if fit.warnings or points.notes:
        lines += ["#", "# Notes:"] + [f"#   - {text}" for text in (*fit.warnings, *points.notes)]
    lines += ["", "[tier]"]
    for name, value, note in tier_table(fit, points, base_name, base, base_notes):
        text = f"{name} = {toml_value(value)}"
        lines.append(f"{text}  # {note}" if note else text)
    return "\n".join(lines) + "\n"


def toml_value(value: Any) -> str:
    """``value`` as TOML writes it (a bool, number or string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"cannot write {type(value).__name__} in a tier table")
