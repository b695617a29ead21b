"""Every chain's I/O paths as arrays, built once per scenario: a state only changes rates and
services.

:class:`Network` moves each group's template paths (:mod:`simcache.estimate.paths`)
to each of its chains, splits the steps into row tables by how a station treats
them (:mod:`simcache.estimate.row_tables`), and lays out the index lists an MVA step reads
(:class:`simcache.estimate.theory.mva_step.StepNetwork`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from simcache.estimate.paths import Op
from simcache.estimate.row_tables import (
    CLOSED_FCFS,
    CLOSED_FLOWS,
    DELAYS,
    OPEN_FCFS,
    OPEN_FLOWS,
    UNIFIED,
    FcfsRows,
    FlowRows,
    Row,
    Rows,
    TableCopy,
    port_scales,
    replicate_tables,
    switched_services,
    template_rows,
    unified,
)
from simcache.estimate.theory.mva_step import StepNetwork
from simcache.estimate.theory.numeric import Floats, sums
from simcache.estimate.theory.queueing import sakasegawa_exponent
from simcache.estimate.theory.state import FULL, StateKey
from simcache.estimate.theory.stations import (
    ADMISSION,
    ARRAY_RX,
    COMPRESSED,
    FLOW,
    PAST_CLIFF,
    PIPE_SLOT,
    STORAGE_TX,
    SWITCHES,
    TIER,
    Step,
)

if TYPE_CHECKING:
    from simcache.estimate.layout import Layout

__all__ = ["Network", "StateServices"]


@dataclass(frozen=True)
class StateServices:
    """Service times (s) of the network's rows in one state, and what follows from them (see
    :meth:`Network.services`)."""

    open_fcfs: Floats  # per open FCFS row
    open_flows: Floats  # per open flow row
    closed_base: Floats  # per closed FCFS row: its service on the path (0 for a pipe step)
    closed_svar: Floats  # per closed FCFS row: its service variance on the path (s^2)
    closed_flows: Floats  # per closed flow row
    delay_sums: Floats  # per leg slot: the delays on it
    closed_delays: Floats  # closed op x leg: the delays on it
    op_loads: Floats  # station loads per I/O per s of each op (see Network.op_loads)


class Network:
    """Every chain's ops as arrays, built once per scenario; a state only changes rates and
    services.

    Rows are split by how the station treats them. *Open* rows are evaluated as an open customer
    sees the station (time-averaged queues): open chains' paths, every op's off-path background
    (cache fills, a write-through's spindle work behind a controller cache) and the destagers.
    *Closed* rows are closed chains' paths, which see the other customers' queues less their own
    chain's share. Delays only add to their leg.

    Op ``o`` owns leg slots ``o * width`` to ``o * width + width - 1``: one per leg, the last for
    the steps after the join. Off-path rows add their time to the dump slot (``dump``), which
    nothing reads. Closed rows also have a ``local`` slot among the closed ops, which the fixed
    point iterates over. Rate indices ``0 .. len(ops) - 1`` are the ops, ``len(ops) + h`` host h's
    destage batches.
    """

    def __init__(self, c: Layout, templates: list[list[Op]]):
        hosts = c.hosts
        k = c.station_count
        self.stations = k
        self.hosts = hosts
        # each group's chains (one pass: 1,000 groups x 4,000 chains took 0.4 s)
        members: list[list[int]] = [[] for _ in templates]
        for i, ch in enumerate(c.chains):
            members[ch.group].append(i)
        self.count = count = sum(
            len(ops) * len(chains) for ops, chains in zip(templates, members, strict=True)
        )
        self.width = max((len(op.legs) for ops in templates for op in ops), default=1) + 1
        self.dump = count * self.width
        closed_chains = [i for i, ch in enumerate(c.chains) if ch.closed]
        self.closed_chains = closed_chains
        closed_slot = {chain: slot for slot, chain in enumerate(closed_chains)}
        copies: list[TableCopy] = []
        op_info: list[tuple[int, Op]] = []  # (chain, template op) per op, in op order
        first_op = 0
        first_closed = 0
        for ops, chains in zip(templates, members, strict=True):
            if not chains:
                continue
            closed = c.chains[chains[0]].closed
            table = Rows.table(template_rows(c, ops, closed, self.width), UNIFIED)
            for n, chain in enumerate(chains):
                shift = n * len(ops)
                closed_base = first_closed + shift if closed else -1
                copies.append(
                    TableCopy(
                        table,
                        c.chains[chain].host,
                        first_op + shift,
                        first_op + shift,
                        closed_base,
                        closed_slot.get(chain, 0),
                    )
                )
            op_info += [(chain, op) for chain in chains for op in ops]
            first_op += len(ops) * len(chains)
            if closed:
                first_closed += len(ops) * len(chains)
        # The destagers' rows come last, with placeholder services: each solution sets them
        # (Solver._set_destage).
        destage_steps = c.services.tier_steps(0, 1.0, 1.0, False, front=False) + [
            c.services.spindle_step(1.0, 1.0, 0.0)
        ]
        destage_flow = Step(FLOW, ports=(STORAGE_TX, c.shared + ARRAY_RX), service=1.0)
        destage = [
            unified(FcfsRows.row(Row(step, count, -1), c.services.spindles), OPEN_FCFS)
            for step in destage_steps
        ]
        destage.append(unified(FlowRows.row(Row(destage_flow, count, -1)), OPEN_FLOWS))
        destage_table = Rows.table(destage, UNIFIED)
        copies += [TableCopy(destage_table, h, h, count, -1, 0) for h in range(hosts)]
        merged = replicate_tables(c, copies, self.width, self.dump)
        kind = merged[:, -1]
        parts = [merged[kind == code] for code in range(DELAYS + 1)]
        # The destagers' rows are the last of the open FCFS rows and flows, host by host.
        per_host = len(destage_steps)
        open_rows, open_flows = (
            len(parts[OPEN_FCFS]) - hosts * per_host,
            len(parts[OPEN_FLOWS]) - hosts,
        )
        self.destage_fcfs = [
            slice(open_rows + h * per_host, open_rows + (h + 1) * per_host) for h in range(hosts)
        ]
        self.destage_flow = [open_flows + h for h in range(hosts)]
        self.open_fcfs = FcfsRows(parts[OPEN_FCFS][:, : FcfsRows.WIDTH])
        self.closed_fcfs = FcfsRows(parts[CLOSED_FCFS][:, : FcfsRows.WIDTH])
        self.open_flows = FlowRows(parts[OPEN_FLOWS][:, : FlowRows.WIDTH])
        self.closed_flows = FlowRows(parts[CLOSED_FLOWS][:, : FlowRows.WIDTH])
        self.delays = Rows(parts[DELAYS][:, : Rows.COMMON])
        self.op_chain_slot = np.array(
            [closed_slot.get(chain, len(closed_chains)) for chain, _ in op_info], dtype=np.intp
        )
        self.op_closed = np.array([c.chains[chain].closed for chain, _ in op_info], dtype=bool)
        self.closed_ops = np.flatnonzero(self.op_closed)
        self.op_open = (~self.op_closed).astype(np.float64)  # 1 for an open op
        self.closed_ports = {int(p) for p in self.closed_flows.port_station}
        capacity = np.array(c.capacity, dtype=np.float64)
        self.open_port_scale = port_scales(self.open_flows, capacity)
        self.closed_port_scale = port_scales(self.closed_flows, capacity)
        self._op_arrays(c, op_info)
        self._closed_arrays(c)
        self._station_arrays(c)
        self.step = self._step_network(c)
        self._users: dict[int, list[int]] | None = None
        self._plain: StateServices | None = None

    def _step_network(self, c: Layout) -> StepNetwork:
        """The lists an MVA step reads (see :mod:`simcache.mva_step`). Cells index flattened
        closed chain x station lists; a closed row's op is its index among the closed ops."""
        rows, flows, flows_c = self.closed_fcfs, self.open_flows, self.closed_flows
        k = self.stations
        row_cells = rows.chain * k + rows.station
        servers = np.array(c.servers, dtype=np.float64)
        closed = self.closed_ops
        return StepNetwork(
            stations=k,
            chains=len(self.closed_chains),
            per_server=self.per_server.tolist(),
            # 0 at ports: they have no FCFS wait
            fcfs_per_server=(np.where(c.is_port, 0.0, 1.0) / servers).tolist(),
            # Addressed units (Layout.addressed) are c M/G/1 queues, each with 1/c of the arrivals
            # (random routing): an arrival finds 1/c of the customers waiting at its unit
            # (fcfs_per_server), and that unit busy with probability rho (exponent 1), its residual
            # whole (0.5, not 0.5 / c).
            half_per_server=np.where(c.addressed, 0.5, 0.5 / servers).tolist(),
            exponent=[
                1.0 if addressed else sakasegawa_exponent(n)
                for n, addressed in zip(c.servers, c.addressed, strict=True)
            ],
            open_ports=flows.ports_t.tolist(),
            open_siblings=flows.siblings_t.tolist(),
            open_port_row=flows.port_row.tolist(),
            open_port_station=flows.port_station.tolist(),
            closed_station=rows.station.tolist(),
            closed_cell=row_cells.tolist(),
            closed_spread=rows.spread.tolist(),
            closed_share=rows.share.tolist(),
            closed_row_op=(rows.local // self.width).tolist(),
            closed_ports=flows_c.ports_t.tolist(),
            closed_siblings=flows_c.siblings_t.tolist(),
            closed_port_cells=(flows_c.chain * k + flows_c.ports_t).tolist(),
            closed_port_row=flows_c.port_row.tolist(),
            closed_flow_op=(flows_c.local // self.width).tolist(),
            closed_local_slots=np.concatenate((rows.local, flows_c.local)).tolist(),
            width=self.width,
            closed_missing=self.missing_legs[closed].ravel().tolist(),
            closed_op_chain=self.op_chain_slot[closed].tolist(),
            closed_cells=np.concatenate(
                (row_cells, flows_c.chain[flows_c.port_row] * k + flows_c.port_station)
            ).tolist(),
            think=[float(c.chains[chain].think) for chain in self.closed_chains],
        )

    def station_users(self, station: int) -> list[int]:
        """The ops whose paths cross ``station`` (they queue behind an overload there)."""
        if self._users is None:
            users: dict[int, set[int]] = {}
            for rows in (self.open_fcfs, self.closed_fcfs):
                for op, slot, k in zip(
                    rows.rate.tolist(), rows.slot.tolist(), rows.station.tolist(), strict=True
                ):
                    if slot != self.dump:
                        users.setdefault(k, set()).add(op)
            for flows in (self.open_flows, self.closed_flows):
                for row, k in zip(
                    flows.port_row.tolist(), flows.port_station.tolist(), strict=True
                ):
                    if flows.slot[row] != self.dump:
                        users.setdefault(k, set()).add(int(flows.rate[row]))
            self._users = {k: sorted(ops) for k, ops in users.items()}
        return self._users.get(station, [])

    def services(self, key: StateKey) -> StateServices:
        """Service times in the state ``key``: switched by its GC cliffs, full buffers and
        compression. The services with no switch on (most states) are computed once."""
        switched = any(key.gc) or FULL in key.buffer or any(key.compress)
        if not switched and self._plain is not None:
            return self._plain
        closed = self.closed_fcfs
        if switched:
            hosts = self.hosts
            # switch x lane (a host's lane is the host)
            flags = np.zeros((SWITCHES, len(key.compress)), dtype=bool)
            flags[PAST_CLIFF, :hosts] = key.gc
            flags[ADMISSION, :hosts] = [mode == FULL for mode in key.buffer]
            flags[COMPRESSED] = key.compress
            scale = np.ones(flags.shape)
            scale[ADMISSION, :hosts] = [1.0 / d if d > 0 else 0.0 for d in key.drain]
            closed_service = switched_services(closed, flags, scale)
            open_fcfs = switched_services(self.open_fcfs, flags, scale)
            open_flows = switched_services(self.open_flows, flags, scale)
            closed_flows = switched_services(self.closed_flows, flags, scale)
            delays = switched_services(self.delays, flags, scale)
        else:
            closed_service, open_fcfs, open_flows = (
                closed.plain,
                self.open_fcfs.plain,
                self.open_flows.plain,
            )
            closed_flows, delays = self.closed_flows.plain, self.delays.plain
        delay_sums = sums(self.delays.slot, delays, self.dump + 1)
        services = StateServices(
            open_fcfs=open_fcfs,
            open_flows=open_flows,
            closed_base=closed_service * closed.timed,
            closed_svar=closed_service**2 * closed.scv * closed.timed,
            closed_flows=closed_flows,
            delay_sums=delay_sums,
            closed_delays=delay_sums[self.closed_op_slots],
            op_loads=self.op_loads(open_fcfs, closed_service, open_flows, closed_flows),
        )
        if not switched:
            self._plain = services
        return services

    def op_loads(
        self, open_fcfs: Floats, closed_fcfs: Floats, open_flows: Floats, closed_flows: Floats
    ) -> Floats:
        """Station loads per I/O per s of each op (5 x stations rows: busy, arrivals, second
        moment of service, then the open rows' busy and arrivals), with these services."""
        rows = self.op_fcfs_rows
        open_rows = self.open_fcfs
        closed = self.closed_fcfs
        share = open_rows.share[rows]
        service = open_fcfs[rows]
        open_busy = share * service
        closed_busy = closed.share * closed_fcfs
        ports = (
            open_flows[self.open_flows.port_row[self.op_flow_ports]]
            * self.open_port_scale[self.op_flow_ports]
        )
        weights = (
            open_busy,
            share,
            open_busy * service * (1.0 + open_rows.scv[rows]),
            open_busy,
            share,
            closed_busy,
            closed.share,
            closed_busy * closed_fcfs * (1.0 + closed.scv),
            ports,
            ports,
            closed_flows[self.closed_flows.port_row] * self.closed_port_scale,
        )
        count = self.count
        flat = sums(self.op_load_cells, np.concatenate(weights), 5 * self.stations * count)
        return flat.reshape(5 * self.stations, count)

    def _op_arrays(self, c: Layout, op_info: list[tuple[int, Op]]) -> None:
        ops = [op for _, op in op_info]
        count = len(ops)
        chains = [c.chains[chain] for chain, _ in op_info]
        self.op_chain = np.array([chain for chain, _ in op_info], dtype=np.intp)
        self.op_group = np.array([ch.group for ch in chains], dtype=np.intp)
        # I/Os per s of an open op's chain; 1 for a closed op, whose chain's throughput multiplies
        # it.
        self.op_unit_rate = np.array(
            [1.0 if ch.closed else ch.rate * ch.customers for ch in chains], dtype=np.float64
        )
        self.op_probability = np.array([op.probability for op in ops], dtype=np.float64)
        self.op_hit = np.array([op.path == "hit" for op in ops], dtype=bool)
        self.op_miss = np.array([op.path == "miss" for op in ops], dtype=bool)
        self.op_is_write = np.array([op.name == "write" for op in ops], dtype=np.intp)
        self.op_size = np.array([op.size for op in ops], dtype=np.float64)
        # Per host, the write ops of its open write-back chains (they queue for a full buffer); per
        # station, the ops whose paths cross it (they queue behind an overload there).
        self.open_write_back_writes = [
            [
                o
                for o, (op, ch) in enumerate(zip(ops, chains, strict=True))
                if op.name == "write" and ch.write_back and not ch.closed and ch.host == h
            ]
            for h in range(c.hosts)
        ]
        # Missing legs never win the join: their slot sums get -inf.
        missing = np.full((count, self.width - 1), -math.inf)
        for o, op in enumerate(ops):
            missing[o, : len(op.legs)] = 0.0
        self.missing_legs = missing
        self.op_first_slot = np.arange(count, dtype=np.intp) * self.width
        # Per host, each times the op rates: write-back bytes accepted, bytes charged to its tier's
        # clean pool (written bytes times the writer's Layout.gc_factor: sequential runs cost
        # garbage collection less; a cache fill counts whole); then per compression lane (host and
        # sending peer port), the port's utilization without compression.
        hosts = c.hosts
        flows = np.zeros((2 * hosts + c.lanes, count))
        for o, (op, chain) in enumerate(zip(ops, chains, strict=True)):
            h = chain.host
            if op.name == "write":
                replicas = c.replica_targets(h, chain.replicas) if chain.write_back else []
                if chain.write_back:
                    flows[h, o] += op.size
                    sending = [k for _, k in replicas]
                    for k in set(sending):
                        flows[2 * hosts + c.lane(h, k), o] += (
                            sending.count(k) * c.write_mixes[chain.group].peer_seconds
                        )
                charged = op.size * c.gc_factor(chain)
                flows[hosts + h, o] += charged
                for target, _ in replicas:
                    flows[hosts + target, o] += charged
            elif op.path == "miss":
                flows[hosts + h, o] += op.size
        self.host_flows = flows

    def _closed_arrays(self, c: Layout) -> None:
        closed = self.closed_ops
        # global slots of each closed op
        self.closed_op_slots = closed[:, None] * self.width + np.arange(self.width)
        self.closed_readers = [
            slot
            for slot, chain in enumerate(self.closed_chains)
            if c.chains[chain].read_fraction > 0
        ]
        self.all_slots = np.concatenate(
            (
                self.open_fcfs.slot,
                self.closed_fcfs.slot,
                self.open_flows.slot,
                self.closed_flows.slot,
            )
        )

    def _station_arrays(self, c: Layout) -> None:
        servers = np.array(c.servers, dtype=np.float64)
        self.per_server = 1.0 / servers
        self.tier_stations = np.arange(c.hosts, dtype=np.intp) * c.per_host + TIER
        self.pipe_stations = np.arange(c.hosts, dtype=np.intp) * c.per_host + PIPE_SLOT
        # Load matrix cells (see op_loads): blocks busy, arrivals, second moment, open busy, open
        # arrivals.
        k = self.stations
        count = self.count
        block = k * count
        rows, closed = self.open_fcfs, self.closed_fcfs
        op_rows = np.flatnonzero(rows.rate < count)
        self.op_fcfs_rows = op_rows
        open_cell = rows.station[op_rows] * count + rows.rate[op_rows]
        closed_cell = closed.station * count + closed.rate
        flows, flows_c = self.open_flows, self.closed_flows
        op_ports = np.flatnonzero(flows.rate[flows.port_row] < count)
        self.op_flow_ports = op_ports
        flow_cell = flows.port_station[op_ports] * count + flows.rate[flows.port_row[op_ports]]
        closed_flow_cell = flows_c.port_station * count + flows_c.rate[flows_c.port_row]
        self.op_load_cells = np.concatenate(
            (
                open_cell,
                block + open_cell,
                2 * block + open_cell,
                3 * block + open_cell,
                4 * block + open_cell,
                closed_cell,
                block + closed_cell,
                2 * block + closed_cell,
                flow_cell,
                3 * block + flow_cell,
                closed_flow_cell,
            )
        )
        destage_rows = np.flatnonzero(rows.rate >= count)
        self.destage_fcfs_rows = destage_rows
        hosts = c.hosts
        dblock = k * hosts
        destage_cell = rows.station[destage_rows] * hosts + (rows.rate[destage_rows] - count)
        destage_ports = np.flatnonzero(flows.rate[flows.port_row] >= count)
        self.destage_flow_ports = destage_ports
        destage_flow_cell = flows.port_station[destage_ports] * hosts + (
            flows.rate[flows.port_row[destage_ports]] - count
        )
        self.destage_load_cells = np.concatenate(
            (
                destage_cell,
                dblock + destage_cell,
                2 * dblock + destage_cell,
                3 * dblock + destage_cell,
                4 * dblock + destage_cell,
                destage_flow_cell,
                3 * dblock + destage_flow_cell,
            )
        )
