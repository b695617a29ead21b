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
from simcache.base.units import format_figure
from simcache.results.part_words import changed_fields, link_words
from simcache.spec import LinkSpec
from simcache.spec.profiles import list_profiles
from simcache_app.knobs import GROUP, Knob, current, intensity_knob, knob
from simcache_app.run_length import first_duration

CLUSTER = (
    "cluster.hosts",
    "cluster.peer_link",
    "cluster.peer_links",
    "cluster.storage_link",
    "cluster.destager.capacity",
)
TIER = ("cluster.tier", "cluster.tier.capacity")
ARRAY = ("array", "array.spindles", "array.drive", "array.drive.rpm")
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


def cluster_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """Host count, peer network, each host's storage link and destager buffer."""
    return section(scenario, CLUSTER, key)


def tier_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """The flash/RAM tier profile and its capacity."""
    return section(scenario, TIER, key)


def array_controls(scenario: simcache.Scenario, key: str) -> Overrides:
    """The backing array's profile, then its spindle count, drive profile and (spinning drives)
    drive RPM; another array profile takes all of its fields (drive, RAID level, caches, port), so
    the three start again from that profile's values."""
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

    A knob inside a profile chosen above (the tier's capacity under another tier, the drive under
    another array) starts from that profile's value, in a widget of its own: its key names every
    profile chosen above it. A field unset for the part as it stands (a flash drive has no RPM)
    has no widget.
    """
    overrides: Overrides = {}
    for path in paths:
        shown = knob(path)
        at = shown.at(group)
        parents = [p for p in overrides if at.startswith(f"{p}.")]
        edited = scenario.with_overrides(overrides) if parents else scenario
        value = current(edited, at)
        if value is None:
            continue
        widget_key = f"{key}.{at}" + "".join(f"@{overrides[p]}" for p in parents)
        chosen, was = _input(shown, value, widget_key, at)
        if chosen != was:
            overrides[at] = chosen
    return overrides


def _input(shown: Knob, value: Any, key: str, at: str) -> tuple[Any, Any]:
    """The override of ``at`` the widget of ``shown`` gives, and the one the current ``value``
    would give."""
    if shown.widget == "profile":
        return _profile_select(shown, value, key), value.profile
    if shown.widget == "choice":
        options = list(shown.options)
        return st.selectbox(
            shown.label, options, index=options.index(value), key=key, help=shown.help
        ), value
    if shown.widget == "text":
        text = st.text_input(shown.label, _size_mix_text(value), key=key, help=shown.help)
        try:
            return parse_size_mix(text, at), dict(value)
        except simcache.ScenarioError as exc:
            # said under the box, the mix it had kept, as for a number out of range: the rest of
            # the sidebar stays (an error raised here stopped it, and Streamlit forgot the later
            # boxes and what they held)
            st.error(
                f"{exc.problems[0][0]}: {exc.problems[0][1]}. The page runs with the mix "
                "it had until the box holds one it can read."
            )
            return dict(value), dict(value)
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
    """A number input for the knob, starting from ``value``: whole numbers for a count, else
    floats; ``value`` again while the box holds another number outside the knob's range, which an
    error under the box names.

    The range is checked here, not given to the widget: a browser refuses an out-of-range number
    without telling the page, so the box would show it while the page ran with another. The
    starting value always passes: the file's own, valid, may lie past a bound the shown unit
    rounds (a 256 KiB working set is 0.000244 GiB, under the GiB box's 0.001).
    """
    whole = shown.widget == "count"
    typed = st.number_input(
        shown.label,
        value=int(value) if whole else float(value),
        step=1 if whole else shown.step,
        key=key,
        help=help or shown.help,
        format=None if whole else "%g",
    )
    chosen = int(typed) if whole else float(typed)
    outside = None if chosen == value else out_of_range(chosen, *shown.shown_range())
    if outside is None:
        return chosen
    st.error(
        f"**{shown.label}**: {format_figure(chosen, 6)} is {outside}. The page runs with "
        f"{format_figure(value, 6)}, the value it started from, until the box holds a number in "
        "the range."
    )
    return int(value) if whole else float(value)


def out_of_range(value: float, lower: float | None, upper: float | None) -> str | None:
    """Where ``value`` lies outside ``lower``..``upper`` (None: unbounded), in words (``"outside
    the allowed range, 1 to 256"``); None when it lies inside."""
    if (lower is None or value >= lower) and (upper is None or value <= upper):
        return None
    if lower is not None and upper is not None:
        return f"outside the allowed range, {format_figure(lower, 6)} to {format_figure(upper, 6)}"
    if lower is not None:
        return f"below the allowed range: give at least {format_figure(lower, 6)}"
    assert upper is not None
    return f"above the allowed range: give at most {format_figure(upper, 6)}"


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

    The sizes themselves are checked by the scenario loader (which also refuses one size written
    two ways, ``8KiB`` and ``8192B``); this splits the text and refuses a size written twice the
    same way, which a mapping would otherwise keep once, with one of the two weights.
    """
    mix: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        size, _, weight = (part.strip() for part in item.partition(":"))
        if size in mix:
            added = format_figure(mix[size] + _weight(weight, size, path))
            raise simcache.ScenarioError(
                "sidebar",
                [
                    (
                        path,
                        f"{size} is given twice; give each size once, with its weights added "
                        f"(e.g. {size}: {added})",
                    )
                ],
            )
        mix[size] = _weight(weight, size, path)
    if not mix:
        raise simcache.ScenarioError(
            "sidebar", [(path, "give at least one size, e.g. 4KiB or 8KiB: 0.7, 64KiB: 0.3")]
        )
    return mix


def _weight(text: str, size: str, path: str) -> float:
    """The weight of ``size`` in a size mix's text; 1 when none is given."""
    try:
        return float(text) if text else 1.0
    except ValueError:
        raise simcache.ScenarioError(
            "sidebar", [(path, f"weight {text!r} of {size} is not a number")]
        ) from None


def _size_mix_text(sizes: dict[str, float]) -> str:
    return ", ".join(f"{size}: {weight:g}" for size, weight in sizes.items())


def _profile_select(shown: Knob, value: Any, key: str) -> str | None:
    """A built-in profile of the knob's kind; ``None`` keeps a table defined in the file without
    a profile. A part whose fields the file sets otherwise than its profile is shown as it is
    (``roce-100GbE at 25 Gbit/s, as in the file``): choosing another profile replaces the whole
    part, those fields too, and the help says so."""
    kind = shown.profile_kind
    current: str | None = value.profile
    profiles = list_profiles(kind)
    options: list[str | None] = [*profiles] if current in profiles else [None, *profiles]
    notes = "\n".join(
        f"- **{name}**: {fields.get('description', '')}" for name, fields in profiles.items()
    )
    words = link_words(value) if isinstance(value, LinkSpec) else current or ""
    changed = "" if isinstance(value, LinkSpec) else changed_fields(value)
    if changed:
        words = f"{words} ({changed})"
    as_set = current is not None and words != current
    replaced = (
        f"\n\nThe file sets this part otherwise than its profile ({words}); choosing another "
        "profile replaces the whole part, those fields too."
        if as_set
        else ""
    )

    def label(name: str | None) -> str:
        if name is None:
            return "as defined in the file"
        return f"{words}, as in the file" if as_set and name == current else name

    return st.selectbox(
        shown.label,
        options,
        index=options.index(current),
        format_func=label,
        key=key,
        help=(
            f"{shown.help}{replaced}\n\nBuilt-in profiles (`simcache profiles {kind}` lists "
            f"their sources):\n\n{notes}"
        ),
    )
