"""Build script: everything is in pyproject.toml except compiling the engine with mypyc.

The modules listed in ``simcache/_engine_sources.py`` (the event loop, workloads,
model components and the analytic estimate) are compiled to C extension
modules, which runs a simulation about twice as fast with bit-identical
results. Building them takes about a minute and a half and needs a C
compiler (gcc and the Python headers).

- ``SIMCACHE_COMPILE=0 pip install -e .`` installs without compiling.
- If mypyc or the C compiler fails, the install still succeeds and the
  Python sources run (the extensions are optional).

Next to the compiled modules this writes ``simcache/_compiled_digest.py``,
the digest of the sources they were compiled from; ``simcache/_native.py``
uses the compiled modules only while the sources still match it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from setuptools import setup

ROOT = Path(__file__).resolve().parent
DIGEST_FILE = ROOT / "simcache" / "_compiled_digest.py"
# Commands that build extension modules; metadata-only runs of this script (egg_info, ...) skip mypyc.
BUILD_COMMANDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install"}


def load_engine_sources() -> ModuleType:
    """``simcache/_engine_sources.py`` read on its own (importing the package would need its dependencies)."""
    spec = importlib.util.spec_from_file_location("simcache_engine_sources", ROOT / "simcache" / "_engine_sources.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def remove_compiled(native: ModuleType) -> None:
    """Delete an earlier build's compiled engine from the source tree (an editable install puts it there)."""
    DIGEST_FILE.unlink(missing_ok=True)
    for module in native.ENGINE_MODULES:
        for compiled in native.compiled_candidates(module, ROOT):
            compiled.unlink(missing_ok=True)
    for shared in ROOT.glob(native.SHARED_LIBRARY_GLOB):
        shared.unlink()


def engine_extensions() -> list[object]:
    """mypyc's extension modules for the engine, or none when not compiling."""
    if not BUILD_COMMANDS.intersection(sys.argv[1:]):
        return []
    native = load_engine_sources()
    if os.environ.get("SIMCACHE_COMPILE", "1") == "0":
        remove_compiled(native)
        return []
    sources = [str(native.source_path(module, ROOT).relative_to(ROOT)) for module in native.ENGINE_MODULES]
    # Type information for mypyc only: third-party packages are not installed while this builds, so their
    # imports are taken as Any, and errors in modules outside the compiled set are not reported.
    options = ["--ignore-missing-imports", "--follow-imports=silent", "--config-file="]
    try:
        from mypyc.build import mypycify

        extensions = mypycify(options + sources, opt_level="3", debug_level="0")
    except (Exception, SystemExit) as error:  # mypyc reports type errors by exiting: a newer mypy may be stricter
        print(f"simcache: not compiling the engine ({error!r}); the Python sources will run", file=sys.stderr)
        remove_compiled(native)
        return []
    for extension in extensions:
        extension.optional = True  # a failed compile leaves the Python sources in charge, not a failed install
    (shared,) = [extension.name for extension in extensions if extension.name.endswith("__mypyc")]
    # The digest names the new sources from here on: an earlier build's modules must not outlive a C compile
    # that fails (optional extensions), or they would pass for these sources' and run stale code.
    remove_compiled(native)
    DIGEST_FILE.write_text(
        '"""Written by setup.py: what the compiled engine modules were built from, and the shared library they need."""\n\n'
        f'SOURCE_DIGEST = "{native.source_digest(ROOT)}"\n'
        f'SHARED_LIBRARY = "{shared}"\n'
    )
    return extensions


setup(ext_modules=engine_extensions())
