# Ports the write-through path and the array's write path: simcache.sim.components.vm_paths.
# write_through (the tier write with the VM's gc_factor, the cache fill, the data over the
# storage link to the array, the array's write, the acknowledgement back, the record: _wt_start,
# _wt_arrived, _wt_done) and simcache.sim.components.array.Array.submit for writes (the
# controller read cache keeping the lines a write covers whole: _rc_keep; Array._through_cache
# for the "immediate" write cache: _drain, _through_cache; Array._hold_in_cache and merge_runs for
# the write cache flushed at a watermark: _hold_in_cache, _merge_held; Array._dispatch first come
# first served or with the elevator, _dispatch_write: the stripe
# cutting, parity RAID's whole rows and read-modify-writes, mirrored pairs; each chunk through
# the drives' buffers and command queueing as a read's, array.pxi's _chunk_op: ArrayWrites,
# _operate_write, _array_write).

cdef struct Piece:
    # a run (VM index, offset, length) or a pending write (VM index, offset, size), bytes
    int64_t vm, offset, size


cdef struct HeldRun:
    # a run the watermark-flushed write cache holds: its array logical address, then the run
    int64_t address, vm, offset, size


cdef struct ElevOp:
    # a chunk operation queued for the elevator: its spindle, position, bytes, read-modify-write,
    # and its place in the request (the order the array queued it)
    int64_t target, position, chunk, seq
    bint rmw


cdef struct ArrayWrites:
    # the array's write figures and counters beside its ArrayState
    bint rmw  # parity RAID: a chunk write reads, then writes (read_modify_write(raid))
    double write_time  # a flash drive's write access time
    int64_t bytes_written, full_stripe_writes
    # elevator scheduling (Array._elevator): the drive's queue depth, the operations queued by the
    # request being dispatched (``elevating``), and the sweep's scratch
    bint elevator, elevating
    int64_t depth
    ElevOp* ops
    int64_t n_ops, ops_cap
    ElevOp* window
    ElevOp* order
    int64_t* starts
    int64_t scratch_cap
    # the controller write cache flushed at once (cache_flush "immediate"): its room, and the
    # writes it holds until their spindles are done (a heap of (done, bytes) by done)
    bint has_cache
    double cache_ack
    int64_t cache_capacity, cache_used
    double* drain_at
    int64_t* drain_bytes
    int64_t n_drains, drains_cap
    # the controller write cache flushed at a watermark (cache_flush "watermark", ``hold``): the
    # runs it holds, not yet flushed, in arrival order (Array._held, each with its logical
    # address), their bytes, the fill level that flushes them all, the acknowledgement time
    # (Array._cache_ack_held); the flushes so far; the merged runs of a flush (scratch)
    bint hold
    double flush_level, ack_held
    HeldRun* held
    int64_t n_held, held_cap, held_bytes, cache_flushes
    Piece* merged
    int64_t merged_cap


cdef inline double _operate_write(ArrayState* a, ArrayWrites* w, int64_t s, int64_t position,
                                  int64_t chunk, double now, bint rmw) except? -1 nogil:
    """A write's chunk operation: Spindles.buffered (the drives' buffers on) or operate, with
    command queueing, or _flash_operate (:func:`_chunk_op`)."""
    return _chunk_op(a, s, position, chunk, now, True, rmw, w.write_time)


cdef double _book_write(ArrayState* a, ArrayWrites* w, int64_t s, int64_t position,
                        int64_t chunk, double now, bint rmw, double done) except? -1 nogil:
    """A chunk operation of the request being dispatched: booked now (first come first served;
    the later of ``done`` and its finish returned), or queued for the elevator."""
    cdef double finish
    cdef ElevOp* ops
    cdef int64_t cap
    if not w.elevating:
        finish = _operate_write(a, w, s, position, chunk, now, rmw)
        return finish if finish > done else done
    if w.n_ops == w.ops_cap:
        cap = 2 * w.ops_cap if w.ops_cap else 64
        ops = <ElevOp*>realloc(w.ops, cap * sizeof(ElevOp))
        if ops == NULL:
            with gil:
                raise MemoryError()
        w.ops = ops
        w.ops_cap = cap
    w.ops[w.n_ops].target = s
    w.ops[w.n_ops].position = position
    w.ops[w.n_ops].chunk = chunk
    w.ops[w.n_ops].rmw = rmw
    w.ops[w.n_ops].seq = w.n_ops
    w.n_ops += 1
    return done


cdef int _sort_by_target(ArrayWrites* w, int64_t spindles) except -1 nogil:
    """sorted(queued): the operations queued by spindle, each spindle's in the order queued. They
    are queued in that order (``seq``, their place), so a stable counting sort by spindle puts them
    where sorting by (spindle, seq) would, in one pass (qsort took 1 % of the default run). The
    scratch (``window``, ``starts``) is free again after it."""
    cdef int64_t k, t
    _scratch_room(w, w.n_ops if w.n_ops > spindles else spindles)
    for t in range(spindles + 1):
        w.starts[t] = 0
    for k in range(w.n_ops):
        w.starts[w.ops[k].target + 1] += 1
    for t in range(spindles):
        w.starts[t + 1] += w.starts[t]
    for k in range(w.n_ops):
        t = w.ops[k].target
        w.window[w.starts[t]] = w.ops[k]
        w.starts[t] += 1
    memcpy(w.ops, w.window, w.n_ops * sizeof(ElevOp))
    return 0


cdef int _by_place(const void* x, const void* y) noexcept nogil:
    """sorted(window): (position, chunk, rmw) tuples."""
    cdef const ElevOp* p = <const ElevOp*>x
    cdef const ElevOp* q = <const ElevOp*>y
    if p.position != q.position:
        return -1 if p.position < q.position else 1
    if p.chunk != q.chunk:
        return -1 if p.chunk < q.chunk else 1
    if p.rmw != q.rmw:
        return -1 if not p.rmw else 1
    return 0


cdef void _sort_window(ElevOp* win, Py_ssize_t n) noexcept nogil:
    """An elevator's window in (position, chunk, rmw) order, ties in their order (SMALL_SORT:
    an insertion sort, as stable as Python's sorted)."""
    cdef ElevOp item
    cdef Py_ssize_t k, i
    if n > SMALL_SORT:
        qsort(win, n, sizeof(ElevOp), _by_place)
        return
    for k in range(1, n):
        item = win[k]
        i = k
        while i > 0 and _by_place(&win[i - 1], &item) > 0:
            win[i] = win[i - 1]
            i -= 1
        win[i] = item


cdef inline int64_t _up(ArrayWrites* w, ElevOp* win, int64_t start, int64_t size, int64_t o
                        ) noexcept nogil:
    """The segments from ``start`` up, appended to ``w.order`` at ``o``."""
    cdef int64_t i
    for i in range(start, size):
        w.order[o] = win[i]
        o += 1
    return o


cdef inline int64_t _down(ArrayWrites* w, ElevOp* win, int64_t* starts, int64_t below,
                          int64_t o) noexcept nogil:
    """The ``below`` segments under the head from the top one down, each upward, appended."""
    cdef int64_t k, i
    for k in range(below - 1, -1, -1):
        for i in range(starts[k], starts[k + 1]):
            w.order[o] = win[i]
            o += 1
    return o


cdef int64_t _elevator_order(ArrayWrites* w, ElevOp* requests, int64_t n, int64_t head
                             ) noexcept nogil:
    """simcache.physics.drive.elevator_order: ``requests`` (one spindle's) in the order the
    drive serves them, into ``w.order``; returns how many (``n``)."""
    cdef int64_t position = head if head > 0 else 0, o = 0, first, size, i, k, ns, below
    cdef ElevOp* win = w.window
    cdef int64_t* starts = w.starts
    cdef ElevOp end
    if n == 1:
        w.order[0] = requests[0]
        return 1
    first = 0
    while first < n:
        size = w.depth if first + w.depth <= n else n - first
        memcpy(win, requests + first, size * sizeof(ElevOp))
        _sort_window(win, size)
        starts[0] = 0
        ns = 1
        below = 1 if win[0].position < position else 0
        for i in range(1, size):
            if win[i - 1].position + win[i - 1].chunk != win[i].position:
                starts[ns] = i
                ns += 1
                if win[i].position < position:
                    below += 1
        starts[ns] = size
        ns += 1
        if below == 0:  # all above: one upward pass
            memcpy(w.order + o, win, size * sizeof(ElevOp))
            o += size
        elif below == ns - 1:  # all below: the segments from the top one down, each upward
            o = _down(w, win, starts, below, o)
        elif win[starts[ns - 2]].position - position <= position - win[0].position:
            o = _up(w, win, starts[below], size, o)  # the top end is nearer: up first
            o = _down(w, win, starts, below, o)
        else:
            o = _down(w, win, starts, below, o)
            o = _up(w, win, starts[below], size, o)
        end = w.order[o - 1]
        position = end.position + end.chunk
        first += w.depth
    return o


cdef int _scratch_room(ArrayWrites* w, int64_t n) except -1 nogil:
    cdef int64_t cap = w.scratch_cap if w.scratch_cap else 64
    if n <= w.scratch_cap:
        return 0
    while cap < n:
        cap *= 2
    w.window = <ElevOp*>realloc(w.window, cap * sizeof(ElevOp))
    w.order = <ElevOp*>realloc(w.order, cap * sizeof(ElevOp))
    w.starts = <int64_t*>realloc(w.starts, (cap + 1) * sizeof(int64_t))
    if w.window == NULL or w.order == NULL or w.starts == NULL:
        with gil:
            raise MemoryError()
    w.scratch_cap = cap
    return 0


cdef int _drain_push(ArrayWrites* w, double at, int64_t nbytes) except -1 nogil:
    cdef int64_t pos, parent, cap
    if w.n_drains == w.drains_cap:
        cap = 2 * w.drains_cap if w.drains_cap else 64
        w.drain_at = <double*>realloc(w.drain_at, cap * sizeof(double))
        w.drain_bytes = <int64_t*>realloc(w.drain_bytes, cap * sizeof(int64_t))
        if w.drain_at == NULL or w.drain_bytes == NULL:
            with gil:
                raise MemoryError()
        w.drains_cap = cap
    pos = w.n_drains
    w.n_drains += 1
    while pos > 0:
        parent = (pos - 1) >> 1
        if at < w.drain_at[parent]:
            w.drain_at[pos] = w.drain_at[parent]
            w.drain_bytes[pos] = w.drain_bytes[parent]
            pos = parent
        else:
            break
    w.drain_at[pos] = at
    w.drain_bytes[pos] = nbytes
    return 0


cdef void _drain(ArrayWrites* w, double now) noexcept nogil:
    """Array._drain: the cached writes whose spindles are done by ``now`` leave the cache (in
    any order: only their bytes count)."""
    cdef int64_t pos, child, n
    cdef double at
    cdef int64_t nbytes
    while w.n_drains and w.drain_at[0] <= now:
        w.cache_used -= w.drain_bytes[0]
        w.n_drains -= 1
        n = w.n_drains
        if n == 0:
            break
        at = w.drain_at[n]
        nbytes = w.drain_bytes[n]
        pos = 0
        while True:
            child = 2 * pos + 1
            if child >= n:
                break
            if child + 1 < n and w.drain_at[child + 1] < w.drain_at[child]:
                child += 1
            if w.drain_at[child] < at:
                w.drain_at[pos] = w.drain_at[child]
                w.drain_bytes[pos] = w.drain_bytes[child]
                pos = child
            else:
                break
        w.drain_at[pos] = at
        w.drain_bytes[pos] = nbytes


cdef double _through_cache(ArrayWrites* w, double now, int64_t nbytes, double spindles_done
                           ) except? -1 nogil:
    """Array._through_cache: acknowledged by the controller cache after ``cache_latency`` if it
    has room (the write held until its spindles are done), else when the spindles are done."""
    _drain(w, now)
    if w.cache_used + nbytes > w.cache_capacity:
        return spindles_done
    w.cache_used += nbytes
    _drain_push(w, spindles_done, nbytes)
    return now + w.cache_ack


cdef double _array_submit(ArrayState* a, ArrayWrites* w, double now, Piece* runs, int64_t n
                          ) except? -1 nogil:
    """Array.submit(now, runs, True): the bytes counted, the lines the write covers whole kept
    by the controller read cache; held by a write cache flushed at a watermark if it fits
    (:func:`_hold_in_cache`), else dispatched (:func:`_dispatch_write`), then acknowledged by a
    write cache flushed at once if it has room (:func:`_through_cache`); when the write is done
    or acknowledged."""
    cdef int64_t k, total = 0
    cdef double done
    for k in range(n):
        total += runs[k].size
    w.bytes_written += total
    if a.rc_lines:  # the controller read cache keeps the lines the write covers whole
        for k in range(n):
            _rc_keep(a, (a.vm_start[runs[k].vm] + runs[k].offset) % a.logical_bytes,
                     runs[k].size)
    if w.hold and _hold_in_cache(a, w, now, runs, n, total, &done):
        return done
    done = _dispatch_write(a, w, now, runs, n)
    if w.has_cache:
        return _through_cache(w, now, total, done)
    return done


cdef int _hold_room(ArrayWrites* w, int64_t n) except -1 nogil:
    """Room for ``n`` held runs, and for as many merged ones."""
    cdef int64_t cap = w.held_cap if w.held_cap else 64
    cdef HeldRun* grown
    cdef Piece* pieces
    if n <= w.held_cap:
        return 0
    while cap < n:
        cap *= 2
    grown = <HeldRun*>realloc(w.held, cap * sizeof(HeldRun))
    if grown == NULL:
        with gil:
            raise MemoryError()
    w.held = grown
    pieces = <Piece*>realloc(w.merged, cap * sizeof(Piece))
    if pieces == NULL:
        with gil:
            raise MemoryError()
    w.merged = pieces
    w.held_cap = cap
    return 0


cdef int _hold(ArrayState* a, ArrayWrites* w, int64_t vm, int64_t offset, int64_t size
               ) except -1 nogil:
    """``_held.append((vm, offset, size))``, with the run's logical address."""
    _hold_room(w, w.n_held + 1)
    w.held[w.n_held].address = (a.vm_start[vm] + offset) % a.logical_bytes
    w.held[w.n_held].vm = vm
    w.held[w.n_held].offset = offset
    w.held[w.n_held].size = size
    w.n_held += 1
    return 0


cdef int _by_address(const void* x, const void* y) noexcept nogil:
    """merge_runs' sort key (address, VM, offset); the length last (runs equal in the key merge
    into the longest in any order)."""
    cdef const HeldRun* p = <const HeldRun*>x
    cdef const HeldRun* q = <const HeldRun*>y
    if p.address != q.address:
        return -1 if p.address < q.address else 1
    if p.vm != q.vm:
        return -1 if p.vm < q.vm else 1
    if p.offset != q.offset:
        return -1 if p.offset < q.offset else 1
    if p.size != q.size:
        return -1 if p.size < q.size else 1
    return 0


cdef void _sort_held(HeldRun* held, Py_ssize_t n) noexcept nogil:
    """The held runs in :func:`_by_address`'s order (SMALL_SORT: an insertion sort)."""
    cdef HeldRun item
    cdef Py_ssize_t k, i
    if n > SMALL_SORT:
        qsort(held, n, sizeof(HeldRun), _by_address)
        return
    for k in range(1, n):
        item = held[k]
        i = k
        while i > 0 and _by_address(&held[i - 1], &item) > 0:
            held[i] = held[i - 1]
            i -= 1
        held[i] = item


cdef int64_t _merge_held(ArrayWrites* w) noexcept nogil:
    """merge_runs(_held, logical_address) into ``w.merged``: the held runs sorted by address,
    overlapping or adjacent runs of one VM merged (the same integer operations); how many. The
    held runs are left sorted (the flush empties them)."""
    cdef int64_t m = 0, k, last_end
    cdef HeldRun* run
    cdef Piece* last
    _sort_held(w.held, w.n_held)
    for k in range(w.n_held):
        run = &w.held[k]
        if m:
            last = &w.merged[m - 1]
            if last.vm == run.vm and run.offset <= last.offset + last.size:
                last_end = run.offset + run.size - last.offset
                if last_end > last.size:
                    last.size = last_end
                continue
        w.merged[m].vm = run.vm
        w.merged[m].offset = run.offset
        w.merged[m].size = run.size
        m += 1
    return m


cdef int _hold_in_cache(ArrayState* a, ArrayWrites* w, double now, Piece* runs, int64_t n,
                        int64_t total, double* acked) except -1 nogil:
    """Array._hold_in_cache: the write kept in the controller cache if it fits (1; ``acked``
    its acknowledgement time), everything held flushed as one sorted, merged batch (its bytes
    leave the cache when its spindles are done) once the cache is cache_high_watermark full; 0
    if it does not fit (it goes to its spindles)."""
    cdef int64_t k, m
    cdef double done
    _drain(w, now)
    if w.cache_used + total > w.cache_capacity:
        return 0
    w.cache_used += total
    for k in range(n):
        _hold(a, w, runs[k].vm, runs[k].offset, runs[k].size)
    w.held_bytes += total
    if w.cache_used >= w.flush_level:
        m = _merge_held(w)
        done = _dispatch_write(a, w, now, w.merged, m)
        _drain_push(w, done, w.held_bytes)
        w.cache_flushes += 1
        w.n_held = 0
        w.held_bytes = 0
    acked[0] = now + w.ack_held
    return 1


cdef double _dispatch_write(ArrayState* a, ArrayWrites* w, double now, Piece* runs, int64_t n
                            ) except? -1 nogil:
    """Array._dispatch(now, runs, True): first come first served, or with the elevator (more
    than one run, or one longer than a stripe) each spindle's operations in its sweep's order,
    the spindles in order; when the last chunk is done."""
    cdef int64_t counts[2]
    cdef int64_t k, first, last, m
    cdef double done = now, finish
    counts[0] = 0
    counts[1] = 0
    w.elevating = w.elevator and (n > 1 or runs[0].size > a.stripe)
    w.n_ops = 0
    for k in range(n):
        done = _write_run(a, w, now, runs[k].vm, runs[k].offset, runs[k].size, done, counts)
    if w.elevating:
        w.elevating = False
        _sort_by_target(w, a.spindles)
        first = 0
        while first < w.n_ops:
            last = first
            while last < w.n_ops and w.ops[last].target == w.ops[first].target:
                last += 1
            m = _elevator_order(w, w.ops + first, last - first, a.head[w.ops[first].target])
            for k in range(m):
                finish = _operate_write(a, w, w.order[k].target, w.order[k].position,
                                        w.order[k].chunk, now, w.order[k].rmw)
                if finish > done:
                    done = finish
            first = last
    a.front_end_ios += n
    a.back_end_ios += (2 * counts[0] if w.rmw else counts[0]) + counts[1] * a.spindles
    w.full_stripe_writes += counts[1]
    return done


cdef double _write_run(ArrayState* a, ArrayWrites* w, double now, int64_t vm, int64_t offset,
                       int64_t length, double done, int64_t* counts) except? -1 nogil:
    """One run of Array._dispatch for a write: its chunks booked on their spindles (or queued
    for the elevator); ``counts``: chunks, whole parity rows (added to)."""
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
                done = _book_write(a, w, target, row * a.stripe, a.stripe, now, False, done)
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
            done = _book_write(a, w, k, position, chunk, now, rmw, done)
            counts[0] += 1
            if a.copies > 1 and a.spindles > 1:
                done = _book_write(a, w, k + a.width, position, chunk, now, rmw, done)
                counts[0] += 1
        elif a.parity == 0:
            done = _book_write(a, w, k, position, chunk, now, rmw, done)
            counts[0] += 1
        else:
            p = a.spindles - 1 - row % a.spindles
            done = _book_write(a, w, (p + a.parity + k) % a.spindles, position, chunk, now, rmw,
                               done)
            for i in range(a.parity):
                done = _book_write(a, w, (p + i) % a.spindles, position, chunk, now, rmw, done)
            counts[0] += 1 + a.parity
        left -= chunk
        lead -= chunk
        address = (address + chunk) % a.logical_bytes
    return done


cdef double _array_write(ArrayState* a, ArrayWrites* w, double now, int64_t vm, int64_t offset,
                         int64_t length) except? -1 nogil:
    """Array.submit(now, ((vm, offset, length),), True): when the write is done."""
    cdef Piece run
    run.vm = vm
    run.offset = offset
    run.size = length
    return _array_submit(a, w, now, &run, 1)


cdef int _serial_wait(VmState* vm, int32_t s) except -1 nogil:
    """serialized_write: slot ``s``'s write waits for its turn."""
    return _ring_put(&vm.serial_q, &vm.q_head, &vm.q_count, &vm.q_cap, s)


cdef int _serial_done(Engine self, int32_t v, double now) except -1 nogil:
    """serialized_write's end: the next waiting write's turn comes (an event now), else none is
    on its way."""
    cdef VmState* vm = &self.vms[v]
    if not vm.serialize:
        return 0
    if vm.q_count:
        self._schedule(now, vm.serial_q[vm.q_head], TURN)  # succeed()
        vm.q_head = (vm.q_head + 1) % vm.q_cap
        vm.q_count -= 1
    else:
        vm.serial_writing = False
    return 0


cdef int _write_begin(Engine self, int32_t s, double now) except -1 nogil:
    """write_path: slot ``s``'s write begins now (its turn, if serialized); a write-back VM's
    write short of its peers (write_short_of_peers) takes the write-through path
    (``on_peer_loss = "write_through"``), stalls until its peers are back (``"stall"``) or writes
    back to the peers it reaches (``"degrade"``)."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    slot.begun = now
    slot.short_through = False
    slot.degrading = False
    if vm.write_through:
        return _wt_start(self, s, now)
    if vm.short_of_peers:
        vm.loss_written += slot.size
        if vm.on_peer_loss == LOSS_STALL:  # until its peers are back (PeerLoss.back)
            return _park(self, slot.vm, s, PARKED_STALL)
        if vm.on_peer_loss == LOSS_DEGRADE:  # with the peers it reaches (PeerLoss.degrading)
            vm.degrading += 1
            slot.degrading = True
            return _wb_start(self, s, now)
        slot.short_through = True
        return _wt_start(self, s, now)
    return _wb_start(self, s, now)


cdef int _peers_back(Engine self, int32_t v, double now) except -1:
    """write_short_of_peers's stall over (Engine.peers_back): VM ``v``'s stalled writes write
    back from now, in the order they stalled (those of a VM short of peers again stall on). A
    stop heard on the way (_poll_within) leaves the rest stalled."""
    cdef int32_t k, n
    cdef Parked* resumed
    if self.vms[v].short_of_peers:
        return 0
    resumed = _unpark(self, v, True, &n)
    try:
        for k in range(n):
            if self.tier_down[self.vms[v].tier]:
                # its host's tier failed while it stalled (device_failure; vm.host.tier_up in
                # write_short_of_peers): it failed, nothing sent
                _wb_failed(self, resumed[k].slot, now)
                continue
            self.slots[resumed[k].slot].begun = now
            _wb_start(self, resumed[k].slot, now)
            if _poll_within(self):
                _repark(self, resumed + k + 1, n - k - 1)
                break
    finally:
        free(resumed)
    return 0


cdef int _wt_start(Engine self, int32_t s, double now) except -1 nogil:
    """write_through up to its first wait: the tier write, the cache fill, the data sent to the
    array over (storage_tx, array_rx)."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef int32_t host = vm.tier
    cdef int64_t offset = slot.offset
    slot.host = host
    if self.tier_down[host]:  # device_failure: nothing to cache the write in
        slot.local_done = now
    else:
        slot.local_done = _read(&self.tiers[host], now, slot.size, True, vm.gc_factor)
        if not self.caches[host].full:  # (a cache holding every disk only refreshes lines)
            _insert(&self.caches[host], vm.index, offset, slot.size)
    if vm.nleft:  # a moved VM: the hosts it left drop their copies of the lines
        _discard_left(self, vm, offset, slot.size)
    if self.storage_down[host]:  # link_down: the data waits for the storage port
        return _park(self, host, s, PARKED_WT)
    return _wt_send(self, s, now)


cdef int _wt_send(Engine self, int32_t s, double now) except -1 nogil:
    """write_through's transfer: the data sent to the array over (storage_tx, array_rx)."""
    cdef int32_t host = self.slots[s].host
    return _send_on(self, s, now, self.host_wports[2 * host], self.host_wports[2 * host + 1],
                    host, self.slots[s].size, FLOW_WT)


cdef int _wt_arrived(Engine self, int32_t s, double now) except -1 nogil:
    """write_through after the transfer: the array writes the data; the write is done when both
    the array's acknowledgement is back and the tier write is done."""
    cdef Slot* slot = &self.slots[s]
    cdef int32_t host = slot.host
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
    cdef double acked = slot.array_done + self.host_ack[slot.host]
    cdef double array_time = slot.array_done - slot.arrived
    cdef int32_t v = slot.vm
    if self.any_dead and self.host_dead[slot.host]:  # its host died under it: nothing recorded
        _serial_done(self, v, now)
        return _host_died_under(self, s, now)
    if not self.vms[v].policy_write_through:  # a write-back VM's write, short of peers
        self.vms[v].fell_through += slot.size
    if slot.short_through:
        self.vms[v].loss_written_through += slot.size
    if acked >= slot.local_done:
        _record(self, s, now, slot.begun - slot.issued, (now - slot.begun) - array_time,
                array_time, self.path_write, 0.0, 0.0)
    else:
        _record(self, s, now, now - slot.issued, 0.0, 0.0, self.path_write, 0.0, 0.0)
    _serial_done(self, v, now)
    return _slot_done(self, s, now)
