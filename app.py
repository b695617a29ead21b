"""Streamlit what-if page: pick or upload a scenario, change what matters, see the latency VMs get.

Run with ``streamlit run app.py``. Three views share the sidebar's scenario:
one run (latency, backlog, utilization, where the write time goes, the
bottleneck), a sweep of one parameter over several seeds, and a comparison of
2 to 4 variants. The page holds no model logic: it calls the public
``simcache`` API, and the helpers in ``simcache_app/`` turn controls into
overrides and results into tables and figures.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import streamlit as st

import simcache
from simcache.base.errors import WorkloadFileError
from simcache.base.metrics import PERCENTILES, THROUGHPUT_COLUMNS, ci95_half_width
from simcache.base.units import format_figure, format_size
from simcache.report import report_html
from simcache.report.cells import bounded, cell, engine_words
from simcache.report.event_report import impact_lines
from simcache.results.event_impact import LATENCY_FIGURES, PHASES, event_impacts
from simcache.runs.sweep import NOT_RUN, STABILITY, mix_shifts, point_stability, sweep_summary
from simcache.runs.targets import Target
from simcache.spec import REPLICAS
from simcache.spec.consistency import scenario_notes
from simcache.traces.formats import FORMATS
from simcache.workloads.calibrate.device import Calibration
from simcache.workloads.ingest.imported import DEFAULT_POLICY, Imported
from simcache_app import charts, controls, describe, layout, run_length, runs, verdicts
from simcache_app.device_upload import calibrate_uploads, device_overrides, fit_frame
from simcache_app.parameters import (
    DEFAULT_COMPARE,
    compare_presets,
    parse_values,
    sweep_parameters,
    valid_values,
)
from simcache_app.scenario_files import (
    DEFAULT_SCENARIO,
    changed_description,
    exported_scenario,
    library_scenarios,
    read_upload,
    result_zip,
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

_FIRST_METRICS = ("p99_ms", "p50_ms", "mean_ms")  # the most asked-for, offered first
SWEEP_METRICS = (
    *_FIRST_METRICS,
    *(p for p in PERCENTILES if p not in _FIRST_METRICS),
    *(m for m in THROUGHPUT_COLUMNS if m != "count"),
)
SWEEP_TOTALS = (
    "bottleneck_utilization",
    "peer_wire_mb_s",
    "array_write_mb_s",
    "destage_backlog_bytes",
)
P99_HELP = "VM write p99 over every group: mean over the seeds ± the 95% interval (Student t)."
AT_LEAST = "≥ "  # the mark of a figure that is only a lower bound (metrics, percentile table)
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
        f"{len(overrides)} setting(s) changed from the file"
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


def show_scenario_error(title: str, exc: simcache.ScenarioError) -> None:
    st.error(f"**{title}.**\n\n```\n{exc}\n```")


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


def done_runs() -> set[str]:
    """Keys of the runs this session has shown: their results come back from the cache without
    pressing run."""
    done: set[str] = st.session_state.setdefault("done_runs", set())
    return done


def run_requested(button: str, keys: list[str], help: str) -> bool:
    clicked = st.button(button, type="primary", key=button, help=help)
    return clicked or all(key in done_runs() for key in keys)


# -- single run
# -------------------------------------------------------------------------------------


def single_run_view(
    scenario: simcache.Scenario, seed: int, duration: float, targets: list[Target]
) -> None:
    hint = variants_hint(scenario)
    if hint:
        st.markdown(hint)
    show_estimate(scenario, duration)  # milliseconds: shown before any run
    outside = run_length.events_outside_note(scenario, duration)
    if outside:
        st.warning(outside)
    key = runs.run_key(scenario, seed, duration)
    if not (
        run_requested("Run simulation", [key], "Simulate the scenario as set in the sidebar.")
        or runs.has_job(key)
        or runs.asked(key)
    ):
        st.info("Press **Run simulation** to simulate the scenario as set in the sidebar.")
        return
    if not runs.confirmed(key, runs.expected_ios([scenario.with_duration(duration)]), "run"):
        return
    try:
        result = runs.simulate(scenario, seed, duration)
    except simcache.ScenarioError as exc:  # too large to run (simcache.sim.control)
        show_scenario_error("This run is too large", exc)
        return
    if runs.finished(result):
        done_runs().add(key)
    show_result(result, scenario, targets)


def variants_hint(scenario: simcache.Scenario) -> str | None:
    """A line saying that the file defines variants to compare with this run, and where they are
    run (None without variants): a scenario such as interconnect_comparison makes its point in its
    variants, and its base run alone is one unexplained figure."""
    names = list(scenario.variants)
    if not names:
        return None
    if len(names) == 1:
        return (
            f"**This file defines 1 variant to compare with it** ({names[0]}): the **Compare "
            f"variants** tab runs it beside the scenario (choose *Variant from file: {names[0]}*); "
            "this tab runs the scenario alone."
        )
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return (
        f"**This file defines {len(names)} variants to compare with it** ({shown}): the **Compare "
        "variants** tab runs them side by side (choose *Variant from file: ...*); this tab runs "
        "the scenario alone."
    )


def show_estimate(scenario: simcache.Scenario, duration: float) -> None:
    """The instant estimate above the Run button, of the run it starts (``duration`` seconds):
    its latencies, then its bottleneck on a line of its own, its overloads (once for all the hosts
    they repeat for), and what it leaves out folded away."""
    estimate = simcache.estimate(scenario, duration=duration)
    text = layout.estimate_text(describe.estimate_sentence(estimate, scenario))
    st.caption(text.summary)
    if text.bottleneck:
        st.markdown(f"**Predicted bottleneck** — {text.bottleneck}")
    overloads = layout.merged_by_host(text.overloads)
    if overloads:
        st.caption("\n".join(f"- **Overload:** {overload}" for overload in overloads))
    if text.left_out:
        with st.expander(f"Not in the estimate ({len(text.left_out)})"):
            st.caption("\n".join(f"- {note}" for note in text.left_out))


def show_result(
    result: simcache.Result, scenario: simcache.Scenario, targets: list[Target]
) -> None:
    for warning in layout.merged_by_host(describe.validity_warnings(result)):
        st.warning(warning)
    verdicts.show_run_verdicts(result, targets)
    note = run_length.run_length_note(result, scenario)
    if note:
        st.info(note)
    columns = st.columns(4)
    bounds = describe.headline_lower_bounds(result)
    for column, (label, value) in zip(columns, describe.headline(result).items(), strict=True):
        at_least = label in bounds
        column.metric(
            f"VM {label}",
            (AT_LEAST if at_least else "") + describe.format_ms(value),
            help=f"{label} latency over every VM group, after warm-up."
            + (
                " At least this: I/Os still unfinished at the end of the run could lie past it."
                if at_least
                else ""
            ),
        )
    st.markdown(describe.bottleneck_sentence(result, scenario))
    peer = describe.busiest_peer_link(result, scenario)
    st.markdown(
        f"Peer network (WB+1/WB+2 replicas): busiest port is {peer} mean utilization."
        if peer
        else "No group replicates over the peer network."
    )
    show_event_impacts(result)
    st.caption(
        f"{result.meta['ios']:,} I/Os simulated over {result.meta['simulated_s']:g} s (seed "
        f"{result.meta['seed']}) in {result.meta['wall_time_s']:.2f} s by the "
        f"{engine_words(result.meta)}."
    )
    marks = charts.time_marks(result, scenario)
    st.caption(charts.marks_caption(marks))
    left, right = st.columns(2)
    left.plotly_chart(charts.latency_figure(result.series, marks), key="latency")
    right.plotly_chart(charts.breakdown_figure(result.breakdown), key="breakdown")
    left.plotly_chart(charts.utilization_figure(result.series, marks), key="utilization")
    right.plotly_chart(charts.backlog_figure(result.series, marks), key="backlog")
    st.subheader("Latency percentiles per VM group")
    table = percentile_cells(result)
    text_figures = [c for c in table.columns[2:] if pd.api.types.is_object_dtype(table[c])]
    show_table(table, text_figures)
    if any(str(value).startswith(AT_LEAST) for value in table.to_numpy().ravel()):
        st.caption(
            f"{AT_LEAST.strip()}: at least this; I/Os still unfinished at the end of the run could "
            "lie past it."
        )
    if peer:
        links = scenario.cluster.peer_links
        with st.expander(
            f"Mean utilization of each peer port ({links} per host)", expanded=links > 1
        ):
            show_table(describe.peer_port_table(result))
    result_downloads(result, targets)


def percentile_cells(result: simcache.Result) -> pd.DataFrame:
    """The percentile table with each lower-bound figure marked ``≥`` (the summary's
    ``lower_bounds``, marked by :func:`simcache.report.cells.bounded` as ``simcache run`` marks
    them ``>=``) instead of a column naming them. A column that holds a bound is text, each of its
    figures as the CLI prints it; the others stay numbers."""
    table = describe.percentile_table(result)
    names = {label: name for name, label in describe.PERCENTILE_COLUMNS.items()}
    raw = table.rename(columns=names)
    marked = bounded(raw, mark=AT_LEAST)
    with_bounds = {name for names in raw["lower_bounds"] for name in str(names).split()}
    shown = raw.drop(columns="lower_bounds")
    for name in with_bounds:
        shown[name] = [v if isinstance(v, str) else cell(v) for v in marked[name]]
    return shown.rename(columns=describe.PERCENTILE_COLUMNS)


def show_event_impacts(result: simcache.Result) -> None:
    """What each scheduled event did, as ``simcache run``'s events table says it
    (:func:`simcache.results.event_impact.event_impacts`): the latency of the I/Os issued before,
    during and after it (a phase outside the run left out), then its data at risk and recovery.
    Nothing for a run without events."""
    impacts = event_impacts(result)
    if not impacts:
        return
    rows = [
        {
            "event": impact.what,
            "phase": phase,
            "from s": round(impact.windows[phase][0], 3),
            "to s": round(impact.windows[phase][1], 3),
        }
        | {figure.replace("_", " "): impact.latency[phase][figure] for figure in LATENCY_FIGURES}
        for impact in impacts
        for phase in PHASES
        if impact.windows[phase][1] > impact.windows[phase][0]  # no "after" past the run's end
    ]
    table = pd.DataFrame(rows).dropna(axis="columns", how="all")  # no reads: no read columns
    latency = [column for column in table.columns if column.endswith(" ms")]
    table[latency] = describe.figures(table[latency])  # the times keep the CLI's milliseconds
    st.markdown(
        "**Scheduled events**: latency (ms) of the I/Os issued before, during and after each"
    )
    show_table(table)
    st.caption(
        "\n".join(
            f"- {impact.what} {impact.start_s:.3f}-{impact.end_s:.3f} s: "
            f"{impact_lines(impact)[1].strip()}"
            for impact in impacts
        )
    )


def result_downloads(result: simcache.Result, targets: list[Target]) -> None:
    name = f"{result.meta['scenario_name']}-seed{result.meta['seed']}"
    st.download_button(
        "Download report (HTML)",
        lambda: report_html(result, targets=targets),
        file_name=f"{name}-report.html",
        mime="text/html",
        on_click="ignore",
        help=(
            "One self-contained file, as `simcache report` writes it: tables, charts, warnings "
            "and the scenario as run."
        ),
    )
    left, middle, right = st.columns(3)
    left.download_button(
        "Summary (CSV)",
        lambda: result.summary.to_csv(index=False),
        file_name=f"{name}-summary.csv",
        on_click="ignore",
    )
    middle.download_button(
        "Every I/O (Parquet)",
        lambda: result.records.to_parquet(index=False),
        file_name=f"{name}-records.parquet",
        on_click="ignore",
    )
    right.download_button(
        "All tables (ZIP of CSV + Parquet)",
        lambda: result_zip(result),
        file_name=f"{name}.zip",
        on_click="ignore",
    )


# -- sweep
# ------------------------------------------------------------------------------------------


def sweep_view(
    scenario: simcache.Scenario, seed: int, duration: float, source: str, targets: list[Target]
) -> None:
    st.markdown(
        "Vary one setting over a list of values, several seeds each, and plot a metric with its "
        "95% confidence interval "
        "(a band along numbers, error bars on categories such as link kinds)."
    )
    parameters = {p.label: p for p in sweep_parameters(scenario)}
    left, middle, right = st.columns([2, 3, 1])
    label = left.selectbox("Parameter", list(parameters), key=f"{source}.sweep.parameter")
    parameter = parameters[label]
    text = middle.text_input(
        "Values",
        parameter.default_values,
        key=f"{source}.sweep.values.{label}",
        help=f"{parameter.help} Comma-separated"
        + (", or a range start:stop:step." if parameter.numeric else "."),
    )
    count = right.number_input(
        "Seeds",
        1,
        30,
        3,
        key="sweep.seeds",
        help=f"Replications per value: seeds {seed}, {seed + 1}, ...",
    )
    metric = st.selectbox(
        "Metric",
        sweep_metrics(scenario),
        format_func=describe.metric_label,
        key=f"{source}.sweep.metric",
    )
    try:
        values = parse_values(text, parameter.numeric)
    except ValueError as exc:
        st.error(str(exc))
        return
    values, invalid = valid_values(scenario, parameter, values, duration)
    for value, problem in invalid.items():  # that point is said; the others run
        st.warning(
            f"**{label} = {value}** is left out of the sweep: it does not make a valid scenario.\n"
            f"\n```\n{problem}\n```"
        )
    if not values:
        return
    grid = {parameter.path: [parameter.to_override(v) for v in values]}
    seeds = list(range(seed, seed + int(count)))
    st.caption(f"{len(values) * len(seeds)} simulations of {duration:g} s each.")
    key = runs.sweep_key(scenario, grid, seeds, duration)
    if not (
        run_requested("Run sweep", [key], "Simulate every value with every seed.")
        or runs.has_job(key)
        or runs.asked(key)
    ):
        return
    try:
        if not runs.confirmed(key, runs.sweep_ios(scenario, grid, seeds, duration), "sweep"):
            return
        table = runs.sweep(scenario, grid, seeds, duration)
    except simcache.ScenarioError as exc:
        show_scenario_error("A swept value does not make a valid scenario", exc)
        return
    if "stopped" in table.attrs:
        st.warning(runs.sweep_stop_text(table))
        if table.empty:
            return
    else:
        done_runs().add(key)
    table.insert(
        0, label, table[parameter.path].map(dict(zip(grid[parameter.path], values, strict=True)))
    )
    summary = sweep_summary(table, [label, parameter.path])
    points = table.groupby([label, parameter.path], sort=False, dropna=False)  # summary's order
    stability = [point_stability(part) for _, part in points]
    unsteady = {
        state: [
            f"**{value}** ({s.label})"
            for value, s in zip(summary[label], stability, strict=True)
            if s.state == state and state != NOT_RUN  # (those say why, below)
        ]
        for state in STABILITY
        if state != "stable"
    }
    if "not_run" in table.columns:  # points past the run limits: each says why
        for (value, _), part in points:
            reasons = part["not_run"].dropna()
            if len(reasons):
                unsteady[NOT_RUN].append(f"**{value}**: {reasons.iloc[0]}")
    if any(unsteady.values()):
        st.warning(
            f"**Not every point of {label} is steady:** its figures there are those of this "
            "run's length, not the system's (the single run of a point gives its warnings).\n"
            + "".join(
                f"\n- {', '.join(named)}: {STABILITY[state]}."
                for state, named in unsteady.items()
                if named
            )
        )
    group, *op_figure = metric.split(".")  # "all.write.p99_ms"; a total has no group
    moved = mix_shifts(table, [label], op_figure[0]) if group == "all" and op_figure else []
    if moved:
        st.warning(
            f"**{describe.metric_label(metric)} is over every group's I/Os, and their mix "
            f"changes with {label}:** {'; '.join(moved)}. A change in it can be a change of mix, "
            "not of latency (a closed-loop group held back by a saturated part issues fewer "
            "I/Os, and they drop out of it): pick one group's metric to compare like with like."
        )
    decided, _ = verdicts.show_sweep_decision(table, summary, label, parameter.path, targets)
    figure = charts.sweep_figure(
        summary,
        label,
        metric,
        describe.metric_label(metric),
        categorical=not parameter.numeric,
        stability=stability,
    )
    st.plotly_chart(
        verdicts.mark_feasible(figure, summary, label, metric, decided[0] if decided else []),
        key="sweep",
    )
    shown = describe.sweep_table(summary, label, metric)
    shown["stability"] = [point.label for point in stability]
    for target, per_point in zip(targets, decided, strict=True):
        shown[str(target)] = [verdict.short for verdict in per_point]
        shown[f"{target}: why"] = [verdict.text for verdict in per_point]
    show_table(shown)
    st.download_button(
        "Sweep table (CSV)",
        table.to_csv(index=False),
        file_name=f"{scenario.name}-sweep.csv",
        on_click="ignore",
    )


def show_table(table: pd.DataFrame, text_figures: list[str] | None = None) -> None:
    """A table of figures: whole numbers (I/O counts) with thousands separators; floats come
    rounded (describe.figures); ``text_figures``, columns of figures held as text (lower bounds
    marked "≥"), aligned as the numbers are."""
    config = {
        c: st.column_config.NumberColumn(format="localized")
        for c in table.columns
        if pd.api.types.is_integer_dtype(table[c])
    } | {c: st.column_config.TextColumn(alignment="right") for c in text_figures or []}
    st.dataframe(table, hide_index=True, column_config=config)


def sweep_metrics(scenario: simcache.Scenario) -> list[str]:
    groups = ["all", *(g.name for g in scenario.groups)]
    return [
        f"{g}.{op}.{m}" for g in groups for op in ("write", "read") for m in SWEEP_METRICS
    ] + list(SWEEP_TOTALS)


# -- compare
# ----------------------------------------------------------------------------------------


def compare_view(
    scenario: simcache.Scenario, seed: int, duration: float, source: str, targets: list[Target]
) -> None:
    st.markdown(
        "Run 2 to 4 variants of the sidebar's scenario with the same seeds and compare them side "
        "by side: means over the "
        "seeds with 95% intervals, and each difference from the first variant taken seed by seed."
    )
    presets = compare_presets(scenario)
    default = [name for name in DEFAULT_COMPARE if name in presets] or list(presets)[:2]
    left, right = st.columns([5, 1])
    chosen = left.multiselect(
        "Variants",
        list(presets),
        default=default,
        max_selections=4,
        key=f"{source}.compare.variants",
    )
    about = (
        f"Runs per variant, seeds {seed}, {seed + 1}, ...: the same for every variant, so "
        "differences are paired by seed."
    )
    count = right.number_input("Seeds", 1, 30, 3, key="compare.seeds", help=about)
    if len(chosen) < 2:
        st.warning("Pick at least two variants.")
        return
    try:
        variants = {name: scenario.with_overrides(presets[name], source=name) for name in chosen}
    except simcache.ScenarioError as exc:
        show_scenario_error("A variant does not make a valid scenario", exc)
        return
    seeds = list(range(seed, seed + int(count)))
    keys = [runs.run_key(v, s, duration) for v in variants.values() for s in seeds]
    asked = runs.asked(json.dumps(keys))
    requested = run_requested(
        "Run comparison", keys, "Simulate every chosen variant with every seed."
    )
    if not (requested or any(runs.has_job(k) for k in keys) or asked):
        return
    work = runs.expected_ios([v.with_duration(duration) for v in variants.values() for _ in seeds])
    if not runs.confirmed(json.dumps(keys), work, "comparison"):
        return
    # two variants may be the same scenario (a preset equal to the sidebar's): run it once
    ran: dict[str, simcache.Result] = {}

    def run(name: str, variant: simcache.Scenario, seed: int) -> simcache.Result:
        key = runs.run_key(variant, seed, duration)
        if key not in ran:
            ran[key] = runs.simulate(
                variant, seed, duration, label=f"Simulating {name}, seed {seed}"
            )
        return ran[key]

    try:
        results = {name: [run(name, v, s) for s in seeds] for name, v in variants.items()}
    except simcache.ScenarioError as exc:  # too large to run (simcache.sim.control)
        show_scenario_error("A variant is too large to run", exc)
        return
    done_runs().update(
        key
        for key, result in zip(keys, (r for rs in results.values() for r in rs), strict=True)
        if runs.finished(result)
    )
    tables = [
        describe.compare_table({name: rs[i] for name, rs in results.items()}, variants)
        for i in range(len(seeds))
    ]
    table = _mean_table(tables)
    judged = verdicts.variant_verdicts(results, targets)
    p99s = {name: [describe.headline(r)["write p99"] for r in rs] for name, rs in results.items()}
    st.markdown(
        f"**VM write p99 over all groups**, mean over {len(seeds)} seed(s) ± 95% interval, with "
        "each variant's bottleneck:"
    )
    first = chosen[0]
    for column, row in zip(st.columns(len(table)), table.to_dict("records"), strict=True):
        name = row["variant"]
        half = row["write p99 ms ± 95%"]
        column.metric(name, verdicts.mean_ms_text(row["write p99 ms"], half), help=P99_HELP)
        column.caption(
            f"Bottleneck (seed {seed}): {row['bottleneck']}. Busiest peer link: "
            f"{row['busiest peer link']}."
        )
        for verdict in judged[name]:
            column.markdown(verdicts.verdict_line(verdict))
    for name in chosen[1:]:
        st.markdown(verdicts.difference_sentence(name, first, p99s[name], p99s[first]))
    st.plotly_chart(charts.compare_figure(table), key="compare")
    show_table(table)
    st.download_button(
        "Comparison (CSV)",
        table.to_csv(index=False),
        file_name=f"{scenario.name}-compare.csv",
        on_click="ignore",
    )


def _mean_table(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Per-seed compare tables -> one: numeric columns averaged over the seeds (write p99 with
    its 95% half-width), text columns (bottleneck, busiest peer link) from the first seed."""
    first = tables[0].set_index("variant")
    numeric = [c for c in first.columns if pd.api.types.is_numeric_dtype(first[c])]
    stacked = pd.concat([t.set_index("variant")[numeric] for t in tables])
    means = stacked.groupby(level=0, sort=False).mean().round(3)
    half = stacked.groupby(level=0, sort=False)["write p99 ms"].agg(
        lambda v: ci95_half_width(v.to_numpy(dtype=float))
    )
    table = first[[]].join(means).join(first[[c for c in first.columns if c not in numeric]])
    table.insert(list(table.columns).index("write p99 ms") + 1, "write p99 ms ± 95%", half.round(3))
    table.insert(0, "seeds", len(tables))
    return table.reset_index()


if __name__ == "__main__":
    main()
