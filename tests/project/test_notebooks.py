"""The capacity-planning notebooks in notebooks/: every one runs end to end, and none is stored with
outputs.

Each notebook reads its run length and seeds from the environment
(``SIMCACHE_NOTEBOOK_DURATION`` seconds per run, ``SIMCACHE_NOTEBOOK_SEEDS``,
``SIMCACHE_NOTEBOOK_WORKERS``); the tests set short values so a notebook runs
in seconds. The kernel is this interpreter (``sys.executable``), through a
kernelspec written to a temporary folder, so the notebooks import the simcache
of this environment whatever kernels the machine has installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT

nbformat = pytest.importorskip(
    "nbformat", reason="notebook tests need the notebooks extra: pip install -e '.[notebooks]'"
)
nbclient = pytest.importorskip(
    "nbclient", reason="notebook tests need the notebooks extra: pip install -e '.[notebooks]'"
)
pytest.importorskip(
    "ipykernel", reason="notebook tests need the notebooks extra: pip install -e '.[notebooks]'"
)
pytest.importorskip(
    "matplotlib", reason="notebook tests need the notebooks extra: pip install -e '.[notebooks]'"
)

FOLDER = ROOT / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))
KERNEL = "simcache-test-python"
SHORT_RUN = {
    "SIMCACHE_NOTEBOOK_DURATION": "2",  # simulated seconds per run
    # two seeds: the smallest number that gives a confidence interval
    "SIMCACHE_NOTEBOOK_SEEDS": "2",
    # sweeps in the kernel's own process: no pool start-up per sweep
    "SIMCACHE_NOTEBOOK_WORKERS": "1",
}


def test_there_are_planning_notebooks() -> None:
    assert len(NOTEBOOKS) >= 4, (
        f"expected at least four notebooks in {FOLDER}, found {[p.name for p in NOTEBOOKS]}"
    )


@pytest.fixture
def kernel_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernelspec whose argv is this interpreter, found first through JUPYTER_PATH."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "simcache tests", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    # quiets the debugger's frozen-modules warning
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    for name, value in SHORT_RUN.items():
        monkeypatch.setenv(name, value)
    return KERNEL


def _text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(
    path: Path, kernel_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Importing streamlit (the app tests do) sets MPLBACKEND=Agg for the whole process; the kernel
    # inherits the environment and would then draw no inline images.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=kernel_name,
        timeout=600,
        resources={"metadata": {"path": str(FOLDER)}},
    )
    try:
        client.execute()
    # keep the executed copy next to the test's other output, for a look at the plots or the failure
    finally:
        nbformat.write(notebook, tmp_path / path.name)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    images = [
        o for cell in code for o in cell.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert images, f"{path.name} drew no plot"
    conclusion = _text(code[-1])
    assert "Conclusion" in conclusion, (
        f"{path.name}: the last cell should print the computed conclusion, printed {conclusion!r}"
    )


def _stored_versions(path: Path) -> dict[str, str]:
    """The notebook as in the working tree, plus the version staged in git's index when it is
    tracked."""
    versions = {"working tree": path.read_text("utf-8")}
    try:
        staged = subprocess.run(
            ["git", "show", f":{path.relative_to(ROOT).as_posix()}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:  # no git: the working tree is all there is
        return versions
    if staged.returncode == 0:
        versions["git index"] = staged.stdout
    return versions


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    for where, text in _stored_versions(path).items():
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            assert cell.outputs == [], (
                f"{path.name} ({where}): cell {index} has outputs; save the notebook stripped"
            )
            assert cell.execution_count is None, (
                f"{path.name} ({where}): cell {index} has an execution count; save it stripped"
            )
