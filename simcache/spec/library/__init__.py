"""Files shipped with the package: the scenario library, the example workloads and the what-if page.

In the repository they stay at the top, where people look for them: ``scenarios/*.toml``,
``examples/`` and ``app.py``. A wheel (``pip install .``, ``python -m build``) carries them in
this package: ``setup.py`` copies them to ``simcache/spec/library/scenarios/``,
``simcache/spec/library/examples/`` and ``simcache/spec/library/app.py``. An editable install or a
checkout has no copies: this package's ``__path__`` then also holds the repository's top
folder, so the same names find the files where they are. Either way they are looked up
through :mod:`importlib.resources` by package name, from any working directory.

A scenario that names another file by a relative path (a trace) finds it relative to the
scenario's own folder (:func:`simcache.spec.load.load_scenario`); the library keeps
``scenarios/`` and ``examples/`` side by side as in the repository, so
``../examples/FILE`` works from a built-in scenario too.
"""

from __future__ import annotations

import importlib.util
from importlib import resources
from pathlib import Path

__all__ = [
    "APP",
    "EXAMPLES",
    "SCENARIOS",
    "app_file",
    "example_files",
    "local_or_example",
    "scenario_files",
]

SCENARIOS = f"{__name__}.scenarios"
"""The package holding the scenario library (``scenarios/*.toml`` in the repository)."""
EXAMPLES = f"{__name__}.examples"
"""The package holding the example workload files (``examples/`` in the repository)."""
APP = f"{__name__}.app"
"""The what-if page (``app.py`` in the repository): a Streamlit script (it needs the app extra)."""

_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parents[2]
if not (_HERE / "scenarios").is_dir() and (_CHECKOUT / "pyproject.toml").is_file():
    __path__.append(str(_CHECKOUT))  # an editable install or a checkout: the files where they are


def _files(package: str, suffix: str) -> dict[str, Path]:
    """A data package's files whose names end in ``suffix``, by name, sorted (none if missing)."""
    try:
        folder = resources.files(package)
    except ModuleNotFoundError:
        return {}
    # A wheel installs as files, so each entry is a path; any other (a zipped install) is left out.
    entries = folder.iterdir()
    paths = [p for p in entries if isinstance(p, Path) and p.is_file() and p.name.endswith(suffix)]
    return {path.name: path for path in sorted(paths)}


def scenario_files() -> dict[str, Path]:
    """The built-in scenarios: the library's ``.toml`` files, by stem (``default``, ...)."""
    return {Path(name).stem: path for name, path in _files(SCENARIOS, ".toml").items()}


def example_files() -> dict[str, Path]:
    """The example workload files, by file name (``oltp.fio``, ``vm-burst.csv``)."""
    files = _files(EXAMPLES, "")
    return {name: path for name, path in files.items() if not name.startswith((".", "_"))}


def local_or_example(name: str | Path) -> Path:
    """``name`` as a path when a file is there; else the shipped example of that file name, if
    ``name`` is one (bare, or under ``examples/`` as the README writes it); else ``name``."""
    path = Path(name)
    try:
        if path.exists() or path.parent not in (Path(), Path("examples")):
            return path
    except (OSError, ValueError):  # a NUL byte, a name too long: the importer says what is wrong
        return path
    return example_files().get(path.name, path)


def app_file() -> Path | None:
    """The what-if page's script (for ``streamlit run``), found without importing it, or None."""
    spec = importlib.util.find_spec(APP)
    return None if spec is None or spec.origin is None else Path(spec.origin)
