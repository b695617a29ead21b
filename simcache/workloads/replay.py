"""Trace replay: a ``mode = "trace"`` workload's I/Os, read from the cached trace a block at a time.

:meth:`simcache.spec.TraceSpec.open` loads (and caches, per process) the trace a
:class:`~simcache.spec.TraceSpec` names; :meth:`~simcache.spec.TraceSpec.vm_devices`
says which trace device each VM of a group replays (the k-th VM replays
``devices[k mod n]``). A :class:`TraceStream` is one VM's replay: its reads
and writes in trace order, optionally inside a time window, sped up and
repeated. It holds one block of rows at a time, so memory does not grow with
the trace. Syncs and trims are counted by the trace's summary, not replayed.

Replay time: an I/O at trace time ``t`` in pass ``p`` (0-based) is issued at
``(t - start) / speed + p * period / speed``, where ``period`` is the window's
length (``end - start``), or, without an ``end``, the span from ``start`` to
the last I/O plus one mean gap (so the next pass does not start on top of
the last I/O).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from simcache.base.errors import plural
from simcache.spec import Scenario, Workload
from simcache.traces.trace import READ, WRITE, Trace

__all__ = ["BLOCK_ROWS", "TraceStream", "mean_equivalent"]

BLOCK_ROWS = 1 << 14
"""Trace rows a stream reads at a time (a refill holds at most this many)."""


class TraceStream:
    """One VM's replay of one trace device (the engine's counterpart of
    :class:`~simcache.workloads.generators.IOStream`)."""

    def __init__(self, workload: Workload, trace: Trace, device: str):
        assert workload.trace is not None
        spec = workload.trace
        self.workload = workload
        self.spec = spec
        self.trace = trace
        self.device = trace.devices.index(device)
        stats = trace.summary()[device]
        self.start = spec.start
        self.end = spec.end if spec.end is not None else np.inf
        if spec.end is not None:
            period = spec.end - spec.start
        else:
            span = max(0.0, stats.last - spec.start)
            period = span + span / max(1, stats.ios - 1)
        self.period = period / spec.speed
        self.remaining_passes = spec.repeat
        self.issued = 0
        self._times: list[float] = []
        self._ios: list[tuple[bool, int, int]] = []
        self._next = 0
        self._pass = -1
        self._rows: Iterator[np.ndarray] = iter(())

    def next_time(self) -> float | None:
        """Simulated time of the next I/O (open loop), or ``None`` when the replay is over."""
        if self._next >= len(self._ios) and not self._refill():
            return None
        return self._times[self._next]

    def next_io(self) -> tuple[bool, int, int] | None:
        """(is_write, size, offset) of the next I/O in trace order, or ``None`` when the replay
        is over."""
        if self._next >= len(self._ios) and not self._refill():
            return None
        io = self._ios[self._next]
        self._next += 1
        self.issued += 1
        return io

    def _refill(self) -> bool:
        rows = self.next_rows()
        if rows is None:
            return False
        times, writes, sizes, offsets = rows
        self._times = times.tolist()
        self._ios = list(zip(writes.tolist(), sizes.tolist(), offsets.tolist(), strict=True))
        self._next = 0
        return True

    def next_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The next rows of the replay, at most ``BLOCK_ROWS``, or ``None`` when it is over: their
        issue times (float64), whether each is a write (bool), their sizes and offsets (int64).
        What :meth:`next_io` reads from (the native engine reads them itself: then this
        stream's ``next_io`` and ``next_time`` do not see them)."""
        while True:
            block = next(self._rows, None)
            if block is None:
                if self._pass + 1 >= self.spec.repeat:
                    return None
                self._pass += 1
                self._rows = self.trace.blocks(BLOCK_ROWS)
                continue
            times = block["time"]
            keep = (block["device"] == self.device) & (
                (block["op"] == READ) | (block["op"] == WRITE)
            )
            keep &= (times >= self.start) & (times < self.end)
            if not keep.any():
                if times[0] >= self.end:
                    self._rows = iter(())  # past the window: this pass is over
                continue
            rows = block[keep]
            speed = self.spec.speed
            issue = (rows["time"] - self.start) / speed + self._pass * self.period
            return (
                np.ascontiguousarray(issue, dtype=np.float64),
                rows["op"] == WRITE,
                rows["size"].astype(np.int64),
                np.ascontiguousarray(rows["offset"], dtype=np.int64),
            )

    def rest(self, times: list[float], ios: list[tuple[bool, int, int]], issued: int) -> None:
        """Where the native engine left the replay: the rows it read but did not issue (their
        times and I/Os) and the I/Os issued so far; ``next_io`` goes on from there."""
        self._times = times
        self._ios = ios
        self._next = 0
        self.issued = issued


def mean_equivalent(scenario: Scenario) -> tuple[Scenario, list[str]]:
    """``scenario`` with each trace group replaced by a steady synthetic workload of the same mean
    load.

    The synthetic workload has the replayed window's mean rate (open replay:
    Poisson arrivals; closed replay: the same workers and outstanding I/Os),
    read fraction and size mix (its 64 most common sizes; one per op, as
    ``read_sizes`` and ``write_sizes``, when the reads' and writes' differ),
    and the mean span
    of the VMs' devices as working set. What it leaves out (bursts, the
    trace's own re-references, locality) is returned as notes.
    """
    groups = []
    replaced = []
    for group in scenario.groups:
        workload = group.workload
        spec = workload.trace
        if spec is None:
            groups.append(group)
            continue
        trace = spec.open()
        devices = spec.vm_devices(trace, scenario.group_vm_count(group))
        by_op: tuple[dict[int, int], dict[int, int]] = ({}, {})  # I/Os by size: reads, writes
        spans = []
        # VMs replaying one device: one pass over the trace
        counted: dict[str, tuple[dict[int, int], dict[int, int]]] = {}
        for device in devices:
            stream = TraceStream(workload, trace, device)
            if device not in counted:
                counted[device] = _window_counts(trace, stream.device, stream.start, stream.end)
            for total, counts in zip(by_op, counted[device], strict=True):
                for size, count in counts.items():
                    total[size] = total.get(size, 0) + count
            spans.append(trace.summary()[device].span)
        reads, writes = (sum(counts.values()) for counts in by_op)
        ios = reads + writes
        synthetic: dict[str, object] = {
            "read_fraction": reads / ios if ios else 0.0,
            **_size_fields(*by_op),
            "working_set": max(4096, int(sum(spans) / len(spans))),
            "compressibility": workload.compressibility,
        }
        if spec.replay == "open":
            period = TraceStream(workload, trace, devices[0]).period
            synthetic |= {
                "mode": "open",
                "iops": max(ios / len(devices) / period, 1e-9) if period > 0 else 1e-9,
            }
        else:
            depth = {
                "workers": workload.workers,
                "outstanding": workload.outstanding,
                "think_time": workload.think_time,
            }
            synthetic |= {"mode": "closed", **depth}
        groups.append(group.model_copy(update={"workload": Workload.model_validate(synthetic)}))
        replaced.append(group.name)
    if not replaced:
        return scenario, []
    its = plural(len(replaced), "its", "their")
    note = (
        f"{plural(len(replaced), 'group')} {', '.join(replaced)} "
        f"{plural(len(replaced), 'replays', 'replay')} a trace: estimated as a steady stream "
        "with the "
        "trace's mean rate, "
        f"read fraction and size mix (per op); {its} bursts and {its} own re-references are "
        "left out "
        "(simulate for them)"
    )
    return scenario.model_copy(update={"groups": groups}), [note]


def _size_fields(reads: dict[int, int], writes: dict[int, int]) -> dict[str, dict[str, float]]:
    """``sizes`` (the 64 most common sizes of all I/Os), or ``read_sizes`` and ``write_sizes``
    when both ops happen and their shares of sizes differ."""

    def mix(counts: dict[int, int]) -> dict[str, float]:
        common = sorted(
            ((size, count) for size, count in counts.items() if size > 0), key=lambda item: -item[1]
        )[:64]
        return {f"{size}B": float(count) for size, count in common} or {"4KiB": 1.0}

    def shares(counts: dict[int, int]) -> dict[int, float]:
        total = sum(counts.values())
        return {size: count / total for size, count in counts.items()}

    if reads and writes and shares(reads) != shares(writes):
        return {"read_sizes": mix(reads), "write_sizes": mix(writes)}
    both = dict(reads)
    for size, count in writes.items():
        both[size] = both.get(size, 0) + count
    return {"sizes": mix(both)}


def _window_counts(
    trace: Trace, device: int, start: float, end: float
) -> tuple[dict[int, int], dict[int, int]]:
    """Reads and writes by size of one device within [start, end) on the trace's clock."""
    by_op: tuple[dict[int, int], dict[int, int]] = ({}, {})
    for block in trace.blocks():
        keep = (block["device"] == device) & (block["time"] >= start) & (block["time"] < end)
        ops = block["op"][keep]
        sizes = block["size"][keep]
        for code, counted in zip((READ, WRITE), by_op, strict=True):
            values, counts = np.unique(sizes[ops == code], return_counts=True)
            for size, count in zip(values.tolist(), counts.tolist(), strict=True):
                counted[size] = counted.get(size, 0) + count
    return by_op
