"""The project's own error type for anything a user wrote wrong."""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Sequence

__all__ = [
    "ECHO_CHARS",
    "CalibrationError",
    "RunTooLargeError",
    "ScenarioError",
    "SweepStoreError",
    "WorkloadFileError",
    "counted",
    "echo",
    "listing",
    "plural",
]

ECHO_CHARS = 100
"""Most characters of a user's value a message quotes: a 10 MB string or a 10,000-deep table is
shown by its start."""


class _Echo(reprlib.Repr):
    """``reprlib`` with tables in the order written and strings cut at the end (the start is what
    a user recognizes)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist = 3, 8, 8
        self.maxother = self.maxlong = ECHO_CHARS

    def repr_str(self, x: str, level: int) -> str:
        return repr(x) if len(x) <= ECHO_CHARS - 5 else repr(x[: ECHO_CHARS - 5]) + "..."

    def repr_dict(self, x: dict[object, object], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = [
            f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
            for k, v in list(x.items())[: self.maxdict]
        ]
        return "{" + ", ".join(items) + (", ...}" if len(x) > self.maxdict else "}")


_ECHO = _Echo()


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """``repr(value)`` as a message quotes it: at most ``limit`` characters, then ``...``.

    Safe for anything a file can hold: a huge string, a whole number of thousands of digits (which
    ``repr`` refuses), or nesting deeper than the interpreter's recursion limit.
    """
    if isinstance(value, bool):  # as TOML writes it
        text = str(value).lower()
    elif isinstance(value, int) and value.bit_length() > 4 * limit:
        text = f"a whole number of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    else:
        try:
            text = _ECHO.repr(value)
        except (RecursionError, ValueError):
            text = f"a {type(value).__name__} too deep to show"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def listing(names: Iterable[str], most: int = 12) -> str:
    """Names joined by commas for a message: at most ``most`` of them, then how many more (a
    scenario of a thousand groups must not make a message of thousands of characters)."""
    names = list(names)
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most:,} more"


def plural(count: int, one: str, many: str | None = None) -> str:
    """The word for ``count`` things: ``one`` for 1, else ``many`` (``one`` + "s" by default):
    ``plural(2, "line")`` is ``"lines"``, ``plural(1, "replays", "replay")`` ``"replays"``."""
    if count == 1:
        return one
    return one + "s" if many is None else many


def counted(count: int, noun: str) -> str:
    """A count and its noun for a message: ``"1 problem"``, ``"4 problems"``."""
    return f"{count:,} {plural(count, noun)}"


class ScenarioError(ValueError):
    """A scenario (file, dict or override) cannot be used as written.

    ``source`` names the file (or ``"<dict>"``), ``problems`` is a list of
    ``(field_path, message)`` pairs; each message says what is allowed.
    """

    HEADING = "invalid scenario"

    def __init__(self, source: str, problems: Sequence[tuple[str, str]]):
        self.source = source
        self.problems = list(problems)
        super().__init__(self.text(source, self.problems))

    @classmethod
    def text(
        cls,
        source: str,
        problems: Sequence[tuple[str, str]],
        after: Sequence[tuple[str, str]] = (),
    ) -> str:
        """The message: ``source``, the heading and the problems counted, a line each, then the
        lines of ``after`` (what completes the input for all of them, not a problem: not
        counted)."""
        lines = [f"{source}: {cls.HEADING} ({counted(len(problems), 'problem')})"]
        lines += [f"  {path or '(top level)'}: {message}" for path, message in [*problems, *after]]
        return "\n".join(lines)

    def __reduce__(self) -> tuple[type[ScenarioError], tuple[str, list[tuple[str, str]]]]:
        # Rebuilt from its parts when it crosses a process boundary (a sweep worker).
        return (type(self), (self.source, self.problems))


class WorkloadFileError(ScenarioError):
    """A workload or measurement file (fio job, trace, vscsiStats, ...) cannot be imported as
    written.

    ``problems`` name the place in the file (``"line 12, offset"``) and say what
    is allowed. A subclass of :class:`ScenarioError`, so whatever reports bad
    scenarios reports these too.
    """

    HEADING = "cannot import"

    @classmethod
    def at(
        cls, source: str | object, line: int | None, field: str, message: str
    ) -> WorkloadFileError:
        """One problem at ``line`` (1-based; ``None`` for the whole file) in ``field`` (a column,
        key or section)."""
        where = ", ".join(
            part for part in (f"line {line}" if line is not None else "", field) if part
        )
        return cls(str(source), [(where, message)])


class CalibrationError(WorkloadFileError):
    """Measurement files that cannot describe one device for ``simcache calibrate`` (mixed
    devices, buffered I/O, a file system in the way, too few queue depths), or that cannot be
    read: each problem names the file and the reason."""

    HEADING = "cannot calibrate"


class SweepError(ScenarioError):
    """A sweep (a sweep file's ``scenario``, ``seeds`` and ``[grid]``, or ``sweep()``'s arguments)
    that cannot run as written: other keys, no scenario or grid, a scenario that is not there, is
    the sweep file itself or another sweep file, an axis that is not a list, a bad seed or
    ``until``. Its own heading, so that the error does not read as a scenario's (review 67a F13);
    a grid point that makes no valid scenario stays a :class:`ScenarioError` of that point."""

    HEADING = "invalid sweep"


class SweepStoreError(ScenarioError):
    """A sweep's results store (``store=``, ``--store``) cannot be used: not a file, not writable,
    not SQLite, locked, full, of another store format or edited out of shape.

    ``source`` is the store's path; the one problem (field ``store``) says what is wrong and what to
    do. A subclass of :class:`ScenarioError`, so whatever reports bad input reports these too, under
    their own heading.
    """

    HEADING = "unusable sweep store"

    @classmethod
    def at(cls, path: object, problem: str, fix: str) -> SweepStoreError:
        """The store at ``path`` has ``problem``; ``fix`` says what to do about it."""
        return cls(str(path), [("store", f"{problem}; {fix}")])


class RunTooLargeError(ScenarioError):
    """A run refused before it starts: its expected work (I/Os, memory) is past the limit
    (:mod:`simcache.sim.control`).

    The problem names the field to change (``run.duration``), the expected
    figures, the limit and the options that allow the run. A subclass of
    :class:`ScenarioError`, so whatever reports bad scenarios reports these too.
    """

    HEADING = "run too large"
