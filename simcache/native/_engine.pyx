# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The native engine's vertical slices (issue 35, steps 2 to 4): generated reads served by the
hosts' flash tiers from their read caches, or on a miss by the backing array over the storage
network (then filling the cache), run in ``nogil`` code over C structs.

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
(:meth:`Engine.sync_in`).

Random draws: a tier's uniforms come from the very ``numpy.random.Generator`` its
``UniformStream`` holds, through numpy's ``bitgen_t`` (``next_double``, as ``Generator.random``
draws them), after the block the stream had drawn already. A VM's I/Os are read from its
``IOStream``'s drawn batch; a new batch is drawn here, from the stream's generator with the same
draws in the same order (``Engine._refill_native``: uniform or sequential offsets, one size mix,
no runs), or else by the stream itself (``IOStream._refill_ios``, a call that takes the GIL: once
per 2,048 I/Os of a VM). Its open-loop gaps likewise: a batch of exponential gaps is drawn by
the stream's generator (``Generator.exponential``, with the GIL: once per 2,048 arrivals), a
sine cycle's thinning uniforms through ``next_double``. Records go a field apart in the record
blocks' narrowest types (``Engine.use_blocks``), else as rows to the record buffer.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.math cimport INFINITY, floor, isfinite, log1p, sin, sqrt
from libc.stdint cimport UINT32_MAX, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memmove, memset

import numpy as np

from simcache.sim.kernel.signals import Signal

cdef extern from *:
    """
    #include <stdint.h>
    /* numpy's bitgen_t (numpy/random/bitgen.h), the layout numpy documents for its bit
       generators' C API: declared here so that the build needs no numpy headers. */
    typedef struct simcache_bitgen {
        void *state;
        uint64_t (*next_uint64)(void *st);
        uint32_t (*next_uint32)(void *st);
        double (*next_double)(void *st);
        uint64_t (*next_raw)(void *st);
    } simcache_bitgen_t;
    """
    ctypedef struct simcache_bitgen_t:
        void *state
        uint32_t (*next_uint32)(void *st) noexcept nogil
        double (*next_double)(void *st) noexcept nogil


cdef enum:
    FIELDS = 11  # RECORD_FIELDS
    PRIORITY_SHIFT = 52
    URGENT = 0
    NORMAL = 1
    # event kinds: entry.slot is a slot (closed loops, reads in flight) or a VM (open loops)
    BEGIN = 0  # a closed-loop slot's start (_ClosedSlot._begin)
    SERVED = 1  # a closed-loop slot's read completes (VM._hit_served, then _ClosedSlot._done)
    NEXT = 2  # a closed-loop slot's think time is over (_ClosedSlot._next)
    ISSUE = 3  # a closed-loop slot's duty cycle is on again (_ClosedSlot._issue)
    OPEN_BEGIN = 4  # an open loop's start (_OpenLoop._begin)
    ARRIVE = 5  # an open-loop arrival (_OpenLoop._arrive)
    OPEN_SERVED = 6  # an open-loop read completes (VM._hit_served)
    ARRAY_DONE = 7  # a miss's data is read by the array (ArrayRead._step's first phase)
    MISS_DONE = 8  # a miss's data is back over a shared link (the network's _deliver)
    LONE = 9  # a lone flow's delivery (FlowNetwork._lone_delivered): entry.slot the flow
    WAKE = 10  # the network's wake-up timer (FlowNetwork._wake): entry.aux its number
    STALE_KEPT = 64  # link._STALE_TIMERS_KEPT
    HEAP_SLACK = 64  # link._HEAP_SLACK
    FOLD_AT = 4096  # meter._FOLD_AT
    # Engine.run's outcomes
    REACHED = 0  # the next event is the Python one given (or none is queued before it)
    PAUSED = 1  # the event budget ran out
    # how a VM's stream draws its next batch: IOStream._refill_ios called, or its cases here
    PYTHON_REFILL = 0
    UNIFORM_REFILL = 1
    SEQUENTIAL_REFILL = 2
    # a VM's duty cycle (DutyClock.shape)
    DUTY_NONE = 0
    DUTY_ONOFF = 1
    DUTY_SINE = 2
    DUTY_PROFILE = 3
    BLOCK = 4096  # generators.BLOCK
    SECTOR = 512  # collect.SECTOR
    COMPONENTS = 5  # the latency components of a record

cdef double PI = 3.141592653589793  # math.pi


cdef struct Entry:
    double time
    int64_t key
    int32_t slot
    int32_t kind
    int64_t aux  # a lone delivery's flow seq, a wake-up's number


cdef struct Slot:
    # a closed-loop slot (the first ones), or an open-loop read in flight (taken and given back)
    int32_t vm
    int64_t number  # the read's number in its VM (-1: none in flight)
    double issued
    int64_t size
    int64_t offset  # a miss's
    double array_time  # a miss's: from its request's arrival at the array to the array's done


cdef struct Meter:
    # a BusyMeter's intervals and state
    double* intervals
    int64_t held, held_cap, limit
    double carried, swept_to
    # the meter's intervals the Python meter holds (sync_out appends the ones after them) unless
    # swept here since
    int64_t synced_held
    bint swept


cdef struct Uniforms:
    # a UniformStream: the rest of the block drawn in Python, then the generator
    simcache_bitgen_t* bitgen
    double* leftover
    Py_ssize_t left_next, left_end


cdef struct TierState:
    # Tier's figures and state (one per host)
    double overhead, read_command, processor_free, per_byte, latency, read_channel
    double stall_p, stall_time, share, gc_until, foreground_until
    bint has_processor, lognormal, addressed, has_share
    double* log_table
    double* write_log_table  # writes' own spread (write_service_cv), else a copy of log_table
    int32_t log_points
    double points
    double* channels
    int32_t nch
    double* starts
    double* ends
    Py_ssize_t pipe_n, pipe_cap
    int64_t operations, bytes_read
    int64_t hits  # its host cache's lookups answered since the last sync_out
    Meter m  # its busy meter
    Uniforms u  # its random stream
    # writes (a miss's fill): Tier.submit's write figures and its clean pool
    double write_command, write_per_byte, write_latency
    bint has_clean_pool
    double pool, pool_time, gc_rate, pool_depth, gc_pass, gc_wait_seconds
    int64_t bytes_written


cdef struct VmState:
    int64_t index
    int32_t tier
    int64_t issued
    # the stream's drawn batch (IOStream._writes, _io_sizes, _offsets) and where it is read
    unsigned char* writes
    int64_t* sizes
    int64_t* offsets
    int64_t io_next
    int64_t io_count
    int64_t reach  # bytes from the disk's start the host's cache holds for it
    bint batch_drawn  # a batch drawn here since the last sync_out (else the stream's is it)
    # IOStream._refill_ios in native code (refill != PYTHON_REFILL): its batch and laws
    int32_t refill
    simcache_bitgen_t* bitgen  # the stream's generator
    int64_t io_batch
    int64_t max_batch
    double read_fraction
    int64_t blocks
    int64_t cursor
    int32_t nsizes
    int64_t* size_table
    double* cdf
    # the driver: an open loop, or closed-loop slots with a think time
    bint open
    double think
    # the open loop's gaps (IOStream._gaps, _gap_count, _gap_next, _gap_batch) and their law
    double* gaps
    int64_t gap_next, gap_count, gap_batch
    double mean_gap
    bint uniform_arrivals, first_pending
    double first_fraction
    # the duty cycle (DutyClock)
    int32_t duty
    double on, off, phase, period, amplitude, peak_factor, interval
    int32_t levels
    double* factors  # a profile's rate over the mean, per interval
    double* cumulative  # its cumulative sums (levels + 1)


cdef inline bint _before(double time, int64_t key, Entry* other) noexcept nogil:
    return time < other.time or (time == other.time and key < other.key)


cdef inline uint64_t _lemire32(simcache_bitgen_t* bitgen, uint32_t rng) noexcept nogil:
    """numpy's buffered_bounded_lemire_uint32: a uniform integer in [0, rng] (rng < 2**32 - 1),
    as ``Generator.integers`` draws it for a range under 2**32."""
    cdef uint32_t rng_excl = rng + 1
    cdef uint64_t m = (<uint64_t>bitgen.next_uint32(bitgen.state)) * rng_excl
    cdef uint32_t leftover = <uint32_t>m
    cdef uint32_t threshold
    if leftover < rng_excl:
        threshold = (UINT32_MAX - rng) % rng_excl
        while leftover < threshold:
            m = (<uint64_t>bitgen.next_uint32(bitgen.state)) * rng_excl
            leftover = <uint32_t>m
    return m >> 32


# --- a tier (Tier.submit for a read) ------------------------------------------------------------

cdef inline double _uniform(Uniforms* t) noexcept nogil:
    cdef double value
    if t.left_next < t.left_end:
        value = t.leftover[t.left_next]
        t.left_next += 1
        return value
    return t.bitgen.next_double(t.bitgen.state)


cdef int _pipe_room(TierState* t, Py_ssize_t n) except -1 nogil:
    cdef Py_ssize_t cap = t.pipe_cap
    cdef double* starts
    cdef double* ends
    if n <= cap:
        return 0
    while cap < n:
        cap *= 2
    starts = <double*>realloc(t.starts, cap * sizeof(double))
    if starts == NULL:
        with gil:
            raise MemoryError()
    t.starts = starts
    ends = <double*>realloc(t.ends, cap * sizeof(double))
    if ends == NULL:
        with gil:
            raise MemoryError()
    t.ends = ends
    t.pipe_cap = cap
    return 0


cdef int _held_room(Meter* t, int64_t n) except -1 nogil:
    cdef int64_t cap = t.held_cap
    cdef double* intervals
    if n <= cap:
        return 0
    while cap < n:
        cap *= 2
    intervals = <double*>realloc(t.intervals, 2 * cap * sizeof(double))
    if intervals == NULL:
        with gil:
            raise MemoryError()
    t.intervals = intervals
    t.held_cap = cap
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
    if done:
        memmove(t.starts, t.starts + done, (n - done) * sizeof(double))
        memmove(t.ends, t.ends + done, (n - done) * sizeof(double))
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


cdef double _sweep(Meter* t, double window_start, double window_end) noexcept nogil:
    """BusyMeter._sweep, in place."""
    cdef double busy = 0.0, start, finish, low, high
    cdef int64_t at, kept = 0
    for at in range(t.held):
        start = t.intervals[2 * at]
        finish = t.intervals[2 * at + 1]
        if window_start <= start and finish <= window_end:
            busy += finish - start
            continue
        low = start if start > window_start else window_start
        high = finish if finish < window_end else window_end
        if high > low:
            busy += high - low
        if finish > window_end:
            t.intervals[2 * kept] = start
            t.intervals[2 * kept + 1] = finish
            kept += 1
    t.held = kept
    t.swept = True
    return busy


cdef int _meter_add(Meter* t, double start, double finish, double now) except -1 nogil:
    """BusyMeter.add."""
    _held_room(t, t.held + 1)
    t.intervals[2 * t.held] = start
    t.intervals[2 * t.held + 1] = finish
    t.held += 1
    if t.held >= t.limit:
        t.carried += _sweep(t, t.swept_to, now)
        t.swept_to = now
        t.limit = FOLD_AT if FOLD_AT > 2 * t.held else 2 * t.held
    return 0


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
        reclaimed = t.gc_pass
        t.pool = reclaimed
        start = start + (reclaimed - pool) / t.gc_rate
        t.pool_time = start
        if reclaimed != 0.0:
            t.gc_until = start
    t.gc_wait_seconds += start - now
    return start


cdef double _read(TierState* t, double now, int64_t size, bint is_write=False) except? -1 nogil:
    """Tier.submit(now, size, is_write) (a write's gc_factor 1): when the operation completes."""
    cdef double ready = now + t.overhead, free_at, latency, position, low, transfer, command
    cdef double start, transfer_start, finish, busy, share, per_byte
    cdef double* table
    cdef int64_t index
    cdef Py_ssize_t die
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
            ready = _take_clean(t, ready, size * 1.0)
    else:
        t.bytes_read += size
        per_byte = t.per_byte
        latency = t.latency
    if t.lognormal:
        position = _uniform(&t.u) * t.points
        index = <int64_t>position
        table = t.write_log_table if is_write else t.log_table
        low = table[index]
        latency *= low + (position - index) * (table[index + 1] - low)
    if t.stall_p > 0.0 and _uniform(&t.u) < t.stall_p:
        latency += -t.stall_time * log1p(-_uniform(&t.u))
    if not is_write and t.read_channel > 0.0:
        latency += size * t.read_channel
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


# --- a VM's duty cycle (DutyClock) ---------------------------------------------------------------

cdef inline double _on_start(VmState* vm, double now, double* end) noexcept nogil:
    """DutyClock.on_window(now): its start returned, its end in ``end``."""
    cdef double on, phase, cycle, index, start, finish
    if vm.duty != DUTY_ONOFF:
        end[0] = INFINITY
        return now
    on = vm.on
    phase = vm.phase
    cycle = on + vm.off
    index = floor((now + phase) / cycle)
    while True:
        start = index * cycle - phase
        finish = start + on
        if finish - now > 1e-9 * on:
            end[0] = finish
            return now if now > start else start  # max(start, now)
        index += 1.0


cdef inline double _cumulative_at(VmState* vm, int64_t index) noexcept nogil:
    """DutyClock._cumulative[index], a negative index from the end as Python indexes."""
    return vm.cumulative[index if index >= 0 else index + vm.levels + 1]


cdef inline double _factor_at(VmState* vm, int64_t index) noexcept nogil:
    """DutyClock._factors[index], a negative index from the end as Python indexes."""
    return vm.factors[index if index >= 0 else index + vm.levels]


cdef double _advance(VmState* vm, double now, double work) noexcept nogil:
    """DutyClock.advance: when a profile cycle has done ``work`` seconds' worth of arrivals at the
    mean rate since ``now`` (the same float operations, in the same order)."""
    cdef double interval = vm.interval, total = vm.cumulative[vm.levels]
    cdef int64_t count = vm.levels, index, lo, hi, middle
    cdef double position, cycles, within, done, target, rest, shifted
    position = (now + vm.phase) / interval
    cycles = floor(position / <double>count)
    within = position - cycles * count
    index = <int64_t>within  # int(within): toward zero
    if index > count - 1:
        index = count - 1
    done = cycles * total + vm.cumulative[index] + vm.factors[index] * (within - <double>index)
    target = done + work / interval
    cycles = floor(target / total)
    rest = target - cycles * total
    lo = 0  # bisect_right(cumulative, rest)
    hi = count + 1
    while lo < hi:
        middle = (lo + hi) >> 1
        if rest < vm.cumulative[middle]:
            hi = middle
        else:
            lo = middle + 1
    index = lo - 1
    if index > count - 1:
        index = count - 1
    while _factor_at(vm, index) == 0.0:
        index = (index + 1) % count if index >= 0 else (index + 1 + count) % count
        if index == 0:
            cycles += 1.0
        rest = _cumulative_at(vm, index)
    position = (
        (cycles * count + <double>index)
        + (rest - _cumulative_at(vm, index)) / _factor_at(vm, index)
    )
    shifted = position * interval - vm.phase
    return shifted if shifted > now else now  # max(now, ...)


# --- a host's read cache (ReadCache) -------------------------------------------------------------

cdef enum:
    VM_SHIFT = 40
    DEAD = -1
    MIN_SLOTS = 16
    LOG_SLACK = 64
    FOLD = 29

cdef int64_t LINE_MASK = (<int64_t>1 << VM_SHIFT) - 1
cdef int64_t VM_MIX = 0x9E3779B9
cdef int64_t VM_OFFSET_MASK = (<int64_t>1 << 39) - 1
cdef int64_t LINE_MIX = 0x13C6EF


cdef struct CacheState:
    # ReadCache: its index (slots), recency log and counters; ``full``: it holds every disk of
    # its VMs (every read hits: only the hits are counted, the recency is not kept)
    bint full
    int64_t line, capacity
    int32_t* slots
    int64_t mask
    int64_t* log
    int64_t log_n, log_cap
    int64_t head, dead, count
    int64_t hits, misses, inserted, evicted
    bint changed  # its lines changed since sync_in (sync_out writes them back)


cdef inline int64_t _home(int64_t key, int64_t mask) noexcept nogil:
    """_slot(_spread(key), mask)."""
    cdef int64_t spread = (
        (key & LINE_MASK) + ((key >> VM_SHIFT) * VM_MIX & VM_OFFSET_MASK)
    ) * LINE_MIX
    return (spread ^ (spread >> FOLD)) & mask


cdef int _log_append(CacheState* c, int64_t key) except -1 nogil:
    cdef int64_t cap
    cdef int64_t* log
    if c.log_n == c.log_cap:
        cap = 2 * c.log_cap if c.log_cap else 64
        log = <int64_t*>realloc(c.log, cap * sizeof(int64_t))
        if log == NULL:
            with gil:
                raise MemoryError()
        c.log = log
        c.log_cap = cap
    c.log[c.log_n] = key
    c.log_n += 1
    return 0


cdef void _place_lines(CacheState* c) noexcept nogil:
    cdef int64_t position, key, slot
    for position in range(c.head, c.log_n):
        key = c.log[position]
        if key != DEAD:
            slot = _home(key, c.mask)
            while c.slots[slot] != 0:
                slot = (slot + 1) & c.mask
            c.slots[slot] = <int32_t>position


cdef int _grow(CacheState* c) except -1 nogil:
    cdef int64_t size = 2 * (c.mask + 1)
    cdef int32_t* slots = <int32_t*>calloc(size, sizeof(int32_t))
    if slots == NULL:
        with gil:
            raise MemoryError()
    free(c.slots)
    c.slots = slots
    c.mask = size - 1
    _place_lines(c)
    return 0


cdef void _compact_log(CacheState* c) noexcept nogil:
    cdef int64_t write = 1, read, key
    for read in range(c.head, c.log_n):
        key = c.log[read]
        if key != DEAD:
            c.log[write] = key
            write += 1
    c.log_n = write
    c.head = 1
    c.dead = 0
    memset(c.slots, 0, (c.mask + 1) * sizeof(int32_t))
    _place_lines(c)


cdef void _remove(CacheState* c, int64_t slot) noexcept nogil:
    cdef int64_t mask = c.mask, hole = slot, position, key
    slot = (slot + 1) & mask
    position = c.slots[slot]
    while position != 0:
        key = c.log[position]
        if ((slot - _home(key, mask)) & mask) >= ((slot - hole) & mask):
            c.slots[hole] = <int32_t>position
            hole = slot
        slot = (slot + 1) & mask
        position = c.slots[slot]
    c.slots[hole] = 0
    c.count -= 1


cdef void _evict(CacheState* c, int64_t lines) noexcept nogil:
    cdef int64_t position = c.head, key, slot, k
    for k in range(lines):
        key = c.log[position]
        while key == DEAD:
            c.dead -= 1
            position += 1
            key = c.log[position]
        slot = _home(key, c.mask)
        while c.slots[slot] != position:
            slot = (slot + 1) & c.mask
        _remove(c, slot)
        position += 1
    c.head = position


cdef int _lookup(CacheState* c, int64_t vm, int64_t offset, int64_t size) except -1 nogil:
    """ReadCache.lookup: 1 if every line of the I/O is cached (their recency refreshed), else 0."""
    cdef int64_t first = offset // c.line
    cdef int64_t lines = (offset + size - 1) // c.line - first + 1
    cdef int64_t key = (vm << VM_SHIFT) + first, slot, position, k, mask = c.mask
    cdef int64_t spread = (first + (vm * VM_MIX & VM_OFFSET_MASK)) * LINE_MIX
    cdef int64_t found_one
    cdef int64_t* found
    if lines == 1:
        slot = (spread ^ (spread >> FOLD)) & mask
        position = c.slots[slot]
        while position and c.log[position] != key:
            slot = (slot + 1) & mask
            position = c.slots[slot]
        if not position:
            c.misses += 1
            return 0
        c.log[position] = DEAD
        c.slots[slot] = <int32_t>c.log_n
        _log_append(c, key)
    else:
        found = <int64_t*>malloc(lines * sizeof(int64_t))
        if found == NULL:
            with gil:
                raise MemoryError()
        for k in range(lines):
            slot = (spread ^ (spread >> FOLD)) & mask
            position = c.slots[slot]
            while position and c.log[position] != key:
                slot = (slot + 1) & mask
                position = c.slots[slot]
            if not position:
                free(found)
                c.misses += 1
                return 0
            found[k] = slot
            key += 1
            spread += LINE_MIX
        for k in range(lines):
            position = c.slots[found[k]]
            c.slots[found[k]] = <int32_t>c.log_n
            _log_append(c, c.log[position])
            c.log[position] = DEAD
        free(found)
    c.dead += lines
    c.hits += 1
    c.changed = True
    if c.head + c.dead > c.count + LOG_SLACK:
        _compact_log(c)
    return 1


cdef int _insert(CacheState* c, int64_t vm, int64_t offset, int64_t size) except -1 nogil:
    """ReadCache.insert."""
    cdef int64_t first = offset // c.line
    cdef int64_t lines = (offset + size - 1) // c.line - first + 1
    cdef int64_t key, slot, position, k, mask, spread, refreshed = 0, inserted
    while c.count + lines >= c.mask + 1:
        _grow(c)
    key = (vm << VM_SHIFT) + first
    mask = c.mask
    spread = (first + (vm * VM_MIX & VM_OFFSET_MASK)) * LINE_MIX
    for k in range(lines):
        slot = (spread ^ (spread >> FOLD)) & mask
        position = c.slots[slot]
        while position and c.log[position] != key:
            slot = (slot + 1) & mask
            position = c.slots[slot]
        if position:
            c.log[position] = DEAD
            refreshed += 1
        c.slots[slot] = <int32_t>c.log_n
        _log_append(c, key)
        key += 1
        spread += LINE_MIX
    c.dead += refreshed
    inserted = lines - refreshed
    c.changed = True
    if inserted:
        c.count += inserted
        c.inserted += inserted
        if c.count > c.capacity:
            c.evicted += c.count - c.capacity
            _evict(c, c.count - c.capacity)
        if 2 * c.count > c.mask + 1:
            _grow(c)
    if c.head + c.dead > c.count + LOG_SLACK:
        _compact_log(c)
    return 0


# --- the backing array's reads (Array._dispatch for one read, Spindles.operate) -----------------

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


# --- the flow network (FlowNetwork) for the misses' transfers back ------------------------------

cdef struct PortState:
    double capacity, weight_sum, share, delivered, carried, window
    int64_t packets
    int32_t* active  # the flows on it, in order
    int32_t nactive, active_cap


cdef struct FlowState:
    double size, remaining, stamp, rate, finish, latency, cap
    int64_t seq, delivery  # delivery: the seq its lone delivery was scheduled with (-1: none)
    bint lone, in_flight
    int32_t ports[2]
    int32_t slot  # the read it carries



cdef class Engine:
    """One run's native state (see the module docstring); built by ``native_run.prepare``."""

    # the event queue: a 4-ary min-heap by (time, key)
    cdef Entry* heap
    cdef Py_ssize_t heap_size, heap_cap
    cdef public int64_t eid
    cdef public double now
    cdef public int64_t events
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
    cdef list _ports
    cdef PortState* ports
    cdef int32_t port_count
    cdef int32_t* host_ports  # per host: its transfer back's ports (array_tx, storage_rx)
    cdef double* host_ack  # per host: storage_tx.acknowledgement
    cdef double* host_latency  # per host: storage_tx.latency
    cdef list _framing  # per host: storage_tx.framing
    cdef int64_t* fr_size  # framing looked up: (host, size) -> wire bytes, packets
    cdef int32_t* fr_host
    cdef double* fr_wire
    cdef int64_t* fr_packets
    cdef int32_t fr_n, fr_cap
    cdef FlowState* flows
    cdef int32_t flow_cap, flows_used, free_flow_count
    cdef int32_t* free_flows
    cdef int32_t* in_flight  # flows on their ports, in start order
    cdef int32_t n_in_flight
    cdef int32_t* scratch  # neighbours, finished flows
    cdef int32_t* scratch2
    cdef int64_t* epochs
    cdef int64_t epoch
    cdef Entry* marks  # the shared flows' finish marks: a binary heap by (finish, seq)
    cdef Py_ssize_t marks_n, marks_cap
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
    cdef bint narrow
    cdef unsigned char* n_vm
    cdef unsigned char* n_flags
    cdef uint16_t* n_sectors
    cdef double* n_issued
    cdef double* n_completed
    cdef float* n_components

    def __cinit__(self):
        self.heap_cap = 256
        self.heap = <Entry*>malloc(self.heap_cap * sizeof(Entry))
        if self.heap == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        free(self.heap)
        if self.tiers != NULL:
            for i in range(self.tier_count):
                free(self.tiers[i].log_table)
                free(self.tiers[i].write_log_table)
                free(self.tiers[i].channels)
                free(self.tiers[i].starts)
                free(self.tiers[i].ends)
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
        if self.ports != NULL:
            for i in range(self.port_count):
                free(self.ports[i].active)
        free(self.ports)
        free(self.host_ports)
        free(self.host_ack)
        free(self.host_latency)
        free(self.fr_size)
        free(self.fr_host)
        free(self.fr_wire)
        free(self.fr_packets)
        free(self.flows)
        free(self.free_flows)
        free(self.in_flight)
        free(self.scratch)
        free(self.scratch2)
        free(self.epochs)
        free(self.marks)

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
    ):
        """``tiers``, ``caches``: each host's ``Tier`` and read ``Cache``; ``vms``, ``streams``,
        ``vm_tiers``, ``reach``: each VM (build order), its ``IOStream``, its host's position in
        ``tiers`` and the bytes of its disk its host's cache holds; ``slot_vms``: the position in
        ``vms`` of each closed-loop slot, in the order the Python engine would start them (a VM's
        slots together, the VMs in order); ``record_buffer``: the run's ``RecordBuffer``;
        ``path_hit``: a read hit's path code (``collect.PATH_HIT``); ``refills``: per VM, how its
        stream draws a batch (0: by ``IOStream._refill_ios``, 1: uniform offsets, 2: sequential
        ones, in native code); ``max_batch``: the most I/Os (and gaps) a stream draws at once
        (``generators._BATCH``)."""
        cdef Py_ssize_t i
        self._tiers = tiers
        self._caches = caches
        self._tier_streams = [tier._stream for tier in tiers]
        self._meters = [None] * len(tiers)
        self.tier_count = len(tiers)
        self.tiers = <TierState*>calloc(max(1, self.tier_count), sizeof(TierState))
        if self.tiers == NULL:
            raise MemoryError()
        for i in range(self.tier_count):
            self._setup_tier(i)
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
            self._setup_vm(i, vms[i].index, vm_tiers[i], reach[i], refills[i], max_batch)
        self.slot_count = len(slot_vms)
        self.slot_cap = max(16, self.slot_count)
        self.slots = <Slot*>malloc(self.slot_cap * sizeof(Slot))
        self.free_slots = <int32_t*>malloc(self.slot_cap * sizeof(int32_t))
        if self.slots == NULL or self.free_slots == NULL:
            raise MemoryError()
        for i in range(self.slot_count):
            self.slots[i].vm = slot_vms[i]
            self.slots[i].number = -1
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

    def _setup_tier(self, Py_ssize_t i) -> None:
        cdef TierState* t = &self.tiers[i]
        cdef Py_ssize_t k
        tier = self._tiers[i]
        if tier._exponential:
            raise ValueError("the native engine does not run exponential tier service")
        t.overhead = tier._overhead
        t.read_command = tier._read_command
        t.has_processor = tier._has_processor
        t.per_byte = tier._read_seconds_per_byte
        t.latency = tier._read_latency
        t.read_channel = tier._read_channel
        t.lognormal = tier._lognormal
        table = list(tier._log_table)
        t.log_points = len(table)
        t.points = t.log_points - 1  # LOGNORMAL_POINTS
        t.log_table = <double*>malloc(max(1, t.log_points) * sizeof(double))
        write_table = list(tier._write_log_table)
        t.write_log_table = <double*>malloc(max(1, t.log_points) * sizeof(double))
        t.nch = len(tier._channel_free)
        t.channels = <double*>malloc(max(1, t.nch) * sizeof(double))
        t.pipe_cap = 16
        t.starts = <double*>malloc(t.pipe_cap * sizeof(double))
        t.ends = <double*>malloc(t.pipe_cap * sizeof(double))
        t.m.held_cap = FOLD_AT
        t.m.intervals = <double*>malloc(2 * t.m.held_cap * sizeof(double))
        if (t.log_table == NULL or t.write_log_table == NULL or t.channels == NULL or t.starts == NULL or t.ends == NULL
                or t.m.intervals == NULL):
            raise MemoryError()
        for k in range(t.log_points):
            t.log_table[k] = table[k]
            t.write_log_table[k] = write_table[k]
        t.stall_p = tier._stall_probability
        t.stall_time = tier._stall_time
        t.has_share = tier._read_share is not None
        t.share = tier._read_share if t.has_share else 1.0
        t.addressed = tier._addressed
        capsule = self._tier_streams[i].generator.bit_generator.capsule
        t.u.bitgen = <simcache_bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")

    def begin(self, clock) -> None:
        """Queue each VM's start at the clock's time, URGENT, with the clock's next event ids,
        where ``start_workload`` would schedule them: an open loop's start, or its closed-loop
        slots' starts."""
        cdef Py_ssize_t i, s = 0
        cdef double now = clock.now
        self.eid = clock.eid
        for i in range(self.vm_count):
            if self.vms[i].open:
                self._push(now, (<int64_t>URGENT << PRIORITY_SHIFT) + self.eid, i, OPEN_BEGIN)
                self.eid += 1
                continue
            while s < self.slot_count and self.slots[s].vm == i:
                self._push(now, (<int64_t>URGENT << PRIORITY_SHIFT) + self.eid, s, BEGIN)
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

    # --- read misses: the caches, the array, the network ----------------------------------------

    def use_misses(self, list full, array, network, list host_ports, double path_miss) -> None:
        """Run read misses: ``full``, per host, whether its cache holds every disk of its VMs
        (then only its hits are counted); ``array``: the model's ``Array``; ``network``: its
        ``FlowNetwork``; ``host_ports``: per host, its ``(storage_tx, array_tx, storage_rx)``
        ports; ``path_miss``: a read miss's path code (``collect.PATH_MISS``)."""
        cdef Py_ssize_t i, k, n
        cdef ArrayState* a = &self.array
        from simcache.sim.components.link import _Flow

        self._flow_class = _Flow  # (its event: a Signal nobody waits for)
        self.misses = True
        self.path_miss = path_miss
        self.caches = <CacheState*>calloc(max(1, self.tier_count), sizeof(CacheState))
        if self.caches == NULL:
            raise MemoryError()
        for i in range(self.tier_count):
            cache = self._caches[i]
            self.caches[i].full = full[i]
            self.caches[i].line = cache.line
            self.caches[i].capacity = cache.capacity_lines
        self._array = array
        spindles = array.spindles
        layout = array._layout
        a.stripe = array._stripe
        a.spindles = array._spindle_count
        a.width = layout._width
        a.copies = layout._copies
        a.parity = layout._parity
        a.row_bytes = array._row_bytes
        a.logical_bytes = array._logical_bytes
        starts = list(array._vm_start)
        a.vm_start = <int64_t*>malloc(max(1, len(starts)) * sizeof(int64_t))
        a.head = <int64_t*>malloc(a.spindles * sizeof(int64_t))
        a.spindle_free = <double*>malloc(a.spindles * sizeof(double))
        a.flash = spindles._flash
        a.nunits = spindles._parallelism if a.flash else 0
        a.units = <double*>malloc(max(1, a.spindles * a.nunits) * sizeof(double))
        a.m.held_cap = FOLD_AT
        a.m.intervals = <double*>malloc(2 * a.m.held_cap * sizeof(double))
        if (a.vm_start == NULL or a.head == NULL or a.spindle_free == NULL or a.units == NULL
                or a.m.intervals == NULL):
            raise MemoryError()
        for k in range(len(starts)):
            a.vm_start[k] = starts[k]
        a.revolution = spindles._revolution
        a.read_time = spindles._read_time
        a.parallelism = spindles._parallelism
        a.stroke = spindles._stroke
        a.seconds_per_byte = spindles._seconds_per_byte
        a.outer_rate = spindles._outer_rate
        a.shrink = spindles._zone_shrink
        a.overhead = spindles._overhead
        seek = spindles._seek
        a.settle, a.track, a.a, a.b = seek.settle, seek.track, seek.a, seek.b
        a.knee, a.c, a.e = seek.knee, seek.c, seek.e
        capsule = array._stream.generator.bit_generator.capsule
        a.u.bitgen = <simcache_bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")
        self._meters.append(None)  # the array's, after the tiers'
        # the network: the ports the transfers back cross
        self._network = network
        self._ports = []
        self._framing = []
        n = len(host_ports)
        self.host_ports = <int32_t*>malloc(2 * max(1, n) * sizeof(int32_t))
        self.host_ack = <double*>malloc(max(1, n) * sizeof(double))
        self.host_latency = <double*>malloc(max(1, n) * sizeof(double))
        if self.host_ports == NULL or self.host_ack == NULL or self.host_latency == NULL:
            raise MemoryError()
        for i in range(n):
            storage_tx, array_tx, storage_rx = host_ports[i]
            self.host_ack[i] = storage_tx.acknowledgement
            self.host_latency[i] = storage_tx.latency
            self._framing.append(storage_tx.framing)
            for k, port in enumerate((array_tx, storage_rx)):
                for j, known in enumerate(self._ports):
                    if known is port:
                        self.host_ports[2 * i + k] = j
                        break
                else:
                    self.host_ports[2 * i + k] = len(self._ports)
                    self._ports.append(port)
        self.port_count = len(self._ports)
        self.ports = <PortState*>calloc(max(1, self.port_count), sizeof(PortState))
        if self.ports == NULL:
            raise MemoryError()
        for i in range(self.port_count):
            self.ports[i].active_cap = 16
            self.ports[i].active = <int32_t*>malloc(16 * sizeof(int32_t))
            if self.ports[i].active == NULL:
                raise MemoryError()
        self.flow_cap = 64
        self.flows = <FlowState*>malloc(self.flow_cap * sizeof(FlowState))
        self.free_flows = <int32_t*>malloc(self.flow_cap * sizeof(int32_t))
        self.in_flight = <int32_t*>malloc(self.flow_cap * sizeof(int32_t))
        self.scratch = <int32_t*>malloc(self.flow_cap * sizeof(int32_t))
        self.scratch2 = <int32_t*>malloc(self.flow_cap * sizeof(int32_t))
        self.epochs = <int64_t*>calloc(self.flow_cap, sizeof(int64_t))
        self.marks_cap = 64
        self.marks = <Entry*>malloc(self.marks_cap * sizeof(Entry))
        self.fr_cap = 256
        self.fr_size = <int64_t*>malloc(self.fr_cap * sizeof(int64_t))
        self.fr_host = <int32_t*>malloc(self.fr_cap * sizeof(int32_t))
        self.fr_wire = <double*>malloc(self.fr_cap * sizeof(double))
        self.fr_packets = <int64_t*>malloc(self.fr_cap * sizeof(int64_t))
        if (self.flows == NULL or self.free_flows == NULL or self.in_flight == NULL
                or self.scratch == NULL or self.scratch2 == NULL or self.epochs == NULL
                or self.marks == NULL or self.fr_size == NULL or self.fr_host == NULL
                or self.fr_wire == NULL or self.fr_packets == NULL):
            raise MemoryError()
        self.timer = -1
        self.wake_at = INFINITY

    cdef int _misses_in(self) except -1:
        """Read the caches (those not full), the array and the network's ports (sync_in)."""
        cdef Py_ssize_t i, k, n
        cdef CacheState* c
        cdef ArrayState* a = &self.array
        cdef PortState* port
        for i in range(self.tier_count):
            c = &self.caches[i]
            if c.full:
                continue
            cache = self._caches[i]
            c.hits = cache.hits
            c.misses = cache.misses
            c.inserted = cache.inserted_lines
            c.evicted = cache.evicted_lines
            log = list(cache._log)
            slots = list(cache._slots)
            free(c.log)
            free(c.slots)
            c.log_cap = max(64, len(log))
            c.log = <int64_t*>malloc(c.log_cap * sizeof(int64_t))
            c.slots = <int32_t*>malloc(max(1, len(slots)) * sizeof(int32_t))
            if c.log == NULL or c.slots == NULL:
                raise MemoryError()
            for k in range(len(log)):
                c.log[k] = log[k]
            for k in range(len(slots)):
                c.slots[k] = slots[k]
            c.log_n = len(log)
            c.mask = len(slots) - 1
            c.head = cache._head
            c.dead = cache._dead
            c.count = cache._count
            c.changed = False
        array = self._array
        spindles = array.spindles
        head = spindles.head
        free_at = spindles._spindle_free
        for k in range(a.spindles):
            a.head[k] = head[k]
            a.spindle_free[k] = free_at[k]
        if a.flash:
            for k in range(a.spindles):
                units = spindles._units[k]
                for n in range(a.nunits):
                    a.units[k * a.nunits + n] = units[n]
        a.media_bytes = spindles.media_bytes
        a.bytes_read = array.bytes_read
        a.front_end_ios = array.front_end_ios
        a.back_end_ios = array.back_end_ios
        self._meter_in(&a.m, spindles.busy, self.tier_count)
        self._stream_in(&a.u, array._stream)
        for i in range(self.port_count):
            port = &self.ports[i]
            p = self._ports[i]
            port.capacity = p.capacity
            port.window = p.window
            port.delivered = p.delivered_bytes
            port.carried = p.carried_bytes
            port.packets = p.packets
            if port.nactive == 0:
                port.weight_sum = 0.0
                port.share = INFINITY
        self._network._in_flight.clear()  # the engine's flows (sync_out showed them)
        return 0

    cdef int _misses_out(self) except -1:
        """Write the caches, the array and the network's ports back (sync_out); the flows in
        flight are shown to the network as ``_Flow`` objects (its ``sync`` and ``in_flight``
        read them)."""
        cdef Py_ssize_t i, k, n
        cdef CacheState* c
        cdef ArrayState* a = &self.array
        cdef PortState* port
        cdef FlowState* f
        from librt.vecs import vec
        from mypy_extensions import i32, i64

        for i in range(self.tier_count):
            c = &self.caches[i]
            if c.full:
                continue
            cache = self._caches[i]
            cache.hits = c.hits
            cache.misses = c.misses
            cache.inserted_lines = c.inserted
            cache.evicted_lines = c.evicted
            if c.changed:
                cache._log = vec[i64]([c.log[k] for k in range(c.log_n)])
                cache._slots = vec[i32]([c.slots[k] for k in range(c.mask + 1)])
                cache._mask = c.mask
                cache._head = c.head
                cache._dead = c.dead
                cache._count = c.count
                c.changed = False
        array = self._array
        spindles = array.spindles
        spindles.head[:] = [a.head[k] for k in range(a.spindles)]
        spindles._spindle_free[:] = [a.spindle_free[k] for k in range(a.spindles)]
        if a.flash:
            for k in range(a.spindles):
                spindles._units[k][:] = [a.units[k * a.nunits + n] for n in range(a.nunits)]
        spindles.media_bytes = a.media_bytes
        array.bytes_read = a.bytes_read
        array.front_end_ios = a.front_end_ios
        array.back_end_ios = a.back_end_ios
        self._meter_out(&a.m, spindles.busy, self.tier_count)
        self._stream_out(&a.u, array._stream)
        for i in range(self.port_count):
            port = &self.ports[i]
            p = self._ports[i]
            p.delivered_bytes = port.delivered
            p.carried_bytes = port.carried
            p.packets = port.packets
        flows = self._network._in_flight
        flows.clear()
        for k in range(self.n_in_flight):
            f = &self.flows[self.in_flight[k]]
            flow = self._flow_class(
                f.size, (self._ports[f.ports[0]], self._ports[f.ports[1]]), 1.0, f.latency,
                Signal(None), f.stamp,
            )
            flow.remaining = f.remaining
            flow.rate = f.rate
            flow.finish = f.finish
            flows[flow] = None
        return 0

    # --- the state the Python objects hold, in and out ------------------------------------------

    def sync_in(self) -> None:
        """Read the state the Python objects hold (at the start of the run, and after each Python
        event); the state is the engine's until :meth:`sync_out`."""
        cdef Py_ssize_t i
        for i in range(self.tier_count):
            self._tier_in(i)
        for i in range(self.vm_count):
            self.vms[i].issued = self._vms[i].issued
            self._read_batch(i)
            self._read_gaps(i)
        if self.misses:
            self._misses_in()
        # as RecordBuffer.add: hand the records on once the buffer and these hold `limit`
        self.record_room = max(1, self.record_limit - self.buffer.count)

    def _tier_in(self, Py_ssize_t i) -> None:
        cdef TierState* t = &self.tiers[i]
        cdef Py_ssize_t k, n, start
        tier = self._tiers[i]
        channels = tier._channel_free
        for k in range(t.nch):
            t.channels[k] = channels[k]
        pipe = tier._pipe
        starts, ends = pipe._starts, pipe._ends
        n = len(starts)
        _pipe_room(t, n)
        for k in range(n):
            t.starts[k] = starts[k]
            t.ends[k] = ends[k]
        t.pipe_n = n
        t.processor_free = tier._processor_free
        t.gc_until = tier._gc_until
        t.foreground_until = tier.foreground_until
        t.operations = tier.operations
        t.bytes_read = tier.bytes_read
        t.bytes_written = tier.bytes_written
        t.write_command = tier._write_command
        t.write_per_byte = tier._write_seconds_per_byte
        t.write_latency = tier._write_latency
        t.has_clean_pool = tier._has_clean_pool
        t.pool = tier._pool
        t.pool_time = tier._pool_time
        t.gc_rate = tier._gc_rate
        t.pool_depth = tier._pool_depth
        t.gc_pass = tier._gc_pass
        t.gc_wait_seconds = tier.gc_wait_seconds
        self._meter_in(&t.m, tier.busy, i)
        self._stream_in(&t.u, self._tier_streams[i])
        t.hits = 0

    def sync_out(self) -> None:
        """Write the state to the Python objects (before a Python event, and at the end)."""
        cdef Py_ssize_t i, s
        for i in range(self.tier_count):
            self._tier_out(i)
        for i in range(self.vm_count):
            self._vms[i].issued = self.vms[i].issued
            self._write_batch(i)
            self._write_gaps(i)
        in_flight = {}
        for s in range(self.slots_used):
            if self.slots[s].number >= 0:
                in_flight.setdefault(self.slots[s].vm, []).append(
                    (self.slots[s].number, self.slots[s].issued)
                )
        for i in range(self.vm_count):
            reads = self._vms[i].reads_in_flight
            reads.clear()
            for number, issued in sorted(in_flight.get(i, ())):
                reads[number] = issued
        if self.misses:
            self._misses_out()
        self._records_out(False)

    def _tier_out(self, Py_ssize_t i) -> None:
        cdef TierState* t = &self.tiers[i]
        cdef Py_ssize_t k
        tier = self._tiers[i]
        tier._channel_free[:] = [t.channels[k] for k in range(t.nch)]
        pipe = tier._pipe
        pipe._starts[:] = [t.starts[k] for k in range(t.pipe_n)]
        pipe._ends[:] = [t.ends[k] for k in range(t.pipe_n)]
        tier._processor_free = t.processor_free
        tier._gc_until = t.gc_until
        tier.foreground_until = t.foreground_until
        tier.operations = t.operations
        tier.bytes_read = t.bytes_read
        tier.bytes_written = t.bytes_written
        tier._pool = t.pool
        tier._pool_time = t.pool_time
        tier.gc_wait_seconds = t.gc_wait_seconds
        self._meter_out(&t.m, tier.busy, i)
        self._stream_out(&t.u, self._tier_streams[i])
        self._caches[i].hits += t.hits
        t.hits = 0

    cdef int _meter_in(self, Meter* t, meter, Py_ssize_t i) except -1:
        """Read a ``BusyMeter`` (``self._meters[i]``: its intervals writer as last seen)."""
        if meter._intervals is not self._meters[i] or meter._held != t.synced_held:
            held = meter._intervals.getvalue()
            t.held = meter._held
            if len(held) != 16 * t.held:
                raise RuntimeError("a busy meter holds intervals it does not count")
            _held_room(t, t.held + 1)
            memcpy(t.intervals, <char*>held, 16 * t.held)
            self._meters[i] = meter._intervals
            t.synced_held = t.held
        t.swept = False
        t.carried = meter._carried
        t.swept_to = meter._swept_to
        t.limit = meter._limit
        return 0

    cdef int _meter_out(self, Meter* t, meter, Py_ssize_t i) except -1:
        """Write a ``BusyMeter`` back: the intervals added since appended to its writer."""
        if (meter._intervals is self._meters[i] and not t.swept
                and meter._held == t.synced_held and t.held >= t.synced_held):
            if t.held > t.synced_held:  # the intervals added since: appended
                meter._intervals.write(PyBytes_FromStringAndSize(
                    <char*>(t.intervals + 2 * t.synced_held), 16 * (t.held - t.synced_held)
                ))
        else:
            intervals = type(meter._intervals)()
            intervals.write(PyBytes_FromStringAndSize(<char*>t.intervals, 16 * t.held))
            meter._intervals = intervals
            self._meters[i] = intervals
        t.synced_held = t.held
        t.swept = False
        meter._held = t.held
        meter._carried = t.carried
        meter._swept_to = t.swept_to
        meter._limit = t.limit
        return 0

    cdef int _stream_in(self, Uniforms* t, stream) except -1:
        """Take a ``UniformStream``'s drawn block's rest (the stream is left empty)."""
        cdef Py_ssize_t n, start
        values = stream._values
        start = stream._next
        n = (stream._end - start) // 8
        free(t.leftover)
        t.leftover = <double*>malloc(max(1, n) * sizeof(double))
        if t.leftover == NULL:
            raise MemoryError()
        if n > 0:
            memcpy(t.leftover, (<char*>values) + start, 8 * n)
        t.left_next = 0
        t.left_end = n
        stream._values = b""
        stream._next = 0
        stream._end = 0
        return 0

    cdef int _stream_out(self, Uniforms* t, stream) except -1:
        """Give a ``UniformStream`` back the rest of its block."""
        cdef Py_ssize_t n = t.left_end - t.left_next
        stream._values = PyBytes_FromStringAndSize(<char*>(t.leftover + t.left_next), 8 * n)
        stream._next = 0
        stream._end = 8 * n
        t.left_next = t.left_end = 0
        return 0

    def _records_out(self, bint full) -> None:
        """Hand the records on as ``RecordBuffer.add`` would: to the sink once ``limit`` are held
        (``full``), else into the buffer for the next sample."""
        cdef int64_t n = self.record_count, k
        if n == 0:
            return
        buffer = self.buffer
        if self.narrow:
            if buffer.count:  # rows before these (none in the runs it takes): theirs first
                buffer.sink(buffer.take())
            columns = [
                PyBytes_FromStringAndSize(<char*>self.n_vm, n),
                PyBytes_FromStringAndSize(<char*>self.n_flags, n),
                PyBytes_FromStringAndSize(<char*>self.n_sectors, 2 * n),
                PyBytes_FromStringAndSize(<char*>self.n_issued, 8 * n),
                PyBytes_FromStringAndSize(<char*>self.n_completed, 8 * n),
            ]
            for k in range(COMPONENTS):
                columns.append(PyBytes_FromStringAndSize(
                    <char*>(self.n_components + k * self.record_limit), 4 * n
                ))
            self.record_count = 0
            self.blocks.extend_narrow(columns, n)
            return
        data = PyBytes_FromStringAndSize(<char*>self.records, 8 * FIELDS * n)
        self.record_count = 0
        if full and buffer.count == 0:
            buffer.sink(np.frombuffer(data, dtype="<f8").reshape(n, FIELDS))
            return
        buffer._packed.write(data)
        buffer.count += n
        if buffer.count >= buffer.limit and buffer.sink is not None:
            buffer.sink(buffer.take())

    def _setup_vm(
        self,
        Py_ssize_t i,
        int64_t index,
        int32_t tier,
        int64_t reach,
        int32_t refill,
        int64_t max_batch,
    ) -> None:
        cdef VmState* vm = &self.vms[i]
        cdef Py_ssize_t k
        vm.index = index
        vm.tier = tier
        vm.reach = reach
        vm.refill = refill
        vm.max_batch = max_batch
        vm.writes = <unsigned char*>malloc(max_batch)
        vm.sizes = <int64_t*>malloc(max_batch * sizeof(int64_t))
        vm.offsets = <int64_t*>malloc(max_batch * sizeof(int64_t))
        vm.gaps = <double*>malloc(max_batch * sizeof(double))
        if vm.writes == NULL or vm.sizes == NULL or vm.offsets == NULL or vm.gaps == NULL:
            raise MemoryError()
        stream = self._streams[i]
        workload = stream.workload
        capsule = stream._rng.bit_generator.capsule
        vm.bitgen = <simcache_bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")
        vm.open = workload.mode == "open"
        vm.think = workload.think_time
        vm.mean_gap = stream._mean_gap
        vm.uniform_arrivals = stream._uniform_arrivals
        self._setup_duty(vm, stream.clock)
        if refill == PYTHON_REFILL:
            return
        vm.read_fraction = workload.read_fraction
        vm.blocks = stream._blocks
        sizes = [int(size) for size in stream._sizes]
        cdf = [float(p) for p in stream._choice_cdf]
        vm.nsizes = len(sizes)
        vm.size_table = <int64_t*>malloc(max(1, vm.nsizes) * sizeof(int64_t))
        vm.cdf = <double*>malloc(max(1, vm.nsizes) * sizeof(double))
        if vm.size_table == NULL or vm.cdf == NULL:
            raise MemoryError()
        for k in range(vm.nsizes):
            vm.size_table[k] = sizes[k]
            vm.cdf[k] = cdf[k]

    cdef int _setup_duty(self, VmState* vm, clock) except -1:
        """The VM's ``DutyClock``'s figures."""
        cdef Py_ssize_t k
        duty = clock.duty
        vm.duty = DUTY_NONE
        vm.peak_factor = clock.peak_factor
        if duty is None:
            return 0
        vm.phase = duty.phase
        if clock.onoff:
            vm.duty = DUTY_ONOFF
            vm.on = clock.on
            vm.off = clock.off
            vm.phase = clock.phase
        elif clock.shape == "sine":
            vm.duty = DUTY_SINE
            vm.period = duty.period
            vm.amplitude = duty.amplitude
        elif clock.shape == "profile":
            vm.duty = DUTY_PROFILE
            vm.interval = duty.interval
            factors = [float(f) for f in clock._factors]
            cumulative = [float(c) for c in clock._cumulative]
            vm.levels = len(factors)
            vm.factors = <double*>malloc(max(1, vm.levels) * sizeof(double))
            vm.cumulative = <double*>malloc((vm.levels + 1) * sizeof(double))
            if vm.factors == NULL or vm.cumulative == NULL:
                raise MemoryError()
            for k in range(vm.levels):
                vm.factors[k] = factors[k]
            for k in range(vm.levels + 1):
                vm.cumulative[k] = cumulative[k]
        else:
            raise ValueError(f"the native engine does not run a {clock.shape!r} duty cycle")
        return 0

    def _read_batch(self, Py_ssize_t i) -> None:
        """Copy the stream's drawn batch (and where it is read, and its refill state)."""
        cdef VmState* vm = &self.vms[i]
        cdef Py_ssize_t k, count
        stream = self._streams[i]
        count = stream._io_count
        vm.io_next = stream._io_next
        vm.io_batch = stream._io_batch
        vm.cursor = stream._cursor
        vm.batch_drawn = False
        if (stream._writes is self._writes[i] and stream._io_sizes is self._sizes[i]
                and stream._offsets is self._offsets[i] and count == vm.io_count):
            return  # the batch the engine holds
        self._writes[i] = stream._writes
        self._sizes[i] = stream._io_sizes
        self._offsets[i] = stream._offsets
        writes = np.frombuffer(stream._writes, dtype=np.int8, count=count).astype(np.uint8)
        sizes = np.frombuffer(stream._io_sizes, dtype="<i8", count=count)
        offsets = np.frombuffer(stream._offsets, dtype="<i8", count=count)
        cdef const unsigned char[:] w = writes
        cdef const int64_t[:] z = sizes
        cdef const int64_t[:] o = offsets
        for k in range(count):
            vm.writes[k] = w[k]
            vm.sizes[k] = z[k]
            vm.offsets[k] = o[k]
        vm.io_count = count

    def _write_batch(self, Py_ssize_t i) -> None:
        """Give the stream the batch, where it is read, and its refill state."""
        cdef VmState* vm = &self.vms[i]
        stream = self._streams[i]
        if vm.batch_drawn:
            self._writes[i] = PyBytes_FromStringAndSize(<char*>vm.writes, vm.io_count)
            self._sizes[i] = PyBytes_FromStringAndSize(<char*>vm.sizes, 8 * vm.io_count)
            self._offsets[i] = PyBytes_FromStringAndSize(<char*>vm.offsets, 8 * vm.io_count)
            vm.batch_drawn = False
        stream._writes = self._writes[i]
        stream._io_sizes = self._sizes[i]
        stream._offsets = self._offsets[i]
        stream._io_count = vm.io_count
        stream._io_next = vm.io_next
        stream._io_batch = vm.io_batch
        stream._cursor = vm.cursor

    def _read_gaps(self, Py_ssize_t i) -> None:
        """Copy the stream's drawn gaps, where they are read, and the first evenly spaced
        arrival's fraction if it is still to come."""
        cdef VmState* vm = &self.vms[i]
        cdef Py_ssize_t count
        stream = self._streams[i]
        count = stream._gap_count
        gaps = stream._gaps
        if gaps is not self._gaps[i] or count != vm.gap_count:
            if len(gaps) != 8 * count:
                raise RuntimeError("a stream's gaps are not as many as it counts")
            if count:
                memcpy(vm.gaps, <char*>gaps, 8 * count)
            self._gaps[i] = gaps
        vm.gap_count = count
        vm.gap_next = stream._gap_next
        vm.gap_batch = stream._gap_batch
        fraction = stream._first_gap_fraction
        vm.first_pending = fraction is not None
        vm.first_fraction = fraction if fraction is not None else 0.0

    def _write_gaps(self, Py_ssize_t i) -> None:
        cdef VmState* vm = &self.vms[i]
        stream = self._streams[i]
        stream._gaps = self._gaps[i]  # the bytes the gaps were drawn as (_refill_gaps)
        stream._gap_count = vm.gap_count
        stream._gap_next = vm.gap_next
        stream._gap_batch = vm.gap_batch
        stream._first_gap_fraction = vm.first_fraction if vm.first_pending else None

    def _refill(self, Py_ssize_t i) -> None:
        """``IOStream.next_io``'s refill by the stream itself: the cases the native code lacks."""
        self._write_batch(i)
        self._streams[i]._refill_ios()
        self._read_batch(i)

    def _refill_gaps(self, Py_ssize_t i) -> None:
        """``IOStream._draw_gap``'s refill: the next batch of exponential gaps, drawn by the
        stream's generator as the stream draws them (``Generator.exponential``)."""
        cdef VmState* vm = &self.vms[i]
        cdef int64_t count = vm.gap_batch
        vm.gap_batch = 2 * count if 2 * count < vm.max_batch else vm.max_batch
        gaps = np.asarray(
            self._streams[i]._rng.exponential(vm.mean_gap, count), dtype="<f8"
        ).tobytes()
        memcpy(vm.gaps, <char*>gaps, 8 * count)
        self._gaps[i] = gaps
        vm.gap_count = count
        vm.gap_next = 0

    cdef int _refill_native(self, VmState* vm) except -1 nogil:
        """IOStream._refill_ios for uniform or sequential offsets (one size mix, no runs): the
        same draws from the stream's generator, in the same order (``Generator.random`` for the
        ops, then for the sizes if the mix has more than one, then ``Generator.integers`` for
        uniform blocks)."""
        cdef int64_t count = vm.io_batch, k, j, span, total = 0
        cdef double u
        cdef simcache_bitgen_t* bitgen = vm.bitgen
        vm.io_batch = 2 * count if 2 * count < vm.max_batch else vm.max_batch
        for k in range(count):
            vm.writes[k] = bitgen.next_double(bitgen.state) >= vm.read_fraction
        if vm.nsizes > 1:
            for k in range(count):
                u = bitgen.next_double(bitgen.state)
                j = 0  # searchsorted(cdf, u, side="right")
                while j < vm.nsizes and vm.cdf[j] <= u:
                    j += 1
                vm.sizes[k] = vm.size_table[j]
        else:
            for k in range(count):
                vm.sizes[k] = vm.size_table[0]
        if vm.refill == SEQUENTIAL_REFILL:
            for k in range(count):
                span = (vm.sizes[k] + BLOCK - 1) // BLOCK
                vm.offsets[k] = ((vm.cursor + total) % vm.blocks) * BLOCK
                total += span
            vm.cursor = (vm.cursor + total) % vm.blocks
        elif vm.blocks == 1:
            for k in range(count):
                vm.offsets[k] = 0
        elif vm.blocks - 1 == <int64_t>UINT32_MAX:
            for k in range(count):
                vm.offsets[k] = (<int64_t>bitgen.next_uint32(bitgen.state)) * BLOCK
        else:
            for k in range(count):
                vm.offsets[k] = (<int64_t>_lemire32(bitgen, <uint32_t>(vm.blocks - 1))) * BLOCK
        vm.io_count = count
        vm.io_next = 0
        vm.batch_drawn = True
        return 0

    # --- read misses: ArrayRead, the network's flows, VM.miss_delivered ---------------------------

    cdef int _miss(self, int32_t s, double now) except -1 nogil:
        """ArrayRead.__init__: the request reaches the array one storage message after now, the
        array serves it, its data leaves when the array is done (ARRAY_DONE)."""
        cdef Slot* slot = &self.slots[s]
        cdef VmState* vm = &self.vms[slot.vm]
        cdef double arrives = now + self.host_ack[vm.tier], done
        done = _array_read(&self.array, arrives, vm.index, slot.offset, slot.size)
        slot.array_time = done - arrives
        self._schedule(now + (done - now), s, ARRAY_DONE)
        return 0

    cdef int _frame(self, int32_t host, int64_t size, double* wire) except -1 nogil:
        """storage_tx.framing[size]: the wire bytes in ``wire``, the packets returned."""
        cdef int32_t k
        for k in range(self.fr_n):
            if self.fr_size[k] == size and self.fr_host[k] == host:
                wire[0] = self.fr_wire[k]
                return <int>self.fr_packets[k]
        with gil:
            self._frame_new(host, size)
        wire[0] = self.fr_wire[self.fr_n - 1]
        return <int>self.fr_packets[self.fr_n - 1]

    cdef int _frame_new(self, int32_t host, int64_t size) except -1:
        if self.fr_n == self.fr_cap:
            raise RuntimeError("the native engine met more I/O sizes than it keeps framings of")
        framed = self._framing[host][size]
        self.fr_wire[self.fr_n] = framed[0]
        self.fr_packets[self.fr_n] = framed[1]
        self.fr_size[self.fr_n] = size
        self.fr_host[self.fr_n] = host
        self.fr_n += 1
        return 0

    cdef int32_t _new_flow(self) except -1 nogil:
        cdef int32_t f, cap
        if self.free_flow_count:
            self.free_flow_count -= 1
            return self.free_flows[self.free_flow_count]
        if self.flows_used == self.flow_cap:
            cap = 2 * self.flow_cap
            self.flows = <FlowState*>realloc(self.flows, cap * sizeof(FlowState))
            self.free_flows = <int32_t*>realloc(self.free_flows, cap * sizeof(int32_t))
            self.in_flight = <int32_t*>realloc(self.in_flight, cap * sizeof(int32_t))
            self.scratch = <int32_t*>realloc(self.scratch, cap * sizeof(int32_t))
            self.scratch2 = <int32_t*>realloc(self.scratch2, cap * sizeof(int32_t))
            self.epochs = <int64_t*>realloc(self.epochs, cap * sizeof(int64_t))
            if (self.flows == NULL or self.free_flows == NULL or self.in_flight == NULL
                    or self.scratch == NULL or self.scratch2 == NULL or self.epochs == NULL):
                with gil:
                    raise MemoryError()
            memset(self.epochs + self.flow_cap, 0, self.flow_cap * sizeof(int64_t))
            self.flow_cap = cap
        f = self.flows_used
        self.flows_used += 1
        return f

    cdef int _active_add(self, PortState* port, int32_t f) except -1 nogil:
        cdef int32_t* active
        if port.nactive == port.active_cap:
            active = <int32_t*>realloc(port.active, 2 * port.active_cap * sizeof(int32_t))
            if active == NULL:
                with gil:
                    raise MemoryError()
            port.active = active
            port.active_cap *= 2
        port.active[port.nactive] = f
        port.nactive += 1
        return 0

    cdef int _send(self, int32_t s, double now) except -1 nogil:
        """ArrayRead._step's first phase: FlowNetwork.send((array_tx, storage_rx), wire, packets,
        latency=storage_tx.latency) and its _start."""
        cdef Slot* slot = &self.slots[s]
        cdef int32_t host = self.vms[slot.vm].tier, fi, other, first, nb = 0, k, j
        cdef double wire, cap
        cdef int packets = self._frame(host, slot.size, &wire)
        cdef FlowState* f
        cdef PortState* port
        self.ports[self.host_ports[2 * host]].packets += packets
        self.ports[self.host_ports[2 * host + 1]].packets += packets
        fi = self._new_flow()
        f = &self.flows[fi]
        f.size = wire
        f.remaining = wire
        f.stamp = now
        f.rate = 0.0
        f.latency = self.host_latency[host]
        f.cap = INFINITY
        f.lone = False
        f.delivery = -1
        f.seq = -1
        f.slot = s
        f.ports[0] = self.host_ports[2 * host]
        f.ports[1] = self.host_ports[2 * host + 1]
        f.in_flight = True
        self.in_flight[self.n_in_flight] = fi
        self.n_in_flight += 1
        self.epoch += 1
        for k in range(2):
            port = &self.ports[f.ports[k]]
            if port.window < wire and f.latency > 0:
                cap = port.window / (2.0 * f.latency)
                if cap < f.cap:
                    f.cap = cap
            if port.nactive:
                first = port.active[0]
                if self.flows[first].lone and self.flows[first].finish <= now:
                    self._leave(first)
                else:
                    for j in range(port.nactive):
                        other = port.active[j]
                        if self.epochs[other] != self.epoch:
                            self.epochs[other] = self.epoch
                            self.scratch[nb] = other
                            nb += 1
            self._active_add(port, fi)
            port.weight_sum += 1.0
            port.share = port.capacity / port.weight_sum
        if nb == 0:
            self._rerate(fi, now)
            return 0
        for j in range(nb):
            self._rerate(self.scratch[j], now)
        self._rerate(fi, now)
        if self.marks_n > 2 * self.n_in_flight + HEAP_SLACK:
            self._compact()
        self._arm()
        return 0

    cdef int _rerate(self, int32_t fi, double now) except -1 nogil:
        """FlowNetwork._rerate."""
        cdef FlowState* f = &self.flows[fi]
        cdef double rate = INFINITY, remaining
        cdef bint lone = True
        cdef int k
        cdef PortState* port
        for k in range(2):
            port = &self.ports[f.ports[k]]
            if port.share < rate:
                rate = port.share
            if port.nactive > 1:
                lone = False
        if rate > f.cap:
            rate = f.cap
        if rate == f.rate and not lone and not f.lone:
            return 0
        remaining = f.remaining - f.rate * (now - f.stamp)
        if remaining < 0.0:
            remaining = 0.0
        f.remaining = remaining
        f.stamp = now
        f.rate = rate
        f.finish = now + remaining / rate
        self.seq += 1
        f.seq = self.seq
        f.lone = lone
        if lone:
            f.delivery = self.seq
            self._push(f.finish + f.latency, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, fi,
                       LONE, self.seq)
            self.eid += 1
        else:
            f.delivery = -1
            self._mark_push(f.finish, f.seq, fi)
        return 0

    cdef int _mark_push(self, double time, int64_t key, int32_t fi) except -1 nogil:
        cdef Py_ssize_t pos, parent
        cdef Entry* marks
        if self.marks_n == self.marks_cap:
            marks = <Entry*>realloc(self.marks, 2 * self.marks_cap * sizeof(Entry))
            if marks == NULL:
                with gil:
                    raise MemoryError()
            self.marks = marks
            self.marks_cap *= 2
        pos = self.marks_n
        self.marks_n += 1
        while pos > 0:
            parent = (pos - 1) >> 1
            if _before(time, key, &self.marks[parent]):
                self.marks[pos] = self.marks[parent]
                pos = parent
            else:
                break
        self.marks[pos].time = time
        self.marks[pos].key = key
        self.marks[pos].slot = fi
        return 0

    cdef Entry _mark_pop(self) noexcept nogil:
        cdef Entry top = self.marks[0], last
        cdef Py_ssize_t pos = 0, child, size
        self.marks_n -= 1
        size = self.marks_n
        if size == 0:
            return top
        last = self.marks[size]
        while True:
            child = 2 * pos + 1
            if child >= size:
                break
            if child + 1 < size and _before(
                self.marks[child + 1].time, self.marks[child + 1].key, &self.marks[child]
            ):
                child += 1
            if _before(self.marks[child].time, self.marks[child].key, &last):
                self.marks[pos] = self.marks[child]
                pos = child
            else:
                break
        self.marks[pos] = last
        return top

    cdef int _compact(self) except -1 nogil:
        """FlowNetwork._compact: the marks of the shared flows in flight only."""
        cdef int32_t k, fi
        self.marks_n = 0
        for k in range(self.n_in_flight):
            fi = self.in_flight[k]
            if not self.flows[fi].lone:
                self._mark_push(self.flows[fi].finish, self.flows[fi].seq, fi)
        return 0

    cdef int _leave(self, int32_t fi) except -1 nogil:
        """FlowNetwork._leave."""
        cdef FlowState* f = &self.flows[fi]
        cdef PortState* port
        cdef int32_t k, j
        for k in range(self.n_in_flight):
            if self.in_flight[k] == fi:
                memmove(self.in_flight + k, self.in_flight + k + 1,
                        (self.n_in_flight - k - 1) * sizeof(int32_t))
                self.n_in_flight -= 1
                break
        f.in_flight = False
        for k in range(2):
            port = &self.ports[f.ports[k]]
            port.delivered += f.size
            for j in range(port.nactive):
                if port.active[j] == fi:
                    memmove(port.active + j, port.active + j + 1,
                            (port.nactive - j - 1) * sizeof(int32_t))
                    port.nactive -= 1
                    break
            if port.nactive:
                port.weight_sum -= 1.0
                port.share = port.capacity / port.weight_sum
            else:
                port.weight_sum = 0.0
                port.share = INFINITY
                port.carried = port.delivered
        return 0

    cdef int _arm(self) except -1 nogil:
        """FlowNetwork._arm."""
        while self.marks_n and self.flows[self.marks[0].slot].seq != self.marks[0].key:
            self._mark_pop()
        if self.marks_n and self.marks[0].time < self.wake_at:
            self._set_wake(self.marks[0].time)
        return 0

    cdef int _set_wake(self, double wake_at) except -1 nogil:
        """FlowNetwork._set_wake (and _drop_stale_timers: the stale wake-ups taken out of the
        queue once more than STALE_KEPT)."""
        cdef Py_ssize_t k, kept = 0
        if self.timer >= 0:
            self.stale += 1
            if self.stale > STALE_KEPT:
                for k in range(self.heap_size):
                    if self.heap[k].kind != WAKE:
                        self.heap[kept] = self.heap[k]
                        kept += 1
                self.heap_size = kept
                self._heapify()
                self.stale = 0
        self.wake_at = wake_at
        self.timer_serial += 1
        self.timer = self.timer_serial
        self._push(wake_at, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, 0, WAKE, self.timer)
        self.eid += 1
        return 0

    cdef int _wake(self, int64_t timer, double now) except -1 nogil:
        """FlowNetwork._wake."""
        cdef int32_t nfinished = 0, nb = 0, k, j, i, fi, other
        cdef Entry mark
        cdef PortState* port
        if timer != self.timer:
            self.stale -= 1
            return 0
        self.wake_at = INFINITY
        self.timer = -1
        while self.marks_n and self.marks[0].time <= now:
            mark = self._mark_pop()
            if self.flows[mark.slot].seq == mark.key:
                self.scratch2[nfinished] = mark.slot
                nfinished += 1
                self._leave(mark.slot)
        if nfinished:
            self.epoch += 1
            for k in range(nfinished):
                fi = self.scratch2[k]
                for i in range(2):
                    port = &self.ports[self.flows[fi].ports[i]]
                    for j in range(port.nactive):
                        other = port.active[j]
                        if self.epochs[other] != self.epoch:
                            self.epochs[other] = self.epoch
                            self.scratch[nb] = other
                            nb += 1
            for j in range(nb):
                self._rerate(self.scratch[j], now)
            for k in range(nfinished):
                fi = self.scratch2[k]
                self._schedule(now + self.flows[fi].latency, self.flows[fi].slot, MISS_DONE)
                self.free_flows[self.free_flow_count] = fi
                self.free_flow_count += 1
        self._arm()
        return 0

    cdef int _lone_delivered(self, int32_t fi, int64_t aux, double now) except -1 nogil:
        """FlowNetwork._lone_delivered, then the read's delivery (process_now)."""
        cdef FlowState* f = &self.flows[fi]
        cdef int32_t s = f.slot
        if f.delivery != aux:
            return 0
        f.delivery = -1
        if f.in_flight:
            self._leave(fi)
        self.free_flows[self.free_flow_count] = fi
        self.free_flow_count += 1
        return self._miss_done(s, now)

    cdef int _miss_done(self, int32_t s, double now) except -1 nogil:
        """VM.miss_delivered: fill the cache (the tier's write, the lines), record the read;
        then the slot goes on."""
        cdef Slot* slot = &self.slots[s]
        cdef VmState* vm = &self.vms[slot.vm]
        cdef double array_time = slot.array_time
        _read(&self.tiers[vm.tier], now, slot.size, True)
        _insert(&self.caches[vm.tier], vm.index, slot.offset, slot.size)
        self._record(s, now, 0.0, ((now - slot.issued) - array_time) - 0.0, array_time,
                     self.path_miss)
        return self._slot_done(s, now)

    cdef int _slot_done(self, int32_t s, double now) except -1 nogil:
        """A read of slot ``s`` is done (recorded): a closed-loop slot goes round
        (_ClosedSlot._done), an open loop's is given back."""
        cdef double think
        if s < self.slot_count:
            think = self.vms[self.slots[s].vm].think
            if think:
                self._schedule(now + think, s, NEXT)
            else:
                self._next(s, now)
        else:
            self.free_slots[self.free_count] = s
            self.free_count += 1
        return 0

    cdef int _heapify(self) except -1 nogil:
        """The event queue made a heap again (after entries were taken out)."""
        cdef Py_ssize_t start, pos, child, best, end, size = self.heap_size
        cdef Entry item
        if size < 2:
            return 0
        start = (size - 2) >> 2
        while start >= 0:
            pos = start
            item = self.heap[pos]
            while True:
                child = 4 * pos + 1
                if child >= size:
                    break
                best = child
                end = child + 4 if child + 4 < size else size
                child += 1
                while child < end:
                    if _before(self.heap[child].time, self.heap[child].key, &self.heap[best]):
                        best = child
                    child += 1
                if _before(self.heap[best].time, self.heap[best].key, &item):
                    self.heap[pos] = self.heap[best]
                    pos = best
                else:
                    break
            self.heap[pos] = item
            start -= 1
        return 0

    # --- the event queue ------------------------------------------------------------------------

    cdef int _push(
        self, double time, int64_t key, int32_t slot, int32_t kind, int64_t aux=0
    ) except -1 nogil:
        cdef Py_ssize_t pos, parent
        cdef Entry* heap
        if self.heap_size == self.heap_cap:
            heap = <Entry*>realloc(self.heap, 2 * self.heap_cap * sizeof(Entry))
            if heap == NULL:
                with gil:
                    raise MemoryError()
            self.heap = heap
            self.heap_cap *= 2
        pos = self.heap_size
        self.heap_size += 1
        while pos > 0:
            parent = (pos - 1) >> 2
            if _before(time, key, &self.heap[parent]):
                self.heap[pos] = self.heap[parent]
                pos = parent
            else:
                break
        self.heap[pos].time = time
        self.heap[pos].key = key
        self.heap[pos].slot = slot
        self.heap[pos].kind = kind
        self.heap[pos].aux = aux
        return 0

    cdef inline int _schedule(self, double time, int32_t slot, int32_t kind) except -1 nogil:
        """schedule_at(clock, time, signal) (NORMAL, the next event id)."""
        self._push(time, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, slot, kind)
        self.eid += 1
        return 0

    cdef Entry _pop(self) noexcept nogil:
        cdef Entry top = self.heap[0]
        cdef Entry last
        cdef Py_ssize_t pos = 0, child, best, end, size
        self.heap_size -= 1
        size = self.heap_size
        if size == 0:
            return top
        last = self.heap[size]
        while True:
            child = 4 * pos + 1
            if child >= size:
                break
            best = child
            end = child + 4 if child + 4 < size else size
            child += 1
            while child < end:
                if _before(self.heap[child].time, self.heap[child].key, &self.heap[best]):
                    best = child
                child += 1
            if _before(self.heap[best].time, self.heap[best].key, &last):
                self.heap[pos] = self.heap[best]
                pos = best
            else:
                break
        self.heap[pos] = last
        return top

    # --- the slots and open loops ---------------------------------------------------------------

    cdef int32_t _take_slot(self, int32_t vm) except -1 nogil:
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
        return s

    cdef int _start(self, int32_t s, double now, int32_t kind) except -1 nogil:
        """IOStream.next_io and VM.start's read hit for slot ``s``: the VM's next I/O, booked on
        its host's tier now, its completion (``kind``) scheduled."""
        cdef Slot* slot = &self.slots[s]
        cdef int32_t v = slot.vm
        cdef VmState* vm = &self.vms[v]
        cdef TierState* t
        cdef int64_t i, size, offset
        cdef double done
        if vm.io_next >= vm.io_count:
            if vm.refill == PYTHON_REFILL:
                with gil:
                    self._refill(v)
            else:
                self._refill_native(vm)
        i = vm.io_next
        vm.io_next = i + 1
        size = vm.sizes[i]
        offset = vm.offsets[i]
        if vm.writes[i] != 0 or (
            offset + size > vm.reach and not (self.misses and not self.caches[vm.tier].full)
        ):
            with gil:
                raise RuntimeError(
                    "the native engine met an I/O it does not run (a write, or a read its host's"
                    " cache does not hold): its selector let an unsupported run through"
                )
        slot.number = vm.issued
        vm.issued += 1
        slot.issued = now
        slot.size = size
        t = &self.tiers[vm.tier]
        if self.misses and not self.caches[vm.tier].full:
            if not _lookup(&self.caches[vm.tier], vm.index, offset, size):
                slot.offset = offset
                return self._miss(s, now)
        else:
            t.hits += 1  # Cache.lookup: every line held
        done = _read(t, now, size)
        self._schedule(now + (done - now), s, kind)
        return 0

    cdef int _next(self, int32_t s, double now) except -1 nogil:
        """_ClosedSlot._next: once the VM's on/off cycle is on, the slot's next I/O."""
        cdef VmState* vm = &self.vms[self.slots[s].vm]
        cdef double on, end
        if vm.duty == DUTY_ONOFF:
            on = _on_start(vm, now, &end)
            if on > now:
                self._schedule(now + (on - now), s, ISSUE)  # = sleep()'s time
                return 0
        return self._start(s, now, SERVED)

    cdef double _draw_gap(self, int32_t v) except? -1 nogil:
        """IOStream._draw_gap."""
        cdef VmState* vm = &self.vms[v]
        cdef int64_t i
        if vm.uniform_arrivals:
            if vm.first_pending:
                vm.first_pending = False
                return vm.mean_gap * vm.first_fraction
            return vm.mean_gap
        i = vm.gap_next
        if i >= vm.gap_count:
            with gil:
                self._refill_gaps(v)
            i = 0
        vm.gap_next = i + 1
        return vm.gaps[i]

    cdef double _next_gap(self, int32_t v, double now) except? -1 nogil:
        """IOStream.next_gap: seconds from ``now`` to the VM's next open-loop arrival."""
        cdef VmState* vm = &self.vms[v]
        cdef double t, on, cycle, gap, end, periods, whole
        if vm.duty == DUTY_NONE:
            return (now + self._draw_gap(v)) - now
        if vm.duty == DUTY_PROFILE:
            return _advance(vm, now, self._draw_gap(v) * vm.peak_factor) - now
        t = now
        on = vm.on  # 0 for a sine cycle: its one window never ends
        cycle = on + vm.off
        while True:
            gap = self._draw_gap(v)
            if not isfinite(gap):
                return INFINITY
            while True:
                t = _on_start(vm, t, &end)
                if t + gap < end:
                    t += gap
                    break
                gap -= end - t
                t = end
                periods = gap / on if on > 0.0 else 0.0
                if not isfinite(periods):
                    return INFINITY
                whole = floor(periods) - 1.0
                if whole > 0.0:
                    gap -= whole * on
                    t += whole * cycle
            if vm.duty != DUTY_SINE:
                return t - now
            # kept by thinning: a uniform from the stream's generator against the rate at t
            if vm.bitgen.next_double(vm.bitgen.state) * vm.peak_factor <= 1.0 + vm.amplitude * sin(
                2.0 * PI * (t + vm.phase) / vm.period
            ):
                return t - now

    cdef int _arrival_after(self, int32_t v, double now) except -1 nogil:
        """_OpenLoop._next: schedule the VM's next arrival."""
        self._schedule(now + self._next_gap(v, now), v, ARRIVE)
        return 0

    cdef int _served(self, int32_t s, double now) except -1 nogil:
        """VM._hit_done: record the read."""
        return self._record(s, now, now - self.slots[s].issued, 0.0, 0.0, self.path_hit)

    cdef int _record(self, int32_t s, double now, double local, double network, double array,
                     double path) except -1 nogil:
        """RecordBuffer.add's fields of slot ``s``'s read, done now (peer tier and destage wait
        0)."""
        cdef Slot* slot = &self.slots[s]
        cdef double* row
        cdef int64_t n = self.record_count, limit = self.record_limit
        cdef int64_t index = self.vms[slot.vm].index
        if self.narrow and (index > 255 or slot.size % SECTOR or slot.size // SECTOR > 65535):
            with gil:  # past the narrowest types: rows from now on (the blocks widen)
                self._records_out(False)
                self.narrow = False
            n = 0
        if self.narrow:
            # RecordBlocks.append's conversions: flags is_write + 2 * path, size in sectors,
            # components in ms rounded once to float32
            self.n_vm[n] = <unsigned char>index
            self.n_flags[n] = <unsigned char>(2.0 * path)
            self.n_sectors[n] = <uint16_t>(slot.size // SECTOR)
            self.n_issued[n] = slot.issued
            self.n_completed[n] = now
            self.n_components[n] = <float>(local * 1e3)
            self.n_components[limit + n] = <float>(network * 1e3)
            self.n_components[2 * limit + n] = <float>(0.0 * 1e3)
            self.n_components[3 * limit + n] = <float>(0.0 * 1e3)
            self.n_components[4 * limit + n] = <float>(array * 1e3)
        else:
            row = self.records + FIELDS * n
            row[0] = <double>index
            row[1] = 0.0
            row[2] = <double>slot.size
            row[3] = slot.issued
            row[4] = now
            row[5] = local
            row[6] = network
            row[7] = 0.0
            row[8] = 0.0
            row[9] = array
            row[10] = path
        self.record_count += 1
        slot.number = -1
        if self.record_count >= self.record_room:
            with gil:
                self._records_out(True)
                self.record_room = self.record_limit
        return 0

    cdef int _loop(self, double head_time, int64_t head_key, int64_t budget) except -1 nogil:
        cdef Entry entry, head
        cdef int32_t s
        head.time = head_time
        head.key = head_key
        while self.heap_size:
            if not _before(self.heap[0].time, self.heap[0].key, &head):
                return REACHED
            if budget == 0:
                return PAUSED
            budget -= 1
            entry = self._pop()
            self.now = entry.time
            self.events += 1
            if entry.kind == SERVED:
                self._served(entry.slot, entry.time)
                if self.vms[self.slots[entry.slot].vm].think:  # _ClosedSlot._done
                    self._schedule(entry.time + self.vms[self.slots[entry.slot].vm].think,
                                   entry.slot, NEXT)
                else:
                    self._next(entry.slot, entry.time)
            elif entry.kind == OPEN_SERVED:
                self._served(entry.slot, entry.time)
                self.free_slots[self.free_count] = entry.slot
                self.free_count += 1
            elif entry.kind == ARRIVE:
                s = self._take_slot(entry.slot)
                self._start(s, entry.time, OPEN_SERVED)
                self._arrival_after(entry.slot, entry.time)
            elif entry.kind == ARRAY_DONE:
                self._send(entry.slot, entry.time)
            elif entry.kind == MISS_DONE:
                self._miss_done(entry.slot, entry.time)
            elif entry.kind == LONE:
                self._lone_delivered(entry.slot, entry.aux, entry.time)
            elif entry.kind == WAKE:
                self._wake(entry.aux, entry.time)
            elif entry.kind == ISSUE:
                self._start(entry.slot, entry.time, SERVED)
            elif entry.kind == OPEN_BEGIN:
                self._arrival_after(entry.slot, entry.time)
            else:  # BEGIN, NEXT
                self._next(entry.slot, entry.time)
        return REACHED

    def run(self, double head_time, int64_t head_key, int64_t budget=-1) -> bool:
        """Process the native events that run before (``head_time``, ``head_key``), the first
        Python event, at most ``budget`` of them (-1: no limit); True if the budget ran out
        first."""
        cdef int outcome
        with nogil:
            outcome = self._loop(head_time, head_key, budget)
        return outcome == PAUSED

    def queued(self) -> int:
        """Native events queued."""
        return self.heap_size
