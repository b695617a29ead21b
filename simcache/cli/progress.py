"""Progress of long CLI commands (run, report, sweep, check): a rich bar on stderr when it is a
terminal.

:func:`progress_bar` gives a :class:`Bar` that draws with rich when stderr is a
terminal and the command does not print ``--json``, and draws nothing
otherwise (output piped into a file or another program, a script reading the
JSON), so nothing but the answer reaches a pipe. Without rich installed the
bar falls back to one plain line rewritten in place.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Bar", "progress_bar", "shows_progress"]


def shows_progress(json_output: bool = False) -> bool:
    """Whether a command draws progress: stderr is a terminal and the output is not JSON for a
    script."""
    return not json_output and sys.stderr.isatty()


class Bar:
    """One task's progress: :meth:`update` with the part done (of ``total``) and, optionally,
    what runs now."""

    def __init__(
        self,
        rich_progress: Any = None,
        task: Any = None,
        description: str = "",
        enabled: bool = True,
    ):
        self._progress = rich_progress
        self._task = task
        self._description = description
        self.enabled = enabled
        """Whether the bar draws (else the command prints plain lines, or nothing)."""

    def update(self, completed: float, total: float | None = None, text: str | None = None) -> None:
        if not self.enabled:
            return
        description = self._description if text is None else f"{self._description}: {text}"
        if self._progress is not None:
            self._progress.update(
                self._task, completed=completed, total=total, description=description
            )
            return
        share = f" {completed / total:5.1%}" if total else ""
        print(f"\r  {description}{share}   ", end="", file=sys.stderr, flush=True)


@contextmanager
def progress_bar(
    description: str, total: float | None = 1.0, enabled: bool | None = None
) -> Iterator[Bar]:
    """A progress bar for the block inside; ``enabled`` defaults to :func:`shows_progress`. The
    bar is removed from the terminal when the block ends, so the command's own lines follow on a
    clean screen."""
    enabled = shows_progress() if enabled is None else enabled
    if not enabled:
        yield Bar(description=description, enabled=False)
        return
    try:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )
    except ImportError:  # rich missing: one plain line, rewritten in place
        yield Bar(description=description)
        print(file=sys.stderr)
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as shown:
        yield Bar(shown, shown.add_task(description, total=total), description)
