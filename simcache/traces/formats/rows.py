"""What the line-by-line trace importers share: rows gathered in lists and handed to the builder a
block at a time.

A text trace is read one line at a time; :class:`RowBuffer` keeps the I/Os
of the current block in plain lists (cheap appends) and turns them into one
:class:`~simcache.traces.trace.TraceChunk` every :data:`~simcache.traces.trace.BLOCK_ROWS`
rows, so memory stays bounded whatever the file's size.
"""

from __future__ import annotations

import math

import numpy as np

from simcache.traces.trace import BLOCK_ROWS, TraceBuilder, TraceChunk

__all__ = ["RowBuffer"]

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
