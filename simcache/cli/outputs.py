"""The command line's output paths, checked before any work starts: a file a command writes
(``-o``, ``--out``, ``--report``) must go in a folder that exists and can be written, and a folder
it fills (``run --out``) must be one, or not exist yet under a folder that can be written. A path
that cannot be used is an :class:`OutputPathError` (exit 2, the option, the reason and the fix),
not a traceback after the work is done (review 65: a finished sweep's table and 26 s of ``fit``
were lost that way)."""

from __future__ import annotations

import os
from pathlib import Path

from simcache.base.errors import ScenarioError

__all__ = ["OutputPathError", "output_file", "output_folder"]


class OutputPathError(ScenarioError):
    """An output path a command cannot write; ``source`` is the path, the one problem's field the
    option that gave it."""

    HEADING = "cannot write there"

    @classmethod
    def at(cls, path: object, option: str, problem: str, fix: str) -> OutputPathError:
        return cls(str(path), [(option, f"{problem}; {fix}")])


def output_file(path: str | os.PathLike[str], option: str) -> Path:
    """``path`` as a file ``option`` writes (or overwrites), checked: not a folder, in a folder
    that exists and can be written, itself writable when it exists. Creates nothing."""
    path = Path(path)
    if path.is_dir():
        raise OutputPathError.at(
            path, option, "is a folder, not a file", f"give {option} a file path in it"
        )
    _folder_ready(path.parent, path, option)
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputPathError.at(
            path, option, "exists and cannot be written", f"give {option} another path"
        )
    return path


def output_folder(path: str | os.PathLike[str], option: str) -> Path:
    """``path`` as a folder ``option`` fills with files, checked: a folder, or nothing yet under a
    folder that can be written (the command creates it and the folders between). Creates
    nothing."""
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise OutputPathError.at(
                path,
                option,
                "is a file, not a folder",
                f"give {option} a folder (new or existing) for the result's files",
            )
        if not os.access(path, os.W_OK):
            raise OutputPathError.at(
                path, option, "is a folder that cannot be written", f"give {option} another one"
            )
        return path
    existing = next(parent for parent in path.absolute().parents if parent.exists())
    _folder_ready(existing, path, option)
    return path


def _folder_ready(folder: Path, path: Path, option: str) -> None:
    """The folder ``path`` goes in exists, is a folder and can be written."""
    folder = folder if str(folder) else Path(".")
    if not folder.exists():
        raise OutputPathError.at(
            path,
            option,
            f"its folder {folder} does not exist",
            f"create the folder, or give {option} a path in an existing one",
        )
    if not folder.is_dir():
        raise OutputPathError.at(
            path, option, f"{folder} is a file, not a folder", f"give {option} another path"
        )
    if not os.access(folder, os.W_OK):
        raise OutputPathError.at(
            path,
            option,
            f"its folder {folder} cannot be written",
            f"give {option} a path in a writable folder",
        )
