"""``simcache app``: the what-if page (``app.py``, shipped in :mod:`simcache.spec.library`) in
Streamlit.

It runs ``python -m streamlit run`` on the page's file wherever the package is installed,
with the settings of the repository's ``.streamlit/config.toml`` given on the command line
(that file is read only from the folder Streamlit starts in). Without the ``app`` extra it
says, in one line, what to install.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from simcache.spec.library import app_file

__all__ = ["APP_DESCRIPTION", "APP_EPILOG", "APP_EXTRA", "SETTINGS", "app_command", "run_app"]

APP_EXTRA = "pip install 'simcache[app]'"
"""What to install for the page: Streamlit and plotly."""

APP_DESCRIPTION = f"""\
Serve the what-if page in your browser (Streamlit): pick a built-in scenario or upload a
scenario file, move its parameters, sweep one of them, and see latency, backlog and
utilization charts, with the same engine and warnings as `simcache run`. The page is the
app.py shipped in the package, so this works from any folder. It needs the app extra
(Streamlit and plotly): {APP_EXTRA}. Stop it with Ctrl-C."""
"""``simcache app --help``'s description."""

APP_EPILOG = """\
Streamlit's own options follow the command and are passed to `streamlit run`, e.g.:
  simcache app --server.port=8502              another port (the default is 8501)
  simcache app --server.address=0.0.0.0        reachable from other machines
  simcache app --server.headless=true          do not open a browser (a server, a container)
The page opens at http://localhost:8501 (or the port given). `streamlit run --help` lists
every option."""
"""``simcache app --help``'s examples of Streamlit options."""

SETTINGS = (
    "--server.fileWatcherType=none",  # watching the virtual environment's modules burns a core
    "--server.runOnSave=false",
    "--browser.gatherUsageStats=false",
    "--client.toolbarMode=minimal",
)
"""``.streamlit/config.toml``'s settings as options of ``streamlit run``
(tests/project/test_install.py)."""


def missing_extra() -> str | None:
    """The one-line error when the page cannot start here, or None when it can."""
    missing = [name for name in ("streamlit", "plotly") if importlib.util.find_spec(name) is None]
    if missing:
        return f"simcache app needs {' and '.join(missing)}: {APP_EXTRA}"
    if app_file() is None:
        return (
            "this install has no what-if page (simcache/spec/library/app.py); reinstall: "
            f"{APP_EXTRA}"
        )
    return None


def app_command(page: Path, options: Sequence[str]) -> list[str]:
    """The command that serves ``page``; ``options`` (Streamlit's: ``--server.port=8502``) win."""
    return [sys.executable, "-m", "streamlit", "run", str(page), *SETTINGS, *options]


def run_app(options: Sequence[str]) -> int:
    """Serve the page until Streamlit stops (Ctrl-C); without the app extra, a one-line error."""
    problem = missing_extra()
    page = app_file()
    if problem is not None or page is None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    command = app_command(page, options)
    if os.name == "posix":  # Streamlit takes over this process: Ctrl-C and SIGTERM reach it alone
        sys.stdout.flush()
        os.execv(command[0], command)
    return subprocess.call(command)
