# The native engine's event queue (RadixQueue): a radix heap, the monotone priority queue of
# Ahuja, Mehlhorn, Orlin and Tarjan (1990), over the bits of the events' times, ties in time taken
# in key order, so that the events come out in the order of (time, key) as from the kernel's heap.
#
# Why not a heap (the queue before, a 4-ary heap by (time, key)): a discrete-event run takes its
# events in time order and schedules none before the last one taken, which is all a radix heap
# needs. Replaying the queue operations of the 32-host scenario's run (1.37 million events, about
# 440 queued) the 4-ary heap took 62 ns an event (a push and a pop) and this queue 32 ns, the same
# events in the same order (docs/research/native-engine.md, "Step 13").
#
# How it works. A non-negative double's bits, read as an unsigned integer, are in the order of the
# doubles. The front (bucket 0, from ``head`` on) holds the first events in (time, key) order, all
# with bits at most ``base``; bucket b > 0 holds the events whose bits first differ from ``base`` at
# bit b - 1 (counted from the lowest), all above ``base``. An event queued at or before ``base`` is
# put into the front in order (from its back: usually past none or a few), one after it into its
# bucket. Taking the first event when the front is empty: the lowest non-empty bucket's events
# become the front, sorted, and ``base`` the bits of its last, when there are at most
# ``RQ_SORTED_MOST`` of them (the other buckets stay valid: their events differ from any event of
# that bucket where they differed from the old base); else the radix heap's step: their earliest
# bits become ``base``, the events at that time the front, the others move to lower buckets (each
# moves down at most 63 times over its stay). A front grown past ``RQ_FRONT_MOST`` events (new
# events kept landing before its last) spills: ``base`` becomes its first event's bits and the rest
# of it go to buckets, with the buckets' events whose place depends on the bits ``base`` lost.
# Sorting small buckets whole (stop 55) took a third of the refills (146,883 of 161,355 events on
# the default scenario, 455,346 of 1.37 million on 32 hosts, each moving 2.7-4.2 events) and ran
# the bench scenarios 2-5 % faster (bench/README.md, "A queue that sorts small buckets").
# A Python event may queue a native one before ``base`` (the loop looked at the first native
# event and stopped at an earlier Python one, which schedules an event before that one): it goes
# into the front, in order, as any event at or before ``base``.

cdef extern from *:
    int __builtin_clzll(unsigned long long value) noexcept nogil
    int __builtin_ctzll(unsigned long long value) noexcept nogil

cdef enum:
    RQ_BUCKETS = 64  # a non-negative double's bits are below 2**63
    RQ_SORTED_MOST = 8  # a bucket of at most so many events becomes the front sorted
    RQ_FRONT_MOST = 32  # a front of more events spills into buckets


cdef struct RqBucket:
    Entry* entries
    Py_ssize_t n, cap


cdef struct RadixQueue:
    RqBucket buckets[64]  # RQ_BUCKETS
    uint64_t base  # the bits of the last event taken (or of a lowered base)
    uint64_t filled  # bit b: bucket b holds events
    Py_ssize_t head  # bucket 0's first event (taken from the front)
    Py_ssize_t count  # events queued


cdef inline uint64_t _rq_bits(double time) noexcept nogil:
    """``time``'s bits as an unsigned integer (in the order of the times: they are >= 0)."""
    cdef uint64_t bits
    time += 0.0  # -0.0 as 0.0
    memcpy(&bits, &time, 8)
    return bits


cdef inline int _rq_bucket(RadixQueue* q, uint64_t bits) noexcept nogil:
    """The bucket of an event whose time has ``bits`` (not below ``base``)."""
    cdef uint64_t differ = bits ^ q.base
    return 0 if differ == 0 else 64 - __builtin_clzll(differ)


cdef int _rq_grow(RqBucket* bucket) except -1 nogil:
    """Room for bucket's next event (twice its room)."""
    cdef Py_ssize_t cap = 2 * bucket.cap if bucket.cap else 16
    cdef Entry* entries = <Entry*>realloc(bucket.entries, cap * sizeof(Entry))
    if entries == NULL:
        with gil:
            raise MemoryError()
    bucket.entries = entries
    bucket.cap = cap
    return 0


cdef inline int _rq_append(RadixQueue* q, int b, Entry* entry) except -1 nogil:
    """``entry`` at the end of bucket ``b``."""
    cdef RqBucket* bucket = &q.buckets[b]
    if bucket.n == bucket.cap:
        _rq_grow(bucket)
    bucket.entries[bucket.n] = entry[0]
    bucket.n += 1
    q.filled |= (<uint64_t>1) << b
    return 0


cdef inline bint _rq_after(Entry* a, Entry* b) noexcept nogil:
    """Whether ``a`` comes after ``b`` in (time, key) order."""
    return a.time > b.time or (a.time == b.time and a.key > b.key)


cdef int _rq_insert_front(RadixQueue* q, Entry* entry) except -1 nogil:
    """``entry`` (its bits at most ``base``) into the front (bucket 0) in (time, key) order: from
    the back, past the events after it (usually none or a few)."""
    cdef RqBucket* front = &q.buckets[0]
    cdef Py_ssize_t i
    if front.n == front.cap and q.head:  # the taken events' room first
        memmove(front.entries, front.entries + q.head, (front.n - q.head) * sizeof(Entry))
        front.n -= q.head
        q.head = 0
    _rq_append(q, 0, entry)
    i = front.n - 1
    while i > q.head and _rq_after(&front.entries[i - 1], entry):
        front.entries[i] = front.entries[i - 1]
        i -= 1
    front.entries[i] = entry[0]
    if front.n - q.head > RQ_FRONT_MOST:
        _rq_spill(q)
    return 0


cdef int _rq_spill(RadixQueue* q) except -1 nogil:
    """The front holds too many events (new ones kept landing before its last): ``base`` becomes
    its first event's bits, the front keeps the events at that time, and the rest of it, with the
    buckets' events whose place depends on the bits ``base`` loses, go to buckets again."""
    cdef RqBucket* front = &q.buckets[0]
    cdef uint64_t least = _rq_bits(front.entries[q.head].time)
    cdef int top = _rq_bucket(q, least)  # the highest bit where the old base and ``least`` differ
    cdef Py_ssize_t n, k, b, kept
    cdef Entry* held
    if top == 0:
        return 0  # all at one time: nothing to spill
    # the events to place again: the front's after its first time, buckets 1 .. top's
    n = front.n - q.head
    for b in range(1, top + 1):
        n += q.buckets[b].n
    held = <Entry*>malloc(n * sizeof(Entry))
    if held == NULL:
        with gil:
            raise MemoryError()
    kept = q.head
    while kept < front.n and _rq_bits(front.entries[kept].time) == least:
        kept += 1
    memcpy(held, front.entries + kept, (front.n - kept) * sizeof(Entry))
    n = front.n - kept
    front.n = kept
    for b in range(1, top + 1):
        memcpy(held + n, q.buckets[b].entries, q.buckets[b].n * sizeof(Entry))
        n += q.buckets[b].n
        q.buckets[b].n = 0
        q.filled &= ~((<uint64_t>1) << b)
    q.base = least
    try:
        for k in range(n):  # all after ``least``: into buckets 1 .. top
            _rq_append(q, _rq_bucket(q, _rq_bits(held[k].time)), &held[k])
    finally:
        free(held)
    return 0


cdef inline int _rq_push(RadixQueue* q, Entry* entry) except -1 nogil:
    """Queue ``entry`` (its time >= 0): into the bucket its bits give against ``base``, the
    front if at most it."""
    cdef uint64_t bits = _rq_bits(entry.time)
    q.count += 1
    if bits > q.base:
        return _rq_append(q, _rq_bucket(q, bits), entry)
    return _rq_insert_front(q, entry)


cdef inline int _rq_settle(RadixQueue* q) except -1 nogil:
    """Bring the first events to the front if it is empty and any is queued (once an event in
    several: the loop's check before each)."""
    if q.filled & 1 or not q.count:
        return 0
    return _rq_refill(q)


cdef int _rq_refill(RadixQueue* q) except -1 nogil:
    """The front empty, events queued: the lowest non-empty bucket's events become the front.

    Few of them (at most ``RQ_SORTED_MOST``): all of them, sorted, ``base`` the bits of the
    last (every other bucket's events differ from it where they differed from the old base). More:
    the radix heap's step, ``base`` their earliest bits, the events at that time the front (in key
    order), the others to lower buckets (all share its bits above the one that put them there)."""
    cdef int b
    cdef RqBucket* bucket
    cdef RqBucket* front = &q.buckets[0]
    cdef Entry* entries
    cdef Entry item
    cdef uint64_t least, bits
    cdef Py_ssize_t k, n, i
    b = __builtin_ctzll(q.filled)
    bucket = &q.buckets[b]
    entries = bucket.entries
    n = bucket.n
    q.head = 0
    front.n = 0
    if n <= RQ_SORTED_MOST:
        for k in range(1, n):  # an insertion sort, in place
            item = entries[k]
            i = k
            while i > 0 and _rq_after(&entries[i - 1], &item):
                entries[i] = entries[i - 1]
                i -= 1
            entries[i] = item
        # the bucket's array becomes the front's, the (empty) front's the bucket's
        bucket.entries = front.entries
        bucket.cap, front.cap = front.cap, bucket.cap
        front.entries = entries
        front.n = n
        q.base = _rq_bits(entries[n - 1].time)
        bucket.n = 0
        q.filled = (q.filled & ~((<uint64_t>1) << b)) | 1
        return 0
    least = _rq_bits(entries[0].time)
    for k in range(1, n):
        bits = _rq_bits(entries[k].time)
        if bits < least:
            least = bits
    q.base = least
    bucket.n = 0
    q.filled &= ~((<uint64_t>1) << b)
    for k in range(n):
        _rq_append(q, _rq_bucket(q, _rq_bits(entries[k].time)), &entries[k])
    for k in range(1, front.n):  # in key order (usually one event)
        item = front.entries[k]
        i = k
        while i > 0 and front.entries[i - 1].key > item.key:
            front.entries[i] = front.entries[i - 1]
            i -= 1
        front.entries[i] = item
    return 0


cdef inline Entry* _rq_first(RadixQueue* q) noexcept nogil:
    """The first event (after :func:`_rq_settle`), NULL if none."""
    if not q.count:
        return NULL
    return &q.buckets[0].entries[q.head]


cdef inline void _rq_pop(RadixQueue* q) noexcept nogil:
    """Take the first event out (after :func:`_rq_settle`, with one queued)."""
    q.head += 1
    q.count -= 1
    if q.head == q.buckets[0].n:
        q.head = 0
        q.buckets[0].n = 0
        q.filled &= ~(<uint64_t>1)


cdef void _rq_drop_kind(RadixQueue* q, int32_t kind) noexcept nogil:
    """Take every event of ``kind`` out (the others keep their order)."""
    cdef Py_ssize_t b, k, start, kept
    cdef RqBucket* bucket
    for b in range(RQ_BUCKETS):
        bucket = &q.buckets[b]
        start = q.head if b == 0 else 0
        kept = start
        for k in range(start, bucket.n):
            if bucket.entries[k].kind != kind:
                bucket.entries[kept] = bucket.entries[k]
                kept += 1
        q.count -= bucket.n - kept
        bucket.n = kept
        if kept == start:
            bucket.n = 0
            if b == 0:
                q.head = 0
            q.filled &= ~((<uint64_t>1) << b)


cdef void _rq_free(RadixQueue* q) noexcept nogil:
    cdef Py_ssize_t b
    for b in range(RQ_BUCKETS):
        free(q.buckets[b].entries)
        q.buckets[b].entries = NULL
        q.buckets[b].n = q.buckets[b].cap = 0
    q.count = q.head = 0
    q.filled = 0


cdef class QueueProbe:
    """The engine's event queue on its own, for the tests (``tests/sim/test_native_queue.py``
    checks it against a sorted list under random pushes, looks, pops and drops)."""

    cdef RadixQueue q

    def __dealloc__(self):
        _rq_free(&self.q)

    def __len__(self) -> int:
        return self.q.count

    def push(self, double time, int64_t key, int32_t kind=0) -> None:
        """Queue an event at ``time`` (>= 0) with ``key`` (distinct) and ``kind``."""
        cdef Entry item
        item.time = time
        item.key = key
        item.slot = 0
        item.kind = kind
        item.aux = 0
        _rq_push(&self.q, &item)

    def first(self):
        """(time, key, kind) of the first event (None if none), as the engine's loop looks."""
        cdef Entry* first
        _rq_settle(&self.q)
        first = _rq_first(&self.q)
        return None if first == NULL else (first.time, first.key, first.kind)

    def pop(self):
        """Take the first event out: its (time, key, kind)."""
        found = self.first()
        if found is None:
            raise IndexError("pop from an empty queue")
        _rq_pop(&self.q)
        return found

    def drop(self, int32_t kind) -> None:
        """Take every event of ``kind`` out."""
        _rq_drop_kind(&self.q, kind)
