# Ports simcache.sim.components.link.FlowNetwork for the engine's transfers (a miss's data back, a
# write-through write's and a flusher's batch to the array, a replica leg over the peer path, a
# vMotion's streams): weighted fair shares per port, each flow at its smallest (bottleneck fair
# share, not max-min: tests/sim/test_flow_shares.py; _start as _send_path, _rerate, _leave), the
# heap of finish marks by (finish, seq) (_mark_push, _mark_pop, _compact), the wake-up timer
# (_arm, _set_wake, _wake: stale ones dropped as unschedule drops them) and lone deliveries
# (_lone_delivered). The functions take the Engine: its ports, flows and event queue.

cdef enum:
    FLOW_READ = 0  # a miss's data back: MISS_DONE (shared) or _miss_done (lone)
    FLOW_WT = 1  # a write-through write's data to the array: WT_ARRIVED or _wt_arrived
    FLOW_DESTAGE = 2  # a flusher's batch to the array (slot: the flusher): DESTAGE_ARRIVED
    FLOW_LEG = 3  # a replica leg's copy to its peer (aux: the leg): LEG_ARRIVED or _leg_arrived
    FLOW_VMOTION = 4  # a vMotion's stream (slot: the vMotion, aux: the stream): VMOTION_DELIVERED
    FLOW_ALEG = 5  # an asynchronous copy (slot: its AsyncWrite, aux: the leg): ALEG_ARRIVED
    FLOW_PY = 6  # a Python process's transfer (aux: its event's number in Engine._py): PY_EVENT
    FLOW_REMOTE = 7  # a remote hit's data back from a moved VM's old host: REMOTE_ARRIVED


cdef struct PortState:
    double capacity, weight_sum, share, delivered, carried, window
    double recent  # recent_utilization (the sampler's, read at each sync_in)
    int64_t packets
    int32_t* active  # the flows on it, in order
    int32_t nactive, active_cap


cdef struct FlowState:
    double size, remaining, stamp, rate, finish, latency, cap
    int64_t seq, delivery  # delivery: the seq its lone delivery was scheduled with (-1: none)
    double weight  # its share weight (a vMotion's; 1 for the others)
    bint lone, in_flight
    int32_t ports[MAX_PATH]
    int32_t nports
    int32_t slot  # the I/O it carries (a flusher, a vMotion)
    int32_t aux  # a leg's number, a vMotion's stream
    int32_t kind  # what its delivery does: FLOW_READ, FLOW_WT, ...
    int32_t flight_prev, flight_next  # its neighbours in Engine's list of flows in flight


cdef inline int _frame(Engine self, int32_t key, double size, double* wire) noexcept nogil:
    """framed_bytes of ``size`` payload bytes on framing ``key``'s link (a host's storage port
    below the host count, else a peer port's; Framing's lookups, computed here): the wire bytes
    in ``wire``, the packets returned. The same operations as framed_bytes, exact in doubles for
    the integers it adds and multiplies, and the division correctly rounded as Python's."""
    cdef double packets = ceil(size / self.fr_per_packet[key])
    if packets < 1.0:
        packets = 1.0
    wire[0] = size + packets * self.fr_overhead[key]
    return <int>packets


cdef int32_t _framing_add(Engine self, spec) except -1:
    """The next framing key, for a link of ``spec``: its packets' payload and overhead."""
    cdef double* per_packet
    cdef double* overhead
    if self.fr_n == self.fr_cap:
        self.fr_cap = 2 * self.fr_cap if self.fr_cap else 16
        per_packet = <double*>realloc(self.fr_per_packet, self.fr_cap * sizeof(double))
        if per_packet == NULL:
            raise MemoryError()
        self.fr_per_packet = per_packet
        overhead = <double*>realloc(self.fr_overhead, self.fr_cap * sizeof(double))
        if overhead == NULL:
            raise MemoryError()
        self.fr_overhead = overhead
    self.fr_per_packet[self.fr_n] = spec.mtu - spec.header_bytes
    self.fr_overhead[self.fr_n] = spec.header_bytes + spec.framing_bytes
    self.fr_n += 1
    return self.fr_n - 1


# the event a shared flow's delivery is (by its kind)
cdef int32_t[8] _DELIVERED = [MISS_DONE, WT_ARRIVED, DESTAGE_ARRIVED, LEG_ARRIVED,
                              VMOTION_DELIVERED, ALEG_ARRIVED, PY_EVENT, REMOTE_ARRIVED]


cdef int32_t _new_flow(Engine self) except -1 nogil:
    cdef int32_t f, cap
    if self.free_flow_count:
        self.free_flow_count -= 1
        return self.free_flows[self.free_flow_count]
    if self.flows_used == self.flow_cap:
        cap = 2 * self.flow_cap
        self.flows = <FlowState*>realloc(self.flows, cap * sizeof(FlowState))
        self.free_flows = <int32_t*>realloc(self.free_flows, cap * sizeof(int32_t))
        self.scratch = <int32_t*>realloc(self.scratch, cap * sizeof(int32_t))
        self.scratch2 = <int32_t*>realloc(self.scratch2, cap * sizeof(int32_t))
        self.epochs = <int64_t*>realloc(self.epochs, cap * sizeof(int64_t))
        if (self.flows == NULL or self.free_flows == NULL or self.scratch == NULL or self.scratch2 == NULL or self.epochs == NULL):
            with gil:
                raise MemoryError()
        memset(self.epochs + self.flow_cap, 0, self.flow_cap * sizeof(int64_t))
        self.flow_cap = cap
    f = self.flows_used
    self.flows_used += 1
    return f


cdef inline int _active_add(Engine self, PortState* port, int32_t f) except -1 nogil:
    """Flow ``f`` among the port's active ones (room made out of line: :func:`_active_grow`)."""
    if port.nactive == port.active_cap:
        _active_grow(port)
    port.active[port.nactive] = f
    port.nactive += 1
    return 0


cdef int _active_grow(PortState* port) except -1 nogil:
    """The port's active flows full: twice their room."""
    cdef int32_t* active = <int32_t*>realloc(port.active, 2 * port.active_cap * sizeof(int32_t))
    if active == NULL:
        with gil:
            raise MemoryError()
    port.active = active
    port.active_cap *= 2
    return 0


cdef int _send(Engine self, int32_t s, double now) except -1 nogil:
    """ArrayRead._step's first phase: FlowNetwork.send((array_tx, storage_rx), wire, packets,
    latency=storage_tx.latency) and its _start."""
    cdef int32_t host = self.slots[s].host
    return _send_on(self, s, now, self.host_ports[2 * host], self.host_ports[2 * host + 1],
                    host, self.slots[s].size, FLOW_READ)


cdef int _send_on(Engine self, int32_t s, double now, int32_t p0, int32_t p1, int32_t host,
                  int64_t size, int32_t kind) except -1 nogil:
    """FlowNetwork.send((p0, p1), *storage_tx.framing[size], latency=storage_tx.latency) of
    ``host`` and its _start, for I/O ``s``; its delivery does ``kind``."""
    cdef int32_t ports[2]
    cdef double wire
    cdef int packets = _frame(self, host, <double>size, &wire)
    ports[0] = p0
    ports[1] = p1
    return _send_path(self, s, 0, now, ports, 2, wire, packets, self.host_latency[host], 1.0,
                      kind)


cdef int _send_path(Engine self, int32_t s, int32_t aux, double now, int32_t* ports,
                    int32_t nports, double wire, int64_t packets, double latency, double weight,
                    int32_t kind) except -1 nogil:
    """FlowNetwork._send (no start delay) and _start: ``wire`` bytes over ``ports`` at
    ``weight``, delivered ``latency`` after the last byte left; its delivery does ``kind`` for
    ``s`` (and ``aux``)."""
    cdef int32_t k
    for k in range(nports):
        self.ports[ports[k]].packets += packets
    return _start_flow(self, s, aux, now, ports, nports, wire, latency, weight, kind)


cdef int _start_flow(Engine self, int32_t s, int32_t aux, double now, int32_t* ports,
                     int32_t nports, double wire, double latency, double weight,
                     int32_t kind) except -1 nogil:
    """FlowNetwork._start (the packets counted at the send: a compressed replica starts after
    its CPU time)."""
    cdef int32_t fi, other, first, nb = 0, k, j
    cdef double cap
    cdef FlowState* f
    cdef PortState* port
    if wire <= 0:  # _deliver(now + latency): nothing flows
        with gil:
            raise RuntimeError("the native engine sends no empty transfer")
    fi = _new_flow(self)
    f = &self.flows[fi]
    f.size = wire
    f.remaining = wire
    f.stamp = now
    f.rate = 0.0
    f.latency = latency
    f.weight = weight
    f.cap = INFINITY
    f.lone = False
    f.delivery = -1
    f.seq = -1
    f.slot = s
    f.aux = aux
    f.kind = kind
    f.nports = nports
    for k in range(nports):
        f.ports[k] = ports[k]
    f.in_flight = True
    f.flight_prev = self.flight_tail  # at the list's end: the start order
    f.flight_next = -1
    if self.flight_tail >= 0:
        self.flows[self.flight_tail].flight_next = fi
    else:
        self.flight_head = fi
    self.flight_tail = fi
    self.n_in_flight += 1
    self.epoch += 1
    for k in range(nports):
        port = &self.ports[f.ports[k]]
        if port.window < wire and f.latency > 0:
            cap = port.window / (2.0 * f.latency)
            if cap < f.cap:
                f.cap = cap
        if port.nactive:
            first = port.active[0]
            if self.flows[first].lone and self.flows[first].finish <= now:
                _leave(self, first)
            else:
                for j in range(port.nactive):
                    other = port.active[j]
                    if self.epochs[other] != self.epoch:
                        self.epochs[other] = self.epoch
                        self.scratch[nb] = other
                        nb += 1
        _active_add(self, port, fi)
        port.weight_sum += weight
        port.share = port.capacity / port.weight_sum
    if nb == 0:
        _rerate(self, fi, now)
        return 0
    self.rerated += nb
    # Many flows re-rated at once (writes resuming together after an outage: each joins the
    # others on the port) leave as many void marks at the heap's top, which _arm would pop one by
    # one: the heap is rebuilt instead, from the flows' new marks (the same marks in the same
    # (finish, seq) order: the runs are the same).
    self.marks_rebuilt = nb >= HEAP_SLACK and 4 * nb >= self.n_in_flight
    for j in range(nb):
        _rerate(self, self.scratch[j], now)
    _rerate(self, fi, now)
    if self.marks_rebuilt or self.marks_n > 2 * self.n_in_flight + HEAP_SLACK:
        self.marks_rebuilt = False
        _compact(self)
    _arm(self)
    return 0


cdef int _set_capacity(Engine self, int32_t index, double capacity, double now) except -1:
    """FlowNetwork.set_capacity (its capacity accounting is the Python port's): the port at
    ``capacity``, its flows re-rated in their order on it, the wake-up armed."""
    cdef PortState* port = &self.ports[index]
    cdef int32_t first, n, j
    port.capacity = capacity
    if port.nactive:
        first = port.active[0]
        if self.flows[first].lone and self.flows[first].finish <= now:
            _leave(self, first)  # a lone flow that finished since: its delivery is on its way
    if port.nactive == 0:
        return 0
    port.share = capacity / port.weight_sum
    n = port.nactive
    for j in range(n):  # (a copy: as `list(active)`)
        self.scratch[j] = port.active[j]
    self.rerated += n
    for j in range(n):
        _rerate(self, self.scratch[j], now)
    _arm(self)
    return 0


cdef int _rerate(Engine self, int32_t fi, double now) except -1 nogil:
    """FlowNetwork._rerate."""
    cdef FlowState* f = &self.flows[fi]
    cdef double rate = INFINITY, remaining
    cdef bint lone = True
    cdef int k
    cdef PortState* port
    for k in range(f.nports):
        port = &self.ports[f.ports[k]]
        if port.share < rate:
            rate = port.share
        if port.nactive > 1:
            lone = False
    rate *= f.weight
    if rate > f.cap:
        rate = f.cap
    if rate == f.rate and not lone and not f.lone:
        return 0
    remaining = f.remaining - f.rate * (now - f.stamp)
    if remaining < 0.0:
        remaining = 0.0
    f.remaining = remaining
    f.stamp = now
    f.rate = rate
    f.finish = now + remaining / rate
    self.seq += 1
    f.seq = self.seq
    f.lone = lone
    if lone:
        f.delivery = self.seq
        self._push(f.finish + f.latency, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, fi,
                   LONE, self.seq)
        self.eid += 1
    else:
        f.delivery = -1
        if not self.marks_rebuilt:
            _mark_push(self, f.finish, f.seq, fi)
    return 0


cdef int _marks_grow(Engine self) except -1 nogil:
    """The finish marks' heap full: twice its room."""
    cdef Entry* marks = <Entry*>realloc(self.marks, 2 * self.marks_cap * sizeof(Entry))
    if marks == NULL:
        with gil:
            raise MemoryError()
    self.marks = marks
    self.marks_cap *= 2
    return 0


cdef inline int _mark_push(Engine self, double time, int64_t key, int32_t fi) except -1 nogil:
    """A shared flow's finish mark into the heap (by time, then key)."""
    cdef Py_ssize_t pos, parent
    if self.marks_n == self.marks_cap:
        _marks_grow(self)
    pos = self.marks_n
    self.marks_n += 1
    while pos > 0:
        parent = (pos - 1) >> 1
        if _before(time, key, &self.marks[parent]):
            self.marks[pos] = self.marks[parent]
            pos = parent
        else:
            break
    self.marks[pos].time = time
    self.marks[pos].key = key
    self.marks[pos].slot = fi
    return 0


cdef inline Entry _mark_pop(Engine self) noexcept nogil:
    """The first finish mark, taken out of the heap."""
    cdef Entry top = self.marks[0], last
    cdef Py_ssize_t pos = 0, child, size
    self.marks_n -= 1
    size = self.marks_n
    if size == 0:
        return top
    last = self.marks[size]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and _before(
            self.marks[child + 1].time, self.marks[child + 1].key, &self.marks[child]
        ):
            child += 1
        if _before(self.marks[child].time, self.marks[child].key, &last):
            self.marks[pos] = self.marks[child]
            pos = child
        else:
            break
    self.marks[pos] = last
    return top


cdef int _compact(Engine self) except -1 nogil:
    """FlowNetwork._compact: the marks of the shared flows in flight only."""
    cdef int32_t fi = self.flight_head
    self.marks_n = 0
    while fi >= 0:
        if not self.flows[fi].lone:
            _mark_push(self, self.flows[fi].finish, self.flows[fi].seq, fi)
        fi = self.flows[fi].flight_next
    return 0


cdef int _leave(Engine self, int32_t fi) except -1 nogil:
    """FlowNetwork._leave."""
    cdef FlowState* f = &self.flows[fi]
    cdef PortState* port
    cdef int32_t k, j
    if f.in_flight:  # out of the list of flows in flight
        if f.flight_prev >= 0:
            self.flows[f.flight_prev].flight_next = f.flight_next
        else:
            self.flight_head = f.flight_next
        if f.flight_next >= 0:
            self.flows[f.flight_next].flight_prev = f.flight_prev
        else:
            self.flight_tail = f.flight_prev
        self.n_in_flight -= 1
    f.in_flight = False
    for k in range(f.nports):
        port = &self.ports[f.ports[k]]
        port.delivered += f.size
        for j in range(port.nactive):
            if port.active[j] == fi:
                # the rest shifted down in order (a port carries a few flows: a loop costs less
                # than memmove's call)
                port.nactive -= 1
                while j < port.nactive:
                    port.active[j] = port.active[j + 1]
                    j += 1
                break
        if port.nactive:
            port.weight_sum -= f.weight
            port.share = port.capacity / port.weight_sum
        else:
            port.weight_sum = 0.0
            port.share = INFINITY
            port.carried = port.delivered
    return 0


cdef int _arm(Engine self) except -1 nogil:
    """FlowNetwork._arm."""
    while self.marks_n and self.flows[self.marks[0].slot].seq != self.marks[0].key:
        _mark_pop(self)
    if self.marks_n and self.marks[0].time < self.wake_at:
        _set_wake(self, self.marks[0].time)
    return 0


cdef int _set_wake(Engine self, double wake_at) except -1 nogil:
    """FlowNetwork._set_wake (and _drop_stale_timers: the stale wake-ups taken out of the
    queue once more than STALE_KEPT)."""
    if self.timer >= 0:
        self.stale += 1
        if self.stale > STALE_KEPT:
            _rq_drop_kind(&self.queue, WAKE)
            self.stale = 0
    self.wake_at = wake_at
    self.timer_serial += 1
    self.timer = self.timer_serial
    self._push(wake_at, (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, 0, WAKE, self.timer)
    self.eid += 1
    return 0


cdef int _wake(Engine self, int64_t timer, double now) except -1 nogil:
    """FlowNetwork._wake."""
    cdef int32_t nfinished = 0, nb = 0, k, j, i, fi, other
    cdef Entry mark
    cdef PortState* port
    if timer != self.timer:
        self.stale -= 1
        return 0
    self.wake_at = INFINITY
    self.timer = -1
    while self.marks_n and self.marks[0].time <= now:
        mark = _mark_pop(self)
        if self.flows[mark.slot].seq == mark.key:
            self.scratch2[nfinished] = mark.slot
            nfinished += 1
            _leave(self, mark.slot)
    if nfinished:
        self.epoch += 1
        for k in range(nfinished):
            fi = self.scratch2[k]
            for i in range(self.flows[fi].nports):
                port = &self.ports[self.flows[fi].ports[i]]
                for j in range(port.nactive):
                    other = port.active[j]
                    if self.epochs[other] != self.epoch:
                        self.epochs[other] = self.epoch
                        self.scratch[nb] = other
                        nb += 1
        self.rerated += nb
        for j in range(nb):
            _rerate(self, self.scratch[j], now)
        for k in range(nfinished):
            fi = self.scratch2[k]
            self._push(now + self.flows[fi].latency,
                       (<int64_t>NORMAL << PRIORITY_SHIFT) + self.eid, self.flows[fi].slot,
                       _DELIVERED[self.flows[fi].kind], self.flows[fi].aux)
            self.eid += 1
            self.free_flows[self.free_flow_count] = fi
            self.free_flow_count += 1
    _arm(self)
    return 0


cdef int _lone_delivered(Engine self, int32_t fi, int64_t aux, double now) except -1 nogil:
    """FlowNetwork._lone_delivered, then the I/O's delivery (process_now)."""
    cdef FlowState* f = &self.flows[fi]
    cdef int32_t s = f.slot, kind = f.kind, what = f.aux
    if f.delivery != aux:
        return 0
    f.delivery = -1
    if f.in_flight:
        _leave(self, fi)
    self.free_flows[self.free_flow_count] = fi
    self.free_flow_count += 1
    if kind == FLOW_WT:
        return _wt_arrived(self, s, now)
    if kind == FLOW_DESTAGE:
        return _flusher_step(self, s, now)
    if kind == FLOW_LEG:
        return _leg_arrived(self, s, what, now)
    if kind == FLOW_VMOTION:
        return _vmotion_delivered(self, s, what, now)
    if kind == FLOW_ALEG:
        return _aleg_arrived(self, s, what, now)
    if kind == FLOW_PY:  # its event processed now, in Python (process_now: Engine.hook)
        self.hook = what
        return 0
    if kind == FLOW_REMOTE:
        return _remote_arrived(self, s, now)
    return _miss_done(self, s, now)
