# Ports simcache.sim.collect.RecordBuffer.add (_record: a read's fields, as rows or a field apart
# in RecordBlocks' narrowest types, RecordBlocks.append's conversions) and the hand-over of the
# records to the buffer's sink or the blocks (_records_out).

cdef int _record(Engine self, int32_t s, double now, double local, double network, double array,
                 double path, double waited, double peer_tier) except -1 nogil:
    """RecordBuffer.add's fields of slot ``s``'s I/O, done now (``waited``: its destage-wait
    component; ``peer_tier``: its slowest replica leg's time on its peer's tier)."""
    cdef Slot* slot = &self.slots[s]
    cdef double* row
    cdef int64_t n = self.record_count, limit = self.record_limit
    cdef int64_t index = self.vms[slot.vm].index
    if self.narrow and (index > 255 or slot.size % SECTOR or slot.size // SECTOR > 65535):
        with gil:  # past the narrowest types: rows from now on (the blocks widen)
            _records_out(self, False)
            self.narrow = False
        n = 0
    if self.narrow:
        # RecordBlocks.append's conversions: flags is_write + 2 * path, size in sectors,
        # components in ms rounded once to float32
        self.n_vm[n] = <unsigned char>index
        self.n_flags[n] = <unsigned char>(<double>slot.write + 2.0 * path)
        self.n_sectors[n] = <uint16_t>(slot.size // SECTOR)
        self.n_issued[n] = slot.issued
        self.n_completed[n] = now
        self.n_components[n] = <float>(local * 1e3)
        self.n_components[limit + n] = <float>(network * 1e3)
        self.n_components[2 * limit + n] = <float>(peer_tier * 1e3)
        self.n_components[3 * limit + n] = <float>(waited * 1e3)
        self.n_components[4 * limit + n] = <float>(array * 1e3)
    else:
        row = self.records + FIELDS * n
        row[0] = <double>index
        row[1] = 1.0 if slot.write else 0.0
        row[2] = <double>slot.size
        row[3] = slot.issued
        row[4] = now
        row[5] = local
        row[6] = network
        row[7] = peer_tier
        row[8] = waited
        row[9] = array
        row[10] = path
    self.record_count += 1
    slot.number = -1
    if self.record_count >= self.record_room:
        with gil:
            _records_out(self, True)
            self.record_room = self.record_limit
    return 0


cdef int _records_out(Engine self, bint full) except -1:
    """Hand the records on as ``RecordBuffer.add`` would: to the sink once ``limit`` are held
    (``full``), else into the buffer for the next sample."""
    cdef int64_t n = self.record_count, k
    if n == 0:
        return 0
    buffer = self.buffer
    if self.narrow:
        if buffer.count:  # rows before these (none in the runs it takes): theirs first
            buffer.sink(buffer.take())
        # views of the engine's columns, which the blocks copy (no bytes object in between)
        columns = [
            PyMemoryView_FromMemory(<char*>self.n_vm, n, PyBUF_READ),
            PyMemoryView_FromMemory(<char*>self.n_flags, n, PyBUF_READ),
            PyMemoryView_FromMemory(<char*>self.n_sectors, 2 * n, PyBUF_READ),
            PyMemoryView_FromMemory(<char*>self.n_issued, 8 * n, PyBUF_READ),
            PyMemoryView_FromMemory(<char*>self.n_completed, 8 * n, PyBUF_READ),
        ]
        for k in range(COMPONENTS):
            columns.append(PyMemoryView_FromMemory(
                <char*>(self.n_components + k * self.record_limit), 4 * n, PyBUF_READ
            ))
        self.record_count = 0
        self.blocks.extend_narrow(columns, n)
        return 0
    data = PyBytes_FromStringAndSize(<char*>self.records, 8 * FIELDS * n)
    self.record_count = 0
    if full and buffer.count == 0:
        buffer.sink(np.frombuffer(data, dtype="<f8").reshape(n, FIELDS))
        return 0
    buffer._packed.write(data)
    buffer.count += n
    if buffer.count >= buffer.limit and buffer.sink is not None:
        buffer.sink(buffer.take())
    return 0
