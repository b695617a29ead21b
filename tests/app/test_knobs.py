"""The knob table (simcache_app/knobs.py): it covers the sidebar, and its labels, help and bounds
are the scenario schema's, read from the fields rather than copied."""

from __future__ import annotations

import pytest
from pydantic import Field
from streamlit.testing.v1 import AppTest
from support.paths import ROOT

import simcache
from simcache.spec.fields import _Spec
from simcache_app.knobs import KNOBS, Bounds, current, schema_field
from simcache_app.scenario_files import library_scenarios

APP = ROOT / "app.py"
NOT_KNOBS = {"scenario", "upload", "target.latency", "target.throughput"}
"""Sidebar widgets that pick the scenario or set the targets runs are judged against, rather than
change the scenario."""


def widget_path(key: str, source: str, groups: list[str]) -> str:
    """A sidebar widget key (``<source>.<path>[@profile]``) as a knob path (group names as
    ``{group}``)."""
    path = key.removeprefix(f"{source}.").split("@")[0]
    for group in groups:
        path = path.replace(f"groups.{group}.", "groups.{group}.")
    return path


@pytest.mark.parametrize("name", ["default", "backing_array"])
def test_every_sidebar_widget_is_a_knob(name: str) -> None:
    scenario = simcache.load_scenario(library_scenarios()[name])
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["scenario"] = name
    at.run()
    assert not at.exception
    groups = [group.name for group in scenario.groups]
    widgets = [
        w
        for kind in ("number_input", "selectbox", "slider", "text_input")
        for w in at.sidebar.get(kind)
        if w.key not in NOT_KNOBS
    ]
    paths = {knob.path for knob in KNOBS}
    for widget in widgets:
        path = widget_path(widget.key, name, groups)
        assert path in paths, widget.key
        assert widget.label == next(k for k in KNOBS if k.path == path).label


def test_every_knob_names_a_schema_field_with_a_label_and_help() -> None:
    for knob in KNOBS:
        assert knob.help, f"{knob.path}: give the field an attribute docstring"
        assert knob.label
        if knob.unit and knob.unit != "%":
            assert knob.label.endswith(f"({knob.unit})")


def test_knob_help_is_the_field_description() -> None:
    hosts = next(k for k in KNOBS if k.path == "cluster.hosts")
    assert (
        hosts.help
        == simcache.Scenario.model_fields["cluster"].annotation.model_fields["hosts"].description
    )  # type: ignore[union-attr]
    for knob in KNOBS:
        assert knob.help == schema_field(knob.path).description


@pytest.mark.parametrize(
    ("path", "bounds"),
    [
        ("cluster.hosts", Bounds(1, False, 256, False)),
        ("cluster.peer_links", Bounds(1, False, 16, False)),
        ("array.spindles", Bounds(1, False, 4096, False)),
        ("array.drive.rpm", Bounds(1000, False, 30000, False)),
        ("groups.{group}.workload.workers", Bounds(1, False, 1024, False)),
        ("groups.{group}.workload.iops", Bounds(0, True, 1e8, False)),
        ("groups.{group}.workload.throughput", Bounds(1, False, 1e13, False)),
        ("groups.{group}.workload.working_set", Bounds(0, True, 2**53, False)),
        ("groups.{group}.workload.read_fraction", Bounds(0, False, 1, False)),
        ("run.duration", Bounds(0, True, 1e6, False)),
        ("run.seed", Bounds(0, False, 2**53 - 1, False)),
    ],
)
def test_knob_bounds_are_the_schema_constraints(path: str, bounds: Bounds) -> None:
    knob = next(k for k in KNOBS if k.path == path)
    assert knob.bounds == bounds


@pytest.mark.parametrize(
    "path",
    ["cluster.hosts", "array.spindles", "groups.{group}.workload.workers", "array.drive.rpm"],
)
def test_widget_bounds_are_the_values_the_loader_accepts(path: str) -> None:
    """The widget's upper end loads; a step beyond either end is the loader's error about that
    field."""
    default = simcache.load_scenario(library_scenarios()["default"])
    knob = next(k for k in KNOBS if k.path == path)
    at = knob.at(next(g.name for g in default.groups if g.workload.mode == "closed"))
    lower, upper = knob.shown_range()
    assert lower is not None and upper is not None
    assert current(default.with_overrides({at: knob.to_override(upper)}), at) == upper
    for beyond in (lower - 1, upper + 1):
        with pytest.raises(simcache.ScenarioError, match=at.rsplit(".", 1)[-1]):
            default.with_overrides({at: knob.to_override(beyond)})


def test_changing_a_field_docstring_changes_the_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """Help, label and bounds are read from the schema each time, not copied into the table."""

    class Renamed(_Spec):
        hosts: int = Field(default=4, title="Servers", ge=2, le=8)
        """A new description."""

    cluster = simcache.Scenario.model_fields["cluster"].annotation
    fields = cluster.model_fields  # type: ignore[union-attr]
    monkeypatch.setitem(fields, ("hosts"), Renamed.model_fields["hosts"])
    hosts = next(k for k in KNOBS if k.path == "cluster.hosts")
    assert hosts.help == "A new description."
    assert hosts.label == "Servers"
    assert hosts.bounds == Bounds(2, False, 8, False)


def test_shown_values_go_back_to_the_same_override() -> None:
    default = simcache.load_scenario(library_scenarios()["default"])
    for knob in KNOBS:
        if knob.widget in ("quantity", "slider") and "duty_cycle" not in knob.path:
            for group in [g.name for g in default.groups] if "{group}" in knob.path else [""]:
                try:
                    value = current(default, knob.at(group))
                except AttributeError:
                    continue
                if value is None:
                    continue
                edited = default.with_overrides(
                    {knob.at(group): knob.to_override(knob.shown(value))}
                )
                assert current(edited, knob.at(group)) == pytest.approx(value, rel=1e-3)
