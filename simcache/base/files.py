"""Reading a user's file safely: only regular files, and only up to a size limit.

Every path a user gives (a scenario, a sweep file, a workload to import) is
checked here before it is read: a folder, a named pipe (a FIFO, which would
block), a device (``/dev/zero``, which never ends) or a socket is refused by
what ``os.stat`` says, before anything is opened, and a file larger than its
limit is refused by its size, before its bytes are read. The callers turn the
one-line reasons into their own errors (:class:`~simcache.base.errors.ScenarioError`
or :class:`~simcache.base.errors.WorkloadFileError`) naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from simcache.base.units import UnitError, format_size, parse_size

__all__ = [
    "MAX_SCENARIO_BYTES",
    "MAX_SCENARIO_BYTES_VARIABLE",
    "FileRefused",
    "file_problem",
    "read_limited",
    "scenario_limit",
]

MAX_SCENARIO_BYTES = 4 * 1024**2
"""Largest scenario or sweep file read by default, 4 MiB: the biggest library scenario is a few
KiB, and one with a 100,000-entry rate profile (the most a profile may have) about 1 MiB; more is
not a scenario, and parsing and validating it would take seconds before it could be refused (set
``SIMCACHE_MAX_SCENARIO_BYTES`` to read bigger ones)."""
MAX_SCENARIO_BYTES_VARIABLE = "SIMCACHE_MAX_SCENARIO_BYTES"
"""Environment variable that sets the scenario file limit in bytes (a plain number or a size like
``64MiB``)."""

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO), which would wait for a writer"),
    (stat.S_ISCHR, "a character device (like /dev/zero), which may never end"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class FileRefused(OSError):
    """A user's file that is not read: ``reason`` says why in words (missing, not a regular file,
    too big)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def file_problem(path: Path, max_bytes: int | None = None) -> str | None:
    """Why ``path`` is not read as a user's file, or None when it may be.

    Missing or unreadable: the system's reason. Not a regular file: what it is
    instead. Larger than ``max_bytes``: its size and the limit.
    """
    try:
        status = os.stat(path)
    except OSError as exc:
        return f"cannot read the file: {exc.strerror or exc}"
    except ValueError as exc:  # a NUL byte in the path
        return f"cannot read the file: {exc}"
    if not stat.S_ISREG(status.st_mode):
        kind = next((what for test, what in _KINDS if test(status.st_mode)), "not a file")
        return f"not a regular file but {kind}; give the path of a file"
    if max_bytes is not None and status.st_size > max_bytes:
        size, limit = status.st_size, max_bytes
        return (
            f"the file is {size:,} bytes ({format_size(size)}); the limit is {limit:,} bytes "
            f"({format_size(limit)})"
        )
    return None


def read_limited(path: Path, max_bytes: int, advice: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    Raises :class:`FileRefused` (with ``advice`` after a size refusal) for
    anything :func:`file_problem` refuses, and for a file that grows past the
    limit or is swapped for another kind while it is read.
    """
    problem = file_problem(path, max_bytes)
    if problem is not None:
        raise FileRefused(
            problem + (f"; {advice}" if advice and problem.startswith("the file is") else "")
        )
    try:
        # Non-blocking: were the path swapped for a FIFO since the check, opening it must not wait
        # for a writer.
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise FileRefused(f"cannot read the file: {exc.strerror or exc}") from None
    with os.fdopen(handle, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise FileRefused("not a regular file; give the path of a file")
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileRefused(
            f"the file is more than {max_bytes:,} bytes ({format_size(max_bytes)}), the limit"
            + (f"; {advice}" if advice else "")
        )
    return data


def scenario_limit() -> int:
    """The scenario file limit in bytes: ``SIMCACHE_MAX_SCENARIO_BYTES`` if set, else
    :data:`MAX_SCENARIO_BYTES`.

    Raises :class:`FileRefused` naming the variable when it is not a size.
    """
    text = os.environ.get(MAX_SCENARIO_BYTES_VARIABLE, "").strip()
    if not text:
        return MAX_SCENARIO_BYTES
    try:
        limit = parse_size(text)
    except UnitError as exc:
        raise FileRefused(f"{MAX_SCENARIO_BYTES_VARIABLE}: {exc}") from None
    if limit <= 0:
        raise FileRefused(
            f"{MAX_SCENARIO_BYTES_VARIABLE} must be a size above 0 bytes, e.g. 64MiB (got "
            f"{text[:100]!r})"
        )
    return limit
