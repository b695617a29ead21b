"""The engine modules that ``setup.py`` compiles with mypyc, and a digest of their sources.

Standard library only, and no side effects: ``setup.py`` loads this file on
its own, before any of the package's dependencies are installed. How the
compiled modules are chosen at import time is in :mod:`simcache._native`.
"""

from __future__ import annotations

import hashlib
import shutil
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

__all__ = [
    "ENGINE_MODULES",
    "RESULT_MODULES",
    "ROOT",
    "SHARED_LIBRARY_GLOB",
    "compiled_candidates",
    "copy_package",
    "source_digest",
    "source_path",
]

# Compiled together, and loaded all compiled or all from source: the compiled modules call each other directly.
# The analytic estimate is among them: it imports the model's link and array arithmetic, and compiled it runs
# its per-state Python work (state set-up, fixed point, timeline) about twice as fast.
ENGINE_MODULES = (
    "simcache.estimate.queueing",
    "simcache.estimate.numeric",
    "simcache.estimate.stations",
    "simcache.estimate.chains",
    "simcache.estimate.services",
    "simcache.estimate.batches",
    "simcache.estimate.schedule",
    "simcache.estimate.paths",
    "simcache.estimate.state",
    "simcache.estimate.mva_step",
    "simcache.estimate.network",
    "simcache.estimate.readcache",
    "simcache.estimate.layout",
    "simcache.estimate.solver",
    "simcache.estimate.timeline",
    "simcache.estimate.result",
    "simcache.collect",
    "simcache.engine",
    "simcache.workload",
    "simcache.physics",
    "simcache.model.array",
    "simcache.model.cache",
    "simcache.model.destager",
    "simcache.model.detached",
    "simcache.model.host",
    "simcache.model.kernel",
    "simcache.model.link",
    "simcache.model.meter",
    "simcache.model.randomness",
    "simcache.model.tier",
    "simcache.model.vm",
)

ROOT = Path(__file__).resolve().parent.parent  # the directory holding the `simcache` package

# Everything a sweep row depends on besides its inputs: the engine, and the code that resolves scenarios and
# turns a run into a row. A results store keys rows by their digest, so a resumed sweep never reuses rows
# computed by other code (simcache.sweep).
SCENARIO_MODULES = tuple(
    f"simcache.scenario.{name}"
    for name in ("__init__", "fields", "components", "workload", "events", "checks", "messages", "model", "load")
)
RESULT_MODULES = (*ENGINE_MODULES, *SCENARIO_MODULES, "simcache.units", "simcache.results", "simcache.metrics", "simcache.sweep")


def source_path(module: str, root: Path = ROOT) -> Path:
    """The ``.py`` file of an engine module under ``root``."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


# mypyc's shared library of the compiled group: a module beside the package, not inside it.
SHARED_LIBRARY_GLOB = "*__mypyc*"


def compiled_candidates(module: str, root: Path = ROOT) -> list[Path]:
    """Where an engine module's compiled extension would sit next to its ``.py`` file, one path per suffix."""
    source = source_path(module, root)
    return [source.with_name(source.stem + suffix) for suffix in EXTENSION_SUFFIXES]


def source_digest(root: Path = ROOT, modules: tuple[str, ...] = ENGINE_MODULES) -> str:
    """SHA-256 over the modules' names and sources, in order (by default the engine's)."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(module.encode() + b"\0" + source_path(module, root).read_bytes() + b"\0")
    return digest.hexdigest()


def copy_package(destination: Path, root: Path = ROOT) -> None:
    """Copy the ``simcache`` package into ``destination``, compiled engine included, so it can run from there.

    The compiled modules need mypyc's shared library of the group, a module
    that sits beside the package rather than inside it; it is copied along.
    """
    shutil.copytree(root / "simcache", destination / "simcache", ignore=shutil.ignore_patterns("__pycache__"))
    for shared in root.glob(SHARED_LIBRARY_GLOB):
        shutil.copy2(shared, destination / shared.name)
