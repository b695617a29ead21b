"""docs/architecture.md against the code: every module it names exists, and it names every module.

The page names modules in backticks, rooted at the repository (``simcache/physics/cluster.py``,
``tests/test_estimate.py``, ``setup.py``) or relative to the package (``model/tier.py``,
``engine.py``, ``estimate/``). A module that is renamed, moved or added without the page
following fails here, so the page cannot go stale silently.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "simcache"
DOC = ROOT / "docs" / "architecture.md"

# The digest file setup.py writes at install time: the page names it, but a source tree may not have it.
GENERATED = "_compiled_digest.py"
# Modules the page need not name: package markers, and the generated file.
NOT_DOCUMENTED = {"__init__.py", GENERATED}

_CODE = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"[\w.]+(?:/[\w.]+)*(?:\.py|/)")
# A dotted name such as `physics.peer_port` or `simcache.native.choice.ENGINE`: a module, then one attribute.
_DOTTED = re.compile(r"(?:simcache\.)?((?:_?[a-z]\w*\.)*_?[a-z]\w*)\.(\w+)")


def _code_spans() -> list[str]:
    return _CODE.findall(DOC.read_text(encoding="utf-8"))


def _named_paths() -> set[str]:
    """Every backticked file or folder path on the page, as written."""
    return {span for span in _code_spans() if _PATH.fullmatch(span)}


def _resolve(path: str) -> Path | None:
    """The file or folder ``path`` names: from the repository root, else from the package; None if neither."""
    for base in (ROOT, PACKAGE):
        candidate = base / path
        if candidate.exists():
            return candidate
    return None


def _package_modules() -> list[str]:
    """Every module of the package, relative to ``simcache/`` (``model/tier.py``), except the undocumented ones."""
    return sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name not in NOT_DOCUMENTED and "__pycache__" not in path.parts
    )


def test_the_page_names_paths() -> None:
    """The parser finds the page's module names (so the checks below are not vacuous)."""
    named = _named_paths()
    assert {"simcache/physics/cluster.py", "model/tier.py", "engine.py", "estimate/solver.py"} <= named | {
        path.removeprefix("simcache/") for path in named
    }


@pytest.mark.parametrize("path", sorted(_named_paths()))
def test_each_named_path_exists(path: str) -> None:
    if Path(path).name == GENERATED:
        return
    assert _resolve(path) is not None, f"docs/architecture.md names `{path}`, which is neither in the repository nor in simcache/"


@pytest.mark.parametrize("module", _package_modules())
def test_each_module_is_named(module: str) -> None:
    named = {path.removeprefix("simcache/") for path in _named_paths()}
    assert module in named, f"docs/architecture.md does not name `{module}` (or `simcache/{module}`): say what it holds"


def _dotted_names() -> list[tuple[str, str]]:
    """Backticked ``module.attribute`` names whose module is one of the package's modules."""
    modules = {module.removesuffix(".py").replace("/", ".") for module in _package_modules()}
    modules |= {"scenario", "estimate", "model", "profiles"}
    found = set()
    for span in _code_spans():
        match = _DOTTED.fullmatch(span)
        if match and match.group(2) != "py" and match.group(1) in modules:
            found.add((match.group(1), match.group(2)))
    return sorted(found)


def test_the_page_names_attributes() -> None:
    assert ("physics", "peer_port") in _dotted_names()


@pytest.mark.parametrize(("module", "attribute"), _dotted_names())
def test_each_named_attribute_exists(module: str, attribute: str) -> None:
    """`engine._sampler`, `collect.records_frame` and the like name something that is there."""
    assert hasattr(importlib.import_module(f"simcache.{module}"), attribute), f"docs/architecture.md names `{module}.{attribute}`"


def test_public_api_table_matches_the_package() -> None:
    """The public API table lists exactly ``simcache.__all__``."""
    import simcache

    text = DOC.read_text(encoding="utf-8")
    table = text.split("## Public API", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    listed = {re.match(r"\| `(\w+)", row).group(1) for row in rows}  # type: ignore[union-attr]
    assert listed == set(simcache.__all__)


def _imports(module: Path) -> set[str]:
    """The modules ``module`` imports, by absolute name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


OFF_THE_SIMULATOR = [m for m in _package_modules() if m.startswith(("scenario/", "estimate/")) or m in ("physics.py", "array_physics.py")]


@pytest.mark.parametrize("module", OFF_THE_SIMULATOR)
def test_description_physics_and_estimate_stay_off_the_simulator(module: str) -> None:
    """What the page says these must not do: import SimPy or the simulated components."""
    forbidden = {name for name in _imports(PACKAGE / module) if name == "simpy" or name.startswith(("simpy.", "simcache.sim.components"))}
    assert not forbidden, f"simcache/{module} imports {sorted(forbidden)}"
