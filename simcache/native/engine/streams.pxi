# Ports simcache.workloads.generators.IOStream for the engine's VMs: a VM's setup from its stream
# and duty clock (_setup_vm, _setup_duty), the drawn batch and gaps copied in and out
# (_read_batch, _write_batch, _read_gaps, _write_gaps), the next batch drawn by the stream itself
# (_refill) or natively with the same draws (_refill_native), the gaps (_draw_gap, _refill_gaps)
# and IOStream.next_gap with the duty cycle (_next_gap).

cdef int _setup_vm(
    Engine self,
    Py_ssize_t i,
    int64_t index,
    int32_t tier,
    int64_t reach,
    int32_t refill,
    int64_t max_batch,
) except -1:
    cdef VmState* vm = &self.vms[i]
    cdef Py_ssize_t k
    stream = self._streams[i]
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
    workload = stream.workload
    if refill == TRACE_REFILL:  # drivers.start_workload's replay: open, or closed-loop slots
        vm.open = stream.spec.replay == "open"
        vm.think = workload.think_time
        vm.duty = DUTY_NONE
        return 0
    capsule = stream._rng.bit_generator.capsule
    vm.bitgen = <simcache_bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")
    vm.open = workload.mode == "open"
    vm.think = workload.think_time
    vm.mean_gap = stream._mean_gap
    vm.uniform_arrivals = stream._uniform_arrivals
    _setup_duty(self, vm, stream.clock)
    if refill == PYTHON_REFILL:
        return 0
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
    if refill == ZIPF_REFILL:
        vm.theta = stream._zipf.theta
        vm.zipf_low = stream._zipf._low
        vm.zipf_high = stream._zipf._high
        vm.multiplier = stream._scatter
        if self._zipf_thresholds is None:  # the engine's first Zipf VM
            self._zipf_thresholds = {}
            _loops_still_numpys()
        vm.direct_power = loops_checked and _power_agrees(vm.theta)
        thresholds = self._zipf_thresholds.get(vm.theta)
        if thresholds is None:  # shared by the VMs of a theta (refills are serial)
            thresholds = self._zipf_thresholds[vm.theta] = _threshold_table(vm.theta)
        vm.thresholds = _data(thresholds)
        if self._zipf_work is None:  # the ufuncs' operands, shared by the VMs (refills are serial)
            self._zipf_work = [np.empty(max_batch) for k in range(ZIPF_ARRAYS)]
            for k in range(ZIPF_ARRAYS):
                self.zipf[k] = _data(self._zipf_work[k])
    return 0


# The kept thresholds' tables of the thetas this process ran (a pure function of theta and rank:
# a run after the first of a check's seeds, a sweep's points or a replication starts with the
# ranks its predecessors computed), up to THRESHOLD_TABLES of them (512 KiB each). Read and
# written by a Zipf refill only, which holds the GIL from its first read to its last write (no
# Python call between them releases it); two writers would write the same value anyway.
_THRESHOLD_TABLES: dict = {}
cdef enum:
    THRESHOLD_TABLES = 32
# a table's "not computed yet": a NaN of these bits, told by its bits (a build with
# -ffinite-math-only would fold x != x, or isnan, to false)
cdef uint64_t UNKNOWN_BITS = 0x7FF8DEADBEEF0000ULL


cdef inline bint _known(double value) noexcept nogil:
    """Whether a table's entry holds a threshold (not UNKNOWN_BITS)."""
    cdef uint64_t bits
    memcpy(&bits, &value, sizeof(double))
    return bits != UNKNOWN_BITS


cdef object _threshold_table(double theta):
    """The kept thresholds' table of ``theta`` (ranks 1..ZIPF_TABLE, UNKNOWN_BITS where not
    computed yet): the process's, or a new one (kept for the next runs while there is room)."""
    table = _THRESHOLD_TABLES.get(theta)
    if table is None:
        table = np.full(ZIPF_TABLE, UNKNOWN_BITS, dtype=np.uint64).view(np.float64)
        if len(_THRESHOLD_TABLES) < THRESHOLD_TABLES:
            _THRESHOLD_TABLES[theta] = table
    return table


cdef double* _data(array) except NULL:
    """The first item of a contiguous float64 numpy array."""
    cdef double[::1] view = array
    return &view[0]


cdef int _setup_duty(Engine self, VmState* vm, clock) except -1:
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


cdef int _read_batch(Engine self, Py_ssize_t i) except -1:
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
        return 0  # the batch the engine holds
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
    return 0


cdef int _write_batch(Engine self, Py_ssize_t i) except -1:
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
    return 0


cdef int _read_gaps(Engine self, Py_ssize_t i) except -1:
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
    return 0


cdef int _write_gaps(Engine self, Py_ssize_t i) except -1:
    cdef VmState* vm = &self.vms[i]
    stream = self._streams[i]
    stream._gaps = self._gaps[i]  # the bytes the gaps were drawn as (_refill_gaps)
    stream._gap_count = vm.gap_count
    stream._gap_next = vm.gap_next
    stream._gap_batch = vm.gap_batch
    stream._first_gap_fraction = vm.first_fraction if vm.first_pending else None
    return 0


cdef int _refill(Engine self, Py_ssize_t i) except -1:
    """``IOStream.next_io``'s refill by the stream itself: the cases the native code lacks."""
    _write_batch(self, i)
    self._streams[i]._refill_ios()
    _read_batch(self, i)
    return 0


cdef bint _trace_next(Engine self, int32_t v) except -1 nogil:
    """``TraceStream.next_time``'s test: whether the replay has a row left (the next rows read
    from the stream when these are all issued)."""
    cdef VmState* vm = &self.vms[v]
    while vm.io_next >= vm.io_count:
        if vm.trace_over:
            return False
        with gil:
            _trace_rows(self, v)
    return True


cdef int _trace_rows(Engine self, Py_ssize_t i) except -1:
    """The replay's next rows (``TraceStream.next_rows``) into the VM's batch, their issue times
    into its gaps; none left: the replay is over."""
    cdef VmState* vm = &self.vms[i]
    cdef Py_ssize_t count
    rows = self._streams[i].next_rows()
    vm.io_next = 0
    vm.io_count = 0
    if rows is None:
        vm.trace_over = True
        return 0
    times, writes, sizes, offsets = rows
    count = len(times)
    if count > vm.max_batch:
        raise RuntimeError(f"a trace refill of {count} rows, more than {vm.max_batch}")
    cdef const double[::1] t
    cdef const unsigned char[::1] w
    cdef const int64_t[::1] z, o
    if count:
        t = np.ascontiguousarray(times, dtype=np.float64)
        w = np.ascontiguousarray(writes, dtype=np.uint8)
        z = np.ascontiguousarray(sizes, dtype=np.int64)
        o = np.ascontiguousarray(offsets, dtype=np.int64)
        memcpy(vm.gaps, &t[0], 8 * count)
        memcpy(vm.writes, &w[0], count)
        memcpy(vm.sizes, &z[0], 8 * count)
        memcpy(vm.offsets, &o[0], 8 * count)
    vm.io_count = count
    return 0


cdef int _trace_out(Engine self, Py_ssize_t i) except -1:
    """Hand the replay back to its stream (``TraceStream.rest``): the rows read but not issued,
    and the I/Os issued."""
    cdef VmState* vm = &self.vms[i]
    cdef Py_ssize_t k
    times = [vm.gaps[k] for k in range(vm.io_next, vm.io_count)]
    ios = [
        (vm.writes[k] != 0, vm.sizes[k], vm.offsets[k]) for k in range(vm.io_next, vm.io_count)
    ]
    self._streams[i].rest(times, ios, vm.issued)
    return 0


cdef int _refill_gaps(Engine self, Py_ssize_t i) except -1:
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
    return 0


cdef int _refill_native(Engine self, VmState* vm) except -1 nogil:
    """IOStream._refill_ios for uniform or sequential offsets (one size mix, no runs): the
    same draws from the stream's generator, in the same order (``Generator.random`` for the
    ops, then for the sizes if the mix has more than one, then ``Generator.integers`` for
    uniform blocks)."""
    cdef int64_t count = _draw_ops(vm), k, span, total = 0
    cdef simcache_bitgen_t* bitgen = vm.bitgen
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
    _batch_drawn(vm, count)
    return 0


cdef int64_t _draw_ops(VmState* vm) noexcept nogil:
    """The first draws of every native refill: the batch's size (``IOStream._io_batch``, doubled
    for the next, up to ``max_batch``), then each I/O's op (``Generator.random``, a write at or
    above the read fraction) and, with more than one size, its size (a uniform placed in the
    cumulative mix). Returns the batch's size."""
    cdef int64_t count = vm.io_batch, k, j
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
    return count


cdef inline void _batch_drawn(VmState* vm, int64_t count) noexcept nogil:
    """A native refill's batch of ``count`` I/Os is the one read next (from its first)."""
    vm.io_count = count
    vm.io_next = 0
    vm.batch_drawn = True


cdef int _refill_zipf(Engine self, VmState* vm) except -1:
    """IOStream._refill_ios for Zipf offsets (one size mix, no runs): the ops' and sizes' draws
    as ``_refill_native``'s, then ``ZipfRanks.draw``'s candidates, rejected ones redrawn as a
    block, and ``scatter``. Every step is ``ZipfRanks``' float operation for operation; its
    logarithms, exponentials and powers are numpy's own float64 loops on the same operands
    (numpy's vectorised ``log1p``, ``exp``, ``log``, ``expm1`` and ``power`` differ from the C
    library's in the last bit for a few percent of values, which would move a rank now and then;
    ``_ufunc``), so the ranks are the stream's bit for bit."""
    cdef int64_t count = _draw_ops(vm), k, j, m, kept_n, shift
    cdef double* ranks = self.zipf[Z_RANK]
    cdef double* pending = self.zipf[Z_PENDING]
    cdef double* cand = self.zipf[Z_K]
    cdef double* kept = self.zipf[Z_KEPT]
    cdef uint64_t r, acc, n = <uint64_t>vm.blocks, limb
    # ZipfRanks.draw: candidates for every I/O, then for the rejected ones, until none is
    m = count
    for k in range(count):
        pending[k] = <double>k
    while m:
        _zipf_candidates(self, vm, m)
        kept_n = 0
        for j in range(m):
            if kept[j] != 0.0:
                ranks[<int64_t>pending[j]] = cand[j]
            else:
                pending[kept_n] = pending[j]
                kept_n += 1
        m = kept_n
    for k in range(count):  # scatter(ranks - 1, n, a), as uint64
        r = <uint64_t>(<int64_t>ranks[k] - 1)
        if n <= (<uint64_t>1 << 32):
            acc = (vm.multiplier * r) % n
        else:  # 16 bits of r at a time, from the top (Horner's rule mod n)
            acc = 0
            for shift in range(32, -1, -16):
                limb = (r >> shift) & 0xFFFF
                acc = ((acc << 16) % n + vm.multiplier * limb) % n
        vm.offsets[k] = <int64_t>acc * BLOCK
    _batch_drawn(vm, count)
    return 0


cdef int _zipf_candidates(Engine self, VmState* vm, int64_t m) except -1:
    """ZipfRanks._candidates for ``m`` draws: the candidate ranks (as floats) in the work array
    Z_K, whether each is kept (1.0 or 0.0) in Z_KEPT.

    The kept test's threshold, ``_integral(k + 0.5) - k**-theta``, is a function of the rank
    alone (and theta): computed as ZipfRanks computes it (the same float operations and loops,
    element by element), once per rank up to ZIPF_TABLE (the theta's table: the hot ranks, most
    of the draws) and for each candidate of a rank above it (a rank 1 is kept whatever its
    threshold: none is computed)."""
    cdef int64_t j, i, rank, need = 0
    cdef double* u = self.zipf[Z_U]
    cdef double* t = self.zipf[Z_T]
    cdef double* w = self.zipf[Z_W]
    cdef double* x = self.zipf[Z_X]
    cdef double* k = self.zipf[Z_K]
    cdef double* half = self.zipf[Z_HALF]
    cdef double* kept = self.zipf[Z_KEPT]
    cdef double* p = self.zipf[Z_P]
    cdef double* threshold = self.zipf[Z_THRESHOLD]
    cdef double* need_k = self.zipf[Z_NEED_K]
    cdef double* need_at = self.zipf[Z_NEED_AT]
    cdef double* table = vm.thresholds
    cdef double om = 1.0 - vm.theta, span = vm.zipf_high - vm.zipf_low, n = <double>vm.blocks
    cdef double v, q, value
    cdef simcache_bitgen_t* bitgen = vm.bitgen
    # u = low + rng.random(m) * (high - low); x = exp(_log1p_over((1 - theta) u) u)
    for j in range(m):
        u[j] = vm.zipf_low + bitgen.next_double(bitgen.state) * span
        t[j] = om * u[j]
    _series_safe(t, m)
    _ufunc(self, U_LOG1P, Z_T, Z_W, m)
    for j in range(m):
        v = om * u[j]
        if fabs(v) < SERIES_BELOW:
            q = 1.0 - v / 2.0 + v * v / 3.0
        else:
            q = w[j] / t[j]
        x[j] = q * u[j]
    _ufunc(self, U_EXP, Z_X, Z_W, m)
    # x to n where not finite; k = clip(floor(x + 0.5), 1, n); the thresholds known, and the
    # ranks whose threshold is to be computed (with k + 0.5, and where their candidates are)
    for j in range(m):
        v = w[j] if w[j] < INFINITY else n
        v = floor(v + 0.5)
        k[j] = 1.0 if v < 1.0 else (n if v > n else v)
        if k[j] == 1.0:
            continue
        rank = <int64_t>k[j]
        if rank <= ZIPF_TABLE and _known(table[rank - 1]):
            threshold[j] = table[rank - 1]
            continue
        need_k[need] = k[j]
        half[need] = k[j] + 0.5
        need_at[need] = <double>j
        need += 1
    if need:
        # _integral(k + 0.5) - k^-theta
        _ufunc(self, U_LOG, Z_HALF, Z_X, need)  # log_x
        for i in range(need):
            t[i] = om * x[i]
        _series_safe(t, need)
        _ufunc(self, U_EXPM1, Z_T, Z_W, need)
        if direct_loops and vm.direct_power:
            _power(need_k, -vm.theta, p, need)
        else:  # as `k**-theta` (numpy's scalar-power shortcuts too)
            work = self._zipf_work
            work[Z_P][:need] = work[Z_NEED_K][:need] ** -vm.theta
        for i in range(need):
            v = om * x[i]
            if fabs(v) < SERIES_BELOW:
                q = 1.0 + v / 2.0 + v * v / 6.0
            else:
                q = w[i] / t[i]
            value = q * x[i] - p[i]
            threshold[<int64_t>need_at[i]] = value
            rank = <int64_t>need_k[i]
            if rank <= ZIPF_TABLE:
                table[rank - 1] = value
    # kept: k == 1, or u >= the threshold
    for j in range(m):
        kept[j] = 1.0 if k[j] == 1.0 or u[j] >= threshold[j] else 0.0
    return 0


cdef int _ufunc(Engine self, int which, int source, int target, int64_t m) except -1:
    """One of the refill's ufuncs on the work array ``source`` into ``target`` (``m`` values):
    numpy's float64 loop called directly where it was checked (ufuncs.pxi), else the ufunc."""
    if direct_loops:
        _apply1(which, self.zipf[source], self.zipf[target], m)
        return 0
    work = self._zipf_work
    getattr(np, UFUNC_NAMES[which])(work[source][:m], out=work[target][:m])
    return 0


cdef void _series_safe(double* t, int64_t m) noexcept nogil:
    """``_log1p_over``'s and ``_expm1_over``'s ``safe``: 1.0 for the ufunc where |t| is below
    SERIES_BELOW (their series gives the quotient there)."""
    cdef int64_t j
    for j in range(m):
        if fabs(t[j]) < SERIES_BELOW:
            t[j] = 1.0


cdef double _draw_gap(Engine self, int32_t v) except? -1 nogil:
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
            _refill_gaps(self, v)
        i = 0
    vm.gap_next = i + 1
    return vm.gaps[i]


cdef double _next_gap(Engine self, int32_t v, double now) except? -1 nogil:
    """IOStream.next_gap: seconds from ``now`` to the VM's next open-loop arrival."""
    cdef VmState* vm = &self.vms[v]
    cdef double t, on, cycle, gap, end, periods, whole
    if vm.duty == DUTY_NONE:
        return (now + _draw_gap(self, v)) - now
    if vm.duty == DUTY_PROFILE:
        return _advance(vm, now, _draw_gap(self, v) * vm.peak_factor) - now
    t = now
    on = vm.on  # 0 for a sine cycle: its one window never ends
    cycle = on + vm.off
    while True:
        gap = _draw_gap(self, v)
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
