"""Sidebar controls, rendered from the knob table (:mod:`simcache_app.knobs`). Each section shows
the scenario's current values and returns the dotted-path overrides (``Scenario.with_overrides``)
for the ones the user changed.

Widget keys are the scenario's identity and the knob's path, so picking another scenario starts
from that file's values.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

import simcache
from simcache.spec.profiles import list_profiles
from simcache_app.knobs import GROUP, Knob, current, intensity_knob, knob

DEFAULT_DURATION_S = 8.0
"""Simulated seconds of the first run: short, so that the first result shows in a couple of
seconds; a scenario whose scheduled events start later runs longer (:func:`first_duration`)."""
EVENT_TAIL_S = 4.0
"""Simulated seconds the first run goes on after the last scheduled event starts, to show what it
does."""
CLUSTER = ("cluster.hosts", "cluster.peer_link", "cluster.peer_links", "cluster.destager.capacity")
TIER = ("cluster.tier", "cluster.tier.capacity")
ARRAY = ("array.spindles", "array.drive", "array.drive.rpm")
Overrides = dict[str, Any]
_DUTY_SHAPES = {
    "none": "steady",
    "onoff": "on/off bursts",
    "sine": "sine wave around the mean rate",
    "profile": "rate profile (from simcache fit)",
}


def run_controls(scenario: simcache.Scenario, key: str) -> tuple[float, int]:
    """Simulated duration (s) and seed; they are passed to ``simulate``, not written into the
    scenario."""
    duration_knob = knob("run.duration")
    file_note = (
        f" The file says {scenario.run.duration:g} s; a short run shows a first answer fast."
    )
    lower, upper = duration_knob.shown_range()
    start = first_duration(scenario, lower or 0.0, upper or math.inf)
    duration = _number(duration_knob, start, f"{key}.run.duration", duration_knob.help + file_note)
    seed = _number(knob("run.seed"), scenario.run.seed, f"{key}.run.seed")
    return float(duration), int(seed)


def first_duration(
    scenario: simcache.Scenario, lower: float = 0.0, upper: float = math.inf
) -> float:
    """The simulated seconds the page starts from: :data:`DEFAULT_DURATION_S`, or up to
    :data:`EVENT_TAIL_S` past the last scheduled event that starts within the file's run (the
    default scenario's vMotion at 10 s of 20 s: 14 s), never longer than the file's run; a trace
    shorter than the page's shortest run (``lower``) starts at ``lower``."""
    file = scenario.run.duration
    events = [event.at + EVENT_TAIL_S for event in scenario.events if event.at < file]
    return min(max(min(file, max([DEFAULT_DURATION_S, *events])), lower), upper)


def cluster_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """Host count, peer network and destager buffer."""
    return section(scenario, CLUSTER, key)


def tier_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """The flash/RAM tier profile and its capacity."""
    return section(scenario, TIER, key)


def array_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """Spindle count, drive profile and drive RPM of the backing array."""
    return section(scenario, ARRAY, key)


def group_controls(scenario: simcache.Scenario, group: Any, key: str) -> Overrides:
    """Policy and workload knobs of one VM group."""
    paths = [
        "policy",
        "workload.read_fraction",
        intensity_knob(group.workload).path.removeprefix(f"{GROUP}."),
        "workload.sizes",
    ]
    paths += ["workload.working_set"]
    shown = [
        f"{GROUP}.{path}" for path in paths if knob(f"{GROUP}.{path}").applies_to(group.workload)
    ]
    overrides = section(scenario, shown, key, group.name)
    if not knob(f"{GROUP}.workload.duty_cycle").applies_to(group.workload):
        return overrides
    return overrides | _duty_cycle_controls(
        group.workload, f"{key}.groups.{group.name}.workload.duty_cycle", group.name
    )


def section(scenario: simcache.Scenario, paths: Any, key: str, group: str = "") -> Overrides:
    """A widget for each knob of ``paths``; the overrides of those the user changed.

    A knob inside a profile chosen above (the tier's capacity under another tier) starts from
    that profile's value, in a widget of its own.
    """
    overrides: Overrides = {}
    for path in paths:
        shown = knob(path)
        at = shown.at(group)
        parent = next((p for p in overrides if at.startswith(f"{p}.")), None)
        edited = scenario.with_overrides(overrides) if parent else scenario
        widget_key = f"{key}.{at}" + (f"@{overrides[parent]}" if parent else "")
        chosen, was = _input(shown, current(edited, at), widget_key, at)
        if chosen != was:
            overrides[at] = chosen
    return overrides


def _input(shown: Knob, value: Any, key: str, at: str) -> tuple[Any, Any]:
    """The override of ``at`` the widget of ``shown`` gives, and the one the current ``value``
    would give."""
    if shown.widget == "profile":
        return _profile_select(shown, value.profile, key), value.profile
    if shown.widget == "choice":
        options = list(shown.options)
        return st.selectbox(
            shown.label, options, index=options.index(value), key=key, help=shown.help
        ), value
    if shown.widget == "text":
        text = st.text_input(shown.label, _size_mix_text(value), key=key, help=shown.help)
        return parse_size_mix(text, at), dict(value)
    if shown.widget == "slider":
        lower, upper = shown.shown_range()
        start = round(shown.shown(value))
        help = shown.help + (" Shown here as the rest, in percent." if shown.complement else "")
        return shown.to_override(
            st.slider(shown.label, int(lower or 0), int(upper or 100), start, key=key, help=help)
        ), shown.to_override(start)
    if shown.widget == "quantity":
        amount = shown.shown(value)
        return shown.to_override(float(_number(shown, amount, key))), shown.to_override(amount)
    return _number(shown, value, key), value


def _number(shown: Knob, value: float, key: str, help: str | None = None) -> Any:
    """A number input within the knob's bounds: whole numbers for a count, else floats."""
    lower, upper = shown.shown_range()
    if shown.widget == "count":
        chosen = st.number_input(
            shown.label,
            min_value=_whole(lower),
            max_value=_whole(upper),
            value=int(value),
            step=1,
            key=key,
            help=help or shown.help,
        )
        return int(chosen)
    return float(
        st.number_input(
            shown.label,
            min_value=lower,
            max_value=upper,
            value=float(value),
            step=shown.step,
            key=key,
            help=help or shown.help,
            format="%g",
        )
    )


def _whole(bound: float | None) -> int | None:
    return None if bound is None else int(bound)


def _duty_cycle_controls(workload: Any, key: str, group: str) -> Overrides:
    path = f"groups.{group}.workload.duty_cycle"
    cycle = knob(f"{GROUP}.workload.duty_cycle")
    duty = workload.duty_cycle
    current_shape = duty.shape if duty else "none"
    # A profile's levels come from a trace (simcache fit): offered only to keep the one a scenario
    # has.
    shapes = [
        "none",
        *(
            s
            for s in cycle.options
            if (s != "sine" or workload.mode == "open")
            and (s != "profile" or current_shape == "profile")
        ),
    ]
    shape = st.selectbox(
        cycle.label,
        shapes,
        index=shapes.index(current_shape),
        format_func=_DUTY_SHAPES.__getitem__,
        key=key,
        help=cycle.help,
    )
    if shape == "none":
        return {path: None} if duty else {}
    same = duty is not None and duty.shape == shape
    if shape == "profile":
        return {}  # kept as the scenario has it
    starts = {"on": 5.0, "off": 5.0, "period": 10.0, "amplitude": 0.5}
    fields = ("on", "off") if shape == "onoff" else ("period", "amplitude")
    chosen: dict[str, Any] = {"shape": shape}
    for name in fields:
        part = knob(f"{GROUP}.workload.duty_cycle.{name}")
        start = getattr(duty, name) if same else starts[name]
        if part.widget == "slider":
            lower, upper = part.shown_range()
            chosen[name] = st.slider(
                part.label, lower, upper, start, key=f"{key}.{name}", help=part.help
            )
        else:
            chosen[name] = _number(part, start, f"{key}.{name}")
    unchanged = same and all(getattr(duty, field) == value for field, value in chosen.items())
    return {} if unchanged else {path: {**chosen, "phase": duty.phase if duty else 0.0}}


def parse_size_mix(text: str, path: str) -> dict[str, float]:
    """``"8KiB: 0.7, 64KiB: 0.3"`` -> ``{"8KiB": 0.7, "64KiB": 0.3}``; a size alone weighs 1.

    The sizes themselves are checked by the scenario loader; this only splits the text.
    """
    mix: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        size, _, weight = item.partition(":")
        try:
            mix[size.strip()] = float(weight) if weight.strip() else 1.0
        except ValueError:
            raise simcache.ScenarioError(
                "sidebar", [(path, f"weight {weight.strip()!r} of {size.strip()} is not a number")]
            ) from None
    if not mix:
        raise simcache.ScenarioError(
            "sidebar", [(path, "give at least one size, e.g. 4KiB or 8KiB: 0.7, 64KiB: 0.3")]
        )
    return mix


def _size_mix_text(sizes: dict[str, float]) -> str:
    return ", ".join(f"{size}: {weight:g}" for size, weight in sizes.items())


def _profile_select(shown: Knob, current: str | None, key: str) -> str | None:
    """A built-in profile of the knob's kind; ``None`` keeps a table defined in the file without
    a profile."""
    kind = shown.profile_kind
    profiles = list_profiles(kind)
    options: list[str | None] = [*profiles] if current in profiles else [None, *profiles]
    notes = "\n".join(
        f"- **{name}**: {fields.get('description', '')}" for name, fields in profiles.items()
    )
    return st.selectbox(
        shown.label,
        options,
        index=options.index(current),
        format_func=lambda name: name or "as defined in the file",
        key=key,
        help=(
            f"{shown.help}\n\nBuilt-in profiles (`simcache profiles {kind}` lists their "
            f"sources):\n\n{notes}"
        ),
    )
