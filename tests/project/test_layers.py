"""The package is a stack of layers (docs/architecture.md): each imports only its own layer and
those below.

The layers, bottom to top, are ``LAYERS`` in tests/support/layers.py.

Checked from the sources (tests/support/import_graph.py), so an import placed inside a function
counts as much as one at the top of a module:

- no import cycle between modules at run time (at module level or inside functions);
- every import, run time or ``if TYPE_CHECKING:``, goes to the importer's own layer or one below it,
  and a type-checking import that points back (a component naming its owner's class) stays in its
  own folder;
- no module of the package imports the package root (``import simcache``, ``from simcache import
  ...``): the root is the public API, the top of the stack;
- only the sim layer imports SimPy, and only the kernel's clock touches SimPy's private names;
- no folder is crowded: at most 16 modules in a folder, at most 15 entries in ``simcache/``.
"""

from __future__ import annotations

import ast
from collections import defaultdict

import pytest
from support.import_graph import ROOT, Edge, cycles, edges, modules
from support.layers import LAYERS, layer_of

MAX_MODULES_PER_FOLDER = 16
MAX_ROOT_ENTRIES = 15


def folder_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def _describe(edge: Edge) -> str:
    return f"{edge.importer} (line {edge.line}) -> {edge.imported} [{edge.kind}]"


GRAPH = edges()
MODULES = modules()


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_no_import_cycle_at_run_time() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in GRAPH:
        if edge.kind == "runtime":
            graph[edge.importer].add(edge.imported)
    assert cycles(graph) == [], (
        "modules that import each other at run time (move the shared part down)"
    )


def test_imports_go_down_the_stack() -> None:
    upward = [
        _describe(edge)
        for edge in GRAPH
        if layer_of(edge.imported) > layer_of(edge.importer)
        and edge.importer not in ("simcache", "simcache.__main__")
    ]
    assert upward == [], "imports of a higher layer (see LAYERS in tests/support/layers.py)"


def test_type_checking_cycles_stay_in_their_folder() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in GRAPH:
        graph[edge.importer].add(edge.imported)
    crossing = [
        component
        for component in cycles(graph)
        if len({folder_of(m, MODULES[m].name == "__init__.py") for m in component}) > 1
    ]
    assert crossing == [], "modules of different folders that name each other"


def test_no_module_imports_the_package_root() -> None:
    rooted = [
        _describe(edge)
        for edge in GRAPH
        if edge.names_root
        and edge.importer.startswith("simcache.")
        and edge.importer != "simcache.__main__"
    ]
    assert rooted == [], (
        "the package root is the public API: import from the module that defines the name"
    )


@pytest.mark.parametrize("package", ["simcache", "simcache_app"])
def test_no_folder_is_crowded(package: str) -> None:
    counts: dict[str, int] = defaultdict(int)
    for module, path in MODULES.items():
        if module.startswith(package) and path.name != "__init__.py":
            counts[module.rpartition(".")[0]] += 1
    crowded = {folder: count for folder, count in counts.items() if count > MAX_MODULES_PER_FOLDER}
    assert crowded == {}, (
        f"folders of more than {MAX_MODULES_PER_FOLDER} modules: split them by what they hold"
    )
    entries = [
        p.name
        for p in (ROOT / "simcache").iterdir()
        if p.name != "__pycache__" and not p.name.endswith(".so")
    ]
    assert len(entries) <= MAX_ROOT_ENTRIES, sorted(entries)


def test_only_the_sim_layer_imports_simpy() -> None:
    """The engine's framework stays in the engine: the description, the physics and the estimate
    know nothing of it."""
    importers = []
    for module, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        if "simpy" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            if (
                any(name == "simpy" or name.startswith("simpy.") for name in names)
                and LAYERS[layer_of(module)][0] != "sim"
            ):
                importers.append(f"{module} (line {node.lineno})")
    assert importers == [], "SimPy imported outside simcache.sim"


# SimPy's private names the kernel relies on (simcache/sim/kernel/clock.py says what each is)
SIMPY_PRIVATE = {"_queue", "_eid", "_now", "_ok", "_value", "_defused"}
# The one module that reads and writes them on SimPy's objects (and checks them at import).
SIMPY_CONTACT = "simcache.sim.kernel.clock"
# Elsewhere, these names may only be a kernel Signal's own fields (named as SimPy's so that a
# waiting generator reads either the same way): each use, as written, with its module.
SIGNAL_FIELDS = {
    ("simcache.sim.kernel.signals", "self._ok"),  # Signal.__init__
    ("simcache.sim.kernel.signals", "self._value"),  # Signal.__init__ and Signal.value
    ("simcache.sim.components.vm", "signal._value"),  # a read hit's Signal, read natively
}


def test_only_the_clock_touches_simpys_private_names() -> None:
    """SimPy's internals are used in one module, checked against the installed SimPy when it is
    imported: a SimPy upgrade breaks there, with a message, not mid-run somewhere else."""
    touching = []
    seen = set()
    for module, path in MODULES.items():
        if module == SIMPY_CONTACT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in SIMPY_PRIVATE:
                use = (module, ast.unparse(node))
                seen.add(use)
                if use not in SIGNAL_FIELDS:
                    touching.append(f"{module} (line {node.lineno}): {use[1]}")
    assert touching == [], f"SimPy's private names used outside {SIMPY_CONTACT}"
    assert seen >= SIGNAL_FIELDS, "SIGNAL_FIELDS names uses that are gone: remove them"
