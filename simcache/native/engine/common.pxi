# The native engine's shared declarations (included by simcache/native/_engine.pyx): numpy's
# bit generator interface, the constants (event kinds, record fields, the kernel's priorities),
# the event queue's entry, a read in flight (Slot) and a VM's state (VmState: its IOStream's
# batch and gaps, its driver, its DutyClock), and two helpers: the queue's order and numpy's
# bounded integers (Generator.integers).

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
    WT_ARRIVED = 11  # a write-through write's data is at the array over a shared link
    WT_DONE = 12  # a write-through write is acknowledged (write_through's sleep)
    WB_ACKED = 13  # a write-back write's tier write is done (WriteBack's _ACKNOWLEDGED wait)
    WB_ADMITTED = 14  # room in the destage buffer for a waiting write (its admission signal)
    WORK = 15  # a destager's work signal: entry.slot the host, entry.aux the signal's number
    FLUSH = 16  # a flusher's timed wait ends (read back, a background request, the array)
    DESTAGE_ARRIVED = 17  # a flusher's batch is at the array over a shared link
    TIMER = 18  # a flusher's timeout_or timer: entry.slot the flusher, entry.aux the wait
    TURN = 19  # a serialized write's turn (sync_serialize: its VM's previous write is done)
    META_WAIT = 20  # a metadata_write write's data is on the tier: its metadata record next
    META_OWN = 21  # its own batched metadata write is done (MetadataLog.join's sleep)
    META_START = 22  # a host's next batched metadata write starts: entry.aux the batch
    META_DONE = 23  # that metadata write is done: its signal succeeds (an event now)
    META_SIGNAL = 24  # the batch's signal: its writes go on, in the order they joined
    LEG_ARRIVED = 25  # a replica leg's copy is at its peer over a shared link: entry.aux the leg
    VMOTION_INIT = 26  # a vMotion process's start (URGENT): entry.slot the vMotion
    VMOTION_START = 27  # its env.timeout(at) is over: its streams start
    VMOTION_DELIVERED = 28  # one of its streams arrived over a shared link: entry.aux the stream
    LEG_START = 29  # a compressed leg's CPU time is over: its flow starts (entry.aux the leg)
    STORAGE_BACK = 30  # a host's storage port is up again (its storage_back): entry.aux the host
    # replication = "async" (lag.pxi): entry.slot an AsyncWrite's number, entry.aux the leg
    ROOM = 31  # an asynchronous write's copies went into the send buffer (its signal): a slot
    ALEG_ARRIVED = 32  # an asynchronous copy is at its peer over a shared link
    ALEG_START = 33  # a compressed asynchronous copy's CPU time is over: its flow starts
    # a Python event the engine queued (entry.aux its number in Engine._py): a transfer a Python
    # process started (Engine.transfer) delivered over a shared link, a degrading VM's settled
    # signal (PeerLoss.degraded's succeed); its processing ends in Python (HOOKED)
    PY_EVENT = 34
    # a moved VM's read served by its old host's cache (remote_hit): the request's latency over,
    # the old host's tier read done, the data back over a shared link
    REMOTE_ASKED = 35
    REMOTE_READ = 36
    REMOTE_ARRIVED = 37
    # a taken-over write's destage that reads wait for (engine/pending.pxi): its signal processed
    # (entry.slot the signal), an AllOf of several done (entry.slot the read's slot)
    PD_FIRED = 38
    PD_ALL = 39
    # what waits for a host's storage port (link_down): a read miss, a write-through write's
    # data, a flusher's batch (Parked.kind)
    PARKED_MISS = 0
    PARKED_WT = 1
    PARKED_FLUSH = 2
    PARKED_STALL = 3  # a write-back write stalled short of peers (Parked.host: its VM)
    # a write-back VM's on_peer_loss (VmState.on_peer_loss)
    LOSS_WRITE_THROUGH = 0
    LOSS_DEGRADE = 1
    LOSS_STALL = 2
    MAX_LEGS = 2  # replicas a write-back policy promises at most (WB+2)
    MAX_PATH = 3  # ports a transfer crosses at most (tx, the shared peer fabric, rx)
    STALE_KEPT = 64  # link._STALE_TIMERS_KEPT
    HEAP_SLACK = 64  # link._HEAP_SLACK
    FOLD_AT = 4096  # meter._FOLD_AT
    # Engine.run's outcomes
    REACHED = 0  # the next event is the Python one given (or none is queued before it)
    PAUSED = 1  # the event budget ran out
    HOOKED = 2  # the event just taken is processed in Python (Engine.hook: PY_EVENT, FLOW_PY)
    # flows re-rated that count as one event of Engine.run's budget (each costs about 30 ns, an
    # event about 250: a port with thousands of flows piled up spends milliseconds on one event)
    RERATES_PER_EVENT = 8
    # flows re-rated within one event after which the stop request is polled inside it
    # (_poll_within: as many as the events between two of native_run.run's polls)
    RERATES_PER_POLL = 128 * 64 * RERATES_PER_EVENT
    # how a VM's stream draws its next batch: IOStream._refill_ios called, or its cases here
    PYTHON_REFILL = 0
    UNIFORM_REFILL = 1
    SEQUENTIAL_REFILL = 2
    ZIPF_REFILL = 3  # ZipfRanks' ranks, scattered (its transcendental steps by numpy's loops)
    TRACE_REFILL = 4  # a trace's rows (TraceStream.next_rows): their times in VmState.gaps
    # the Zipf refill's work arrays (numpy float64, max_batch each): the uniforms, the ufuncs'
    # operands and results, the candidates, k + 0.5, kept (1.0 or 0.0), the ranks, the pending,
    # k ** -theta, each candidate's kept threshold, the ranks whose threshold is to be computed
    # and their candidates' positions (as floats: every work array is float64)
    Z_U = 0
    Z_T = 1
    Z_W = 2
    Z_X = 3
    Z_K = 4
    Z_HALF = 5
    Z_KEPT = 6
    Z_RANK = 7
    Z_PENDING = 8
    Z_P = 9
    Z_THRESHOLD = 10
    Z_NEED_K = 11
    Z_NEED_AT = 12
    ZIPF_ARRAYS = 13
    # the kept thresholds of a theta's ranks 1..ZIPF_TABLE, computed once each (_zipf_candidates)
    ZIPF_TABLE = 65536
    # a VM's duty cycle (DutyClock.shape)
    DUTY_NONE = 0
    DUTY_ONOFF = 1
    DUTY_SINE = 2
    DUTY_PROFILE = 3
    BLOCK = 4096  # generators.BLOCK
    SECTOR = 512  # collect.SECTOR
    COMPONENTS = 5  # the latency components of a record
    # a sort of at most so many items is an insertion sort (stable, as Python's sorted), a
    # longer one qsort's: a flusher's runs, an elevator's window, the array cache's held runs
    SMALL_SORT = 16

cdef double PI = 3.141592653589793  # math.pi
# ZipfRanks: below this |t|, log1p(t) / t and expm1(t) / t by their series (_SERIES_BELOW)
cdef double SERIES_BELOW = 1e-8


cdef struct Entry:
    double time
    int64_t key
    int32_t slot
    int32_t kind
    int64_t aux  # a lone delivery's flow seq, a wake-up's number


cdef struct Parked:
    # an I/O or a flusher waiting for its host's storage port (Host.storage_back's callbacks), or
    # a write stalled short of peers (PeerLoss.back's)
    int32_t host  # the host; for PARKED_STALL, the VM
    int32_t slot  # a slot (PARKED_MISS, PARKED_WT, PARKED_STALL) or a flusher (PARKED_FLUSH)
    int32_t kind


cdef struct Slot:
    # a closed-loop slot (closed: the first ones, and those an HA restart starts), or an open-loop
    # I/O in flight (taken and given back)
    int32_t vm
    bint closed
    int64_t life  # a closed-loop slot's: its VM's HA restarts when it began (_ClosedSlot.life)
    int64_t number  # the read's number in its VM (-1: none in flight)
    double issued
    int64_t size
    int64_t offset  # a miss's
    double array_time  # a miss's: from its request's arrival at the array to the array's done
    double waited  # a miss's: its wait for taken-over writes' destage (engine/pending.pxi)
    bint write  # the I/O in flight is a write
    double local_done  # a write's: when its tier write completes
    double arrived  # a write-through write's: when its data reached the array
    double array_done  # a write-through write's: when the array has it
    double begun  # a write's: when it began (later than issued if it waited for its turn)
    # a write-back write's replica legs (ReplicaLeg): how many, the next one to wait for, the one
    # waited for now (-1: none yet, or all arrived), and each leg's arrival, peer tier done and
    # acknowledgement; the slowest leg's peer-tier time (-1: the local write was the slowest)
    int32_t nlegs, next_leg, wait_leg
    bint leg_done[MAX_LEGS]
    double leg_arrived[MAX_LEGS]
    double leg_peer_done[MAX_LEGS]
    double leg_acked[MAX_LEGS]
    double leg_wire[MAX_LEGS]  # a compressed leg's wire bytes (its flow starts after its CPU time)
    double critical
    bint short_through  # a write-back VM's write taking the write-through path short of peers
    # ``on_peer_loss = "degrade"``: a write issued short of peers (PeerLoss.degrading); a
    # write-back write's peers (VM.peers at its start, fewer while a peer outage cuts some off:
    # how many, and each one's position in VmState.peer; leg k goes to the k-th)
    bint degrading
    int32_t npeers
    int32_t leg_peer[MAX_LEGS]
    # the host the I/O began on (``host = vm.host`` at its start): it finishes there, a vMotion
    # of its VM notwithstanding; each leg's peer host, and a compressed leg's path (its flow
    # starts after its CPU time: the VM's paths may have changed by then)
    int32_t host
    # a remote hit's old host (whose cache serves it), and the path back from there with its
    # framing key, as they were at its start (the VM may move again meanwhile)
    int32_t source
    int32_t remote_ports[MAX_PATH]
    int32_t remote_nports, remote_frame
    int32_t leg_host[MAX_LEGS]
    int32_t leg_ports[MAX_LEGS * MAX_PATH]
    int32_t leg_nports[MAX_LEGS]
    int32_t lag  # an asynchronously replicated write's AsyncWrite: its number plus one (0: none)


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
    bint write_through  # VM.write_through: its writes take the write-through path
    double gc_factor  # VM.gc_factor: the share of its writes' bytes a clean pool is charged
    # sync_serialize: its writes one at a time, in issue order (serialized_write): whether one is
    # on its way, and the slots of those waiting for their turn (a ring)
    bint serialize, serial_writing
    # metadata_write: its record's bytes (0: none), batched in the host's log (group commit)
    int64_t metadata_size
    bint metadata_batched
    # its replica peers (PeerLoss.chosen, host positions), the ports of its path to each
    # (VM.peer_paths, the Engine's port positions), their framing's key (_frame), the peer link's
    # latency and acknowledgement, "memory" replication, and the replicas its policy promises
    int32_t npeers, promised
    # the peers it reaches now (VM.peers, in PeerLoss.chosen's order: how many, and their
    # positions in ``peer``), fewer than ``npeers`` while a peer outage cuts it off from some
    int32_t nreach
    int32_t reached[MAX_LEGS]
    # ``degrade``: its writes issued short of peers not yet in the destage buffer
    # (PeerLoss.in_flight), and the number in Engine._py of the settled signal a resync waits for
    # (PeerLoss._settled; -1: none)
    int64_t degrading, settled
    # a vMotion that moved it (VM.migrate; Migration): the old host whose cache its read misses
    # look in (-1: none), the path back from there and its framing key, the hosts it left (their
    # caches drop the lines it writes), and its last move's remote hits (counted into that
    # move's record: remote_hits, remote_hit_bytes, last_remote_hit_s)
    int32_t remote
    int32_t remote_ports[MAX_PATH]
    int32_t remote_nports, remote_frame
    int32_t* left
    int32_t nleft
    int64_t remote_hits, remote_hit_bytes
    double last_remote_hit
    # a peer outage (peer_loss, a peer link_down): VM.short_of_peers, VM.policy_write_through and
    # its PeerLoss counters (written, written_through, fell_through)
    bint short_of_peers, policy_write_through
    # its read misses first wait for the destage of the writes holders took over from its failed
    # tier (VM.ha.pending_destage set: engine/pending.pxi)
    bint pd_wait
    # HA (host_failure with restart_delay): its restarts (VM.life: a closed-loop slot of an
    # earlier life stops), whether a restart is awaited (HaRestart.awaiting: its open loop's
    # arrivals meanwhile dropped, and counted)
    int64_t life
    bint awaiting
    int64_t dropped
    int32_t on_peer_loss  # LOSS_WRITE_THROUGH, LOSS_DEGRADE, LOSS_STALL
    int64_t loss_written, loss_written_through, fell_through
    int32_t peer[MAX_LEGS]
    int32_t leg_ports[MAX_LEGS * MAX_PATH]
    int32_t leg_nports[MAX_LEGS]
    int32_t leg_frame[MAX_LEGS]
    double peer_latency, ack_time
    bint memory_ack
    # replication = "async" (VM.async_replication) and its send buffer per peer (VM.send_buffer)
    bint async_rep
    int64_t send_buffer
    # replica compression (VM.replicate, VM._link_busy): may it compress, always or adaptively,
    # its workload's compressibility, the CPU's throughput, the adaptive threshold, the bytes it
    # saved, and whether each leg's sending port is among those it compresses on
    bint may_compress, always_compress
    double compressibility, compress_rate, threshold, saved
    bint compressing[MAX_LEGS]
    int32_t* serial_q
    int64_t q_head, q_count, q_cap
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
    # ZipfRanks (refill ZIPF_REFILL): theta, H(1.5) - 1 and H(n + 0.5), and scatter's multiplier
    double theta, zipf_low, zipf_high
    uint64_t multiplier
    bint direct_power  # k ** -theta through numpy's power loop (_power_agrees), not its `**`
    double* thresholds  # its theta's kept thresholds of ranks 1..ZIPF_TABLE (NaN: not yet)
    # the driver: an open loop, or closed-loop slots with a think time
    bint open
    bint trace_over  # a trace replay (TRACE_REFILL) has no row left
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


cdef int _ring_put(int32_t** ring, int64_t* head, int64_t* count, int64_t* cap, int32_t value
                   ) except -1 nogil:
    """Append ``value`` to a ring of int32 (a FIFO of slots: ``ring[head]`` is the oldest of
    ``count``), doubled (from 16 places) when full."""
    cdef int64_t grown_cap, k
    cdef int32_t* grown
    if count[0] == cap[0]:
        grown_cap = 2 * cap[0] if cap[0] else 16
        grown = <int32_t*>malloc(grown_cap * sizeof(int32_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        for k in range(count[0]):
            grown[k] = ring[0][(head[0] + k) % cap[0]]
        free(ring[0])
        ring[0] = grown
        head[0] = 0
        cap[0] = grown_cap
    ring[0][(head[0] + count[0]) % cap[0]] = value
    count[0] += 1
    return 0


cdef inline int64_t _floor_div(int64_t a, int64_t b) noexcept nogil:
    """Python's ``a // b`` (``b`` > 0), where C (cdivision) rounds a negative ``a`` toward zero:
    the last line of an empty I/O at offset 0, ``(0 + 0 - 1) // line``, is -1 (no line)."""
    cdef int64_t q = a / b
    if a < 0 and q * b != a:
        q -= 1
    return q


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
