# Ports simcache.sim.components.hash_walk.HashWalk for a destager with order "hash" (write-back
# writes, with their replicas' holders): each write cut into the aligned
# blocks of ``unit`` bytes of its VM's disk it covers, the blocks taken in the order of their hash
# (block_hash) by a cursor passing over the hash space, a block dirtied behind the cursor waiting
# for the next pass; a write leaves when its last block reached the array. The blocks wait in two
# binary heaps by (key, tick): keys and ticks are unique, so the blocks come out in the order
# heapq gives the Python walk's whatever the sifts (the array order heapq keeps matters to
# HashWalk.untaken and remove only: a vMotion's handover, which the engine does not run).

cdef struct Block:
    int64_t key  # block_hash(vm, block) less 2**63: a signed number, the same order
    int64_t tick  # its write's number plus its index in the write (unique)
    int32_t slot  # its write's slot in the pool
    int32_t piece  # its index in the write


cdef struct BlockHeap:
    Block* blocks
    int64_t count, cap


cdef struct HashWalk:
    int64_t unit, ticks, cursor, count
    BlockHeap walk  # the blocks ahead of the cursor
    BlockHeap behind  # the blocks behind it: the next pass
    # the writes, in a pool of slots (a free list through ``next_free``): VM index, offset,
    # size, bytes not yet on the array, their replicas' holders (destager.pxi's _holders)
    int64_t* vm
    int64_t* offset
    int64_t* size
    int64_t* left
    uint32_t* held
    int32_t* next_free
    int32_t used, cap, free


cdef inline bint _block_before(Block* a, Block* b) noexcept nogil:
    return a.key < b.key or (a.key == b.key and a.tick < b.tick)


cdef int _block_push(BlockHeap* h, Block item) except -1 nogil:
    cdef int64_t pos, parent
    cdef Block* grown
    if h.count == h.cap:
        grown = <Block*>realloc(h.blocks, (2 * h.cap if h.cap else 64) * sizeof(Block))
        if grown == NULL:
            with gil:
                raise MemoryError()
        h.blocks = grown
        h.cap = 2 * h.cap if h.cap else 64
    pos = h.count
    h.count += 1
    while pos > 0:
        parent = (pos - 1) >> 1
        if _block_before(&item, &h.blocks[parent]):
            h.blocks[pos] = h.blocks[parent]
            pos = parent
        else:
            break
    h.blocks[pos] = item
    return 0


cdef void _block_pop(BlockHeap* h) noexcept nogil:
    """Drop the first block (read it first)."""
    cdef int64_t pos = 0, child, size
    cdef Block last
    h.count -= 1
    size = h.count
    if size == 0:
        return
    last = h.blocks[size]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and _block_before(&h.blocks[child + 1], &h.blocks[child]):
            child += 1
        if _block_before(&h.blocks[child], &last):
            h.blocks[pos] = h.blocks[child]
            pos = child
        else:
            break
    h.blocks[pos] = last


cdef inline int64_t _block_key(int64_t vm, int64_t block) noexcept nogil:
    """hash_walk.block_hash (splitmix64's finalizer of the pair) less 2**63."""
    cdef uint64_t x = <uint64_t>(vm + 1) * 0x9E3779B97F4A7C15ULL + <uint64_t>block
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL
    x = x ^ (x >> 31)
    return <int64_t>(x ^ 0x8000000000000000ULL)


cdef int _hw_push(HashWalk* w, int64_t vm, int64_t offset, int64_t size, uint32_t held
                  ) except -1 nogil:
    """HashWalk.push: the write's pieces filed under the blocks they fall in, ahead of or behind
    the cursor (its replicas' holders kept with it)."""
    cdef int32_t slot, cap
    cdef int64_t end = offset + size, block, number = w.ticks
    cdef int32_t piece = 0
    cdef Block item
    if w.free >= 0:
        slot = w.free
        w.free = w.next_free[slot]
    else:
        if w.used == w.cap:
            cap = 2 * w.cap if w.cap else 64
            w.vm = <int64_t*>realloc(w.vm, cap * sizeof(int64_t))
            w.offset = <int64_t*>realloc(w.offset, cap * sizeof(int64_t))
            w.size = <int64_t*>realloc(w.size, cap * sizeof(int64_t))
            w.left = <int64_t*>realloc(w.left, cap * sizeof(int64_t))
            w.next_free = <int32_t*>realloc(w.next_free, cap * sizeof(int32_t))
            w.held = <uint32_t*>realloc(w.held, cap * sizeof(uint32_t))
            if (w.vm == NULL or w.offset == NULL or w.size == NULL or w.left == NULL
                    or w.next_free == NULL or w.held == NULL):
                with gil:
                    raise MemoryError()
            w.cap = cap
        slot = w.used
        w.used += 1
    w.count += 1
    w.vm[slot] = vm
    w.offset[slot] = offset
    w.size[slot] = size
    w.left[slot] = size
    w.held[slot] = held
    while offset < end:
        block = offset // w.unit
        item.key = _block_key(vm, block)
        item.tick = number + piece
        item.slot = slot
        item.piece = piece
        _block_push(&w.walk if item.key >= w.cursor else &w.behind, item)
        piece += 1
        offset = (block + 1) * w.unit
    w.ticks += piece + 1
    return 0


cdef bint _hw_ready(HashWalk* w) noexcept nogil:
    """HashWalk.ready: whether a dirty block is left (a new pass begun when this one is done)."""
    cdef BlockHeap swap
    if w.walk.count == 0:
        if w.behind.count == 0:
            return False
        swap = w.walk
        w.walk = w.behind
        w.behind = swap
        w.cursor = INT64_MIN
    return True


cdef inline int64_t _hw_piece(HashWalk* w, int32_t slot, int32_t piece, int64_t* start
                              ) noexcept nogil:
    """HashWalk._piece: where piece ``piece`` of the write in ``slot`` starts (in ``start``), and
    its size."""
    cdef int64_t offset = w.offset[slot], end = w.offset[slot] + w.size[slot]
    cdef int64_t block = offset // w.unit + piece
    cdef int64_t stop = (block + 1) * w.unit
    start[0] = offset if piece == 0 else block * w.unit
    if stop > end:
        stop = end
    return stop - start[0]


cdef inline int64_t _hw_head_size(HashWalk* w) noexcept nogil:
    cdef int64_t start
    return _hw_piece(w, w.walk.blocks[0].slot, w.walk.blocks[0].piece, &start)


cdef bint _hw_release(HashWalk* w, int32_t slot, int64_t size) noexcept nogil:
    """HashWalk.release: ``size`` bytes of the write in ``slot`` reached the array; whether that
    was its last block (then it leaves: its slot freed, its VM, size and holders still
    readable)."""
    w.left[slot] -= size
    if w.left[slot]:
        return False
    w.next_free[slot] = w.free
    w.free = slot
    w.count -= 1
    if w.count == 0:  # (HashWalk._reset: the pool starts again from its first slot)
        w.used = 0
        w.free = -1
    return True


cdef void _hw_free(HashWalk* w) noexcept nogil:
    free(w.walk.blocks)
    free(w.behind.blocks)
    free(w.vm)
    free(w.offset)
    free(w.size)
    free(w.left)
    free(w.next_free)
    free(w.held)
