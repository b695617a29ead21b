"""Inline SVG charts for the HTML report: time lines, categorical points and stacked bars, drawn
with no library.

Every chart is a self-contained ``<svg>`` element (no scripts, fonts or links), sized by its
``viewBox`` so it scales with the page. Values are plain floats; NaN points are left out of a line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

import numpy as np
import numpy.typing as npt

__all__ = ["Band", "Marker", "bars", "lines", "points"]

WIDTH, HEIGHT = 720, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 30, 84
_ROW = 14  # px per legend row
_PLOT_HEIGHT = HEIGHT - _TOP - _BOTTOM
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
PASS_COLOR = "#2ca02c"
"""Sweep points that meet the target (the feasible region)."""


@dataclass(frozen=True)
class Band:
    """A shaded span of the x axis (the warm-up)."""

    start: float
    end: float
    label: str


@dataclass(frozen=True)
class Marker:
    """A vertical line at ``x`` (a scheduled event) with its label."""

    x: float
    label: str


@dataclass(frozen=True)
class _Axis:
    low: float
    high: float
    log: bool = False

    def fraction(self, value: float) -> float:
        if self.log:
            return (math.log10(value) - math.log10(self.low)) / (
                math.log10(self.high) - math.log10(self.low)
            )
        return (value - self.low) / (self.high - self.low)

    def ticks(self) -> list[float]:
        if self.log:
            return [
                10.0**e
                for e in range(
                    math.floor(math.log10(self.low)), math.ceil(math.log10(self.high)) + 1
                )
            ]
        step = _nice_step((self.high - self.low) / 5)
        first = math.ceil(self.low / step) * step
        return [float(v) for v in np.arange(first, self.high + step / 2, step)]


def _nice_step(raw: float) -> float:
    """1, 2 or 5 times a power of ten, at least ``raw``."""
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _value_axis(values: Sequence[float], log: bool = False) -> _Axis:
    finite = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    if not finite:
        return _Axis(0.0, 1.0)
    if log:
        return _Axis(
            10.0 ** math.floor(math.log10(min(finite))),
            10.0 ** math.ceil(math.log10(max(finite))),
            log=True,
        )
    low, high = min(0.0, min(finite)), max(finite)
    if high <= low:
        high = low + 1.0
    step = _nice_step((high - low) / 5)
    return _Axis(math.floor(low / step) * step, math.ceil(high / step) * step)


def _number(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.2g}"


class _Canvas:
    """The plot area of one chart and the SVG elements drawn on it."""

    def __init__(self, title: str, x_label: str, y_label: str, y: _Axis):
        self.y = y
        self.parts = [
            f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" '
            f'font-weight="bold">{escape(title)}</text>',
            f'<text x="{WIDTH / 2}" y="{HEIGHT - _BOTTOM + 28}" '
            f'text-anchor="middle">{escape(x_label)}</text>',
            f'<text transform="translate(14 {(_TOP + HEIGHT - _BOTTOM) / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(y_label)}</text>',
        ]
        for tick in y.ticks():
            ty = self.py(tick)
            self.parts.append(
                f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" '
                'stroke="#ddd"/>'
            )
            self.parts.append(
                f'<text x="{_LEFT - 4}" y="{ty + 4:.1f}" text-anchor="end">{_number(tick)}</text>'
            )

    def py(self, value: float) -> float:
        return HEIGHT - _BOTTOM - self.y.fraction(value) * (HEIGHT - _TOP - _BOTTOM)

    @staticmethod
    def px(fraction: float) -> float:
        return _LEFT + fraction * (WIDTH - _LEFT - _RIGHT)

    def legend(self, names: Sequence[str]) -> None:
        """Colour keys below the x label, wrapped onto new rows at the right edge (about 6 px per
        character)."""
        x, y = _LEFT, HEIGHT - _BOTTOM + 36
        for i, name in enumerate(names):
            width = 24 + 6 * len(name)
            if x > _LEFT and x + width > WIDTH:
                x, y = _LEFT, y + _ROW
            color = COLORS[i % len(COLORS)]
            self.parts.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/>')
            self.parts.append(f'<text x="{x + 14}" y="{y + 9}">{escape(name)}</text>')
            x += width

    def svg(self, label: str) -> str:
        frame = (
            f'<rect x="{_LEFT}" y="{_TOP}" width="{WIDTH - _LEFT - _RIGHT}" '
            f'height="{_PLOT_HEIGHT}" fill="none" stroke="#999"/>'
        )
        body = "".join([*self.parts, frame])
        return (
            f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
            f'role="img" aria-label="{escape(label)}" font-family="sans-serif" '
            f'font-size="11">{body}</svg>'
        )


def lines(
    title: str,
    x: npt.ArrayLike,
    series: Mapping[str, npt.ArrayLike],
    *,
    x_label: str,
    y_label: str,
    bands: Sequence[Band] = (),
    markers: Sequence[Marker] = (),
    log: bool = False,
) -> str:
    """Line chart of each ``series`` over the shared ``x``, with shaded ``bands`` and vertical
    ``markers``."""
    xs = np.asarray(x, dtype=float).tolist()
    ys_of = {name: np.asarray(ys, dtype=float).tolist() for name, ys in series.items()}
    x_axis = _Axis(min([0.0, *xs]), max([*xs, 1e-9]))
    canvas = _Canvas(
        title, x_label, y_label, _value_axis([v for ys in ys_of.values() for v in ys], log)
    )
    for band in bands:
        left, right = (
            canvas.px(x_axis.fraction(band.start)),
            canvas.px(x_axis.fraction(min(band.end, x_axis.high))),
        )
        canvas.parts.append(
            f'<rect x="{left:.1f}" y="{_TOP}" width="{right - left:.1f}" height="{_PLOT_HEIGHT}" '
            'fill="#eee"/>'
        )
        canvas.parts.append(
            f'<text x="{left + 4:.1f}" y="{_TOP + 12}" fill="#666">{escape(band.label)}</text>'
        )
    for tick in x_axis.ticks():
        tx = canvas.px(x_axis.fraction(tick))
        canvas.parts.append(
            f'<text x="{tx:.1f}" y="{HEIGHT - _BOTTOM + 14}" '
            f'text-anchor="middle">{_number(tick)}</text>'
        )
    for i, (name, ys) in enumerate(ys_of.items()):
        points = [
            (px, py)
            for px, py in zip(xs, ys, strict=True)
            if math.isfinite(py) and (py > 0 or not log)
        ]
        path = " ".join(
            f"{canvas.px(x_axis.fraction(px)):.1f},{canvas.py(py):.1f}" for px, py in points
        )
        color = COLORS[i % len(COLORS)]
        line = f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5">'
        canvas.parts.append(f"{line}<title>{escape(name)}</title></polyline>")
    for marker in markers:
        mx = canvas.px(x_axis.fraction(marker.x))
        canvas.parts.append(
            f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{_TOP}" y2="{HEIGHT - _BOTTOM}" stroke="#000" '
            'stroke-dasharray="4 3"/>'
        )
        # the label stays inside the plot
        anchor, shift = ("end", -3) if mx > WIDTH / 2 else ("start", 3)
        canvas.parts.append(
            f'<text x="{mx + shift:.1f}" y="{_TOP + 24}" '
            f'text-anchor="{anchor}">{escape(marker.label)}</text>'
        )
    canvas.legend(list(series))
    return canvas.svg(title)


def points(
    title: str,
    categories: Sequence[str],
    means: npt.ArrayLike,
    half_widths: npt.ArrayLike,
    *,
    x_label: str,
    y_label: str,
    joined: bool,
    limit: float | None = None,
    log: bool = False,
    passing: Sequence[bool] | None = None,
) -> str:
    """One point per category with its 95% interval as a whisker; ``joined`` draws a line between
    them (numeric values only: categories such as link kinds are not a scale). ``limit`` draws a
    target as a dashed line; ``passing`` (one per category) draws the points that meet it green,
    with class ``passing`` (the feasible region)."""
    mids, halves = (
        np.asarray(means, dtype=float).tolist(),
        np.asarray(half_widths, dtype=float).tolist(),
    )
    span = (
        [m + h for m, h in zip(mids, halves, strict=True) if math.isfinite(h)]
        + mids
        + ([limit] if limit else [])
    )
    canvas = _Canvas(title, x_label, y_label, _value_axis(span, log))
    step = 1 / len(categories)
    centres = [canvas.px((i + 0.5) * step) for i in range(len(categories))]
    if limit is not None:
        ly = canvas.py(limit)
        red = COLORS[1]
        canvas.parts.append(
            f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{ly:.1f}" y2="{ly:.1f}" stroke="{red}" '
            'stroke-dasharray="6 3"/>'
        )
        label = f"target {_number(limit)}"
        canvas.parts.append(
            f'<text x="{WIDTH - _RIGHT - 4}" y="{ly - 4:.1f}" text-anchor="end" '
            f'fill="{red}">{label}</text>'
        )
    drawn = zip(centres, mids, halves, strict=True)
    shown = [(cx, m, h) for cx, m, h in drawn if math.isfinite(m) and (m > 0 or not log)]
    if joined and len(shown) > 1:
        path = " ".join(f"{cx:.1f},{canvas.py(m):.1f}" for cx, m, _ in shown)
        canvas.parts.append(
            f'<polyline class="joined" points="{path}" fill="none" stroke="{COLORS[0]}"/>'
        )
    meets = dict(zip(centres, passing, strict=True)) if passing is not None else {}
    for cx, mean, half in shown:
        if math.isfinite(half) and half > 0:
            low = max(mean - half, canvas.y.low)
            bottom, top = canvas.py(low), canvas.py(mean + half)
            canvas.parts.append(
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{bottom:.1f}" y2="{top:.1f}" '
                'stroke="#333"/>'
            )
        fill, tag, note = (
            (PASS_COLOR, ' class="passing"', ", meets the target")
            if meets.get(cx)
            else (COLORS[0], "", "")
        )
        circle = (
            f'<circle{tag} cx="{cx:.1f}" cy="{canvas.py(mean):.1f}" r="4" '
            f'fill="{fill}"><title>{mean:.4g}{note}</title></circle>'
        )
        canvas.parts.append(circle)
    for cx, category in zip(centres, categories, strict=True):
        canvas.parts.append(
            f'<text x="{cx:.1f}" y="{HEIGHT - _BOTTOM + 14}" '
            f'text-anchor="middle">{escape(category)}</text>'
        )
    return canvas.svg(title)


def bars(title: str, rows: Mapping[str, Mapping[str, float]], *, y_label: str) -> str:
    """Stacked bars: one bar per row (a VM group), one segment per component, in the order of the
    first row."""
    components = list(next(iter(rows.values()), {}))
    totals = [sum(v for v in parts.values() if math.isfinite(v)) for parts in rows.values()]
    canvas = _Canvas(title, "", y_label, _value_axis(totals))
    step = 1 / max(len(rows), 1)
    for i, (name, parts) in enumerate(rows.items()):
        left, width = canvas.px((i + 0.2) * step), canvas.px(step * 0.6) - _LEFT
        base = 0.0
        for j, component in enumerate(components):
            value = parts.get(component, math.nan)
            if not math.isfinite(value) or value <= 0:
                continue
            top, bottom = canvas.py(base + value), canvas.py(base)
            color = COLORS[j % len(COLORS)]
            canvas.parts.append(
                f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" '
                f'height="{bottom - top:.1f}" fill="{color}">'
                f"<title>{escape(name)} {escape(component)}: {value:.3g}</title></rect>"
            )
            base += value
        canvas.parts.append(
            f'<text x="{left + width / 2:.1f}" y="{HEIGHT - _BOTTOM + 14}" '
            f'text-anchor="middle">{escape(name)}</text>'
        )
    canvas.legend(components)
    return canvas.svg(title)
