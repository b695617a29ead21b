# Ports the backing array's read path: simcache.sim.components.array.Array._dispatch for one
# read (the stripe cutting; each RAID layout's spindles as
# simcache.physics.array.StripeLayout.unit_spindles gives them, a copy drawn from the array's
# stream), simcache.sim.spindles.mechanics.Spindles.operate (seek curve from the head, command
# overhead, command queueing, rotation drawn, zoned transfer; a parity read-modify-write) and
# _flash_operate, Spindles.buffered, the controller read cache (ArrayState, _array_read,
# _chunk_op, _operate, _seek, _rc_*). The chunk operations serve writes too (writes.pxi).

cdef struct ArrayState:
    int64_t stripe, spindles, width, copies, parity, row_bytes, logical_bytes
    int64_t* vm_start  # by VM index
    bint flash
    double revolution, read_time, parallelism, stroke, seconds_per_byte, outer_rate, shrink
    double overhead
    # a degraded or rebuilding array (Array.degrade, read at each sync_in): the service time of
    # a read's, a parity read-modify-write's and another write's chunk operation scaled
    double read_scale, rmw_scale, plain_scale
    double settle, track, a, b, knee, c, e  # its SeekCurve
    int64_t* head
    double* spindle_free
    double* units  # a flash drive's units, parallelism per spindle
    int64_t nunits
    int64_t media_bytes, bytes_read, front_end_ios, back_end_ios
    Meter m
    Uniforms u
    # the elevator (scheduling = "elevator") for a read larger than a stripe: its chunk
    # operations queued per spindle (target, position, length), then served in elevator_order,
    # at most queue_depth reordered at once; scratch arrays of rq_cap entries
    bint elevator
    int64_t queue_depth
    int64_t* rq_target
    int64_t* rq_pos
    int64_t* rq_len
    int64_t* sub_pos
    int64_t* sub_len
    int64_t* w_pos
    int64_t* w_len
    int64_t* w_starts
    int64_t rq_cap
    # the drives' buffers (drive.cache): per spindle an LRU of segments (position, bytes held),
    # oldest first, at most `segments` of them (Spindles._segment_caches)
    int64_t segments, segment_bytes
    double drive_hit
    int64_t* seg_pos
    int64_t* seg_len
    int64_t* seg_n
    int64_t drive_cache_hits
    # the controller's read cache (read_cache): an LRU of line numbers of the logical address
    # space (Array._lines): nodes in a doubly linked list, oldest first, and an open-addressing
    # index of node + 1 by line number
    int64_t rc_lines, rc_line
    double rc_hit
    int64_t* rc_key
    int64_t* rc_prev
    int64_t* rc_next
    int64_t rc_first, rc_last, rc_count, rc_used, rc_cap, rc_free
    int64_t* rc_slots
    int64_t rc_mask
    int64_t read_cache_hits
    bint rc_changed  # its lines changed since last written back (sync_out(full) writes them)
    # the drives' command queueing (command_queueing > 1, disks): per spindle the finish times of
    # the commands booked and not done (pend, ascending), the pool of unserved (position, angle)
    # pairs (at most choose_among a spindle) and the span of the positions requested
    int64_t choose_among, reorder_lag, drive_depth
    bint by_seek
    double** pend
    int64_t* pend_n
    int64_t* pend_cap
    int64_t* pool_pos
    double* pool_angle
    int64_t* pool_n
    int64_t* span_lo
    int64_t* span_hi


cdef inline double _seek(ArrayState* a, double x) noexcept nogil:
    """SeekCurve.seconds."""
    if x <= 0.0:
        return 0.0
    if x <= a.track:
        return a.settle
    if x <= a.knee:
        return a.a + a.b * sqrt(x)
    return a.c + a.e * x


cdef inline double _seek_from(ArrayState* a, int64_t head, int64_t place) noexcept nogil:
    """Spindles._seek_from."""
    cdef int64_t distance = place - head if head > 0 else place
    return _seek(a, (distance if distance >= 0 else -distance) / a.stroke)


cdef int64_t _candidates(ArrayState* a, int64_t s, double now) noexcept nogil:
    """Spindles._candidates: the commands the drive chooses among for the slot booked now."""
    cdef double* pending = a.pend[s]
    cdef int64_t n = a.pend_n[s], done = 0, held, candidates, k
    while done < n and pending[done] <= now:
        done += 1
    if done:
        n -= done
        for k in range(n):  # a drive's few pending commands, a loop rather than memmove's call
            pending[k] = pending[k + done]
        a.pend_n[s] = n
    held = n if n < a.drive_depth else a.drive_depth - 1
    candidates = held - a.reorder_lag
    if candidates > a.choose_among:
        candidates = a.choose_among
    return candidates if candidates > 1 else 1


cdef int _pend_add(ArrayState* a, int64_t s, double finish) except -1 nogil:
    cdef int64_t cap = a.pend_cap[s]
    cdef double* grown
    if a.pend_n[s] == cap:
        cap = 2 * cap if cap else 16
        grown = <double*>realloc(a.pend[s], cap * sizeof(double))
        if grown == NULL:
            with gil:
                raise MemoryError()
        a.pend[s] = grown
        a.pend_cap[s] = cap
    a.pend[s][a.pend_n[s]] = finish
    a.pend_n[s] += 1
    return 0


cdef int64_t _reorder(ArrayState* a, int64_t s, int64_t position, double start, bint busy,
                      int64_t candidates, double* seek_out, double* rotation_out) noexcept nogil:
    """Spindles._reorder: the position served (returned), its seek (with the overhead) and its
    rotational wait; the same draws and float operations."""
    cdef int64_t* pool_pos = a.pool_pos + s * a.choose_among
    cdef double* pool_angle = a.pool_angle + s * a.choose_among
    cdef double angle = _uniform(&a.u), best_angle, turn, turn_at, seek, rotation, cost
    cdef double best_cost, best_seek, best_rotation
    cdef int64_t window = candidates - 1, head = a.head[s], best, best_place, k, place
    cdef int64_t origin, nearest, distance
    if position < a.span_lo[s]:
        a.span_lo[s] = position
    if position > a.span_hi[s]:
        a.span_hi[s] = position
    while a.pool_n[s] < window:
        place = a.span_lo[s] + <int64_t>(_uniform(&a.u) * <double>(a.span_hi[s] - a.span_lo[s]))
        pool_pos[a.pool_n[s]] = place
        pool_angle[a.pool_n[s]] = _uniform(&a.u)
        a.pool_n[s] += 1
    best = window  # the booked command, the most recent: pool entries first among equals
    best_place = position
    if a.by_seek:
        origin = head if head > 0 else 0
        nearest = position - origin if position >= origin else origin - position
        for k in range(window):
            place = pool_pos[k]
            distance = place - origin if place >= origin else origin - place
            if distance <= nearest and (distance < nearest or best == window):
                best = k
                nearest = distance
                best_place = place
        best_angle = angle
        if best < window:
            best_angle = pool_angle[best]
            pool_pos[best] = position
            pool_angle[best] = angle
        if busy and best_place == head:
            seek_out[0] = 0.0
            rotation_out[0] = 0.0
            return best_place
        seek = _seek_from(a, head, best_place) + a.overhead
        turn = best_angle - (start + seek) / a.revolution
        seek_out[0] = seek
        rotation_out[0] = (turn - floor(turn)) * a.revolution
        return best_place
    best_cost = INFINITY
    best_seek = 0.0
    best_rotation = 0.0
    for k in range(window + 1):
        if k < window:
            place = pool_pos[k]
            turn_at = pool_angle[k]
        else:
            place = position
            turn_at = angle
        if busy and place == head:
            seek = 0.0
            rotation = 0.0
        else:
            seek = _seek_from(a, head, place) + a.overhead
            turn = turn_at - (start + seek) / a.revolution
            rotation = (turn - floor(turn)) * a.revolution
        cost = seek + rotation
        if cost < best_cost:
            best = k
            best_cost = cost
            best_seek = seek
            best_rotation = rotation
            best_place = place
    if best < window:
        pool_pos[best] = position
        pool_angle[best] = angle
    seek_out[0] = best_seek
    rotation_out[0] = best_rotation
    return best_place


cdef double _operate(ArrayState* a, int64_t s, int64_t position, int64_t chunk, double now,
                     bint writing, bint rmw, double write_time) except? -1 nogil:
    """Spindles.operate, or _flash_operate: a read, or a write (``writing``; a parity
    read-modify-write ``rmw``; ``write_time`` a flash drive's write access). Its service time
    scaled as Array._dispatch scales it: a read's by the read scale, a read-modify-write's by
    the read-modify-write scale, any other write's by the plain one (1 each: a healthy array)."""
    cdef double busy_until, start, seek, rotation, transfer, finish, free_at, service, access
    cdef double scale = (a.rmw_scale if rmw else a.plain_scale) if writing else a.read_scale
    cdef int64_t head, distance, unit, k, candidates = 1
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
        access = write_time if writing and not rmw else a.read_time
        transfer = chunk * a.seconds_per_byte
        if rmw:  # flash_op_seconds
            service = access + write_time + 2.0 * transfer
        else:
            service = access + transfer
        service = service * scale
        finish = start + service
        units[unit] = finish
        a.media_bytes += 2 * chunk if rmw else chunk
        _meter_add(&a.m, start, start + service / a.parallelism, now)
        return finish
    busy_until = a.spindle_free[s]
    start = busy_until if busy_until > now else now
    head = a.head[s]
    if a.choose_among > 1:
        candidates = _candidates(a, s, now)
    if candidates > 1:
        position = _reorder(a, s, position, start, busy_until >= now, candidates, &seek,
                            &rotation)
    elif head == position and busy_until >= now:
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
    finish = start + service * scale
    a.spindle_free[s] = finish
    a.head[s] = position + chunk
    a.media_bytes += 2 * chunk if rmw else chunk
    if a.choose_among > 1:
        _pend_add(a, s, finish)
    _meter_add(&a.m, start, finish, now)
    return finish


cdef double _chunk_op(ArrayState* a, int64_t s, int64_t position, int64_t chunk, double now,
                      bint writing, bint rmw, double write_time) except? -1 nogil:
    """A chunk operation on spindle ``s`` (:func:`_operate`'s arguments): Spindles.buffered with
    the drives' buffers on (a segment holding a read's chunk answers it in cache_hit_time, the
    arm unmoved; any other operation goes to the media, and its chunk takes the most recent
    segment if it fits one, the least recent evicted), else Spindles.operate."""
    cdef int64_t* pos
    cdef int64_t* held
    cdef int64_t n, i, found = -1, k, value
    cdef double finish
    if not a.segments:
        return _operate(a, s, position, chunk, now, writing, rmw, write_time)
    pos = a.seg_pos + s * (a.segments + 1)
    held = a.seg_len + s * (a.segments + 1)
    n = a.seg_n[s]
    for i in range(n):
        if pos[i] == position:
            found = i
            break
    if not writing and found >= 0 and held[found] >= chunk:
        value = held[found]
        for k in range(found, n - 1):  # move_to_end
            pos[k] = pos[k + 1]
            held[k] = held[k + 1]
        pos[n - 1] = position
        held[n - 1] = value
        a.drive_cache_hits += 1
        return now + a.drive_hit
    finish = _operate(a, s, position, chunk, now, writing, rmw, write_time)
    if chunk <= a.segment_bytes:
        if found >= 0:  # cache[position] = chunk, then move_to_end
            for k in range(found, n - 1):
                pos[k] = pos[k + 1]
                held[k] = held[k + 1]
            n -= 1
        pos[n] = position
        held[n] = chunk
        n += 1
        if n > a.segments:  # popitem(last=False)
            for k in range(n - 1):
                pos[k] = pos[k + 1]
                held[k] = held[k + 1]
            n -= 1
        a.seg_n[s] = n
    return finish


cdef inline double _chunk_read(ArrayState* a, int64_t s, int64_t position, int64_t chunk,
                               double now) except? -1 nogil:
    """:func:`_chunk_op` for a read."""
    return _chunk_op(a, s, position, chunk, now, False, False, 0.0)


cdef inline int64_t _rc_home(int64_t key, int64_t mask) noexcept nogil:
    cdef uint64_t h = (<uint64_t>key) * <uint64_t>0x9E3779B97F4A7C15
    return <int64_t>((h ^ (h >> 29)) & <uint64_t>mask)


cdef int64_t _rc_find(ArrayState* a, int64_t key) noexcept nogil:
    """The node of line ``key`` in the controller read cache, -1 if it does not hold it."""
    cdef int64_t slot = _rc_home(key, a.rc_mask), node
    while True:
        node = a.rc_slots[slot] - 1
        if node < 0:
            return -1
        if a.rc_key[node] == key:
            return node
        slot = (slot + 1) & a.rc_mask


cdef void _rc_unlink(ArrayState* a, int64_t node) noexcept nogil:
    cdef int64_t before = a.rc_prev[node], after = a.rc_next[node]
    if before >= 0:
        a.rc_next[before] = after
    else:
        a.rc_first = after
    if after >= 0:
        a.rc_prev[after] = before
    else:
        a.rc_last = before


cdef void _rc_append(ArrayState* a, int64_t node) noexcept nogil:
    a.rc_prev[node] = a.rc_last
    a.rc_next[node] = -1
    if a.rc_last >= 0:
        a.rc_next[a.rc_last] = node
    else:
        a.rc_first = node
    a.rc_last = node


cdef int _rc_index(ArrayState* a, int64_t size) except -1 nogil:
    """A new index of ``size`` slots (a power of two) holding every node in the list."""
    cdef int64_t* slots = <int64_t*>calloc(size, sizeof(int64_t))
    cdef int64_t node, slot
    if slots == NULL:
        with gil:
            raise MemoryError()
    free(a.rc_slots)
    a.rc_slots = slots
    a.rc_mask = size - 1
    node = a.rc_first
    while node >= 0:
        slot = _rc_home(a.rc_key[node], a.rc_mask)
        while a.rc_slots[slot]:
            slot = (slot + 1) & a.rc_mask
        a.rc_slots[slot] = node + 1
        node = a.rc_next[node]
    return 0


cdef int _rc_nodes(ArrayState* a, int64_t n) except -1 nogil:
    """Room for ``n`` nodes (and an index at most half full)."""
    cdef int64_t cap = a.rc_cap if a.rc_cap else 64
    cdef int64_t* grown
    if n > a.rc_cap:
        while cap < n:
            cap *= 2
        grown = <int64_t*>realloc(a.rc_key, cap * sizeof(int64_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        a.rc_key = grown
        grown = <int64_t*>realloc(a.rc_prev, cap * sizeof(int64_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        a.rc_prev = grown
        grown = <int64_t*>realloc(a.rc_next, cap * sizeof(int64_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        a.rc_next = grown
        a.rc_cap = cap
    if a.rc_slots == NULL or 2 * n > a.rc_mask + 1:
        cap = 64
        while cap < 2 * n:
            cap *= 2
        _rc_index(a, cap)
    return 0


cdef void _rc_remove(ArrayState* a, int64_t node) noexcept nogil:
    """Take ``node`` out of the index (backward-shift deletion) and the list; its slot freed."""
    cdef int64_t mask = a.rc_mask, hole, slot, other, home
    hole = _rc_home(a.rc_key[node], mask)
    while a.rc_slots[hole] - 1 != node:
        hole = (hole + 1) & mask
    slot = (hole + 1) & mask
    while a.rc_slots[slot]:
        other = a.rc_slots[slot] - 1
        home = _rc_home(a.rc_key[other], mask)
        if ((slot - home) & mask) >= ((slot - hole) & mask):
            a.rc_slots[hole] = other + 1
            hole = slot
        slot = (slot + 1) & mask
    a.rc_slots[hole] = 0
    _rc_unlink(a, node)
    a.rc_next[node] = a.rc_free
    a.rc_free = node
    a.rc_count -= 1


cdef int _rc_put(ArrayState* a, int64_t key) except -1 nogil:
    """``lines[key] = None; lines.move_to_end(key)``."""
    cdef int64_t node = _rc_find(a, key), slot
    if node >= 0:
        _rc_unlink(a, node)
        _rc_append(a, node)
        return 0
    if a.rc_free >= 0:
        node = a.rc_free
        a.rc_free = a.rc_next[node]
    else:
        _rc_nodes(a, a.rc_used + 1)
        node = a.rc_used
        a.rc_used += 1
    _rc_nodes(a, a.rc_count + 1)  # the index at most half full
    a.rc_key[node] = key
    slot = _rc_home(key, a.rc_mask)
    while a.rc_slots[slot]:
        slot = (slot + 1) & a.rc_mask
    a.rc_slots[slot] = node + 1
    _rc_append(a, node)
    a.rc_count += 1
    return 0


cdef bint _rc_held(ArrayState* a, int64_t address, int64_t length) noexcept nogil:
    """Array._lines_held: every line the run touches held (each then the most recent)."""
    cdef int64_t first = address // a.rc_line
    cdef int64_t last = _floor_div(address + length - 1, a.rc_line)
    cdef int64_t number, node
    for number in range(first, last + 1):
        if _rc_find(a, number) < 0:
            return False
    for number in range(first, last + 1):
        node = _rc_find(a, number)
        _rc_unlink(a, node)
        _rc_append(a, node)
    a.rc_changed = True
    return True


cdef int _rc_keep(ArrayState* a, int64_t address, int64_t length) except -1 nogil:
    """Array._keep_lines: the lines the run covers whole, the most recent; the least recent
    evicted beyond the capacity."""
    cdef int64_t number
    # the first line the run covers whole: Python's -(-address // line), a ceiling; under
    # cdivision a C division of the negated address would round toward zero instead
    for number in range(-_floor_div(-address, a.rc_line), (address + length) // a.rc_line):
        _rc_put(a, number)
    while a.rc_count > a.rc_lines:
        _rc_remove(a, a.rc_first)
    a.rc_changed = True
    return 0


cdef int _rq_room(ArrayState* a, int64_t n) except -1 nogil:
    """Room for ``n`` chunk operations in the elevator's scratch arrays."""
    cdef int64_t cap = a.rq_cap if a.rq_cap else 16
    cdef int64_t** arrays[8]
    cdef int64_t* grown
    cdef int k
    if n <= a.rq_cap:
        return 0
    while cap < n:
        cap *= 2
    arrays[0] = &a.rq_target
    arrays[1] = &a.rq_pos
    arrays[2] = &a.rq_len
    arrays[3] = &a.sub_pos
    arrays[4] = &a.sub_len
    arrays[5] = &a.w_pos
    arrays[6] = &a.w_len
    arrays[7] = &a.w_starts
    for k in range(8):
        grown = <int64_t*>realloc(arrays[k][0], (cap + 1) * sizeof(int64_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        arrays[k][0] = grown
    a.rq_cap = cap
    return 0


cdef int _serve_window(ArrayState* a, int64_t target, int64_t first, int64_t end, double now,
                       double* done) except -1 nogil:
    """The window's requests ``first`` to ``end - 1`` (sorted) operated in order."""
    cdef int64_t i
    cdef double finish
    for i in range(first, end):
        finish = _chunk_read(a, target, a.w_pos[i], a.w_len[i], now)
        if finish > done[0]:
            done[0] = finish
    return 0


cdef int _elevator_serve(ArrayState* a, int64_t target, int64_t n, double now, double* done
                         ) except -1 nogil:
    """physics.drive.elevator_order(head[target], requests, queue_depth) over the ``n`` requests
    in ``sub_pos``/``sub_len`` (arrival order), each operated on ``target`` in that order (the
    order depends on the head before them only, so each window is served as it is ordered)."""
    cdef int64_t position = a.head[target] if a.head[target] > 0 else 0
    cdef int64_t first = 0, m, i, j, k, below, nstarts, last, key_pos, key_len
    while first < n:
        m = a.queue_depth if a.queue_depth < n - first else n - first
        for i in range(m):  # sorted(requests[first : first + depth]): by (position, length)
            key_pos = a.sub_pos[first + i]
            key_len = a.sub_len[first + i]
            j = i
            while j > 0 and (a.w_pos[j - 1] > key_pos
                             or (a.w_pos[j - 1] == key_pos and a.w_len[j - 1] > key_len)):
                a.w_pos[j] = a.w_pos[j - 1]
                a.w_len[j] = a.w_len[j - 1]
                j -= 1
            a.w_pos[j] = key_pos
            a.w_len[j] = key_len
        # segments (requests continuing one another) as index ranges: w_starts[k] to [k + 1]
        a.w_starts[0] = 0
        nstarts = 1
        below = 1 if a.w_pos[0] < position else 0
        for i in range(1, m):
            if a.w_pos[i - 1] + a.w_len[i - 1] != a.w_pos[i]:
                a.w_starts[nstarts] = i
                nstarts += 1
                if a.w_pos[i] < position:
                    below += 1
        a.w_starts[nstarts] = m
        if below == 0:
            _serve_window(a, target, 0, m, now, done)  # all above: one upward pass
            last = m - 1
        else:
            # up first when the top end is nearer, then the segments below, top one down
            if below != nstarts and (
                a.w_pos[a.w_starts[nstarts - 1]] - position <= position - a.w_pos[0]
            ):
                _serve_window(a, target, a.w_starts[below], m, now, done)
                for k in range(below - 1, -1, -1):
                    _serve_window(a, target, a.w_starts[k], a.w_starts[k + 1], now, done)
                last = a.w_starts[1] - 1
            else:
                for k in range(below - 1, -1, -1):
                    _serve_window(a, target, a.w_starts[k], a.w_starts[k + 1], now, done)
                last = a.w_starts[1] - 1
                if below != nstarts:
                    _serve_window(a, target, a.w_starts[below], m, now, done)
                    last = m - 1
        position = a.w_pos[last] + a.w_len[last]
        first += m
    return 0


cdef double _array_read(ArrayState* a, double now, int64_t vm, int64_t offset, int64_t length
                        ) except? -1 nogil:
    """Array.read: when the read is done. With the controller read cache, a read all of whose
    lines it holds is done after read_cache_latency (Array._read_through_cache for one run);
    else it goes to the spindles (_dispatch_read) and leaves its whole lines in the cache."""
    cdef int64_t address
    cdef double done
    a.bytes_read += length
    if not a.rc_lines:
        return _dispatch_read(a, now, vm, offset, length)
    address = (a.vm_start[vm] + offset) % a.logical_bytes
    if _rc_held(a, address, length):
        a.read_cache_hits += 1
        a.front_end_ios += 1
        return now + a.rc_hit
    done = _dispatch_read(a, now, vm, offset, length)
    _rc_keep(a, address, length)
    return done


cdef double _dispatch_read(ArrayState* a, double now, int64_t vm, int64_t offset, int64_t length
                           ) except? -1 nogil:
    """Array._dispatch for one read: its chunks to their spindles (through the drives' buffers
    when on); when the last is done. With the elevator, a read larger than a stripe queues its
    chunk operations (the copies drawn as they are cut), then serves them spindle by spindle in
    ascending order, each spindle's in elevator order."""
    cdef int64_t address = (a.vm_start[vm] + offset) % a.logical_bytes
    cdef int64_t left = length, lead = length, chunk, unit, within, row, k, p, ntargets
    cdef int64_t target, position, chunks = 0, nq = 0, last, low, m, i
    cdef bint elevator = a.elevator and length > a.stripe
    cdef double done = now, finish
    while left > 0:
        chunk = a.stripe if lead > a.stripe else lead
        unit = address // a.stripe
        within = address % a.stripe
        row = unit // a.width
        k = unit % a.width
        if a.parity < 0:
            ntargets = 2 if a.copies > 1 and a.spindles > 1 else 1
            target = k
            if ntargets > 1:
                target = k + a.width * <int64_t>(_uniform(&a.u) * 2)
        elif a.parity == 0:
            target = k
        else:
            p = a.spindles - 1 - row % a.spindles
            ntargets = a.parity + 1
            # (data, *redundancy): a read goes to either copy
            target = <int64_t>(_uniform(&a.u) * ntargets)
            if target == 0:
                target = (p + a.parity + k) % a.spindles
            else:
                target = (p + target - 1) % a.spindles
        position = row * a.stripe + within
        if elevator:
            _rq_room(a, nq + 1)
            a.rq_target[nq] = target
            a.rq_pos[nq] = position
            a.rq_len[nq] = chunk
            nq += 1
        else:
            finish = _chunk_read(a, target, position, chunk, now)
            if finish > done:
                done = finish
        chunks += 1
        left -= chunk
        lead -= chunk
        address = (address + chunk) % a.logical_bytes
    if elevator:
        last = -1
        while True:  # for target in sorted(queued)
            low = -1
            for i in range(nq):
                if a.rq_target[i] > last and (low < 0 or a.rq_target[i] < low):
                    low = a.rq_target[i]
            if low < 0:
                break
            m = 0
            for i in range(nq):
                if a.rq_target[i] == low:
                    a.sub_pos[m] = a.rq_pos[i]
                    a.sub_len[m] = a.rq_len[i]
                    m += 1
            _elevator_serve(a, low, m, now, &done)
            last = low
    a.front_end_ios += 1
    a.back_end_ios += chunks
    return done
