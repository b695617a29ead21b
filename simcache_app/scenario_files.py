"""Files for the page: the library in scenarios/, uploads, the edited scenario as TOML, results as a ZIP.

The edited scenario is written back as TOML by :func:`simcache.scenario.dump.scenario_toml`.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import simcache
from simcache.scenario import builtin_scenarios
from simcache.scenario.dump import scenario_toml

__all__ = ["DEFAULT_SCENARIO", "library_scenarios", "read_upload", "result_zip", "scenario_toml"]

DEFAULT_SCENARIO = "default"


def library_scenarios() -> dict[str, Path]:
    """The scenario files shipped in ``scenarios/`` (:func:`simcache.scenario.builtin_scenarios`), by stem, the default one first."""
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
    """What ``Result.save`` writes (records, series, summary, breakdown as CSV and Parquet, meta.json) as one ZIP."""
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="simcache-result-") as folder, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(result.save(folder).iterdir()):
            archive.write(path, path.name)
    return buffer.getvalue()
