"""What the sweep and compare views can vary: sweepable parameters, value lists and compare presets.

The sweep view's parameters are the knobs of :mod:`simcache_app.knobs` that have sweep values.
Everything here is data about a scenario's dotted paths (see ``Scenario.with_overrides``); no
model logic.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import simcache
from simcache.spec import REPLICAS
from simcache.spec.profiles import list_profiles
from simcache_app.knobs import GROUP, KNOBS, Knob, SweepFrom, current, intensity_knob
from simcache_app.memo import ByScenario


@dataclass(frozen=True)
class Parameter:
    """One sweepable knob at one path of the scenario (a group knob: that group's copy)."""

    knob: Knob
    path: str
    label: str
    """The knob's label, after the group's name for a group knob."""
    default_values: str
    """Comma-separated values, in the knob's shown unit, the values box starts from."""

    @property
    def help(self) -> str:
        return self.knob.help

    @property
    def numeric(self) -> bool:
        return self.knob.widget not in ("choice", "profile")

    def to_override(self, value: Any) -> Any:
        """A value typed in the values box as the override of :attr:`path`."""
        return self.knob.to_override(value)


def sweep_parameters(scenario: simcache.Scenario) -> list[Parameter]:
    """The knobs with sweep values, for ``scenario``: cluster-wide ones, then each group's (kept
    for the scenarios the page showed last: working out which profiles and options a scenario
    accepts validates a changed copy of it for each, about 30 of them, 25-30 ms a rerun)."""
    return list(_kept_parameters(scenario))


def _sweep_parameters(scenario: simcache.Scenario) -> tuple[Parameter, ...]:
    # a field the scenario leaves empty (a flash drive's RPM) has no values to sweep, as it has no
    # box in the sidebar (controls.section)
    cluster = [
        k
        for k in KNOBS
        if k.sweep is not None and GROUP not in k.path and current(scenario, k.path) is not None
    ]
    params = [Parameter(k, k.path, k.label, _start_values(scenario, k, k.path)) for k in cluster]
    for group in scenario.groups:
        shown = [
            k
            for k in KNOBS
            if k.sweep is not None
            and GROUP in k.path
            and k.path not in _INTENSITY
            and k.applies_to(group.workload)
        ]
        shown.append(intensity_knob(group.workload))
        params += [
            Parameter(
                k,
                k.at(group.name),
                f"{group.name}: {k.label}",
                _start_values(scenario, k, k.at(group.name)),
            )
            for k in shown
        ]
    return tuple(params)


_kept_parameters = ByScenario(_sweep_parameters)


_INTENSITY = tuple(
    f"{GROUP}.workload.{name}" for name in ("workers", "iops", "throughput", "trace.speed")
)
"""Workload knobs of which a group offers only the one its mode uses (:func:`intensity_knob`)."""


def _start_values(scenario: simcache.Scenario, shown: Knob, path: str) -> str:
    if isinstance(shown.sweep, str):
        return shown.sweep
    if shown.sweep is SweepFrom.AROUND_CURRENT:
        return _scaled(shown.shown(current(scenario, path)), integer=shown.widget == "count")
    options = list_profiles(shown.profile_kind) if shown.widget == "profile" else shown.options
    return ", ".join(option for option in options if _accepted(scenario, path, option))


def valid_values(
    scenario: simcache.Scenario, parameter: Parameter, values: list[Any], duration: float
) -> tuple[list[Any], dict[Any, str]]:
    """The ``values`` that make a valid scenario for a run of ``duration`` s, and each other one
    with the loader's message: one invalid point of a sweep is reported for itself while the rest
    of the sweep runs (:func:`simcache.sweep` refuses a grid with any invalid point)."""
    valid: list[Any] = []
    invalid: dict[Any, str] = {}
    for value in values:
        try:
            with _quiet():
                scenario.with_overrides(
                    {parameter.path: parameter.to_override(value)},
                    source=f"{parameter.label} = {value}",
                ).with_duration(duration)
        except simcache.ScenarioError as exc:
            invalid[value] = str(exc)
        else:
            valid.append(value)
    return valid, invalid


def _accepted(scenario: simcache.Scenario, path: str, value: Any) -> bool:
    try:
        with _quiet():
            scenario.with_overrides({path: value})
    except simcache.ScenarioError:
        return False
    return True


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """A probe of a value's validity says nothing of the scenario it builds: its
    :class:`~simcache.ScenarioWarning` s are the run's to show (beside the settings), not the
    probe's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", simcache.ScenarioWarning)
        yield


def _scaled(current: float, integer: bool = False) -> str:
    values = [current * f for f in (0.5, 1.0, 1.5, 2.0)]
    if integer:
        values = sorted({max(1, round(v)) for v in values})
    return ", ".join(_number_text(v) for v in values)


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def parse_values(text: str, numeric: bool) -> list[Any]:
    """``"1, 2, 4"`` or a range ``"2:8:2"`` (start:stop:step, stop included) -> a list of values.

    Raises ValueError with a message for the page when the text is not a list of values.
    """
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ValueError("give at least one value, e.g. 1, 2, 4 or a range 2:8:2")
    if not numeric:
        return items
    values: list[float] = []
    for item in items:
        values += _range(item) if ":" in item else [_number(item)]
    return [int(v) if float(v).is_integer() else v for v in values]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a number; write numbers separated by commas, or a range "
            "start:stop:step"
        ) from None


def _range(text: str) -> list[float]:
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"{text!r}: a range is start:stop:step, e.g. 2:8:2")
    start, stop, step = (_number(p) for p in parts)
    if step <= 0 or stop < start:
        raise ValueError(f"{text!r}: a range needs start <= stop and a positive step")
    count = int((stop - start) / step + 1e-9) + 1
    if count > 50:
        raise ValueError(f"{text!r} gives {count} values; keep a sweep to 50 values or fewer")
    return [round(start + i * step, 9) for i in range(count)]


def compare_presets(scenario: simcache.Scenario) -> dict[str, dict[str, Any]]:
    """Named override sets for the compare view: the sidebar's settings, the file's variants,
    policy/network what-ifs."""
    presets: dict[str, dict[str, Any]] = {"As set in the sidebar": {}}
    presets |= {
        f"Variant from file: {name}": dict(overrides)
        for name, overrides in scenario.variants.items()
    }
    links = list_profiles("link")
    for policy, link in (
        ("WB+0", None),
        ("WB+1", "1GbE"),
        ("WB+1", "10GbE"),
        ("WB+2", "10GbE"),
        ("WT", None),
    ):
        if REPLICAS[policy] >= scenario.cluster.hosts or (link and link not in links):
            continue
        overrides: dict[str, Any] = {f"groups.{g.name}.policy": policy for g in scenario.groups}
        if link:
            overrides["cluster.peer_link"] = link
        presets[f"Every group {policy}" + (f" over {link}" if link else "")] = overrides
    return presets


DEFAULT_COMPARE = ("Every group WB+0", "Every group WB+1 over 1GbE", "Every group WB+1 over 10GbE")
