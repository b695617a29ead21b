"""One run of a scenario as a :class:`~simcache.results.result.Result`: :func:`simcache.simulate`.

The engine runs the scenario and hands back a plain record
(:func:`simcache.sim.engine.run_scenario`); the results layer builds the tables from it. This
module joins the two, from above both.
"""

from __future__ import annotations

from simcache.base.errors import ScenarioError
from simcache.base.units import UnitError, parse_duration
from simcache.results.result import Result
from simcache.sim.control import Cancel, Limits
from simcache.sim.engine import Progress, run_scenario
from simcache.spec import Scenario

__all__ = ["simulate"]


def simulate(
    scenario: Scenario,
    *,
    seed: int | None = None,
    duration: float | str | None = None,
    progress: Progress | None = None,
    cancel: Cancel | None = None,
    deadline: float | None = None,
    limits: Limits | None = None,
    keep_records: bool = True,
) -> Result:
    """Run ``scenario`` once and return its :class:`~simcache.results.result.Result`.

    ``seed`` and ``duration`` (seconds, or a time as a scenario writes it: ``"2s"``) override the
    scenario's ``[run]``
    table (:meth:`~simcache.spec.Scenario.with_seed`,
    :meth:`~simcache.spec.Scenario.with_duration`: only the run is validated
    again); ``progress`` is called with the fraction done at each sample.

    Before the run, its expected work (:func:`simcache.sim.control.expected_work`)
    is checked against ``limits`` (default: :meth:`simcache.sim.control.Limits.from_env`;
    :data:`simcache.sim.control.NO_LIMITS` for none): past them it raises
    :class:`~simcache.base.errors.RunTooLargeError` and nothing runs.

    Stopping: once ``cancel`` (a :class:`simcache.sim.control.Cancel`) is set, or
    ``deadline`` wall seconds have passed, the run ends at the simulated time
    ``t`` it has reached (within a few milliseconds of wall time) and the result
    covers ``[0, t]``: a last sample at ``t``, the summary over the window up to
    ``t`` (the warm-up cut to ``t / 10`` if it had not ended), totals per ``t``.
    Its ``meta["stopped_at_s"]`` is ``t`` and ``meta["stop_reason"]`` says why;
    both are ``None`` for a run that reached its end. No exception is raised.

    ``keep_records=False`` keeps no per-I/O records: latency histograms and counters instead
    (:mod:`simcache.sim.stream`), in memory that does not grow with the I/Os; the summary,
    breakdown and series come from them (percentiles within
    :data:`simcache.sim.stream.REL_ERROR`), and ``Result.records`` raises
    :class:`~simcache.results.result.RecordsNotKept`.
    """
    record = run_scenario(
        scenario,
        seed=_seed(seed),
        duration=_duration(duration),
        progress=progress,
        cancel=cancel,
        deadline=deadline,
        limits=limits,
        keep_records=keep_records,
    )
    return Result.from_record(record)


def _duration(duration: float | str | None) -> float | None:
    """``simulate(duration=...)`` in seconds: a number, or a time as a scenario writes it."""
    if duration is None or (isinstance(duration, (int, float)) and not isinstance(duration, bool)):
        return duration
    if isinstance(duration, str):
        try:
            return parse_duration(duration)
        except UnitError as error:
            raise _argument("duration", f"{error} (got {duration!r})") from None
    raise _argument("duration", f"give seconds or a time such as '2s' (got {duration!r})")


def _seed(seed: int | None) -> int | None:
    """``simulate(seed=...)``: a whole number (the scenario checks its range)."""
    if seed is None or (isinstance(seed, int) and not isinstance(seed, bool)):
        return seed
    raise _argument("seed", f"give a whole number, e.g. seed=1 (got {seed!r})")


def _argument(name: str, why: str) -> ScenarioError:
    return ScenarioError(f"simulate({name}=...)", [(name, why)])
