"""The command line's options that cannot be used as given (``--seeds 0``, ``--until`` naming no
result column, a ``--target`` that does not parse): :class:`OptionError`, headed ``invalid
option`` and naming the option, so that a mistake on the command line is not reported as one in
a scenario file (review 65, 15)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from simcache.base.errors import ScenarioError, SweepError

__all__ = ["OptionError", "option_errors"]


class OptionError(ScenarioError):
    """A command-line option's value a command cannot use; ``source`` is the option (or the
    option and its value), each problem's field the option and the message what to give."""

    HEADING = "invalid option"

    @classmethod
    def at(cls, option: str, problem: str) -> OptionError:
        """The one ``problem`` with ``option``."""
        return cls(option, [(option, problem)])


@contextmanager
def option_errors(options: Mapping[str, str]) -> Iterator[None]:
    """Within the block, a plain :class:`ScenarioError` or :class:`SweepError` every problem of
    which is in a field of ``options`` (the field a library function checks, e.g. ``until``,
    mapped to the option that gave it, ``--until``) is raised as the :class:`OptionError` of those
    options; any other error passes unchanged."""
    try:
        yield
    except ScenarioError as exc:
        if (
            type(exc) not in (ScenarioError, SweepError)
            or not exc.problems
            or not all(field in options for field, _ in exc.problems)
        ):
            raise
        named = [(options[field], message) for field, message in exc.problems]
        raise OptionError(", ".join(dict.fromkeys(option for option, _ in named)), named) from None
