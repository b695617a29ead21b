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


cdef double _array_read(ArrayState* a, double now, int64_t vm, int64_t offset, int64_t length
                        ) except? -1 nogil:
    """Array.read (no controller read cache, no elevator for one run of at most a stripe, no
    drive buffers): when the read is done."""
    cdef int64_t address = (a.vm_start[vm] + offset) % a.logical_bytes
    cdef int64_t left = length, lead = length, chunk, unit, within, row, k, p, ntargets
    cdef int64_t target, position, chunks = 0
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
        finish = _operate(a, target, position, chunk, now)
        if finish > done:
            done = finish
        chunks += 1
        left -= chunk
        lead -= chunk
        address = (address + chunk) % a.logical_bytes
    a.front_end_ios += 1
    a.back_end_ios += chunks
    return done
