# Ports the write-through path and the array's write path: simcache.sim.components.vm_paths.
# write_through (the tier write with the VM's gc_factor, the cache fill, the data over the
# storage link to the array, the array's write, the acknowledgement back, the record: _wt_start,
# _wt_arrived, _wt_done) and simcache.sim.components.array.Array.submit for writes without a
# controller cache (Array._dispatch first come first served: the stripe cutting, parity RAID's
# whole rows and read-modify-writes, mirrored pairs; Spindles.operate and _flash_operate for a
# write: ArrayWrites, _operate_write, _array_write).

cdef struct ArrayWrites:
    # the array's write figures and counters beside its ArrayState
    bint rmw  # parity RAID: a chunk write reads, then writes (read_modify_write(raid))
    double write_time  # a flash drive's write access time
    int64_t bytes_written, full_stripe_writes


cdef double _operate_write(ArrayState* a, ArrayWrites* w, int64_t s, int64_t position,
                           int64_t chunk, double now, bint rmw) except? -1 nogil:
    """Spindles.operate (no command queueing, scale 1) or _flash_operate for a write's chunk."""
    cdef double busy_until, start, seek, rotation, transfer, finish, free_at, service, access
    cdef int64_t head, distance, unit, k
    cdef double* units
    if a.flash:
        units = a.units + s * a.nunits
        unit = 0
        free_at = units[0]
        for k in range(1, a.nunits):
            if units[k] < free_at:
                unit = k
                free_at = units[k]
        start = free_at if free_at > now else now
        access = a.read_time if rmw else w.write_time
        transfer = chunk * a.seconds_per_byte
        if rmw:  # flash_op_seconds
            service = access + w.write_time + 2.0 * transfer
        else:
            service = access + transfer
        finish = start + service
        units[unit] = finish
        a.media_bytes += 2 * chunk if rmw else chunk
        _meter_add(&a.m, start, start + service / a.parallelism, now)
        return finish
    busy_until = a.spindle_free[s]
    start = busy_until if busy_until > now else now
    head = a.head[s]
    if head == position and busy_until >= now:
        seek = 0.0
        rotation = 0.0
    else:
        distance = position - head if head > 0 else position
        seek = _seek(a, (distance if distance >= 0 else -distance) / a.stroke)
        if a.overhead:
            seek += a.overhead
        rotation = _uniform(&a.u) * a.revolution
    if a.shrink:
        transfer = chunk / (a.outer_rate * sqrt(1.0 - position / a.stroke * a.shrink))
    else:
        transfer = chunk * a.seconds_per_byte
    service = seek + rotation + transfer  # spindle_op_seconds
    if rmw:
        service += a.revolution + transfer
    finish = start + service
    a.spindle_free[s] = finish
    a.head[s] = position + chunk
    a.media_bytes += 2 * chunk if rmw else chunk
    _meter_add(&a.m, start, finish, now)
    return finish


cdef double _write_run(ArrayState* a, ArrayWrites* w, double now, int64_t vm, int64_t offset,
                       int64_t length, double done, int64_t* counts) except? -1 nogil:
    """One run of Array._dispatch for a write (first come first served): its chunks booked on
    their spindles; ``counts``: chunks, whole parity rows (added to)."""
    cdef int64_t address = (a.vm_start[vm] + offset) % a.logical_bytes
    cdef int64_t left = length, lead = length, chunk, unit, within, row, k, p, target, i
    cdef int64_t position
    cdef double finish
    cdef bint rmw = w.rmw
    if rmw and length >= a.row_bytes:
        # whole stripe rows inside the run: data and parity at once, without reads
        lead = (a.row_bytes - address % a.row_bytes) % a.row_bytes
        if left - lead < a.row_bytes:
            lead = left
    while left > 0:
        if lead == 0 and left >= a.row_bytes:
            row = address // a.row_bytes
            for target in range(a.spindles):
                finish = _operate_write(a, w, target, row * a.stripe, a.stripe, now, False)
                if finish > done:
                    done = finish
            counts[1] += 1
            left -= a.row_bytes
            address = (address + a.row_bytes) % a.logical_bytes
            if left < a.row_bytes:
                lead = left
            continue
        chunk = a.stripe if lead > a.stripe else lead
        unit = address // a.stripe
        within = address % a.stripe
        row = unit // a.width
        k = unit % a.width
        position = row * a.stripe + within
        # StripeLayout.unit_spindles: every copy, in its order
        if a.parity < 0:
            finish = _operate_write(a, w, k, position, chunk, now, rmw)
            if finish > done:
                done = finish
            counts[0] += 1
            if a.copies > 1 and a.spindles > 1:
                finish = _operate_write(a, w, k + a.width, position, chunk, now, rmw)
                if finish > done:
                    done = finish
                counts[0] += 1
        elif a.parity == 0:
            finish = _operate_write(a, w, k, position, chunk, now, rmw)
            if finish > done:
                done = finish
            counts[0] += 1
        else:
            p = a.spindles - 1 - row % a.spindles
            finish = _operate_write(a, w, (p + a.parity + k) % a.spindles, position, chunk, now,
                                    rmw)
            if finish > done:
                done = finish
            for i in range(a.parity):
                finish = _operate_write(a, w, (p + i) % a.spindles, position, chunk, now, rmw)
                if finish > done:
                    done = finish
            counts[0] += 1 + a.parity
        left -= chunk
        lead -= chunk
        address = (address + chunk) % a.logical_bytes
    return done


cdef double _array_write(ArrayState* a, ArrayWrites* w, double now, int64_t vm, int64_t offset,
                         int64_t length) except? -1 nogil:
    """Array.submit(now, ((vm, offset, length),), True) without a controller cache (first come
    first served): when the write is done."""
    cdef int64_t counts[2]
    cdef double done
    counts[0] = 0
    counts[1] = 0
    w.bytes_written += length
    done = _write_run(a, w, now, vm, offset, length, now, counts)
    a.front_end_ios += 1
    a.back_end_ios += (2 * counts[0] if w.rmw else counts[0]) + counts[1] * a.spindles
    w.full_stripe_writes += counts[1]
    return done


cdef int _wt_start(Engine self, int32_t s, double now, int64_t offset) except -1 nogil:
    """write_through up to its first wait: the tier write, the cache fill, the data sent to the
    array over (storage_tx, array_rx)."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef int32_t host = vm.tier
    slot.write = True
    slot.offset = offset
    slot.local_done = _read(&self.tiers[host], now, slot.size, True, vm.gc_factor)
    if not self.caches[host].full:  # (a cache holding every disk only refreshes lines)
        _insert(&self.caches[host], vm.index, offset, slot.size)
    return _send_on(self, s, now, self.host_wports[2 * host], self.host_wports[2 * host + 1],
                    host, slot.size, FLOW_WT)


cdef int _wt_arrived(Engine self, int32_t s, double now) except -1 nogil:
    """write_through after the transfer: the array writes the data; the write is done when both
    the array's acknowledgement is back and the tier write is done."""
    cdef Slot* slot = &self.slots[s]
    cdef int32_t host = self.vms[slot.vm].tier
    cdef double acked, finish
    slot.arrived = now
    slot.array_done = _array_write(&self.array, &self.aw, now, self.vms[slot.vm].index,
                                   slot.offset, slot.size)
    acked = slot.array_done + self.host_ack[host]
    finish = slot.local_done if slot.local_done > acked else acked  # max(acked, local_done)
    if finish > now:
        self._schedule(now + (finish - now), s, WT_DONE)  # = sleep()'s time
        return 0
    return _wt_done(self, s, now)


cdef int _wt_done(Engine self, int32_t s, double now) except -1 nogil:
    """write_through's end: record the write (its local, network and array components); then
    the slot goes on."""
    cdef Slot* slot = &self.slots[s]
    cdef double acked = slot.array_done + self.host_ack[self.vms[slot.vm].tier]
    cdef double array_time = slot.array_done - slot.arrived
    if acked >= slot.local_done:
        _record(self, s, now, slot.issued - slot.issued, (now - slot.issued) - array_time,
                array_time, self.path_write)
    else:
        _record(self, s, now, now - slot.issued, 0.0, 0.0, self.path_write)
    return _slot_done(self, s, now)
