# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The native engine's vertical slices (issue 35, steps 2 and 3): generated reads served by the
hosts' flash tiers from warm read caches, run in ``nogil`` code over C structs.

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
from libc.math cimport INFINITY, floor, isfinite, log1p, sin
from libc.stdint cimport UINT32_MAX, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memmove

import numpy as np

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


cdef struct Slot:
    # a closed-loop slot (the first ones), or an open-loop read in flight (taken and given back)
    int32_t vm
    int64_t number  # the read's number in its VM (-1: none in flight)
    double issued
    int64_t size


cdef struct TierState:
    # Tier's figures and state (one per host)
    double overhead, read_command, processor_free, per_byte, latency, read_channel
    double stall_p, stall_time, share, gc_until, foreground_until
    bint has_processor, lognormal, addressed, has_share
    double* log_table
    int32_t log_points
    double points
    double* channels
    int32_t nch
    double* starts
    double* ends
    Py_ssize_t pipe_n, pipe_cap
    int64_t operations, bytes_read
    int64_t hits  # its host cache's lookups answered since the last sync_out
    # its busy meter
    double* intervals
    int64_t held, held_cap, limit
    double carried, swept_to
    # the meter's intervals the Python meter holds (sync_out appends the ones after them) unless
    # swept here since
    int64_t synced_held
    bint swept
    # its random stream: the rest of the block drawn in Python, then the generator
    simcache_bitgen_t* bitgen
    double* leftover
    Py_ssize_t left_next, left_end


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

cdef inline double _uniform(TierState* t) noexcept nogil:
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


cdef int _held_room(TierState* t, int64_t n) except -1 nogil:
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


cdef double _sweep(TierState* t, double window_start, double window_end) noexcept nogil:
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


cdef int _meter_add(TierState* t, double start, double finish, double now) except -1 nogil:
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


cdef double _read(TierState* t, double now, int64_t size) except? -1 nogil:
    """Tier.submit(now, size, False): when the read completes."""
    cdef double ready = now + t.overhead, free_at, latency, position, low, transfer
    cdef double start, transfer_start, finish, busy, share
    cdef int64_t index
    cdef Py_ssize_t die
    if t.has_processor and t.read_command > 0.0:
        free_at = t.processor_free
        ready = (ready if ready > free_at else free_at) + t.read_command
        t.processor_free = ready
    t.bytes_read += size
    latency = t.latency
    if t.lognormal:
        position = _uniform(t) * t.points
        index = <int64_t>position
        low = t.log_table[index]
        latency *= low + (position - index) * (t.log_table[index + 1] - low)
    if t.stall_p > 0.0 and _uniform(t) < t.stall_p:
        latency += -t.stall_time * log1p(-_uniform(t))
    if t.read_channel > 0.0:
        latency += size * t.read_channel
    transfer = size * t.per_byte
    if not t.addressed and not t.has_share:
        start = t.channels[0] if t.channels[0] > ready else ready
        transfer_start = _book(t, now, start + latency, transfer) if transfer else start + latency
        finish = transfer_start + transfer
        _heapreplace(t, finish)
    else:
        die = <Py_ssize_t>(_uniform(t) * t.nch)
        busy = t.channels[die]
        share = 1.0
        if t.has_share:
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
    _meter_add(t, start, finish, now)
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
                free(self.tiers[i].channels)
                free(self.tiers[i].starts)
                free(self.tiers[i].ends)
                free(self.tiers[i].intervals)
                free(self.tiers[i].leftover)
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
        t.nch = len(tier._channel_free)
        t.channels = <double*>malloc(max(1, t.nch) * sizeof(double))
        t.pipe_cap = 16
        t.starts = <double*>malloc(t.pipe_cap * sizeof(double))
        t.ends = <double*>malloc(t.pipe_cap * sizeof(double))
        t.held_cap = FOLD_AT
        t.intervals = <double*>malloc(2 * t.held_cap * sizeof(double))
        if (t.log_table == NULL or t.channels == NULL or t.starts == NULL or t.ends == NULL
                or t.intervals == NULL):
            raise MemoryError()
        for k in range(t.log_points):
            t.log_table[k] = table[k]
        t.stall_p = tier._stall_probability
        t.stall_time = tier._stall_time
        t.has_share = tier._read_share is not None
        t.share = tier._read_share if t.has_share else 1.0
        t.addressed = tier._addressed
        capsule = self._tier_streams[i].generator.bit_generator.capsule
        t.bitgen = <simcache_bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")

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
        meter = tier.busy
        if meter._intervals is not self._meters[i] or meter._held != t.synced_held:
            held = meter._intervals.getvalue()
            t.held = meter._held
            if len(held) != 16 * t.held:
                raise RuntimeError("the tier's busy meter holds intervals it does not count")
            _held_room(t, t.held + 1)
            memcpy(t.intervals, <char*>held, 16 * t.held)
            self._meters[i] = meter._intervals
            t.synced_held = t.held
        t.swept = False
        t.carried = meter._carried
        t.swept_to = meter._swept_to
        t.limit = meter._limit
        stream = self._tier_streams[i]
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
        meter = tier.busy
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
        stream = self._tier_streams[i]
        n = t.left_end - t.left_next
        stream._values = PyBytes_FromStringAndSize(<char*>(t.leftover + t.left_next), 8 * n)
        stream._next = 0
        stream._end = 8 * n
        t.left_next = t.left_end = 0
        self._caches[i].hits += t.hits
        t.hits = 0

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

    # --- the event queue ------------------------------------------------------------------------

    cdef int _push(self, double time, int64_t key, int32_t slot, int32_t kind) except -1 nogil:
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
        if vm.writes[i] != 0 or offset + size > vm.reach:
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
        """VM._hit_done: record the read (RecordBuffer.add's fields)."""
        cdef Slot* slot = &self.slots[s]
        cdef double* row
        cdef int64_t n = self.record_count, limit = self.record_limit, k
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
            self.n_flags[n] = <unsigned char>(2.0 * self.path_hit)
            self.n_sectors[n] = <uint16_t>(slot.size // SECTOR)
            self.n_issued[n] = slot.issued
            self.n_completed[n] = now
            self.n_components[n] = <float>((now - slot.issued) * 1e3)
            for k in range(1, COMPONENTS):
                self.n_components[k * limit + n] = <float>(0.0 * 1e3)
        else:
            row = self.records + FIELDS * n
            row[0] = <double>index
            row[1] = 0.0
            row[2] = <double>slot.size
            row[3] = slot.issued
            row[4] = now
            row[5] = now - slot.issued
            row[6] = 0.0
            row[7] = 0.0
            row[8] = 0.0
            row[9] = 0.0
            row[10] = self.path_hit
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
