"""The page's inputs as one table of knobs over the scenario schema.

A knob is a dotted path of the scenario (``groups.{group}.…`` for each group's
copy) and only what the schema cannot know: the unit a value is shown in, the
widget, and the values a sweep starts from. Its label, help and bounds are read
from the pydantic field the path names (``Field(title=…)``, the attribute
docstring, the ``Ge``/``Gt``/``Le``/``Lt`` constraints), so the sidebar and the
sweep view change when the schema does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, get_args

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from simcache.base.units import parse_bandwidth, parse_size, round_figure
from simcache.spec import Scenario
from simcache.spec.fields import field_metadata

Widget = Literal["count", "number", "quantity", "slider", "choice", "profile", "text", "duty"]
"""count: whole numbers; number: a float in the field's own unit; quantity: bytes or bytes/s
shown in ``unit``; slider: a fraction (``unit`` "%" shows it in percent); choice: one of the
field's literal values; profile: a built-in profile of the field's spec; text: the I/O size mix;
duty: the duty-cycle shape."""
WorkloadMode = Literal["closed", "open", "trace"]
SYNTHETIC: tuple[WorkloadMode, ...] = ("closed", "open")
"""The modes that generate I/Os from a size mix, a read share and a rate or a depth."""


class SweepFrom(Enum):
    """Sweep starting values worked out from the scenario rather than written in the table."""

    OPTIONS = "every option the scenario accepts"
    AROUND_CURRENT = "half to twice the current value"


@dataclass(frozen=True)
class Bounds:
    """A field's constraints in the scenario's units (bytes, bytes/s, seconds, fractions); None:
    unbounded."""

    lower: float | None = None
    lower_open: bool = False
    upper: float | None = None
    upper_open: bool = False


@dataclass(frozen=True)
class Knob:
    """One input of the page: a scenario path and how it is shown."""

    path: str
    """Dotted scenario path; ``{group}`` stands for a group's name."""
    widget: Widget
    unit: str = ""
    """Unit the value is shown and typed in (GiB, MiB, MB/s, %); empty: the field's own (seconds,
    counts)."""
    sweep: str | SweepFrom | None = None
    """Comma-separated values the sweep view starts from; None: not offered in the sweep view."""
    complement: bool = False
    """Show 1 minus the field (``read_fraction`` shown as the write share)."""
    shown_as: str = ""
    """Label when the field's own title does not fit: the shown value is not the field itself (with
    ``complement``), or a nested field's name needs its table's (a trace's replay speed)."""
    step: float | None = None
    """Step of a number input, in the shown unit (None: Streamlit's default)."""
    page_range: tuple[float, float] | None = None
    """A narrower range than the schema's, for what the page itself can afford (a run must finish
    in seconds)."""
    modes: tuple[WorkloadMode, ...] = ("closed", "open", "trace")
    """Workload modes a group knob applies to: a trace brings its own sizes, mix and rate, so the
    synthetic workload's knobs are not offered for it (the scenario would refuse them)."""

    def applies_to(self, workload: Any) -> bool:
        """Whether this knob is offered for a group with ``workload`` (always, for a knob outside
        the groups)."""
        return GROUP not in self.path or workload.mode in self.modes

    @property
    def field(self) -> FieldInfo:
        return schema_field(self.path)

    @property
    def label(self) -> str:
        """The field's title (or its name in words), with the shown unit."""
        title = (
            self.shown_as
            or self.field.title
            or self.path.rsplit(".", 1)[-1].replace("_", " ").capitalize()
        )
        if self.unit == "%":
            return f"{title} %"
        return f"{title} ({self.unit})" if self.unit else title

    @property
    def help(self) -> str:
        """The field's description (its attribute docstring)."""
        return self.field.description or ""

    @property
    def bounds(self) -> Bounds:
        """The field's constraints, including those on the value of an optional field."""
        bounds: dict[str, Any] = {}
        for constraint in _constraints(self.field):
            if isinstance(constraint, annotated_types.Ge | annotated_types.Gt):
                bounds |= {
                    "lower": float(getattr(constraint, "ge", getattr(constraint, "gt", 0))),
                    "lower_open": isinstance(constraint, annotated_types.Gt),
                }
            elif isinstance(constraint, annotated_types.Le | annotated_types.Lt):
                bounds |= {
                    "upper": float(getattr(constraint, "le", getattr(constraint, "lt", 0))),
                    "upper_open": isinstance(constraint, annotated_types.Lt),
                }
        return Bounds(**bounds)

    @property
    def options(self) -> tuple[str, ...]:
        """The literal values a choice field accepts (a duty cycle: its shapes)."""
        annotation: Any = self.field.annotation
        spec = _model_of(annotation) if self.widget == "duty" else None
        if spec is not None:
            annotation = spec.model_fields["shape"].annotation
        return tuple(str(option) for option in get_args(annotation))

    @property
    def profile_kind(self) -> str:
        """The kind of built-in profile the field's spec may name (``tier``, ``link``,
        ``drive``, ``array``)."""
        spec = _model_of(self.field.annotation)
        if spec is None:
            raise TypeError(f"{self.path} is not a spec that may name a profile")
        kind: str = spec._profile_kind  # type: ignore[attr-defined]
        return kind

    def at(self, group: str = "") -> str:
        """The knob's path in a scenario, for ``group``'s copy of a group knob."""
        return self.path.format(group=group)

    @property
    def per_unit(self) -> float:
        """Scenario units in one shown unit: bytes or bytes/s for a quantity, 0.01 for a
        percentage, else 1 (seconds and counts are shown as the scenario holds them)."""
        if self.widget != "quantity":
            return 0.01 if self.unit == "%" else 1.0
        return (
            parse_bandwidth(f"1{self.unit}")
            if self.unit.endswith("/s")
            else float(parse_size(f"1{self.unit}"))
        )

    def shown(self, value: float) -> float:
        """A field value in the shown unit, to 4 significant digits (a 400 GB tier shows as 372.5
        GiB, not 372.529)."""
        return round_figure(((1 - value) if self.complement else value) / self.per_unit, 4)

    def to_override(self, shown: Any) -> Any:
        """A value typed in the shown unit as the scenario override (``"4GiB"``, a fraction, a
        count)."""
        if self.widget == "quantity":
            return f"{shown:g}{self.unit}" if isinstance(shown, float) else f"{shown}{self.unit}"
        if self.unit == "%":
            fraction = float(shown) / 100.0
            return round(1 - fraction if self.complement else fraction, 6)
        return shown

    def shown_range(self) -> tuple[float | None, float | None]:
        """Smallest and largest value the widget offers, in the shown unit; a bound the field
        excludes is stepped over by the widget's resolution (1 for whole numbers, 0.001 of the
        shown unit)."""
        bounds, resolution = self.bounds, (1.0 if self.widget == "count" else 0.001)
        ends = [None if b is None else b / self.per_unit for b in (bounds.lower, bounds.upper)]
        lower = None if ends[0] is None else ends[0] + (resolution if bounds.lower_open else 0.0)
        upper = None if ends[1] is None else ends[1] - (resolution if bounds.upper_open else 0.0)
        if self.complement:
            lower, upper = (
                (None if upper is None else 1 / self.per_unit - upper),
                (None if lower is None else 1 / self.per_unit - lower),
            )
        if self.page_range:
            lower = max(lower if lower is not None else self.page_range[0], self.page_range[0])
            upper = min(upper if upper is not None else self.page_range[1], self.page_range[1])
        return lower, upper


GROUP = "groups.{group}"
KNOBS: tuple[Knob, ...] = (
    Knob("run.duration", "number", step=1.0, page_range=(1.0, 600.0)),
    Knob("run.seed", "count"),
    Knob("cluster.hosts", "count", sweep="3, 4, 6, 8"),
    Knob("cluster.peer_link", "profile", sweep="1GbE, 10GbE, 25GbE"),
    Knob("cluster.peer_links", "count", sweep="1, 2, 4"),
    Knob("cluster.storage_link", "profile", sweep="1GbE, 10GbE, 25GbE"),
    Knob("cluster.destager.capacity", "quantity", "MiB", sweep="64, 256, 1024, 4096"),
    Knob("cluster.tier", "profile", sweep=SweepFrom.OPTIONS),
    Knob("cluster.tier.capacity", "quantity", "GiB", sweep="1, 4, 16, 64"),
    Knob("array", "profile", sweep=SweepFrom.OPTIONS),
    Knob("array.spindles", "count", sweep="4, 8, 14, 24"),
    Knob("array.drive", "profile"),
    Knob("array.drive.rpm", "number", step=600.0, sweep="5400, 7200, 10000, 15000"),
    Knob(f"{GROUP}.policy", "choice", sweep=SweepFrom.OPTIONS),
    Knob(
        f"{GROUP}.workload.read_fraction",
        "slider",
        "%",
        sweep="10, 30, 50, 70, 90",
        complement=True,
        shown_as="Write",
        modes=SYNTHETIC,
    ),
    Knob(f"{GROUP}.workload.workers", "count", sweep=SweepFrom.AROUND_CURRENT),
    Knob(f"{GROUP}.workload.iops", "number", sweep=SweepFrom.AROUND_CURRENT, modes=SYNTHETIC),
    Knob(
        f"{GROUP}.workload.throughput",
        "quantity",
        "MB/s",
        sweep=SweepFrom.AROUND_CURRENT,
        modes=SYNTHETIC,
    ),
    Knob(f"{GROUP}.workload.sizes", "text", modes=SYNTHETIC),
    Knob(f"{GROUP}.workload.working_set", "quantity", "GiB", sweep="1, 4, 16, 64", modes=SYNTHETIC),
    Knob(f"{GROUP}.workload.duty_cycle", "duty", modes=SYNTHETIC),
    Knob(f"{GROUP}.workload.duty_cycle.on", "number", "s", modes=SYNTHETIC),
    Knob(f"{GROUP}.workload.duty_cycle.off", "number", "s", modes=SYNTHETIC),
    Knob(f"{GROUP}.workload.duty_cycle.period", "number", "s", modes=SYNTHETIC),
    Knob(f"{GROUP}.workload.duty_cycle.amplitude", "slider", modes=SYNTHETIC),
    Knob(
        f"{GROUP}.workload.trace.speed",
        "number",
        sweep="0.5, 1, 2, 4",
        shown_as="Replay speed",
        modes=("trace",),
    ),
)
"""Every input of the sidebar; those with ``sweep`` values are offered by the sweep view too."""
BY_PATH = {knob.path: knob for knob in KNOBS}


def knob(path: str) -> Knob:
    """The knob of ``path`` (a group knob with ``{group}``, as in :data:`KNOBS`)."""
    return BY_PATH[path]


def intensity_knob(workload: Any) -> Knob:
    """The knob that sets how hard a group's VMs work: workers (closed loop or closed replay), a
    trace's replay speed (open replay), else IOPS or MB/s."""
    if workload.mode == "trace":
        name = "workers" if workload.trace.replay == "closed" else "trace.speed"
    elif workload.mode == "closed":
        name = "workers"
    else:
        name = "iops" if workload.iops is not None else "throughput"
    return BY_PATH[f"{GROUP}.workload.{name}"]


def current(scenario: Scenario, path: str) -> Any:
    """The value at a dotted path of ``scenario`` (groups by name)."""
    node: Any = scenario
    for part in path.split("."):
        node = (
            next(item for item in node if item.name == part)
            if isinstance(node, list)
            else getattr(node, part)
        )
    return node


def schema_field(path: str) -> FieldInfo:
    """The pydantic field a knob path names, from :class:`Scenario` down (``{group}`` steps into
    a list)."""
    model: type[BaseModel] | None = Scenario
    field: FieldInfo | None = None
    for part in path.split("."):
        if part == "{group}":
            continue
        if model is None:
            raise KeyError(f"{path}: {part!r} is inside a field that is not a table")
        field = model.model_fields[part]
        model = _model_of(field.annotation)
    if field is None:
        raise KeyError(path)
    return field


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The spec an annotation holds, through ``X | None``, ``list[X]`` and ``Annotated``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _constraints(field: FieldInfo) -> list[Any]:
    """The field's metadata and, for an optional field, that of its value's type."""
    return field_metadata(field)
