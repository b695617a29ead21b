"""Which engine runs: the mypyc-compiled engine modules, or their Python sources.

The modules in :data:`~simcache._engine_sources.ENGINE_MODULES` (the event loop, the workload streams
and every model component) carry nearly all of a simulation's CPU time, and
the analytic estimate's. ``setup.py`` compiles them to C extension modules
with mypyc when the package is installed, which makes a run about twice as
fast with bit-identical results (``tests/test_engine_build.py`` checks that). The ``.py`` files stay
the source of truth: they are what you read, edit and profile.

A compiled module sits next to its ``.py`` file, and Python would import it
first even after the ``.py`` file has been edited. So at import time this
module compares a digest of the engine's sources with the one ``setup.py``
recorded when it compiled them (``simcache/_compiled_digest.py``). Only when
they match are the compiled modules used; otherwise every engine module is
loaded from its ``.py`` file (all of them: compiled modules call each other
directly and cannot be mixed with interpreted ones), and a warning says how
to recompile.

Environment variables:

- ``SIMCACHE_PURE_PYTHON=1`` at run time: use the Python sources even when the
  compiled modules are up to date (for profilers and debuggers, which cannot
  see inside compiled code).
- ``SIMCACHE_COMPILE=0`` at install time: do not compile (see ``setup.py``).

``simcache/__init__.py`` imports this module before anything else, so the
choice is made before any engine module is imported.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from simcache._engine_sources import ENGINE_MODULES, ROOT, compiled_candidates, source_digest, source_path

__all__ = ["COMPILED", "ENGINE", "EngineChoice", "choose"]

_REINSTALL = "reinstall to recompile them (`.venv/bin/pip install -e .`, about a minute)"


def compiled_files(root: Path = ROOT) -> list[Path]:
    """The compiled extension modules found next to the engine's sources (any subset of them)."""
    found = (next((path for path in compiled_candidates(module, root) if path.exists()), None) for module in ENGINE_MODULES)
    return [path for path in found if path is not None]


@dataclass(frozen=True)
class EngineChoice:
    """The decision of :func:`choose`: compiled or not, and why (``warning`` is ``None`` when all is as built)."""

    compiled: bool
    reason: str
    warning: str | None = None


def choose(
    pure_python_requested: bool, compiled: int, recorded_digest: str | None, current_digest: str, shared_library: bool = True
) -> EngineChoice:
    """Decide which engine to load.

    ``compiled``: how many of the :data:`ENGINE_MODULES` have a compiled
    module on disk; ``recorded_digest``: the source digest ``setup.py``
    compiled them from (``None`` if it recorded none); ``current_digest``: the
    digest of the sources now; ``shared_library``: whether mypyc's shared
    library of the compiled group (a module beside the package, which every
    compiled module imports) can be imported.
    """
    if compiled == 0:
        return EngineChoice(False, "installed without compiling (SIMCACHE_COMPILE=0, or mypyc or gcc failed: pip install -v shows why)")
    if pure_python_requested:
        return EngineChoice(False, "SIMCACHE_PURE_PYTHON=1")
    if compiled < len(ENGINE_MODULES):
        warning = (
            f"simcache: only {compiled} of the {len(ENGINE_MODULES)} engine modules are compiled, so the Python sources run "
            f"(about 2x slower); {_REINSTALL}"
        )
        return EngineChoice(False, "compiled modules incomplete", warning)
    if recorded_digest != current_digest:
        warning = (
            "simcache: the engine's sources changed since they were compiled, so the Python sources run "
            f"(about 2x slower); {_REINSTALL}, or set SIMCACHE_PURE_PYTHON=1 to silence this"
        )
        return EngineChoice(False, "sources changed since compiling", warning)
    if not shared_library:
        warning = (
            "simcache: the compiled engine's shared library (a *__mypyc* module next to the simcache package) cannot be "
            f"imported, so the Python sources run (about 2x slower); copy it along with the package, or {_REINSTALL}"
        )
        return EngineChoice(False, "compiled modules without their shared library", warning)
    return EngineChoice(True, "compiled with mypyc from these sources")


class _SourcesFirst:
    """A meta-path finder that loads the engine modules from their ``.py`` files, never from compiled ones."""

    def __init__(self, root: Path):
        self.root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in ENGINE_MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname, self.root))


def _recorded_build() -> tuple[str | None, bool]:
    """The source digest ``setup.py`` recorded when it compiled, and whether the shared library it names can be imported."""
    try:
        from simcache import _compiled_digest  # type: ignore[attr-defined,unused-ignore]  # written by setup.py
    except ImportError:
        return None, False
    shared = str(_compiled_digest.SHARED_LIBRARY)
    return str(_compiled_digest.SOURCE_DIGEST), importlib.util.find_spec(shared) is not None


def _load() -> EngineChoice:
    """Make the decision for this process and, unless compiled, route the engine's imports to the sources."""
    found = len(compiled_files())
    if found == 0:  # nothing compiled: skip hashing the sources
        return choose(False, 0, None, "")
    recorded, shared_library = _recorded_build()
    choice = choose(os.environ.get("SIMCACHE_PURE_PYTHON") == "1", found, recorded, source_digest(), shared_library)
    if not choice.compiled:
        sys.meta_path.insert(0, _SourcesFirst(ROOT))
        if choice.warning is not None:
            warnings.warn(choice.warning, RuntimeWarning, stacklevel=3)
    return choice


_CHOICE = _load()
COMPILED = _CHOICE.compiled
ENGINE = f"{'compiled (mypyc)' if COMPILED else 'Python'}: {_CHOICE.reason}"
