# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The kernel's event queue in native code (issue 35, step 1 prototype): a 4-ary min-heap of C
structs (time, key, slot), ordered by (time, key) exactly as ``kernel.push_entry`` orders its list
of ``Signal`` objects, so that entries at equal times pop in the same order.

Optional: ``setup.py`` builds it only with ``SIMCACHE_NATIVE=1`` (Cython 3); without it the kernel
keeps its list heap. ``key`` is the kernel's priority * 2**52 + event id; ``item`` is any object
(the kernel's ``Signal``). The comparisons and the moves run without Python objects; each call is
one crossing from the caller.

The items themselves are held in a Python list, one slot each (``slot`` in the entry; a freed slot
is taken again by the next push), not as references in the C heap: the garbage collector follows a
list, so a cycle through the queue (a clock whose queued signals' callbacks hold the model that
holds the clock: every run that ends with events still queued) is collected. Held as bare
``PyObject*`` in the heap, as before, such a cycle was invisible to it: every run's whole model
stayed in memory until the process ended.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, realloc, free


cdef struct Entry:
    double time
    int64_t key
    Py_ssize_t slot  # the item's place in EventQueue.held


cdef inline bint _before(double time, int64_t key, Entry* other) noexcept nogil:
    """Does (time, key) run before ``other``: the kernel's (time, priority, id) order."""
    return time < other.time or (time == other.time and key < other.key)


cdef class EventQueue:
    """A 4-ary min-heap of (time, key, item) entries; pops by (time, key), all keys distinct."""

    cdef Entry* entries
    cdef Py_ssize_t size
    cdef Py_ssize_t capacity
    cdef list held  # the queued items by slot, None in a free slot: the references the GC sees
    # the free slots of ``held``, taken last freed first: len(held) - size of them
    cdef Py_ssize_t* free_slots

    def __cinit__(self):
        self.capacity = 256
        self.size = 0
        self.held = []
        self.entries = <Entry*>malloc(self.capacity * sizeof(Entry))
        self.free_slots = <Py_ssize_t*>malloc(self.capacity * sizeof(Py_ssize_t))
        if self.entries == NULL or self.free_slots == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.entries)
        free(self.free_slots)

    def __len__(self):
        return self.size

    cdef int _grow(self) except -1:
        """Room for twice the entries (and as many free slots: ``held`` is never longer than the
        most entries queued at once)."""
        cdef Py_ssize_t capacity = self.capacity * 2
        cdef Entry* grown = <Entry*>realloc(self.entries, capacity * sizeof(Entry))
        if grown == NULL:
            raise MemoryError()
        self.entries = grown
        cdef Py_ssize_t* slots = <Py_ssize_t*>realloc(
            self.free_slots, capacity * sizeof(Py_ssize_t)
        )
        if slots == NULL:
            raise MemoryError()
        self.free_slots = slots
        self.capacity = capacity
        return 0

    cpdef void push(self, object item, double time, int64_t key) except *:
        """Queue ``item`` to run at ``time`` (seconds) with ``key``."""
        cdef Py_ssize_t slot
        cdef Py_ssize_t free = len(self.held) - self.size
        if self.size == self.capacity:
            self._grow()
        if free:
            slot = self.free_slots[free - 1]
            self.held[slot] = item
        else:  # every slot holds an item: one more
            slot = len(self.held)
            self.held.append(item)
        cdef Entry entry
        entry.time = time
        entry.key = key
        entry.slot = slot
        _sift_up(self.entries, entry, self.size, 0)
        self.size += 1

    cpdef object pop(self):
        """Take the first entry off and return its item (IndexError if empty)."""
        if self.size == 0:
            raise IndexError("pop from an empty EventQueue")
        cdef Py_ssize_t slot = self.entries[0].slot
        self.free_slots[len(self.held) - self.size] = slot  # the free ones, and this one
        self.size -= 1
        if self.size > 0:
            _sift_down(self.entries, self.size, self.entries[self.size], 0)
        item = self.held[slot]
        self.held[slot] = None
        return item

    cpdef double peek(self):
        """The time of the first entry (``inf`` if none)."""
        if self.size == 0:
            return float("inf")
        return self.entries[0].time

    cpdef object first(self):
        """The first entry's item, left queued (None if none)."""
        if self.size == 0:
            return None
        return self.held[self.entries[0].slot]

    def items(self):
        """The queued items, in heap order (not sorted)."""
        cdef Py_ssize_t i
        return [self.held[self.entries[i].slot] for i in range(self.size)]

    def clear(self):
        """Take every entry off."""
        self.size = 0
        self.held = []  # (the items' references dropped once the queue is consistent again)


cdef inline void _sift_up(Entry* heap, Entry entry, Py_ssize_t pos, Py_ssize_t top) noexcept nogil:
    """Put ``entry`` at ``pos`` or above it (not above ``top``), moving down the entries it runs
    before."""
    cdef Py_ssize_t parent
    while pos > top:
        parent = (pos - 1) >> 2
        if not _before(entry.time, entry.key, &heap[parent]):
            break
        heap[pos] = heap[parent]
        pos = parent
    heap[pos] = entry


cdef inline void _sift_down(
    Entry* heap, Py_ssize_t end, Entry entry, Py_ssize_t pos
) noexcept nogil:
    """Put ``entry`` in the hole at ``pos``: as the kernel (and ``heapq``) does, move the earliest
    child up to the bottom, then ``entry`` up."""
    cdef Py_ssize_t top = pos
    cdef Py_ssize_t child = 4 * pos + 1
    cdef Py_ssize_t best, other, last
    while child < end:
        best = child
        last = child + 4
        if last > end:
            last = end
        other = child + 1
        while other < last:
            if _before(heap[other].time, heap[other].key, &heap[best]):
                best = other
            other += 1
        heap[pos] = heap[best]
        pos = best
        child = 4 * pos + 1
    _sift_up(heap, entry, pos, top)
