"""Runs too short to tell (``severity == "short"``; :mod:`simcache.results.validity` lists every
kind): too few samples after the warm-up to test for growth, a warm-up shorter than a duty cycle or
a destage buffer's fill time, a run that ends before a buffer could fill, percentiles resting on
few I/Os, and scheduled events at or after the run's end."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from simcache.base.metrics import PERCENTILES
from simcache.base.units import format_figure
from simcache.results.assessed import AssessedRun, ValidityWarning, samples_needed
from simcache.results.trend import MIN_SAMPLES
from simcache.spec import Scenario

__all__ = ["few_samples", "late_events", "short_warmup", "untested"]

_LISTED = 4  # rows named in a few-samples warning


def untested(result: AssessedRun, series: pd.DataFrame) -> list[ValidityWarning]:
    """Too few samples after the warm-up for the growth test (:data:`MIN_SAMPLES`): said, so that
    a run nothing was found in is not taken for one found steady."""
    start, end = result.window
    interval = float(result.meta["scenario"]["run"]["sample_interval"])
    longest = start + MIN_SAMPLES * interval
    # rounded down to three digits, so that the interval advised does give the samples
    most = (end - start) / MIN_SAMPLES
    step = 10.0 ** (math.floor(math.log10(most)) - 2) if most > 0 else 1.0
    most = math.floor(most / step) * step
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


def short_warmup(
    result: AssessedRun,
    scenario: Scenario | dict[str, Any],
    filling: set[str],
) -> list[ValidityWarning]:
    """Warm-up shorter than a duty-cycle period or a destage buffer's fill time (hosts in
    ``filling`` are reported already)."""
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
    warnings = []
    for host, fill, rate_in, rate_out in _fill_times(scenario):
        component = f"backlog.{host}"
        if component in filling or warmup >= fill:
            continue
        rates = f"{rate_in / 1e6:.0f} MB/s written, {rate_out / 1e6:.0f} MB/s destaged"
        if fill >= end:
            warnings.append(
                ValidityWarning(
                    "fill_time",
                    component,
                    "short",
                    f"the run ({end:g} s) ends before {host}'s destage buffer could fill "
                    f"({fill:.3g} s from empty at {rates}, "
                    "by the estimate's fluid model): its figures hold for write bursts shorter "
                    "than that, not for sustained load "
                    f"(then writes wait for the array)",
                )
            )
        else:
            constants.append(
                (
                    fill,
                    component,
                    f"the time {host}'s destage buffer takes to fill ({fill:.3g} s from empty at "
                    f"{rates})",
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


def few_samples(result: AssessedRun) -> list[ValidityWarning]:
    summary = result.summary
    total = summary["count"] + summary["unfinished"]
    parts = []
    for column, q in PERCENTILES.items():
        needed = samples_needed(q)
        thin = summary[(total > 0) & (total < needed)]
        if not len(thin):
            continue
        named = [
            f"{g} {op}s ({n:,})"
            for g, op, n in zip(thin["group"], thin["op"], total[thin.index], strict=True)
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
