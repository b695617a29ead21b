"""How long the page's run is against the file's: the length the page starts from, what a shorter
run leaves out, and the note beside the figures of a run other than the file's.

A costly file (a large cluster) starts shorter than its own run (:func:`first_duration`), so the
page answers within its budget: a run it starts without asking, of at most :data:`CONFIRM_IOS`
expected I/Os (the threshold past which :func:`simcache_app.runs.confirmed` asks). It prefers a
length that takes in the file's scheduled events when that stays within the budget. When the run
set under **Simulated seconds** ends before some of them, the page says so before the run
(:func:`events_outside_note`), and the instant estimate is of that run, not the file's (review
65e, 8: a 4.5 s first run of a 20 s file had its 10 s vMotion in the estimate only).
"""

from __future__ import annotations

import math

import simcache
from simcache.results.trend import MIN_SAMPLES
from simcache.spec.events import (
    ArrayDegraded,
    ArrayRebuild,
    Event,
    HostFailure,
    VMotion,
    array_event_seconds,
)
from simcache_app.charts import event_label
from simcache_app.runs import CONFIRM_IOS, expected_ios

FIRST_RUN_IOS = 500_000
"""Expected I/Os (:func:`simcache_app.runs.expected_ios`) up to which the page's first run is the
file's own (:func:`first_duration`): half the most the page runs without asking
(:data:`CONFIRM_IOS`), 6 to 11 s of the Python engine on a large cluster (45,000 to 80,000 I/Os a
second). The native engine runs the default scenario at about a million I/Os a second, but a
cluster of hundreds of VMs far slower: review 65e's page took 24 s over the 3.2 million I/Os of a
208-VM cluster's 20 s."""
EVENT_TAIL_S = 4.0
"""Simulated seconds a shortened first run goes on after the scheduled events end, to show the
recovery."""


def first_duration(
    scenario: simcache.Scenario, lower: float = 0.0, upper: float = math.inf
) -> float:
    """The simulated seconds the page starts from (within ``lower`` and ``upper``, the page's
    range).

    The file's own run when it is expected to issue at most :data:`FIRST_RUN_IOS` I/Os (the
    default scenario's 20 s: 43,000), so that the page's first figures are the file's and
    ``simcache run``'s. A costlier run starts shorter, within what the page runs without asking
    (:data:`CONFIRM_IOS` expected I/Os): long enough for the scheduled events to end with
    :data:`EVENT_TAIL_S` after them (failing that, to start with that after them) when that fits;
    else about :data:`FIRST_RUN_IOS` I/Os' worth, raised towards the sample intervals the growth
    test needs after a warm-up of a tenth as far as the budget allows (a load past the budget in
    two sample intervals starts at those, and is asked about). The page says when its run differs
    from the file's, and before the run which events fall past its end.
    """
    file = scenario.run.duration
    ios = expected_ios([scenario])
    if ios <= FIRST_RUN_IOS:
        return min(max(file, lower), upper)
    # the growth test's samples after a warm-up of a tenth of the run
    fewest = math.ceil(MIN_SAMPLES / 0.9) * scenario.run.sample_interval
    worth = _two_digits(file * FIRST_RUN_IOS / ios)  # about FIRST_RUN_IOS I/Os
    short = _within_budget(scenario, min(file, max(worth, fewest)))
    events = [event for event in scenario.events if event.at < file]
    wanted = [
        min(file, max(ends) + EVENT_TAIL_S)
        for ends in (
            [event_end(scenario, event) for event in events],
            [event.at for event in events],
        )
        if ends
    ]
    start = next(
        (seconds for seconds in wanted if seconds > short and _cheap(scenario, seconds)), short
    )
    return min(max(start, lower), upper)


def _two_digits(seconds: float) -> float:
    """``seconds`` rounded down to two significant digits (4.57 -> 4.5): a length the page shows
    whole, and never past the one it was worked out from."""
    if seconds <= 0:
        return seconds
    step = 10.0 ** (math.floor(math.log10(seconds)) - 1)
    return float(f"{math.floor(seconds / step + 1e-9) * step:.2g}")


def _cheap(scenario: simcache.Scenario, seconds: float) -> bool:
    """Whether a run of ``seconds`` starts without the page asking first."""
    try:
        return expected_ios([scenario.with_duration(seconds)]) <= CONFIRM_IOS
    except simcache.ScenarioError:  # shorter than a sample interval
        return False


def _within_budget(scenario: simcache.Scenario, seconds: float) -> float:
    """``seconds``, or the longest shorter run (two significant digits) that starts without the
    page asking, down to two sample intervals, the fewest a time chart draws as a line (a load
    past the budget even then is asked about). The I/Os of a run grow about as its length: a few
    steps find it."""
    shortest = 2 * scenario.run.sample_interval
    for _ in range(8):
        if seconds <= shortest or _cheap(scenario, seconds):
            break
        ios = expected_ios([scenario.with_duration(seconds)])
        seconds = max(shortest, _two_digits(seconds * CONFIRM_IOS / ios))
    return seconds


def event_end(scenario: simcache.Scenario, event: Event) -> float:
    """When ``event`` ends at the earliest, in seconds: its ``duration`` after it starts, an HA
    restart's delay, a vMotion's memory image over the source host's peer ports at their full
    bandwidth (other traffic only makes it later); an instant event (a failure for good) at its
    start."""
    if isinstance(event, ArrayDegraded | ArrayRebuild):
        return event.at + array_event_seconds(event, scenario.array.drive.capacity)
    if isinstance(event, VMotion):
        ports = min(event.streams, scenario.cluster.peer_links)
        return event.at + event.size / (ports * scenario.cluster.peer_link.bandwidth)
    if isinstance(event, HostFailure):
        return event.at + (event.restart_delay or 0.0)
    duration = getattr(event, "duration", None)  # outages and slowdowns
    return event.at + (duration or 0.0)


def events_outside(scenario: simcache.Scenario, seconds: float) -> list[Event]:
    """The file's scheduled events that a run of ``seconds`` ends before: they start at or after
    its end (within the file's own run), so they never happen in it."""
    return [e for e in scenario.events if seconds <= e.at < max(seconds, scenario.run.duration)]


def events_outside_note(scenario: simcache.Scenario, seconds: float) -> str | None:
    """Said before the run: the scheduled events past the end of a run of ``seconds``, that
    neither the run nor the estimate takes in, and the length that would, with its cost against
    the page's budget; None when the run takes in every event.

    ``"**Not in this run:** the file's vMotion host 0 → host 1 at 10 s comes after the end of
    this 4.5 s run (the file runs 20 s): neither the run nor the estimate above takes it in. Set
    **Simulated seconds** to 14 to run 4 s into it: about 2,267,925 I/Os, past the 1,000,000 the
    page runs without asking (it will ask first)."``
    """
    outside = events_outside(scenario, seconds)
    if not outside:
        return None
    named = [f"{event_label(e.model_dump())} at {e.at:g} s" for e in outside]
    listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
    one = len(outside) == 1
    file = scenario.run.duration
    latest = max(e.at for e in outside)
    enough = min(file, latest + EVENT_TAIL_S)
    ios = expected_ios([scenario.with_duration(enough)])
    cost = f"about {ios:,.0f} I/Os" + (
        f", past the {CONFIRM_IOS:,} the page runs without asking (it will ask first)"
        if ios > CONFIRM_IOS
        else ""
    )
    return (
        f"**Not in this run:** the file's {listed} {'comes' if one else 'come'} after the end of "
        f"this {seconds:g} s run (the file runs {file:g} s): neither the run nor the estimate "
        f"above takes {'it' if one else 'them'} in. Set **Simulated seconds** to {enough:g} to "
        f"run {enough - latest:g} s into {'it' if one else 'the last of them'}: {cost}."
    )


def run_length_note(result: simcache.Result, scenario: simcache.Scenario) -> str | None:
    """The run's length and warm-up against the file's, when they differ (as ``simcache run``
    notes a cut warm-up): ``"Ran 14 s of the file's 20 s; warm-up cut from 4 s to 1.4 s, a tenth
    of the run. ..."``; None for the file's own run."""
    ran = result.meta["scenario"]["run"]
    seconds, warmup = float(ran["duration"]), float(ran["warmup"])
    file = scenario.run
    if seconds == file.duration and warmup == file.warmup:
        return None
    said = (
        f"Ran {seconds:g} s of the file's {file.duration:g} s"
        if seconds < file.duration
        else f"Ran {seconds:g} s, the file {file.duration:g} s"
    )
    if warmup != file.warmup:
        how = (
            "a tenth of the run"
            if warmup == seconds / 10
            else f"less the {file.duration - seconds:g} s by which the run is shorter"
        )
        said += f"; warm-up cut from {file.warmup:g} s to {warmup:g} s, {how}"
    return (
        f"{said}. Set **Simulated seconds** to {file.duration:g} for the file's own figures "
        "(those of `simcache run`)."
    )
