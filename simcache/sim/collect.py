"""The per-I/O records a run collects: their schema, in one place, and the records table built from
them.

Each VM hands one record per completed I/O to the run's :class:`RecordBuffer`
(:meth:`RecordBuffer.add`, its fields as arguments), which packs it as 11 float64 into one byte
buffer (``librt.strings.BytesWriter``): 88 bytes and no Python object per record (a tuple held about
300 bytes, and building, converting and freeing tuples cost 4% more of a run's instructions than
packing: 494.9 -> 475.8 M in 6 simulated seconds of the default, compiled). The fields are
:data:`RECORD_FIELDS`, in that order; code reads them by the index constants below
(``record[ISSUED]``), never by bare position. At every sample the engine moves the buffer's records
into typed column blocks (:meth:`RecordBuffer.take`, :class:`RecordBlocks`: each field an
``array.array`` of the narrowest type that holds its values exactly, 40 bytes per I/O in most runs,
at most 45), so a long run holds few packed ones. :func:`records_frame` turns the blocks (and any
tuples given) into the ``records`` table of :class:`simcache.results.result.Result` (columns in
:data:`RECORD_COLUMNS`), most columns the blocks' own arrays: 53 to 56 bytes per I/O (one- or
two-byte categorical codes for the text columns, ``size_bytes`` uint32, times and ``latency_ms``
float64, the latency components float32, see :data:`COMPONENT_DTYPE`).

A run without records (``simulate(..., keep_records=False)``) gives the records
to :class:`simcache.sim.stream.StreamStats` at each sample instead.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any, Final, NamedTuple

import numpy as np
import pandas as pd
from librt.strings import BytesWriter, write_f64_le

__all__ = [
    "ARRAY",
    "BLOCK_BYTES_PER_IO",
    "BLOCK_BYTES_PER_IO_NARROW",
    "BUFFER_ROWS",
    "COMPLETED",
    "COMPONENTS",
    "COMPONENT_DTYPE",
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
    "RECORD_BYTES",
    "RECORD_COLUMNS",
    "RECORD_FIELDS",
    "SECTOR",
    "SIZE",
    "VM",
    "Record",
    "RecordBlocks",
    "RecordBuffer",
    "drain",
    "records_frame",
    "take_rows",
]


class Field(NamedTuple):
    """One field of a record: its name, unit ("" for indices and flags) and meaning."""

    name: str
    unit: str
    meaning: str


RECORD_FIELDS = (
    Field(
        "vm", "", "the VM's index in the run (its name, group and host are looked up for the table)"
    ),
    Field("is_write", "", "true for a write"),
    Field("size", "bytes", "payload size"),
    Field("issued", "s", "simulated time the VM issued the I/O"),
    Field("completed", "s", "simulated time the VM saw it complete"),
    Field(
        "local_tier",
        "s",
        "time in the local tier (the latency components add up to completed - issued)",
    ),
    Field("network", "s", "time on the network, compression CPU and acknowledgements included"),
    Field("peer_tier", "s", "time in the slowest replica leg's peer tier"),
    Field(
        "destage_wait",
        "s",
        "wait for destage-buffer space (a write); for the holders' destage of its old host's "
        "writes (a read of a VM "
        "restarted by HA, or of one whose host's tier failed)",
    ),
    Field("array", "s", "time in the backing array"),
    Field("path", "", "PATH_WRITE, PATH_HIT, PATH_MISS or PATH_REMOTE_HIT"),
)
"""The fields of a :data:`Record`, in order."""

# The record fields' positions (Final: the compiled engine reads them as constants, not module
# attributes).
VM: Final = 0
IS_WRITE: Final = 1
SIZE: Final = 2
ISSUED: Final = 3
COMPLETED: Final = 4
LOCAL_TIER: Final = 5
NETWORK: Final = 6
PEER_TIER: Final = 7
DESTAGE_WAIT: Final = 8
ARRAY: Final = 9
PATH: Final = 10
# The positions above are written out (Final), not derived from RECORD_FIELDS: each names its field,
# in order.
assert [field.name for field in RECORD_FIELDS] == [
    "vm",
    "is_write",
    "size",
    "issued",
    "completed",
    "local_tier",
    "network",
    "peer_tier",
    "destage_wait",
    "array",
    "path",
]
Record = tuple[int, bool, int, float, float, float, float, float, float, float, int]
"""One completed I/O, fields as in :data:`RECORD_FIELDS`."""

PATHS = ("write", "hit", "miss", "remote_hit")
"""The ``path`` column's value for each path number: a ``remote_hit`` is a read of a VM moved by
a vMotion served from its old host's cache over the peer network (peer_tier: the old host's tier;
network: the request and the data back)."""
PATH_WRITE: Final = 0
PATH_HIT: Final = 1
PATH_MISS: Final = 2
PATH_REMOTE_HIT: Final = 3
assert PATHS == ("write", "hit", "miss", "remote_hit")  # the PATH_ numbers above, in order

_COMPONENT_FIELDS: Final = range(LOCAL_TIER, ARRAY + 1)
COMPONENTS = tuple(f"{RECORD_FIELDS[i].name}_ms" for i in _COMPONENT_FIELDS)
"""The latency breakdown's columns (ms): they add up to ``latency_ms``."""

RECORD_COLUMNS = (
    "vm",
    "group",
    "host",
    "op",
    "path",
    "size_bytes",
    "issue_s",
    "complete_s",
    "latency_ms",
    *COMPONENTS,
)
"""The records table's columns (units in the names; see :mod:`simcache.results.result`)."""


COMPONENT_DTYPE = np.float32
"""The latency components' type in the blocks and the table (ms).

float32 keeps 24 significant bits: converting a component (a float64 in
seconds, times 1e3) rounds it by a relative error of at most 2**-24 = 6.0e-8,
under 0.06 us for any component under a second, and the five components add up
to ``latency_ms`` within 6.0e-8 of it (they are non-negative). The latency
itself, ``complete_s - issue_s``, stays exact: issue and completion times are
float64, and ``latency_ms`` is computed from them in float64.
"""

SECTOR: Final = 512
"""The unit a record's size is kept in while every size so far is a whole number of sectors (see
:class:`RecordBlocks`)."""

# Each block field's array type (array.array typecodes) and its numpy twin. The integer fields start
# at the narrowest type and widen when a value does not fit (RecordBlocks._fit), so every value is
# kept exactly.
_NUMPY: Final[dict[str, Any]] = {
    "B": np.uint8,
    "H": np.uint16,
    "I": np.uint32,
    "q": np.int64,
    "d": np.float64,
    "f": np.float32,
}
# narrowest first; "q" (int64) holds any size or VM index a run can have
_UNSIGNED: Final = ("B", "H", "I", "q")
_FIRST_CODES: Final[dict[int, str]] = {
    VM: "B",  # the VM's index: one byte for runs of up to 256 VMs, widened by _fit
    IS_WRITE: "B",  # is_write (bit 0) and path (bits 1-2) share one byte: see _FLAGS
    # the payload in 512-byte sectors (up to 32 MiB - 512 B); widened to bytes, uint32 or int64, by
    # _fit
    SIZE: "H",
    ISSUED: "d",
    COMPLETED: "d",
    **{i: "f" for i in _COMPONENT_FIELDS},  # ms, rounded once to float32 (COMPONENT_DTYPE)
}
_FLAGS: Final = IS_WRITE
# the C types behind the codes
assert all(array(code).itemsize == np.dtype(_NUMPY[code]).itemsize for code in _NUMPY)
assert np.dtype(COMPONENT_DTYPE) == np.dtype(_NUMPY["f"])
BLOCK_BYTES_PER_IO = 4 + 1 + 4 + 8 + 8 + 5 * 4
"""Bytes one record takes in :class:`RecordBlocks` at most, for runs of fewer than 2**32 VMs
whose I/Os are under 4 GiB (45: vm 4 + flags 1 + size 4 + issued, completed 8 each + five float32
components 4 each). Most take :data:`BLOCK_BYTES_PER_IO_NARROW`:
:attr:`RecordBlocks.bytes_per_io` says what a run's blocks take."""
BLOCK_BYTES_PER_IO_NARROW = 1 + 1 + 2 + 8 + 8 + 5 * 4
"""Bytes one record takes in :class:`RecordBlocks` for a run of up to 256 VMs whose I/O sizes are
whole sectors under 32 MiB (40: vm 1 + flags 1 + size 2 + issued, completed 8 each + five float32
components 4 each)."""


class RecordBlocks:
    """Completed records a field apart, each field one ``array.array`` of the narrowest type that
    holds its values exactly (:attr:`bytes_per_io` bytes a record: 40 in most runs, at most
    :data:`BLOCK_BYTES_PER_IO`).

    - the VM index: one byte while the run has 256 VMs or fewer, else two, four or eight;
    - the flags (is_write, path): one byte;
    - the size: in 512-byte sectors in two bytes while every size is a whole number of sectors under
      32 MiB, else in bytes (uint32, or int64 past 4 GiB); :meth:`take` gives bytes as uint32 (int64
      past 4 GiB) either way;
    - issue and completion times: float64; the latency components: float32 ms
      (:data:`COMPONENT_DTYPE`).

    An array grows in place by about 1/16 of its length (CPython's ``array`` over-allocation through
    ``realloc``; a large one is a mapping the system moves without copying), and pages past the
    records' end are not resident until written, so a run holds about :attr:`bytes_per_io` bytes per
    record while it runs. The records table is built from the fields (:meth:`take`, most without a
    copy), each let go of once taken.
    """

    def __init__(self) -> None:
        self.count = 0
        self._fields: dict[int, array[Any]] = {i: array(code) for i, code in _FIRST_CODES.items()}
        self._size_unit = SECTOR
        """Bytes a unit of the size field stands for: :data:`SECTOR` while every size is whole
        sectors, else 1."""

    @property
    def bytes_per_io(self) -> int:
        """Bytes a record takes in the blocks as their fields' types now stand (40 to
        :data:`BLOCK_BYTES_PER_IO`)."""
        return sum(column.itemsize for column in self._fields.values())

    @property
    def nbytes(self) -> int:
        """Bytes the records held take (fields' rows; each array's over-allocation, at most about
        1/16, not counted)."""
        return sum(len(column) * column.itemsize for column in self._fields.values())

    def drain(self, records: list[Record]) -> None:
        """Move the tuples of ``records`` (rows in :data:`RECORD_FIELDS` order) to the end of the
        fields."""
        data = take_rows(records)
        if len(data):
            self.append(data)

    def append(self, data: np.ndarray) -> None:
        """Append ``data`` (one row per record, columns in :data:`RECORD_FIELDS` order, float64)."""
        if not len(data):
            return
        values = {
            VM: data[:, VM],
            _FLAGS: data[:, IS_WRITE] + 2 * data[:, PATH],
            SIZE: self._sizes(data[:, SIZE]),
            ISSUED: data[:, ISSUED],
            COMPLETED: data[:, COMPLETED],
            **{i: data[:, i] * 1e3 for i in _COMPONENT_FIELDS},  # ms, rounded once to float32
        }
        self._fit(VM, int(values[VM].max()))
        for i, value in values.items():
            column = self._fields[i]
            # exact: each value fits its type
            column.frombytes(value.astype(_NUMPY[column.typecode]).tobytes())
        self.count += len(data)

    def narrow(self) -> bool:
        """Whether every field still has its first (narrowest) type, sizes in sectors: the layout
        :meth:`extend_narrow` appends in."""
        return self._size_unit == SECTOR and all(
            self._fields[i].typecode == code for i, code in _FIRST_CODES.items()
        )

    def extend_narrow(self, columns: Sequence[bytes | memoryview], count: int) -> None:
        """Append ``count`` records given a field apart, each the bytes (or a view of them) of the
        field's first type (:data:`RECORD_FIELDS` order, the path in the flags byte: the fields of
        :meth:`take`) as :meth:`append` would store them; only while :meth:`narrow` (the native
        engine writes them: :mod:`simcache.sim.native_run`)."""
        if not self.narrow():
            raise ValueError("the record blocks were widened: append the records as rows")
        for column, data in zip(self._fields.values(), columns, strict=True):
            column.frombytes(data)
        self.count += count

    def _sizes(self, sizes: np.ndarray) -> np.ndarray:
        """``sizes`` (bytes, float64 holding whole numbers) in the size field's unit, the field
        widened if they need it."""
        if self._size_unit == SECTOR:
            sectors = sizes / SECTOR
            if (
                bool(np.all(sectors == np.floor(sectors)))
                and float(sectors.max()) <= np.iinfo(np.uint16).max
            ):
                return sectors
            # bytes from now on
            self._fields[SIZE] = self._widened(self._fields[SIZE], "I", scale=SECTOR)
            self._size_unit = 1
        self._fit(SIZE, int(sizes.max()))
        return sizes

    def _fit(self, i: int, top: int) -> None:
        """Widen field ``i`` to the narrowest unsigned type that holds ``top`` (no change if it
        does already)."""
        column = self._fields[i]
        if top <= np.iinfo(_NUMPY[column.typecode]).max:
            return
        code = next(code for code in _UNSIGNED if top <= np.iinfo(_NUMPY[code]).max)
        self._fields[i] = self._widened(column, code)

    @staticmethod
    def _widened(column: array[Any], code: str, scale: int = 1) -> array[Any]:
        """``column``'s values (times ``scale``) in a new array of type ``code`` (wider: every
        value fits)."""
        values = np.frombuffer(column, dtype=_NUMPY[column.typecode]).astype(_NUMPY[code])
        values *= scale
        wide = array(code)
        wide.frombytes(values.tobytes())
        return wide

    def take(self, i: int) -> np.ndarray:
        """Field ``i`` of every record so far (a view of the field's array, no copy, except the size
        kept in sectors); the store lets go of it (take each field once).

        ``IS_WRITE`` gives the flags byte: ``flags & 1`` is_write, ``flags >> 1`` the path. ``SIZE``
        gives bytes, as uint32 (int64 if a size is 4 GiB or more). ``VM`` gives the narrowest
        unsigned type that holds the indices.
        """
        column, self._fields[i] = self._fields[i], array(_FIRST_CODES[i])
        values: np.ndarray = (
            np.frombuffer(column, dtype=_NUMPY[column.typecode])
            if len(column)
            else np.empty(0, _NUMPY[column.typecode])
        )
        # sectors: bytes as uint32 (at most 65,535 x 512 < 2**32)
        if i == SIZE and column.typecode in ("B", "H"):
            values = values.astype(np.uint32)
            values *= self._size_unit
        return values


BUFFER_ROWS: Final = 65536
"""Completed I/Os' records held before they go to the blocks or the histograms, whatever the
sample interval (a 1,000,000-I/O-per-second model held a whole second of them, about 300 MB as
tuples, with 1 s samples)."""

# as RecordBuffer writes them: float64, little-endian
_RECORD_STRUCT: Final = struct.Struct(f"<{len(RECORD_FIELDS)}d")
RECORD_BYTES: Final = _RECORD_STRUCT.size
"""Bytes of one packed record in a :class:`RecordBuffer`: its :data:`RECORD_FIELDS` as float64
(88)."""
_UNPACK: Final = _RECORD_STRUCT.iter_unpack
_RECORD_DTYPE: Final = np.dtype("<f8")


class RecordBuffer:
    """Where the VMs put their completed I/Os (:meth:`add`): each record packed as
    :data:`RECORD_FIELDS` float64 (:data:`RECORD_BYTES` bytes, no Python object kept), handed to
    :attr:`sink` as a float64 array (a row a record, :meth:`take`) once it holds ``limit`` of them;
    the samples take the rest.

    When the records move does not change them or their order, so a run's records, histograms and
    counters are the same whatever the limit (sums may add the same figures in other groupings:
    equal within float rounding). The integer fields are exact in float64 (sizes below 2^53 bytes),
    as the tuples' conversion to the blocks made them.
    """

    def __init__(self, limit: int = BUFFER_ROWS):
        self.limit = limit
        self.sink: Callable[[np.ndarray], None] | None = None
        """Takes the records as :meth:`take` gives them (``StreamStats.add``,
        ``RecordBlocks.append``); None: they wait for the next sample."""
        self.count = 0
        self._packed = BytesWriter()

    def add(
        self,
        vm: int,
        is_write: bool,
        size: int,
        issued: float,
        completed: float,
        local_tier: float,
        network: float,
        peer_tier: float,
        destage_wait: float,
        array: float,
        path: int,
    ) -> None:
        """Record one completed I/O: its :data:`RECORD_FIELDS`, in order."""
        # Each field written as a float64 where it is (compiled, a native call: no float object, no
        # argument parsing; struct.pack_into took 11 new floats a record, 5% of the default run's
        # time).
        packed = self._packed
        write_f64_le(packed, float(vm))
        write_f64_le(packed, 1.0 if is_write else 0.0)
        write_f64_le(packed, float(size))
        write_f64_le(packed, issued)
        write_f64_le(packed, completed)
        write_f64_le(packed, local_tier)
        write_f64_le(packed, network)
        write_f64_le(packed, peer_tier)
        write_f64_le(packed, destage_wait)
        write_f64_le(packed, array)
        write_f64_le(packed, float(path))
        count = self.count + 1
        self.count = count
        if count >= self.limit:
            sink = self.sink
            if sink is not None:
                sink(self.take())

    def take(self) -> np.ndarray:
        """The records held, as one float64 array (a row each, columns in :data:`RECORD_FIELDS`
        order); the buffer is left empty. The array is read-only: a view of one copy of the
        records' bytes."""
        packed, count = self._packed, self.count
        self._packed = BytesWriter()
        self.count = 0
        fields = len(RECORD_FIELDS)
        return np.frombuffer(packed.getvalue(), dtype=_RECORD_DTYPE, count=count * fields).reshape(
            count, fields
        )

    def rows(self) -> list[Record]:
        """The records held (not taken), as :data:`Record` tuples, for inspection: a model run
        without a sample keeps all its records here."""
        held = self._packed.getvalue()
        return [
            (
                int(r[VM]),
                bool(r[IS_WRITE]),
                int(r[SIZE]),
                r[ISSUED],
                r[COMPLETED],
                r[LOCAL_TIER],
                r[NETWORK],
                r[PEER_TIER],
                r[DESTAGE_WAIT],
                r[ARRAY],
                int(r[PATH]),
            )
            for r in _UNPACK(held)
        ]


def take_rows(records: list[Record]) -> np.ndarray:
    """The tuples of ``records`` as one float64 array (a row each, columns in
    :data:`RECORD_FIELDS` order); clears the list."""
    # The tuples' fields in one stream: about 30% faster than np.array(records), which inspects each
    # tuple's shape.
    count = len(records) * len(RECORD_FIELDS)
    data = np.fromiter(chain.from_iterable(records), dtype=np.float64, count=count).reshape(
        len(records), len(RECORD_FIELDS)
    )
    records.clear()
    return data


def drain(records: list[Record], blocks: RecordBlocks) -> None:
    """Move the tuples of ``records`` into ``blocks`` (:meth:`RecordBlocks.drain`; the engine's
    buffer uses :meth:`RecordBuffer.take` and :meth:`RecordBlocks.append`)."""
    blocks.drain(records)


def _categorical(names: Sequence[str], vm_index: np.ndarray) -> Any:
    """A text column as a categorical: row ``r``'s value is ``names[vm_index[r]]``; categories in
    sorted order, so that the column sorts and groups as the plain strings would (a code of one
    or two bytes a row instead of an 8-byte reference)."""
    categories = sorted(set(names))
    code_of = {name: code for code, name in enumerate(categories)}
    dtype = np.int8 if len(categories) < 128 else np.int16 if len(categories) < 32768 else np.int32
    per_vm = np.array([code_of[name] for name in names], dtype=dtype)
    codes: np.ndarray = per_vm[vm_index]
    # a pandas.Categorical (its stubs mistype it)
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(categories))


def _moved_hosts(
    vm_hosts: Sequence[str],
    vm_index: np.ndarray,
    issued: np.ndarray,
    moves: Sequence[tuple[int, float, str]],
) -> Any:
    """The host column when VMs moved: each row names its VM's host, or the host of its VM's last
    move issued before it."""
    ordered = sorted(moves, key=lambda move: move[1])
    names = [*vm_hosts, *(name for _, _, name in ordered)]
    # the VM column may be one byte: the moved hosts' indices go past it
    row_host = vm_index.astype(np.int64)
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
    """The records table: one row per record (``blocks`` first, then ``records``), sorted by
    completion time then VM name.

    ``vm_names``, ``vm_groups`` and ``vm_hosts`` give each VM index's name, group name and host
    name; ``moves`` (VM index, time, host name) say that a VM ran on another host from that time on
    (HA restarts): its I/Os issued from then on name that host. ``blocks`` (from :func:`drain`) is
    consumed: each field is let go of as soon as its column is built, and the columns are put in
    their final order as they are built, so the records never exist twice. Text columns are
    categoricals (a one- or two-byte code a row; categories sorted, so they sort and group like the
    strings).
    """
    store = blocks if blocks is not None else RecordBlocks()
    store.drain(list(records))
    vm_index = store.take(VM)
    completed = store.take(COMPLETED)
    names = np.array(vm_names, dtype=object)
    name_rank = (
        np.argsort(np.argsort(names, kind="stable"), kind="stable")
        if len(names)
        else np.empty(0, dtype=np.int64)
    )
    order = _Order(completed, vm_index, name_rank)
    # Each column is put in order as it is built, in place where the records came in completion
    # order (the engine appends them as they complete): the table's columns are the blocks' own
    # arrays, and the records never exist twice.
    vm_index = order.apply(vm_index)
    completed = order.apply(completed)
    issued = order.apply(store.take(ISSUED))
    latency = completed - issued
    latency *= 1e3
    columns: dict[str, Any] = {
        "vm": _categorical(vm_names, vm_index),
        "group": _categorical(vm_groups, vm_index),
        "host": _categorical(vm_hosts, vm_index)
        if not moves
        else _moved_hosts(vm_hosts, vm_index, issued, moves),
    }
    del vm_index
    flags = order.apply(store.take(_FLAGS))
    columns["op"] = _categorical(("read", "write"), (flags & 1).astype(np.int8))
    columns["path"] = _categorical(PATHS, (flags >> 1).astype(np.int8))
    del flags
    columns["size_bytes"] = order.apply(store.take(SIZE))
    columns["issue_s"] = issued
    columns["complete_s"] = completed
    columns["latency_ms"] = latency
    for name, i in zip(COMPONENTS, _COMPONENT_FIELDS, strict=True):
        columns[name] = order.apply(store.take(i))
    # copy=False: each column stays its own array; pandas would otherwise copy them all into one 2D
    # block.
    return pd.DataFrame(columns, copy=False)


class _Order:
    """The table's row order (by completion time, then VM name, then record order) and how to put a
    column in it.

    Records come in completion order, so usually only runs of equal completion times (I/Os completed
    by one event) need reordering: those rows are rearranged in place. Records out of completion
    order (none from the engine) take a full sort, and each column a sorted copy.
    """

    def __init__(self, completed: np.ndarray, vm_index: np.ndarray, name_rank: np.ndarray):
        self.order: np.ndarray | None = None
        self.rows = self.sources = np.empty(0, dtype=np.intp)
        if len(completed) < 2:
            return
        if not bool(np.all(completed[1:] >= completed[:-1])):
            self.order = np.lexsort((name_rank[vm_index], completed))
            return
        tied = np.flatnonzero(completed[1:] == completed[:-1])
        rows = np.union1d(tied, tied + 1)
        # stable: record order among equals
        sources = rows[np.lexsort((name_rank[vm_index[rows]], completed[rows]))]
        moved = rows != sources
        self.rows, self.sources = rows[moved], sources[moved]

    def apply(self, column: np.ndarray) -> np.ndarray:
        """``column`` in the table's order (in place, unless the records needed a full sort)."""
        if self.order is not None:
            ordered: np.ndarray = column[self.order]
            return ordered
        if len(self.rows):
            column[self.rows] = column[self.sources]
        return column
