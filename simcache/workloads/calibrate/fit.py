"""The fit of a tier's per-operation figures to measured points, and what the points cannot pin.

Fitted (scipy.optimize.least_squares over the logarithms, within physical bounds):
``command_overhead`` (when both operations are measured), ``read_latency`` and ``write_latency``
(for the operations measured),
``service_cv`` (from p99s), a command rate ceiling per operation (``read_iops_limit``,
``write_iops_limit``), the bandwidths of operations measured at two block sizes or more, and
``channels x dies`` (a whole number: fitted as a real number, then the nearest whole numbers are
tried with the rest refitted), with reads routed to the earliest-free unit or to a random die,
whichever fits better. Residuals per point: log(fitted / measured) of IOPS and of mean latency, and
half that weight for p99 (a tail is noisier than a mean).

``command_overhead`` is shared: every read and every write pays it. Fitted from one operation
alone, it is not told from that operation's own latency (any split of the lone time fits), and
whatever the optimiser made of it would move the other operation, which nothing measured. So when
only reads (or only writes) are measured, the base profile's overhead is held and only the
measured operation's own figures are fitted: the other operation keeps the base's lone time
exactly, as the output says. If the base's overhead alone is longer than the measured operation's
lone time (a base of a slower class), the overhead is fitted after all and the other operation's
latency is moved by the opposite amount, so that its lone time (overhead + latency) is still the
base's.

A parameter is *pinned* when the points' sensitivity to it leaves its relative standard error below
30 % (from the Jacobian at the optimum: ``s^2 (J^T J)^-1``); otherwise the fit says which
measurement would pin it. A parameter the optimiser left at (or within 0.1 % of) one of its
:data:`BOUNDS` is said to be at that bound: the points pushed it there and cannot pin it (its
standard error means nothing there). A command rate ceiling the fit puts above twice the highest
IOPS measured is left unset: the points never met it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from scipy.optimize import least_squares

from simcache.workloads.calibrate.model import Device, Floats, Prediction, predict
from simcache.workloads.calibrate.points import Point

__all__ = ["BOUNDS", "Fit", "Fixed", "fit_tier"]

Op = Literal["read", "write"]

BOUNDS: dict[str, tuple[float, float, str]] = {
    "command_overhead": (
        1e-7,
        0.05,
        "0.1 µs (a RAM copy) to 50 ms (beyond any device's per-command cost)",
    ),
    "latency": (1e-7, 0.1, "0.1 µs (DRAM) to 100 ms (slower than a disk seek: not flash)"),
    "units": (1.0, 4096.0, "1 to 4,096 parallel units (TierSpec's range for channels x dies)"),
    "iops_limit": (1e3, 1e8, "1,000 to 10^8 commands/s (the scenario's largest IOPS)"),
    "bandwidth": (1e6, 1e11, "1 MB/s to 100 GB/s (beyond a PCIe 5.0 x16 link)"),
    "service_cv": (0.0, 3.0, "0 (every operation alike) to 3 (a tail of retries)"),
}
"""Each fitted quantity's range, SI units, and why."""

_SCOUT = 40
"""Model evaluations per first guess before the best one is followed to the end."""
_PINNED = 0.3
"""Relative standard error below which a parameter counts as pinned by the points."""
_P99_WEIGHT = 0.5
_ROBUST = 0.1
"""Residuals beyond about 10 % count less than squared (scipy's soft_l1 loss): one run the host
disturbed (a p99 of a queue deeper than the device's) does not drag the fit."""
_LOOSE = {
    "command_overhead": "runs between QD1 and the knee (where IOPS stop growing with queue depth, "
    "e.g. 2, 4 and 8 "
    "outstanding) tell it from the unit latencies; if they are in, other splits of the QD1 latency "
    "fit as well",
    "latency": "runs between QD1 and the knee of that operation (e.g. 2, 4 and 8 outstanding) tell "
    "it from "
    "command_overhead and the command rate ceiling; if they are in, other splits fit as well",
    "units": "runs past the knee (32 or 64 outstanding) and at it pin it, with the unit latency",
    "iops_limit": "the knee's sharpness tells the ceiling from the units' (runs at 2, 4 and 8 "
    "outstanding); if they are "
    "in, the units' ceiling fits as well",
    "bandwidth": "runs of two block sizes far apart (4k and 128k) at queue depth 8 or more pin it",
    "service_cv": (
        "the spread of latency at low queue depth pins it: add a QD1 run with percentiles"
    ),
}
"""What pins each kind of parameter, for the warning when the points leave it loose."""
_UNSEEN_CEILING = 2.0
"""A command rate ceiling above this many times the highest IOPS measured was never met: it is
left unset."""
_AT_BOUND = 1e-3
"""A fitted value within this relative distance of a bound (service_cv: this absolute one) is at
it."""
_ROOM = 0.05
"""With one operation measured, the base's command_overhead is held only if it leaves that
operation's own latency at least this share of its lowest-depth mean."""


@dataclass(frozen=True)
class Fixed:
    """Figures the fit takes as given when the points cannot set them (from the base profile): SI
    units."""

    read_bandwidth: float
    write_bandwidth: float
    read_latency: float
    write_latency: float
    command_overhead: float = 0.0
    """The base's overhead: held when one operation is measured (module docstring)."""


@dataclass(frozen=True)
class Fit:
    """The fitted tier figures, each point's fitted IOPS, mean and p99, and what the points left
    unpinned."""

    command_overhead: float
    read_latency: float
    write_latency: float
    units: float
    """Parallel units (channels x dies): a real number while fitting, whole in the fit returned."""
    routing: Literal["earliest", "die"]
    service_cv: float
    read_iops_limit: float | None
    write_iops_limit: float | None
    read_bandwidth: float
    write_bandwidth: float
    points: tuple[Point, ...]
    fitted: Prediction
    fitted_fields: tuple[str, ...]
    """The TierSpec fields the points set (the others come from the base profile)."""
    warnings: tuple[str, ...] = field(default=())
    relative_errors: Mapping[str, float] = field(default_factory=dict)
    """Each fitted parameter's relative standard error (0.05 = ±5 %)."""
    at_bounds: Mapping[str, Literal["lower", "upper"]] = field(default_factory=dict)
    """The fitted parameters the optimiser left at a bound of :data:`BOUNDS`, and which."""
    compensated: tuple[str, ...] = ()
    """The unmeasured operation's latency (``write_latency`` or ``read_latency``) when it was moved
    against a fitted command_overhead, so that its lone time stays the base's (module
    docstring)."""

    def device(self, op: Op) -> Device:
        """The model of one operation with these figures."""
        return Device(
            command_overhead=self.command_overhead,
            latency=self.read_latency if op == "read" else self.write_latency,
            units=self.units,
            bandwidth=self.read_bandwidth if op == "read" else self.write_bandwidth,
            iops_limit=self.read_iops_limit if op == "read" else self.write_iops_limit,
            service_cv=self.service_cv,
            routing=self.routing if op == "read" else "earliest",
        )

    def predict(self, points: Sequence[Point]) -> Prediction:
        """Fitted IOPS, mean and p99 of any points of this device (e.g. ones the fit did not
        see)."""
        return _predict_points(self, points)


@dataclass(frozen=True)
class _Layout:
    """Which parameters are free, and where each sits in the vector the optimiser moves
    (logarithms)."""

    names: tuple[str, ...]
    ops: tuple[Op, ...]
    units_free: bool
    units: float
    routing: Literal["earliest", "die"]


def fit_tier(points: Sequence[Point], fixed: Fixed) -> Fit:
    """The tier figures that best reproduce ``points``; see the module docstring."""
    ops: tuple[Op, ...] = tuple(op for op in ("read", "write") if any(p.op == op for p in points))
    sizes = {op: {p.size for p in points if p.op == op} for op in ops}
    shared = len(ops) == 2 or not _room_for_base_overhead(points, ops[0], fixed)
    names = ["command_overhead", "service_cv"] if shared else ["service_cv"]
    for op in ops:
        names += [f"{op}_latency", f"{op}_iops_limit"]
        if len(sizes[op]) > 1:
            names.append(f"{op}_bandwidth")
    has_p99 = any(p.p99 is not None for p in points)
    if not has_p99:
        names.remove("service_cv")
    routings: tuple[Literal["earliest", "die"], ...] = (
        ("earliest", "die") if "read" in ops else ("earliest",)
    )
    tries = [
        _solve(
            points, fixed, _Layout(tuple(names), ops, True, start["units"], routing), start, _SCOUT
        )
        for start in _starts(points, ops, fixed, not shared)
        for routing in routings
    ]
    scout = min(tries, key=lambda f: _cost(f, points))
    layout = _Layout(tuple(names), ops, True, scout.units, scout.routing)
    free = _solve(points, fixed, layout, _values(scout))
    best: tuple[float, Fit] | None = None
    for units in sorted({max(1, math.floor(free.units)), max(1, math.ceil(free.units))}):
        layout = _Layout(tuple(names), ops, False, float(units), free.routing)
        candidate = _solve(points, fixed, layout, _values(free))
        candidate = replace(
            candidate,
            relative_errors={**candidate.relative_errors, "units": free.relative_errors["units"]},
        )
        cost = _cost(candidate, points)
        if best is None or cost < best[0]:
            best = (cost, candidate)
    assert best is not None
    fit = best[1]
    if len(ops) == 1 and shared:
        fit = _compensate(fit, ops[0], fixed)
    return _judge(fit, points, fixed, ops, sizes, has_p99, free.units)


def _room_for_base_overhead(points: Sequence[Point], op: Op, fixed: Fixed) -> bool:
    """Whether the base's command_overhead, held, leaves ``op`` (the one operation measured) a
    latency of its own: at its lowest depth, the mean less the overhead and the transfer."""
    lowest = min((p for p in points if p.op == op), key=lambda p: (p.outstanding, p.mean))
    bandwidth: float = getattr(fixed, f"{op}_bandwidth")
    transfer = lowest.size / bandwidth
    return lowest.mean - transfer - fixed.command_overhead > _ROOM * lowest.mean


def _compensate(fit: Fit, measured: Op, fixed: Fixed) -> Fit:
    """``fit`` (of ``measured`` alone, its command_overhead fitted) with the other operation's
    latency moved against the overhead's change, so that its lone time is the base's."""
    other: Op = "write" if measured == "read" else "read"
    name = f"{other}_latency"
    wanted = fixed.command_overhead + getattr(fixed, name) - fit.command_overhead
    low, _ = _bounds(name)
    # the other operation has no points: its latency moves no prediction
    return replace(fit, **{name: max(wanted, low)}, compensated=(name,))


def _starts(
    points: Sequence[Point], ops: tuple[Op, ...], fixed: Fixed, held: bool
) -> list[dict[str, float]]:
    """First guesses from the points: a tenth or half of the shortest latency outside the device
    (``held``: the base's command_overhead) and the rest on a unit, with each operation's highest
    IOPS set by the units (the ceiling loose) or by the command processor."""
    shortest = min(p.mean for p in points)
    starts = []
    for share in (None,) if held else (0.1, 0.5):
        for bound_by in ("units", "command"):
            overhead = fixed.command_overhead if share is None else shortest * share
            start = {"command_overhead": overhead, "service_cv": 0.2, "units": 1.0}
            for op in ops:
                mine = [p for p in points if p.op == op]
                lowest = min(mine, key=lambda p: p.outstanding)
                ceiling = max(p.iops for p in mine)
                bandwidth = getattr(fixed, f"{op}_bandwidth")
                latency = max(
                    lowest.mean - start["command_overhead"] - lowest.size / bandwidth, 1e-6
                )
                start[f"{op}_latency"] = latency
                start[f"{op}_iops_limit"] = (3.0 if bound_by == "units" else 1.02) * ceiling
                start[f"{op}_bandwidth"] = bandwidth
                start["units"] = max(
                    start["units"], ceiling * latency * (1.0 if bound_by == "units" else 2.0)
                )
            starts.append(start)
    return starts


def _bounds(name: str) -> tuple[float, float]:
    low, high, _ = BOUNDS[_family(name)]
    return low, high


def _to_vector(values: Mapping[str, float], layout: _Layout) -> Floats:
    entries = [_encode(name, values[name]) for name in layout.names]
    if layout.units_free:
        entries.append(math.log(values["units"]))
    return np.array(entries, dtype=float)


def _encode(name: str, value: float) -> float:
    low, high = _bounds(name)
    if name == "service_cv":
        return min(max(value, low), high)
    return math.log(min(max(value, low * 1.000001), high / 1.000001))


def _decode(name: str, value: float) -> float:
    return float(value) if name == "service_cv" else math.exp(value)


def _vector_bounds(layout: _Layout) -> tuple[list[float], list[float]]:
    lows, highs = [], []
    for name in layout.names:
        low, high = _bounds(name)
        lows.append(low if name == "service_cv" else math.log(low))
        highs.append(high if name == "service_cv" else math.log(high))
    if layout.units_free:
        low, high, _ = BOUNDS["units"]
        lows.append(math.log(low))
        highs.append(math.log(high))
    return lows, highs


def _fit_from(vector: Floats, layout: _Layout, fixed: Fixed, points: tuple[Point, ...]) -> Fit:
    values = {name: _decode(name, v) for name, v in zip(layout.names, vector, strict=False)}
    units = math.exp(vector[-1]) if layout.units_free else layout.units

    def get(name: str, default: float | None) -> float | None:
        return values.get(name, default)

    fit = Fit(
        command_overhead=values.get("command_overhead", fixed.command_overhead),
        read_latency=get("read_latency", fixed.read_latency) or fixed.read_latency,
        write_latency=get("write_latency", fixed.write_latency) or fixed.write_latency,
        units=units,
        routing=layout.routing,
        service_cv=values.get("service_cv", 0.0),
        read_iops_limit=get("read_iops_limit", None),
        write_iops_limit=get("write_iops_limit", None),
        read_bandwidth=get("read_bandwidth", fixed.read_bandwidth) or fixed.read_bandwidth,
        write_bandwidth=get("write_bandwidth", fixed.write_bandwidth) or fixed.write_bandwidth,
        points=points,
        fitted=Prediction(np.zeros(0), np.zeros(0), np.zeros(0)),
        fitted_fields=(),
    )
    return replace(fit, fitted=_predict_points(fit, points))


def _predict_points(fit: Fit, points: Sequence[Point]) -> Prediction:
    iops, mean, p99 = (np.zeros(len(points)) for _ in range(3))
    for op in ("read", "write"):
        index = [i for i, p in enumerate(points) if p.op == op]
        if not index:
            continue
        sizes = np.array([points[i].size for i in index], dtype=float)
        depth = np.array([points[i].outstanding for i in index], dtype=float)
        prediction = predict(fit.device(op), sizes, depth)
        iops[index], mean[index], p99[index] = prediction.iops, prediction.mean, prediction.p99
    return Prediction(iops, mean, p99)


def _residuals(fit: Fit, points: Sequence[Point]) -> Floats:
    rows = []
    for i, point in enumerate(points):
        rows.append(math.log(fit.fitted.iops[i] / point.iops))
        rows.append(math.log(fit.fitted.mean[i] / point.mean))
        if point.p99 is not None:
            rows.append(_P99_WEIGHT * math.log(max(fit.fitted.p99[i], 1e-12) / point.p99))
    return np.array(rows, dtype=float)


def _cost(fit: Fit, points: Sequence[Point]) -> float:
    """The robust loss the optimiser minimises (soft_l1 of scale _ROBUST)."""
    z = (_residuals(fit, points) / _ROBUST) ** 2
    return float(np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


def _values(fit: Fit) -> dict[str, float]:
    values = {
        "command_overhead": fit.command_overhead,
        "service_cv": fit.service_cv,
        "units": float(fit.units),
        "read_latency": fit.read_latency,
        "write_latency": fit.write_latency,
        "read_bandwidth": fit.read_bandwidth,
        "write_bandwidth": fit.write_bandwidth,
    }
    for op in ("read", "write"):
        limit = getattr(fit, f"{op}_iops_limit")
        values[f"{op}_iops_limit"] = limit if limit is not None else BOUNDS["iops_limit"][1] / 2.0
    return values


def _solve(
    points: Sequence[Point],
    fixed: Fixed,
    layout: _Layout,
    start: Mapping[str, float],
    evaluations: int = 200,
) -> Fit:
    chosen = tuple(points)

    def residuals(vector: Floats) -> Floats:
        return _residuals(_fit_from(vector, layout, fixed, chosen), chosen)

    result = least_squares(
        residuals,
        _to_vector(start, layout),
        bounds=_vector_bounds(layout),
        x_scale="jac",
        loss="soft_l1",
        f_scale=_ROBUST,
        ftol=1e-6,
        xtol=1e-6,
        max_nfev=evaluations,
    )
    fit = _fit_from(result.x, layout, fixed, chosen)
    errors = _relative_errors(result.jac, result.fun, layout)
    return replace(fit, relative_errors=errors)


def _relative_errors(jac: Floats, residual: Floats, layout: _Layout) -> dict[str, float]:
    """Each free parameter's relative standard error, ``s^2 (J^T J)^-1`` over the logarithms
    (infinite when the points cannot tell it from the others)."""
    names = list(layout.names) + (["units"] if layout.units_free else [])
    rows, count = jac.shape
    dof = max(rows - count, 1)
    # at least a 0.1 % scatter: a perfect fit still has noise
    s2 = max(float(residual @ residual) / dof, 1e-6)
    try:
        covariance = np.linalg.inv(jac.T @ jac) * s2
        diagonal = np.diag(covariance)
    except np.linalg.LinAlgError:
        diagonal = np.full(count, np.inf)
    errors = {}
    for name, variance in zip(names, diagonal, strict=True):
        spread = math.sqrt(variance) if variance >= 0 and math.isfinite(variance) else math.inf
        errors[name] = spread  # log scale: a relative error; service_cv: an absolute one
    return errors


def _judge(
    fit: Fit,
    points: Sequence[Point],
    fixed: Fixed,
    ops: tuple[Op, ...],
    sizes: Mapping[Op, set[int]],
    has_p99: bool,
    free_units: float,
) -> Fit:
    """The chosen fit with its unmet ceilings unset, whole units, and a warning per parameter the
    points leave loose or at a bound (``free_units``: the units before they were made whole)."""
    warnings: list[str] = []
    fitted_overhead = "command_overhead" in fit.relative_errors
    fields = ["command_overhead"] if fitted_overhead else []
    fields.append("channels x dies")
    errors = dict(fit.relative_errors)
    limits: dict[str, float | None] = {}
    for op in ("read", "write"):
        name = f"{op}_iops_limit"
        limit = getattr(fit, name)
        highest = max((p.iops for p in points if p.op == op), default=0.0)
        if op not in ops or limit is None or limit > _UNSEEN_CEILING * highest:
            limits[name] = None
            if op in ops:
                warnings.append(
                    f"{name} left unset: the {op}s never met a command rate ceiling (the media or "
                    "pipe bound them); "
                    f"a {op} run at a higher queue depth than "
                    f"{max(p.outstanding for p in points if p.op == op)} would show one"
                )
            continue
        limits[name] = limit
        fields.append(name)
    fit = replace(
        fit,
        units=float(round(fit.units)),
        read_iops_limit=limits["read_iops_limit"],
        write_iops_limit=limits["write_iops_limit"],
    )
    fit = replace(fit, fitted=_predict_points(fit, points))
    for op in ops:
        fields.append(f"{op}_latency")
        mine = [p for p in points if p.op == op]
        depths = sorted({p.outstanding for p in mine})
        if len(depths) < 2:
            warnings.append(
                f"{op}_latency and command_overhead are not told apart for {op}s: every {op} ran "
                f"at {depths[0]} outstanding; "
                f"add a {op} run at another queue depth (QD1 and one past the knee, e.g. 32)"
            )
        if len(sizes[op]) > 1:
            fields.append(f"{op}_bandwidth")
        else:
            only = next(iter(sizes[op]))
            warnings.append(
                f"{op}_bandwidth not measured: every {op} was {only:,} bytes; kept the base "
                "profile's "
                f"{getattr(fixed, f'{op}_bandwidth') / 1e6:,.0f} MB/s (a sequential 128k {op} run "
                "at queue depth 8 or more would pin it)"
            )
    both: tuple[Op, ...] = ("read", "write")
    for op in both:
        if op not in ops:
            warnings.append(_unmeasured(fit, fixed, op))
    if has_p99:
        fields.append("service_cv")
    else:
        warnings.append(
            "service_cv not measured: no usable p99 (fio prints clat percentiles unless "
            "clat_percentiles=0; clones reported "
            "apart cannot be merged: run numjobs > 1 with group_reporting); the tier is "
            "deterministic"
        )
    values = {name: getattr(fit, name) for name in errors if name != "units"}
    values["units"] = free_units
    at_bounds: dict[str, Literal["lower", "upper"]] = {}
    for name, spread in errors.items():
        kept = name in ("units", "service_cv", "command_overhead") or name in fields
        label = "channels x dies" if name == "units" else name
        side = _at_bound(name, values[name]) if kept and values[name] is not None else None
        if side is not None:
            at_bounds[name] = side
            warnings.append(
                f"{label} = {_value_text(name, values[name])} is at its {side} bound (the fit's "
                f"range: {BOUNDS[_family(name)][2]}): the points cannot pin it; "
                f"{_LOOSE[_family(name)]}"
            )
        elif kept and spread > _PINNED:
            shown = (
                "±∞"
                if not math.isfinite(spread)
                else f"±{spread:.2f}"
                if name == "service_cv"
                else f"±{spread:.0%}"
            )
            warnings.append(f"{label} not pinned ({shown}): {_LOOSE[_family(name)]}")
    return replace(
        fit,
        warnings=tuple(warnings),
        fitted_fields=tuple(fields),
        relative_errors=errors,
        at_bounds=at_bounds,
    )


def _unmeasured(fit: Fit, fixed: Fixed, op: Op) -> str:
    """The note for the operation without points: what its lone time is, and what of it is the
    base's (see the module docstring)."""
    latency = getattr(fit, f"{op}_latency")
    base_latency = getattr(fixed, f"{op}_latency")
    lone = fixed.command_overhead + base_latency
    other = "write" if op == "read" else "read"
    if f"{op}_latency" in fit.compensated:
        moved = fit.command_overhead + latency
        kept = (
            f"command_overhead was fitted to the {other}s ({fit.command_overhead * 1e6:.4g} µs: "
            f"the base's {fixed.command_overhead * 1e6:.4g} µs is longer than a lone {other}), so "
            f"{op}_latency is set to {latency * 1e6:.4g} µs to keep a lone {op}'s "
            f"command_overhead + {op}_latency at the base profile's {lone * 1e6:.4g} µs"
        )
        if abs(moved - lone) > 1e-3 * lone:
            kept += (
                f" (it cannot: {op}_latency is at its lower bound, so a lone {op} takes "
                f"{moved * 1e6:.4g} µs; choose a --base of this device's class)"
            )
    else:
        kept = (
            f"kept the base profile's {base_latency * 1e6:.4g} µs, and its command_overhead "
            f"({fixed.command_overhead * 1e6:.4g} µs, held: every read and write pays it, and "
            f"{other}s alone cannot tell it from {other}_latency), so a lone {op} takes the "
            f"base's {lone * 1e6:.4g} µs plus its transfer"
        )
    return (
        f"{op}_latency not measured: no {op} points; {kept}. Also the base's: {op}_bandwidth, "
        f"{op}_iops_limit and the spread of {op}s; channels x dies is fitted to the {other}s and "
        f"sets the {op}s' parallelism under load (rand{op} runs at iodepth 1 and 32 would pin "
        "them)"
    )


def _at_bound(name: str, value: float) -> Literal["lower", "upper"] | None:
    """Which bound of :data:`BOUNDS` ``value`` (of parameter ``name``) sits at, if any."""
    low, high = _bounds(name)
    if name == "service_cv":
        near_low, near_high = value <= low + _AT_BOUND, value >= high - _AT_BOUND
    else:
        near_low = value <= low * (1.0 + _AT_BOUND)
        near_high = value >= high * (1.0 - _AT_BOUND)
    return "lower" if near_low else "upper" if near_high else None


def _value_text(name: str, value: float) -> str:
    """A fitted value of ``name`` for a warning: ``0.1 µs``, ``1,000 commands/s``, ``4,096``."""
    family = _family(name)
    if family in ("command_overhead", "latency"):
        return f"{value * 1e6:.4g} µs"
    if family == "bandwidth":
        return f"{value / 1e6:,.0f} MB/s"
    if family == "iops_limit":
        return f"{value:,.0f} commands/s"
    return f"{value:.4g}"


def _family(name: str) -> str:
    """``read_latency`` -> ``latency``: the key of :data:`_LOOSE` and :data:`BOUNDS`."""
    return name.split("_", 1)[1] if name.startswith(("read_", "write_")) else name
