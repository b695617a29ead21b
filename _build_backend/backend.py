"""The build backend (pyproject.toml): setuptools', asking only for the build tools a build uses.

``setup.py`` compiles with mypyc when ``SIMCACHE_COMPILE`` asks for it, which needs mypy, numpy
and librt (mypyc reads their types); a profile-guided build (``SIMCACHE_PGO=1``) also runs the
package, so it needs the runtime dependencies too. A build that compiles nothing needs
setuptools alone, and its build environment skips installing numpy, scipy, pandas and pyarrow.
``setup.py`` reads the same two settings through :func:`build_options`.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  # every hook, two of them replaced below

COMPILE_DEFAULT = "0"
"""``SIMCACHE_COMPILE`` when unset: 0 compiles nothing, 1 every group, else group names."""
PGO_DEFAULT = "0"
"""``SIMCACHE_PGO`` when unset: 1 for a profile-guided C compile."""
COMPILER = ["mypy>=1.20", "numpy>=1.26", "librt>=0.8"]
"""What mypyc needs besides setuptools (mypy 1.20: the first to compile librt's native reads)."""
NATIVE = ["cython>=3.0"]
"""What the native extensions need: Cython, for the native engine and event queue
(``simcache/native/_engine.pyx``, ``_queue.pyx``: issue 35)."""


def native_requested() -> bool:
    """Whether to build the optional Cython extensions (the native engine): on unless
    ``SIMCACHE_NATIVE=0``."""
    return os.environ.get("SIMCACHE_NATIVE", "1").strip() != "0"


def build_options() -> tuple[str, bool]:
    """``SIMCACHE_COMPILE`` (what to compile) and ``SIMCACHE_PGO`` (profile-guided or not)."""
    compile_ = os.environ.get("SIMCACHE_COMPILE", COMPILE_DEFAULT).strip() or COMPILE_DEFAULT
    return compile_, os.environ.get("SIMCACHE_PGO", PGO_DEFAULT) != "0"


def build_requirements() -> list[str]:
    """What this build needs besides setuptools."""
    compile_, pgo = build_options()
    native = list(NATIVE) if native_requested() else []
    if compile_ == "0":
        return native
    if not pgo:
        return [*COMPILER, *native]
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    runtime = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    return [*COMPILER, *native, *runtime]  # the training imports the package


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *build_requirements()]


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [*_setuptools.get_requires_for_build_editable(config_settings), *build_requirements()]
