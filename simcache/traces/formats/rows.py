"""What the line-by-line trace importers share: rows gathered in lists and handed to the builder a
block at a time.

A text trace is read one line at a time; :class:`RowBuffer` keeps the I/Os
of the current block in plain lists (cheap appends) and turns them into one
:class:`~simcache.traces.trace.TraceChunk` every :data:`~simcache.traces.trace.BLOCK_ROWS`
rows, so memory stays bounded whatever the file's size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from simcache.traces.trace import BLOCK_ROWS, TraceBuilder, TraceChunk

__all__ = ["RowBuffer", "TimeOrder", "time_order_note"]

# TraceChunk's fields, in its order
_CHUNK_FIELDS = ("time", "op", "offset", "size", "device", "latency")


class RowBuffer:
    """I/O rows collected for ``builder``: :meth:`add` one at a time, :meth:`flush` at the end.

    Times are seconds on the trace's clock, offsets and sizes bytes,
    latencies seconds (NaN when the trace has none for that I/O).
    """

    def __init__(self, builder: TraceBuilder, block_rows: int = BLOCK_ROWS):
        self.builder = builder
        self.block_rows = block_rows
        self.count = 0
        """Rows added so far (flushed or not)."""
        self._reset()

    def _reset(self) -> None:
        self.time: list[float] = []
        self.op: list[int] = []
        self.offset: list[int] = []
        self.size: list[int] = []
        self.device: list[int] = []
        self.latency: list[float] = []

    def add(
        self, time: float, op: int, offset: int, size: int, device: int, latency: float = math.nan
    ) -> None:
        self.time.append(time)
        self.op.append(op)
        self.offset.append(offset)
        self.size.append(size)
        self.device.append(device)
        self.latency.append(latency)
        self.count += 1
        if len(self.time) >= self.block_rows:
            self.flush()

    def flush(self) -> None:
        """Hand the rows gathered so far to the builder as one chunk, in time order.

        Sorting each block (stably: equal times keep their order) means the
        first row the builder sees is the earliest of its block, so the
        trace's time origin is normally an I/O's own time, not a difference.
        """
        if not self.time:
            return
        chunk = TraceChunk.from_lists(
            self.time, self.op, self.offset, self.size, self.device, self.latency
        )
        if bool(np.any(np.diff(chunk.time) < 0)):
            order = np.argsort(chunk.time, kind="stable")
            chunk = TraceChunk(*(getattr(chunk, name)[order] for name in _CHUNK_FIELDS))
        self.builder.add(chunk)
        self._reset()


class TimeOrder:
    """A trace file's rows as they come, counted when out of time order: earlier than a row
    above them. Replay takes the rows sorted by time; the count and the first such line are kept
    in the trace's description (:meth:`meta`), so the import says the file was re-sorted
    (:func:`time_order_note`) rather than doing it silently (review 65: concatenated per-CPU
    outputs)."""

    def __init__(self, per_second: float, field: str) -> None:
        self.per_second = per_second
        """Clock units a second (``1e9`` for nanoseconds)."""
        self.field = field
        """The time's name in the format (for messages)."""
        self.late_rows = 0
        self.first_line: int | None = None
        self.largest_jump = 0.0
        """The longest step forward from the latest time above a row to the row's, clock units."""
        self.largest_jump_line: int | None = None
        self._latest = -math.inf

    def see(self, times: np.ndarray, lines: np.ndarray) -> None:
        """Rows at ``times`` (on the file's clock, any unit) from file lines ``lines``, in file
        order."""
        if not len(times):
            return
        times = np.asarray(times, dtype=np.float64)
        before = np.maximum.accumulate(np.concatenate(([self._latest], times[:-1])))
        late = np.flatnonzero(times < before)
        if len(late):
            self.late_rows += len(late)
            if self.first_line is None:
                self.first_line = int(lines[late[0]])
        if math.isfinite(self._latest) or len(times) > 1:
            jumps = times - before
            jumps[0] = times[0] - self._latest if math.isfinite(self._latest) else 0.0
            longest = int(np.argmax(jumps))
            if jumps[longest] > self.largest_jump:
                self.largest_jump = float(jumps[longest])
                self.largest_jump_line = int(lines[longest])
        self._latest = max(self._latest, float(times.max()))

    def see_one(self, time: float, line: int) -> None:
        """One row at ``time`` from line ``line``."""
        if time < self._latest:
            self.late_rows += 1
            if self.first_line is None:
                self.first_line = line
            return
        if math.isfinite(self._latest) and time - self._latest > self.largest_jump:
            self.largest_jump = time - self._latest
            self.largest_jump_line = line
        self._latest = time

    def meta(self) -> dict[str, Any]:
        """What the trace's description keeps: ``out_of_order`` rows and the ``first_out_of_order``
        line (or null); the ``largest_gap`` in seconds between a row and the latest above it,
        at ``largest_gap_line`` of the ``time_field`` (so that a timestamp that jumps decades is
        reported at its line, not as the length of a run nobody wrote)."""
        return {
            "out_of_order": self.late_rows,
            "first_out_of_order": self.first_line,
            "largest_gap": self.largest_jump / self.per_second,
            "largest_gap_line": self.largest_jump_line,
            "time_field": self.field,
        }


def time_order_note(meta: Mapping[str, Any], unit: str = "row") -> list[str]:
    """The warning that a trace's ``unit`` (row, I/O line) were out of time order and were sorted
    (:meth:`TimeOrder.meta` in the description ``meta``), or none."""
    late = int(meta.get("out_of_order") or 0)
    if not late:
        return []
    return [
        f"{late:,} {unit}{'' if late == 1 else 's'} out of time order (the first at line "
        f"{meta['first_out_of_order']}): "
        "sorted by time, so the replay issues each I/O at its timestamp; if the file is a "
        "concatenation of per-CPU or per-host outputs this is expected, else check its lines"
    ]
