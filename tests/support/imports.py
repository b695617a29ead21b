"""Reading a file with one format module, as ``import_workload`` does with the format it guessed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from simcache.workloads.ingest.imported import Imported


def imported_by(module: ModuleType, path: Path, options: Mapping[str, Any]) -> Imported:
    """What ``module`` (one of simcache.traces.formats) reads from ``path``, made ready to become
    a scenario."""
    return Imported.of(module.read(path, options))
