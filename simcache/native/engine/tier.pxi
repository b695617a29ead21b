# Ports simcache.sim.components.tier.Tier.submit (a host's flash or RAM tier: command overhead,
# command processor, lognormal factor, stall, the test-only exponential service, the channels'
# heap or the addressed unit, the clean pool of a write) and
# simcache.sim.components.tier.TransferPipe.book (the shared transfer pipe):
# TierState (one per host), _read (a read, or a miss's fill write), _book, _take_clean.

cdef struct TierState:
    # Tier's figures and state (one per host)
    double overhead, read_command, processor_free, per_byte, latency, read_channel
    double stall_p, stall_time, share, gc_until, foreground_until
    bint has_processor, lognormal, addressed, has_share
    bint exponential  # test-only: exponential service with the deterministic one's mean
    double* log_table
    double* write_log_table  # write_service_cv's quantiles (service_cv's when unset)
    int32_t log_points
    double points
    double* channels
    int32_t nch
    # the transfer pipe's bookings (TransferPipe._starts, _ends), from ``pipe_head`` on in the
    # arrays allocated at ``starts_base`` and ``ends_base`` (``starts``, ``ends``: their first;
    # those done are passed over, not moved out: _book), ``pipe_cap`` places each
    double* starts
    double* ends
    double* starts_base
    double* ends_base
    Py_ssize_t pipe_n, pipe_cap, pipe_head
    int64_t operations, bytes_read
    int64_t hits  # its host cache's lookups answered since the last sync_out
    Meter m  # its busy meter
    Uniforms u  # its random stream
    # writes (a miss's fill): Tier.submit's write figures and its clean pool
    double write_command, write_per_byte, write_latency, write_channel
    bint has_clean_pool
    double pool, pool_time, gc_rate, pool_depth, gc_pass, gc_wait_seconds
    double ran_dry_at  # Tier.ran_dry_at: when a write first found the pool short (-1: never)
    int64_t bytes_written


cdef inline int _pipe_room(TierState* t, Py_ssize_t n) except -1 nogil:
    """Room for ``n`` bookings from the pipe's first (out of line if none: :func:`_pipe_grow`)."""
    if t.pipe_head + n <= t.pipe_cap:
        return 0
    return _pipe_grow(t, n)


cdef int _pipe_grow(TierState* t, Py_ssize_t n) except -1 nogil:
    """Room for ``n`` bookings: the pipe's bookings moved to its arrays' start, and the arrays
    doubled until ``n`` fill at most half of them (a pipe that stays nearly full is not moved
    again at every booking)."""
    cdef Py_ssize_t cap = t.pipe_cap
    cdef double* starts
    cdef double* ends
    if t.pipe_head:
        memmove(t.starts_base, t.starts, t.pipe_n * sizeof(double))
        memmove(t.ends_base, t.ends, t.pipe_n * sizeof(double))
        t.pipe_head = 0
        t.starts = t.starts_base
        t.ends = t.ends_base
    if 2 * n <= cap:
        return 0
    while cap < 2 * n:
        cap *= 2
    starts = <double*>realloc(t.starts_base, cap * sizeof(double))
    if starts == NULL:
        with gil:
            raise MemoryError()
    t.starts_base = t.starts = starts
    ends = <double*>realloc(t.ends_base, cap * sizeof(double))
    if ends == NULL:
        with gil:
            raise MemoryError()
    t.ends_base = t.ends = ends
    t.pipe_cap = cap
    return 0


cdef double _book(TierState* t, double now, double ready, double duration) except? -1 nogil:
    """TransferPipe.book."""
    cdef Py_ssize_t done, low, high, middle, index, n = t.pipe_n
    cdef double start
    low = 0
    high = n
    while low < high:  # bisect_right(ends, now)
        middle = (low + high) >> 1
        if now < t.ends[middle]:
            high = middle
        else:
            low = middle + 1
    done = low
    if done:  # the bookings done by now passed over (TransferPipe's del of them)
        t.starts += done
        t.ends += done
        t.pipe_head += done
        n -= done
        t.pipe_n = n
    if n == 0 or ready >= t.ends[n - 1]:
        _pipe_room(t, n + 1)
        t.starts[n] = ready
        t.ends[n] = ready + duration
        t.pipe_n = n + 1
        return ready
    low = 0
    high = n
    while low < high:  # bisect_right(ends, ready)
        middle = (low + high) >> 1
        if ready < t.ends[middle]:
            high = middle
        else:
            low = middle + 1
    index = low
    start = ready
    while index < n and t.starts[index] - start < duration:
        if t.ends[index] > start:
            start = t.ends[index]
        index += 1
    _pipe_room(t, n + 1)
    if index < n:  # mostly the booking goes last
        memmove(t.starts + index + 1, t.starts + index, (n - index) * sizeof(double))
        memmove(t.ends + index + 1, t.ends + index, (n - index) * sizeof(double))
    t.starts[index] = start
    t.ends[index] = start + duration
    t.pipe_n = n + 1
    return start


cdef void _heapreplace(TierState* t, double item) noexcept nogil:
    """heapq.heapreplace on the channels' binary heap (CPython's siftup, then siftdown)."""
    cdef double* heap = t.channels
    cdef Py_ssize_t end = t.nch, pos = 0, child, right, parent
    child = 1
    while child < end:
        right = child + 1
        if right < end and not heap[child] < heap[right]:
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    while pos > 0:
        parent = (pos - 1) >> 1
        if item < heap[parent]:
            heap[pos] = heap[parent]
            pos = parent
            continue
        break
    heap[pos] = item


cdef void _raise_key(TierState* t, Py_ssize_t index, double value) noexcept nogil:
    """tier._raise_key."""
    cdef double* heap = t.channels
    cdef Py_ssize_t size = t.nch, child, right
    child = 2 * index + 1
    while child < size:
        right = child + 1
        if right < size and heap[right] < heap[child]:
            child = right
        if heap[child] >= value:
            break
        heap[index] = heap[child]
        index = child
        child = 2 * index + 1
    heap[index] = value


cdef double _take_clean(TierState* t, double now, double size) noexcept nogil:
    """Tier._take_clean_bytes."""
    cdef double start = now if now > t.pool_time else t.pool_time
    cdef double pool = t.pool + (start - t.pool_time) * t.gc_rate, reclaimed
    if pool > t.pool_depth:
        pool = t.pool_depth if t.pool < t.pool_depth else t.pool
    pool -= size
    if pool >= 0:
        t.pool = pool
        t.pool_time = start
    else:
        if t.ran_dry_at < 0:
            t.ran_dry_at = start
        reclaimed = t.gc_pass
        t.pool = reclaimed
        start = start + (reclaimed - pool) / t.gc_rate
        t.pool_time = start
        if reclaimed != 0.0:
            t.gc_until = start
    t.gc_wait_seconds += start - now
    return start


cdef double _read(TierState* t, double now, int64_t size, bint is_write,
                  double gc_factor) except? -1 nogil:
    """Tier.submit(now, size, is_write, gc_factor): when the operation completes."""
    cdef double ready = now + t.overhead, free_at, latency, position, low, transfer, command
    cdef double start, transfer_start, finish, busy, share, per_byte
    cdef int64_t index
    cdef Py_ssize_t die
    cdef double* table
    command = t.write_command if is_write else t.read_command
    if t.has_processor and command > 0.0:
        free_at = t.processor_free
        ready = (ready if ready > free_at else free_at) + command
        t.processor_free = ready
    if is_write:
        t.bytes_written += size
        per_byte = t.write_per_byte
        latency = t.write_latency
        if t.has_clean_pool:
            ready = _take_clean(t, ready, size * gc_factor)
    else:
        t.bytes_read += size
        per_byte = t.per_byte
        latency = t.latency
    if t.lognormal:
        table = t.write_log_table if is_write else t.log_table
        position = _uniform(&t.u) * t.points
        index = <int64_t>position
        low = table[index]
        latency *= low + (position - index) * (table[index + 1] - low)
    if t.stall_p > 0.0 and _uniform(&t.u) < t.stall_p:
        latency += -t.stall_time * log1p(-_uniform(&t.u))
    if is_write:
        if t.write_channel > 0.0:
            latency += size * t.write_channel
    elif t.read_channel > 0.0:
        latency += size * t.read_channel
    if t.exponential:
        # (test-only) exponential service with the same mean (tier_service_seconds), spent on the
        # channel: the stream's exponential, -mean log1p(-u)
        latency = -(latency + size * per_byte) * log1p(-_uniform(&t.u))
        transfer = 0.0
    else:
        transfer = size * per_byte
    if not t.addressed and (is_write or not t.has_share):
        start = t.channels[0] if t.channels[0] > ready else ready
        transfer_start = _book(t, now, start + latency, transfer) if transfer else start + latency
        finish = transfer_start + transfer
        _heapreplace(t, finish)
    else:
        die = <Py_ssize_t>(_uniform(&t.u) * t.nch)
        busy = t.channels[die]
        share = 1.0
        if not is_write and t.has_share:
            share = t.share
            if busy < t.gc_until:
                busy = t.gc_until
        if busy <= ready:
            start = ready
        elif share >= 1.0:
            start = busy
        else:
            start = ready + share * (busy - ready)
        transfer_start = _book(t, now, start + latency, transfer) if transfer else start + latency
        finish = transfer_start + transfer
        if finish > t.channels[die]:
            _raise_key(t, die, finish)
    if finish > t.foreground_until:
        t.foreground_until = finish
    t.operations += 1
    _meter_add(&t.m, start, finish, now)
    return finish
