"""Ctrl-C on a long ``simcache run`` says at once that it heard the stop (review 66c F20): the
partial result then takes seconds to summarise on a long run, which the user used to wait through
with no word. The line is written by the signal handler itself, before the run is summarised."""

from __future__ import annotations

import re
import signal

from support.signals import interrupt


def test_a_stop_is_acknowledged_before_the_partial_result_is_summarised() -> None:
    argv = ["run", "default", "--duration", "20000s", "--no-records", "--no-limit"]
    code, out, err, _ = interrupt(
        argv, signal.SIGINT, lambda line: line.startswith("simulating 'default'"), settle_s=1.0
    )
    assert code == 130, err
    lines = err.splitlines()
    assert lines[0].startswith("simulating 'default' for 20000 s"), err
    assert re.fullmatch(
        r"SIGINT: stopping at about [0-9.e+]+ s of 20000 s simulated; summarising the partial "
        r"result \(a few seconds on a long run\)",
        lines[1],
    ), err
    assert "STOPPED at simulated time" in out  # the partial result follows, as before
