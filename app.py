"""Streamlit what-if page: pick or upload a scenario, change what matters, see the latency VMs get.

Run with ``simcache app`` (or ``streamlit run app.py``). Four views share the sidebar's
scenario: one run (latency, backlog, utilization, where the write time goes, the bottleneck:
:mod:`simcache_app.views.single`), a sweep of one parameter over several seeds
(:mod:`simcache_app.views.sweep`), a comparison of 2 to 4 variants
(:mod:`simcache_app.views.compare`) and the sizing of a cluster (:mod:`simcache_app.sizing`). This
file is the page's frame: the sidebar (the scenario chosen, uploaded or imported, and its
parameters) and the tabs. The page holds no model logic: it calls the public ``simcache`` API, and
the helpers in ``simcache_app/`` turn controls into overrides and results into tables and figures.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import streamlit as st

import simcache
from simcache.base.errors import WorkloadFileError, counted
from simcache.base.units import format_figure, format_size
from simcache.spec import REPLICAS
from simcache.spec.consistency import scenario_notes
from simcache.traces.formats import FORMATS
from simcache.workloads.calibrate.device import Calibration
from simcache.workloads.ingest.imported import DEFAULT_POLICY, Imported
from simcache_app import controls, describe, layout, verdicts
from simcache_app.device_upload import calibrate_uploads, device_overrides, fit_frame
from simcache_app.scenario_files import (
    DEFAULT_SCENARIO,
    changed_description,
    exported_scenario,
    library_scenarios,
    read_upload,
)
from simcache_app.sizing import SIZED, forget_answer, size_view
from simcache_app.uploads import (
    UPLOAD_LIMIT_BYTES,
    ImportedUpload,
    expectations_table,
    facts_table,
    groups_table,
    guess_upload_format,
    import_upload,
    is_scenario_upload,
    store_upload,
)
from simcache_app.views.compare import compare_view
from simcache_app.views.single import single_run_view
from simcache_app.views.sweep import sweep_view
from simcache_app.views.widgets import show_scenario_error

INTRO = (
    "Predict the latency your VMs see when each host caches their writes in flash or RAM "
    "(write-through, "
    "or write-back with 0, 1 or 2 copies on peer hosts). Pick a scenario, change it in the "
    "sidebar, press **Run**. "
    "To ask *is 1GbE enough for WB+1 with my write load?*, set your groups' write load in the "
    "sidebar and open **Compare**."
)


def main() -> None:
    st.set_page_config(page_title="simcache what-if", layout="wide")
    st.html(layout.NARROW_CSS)  # titles, labels and units stay whole at 800 px wide
    st.title("simcache: what latency will my VMs see?")
    st.markdown(INTRO)
    problem: simcache.ScenarioError | None = None
    with st.sidebar:
        try:
            base, source, imported = choose_scenario()
            st.header("Run")
            duration, seed = controls.run_controls(base, source)
            scenario = edit_scenario(base, source, duration, seed)
            targets = verdicts.target_controls(scenario)
        except simcache.ScenarioError as exc:
            problem = exc
    if problem is not None:
        imported_file = isinstance(problem, WorkloadFileError)
        show_scenario_error(
            "This file cannot be imported"
            if imported_file
            else "This scenario cannot be simulated as it stands",
            problem,
        )
        return
    if imported is not None:
        show_import(imported, scenario)
    single, sweep, compare, sizing = st.tabs(
        ["Single run", "Sweep one parameter", "Compare variants", "Size my cluster"]
    )
    with single:
        single_run_view(scenario, seed, duration, targets)
    with sweep:
        sweep_view(scenario, seed, duration, source, targets)
    with compare:
        compare_view(scenario, seed, duration, source, targets)
    with sizing:
        size_view(scenario, duration, seed, targets)


def choose_scenario() -> tuple[simcache.Scenario, str, ImportedUpload | None]:
    """The scenario to start from, a key naming it (library file, or the upload's hash), and what an
    uploaded workload file gave (None for a library scenario or a TOML upload).

    Raises ScenarioError for an upload (or library file) the loader or the importer rejects.
    """
    library = library_scenarios()
    scenarios = {name: load_library_scenario(str(path)) for name, path in library.items()}
    about = (
        "The scenarios/ folder: default is the demo cluster, then the 2014 field observations the "
        "model reproduces, the related behaviours, and the device checks. Type to filter (a name, "
        "'2014', a word of the description). An uploaded workload file runs on this scenario's "
        "cluster."
    )
    name = st.selectbox(
        "Scenario",
        sorted(library, key=lambda name: scenario_order(name, scenarios[name])),
        format_func=lambda name: scenario_label(name, scenarios[name]),
        key="scenario",
        help=about,
        on_change=forget_answer,
    )
    upload = st.file_uploader(
        "...or upload a scenario (TOML), a fio job or JSON result, a vscsiStats CSV or a block "
        "trace",
        key="upload",
        help=f"Workload files up to {format_size(UPLOAD_LIMIT_BYTES)} are imported onto the "
        "scenario chosen above (its cluster and array); "
        "traces: fio iolog, blkparse text, MSR-Cambridge CSV, or a CSV with a header such as "
        "time,op,offset,size.",
    )
    sized = st.session_state.get(SIZED)
    # the "Size my cluster" answer, made the current scenario
    if upload is None and sized is not None:
        answer_name, text = sized
        scenario = read_upload(answer_name, text.encode())
        source = f"sized-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
        imported = None
        st.button("Back to the library scenario", key="size.forget", on_click=forget_answer)
    elif upload is None:
        scenario, source = load_library_scenario(str(library[name])), name
        imported = None
    elif is_scenario_upload(upload.name):
        data = upload.getvalue()
        scenario = read_upload(upload.name, data)
        source = f"upload-{hashlib.sha256(data).hexdigest()[:12]}"
        imported = None
    else:
        scenario, source, imported = import_workload_upload(
            upload.name, upload.getvalue(), name, str(library[name])
        )
    st.caption(f"From the file: {scenario.description or scenario.name}")
    return scenario, source, imported


def import_workload_upload(
    name: str, data: bytes, base_name: str, base_path: str
) -> tuple[simcache.Scenario, str, ImportedUpload]:
    """An uploaded workload file on the library scenario ``base_name``: its format and the
    imported groups' policy are chosen here; the scenario, a key naming the upload and these
    choices, and the import."""
    path = store_upload(name, data)
    digest = path.stem[:12]
    guessed = guess_upload_format(path)
    formats = list(FORMATS)
    chosen = st.selectbox(
        "Format of the uploaded file",
        formats,
        index=None if guessed is None else formats.index(guessed),
        placeholder="choose the format",
        key=f"import.{digest}.format",
        help="Guessed from the file's start; choose another if the guess is wrong.",
    )
    options = st.text_input(
        "Import options",
        key=f"import.{digest}.options",
        placeholder="e.g. time_unit=ms; time_column=ts",
        help="The format's options as KEY=VALUE, separated by ';' (docs/workloads.md lists each "
        "format's): a CSV trace's "
        "column names and units, blkparse's event, vscsiStats' working_set, ...",
    )
    if chosen is None:
        message = (
            f"cannot tell the format from the file's start; choose it above: {', '.join(formats)}"
        )
        raise WorkloadFileError.at(name, None, "format", message)
    policies = list(REPLICAS)
    policy = st.selectbox(
        "Write policy of the imported groups",
        policies,
        index=policies.index(DEFAULT_POLICY),
        key=f"import.{digest}.policy",
    )
    upload = ImportedUpload(
        import_upload_cached(name, str(path), chosen, options), base_path, policy
    )
    tag = f"-{hashlib.sha256(options.encode()).hexdigest()[:8]}" if options else ""
    return upload.scenario(), f"import-{digest}-{chosen}{tag}-{base_name}-{policy}", upload


@st.cache_resource(show_spinner="Importing the uploaded file", max_entries=16)
def import_upload_cached(name: str, path: str, format_name: str, options: str) -> Imported:
    """:func:`import_upload`, once per stored file, format and options (a trace is parsed into
    the cache only once anyway)."""
    return import_upload(name, Path(path), format_name, options)


@st.cache_resource(show_spinner=False)
def load_library_scenario(path: str) -> simcache.Scenario:
    return simcache.load_scenario(path)


# (No docstrings on this script's constants: Streamlit would write them on the page.)
# How a scenario that reproduces a field observation names it in [check] observation ("2.
# Interconnect comparison (2-host lab)"), and the name prefix of the device checks.
FIELD_OBSERVATION = re.compile(r"(\d+)\. ")
DEVICE_CHECK = "validate_"


def field_observation(scenario: simcache.Scenario) -> int | None:
    """The number of the field observation a scenario reproduces (None: none)."""
    observation = FIELD_OBSERVATION.match(scenario.check.observation)
    return int(observation[1]) if observation else None


def scenario_label(name: str, scenario: simcache.Scenario) -> str:
    """The Scenario list's option for a library file: its name, what it is, its description:
    ``"large_writes_flash (2014 field observation 8): sustained 256-512 KiB writes: ..."``."""
    number = field_observation(scenario)
    kind = (
        f" (2014 field observation {number})"
        if number is not None
        else " (device check)"
        if name.startswith(DEVICE_CHECK)
        else ""
    )
    return f"{name}{kind}: {scenario.description}" if scenario.description else f"{name}{kind}"


def scenario_order(name: str, scenario: simcache.Scenario) -> tuple[int, int, str]:
    """Where a library file stands in the Scenario list: the default first, then the field
    observations by number, the other behaviours, the device checks, each by name."""
    number = field_observation(scenario)
    if name == DEFAULT_SCENARIO:
        return (0, 0, name)
    if number is not None:
        return (1, number, name)
    return (3 if name.startswith(DEVICE_CHECK) else 2, 0, name)


def edit_scenario(
    base: simcache.Scenario, source: str, duration: float, seed: int
) -> simcache.Scenario:
    """Sidebar sections -> overrides -> the edited scenario, with a download of it (with the run's
    duration and seed).

    Raises ScenarioError when the settings do not make a valid scenario (e.g. WB+2 on 2 hosts).
    """
    overrides: controls.Overrides = {}
    with st.expander("Cluster and network", expanded=True):
        overrides |= controls.cluster_controls(base, source)
    with st.expander("Flash / RAM tier"):
        overrides |= controls.tier_controls(base, source)
        overrides |= measured_device(source)
    with st.expander("Backing array"):
        overrides |= controls.array_controls(base, source)
    for group in base.groups:
        # the host count as set above, not the file's
        vms = describe.group_vms(base, group.name, overrides.get("cluster.hosts"))
        with st.expander(
            f"VM group {group.name} ({format_figure(vms)} VMs)", expanded=len(base.groups) == 1
        ):
            overrides |= controls.group_controls(base, group, source)
    scenario = (
        base.with_overrides(
            {**overrides, "description": changed_description(base.description, overrides)},
            source="the sidebar settings",
        )
        if overrides
        else base
    )
    st.caption(
        f"{counted(len(overrides), 'setting')} changed from the file"
        + (": " + ", ".join(overrides) if overrides else "")
    )
    st.caption(f"As set: {describe.scenario_summary(scenario)}")
    for field, message in scenario_notes(scenario):  # valid, but maybe not what was meant
        st.warning(f"{field}: {message}")
    file_name, text = exported_scenario(scenario, overrides, duration, seed)
    st.download_button(
        "Download this scenario (TOML)",
        text,
        file_name=file_name,
        on_click="ignore",
        help=(
            "Only what differs from the built-in profiles and defaults, with this page's duration "
            "and seed."
        ),
    )
    return scenario


def measured_device(source: str) -> controls.Overrides:
    """Upload fio JSON results of your own device, see the fit, use the device (``simcache
    calibrate``)."""
    files = st.file_uploader(
        "Your device: upload fio JSON results (one raw device, direct=1, two queue depths or more)",
        type=["json"],
        accept_multiple_files=True,
        key="calibrate-upload",
        help="fio --output-format=json of one device at several queue depths: the tier is fitted "
        "to them "
        "(the same as `simcache calibrate FILE... -o DEVICE.toml`).",
    )
    if not files:
        return {}
    try:
        calibration = calibrate_cached(tuple((f.name, f.getvalue()) for f in files))
    except simcache.ScenarioError as exc:
        st.error(f"**These results cannot be fitted.**\n\n```\n{exc}\n```")
        return {}
    st.caption(
        f"{len(calibration.fit.points)} points of {calibration.points.device}; fields fio cannot "
        f"measure from {calibration.base}"
    )
    st.dataframe(fit_frame(calibration), hide_index=True)
    for warning in (*calibration.fit.warnings, *calibration.points.notes):
        st.warning(warning)
    if calibration.inherited:
        heading, *fields = calibration.inherited
        with st.expander(f"{len(fields)} fields taken from {calibration.base}, not measured"):
            st.markdown(heading + "\n\n" + "\n".join(f"- `{line.strip()}`" for line in fields))
    st.download_button(
        "Download the device (TOML)", calibration.toml, file_name="device.toml", on_click="ignore"
    )
    if st.checkbox(
        "Use this device as every host's tier", value=True, key=f"{source}.calibrate-use"
    ):
        return device_overrides(calibration)
    return {}


@st.cache_resource(show_spinner="Fitting the device to the fio results", max_entries=8)
def calibrate_cached(files: tuple[tuple[str, bytes], ...]) -> Calibration:
    """:func:`calibrate_uploads`, once per set of uploaded files."""
    return calibrate_uploads(files)


def show_import(upload: ImportedUpload, scenario: simcache.Scenario) -> None:
    """What the uploaded file gave: its format, facts, warnings, groups and (a measurement) the
    figures runs are compared with."""
    imported = upload.imported
    with st.expander(f"Imported from {imported.source.name} ({imported.format})", expanded=True):
        for warning in imported.warnings:
            st.warning(warning)
        left, right = st.columns(2)
        left.markdown("**What the file holds**")
        left.table(facts_table(imported).set_index("what"))  # a table, not a grid: long facts wrap
        right.markdown("**Groups created** (placed on the cluster chosen in the sidebar)")
        right.table(groups_table(scenario).set_index("group"))
        if imported.expect:
            st.markdown(
                "**What the file measured**: the scenario's checks, which `simcache check` "
                "compares a run of it with."
            )
            st.dataframe(expectations_table(imported), hide_index=True)
        st.download_button(
            "Download the imported scenario (TOML)",
            upload.toml(),
            file_name=f"{scenario.name}.toml",
            on_click="ignore",
            help=(
                "As `simcache import` writes it: the facts and warnings head the file; a trace is "
                "named by its stored copy's path."
            ),
        )


if __name__ == "__main__":
    main()
