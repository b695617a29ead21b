"""The project's own error type for anything a user wrote wrong."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ScenarioError"]


class ScenarioError(ValueError):
    """A scenario (file, dict or override) cannot be used as written.

    ``source`` names the file (or ``"<dict>"``), ``problems`` is a list of
    ``(field_path, message)`` pairs; each message says what is allowed.
    """

    def __init__(self, source: str, problems: Sequence[tuple[str, str]]):
        self.source = source
        self.problems = list(problems)
        lines = [f"{source}: invalid scenario ({len(self.problems)} problem(s))"]
        lines += [f"  {path or '(top level)'}: {message}" for path, message in self.problems]
        super().__init__("\n".join(lines))

    def __reduce__(self) -> tuple[type[ScenarioError], tuple[str, list[tuple[str, str]]]]:
        # Rebuilt from its parts when it crosses a process boundary (a sweep worker).
        return (ScenarioError, (self.source, self.problems))
