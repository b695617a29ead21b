"""The compiled groups: when each is used, and that they compute exactly what the Python sources
compute.

``setup.py`` compiles the groups of ``simcache.native.sources.COMPILE_GROUPS``
(``engine`` and ``estimate``) with mypyc, each on its own; ``simcache.native.choice``
uses a group's compiled modules only while its sources match the digest
recorded at compile time, whatever the other group does. The comparison tests
run the Python sources in a subprocess (``SIMCACHE_PURE_PYTHON=1``, or a copy
of the package with one group's source edited) and need an install that
compiled (``SIMCACHE_COMPILE=1``, as .ci/run sets, given gcc); without one they skip
and say why.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT, TESTS

from simcache.native import choice as _native
from simcache.native.sources import (
    COMPILE_GROUPS,
    COMPILED_MODULES,
    NATIVE_SOURCES,
    RESULT_MODULES,
    CompileGroup,
    copy_package,
    native_engine_files,
    source_digest,
    source_path,
)

NOT_COMPILED = f"not every group is compiled in this install ({_native.ENGINE})"
GROUP_IDS = [group.name for group in COMPILE_GROUPS]

# Prints which group runs compiled, where each compiled module was loaded from and whether the
# module named by argv[1] (if any) carries an edit, then the library's fingerprints
# (tests/golden.py: each scenario file simulated, the default past its vMotion, every scenario and
# variant estimated) unless argv[2] is "quick".
PROBE = """
import importlib, json, sys
from simcache.native import choice as _native
from simcache.native.sources import COMPILED_MODULES
edited = importlib.import_module(sys.argv[1]) if len(sys.argv) > 1 else None
out = {
    "engine": _native.ENGINE,
    "compiled": _native.COMPILED,
    "groups": {name: choice.compiled for name, choice in _native.GROUPS.items()},
    "files": {module: importlib.import_module(module).__file__ for module in COMPILED_MODULES},
    "edited": getattr(edited, "EDITED", False),
}
if sys.argv[2:] != ["quick"]:
    import golden
    out["fingerprints"] = golden.fingerprints()
print(json.dumps(out))
"""


def probe(
    tmp_path: Path, site: Path | None = None, args: tuple[str, ...] = (), pure_python: bool = False
) -> tuple[dict[str, object], str]:
    """Run :data:`PROBE` on the installed package, or on a copy of it in ``site``: its output and
    its warnings."""
    env = {key: value for key, value in os.environ.items() if key != "SIMCACHE_PURE_PYTHON"}
    if pure_python:
        env["SIMCACHE_PURE_PYTHON"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([*([str(site)] if site is not None else []), str(TESTS)])
    # From tmp_path: `python -c` puts the working directory first on sys.path, and a checkout's
    # holds its own package.
    command = [sys.executable, "-c", PROBE, *args]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result, done.stderr


@pytest.fixture(scope="module")
def compiled_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The installed package's probe with every group compiled (computed once for the comparisons
    below)."""
    if not _native.COMPILED:
        pytest.skip(NOT_COMPILED)
    result, _ = probe(tmp_path_factory.mktemp("compiled"))
    assert result["compiled"] is True, result["engine"]
    return result


# -- the choice
# --------------------------------------------------------------------------------------------


def test_choice_rules() -> None:
    group = CompileGroup("estimate", ("a", "b", "c"))
    modules = len(group.modules)
    nothing = _native.choose(group, False, 0, None, "abc")
    assert (
        not nothing.compiled and nothing.warning is None and "without compiling" in nothing.reason
    )
    as_built = _native.choose(group, False, modules, "abc", "abc")
    assert as_built.compiled and as_built.warning is None
    requested = _native.choose(group, True, modules, "abc", "abc")
    assert not requested.compiled and requested.warning is None  # asked for: no warning
    edited = _native.choose(group, False, modules, "abc", "abd")
    assert (
        not edited.compiled and edited.warning is not None and "pip install -e ." in edited.warning
    )
    assert "the estimate modules" in edited.warning  # the warning names the group
    unrecorded = _native.choose(group, False, modules, None, "abc")
    assert not unrecorded.compiled and unrecorded.warning is not None
    orphaned = _native.choose(group, False, modules, "abc", "abc", shared_library=False)
    assert (
        not orphaned.compiled
        and orphaned.warning is not None
        and "simcache_estimate__mypyc" in orphaned.warning
    )
    partial = _native.choose(group, False, modules - 1, "abc", "abc")
    assert (
        not partial.compiled
        and partial.warning is not None
        and f"{modules - 1} of the {modules}" in partial.warning
    )


def test_groups_partition_the_compiled_modules() -> None:
    """Each compiled module is in exactly one group, and a sweep's code digest covers every one
    of them."""
    assert [group.name for group in COMPILE_GROUPS] == ["engine", "estimate"]
    assert (
        len(set(COMPILED_MODULES))
        == len(COMPILED_MODULES)
        == sum(len(group.modules) for group in COMPILE_GROUPS)
    )
    assert set(COMPILED_MODULES) <= set(RESULT_MODULES)
    assert set(_native.GROUPS) == set(GROUP_IDS)
    assert all(choice.compiled for choice in _native.GROUPS.values()) == _native.COMPILED
    assert _native.ENGINE.startswith("compiled (mypyc): " if _native.COMPILED else "Python: ")


@pytest.mark.parametrize(
    "modules",
    [*(group.modules for group in COMPILE_GROUPS), RESULT_MODULES],
    ids=[*GROUP_IDS, "results"],
)
def test_digest_covers_every_source(tmp_path: Path, modules: tuple[str, ...]) -> None:
    # A group's digest (compiled or not) and a sweep's code digest (reused rows or not) must both
    # change when any one of their modules changes.
    copy_package(tmp_path)
    digests = {source_digest(modules, tmp_path)}
    for module in modules:
        path = source_path(module, tmp_path)
        path.write_text(path.read_text() + "\n")
        digests.add(source_digest(modules, tmp_path))
    assert len(digests) == len(modules) + 1


def test_a_sweeps_digest_covers_the_native_engine(tmp_path: Path) -> None:
    # A sweep store keys rows by the code that computed them; the native engine runs most of them,
    # so an edit of any of its Cython files must key rows afresh. A tree without its sources (a
    # wheel) covers its built extensions instead.
    copy_package(tmp_path)
    files = native_engine_files(tmp_path)
    assert files == NATIVE_SOURCES
    assert "simcache/native/engine/tier.pxi" in files
    digests = {source_digest(RESULT_MODULES, tmp_path, files)}
    for file in files:
        path = tmp_path / file
        path.write_text(path.read_text() + "\n")
        digests.add(source_digest(RESULT_MODULES, tmp_path, files))
    assert len(digests) == len(files) + 1
    for file in files:
        (tmp_path / file).unlink()
    assert all(
        file.startswith("simcache/native/_") and not file.endswith(".pyx")
        for file in native_engine_files(tmp_path)
    )


# The simcache modules a sweep's row computation imports that are not part of a row's result: the
# package folders' __init__ files, the build's bookkeeping, the store and the worker pool that
# carry rows, the scenario library's listing and the estimate (a row holds no estimate).
NOT_ROW_CODE = (
    "simcache.native.choice",
    "simcache.native.compiled_digest",
    "simcache.native.sources",
    "simcache.runs.sweep_store",
    "simcache.runs.workers",
    "simcache.spec.library",
)
SWEEP_IMPORTS = """
import sys
import simcache.runs.sweep as sweep
sweep.sweep("scenarios/default.toml", {"cluster.hosts": [4]}, duration=1.0, workers=1)
print("\\n".join(name for name, module in sys.modules.items()
    if name.startswith("simcache") and str(getattr(module, "__file__", "")).endswith(".py")))
"""


def test_a_sweeps_digest_covers_the_code_a_row_runs() -> None:
    # Every module a sweep imports to compute a row (its validity rules and bottleneck among them)
    # is in RESULT_MODULES, but those that carry rows or list scenarios.
    env = {**os.environ, "SIMCACHE_PURE_PYTHON": "1"}
    out = subprocess.run(
        [sys.executable, "-c", SWEEP_IMPORTS], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    loaded = {name for name in out.stdout.split() if not name.startswith("simcache.estimate")}
    packages = {name for name in loaded if (ROOT / name.replace(".", "/") / "__init__.py").exists()}
    missing = loaded - set(RESULT_MODULES) - packages - set(NOT_ROW_CODE)
    assert not missing


def test_no_group_imports_another_groups_final_constants() -> None:
    """mypyc inlines a ``Final`` constant's value where it is used: imported by another group,
    the value would outlive an edit to the module defining it, which only that module's group
    digest records."""
    group_of = {module: group.name for group in COMPILE_GROUPS for module in group.modules}
    finals = {
        module: {
            node.target.id
            for node in ast.parse(source_path(module).read_text()).body
            if isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and "Final" in ast.unparse(node.annotation)
        }
        for module in COMPILED_MODULES
    }
    for module in COMPILED_MODULES:
        for node in ast.walk(ast.parse(source_path(module).read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module in group_of
                and group_of[node.module] != group_of[module]
            ):
                assert not finals[node.module] & {alias.name for alias in node.names}, (
                    module,
                    node.module,
                )


@pytest.mark.parametrize("group", COMPILE_GROUPS, ids=GROUP_IDS)
def test_modules_loaded_as_chosen(group: CompileGroup) -> None:
    """Every module of a group comes from a compiled file when the group is compiled, and from
    its .py file when not."""
    compiled = _native.GROUPS[group.name].compiled
    for module in group.modules:
        file = Path(sys.modules[module].__file__ or "")
        assert (file.suffix != ".py") == compiled, (module, file, _native.ENGINE)


# -- compiled against Python
# -------------------------------------------------------------------------------


def test_compiled_groups_are_bit_identical_to_the_sources(
    tmp_path: Path, compiled_run: dict[str, object]
) -> None:
    """Every library scenario (2 s, or its own shorter run) and the default past its vMotion:
    the same records, series and totals, and every scenario and variant the same analytic
    estimate, bit for bit."""
    python, _ = probe(tmp_path, pure_python=True)
    assert python["groups"] == dict.fromkeys(GROUP_IDS, False), python["engine"]
    assert compiled_run["fingerprints"] == python["fingerprints"]


@pytest.mark.parametrize("edited", COMPILE_GROUPS, ids=GROUP_IDS)
def test_an_edited_group_runs_from_its_sources_and_the_other_stays_compiled(
    tmp_path: Path, edited: CompileGroup, compiled_run: dict[str, object]
) -> None:
    """A copy of the installed package with one source of a group edited: the edit takes effect
    in that group, with a warning naming it, the other group stays compiled and calls into it (or
    is called from it) as Python, and the library computes the same fingerprints."""
    site = tmp_path / "site"
    copy_package(site)
    module = edited.modules[-1]
    path = source_path(module, site)
    path.write_text(path.read_text() + "\nEDITED = True\n")
    mixed, warnings = probe(tmp_path, site, (module,))
    assert mixed["groups"] == {name: name != edited.name for name in GROUP_IDS}, mixed["engine"]
    assert mixed["edited"] is True
    files = mixed["files"]
    assert isinstance(files, dict)
    for group in COMPILE_GROUPS:
        for name in group.modules:
            file = Path(files[name])
            assert file.is_relative_to(site) and (file.suffix == ".py") == (group is edited), (
                name,
                file,
            )
    assert (
        f"the {edited.name} modules run from their Python sources" in warnings
        and "changed since" in warnings
    )
    (other,) = (group.name for group in COMPILE_GROUPS if group is not edited)
    assert f"the {other} modules" not in warnings
    assert str(mixed["engine"]).startswith(
        f"Python: {edited.name} from its sources"
    ) and f"{other} compiled" in str(mixed["engine"])
    assert mixed["fingerprints"] == compiled_run["fingerprints"]


@pytest.mark.skipif(not _native.COMPILED, reason=NOT_COMPILED)
def test_a_group_without_its_shared_library_runs_from_its_sources(tmp_path: Path) -> None:
    """What a failed C compile of one group's shared library leaves: that group runs from its
    sources, the other compiled.

    The copy's record names a shared library that does not exist (deleting the copy's own would not
    do: an editable install keeps the checkout, which holds the original, on ``sys.path``)."""
    site = tmp_path / "site"
    copy_package(site)
    record = site / "simcache" / "native" / "compiled_digest.py"
    record.write_text(
        record.read_text().replace("simcache_estimate__mypyc", "simcache_estimate_lost__mypyc")
    )
    result, warnings = probe(tmp_path, site, ("simcache.sim.engine", "quick"))
    assert result["groups"] == {"engine": True, "estimate": False}, result["engine"]
    assert "simcache_estimate__mypyc" in warnings and "the engine modules" not in warnings


def test_profile_training_runs_each_scenario_and_refuses_a_directory_without_the_default(
    tmp_path: Path,
) -> None:
    """``setup.py``'s profile-guided build trains on the scenario directory with ``python -m
    simcache.cli.training``: exit 0 after running every scenario (the default twice), 1 for a
    directory without ``default.toml`` (setup.py then compiles without a profile), 2 for a wrong
    command line."""
    from simcache.cli import training as _pgo_training

    source = (ROOT / "scenarios" / "default.toml").read_text()
    short = source.replace('duration = "20s"', 'duration = "1s"').replace(
        'warmup = "4s"', 'warmup = "0.2s"'
    )
    assert short.count('"1s"') == 1 and '"0.2s"' in short, (
        "scenarios/default.toml's run table changed: update this test"
    )
    (tmp_path / "default.toml").write_text(short)
    (tmp_path / "other.toml").write_text(short)
    assert _pgo_training.train(tmp_path) == 3
    assert _pgo_training.main([str(tmp_path)]) == 0
    assert _pgo_training.main([str(tmp_path / "nowhere")]) == 1
    assert _pgo_training.main([]) == 2
