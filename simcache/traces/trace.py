"""Block traces in a compact columnar form: built in chunks, cached on disk, read back in blocks.

A trace importer (:mod:`simcache.traces.formats`) turns a text trace into
:class:`TraceChunk` objects; a :class:`TraceBuilder` appends them to one
binary file of :data:`ROW` records and writes a small JSON description beside
it. A :class:`Trace` opens that file as a read-only numpy memmap, so a trace
of tens of millions of I/Os is never held in Python objects: replay
(:mod:`simcache.workloads.replay`) and statistics read it a block at a time.

The cache is keyed by the trace file's content hash, the format and the
import options (:func:`cache_key`), so a trace is parsed once however many
scenarios name it. The cache folder is ``$SIMCACHE_CACHE/traces`` or
``~/.cache/simcache/traces``.

Row fields: ``time`` in seconds from the trace's first I/O, ``op``
(:data:`READ`, :data:`WRITE`, :data:`SYNC`, :data:`TRIM`), ``offset`` and
``size`` in bytes, ``device`` (an index into :attr:`Trace.devices`) and
``latency`` in seconds as the trace measured it (NaN when it has none).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MAX_OFFSET",
    "MAX_OFFSET_WHY",
    "OP_NAMES",
    "READ",
    "ROW",
    "SYNC",
    "TRIM",
    "WRITE",
    "DeviceSummary",
    "Trace",
    "TraceBuilder",
    "TraceChunk",
    "cache_folder",
    "cache_key",
    "file_digest",
]

READ, WRITE, SYNC, TRIM = 0, 1, 2, 3
OP_NAMES = ("read", "write", "sync", "trim")
ROW = np.dtype(
    [
        ("time", "<f8"),
        ("offset", "<i8"),
        ("size", "<u4"),
        ("latency", "<f4"),
        ("device", "<u2"),
        ("op", "u1"),
    ]
)
"""One I/O: 27 bytes on disk and in memory."""
BLOCK_ROWS = 1 << 16
"""Rows read or written at a time: about 1.7 MB."""
MAX_OFFSET = 2**53
"""Largest byte offset of an I/O a trace format takes, 8 PiB: a replayed device's span becomes its
VM's working set, and a scenario holds none larger (the largest byte count a float holds exactly,
as the scenario's sizes). Review 65: an MSR row at offset 2^62 surfaced as a working-set error of a
scenario the user never wrote; the importers now refuse the row."""
MAX_OFFSET_WHY = (
    "8 PiB, the largest working set a scenario holds, which a replayed device's span becomes; an "
    "offset beyond it is a damaged line or another column"
)
"""Why :data:`MAX_OFFSET` is the limit, as the importers' refusals say it."""
_FORMAT_VERSION = 3  # part of every cache key: bump when ROW or the parsers' meaning changes


@dataclass
class TraceChunk:
    """Consecutive I/Os of a trace as parallel arrays (one entry per I/O).

    ``device`` holds indices into the builder's device names
    (:meth:`TraceBuilder.device`); ``latency`` is seconds or NaN. ``time``
    is seconds on the trace's own clock (the builder makes it relative to the
    first I/O).
    """

    time: np.ndarray
    op: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    device: np.ndarray
    latency: np.ndarray

    @classmethod
    def from_lists(
        cls,
        time: Sequence[float],
        op: Sequence[int],
        offset: Sequence[int],
        size: Sequence[int],
        device: Sequence[int],
        latency: Sequence[float] | None = None,
    ) -> TraceChunk:
        count = len(time)
        return cls(
            time=np.asarray(time, dtype=np.float64),
            op=np.asarray(op, dtype=np.uint8),
            offset=np.asarray(offset, dtype=np.int64),
            size=np.asarray(size, dtype=np.int64),
            device=np.asarray(device, dtype=np.int64),
            latency=np.full(count, np.nan)
            if latency is None
            else np.asarray(latency, dtype=np.float64),
        )

    def __len__(self) -> int:
        return len(self.time)


def file_digest(path: Path) -> str:
    """SHA-256 of the file's bytes, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while piece := handle.read(1 << 20):
            digest.update(piece)
    return digest.hexdigest()


def cache_key(digest: str, format_name: str, options: Mapping[str, Any]) -> str:
    """The cache entry's name: the content hash, the format, the import options and the row
    layout."""
    text = json.dumps(
        [digest, format_name, dict(sorted(options.items())), _FORMAT_VERSION],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cache_folder() -> Path:
    root = os.environ.get("SIMCACHE_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "simcache"
    return base / "traces"


class TraceBuilder:
    """Collects a trace's chunks into ``<folder>/<key>.rows`` and describes it in ``<key>.json``.

    Rows go to a temporary file that becomes the cache entry only when
    :meth:`finish` succeeds, so an interrupted or failed import leaves no
    half-written entry behind. Rows that arrive out of time order (blkparse's
    per-CPU buffers) are sorted once at the end.
    """

    def __init__(self, folder: Path, key: str):
        self.folder = folder
        self.key = key
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f"{key}.", suffix=".partial", dir=folder)
        self._file = os.fdopen(handle, "wb")
        self._partial = Path(name)
        self._devices: dict[str, int] = {}
        self._count = 0
        self._origin: float | None = None
        self._last_time = -np.inf
        self._sorted = True

    def device(self, name: str) -> int:
        """The index of device ``name`` (given in order of first appearance)."""
        code = self._devices.get(name)
        if code is None:
            if len(self._devices) >= np.iinfo(np.uint16).max:
                raise ValueError("more than 65,535 devices in one trace")
            code = self._devices[name] = len(self._devices)
        return code

    def add(self, chunk: TraceChunk) -> None:
        count = len(chunk)
        if count == 0:
            return
        if self._origin is None:
            self._origin = float(chunk.time[0])
        rows = np.empty(count, dtype=ROW)
        rows["time"] = chunk.time - self._origin
        rows["op"] = chunk.op
        rows["offset"] = chunk.offset
        rows["size"] = chunk.size
        rows["device"] = chunk.device
        rows["latency"] = chunk.latency
        times = rows["time"]
        if self._sorted and (times[0] < self._last_time or bool(np.any(np.diff(times) < 0))):
            self._sorted = False
        self._last_time = float(times[-1])
        self._file.write(rows.tobytes())
        self._count += count

    def abandon(self) -> None:
        self._file.close()
        self._partial.unlink(missing_ok=True)

    def finish(self, meta: Mapping[str, Any]) -> Trace:
        """Close the rows, sort them by time if needed, and write the description.

        ``meta`` says where the trace came from (``source``, ``format``,
        ``options``, counts of what the importer skipped, ...).
        """
        self._file.close()
        rows_path = self.folder / f"{self.key}.rows"
        if self._count and not self._sorted:
            rows = np.memmap(self._partial, dtype=ROW, mode="r+", shape=(self._count,))
            # A stable sort keeps the file's order among I/Os with the same timestamp.
            order = np.argsort(rows["time"], kind="stable")
            rows[:] = rows[order]
            first = float(rows["time"][0])
            if first < 0:  # the file's first I/O was not its earliest: time 0 is the earliest one
                rows["time"] -= first
                assert self._origin is not None
                self._origin += first
            rows.flush()
            del rows
        description = {
            **meta,
            "count": self._count,
            "devices": list(self._devices),
            "origin": self._origin,
            "row_format": _FORMAT_VERSION,
        }
        os.replace(self._partial, rows_path)
        meta_path = self.folder / f"{self.key}.json"
        meta_path.write_text(json.dumps(description, indent=1, default=str))
        return Trace.open(self.folder, self.key)


@dataclass(frozen=True, eq=False)
class Trace:
    """A cached trace: its rows (read-only memmap) and description."""

    rows_path: Path
    meta: dict[str, Any] = field(compare=False)

    @classmethod
    def open(cls, folder: Path, key: str) -> Trace:
        meta = json.loads((folder / f"{key}.json").read_text())
        return cls(folder / f"{key}.rows", meta)

    @classmethod
    def cached(cls, key: str, folder: Path | None = None) -> Trace | None:
        """The cache entry ``key`` if it is complete, else ``None``."""
        folder = cache_folder() if folder is None else folder
        meta, rows = folder / f"{key}.json", folder / f"{key}.rows"
        if not (meta.is_file() and rows.is_file()):
            return None
        trace = cls.open(folder, key)
        if rows.stat().st_size != trace.count * ROW.itemsize:
            return None
        return trace

    @property
    def count(self) -> int:
        return int(self.meta["count"])

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(self.meta["devices"])

    @property
    def rows(self) -> np.ndarray:
        """All rows as a read-only memmap (nothing is read until sliced)."""
        if self.count == 0:
            return np.empty(0, dtype=ROW)
        return np.memmap(self.rows_path, dtype=ROW, mode="r", shape=(self.count,))

    def blocks(self, rows: int = BLOCK_ROWS) -> Iterator[np.ndarray]:
        """The rows in order, ``rows`` at a time, each block read into memory of its own.

        Read from the file, not through the memmap: pages of a mapping a whole
        replay has touched would count as the process's memory until unmapped.
        """
        if self.count == 0:
            return
        with self.rows_path.open("rb") as handle:
            for start in range(0, self.count, rows):
                yield np.fromfile(handle, dtype=ROW, count=min(rows, self.count - start))

    @property
    def duration(self) -> float:
        """Seconds from the first I/O to the last one."""
        return float(self.rows["time"][-1]) if self.count else 0.0

    def measured_latency(
        self, percentiles: Sequence[float]
    ) -> dict[str, tuple[int, float, list[float]]]:
        """Per op (``read``, ``write``) with latencies in the trace: (I/Os, mean seconds, the
        percentiles in seconds).

        Only the I/Os the trace gave a latency are counted (NaN is none); the
        latencies are gathered one block at a time, 4 bytes per I/O.
        """
        found: dict[str, list[np.ndarray]] = {"read": [], "write": []}
        for block in self.blocks():
            latency = block["latency"]
            known = np.isfinite(latency)
            if not known.any():
                continue
            for op, code in (("read", READ), ("write", WRITE)):
                chosen = latency[known & (block["op"] == code)]
                if len(chosen):
                    found[op].append(chosen)
        result = {}
        for op, parts in found.items():
            if parts:
                values = np.concatenate(parts).astype(np.float64)
                result[op] = (
                    len(values),
                    float(values.mean()),
                    np.percentile(values, list(percentiles)).tolist(),
                )
        return result

    def summary(self) -> dict[str, DeviceSummary]:
        """Per device: I/O counts and bytes by op, the span of offsets and the first and last
        times (one pass)."""
        cached: dict[str, DeviceSummary] | None = self.__dict__.get("_summary")
        if cached is not None:
            return cached
        names = self.devices
        count = np.zeros((len(names), len(OP_NAMES)), dtype=np.int64)
        nbytes = np.zeros((len(names), len(OP_NAMES)), dtype=np.int64)
        largest = np.zeros((len(names), len(OP_NAMES)), dtype=np.int64)
        end = np.zeros(len(names), dtype=np.int64)
        first = np.full(len(names), np.inf)
        last = np.full(len(names), -np.inf)
        for block in self.blocks():
            device = block["device"].astype(np.int64)
            op = block["op"].astype(np.int64)
            np.add.at(count, (device, op), 1)
            np.add.at(nbytes, (device, op), block["size"].astype(np.int64))
            np.maximum.at(largest, (device, op), block["size"].astype(np.int64))
            np.maximum.at(end, device, block["offset"] + block["size"].astype(np.int64))
            np.minimum.at(first, device, block["time"])
            np.maximum.at(last, device, block["time"])
        result = {
            name: DeviceSummary(
                name=name,
                counts=dict(zip(OP_NAMES, count[i].tolist(), strict=True)),
                bytes=dict(zip(OP_NAMES, nbytes[i].tolist(), strict=True)),
                largest=dict(zip(OP_NAMES, largest[i].tolist(), strict=True)),
                span=int(end[i]),
                first=float(first[i]) if count[i].sum() else 0.0,
                last=float(last[i]) if count[i].sum() else 0.0,
            )
            for i, name in enumerate(names)
        }
        object.__setattr__(self, "_summary", result)
        return result


@dataclass(frozen=True)
class DeviceSummary:
    """One trace device's totals."""

    name: str
    counts: dict[str, int]
    """I/Os by op name (read, write, sync, trim)."""
    bytes: dict[str, int]
    largest: dict[str, int]
    """The largest I/O by op name, in bytes."""
    span: int
    """Bytes from 0 to the end of the furthest I/O."""
    first: float
    last: float

    @property
    def ios(self) -> int:
        """Reads and writes (what replay issues; syncs and trims are counted, not replayed)."""
        return self.counts["read"] + self.counts["write"]
