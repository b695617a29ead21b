"""A fitted tier written out: the ``[tier]`` table (a complete TierSpec, each value with where it
came from), the table of measured against fitted figures, and the TOML file with both and the
inputs' SHA-256.

The fields the points set are the fit's; every other field is the base profile's, with the base's
own source note. Left out: the base's ``controller_bandwidth`` (a host's controller is a scenario's
choice, and the fio runs measured the user's own host path anyway) and its stalls
(``stall_probability``, ``stall_time``: rare tails beyond the p99 the fit sees, whose mean time the
fit has already given to the other fields). ``read_interference`` follows the read routing the fit
chose (1.0, reads queue at the die holding their data, when random dies fitted better; unset
otherwise), and ``placement`` is always ``any-unit`` (writes on the earliest-free unit, as the fit
has them), so that the simulator routes reads and writes as the fit did. An operation not measured
keeps the base's figures: its latency (and the base's ``command_overhead``, see :mod:`.fit`),
bandwidth, command rate, spread (``service_cv`` is the reads', ``write_service_cv`` the writes')
and, for reads, ``read_interference`` and ``read_channel_bandwidth``.

:func:`inherited` lists the base's fields that shape performance, each with the measurement that
would pin it, for the file's notes and the printed report: a drive of another class than the base
silently takes them all (e.g. the default ``nvme-p3700``'s PCIe 3.0 link and its garbage
collection).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from simcache.base.units import format_figure
from simcache.physics.cluster import INTERFACE_RATES
from simcache.workloads.calibrate.fit import Fit
from simcache.workloads.calibrate.model import Prediction
from simcache.workloads.calibrate.points import Point, Points

_MAX_DIES = 64
"""TierSpec's most dies per channel."""
_DETERMINISTIC = 1e-3
"""A spread (service_cv) this small is written as none (a deterministic tier); where TierSpec needs
one (one operation's spread set, the other's not), this is as near none as it takes."""

__all__ = [
    "FitRow",
    "Fitted",
    "fit_rows",
    "fit_table",
    "inherited",
    "inherited_lines",
    "mb_s_text",
    "pinned_text",
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


# Base fields the fitted table leaves out. (read_channel_bandwidth too when reads are measured, and
# write_channel_bandwidth when writes are: the fit's model has no per-byte time on the unit
# (simcache.workloads.calibrate.model), so its fitted read_latency already holds the channel time
# of the sizes measured; the base's rate kept beside it would count it twice. Unmeasured, the reads
# (or writes) keep the base's latency and channel time.)
_LEFT_OUT = (
    "profile",
    "description",
    "source",
    "controller_bandwidth",
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


def pinned_text(
    relative_errors: Mapping[str, float], at_bounds: Mapping[str, str], name: str
) -> str:
    """How well the fit pinned ``name``, for its comment: at a bound (``", at its lower bound: not
    pinned"``), else as :func:`spread_text`."""
    side = at_bounds.get(name)
    if side is not None:
        return f", at its {side} bound: not pinned"
    return spread_text(relative_errors, name)


def _pinned_text(fit: Fit, name: str) -> str:
    return pinned_text(fit.relative_errors, fit.at_bounds, name)


def tier_table(
    fit: Fit, points: Points, base_name: str, base: Mapping[str, Any], base_notes: Mapping[str, str]
) -> list[tuple[str, Any, str]]:
    """The ``[tier]`` table as (field, value, note) rows: the fitted fields, then the base
    profile's others."""
    runs = f"{len(points.points)} fio runs of {points.device}"
    ops = {p.op for p in fit.points}

    def from_base(name: str, why: str = "") -> str:
        return f"base profile {base_name}{why}: {base_notes.get(name, 'no note')}"

    rows: list[tuple[str, Any, str]] = [
        ("description", f"{points.device} as measured by fio, fitted by simcache calibrate", ""),
        ("kind", base.get("kind", "flash"), f"base profile {base_name}"),
    ]
    if "command_overhead" in fit.fitted_fields:
        rows.append(
            (
                "command_overhead",
                _us(fit.command_overhead),
                f"fitted to {runs}{_pinned_text(fit, 'command_overhead')}",
            )
        )
    else:
        (only,) = ops
        why = (
            f" (held: only {only}s measured, and every read and write pays it: fitted to the "
            f"{only}s alone it would move the other operation, which nothing measured)"
        )
        rows.append(
            (
                "command_overhead",
                base.get("command_overhead", "0us"),
                from_base("command_overhead", why),
            )
        )
    base_channels = int(base.get("channels", 1))
    units = round(fit.units)
    split = units % base_channels == 0 and 1 <= units // base_channels <= _MAX_DIES
    channels, dies = (base_channels, units // base_channels) if split else (units, 1)
    rows.append(
        (
            "channels",
            channels,
            f"fitted: channels x dies = {units} parallel units{_pinned_text(fit, 'units')} (only "
            "the product is measured)",
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
                    f"fitted to {runs}{_pinned_text(fit, f'{op}_latency')}",
                )
            )
        elif f"{op}_latency" in fit.compensated:
            lone = fit.command_overhead + latency
            rows.append(
                (
                    f"{op}_latency",
                    _us(latency),
                    f"not measured: base profile {base_name}'s lone {op} (command_overhead + "
                    f"{op}_latency = {_us(lone)}) less the fitted command_overhead",
                )
            )
        else:
            rows.append((f"{op}_latency", base[f"{op}_latency"], from_base(f"{op}_latency")))
        if f"{op}_bandwidth" in fit.fitted_fields:
            rows.append(
                (
                    f"{op}_bandwidth",
                    mb_s_text(getattr(fit, f"{op}_bandwidth")),
                    f"fitted{_pinned_text(fit, f'{op}_bandwidth')}",
                )
            )
        else:
            rows.append(
                (
                    f"{op}_bandwidth",
                    base[f"{op}_bandwidth"],
                    from_base(f"{op}_bandwidth", " (not measured)"),
                )
            )
        limit = getattr(fit, f"{op}_iops_limit")
        if limit is not None:
            rows.append(
                (
                    f"{op}_iops_limit",
                    round(limit),
                    f"fitted: the command rate ceiling{_pinned_text(fit, f'{op}_iops_limit')}",
                )
            )
    rows += _spread_rows(fit, ops, base_name, base)
    if fit.routing == "die":
        rows.append(
            (
                "read_interference",
                1.0,
                "fitted: reads queue at a random die (fitted better than the earliest-free unit)",
            )
        )
    rows.append(_placement_row(fit, base_name, base))
    # fitted, or left unset because the points never met one
    measured = {f"{p.op}_iops_limit" for p in fit.points}
    taken = (
        {name for name, _, _ in rows}
        | set(_LEFT_OUT)
        | measured
        | {"service", "service_cv", "write_service_cv", "dies"}
    )
    if "read" in ops:
        # the fit chose the reads' routing (read_interference) and gave their latency the channel
        # time (read_channel_bandwidth); unmeasured, the reads keep the base's
        taken |= {"read_interference", "read_channel_bandwidth"}
    if "write" in ops:
        # likewise the writes' per-byte time on the unit (a RAM base's copy thread)
        taken.add("write_channel_bandwidth")
    for name, value in base.items():
        if name not in taken:
            rows.append((name, value, from_base(name)))
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


def _placement_row(fit: Fit, base_name: str, base: Mapping[str, Any]) -> tuple[str, Any, str]:
    """``placement`` as the fit routed operations: ``any-unit``, writes (and reads unless
    ``read_interference`` sends them to a random die) on the earliest-free unit. Written always,
    never inherited: a base's ``addressed`` (sata-ssd-s3700's) would send every write to a random
    die, which the fit never modelled (review 66c F13: 52,584 IOPS at QD4 where the fit's routing
    gives 54,779)."""
    reads = "a random die (read_interference)" if fit.routing == "die" else "the earliest-free unit"
    note = f"the fit's routing: writes to the earliest-free unit, reads to {reads}"
    if base.get("placement", "any-unit") != "any-unit":
        note += (
            f" (the base, {base_name}, has {base['placement']!r}: writes on a random die, not "
            "modelled by the fit)"
        )
    return ("placement", "any-unit", note)


def _spread_rows(
    fit: Fit, ops: Collection[str], base_name: str, base: Mapping[str, Any]
) -> list[tuple[str, Any, str]]:
    """The ``service``, ``service_cv`` and ``write_service_cv`` rows: the fitted spread, given to
    the operation measured only; the other keeps the base's (``service_cv`` is the reads',
    ``write_service_cv`` the writes')."""
    if "service_cv" not in fit.fitted_fields:
        return []
    fitted = round(fit.service_cv, 3)
    note = f"fitted{_pinned_text(fit, 'service_cv')}"
    if len(ops) == 2:
        if fit.service_cv <= _DETERMINISTIC:
            return []
        return [
            ("service", "lognormal", "fitted: the spread of latency at low queue depth"),
            ("service_cv", fitted, note),
        ]
    # one operation measured: each keeps its own spread (the base's for the other), as near
    # deterministic as TierSpec allows where it has none
    lognormal = base.get("service") == "lognormal"
    base_read = float(base["service_cv"]) if lognormal else _DETERMINISTIC
    base_write = float(base.get("write_service_cv", base_read)) if lognormal else _DETERMINISTIC
    measured = max(fitted, _DETERMINISTIC)
    read, write = (measured, base_write) if "read" in ops else (base_read, measured)
    if max(read, write) <= _DETERMINISTIC:
        return []
    kept = f"base profile {base_name}'s" + ("" if lognormal else " (deterministic)")
    read_note, write_note = (note, f"{kept} (writes not measured)")
    if "write" in ops:
        read_note, write_note = f"{kept} (reads not measured)", note
    return [
        ("service", "lognormal", "fitted: the spread of latency at low queue depth"),
        ("service_cv", read, f"the reads' spread: {read_note}"),
        ("write_service_cv", write, f"the writes' spread: {write_note}"),
    ]


_SUSTAINED = (
    "a sustained 4k randwrite run on a preconditioned device past its cliff (e.g. 30 min at "
    "iodepth 32 with write_bw_log and log_avg_msec=1000)"
)
_PINS: dict[str, str] = {
    "kind": "what the device is (flash or RAM): not a measurement",
    "interface": (
        "the device's host port (PCIe generation and lanes, SATA, SAS) from its datasheet; it caps "
        "every transfer at {rate}: a sequential 1m read at iodepth 32 that stops at it shows it"
    ),
    "command_overhead": (
        "runs of both reads and writes (every operation pays it: one operation alone cannot tell "
        "it from its own latency)"
    ),
    "latency": "{op} runs at iodepth 1 and 32 (rand{op} 4k)",
    "bandwidth": "a sequential 128k {op} run at iodepth 8 or more, beside the 4k random ones",
    "iops_limit": "a 4k rand{op} run past the knee (iodepth 64 or 128)",
    "service": "a QD1 run of each operation with percentiles (fio prints them by default)",
    "service_cv": "a QD1 randread run with percentiles",
    "write_service_cv": "a QD1 randwrite run with percentiles",
    "capacity": (
        "the device's size (it sizes the cache), not a performance run: set capacity beside "
        "file = ... for yours"
    ),
    "clean_pool": f"{_SUSTAINED}: the bytes written before the rate drops",
    "write_amplification": (
        f"{_SUSTAINED}: the rate past the cliff is write_bandwidth / write_amplification"
    ),
    "gc_rate": f"{_SUSTAINED}: the rate past the cliff",
    "gc_pass": f"{_SUSTAINED}: its latency log's stalls past the cliff",
    "erase_block": (
        "sequential writes past the cliff in runs of growing length: the length from which they "
        "keep their rate"
    ),
    "condition": "the device's state when a scenario starts (fresh or preconditioned): a choice",
    "placement": (
        "random runs at many queue depths (1, 2, 4, ... 64): how the IOPS climb to the knee"
    ),
    "read_interference": (
        "randread runs at several queue depths (fitted when reads are measured); how reads wait "
        "for programs needs reads timed under a write load, which calibrate does not take"
    ),
    "read_channel_bandwidth": (
        "randread runs of two block sizes at iodepth 1 (a lone read's time grows with its size "
        "at this rate); fitted into read_latency when reads are measured"
    ),
    "write_channel_bandwidth": (
        "randwrite runs of two block sizes at iodepth 1 (a lone write's time grows with its size "
        "at this rate); fitted into write_latency when writes are measured"
    ),
    "volatile": "the datasheet (power-loss protection): what a run counts as at risk",
    "scheduling": "how the caching layer orders destage reads: a choice, not a measurement",
    "background_share": "the caching layer's share for destaging: a choice, not a measurement",
    "background_request": "the caching layer's destage read size: a choice, not a measurement",
}
"""What would pin each field a fitted tier takes from its base (``{op}``: the field's operation;
``{rate}``: the interface's payload rate)."""


def inherited(
    fit: Fit, points: Points, base_name: str, base: Mapping[str, Any], base_notes: Mapping[str, str]
) -> list[tuple[str, Any, str]]:
    """The fields of the fitted table that come from the base profile (every one shapes what the
    simulator does), as (field, value, what would pin it) rows."""
    rows = []
    for name, value, note in tier_table(fit, points, base_name, base, base_notes):
        if name == "source" or f"base profile {base_name}" not in note:
            continue
        op = "write" if name.startswith("write_") else "read"
        family = name.split("_", 1)[1] if name.startswith(("read_", "write_")) else name
        pin = _PINS.get(name) or _PINS.get(family) or "not measured by fio runs of one pattern"
        if name == "interface":
            port = INTERFACE_RATES.get(str(value), math.inf)
            rate = "no cap" if math.isinf(port) else mb_s_text(port).replace("MB/s", " MB/s")
            pin = pin.format(rate=rate)
        rows.append((name, value, pin.format(op=op) if "{op}" in pin else pin))
    return rows


def inherited_lines(rows: Sequence[tuple[str, Any, str]], base_name: str) -> list[str]:
    """:func:`inherited`'s rows as text: a heading, then one line a field."""
    if not rows:
        return []
    return [
        f"From the base profile {base_name}, not measured by these runs (check each against your "
        "device; what would pin it):",
        *[f"  {name} = {toml_value(value)}: {pin}" for name, value, pin in rows],
    ]


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
    kept = inherited_lines(inherited(fit, points, base_name, base, base_notes), base_name)
    if kept:
        lines += ["#", *[f"# {line}" for line in kept]]
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
