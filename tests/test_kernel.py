"""simcache.model.kernel does what plain SimPy does: the same order, the same event count, the same failures."""

from __future__ import annotations

import types
from collections.abc import Callable, Generator
from typing import Any

import pytest
import simpy

from simcache.model import kernel

_TIMES = [(2.0, kernel.NORMAL), (1.0, kernel.NORMAL), (1.0, kernel.URGENT), (2.0, kernel.URGENT), (1.0, kernel.NORMAL)]


def _mixed_model(exact: bool) -> list[tuple[float, str]]:
    """Events at repeated times and both priorities, scheduled by ``kernel.schedule_at`` or ``env.schedule``; their order."""
    env = simpy.Environment()
    log: list[tuple[float, str]] = []
    for i, (at, priority) in enumerate(_TIMES):
        event = env.event()
        event.callbacks.append(lambda e, name=f"e{i}": log.append((env.now, name)))
        kernel.trigger(event, i)
        if exact:
            kernel.schedule_at(env, at, event, priority)
        else:
            env.schedule(event, priority, at)
    env.run()
    return log


def test_schedule_at_orders_events_as_simpy_schedule_does() -> None:
    assert _mixed_model(exact=False) == _mixed_model(exact=True) == [(1.0, "e2"), (1.0, "e1"), (1.0, "e4"), (2.0, "e3"), (2.0, "e0")]


def _queueing_model(env: simpy.Environment, log: list[tuple[float, int]]) -> None:
    """A small process model: two customers sharing a resource, with timeouts that land exactly on the stop time."""
    server = simpy.Resource(env, capacity=1)

    def customer(name: int) -> Generator[simpy.Event, Any, None]:
        while True:
            with server.request() as request:
                yield request
                yield env.timeout(0.5 + name * 0.25)
                log.append((env.now, name))

    for name in range(2):
        env.process(customer(name))


def test_run_until_processes_what_env_run_does_and_counts_the_same_events() -> None:
    runs = []
    for inlined in (False, True):
        env = simpy.Environment()
        log: list[tuple[float, int]] = []
        _queueing_model(env, log)
        if inlined:
            kernel.run_until(env, 3.0)
        else:
            env.run(until=3.0)
        runs.append((log, kernel.current_time(env), kernel.events_scheduled(env)))
    assert runs[0] == runs[1]
    assert runs[0][0][-1][0] < 3.0  # events at exactly the stop time are not processed, by either


def _failing(env: simpy.Environment, defuse: bool) -> None:
    event = env.event()
    if defuse:
        event.callbacks.append(lambda e: setattr(e, "defused", True))
    event.fail(ValueError("disk on fire"))


@pytest.mark.parametrize("run", [lambda env: env.run(until=1.0), lambda env: kernel.run_until(env, 1.0)])
def test_an_unhandled_failure_raises_its_exception_and_a_defused_one_does_not(run: Callable[[simpy.Environment], None]) -> None:
    env = simpy.Environment()
    _failing(env, defuse=False)
    with pytest.raises(ValueError, match="disk on fire"):
        run(env)
    env = simpy.Environment()
    _failing(env, defuse=True)
    run(env)


def test_signals_process_now_and_unschedule() -> None:
    env = simpy.Environment()
    seen: list[tuple[float, object]] = []
    signals = [kernel.Signal(i, lambda s: seen.append((env.now, s.value))) for i in range(4)]
    for i, signal in enumerate(signals):
        kernel.schedule_at(env, 1.0 + i % 2, signal)
    kernel.unschedule(env, {signals[0], signals[3]})
    kernel.run_until(env, 10.0)
    assert seen == [(1.0, 2), (2.0, 1)]
    event = env.event()
    event.callbacks.append(lambda e: seen.append((env.now, e.value)))
    kernel.trigger(event, "now")
    kernel.process_now(event)
    assert seen[-1] == (10.0, "now") and event.processed


def test_a_resumer_drives_a_generator_as_a_process_would() -> None:
    logs = []
    for detached in (False, True):
        env = simpy.Environment()
        log: list[tuple[float, Any]] = []

        def steps(env: simpy.Environment = env, log: list[tuple[float, Any]] = log) -> Generator[simpy.Event, Any, None]:
            done = env.timeout(0)
            value = yield env.timeout(1.5, value="slept")
            log.append((env.now, value))
            yield env.timeout(0)
            log.append((env.now, (yield done)))  # already processed: its value comes back at once

        if detached:
            kernel.Resumer(steps()).resume(None)
        else:
            env.process(steps())
        env.run()
        logs.append(log)
    assert logs[0] == logs[1] == [(1.5, "slept"), (1.5, None)]


def test_an_unsupported_simpy_is_refused_at_import() -> None:
    class Bare:
        def event(self) -> simpy.Event:
            return simpy.Environment().event()

    # Passed in, not patched onto the module: compiled (mypyc) code keeps its own reference to the simpy module.
    unsupported = types.SimpleNamespace(Environment=Bare, __version__="9.0")
    with pytest.raises(ImportError, match=r"simpy>=4\.1,<4\.2 .*_queue, _eid, _now.*simpy 9\.0"):
        kernel.check_simpy(unsupported)


def _sleepers(sleep: Callable[[simpy.Environment, float], Any]) -> tuple[list[tuple[float, int]], int]:
    """Three detached generators waiting with ``sleep`` at awkward delays (sums that round); their log and event count."""
    env = simpy.Environment()
    log: list[tuple[float, int]] = []

    def steps(name: int) -> Generator[Any, Any, None]:
        for delay in (0.1, 0.2, 0.3, 0.0, 1e-17 * name):
            value = yield sleep(env, delay)
            assert value is None
            log.append((kernel.current_time(env), name))

    for name in range(3):
        kernel.Resumer(steps(name)).resume(None)
    kernel.run_until(env, 10.0)
    return log, kernel.events_scheduled(env)


def test_sleep_is_a_timeout_to_the_last_bit_and_in_the_same_order() -> None:
    """``kernel.sleep(env, d)`` wakes a detached generator exactly when ``env.timeout(d)`` would: at ``now + d`` as
    SimPy computes it (0.1 + 0.2 is not 0.3), in the same order among equal times, with the same event count."""
    plain = _sleepers(lambda env, delay: env.timeout(delay))
    assert _sleepers(kernel.sleep) == plain
    assert plain[0][3] == (0.1 + 0.2, 0) and 0.1 + 0.2 != 0.3  # the sum as the clock adds it
    with pytest.raises(ValueError, match="Negative delay"):
        kernel.sleep(simpy.Environment(), -1.0)
