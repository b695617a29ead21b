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
from typing import Any, NamedTuple

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
    "PATH_REMOTE_HIT",
    "PATH_WRITE",
    "PEER_TIER",
    "RECORD_COLUMNS",
    "RECORD_FIELDS",
    "SIZE",
    "VM",
    "Record",
    "RecordBlocks",
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
    Field(
        "destage_wait",
        "s",
        "wait for destage-buffer space (a write); for the holders' destage of its old host's writes (a read of a VM "
        "restarted by HA, or of one whose host's tier failed)",
    ),
    Field("array", "s", "time in the backing array"),
    Field("path", "", "PATH_WRITE, PATH_HIT, PATH_MISS or PATH_REMOTE_HIT"),
)
"""The fields of a :data:`Record`, in order."""

VM, IS_WRITE, SIZE, ISSUED, COMPLETED, LOCAL_TIER, NETWORK, PEER_TIER, DESTAGE_WAIT, ARRAY, PATH = range(len(RECORD_FIELDS))
Record = tuple[int, bool, int, float, float, float, float, float, float, float, int]
"""One completed I/O, fields as in :data:`RECORD_FIELDS`."""

PATHS = ("write", "hit", "miss", "remote_hit")
"""The ``path`` column's value for each path number: a ``remote_hit`` is a read of a VM moved by a vMotion served from
its old host's cache over the peer network (peer_tier: the old host's tier; network: the request and the data back)."""
PATH_WRITE, PATH_HIT, PATH_MISS, PATH_REMOTE_HIT = range(len(PATHS))

_COMPONENT_FIELDS = range(LOCAL_TIER, ARRAY + 1)
COMPONENTS = tuple(f"{RECORD_FIELDS[i].name}_ms" for i in _COMPONENT_FIELDS)
"""The latency breakdown's columns (ms): they add up to ``latency_ms``."""

RECORD_COLUMNS = ("vm", "group", "host", "op", "path", "size_bytes", "issue_s", "complete_s", "latency_ms", *COMPONENTS)
"""The records table's columns (units in the names; see :mod:`simcache.results`)."""


class RecordBlocks:
    """Completed records a field apart, each field one float64 array that grows by half when full.

    Large arrays are mapped from the system and given back when freed, so the
    records table, built from them field by field (:meth:`take`), does not sit
    on top of their memory; many small blocks would stay in the allocator's heap.
    """

    GROWTH = 1.5

    def __init__(self) -> None:
        self.count = 0
        self._fields: list[np.ndarray] = [np.empty(0) for _ in RECORD_FIELDS]

    def drain(self, records: list[Record]) -> None:
        """Move the tuples of ``records`` (rows in :data:`RECORD_FIELDS` order) to the end of the fields."""
        if not records:
            return
        data = np.array(records, dtype=np.float64)
        records.clear()
        end = self.count + len(data)
        for i, column in enumerate(self._fields):
            if len(column) < end:
                grown = np.empty(max(end, int(len(column) * self.GROWTH), 4096))
                grown[: self.count] = column[: self.count]
                self._fields[i] = column = grown
            column[self.count : end] = data[:, i]
        self.count = end

    def take(self, i: int) -> np.ndarray:
        """Field ``i`` of every record so far; the store lets go of it (take each field once)."""
        column, self._fields[i] = self._fields[i], np.empty(0)
        return column[: self.count]


def drain(records: list[Record], blocks: RecordBlocks) -> None:
    """Move the tuples of ``records`` into ``blocks`` (:meth:`RecordBlocks.drain`)."""
    blocks.drain(records)


def _categorical(names: Sequence[str], vm_index: np.ndarray) -> Any:
    """A text column as a categorical: row ``r``'s value is ``names[vm_index[r]]``; categories in sorted order, so that the
    column sorts and groups as the plain strings would (a code of one or two bytes a row instead of an 8-byte
    reference)."""
    categories = sorted(set(names))
    code_of = {name: code for code, name in enumerate(categories)}
    dtype = np.int8 if len(categories) < 128 else np.int16 if len(categories) < 32768 else np.int32
    per_vm = np.array([code_of[name] for name in names], dtype=dtype)
    codes: np.ndarray = per_vm[vm_index]
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(categories))  # a pandas.Categorical (its stubs mistype it)


def _moved_hosts(vm_hosts: Sequence[str], vm_index: np.ndarray, issued: np.ndarray, moves: Sequence[tuple[int, float, str]]) -> Any:
    """The host column when VMs moved: each row names its VM's host, or the host of its VM's last move issued before it."""
    ordered = sorted(moves, key=lambda move: move[1])
    names = [*vm_hosts, *(name for _, _, name in ordered)]
    row_host = vm_index.copy()
    for k, (vm, at, _) in enumerate(ordered):
        row_host[(vm_index == vm) & (issued >= at)] = len(vm_hosts) + k
    return _categorical(names, row_host)


def records_frame(
    records: Sequence[Record],
    vm_names: Sequence[str],
    vm_groups: Sequence[str],
    vm_hosts: Sequence[str],
    blocks: RecordBlocks | None = None,
    moves: Sequence[tuple[int, float, str]] = (),
) -> pd.DataFrame:
    """The records table: one row per record (``blocks`` first, then ``records``), sorted by completion time then VM name.

    ``vm_names``, ``vm_groups`` and ``vm_hosts`` give each VM index's name,
    group name and host name; ``moves`` (VM index, time, host name) say that a VM ran on another host from
    that time on (HA restarts): its I/Os issued from then on name that host. ``blocks`` (from :func:`drain`) is consumed:
    each field is let go of as soon as its column is built, and the
    columns are put in their final order as they are built, so the records
    never exist twice. Text columns are categoricals (a one- or two-byte code
    a row; categories sorted, so they sort and group like the strings).
    """
    store = blocks if blocks is not None else RecordBlocks()
    store.drain(list(records))

    def take(i: int) -> np.ndarray:
        """Field ``i`` of every record (the store lets go of it)."""
        return store.take(i)

    vm_index = take(VM).astype(np.int64)
    completed = take(COMPLETED)
    # sort_values(["complete_s", "vm"], kind="stable"): by completion time, then VM name, then record order.
    names = np.array(vm_names, dtype=object)
    name_rank = np.argsort(np.argsort(names, kind="stable"), kind="stable") if len(names) else np.empty(0, dtype=np.int64)
    order = np.lexsort((name_rank[vm_index], completed)) if len(completed) else np.empty(0, dtype=np.int64)
    # Each column is put in order as it is built, with as few full-length temporaries as possible (a 10-million-I/O
    # replay's table is about 1.4 GB).
    vm_index = vm_index[order]
    completed = completed[order]
    issued = take(ISSUED)[order]
    latency = completed - issued
    latency *= 1e3
    columns: dict[str, Any] = {
        "vm": _categorical(vm_names, vm_index),
        "group": _categorical(vm_groups, vm_index),
        "host": _categorical(vm_hosts, vm_index) if not moves else _moved_hosts(vm_hosts, vm_index, issued, moves),
    }
    del vm_index
    columns["op"] = _categorical(("read", "write"), (take(IS_WRITE) > 0).astype(np.int8)[order])
    columns["path"] = _categorical(PATHS, take(PATH).astype(np.int8)[order])
    columns["size_bytes"] = take(SIZE).astype(np.int64)[order]
    columns["issue_s"] = issued
    columns["complete_s"] = completed
    columns["latency_ms"] = latency
    for name, i in zip(COMPONENTS, _COMPONENT_FIELDS, strict=True):
        component = take(i)[order]
        component *= 1e3
        columns[name] = component
    # copy=False: each column stays its own array; pandas would otherwise copy them all into one 2D block.
    return pd.DataFrame(columns, copy=False)
