# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The native engine's vertical slices (issue 35, steps 2 to 7): generated reads served by the
hosts' flash tiers from their read caches, or on a miss by the backing array over the storage
network (then filling the cache), write-through writes (the tier, the cache, the storage network,
the array's write path: ``engine/writes.pxi``), write-back writes with or without replicas (the
replica legs over the peer paths, the destage buffers and flushers: ``engine/destager.pxi``; the
copies of asynchronous replication and the data at risk they leave: ``engine/lag.pxi``) and
vMotions without a VM (their streams: ``engine/vmotion.pxi``), run in ``nogil`` code over C
structs.
The array is whole for both: any RAID layout and drive, first come first served or the elevator,
the controller's read cache, the drives' buffers and command queueing, a controller write cache
flushed at once.

What it runs, event for event as the Python engine (``simcache.sim.drivers._ClosedSlot`` and
``_OpenLoop``, ``IOStream.next_gap`` with its duty cycle, ``VM.start``'s read hit,
``Tier.submit`` for a read, ``BusyMeter.add``, ``RecordBuffer.add``):

- a closed-loop slot begins at time 0 (an URGENT event), waits for its duty cycle to be on (an
  on/off cycle), issues the next I/O of its VM's stream, books it on its host's tier (command
  overhead, command processor, lognormal factor, stall, read channel time, the channels' heap or
  the addressed die, the transfer pipe) and schedules its completion; the completion records the
  read and, after the think time (an event of its own), goes round;
- an open loop begins at time 0 (an URGENT event) and schedules its first arrival; each arrival
  issues its VM's next I/O as above, then schedules the next arrival (the gap drawn as
  ``IOStream.next_gap`` draws it: Poisson or evenly spaced, an on/off cycle's off periods
  skipped, a sine cycle thinned, a profile cycle's time change); its completion records it.

The events carry keys from the kernel's counter (priority * 2**52 + event id), so that merged
with the Python events still queued (the sampler, the run's stop) they run in the kernel's order
and the event count is the same.

``simcache.sim.native_run`` selects the runs it supports, builds an :class:`Engine` from the
built model and drives it: ``Engine.run`` processes the native events that come before the
first Python event, and the state the Python components hold (each tier's channels, pipe, meter
and random stream, its host cache's hits, the VMs' counters and streams, the records) is written
to them before each Python event (:meth:`Engine.sync_out`) and read back after it
(:meth:`Engine.sync_in`); a sample's figures are taken on the engine's own state
(:meth:`Engine.sample`).

Random draws: a tier's uniforms come from the very ``numpy.random.Generator`` its ``UniformStream``
holds, through numpy's ``bitgen_t`` (``next_double``, as ``Generator.random`` draws them), after
the block the stream had drawn already. A VM's I/Os are read from its ``IOStream``'s drawn batch; a
new batch is drawn here, from the stream's generator with the same draws in the same order
(``_refill_native``: uniform or sequential offsets, one size mix, no runs; ``_refill_zipf``: Zipf
offsets, its logarithms, exponentials and powers computed by numpy's own float64 loops on the same
operands, called directly where they were checked at import, else through the ufuncs with the GIL:
``engine/ufuncs.pxi``), or else by the stream itself (``IOStream._refill_ios``, a call that takes the GIL: once
per 2,048 I/Os of a VM). Its open-loop gaps likewise: a batch of exponential gaps is drawn by the
stream's generator (``Generator.exponential``, with the GIL: once per 2,048 arrivals), a sine
cycle's thinning uniforms through ``next_double``. Records go a field apart in the record blocks'
narrowest types (``Engine.use_blocks``), else as rows to the record buffer.

Layout: this file holds the :class:`Engine` (its state, its public methods and the event loop:
the queue, ``_loop``, ``run``); the parts it runs are in ``simcache/native/engine/*.pxi``,
included below, each opening with what it ports: the components' C structs and functions
(``meter``, ``tier``, ``duty``, ``cache``, ``array``, ``hashwalk``), numpy's inner loops
(``ufuncs``), and functions over the Engine (``flows``, ``streams``, ``drivers``, ``records``,
``writes``, ``destager``, ``lag``, ``vmotion``, ``moves``, ``failures``, ``sync``).
"""

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.buffer cimport PyBUF_READ
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.math cimport INFINITY, ceil, fabs, floor, isfinite, log1p, sin, sqrt
from libc.stdint cimport INT64_MIN, UINT32_MAX, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcpy, memmove, memset

from collections import OrderedDict

import numpy as np

from simcache.sim.kernel.clock import trigger
from simcache.sim.kernel.stopping import StopWithinEvent
from simcache.sim.kernel.signals import Signal, process_now

_LOSS_POLICIES = ("write_through", "degrade", "stall")  # VmState.on_peer_loss: LOSS_*


# The engine's parts, one compile unit (Cython's include: the same C as one file). Each file says
# which Python module or class it ports.
include "engine/common.pxi"  # constants, the queue entry, a read in flight, a VM's state
include "engine/queue.pxi"  # the event queue (a radix heap)
include "engine/meter.pxi"  # BusyMeter, UniformStream
include "engine/tier.pxi"  # Tier.submit, TransferPipe
include "engine/duty.pxi"  # DutyClock
include "engine/cache.pxi"  # ReadCache
include "engine/array.pxi"  # Array._dispatch for a read, Spindles.operate
include "engine/flows.pxi"  # FlowNetwork (the misses' transfers back)
include "engine/ufuncs.pxi"  # numpy's float64 loops of the Zipf refill's ufuncs, called directly
include "engine/streams.pxi"  # IOStream: batches, gaps, next_gap
include "engine/drivers.pxi"  # _ClosedSlot, _OpenLoop, VM.start's read, ArrayRead, miss_delivered
include "engine/records.pxi"  # RecordBuffer.add, RecordBlocks
include "engine/writes.pxi"  # write_through, Array.submit for a write
include "engine/hashwalk.pxi"  # HashWalk (a destager's order "hash")
include "engine/destager.pxi"  # WriteBack and its replica legs, Destager, Flusher
include "engine/lag.pxi"  # replication = "async": AsyncWrite, ReplicaLag
include "engine/vmotion.pxi"  # host_events.vmotion without a VM: its streams
include "engine/moves.pxi"  # a VM a vMotion moved: remote hits, discards, its new host's paths
include "engine/failures.pxi"  # a device failure under write-back: the buffers' part of it
include "engine/pending.pxi"  # PendingDestage: the reads waiting for taken-over writes' destage
include "engine/sync.pxi"  # the Python components' state in and out (sync_in, sync_out)


@cython.final  # its cdef methods called directly, not through a table
cdef class Engine:
    """One run's native state (see the module docstring); built by ``native_run.prepare``."""

    # the event queue, by (time, key): engine/queue.pxi
    cdef RadixQueue queue
    cdef public int64_t eid
    cdef public double now
    cdef public int64_t events
    # flows re-rated since the loop last charged them to its budget (RERATES_PER_EVENT a native
    # event): a stop request is polled as often when flows pile up on a port
    cdef int64_t rerated
    # the run's stop request (native_run.run sets it; None: none), polled inside one event that
    # re-rates many flows (_poll_within); stop_heard once it was set there
    cdef public object stop_requested
    cdef public bint stop_heard
    # the VMs, their closed-loop slots (the first slot_count) and open-loop reads in flight
    cdef VmState* vms
    cdef int32_t vm_count
    cdef Slot* slots
    cdef int32_t slot_count, slots_used, slot_cap
    cdef int32_t* free_slots
    cdef int32_t free_count
    cdef list _vms, _streams
    # the byte columns each stream holds as the engine last saw them (sync_in copies a stream's
    # batch or gaps only when they are other objects)
    cdef list _writes, _sizes, _offsets, _gaps
    # the tiers, one per host, and their hosts' caches
    cdef TierState* tiers
    cdef int32_t tier_count
    cdef list _tiers, _caches, _tier_streams
    cdef list _meters  # each tier meter's intervals writer as the engine last saw it
    # read misses (use_misses): each host's cache (kept here unless it holds every disk), the
    # array, the flow network's ports and flows
    cdef CacheState* caches
    cdef bint misses
    cdef ArrayState array
    cdef object _array, _network, _flow_class
    cdef object _rc_seen  # the array's (bytes_read, bytes_written) as last read or written
    cdef list _cache_seen  # per host: its cache's _cache_mark as last read or written
    cdef list _ports
    cdef list _hosts
    cdef int32_t* storage_down  # per host: Host.storage_down (link_down outages holding it)
    # per host: its tier failed for good (device_failure; not Host.tier_up): its cache was
    # cleared, nothing fills it, a hit in flight fails, a write-through write skips the tier
    cdef int32_t* tier_down
    # per host: it died (host_failure; not Host.alive): its VMs' I/Os in flight end unrecorded
    # where the Python paths check it, its closed-loop slots and open loops stop (host_events)
    cdef int32_t* host_dead
    cdef bint any_dead  # a host died (the hot paths test host_dead only then)
    # the writes surviving holders took over, and the reads waiting for their destage
    # (engine/pending.pxi), from the failure's process on (pd_on: Engine.pending_add)
    cdef bint pd_on
    cdef PdVm* pd_vms
    cdef int32_t* pd_order
    cdef int32_t pd_norder, pd_order_cap
    cdef PdSignal* pd_sigs
    cdef int32_t pd_nsigs, pd_sig_cap
    cdef PdAllOf* pd_alls
    cdef int32_t pd_nalls, pd_all_cap
    cdef Parked* parked  # what waits for a storage port, in the order it began to wait
    cdef int32_t n_parked, parked_cap
    cdef PortState* ports
    cdef int32_t port_count
    cdef int32_t* sample_ports  # each of the model's ports (the sampler's order): its place here
    cdef int32_t sample_port_count
    cdef int32_t* host_ports  # per host: its transfer back's ports (array_tx, storage_rx)
    cdef int32_t* host_wports  # per host: its writes' ports to the array (storage_tx, array_rx)
    cdef ArrayWrites aw  # the array's write figures and counters
    cdef double path_write
    # write-back without replicas (use_destagers): each host's destage buffer, the flushers
    cdef readonly bint destaging
    cdef DestagerState* dest
    cdef FlusherState* flushers
    cdef int32_t flusher_count
    cdef int64_t reg_seq, tw_serial
    cdef list _destagers
    cdef int32_t dest_count  # len(_destagers)
    cdef MetaLog* meta  # each host's metadata log (metadata_write)
    cdef int64_t* replica_bytes  # per host: Host.replica_bytes (its peers' data held here)
    cdef double* payload_sent  # per host: Host.replica_payload_sent
    cdef LagState* lag  # per host: its ReplicaLag (replication = "async")
    cdef Py_ssize_t lag_count
    cdef AsyncWrite* asyncs  # the asynchronously replicated writes whose copies are not all in
    cdef int32_t async_cap, async_free
    # the scheduled vMotions without a VM (add_vmotion): their state, records, model.vmotions
    cdef VMotionState* vmotions
    cdef int32_t vmotion_count, vmotions_started, vmotions_listed
    cdef list _vmotion_records
    cdef object _vmotions_out
    # Python events the engine queues or delivers (PY_EVENT, FLOW_PY), by number: a transfer's
    # simpy.Event (Engine.transfer), a degrading VM's settled Signal; the one whose processing
    # the loop stopped for (HOOKED: its number; -1: none)
    cdef dict _py
    cdef int64_t py_next
    cdef public int64_t hook
    cdef int64_t take_serial  # the batches taken so far (FlusherState.taken: their order)
    cdef dict _framings  # a peer port's framing key, by the port's id
    cdef list _chosen_seen  # per VM: the PeerLoss.chosen its peers were last read from
    # the VMs a vMotion may move (positions: use_moves), each one's last move's record as the
    # engine last saw it (Migration.record), each host's Host.peer_down (moves.pxi), a remote
    # hit's path code (collect.PATH_REMOTE_HIT)
    cdef list _moving, _move_records
    cdef int32_t* peer_down
    cdef double path_remote
    cdef double* host_ack  # per host: storage_tx.acknowledgement
    cdef double* host_latency  # per host: storage_tx.latency
    # per framing key (a host's storage port's below the host count, then the peer ports'):
    # a packet's payload (mtu less headers) and its headers and wire framing, bytes (_frame)
    cdef double* fr_per_packet
    cdef double* fr_overhead
    cdef int32_t fr_n, fr_cap
    cdef FlowState* flows
    cdef int32_t flow_cap, flows_used, free_flow_count
    cdef int32_t* free_flows
    # the flows on their ports, in start order: an intrusive list through FlowState.flight_prev
    # and flight_next (-1: none), so that a flow leaves in O(1) (_leave had scanned and shifted an
    # array of them: 5 % of the 32-host run's instructions)
    cdef int32_t flight_head, flight_tail
    cdef int32_t n_in_flight
    cdef int32_t* scratch  # neighbours, finished flows
    cdef int32_t* scratch2
    cdef int64_t* epochs
    cdef int64_t epoch
    cdef Entry* marks  # the shared flows' finish marks: a binary heap by (finish, seq)
    cdef Py_ssize_t marks_n, marks_cap
    cdef bint marks_rebuilt  # _rerate pushes no mark: the heap is rebuilt after (_start_flow)
    cdef int64_t seq, timer, timer_serial, stale
    cdef double wake_at
    cdef double path_miss
    # the records not handed on yet
    cdef object buffer
    cdef double* records
    cdef int64_t record_count, record_limit, record_room
    cdef double path_hit
    # a run with records: the records a field apart in the blocks' narrowest types (VM uint8,
    # flags uint8, size in sectors uint16, issue and completion float64, components float32 ms),
    # appended to the blocks directly (RecordBlocks.extend_narrow); else rows, as above
    cdef object blocks
    # the Zipf refills' work arrays (numpy, kept here) and their data
    cdef object _zipf_work
    cdef dict _zipf_thresholds  # by theta: the kept thresholds of ranks 1..ZIPF_TABLE (numpy)
    cdef double* zipf[ZIPF_ARRAYS]
    cdef int64_t blocks_seen  # the blocks' count at the last sync_out (sync_in checks it)
    cdef bint narrow
    cdef unsigned char* n_vm
    cdef unsigned char* n_flags
    cdef uint16_t* n_sectors
    cdef double* n_issued
    cdef double* n_completed
    cdef float* n_components

    def __dealloc__(self):
        cdef Py_ssize_t i
        free(self.storage_down)
        free(self.tier_down)
        free(self.host_dead)
        free(self.peer_down)
        _free_pending(self)
        _free_lag(self)
        free(self.parked)
        _rq_free(&self.queue)
        if self.tiers != NULL:
            for i in range(self.tier_count):
                free(self.tiers[i].log_table)
                free(self.tiers[i].write_log_table)
                free(self.tiers[i].channels)
                free(self.tiers[i].starts_base)
                free(self.tiers[i].ends_base)
                free(self.tiers[i].m.intervals)
                free(self.tiers[i].u.leftover)
        free(self.tiers)
        if self.vms != NULL:
            for i in range(self.vm_count):
                free(self.vms[i].writes)
                free(self.vms[i].sizes)
                free(self.vms[i].offsets)
                free(self.vms[i].size_table)
                free(self.vms[i].cdf)
                free(self.vms[i].gaps)
                free(self.vms[i].factors)
                free(self.vms[i].cumulative)
                free(self.vms[i].serial_q)
                free(self.vms[i].left)
        free(self.vms)
        free(self.slots)
        free(self.free_slots)
        free(self.records)
        free(self.n_vm)
        free(self.n_flags)
        free(self.n_sectors)
        free(self.n_issued)
        free(self.n_completed)
        free(self.n_components)
        if self.caches != NULL:
            for i in range(self.tier_count):
                free(self.caches[i].slots)
                free(self.caches[i].log)
        free(self.caches)
        free(self.array.vm_start)
        free(self.array.head)
        free(self.array.spindle_free)
        free(self.array.units)
        free(self.array.m.intervals)
        free(self.array.u.leftover)
        free(self.array.rq_target)
        free(self.array.rq_pos)
        free(self.array.rq_len)
        free(self.array.sub_pos)
        free(self.array.sub_len)
        free(self.array.w_pos)
        free(self.array.w_len)
        free(self.array.w_starts)
        free(self.array.seg_pos)
        free(self.array.seg_len)
        free(self.array.seg_n)
        free(self.array.rc_key)
        free(self.array.rc_prev)
        free(self.array.rc_next)
        free(self.array.rc_slots)
        if self.array.pend != NULL:
            for i in range(self.array.spindles):
                free(self.array.pend[i])
        free(self.array.pend)
        free(self.array.pend_n)
        free(self.array.pend_cap)
        free(self.array.pool_pos)
        free(self.array.pool_angle)
        free(self.array.pool_n)
        free(self.array.span_lo)
        free(self.array.span_hi)
        if self.ports != NULL:
            for i in range(self.port_count):
                free(self.ports[i].active)
        free(self.ports)
        free(self.sample_ports)
        free(self.host_ports)
        free(self.host_wports)
        free(self.host_ack)
        free(self.host_latency)
        free(self.fr_per_packet)
        free(self.fr_overhead)
        free(self.flows)
        free(self.free_flows)
        free(self.scratch)
        free(self.scratch2)
        free(self.epochs)
        free(self.marks)
        free(self.aw.ops)
        free(self.aw.window)
        free(self.aw.order)
        free(self.aw.starts)
        free(self.aw.drain_at)
        free(self.aw.drain_bytes)
        free(self.aw.held)
        free(self.aw.merged)
        # (counts kept in C: the engine may be freed by the cycle collector, which clears its
        # Python fields first; a VM's PeerLoss signal's callback refers to it)
        if self.dest != NULL:
            for i in range(self.dest_count):
                _hw_free(&self.dest[i].hw)
                free(self.dest[i].pending)
                free(self.dest[i].since)
                free(self.dest[i].held)
                free(self.dest[i].waiting)
        free(self.dest)
        if self.meta != NULL:
            for i in range(self.dest_count):
                free(self.meta[i].q_slot)
                free(self.meta[i].q_batch)
        free(self.meta)
        if self.flushers != NULL:
            for i in range(self.flusher_count):
                free(self.flushers[i].items)
                free(self.flushers[i].held)
                free(self.flushers[i].runs)
                free(self.flushers[i].requests)
                free(self.flushers[i].owners)
        free(self.flushers)
        free(self.replica_bytes)
        free(self.payload_sent)
        if self.vmotions != NULL:
            for i in range(self.vmotion_count):
                free(self.vmotions[i].ports)
                free(self.vmotions[i].nports)
                free(self.vmotions[i].done)
        free(self.vmotions)

    def __init__(
        self,
        list tiers,
        list caches,
        list vms,
        list streams,
        list vm_tiers,
        list reach,
        list slot_vms,
        record_buffer,
        int path_hit,
        list refills,
        int64_t max_batch,
        int64_t trace_rows,
    ):
        """``tiers``, ``caches``: each host's ``Tier`` and read ``Cache``; ``vms``, ``streams``,
        ``vm_tiers``, ``reach``: each VM (build order), its ``IOStream``, its host's position in
        ``tiers`` and the bytes of its disk its host's cache holds; ``slot_vms``: the position in
        ``vms`` of each closed-loop slot, in the order the Python engine would start them (a VM's
        slots together, the VMs in order); ``record_buffer``: the run's ``RecordBuffer``;
        ``path_hit``: a read hit's path code (``collect.PATH_HIT``); ``refills``: per VM, how its
        stream draws a batch (0: by ``IOStream._refill_ios``, 1: uniform offsets, 2: sequential
        ones, in native code); ``max_batch``: the most I/Os (and gaps) a stream draws at once
        (``generators._BATCH``); ``trace_rows``: the most rows a replay reads at once
        (``replay.BLOCK_ROWS``)."""
        cdef Py_ssize_t i
        self._tiers = tiers
        self._caches = caches
        self._cache_seen = [None] * len(caches)
        self._tier_streams = [tier._stream for tier in tiers]
        self._meters = [None] * len(tiers)
        self.tier_count = len(tiers)
        self.tiers = <TierState*>calloc(max(1, self.tier_count), sizeof(TierState))
        if self.tiers == NULL:
            raise MemoryError()
        for i in range(self.tier_count):
            _setup_tier(self, i)
        self._vms = vms
        self._streams = streams
        self._writes = [None] * len(vms)
        self._sizes = [None] * len(vms)
        self._offsets = [None] * len(vms)
        self._gaps = [None] * len(vms)
        self.vm_count = len(vms)
        self.vms = <VmState*>calloc(max(1, self.vm_count), sizeof(VmState))
        if self.vms == NULL:
            raise MemoryError()
        for i in range(self.vm_count):
            _setup_vm(
                self, i, vms[i].index, vm_tiers[i], reach[i], refills[i],
                trace_rows if refills[i] == TRACE_REFILL else max_batch,
            )
        self.slot_count = len(slot_vms)
        self.slot_cap = max(16, self.slot_count)
        self.slots = <Slot*>malloc(self.slot_cap * sizeof(Slot))
        self.free_slots = <int32_t*>malloc(self.slot_cap * sizeof(int32_t))
        if self.slots == NULL or self.free_slots == NULL:
            raise MemoryError()
        for i in range(self.slot_count):
            self.slots[i].vm = slot_vms[i]
            self.slots[i].number = -1
            self.slots[i].closed = True
            self.slots[i].life = 0
        self.slots_used = self.slot_count
        self.free_count = 0
        self.buffer = record_buffer
        self.path_hit = path_hit
        self.record_limit = record_buffer.limit
        self.records = <double*>malloc(self.record_limit * FIELDS * sizeof(double))
        if self.records == NULL:
            raise MemoryError()
        self.record_count = 0
        self.narrow = False
        self._vmotion_records = []
        self._py = {}
        self.hook = -1
        self._moving = []
        self._move_records = [None] * len(vms)
        for i in range(self.vm_count):
            self.vms[i].remote = -1

    def begin(self, clock) -> None:
        """Queue each VM's start at the clock's time, URGENT, with the clock's next event ids,
        where ``start_workload`` would schedule them: an open loop's start, or its closed-loop
        slots' starts."""
        cdef Py_ssize_t i, s = 0
        cdef double now = clock.now
        self.eid = clock.eid
        for i in range(self.vm_count):
            if self.vms[i].open:
                self._push(now, (<int64_t>URGENT << PRIORITY_SHIFT) + self.eid, i, OPEN_BEGIN, 0)
                self.eid += 1
                continue
            while s < self.slot_count and self.slots[s].vm == i:
                self._push(now, (<int64_t>URGENT << PRIORITY_SHIFT) + self.eid, s, BEGIN, 0)
                self.eid += 1
                s += 1
        if s != self.slot_count:
            raise ValueError("the closed-loop slots are not in their VMs' order")
        clock.eid = self.eid

    def use_blocks(self, blocks) -> None:
        """Write the records a field apart into ``blocks`` (the run's ``RecordBlocks``, which the
        record buffer's sink appends to) while they fit its narrowest types; None: as rows into
        the record buffer (a run without records)."""
        cdef int64_t n = self.record_limit
        if blocks is None or not blocks.narrow():
            return
        self.n_vm = <unsigned char*>malloc(n)
        self.n_flags = <unsigned char*>malloc(n)
        self.n_sectors = <uint16_t*>malloc(n * sizeof(uint16_t))
        self.n_issued = <double*>malloc(n * sizeof(double))
        self.n_completed = <double*>malloc(n * sizeof(double))
        self.n_components = <float*>malloc(COMPONENTS * n * sizeof(float))
        if (self.n_vm == NULL or self.n_flags == NULL or self.n_sectors == NULL
                or self.n_issued == NULL or self.n_completed == NULL
                or self.n_components == NULL):
            raise MemoryError()
        self.blocks = blocks
        self.narrow = True

    def use_misses(
        self, list full, array, network, list hosts, double path_miss, list ports
    ) -> None:
        """Run read misses: ``full``, per host, whether its cache holds every disk of its VMs
        (then only its hits are counted); ``array``: the model's ``Array``; ``network``: its
        ``FlowNetwork``; ``hosts``: the model's hosts (their storage and array ports, whether a
        ``link_down`` holds their storage port); ``path_miss``: a read miss's path code
        (``collect.PATH_MISS``); ``ports``: every port of the model (``Model.ports``: the peer
        paths' too)."""
        host_ports = [
            (host.storage_tx, host.array_tx, host.storage_rx, host.array_rx) for host in hosts
        ]
        _setup_misses(self, full, array, network, host_ports, path_miss, ports)
        self._hosts = hosts
        self.storage_down = <int32_t*>calloc(max(1, len(hosts)), sizeof(int32_t))
        self.tier_down = <int32_t*>calloc(max(1, len(hosts)), sizeof(int32_t))
        self.host_dead = <int32_t*>calloc(max(1, len(hosts)), sizeof(int32_t))
        self.peer_down = <int32_t*>calloc(max(1, len(hosts)), sizeof(int32_t))
        self.parked_cap = 16
        self.parked = <Parked*>malloc(self.parked_cap * sizeof(Parked))
        if (self.storage_down == NULL or self.tier_down == NULL or self.host_dead == NULL
                or self.peer_down == NULL or self.parked == NULL):
            raise MemoryError()

    def peers_back(self, int32_t vm, clock) -> None:
        """The callback of a VM's ``PeerLoss.back()`` signal, processed (a Python event: the
        outage's end found none of its peers missing): its writes stalled in the engine
        (``on_peer_loss = "stall"``) write back now, in the order they stalled. The state is the
        engine's for that (read in, written back out: it is a Python event)."""
        self.sync_in()
        self.eid = clock.eid
        _peers_back(self, vm, clock.now)
        clock.eid = self.eid
        self.sync_out(False)
        if self.stop_heard:  # (the writes not resumed yet stay stalled)
            raise StopWithinEvent()

    def storage_back(self, int32_t host, clock) -> None:
        """``succeed(clock, host.storage_back)`` when the engine's I/Os wait for that port
        (a ``link_down`` outage's end, a Python event): the port's return queued as a native
        event now, with the clock's next event id; it resumes them in the order they began to
        wait (:func:`_storage_back`)."""
        self._push(clock.now, (<int64_t>NORMAL << PRIORITY_SHIFT) + clock.eid, 0, STORAGE_BACK,
                   host)
        clock.eid += 1

    def use_writes(self, list write_through, list gc_factors, int path_write) -> None:
        """Run writes: per VM, whether it writes through (``VM.write_through``) and its
        ``gc_factor``; ``path_write``: a write's path code (``collect.PATH_WRITE``). After
        :meth:`use_misses`."""
        cdef Py_ssize_t i
        for i in range(self.vm_count):
            self.vms[i].write_through = write_through[i]
            self.vms[i].policy_write_through = self._vms[i].policy_write_through
            self.vms[i].on_peer_loss = _LOSS_POLICIES.index(self._vms[i].peer_loss.policy)
            self.vms[i].gc_factor = gc_factors[i]
            self.vms[i].serialize = self._vms[i]._serialize
            self.vms[i].metadata_size = self._vms[i].metadata_size
            self.vms[i].metadata_batched = self._vms[i].metadata_batched
        self.path_write = path_write

    def use_destagers(self, list hosts) -> None:
        """Run write-back writes, their replica legs to the VMs' peers, each host's destager
        (order "arrival") and flushers natively. After :meth:`use_misses`."""
        _setup_destagers(self, hosts)

    def add_vmotion(
        self, clock, dict record, list paths, double wire, int64_t packets, double latency,
        double weight, double at
    ) -> None:
        """A scheduled vMotion without a VM (``host_events.vmotion``'s transfer), its process
        started now as ``env.process`` starts one (URGENT, the clock's next event id): after
        ``at`` seconds its streams cross ``paths`` (lists of ports: Model.ports'), ``wire``
        bytes and ``packets`` each, at ``weight``; ``record`` (its start_s and end_s filled in)
        goes to ``vmotions`` (the model's list) once it starts. After :meth:`use_misses`."""
        _vmotion_add(self, clock, record, paths, wire, packets, latency, weight, at)

    def set_capacity(self, port, double capacity, clock) -> None:
        """``FlowNetwork.set_capacity`` for the flows in flight, which are the engine's (a
        ``link_slow`` window's start or end, a Python event): after the Python network has set
        ``port``'s capacity (its own flows: none), re-rate the engine's flows on it at the
        clock's time, scheduling with the clock's event ids; the ports' byte counters and the
        flows in flight then shown to the Python network again (a finished lone flow leaves,
        the others have new rates: a sample may read them before any sync)."""
        cdef Py_ssize_t i, index = -1
        for i in range(self.port_count if self.misses else 0):
            if self._ports[i] is port:
                index = i
                break
        if index < 0:  # no transfer of the engine crosses it
            return
        self.eid = clock.eid
        _set_capacity(self, <int32_t>index, capacity, clock.now)
        clock.eid = self.eid
        _ports_out(self)  # (a sample may come next with no sync in between)

    def use_moves(self, list moving, double path_remote) -> None:
        """The VMs a vMotion may move (their positions): after each Python event the engine
        reads back whether they moved (moves.pxi); ``path_remote``: a remote hit's path code
        (``collect.PATH_REMOTE_HIT``). After :meth:`use_misses`."""
        self._moving = moving
        self.path_remote = path_remote

    def untaken(self, int32_t h, int64_t vm) -> list:
        """``Destager.untaken`` of host ``h``'s native buffer (order "arrival"): VM ``vm``'s
        writes not taken into a batch, as the Python buffer's items."""
        if not self.destaging:
            return []
        return self._items(_untaken(self, h, vm))

    def hand_over(self, clock, int32_t h, items, int64_t vm) -> list:
        """``Destager.hand_over`` on host ``h``'s native buffer (order "arrival", a Python
        event: a vMotion's handover): VM ``vm``'s untaken writes matching ``items`` (a Counter of
        (VM, offset, size)) leave it, returned as the Python buffer's items; the writers that fit
        then admitted, with the clock's event ids."""
        left = dict(items)
        self.eid = clock.eid
        taken = _hand_over(self, h, left, vm, clock.now)
        clock.eid = self.eid
        _destager_counts_out(self, h)
        _waiting_out(self, h)  # (the writers that fit were admitted)
        return self._items(taken)

    def adopt(self, clock, int32_t h, tuple item) -> None:
        """``Destager.adopt`` on host ``h``'s native buffer (a Python event): the handed-over
        write ``item`` (a Python buffer item) enqueued, not counted as accepted, its room not
        checked; the work signal queued with the clock's event ids if it was not."""
        cdef uint32_t held = 0
        if len(item[3]) > MAX_LEGS:
            raise RuntimeError("a handed-over write with more holders than the engine keeps")
        for host in reversed(item[3]):
            held = (held << 16) | <uint32_t>(self._hosts.index(host) + 1)
        self.eid = clock.eid
        _enqueue(self, h, item[0], item[1], item[2], clock.now, held, False)
        clock.eid = self.eid
        _destager_counts_out(self, h)

    def restart(self, clock, int32_t vm) -> None:
        """``drivers.start_workload(restarted=True)`` for VM ``vm`` in the engine (a Python event:
        HA restarted it, ``host_events._ha_restart``): its new closed-loop slots started with the
        clock's event ids (engine/failures.pxi)."""
        self.eid = clock.eid
        _restart_slots(self, vm, clock.now)
        clock.eid = self.eid

    def pending_add(self, int32_t holder, int32_t vm, int64_t offset, int64_t size) -> None:
        """``PendingDestage.add`` on the engine's registry (a Python event: a failure's process):
        host ``holder`` took over VM ``vm``'s write of ``size`` bytes at ``offset``; the reads
        of a VM whose tier failed wait for its destage (engine/pending.pxi)."""
        _pd_start(self)
        _pd_add(self, holder, vm, offset, size)

    def pending_holder_failed(self, clock, int32_t holder) -> None:
        """``PendingDestage.holder_failed`` on the engine's registry (a Python event): host
        ``holder``'s taken-over writes leave it, the reads waiting for them told with the clock's
        event ids."""
        _pd_start(self)
        self.eid = clock.eid
        _pd_holder_failed(self, holder, clock.now)
        clock.eid = self.eid

    def fail_destager(self, clock, int32_t h) -> list:
        """``Destager.fail`` on host ``h``'s native buffer (order "arrival"; a Python event: a
        device failure's): it stops, its writes not destaged returned as the Python buffer's
        items (the batches on their way to the array in the order taken, then the pending
        writes), its writers waiting for room told so with the clock's event ids (each fails:
        its tier is gone), its counters at zero."""
        if not self.destaging or self.dest[h].hashed:
            raise RuntimeError("fail_destager on a native destage buffer the selector does not take")
        self.eid = clock.eid
        items = _fail_destager(self, h, clock.now, self._hosts[h].alive)
        clock.eid = self.eid
        _destager_counts_out(self, h)
        _waiting_out(self, h)
        self._destagers[h].stopped = True
        return self._items(items)

    def peer_failed(self, int32_t h, int32_t dead) -> None:
        """``Destager.peer_failed`` on host ``h``'s native buffer (a Python event: host
        ``dead``'s tier failed): its writes lose ``dead`` from their holders, the single-copy and
        short-of-peers bytes counted."""
        if not self.destaging or self.dest[h].hashed:
            raise RuntimeError("peer_failed on a native destage buffer the selector does not take")
        _peer_failed(self, h, dead)
        _destager_counts_out(self, h)

    def use_vmotions(self, list vmotions) -> None:
        """Where the started vMotions' records go (``Model.vmotions``)."""
        self._vmotions_out = vmotions

    def sync_in(self) -> None:
        """Read the state the Python objects hold (at the start of the run, and after each Python
        event); the state is the engine's until :meth:`sync_out`."""
        cdef Py_ssize_t i
        for i in range(self.tier_count):
            _tier_in(self, i)
        for i in range(self.vm_count):
            self.vms[i].issued = self._vms[i].issued
            if self.vms[i].may_compress:
                self.vms[i].saved = self._vms[i].compressed_bytes_saved
            if self.vms[i].refill == TRACE_REFILL:
                continue  # a replay's rows are the engine's (handed back at the end: _trace_out)
            _read_batch(self, i)
            _read_gaps(self, i)
        if self.misses:
            _tiers_failed_in(self)
            _misses_in(self)
            for i in range(self.tier_count):
                self.storage_down[i] = self._hosts[i].storage_down
        if self._moving:
            _moves_in(self)
        if self.any_dead:
            _restarts_in(self)
        if self.destaging:
            _destagers_in(self)
            _peers_in(self)
        if self.narrow and self.record_count and (
            self.buffer.count or self.blocks.count != self.blocks_seen
        ):
            raise RuntimeError(
                "a Python event recorded an I/O while the native engine held earlier records"
            )
        # as RecordBuffer.add: hand the records on once the buffer and these hold `limit`
        self.record_room = max(1, self.record_limit - self.buffer.count)

    def sync_out(self, bint full=True, bint lines=True) -> None:
        """Write the state to the Python objects (before a Python event, and at the end; a
        sample reads the engine's own: :meth:`sample`). Not ``full`` (before a Python event of
        the run, not its end): the host caches' lines stay the engine's (:func:`_misses_out`),
        and so do the VMs' I/Os in flight (:func:`_vms_out`); the caches' counters are written;
        records written a field apart into the blocks stay the engine's until its buffer is full
        (no Python event of the runs it takes records an I/O or reads the records; :meth:`sync_in`
        checks). ``lines`` (with ``full``): the caches' lines too, the host caches' and the array
        controller's, and the runs its write cache holds (O(lines) to copy: a run's results read
        none of them, only the tests comparing the engines' final state do)."""
        cdef Py_ssize_t i
        for i in range(self.tier_count):
            _tier_out(self, i)
        _vms_out(self, full)
        if self.misses:
            _misses_out(self, full, lines)
        if self.destaging:
            _destagers_out(self)
            _peers_out(self)
        if self.vmotion_count:
            _vmotions_out(self)
        if self._moving:
            _moves_out(self)
        if full or not self.narrow:
            _records_out(self, False)
        if self.narrow:
            self.blocks_seen = self.blocks.count

    def sample(self, double at) -> tuple:
        """The figures of a sample at ``at`` (``_Sampler.take`` asks at the sampler's event, which
        native_run.run lets it: ``model.native_sampler``), taken here on the engine's state,
        which stays the engine's, as the Python objects would have given them: each tier's busy
        seconds since the last sample and operations open at ``at`` (``BusyMeter.busy_between``
        and ``open_count``, after the fold to ``at``), the array's, the ports' bytes carried by
        ``at`` (``FlowNetwork.sync``) and the flows still sending (``in_flight``), each
        destager's backlog, writers waiting, short-of-peers and single-copy bytes, and its host's
        lagging asynchronous bytes and those of them short of peers. None for the
        parts the Python objects hold (the array and the ports without misses, the destagers
        without write-back). The state is left as the Python objects' sample and reading them
        back (stop 49's sync out and in) left it: the meters swept to ``at``, each port's carried
        bytes as synced."""
        cdef Py_ssize_t i
        tiers = [_meter_sample(&self.tiers[i].m, at) for i in range(self.tier_count)]
        array = carried = flows = destagers = None
        if self.misses:
            array = _meter_sample(&self.array.m, at)
            carried, flows = _ports_sample(self, at)
        if self.destaging:
            destagers = [
                (self.dest[i].backlog, self.dest[i].w_count, self.dest[i].short,
                 self.dest[i].single_copy, self.lag[i].bytes, self.lag[i].short)
                for i in range(len(self._destagers))
            ]
        if not self.narrow:  # the records for the sampler to hand on (sync_out's)
            _records_out(self, False)
        else:
            self.blocks_seen = self.blocks.count
        return (tiers, array, carried, flows, destagers)

    def sample_in(self) -> None:
        """After a sample taken with :meth:`sample`: read what the sampler set, the ports'
        recent utilization (and an idle port's share reset, as sync_in does), and the records'
        room."""
        cdef Py_ssize_t i
        cdef PortState* port
        for i in range(self.port_count if self.misses else 0):
            port = &self.ports[i]
            port.recent = self._ports[i].recent_utilization
            if port.nactive == 0:
                port.weight_sum = 0.0
                port.share = INFINITY
        self.record_room = max(1, self.record_limit - self.buffer.count)

    cdef inline int _push(
        self, double time, int64_t key, int32_t slot, int32_t kind, int64_t aux
    ) except -1 nogil:
        cdef Entry item
        item.time = time
        item.key = key
        item.slot = slot
        item.kind = kind
        item.aux = aux
        return _rq_push(&self.queue, &item)

    cdef inline int _schedule(self, double time, int32_t slot, int32_t kind) except -1 nogil:
        """schedule_at(clock, time, signal) (NORMAL, the next event id)."""
        self._push(time, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, slot, kind, 0)
        self.eid += 1
        return 0

    cdef int _loop(self, double head_time, int64_t head_key, int64_t budget) except -1 nogil:
        cdef Entry entry, head
        cdef Entry* first
        cdef int32_t s
        head.time = head_time
        head.key = head_key
        while True:
            _rq_settle(&self.queue)
            first = _rq_first(&self.queue)
            if first == NULL or not _before(first.time, first.key, &head):
                return REACHED
            if self.rerated >= RERATES_PER_EVENT and budget > 0:
                budget -= self.rerated // RERATES_PER_EVENT
                self.rerated %= RERATES_PER_EVENT
                if budget < 0:
                    budget = 0
            if budget == 0:
                return PAUSED
            budget -= 1
            entry = first[0]
            _rq_pop(&self.queue)
            self.now = entry.time
            self.events += 1
            if entry.kind == SERVED:
                _served(self, entry.slot, entry.time)
                if self.vms[self.slots[entry.slot].vm].think:  # _ClosedSlot._done
                    self._schedule(entry.time + self.vms[self.slots[entry.slot].vm].think,
                                   entry.slot, NEXT)
                else:
                    _next(self, entry.slot, entry.time)
            elif entry.kind == OPEN_SERVED:
                _served(self, entry.slot, entry.time)
                self.free_slots[self.free_count] = entry.slot
                self.free_count += 1
            elif entry.kind == ARRIVE:
                if self.any_dead and self.host_dead[self.vms[entry.slot].tier]:
                    _arrive_dead(self, entry.slot, entry.time)
                    continue
                s = _take_slot(self, entry.slot)
                _start(self, s, entry.time, OPEN_SERVED)
                _arrival_after(self, entry.slot, entry.time)
            elif entry.kind == ARRAY_DONE:
                _send(self, entry.slot, entry.time)
            elif entry.kind == MISS_DONE:
                _miss_done(self, entry.slot, entry.time)
            elif entry.kind == LONE:
                _lone_delivered(self, entry.slot, entry.aux, entry.time)
                if self.hook >= 0:  # a Python process's transfer (FLOW_PY)
                    return HOOKED
            elif entry.kind == WAKE:
                _wake(self, entry.aux, entry.time)
            elif entry.kind == WT_ARRIVED:
                _wt_arrived(self, entry.slot, entry.time)
            elif entry.kind == WT_DONE:
                _wt_done(self, entry.slot, entry.time)
            elif entry.kind == FLUSH or entry.kind == DESTAGE_ARRIVED:
                _flusher_step(self, entry.slot, entry.time)
            elif entry.kind == WB_ACKED:
                _wb_acked(self, entry.slot, entry.time)
            elif entry.kind == WB_ADMITTED:
                _wb_room(self, entry.slot, entry.time)
            elif entry.kind == WORK:
                _work_processed(self, entry.slot, entry.aux, entry.time)
            elif entry.kind == META_WAIT:
                _meta_record(self, entry.slot, entry.time)
            elif entry.kind == META_OWN:
                _meta_joined(self, entry.slot, entry.time)
            elif entry.kind == LEG_START:
                _leg_start(self, entry.slot, <int32_t>entry.aux, entry.time)
            elif entry.kind == LEG_ARRIVED:
                _leg_arrived(self, entry.slot, <int32_t>entry.aux, entry.time)
            elif entry.kind == VMOTION_DELIVERED:
                _vmotion_delivered(self, entry.slot, <int32_t>entry.aux, entry.time)
            elif entry.kind == VMOTION_INIT:  # the process runs to env.timeout(at)
                self._schedule(entry.time + self.vmotions[entry.slot].at, entry.slot,
                               VMOTION_START)
            elif entry.kind == VMOTION_START:
                _vmotion_start(self, entry.slot, entry.time)
            elif entry.kind == META_START:
                _meta_start(self, entry.slot, entry.aux, entry.time)
            elif entry.kind == META_DONE:  # succeed(clock, signal)
                self._push(entry.time, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid,
                           entry.slot, META_SIGNAL, entry.aux)
                self.eid += 1
            elif entry.kind == META_SIGNAL:
                _meta_signal(self, entry.slot, entry.aux, entry.time)
            elif entry.kind == ALEG_ARRIVED:
                _aleg_arrived(self, entry.slot, <int32_t>entry.aux, entry.time)
            elif entry.kind == ROOM:  # its signal: the write goes on (write_back)
                _async_send(self, entry.slot, entry.time)
            elif entry.kind == ALEG_START:
                _aleg_start(self, entry.slot, <int32_t>entry.aux, entry.time)
            elif entry.kind == REMOTE_ASKED:
                _remote_asked(self, entry.slot, entry.time)
            elif entry.kind == REMOTE_READ:
                _remote_read(self, entry.slot, entry.time)
            elif entry.kind == REMOTE_ARRIVED:
                _remote_arrived(self, entry.slot, entry.time)
            elif entry.kind == PD_FIRED:
                _pd_fired(self, entry.slot, entry.time)
            elif entry.kind == PD_ALL:
                _pd_resume(self, entry.slot, entry.time)
            elif entry.kind == PY_EVENT:  # processed in Python (Engine.hook)
                self.hook = entry.aux
                return HOOKED
            elif entry.kind == STORAGE_BACK:
                _storage_back(self, <int32_t>entry.aux, entry.time)
                if self.stop_heard:  # inside it (_poll_within): the run stops here
                    return PAUSED
            elif entry.kind == TURN:
                _write_begin(self, entry.slot, entry.time)
            elif entry.kind == TIMER:
                _timeout_check(self, entry.slot, entry.aux, entry.time)
            elif entry.kind == ISSUE:
                _start(self, entry.slot, entry.time, SERVED)
            elif entry.kind == OPEN_BEGIN:
                _arrival_after(self, entry.slot, entry.time)
            elif entry.kind == BEGIN:  # _ClosedSlot._begin: the VM's life it runs in
                self.slots[entry.slot].life = self.vms[self.slots[entry.slot].vm].life
                _next(self, entry.slot, entry.time)
            else:  # NEXT
                _next(self, entry.slot, entry.time)

    def run(self, double head_time, int64_t head_key, int64_t budget=-1) -> bool:
        """Process the native events that run before (``head_time``, ``head_key``), the first
        Python event, at most ``budget`` of them (-1: no limit); True if the budget ran out
        first, or if the last event taken is to be processed in Python (``hook`` is then its
        number: :meth:`fire_hook`)."""
        cdef int outcome
        with nogil:
            outcome = self._loop(head_time, head_key, budget)
        return outcome != REACHED

    def fire_hook(self, clock) -> None:
        """Process the Python event the loop stopped for (``hook``), at the engine's time, with
        the clock's event ids continuing from the engine's, the state written out before
        (:meth:`sync_out`): a transfer's ``simpy.Event`` triggered with its delivery time, a
        settled ``Signal`` with None, each processed now (``process_now``: its callbacks, a
        SimPy process waiting for it resumed)."""
        event = self._py.pop(self.hook)
        self.hook = -1
        clock.move_to(self.now)
        self.eid = clock.eid
        trigger(event, None if isinstance(event, Signal) else self.now)
        process_now(event)

    def transfer(
        self, clock, list path, double wire, int64_t packets, double latency, double weight=1.0
    ) -> object:
        """``FlowNetwork.transfer`` (no start delay) from a Python process of the run (a resync,
        a vMotion's streams; a Python event): the flow is the engine's, sharing its ports with the
        engine's transfers; its ``simpy.Event`` (returned) is triggered with its delivery time
        and processed in Python when it is delivered (:meth:`fire_hook`). Scheduled with the
        clock's event ids; the ports shown to the Python network again after (a sample may come
        next with no sync in between)."""
        cdef int32_t ports[MAX_PATH]
        cdef Py_ssize_t k
        if len(path) > MAX_PATH:
            raise ValueError("a transfer's path crosses more ports than the engine's flows can")
        for k in range(len(path)):
            ports[k] = _port_position(self, path[k])
        done = clock.env.event()
        number = self.py_next
        self.py_next += 1
        self._py[number] = done
        self.eid = clock.eid
        for k in range(len(path)):  # FlowNetwork._send
            self.ports[ports[k]].packets += packets
        if wire <= 0:  # FlowNetwork._deliver: nothing flows, delivered after the latency
            self._push(clock.now + latency, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, 0,
                       PY_EVENT, number)
            self.eid += 1
        else:
            _start_flow(self, 0, <int32_t>number, clock.now, ports, <int32_t>len(path), wire,
                        latency, weight, FLOW_PY)
        clock.eid = self.eid
        _ports_out(self)
        return done

    def buffered(self, int32_t h) -> list:
        """``Destager.buffered`` of host ``h``'s native destage buffer (order "arrival"): its
        writes accepted and not destaged, as the Python buffer's items, pending first, then the
        batches on their way to the array in the order taken. Empty without write-back writes,
        and under order "hash" (the selector takes a degrading VM, the one whose items a resync
        copies, only with order "arrival")."""
        if not self.destaging or self.dest[h].hashed:
            return []
        return self._items(
            [(vm, offset, size, (<uint32_t*><Py_ssize_t>address)[0])
             for address, vm, offset, size in _buffered(self, h)]
        )

    def add_holder(self, int32_t h, items, int32_t holder) -> int64_t:
        """``Destager.add_holder`` on host ``h``'s native destage buffer: a resync copied
        ``items`` (a Counter of buffered items, each as many times as counted) to host
        ``holder``; those still buffered, matched by VM, offset and size among the writes
        ``holder`` does not hold, in ``buffered``'s order, name it among their holders (the
        single-copy and short-of-peers bytes counted down). Returns the bytes that now have
        ``holder``'s copy."""
        if not self.destaging or self.dest[h].hashed:
            raise RuntimeError("add_holder on a native destage buffer the resync did not read")
        left = {}
        for item, count in items.items():
            key = (item[0], item[1], item[2])
            left[key] = left.get(key, 0) + count
        return _add_holder(self, h, left, holder)

    cdef list _items(self, list raw):
        """(VM, offset, size, packed holders) as the Python buffer's items (PendingWrite: the
        holders as hosts, single-copy)."""
        return [
            (vm, offset, size, self._held_hosts(held), held == 0)
            for vm, offset, size, held in raw
        ]

    cdef tuple _held_hosts(self, uint32_t held):
        """The hosts a packed holders' word names (``_holders``), in order."""
        hosts = []
        while held:
            hosts.append(self._hosts[(held & 0xFFFF) - 1])
            held >>= 16
        return tuple(hosts)

    def precedes(self, double time, int64_t key) -> bool:
        """Whether a native event comes before (``time``, ``key``), a Python event's: whether
        :meth:`run` up to it would process any."""
        cdef Entry head
        cdef Entry* first
        head.time = time
        head.key = key
        _rq_settle(&self.queue)
        first = _rq_first(&self.queue)
        return first != NULL and _before(first.time, first.key, &head)

    def queued(self) -> int:
        """Native events queued."""
        return self.queue.count

    def state_bytes(self) -> dict:
        """What the native state of buffered writes and cached lines takes now (issue 35's
        compact state; bench/bench_state.py): the destage buffers' writes and the bytes their
        rings hold (a place: 16 for the write, 8 for its entry time and 4 for its holders where
        those are kept), the read caches' lines and the bytes of their slots and recency logs;
        with asynchronous replication, the lag's items (distinct destage items lagging or with
        copies due) and its tables' bytes, and the writes whose copies are not all in and their
        pool's bytes (64 a write)."""
        cdef int64_t writes = 0, ring = 0, lines = 0, cache = 0, place
        cdef Py_ssize_t i
        if self.dest != NULL:
            for i in range(len(self._destagers)):
                place = sizeof(Pending)
                if self.dest[i].since != NULL:
                    place += sizeof(double)
                if self.dest[i].held != NULL:
                    place += sizeof(uint32_t)
                writes += self.dest[i].p_count
                ring += place * self.dest[i].p_cap
        if self.caches != NULL:
            for i in range(self.tier_count):
                lines += self.caches[i].count
                cache += (self.caches[i].mask + 1) * sizeof(int32_t)
                cache += self.caches[i].log_cap * sizeof(int64_t)
        cdef int64_t lagging = 0, lag_table = 0, asyncs = 0
        cdef int32_t r
        if self.lag != NULL:
            for i in range(self.lag_count):
                lagging += self.lag[i].count
                if self.lag[i].table != NULL:
                    lag_table += (self.lag[i].mask + 1) * sizeof(LagEntry)
        asyncs = self.async_cap
        r = self.async_free
        while r >= 0:  # the pool's free list: the rest are writes whose copies are not all in
            asyncs -= 1
            r = self.asyncs[r].next_free
        return {
            "buffered_writes": writes,
            "destage_ring_bytes": ring,
            "cached_lines": lines,
            "cache_bytes": cache,
            "lag_items": lagging,
            "lag_table_bytes": lag_table,
            "async_writes": asyncs,
            "async_pool_bytes": self.async_cap * sizeof(AsyncWrite),
        }

