"""The compiled engine: when it is used, and that it computes exactly what the Python sources compute.

``setup.py`` compiles the modules of ``simcache._engine_sources.ENGINE_MODULES``
with mypyc; ``simcache._native`` uses them only while the sources match the
digest recorded at compile time. The comparison tests run the Python sources
in a subprocess (``SIMCACHE_PURE_PYTHON=1``) and need an install that
compiled (the README's commands do, given gcc); without one they skip and
say why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simcache import _native
from simcache._engine_sources import ENGINE_MODULES, RESULT_MODULES, copy_package, source_digest, source_path

NOT_COMPILED = f"the engine runs from its Python sources in this install ({_native.ENGINE})"

# Prints the library's fingerprints (tests/golden.py: each scenario file simulated, the default past its
# vMotion, every scenario and variant estimated), then which engine ran.
FINGERPRINT = """
import json, sys
import golden
from simcache import _native
print(json.dumps({"engine": _native.ENGINE, "compiled": _native.COMPILED, "fingerprints": golden.fingerprints()}))
"""
TESTS = Path(__file__).resolve().parent


def library_fingerprints(env_extra: dict[str, str]) -> dict[str, object]:
    env = {**os.environ, **env_extra}
    env["PYTHONPATH"] = str(TESTS)
    done = subprocess.run([sys.executable, "-c", FINGERPRINT], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


# -- the choice --------------------------------------------------------------------------------------------


def test_choice_rules() -> None:
    modules = len(ENGINE_MODULES)
    nothing = _native.choose(False, 0, None, "abc")
    assert not nothing.compiled and nothing.warning is None and "without compiling" in nothing.reason
    as_built = _native.choose(False, modules, "abc", "abc")
    assert as_built.compiled and as_built.warning is None
    requested = _native.choose(True, modules, "abc", "abc")
    assert not requested.compiled and requested.warning is None  # asked for: no warning
    edited = _native.choose(False, modules, "abc", "abd")
    assert not edited.compiled and edited.warning is not None and "pip install -e ." in edited.warning
    unrecorded = _native.choose(False, modules, None, "abc")
    assert not unrecorded.compiled and unrecorded.warning is not None
    orphaned = _native.choose(False, modules, "abc", "abc", shared_library=False)
    assert not orphaned.compiled and orphaned.warning is not None and "__mypyc" in orphaned.warning
    partial = _native.choose(False, modules - 1, "abc", "abc")
    assert not partial.compiled and partial.warning is not None and f"{modules - 1} of the {modules}" in partial.warning


@pytest.mark.parametrize("modules", [ENGINE_MODULES, RESULT_MODULES])
def test_digest_covers_every_source(tmp_path: Path, modules: tuple[str, ...]) -> None:
    # The engine's digest (compiled or not) and a sweep's code digest (reused rows or not) must both change
    # when any one of their modules changes.
    copy_package(tmp_path)
    digests = {source_digest(tmp_path, modules)}
    for module in modules:
        path = source_path(module, tmp_path)
        path.write_text(path.read_text() + "\n")
        digests.add(source_digest(tmp_path, modules))
    assert len(digests) == len(modules) + 1


def test_engine_modules_loaded_as_chosen() -> None:
    """Every engine module comes from a compiled file when the engine is compiled, and from its .py file when not."""
    for module in ENGINE_MODULES:
        file = Path(sys.modules[module].__file__ or "")
        assert (file.suffix != ".py") == _native.COMPILED, (module, file, _native.ENGINE)


# -- compiled against Python -------------------------------------------------------------------------------


@pytest.mark.skipif(not _native.COMPILED, reason=NOT_COMPILED)
def test_compiled_engine_is_bit_identical_to_the_sources() -> None:
    """Every library scenario (2 s) and the default past its vMotion: the same records, series and totals, and
    every scenario and variant the same analytic estimate, bit for bit."""
    compiled = library_fingerprints({})
    python = library_fingerprints({"SIMCACHE_PURE_PYTHON": "1"})
    assert compiled["compiled"] is True and python["compiled"] is False, (compiled["engine"], python["engine"])
    assert compiled["fingerprints"] == python["fingerprints"]


@pytest.mark.skipif(not _native.COMPILED, reason=NOT_COMPILED)
def test_edited_sources_run_instead_of_stale_compiled_modules(tmp_path: Path) -> None:
    """A copy of the installed package with one engine source edited: the edit takes effect, with a warning."""
    copy = tmp_path / "site"
    copy_package(copy)
    meter = copy / "simcache" / "model" / "meter.py"
    meter.write_text(meter.read_text() + "\nEDITED = True\n")
    script = "import simcache.model.meter as m, simcache._native as n; print(m.EDITED, n.COMPILED, m.__file__)"
    env = {**os.environ, "PYTHONPATH": str(copy)}
    env.pop("SIMCACHE_PURE_PYTHON", None)
    # From tmp_path: `python -c` puts the working directory first on sys.path, and a checkout's holds its own package.
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    edited, compiled, file = done.stdout.split()
    assert (edited, compiled) == ("True", "False")
    assert Path(file) == meter
    assert "sources changed since they were compiled" in done.stderr
