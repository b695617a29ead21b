# The writes surviving holders took over from a failed tier, until they have destaged them
# (simcache.sim.components.adopted.PendingDestage), and the read misses that wait for them: a VM
# whose tier failed (VM.tier_failed) reads a block whose newest write a holder took over from the
# array only once that holder has destaged it.
# - The registry: per VM, its entries (holder, offset, size) with a count, in the Python dict's
#   order (an entry added again after it left goes last), and the VMs with entries in the order
#   they got their first (PendingDestage._by_vm's order: holder_failed walks it).
# - A wait: each entry a read waits for gets a signal (PdSignal, the entry's Signal), whose waiters
#   are resumed in the order they began to wait when it is processed (PD_FIRED, queued with
#   succeed's event id when its entry leaves); a read waiting for several waits for an AllOf
#   (PdAllOf: done queued, PD_ALL, when the last of its signals is processed).
# - After the wait the read goes on as read_miss does: its destage-wait component taken, then the
#   storage port (parked while it is down), then the array (_miss).
# Python calls in (Engine.pending_add, pending_holder_failed: the failure's process); the holders'
# destagers report each write they destage (_left: Host._drop_replicas).


cdef struct PdEntry:
    int32_t holder
    int32_t sig  # its signal's number (-1: no read waits for it yet)
    int64_t offset, size, count


cdef struct PdVm:
    PdEntry* entries
    int32_t n, cap


cdef struct PdSignal:
    # what waits for it, in order: a read's slot (>= 0), or an AllOf (-(its number + 1))
    int64_t* waiters
    int32_t n, cap


cdef struct PdAllOf:
    int32_t slot, left


cdef int _pd_grow(void** array, int32_t* cap, int32_t need, size_t item) except -1 nogil:
    """Make ``array`` (``cap`` items of ``item`` bytes) hold at least ``need``, doubling (from
    8)."""
    cdef int32_t grown = cap[0] if cap[0] else 8
    cdef void* moved
    if need <= cap[0]:
        return 0
    while grown < need:
        grown *= 2
    moved = realloc(array[0], grown * item)
    if moved == NULL:
        with gil:
            raise MemoryError()
    array[0] = moved
    cap[0] = grown
    return 0


cdef int _pd_find(PdVm* entries, int32_t holder, int64_t offset, int64_t size) noexcept nogil:
    """The position of the entry (``holder``, ``offset``, ``size``) among a VM's, or -1."""
    cdef int32_t k
    for k in range(entries.n):
        if (entries.entries[k].holder == holder and entries.entries[k].offset == offset
                and entries.entries[k].size == size):
            return k
    return -1


cdef int _pd_add(Engine self, int32_t holder, int32_t v, int64_t offset, int64_t size
                 ) except -1 nogil:
    """PendingDestage.add: ``holder`` took over VM ``v``'s write of ``size`` bytes at
    ``offset``."""
    cdef PdVm* entries = &self.pd_vms[v]
    cdef int32_t k = _pd_find(entries, holder, offset, size)
    if k >= 0:
        entries.entries[k].count += 1
        return 0
    if entries.n == 0:  # the VM's first: last in the registry's order
        _pd_grow(<void**>&self.pd_order, &self.pd_order_cap, self.pd_norder + 1, sizeof(int32_t))
        self.pd_order[self.pd_norder] = v
        self.pd_norder += 1
    _pd_grow(<void**>&entries.entries, &entries.cap, entries.n + 1, sizeof(PdEntry))
    entries.entries[entries.n].holder = holder
    entries.entries[entries.n].sig = -1
    entries.entries[entries.n].offset = offset
    entries.entries[entries.n].size = size
    entries.entries[entries.n].count = 1
    entries.n += 1
    return 0


cdef int _pd_drop(Engine self, int32_t v, int32_t k, double now) except -1 nogil:
    """PendingDestage._drop: VM ``v``'s ``k``-th entry leaves; the reads waiting for it are told
    (its signal queued now: succeed); a VM left with none leaves the registry's order."""
    cdef PdVm* entries = &self.pd_vms[v]
    cdef int32_t sig = entries.entries[k].sig, j
    if sig >= 0:
        self._schedule(now, sig, PD_FIRED)
    entries.n -= 1
    for j in range(k, entries.n):
        entries.entries[j] = entries.entries[j + 1]
    if entries.n == 0:
        for j in range(self.pd_norder):
            if self.pd_order[j] == v:
                self.pd_norder -= 1
                while j < self.pd_norder:
                    self.pd_order[j] = self.pd_order[j + 1]
                    j += 1
                break
    return 0


cdef int _pd_destaged(Engine self, int32_t holder, int32_t v, int64_t offset, int64_t size,
                      double now) except -1 nogil:
    """PendingDestage.destaged: ``holder``'s destager wrote one such write to the array."""
    cdef int32_t k
    if self.pd_vms[v].n == 0:
        return 0
    k = _pd_find(&self.pd_vms[v], holder, offset, size)
    if k < 0:
        return 0
    self.pd_vms[v].entries[k].count -= 1
    if self.pd_vms[v].entries[k].count == 0:
        _pd_drop(self, v, k, now)
    return 0


cdef int _pd_holder_failed(Engine self, int32_t holder, double now) except -1 nogil:
    """PendingDestage.holder_failed: ``holder`` failed; its entries leave (their readers told),
    VM by VM in the registry's order, each VM's in its own."""
    cdef int32_t count = self.pd_norder, i, k, v
    cdef int32_t* order = <int32_t*>malloc(max(1, count) * sizeof(int32_t))
    if order == NULL:
        with gil:
            raise MemoryError()
    for i in range(count):  # (list(self._by_vm.items()): the order before any leaves)
        order[i] = self.pd_order[i]
    for i in range(count):
        v = order[i]
        k = 0
        while k < self.pd_vms[v].n:
            if self.pd_vms[v].entries[k].holder == holder:
                _pd_drop(self, v, k, now)
            else:
                k += 1
    free(order)
    return 0


cdef int32_t _pd_signal(Engine self, PdEntry* entry) except -2 nogil:
    """The entry's signal, made when the first read waits for it."""
    cdef PdSignal* sig
    if entry.sig < 0:
        _pd_grow(<void**>&self.pd_sigs, &self.pd_sig_cap, self.pd_nsigs + 1, sizeof(PdSignal))
        sig = &self.pd_sigs[self.pd_nsigs]
        sig.waiters = NULL
        sig.n = 0
        sig.cap = 0
        entry.sig = self.pd_nsigs
        self.pd_nsigs += 1
    return entry.sig


cdef int _pd_wait_on(Engine self, int32_t sig, int64_t waiter) except -1 nogil:
    cdef PdSignal* signal = &self.pd_sigs[sig]
    _pd_grow(<void**>&signal.waiters, &signal.cap, signal.n + 1, sizeof(int64_t))
    signal.waiters[signal.n] = waiter
    signal.n += 1
    return 0


cdef bint _pd_wait(Engine self, int32_t s) except -1 nogil:
    """read_miss's ``pending_destage.wait``: whether slot ``s``'s read waits for taken-over
    writes its extent overlaps (then for each one's signal, or for an AllOf of them)."""
    cdef Slot* slot = &self.slots[s]
    cdef PdVm* entries = &self.pd_vms[slot.vm]
    cdef int64_t end = slot.offset + slot.size
    cdef int32_t k, found = 0, first = -1, a
    for k in range(entries.n):
        if entries.entries[k].offset < end and slot.offset < (
            entries.entries[k].offset + entries.entries[k].size
        ):
            found += 1
            if first < 0:
                first = k
    if found == 0:
        return False
    if found == 1:
        _pd_wait_on(self, _pd_signal(self, &entries.entries[first]), s)
        return True
    _pd_grow(<void**>&self.pd_alls, &self.pd_all_cap, self.pd_nalls + 1, sizeof(PdAllOf))
    a = self.pd_nalls
    self.pd_nalls += 1
    self.pd_alls[a].slot = s
    self.pd_alls[a].left = found
    for k in range(first, entries.n):  # (AllOf: a callback on each, in the entries' order)
        if entries.entries[k].offset < end and slot.offset < (
            entries.entries[k].offset + entries.entries[k].size
        ):
            _pd_wait_on(self, _pd_signal(self, &entries.entries[k]), -(<int64_t>a + 1))
    return True


cdef int _pd_fired(Engine self, int32_t sig, double now) except -1 nogil:
    """An entry's signal processed (PD_FIRED): what waits for it goes on, in order: a read
    resumes, an AllOf counts it (and is queued once it has them all: succeed)."""
    cdef PdSignal* signal = &self.pd_sigs[sig]
    cdef int32_t k, a
    cdef int64_t waiter
    for k in range(signal.n):
        waiter = signal.waiters[k]
        if waiter >= 0:
            _pd_resume(self, <int32_t>waiter, now)
        else:
            a = <int32_t>(-waiter - 1)
            self.pd_alls[a].left -= 1
            if self.pd_alls[a].left == 0:
                self._schedule(now, self.pd_alls[a].slot, PD_ALL)
        signal = &self.pd_sigs[sig]  # (a resumed read may have grown the table)
    free(signal.waiters)
    signal.waiters = NULL
    signal.n = 0
    signal.cap = 0
    return 0


cdef int _pd_resume(Engine self, int32_t s, double now) except -1 nogil:
    """read_miss after its wait: its destage-wait component is the time waited so far; then the
    storage port (parked while down), then the array."""
    cdef Slot* slot = &self.slots[s]
    slot.waited = now - slot.issued
    if self.storage_down[slot.host]:
        return _park(self, slot.host, s, PARKED_MISS)
    return _miss(self, s, now)


cdef int _free_pending(Engine self) except -1:
    cdef int32_t i
    if self.pd_vms != NULL:
        for i in range(self.vm_count):
            free(self.pd_vms[i].entries)
        free(self.pd_vms)
        self.pd_vms = NULL
    for i in range(self.pd_nsigs):
        free(self.pd_sigs[i].waiters)
    free(self.pd_sigs)
    self.pd_sigs = NULL
    free(self.pd_alls)
    self.pd_alls = NULL
    free(self.pd_order)
    self.pd_order = NULL
    return 0


cdef int _pd_start(Engine self) except -1:
    """The registry, made with the first call of the failure's process (native_run: a device
    failure under write-back makes the Python one then too)."""
    if self.pd_on:
        return 0
    self.pd_vms = <PdVm*>calloc(max(1, self.vm_count), sizeof(PdVm))
    if self.pd_vms == NULL:
        raise MemoryError()
    self.pd_on = True
    return 0
