"""Results in words and tables: headline latencies, the percentile table and the compare table (the
bottleneck sentence is :mod:`simcache.results.bottleneck`'s, shared with the HTML report), and the
scenario as set in words.

Figures are for people (:func:`simcache.base.units.format_figure`): four significant digits in
tables, three in sentences, thousands separators, sizes in binary units with a space ("372.5 GiB");
every table column that holds a quantity names its unit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import pandas as pd

import simcache
from simcache.base.metrics import HEADLINE_PERCENTILES, PERCENTILES, SUMMARY_COLUMNS
from simcache.base.units import format_figure, human_size, round_figure
from simcache.physics.cluster import PortName
from simcache.results.assessed import ValidityWarning
from simcache.results.bottleneck import bottleneck_sentence as bottleneck_sentence
from simcache.results.bottleneck import component_name as component_name
from simcache.results.part_words import changed_fields, link_words
from simcache.results.validity import PINNED
from simcache.spec import ArraySpec, DriveSpec, TierSpec

TABLE_DIGITS = 4
"""Significant digits of a figure in a table (3 in a sentence): a simulated percentile carries no
more."""

_LABELS = {
    "count": "I/Os",
    "unfinished": "unfinished",
    "lower_bounds": "lower bounds",
    "iops": "IOPS",
    "mb_s": "MB/s",
    "mean_ms": "mean ms",
    "mean_ci95_ms": "± 95% ms",
    "max_ms": "max ms",
} | {name: f"p{q:g} ms" for name, q in PERCENTILES.items()}
PERCENTILE_COLUMNS = {"group": "group", "op": "op"} | {
    column: _LABELS[column] for column in SUMMARY_COLUMNS
}
"""The summary's columns as the percentile table shows them (a summary column without a label
fails here, at import)."""


def _port(column: object) -> PortName | None:
    """The port direction a series column's ``util.<port>`` names, None for other columns."""
    return (
        PortName.parse(str(column).removeprefix("util."))
        if str(column).startswith("util.")
        else None
    )


def headline(result: simcache.Result) -> dict[str, float]:
    """VM-observed latency over all groups: ``{"write p50": ms, "write p99": ms, "read p50": ...,
    "read p99": ...}``."""
    summary = result.summary
    everyone = summary[summary["group"] == "all"].set_index("op")
    return {
        f"{op} {p.removesuffix('_ms')}": float(everyone[p][op])
        for op in ("write", "read")
        for p in HEADLINE_PERCENTILES
    }


def headline_lower_bounds(result: simcache.Result) -> set[str]:
    """The :func:`headline` labels whose figure is only a lower bound: I/Os still unfinished at
    the end could lie past it (the summary's ``lower_bounds``), so the page shows them as
    ``>= value``."""
    summary = result.summary
    everyone = summary[summary["group"] == "all"].set_index("op")
    return {
        f"{op} {p.removesuffix('_ms')}"
        for op in ("write", "read")
        for p in HEADLINE_PERCENTILES
        if p in str(everyone["lower_bounds"][op]).split()
    }


def validity_warnings(result: simcache.Result) -> list[str]:
    """The run's validity warnings (``Result.warnings``) as the app shows them, instability
    first; the saturated components in one warning (each says the same offered load: a dozen
    ports and tiers were a dozen warnings of one form). A warm-up cut by the page's shorter run
    is left out: the page's line on what it ran says it
    (:func:`simcache_app.run_length.run_length_note`)."""
    warnings = [w for w in result.warnings if w.kind != "warmup_cut"]
    saturated = [w for w in warnings if w.kind == "overload"]
    shown = []
    if len(saturated) > 1:
        # the VMs' offered and served rates, the same in each (the array's adds its queue's)
        offered = saturated[0].message.partition("its offered load is above its capacity; ")[2]
        offered = offered.partition("; its spindle operations queued")[0]
        array = next((w.message for w in saturated if w.component == "array"), "")
        queued = array.partition("; its spindle operations queued")[2]
        offered += f"; the array's spindle operations queued{queued}" if queued else ""
        names = ", ".join(w.component for w in saturated)
        shown.append(
            f"**Unstable:** saturated while work piles up (busy {PINNED:.0%} or more of the "
            f"window: offered load above capacity): {names}; {offered}"
        )
        warnings = [w for w in warnings if w.kind != "overload"]
    return shown + [f"**{_lead(w)}:** {w.message}" for w in warnings]


_LEADS = {
    "warming": "Cache still warming",
    "destage_starved": "Destage held back by the tier",
    "empty_window": "Nothing measured",
}
"""The lead of a short-run note that is about what the run measured, not about its length."""


def _lead(warning: ValidityWarning) -> str:
    if warning.severity == "unstable":
        return "Unstable"
    return _LEADS.get(warning.kind, "Short run")


def format_ms(value: float) -> str:
    """A latency in a sentence or a metric: three significant digits (``0.0123 ms``, ``7.74 ms``,
    ``161 ms``, ``1,234 ms``); ``"no I/O"`` for NaN."""
    if not math.isfinite(value):
        return "no I/O"
    return f"{format_figure(value, 3)} ms"


def figures(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every float column rounded to :data:`TABLE_DIGITS` significant digits
    (values stay numbers, so the page's table still sorts them)."""
    rounded = table.copy()
    for column in rounded.columns:
        if pd.api.types.is_float_dtype(rounded[column]):
            rounded[column] = rounded[column].map(lambda v: round_figure(float(v), TABLE_DIGITS))
    return rounded


def percentile_table(result: simcache.Result) -> pd.DataFrame:
    """The summary with readable column names, rounded for display; groups with no I/O of an op
    dropped."""
    table = result.summary[result.summary["count"] > 0]
    return figures(table[list(PERCENTILE_COLUMNS)].rename(columns=PERCENTILE_COLUMNS))


def estimate_sentence(estimate: simcache.Estimate, scenario: simcache.Scenario) -> str:
    """The analytic estimate in one line: mean write latency per group and the bottleneck it names.

    ``"Instant estimate (queueing model, no simulation): writes 3.1 ms mean (db 2.2 ms, build 6.4
    ms); bottleneck the host0 1GbE peer link (sending), at 81% mean utilization."``, then its
    overloads and what it leaves out (its notes). The bottleneck is the one ``simcache estimate``
    names (:meth:`simcache.Estimate.named_bottleneck`): when an open-loop load overloads a part,
    the most overloaded, ``"bottleneck the host0 nvme-qlc-p5336 flash tier, overloaded: offered
    180% of its capacity."``

    An estimate of a run other than the file's (``simcache.estimate(scenario, duration=...)``,
    the page's shorter run) says its length: ``"Instant estimate of a 4.5 s run, not the file's
    20 s (queueing model, no simulation): ..."``.
    """
    ran, file = estimate.scenario.run.duration, scenario.run.duration
    of = f" of a {ran:g} s run, not the file's {file:g} s" if ran != file else ""
    groups = [group.name for group in scenario.groups if group.workload.read_fraction < 1.0]

    def mean(group: str) -> str:  # an overloaded cell's mean is infinite: no steady state
        value = estimate.mean_ms(group, "write")
        return "unbounded" if value == math.inf else format_ms(value)

    per_group = ", ".join(f"{name} {mean(name)}" for name in groups)
    named = estimate.named_bottleneck()
    load = named.load_words() if named.offered_load is None else f"overloaded: {named.load_words()}"
    writes = f"writes {mean('all')} mean ({per_group})" if groups else "no writes"
    overloads = "".join(
        f" Overload: {warning}." for warning in estimate.warnings if warning.kind == "overload"
    )
    left_out = "".join(f" Not in the estimate: {note}." for note in estimate.notes)
    return (
        f"Instant estimate{of} (queueing model, no simulation): {writes}; "
        f"bottleneck {component_name(named.component, scenario)}, {load}.{overloads}{left_out}"
    )


def busiest_peer_link(result: simcache.Result, scenario: simcache.Scenario) -> str | None:
    """``"the host0 1GbE peer link (sending), at 45%"``: the peer port with the highest mean
    utilization over the measurement window; None when no group replicates over the peer network."""
    means = result.window_means()
    columns = [
        c for c in means.index if (port := _port(c)) is not None and port.role in ("peer", "fabric")
    ]
    if not columns or all(group.replicas == 0 for group in scenario.groups):
        return None
    means = means[columns]
    busiest = str(means.idxmax())
    return f"{component_name(busiest.removeprefix('util.'), scenario)}, at {means.max():.0%}"


def peer_port_table(result: simcache.Result) -> pd.DataFrame:
    """Mean utilization (%) of every host's peer ports over the measurement window: one row per
    host and port (``peer``, or ``peer0``, ``peer1``, ... when hosts have several), sending and
    receiving."""
    means = result.window_means()
    rows = []
    for column in means.index:
        sending = _port(column)
        if sending is not None and sending.role == "peer" and sending.direction == "tx":
            receiving = dataclasses.replace(sending, direction="rx")
            rows.append(
                {
                    "host": f"host{sending.host}",
                    "port": sending.port,
                    "sending %": round(100 * float(means[column]), 1),
                    "receiving %": round(100 * float(means[f"util.{receiving.label}"]), 1),
                }
            )
    return pd.DataFrame(rows, columns=["host", "port", "sending %", "receiving %"])


def compare_table(
    results: Mapping[str, simcache.Result], scenarios: Mapping[str, simcache.Scenario]
) -> pd.DataFrame:
    """One row per variant: VM write/read p50/p99 over all groups, write p99 per group, and the
    bottleneck."""
    rows = []
    for name, result in results.items():
        row: dict[str, object] = {"variant": name}
        row |= {
            f"{key} ms": round_figure(value, TABLE_DIGITS)
            for key, value in headline(result).items()
        }
        writes = result.summary[
            (result.summary["op"] == "write") & (result.summary["group"] != "all")
        ]
        row |= {
            f"{g} write p99 ms": round_figure(float(p), TABLE_DIGITS)
            for g, p in zip(writes["group"], writes["p99_ms"], strict=True)
        }
        component, utilization = result.bottleneck()
        row["bottleneck"] = f"{component_name(component, scenarios[name])}, at {utilization:.0%}"
        row["busiest peer link"] = busiest_peer_link(result, scenarios[name]) or "no replicas"
        rows.append(row)
    return pd.DataFrame(rows)


def metric_label(metric: str) -> str:
    """Axis label of a sweep metric: ``"all.write.p99_ms"`` -> ``"write p99 (ms), all groups"``,
    ``"db.read.mb_s"`` -> ``"read MB/s, group db"``, ``"destage_backlog_bytes"`` -> ``"destage
    backlog (bytes)"``."""
    if metric.count(".") != 2:
        return _words(metric)
    group, op, name = metric.split(".")
    where = "all groups" if group == "all" else f"group {group}"
    return f"{op} {_words(name)}, {where}"


def _words(name: str) -> str:
    """A metric's name in words, its unit last: ``"peer_wire_mb_s"`` -> ``"peer wire MB/s"``,
    ``"p99_ms"`` -> ``"p99 (ms)"``."""
    for suffix, unit in (("mb_s", "MB/s"), ("iops", "IOPS")):
        if name == suffix or name.endswith("_" + suffix):
            return (name.removesuffix(suffix).replace("_", " ") + unit).strip()
    value, _, unit = name.rpartition("_")
    if unit in ("ms", "bytes") and value:
        return f"{value.replace('_', ' ')} ({unit})"
    return name.replace("_", " ")


def metric_unit(metric: str) -> str:
    """The unit of a sweep metric's values: ``"ms"``, ``"MB/s"``, ``"IOPS"``, ``"bytes"``,
    ``"I/Os"`` or ``"fraction"`` (a utilization, 0 to 1)."""
    name = metric.rsplit(".", 1)[-1]
    for suffix, unit in (
        ("_ms", "ms"),
        ("mb_s", "MB/s"),
        ("iops", "IOPS"),
        ("_bytes", "bytes"),
        ("utilization", "fraction"),
    ):
        if name.endswith(suffix):
            return unit
    return "I/Os" if name in ("count", "unfinished") else ""


def sweep_table(summary: pd.DataFrame, label: str, metric: str) -> pd.DataFrame:
    """The sweep's points as the page shows them: the swept value (its label carries its unit),
    the seeds, the mean of ``metric`` and its 95% half-width, both headed with the metric's unit."""
    unit = metric_unit(metric)
    suffix = f" ({unit})" if unit else ""
    shown = summary[[label, "seeds", metric, f"{metric}.ci95"]].rename(
        columns={metric: f"mean{suffix}", f"{metric}.ci95": f"± 95%{suffix}"}
    )
    table = figures(shown)
    # An interval is as precise as its mean, no more: 3.241 ± 0.0000000000003 (two seeds equal but
    # for rounding) is ± 0.
    table[f"± 95%{suffix}"] = [
        _like(half, mean)
        for half, mean in zip(table[f"± 95%{suffix}"], table[f"mean{suffix}"], strict=True)
    ]
    return table


def _like(value: float, reference: float) -> float:
    """``value`` rounded to the decimals :func:`round_figure` gives ``reference`` (at least its
    significant digits)."""
    if not (math.isfinite(value) and math.isfinite(reference)) or reference == 0:
        return value
    return round(value, max(0, TABLE_DIGITS - 1 - math.floor(math.log10(abs(reference)))))


def group_vms(scenario: simcache.Scenario, group_name: str, hosts: int | None = None) -> int:
    """VMs of group ``group_name``: its VMs per host times its hosts (all ``hosts`` of the
    cluster as set now, when the group names none)."""
    group = next(g for g in scenario.groups if g.name == group_name)
    count = (
        (hosts if hosts is not None else scenario.cluster.hosts)
        if group.hosts is None
        else len(group.hosts)
    )
    return group.vms_per_host * count


def scenario_summary(scenario: simcache.Scenario) -> str:
    """The scenario as set, in one line with figures for people: ``"4 hosts, 24 VMs in 3 groups
    (db 8, build 8, web 8); sata-ssd-s3700-field flash tier, 372.5 GiB per host; destager buffer
    2 GiB per host; 1 x 1GbE peer link per host; 1GbE storage link per host, to the array's 1GbE
    port; array-14x7200 array of 14 x 7,200 RPM spindles (raid10)"``.

    A part named by its profile says which of the profile's fields are set otherwise: a link's
    line rate as a figure (``"roce-100GbE at 25 Gbit/s"``), other fields by name (``"10GbE
    (latency changed)"``).
    """
    cluster, array = scenario.cluster, scenario.array
    vms = {group.name: group_vms(scenario, group.name) for group in scenario.groups}
    groups = ", ".join(f"{name} {format_figure(count)}" for name, count in vms.items())
    tier = cluster.tier
    rpm = array.drive.rpm
    drives = (
        f"{format_figure(rpm)} RPM spindles"
        if rpm is not None
        else f"{_profile(array.drive)}flash drives"
    )
    array_details = [array.raid, changed_fields(array, shown=("drive", "spindles", "raid", "port"))]
    return (
        f"{_count(cluster.hosts, 'host')}, {_count(sum(vms.values()), 'VM')} in "
        f"{_count(len(vms), 'group')} ({groups}); "
        f"{_profile(tier, shown=('capacity',))}{tier.kind} tier, "
        f"{human_size(tier.capacity)} per host; "
        f"destager buffer {human_size(cluster.destager.capacity)} per host; "
        f"{cluster.peer_links} x {link_words(cluster.peer_link)} peer link per host; "
        f"{link_words(cluster.storage_link)} storage link per host, to the array's "
        f"{link_words(array.port)} port; "
        f"{array.profile + ' ' if array.profile else ''}array of "
        f"{format_figure(array.spindles)} x {drives} "
        f"({'; '.join(filter(None, array_details))})"
    )


def _profile(spec: TierSpec | DriveSpec | ArraySpec, shown: tuple[str, ...] = ()) -> str:
    """The profile a part is named by and a space, with the fields set otherwise than the
    profile's (:func:`_changed`): ``"nvme-pm9a3 "``, ``"sata-7200 (rpm changed) "``; empty for a
    part named by no profile."""
    if not spec.profile:
        return ""
    changed = changed_fields(spec, shown)
    return f"{spec.profile} ({changed}) " if changed else f"{spec.profile} "


def _count(number: int, noun: str) -> str:
    """``"1 host"``, ``"1,024 hosts"``."""
    return f"{format_figure(number)} {noun}{'' if number == 1 else 's'}"
