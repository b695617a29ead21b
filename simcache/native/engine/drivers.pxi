# Ports the drivers and a VM's read path: simcache.sim.drivers._ClosedSlot and _OpenLoop (a
# closed-loop slot's next I/O after its think time and on/off cycle: _next; an open loop's
# arrivals: _arrival_after, reads in flight on free slots: _take_slot), VM.start for a read
# (_start: the host cache's lookup, the tier's read on a hit), a hit's completion (_served),
# a miss (ArrayRead: _miss) and its delivery (VM.miss_delivered: _miss_done), then the slot
# goes on (_slot_done). A write goes to its path (writes.pxi) from _start.

cdef int32_t _take_slot(Engine self, int32_t vm) except -1 nogil:
    """A slot for an open-loop read in flight (one given back, else a new one)."""
    cdef int32_t s
    cdef Slot* slots
    cdef int32_t* free_slots
    if self.free_count:
        self.free_count -= 1
        s = self.free_slots[self.free_count]
    else:
        if self.slots_used == self.slot_cap:
            slots = <Slot*>realloc(self.slots, 2 * self.slot_cap * sizeof(Slot))
            if slots == NULL:
                with gil:
                    raise MemoryError()
            self.slots = slots
            free_slots = <int32_t*>realloc(
                self.free_slots, 2 * self.slot_cap * sizeof(int32_t)
            )
            if free_slots == NULL:
                with gil:
                    raise MemoryError()
            self.free_slots = free_slots
            self.slot_cap *= 2
        s = self.slots_used
        self.slots_used += 1
    self.slots[s].vm = vm
    self.slots[s].number = -1
    self.slots[s].closed = False
    return s


cdef int _start(Engine self, int32_t s, double now, int32_t kind) except -1 nogil:
    """IOStream.next_io and VM.start's read hit for slot ``s``: the VM's next I/O, booked on
    its host's tier now, its completion (``kind``) scheduled."""
    cdef Slot* slot = &self.slots[s]
    cdef int32_t v = slot.vm
    cdef VmState* vm = &self.vms[v]
    cdef TierState* t
    cdef int64_t i, size, offset
    cdef double done
    if vm.io_next >= vm.io_count:
        if vm.refill == TRACE_REFILL:
            if not _trace_next(self, v):  # the driver asked first: it has a row
                with gil:
                    raise RuntimeError("a trace replay's I/O started past its last row")
        elif vm.refill == PYTHON_REFILL:
            with gil:
                _refill(self, v)
        elif vm.refill == ZIPF_REFILL:
            with gil:
                _refill_zipf(self, vm)
        else:
            _refill_native(self, vm)
    i = vm.io_next
    vm.io_next = i + 1
    size = vm.sizes[i]
    offset = vm.offsets[i]
    if (vm.writes[i] != 0 and not vm.write_through and not self.destaging) or (
        offset + size > vm.reach and not (self.misses and not self.caches[vm.tier].full)
    ):
        with gil:
            raise RuntimeError(
                "the native engine met an I/O it does not run (a write it lacks the path of, or"
                " a read its host's cache does not hold): its selector let an unsupported run"
                " through"
            )
    slot.number = vm.issued
    vm.issued += 1
    slot.issued = now
    slot.size = size
    if vm.writes[i] != 0:
        slot.write = True
        slot.offset = offset
        if vm.serialize:
            if vm.serial_writing:  # wait for its turn
                return _serial_wait(vm, s)
            vm.serial_writing = True
        return _write_begin(self, s, now)
    slot.write = False
    slot.host = vm.tier
    t = &self.tiers[vm.tier]
    if self.misses and not self.caches[vm.tier].full:
        if not _lookup(&self.caches[vm.tier], vm.index, offset, size):
            slot.offset = offset
            slot.waited = 0.0
            if vm.remote >= 0 and _remote_holds(self, vm, offset, size):
                return _remote_hit(self, s, now)
            if vm.pd_wait and _pd_wait(self, s):  # read_miss: taken-over writes first
                return 0
            if self.storage_down[vm.tier]:  # read_miss: it waits for the storage port
                return _park(self, vm.tier, s, PARKED_MISS)
            return _miss(self, s, now)
    else:
        t.hits += 1  # Cache.lookup: every line held
    done = _read(t, now, size, False, 1.0)
    self._schedule(now + (done - now), s, kind)
    return 0


cdef int _next(Engine self, int32_t s, double now) except -1 nogil:
    """_ClosedSlot._next: once the VM's on/off cycle is on, the slot's next I/O; a closed replay's
    slot (drivers._trace_closed_slot) stops when its trace has no row left."""
    cdef VmState* vm = &self.vms[self.slots[s].vm]
    cdef double on, end
    # the VM's host died, or HA restarted it elsewhere (new slots run there): the slot stops
    if self.any_dead and (self.host_dead[vm.tier] or self.slots[s].life != vm.life):
        return 0
    if vm.refill == TRACE_REFILL and not _trace_next(self, self.slots[s].vm):
        return 0
    if vm.duty == DUTY_ONOFF:
        on = _on_start(vm, now, &end)
        if on > now:
            self._schedule(now + (on - now), s, ISSUE)  # = sleep()'s time
            return 0
    return _start(self, s, now, SERVED)


cdef int _arrival_after(Engine self, int32_t v, double now) except -1 nogil:
    """_OpenLoop._next: schedule the VM's next arrival; an open replay's next rows instead."""
    if self.vms[v].refill == TRACE_REFILL:
        return _trace_arrivals(self, v, now)
    self._schedule(now + _next_gap(self, v, now), v, ARRIVE)
    return 0


cdef int _arrive_dead(Engine self, int32_t v, double now) except -1 nogil:
    """_OpenLoop._arrive (drivers._trace_open_loop) on a host that died: the arrival is dropped
    (a replay's row read first, as its loop reads it before it looks); the loop ends, unless HA
    is to restart the VM (``awaiting``): then the drop is counted and the loop goes on (a
    replay's rows due by now dropped alike)."""
    cdef VmState* vm = &self.vms[v]
    if vm.refill != TRACE_REFILL:
        if vm.awaiting:
            vm.dropped += 1
            return _arrival_after(self, v, now)
        return 0
    while True:
        vm.io_next += 1  # TraceStream.next_io (the driver made sure a row is there)
        if not vm.awaiting:
            return 0
        vm.dropped += 1
        if not _trace_next(self, v):
            return 0
        if vm.gaps[vm.io_next] > now:
            self._schedule(now + (vm.gaps[vm.io_next] - now), v, ARRIVE)
            return 0


cdef int _trace_arrivals(Engine self, int32_t v, double now) except -1 nogil:
    """drivers._trace_open_loop after an arrival (or at its start): the rows due by ``now``
    start at once, the first later one is scheduled (``sleep``: now + (at - now)); none left, the
    replay is over."""
    cdef VmState* vm = &self.vms[v]
    cdef double at
    while _trace_next(self, v):
        at = vm.gaps[vm.io_next]
        if at > now:
            self._schedule(now + (at - now), v, ARRIVE)
            return 0
        _start(self, _take_slot(self, v), now, OPEN_SERVED)
    return 0


cdef int _served(Engine self, int32_t s, double now) except -1 nogil:
    """VM.hit_done: record the read (a hit whose tier failed under it failed: no record)."""
    if self.tier_down[self.slots[s].host]:
        self.slots[s].number = -1  # failed: not in flight either (reads_in_flight.pop)
        return 0
    return _record(self, s, now, now - self.slots[s].issued, 0.0, 0.0, self.path_hit, 0.0, 0.0)


cdef int _miss(Engine self, int32_t s, double now) except -1 nogil:
    """ArrayRead.__init__: the request reaches the array one storage message after now, the
    array serves it, its data leaves when the array is done (ARRAY_DONE)."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef double arrives = now + self.host_ack[slot.host], done
    done = _array_read(&self.array, arrives, vm.index, slot.offset, slot.size)
    slot.array_time = done - arrives
    self._schedule(now + (done - now), s, ARRAY_DONE)
    return 0


cdef int _park(Engine self, int32_t host, int32_t s, int32_t kind) except -1 nogil:
    """``yield host.storage_back`` (or on_processed): ``s`` waits for ``host``'s storage port;
    or (PARKED_STALL, ``host`` a VM) ``yield loss.back()``: a write waits for its VM's peers."""
    cdef Parked* parked
    if self.n_parked == self.parked_cap:
        parked = <Parked*>realloc(self.parked, 2 * self.parked_cap * sizeof(Parked))
        if parked == NULL:
            with gil:
                raise MemoryError()
        self.parked = parked
        self.parked_cap *= 2
    self.parked[self.n_parked].host = host
    self.parked[self.n_parked].slot = s
    self.parked[self.n_parked].kind = kind
    self.n_parked += 1
    return 0


cdef Parked* _unpark(Engine self, int32_t host, bint stalled, int32_t* n) except NULL nogil:
    """Take what waits for ``host`` out of the parked ones, in the order it began to wait: the
    stalled writes of VM ``host`` (``stalled``), else what waits for host ``host``'s storage
    port. Returns them (``n`` of them; the caller frees the copy: resuming one may park
    another)."""
    cdef int32_t k, kept = 0
    cdef Parked* taken = <Parked*>malloc(max(1, self.n_parked) * sizeof(Parked))
    if taken == NULL:
        with gil:
            raise MemoryError()
    n[0] = 0
    for k in range(self.n_parked):
        if self.parked[k].host == host and (self.parked[k].kind == PARKED_STALL) == stalled:
            taken[n[0]] = self.parked[k]
            n[0] += 1
        else:
            self.parked[kept] = self.parked[k]
            kept += 1
    self.n_parked = kept
    return taken


cdef int _repark(Engine self, Parked* resumed, int32_t n) except -1 nogil:
    """The ``n`` waits of ``resumed`` parked again, in their order (a stop heard before they
    resumed: _poll_within)."""
    cdef int32_t k
    for k in range(n):
        _park(self, resumed[k].host, resumed[k].slot, resumed[k].kind)
    return 0


cdef int _poll_within(Engine self) except -1 nogil:
    """stopping.poll_within_event natively: 1 if the run's stop request is set, polled inside one
    event once it has re-rated RERATES_PER_POLL flows since the loop last charged them (the waits
    of a port or of peers that come back all resume in one event, and each resumed transfer
    joins the others on its port: work that grows as their number squared); the loop's next
    poll then stops the run (``stop_heard``)."""
    if self.rerated < RERATES_PER_POLL:
        return 0
    self.rerated = 0
    with gil:
        if self.stop_requested is not None and self.stop_requested():
            self.stop_heard = True
    return self.stop_heard


cdef int _storage_back(Engine self, int32_t host, double now) except -1 nogil:
    """Host.storage_back processed: what waited for ``host``'s storage port goes on, in the
    order it began to wait (the signal's callbacks): a read miss asks the array
    (ArrayRead), a write-through write or a flusher's batch is sent. A stop heard on the way
    (_poll_within) leaves the rest waiting."""
    cdef int32_t k, n
    cdef Parked* resumed = _unpark(self, host, False, &n)
    try:
        for k in range(n):
            if resumed[k].kind == PARKED_MISS:
                _miss(self, resumed[k].slot, now)
            elif resumed[k].kind == PARKED_WT:
                _wt_send(self, resumed[k].slot, now)
            elif not self.dest[self.flushers[resumed[k].slot].host].stopped:
                _send_now(self, resumed[k].slot, now)
            if _poll_within(self):
                _repark(self, resumed + k + 1, n - k - 1)
                break
    finally:
        free(resumed)
    return 0


cdef int _miss_done(Engine self, int32_t s, double now) except -1 nogil:
    """VM.miss_delivered: fill the cache (the tier's write, the lines), record the read;
    then the slot goes on."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef double array_time = slot.array_time
    if self.any_dead and self.host_dead[slot.host]:
        return _host_died_under(self, s, now)
    if not self.tier_down[slot.host]:  # (device_failure: there is no cache to fill)
        _read(&self.tiers[slot.host], now, slot.size, True, 1.0)
        _insert(&self.caches[slot.host], vm.index, slot.offset, slot.size)
    _record(self, s, now, 0.0, ((now - slot.issued) - array_time) - slot.waited, array_time,
            self.path_miss, slot.waited, 0.0)
    return _slot_done(self, s, now)


cdef int _slot_done(Engine self, int32_t s, double now) except -1 nogil:
    """A read of slot ``s`` is done (recorded): a closed-loop slot goes round
    (_ClosedSlot._done), an open loop's is given back."""
    cdef double think
    if self.slots[s].closed:
        think = self.vms[self.slots[s].vm].think
        if think:
            self._schedule(now + think, s, NEXT)
        else:
            _next(self, s, now)
    else:
        self.free_slots[self.free_count] = s
        self.free_count += 1
    return 0


cdef int _host_died_under(Engine self, int32_t s, double now) except -1 nogil:
    """Slot ``s``'s I/O ends on a host that died under it (``if not host.alive: return`` in
    VM.miss_delivered, write_through and remote_hit): nothing is recorded and it stays in flight
    (its VM's dict keeps it; the run's unfinished I/Os leave dead hosts' VMs out). A closed-loop
    slot goes round (to stop at its loop's top: _next); an open loop's is not given back (its
    number kept)."""
    if self.slots[s].closed:
        return _slot_done(self, s, now)
    return 0
