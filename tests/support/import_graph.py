"""The import graph of the project's packages, read from their sources (nothing is imported).

Each edge says how the import is made: ``runtime`` (at module level or inside a function: both run)
or ``typing`` (inside ``if TYPE_CHECKING:``, seen by the type checker only).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("simcache", "simcache_app")


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    kind: str  # "runtime" or "typing"
    line: int
    # the statement imports the package root itself (``import simcache``, ``from simcache import
    # x``)
    names_root: bool = False


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the packages, by dotted name (a package by its own name)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of a module with its kind, at any depth (functions and classes
    too)."""

    def walk(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, kind
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for inner in child.body:
                    yield from walk(ast.Module(body=[inner], type_ignores=[]), "typing")
                for inner in child.orelse:
                    yield from walk(ast.Module(body=[inner], type_ignores=[]), kind)
            else:
                yield from walk(child, kind)

    yield from walk(tree, "runtime")


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` (a module or a module's attribute) lies in."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def edges(root: Path = ROOT) -> list[Edge]:
    """Every import between the packages' modules."""
    known = modules(root)
    found = []
    for module, path in known.items():
        is_package = path.name == "__init__.py"
        for node, kind in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = _target(alias.name, known)
                    if target is not None and target != module:
                        found.append(
                            Edge(module, target, kind, node.lineno, alias.name in PACKAGES)
                        )
                continue
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*base, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            for alias in node.names:
                target = _target(f"{prefix}.{alias.name}", known)
                if target is not None and target != module:
                    found.append(Edge(module, target, kind, node.lineno, prefix in PACKAGES))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each
    sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
