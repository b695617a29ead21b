"""Files for the page: the library in scenarios/, uploads, the edited scenario as TOML, results as a
ZIP.

The edited scenario is downloaded as :func:`exported_scenario` writes it: only what differs from the
profiles and defaults (:func:`simcache.spec.dump.minimal_scenario_toml`), with the page's duration
and seed.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import simcache
from simcache.spec import builtin_scenarios
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


def exported_scenario(
    scenario: simcache.Scenario, changed: Mapping[str, Any], duration: float, seed: int
) -> tuple[str, str]:
    """The file name (from the scenario's name) and the minimal TOML of the scenario as the page
    runs it: its ``changed`` settings applied, the page's duration and seed, and a description
    that names those changes."""
    current = scenario.with_duration(duration).with_seed(seed)
    if changed:
        edits = "; ".join(f"{path} = {value}" for path, value in changed.items())
        description = (
            f"{scenario.description} (changed in the what-if page: {edits})"
            if scenario.description
            else f"changed: {edits}"
        )
        current = current.model_copy(update={"description": description})
    return f"{scenario_slug(scenario.name)}.toml", minimal_scenario_toml(current)
