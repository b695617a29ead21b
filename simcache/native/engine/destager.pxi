# Ports the write-back path and each host's destage buffer: simcache.sim.components.io_steps.
# WriteBack and ReplicaLeg (the tier write and cache fill, a leg to each peer over its peer path:
# VM.replicate; at the leg's arrival the peer's tier write, its replica bytes, its
# acknowledgement: ReplicaLeg.arrived; the write waiting for each leg in turn, then
# acknowledged at the slowest of its local part and its legs, VM.legs_finish with "memory"
# replication; the buffer's admission or the wait for room, the record: _wb_start, _leg_arrived,
# _wb_legs, _wb_acked, _wb_admitted; with metadata_write, vm_paths.write_back's metadata record
# between the local part and the legs, and simcache.sim.components.host.MetadataLog: MetaLog,
# _meta_record, _meta_start, _meta_signal); simcache.sim.components.destager.Destager for order
# "arrival", any trigger, delay, pacing "rate" or "pd" (the pd controller stays a Python process:
# it reads the synced backlog and sets the rate read back at each sync_in) (admit,
# _accept/_enqueue with its work signal and the write's replica holders, packed 16 bits each
# into 4 bytes beside the pending write: _holders; _ready_at, work_wait with timeout_or
# (_look_for_work's timer, _timeout_check), _take_batch, coalesce, write in requests of at most
# max_batch, destaged, _release with Host._drop_replicas, _admit_waiting: DestagerState) and its
# flushers, simcache.sim.components.flusher.Flusher (FlusherState, _look_for_work,
# _flusher_step: the read back as one tier read, or as background requests under "priority" or
# "weighted" scheduling (Tier.submit_background: _background), the batch over (storage_tx,
# array_rx), the array's write, the acknowledgement back).
#
# The Python flushers start as Python events (at time 0, before the VMs: they find no work and wait
# for the Python destager's work signal, which the native engine never triggers); the native ones
# start waiting for work, in the same order. At each sync the Python destager is shown the
# counters the sampler and the results read (backlog, pending, single-copy, short-of-peers,
# accepted, destaged bytes, batches, runs, the writers waiting for room), and each host its
# replica bytes held and replica payload sent.



cdef enum:
    # a flusher's phase (flusher._WORK ...)
    F_WORK = 0  # waiting for the work signal ``waiting_on``
    F_READ = 1  # reading its batch back in one tier read
    F_CHUNK = 2  # reading it back in background requests
    F_SEND = 3  # sending it to the array
    F_ARRAY = 4  # waiting for the array's acknowledgement
    F_LINK = 5  # its batch read back, waiting for the storage port (link_down)


cdef struct MetaLog:
    # a host's MetadataLog: metadata writes sent, the end of the one in flight, the batch waiting
    # for it (its number, bytes), and the writes that joined a batch (their slots and batches, in
    # the order they joined: a ring)
    int64_t writes
    double busy_until
    bint next_pending
    int64_t next_id, next_size
    int32_t* q_slot
    int64_t* q_batch
    int64_t q_head, q_count, q_cap


cdef struct Pending:
    # a write in a destage buffer: its offset, its VM's index and its size (bytes; a write is
    # far below 2 GiB): 16 bytes
    int64_t offset
    int32_t vm
    int32_t size


cdef struct DestagerState:
    int64_t capacity, max_batch, background_request
    bint chunks  # reads_in_chunks: the tier schedules background reads
    bint weighted  # ... as "weighted" (a credit), else "priority"
    double credit, credit_time, share, credit_depth  # the tier's credit ("weighted")
    int64_t backlog, pending_bytes, single_copy, short, accepted, destaged, batches, runs
    int64_t background_operations  # the tier's
    # the writes not yet taken, oldest first (a ring: 16 + 8 + 4 bytes a place with ``since`` and
    # ``held``)
    Pending* pending
    int64_t p_head, p_count, p_cap
    # the writers waiting for room, in arrival order (their slots; a ring)
    int32_t* waiting
    int64_t w_head, w_count, w_cap
    # the work signal: its number, and whether it was queued (or processed) since it was made
    int64_t work_id
    bint work_triggered
    int32_t first_flusher, nflushers
    # trigger "watermarks" (or "idle"): the bytes that start a drain and end it, whether one runs
    bint watermarks, idle, draining
    double high_bytes, low_bytes, idle_time
    # delay: a write may be taken this long after it entered (when each entered: a ring beside
    # ``pending``); pacing "rate": the earliest time the next batch may be taken
    double delay, rate, next_start
    bint paced
    double* since
    # the hosts holding each pending write's replicas (a ring beside ``pending``: _holders)
    uint32_t* held
    # order "hash": the writes and their dirty blocks in the walk's order (``pending`` unused)
    bint hashed
    HashWalk hw
    # its tier failed (Destager.stopped: _fail_destager): the flushers stop at their next step
    bint stopped


cdef struct FlusherState:
    int32_t host, phase
    int64_t waiting_on, reg_seq
    int64_t left, request
    bint booked
    # waiting for the work signal ``waiting_on`` itself (``direct``), or for the first of it and
    # a timer (timeout_or): that wait's number and whether its end was queued
    bint direct
    int64_t tw_id
    bint tw_triggered
    # its batch: the writes taken (and their replicas' holders), their runs (coalesced), bytes;
    # when it was taken (Engine.take_serial: the order of Destager._flushing)
    int64_t taken
    Piece* items
    uint32_t* held
    int32_t n_items, items_cap, held_cap
    Piece* runs
    int32_t n_runs, runs_cap
    Piece* requests  # the runs cut into pieces of at most max_batch (Destager.write)
    int32_t requests_cap
    # order "hash": each piece's write (its slot in the walk: ``vm``) and bytes (``size``)
    Piece* owners
    int32_t owners_cap
    int64_t nbytes, unique


cdef int _piece_cmp(const void* a, const void* b) noexcept nogil:
    """(VM, offset) order (ties in any order: the runs coalesced are their union)."""
    cdef const Piece* x = <const Piece*>a
    cdef const Piece* y = <const Piece*>b
    if x.vm != y.vm:
        return -1 if x.vm < y.vm else 1
    if x.offset != y.offset:
        return -1 if x.offset < y.offset else 1
    return 0


cdef void _sort_pieces(Piece* pieces, Py_ssize_t n) noexcept nogil:
    """``pieces`` in (VM, offset) order (:func:`_piece_cmp`; SMALL_SORT)."""
    cdef Piece item
    cdef Py_ssize_t k, i
    if n > SMALL_SORT:
        qsort(pieces, n, sizeof(Piece), _piece_cmp)
        return
    for k in range(1, n):
        item = pieces[k]
        i = k
        while i > 0 and _piece_cmp(&pieces[i - 1], &item) > 0:
            pieces[i] = pieces[i - 1]
            i -= 1
        pieces[i] = item


cdef inline Piece* _pieces_room(Piece* pieces, int32_t* cap, int32_t n) except NULL nogil:
    """``pieces`` with room for ``n`` (grown out of line: :func:`_pieces_grow`)."""
    if n <= cap[0] and pieces != NULL:
        return pieces
    return _pieces_grow(pieces, cap, n)


cdef Piece* _pieces_grow(Piece* pieces, int32_t* cap, int32_t n) except NULL nogil:
    """``pieces`` (none yet, or room for fewer than ``n``) reallocated with room for ``n``: 16
    places at least, doubled until."""
    cdef int32_t new_cap = cap[0]
    cdef Piece* grown
    if new_cap < 16:
        new_cap = 16
    while new_cap < n:
        new_cap *= 2
    grown = <Piece*>realloc(pieces, new_cap * sizeof(Piece))
    if grown == NULL:
        with gil:
            raise MemoryError()
    cap[0] = new_cap
    return grown


cdef inline uint32_t _holders(VmState* vm) noexcept nogil:
    """VM.destage_item's holders for an asynchronous write (the VM's peers: every peer's tier is
    up in the runs the engine takes, and no outage degrades an asynchronous VM's writes), packed
    into 32 bits: each holder's host position plus one, 16 bits each, the first in the low half;
    0: none (a single copy)."""
    cdef uint32_t held = 0
    cdef int32_t k
    for k in range(vm.npeers - 1, -1, -1):
        held = (held << 16) | <uint32_t>(vm.peer[k] + 1)
    return held


cdef inline uint32_t _slot_holders(Engine self, Slot* slot) noexcept nogil:
    """VM.destage_item's holders for slot ``slot``'s write: the peers it began with whose tier
    has not failed since (packed as by _holders)."""
    cdef uint32_t held = 0
    cdef int32_t k
    for k in range(slot.npeers - 1, -1, -1):
        if not self.tier_down[slot.leg_host[k]]:
            held = (held << 16) | <uint32_t>(slot.leg_host[k] + 1)
    return held


cdef inline int32_t _held_count(uint32_t held) noexcept nogil:
    return (1 if held & 0xFFFF else 0) + (1 if held >> 16 else 0)


cdef int _enqueue(Engine self, int32_t h, int32_t v, int64_t offset, int64_t size,
                  double now, uint32_t held, bint accept) except -1 nogil:
    """Destager._accept (``accept``; else Destager.adopt: a write handed over) and _enqueue of
    VM ``v``'s write (its replicas' holders ``held``, packed): into the pending queue, the
    single-copy and short-of-peers bytes counted; the work signal queued now if it was not."""
    cdef DestagerState* d = &self.dest[h]
    cdef VmState* vm = &self.vms[v]
    if size > 0x7FFFFFFF or vm.index > 0x7FFFFFFF:
        with gil:
            raise ValueError("a buffered write of 2 GiB or more, or of a VM past 2**31")
    if accept:
        d.accepted += size
    d.backlog += size
    d.pending_bytes += size
    if held == 0:
        d.single_copy += size
    if _held_count(held) < vm.promised:
        d.short += size
    if d.hashed:
        _hw_push(&d.hw, vm.index, offset, size, held)
    else:
        _ring_push(d, vm.index, offset, size, now, held)
    if not d.work_triggered:  # as Event.succeed(): queued now
        d.work_triggered = True
        self._push(now, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, h, WORK, d.work_id)
        self.eid += 1
    return 0


cdef int _ring_push(DestagerState* d, int64_t vm, int64_t offset, int64_t size, double now,
                    uint32_t held) except -1 nogil:
    """WriteQueue.push: the write at the pending ring's tail, with its entry time and holders
    (the ring doubled when full)."""
    cdef int64_t cap, k
    cdef Pending* grown
    cdef double* since
    cdef uint32_t* held_ring
    if d.p_count == d.p_cap:
        cap = 2 * d.p_cap if d.p_cap else 64
        grown = <Pending*>malloc(cap * sizeof(Pending))
        since = <double*>malloc(cap * sizeof(double))
        held_ring = <uint32_t*>malloc(cap * sizeof(uint32_t))
        if grown == NULL or since == NULL or held_ring == NULL:
            with gil:
                raise MemoryError()
        for k in range(d.p_count):
            grown[k] = d.pending[(d.p_head + k) % d.p_cap]
            since[k] = d.since[(d.p_head + k) % d.p_cap]
            held_ring[k] = d.held[(d.p_head + k) % d.p_cap]
        free(d.pending)
        free(d.since)
        free(d.held)
        d.pending = grown
        d.since = since
        d.held = held_ring
        d.p_head = 0
        d.p_cap = cap
    k = (d.p_head + d.p_count) % d.p_cap
    d.pending[k].vm = <int32_t>vm
    d.pending[k].offset = offset
    d.pending[k].size = <int32_t>size
    d.since[k] = now
    d.held[k] = held
    d.p_count += 1
    return 0


cdef int _wb_start(Engine self, int32_t s, double now) except -1 nogil:
    """WriteBack.__init__ (and write_back's start): the tier write and the cache fill now
    (VM.begin_write), a replica leg to each peer (VM.replicate_all), or with "async"
    replication the copies once they are in the send buffer (lag.pxi); the write is acknowledged
    when its local part (with its metadata record, if any) and its legs are done."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef int32_t host = vm.tier
    cdef int32_t k
    slot.host = host
    slot.local_done = _read(&self.tiers[host], now, slot.size, True, vm.gc_factor)
    if not self.caches[host].full:
        _insert(&self.caches[host], vm.index, slot.offset, slot.size)
    if vm.nleft:  # VM.begin_write: the hosts a moved VM left drop their copies of the lines
        _discard_left(self, vm, slot.offset, slot.size)
    slot.next_leg = 0
    slot.wait_leg = -1
    slot.critical = -1.0
    slot.lag = 0  # (a slot's memory is not cleared between its I/Os)
    slot.npeers = vm.nreach  # VM.peers now
    for k in range(vm.nreach):
        slot.leg_peer[k] = vm.reached[k]
        slot.leg_host[k] = vm.peer[vm.reached[k]]
    if vm.async_rep and vm.npeers:  # nothing waits for the copies
        slot.nlegs = 0
        return _async_start(self, s, now)
    slot.nlegs = slot.npeers
    for k in range(slot.nlegs):
        slot.leg_done[k] = False
        _send_leg(self, vm, s, k, slot.leg_peer[k], slot.size, now, FLOW_LEG,
                  &slot.leg_wire[k])
    return _wb_next(self, s, now)


cdef int _send_leg(Engine self, VmState* vm, int32_t owner, int32_t k, int32_t c, int64_t size,
                   double now, int32_t kind, double* wire_kept) except -1 nogil:
    """VM.replicate: leg ``k``'s payload (compressed, always or while its port is busy, if the
    VM may) sent over its path to peer ``c`` (a position in ``vm.peer``), its delivery doing
    ``kind`` (FLOW_LEG for slot ``owner``'s leg, FLOW_ALEG for AsyncWrite ``owner``'s); a
    compressed one starts after its CPU time (a sleep; its wire bytes kept in ``wire_kept`` till
    then)."""
    cdef int32_t j
    cdef double wire, payload = <double>size, cpu = 0.0, saved
    cdef int packets
    if vm.may_compress and (vm.always_compress or _link_busy(self, vm, c)):
        cpu = size / vm.compress_rate  # compression_seconds
        saved = size * vm.compressibility
        payload -= saved
        vm.saved += saved
    self.payload_sent[vm.tier] += payload
    packets = _frame(self, vm.leg_frame[c], payload, &wire)
    if cpu > 0:  # FlowNetwork._send: the packets now, the flow after the CPU time (a sleep)
        for j in range(vm.leg_nports[c]):
            self.ports[vm.leg_ports[c * MAX_PATH + j]].packets += packets
            if kind == FLOW_LEG:  # (its path as it is now: the VM may move meanwhile)
                self.slots[owner].leg_ports[k * MAX_PATH + j] = vm.leg_ports[c * MAX_PATH + j]
        if kind == FLOW_LEG:
            self.slots[owner].leg_nports[k] = vm.leg_nports[c]
        wire_kept[0] = wire
        self._push(now + cpu, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, owner,
                   LEG_START if kind == FLOW_LEG else ALEG_START, k)
        self.eid += 1
        return 0
    return _send_path(self, owner, k, now, &vm.leg_ports[c * MAX_PATH], vm.leg_nports[c], wire,
                      packets, vm.peer_latency, 1.0, kind)


cdef int _wb_next(Engine self, int32_t s, double now) except -1 nogil:
    """write_back once its copies are sent: its metadata record after the data (if any), then
    the wait for its legs."""
    cdef Slot* slot = &self.slots[s]
    if self.vms[slot.vm].metadata_size:
        if slot.local_done > now:
            self._schedule(now + (slot.local_done - now), s, META_WAIT)  # = sleep()'s time
            return 0
        return _meta_record(self, s, now)
    return _wb_legs(self, s, now)


cdef bint _link_busy(Engine self, VmState* vm, int32_t k) noexcept nogil:
    """VM._link_busy for leg ``k``'s sending port: its recent utilization (scaled up while the
    VM compresses on it) at or above the threshold; the port joins or leaves the ports the VM
    compresses on (every leg leaving on it)."""
    cdef int32_t port = vm.leg_ports[k * MAX_PATH], j
    cdef double utilization = self.ports[port].recent
    cdef bint busy
    if vm.compressing[k]:
        utilization /= 1.0 - vm.compressibility
    busy = utilization >= vm.threshold
    for j in range(vm.npeers):
        if vm.leg_ports[j * MAX_PATH] == port:
            vm.compressing[j] = busy
    return busy


cdef int _compression_out(Engine self, Py_ssize_t i) except -1:
    """VM ``i``'s compressed bytes saved, and the ports it compresses on (``_compressing``)."""
    cdef VmState* vm = &self.vms[i]
    cdef int32_t k
    machine = self._vms[i]
    machine.compressed_bytes_saved = vm.saved
    machine._compressing.clear()
    for k in range(vm.npeers):
        if vm.compressing[k]:
            machine._compressing.add(machine.host.peer_path(machine.peer_loss.chosen[k])[0])
    return 0


cdef int _leg_start(Engine self, int32_t s, int32_t k, double now) except -1 nogil:
    """A compressed leg's CPU time is over: its flow starts (FlowNetwork._start)."""
    cdef Slot* slot = &self.slots[s]
    return _start_flow(self, s, k, now, &slot.leg_ports[k * MAX_PATH], slot.leg_nports[k],
                       slot.leg_wire[k], self.vms[slot.vm].peer_latency, 1.0, FLOW_LEG)


cdef int _leg_arrived(Engine self, int32_t s, int32_t k, double now) except -1 nogil:
    """ReplicaLeg.arrived: slot ``s``'s leg ``k`` is at its peer: the peer's tier write (its
    replica bytes counted), its times; then the write goes on if it waits for this leg."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef int32_t peer = slot.leg_host[k]
    cdef double done = _read(&self.tiers[peer], now, slot.size, True, vm.gc_factor)
    if not self.tier_down[peer]:  # a failed peer's copy is no copy (the leg still completes)
        self.replica_bytes[peer] += slot.size
    slot.leg_arrived[k] = now
    slot.leg_peer_done[k] = done
    slot.leg_acked[k] = done + vm.ack_time
    slot.leg_done[k] = True
    if slot.wait_leg == k:
        slot.wait_leg = -1
        return _wb_legs(self, s, now)
    return 0


cdef int _wb_legs(Engine self, int32_t s, double now) except -1 nogil:
    """WriteBack's _LEGS phase (write_back's ``yield leg.delivered`` in turn): wait for each leg
    not arrived yet, in order; then VM.legs_finish: acknowledged at the slowest of the local
    part (``slot.local_done``) and the legs' acknowledgements (a leg from the peer's RAM with
    "memory" replication), now or after a sleep."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef int32_t k
    cdef double finish, critical = -1.0, arrived, peer_done, acked
    while slot.next_leg < slot.nlegs:
        k = slot.next_leg
        slot.next_leg += 1
        if not slot.leg_done[k]:  # not delivered yet: wait for it (after its own callback)
            slot.wait_leg = k
            return 0
    finish = slot.local_done
    for k in range(slot.nlegs):
        arrived = slot.leg_arrived[k]
        peer_done = slot.leg_peer_done[k]
        acked = slot.leg_acked[k]
        if vm.memory_ack:  # acknowledged from the peer's RAM: its tier write goes on off the path
            acked = arrived + vm.ack_time
            peer_done = arrived
        if acked > finish:
            finish = acked
            critical = peer_done - arrived
    slot.critical = critical
    if finish > now:
        self._schedule(now + (finish - now), s, WB_ACKED)  # = sleep()'s time
        return 0
    return _wb_acked(self, s, now)


cdef int _meta_join(MetaLog* m, int32_t s, int64_t batch) except -1 nogil:
    cdef int64_t cap, k
    cdef int32_t* slots
    cdef int64_t* batches
    if m.q_count == m.q_cap:
        cap = 2 * m.q_cap if m.q_cap else 16
        slots = <int32_t*>malloc(cap * sizeof(int32_t))
        batches = <int64_t*>malloc(cap * sizeof(int64_t))
        if slots == NULL or batches == NULL:
            with gil:
                raise MemoryError()
        for k in range(m.q_count):
            slots[k] = m.q_slot[(m.q_head + k) % m.q_cap]
            batches[k] = m.q_batch[(m.q_head + k) % m.q_cap]
        free(m.q_slot)
        free(m.q_batch)
        m.q_slot = slots
        m.q_batch = batches
        m.q_head = 0
        m.q_cap = cap
    k = (m.q_head + m.q_count) % m.q_cap
    m.q_slot[k] = s
    m.q_batch[k] = batch
    m.q_count += 1
    return 0


cdef int _meta_record(Engine self, int32_t s, double now) except -1 nogil:
    """write_back's metadata record, the data on the tier: unbatched its own tier write
    (MetadataLog.write); batched MetadataLog.join (its own write if the log is idle, else the
    next batch's signal)."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef int32_t h = slot.host
    cdef MetaLog* m = &self.meta[h]
    cdef double done
    if not vm.metadata_batched:
        m.writes += 1
        slot.local_done = _read(&self.tiers[h], now, vm.metadata_size, True, 1.0)
        return _wb_legs(self, s, now)
    if m.next_pending:
        return _meta_join(m, s, m.next_id)
    if m.busy_until <= now:
        m.writes += 1
        done = _read(&self.tiers[h], now, vm.metadata_size, True, 1.0)
        m.busy_until = done
        self._schedule(now + (done - now), s, META_OWN)  # = sleep()'s time
        return 0
    m.next_pending = True
    m.next_size = vm.metadata_size
    m.next_id += 1
    _meta_join(m, s, m.next_id)
    self._push(now + (m.busy_until - now), (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, h,
               META_START, m.next_id)
    self.eid += 1
    return 0


cdef int _meta_start(Engine self, int32_t h, int64_t batch, double now) except -1 nogil:
    """MetadataLog._start_next: the batch's metadata write starts now."""
    cdef MetaLog* m = &self.meta[h]
    cdef double done
    m.next_pending = False
    m.writes += 1
    done = _read(&self.tiers[h], now, m.next_size, True, 1.0)
    m.busy_until = done
    self._push(now + (done - now), (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, h,
               META_DONE, batch)
    self.eid += 1
    return 0


cdef int _meta_signal(Engine self, int32_t h, int64_t batch, double now) except -1 nogil:
    """The batch's signal is processed: the writes that joined it go on (acknowledged now), in
    the order they joined."""
    cdef MetaLog* m = &self.meta[h]
    cdef int32_t s
    while m.q_count and m.q_batch[m.q_head] == batch:
        s = m.q_slot[m.q_head]
        m.q_head = (m.q_head + 1) % m.q_cap
        m.q_count -= 1
        _meta_joined(self, s, now)
    return 0


cdef int _meta_joined(Engine self, int32_t s, double now) except -1 nogil:
    """write_back after ``yield metadata_log.join(...)``: its local part is done now; then its
    legs."""
    self.slots[s].local_done = now
    return _wb_legs(self, s, now)


cdef int _wb_acked(Engine self, int32_t s, double now) except -1 nogil:
    """WriteBack._acknowledged: into the destage buffer if it has room (then recorded), else
    wait for room."""
    cdef Slot* slot = &self.slots[s]
    cdef int32_t h = slot.host
    cdef DestagerState* d = &self.dest[h]
    slot.arrived = now  # acked_at
    if self.tier_down[h]:  # its tier failed under it (device_failure): the write failed
        return _wb_failed(self, s, now)
    if d.w_count == 0 and d.backlog + slot.size <= d.capacity:
        _enqueue(self, h, slot.vm, slot.offset, slot.size, now,
                 _slot_holders(self, slot), True)
        return _wb_admitted(self, s, now)
    return _ring_put(&d.waiting, &d.w_head, &d.w_count, &d.w_cap, s)


cdef int _wb_admitted(Engine self, int32_t s, double now) except -1 nogil:
    """WriteBack._record: the write is in the buffer; record it (write_components: its local,
    network and peer-tier parts; its wait for room as its destage-wait component); then the slot
    goes on."""
    cdef Slot* slot = &self.slots[s]
    cdef int32_t v = slot.vm
    cdef bint waited_for_room = False
    if slot.lag:  # its copies sent asynchronously: ReplicaLag.acknowledged
        _lag_acknowledged(self, s)
        waited_for_room = slot.arrived > slot.local_done
    if waited_for_room:  # for room in the send buffer: network time
        _record(self, s, now, slot.local_done - slot.issued, slot.arrived - slot.local_done,
                0.0, self.path_write, now - slot.arrived, 0.0)
    elif slot.critical < 0:
        _record(self, s, now, slot.arrived - slot.issued, 0.0, 0.0, self.path_write,
                now - slot.arrived, 0.0)
    else:
        _record(self, s, now, slot.begun - slot.issued,
                (slot.arrived - slot.begun) - slot.critical, 0.0, self.path_write,
                now - slot.arrived, slot.critical)
    if slot.degrading:  # write_short_of_peers's finally: PeerLoss.degraded
        _degraded(self, v, now)
    _serial_done(self, v, now)
    return _slot_done(self, s, now)


cdef int _wb_room(Engine self, int32_t s, double now) except -1 nogil:
    """WriteBack's wait for room ended (WB_ADMITTED): recorded, or failed if its tier failed
    while it waited (_fail_destager told it)."""
    if self.tier_down[self.slots[s].host]:
        return _wb_failed(self, s, now)
    return _wb_admitted(self, s, now)


cdef int _wb_failed(Engine self, int32_t s, double now) except -1 nogil:
    """WriteBack._failed (write_back's return): the write failed, its tier gone under it; nothing
    is recorded; the VM's next serialized write takes its turn, the slot goes on."""
    cdef int32_t v = self.slots[s].vm
    self.slots[s].number = -1  # not in flight either (writes_in_flight.pop)
    if self.slots[s].degrading:
        _degraded(self, v, now)
    _serial_done(self, v, now)
    return _slot_done(self, s, now)


cdef int _admit_waiting(Engine self, int32_t h, double now) except -1 nogil:
    """Destager._admit_waiting: the writers that fit now, in order, accepted; each told so by an
    event now (succeed)."""
    cdef DestagerState* d = &self.dest[h]
    cdef int32_t s
    while d.w_count:
        s = d.waiting[d.w_head]
        if d.backlog + self.slots[s].size > d.capacity:
            break
        d.w_head = (d.w_head + 1) % d.w_cap
        d.w_count -= 1
        _enqueue(self, h, self.slots[s].vm, self.slots[s].offset, self.slots[s].size, now,
                 _slot_holders(self, &self.slots[s]), True)
        self._schedule(now, s, WB_ADMITTED)
    return 0


cdef int _take(Engine self, int32_t fi, double now) except -1 nogil:
    """Destager.take: for order "arrival", the oldest writes up to max_batch (at least one); for
    "hash", the walk's next blocks (_take_blocks); paced; coalesced into runs sorted by VM and
    offset."""
    cdef FlusherState* f = &self.flushers[fi]
    cdef DestagerState* d = &self.dest[f.host]
    cdef Piece item
    cdef int64_t total = 0, left, size, last_vm = -1, last_end = -1, extra
    cdef int32_t n = 0, k
    cdef double floor = d.low_bytes if d.draining else 0.0
    cdef double eligible_before = now - d.delay, start
    if d.hashed:
        n = _take_blocks(self, f, d, &total)
    else:
        left = d.pending_bytes
        while d.p_count:
            size = d.pending[d.p_head].size
            if n and (total + size > d.max_batch or not d.since[d.p_head] <= eligible_before
                      or left - size < floor):
                break
            f.items = _pieces_room(f.items, &f.items_cap, n + 1)
            if f.held_cap < f.items_cap:
                f.held = <uint32_t*>realloc(f.held, f.items_cap * sizeof(uint32_t))
                if f.held == NULL:
                    with gil:
                        raise MemoryError()
                f.held_cap = f.items_cap
            f.items[n].vm = d.pending[d.p_head].vm
            f.items[n].offset = d.pending[d.p_head].offset
            f.items[n].size = d.pending[d.p_head].size
            f.held[n] = d.held[d.p_head]
            n += 1
            d.p_head = (d.p_head + 1) % d.p_cap
            d.p_count -= 1
            total += size
            left -= size
        d.pending_bytes = left
    f.n_items = n
    f.nbytes = total
    self.take_serial += 1
    f.taken = self.take_serial
    if d.paced:
        start = d.next_start if d.next_start > now else now
        d.next_start = start + total / d.rate
    # Destager.coalesce: the runs, sorted by (VM, offset), overlapping or adjacent ones merged
    f.runs = _pieces_room(f.runs, &f.runs_cap, n)
    memcpy(f.runs, f.items, n * sizeof(Piece))
    _sort_pieces(f.runs, n)
    f.n_runs = 0
    for k in range(n):
        item = f.runs[k]
        if item.vm == last_vm and item.offset <= last_end and f.n_runs:
            extra = item.offset + item.size - last_end
            if extra > 0:
                f.runs[f.n_runs - 1].size += extra
                last_end += extra
        else:
            f.runs[f.n_runs] = item
            f.n_runs += 1
            last_vm = item.vm
            last_end = item.offset + item.size
    f.unique = 0
    for k in range(f.n_runs):
        f.unique += f.runs[k].size
    return 0


cdef int32_t _take_blocks(Engine self, FlusherState* f, DestagerState* d, int64_t* total
                         ) except -1 nogil:
    """Destager._take_blocks: the walk's next dirty blocks, whole, up to max_batch bytes (at
    least one), leaving at least the low watermark pending while a drain runs: each piece in
    ``f.items``, its write and bytes in ``f.owners`` (no holders: ``f.held`` is not read for
    them, _destaged releases them by their owners); their count returned, their bytes in
    ``total``, the pending bytes counted down."""
    cdef HashWalk* w = &d.hw
    cdef double floor = d.low_bytes if d.draining else 0.0
    cdef int64_t left = d.pending_bytes, size, key, start
    cdef int32_t n = 0, slot, piece
    total[0] = 0
    while _hw_ready(w):
        size = _hw_head_size(w)
        if n and (total[0] + size > d.max_batch or left - size < floor):
            break
        key = w.walk.blocks[0].key  # HashWalk.take_block: the block's pieces come together
        while w.walk.count and w.walk.blocks[0].key == key:
            slot = w.walk.blocks[0].slot
            piece = w.walk.blocks[0].piece
            size = _hw_piece(w, slot, piece, &start)
            _block_pop(&w.walk)
            w.cursor = key
            f.items = _pieces_room(f.items, &f.items_cap, n + 1)
            f.owners = _pieces_room(f.owners, &f.owners_cap, n + 1)
            f.items[n].vm = w.vm[slot]
            f.items[n].offset = start
            f.items[n].size = size
            f.owners[n].vm = slot
            f.owners[n].size = size
            n += 1
            total[0] += size
            left -= size
    d.pending_bytes = left
    return n


cdef bint _background(Engine self, int32_t h, double now, int64_t size, double* at
                      ) except -1 nogil:
    """Tier.submit_background for a read under "priority" or "weighted" scheduling: booked now
    (True, its completion in ``at``) or not before ``at`` (False)."""
    cdef TierState* t = &self.tiers[h]
    cdef DestagerState* d = &self.dest[h]
    cdef double channel_free = t.channels[0], latency, pipe_free, idle_at, foreground
    cdef double cost, credit, depth, ready
    latency = t.latency + size * t.read_channel
    pipe_free = (t.ends[t.pipe_n - 1] if t.pipe_n and t.ends[t.pipe_n - 1] > now else now
                 ) - latency
    idle_at = channel_free if channel_free > pipe_free else pipe_free
    if idle_at > now:
        if not d.weighted:
            at[0] = idle_at
            return False
        cost = size * t.per_byte
        credit = d.credit + (now - d.credit_time) * d.share
        depth = cost if cost > d.credit_depth else d.credit_depth
        if credit > depth:
            credit = depth
        d.credit = credit
        d.credit_time = now
        if credit < cost * (1.0 - 1e-9):  # (a retry at the exact refill time must pass)
            ready = now + (cost - credit) / d.share
            at[0] = ready if ready < idle_at else idle_at
            return False
        d.credit = credit - cost if credit > cost else 0.0
    self.dest[h].background_operations += 1
    foreground = t.foreground_until
    at[0] = _read(t, now, size, False, 1.0)
    t.foreground_until = foreground
    return True


cdef bint _read_chunk(Engine self, int32_t fi, bint again, double now) except -1 nogil:
    """Flusher._read_chunk: offer the tier the batch's next background request (``again``: the
    one it turned down); False once the batch is read back."""
    cdef FlusherState* f = &self.flushers[fi]
    cdef double at
    if not again:
        if f.left <= 0:
            return False
        f.request = self.dest[f.host].background_request
        if f.left <= f.request:
            f.request = f.left
    f.booked = _background(self, f.host, now, f.request, &at)
    self._schedule(now + (at - now), fi, FLUSH)  # = sleep()'s time
    return True


cdef double _ready_at(Engine self, DestagerState* d, int32_t h, double now) noexcept nogil:
    """Destager._ready_at: when a flusher may take the next batch (``now``, later, or
    INFINITY: wait for new writes), the watermark state updated on the way."""
    cdef int64_t oldest
    cdef double ready = now, quiet_from, eligible
    if d.hashed:
        if not _hw_ready(&d.hw):
            return INFINITY
        oldest = _hw_head_size(&d.hw)
    elif d.p_count == 0:
        return INFINITY
    else:
        oldest = d.pending[d.p_head].size
    if d.watermarks or d.idle:
        if d.draining and d.pending_bytes - oldest < d.low_bytes:
            d.draining = False
        if (not d.draining and d.backlog >= d.high_bytes
                and d.pending_bytes - oldest >= d.low_bytes):
            d.draining = True
        if not d.draining:
            if d.watermarks:
                return INFINITY
            quiet_from = self.tiers[h].foreground_until + d.idle_time
            if quiet_from > now:
                return quiet_from
    if d.delay:
        eligible = d.since[d.p_head] + d.delay
        if eligible > ready:
            ready = eligible
    if d.paced and d.next_start > ready:
        ready = d.next_start
    return ready


cdef int _look_for_work(Engine self, int32_t fi, double now) except -1 nogil:
    """Flusher._look_for_work: take a batch if the destager has one now (Destager.work_wait),
    else wait for the work signal (a new one if the current one was queued already), or for the
    first of it and the time _ready_at names (timeout_or: its timer queued now)."""
    cdef FlusherState* f = &self.flushers[fi]
    cdef DestagerState* d = &self.dest[f.host]
    cdef double done, ready
    if d.stopped:  # (the work signal of a failed tier's buffer: Flusher._step's stop check)
        return 0
    ready = _ready_at(self, d, f.host, now)
    if ready > now:
        if d.work_triggered:
            d.work_id += 1
            d.work_triggered = False
        f.phase = F_WORK
        f.waiting_on = d.work_id
        self.reg_seq += 1
        f.reg_seq = self.reg_seq
        f.direct = ready == INFINITY
        if not f.direct:
            self.tw_serial += 1
            f.tw_id = self.tw_serial
            f.tw_triggered = False
            self._push(now + (ready - now), (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, fi,
                       TIMER, f.tw_id)
            self.eid += 1
        return 0
    _take(self, fi, now)
    if d.chunks:
        f.phase = F_CHUNK
        f.left = f.unique
        if not _read_chunk(self, fi, False, now):
            _send_batch(self, fi, now)
        return 0
    done = _read(&self.tiers[f.host], now, f.unique, False, 1.0)
    f.phase = F_READ
    self._schedule(now + (done - now), fi, FLUSH)  # = sleep()'s time
    return 0


cdef int _send_batch(Engine self, int32_t fi, double now) except -1 nogil:
    """Flusher._read_done: the batch read back waits for the storage port if a link_down holds
    it, else is sent (_send_now)."""
    cdef FlusherState* f = &self.flushers[fi]
    if self.dest[f.host].stopped:
        return 0
    if self.storage_down[f.host]:
        f.phase = F_LINK
        return _park(self, f.host, fi, PARKED_FLUSH)
    return _send_now(self, fi, now)


cdef int _send_now(Engine self, int32_t fi, double now) except -1 nogil:
    """Flusher._send: the batch over (storage_tx, array_rx)."""
    cdef FlusherState* f = &self.flushers[fi]
    f.phase = F_SEND
    return _send_on(self, fi, now, self.host_wports[2 * f.host], self.host_wports[2 * f.host + 1],
                    f.host, f.unique, FLOW_DESTAGE)


cdef double _array_batch(Engine self, int32_t fi, double now) except? -1 nogil:
    """Destager.write: the runs on the array (cut into requests of at most max_batch if one is
    longer), as one Array.submit; how long from now until the acknowledgement is back."""
    cdef FlusherState* f = &self.flushers[fi]
    cdef DestagerState* d = &self.dest[f.host]
    cdef int64_t start, piece
    cdef int32_t k, n = 0
    cdef bint cut = False
    cdef double done
    for k in range(f.n_runs):
        if f.runs[k].size > d.max_batch:
            cut = True
    if not cut:
        done = _array_submit(&self.array, &self.aw, now, f.runs, f.n_runs)
        return done - now + self.host_ack[f.host]
    for k in range(f.n_runs):  # pieces(run, max_batch), in order
        start = 0
        while start < f.runs[k].size:
            piece = f.runs[k].size - start
            if piece > d.max_batch:
                piece = d.max_batch
            f.requests = _pieces_room(f.requests, &f.requests_cap, n + 1)
            f.requests[n].vm = f.runs[k].vm
            f.requests[n].offset = f.runs[k].offset + start
            f.requests[n].size = piece
            n += 1
            start += d.max_batch
    done = _array_submit(&self.array, &self.aw, now, f.requests, n)
    return done - now + self.host_ack[f.host]


cdef inline int _left(Engine self, int32_t h, int64_t vm, int64_t offset, int64_t size,
                      uint32_t held, double now) except -1 nogil:
    """Destager._release for one write that left host ``h``'s buffer: its single-copy and
    short-of-peers bytes counted down; the reads waiting for its destage, if a holder took it
    over, told (PendingDestage.destaged); its holders drop their copies (Host._drop_replicas;
    once the host has acknowledged an asynchronous write, ReplicaLag.destaged)."""
    cdef DestagerState* d = &self.dest[h]
    if self.pd_on:
        _pd_destaged(self, h, <int32_t>vm, offset, size, now)
    if held == 0:
        d.single_copy -= size
    if _held_count(held) < self.vms[vm].promised:
        d.short -= size
    if self.lag[h].tracking:
        return _lag_destaged(self, &self.lag[h], vm, offset, size, held)
    while held:
        self.replica_bytes[(held & 0xFFFF) - 1] -= size
        held >>= 16
    return 0


cdef int _destaged(Engine self, int32_t fi, double now) except -1 nogil:
    """Destager.destaged and _release: count the batch, free its bytes, admit the writers that
    fit now."""
    cdef FlusherState* f = &self.flushers[fi]
    cdef DestagerState* d = &self.dest[f.host]
    cdef int32_t k, slot
    d.batches += 1
    d.runs += f.n_runs
    d.backlog -= f.nbytes
    d.destaged += f.nbytes
    if d.hashed:  # Destager._release_blocks: the writes whose last block this was leave
        for k in range(f.n_items):
            slot = <int32_t>f.owners[k].vm
            if _hw_release(&d.hw, slot, f.owners[k].size):
                _left(self, f.host, d.hw.vm[slot], d.hw.offset[slot], d.hw.size[slot],
                      d.hw.held[slot], now)
    else:
        for k in range(f.n_items):
            _left(self, f.host, f.items[k].vm, f.items[k].offset, f.items[k].size, f.held[k],
                  now)
    f.n_items = 0
    f.n_runs = 0
    return _admit_waiting(self, f.host, now)


cdef int _flusher_step(Engine self, int32_t fi, double now) except -1 nogil:
    """Flusher._step: go on from the wait that just ended."""
    cdef FlusherState* f = &self.flushers[fi]
    cdef int32_t phase = f.phase
    if phase != F_CHUNK and self.dest[f.host].stopped:
        return 0  # its tier failed: it stops (its batch was handed to the replica holders)
    if phase == F_CHUNK:
        if f.booked:
            f.left -= f.request
            if _read_chunk(self, fi, False, now):
                return 0
        elif _read_chunk(self, fi, True, now):
            return 0
        return _send_batch(self, fi, now)
    if phase == F_WORK:
        return _look_for_work(self, fi, now)
    if phase == F_READ:
        return _send_batch(self, fi, now)
    if phase == F_SEND:  # the batch has arrived: the array writes it
        f.phase = F_ARRAY
        self._schedule(now + _array_batch(self, fi, now), fi, FLUSH)  # = sleep()'s time
        return 0
    _destaged(self, fi, now)  # F_ARRAY
    return _look_for_work(self, fi, now)


cdef int _work_processed(Engine self, int32_t h, int64_t work_id, double now) except -1 nogil:
    """The work signal ``work_id`` of host ``h`` is processed: the flushers waiting for it go
    on, in the order they began to wait."""
    cdef DestagerState* d = &self.dest[h]
    cdef int32_t k, best
    cdef int64_t last = -1, best_seq
    while True:  # the next waiter by registration (a handful of flushers)
        best = -1
        best_seq = 0
        for k in range(d.first_flusher, d.first_flusher + d.nflushers):
            if (self.flushers[k].phase == F_WORK and self.flushers[k].waiting_on == work_id
                    and self.flushers[k].reg_seq > last
                    and (best < 0 or self.flushers[k].reg_seq < best_seq)):
                best = k
                best_seq = self.flushers[k].reg_seq
        if best < 0:
            return 0
        last = best_seq
        if self.flushers[best].direct:
            _look_for_work(self, best, now)
        else:
            _timeout_check(self, best, self.flushers[best].tw_id, now)


cdef int _timeout_check(Engine self, int32_t fi, int64_t tw_id, double now) except -1 nogil:
    """timeout_or's check (its timer, or the work signal, processed): the flusher's wait ends
    now (an event), unless it ended already or is an older wait."""
    cdef FlusherState* f = &self.flushers[fi]
    if f.phase != F_WORK or f.direct or f.tw_id != tw_id or f.tw_triggered:
        return 0
    f.tw_triggered = True
    self._push(now, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, fi, FLUSH, 0)
    self.eid += 1
    return 0


cdef int _setup_destagers(Engine self, list hosts) except -1:
    """Engine.use_destagers: each host's destager figures and flushers."""
    cdef Py_ssize_t h, k, n = 0
    cdef DestagerState* d
    self._destagers = [host.destager for host in hosts]
    self.dest_count = len(hosts)
    self.dest = <DestagerState*>calloc(max(1, len(hosts)), sizeof(DestagerState))
    if self.dest == NULL:
        raise MemoryError()
    for h in range(len(hosts)):
        destager = hosts[h].destager
        spec = destager.spec
        n += spec.concurrency
    self.flusher_count = n
    self.flushers = <FlusherState*>calloc(max(1, n), sizeof(FlusherState))
    if self.flushers == NULL:
        raise MemoryError()
    n = 0
    for h in range(len(hosts)):
        destager = hosts[h].destager
        spec = destager.spec
        d = &self.dest[h]
        d.capacity = destager.capacity
        d.max_batch = destager._max_batch
        d.chunks = destager.reads_in_chunks
        d.watermarks = destager._trigger == "watermarks"
        d.idle = destager._trigger == "idle"
        d.idle_time = spec.idle_time
        d.high_bytes = destager._high_bytes
        d.low_bytes = destager._low_bytes
        d.delay = destager._delay
        d.paced = destager._paced
        d.hashed = destager._hashed
        d.hw.unit = d.max_batch  # HashWalk(spec.max_batch)
        d.hw.cursor = INT64_MIN
        d.hw.free = -1
        d.rate = destager.rate
        tier = hosts[h].tier
        d.weighted = tier._scheduling == "weighted"
        d.share = tier._share
        d.credit_depth = tier._credit_depth
        d.background_request = hosts[h].tier.background_request
        d.first_flusher = n
        d.nflushers = spec.concurrency
        for k in range(spec.concurrency):
            self.flushers[n].host = h
            self.flushers[n].phase = F_WORK  # waiting for the work signal 0 (their first step)
            self.flushers[n].direct = True
            self.reg_seq += 1
            self.flushers[n].reg_seq = self.reg_seq
            n += 1
    self.meta = <MetaLog*>calloc(max(1, len(hosts)), sizeof(MetaLog))
    if self.meta == NULL:
        raise MemoryError()
    _setup_peers(self, hosts)
    self.destaging = True
    return 0


cdef int _peers_in(Engine self) except -1:
    """Each write-back VM's state under a peer outage (sync_in): whether it is short of its
    peers (VM.short_of_peers: update_peers ran in the outage's Python process), the peers it
    reaches (VM.peers, among PeerLoss.chosen), its PeerLoss counters, and the settled signal a
    resync may have made it since (PeerLoss.settled: numbered in Engine._py). While it is short
    its writes take the write-through path (``on_peer_loss = "write_through"``), stall
    (``"stall"``) or write back to the peers it reaches (``"degrade"``)."""
    cdef Py_ssize_t i, k, c
    cdef VmState* vm
    for i in range(self.vm_count):
        machine = self._vms[i]
        vm = &self.vms[i]
        vm.short_of_peers = machine.short_of_peers
        loss = machine.peer_loss
        if loss.chosen is not self._chosen_seen[i]:  # re-peered (VM.replace_peer: a tier failed)
            _vm_peers(self, i)
        vm.loss_written = loss.written
        vm.loss_written_through = loss.written_through
        vm.fell_through = loss.fell_through
        peers = machine.peers
        c = 0
        for k in range(len(peers)):
            while c < vm.npeers and self._hosts[vm.peer[c]] is not peers[k]:
                c += 1
            if c == vm.npeers:
                raise RuntimeError("a VM's replica peers changed under the native engine")
            vm.reached[k] = <int32_t>c
            c += 1
        vm.nreach = <int32_t>len(peers)
        if loss._settled is not None and vm.settled < 0:
            vm.settled = self.py_next
            self._py[self.py_next] = loss._settled
            self.py_next += 1
    return 0


cdef int _peers_out(Engine self) except -1:
    """The write-back VMs' PeerLoss counters (sync_out), their degrading writes in flight and
    settled signal (None once the engine has queued it); a VM short of peers whose writes stall
    in the engine gets the signal its stalled writes wait for (PeerLoss.back(), which the first
    of them made in Python; no id is drawn until it is queued), whose callback hands them back to
    the engine (Engine.peers_back) when the outage's end processes it."""
    cdef Py_ssize_t i, k
    for i in range(self.vm_count):
        loss = self._vms[i].peer_loss
        loss.written = self.vms[i].loss_written
        loss.written_through = self.vms[i].loss_written_through
        loss.fell_through = self.vms[i].fell_through
        loss.in_flight = self.vms[i].degrading
        if self.vms[i].settled < 0:
            loss._settled = None
    for k in range(self.n_parked):
        # (only while it is short: once the outage's end has queued the signal, its stalled
        # writes wait for that one; Python makes a new one only when a write stalls again)
        if self.parked[k].kind == PARKED_STALL and self.vms[self.parked[k].host].short_of_peers:
            loss = self._vms[self.parked[k].host].peer_loss
            if loss._back is None:
                loss._back = Signal(None, _peers_back_callback(self, self.parked[k].host))
    return 0


cdef int _degraded(Engine self, int32_t v, double now) except -1 nogil:
    """PeerLoss.degraded: a write VM ``v`` issued short of peers is in the destage buffer; the
    last of them succeeds the settled signal a resync waits for (queued now as a Python event,
    PY_EVENT)."""
    cdef VmState* vm = &self.vms[v]
    vm.degrading -= 1
    if vm.degrading == 0 and vm.settled >= 0:
        self._push(now, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, 0, PY_EVENT, vm.settled)
        self.eid += 1
        vm.settled = -1
    return 0


cdef list _batches_taken(Engine self, DestagerState* d):
    """The flushers of buffer ``d`` holding a batch on its way to the array, in the order the
    batches were taken (Destager._flushing's)."""
    return [j for _, j in sorted(
        (self.flushers[j].taken, j)
        for j in range(d.first_flusher, d.first_flusher + d.nflushers)
        if self.flushers[j].n_items
    )]


cdef list _buffered(Engine self, int32_t h):
    """Destager._slots of host ``h``'s buffer (order "arrival"), as (the address of its holders'
    word, VM, offset, size): the pending writes oldest first, then each batch on its way to the
    array in the order taken, its writes in the order taken."""
    cdef DestagerState* d = &self.dest[h]
    cdef FlusherState* f
    cdef int64_t k, j
    places = []
    for k in range(d.p_count):
        j = (d.p_head + k) % d.p_cap
        places.append((<Py_ssize_t>&d.held[j], d.pending[j].vm, d.pending[j].offset,
                       d.pending[j].size))
    for j in _batches_taken(self, d):
        f = &self.flushers[j]
        for k in range(f.n_items):
            places.append((<Py_ssize_t>&f.held[k], f.items[k].vm, f.items[k].offset,
                           f.items[k].size))
    return places


cdef int64_t _add_holder(Engine self, int32_t h, dict left, int32_t holder) except -1:
    """Destager.add_holder on host ``h``'s buffer (Engine.add_holder): ``left`` counts the copies
    by (VM, offset, size); each write matched, in _buffered's order, not held by ``holder``,
    gets it as its last holder."""
    cdef DestagerState* d = &self.dest[h]
    cdef int64_t added = 0
    cdef uint32_t* held
    cdef uint32_t mark = <uint32_t>(holder + 1)
    for address, vm, offset, size in _buffered(self, h):
        key = (self.vms[vm].index, offset, size)
        held = <uint32_t*><Py_ssize_t>address
        if not left.get(key) or (held[0] & 0xFFFF) == mark or (held[0] >> 16) == mark:
            continue
        if held[0] >> 16:  # (the selector keeps a third holder out: a handover with a resync)
            raise RuntimeError("a buffered write's third holder: the native engine keeps two")
        left[key] -= 1
        if held[0] == 0:
            d.single_copy -= size
            held[0] = mark
        else:
            held[0] |= mark << 16
        if _held_count(held[0]) == self.vms[vm].promised:
            d.short -= size
        added += size
    return added


cdef object _peers_back_callback(Engine self, int32_t v):
    """The callback of VM ``v``'s back signal: Engine.peers_back."""
    clock = self._vms[v].clock

    def back(signal):
        self.peers_back(v, clock)

    return back


cdef int _setup_peers(Engine self, list hosts) except -1:
    """Each VM's replica peers and the paths to them (_vm_peers); each host's replica counters."""
    cdef Py_ssize_t i
    _setup_lag(self, len(hosts), any(vm.async_replication for vm in self._vms))
    self.replica_bytes = <int64_t*>calloc(max(1, len(hosts)), sizeof(int64_t))
    self.payload_sent = <double*>calloc(max(1, len(hosts)), sizeof(double))
    if self.replica_bytes == NULL or self.payload_sent == NULL:
        raise MemoryError()
    self._framings = {}  # a peer tx port's framing key (past the hosts')
    self._chosen_seen = [None] * self.vm_count
    for i in range(self.vm_count):
        self.vms[i].settled = -1
        _vm_peers(self, i)
    return 0


cdef int _vm_peers(Engine self, Py_ssize_t i) except -1:
    """VM ``i``'s replica peers (PeerLoss.chosen; those it reaches: _peers_in) and the paths to
    them from its host (Host.peer_path, as VM.peer_paths), the peer link's latency and
    acknowledgement, "memory" replication, its compression; at setup and after it moved."""
    cdef Py_ssize_t k, j
    cdef VmState* vm = &self.vms[i]
    machine = self._vms[i]
    peers = self._chosen_seen[i] = machine.peer_loss.chosen
    if len(peers) > MAX_LEGS:
        raise ValueError("a VM replicates to more peers than a write-back policy promises")
    vm.npeers = len(peers)
    vm.nreach = vm.npeers
    vm.promised = machine.peer_loss.promised
    vm.peer_latency = machine.peer_latency
    vm.ack_time = machine._ack_time
    vm.memory_ack = machine._memory_ack
    vm.async_rep = machine.async_replication
    vm.send_buffer = machine.send_buffer
    vm.may_compress = machine._may_compress
    vm.always_compress = machine._always_compress
    vm.compressibility = machine._compressibility
    vm.compress_rate = machine.compression.throughput
    vm.threshold = machine.compression.threshold
    for k in range(vm.npeers):
        vm.peer[k] = self._hosts.index(peers[k])
        vm.reached[k] = <int32_t>k
        path = machine.host.peer_path(peers[k])
        if len(path) > MAX_PATH:
            raise ValueError("a replica's path crosses more ports than a transfer can")
        vm.leg_nports[k] = len(path)
        for j in range(len(path)):
            vm.leg_ports[k * MAX_PATH + j] = _port_position(self, path[j])
        key = self._framings.get(id(path[0]))
        if key is None:
            key = self._framings[id(path[0])] = _framing_add(self, path[0].spec)
        vm.leg_frame[k] = key
        vm.compressing[k] = path[0] in machine._compressing
    return 0


cdef int _destagers_in(Engine self) except -1:
    """The Python destagers' counters (sync_in: nothing in Python changes them during a run;
    read for the first)."""
    cdef Py_ssize_t h
    cdef DestagerState* d
    for h in range(len(self._destagers)):
        destager = self._destagers[h]
        d = &self.dest[h]
        d.accepted = destager.accepted_bytes
        d.destaged = destager.destaged_bytes
        d.batches = destager.batches
        d.runs = destager.runs
        d.background_operations = self._tiers[h].background_operations
        d.draining = destager._draining
        d.next_start = destager._next_start
        d.rate = destager.rate  # (pacing "pd": its controller, a Python process, sets it)
        log = self._destagers[h].host.metadata_log
        self.meta[h].writes = log.writes
        self.meta[h].busy_until = log._busy_until
        d.credit = self._tiers[h]._credit
        d.credit_time = self._tiers[h]._credit_time
        host = destager.host
        self.replica_bytes[h] = host.replica_bytes
        self.payload_sent[h] = host.replica_payload_sent
    return 0


cdef int _destager_counts_out(Engine self, int32_t h) except -1:
    """Host ``h``'s buffer counters to its Python destager, after the engine changed them in a
    Python event (a handover: Engine.hand_over, Engine.adopt): _destagers_in reads the accepted
    bytes back, and the Python process may read the others."""
    cdef DestagerState* d = &self.dest[h]
    destager = self._destagers[h]
    destager.backlog_bytes = d.backlog
    destager.pending_bytes = d.pending_bytes
    destager.single_copy_bytes = d.single_copy
    destager.short_bytes = d.short
    destager.accepted_bytes = d.accepted
    return 0


cdef int _destagers_out(Engine self) except -1:
    """Show the Python destagers what the sampler and the results read."""
    cdef Py_ssize_t h
    cdef DestagerState* d
    for h in range(len(self._destagers)):
        destager = self._destagers[h]
        d = &self.dest[h]
        destager.backlog_bytes = d.backlog
        destager.pending_bytes = d.pending_bytes
        destager.single_copy_bytes = d.single_copy
        destager.short_bytes = d.short
        destager.host.replica_bytes = self.replica_bytes[h]
        destager.host.replica_payload_sent = self.payload_sent[h]
        lag = destager.host.replica_lag  # (its counts by item stay the engine's)
        lag.bytes = self.lag[h].bytes
        lag.tracking = self.lag[h].tracking
        destager.accepted_bytes = d.accepted
        destager.destaged_bytes = d.destaged
        destager.batches = d.batches
        destager.runs = d.runs
        destager._draining = d.draining
        destager._next_start = d.next_start
        log = destager.host.metadata_log
        log.writes = self.meta[h].writes
        log._busy_until = self.meta[h].busy_until
        self._tiers[h].background_operations = d.background_operations
        self._tiers[h]._credit = d.credit
        self._tiers[h]._credit_time = d.credit_time
        _waiting_out(self, h)
    return 0


cdef int _waiting_out(Engine self, int32_t h) except -1:
    """Host ``h``'s writers waiting for room to its Python destager (``_waiting``: what a sample
    counts), their items as VM.destage_item gives them; at each sync_out, and after an engine
    method of a Python event changed them (Engine.hand_over, Engine.fail_destager: a sample may
    come next with no sync in between)."""
    cdef DestagerState* d = &self.dest[h]
    cdef Slot* slot
    cdef int64_t k
    from collections import deque

    waiting = deque()
    for k in range(d.w_count):
        slot = &self.slots[d.waiting[(d.w_head + k) % d.w_cap]]
        peers = self._held_hosts(  # VM.destage_item's
            _holders(&self.vms[slot.vm]) if slot.lag
            else _slot_holders(self, slot)
        )
        waiting.append(
            (Signal(None), (self.vms[slot.vm].index, slot.offset, slot.size, peers, not peers))
        )
    self._destagers[h]._waiting = waiting
    return 0
