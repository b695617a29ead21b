"""Source lines at most 100 characters (issue 33): code, comments, docstrings and notebook cells.

ruff's ``line-length`` (pyproject.toml) is the same limit for the formatter; this test holds it for
a user who never runs ruff, and counts characters, not bytes (``±`` and ``µ`` are one each).
"""

from __future__ import annotations

import json
from pathlib import Path

from support.paths import ROOT

LIMIT = 100
FOLDERS = ("simcache", "simcache_app", "tests", "bench", "scenarios", "notebooks")
SKIP = {".venv", "build", "dist", ".git", "__pycache__", ".hypothesis", "node_modules"}


def sources() -> list[Path]:
    found = [ROOT / "app.py", ROOT / "setup.py"]
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            if not SKIP & set(path.relative_to(ROOT).parts):
                found.append(path)
    return sorted(found)


def long_lines(name: str, text: str) -> list[str]:
    return [
        f"{name}:{number}: {len(line)} characters"
        for number, line in enumerate(text.splitlines(), 1)
        if len(line) > LIMIT
    ]


def test_python_lines_fit() -> None:
    files = sources()
    assert len(files) > 200, "the walk found too few files: is ROOT the checkout?"
    problems = []
    for path in files:
        problems += long_lines(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_notebook_code_cells_fit() -> None:
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    problems = []
    for path in notebooks:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                problems += long_lines(f"{path.name} cell {index}", source)
    assert not problems, "\n".join(problems)
