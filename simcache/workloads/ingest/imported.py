"""Imported files as scenarios: a :class:`~simcache.traces.formats.base.FileReading` placed on a
cluster.

:func:`import_workload` reads one file (the format guessed from its start when not given) and
returns an :class:`Imported`, whose :meth:`Imported.scenario` places the file's groups on a base
scenario's cluster (the built-in ``default`` unless told otherwise) and :meth:`Imported.toml` writes
them as a scenario file.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from pathlib import Path
from typing import Any

from simcache.base.errors import ScenarioError, WorkloadFileError
from simcache.base.units import parse_duration
from simcache.spec import Scenario, load_scenario
from simcache.spec.dump import toml_document
from simcache.spec.fields import MAX_SECONDS
from simcache.spec.load import builtin_scenarios, parse_toml, read_scenario_text
from simcache.spec.scenario import MAX_SCENARIO_NAME_CHARS, MIN_SAMPLE_INTERVAL, validate_scenario
from simcache.traces.formats import read_file
from simcache.traces.formats.base import FileReading

__all__ = ["DEFAULT_POLICY", "Imported", "import_workload"]

DEFAULT_POLICY = "WB+0"
"""The write policy imported groups get unless told otherwise (a file says what a VM does, not
how it is cached)."""


class Imported(FileReading):
    """What one file gave, with the ways to make it a scenario."""

    @classmethod
    def of(cls, reading: FileReading) -> Imported:
        """``reading`` (what a format module read) with the ways to make it a scenario."""
        return cls(
            **{field.name: getattr(reading, field.name) for field in dataclasses.fields(reading)}
        )

    def scenario_data(
        self, base: Scenario | str | Path | None = None, policy: str = DEFAULT_POLICY
    ) -> dict[str, Any]:
        """A scenario as plain tables: ``base``'s run, cluster and array (no events, variants or
        checks) with these groups.

        Groups without ``hosts`` are placed one per host, round robin; groups
        with the same ``colocate`` key (the disks of one VM) go on the same host. The
        run lasts :attr:`duration` when the file gives one, with a tenth of
        it as warm-up.
        """
        data = _base_tables(base)
        hosts = int(data["cluster"].get("hosts", 1))
        groups = []
        slots: dict[str, int] = {}
        for i, group in enumerate(self.groups):
            group = copy.deepcopy(group)
            # groups with the same key (one VM's disks) share a host
            key = group.pop("colocate", None)
            slot = i if key is None else slots.setdefault(str(key), len(slots))
            group.setdefault("policy", policy)
            group.setdefault("hosts", [slot % hosts])
            groups.append(group)
        run = dict(data.get("run", {}))
        if self.duration:
            # a window shorter than the finest sample a scenario takes (a file of a few I/Os)
            # runs that long, so the scenario is valid; its result says the run is too short
            duration = max(self.duration, MIN_SAMPLE_INTERVAL)
            run["duration"] = duration
            run["warmup"] = duration / 10
            configured = float(_seconds(run.get("sample_interval", 1.0)))
            run["sample_interval"] = max(MIN_SAMPLE_INTERVAL, min(configured, duration / 10))
        name = (
            "".join(c if c.isalnum() or c in "_.-" else "_" for c in self.source.stem)[
                :MAX_SCENARIO_NAME_CHARS
            ]
            or "imported"
        )
        return {
            "name": name,
            "description": f"imported from {self.source.name} ({self.format})",
            "run": run,
            "cluster": data["cluster"],
            "array": data["array"],
            "groups": groups,
            "expect": copy.deepcopy(self.expect),
        }

    def scenario(
        self, base: Scenario | str | Path | None = None, policy: str = DEFAULT_POLICY
    ) -> Scenario:
        """:meth:`scenario_data` validated: raises :class:`~simcache.base.errors.ScenarioError`
        naming the source file."""
        return validate_scenario(self.scenario_data(base, policy), str(self.source))

    def toml(
        self,
        base: Scenario | str | Path | None = None,
        policy: str = DEFAULT_POLICY,
        folder: Path | None = None,
    ) -> str:
        """The scenario as a TOML file, headed by what was imported and every warning.

        With ``folder`` (where the file will be written), trace paths are
        written relative to it, so the scenario and its trace can move together.
        """
        header = [f"Imported from {self.source} ({self.format}) by simcache import."]
        header += [f"{what}: {value}" for what, value in self.facts]
        header += [f"warning: {warning}" for warning in self.warnings]
        data = self.scenario_data(base, policy)
        if folder is not None:
            for group in data["groups"]:
                trace = group.get("workload", {}).get("trace")
                if trace is not None:
                    trace["path"] = os.path.relpath(trace["path"], folder.resolve())
        return toml_document(data, header)


def import_workload(path: str | Path, format: str | None = None, **options: Any) -> Imported:
    """Read a workload, measurement or trace file: groups, expectations, warnings and facts.

    ``options`` are the format's own (a CSV trace's column names and units,
    blkparse's event, vscsiStats' disk layout, ...). Turn the result into a
    scenario with :meth:`Imported.scenario` or a TOML file with :meth:`Imported.toml`.
    """
    imported = Imported.of(read_file(path, format, **options))
    _check_length(imported)
    return imported


def _check_length(imported: Imported) -> None:
    """Refuse a trace too long to replay, naming the line whose timestamp jumps furthest (one bad
    row, not a long trace, in practice) and the fixes, rather than leave it to a ``run.duration``
    error in a scenario the user never wrote (review 65, 8)."""
    trace = imported.trace
    if trace is None or imported.duration is None or imported.duration <= MAX_SECONDS:
        return
    meta = trace.meta
    window = "or replay a window of it (the trace's start and end in the scenario)"
    line = meta.get("largest_gap_line")
    if line is None:
        raise WorkloadFileError.at(
            imported.source,
            None,
            "",
            f"the trace lasts {trace.duration:.6g} s, more than the {MAX_SECONDS:g} s a run may; "
            f"{window}",
        )
    gap = float(meta["largest_gap"])
    raise WorkloadFileError.at(
        imported.source,
        line,
        str(meta.get("time_field", "time")),
        f"{_span_text(gap)} after the I/O before it, so the trace lasts {trace.duration:.6g} s, "
        f"more than the {MAX_SECONDS:g} s a run may: is the line damaged? Remove it, {window}",
    )


def _span_text(seconds: float) -> str:
    """Seconds for people, in years or days when that long."""
    for unit, scale in (("years", 365.25 * 86400), ("days", 86400.0)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.6g} s"


def _seconds(value: Any) -> float:
    return parse_duration(value) if isinstance(value, str) else float(value)


def _base_tables(base: Scenario | str | Path | None) -> dict[str, Any]:
    """The base scenario's tables as written (profile names kept), or a dump of a
    :class:`Scenario` object."""
    if isinstance(base, Scenario):
        return base.model_dump(mode="json", exclude_none=True)
    source = Path(base) if base is not None else builtin_scenarios()["default"]
    scenario = load_scenario(source)  # validates it, and finds a built-in by name
    path = source if source.exists() else builtin_scenarios()[str(source)]
    try:
        return parse_toml(read_scenario_text(path), str(path))
    except ScenarioError:  # changed since it was loaded: the loaded scenario's values
        return scenario.model_dump(mode="json", exclude_none=True)
