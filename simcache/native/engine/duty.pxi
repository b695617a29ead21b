# Ports simcache.workloads.generators.DutyClock (a VM's duty cycle): on_window for an on/off cycle
# (_on_start) and advance for a profile cycle (_advance), with the same float operations.

cdef inline double _on_start(VmState* vm, double now, double* end) noexcept nogil:
    """DutyClock.on_window(now): its start returned, its end in ``end``."""
    cdef double on, phase, cycle, index, start, finish
    if vm.duty != DUTY_ONOFF:
        end[0] = INFINITY
        return now
    on = vm.on
    phase = vm.phase
    cycle = on + vm.off
    index = floor((now + phase) / cycle)
    while True:
        start = index * cycle - phase
        finish = start + on
        if finish - now > 1e-9 * on:
            end[0] = finish
            return now if now > start else start  # max(start, now)
        index += 1.0


cdef inline double _cumulative_at(VmState* vm, int64_t index) noexcept nogil:
    """DutyClock._cumulative[index], a negative index from the end as Python indexes."""
    return vm.cumulative[index if index >= 0 else index + vm.levels + 1]


cdef inline double _factor_at(VmState* vm, int64_t index) noexcept nogil:
    """DutyClock._factors[index], a negative index from the end as Python indexes."""
    return vm.factors[index if index >= 0 else index + vm.levels]


cdef double _advance(VmState* vm, double now, double work) noexcept nogil:
    """DutyClock.advance: when a profile cycle has done ``work`` seconds' worth of arrivals at the
    mean rate since ``now`` (the same float operations, in the same order)."""
    cdef double interval = vm.interval, total = vm.cumulative[vm.levels]
    cdef int64_t count = vm.levels, index, lo, hi, middle
    cdef double position, cycles, within, done, target, rest, shifted
    position = (now + vm.phase) / interval
    cycles = floor(position / <double>count)
    within = position - cycles * count
    index = <int64_t>within  # int(within): toward zero
    if index > count - 1:
        index = count - 1
    done = cycles * total + vm.cumulative[index] + vm.factors[index] * (within - <double>index)
    target = done + work / interval
    cycles = floor(target / total)
    rest = target - cycles * total
    lo = 0  # bisect_right(cumulative, rest)
    hi = count + 1
    while lo < hi:
        middle = (lo + hi) >> 1
        if rest < vm.cumulative[middle]:
            hi = middle
        else:
            lo = middle + 1
    index = lo - 1
    if index > count - 1:
        index = count - 1
    while _factor_at(vm, index) == 0.0:
        index = (index + 1) % count if index >= 0 else (index + 1 + count) % count
        if index == 0:
            cycles += 1.0
        rest = _cumulative_at(vm, index)
    position = (
        (cycles * count + <double>index)
        + (rest - _cumulative_at(vm, index)) / _factor_at(vm, index)
    )
    shifted = position * interval - vm.phase
    return shifted if shifted > now else now  # max(now, ...)
