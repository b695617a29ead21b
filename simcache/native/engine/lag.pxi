# Ports replication = "async": simcache.sim.components.vm_paths.write_back's asynchronous copies
# and simcache.sim.components.host.AsyncWrite and ReplicaLag. A write's copies wait for room in
# its host's send buffer (ReplicaLag.room: each peer's bytes on their way at most the VM's
# send_buffer, writes entering in order; _async_start, _lag_fits, the blocked ring, ROOM); then
# they leave (_async_send: VM.replicate's legs, delivering FLOW_ALEG) and the write goes on
# without waiting for them. At a copy's arrival the peer's tier writes it and the lag learns of
# it (_aleg_arrived: ReplicaLeg.arrived uncounted, ReplicaLag.arrived and _landed, the writes
# the freed room lets in). Once the write is in the destage buffer, ReplicaLag.acknowledged
# counts the copies still due and, if none has arrived, the write as lagging (data at risk:
# _lag_acknowledged); when the destager writes it to the array, ReplicaLag.destaged
# (_lag_destaged, from destager.pxi's _left).
#
# The lag's counts are kept by destage item (VM, offset, size, holders: equal items are
# interchangeable, as in ReplicaLag), in an open-addressed table with linear probing and
# backward-shift deletion (LagEntry). A write's copies outlive its slot, so each asynchronous
# write has an AsyncWrite of its own in a pool (a free list), freed once it is acknowledged and
# its last copy has arrived. Peer failures (ReplicaLag.peer_failed, forget) are not ported: the
# engine takes no device or host failure with write-back writes.


cdef struct AsyncWrite:
    # AsyncWrite: its host, VM and bytes (offset: its destage item's), the copies still on their
    # way, the legs whose copy arrived before the acknowledgement (bit k: leg k), its item's
    # holders (set at the acknowledgement), whether it was acknowledged and lags; a compressed
    # leg's wire bytes until its flow starts; the next free one (-1: none) while free
    int32_t host, vm, legs_left, next_free
    int64_t offset, size
    uint32_t arrived, held
    bint acked, lagging
    double wire[MAX_LEGS]


cdef struct LagEntry:
    # ReplicaLag._lagging and _due for one destage item: its writes lagging, and for each of
    # its holders (in the item's order) the copies due there
    int64_t offset, size
    int64_t vm
    uint32_t held
    int32_t lagging
    int32_t due[MAX_LEGS]
    bint used


cdef struct LagState:
    # one host's ReplicaLag: tracking (an asynchronous write acknowledged here), the lagging
    # bytes and those of them short of peers (ReplicaLag.short_bytes), the bytes on their way to
    # each host (_sending), the writes waiting for room (their slots, a ring: _blocked), the
    # items' counts (a table of mask + 1 entries, count used)
    bint tracking
    int64_t bytes, short
    int64_t* sending
    int32_t* blocked
    int64_t b_head, b_count, b_cap
    LagEntry* table
    int64_t mask, count


cdef int _setup_lag(Engine self, Py_ssize_t hosts, bint any_async) except -1:
    """Each host's ReplicaLag (the bytes on their way to each peer only where a VM replicates
    asynchronously); the AsyncWrite pool empty."""
    cdef Py_ssize_t h
    self.lag = <LagState*>calloc(max(1, hosts), sizeof(LagState))
    if self.lag == NULL:
        raise MemoryError()
    self.lag_count = hosts
    self.async_free = -1
    if not any_async:
        return 0
    for h in range(hosts):
        self.lag[h].sending = <int64_t*>calloc(max(1, hosts), sizeof(int64_t))
        if self.lag[h].sending == NULL:
            raise MemoryError()
    return 0


cdef void _free_lag(Engine self) noexcept:
    cdef Py_ssize_t h
    if self.lag != NULL:
        for h in range(self.lag_count):
            free(self.lag[h].sending)
            free(self.lag[h].blocked)
            free(self.lag[h].table)
    free(self.lag)
    free(self.asyncs)


cdef inline uint64_t _lag_hash(int64_t vm, int64_t offset, int64_t size, uint32_t held
                               ) noexcept nogil:
    cdef uint64_t x = <uint64_t>offset * 0x9E3779B97F4A7C15ULL
    x ^= (<uint64_t>vm << 32) ^ <uint64_t>size ^ (<uint64_t>held * 0xC2B2AE3D27D4EB4FULL)
    x ^= x >> 29
    x *= 0xBF58476D1CE4E5B9ULL
    return x ^ (x >> 32)


cdef int _lag_grow(LagState* l) except -1 nogil:
    """The item table doubled (or made: 64 entries), its entries placed again."""
    cdef int64_t old = l.mask + 1 if l.table != NULL else 0, cap = 2 * old if old else 64, k, i
    cdef LagEntry* table = <LagEntry*>calloc(cap, sizeof(LagEntry))
    cdef LagEntry* previous = l.table
    if table == NULL:
        with gil:
            raise MemoryError()
    for k in range(old):
        if previous[k].used:
            i = <int64_t>(_lag_hash(previous[k].vm, previous[k].offset, previous[k].size,
                                    previous[k].held) & <uint64_t>(cap - 1))
            while table[i].used:
                i = (i + 1) & (cap - 1)
            table[i] = previous[k]
    free(previous)
    l.table = table
    l.mask = cap - 1
    return 0


cdef LagEntry* _lag_entry(LagState* l, int64_t vm, int64_t offset, int64_t size, uint32_t held,
                          bint make) except? NULL nogil:
    """The counts of the item (``vm``, ``offset``, ``size``, ``held``); NULL if it has none,
    unless ``make``: then a new entry, every count 0."""
    cdef int64_t i
    cdef LagEntry* e
    if l.table == NULL:
        if not make:
            return NULL
        _lag_grow(l)
    elif make and 2 * (l.count + 1) > l.mask + 1:
        _lag_grow(l)
    i = <int64_t>(_lag_hash(vm, offset, size, held) & <uint64_t>l.mask)
    while l.table[i].used:
        e = &l.table[i]
        if e.offset == offset and e.vm == vm and e.size == size and e.held == held:
            return e
        i = (i + 1) & l.mask
    if not make:
        return NULL
    e = &l.table[i]
    memset(e, 0, sizeof(LagEntry))
    e.used = True
    e.vm = vm
    e.offset = offset
    e.size = size
    e.held = held
    l.count += 1
    return e


cdef void _lag_tidy(LagState* l, LagEntry* e) noexcept nogil:
    """``e`` removed if none of its counts is left (ReplicaLag._take's ``del``): the entries
    after it in its run shifted back into the gap."""
    cdef int64_t gap, i, home, k
    for k in range(MAX_LEGS):
        if e.due[k]:
            return
    if e.lagging:
        return
    gap = e - l.table
    l.table[gap].used = False
    l.count -= 1
    i = (gap + 1) & l.mask
    while l.table[i].used:
        home = <int64_t>(_lag_hash(l.table[i].vm, l.table[i].offset, l.table[i].size,
                                   l.table[i].held) & <uint64_t>l.mask)
        # the entry at i may move to the gap if its home is not in (gap, i] (cyclically)
        if (i > gap and (home <= gap or home > i)) or (i < gap and home <= gap and home > i):
            l.table[gap] = l.table[i]
            l.table[i].used = False
            gap = i
        i = (i + 1) & l.mask


cdef int32_t _async_new(Engine self) except -1 nogil:
    """A free AsyncWrite's number (the pool doubled when none is free)."""
    cdef int32_t r, cap, k
    cdef AsyncWrite* grown
    if self.async_free < 0:
        cap = 2 * self.async_cap if self.async_cap else 64
        grown = <AsyncWrite*>realloc(self.asyncs, cap * sizeof(AsyncWrite))
        if grown == NULL:
            with gil:
                raise MemoryError()
        self.asyncs = grown
        for k in range(self.async_cap, cap):
            grown[k].next_free = k + 1 if k + 1 < cap else -1
        self.async_free = self.async_cap
        self.async_cap = cap
    r = self.async_free
    self.async_free = self.asyncs[r].next_free
    return r


cdef inline void _async_release(Engine self, int32_t r) noexcept nogil:
    self.asyncs[r].next_free = self.async_free
    self.async_free = r


cdef bint _lag_fits(LagState* l, VmState* vm, int64_t size) noexcept nogil:
    """ReplicaLag._fits: each of the VM's peers has nothing on its way, or room for ``size``."""
    cdef int32_t k
    cdef int64_t queued
    for k in range(vm.npeers):
        queued = l.sending[vm.peer[k]]
        if queued and queued + size > vm.send_buffer:
            return False
    return True


cdef inline void _lag_enter(LagState* l, VmState* vm, int64_t size) noexcept nogil:
    cdef int32_t k
    for k in range(vm.npeers):
        l.sending[vm.peer[k]] += size


cdef int _async_start(Engine self, int32_t s, double now) except -1 nogil:
    """write_back with "async" replication, its local part begun: its AsyncWrite, then its copies
    sent if they fit in the send buffer now (ReplicaLag.room), else it waits for room in order."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef LagState* l = &self.lag[vm.tier]
    cdef int32_t r = _async_new(self)
    cdef AsyncWrite* w = &self.asyncs[r]
    w.host = vm.tier
    w.vm = slot.vm
    w.offset = slot.offset
    w.size = slot.size
    w.legs_left = vm.npeers
    w.arrived = 0
    w.held = 0
    w.acked = False
    w.lagging = False
    slot.lag = r + 1
    if l.b_count == 0 and _lag_fits(l, vm, slot.size):
        _lag_enter(l, vm, slot.size)
        return _async_send(self, s, now)
    return _ring_put(&l.blocked, &l.b_head, &l.b_count, &l.b_cap, s)


cdef int _async_send(Engine self, int32_t s, double now) except -1 nogil:
    """write_back once its copies are in the send buffer (at once, or at its ROOM event): each
    peer's copy sent (VM.replicate), then the write goes on without waiting for them."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef int32_t r = slot.lag - 1, k
    for k in range(vm.npeers):
        _send_leg(self, vm, r, k, k, slot.size, now, FLOW_ALEG, &self.asyncs[r].wire[k])
    return _wb_next(self, s, now)


cdef int _aleg_start(Engine self, int32_t r, int32_t k, double now) except -1 nogil:
    """A compressed asynchronous copy's CPU time is over: its flow starts."""
    cdef VmState* vm = &self.vms[self.asyncs[r].vm]
    return _start_flow(self, r, k, now, &vm.leg_ports[k * MAX_PATH], vm.leg_nports[k],
                       self.asyncs[r].wire[k], vm.peer_latency, 1.0, FLOW_ALEG)


cdef int _aleg_arrived(Engine self, int32_t r, int32_t k, double now) except -1 nogil:
    """AsyncWrite ``r``'s copy ``k`` is at its peer: the peer's tier writes it (ReplicaLeg.arrived,
    its bytes not counted there: nothing waits for its times); then ReplicaLag.arrived: its room
    in the send buffer freed (the writes that fit now let in, in order, each by an event now);
    before the acknowledgement the peer holds it at once, after it only if the copy is still due
    (not destaged meanwhile), and then the write no longer lags."""
    cdef AsyncWrite* w = &self.asyncs[r]
    cdef VmState* vm = &self.vms[w.vm]
    cdef int32_t peer = vm.peer[k], s
    cdef LagState* l = &self.lag[w.host]
    cdef LagEntry* e
    _read(&self.tiers[peer], now, w.size, True, vm.gc_factor)
    l.sending[peer] -= w.size  # ReplicaLag._landed
    while l.b_count:
        s = l.blocked[l.b_head]
        if not _lag_fits(l, &self.vms[self.slots[s].vm], self.slots[s].size):
            break
        l.b_head = (l.b_head + 1) % l.b_cap
        l.b_count -= 1
        _lag_enter(l, &self.vms[self.slots[s].vm], self.slots[s].size)
        self._schedule(now, s, ROOM)  # succeed()
    w = &self.asyncs[r]
    if not w.acked:  # it will not lag on this peer's account
        w.arrived |= <uint32_t>1 << k
        if not self.tier_down[peer]:
            self.replica_bytes[peer] += w.size
    else:
        e = _lag_entry(l, vm.index, w.offset, w.size, w.held, False)
        if e != NULL and e.due[k]:  # (else destaged before the copy arrived: obsolete)
            e.due[k] -= 1
            if not self.tier_down[peer]:
                self.replica_bytes[peer] += w.size
            if w.lagging:
                w.lagging = False
                if e.lagging:
                    e.lagging -= 1
                    _lag_count(l, vm, w.held, -w.size)
            _lag_tidy(l, e)
    w.legs_left -= 1
    if w.legs_left == 0 and w.acked:
        _async_release(self, r)
    return 0


cdef inline void _lag_count(LagState* l, VmState* vm, uint32_t held, int64_t size
                            ) noexcept nogil:
    """The lagging bytes changed by ``size`` for an item with ``held`` holders (and those short
    of the VM's promised peers too)."""
    l.bytes += size
    if _held_count(held) < vm.promised:
        l.short += size


cdef int _lag_acknowledged(Engine self, int32_t s) except -1 nogil:
    """ReplicaLag.acknowledged: slot ``s``'s asynchronous write is in the destage buffer, as its
    item (its VM's peers: their tiers are up in the runs the engine takes); each copy that has
    not arrived is due, and if none has, the write lags."""
    cdef Slot* slot = &self.slots[s]
    cdef int32_t r = slot.lag - 1, k, missing = 0
    cdef AsyncWrite* w = &self.asyncs[r]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef LagState* l = &self.lag[w.host]
    cdef LagEntry* e = NULL
    l.tracking = True
    slot.lag = 0
    w.held = _holders(vm)
    w.acked = True
    for k in range(vm.npeers):
        if not (w.arrived >> k) & 1:
            if e == NULL:
                e = _lag_entry(l, vm.index, w.offset, w.size, w.held, True)
            e.due[k] += 1
            missing += 1
    if missing and missing == vm.npeers:
        e.lagging += 1
        _lag_count(l, vm, w.held, w.size)
        w.lagging = True
    if w.legs_left == 0:
        _async_release(self, r)
    return 0


cdef int _lag_destaged(Engine self, LagState* l, int64_t vm, int64_t offset, int64_t size,
                       uint32_t held) except -1 nogil:
    """ReplicaLag.destaged: the item reached the array; each holder whose copy is still due is
    owed nothing more, the others drop their copy; it lags no more."""
    cdef LagEntry* e = _lag_entry(l, vm, offset, size, held, False)
    cdef int32_t j = 0
    while held:
        if e != NULL and e.due[j]:
            e.due[j] -= 1
        else:
            self.replica_bytes[(held & 0xFFFF) - 1] -= size
        held >>= 16
        j += 1
    if e != NULL:
        if e.lagging:
            e.lagging -= 1
            _lag_count(l, &self.vms[vm], e.held, -size)
        _lag_tidy(l, e)
    return 0
