"""A network's steps as row tables: one row per step of an op's path, in arrays by how its station
treats the step (:class:`FcfsRows`, :class:`FlowRows`, delays as plain :class:`Rows`).

A group's ops are laid out once as a template table, for its chain on host 0
(:func:`template_rows`); :func:`replicate_tables` moves a copy of it to each of the group's chains
(and of the destagers' table to each host). :class:`simcache.estimate.network.Network` builds
these tables and splits them by kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from simcache.estimate.paths import Op
from simcache.estimate.theory.numeric import Floats, Indices
from simcache.estimate.theory.queueing import expected_max_normal
from simcache.estimate.theory.stations import ALWAYS, DELAY, FLOW, PIPE, SPINDLE, Step

if TYPE_CHECKING:
    from simcache.estimate.layout import Layout

__all__ = [
    "CLOSED_FCFS",
    "CLOSED_FLOWS",
    "DELAYS",
    "MAX_PORTS",
    "OPEN_FCFS",
    "OPEN_FLOWS",
    "UNIFIED",
    "FcfsRows",
    "FlowRows",
    "Row",
    "Rows",
    "TableCopy",
    "port_scales",
    "replicate_tables",
    "switched_services",
    "template_rows",
    "unified",
]


MAX_PORTS = 3  # a flow crosses a source port, a target port and at most one shared fabric


class Rows:
    """Steps of one kind as arrays, one row per step (see :class:`Network`).

    ``rate`` indexes the rates (an op, or ``ops + h`` for host h's destage batches), ``slot`` the
    leg slot the step's time adds to, ``chain`` the closed chain of the op and ``local`` the leg
    slot among the closed ops only (closed rows). A state's key can switch a row's service: see
    :func:`switched`.
    """

    COMMON: ClassVar[int] = 8  # columns of _columns() shared by every kind of step

    def __init__(self, table: Floats):
        columns = table.T.copy()  # one contiguous row per column
        self.columns = columns
        indices = columns[[0, 1, 2, 3, 6, 7]].astype(np.intp)
        self.rate: Indices = indices[0]
        self.slot: Indices = indices[1]
        self.chain: Indices = indices[2]
        self.local: Indices = indices[3]
        self.switch: Indices = indices[4]
        self.host: Indices = indices[5]
        self.plain: Floats = columns[4]
        self.switched: Floats = columns[5]

    @staticmethod
    def _columns(row: Row) -> tuple[float, ...]:
        step = row.step
        switched = step.switched_service if step.switch != ALWAYS else step.service
        return (row.rate, row.slot, 0.0, 0.0, step.service, switched, step.switch, step.switch_host)

    @staticmethod
    def table(rows: list[tuple[float, ...]], width: int) -> Floats:
        """Row tuples as a 2-D array (``width`` columns, also when there are none)."""
        return np.array(rows, dtype=np.float64).reshape(len(rows), width)


class FcfsRows(Rows):
    """Steps at FCFS stations: tier channels, tier pipe, GC and admission servers, spindles."""

    WIDTH: ClassVar[int] = Rows.COMMON + 5

    def __init__(self, table: Floats):
        super().__init__(table)
        columns = self.columns
        self.station = columns[8].astype(np.intp)
        self.scv: Floats = columns[9]
        self.share: Floats = columns[10]
        self.spread: Floats = columns[11]
        self.timed: Floats = columns[12]

    @classmethod
    def row(cls, row: Row, spindles: int) -> tuple[float, ...]:
        return cls._columns(row) + cls._fcfs(row.step, spindles)

    @staticmethod
    def _fcfs(step: Step, spindles: int) -> tuple[float, ...]:
        """(station, scv, share, spread, timed): the arrivals per request at the station (a
        request's spindle operations spread uniformly over the spindles); E[max of that many
        normals] for a spindle step (a request waits for its slowest operation: mean + sd x
        that); 0 for a pipe step, whose service is already in its channel step (only its wait is
        on the path), else 1."""
        if step.kind == SPINDLE:
            return (
                step.station,
                step.scv,
                step.visits / spindles,
                expected_max_normal(step.visits),
                1.0,
            )
        return (step.station, step.scv, 1.0, 0.0, 0.0 if step.kind == PIPE else 1.0)


class FlowRows(Rows):
    """Transfers (processor sharing on each port they cross).

    ``ports`` is padded to three columns by repeating the first port, which leaves the slowest port
    alone; ``port_row`` and ``port_station`` list the real (row, port) pairs, for loads and queue
    lengths.
    """

    WIDTH: ClassVar[int] = Rows.COMMON + 2 * MAX_PORTS + 1

    def __init__(self, table: Floats):
        super().__init__(table)
        columns = self.columns
        # Port by port (one row per port column): each column a contiguous array.
        self.ports_t = columns[8 : 8 + MAX_PORTS].astype(np.intp)
        self.siblings_t = columns[8 + MAX_PORTS : 8 + 2 * MAX_PORTS]
        self.ports = self.ports_t.T
        real = np.arange(MAX_PORTS) < table[:, -1:]
        self.port_row = np.nonzero(real)[0]
        self.port_station = self.ports[real]

    @classmethod
    def row(cls, row: Row) -> tuple[float, ...]:
        return cls._columns(row) + cls._flow(row.step)

    @staticmethod
    def _flow(step: Step) -> tuple[float, ...]:
        """(ports padded, siblings on each, number of real ports)."""
        pad = MAX_PORTS - len(step.ports)
        ports = step.ports + (step.ports[0],) * pad
        siblings = step.siblings or (0.0,) * len(step.ports)
        return (*ports, *siblings, *(siblings[0],) * pad, len(step.ports))


def port_scales(rows: FlowRows, capacity: Floats) -> Floats:
    """Per real (row, port) pair of ``rows``: the port's busy seconds per second of the transfer's
    service.

    A transfer's service runs at the slowest port of its path (a host's 1GbE storage link in front
    of a 10GbE array port); a faster port on the path carries the same bytes in less of its own
    time, capacity(slowest) / capacity(port) of it, as the simulator's port counters measure it.
    """
    # padded columns repeat the first port: the minimum is the real ports'
    slowest = capacity[rows.ports].min(axis=1)
    scales: Floats = slowest[rows.port_row] / capacity[rows.port_station]
    return scales


@dataclass
class Row:
    """A step of a template op (see :func:`template_rows`): the op's index and the step's leg
    slot."""

    step: Step
    rate: int
    slot: int


@dataclass(frozen=True)
class TableCopy:
    """A template table moved to one chain (or a host's destager): see
    :func:`replicate_tables`."""

    table: Floats
    host: int
    rate_shift: int  # added to the template's rate indices
    first_op: int  # the copy's first op: its leg slots start at first_op * width
    first_closed: int  # the same among the closed ops; -1 for an open group's copy
    chain_slot: int  # a closed copy's chain among the closed chains


# Kinds of rows in a template table, the last column of UNIFIED (see template_rows).
OPEN_FCFS, CLOSED_FCFS, OPEN_FLOWS, CLOSED_FLOWS, DELAYS = range(5)
UNIFIED = FlowRows.WIDTH + 1


def unified(row: tuple[float, ...], kind: int) -> tuple[float, ...]:
    """A row of any kind padded to the template table's width, its kind last."""
    return row + (0.0,) * (UNIFIED - 1 - len(row)) + (float(kind),)


def switched_services(rows: Rows, on: npt.NDArray[np.bool_], scale: Floats) -> Floats:
    """Service times (s) of ``rows`` in a state: ``on[switch, host]`` picks the switched service,
    scaled by ``scale[switch, host]``."""
    flip = on[rows.switch, rows.host]
    return np.where(flip, rows.switched * scale[rows.switch, rows.host], rows.plain)


def template_rows(c: Layout, ops: list[Op], closed: bool, width: int) -> list[tuple[float, ...]]:
    """A group's rows for its chain on host 0, each padded by :func:`unified` and ending
    with its kind. Rates are the template's op indices and leg slots ``o * width + j`` (-1
    off the path): :func:`replicate_tables` moves them to each chain's ops."""
    rows: list[tuple[float, ...]] = []
    fcfs, flows = (CLOSED_FCFS, CLOSED_FLOWS) if closed else (OPEN_FCFS, OPEN_FLOWS)
    for o, op in enumerate(ops):
        steps = [(step, j) for j, leg in enumerate(op.legs) for step in leg] + [
            (step, width - 1) for step in op.after
        ]
        for step, j in steps:
            row = Row(step, o, o * width + j)
            if step.kind == DELAY:
                rows.append(unified(Rows._columns(row), DELAYS))
            elif step.kind == FLOW:
                rows.append(unified(FlowRows.row(row), flows))
            else:
                rows.append(unified(FcfsRows.row(row, c.services.spindles), fcfs))
        for step in op.background:
            # Off-path work (cache fills, spindles behind a controller cache, replicas that
            # follow the acknowledgement) loads its stations at the op's rate, as the
            # time-averaged queues see it.
            if step.kind == DELAY:
                # a delay off the path loads no station (a cache fill's command overhead)
                continue
            if step.kind == FLOW:
                rows.append(unified(FlowRows.row(Row(step, o, -1)), OPEN_FLOWS))
            else:
                rows.append(unified(FcfsRows.row(Row(step, o, -1), c.services.spindles), OPEN_FCFS))
    return rows


def replicate_tables(c: Layout, copies: list[TableCopy], width: int, dump: int) -> Floats:
    """The template tables (:func:`template_rows`) of ``copies`` one after the other, each moved
    to its copy: rates renumbered by ``rate_shift``, leg slots by ``first_op``, stations and
    switch hosts moved to the copy's host, and for a closed group (``first_closed`` >= 0) the
    chain's slot and its ops' leg slots among the closed ops (numbered from
    ``first_closed``)."""
    hosts = c.hosts
    out = np.concatenate([copy.table for copy in copies])
    sizes = [len(copy.table) for copy in copies]
    per_copy = np.array(
        [
            (copy.host, copy.rate_shift, copy.first_op, copy.first_closed, copy.chain_slot)
            for copy in copies
        ],
        dtype=np.float64,
    ).reshape(len(copies), 5)
    per_row = np.repeat(per_copy, sizes, axis=0)
    host, rate_shift, first_op, first_closed, chain_slot = per_row.T
    template_slot = out[:, 1].copy()
    on_path = template_slot >= 0
    closed = first_closed >= 0
    out[:, 3] = np.where(
        on_path & closed,
        template_slot + first_closed * width,
        np.where(closed, 0.0, out[:, 3]),
    )
    out[:, 2] = np.where(closed, chain_slot, out[:, 2])
    out[:, 1] = np.where(on_path, template_slot + first_op * width, dump)
    out[:, 0] += rate_shift
    # Switch hosts move to the copy's host; a compression lane keeps its port (see Layout.lane).
    out[:, 7] = (out[:, 7] % hosts + host) % hosts + out[:, 7] // hosts * hosts
    # Stations: the FCFS rows' one, the flows' ports (three columns); delays have none.
    kind = out[:, -1:]
    stations = out[:, 8:11]
    is_station = (kind < DELAYS) & ((np.arange(3) == 0) | (kind >= OPEN_FLOWS))
    per_host = c.per_host
    moved = ((stations // per_host + host[:, None]) % hosts) * per_host + stations % per_host
    out[:, 8:11] = np.where(is_station & (stations < c.shared), moved, stations)
    return out
