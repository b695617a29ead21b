# Ports simcache.sim.components.meter.BusyMeter (a component's busy intervals, folded into a
# carried total: Meter, _meter_add, _sweep) and
# simcache.sim.components.randomness.UniformStream (a random stream's uniforms: the block drawn
# in Python first, then the generator; Uniforms, _uniform). Shared by the tiers and the
# array.

cdef struct Meter:
    # a BusyMeter's intervals and state
    double* intervals
    int64_t held, held_cap, limit
    double carried, swept_to
    # the meter's intervals the Python meter holds (sync_out appends the ones after them) unless
    # swept here since
    int64_t synced_held
    bint swept


cdef struct Uniforms:
    # a UniformStream: the rest of the block drawn in Python, then the generator
    simcache_bitgen_t* bitgen
    double* leftover
    Py_ssize_t left_next, left_end


cdef inline double _uniform(Uniforms* t) noexcept nogil:
    cdef double value
    if t.left_next < t.left_end:
        value = t.leftover[t.left_next]
        t.left_next += 1
        return value
    return t.bitgen.next_double(t.bitgen.state)


cdef inline int _held_room(Meter* t, int64_t n) except -1 nogil:
    """Room for ``n`` intervals (grown out of line: :func:`_held_grow`)."""
    if n <= t.held_cap:
        return 0
    return _held_grow(t, n)


cdef int _held_grow(Meter* t, int64_t n) except -1 nogil:
    """Room for ``n`` intervals, more than the meter holds room for: its room doubled until."""
    cdef int64_t cap = t.held_cap
    cdef double* intervals
    while cap < n:
        cap *= 2
    intervals = <double*>realloc(t.intervals, 2 * cap * sizeof(double))
    if intervals == NULL:
        with gil:
            raise MemoryError()
    t.intervals = intervals
    t.held_cap = cap
    return 0


cdef double _sweep(Meter* t, double window_start, double window_end) noexcept nogil:
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


cdef void _meter_fold(Meter* t, double at) noexcept nogil:
    """BusyMeter._fold(at) for a sample at ``at`` (:func:`_meter_sample`): the intervals up to it
    counted into ``carried``, those going on past it kept. ``busy_between(last, at)`` then sweeps
    only those (they add nothing before ``at``) and returns ``carried`` + 0.0, the sum it would
    have made of them all (the same additions in the same order: ``swept_to`` is at or after
    ``last``, the window's start)."""
    t.carried += _sweep(t, t.swept_to, at)
    t.swept_to = at


cdef tuple _meter_sample(Meter* t, double at):
    """A sample at ``at`` on the meter: (busy seconds since the last sample, intervals open at
    ``at``), as BusyMeter.busy_between(last, at) and open_count() after the fold to ``at``
    (:func:`_meter_fold`): the busy time is ``carried`` + 0.0 (the intervals left add nothing
    before ``at``), and the next window counts from ``at``."""
    cdef double busy
    _meter_fold(t, at)  # (swept_to at ``at``)
    busy = t.carried + 0.0
    t.carried = 0.0
    return (busy, t.held)


cdef inline int _meter_add(Meter* t, double start, double finish, double now) except -1 nogil:
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
