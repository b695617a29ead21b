"""The build backend's settings (``_build_backend/backend.py``): what ``SIMCACHE_COMPILE``,
``SIMCACHE_NATIVE`` and ``SIMCACHE_PGO`` ask of a build, and what its build environment then
installs. The builds themselves run in ``.ci/run`` (the editable install and the wheel)."""

from __future__ import annotations

import importlib.util
import tomllib
from types import ModuleType

import pytest
from support.paths import ROOT

SETTINGS = ("SIMCACHE_COMPILE", "SIMCACHE_NATIVE", "SIMCACHE_PGO")


def backend() -> ModuleType:
    """``_build_backend/backend.py`` read on its own, as pip's build frontend loads it."""
    spec = importlib.util.spec_from_file_location(
        "simcache_build_backend_test", ROOT / "_build_backend" / "backend.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No build setting from the environment this test runs in."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def runtime_dependencies() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def test_by_default_the_native_engine_is_built_once_without_a_profile(settings):
    """Unset, a build compiles no mypyc group and builds the native engine without training it
    (the README's first command within its two minutes): the build environment needs Cython
    alone, none of the package's dependencies."""
    build = backend()
    assert build.build_options() == ("0", "0")
    assert build.native_requested()
    assert build.build_requirements() == build.NATIVE


def test_the_readme_test_command_asks_for_the_profile_guided_native_engine():
    """The suite's install (the README's test command, which .ci/run runs as written) trains the
    native engine's compile, as the engine benchmark's figures are measured on it (what its build
    environment installs: the parametrized case below)."""
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if "pytest -q" in line)
    assert "SIMCACHE_PGO=native" in command
    assert command in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize(
    ("compile_", "pgo", "native", "trains"),
    [
        ("0", "native", True, True),
        ("0", "native", False, False),  # nothing native to guide
        ("1", "native", False, False),  # mypyc's groups are guided only by PGO=1
        ("0", "0", True, False),
        ("1", "0", True, False),
        ("1", "1", False, True),
        ("0", "1", True, True),
        ("0", "1", False, False),  # nothing compiled at all
    ],
)
def test_the_training_runs_when_something_built_is_guided(compile_, pgo, native, trains):
    assert backend().trains(compile_, pgo, native) is trains


@pytest.mark.parametrize(
    ("environment", "needs"),
    [
        ({}, ["native"]),
        ({"SIMCACHE_PGO": "0"}, ["native"]),
        ({"SIMCACHE_PGO": "native"}, ["native", "runtime"]),
        ({"SIMCACHE_PGO": "0", "SIMCACHE_NATIVE": "0"}, []),
        ({"SIMCACHE_NATIVE": "0"}, []),
        ({"SIMCACHE_COMPILE": "1", "SIMCACHE_PGO": "0"}, ["compiler", "native"]),
        ({"SIMCACHE_COMPILE": "engine"}, ["compiler", "native"]),
        (
            {"SIMCACHE_COMPILE": "engine", "SIMCACHE_PGO": "native"},
            ["compiler", "native", "runtime"],
        ),
        ({"SIMCACHE_COMPILE": "1", "SIMCACHE_PGO": "1"}, ["compiler", "native", "runtime"]),
    ],
)
def test_the_build_environment_installs_what_the_build_uses(settings, environment, needs):
    for name, value in environment.items():
        settings.setenv(name, value)
    build = backend()
    parts = {"compiler": build.COMPILER, "native": build.NATIVE, "runtime": runtime_dependencies()}
    assert build.build_requirements() == [item for part in needs for item in parts[part]]


def test_an_unknown_pgo_setting_stops_the_build_saying_what_it_takes(settings):
    settings.setenv("SIMCACHE_PGO", "yes")
    with pytest.raises(SystemExit) as stopped:
        backend().build_options()
    message = str(stopped.value)
    assert "SIMCACHE_PGO='yes'" in message
    assert all(choice in message for choice in ("0 (no profile)", "native", "1 (every"))
