"""The modules that ``setup.py`` compiles with mypyc, in two groups (engine, estimate), and digests
of sources.

Standard library only, and no side effects: ``setup.py`` loads this file on
its own, before any of the package's dependencies are installed. How the
compiled modules are chosen at import time is in :mod:`simcache.native.choice`.
"""

from __future__ import annotations

import hashlib
import shutil
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "COMPILED_MODULES",
    "COMPILE_GROUPS",
    "ENGINE_MODULES",
    "ESTIMATE_MODULES",
    "NATIVE_SOURCES",
    "NOT_COMPILED",
    "RESULT_MODULES",
    "ROOT",
    "SHARED_LIBRARY_GLOB",
    "CompileGroup",
    "compiled_candidates",
    "copy_package",
    "native_engine_files",
    "package_modules",
    "source_digest",
    "source_path",
]

ROOT = Path(__file__).resolve().parents[2]  # the directory holding the `simcache` package

# The simulation engine: the event kernel, the workload streams, every model component and the
# physics they call, which carry nearly all of a simulation's CPU time. Every module of these
# folders is compiled: a module that runs per simulated event belongs in one of them, and one that
# does not belongs elsewhere.
ENGINE_PACKAGES = (
    "simcache.physics",
    "simcache.workloads",
    "simcache.sim",
    "simcache.sim.kernel",
    "simcache.sim.components",
    "simcache.sim.spindles",
)
# Modules of those folders that stay Python, each with its reason: their objects cross process
# boundaries (a check's or a sweep's workers), and instances of mypyc's native classes do not
# unpickle (a frozen dataclass refuses the attributes pickle sets; the others want their
# constructor's arguments).
NOT_COMPILED = {
    "simcache.sim.control": "Limits travel to a check's or a sweep's worker processes",
    "simcache.sim.memory": "reads the process's memory a few times a second, no hot path",
    "simcache.sim.stream": "a run's StreamStats travel back from the workers in its Result",
}

# The analytic estimate: compiled, its per-state Python work (state set-up, fixed point, timeline)
# runs faster (bench/README.md). It imports the engine group's physics as ordinary Python imports
# (below).
ESTIMATE_PACKAGES = ("simcache.estimate", "simcache.estimate.theory")


def package_modules(packages: tuple[str, ...], root: Path = ROOT) -> tuple[str, ...]:
    """Every module directly in each of ``packages`` (not their sub-packages, nor ``__init__``),
    sorted by name, but those of :data:`NOT_COMPILED`."""
    found = []
    for package in packages:
        folder = root.joinpath(*package.split("."))
        names = [
            f"{package}.{path.stem}"
            for path in sorted(folder.glob("*.py"))
            if path.stem != "__init__"
        ]
        found += [name for name in names if name not in NOT_COMPILED]
    return tuple(found)


ENGINE_MODULES = package_modules(ENGINE_PACKAGES)
ESTIMATE_MODULES = package_modules(ESTIMATE_PACKAGES)


class CompileGroup(NamedTuple):
    """Modules that ``setup.py`` compiles in one mypyc call, and that load all compiled or all from
    source.

    Within a group the compiled modules call each other directly, so they
    cannot be mixed with interpreted ones. Across groups they import each
    other as ordinary Python modules, so either group runs compiled whether
    the other one is compiled or not: a group whose compile failed, or whose
    sources were edited, falls back to Python alone. A group must not import
    another group's ``Final`` constants: mypyc inlines those values, which
    would outlive an edit to the other group. (A named tuple rather than a
    dataclass: ``setup.py`` loads this file outside ``sys.modules``, where
    dataclasses cannot resolve their postponed annotations.)
    """

    name: str
    modules: tuple[str, ...]

    @property
    def mypyc_name(self) -> str:
        """mypyc's name for the group: its shared library is the module ``<mypyc_name>__mypyc``
        beside the package."""
        return f"simcache_{self.name}"


COMPILE_GROUPS = (
    CompileGroup("engine", ENGINE_MODULES),
    CompileGroup("estimate", ESTIMATE_MODULES),
)

# Every compiled module, of every group.
COMPILED_MODULES = tuple(module for group in COMPILE_GROUPS for module in group.modules)

# Everything a sweep row depends on besides its inputs: the engine, and the code that resolves
# scenarios and turns a run into a row. A results store keys rows by their digest, so a resumed
# sweep never reuses rows computed by other code (simcache.runs.sweep).
SCENARIO_MODULES = ("simcache.spec.__init__", *package_modules(("simcache.spec",)))
# The results package whole: a row's verdict, warnings and bottleneck come from its validity and
# bottleneck rules, not only from the result's tables. A replayed trace is read by the traces
# package and the imported workloads (the trace's path is in the scenario, its reading is code).
RESULT_PACKAGES = (
    "simcache.base",
    "simcache.results",
    "simcache.traces",
    "simcache.traces.formats",
    "simcache.workloads.ingest",
)
RESULT_MODULES = (
    *COMPILED_MODULES,
    *SCENARIO_MODULES,
    *NOT_COMPILED,
    *package_modules(RESULT_PACKAGES),
    "simcache.runs.simulate",
    "simcache.runs.sweep",
    "simcache.runs.sweep_points",
    "simcache.runs.sweep_rows",  # a run reduced to its row (result_row)
    "simcache.runs.sweep_until",  # which seeds an until= sweep runs
    "simcache.runs.targets",  # a row's caveat kinds (caveat_kinds)
)
# The native engine's files a sweep's code digest covers (paths under ROOT), so that a row the
# native engine computed before a change of it is not reused: its Cython sources where the tree has
# them (a checkout, an sdist), else its built extensions (a wheel carries no sources).
NATIVE_SOURCES = (
    "simcache/native/_engine.pyx",
    "simcache/native/_queue.pyx",
    *sorted(
        f"simcache/native/engine/{path.name}"
        for path in (ROOT / "simcache" / "native" / "engine").glob("*.pxi")
    ),
)


def native_engine_files(root: Path = ROOT) -> tuple[str, ...]:
    """The native engine's files under ``root`` that a sweep's code digest covers: its sources
    (:data:`NATIVE_SOURCES`) when present, else its built extension modules (none when it is not
    built: the Python engine runs)."""
    if root.joinpath(NATIVE_SOURCES[0]).is_file():
        return NATIVE_SOURCES
    native = root / "simcache" / "native"
    return tuple(
        sorted(
            f"simcache/native/{path.name}"
            for suffix in EXTENSION_SUFFIXES
            for path in native.glob(f"_*{suffix}")
        )
    )


def source_path(module: str, root: Path = ROOT) -> Path:
    """The ``.py`` file of a module of the package under ``root``."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


# mypyc's shared libraries of the compiled groups (and of any earlier build): modules beside the
# package, not inside it.
SHARED_LIBRARY_GLOB = "*__mypyc*"


def compiled_candidates(module: str, root: Path = ROOT) -> list[Path]:
    """Where a module's compiled extension would sit next to its ``.py`` file, one path per
    suffix."""
    source = source_path(module, root)
    return [source.with_name(source.stem + suffix) for suffix in EXTENSION_SUFFIXES]


def source_digest(modules: tuple[str, ...], root: Path = ROOT, files: tuple[str, ...] = ()) -> str:
    """SHA-256 over the modules' names and sources, in order, then over ``files`` (paths under
    ``root``, such as :data:`NATIVE_SOURCES`), their paths and contents."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(module.encode() + b"\0" + source_path(module, root).read_bytes() + b"\0")
    for file in files:
        digest.update(file.encode() + b"\0" + root.joinpath(file).read_bytes() + b"\0")
    return digest.hexdigest()


def copy_package(destination: Path, root: Path = ROOT) -> None:
    """Copy the ``simcache`` package into ``destination``, compiled modules included, so it can run
    from there.

    The compiled modules need mypyc's shared library of their group, a module
    that sits beside the package rather than inside it; these are copied along.
    """
    shutil.copytree(
        root / "simcache", destination / "simcache", ignore=shutil.ignore_patterns("__pycache__")
    )
    for shared in root.glob(SHARED_LIBRARY_GLOB):
        shutil.copy2(shared, destination / shared.name)
