"""The per-I/O records a run collects: their schema, in one place, and the records table built from them.

Each VM appends one plain tuple per completed I/O to the run's record list
(a tuple literal is the cheapest thing to build on the engine's hot path).
Its fields are :data:`RECORD_FIELDS`, in that order; code reads them by the
index constants below (``record[ISSUED]``), never by bare position. At every
sample the engine moves the list's tuples into a float64 block
(:func:`drain`: 88 bytes per I/O instead of about 300 as tuples), so a long
run holds few tuples. :func:`records_frame` turns the blocks and what is left
in the list into the ``records`` table of :class:`simcache.results.Result`
(columns in :data:`RECORD_COLUMNS`), one column at a time.
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
    "drain",
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


def drain(records: list[Record], blocks: list[np.ndarray]) -> None:
    """Move the tuples of ``records`` into one float64 block (rows in :data:`RECORD_FIELDS` order) at the end of ``blocks``."""
    if records:
        blocks.append(np.array(records, dtype=np.float64))
        records.clear()


def records_frame(
    records: Sequence[Record],
    vm_names: Sequence[str],
    vm_groups: Sequence[str],
    vm_hosts: Sequence[str],
    blocks: Sequence[np.ndarray] = (),
) -> pd.DataFrame:
    """The records table: one row per record (``blocks`` first, then ``records``), sorted by completion time then VM name.

    ``vm_names``, ``vm_groups`` and ``vm_hosts`` give each VM index's name,
    group name and host name. Columns are built one at a time from the blocks
    and put in order as they are built, so the table never exists twice.
    Text columns hold references to one string per value (8 bytes a row).
    """
    parts = [*blocks, np.array(records, dtype=np.float64).reshape(-1, len(RECORD_FIELDS))]

    def field(i: int) -> np.ndarray:
        return np.concatenate([part[:, i] for part in parts]) if parts else np.empty(0)

    vm_index = field(VM).astype(np.int64)
    completed = field(COMPLETED)
    # sort_values(["complete_s", "vm"], kind="stable"): by completion time, then VM name, then record order.
    names = np.array(vm_names, dtype=object)
    name_rank = np.argsort(np.argsort(names, kind="stable"), kind="stable") if len(names) else np.empty(0, dtype=np.int64)
    order = np.lexsort((name_rank[vm_index], completed)) if len(completed) else np.empty(0, dtype=np.int64)
    vm_index = vm_index[order]
    completed = completed[order]
    issued = field(ISSUED)[order]
    frame = pd.DataFrame(
        {
            "vm": np.array(vm_names, dtype=object)[vm_index],
            "group": np.array(vm_groups, dtype=object)[vm_index],
            "host": np.array(vm_hosts, dtype=object)[vm_index],
            "op": np.array(["read", "write"], dtype=object)[(field(IS_WRITE)[order] > 0).astype(np.int64)],
            "path": np.array(PATHS, dtype=object)[field(PATH)[order].astype(np.int64)],
            "size_bytes": field(SIZE)[order].astype(np.int64),
            "issue_s": issued,
            "complete_s": completed,
            "latency_ms": (completed - issued) * 1e3,
        }
    )
    for name, i in zip(COMPONENTS, _COMPONENT_FIELDS, strict=True):
        frame[name] = field(i)[order] * 1e3
    return frame
