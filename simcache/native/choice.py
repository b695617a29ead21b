"""Which code runs: the mypyc-compiled modules, or their Python sources, decided per compile group.

``setup.py`` compiles groups of modules (:data:`~simcache.native.sources.COMPILE_GROUPS`) to C
extension modules with mypyc when the package is installed: ``engine`` (the event loop, the workload
streams and every model component, which carry nearly all of a simulation's CPU time) with
``SIMCACHE_COMPILE=engine``, and ``estimate`` (the analytic estimate) too with
``SIMCACHE_COMPILE=1``; a plain install compiles nothing. Compiled, both run
faster (bench/README.md has by how much), with bit-identical results
(``tests/sim/test_engine_build.py`` checks that). The ``.py`` files stay the source of truth: they
are what you read, edit and profile.

A compiled module sits next to its ``.py`` file, and Python would import it
first even after the ``.py`` file has been edited. So at import time this
module compares, group by group, a digest of the group's sources with the one
``setup.py`` recorded when it compiled them (``simcache/native/compiled_digest.py``).
Only when they match are the group's compiled modules used; otherwise every
module of that group is loaded from its ``.py`` file (all of them: compiled
modules of one group call each other directly and cannot be mixed with
interpreted ones), and a warning names the group and says how to recompile.
The groups import each other as ordinary Python modules, so one group runs
compiled whether the other does or not.

Environment variables:

- ``SIMCACHE_PURE_PYTHON=1`` at run time: use the Python sources of every group
  even when the compiled modules are up to date (for profilers and debuggers,
  which cannot see inside compiled code).
- ``SIMCACHE_COMPILE`` at install time: 0 (the default) compiles nothing, ``engine`` the engine
  group, 1 both (see ``setup.py``).

``simcache/__init__.py`` imports this module before anything else, so the
choice is made before any compiled module is imported.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType

from simcache.native.sources import (
    COMPILE_GROUPS,
    ROOT,
    CompileGroup,
    compiled_candidates,
    source_digest,
    source_path,
)

__all__ = ["COMPILED", "ENGINE", "GROUPS", "EngineChoice", "choose"]

_REINSTALL = "reinstall to recompile them (`.venv/bin/pip install -e .`, same SIMCACHE_COMPILE)"


NATIVE_SOURCES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"_engine": ("_engine.pyx", "engine/*.pxi"), "_queue": ("_queue.pyx",)}
)
"""Each native (Cython) extension of ``simcache/native/`` and its sources, as globs in that folder:
what :func:`stale_native` compares the built extension with."""


def stale_native(extension_file: str | Path, sources: Sequence[str]) -> Path | None:
    """The first of a native extension's sources (``sources``: globs in its folder, as
    :data:`NATIVE_SOURCES` gives them) changed after the extension was built, by their files'
    times: a checkout edited, updated or switched since its install. None when none is newer, and
    where the sources are not there (a wheel ships the built extension only)."""
    built = Path(extension_file)
    built_at = built.stat().st_mtime
    for pattern in sources:
        for source in sorted(built.parent.glob(pattern)):
            if source.stat().st_mtime > built_at:
                return source
    return None


def native_extension(name: str) -> ModuleType | None:
    """The native extension ``simcache.native.<name>`` (a key of :data:`NATIVE_SOURCES`), or None:
    not built, or built before its sources last changed. That case is said once, in a warning that
    names the source and says how to rebuild; the Python engine and the kernel's own heap then run
    (the same results, slower), as for a group of :mod:`simcache.native.choice` whose sources
    changed."""
    if name in _NATIVE_CHECKED:
        return _NATIVE_CHECKED[name]
    module: ModuleType | None
    try:
        module = importlib.import_module(f"simcache.native.{name}")
    except ImportError:
        module = None
    if module is not None and module.__file__ is not None:
        stale = stale_native(module.__file__, NATIVE_SOURCES[name])
        if stale is not None:
            warnings.warn(
                f"simcache: the native extension {Path(module.__file__).name} was built before "
                f"{stale.relative_to(ROOT) if stale.is_relative_to(ROOT) else stale} last "
                "changed, so it is not used (the Python code runs: the same results, slower); "
                "reinstall (pip install -e . with the same SIMCACHE_ settings) to rebuild it",
                RuntimeWarning,
                stacklevel=2,
            )
            module = None
    _NATIVE_CHECKED[name] = module
    return module


_NATIVE_CHECKED: dict[str, ModuleType | None] = {}


def compiled_files(group: CompileGroup, root: Path = ROOT) -> list[Path]:
    """The compiled extension modules found next to a group's sources (any subset of them)."""
    found = (
        next((path for path in compiled_candidates(module, root) if path.exists()), None)
        for module in group.modules
    )
    return [path for path in found if path is not None]


@dataclass(frozen=True)
class EngineChoice:
    """The decision of :func:`choose` for one group: compiled or not, and why (``warning`` is
    ``None`` when all is as built)."""

    compiled: bool
    reason: str
    warning: str | None = None


def choose(
    group: CompileGroup,
    pure_python_requested: bool,
    compiled: int,
    recorded_digest: str | None,
    current_digest: str,
    shared_library: bool = True,
) -> EngineChoice:
    """Decide whether to load a group compiled.

    ``compiled``: how many of the group's modules have a compiled module on
    disk; ``recorded_digest``: the source digest ``setup.py`` compiled them
    from (``None`` if it recorded none); ``current_digest``: the digest of the
    group's sources now; ``shared_library``: whether mypyc's shared library of
    the group (a module beside the package, which every compiled module of the
    group imports) can be imported.
    """
    if compiled == 0:
        why = "installed without compiling it (SIMCACHE_COMPILE, or mypyc or gcc failed; pip -v)"
        return EngineChoice(False, why)
    if pure_python_requested:
        return EngineChoice(False, "SIMCACHE_PURE_PYTHON=1")
    modules = len(group.modules)
    slower = f"simcache: the {group.name} modules run from their Python sources (slower)"
    if compiled < modules:
        return EngineChoice(
            False,
            "compiled modules incomplete",
            f"{slower}: only {compiled} of the {modules} are compiled; {_REINSTALL}",
        )
    if recorded_digest != current_digest:
        warning = (
            f"{slower}: their sources changed since they were compiled; {_REINSTALL}, or set "
            "SIMCACHE_PURE_PYTHON=1 to silence this"
        )
        return EngineChoice(False, "sources changed since compiling", warning)
    if not shared_library:
        warning = (
            f"{slower}: their compiled group's shared library ({group.mypyc_name}__mypyc, next to "
            "the simcache package) cannot be "
            f"imported; copy it along with the package, or {_REINSTALL}"
        )
        return EngineChoice(False, "compiled modules without their shared library", warning)
    return EngineChoice(True, "compiled with mypyc from these sources")


class _SourcesFirst:
    """A meta-path finder that loads the given modules from their ``.py`` files, never from
    compiled ones."""

    def __init__(self, modules: frozenset[str], root: Path):
        self.modules = modules
        self.root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname, self.root))


def _recorded_build(group: CompileGroup) -> tuple[str | None, bool]:
    """The source digest ``setup.py`` recorded when it compiled a group, and whether the group's
    shared library can be imported."""
    try:
        # written by setup.py
        from simcache.native import (  # type: ignore[attr-defined,unused-ignore]
            compiled_digest as _compiled_digest,
        )
    except ImportError:
        return None, False
    # getattr: a digest file written by an older setup.py records no groups, which then count as not
    # recorded.
    recorded: dict[str, tuple[str, str]] = getattr(_compiled_digest, "GROUPS", {})
    if group.name not in recorded:
        return None, False
    digest, shared = recorded[group.name]
    return digest, importlib.util.find_spec(shared) is not None


def _choose_group(group: CompileGroup) -> EngineChoice:
    """The decision for one group in this process."""
    found = len(compiled_files(group))
    if found == 0:  # nothing compiled: skip hashing the sources
        return choose(group, False, 0, None, "")
    recorded, shared_library = _recorded_build(group)
    pure_python = os.environ.get("SIMCACHE_PURE_PYTHON") == "1"
    return choose(group, pure_python, found, recorded, source_digest(group.modules), shared_library)


def _load() -> dict[str, EngineChoice]:
    """Make the decision for every group and route the imports of the groups not compiled to
    their sources."""
    choices = {group.name: _choose_group(group) for group in COMPILE_GROUPS}
    from_sources = frozenset(
        module
        for group in COMPILE_GROUPS
        if not choices[group.name].compiled
        for module in group.modules
    )
    if from_sources:
        sys.meta_path.insert(0, _SourcesFirst(from_sources, ROOT))
    for choice in choices.values():
        if choice.warning is not None:
            warnings.warn(choice.warning, RuntimeWarning, stacklevel=3)
    return choices


def _describe(choices: Mapping[str, EngineChoice]) -> str:
    """One line for results and reports: "compiled (mypyc)" only when every group is, and why
    each group runs as it does."""
    kind = "compiled (mypyc)" if all(choice.compiled for choice in choices.values()) else "Python"
    reasons = {choice.reason for choice in choices.values()}
    # every group alike (as built, all pure Python, or installed without compiling)
    if len(reasons) == 1:
        return f"{kind}: {reasons.pop()}"
    # Mixed: the groups running from their sources first, since the line starts with "Python".
    ordered = sorted(choices.items(), key=lambda item: item[1].compiled)
    return f"{kind}: " + "; ".join(
        f"{name} compiled (mypyc)"
        if choice.compiled
        else f"{name} from its sources ({choice.reason})"
        for name, choice in ordered
    )


GROUPS: Mapping[str, EngineChoice] = MappingProxyType(_load())
"""Each compile group's choice by name (``"engine"``, ``"estimate"``): whether it runs compiled,
and why."""
COMPILED = all(choice.compiled for choice in GROUPS.values())
"""True when every group runs compiled (a group running from its sources makes this False)."""
ENGINE = _describe(GROUPS)
"""Which code runs and why, in one line starting "compiled (mypyc): " or "Python: " (results
carry it as ``meta["engine"]``)."""
