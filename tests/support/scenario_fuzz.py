"""One fuzzed scenario file through load, estimate and a short simulate, under a time and memory
limit, and what came of it.

Shared by ``tests/scenarios/test_fuzz_scenarios.py`` (a few hundred cases in the suite) and
``bench/fuzz.py`` (100,000). The file is written where a user's would be and loaded by its path
(:func:`simcache.load_scenario`), then estimated (:func:`simcache.estimate`) and simulated for at
most :data:`SHORT_RUN_S` simulated seconds; the result and the estimate are turned into their JSON
answers, as the CLI and the app would show them.

The outcome is one of
- ``valid``: every step answered;
- ``project error``: a step raised :class:`~simcache.base.errors.ScenarioError` (or a subclass),
  with a message of reasonable length in the user's words;
- ``finding``: anything else: another exception, no answer within the time limit, a memory error
  under the memory limit, a warning (but the project's own
  :class:`~simcache.spec.ScenarioWarning`, a note on a valid setting: valid), or a project error or
  note whose message echoes a huge value or speaks pydantic.

With ``engines`` (``bench/fuzz.py --engines``), a valid case the native engine ran is run again by
both engines (:func:`simcache.sim.engine.run_scenario`, ``native=True`` and ``native=False``) and
the two runs compared bit for bit (:func:`support.native.assert_same`): a difference is a finding
(``engines: the native engine's run differs from the Python engine's``), and the valid outcome
says whether the engines were compared (``valid: engines agree``) or not (no time left, a run
past the work limits or stopped at its deadline; a case the Python engine ran is plain ``valid``).
The comparison's runs are longer than the short run (:data:`ENGINES_RUN_S`).

A finding's ``label`` names its class (stage, exception type and the innermost ``simcache`` frame),
so that many cases with one cause count as one class.
"""

from __future__ import annotations

import contextlib
import json
import math
import resource
import signal
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, NamedTuple

import simcache
from simcache import Scenario, ScenarioError
from simcache.base.errors import RunTooLargeError
from simcache.sim import native_run
from simcache.sim.engine import run_scenario
from simcache.spec import ScenarioWarning
from support.native import assert_same

SHORT_RUN_S = 0.3
"""Simulated seconds of the short run (the scenario's own duration if shorter)."""
PROJECT_ERRORS: tuple[type[BaseException], ...] = (ScenarioError,)
"""The project's own errors (``WorkloadFileError`` is a ``ScenarioError``); ``units.UnitError``
is internal and must not escape."""
LONGEST_MESSAGE = 1000
"""A problem message longer than this echoes what it was given instead of naming it (the goal is
~100 characters)."""
PYDANTIC_WORDS = ("valid dictionary or instance of", "pydantic")
"""Words that show a message is pydantic's, not the project's (issue 15: no "valid dictionary or
instance of LinkSpec")."""
PACKAGE = Path(simcache.__file__).resolve().parent


class CaseTimeout(BaseException):
    """The case ran past its time limit (a BaseException, so that no ``except Exception`` in the
    code under test eats it).

    ``clock`` says which limit: ``"CPU"`` or ``"wall"``.
    """

    def __init__(self, clock: str):
        super().__init__(clock)
        self.clock = clock


class WrongAnswer(AssertionError):
    """A result that answered but not as its contract says; ``problem`` names which rule (the
    finding's class)."""

    def __init__(self, problem: str, detail: str):
        super().__init__(f"{problem}: {detail}")
        self.problem = problem


class Outcome(NamedTuple):
    """What came of one case: ``kind`` (valid, project error, finding), its class ``label``, the
    ``stage`` and a ``detail``."""

    kind: str
    label: str
    stage: str
    detail: str


def _alarm(signum: int, frame: FrameType | None) -> None:
    if frame is not None and frame.f_code.co_name == "gc_callback":
        # hypothesis's gc timer: CPython would print and drop the exception; the timer fires again
        # in 0.5 s
        return
    raise CaseTimeout("CPU" if signum == signal.SIGPROF else "wall")


def _address_space() -> int:
    """Bytes of address space the process holds now (VmSize)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


WALL_FACTOR = 4.0
"""The wall-time limit is this many times the CPU-time limit: on a shared machine a case's wall
time says little."""


@contextlib.contextmanager
def limits(
    seconds: float, memory_bytes: int | None, wall_factor: float = WALL_FACTOR
) -> Iterator[None]:
    """Raise :class:`CaseTimeout` after ``seconds`` of CPU time or ``wall_factor`` times that of
    wall time, and let the block map at most ``memory_bytes`` more.

    CPU time (SIGPROF) measures the case's own work whatever else the machine runs; wall time
    (SIGALRM) also catches a case that waits without working. The memory limit lowers the soft
    ``RLIMIT_AS`` to what the process holds now plus ``memory_bytes`` and puts it back after, so an
    allocation beyond it raises :class:`MemoryError` instead of swapping the machine to a halt. Main
    thread only.
    """
    previous = {
        number: signal.signal(number, _alarm) for number in (signal.SIGALRM, signal.SIGPROF)
    }
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if memory_bytes is not None:
        cap = _address_space() + memory_bytes
        resource.setrlimit(
            resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard)
        )
    # Again every half second after the first: a handler's exception raised inside a callback that
    # CPython runs and ignores (a gc callback, a __del__) is lost, and the case would run on without
    # a limit.
    signal.setitimer(signal.ITIMER_PROF, seconds, 0.5)
    signal.setitimer(signal.ITIMER_REAL, seconds * wall_factor, 0.5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        for number, handler in previous.items():
            signal.signal(number, handler)
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def short_run(scenario: Scenario, seconds: float = SHORT_RUN_S) -> Scenario:
    """``scenario`` run for at most ``seconds``, its sample interval shortened to fit if it was
    longer."""
    duration = min(scenario.run.duration, seconds)
    if scenario.run.sample_interval > duration:
        scenario = scenario.with_overrides(
            {"run.sample_interval": duration}, source="the fuzzer's short run"
        )
    return scenario.with_duration(duration, source="the fuzzer's short run")


def _where(tb: TracebackType | None, modules_only: bool = False) -> str:
    """The innermost frame in simcache (or, if none, the innermost frame) as
    ``simcache/x.py:function``."""
    frames = traceback.extract_tb(tb)
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(PACKAGE)]
    if not frames:
        return "?"
    frame = (ours or frames)[-1]
    name = _module(frame.filename)
    return name if modules_only else f"{name}:{frame.name}"


def _module(filename: str) -> str:
    """``simcache/x.py`` for the package's files, the last two parts of the path for others
    (``tomllib/_parser.py``)."""
    path = Path(filename).resolve()
    return (
        f"simcache/{path.relative_to(PACKAGE)}"
        if path.is_relative_to(PACKAGE)
        else "/".join(path.parts[-2:])
    )


def _first_timeout(exc: CaseTimeout) -> CaseTimeout:
    """The first of the timeouts chained to ``exc``: the limit fires again while a stopped run's
    memory is freed."""
    while True:
        earlier = exc.__cause__ or exc.__context__
        if not isinstance(earlier, CaseTimeout):
            return exc
        exc = earlier


def _tail(exc: BaseException, lines: int = 12) -> str:
    text = "".join(traceback.format_exception(exc))
    return "\n".join(text.splitlines()[-lines:])[-4000:]


def _check_message(error: ScenarioError, stage: str) -> Outcome:
    longest = max((len(message) + len(path) for path, message in error.problems), default=0)
    if longest > LONGEST_MESSAGE:
        return Outcome(
            "finding",
            f"{stage}: ScenarioError echoes a huge value",
            stage,
            f"a problem of {longest:,} characters: {str(error)[:300]}",
        )
    text = str(error)
    for words in PYDANTIC_WORDS:
        if words in text:
            return Outcome(
                "finding",
                f"{stage}: ScenarioError in pydantic's words ({words!r})",
                stage,
                text[:1000],
            )
    return Outcome("project error", f"{stage}: {type(error).__name__}", stage, text[:300])


def _check_answer(result: simcache.Result) -> None:
    """The result's answers, as the CLI and the app take them: strict JSON, one summary row per
    group and op, a finite bottleneck."""
    try:
        json.dumps(result.to_json(), allow_nan=False)  # to_json promises strict JSON
    except ValueError as exc:
        raise WrongAnswer("to_json is not strict JSON", str(exc)) from None
    rows = list(zip(result.summary["group"], result.summary["op"], strict=True))
    if len(rows) != len(set(rows)):
        raise WrongAnswer(
            "the summary has two rows for one group and op",
            repr(sorted({r for r in rows if rows.count(r) > 1})[:4]),
        )
    if len(result.records):
        name, utilization = result.bottleneck()
        if not math.isfinite(utilization):
            raise WrongAnswer(
                "the bottleneck's utilization is not finite", f"{name} at {utilization}"
            )


DEADLINE_SHARE = 0.5
"""The simulation's own wall-clock deadline (``simulate(deadline=)``), as a share of what the
case's time limit has left when the simulation starts (loading and estimating a scenario of a
thousand groups take part of it)."""


ENGINES_SHARE = 0.25
"""Each engine's run in the comparison: its deadline, as a share of the CPU time the case has
left when it starts (a stopped run still builds its partial record; the Python engine is several
times slower than the native one)."""


ENGINES_RUN_S = 2.0
"""Simulated seconds of the comparison's runs (the scenario's own duration if shorter): longer than
the short run, so that what one engine left in a cache is read again within it (a controller read
cache keeping lines it should not changed nothing in 0.3 s of the library's scenarios, and their
records in 2 s)."""

ENGINES_LEAST_S = 1.0
"""CPU seconds a case must have left for each run of the comparison (else it is not compared)."""


def _compare_engines(scenario: Scenario, left: Callable[[], float]) -> str:
    """Run ``scenario`` by both engines, each within :data:`ENGINES_SHARE` of the time ``left()``
    says the case has (at least :data:`ENGINES_LEAST_S`), and compare the runs bit for bit
    (:class:`WrongAnswer` if they differ); the valid outcome's label."""
    not_compared = "valid: engines not compared (no time left, too large, or stopped)"
    runs = []
    for by_native in (True, False):
        if left() < ENGINES_LEAST_S:
            return not_compared
        try:
            run = run_scenario(scenario, native=by_native, deadline=left() * ENGINES_SHARE)
        except RunTooLargeError:  # the longer run past the work limits the short one was within
            return not_compared
        if run.stopped_at_s is not None:
            return not_compared
        runs.append(run)
    native, python = runs
    try:
        assert_same(python, native)
    except AssertionError as exc:  # (each of assert_same's checks names what it compares)
        raise WrongAnswer(
            "the native engine's run differs from the Python engine's",
            f"first difference: {str(exc).splitlines()[0]}",
        ) from None
    return "valid: engines agree"


def run_case(
    text: bytes,
    path: Path,
    seconds: float,
    memory_bytes: int | None = None,
    deadline_s: float | None = None,
    wall_factor: float = WALL_FACTOR,
    engines: bool = False,
) -> Outcome:
    """Write ``text`` to ``path``, then load, estimate and simulate it briefly within ``seconds``
    of CPU time (and ``wall_factor`` times that of wall time) and ``memory_bytes``; ``engines``:
    a valid case the native engine ran is also run by both engines and the runs compared."""
    path.write_bytes(text)
    started = time.process_time()
    stage = "load"
    compared = ""
    caught: list[warnings.WarningMessage] = []
    try:
        with (
            warnings.catch_warnings(record=True) as caught,
            limits(seconds, memory_bytes, wall_factor),
        ):
            warnings.simplefilter("always")
            loaded = simcache.load_scenario(path)
            scenario = short_run(loaded)
            stage = "estimate"
            json.dumps(simcache.estimate(scenario).to_json())
            stage = "simulate"
            # A legal run too slow for the limit (an overload with thousands of flows in flight)
            # stops at its own deadline with a partial result marked stopped, as a user's run would:
            # a valid answer.
            left = seconds - (time.process_time() - started)
            result = simcache.simulate(
                scenario,
                deadline=deadline_s if deadline_s is not None else max(0.05, left * DEADLINE_SHARE),
            )
            stage = "result"
            _check_answer(result)
            if (
                engines
                and result.meta["stopped_at_s"] is None
                and result.meta["run_by"] == native_run.NATIVE
            ):
                stage = "engines"
                compared = _compare_engines(
                    short_run(loaded, ENGINES_RUN_S),
                    lambda: seconds - (time.process_time() - started),
                )
    except CaseTimeout as exc:
        timeout = _first_timeout(exc)
        limit = (
            f"{seconds:g} s of CPU time"
            if timeout.clock == "CPU"
            else f"{seconds * wall_factor:g} s of wall time"
        )
        where = _where(timeout.__traceback__, modules_only=True)
        # a wall limit on a busy machine: less
        used = f"stopped after {time.process_time() - started:.2f} s of CPU time\n"
        return Outcome(
            "finding", f"{stage}: no answer within {limit} (in {where})", stage, used + _tail(exc)
        )
    except MemoryError as exc:
        return Outcome(
            "finding", f"{stage}: MemoryError at {_where(exc.__traceback__)}", stage, _tail(exc)
        )
    except WrongAnswer as exc:
        return Outcome("finding", f"{stage}: {exc.problem}", stage, _tail(exc))
    except PROJECT_ERRORS as exc:
        assert isinstance(exc, ScenarioError)
        return _check_message(exc, stage)
    except (Exception, SystemExit) as exc:
        return Outcome(
            "finding",
            f"{stage}: {type(exc).__name__} at {_where(exc.__traceback__)}",
            stage,
            _tail(exc),
        )
    notes = [w for w in caught if issubclass(w.category, ScenarioWarning)]
    for note in notes:
        text = str(note.message)
        if len(text) > LONGEST_MESSAGE or any(words in text for words in PYDANTIC_WORDS):
            return Outcome(
                "finding", "warning: ScenarioWarning not in the user's words", stage, text[:1000]
            )
    caught = [w for w in caught if w not in notes]
    if caught:
        first = caught[0]
        name = _module(first.filename)
        return Outcome(
            "finding",
            f"warning: {first.category.__name__} at {name}",
            stage,
            f"{first.category.__name__}: {first.message}",
        )
    if result.meta["stopped_at_s"] is not None:
        return Outcome(
            "valid",
            "valid: stopped at its deadline",
            stage,
            f"stopped at {result.meta['stopped_at_s']:.3f} s",
        )
    return Outcome("valid", compared or "valid", stage, "")


def outcome_text(outcome: Outcome, mutations: list[str], text: bytes) -> str:
    """A finding as Markdown: its class, what was done to the scenario, the file's head and the
    traceback tail."""
    head = text[:1500].decode("utf-8", errors="backslashreplace")
    more = f"\n# ... {len(text):,} bytes in all" if len(text) > 1500 else ""
    steps = "\n".join(f"- {m}" for m in mutations)
    return (
        f"### {outcome.label}\n\n{steps}\n\n```toml\n{head}{more}\n```\n\n```\n{outcome.detail}\n"
        "```\n"
    )


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    return outcome._asdict()
