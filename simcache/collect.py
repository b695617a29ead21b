"""The per-I/O records a run collects: their schema, in one place, and the records table built from them.

Each VM appends one plain tuple per completed I/O to the run's record list
(a tuple literal is the cheapest thing to build on the engine's hot path).
Its fields are :data:`RECORD_FIELDS`, in that order; code reads them by the
index constants below (``record[ISSUED]``), never by bare position.
:func:`records_frame` turns the list into the ``records`` table of
:class:`simcache.results.Result` (columns in :data:`RECORD_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "ARRAY",
    "COMPLETED",
    "COMPONENTS",
    "DESTAGE_WAIT",
    "ISSUED",
    "IS_WRITE",
    "LOCAL_TIER",
    "NETWORK",
    "PATH",
    "PATHS",
    "PATH_HIT",
    "PATH_MISS",
    "PATH_WRITE",
    "PEER_TIER",
    "RECORD_COLUMNS",
    "RECORD_FIELDS",
    "SIZE",
    "VM",
    "Record",
    "records_frame",
]


class Field(NamedTuple):
    """One field of a record: its name, unit ("" for indices and flags) and meaning."""

    name: str
    unit: str
    meaning: str


RECORD_FIELDS = (
    Field("vm", "", "the VM's index in the run (its name, group and host are looked up for the table)"),
    Field("is_write", "", "true for a write"),
    Field("size", "bytes", "payload size"),
    Field("issued", "s", "simulated time the VM issued the I/O"),
    Field("completed", "s", "simulated time the VM saw it complete"),
    Field("local_tier", "s", "time in the local tier (the latency components add up to completed - issued)"),
    Field("network", "s", "time on the network, compression CPU and acknowledgements included"),
    Field("peer_tier", "s", "time in the slowest replica leg's peer tier"),
    Field("destage_wait", "s", "wait for destage-buffer space"),
    Field("array", "s", "time in the backing array"),
    Field("path", "", "PATH_WRITE, PATH_HIT or PATH_MISS"),
)
"""The fields of a :data:`Record`, in order."""

VM, IS_WRITE, SIZE, ISSUED, COMPLETED, LOCAL_TIER, NETWORK, PEER_TIER, DESTAGE_WAIT, ARRAY, PATH = range(len(RECORD_FIELDS))
Record = tuple[int, bool, int, float, float, float, float, float, float, float, int]
"""One completed I/O, fields as in :data:`RECORD_FIELDS`."""

PATHS = ("write", "hit", "miss")
"""The ``path`` column's value for each path number."""
PATH_WRITE, PATH_HIT, PATH_MISS = range(len(PATHS))

_COMPONENT_FIELDS = range(LOCAL_TIER, ARRAY + 1)
COMPONENTS = tuple(f"{RECORD_FIELDS[i].name}_ms" for i in _COMPONENT_FIELDS)
"""The latency breakdown's columns (ms): they add up to ``latency_ms``."""

RECORD_COLUMNS = ("vm", "group", "host", "op", "path", "size_bytes", "issue_s", "complete_s", "latency_ms", *COMPONENTS)
"""The records table's columns (units in the names; see :mod:`simcache.results`)."""


def records_frame(records: Sequence[Record], vm_names: Sequence[str], vm_groups: Sequence[str], vm_hosts: Sequence[str]) -> pd.DataFrame:
    """The records table: one row per record, sorted by completion time then VM name.

    ``vm_names``, ``vm_groups`` and ``vm_hosts`` give each VM index's name,
    group name and host name.
    """
    if records:
        data = np.array(records, dtype=np.float64)
    else:
        data = np.empty((0, len(RECORD_FIELDS)))
    vm_index = data[:, VM].astype(np.int64)
    issued = data[:, ISSUED]
    completed = data[:, COMPLETED]
    frame = pd.DataFrame(
        {
            "vm": np.array(vm_names, dtype=object)[vm_index],
            "group": np.array(vm_groups, dtype=object)[vm_index],
            "host": np.array(vm_hosts, dtype=object)[vm_index],
            "op": np.where(data[:, IS_WRITE] > 0, "write", "read"),
            "path": np.array(PATHS)[data[:, PATH].astype(np.int64)],
            "size_bytes": data[:, SIZE].astype(np.int64),
            "issue_s": issued,
            "complete_s": completed,
            "latency_ms": (completed - issued) * 1e3,
        }
    )
    for name, i in zip(COMPONENTS, _COMPONENT_FIELDS, strict=True):
        frame[name] = data[:, i] * 1e3
    return frame.sort_values(["complete_s", "vm"], kind="stable").reset_index(drop=True)
