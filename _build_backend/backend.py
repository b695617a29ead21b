"""The build backend (pyproject.toml): setuptools', asking only for the build tools a build uses.

``setup.py`` compiles with mypyc when ``SIMCACHE_COMPILE`` asks for it, which needs mypy, numpy
and librt (mypyc reads their types); the native engine needs Cython. A profile-guided build
(``SIMCACHE_PGO=native`` or ``1``: the test suite's install asks for it) also runs the package,
so it needs the runtime dependencies too. A build that compiles and trains nothing needs
setuptools alone, and its build environment skips installing numpy, scipy, pandas and pyarrow.
``setup.py`` reads the same settings through :func:`build_options`, :func:`native_requested` and
:func:`trains`.
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
"""``SIMCACHE_PGO`` when unset: ``0`` guides no compile, so a plain install stays within its two
minutes (its build environment then needs no runtime dependencies, and the native engine compiles
once); ``native`` profile-guides the native engine's C compile (trained on the scenario library:
5 to 10 % faster, bench/README.md, "The native engine at -O2, profile-guided"; about 100 s more of
install, "Install time of the first command"), as the README's test command asks; ``1`` every
extension the build compiles (mypyc's groups too)."""
PGO_CHOICES = ("0", "native", "1")
COMPILER = ["mypy>=1.20", "numpy>=1.26", "librt>=0.8"]
"""What mypyc needs besides setuptools (mypy 1.20: the first to compile librt's native reads)."""
NATIVE = ["cython>=3.0"]
"""What the native extensions need: Cython, for the native engine and event queue
(``simcache/native/_engine.pyx``, ``_queue.pyx``: issue 35)."""


def native_requested() -> bool:
    """Whether to build the optional Cython extensions (the native engine): on unless
    ``SIMCACHE_NATIVE=0``."""
    return os.environ.get("SIMCACHE_NATIVE", "1").strip() != "0"


def build_options() -> tuple[str, str]:
    """``SIMCACHE_COMPILE`` (what to compile) and ``SIMCACHE_PGO`` (what to profile-guide: one of
    :data:`PGO_CHOICES`; any other value stops the build, saying which it takes)."""
    compile_ = os.environ.get("SIMCACHE_COMPILE", COMPILE_DEFAULT).strip() or COMPILE_DEFAULT
    pgo = os.environ.get("SIMCACHE_PGO", PGO_DEFAULT).strip() or PGO_DEFAULT
    if pgo not in PGO_CHOICES:
        raise SystemExit(
            f"simcache: SIMCACHE_PGO={pgo!r}: give 0 (no profile), native (the native engine's "
            "compile, the default) or 1 (every compiled extension)"
        )
    return compile_, pgo


def trains(compile_: str, pgo: str, native: bool) -> bool:
    """Whether the build runs the training: it compiles something ``pgo`` profile-guides."""
    if pgo == "1":
        return native or compile_ != "0"
    return pgo == "native" and native


def build_requirements() -> list[str]:
    """What this build needs besides setuptools."""
    compile_, pgo = build_options()
    native = native_requested()
    needs = [*(COMPILER if compile_ != "0" else []), *(NATIVE if native else [])]
    if trains(compile_, pgo, native):
        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        # the training imports the package
        needs += tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    return needs


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *build_requirements()]


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [*_setuptools.get_requires_for_build_editable(config_settings), *build_requirements()]
