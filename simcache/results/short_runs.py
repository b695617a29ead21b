"""Runs too short to tell (``severity == "short"``; :mod:`simcache.results.validity` lists every
kind): too few samples after the warm-up to test for growth, a warm-up shorter than a duty cycle or
a destage buffer's fill time, a run that ends before a buffer could fill, percentiles resting on
few I/Os, and scheduled events at or after the run's end."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from simcache.base.metrics import PERCENTILES
from simcache.base.units import format_figure, human_size
from simcache.results.assessed import (
    AssessedRun,
    ValidityWarning,
    hosts_words,
    samples_needed,
    window_series,
)
from simcache.results.trend import MIN_SAMPLES
from simcache.spec import Scenario
from simcache.spec.consistency import sample_interval_for_test

__all__ = [
    "KEPT_UP",
    "cut_warmup",
    "empty_window",
    "few_samples",
    "late_events",
    "short_warmup",
    "untested",
]

_LISTED = 4  # rows named in a few-samples warning
KEPT_UP = 0.1
"""A destage buffer kept up in a run (whatever the estimate's fluid model says) when its backlog
stays under this share of what that model holds by the run's end: the run destaged at the rate
written, e.g. into an array's controller cache that takes it at memory speed until it is full."""


def untested(result: AssessedRun, series: pd.DataFrame) -> list[ValidityWarning]:
    """Too few samples after the warm-up for the growth test (:data:`MIN_SAMPLES`): said, so that
    a run nothing was found in is not taken for one found steady."""
    start, end = result.window
    interval = float(result.meta["scenario"]["run"]["sample_interval"])
    longest = start + MIN_SAMPLES * interval
    most = sample_interval_for_test(end - start)
    return [
        ValidityWarning(
            "untested",
            "series",
            "short",
            f"only {len(series)} sample{'' if len(series) == 1 else 's'} after the warm-up "
            f"({interval:g} s apart): too few to test queues and backlogs for growth "
            f"({MIN_SAMPLES} needed), so the run's stability was not tested; set "
            f"run.sample_interval to at most {most:.3g} s, or run for at least "
            f"{format_figure(longest, 3)} s",
        )
    ]


def cut_warmup(result: AssessedRun) -> list[ValidityWarning]:
    """A run asked for shorter than its file (``simulate(duration=...)``) whose warm-up was cut
    to keep a window (:meth:`simcache.spec.Scenario.warmup_cut`): said, since the window then
    starts where the file did not mean it to (review 65a: a warm-up of 1 s became 0.05 s, said
    by the command line's note and nowhere in the result). Whether the cut warm-up is long enough
    is :func:`short_warmup`'s to say."""
    cut = result.meta.get("warmup_cut")
    if not cut:
        return []
    return [
        ValidityWarning(
            "warmup_cut",
            "run.warmup",
            "short",
            f"the run is shorter than its file's, so {cut}; a run as long as the file's keeps its "
            "warm-up",
        )
    ]


def short_warmup(
    result: AssessedRun,
    scenario: Scenario | dict[str, Any],
    filling: set[str],
) -> list[ValidityWarning]:
    """Warm-up shorter than a duty-cycle period or a destage buffer's fill time, and runs that end
    before a buffer could fill (``fill_time``), the hosts alike in one warning (hosts in
    ``filling``, by name, are reported already)."""
    warmup, end = result.window
    constants: list[tuple[float, str, str]] = []  # (seconds, component, words)
    data = scenario if isinstance(scenario, dict) else scenario.model_dump(mode="json")
    for group in data["groups"]:
        duty = group["workload"].get("duty_cycle")
        if duty is not None:
            period = _duty_period(duty)
            constants.append(
                (
                    period,
                    f"duty_cycle.{group['name']}",
                    f"group {group['name']}'s duty cycle ({period:g} s period)",
                )
            )
    warnings: list[ValidityWarning] = []
    fills = [fill for fill in _fill_times(scenario) if fill[0] not in filling and warmup < fill[1]]
    kept = _kept_up(result, fills)
    for alike in _alike([fill for fill in fills if fill[0] in kept]):
        warnings.append(_kept_up_note(result, alike, kept))
    for alike in _alike([fill for fill in fills if fill[0] not in kept and fill[1] >= end]):
        warnings.append(
            ValidityWarning(
                "fill_time",
                _components(alike),
                "short",
                f"the run ({end:g} s) ends before {_buffers(alike)} could fill "
                f"({_fill_words(alike)} from empty at {_rates(alike)}, "
                "by the estimate's fluid model): its figures hold for write bursts shorter "
                "than that, not for sustained load (then writes wait for the array)",
            )
        )
    for alike in _alike([fill for fill in fills if fill[0] not in kept and fill[1] < end]):
        constants.append(
            (
                max(fill[1] for fill in alike),
                _components(alike),
                f"the time {_buffers(alike)} take{'s' if len(alike) == 1 else ''} to fill "
                f"({_fill_words(alike)} from empty at {_rates(alike)})",
            )
        )
    for seconds, component, words in constants:
        if warmup < seconds:
            warnings.append(
                ValidityWarning(
                    "short_warmup",
                    component,
                    "short",
                    f"the warm-up ({warmup:g} s) is shorter than {words}: the measured window "
                    "still holds the start-up transient; "
                    f"warm up for at least {seconds:.3g} s (the run is {end:g} s)",
                )
            )
    return warnings


_Fill = tuple[str, float, float, float]
"""(host, fill time s, write rate, drain rate in bytes/s), as :func:`_fill_times` gives them."""


def _alike(fills: list[_Fill]) -> list[list[_Fill]]:
    """``fills`` in groups whose figures read the same in a note (fill time to three digits,
    rates in whole MB/s), in the order of their first host."""
    groups: dict[tuple[str, str, str], list[_Fill]] = {}
    for fill in fills:
        key = (f"{fill[1]:.3g}", f"{fill[2] / 1e6:.0f}", f"{fill[3] / 1e6:.0f}")
        groups.setdefault(key, []).append(fill)
    return list(groups.values())


def _components(fills: list[_Fill]) -> str:
    return ",".join(f"backlog.{fill[0]}" for fill in fills)


def _buffers(fills: list[_Fill]) -> str:
    """``host0's destage buffer``, ``the destage buffers of host0 and host1`` (each alike)."""
    hosts = hosts_words([fill[0] for fill in fills])
    return f"{hosts}'s destage buffer" if len(fills) == 1 else f"the destage buffers of {hosts}"


def _fill_words(fills: list[_Fill]) -> str:
    return ("" if len(fills) == 1 else "each ") + f"{fills[0][1]:.3g} s"


def _rates(fills: list[_Fill]) -> str:
    _, _, rate_in, rate_out = fills[0]
    each = "" if len(fills) == 1 else " a host"
    return f"{rate_in / 1e6:.0f} MB/s written, {rate_out / 1e6:.0f} MB/s destaged{each}"


def _kept_up(result: AssessedRun, fills: list[_Fill]) -> dict[str, float]:
    """The hosts of ``fills`` whose own backlog stayed under :data:`KEPT_UP` of what the fluid
    model holds by the run's end (from empty at ``t = 0``: the buffer's capacity times the run's
    share of the fill time, at most all of it), each with its largest backlog in the measured
    window (bytes). None without samples in the window."""
    end = result.window[1]
    window = window_series(result)
    capacity = float(result.meta["scenario"]["cluster"]["destager"]["capacity"])
    kept = {}
    for host, fill, _, _ in fills:
        column = f"backlog.{host}"
        if not len(window) or column not in window.columns:
            continue
        seen = float(window[column].max())
        if seen < KEPT_UP * capacity * min(1.0, end / fill):
            kept[host] = seen
    return kept


def _kept_up_note(
    result: AssessedRun, fills: list[_Fill], kept: dict[str, float]
) -> ValidityWarning:
    """A ``fill_time`` note for buffers the run shows keeping up though the fluid model fills
    them: what the run did, then the model's figures as what sustained load would do (behind a
    controller cache, once that cache is full: the model drains at the spindles' pace)."""
    one = len(fills) == 1
    seen = human_size(max(kept[fill[0]] for fill in fills), 3)
    did = (
        f"{_buffers(fills)} kept up in this run ({'its backlog' if one else 'their backlogs'} "
        f"at most {seen})"
    )
    _, fill, rate_in, rate_out = fills[0]
    each = "" if one else " a host"
    cache = float(result.meta["scenario"]["array"].get("controller_cache") or 0)
    if cache > 0:
        said = (
            f"{did}: the array's {human_size(cache, 3)} controller cache takes destaged writes "
            "as fast as they come until it is full. Once it is, the estimate's fluid model "
            f"drains {rate_out / 1e6:.0f} MB/s against {rate_in / 1e6:.0f} MB/s written{each}, "
            f"so {'it' if one else 'each'} would then fill in about {fill:.3g} s: the figures "
            "hold until then, not for sustained load (then writes wait for the array)"
        )
    else:
        said = (
            f"{did}, though the estimate's fluid model, at the groups' peak rates "
            f"({rate_in / 1e6:.0f} MB/s written against {rate_out / 1e6:.0f} MB/s destaged"
            f"{each}), fills {'it' if one else 'each'} in about {fill:.3g} s from empty: the "
            "figures hold for write bursts shorter than that, not for sustained peak load (then "
            "writes wait for the array)"
        )
    return ValidityWarning("fill_time", _components(fills), "short", said)


def _duty_period(duty: dict[str, Any]) -> float:
    if duty["shape"] == "onoff":
        return float(duty["on"]) + float(duty["off"])
    if duty["shape"] == "sine":
        return float(duty["period"])
    return float(duty["interval"]) * len(duty["levels"])


def _fill_times(scenario: Scenario | dict[str, Any]) -> list[tuple[str, float, float, float]]:
    """(host, fill time s, write rate, drain rate in bytes/s) of each destage buffer that fills, by
    the estimate's fluid model.

    Empty when the scenario cannot be estimated (the estimate's own errors are its business, not the
    run's).
    """
    from simcache.base.errors import ScenarioError
    from simcache.estimate import estimate
    from simcache.sim.control import ESTIMATED_CHAINS_MAX

    if isinstance(scenario, dict):
        # at most
        chains = len(scenario.get("groups", [])) * int(scenario.get("cluster", {}).get("hosts", 1))
    else:
        chains = sum(len(scenario.group_hosts(g)) for g in scenario.groups)
    if chains > ESTIMATED_CHAINS_MAX:
        # past that many chains the estimate can take seconds: the run's own backlog series speaks
        # instead
        return []
    try:
        fluids = estimate(scenario).destager
    except (ScenarioError, ValueError, ArithmeticError):
        return []
    return [
        (f.host, f.fill_time_s, f.accept_rate_bytes_s, f.drain_rate_bytes_s)
        for f in fluids
        if math.isfinite(f.fill_time_s) and f.fill_time_s > 0
    ]


def empty_window(result: AssessedRun) -> list[ValidityWarning]:
    """No I/O issued in the measured window, though the run issued some: every figure of the
    summary is empty, and its unfinished count (the window's) says 0 however many of the
    warm-up's I/Os never completed (review 65: a trace replayed at one timestamp issued 20,000
    I/Os at time 0, inside the warm-up, and 2,766 were still unfinished at the end)."""
    summary = result.summary
    stuck = len(result.unfinished)
    issued = int(result.meta.get("ios", 0)) + stuck  # completed, and still in flight
    if not issued or float((summary["count"] + summary["unfinished"]).sum()) > 0:
        return []
    start, end = result.window
    ios = "its one I/O" if issued == 1 else f"its {issued:,} I/Os"
    return [
        ValidityWarning(
            "empty_window",
            "window",
            "short",
            f"no I/O was issued in the measured window ({start:g} s to {end:g} s): the run "
            f"issued {ios} during the warm-up ({stuck:,} of them unfinished at the "
            "end), so every figure of the summary is empty; shorten run.warmup, or give the "
            "workload I/Os after it",
        )
    ]


def few_samples(result: AssessedRun) -> list[ValidityWarning]:
    summary = result.summary
    total = summary["count"] + summary["unfinished"]
    parts = []
    for column, q in PERCENTILES.items():
        needed = samples_needed(q)
        thin = summary[(total > 0) & (total < needed)]
        if not len(thin):
            continue
        # with the unfinished, which a percentile counts (the table's count column does not)
        named = [
            f"{g} {op}s ({n:,}{f', {u:,} of them unfinished' if u else ''})"
            for g, op, n, u in zip(
                thin["group"], thin["op"], total[thin.index], thin["unfinished"], strict=True
            )
        ]
        more = f" and {len(named) - _LISTED} more" if len(named) > _LISTED else ""
        parts.append(f"{column} needs {needed:,}: {', '.join(named[:_LISTED])}{more}")
    if not parts:
        return []
    return [
        ValidityWarning(
            "few_samples",
            "percentiles",
            "short",
            f"few I/Os behind some percentiles ({'; '.join(parts)}): with fewer than 10 I/Os "
            "beyond it a percentile is "
            f"the worst few I/Os, not a stable figure; run longer",
        )
    ]


def late_events(result: AssessedRun) -> list[ValidityWarning]:
    end = float(result.meta["simulated_s"])
    warnings = []
    for event in result.meta["scenario"]["events"]:
        at = float(event["at"])
        if at >= end:
            what = "vMotion" if event["kind"] == "vmotion" else "host failure"
            warnings.append(
                ValidityWarning(
                    "event_after_end",
                    f"{event['kind']}@{at:g}s",
                    "short",
                    f"the {what} scheduled at {at:g} s is at or after the run's end ({end:g} s): "
                    "it never happens in this run; "
                    f"run for longer than {at:g} s to see it",
                )
            )
    return warnings
