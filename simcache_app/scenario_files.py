"""Files for the page: the library in scenarios/, uploads, the edited scenario as TOML, results as a
ZIP.

The edited scenario is downloaded as :func:`exported_scenario` writes it: only what differs from the
profiles and defaults (:func:`simcache.spec.dump.minimal_scenario_toml`), with the page's duration
and seed, and the file's checks and variants while they still fit it.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import simcache
from simcache.spec import CheckSpec, builtin_scenarios, check_problems
from simcache.spec.dump import minimal_scenario_toml, scenario_slug, scenario_toml

__all__ = [
    "DEFAULT_SCENARIO",
    "exported_scenario",
    "library_scenarios",
    "read_upload",
    "result_zip",
    "scenario_toml",
]

DEFAULT_SCENARIO = "default"


def library_scenarios() -> dict[str, Path]:
    """The scenario files shipped in ``scenarios/`` (:func:`simcache.spec.builtin_scenarios`), by
    stem, the default one first."""
    files = builtin_scenarios()
    first = {DEFAULT_SCENARIO: files.pop(DEFAULT_SCENARIO)} if DEFAULT_SCENARIO in files else {}
    return {**first, **files}


def read_upload(name: str, data: bytes) -> simcache.Scenario:
    """Validate an uploaded TOML file with the package's loader.

    Raises :class:`simcache.ScenarioError` naming the uploaded file (not a
    temporary path) and every problem the loader found.
    """
    with tempfile.TemporaryDirectory(prefix="simcache-upload-") as folder:
        path = Path(folder) / (Path(name).name or "upload.toml")
        path.write_bytes(data)
        try:
            return simcache.load_scenario(path)
        except simcache.ScenarioError as exc:
            raise simcache.ScenarioError(name, exc.problems) from None


def result_zip(result: simcache.Result) -> bytes:
    """What ``Result.save`` writes (records, series, summary, breakdown as CSV and Parquet,
    meta.json) as one ZIP."""
    buffer = io.BytesIO()
    with (
        tempfile.TemporaryDirectory(prefix="simcache-result-") as folder,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        for path in sorted(result.save(folder).iterdir()):
            archive.write(path, path.name)
    return buffer.getvalue()


def changed_description(description: str, changed: Mapping[str, Any]) -> str:
    """``description`` with the page's changes said after it, once: the scenario the page runs
    carries it (its report and its exported file then describe the cluster run, not the file's:
    review 65), and a description that says them already is kept as it is."""
    edits = "; ".join(f"{path} = {value}" for path, value in changed.items())
    said = f" (changed in the what-if page: {edits})"
    if not description:
        return f"changed: {edits}"
    return description if description.endswith(said) else description + said


def exported_scenario(
    scenario: simcache.Scenario, changed: Mapping[str, Any], duration: float, seed: int
) -> tuple[str, str]:
    """The file name (from the scenario's name) and the minimal TOML of the scenario as the page
    runs it: its ``changed`` settings applied, the page's duration and seed, and a description
    that names those changes.

    The file's checks (``[[expect]]`` and ``[check]``) were written for its own settings and run:
    after ``changed`` settings they are kept, as targets ``simcache check`` can still judge, under
    a comment at the file's head saying that their bounds and words (web's "WB+0, local flash
    only" after web is set to WB+1) may not describe the scenario as changed. Checks that no
    longer fit it (a window past the page's shorter run, a group or host that is gone) are left
    out, with the variants that no longer apply, and the comment says why: the file would not
    load with them.
    """
    current = scenario.with_duration(duration).with_seed(seed)
    if changed:
        current = current.model_copy(
            update={"description": changed_description(scenario.description, changed)}
        )
    current, notes = _checks_as_exported(current, list(changed), scenario.run.duration)
    text = minimal_scenario_toml(current)
    if notes:
        text = "".join(f"# {note}\n" for note in ["Exported from the what-if page.", *notes]) + text
    return f"{scenario_slug(scenario.name)}.toml", text


def _checks_as_exported(
    scenario: simcache.Scenario, changed: list[str], file_duration: float
) -> tuple[simcache.Scenario, list[str]]:
    """``scenario`` with the variants that still apply and the checks that still fit it, and what
    the file's head says of them: what was left out and why, or that the checks kept were written
    for settings since ``changed``."""
    notes = []
    gone = [name for name in scenario.variants if not _applies(scenario, name)]
    if gone:
        kept = {name: o for name, o in scenario.variants.items() if name not in gone}
        scenario = scenario.model_copy(update={"variants": kept})
        notes.append(f"Variants left out, as they no longer apply: {', '.join(gone)}.")
    if not (scenario.expect or scenario.check.observation):
        return scenario, notes
    problems = check_problems(scenario)
    if problems:
        path, message = problems[0]
        why = (
            f"they do not fit the page's shorter run ({scenario.run.duration:g} s of the file's "
            f"{file_duration:g} s)"
            if scenario.run.duration < file_duration
            else "they do not fit the scenario as changed"
        )
        notes.append(
            f"The file's checks ([[expect]] and [check]) are left out: {why}, and the file would "
            f"not load with them ({path}: {message})."
        )
        return scenario.model_copy(update={"expect": [], "check": CheckSpec()}), notes
    if changed:
        notes.append(
            f"Its checks ([[expect]] and [check]) were written for the file's settings; the page "
            f"changed {', '.join(changed)}, so their bounds and words (observation, tolerance) "
            "may not describe this scenario."
        )
    return scenario, notes


def _applies(scenario: simcache.Scenario, variant: str) -> bool:
    """Whether ``variant``'s overrides still make a valid scenario of ``scenario``."""
    try:
        scenario.variant(variant)
    except simcache.ScenarioError:
        return False
    return True
