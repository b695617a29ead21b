# Ports simcache.sim.components.cache.ReadCache (a host's read cache): the open-addressing index
# of recency-log positions with linear probing and backward-shift removal, the recency log with
# its compaction and growth at the same thresholds (CacheState, _lookup, _insert), so that the
# same lines are evicted.

cdef enum:
    VM_SHIFT = 40
    DEAD = -1
    MIN_SLOTS = 16
    FOUND_HERE = 64  # a lookup's lines found, kept on the stack up to so many (else allocated)
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


cdef inline int _log_append(CacheState* c, int64_t key) except -1 nogil:
    """``key`` at the recency log's end (room made out of line: :func:`_log_grow`)."""
    if c.log_n == c.log_cap:
        _log_grow(c)
    c.log[c.log_n] = key
    c.log_n += 1
    return 0


cdef int _log_grow(CacheState* c) except -1 nogil:
    """The recency log full: twice its room (64 places at first)."""
    cdef int64_t cap = 2 * c.log_cap if c.log_cap else 64
    cdef int64_t* log = <int64_t*>realloc(c.log, cap * sizeof(int64_t))
    if log == NULL:
        with gil:
            raise MemoryError()
    c.log = log
    c.log_cap = cap
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
    cdef int64_t lines = _floor_div(offset + size - 1, c.line) - first + 1
    cdef int64_t key = (vm << VM_SHIFT) + first, slot, position, k, mask = c.mask
    cdef int64_t spread = (first + (vm * VM_MIX & VM_OFFSET_MASK)) * LINE_MIX
    cdef int64_t found_here[FOUND_HERE]
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
        found = found_here
        if lines > FOUND_HERE:
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
                if found != found_here:
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
        if found != found_here:
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
    cdef int64_t lines = _floor_div(offset + size - 1, c.line) - first + 1
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


cdef class CacheProbe:
    """A read cache on its own, for the tests (``tests/sim/test_native_cache.py`` checks it
    against ``ReadCache`` under random lookups and inserts): empty as ``ReadCache(capacity_lines,
    line_bytes)`` starts."""

    cdef CacheState c

    def __cinit__(self, int64_t capacity_lines, int64_t line_bytes):
        self.c.line = line_bytes
        self.c.capacity = capacity_lines
        self.c.mask = MIN_SLOTS - 1
        self.c.slots = <int32_t*>calloc(MIN_SLOTS, sizeof(int32_t))
        self.c.log_cap = 64
        self.c.log = <int64_t*>malloc(self.c.log_cap * sizeof(int64_t))
        if self.c.slots == NULL or self.c.log == NULL:
            raise MemoryError()
        self.c.log[0] = DEAD  # as ReadCache's: position 0 is never a line's (0: a free slot)
        self.c.log_n = 1
        self.c.head = 1

    def __dealloc__(self):
        free(self.c.slots)
        free(self.c.log)

    def lookup(self, int64_t vm, int64_t offset, int64_t size) -> bool:
        return _lookup(&self.c, vm, offset, size) == 1

    def insert(self, int64_t vm, int64_t offset, int64_t size) -> None:
        _insert(&self.c, vm, offset, size)

    def state(self) -> dict:
        """What ``ReadCache`` holds after the same calls: its log, slots, head, dead and line
        counts, and counters."""
        cdef int64_t k
        return {
            "log": [self.c.log[k] for k in range(self.c.log_n)],
            "slots": [self.c.slots[k] for k in range(self.c.mask + 1)],
            "head": self.c.head,
            "dead": self.c.dead,
            "count": self.c.count,
            "hits": self.c.hits,
            "misses": self.c.misses,
            "inserted": self.c.inserted,
            "evicted": self.c.evicted,
        }


cdef int64_t _find(CacheState* c, int64_t key) noexcept nogil:
    """ReadCache._find: the index slot holding ``key``, or -1 if it is not cached."""
    cdef int64_t slot = _home(key, c.mask), position = c.slots[slot]
    while position != 0:
        if c.log[position] == key:
            return slot
        slot = (slot + 1) & c.mask
        position = c.slots[slot]
    return -1


cdef bint _holds(CacheState* c, int64_t vm, int64_t offset, int64_t size) noexcept nogil:
    """ReadCache.holds: every line of the I/O cached; neither counted nor refreshed."""
    cdef int64_t key = (vm << VM_SHIFT) + offset // c.line
    cdef int64_t end = (vm << VM_SHIFT) + _floor_div(offset + size - 1, c.line) + 1
    while key < end:
        if _find(c, key) < 0:
            return False
        key += 1
    return True


cdef void _discard(CacheState* c, int64_t vm, int64_t offset, int64_t size) noexcept nogil:
    """ReadCache.discard: drop the I/O's lines (a moved VM wrote them elsewhere)."""
    cdef int64_t key = (vm << VM_SHIFT) + offset // c.line
    cdef int64_t end = (vm << VM_SHIFT) + _floor_div(offset + size - 1, c.line) + 1
    cdef int64_t slot
    while key < end:
        slot = _find(c, key)
        if slot >= 0:
            c.log[c.slots[slot]] = DEAD
            c.dead += 1
            _remove(c, slot)
            c.changed = True
        key += 1
    if c.head + c.dead > c.count + LOG_SLACK:
        _compact_log(c)
