# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The native engine's first vertical slice (issue 35, step 2): closed-loop reads served by one
host's flash tier from a warm read cache, run in ``nogil`` code over C structs.

What it runs, event for event as the Python engine (``simcache.sim.drivers._ClosedSlot`` and
``VM.start``'s read hit, ``Tier.submit`` for a read, ``BusyMeter.add``, ``RecordBuffer.add``):
each closed-loop slot begins at time 0 (an URGENT event), issues the next I/O of its VM's stream,
books it on the tier (command overhead, command processor, lognormal factor, stall, read channel
time, the channels' heap or the addressed die, the transfer pipe) and schedules its completion;
the completion records the read and issues the slot's next one. The events carry keys from the
kernel's counter (priority * 2**52 + event id), so that merged with the Python events still queued
(the sampler, the run's stop) they run in the kernel's order and the event count is the same.

``simcache.sim.native_run`` selects the runs it supports, builds an :class:`Engine` from the
built model and drives it: ``Engine.run`` processes the native events that come before the
first Python event, and the state the Python components hold (the tier's channels, pipe, meter
and random stream, the VMs' counters and streams, the records) is written to them before each
Python event (:meth:`Engine.sync_out`) and read back after it (:meth:`Engine.sync_in`).

Random draws: the tier's uniforms come from the very ``numpy.random.Generator`` its
``UniformStream`` holds, through numpy's ``bitgen_t`` (``next_double``, as ``Generator.random``
draws them), after the block the stream had drawn already. A VM's I/Os are read from its
``IOStream``'s drawn batch; a new batch is drawn here, from the stream's generator with the same
draws in the same order (``Engine._refill_native``: uniform or sequential offsets, one size mix,
no runs), or else by the stream itself (``IOStream._refill_ios``, the one call of the loop that
takes the GIL: once per 2,048 I/Os of a VM). Records go a field apart in the record blocks'
narrowest types (``Engine.use_blocks``), else as rows to the record buffer.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.math cimport log1p
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
    BEGIN = 0  # a slot's start
    SERVED = 1  # a read's completion
    FOLD_AT = 4096  # meter._FOLD_AT
    # Engine.run's outcomes
    REACHED = 0  # the next event is the Python one given (or none is queued before it)
    PAUSED = 1  # the event budget ran out
    # how a VM's stream draws its next batch: IOStream._refill_ios called, or its cases here
    PYTHON_REFILL = 0
    UNIFORM_REFILL = 1
    SEQUENTIAL_REFILL = 2
    BLOCK = 4096  # generators.BLOCK
    SECTOR = 512  # collect.SECTOR
    COMPONENTS = 5  # the latency components of a record


cdef struct Entry:
    double time
    int64_t key
    int32_t slot
    int32_t kind


cdef struct Slot:
    int32_t vm
    int64_t number
    double issued
    int64_t size


cdef struct VmState:
    int64_t index
    int64_t issued
    # the stream's drawn batch (IOStream._writes, _io_sizes, _offsets) and where it is read
    unsigned char* writes
    int64_t* sizes
    int64_t* offsets
    int64_t io_next
    int64_t io_count
    int64_t reach  # bytes from the disk's start the host's cache holds for it
    # IOStream._refill_ios in native code (refill != PYTHON_REFILL): its generator, batch and laws
    int32_t refill
    simcache_bitgen_t* bitgen
    int64_t io_batch
    int64_t max_batch
    double read_fraction
    int64_t blocks
    int64_t cursor
    int32_t nsizes
    int64_t* size_table
    double* cdf


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


cdef class Engine:
    """One run's native state (see the module docstring); built by ``native_run.NativeRun``."""

    # the event queue: a 4-ary min-heap by (time, key)
    cdef Entry* heap
    cdef Py_ssize_t heap_size, heap_cap
    cdef public int64_t eid
    cdef public double now
    cdef public int64_t events
    # the VMs and their slots
    cdef VmState* vms
    cdef int32_t vm_count
    cdef Slot* slots
    cdef int32_t slot_count
    cdef list _vms, _streams
    cdef int32_t refill_vm
    # the tier (one host)
    cdef object tier
    cdef double overhead, read_command, processor_free, per_byte, latency, read_channel
    cdef double stall_p, stall_time, share, gc_until, foreground_until
    cdef bint has_processor, lognormal, addressed, has_share
    cdef double* log_table
    cdef int32_t log_points
    cdef double points
    cdef double* channels
    cdef int32_t nch
    cdef double* starts
    cdef double* ends
    cdef Py_ssize_t pipe_n, pipe_cap
    cdef int64_t operations, bytes_read
    cdef public int64_t hits
    # its busy meter
    cdef double* intervals
    cdef int64_t held, held_cap, limit
    cdef double carried, swept_to
    # its random stream: the rest of the block drawn in Python, then the generator
    cdef object stream, generator
    cdef simcache_bitgen_t* bitgen
    cdef double* leftover
    cdef Py_ssize_t left_next, left_end
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
        self.pipe_cap = 16
        self.starts = <double*>malloc(self.pipe_cap * sizeof(double))
        self.ends = <double*>malloc(self.pipe_cap * sizeof(double))
        self.held_cap = FOLD_AT
        self.intervals = <double*>malloc(2 * self.held_cap * sizeof(double))
        if self.heap == NULL or self.starts == NULL or self.ends == NULL or self.intervals == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.heap)
        free(self.starts)
        free(self.ends)
        free(self.intervals)
        cdef Py_ssize_t i
        if self.vms != NULL:
            for i in range(self.vm_count):
                free(self.vms[i].writes)
                free(self.vms[i].sizes)
                free(self.vms[i].offsets)
                free(self.vms[i].size_table)
                free(self.vms[i].cdf)
        free(self.vms)
        free(self.slots)
        free(self.log_table)
        free(self.channels)
        free(self.leftover)
        free(self.records)
        free(self.n_vm)
        free(self.n_flags)
        free(self.n_sectors)
        free(self.n_issued)
        free(self.n_completed)
        free(self.n_components)

    def __init__(
        self,
        tier,
        list vms,
        list streams,
        list reach,
        list slot_vms,
        record_buffer,
        int path_hit,
        list refills,
        int64_t max_batch,
    ):
        """``tier``: the host's ``Tier``; ``vms``, ``streams``, ``reach``: each VM (build order),
        its ``IOStream`` and the bytes of its disk its host's cache holds; ``slot_vms``: the
        position in ``vms`` of each closed-loop slot, in the order the Python engine would start
        them; ``record_buffer``: the run's ``RecordBuffer``; ``path_hit``: a read hit's path code
        (``collect.PATH_HIT``); ``refills``: per VM, how its stream draws a batch (0: by
        ``IOStream._refill_ios``, 1: uniform offsets, 2: sequential ones, in native code);
        ``max_batch``: the most I/Os a stream draws at once (``generators._BATCH``)."""
        cdef Py_ssize_t i
        spec = tier.spec
        if tier._exponential:
            raise ValueError("the native engine does not run exponential tier service")
        self.tier = tier
        self.overhead = tier._overhead
        self.read_command = tier._read_command
        self.has_processor = tier._has_processor
        self.per_byte = tier._read_seconds_per_byte
        self.latency = tier._read_latency
        self.read_channel = tier._read_channel
        self.lognormal = tier._lognormal
        table = list(tier._log_table)
        self.log_points = len(table)
        self.points = self.log_points - 1  # LOGNORMAL_POINTS
        self.log_table = <double*>malloc(max(1, self.log_points) * sizeof(double))
        for i in range(self.log_points):
            self.log_table[i] = table[i]
        self.stall_p = tier._stall_probability
        self.stall_time = tier._stall_time
        self.has_share = tier._read_share is not None
        self.share = tier._read_share if self.has_share else 1.0
        self.addressed = tier._addressed
        self.nch = len(tier._channel_free)
        self.channels = <double*>malloc(self.nch * sizeof(double))
        self.stream = tier._stream
        self.generator = self.stream.generator
        capsule = self.generator.bit_generator.capsule
        self.bitgen = <simcache_bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")
        self._vms = vms
        self._streams = streams
        self.vm_count = len(vms)
        self.vms = <VmState*>calloc(max(1, self.vm_count), sizeof(VmState))
        if self.vms == NULL:
            raise MemoryError()
        for i in range(self.vm_count):
            self._setup_vm(i, vms[i].index, reach[i], refills[i], max_batch)
        self.slot_count = len(slot_vms)
        self.slots = <Slot*>malloc(max(1, self.slot_count) * sizeof(Slot))
        for i in range(self.slot_count):
            self.slots[i].vm = slot_vms[i]
            self.slots[i].number = -1
        self.buffer = record_buffer
        self.path_hit = path_hit
        self.record_limit = record_buffer.limit
        self.records = <double*>malloc(self.record_limit * FIELDS * sizeof(double))
        if (self.vms == NULL or self.slots == NULL or self.log_table == NULL
                or self.channels == NULL or self.records == NULL):
            raise MemoryError()
        self.record_count = 0
        self.narrow = False

    def begin(self, clock) -> None:
        """Queue each slot's start at the clock's time, URGENT, with the clock's next event ids
        (where ``start_workload`` would schedule its slots' starts)."""
        cdef Py_ssize_t i
        self.eid = clock.eid
        for i in range(self.slot_count):
            self._push(clock.now, (<int64_t>URGENT << PRIORITY_SHIFT) + self.eid, i, BEGIN)
            self.eid += 1
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
        cdef Py_ssize_t i, n, start
        tier = self.tier
        channels = tier._channel_free
        for i in range(self.nch):
            self.channels[i] = channels[i]
        pipe = tier._pipe
        starts, ends = pipe._starts, pipe._ends
        n = len(starts)
        self._pipe_room(n)
        for i in range(n):
            self.starts[i] = starts[i]
            self.ends[i] = ends[i]
        self.pipe_n = n
        self.processor_free = tier._processor_free
        self.gc_until = tier._gc_until
        self.foreground_until = tier.foreground_until
        self.operations = tier.operations
        self.bytes_read = tier.bytes_read
        meter = tier.busy
        held = meter._intervals.getvalue()
        self.held = meter._held
        if len(held) != 16 * self.held:
            raise RuntimeError("the tier's busy meter holds intervals it does not count")
        self._held_room(self.held + 1)
        memcpy(self.intervals, <char*>held, 16 * self.held)
        self.carried = meter._carried
        self.swept_to = meter._swept_to
        self.limit = meter._limit
        stream = self.stream
        values = stream._values
        start = stream._next
        n = (stream._end - start) // 8
        free(self.leftover)
        self.leftover = <double*>malloc(max(1, n) * sizeof(double))
        if self.leftover == NULL:
            raise MemoryError()
        if n > 0:
            memcpy(self.leftover, (<char*>values) + start, 8 * n)
        self.left_next = 0
        self.left_end = n
        stream._values = b""
        stream._next = 0
        stream._end = 0
        for i in range(self.vm_count):
            vm = self._vms[i]
            self.vms[i].issued = vm.issued
            self._read_batch(i)
        self.hits = 0
        buffer = self.buffer
        # as RecordBuffer.add: hand the records on once the buffer and these hold `limit`
        self.record_room = max(1, self.record_limit - buffer.count)

    def sync_out(self) -> None:
        """Write the state to the Python objects (before a Python event, and at the end)."""
        cdef Py_ssize_t i
        tier = self.tier
        tier._channel_free[:] = [self.channels[i] for i in range(self.nch)]
        pipe = tier._pipe
        pipe._starts[:] = [self.starts[i] for i in range(self.pipe_n)]
        pipe._ends[:] = [self.ends[i] for i in range(self.pipe_n)]
        tier._processor_free = self.processor_free
        tier._gc_until = self.gc_until
        tier.foreground_until = self.foreground_until
        tier.operations = self.operations
        tier.bytes_read = self.bytes_read
        meter = tier.busy
        intervals = type(meter._intervals)()
        intervals.write(PyBytes_FromStringAndSize(<char*>self.intervals, 16 * self.held))
        meter._intervals = intervals
        meter._held = self.held
        meter._carried = self.carried
        meter._swept_to = self.swept_to
        meter._limit = self.limit
        stream = self.stream
        n = self.left_end - self.left_next
        stream._values = PyBytes_FromStringAndSize(<char*>(self.leftover + self.left_next), 8 * n)
        stream._next = 0
        stream._end = 8 * n
        self.left_next = self.left_end = 0
        for i in range(self.vm_count):
            vm = self._vms[i]
            vm.issued = self.vms[i].issued
            self._write_batch(i)
        in_flight = {}
        for i in range(self.slot_count):
            if self.slots[i].number >= 0:
                in_flight.setdefault(self.slots[i].vm, []).append(
                    (self.slots[i].number, self.slots[i].issued)
                )
        for i in range(self.vm_count):
            reads = self._vms[i].reads_in_flight
            reads.clear()
            for number, issued in sorted(in_flight.get(i, ())):
                reads[number] = issued
        host_cache = self._vms[0].host.cache if self.vm_count else None
        if host_cache is not None:
            host_cache.hits += self.hits
        self.hits = 0
        self._records_out(False)

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
                columns.append(
                    PyBytes_FromStringAndSize(<char*>(self.n_components + k * self.record_limit), 4 * n)
                )
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
        self, Py_ssize_t i, int64_t index, int64_t reach, int32_t refill, int64_t max_batch
    ) -> None:
        cdef VmState* vm = &self.vms[i]
        cdef Py_ssize_t k
        vm.index = index
        vm.reach = reach
        vm.refill = refill
        vm.max_batch = max_batch
        vm.writes = <unsigned char*>malloc(max_batch)
        vm.sizes = <int64_t*>malloc(max_batch * sizeof(int64_t))
        vm.offsets = <int64_t*>malloc(max_batch * sizeof(int64_t))
        if vm.writes == NULL or vm.sizes == NULL or vm.offsets == NULL:
            raise MemoryError()
        if refill == PYTHON_REFILL:
            return
        stream = self._streams[i]
        workload = stream.workload
        capsule = stream._rng.bit_generator.capsule
        vm.bitgen = <simcache_bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")
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

    def _read_batch(self, Py_ssize_t i) -> None:
        """Copy the stream's drawn batch (and where it is read, and its refill state)."""
        cdef VmState* vm = &self.vms[i]
        cdef Py_ssize_t k, count
        stream = self._streams[i]
        count = stream._io_count
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
        vm.io_next = stream._io_next
        vm.io_count = count
        vm.io_batch = stream._io_batch
        vm.cursor = stream._cursor

    def _write_batch(self, Py_ssize_t i) -> None:
        """Give the stream the batch, where it is read, and its refill state."""
        cdef VmState* vm = &self.vms[i]
        stream = self._streams[i]
        stream._writes = PyBytes_FromStringAndSize(<char*>vm.writes, vm.io_count)
        stream._io_sizes = PyBytes_FromStringAndSize(<char*>vm.sizes, 8 * vm.io_count)
        stream._offsets = PyBytes_FromStringAndSize(<char*>vm.offsets, 8 * vm.io_count)
        stream._io_count = vm.io_count
        stream._io_next = vm.io_next
        stream._io_batch = vm.io_batch
        stream._cursor = vm.cursor

    def _refill(self, Py_ssize_t i) -> None:
        """``IOStream.next_io``'s refill by the stream itself: the cases the native code lacks."""
        self._write_batch(i)
        self._streams[i]._refill_ios()
        self._read_batch(i)

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
        return 0

    # --- growth ---------------------------------------------------------------------------------

    cdef int _pipe_room(self, Py_ssize_t n) except -1 nogil:
        cdef Py_ssize_t cap = self.pipe_cap
        if n <= cap:
            return 0
        while cap < n:
            cap *= 2
        self.starts = <double*>realloc(self.starts, cap * sizeof(double))
        self.ends = <double*>realloc(self.ends, cap * sizeof(double))
        if self.starts == NULL or self.ends == NULL:
            with gil:
                raise MemoryError()
        self.pipe_cap = cap
        return 0

    cdef int _held_room(self, int64_t n) except -1 nogil:
        cdef int64_t cap = self.held_cap
        if n <= cap:
            return 0
        while cap < n:
            cap *= 2
        self.intervals = <double*>realloc(self.intervals, 2 * cap * sizeof(double))
        if self.intervals == NULL:
            with gil:
                raise MemoryError()
        self.held_cap = cap
        return 0

    # --- the event queue ------------------------------------------------------------------------

    cdef int _push(self, double time, int64_t key, int32_t slot, int32_t kind) except -1 nogil:
        cdef Py_ssize_t pos, parent
        if self.heap_size == self.heap_cap:
            self.heap = <Entry*>realloc(self.heap, 2 * self.heap_cap * sizeof(Entry))
            if self.heap == NULL:
                with gil:
                    raise MemoryError()
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

    # --- the tier (Tier.submit for a read) ------------------------------------------------------

    cdef inline double _uniform(self) noexcept nogil:
        cdef double value
        if self.left_next < self.left_end:
            value = self.leftover[self.left_next]
            self.left_next += 1
            return value
        return self.bitgen.next_double(self.bitgen.state)

    cdef double _book(self, double now, double ready, double duration) except? -1 nogil:
        """TransferPipe.book."""
        cdef Py_ssize_t done, low, high, middle, index, n = self.pipe_n
        cdef double start
        low = 0
        high = n
        while low < high:  # bisect_right(ends, now)
            middle = (low + high) >> 1
            if now < self.ends[middle]:
                high = middle
            else:
                low = middle + 1
        done = low
        if done:
            memmove(self.starts, self.starts + done, (n - done) * sizeof(double))
            memmove(self.ends, self.ends + done, (n - done) * sizeof(double))
            n -= done
            self.pipe_n = n
        if n == 0 or ready >= self.ends[n - 1]:
            self._pipe_room(n + 1)
            self.starts[n] = ready
            self.ends[n] = ready + duration
            self.pipe_n = n + 1
            return ready
        low = 0
        high = n
        while low < high:  # bisect_right(ends, ready)
            middle = (low + high) >> 1
            if ready < self.ends[middle]:
                high = middle
            else:
                low = middle + 1
        index = low
        start = ready
        while index < n and self.starts[index] - start < duration:
            if self.ends[index] > start:
                start = self.ends[index]
            index += 1
        self._pipe_room(n + 1)
        memmove(self.starts + index + 1, self.starts + index, (n - index) * sizeof(double))
        memmove(self.ends + index + 1, self.ends + index, (n - index) * sizeof(double))
        self.starts[index] = start
        self.ends[index] = start + duration
        self.pipe_n = n + 1
        return start

    cdef void _heapreplace(self, double item) noexcept nogil:
        """heapq.heapreplace on the channels' binary heap (CPython's siftup, then siftdown)."""
        cdef double* heap = self.channels
        cdef Py_ssize_t end = self.nch, pos = 0, child, right, parent
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

    cdef void _raise_key(self, Py_ssize_t index, double value) noexcept nogil:
        """tier._raise_key."""
        cdef double* heap = self.channels
        cdef Py_ssize_t size = self.nch, child, right
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

    cdef int _meter_add(self, double start, double finish, double now) except -1 nogil:
        """BusyMeter.add."""
        self._held_room(self.held + 1)
        self.intervals[2 * self.held] = start
        self.intervals[2 * self.held + 1] = finish
        self.held += 1
        if self.held >= self.limit:
            self.carried += self._sweep(self.swept_to, now)
            self.swept_to = now
            self.limit = FOLD_AT if FOLD_AT > 2 * self.held else 2 * self.held
        return 0

    cdef double _sweep(self, double window_start, double window_end) noexcept nogil:
        """BusyMeter._sweep, in place."""
        cdef double busy = 0.0, start, finish, low, high
        cdef int64_t at, kept = 0
        for at in range(self.held):
            start = self.intervals[2 * at]
            finish = self.intervals[2 * at + 1]
            if window_start <= start and finish <= window_end:
                busy += finish - start
                continue
            low = start if start > window_start else window_start
            high = finish if finish < window_end else window_end
            if high > low:
                busy += high - low
            if finish > window_end:
                self.intervals[2 * kept] = start
                self.intervals[2 * kept + 1] = finish
                kept += 1
        self.held = kept
        return busy

    cdef double _read(self, double now, int64_t size) except? -1 nogil:
        """Tier.submit(now, size, False): when the read completes."""
        cdef double ready = now + self.overhead, free_at, latency, position, low, transfer
        cdef double start, transfer_start, finish, busy, share
        cdef int64_t index
        cdef Py_ssize_t die
        if self.has_processor and self.read_command > 0.0:
            free_at = self.processor_free
            ready = (ready if ready > free_at else free_at) + self.read_command
            self.processor_free = ready
        self.bytes_read += size
        latency = self.latency
        if self.lognormal:
            position = self._uniform() * self.points
            index = <int64_t>position
            low = self.log_table[index]
            latency *= low + (position - index) * (self.log_table[index + 1] - low)
        if self.stall_p > 0.0 and self._uniform() < self.stall_p:
            latency += -self.stall_time * log1p(-self._uniform())
        if self.read_channel > 0.0:
            latency += size * self.read_channel
        transfer = size * self.per_byte
        if not self.addressed and not self.has_share:
            start = self.channels[0] if self.channels[0] > ready else ready
            transfer_start = (
                self._book(now, start + latency, transfer) if transfer else start + latency
            )
            finish = transfer_start + transfer
            self._heapreplace(finish)
        else:
            die = <Py_ssize_t>(self._uniform() * self.nch)
            busy = self.channels[die]
            share = 1.0
            if self.has_share:
                share = self.share
                if busy < self.gc_until:
                    busy = self.gc_until
            if busy <= ready:
                start = ready
            elif share >= 1.0:
                start = busy
            else:
                start = ready + share * (busy - ready)
            transfer_start = (
                self._book(now, start + latency, transfer) if transfer else start + latency
            )
            finish = transfer_start + transfer
            if finish > self.channels[die]:
                self._raise_key(die, finish)
        if finish > self.foreground_until:
            self.foreground_until = finish
        self.operations += 1
        self._meter_add(start, finish, now)
        return finish

    # --- the slots ------------------------------------------------------------------------------

    cdef int _issue(self, int32_t s, double now) except -1 nogil:
        """_ClosedSlot._issue with VM.start's read hit: the slot's next I/O, booked now."""
        cdef Slot* slot = &self.slots[s]
        cdef VmState* vm = &self.vms[slot.vm]
        cdef int64_t i, size, offset
        cdef double done
        if vm.io_next >= vm.io_count:
            if vm.refill == PYTHON_REFILL:
                with gil:
                    self._refill(slot.vm)
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
        self.hits += 1  # Cache.lookup: every line held
        done = self._read(now, size)
        self._push(now + (done - now), (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, s, SERVED)
        self.eid += 1
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
            self._issue(entry.slot, entry.time)
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
