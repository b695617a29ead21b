"""Uploaded workload files: kept under the trace cache, imported, and described for the page.

A non-TOML upload (fio job or JSON result, vscsiStats CSV, fio iolog,
blkparse text, MSR or plain CSV trace) is imported by
:func:`simcache.workloads.ingest.imported.import_workload`. A trace is replayed from its file
every time the scenario runs, long after the upload's request is gone, so the
uploaded bytes are kept in :func:`upload_folder`, named by their SHA-256
(:func:`store_upload`): the same file uploaded twice is stored once, and the
imported scenario's ``trace.path`` points there.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import simcache
from simcache.base.errors import WorkloadFileError, counted
from simcache.base.units import format_size
from simcache.traces.formats import FORMATS, guess_format, parse_options
from simcache.traces.trace import cache_folder
from simcache.workloads.ingest.imported import Imported, import_workload

__all__ = [
    "UPLOAD_LIMIT_BYTES",
    "ImportedUpload",
    "expectations_table",
    "facts_table",
    "groups_table",
    "guess_upload_format",
    "import_upload",
    "is_scenario_upload",
    "store_upload",
    "upload_folder",
    "workload_summary",
]

UPLOAD_LIMIT_BYTES = 100 * 1024**2
"""Largest workload file the page accepts (100 MiB, about a million trace lines). Import a bigger
trace with ``simcache import TRACE -o scenario.toml`` and upload the scenario, which names the
trace by its path."""


def is_scenario_upload(name: str) -> bool:
    """A ``.toml`` upload is a scenario; anything else is a workload file to import."""
    return Path(name).suffix.lower() == ".toml"


def upload_folder() -> Path:
    """Where uploaded workload files are kept: ``uploads/`` beside the trace cache
    (``$SIMCACHE_CACHE/uploads``)."""
    return cache_folder().parent / "uploads"


def store_upload(name: str, data: bytes) -> Path:
    """The uploaded bytes as ``<sha256>.<extension>`` in :func:`upload_folder` (written once,
    atomically).

    Raises :class:`WorkloadFileError` naming the upload when it is empty or over
    :data:`UPLOAD_LIMIT_BYTES`.
    """
    if len(data) > UPLOAD_LIMIT_BYTES:
        raise WorkloadFileError.at(
            name,
            None,
            "",
            f"the file is {len(data):,} bytes; the page takes workload files up to "
            f"{format_size(UPLOAD_LIMIT_BYTES)} "
            f"({UPLOAD_LIMIT_BYTES:,} bytes). "
            "Import a bigger trace with `simcache import FILE -o scenario.toml` and upload that "
            "scenario instead",
        )
    if not data:
        raise WorkloadFileError.at(name, None, "", "the file is empty")
    suffix = "".join(
        c for c in Path(name).suffix.lower() if c.isascii() and (c.isalnum() or c == ".")
    )[:12]
    folder = upload_folder()
    path = folder / f"{hashlib.sha256(data).hexdigest()}{suffix}"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".upload-")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)  # a concurrent upload of the same bytes writes the same file
    return path


def guess_upload_format(path: Path) -> str | None:
    """The format :func:`guess_format` sees in the stored upload, or None when it cannot tell."""
    try:
        return guess_format(path)
    except WorkloadFileError:
        return None


def import_upload(name: str, path: Path, format_name: str, options: str = "") -> Imported:
    """The stored upload ``path`` imported as ``format_name`` with the format's ``options``
    (``KEY=VALUE`` per line or separated by ``;``), named after the uploaded file ``name``.

    Errors name the uploaded file (not the stored copy) with the line and field the importer gave.
    """
    if format_name not in FORMATS:
        raise WorkloadFileError.at(
            name, None, "format", f"unknown format {format_name!r}; use one of {', '.join(FORMATS)}"
        )
    try:
        imported = import_workload(path, format_name, **parse_options(options))
    except WorkloadFileError as exc:
        raise WorkloadFileError(name, exc.problems) from None
    # The scenario's name, description and TOML header name the uploaded file; trace paths stay on
    # the stored copy.
    return dataclasses.replace(imported, source=Path(Path(name).name))


@dataclass(frozen=True)
class ImportedUpload:
    """An imported upload placed on a base scenario with a write policy for its groups."""

    imported: Imported
    base: str
    """The base scenario's file (its cluster and array are kept, profile names and all)."""
    policy: str

    def scenario(self) -> simcache.Scenario:
        return self.imported.scenario(self.base, self.policy)

    def toml(self) -> str:
        """The scenario as :meth:`Imported.toml` writes it: headed by the facts and warnings; a
        trace named by its stored path."""
        return self.imported.toml(self.base, self.policy)


def facts_table(imported: Imported) -> pd.DataFrame:
    return pd.DataFrame(imported.facts, columns=["what", "value"])


def groups_table(scenario: simcache.Scenario) -> pd.DataFrame:
    """One row per group: name, write policy, VMs, hosts and what each VM does."""
    rows = [
        {
            "group": group.name,
            "policy": group.policy,
            "VMs": group.vms_per_host * len(scenario.group_hosts(group)),
            "hosts": ", ".join(str(h) for h in scenario.group_hosts(group)),
            "workload": workload_summary(group.workload),
        }
        for group in scenario.groups
    ]
    return pd.DataFrame(rows, columns=["group", "policy", "VMs", "hosts", "workload"])


def workload_summary(workload: Any) -> str:
    """One VM's workload in a line: ``closed loop, 4 workers x 8 outstanding, 70% reads, 4KiB: 1,
    uniform over 10 GiB``."""
    if workload.mode == "trace":
        trace = workload.trace
        devices = ", ".join(trace.devices) if trace.devices else "every device"
        how = f"{trace.replay} replay" + (f" at {trace.speed:g}x" if trace.speed != 1 else "")
        return (
            f"{trace.format or 'block'} trace, "
            f"{'devices' if not trace.devices or len(trace.devices) > 1 else 'device'} {devices}, "
            f"{how}"
        )
    if workload.mode == "closed":
        workers = counted(workload.workers, "worker")
        intensity = f"closed loop, {workers} x {workload.outstanding} outstanding"
    elif workload.iops is not None:
        intensity = f"open loop, {workload.iops:g} IOPS"
    else:
        intensity = f"open loop, {workload.throughput / 1e6:g} MB/s"
    access = f"zipf {workload.zipf_theta:g}" if workload.access == "zipf" else workload.access
    return (
        f"{intensity}, {workload.read_fraction:.0%} reads, {_sizes_text(workload)}, {access} over "
        f"{format_size(workload.working_set)}"
    )


def _sizes_text(workload: Any) -> str:
    """``sizes 4KiB: 1``, or per op when reads and writes have their own mixes: ``read sizes
    4KiB: 1, write sizes 64KiB: 1``."""

    def mix(sizes: dict[str, float]) -> str:
        return ", ".join(f"{size}: {weight:g}" for size, weight in sizes.items())

    if not workload.per_op_sizes:
        return f"sizes {mix(workload.read_sizes or workload.sizes)}"
    read, write = workload.read_sizes or workload.sizes, workload.write_sizes or workload.sizes
    return f"read sizes {mix(read)}, write sizes {mix(write)}"


def expectations_table(imported: Imported) -> pd.DataFrame:
    """What a measurement file measured, as the checks a run is compared with: group, op, metric,
    bound."""
    rows = []
    for check in imported.expect:
        if "approx" in check:
            bound = f"≈ {check['approx']:g}" + (f" ± {check['rel']:.0%}" if "rel" in check else "")
        elif "at_least" in check and "at_most" in check:
            bound = f"{check['at_least']:g} to {check['at_most']:g}"
        elif "at_most" in check:
            bound = f"≤ {check['at_most']:g}"
        else:
            bound = f"≥ {check['at_least']:g}"
        rows.append(
            {
                "group": check.get("group", "all"),
                "op": check.get("op", "write"),
                "metric": check["metric"],
                "measured": check.get("field_figure", ""),
                "check": bound,
            }
        )
    return pd.DataFrame(rows, columns=["group", "op", "metric", "measured", "check"])
