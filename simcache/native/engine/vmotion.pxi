# Ports the scheduled vMotion without a VM (simcache.sim.host_events.vmotion's memory transfer):
# the process's start (SimPy's Initialize, URGENT, its event id taken at build: _vmotion_add),
# its env.timeout(at) (VMOTION_START), its streams over the peer paths at the event's weight
# (_vmotion_start), the process waiting for each stream in turn (_vmotion_delivered), and its
# end: the record's end_s, and the event id SimPy's Process takes when it schedules itself as
# done. The record dicts go to model.vmotions at each sync_out, in the order they started.

cdef struct VMotionState:
    double at, wire, latency, weight
    int64_t packets
    int32_t streams
    int32_t* ports  # each stream's path, MAX_PATH apiece
    int32_t* nports
    unsigned char* done  # each stream delivered
    int32_t waiting  # the stream the process waits for
    int32_t order  # its place among the vMotions started (-1: not started)
    double start, end
    bint finished


cdef int _vmotion_add(Engine self, clock, dict record, list paths, double wire, int64_t packets,
                      double latency, double weight, double at) except -1:
    """Engine.add_vmotion: the vMotion's state, its process's start queued (URGENT, now, the
    clock's next event id: env.process)."""
    cdef int32_t v = self.vmotion_count, k, j
    cdef VMotionState* grown = <VMotionState*>realloc(
        self.vmotions, (v + 1) * sizeof(VMotionState)
    )
    cdef VMotionState* m
    if grown == NULL:
        raise MemoryError()
    self.vmotions = grown
    m = &self.vmotions[v]
    memset(m, 0, sizeof(VMotionState))
    self.vmotion_count = v + 1
    m.at = at
    m.wire = wire
    m.packets = packets
    m.latency = latency
    m.weight = weight
    m.streams = len(paths)
    m.order = -1
    m.ports = <int32_t*>malloc(max(1, m.streams) * MAX_PATH * sizeof(int32_t))
    m.nports = <int32_t*>malloc(max(1, m.streams) * sizeof(int32_t))
    m.done = <unsigned char*>calloc(max(1, m.streams), 1)
    if m.ports == NULL or m.nports == NULL or m.done == NULL:
        raise MemoryError()
    for k in range(m.streams):
        path = paths[k]
        if len(path) > MAX_PATH:
            raise ValueError("a vMotion stream's path crosses more ports than a transfer can")
        m.nports[k] = len(path)
        for j in range(len(path)):
            m.ports[k * MAX_PATH + j] = _port_position(self, path[j])
    self._vmotion_records.append(record)
    self._push(clock.now, (<int64_t>URGENT << PRIORITY_SHIFT) + clock.eid, v, VMOTION_INIT, 0)
    clock.eid += 1
    return 0


cdef int32_t _port_position(Engine self, port) except -1:
    """``port``'s position among the Engine's ports."""
    cdef int32_t j
    for j in range(len(self._ports)):
        if self._ports[j] is port:
            return j
    raise ValueError("a port the native engine was not given")


cdef int _vmotion_start(Engine self, int32_t v, double now) except -1 nogil:
    """vmotion after its timeout: the record's start, every stream's transfer (FlowNetwork.
    transfer at the event's weight), in order; the process waits for the first."""
    cdef VMotionState* m = &self.vmotions[v]
    cdef int32_t k
    m.start = now
    m.order = self.vmotions_started
    self.vmotions_started += 1
    m.waiting = 0
    for k in range(m.streams):
        _send_path(self, v, k, now, &m.ports[k * MAX_PATH], m.nports[k], m.wire, m.packets,
                   m.latency, m.weight, FLOW_VMOTION)
    return 0


cdef int _vmotion_delivered(Engine self, int32_t v, int32_t k, double now) except -1 nogil:
    """Stream ``k`` has arrived; if the process waited for it, it goes on past the streams
    delivered already, and once the last is in it ends: end_s now, its Process event (an event
    id)."""
    cdef VMotionState* m = &self.vmotions[v]
    m.done[k] = 1
    if k != m.waiting:
        return 0
    while m.waiting < m.streams and m.done[m.waiting]:
        m.waiting += 1
    if m.waiting == m.streams:
        m.end = now
        m.finished = True
        self.eid += 1  # the process ends: SimPy schedules its Process event (nothing waits)
    return 0


cdef int _vmotions_out(Engine self) except -1:
    """The started vMotions' records into model.vmotions (in the order they started), their
    start_s and end_s."""
    cdef int32_t v, order
    for order in range(self.vmotions_listed, self.vmotions_started):
        for v in range(self.vmotion_count):
            if self.vmotions[v].order == order:
                self._vmotions_out.append(self._vmotion_records[v])
    self.vmotions_listed = self.vmotions_started
    for v in range(self.vmotion_count):
        if self.vmotions[v].order >= 0:
            record = self._vmotion_records[v]
            record["start_s"] = self.vmotions[v].start
            if self.vmotions[v].finished:
                record["end_s"] = self.vmotions[v].end
    return 0
