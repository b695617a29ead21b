# The boundary with the Python components: a tier's figures (_setup_tier), the misses' setup
# (_setup_misses: caches, array, network ports, the flows' pools), and the state the Python
# objects hold, read in after each Python event and written back before it (Engine.sync_in,
# sync_out): the tiers (_tier_in, _tier_out), busy meters (_meter_in, _meter_out: only the
# intervals added since), uniform streams (_stream_in, _stream_out), the caches, array and
# network (_misses_in, _misses_out: the flows in flight shown to the FlowNetwork as _Flow).

cdef object _typed_view(char* data, Py_ssize_t n, str format):
    """``n`` items at ``data`` (format ``q``: int64, ``i``: int32) as a memoryview of a bytes copy,
    which a ``vec`` takes at memory speed (from a list: an int object per item)."""
    cdef Py_ssize_t size = 8 if format == "q" else 4
    return memoryview(PyBytes_FromStringAndSize(data, n * size)).cast(format)


cdef int _setup_tier(Engine self, Py_ssize_t i) except -1:
    cdef TierState* t = &self.tiers[i]
    cdef Py_ssize_t k
    tier = self._tiers[i]
    t.exponential = tier._exponential
    t.overhead = tier._overhead
    t.read_command = tier._read_command
    t.has_processor = tier._has_processor
    t.per_byte = tier._read_seconds_per_byte
    t.latency = tier._read_latency
    t.read_channel = tier._read_channel
    t.lognormal = tier._lognormal
    table = list(tier._log_table)
    write_table = list(tier._write_log_table)
    if len(write_table) != len(table):
        raise ValueError("a tier's read and write lognormal tables differ in length")
    t.log_points = len(table)
    t.points = t.log_points - 1  # LOGNORMAL_POINTS
    t.log_table = <double*>malloc(max(1, t.log_points) * sizeof(double))
    t.write_log_table = <double*>malloc(max(1, t.log_points) * sizeof(double))
    t.nch = len(tier._channel_free)
    t.channels = <double*>malloc(max(1, t.nch) * sizeof(double))
    t.pipe_cap = 16
    t.pipe_head = 0
    t.starts = t.starts_base = <double*>malloc(t.pipe_cap * sizeof(double))
    t.ends = t.ends_base = <double*>malloc(t.pipe_cap * sizeof(double))
    t.m.held_cap = FOLD_AT
    t.m.intervals = <double*>malloc(2 * t.m.held_cap * sizeof(double))
    if (t.log_table == NULL or t.write_log_table == NULL or t.channels == NULL
            or t.starts == NULL or t.ends == NULL
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
    return 0


cdef int _tier_in(Engine self, Py_ssize_t i) except -1:
    cdef TierState* t = &self.tiers[i]
    cdef Py_ssize_t k, n, start
    tier = self._tiers[i]
    channels = tier._channel_free
    for k in range(t.nch):
        t.channels[k] = channels[k]
    pipe = tier._pipe
    starts, ends = pipe._starts, pipe._ends
    n = len(starts)
    t.pipe_head = 0
    t.starts = t.starts_base
    t.ends = t.ends_base
    t.pipe_n = 0
    _pipe_room(t, n)
    for k in range(n):
        t.starts[k] = starts[k]
        t.ends[k] = ends[k]
    t.pipe_n = n
    t.processor_free = tier._processor_free
    # the speeds (Tier.set_speed: a device_slow event changes them)
    t.overhead = tier._overhead
    t.read_command = tier._read_command
    t.per_byte = tier._read_seconds_per_byte
    t.latency = tier._read_latency
    t.read_channel = tier._read_channel
    t.gc_until = tier._gc_until
    t.foreground_until = tier.foreground_until
    t.operations = tier.operations
    t.bytes_read = tier.bytes_read
    t.bytes_written = tier.bytes_written
    t.write_command = tier._write_command
    t.write_per_byte = tier._write_seconds_per_byte
    t.write_latency = tier._write_latency
    t.write_channel = tier._write_channel
    t.has_clean_pool = tier._has_clean_pool
    t.pool = tier._pool
    t.pool_time = tier._pool_time
    t.gc_rate = tier._gc_rate
    t.pool_depth = tier._pool_depth
    t.gc_pass = tier._gc_pass
    t.gc_wait_seconds = tier.gc_wait_seconds
    t.ran_dry_at = tier.ran_dry_at
    _meter_in(self, &t.m, tier.busy, i)
    _stream_in(self, &t.u, self._tier_streams[i])
    t.hits = 0
    return 0


cdef int _tier_out(Engine self, Py_ssize_t i) except -1:
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
    tier.ran_dry_at = t.ran_dry_at
    _meter_out(self, &t.m, tier.busy, i)
    _stream_out(self, &t.u, self._tier_streams[i])
    self._caches[i].hits += t.hits
    t.hits = 0
    return 0


cdef int _meter_in(Engine self, Meter* t, meter, Py_ssize_t i) except -1:
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


cdef int _meter_out(Engine self, Meter* t, meter, Py_ssize_t i) except -1:
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


cdef int _stream_in(Engine self, Uniforms* t, stream) except -1:
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


cdef int _stream_out(Engine self, Uniforms* t, stream) except -1:
    """Give a ``UniformStream`` back the rest of its block."""
    cdef Py_ssize_t n = t.left_end - t.left_next
    stream._values = PyBytes_FromStringAndSize(<char*>(t.leftover + t.left_next), 8 * n)
    stream._next = 0
    stream._end = 8 * n
    t.left_next = t.left_end = 0
    return 0


cdef tuple _cache_mark(cache):
    """What a Python event that touched a read cache would change: its counters (every lookup,
    insert and eviction counts) and its lines' counts and positions. By value, not identity: the
    compiled engine boxes a ``vec`` column into a new object at each read."""
    return (
        cache.hits, cache.misses, cache.inserted_lines, cache.evicted_lines,
        len(cache._log), len(cache._slots), cache._count, cache._head, cache._dead,
    )


cdef int _tiers_failed_in(Engine self) except -1:
    """A host whose tier failed since the last sync (``device_failure``'s process: Host.tier_up
    off, its ReadCache cleared): from now on nothing fills its cache, its hits in flight fail and
    its write-through writes skip the tier (``tier_down``); its cache is read again from the
    cleared Python one (a cache that held its disks whole no longer does); its VMs write through
    (VM.tier_failed; under write-back, native/engine/failures.pxi). A host that died
    (``host_failure``'s process: Host.alive off, its tier down with it) is marked dead
    (``host_dead``); its cache is not cleared (the Python engine keeps it as it was), so its lines
    stay the engine's (read by nobody: its VMs stopped)."""
    cdef Py_ssize_t i, v
    cdef CacheState* c
    for i in range(self.tier_count):
        if not self.host_dead[i] and not self._hosts[i].alive:
            self.host_dead[i] = True
            self.any_dead = True
        if self.tier_down[i] or self._hosts[i].tier_up:
            continue
        self.tier_down[i] = True
        if not self.host_dead[i]:
            c = &self.caches[i]
            c.full = False
            c.changed = False  # the lines the engine held are gone with the device
            self._cache_seen[i] = None
        for v in range(self.vm_count):  # its write-back VMs write through (VM.tier_failed)
            if self.vms[v].tier == i:
                self.vms[v].write_through = self._vms[v].write_through
                # their misses wait for the writes holders took over (engine/pending.pxi)
                self.vms[v].pd_wait = (
                    self.pd_on and self._vms[v].ha.pending_destage is not None
                )
    return 0


cdef int _misses_in(Engine self) except -1:
    """Read the caches (those not full), the array and the network's ports (sync_in)."""
    cdef Py_ssize_t i, k, n
    cdef CacheState* c
    cdef ArrayState* a = &self.array
    for i in range(self.tier_count):
        c = &self.caches[i]
        if c.full:
            continue
        cache = self._caches[i]
        seen = self._cache_seen[i]
        c.hits = cache.hits
        c.misses = cache.misses
        c.inserted = cache.inserted_lines
        c.evicted = cache.evicted_lines
        if seen is not None and _cache_mark(cache) == seen:
            continue  # the lines the engine holds (those sync_out deferred, if changed)
        if c.changed:
            raise RuntimeError(
                "a Python event changed a read cache whose lines the native engine holds"
            )
        log = memoryview(cache._log).tobytes()  # a vec is a buffer: its items at once
        slots = memoryview(cache._slots).tobytes()
        free(c.log)
        free(c.slots)
        c.log_cap = max(64, len(log) // 8)
        c.log = <int64_t*>malloc(c.log_cap * sizeof(int64_t))
        c.slots = <int32_t*>malloc(max(4, len(slots)))
        if c.log == NULL or c.slots == NULL:
            raise MemoryError()
        memcpy(c.log, <char*>log, len(log))
        memcpy(c.slots, <char*>slots, len(slots))
        c.log_n = len(log) // 8
        c.mask = len(slots) // 4 - 1
        c.head = cache._head
        c.dead = cache._dead
        c.count = cache._count
        c.changed = False
        self._cache_seen[i] = _cache_mark(cache)
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
    a.drive_cache_hits = spindles.drive_cache_hits
    for k in range(a.spindles if a.segments else 0):
        segments = list(spindles._segment_caches[k].items())
        if len(segments) > a.segments:
            raise RuntimeError("a drive's buffer holds more segments than it has")
        for n, (position, held) in enumerate(segments):
            a.seg_pos[k * (a.segments + 1) + n] = position
            a.seg_len[k * (a.segments + 1) + n] = held
        a.seg_n[k] = len(segments)
    for k in range(a.spindles if a.choose_among > 1 else 0):
        pending = spindles._pending[k]
        a.pend_n[k] = 0
        for finish in pending:
            _pend_add(a, k, finish)
        pool = spindles._pool[k]
        if len(pool) > a.choose_among:
            raise RuntimeError("a drive's pool holds more commands than it chooses among")
        for n, (position, angle) in enumerate(pool):
            a.pool_pos[k * a.choose_among + n] = position
            a.pool_angle[k * a.choose_among + n] = angle
        a.pool_n[k] = len(pool)
        a.span_lo[k], a.span_hi[k] = spindles._span[k]
    a.read_cache_hits = array.read_cache_hits
    a.read_scale = array._read_scale  # (an array event's process changes them: Array.degrade)
    a.rmw_scale = array._rmw_scale
    a.plain_scale = array._plain_scale
    # the controller read cache's lines: the engine's (those sync_out deferred, if changed) unless
    # a Python event submitted a request to the array (nothing in this class does), by value:
    # every request adds to bytes_read or bytes_written
    if a.rc_lines and (array.bytes_read, array.bytes_written) != self._rc_seen:
        if a.rc_changed:
            raise RuntimeError(
                "a Python event used the array whose read-cache lines the native engine holds"
            )
        lines = array._lines
        a.rc_first = a.rc_last = a.rc_free = -1
        a.rc_count = a.rc_used = 0
        _rc_nodes(a, max(1, len(lines)))
        memset(a.rc_slots, 0, (a.rc_mask + 1) * sizeof(int64_t))
        for line in lines:
            _rc_put(a, line)
        a.rc_changed = False
    a.bytes_read = array.bytes_read
    self.aw.bytes_written = array.bytes_written
    self.aw.full_stripe_writes = array.full_stripe_writes
    self.aw.cache_flushes = array.cache_flushes
    a.front_end_ios = array.front_end_ios
    a.back_end_ios = array.back_end_ios
    _meter_in(self, &a.m, spindles.busy, self.tier_count)
    _stream_in(self, &a.u, array._stream)
    return _ports_in(self)


cdef int _ports_in(Engine self) except -1:
    """Read the network's ports (and forget the flows sync_out showed the network)."""
    cdef Py_ssize_t i
    cdef PortState* port
    for i in range(self.port_count):
        port = &self.ports[i]
        p = self._ports[i]
        port.capacity = p.capacity
        port.window = p.window
        port.delivered = p.delivered_bytes
        port.carried = p.carried_bytes
        port.packets = p.packets
        port.recent = p.recent_utilization
        if port.nactive == 0:
            port.weight_sum = 0.0
            port.share = INFINITY
    self._network._in_flight.clear()  # the engine's flows (sync_out showed them)
    return 0


cdef tuple _ports_sample(Engine self, double at):
    """The ports' bytes carried by ``at`` (a list in the model's port order, the sampler's) and the
    flows still sending then, as FlowNetwork.sync and in_flight count them on the flows _ports_out
    shows, on the engine's ports in place (as sync_in read them back): a port of a flow in flight
    from its delivered bytes plus each such flow's bytes moved, in the flows' order."""
    cdef Py_ssize_t k
    cdef int32_t k2, fi
    cdef FlowState* f
    cdef double left
    cdef int64_t flows = 0
    fi = self.flight_head
    while fi >= 0:
        f = &self.flows[fi]
        for k2 in range(f.nports):
            self.ports[f.ports[k2]].carried = self.ports[f.ports[k2]].delivered
        fi = f.flight_next
    fi = self.flight_head
    while fi >= 0:
        f = &self.flows[fi]
        fi = f.flight_next
        left = f.remaining - f.rate * (at - f.stamp)
        for k2 in range(f.nports):
            self.ports[f.ports[k2]].carried += f.size - (left if left > 0.0 else 0.0)
        if f.finish > at:
            flows += 1
    return (
        [self.ports[self.sample_ports[k]].carried for k in range(self.sample_port_count)],
        flows,
    )


cdef int _misses_out(Engine self, bint full, bint lines) except -1:
    """Write the caches, the array and the network's ports back (sync_out); the flows in
    flight are shown to the network as ``_Flow`` objects (its ``sync`` and ``in_flight`` read
    them). A cache's lines (log, index and their counts: O(lines) to copy) only when ``full``:
    otherwise they stay the engine's (no Python event of the runs it takes reads them; with
    writes every cache changes between any two samples), and sync_in checks, by value
    (:func:`_cache_mark`), that no Python event changed them. The array's controller read cache's
    lines and write cache likewise only when ``full``; none of the lines, nor the write cache's
    runs, when not ``lines`` (the run's end, for its results only: Engine.sync_out)."""
    cdef Py_ssize_t i, k, n
    cdef CacheState* c
    cdef ArrayState* a = &self.array
    cdef int64_t node
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
        if c.changed and full and lines:
            # from a buffer, not a list: the vec copies it at memory speed (the lines are many)
            cache._log = vec[i64](_typed_view(<char*>c.log, c.log_n, "q"))
            cache._slots = vec[i32](_typed_view(<char*>c.slots, c.mask + 1, "i"))
            cache._mask = c.mask
            cache._head = c.head
            cache._dead = c.dead
            cache._count = c.count
            c.changed = False
        self._cache_seen[i] = _cache_mark(cache)
    array = self._array
    spindles = array.spindles
    spindles.head[:] = [a.head[k] for k in range(a.spindles)]
    spindles._spindle_free[:] = [a.spindle_free[k] for k in range(a.spindles)]
    if a.flash:
        for k in range(a.spindles):
            spindles._units[k][:] = [a.units[k * a.nunits + n] for n in range(a.nunits)]
    spindles.media_bytes = a.media_bytes
    spindles.drive_cache_hits = a.drive_cache_hits
    for k in range(a.spindles if a.segments else 0):
        spindles._segment_caches[k] = OrderedDict([
            (a.seg_pos[k * (a.segments + 1) + n], a.seg_len[k * (a.segments + 1) + n])
            for n in range(a.seg_n[k])
        ])
    for k in range(a.spindles if a.choose_among > 1 else 0):
        spindles._pending[k][:] = [a.pend[k][n] for n in range(a.pend_n[k])]
        spindles._pool[k][:] = [
            (a.pool_pos[k * a.choose_among + n], a.pool_angle[k * a.choose_among + n])
            for n in range(a.pool_n[k])
        ]
        spindles._span[k][:] = [a.span_lo[k], a.span_hi[k]]
    array.read_cache_hits = a.read_cache_hits
    if a.rc_lines and a.rc_changed and full and lines:  # (as a host cache's lines)
        keys = []
        node = a.rc_first
        while node >= 0:
            keys.append(a.rc_key[node])
            node = a.rc_next[node]
        array._lines = OrderedDict.fromkeys(keys)
        a.rc_changed = False
    array.bytes_read = a.bytes_read
    array.bytes_written = self.aw.bytes_written
    array.full_stripe_writes = self.aw.full_stripe_writes
    if full and self.aw.has_cache:  # (nothing reads them during the run)
        array._cache_used = self.aw.cache_used
        array._cache_drains[:] = sorted(  # a sorted list is a heap
            (self.aw.drain_at[k], self.aw.drain_bytes[k]) for k in range(self.aw.n_drains)
        )
    if full and lines and self.aw.hold:  # the runs held, in arrival order
        array._held = [
            (self.aw.held[k].vm, self.aw.held[k].offset, self.aw.held[k].size)
            for k in range(self.aw.n_held)
        ]
        array._held_bytes = self.aw.held_bytes
    array.cache_flushes = self.aw.cache_flushes
    array.front_end_ios = a.front_end_ios
    array.back_end_ios = a.back_end_ios
    self._rc_seen = (array.bytes_read, array.bytes_written)
    _meter_out(self, &a.m, spindles.busy, self.tier_count)
    _stream_out(self, &a.u, array._stream)
    return _ports_out(self)


cdef int _ports_out(Engine self) except -1:
    """Write the network's ports' byte counters back and show it the flows in flight."""
    cdef Py_ssize_t i, k
    cdef PortState* port
    cdef FlowState* f
    cdef int32_t k2
    for i in range(self.port_count):
        port = &self.ports[i]
        p = self._ports[i]
        p.delivered_bytes = port.delivered
        p.carried_bytes = port.carried
        p.packets = port.packets
    flows = self._network._in_flight
    flows.clear()
    fi = self.flight_head
    while fi >= 0:
        f = &self.flows[fi]
        fi = f.flight_next
        path = []
        for k2 in range(f.nports):
            path.append(self._ports[f.ports[k2]])
        flow = self._flow_class(
            f.size, tuple(path), f.weight, f.latency, Signal(None), f.stamp,
        )
        flow.remaining = f.remaining
        flow.rate = f.rate
        flow.finish = f.finish
        flows[flow] = None
    return 0


cdef int _setup_misses(
    Engine self, list full, array, network, list host_ports, double path_miss, list ports
) except -1:
    """Engine.use_misses: the caches' figures, the array's, the network's ports and the
    flows' pools."""
    cdef Py_ssize_t i, k, n
    cdef ArrayState* a = &self.array
    from simcache.sim.components.link import _Flow

    self._flow_class = _Flow  # (its event: a Signal nobody waits for)
    self.misses = True
    self.path_miss = path_miss
    self.caches = <CacheState*>calloc(max(1, self.tier_count), sizeof(CacheState))
    if self.caches == NULL:
        raise MemoryError()
    self._cache_seen = [None] * self.tier_count
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
    a.elevator = array._elevator
    a.queue_depth = array._queue_depth
    # the drives' buffers and the controller's read cache (their contents: _misses_in)
    a.segments = spindles._segments
    a.segment_bytes = spindles._segment_bytes
    a.drive_hit = spindles._drive_hit
    if a.segments:
        a.seg_pos = <int64_t*>malloc(a.spindles * (a.segments + 1) * sizeof(int64_t))
        a.seg_len = <int64_t*>malloc(a.spindles * (a.segments + 1) * sizeof(int64_t))
        a.seg_n = <int64_t*>calloc(a.spindles, sizeof(int64_t))
        if a.seg_pos == NULL or a.seg_len == NULL or a.seg_n == NULL:
            raise MemoryError()
    a.rc_lines = array._read_lines
    a.rc_line = array._line
    a.rc_hit = array._read_hit
    a.rc_first = a.rc_last = a.rc_free = -1
    # the drives' command queueing (its pending commands, pools and spans: _misses_in)
    a.choose_among = spindles._choose_among
    a.reorder_lag = spindles._reorder_lag
    a.by_seek = spindles._by_seek
    a.drive_depth = spindles._queue_depth
    if a.choose_among > 1:
        a.pend = <double**>calloc(a.spindles, sizeof(double*))
        a.pend_n = <int64_t*>calloc(a.spindles, sizeof(int64_t))
        a.pend_cap = <int64_t*>calloc(a.spindles, sizeof(int64_t))
        a.pool_pos = <int64_t*>malloc(a.spindles * a.choose_among * sizeof(int64_t))
        a.pool_angle = <double*>malloc(a.spindles * a.choose_among * sizeof(double))
        a.pool_n = <int64_t*>calloc(a.spindles, sizeof(int64_t))
        a.span_lo = <int64_t*>malloc(a.spindles * sizeof(int64_t))
        a.span_hi = <int64_t*>malloc(a.spindles * sizeof(int64_t))
        if (a.pend == NULL or a.pend_n == NULL or a.pend_cap == NULL or a.pool_pos == NULL
                or a.pool_angle == NULL or a.pool_n == NULL or a.span_lo == NULL
                or a.span_hi == NULL):
            raise MemoryError()
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
    a.read_scale = a.rmw_scale = a.plain_scale = 1.0  # healthy (sync_in reads them)
    a.read_time = spindles._read_time
    a.parallelism = spindles._parallelism
    a.stroke = spindles._stroke
    a.seconds_per_byte = spindles._seconds_per_byte
    a.outer_rate = spindles._outer_rate
    a.shrink = spindles._zone_shrink
    a.overhead = spindles._overhead
    self.aw.rmw = array._read_modify_write
    self.aw.write_time = spindles._write_time
    self.aw.elevator = array._elevator
    self.aw.depth = array._queue_depth
    # the controller write cache, flushed at once or at a watermark (``hold``: the runs it holds)
    self.aw.has_cache = array._cache_ack is not None
    if self.aw.has_cache:
        self.aw.cache_ack = array._cache_ack
        self.aw.cache_capacity = array._cache_capacity
        self.aw.cache_used = array._cache_used
        for at, nbytes in array._cache_drains:
            _drain_push(&self.aw, at, nbytes)
    self.aw.hold = array._hold
    if self.aw.hold:
        self.aw.flush_level = array._flush_level
        self.aw.ack_held = array._cache_ack_held
        self.aw.held_bytes = array._held_bytes
        for vm, offset, size in array._held:
            _hold(a, &self.aw, vm, offset, size)
    seek = spindles._seek
    a.settle, a.track, a.a, a.b = seek.settle, seek.track, seek.a, seek.b
    a.knee, a.c, a.e = seek.knee, seek.c, seek.e
    capsule = array._stream.generator.bit_generator.capsule
    a.u.bitgen = <simcache_bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")
    self._meters.append(None)  # the array's, after the tiers'
    # the network: the ports the transfers back cross
    self._network = network
    self._ports = []
    n = len(host_ports)
    self.host_ports = <int32_t*>malloc(2 * max(1, n) * sizeof(int32_t))
    self.host_wports = <int32_t*>malloc(2 * max(1, n) * sizeof(int32_t))
    self.host_ack = <double*>malloc(max(1, n) * sizeof(double))
    self.host_latency = <double*>malloc(max(1, n) * sizeof(double))
    if (self.host_ports == NULL or self.host_wports == NULL or self.host_ack == NULL
            or self.host_latency == NULL):
        raise MemoryError()
    for i in range(n):
        storage_tx, array_tx, storage_rx, array_rx = host_ports[i]
        self.host_ack[i] = storage_tx.acknowledgement
        self.host_latency[i] = storage_tx.latency
        _framing_add(self, storage_tx.spec)  # key i
        # the transfers back (array_tx, storage_rx), then the writes' (storage_tx, array_rx)
        for k, port in enumerate((array_tx, storage_rx, storage_tx, array_rx)):
            for j, known in enumerate(self._ports):
                if known is port:
                    break
            else:
                j = len(self._ports)
                self._ports.append(port)
            if k < 2:
                self.host_ports[2 * i + k] = j
            else:
                self.host_wports[2 * i + k - 2] = j
    self.sample_port_count = len(ports)
    self.sample_ports = <int32_t*>malloc(max(1, len(ports)) * sizeof(int32_t))
    if self.sample_ports == NULL:
        raise MemoryError()
    for k, port in enumerate(ports):  # the others (the peer paths'), after the storage ports
        for j, known in enumerate(self._ports):
            if known is port:
                break
        else:
            j = len(self._ports)
            self._ports.append(port)
        self.sample_ports[k] = j
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
    self.flight_head = -1
    self.flight_tail = -1
    self.scratch = <int32_t*>malloc(self.flow_cap * sizeof(int32_t))
    self.scratch2 = <int32_t*>malloc(self.flow_cap * sizeof(int32_t))
    self.epochs = <int64_t*>calloc(self.flow_cap, sizeof(int64_t))
    self.marks_cap = 64
    self.marks = <Entry*>malloc(self.marks_cap * sizeof(Entry))
    if (self.flows == NULL or self.free_flows == NULL
            or self.scratch == NULL or self.scratch2 == NULL
            or self.epochs == NULL or self.marks == NULL):
        raise MemoryError()
    self.timer = -1
    self.wake_at = INFINITY
    return 0


cdef int _vms_out(Engine self, bint full) except -1:
    """The VMs' counters and streams (sync_out), and when ``full`` (the run's end) their I/Os in
    flight: only the run's record reads those (``engine._unfinished``), no Python event of the runs
    the engine takes, and an overloaded run holds hundreds of thousands of them (remade before each
    Python event, they took 90 ms a sync at 832,768)."""
    cdef Py_ssize_t i, s
    for i in range(self.vm_count):
        self._vms[i].issued = self.vms[i].issued
        self._vms[i].serial_writing = self.vms[i].serial_writing
        if self.any_dead:  # (HA: the arrivals dropped while its restart was awaited)
            self._vms[i].ha.dropped_arrivals = self.vms[i].dropped
        if self.vms[i].may_compress:
            _compression_out(self, i)
        if self.vms[i].refill == TRACE_REFILL:
            if full:
                _trace_out(self, i)
            continue
        _write_batch(self, i)
        _write_gaps(self, i)
    if not full:
        return 0
    in_flight = {}
    for s in range(self.slots_used):
        if self.slots[s].number >= 0:
            in_flight.setdefault((self.slots[s].vm, self.slots[s].write), []).append(
                (self.slots[s].number, self.slots[s].issued)
            )
    for i in range(self.vm_count):
        for write in (False, True):
            ios = self._vms[i].writes_in_flight if write else self._vms[i].reads_in_flight
            ios.clear()
            for number, issued in sorted(in_flight.get((i, write), ())):
                ios[number] = issued
    return 0
