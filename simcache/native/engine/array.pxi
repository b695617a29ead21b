# Ports the backing array's read path: simcache.sim.components.array.Array._dispatch for one
# read (the stripe cutting; each RAID layout's spindles as
# simcache.physics.array.StripeLayout.unit_spindles gives them, a copy drawn from the array's
# stream), simcache.sim.spindles.mechanics.Spindles.operate (seek curve from the head, command
# overhead, rotation drawn, zoned transfer) and _flash_operate (ArrayState, _array_read,
# _operate, _seek).

cdef struct ArrayState:
    int64_t stripe, spindles, width, copies, parity, row_bytes, logical_bytes
    int64_t* vm_start  # by VM index
    bint flash
    double revolution, read_time, parallelism, stroke, seconds_per_byte, outer_rate, shrink
    double overhead
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


cdef inline double _seek(ArrayState* a, double x) noexcept nogil:
    """SeekCurve.seconds."""
    if x <= 0.0:
        return 0.0
    if x <= a.track:
        return a.settle
    if x <= a.knee:
        return a.a + a.b * sqrt(x)
    return a.c + a.e * x


cdef double _operate(ArrayState* a, int64_t s, int64_t position, int64_t chunk, double now
                     ) except? -1 nogil:
    """Spindles.operate for a read (no command queueing, scale 1), or _flash_operate."""
    cdef double busy_until, start, seek, rotation, transfer, finish, free_at, service
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
        service = a.read_time + chunk * a.seconds_per_byte
        finish = start + service
        units[unit] = finish
        a.media_bytes += chunk
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
    finish = start + (seek + rotation + transfer)
    a.spindle_free[s] = finish
    a.head[s] = position + chunk
    a.media_bytes += chunk
    _meter_add(&a.m, start, finish, now)
    return finish


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
        finish = _operate(a, target, a.w_pos[i], a.w_len[i], now)
        if finish > done[0]:
            done[0] = finish
    return 0


cdef int _elevator_serve(ArrayState* a, int64_t target, int64_t n, double now, double* done
                         ) except -1 nogil:
    """physics.array.elevator_order(head[target], requests, queue_depth) over the ``n`` requests
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
    """Array.read (no controller read cache, no drive buffers): when the read is done. With the
    elevator, a read larger than a stripe queues its chunk operations (the copies drawn as they
    are cut), then serves them spindle by spindle in ascending order, each spindle's in
    elevator order."""
    cdef int64_t address = (a.vm_start[vm] + offset) % a.logical_bytes
    cdef int64_t left = length, lead = length, chunk, unit, within, row, k, p, ntargets
    cdef int64_t target, position, chunks = 0, nq = 0, last, low, m, i
    cdef bint elevator = a.elevator and length > a.stripe
    cdef double done = now, finish
    a.bytes_read += length
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
            finish = _operate(a, target, position, chunk, now)
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
