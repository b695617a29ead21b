# Ports what a vMotion that moves a VM changes for the VM's I/O (simcache.sim.components.vm.VM
# .migrate, Migration, vm_paths.remote_hit and begin_write's discards). The move itself stays the
# Python process's (host_events.vmotion: its streams are the engine's flows, Engine.transfer; at
# the last one's delivery, processed in Python, VM.migrate); the engine reads the move back at
# the next sync_in (_moves_in): the VM's host, its peers and paths, the host it left whose cache
# its read misses look in, the hosts it left whose caches drop the lines it writes. Its I/Os in
# flight finish on the host they began on (Slot.host).


cdef bint _reaches(Engine self, int32_t host, int32_t peer) noexcept nogil:
    """Host.reaches: ``peer``'s tier up, and neither's peer ports down."""
    return not self.tier_down[peer] and not self.peer_down[peer] and not self.peer_down[host]


cdef bint _remote_holds(Engine self, VmState* vm, int64_t offset, int64_t size) noexcept nogil:
    """read_miss's test: the VM's old host reachable, its cache holding every line of the read."""
    return _reaches(self, vm.tier, vm.remote) and _holds(&self.caches[vm.remote], vm.index,
                                                         offset, size)


cdef int _remote_hit(Engine self, int32_t s, double now) except -1 nogil:
    """remote_hit's start: counted as a hit of the cache that serves it (not a miss of this
    host's); the request crosses the peer network (one link latency: a sleep)."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef int32_t k
    slot.source = vm.remote
    slot.remote_nports = vm.remote_nports
    for k in range(vm.remote_nports):
        slot.remote_ports[k] = vm.remote_ports[k]
    slot.remote_frame = vm.remote_frame
    self.caches[slot.host].misses -= 1
    self.caches[vm.remote].hits += 1
    self._schedule(now + vm.peer_latency, s, REMOTE_ASKED)
    return 0


cdef int _remote_asked(Engine self, int32_t s, double now) except -1 nogil:
    """The old host reads its tier (its time: the record's peer-tier part), then sends the
    data."""
    cdef Slot* slot = &self.slots[s]
    cdef double done = _read(&self.tiers[slot.source], now, slot.size, False, 1.0)
    slot.array_time = done - now  # (the peer tier's time)
    self._schedule(now + (done - now), s, REMOTE_READ)  # = sleep()'s time
    return 0


cdef int _remote_read(Engine self, int32_t s, double now) except -1 nogil:
    """The data back over the old host's peer path to the host the read began on
    (FlowNetwork.send, framed as its first port frames it), as they were at its start."""
    cdef Slot* slot = &self.slots[s]
    cdef double wire
    cdef int packets = _frame(self, slot.remote_frame, <double>slot.size, &wire)
    return _send_path(self, s, 0, now, slot.remote_ports, slot.remote_nports, wire, packets,
                      self.vms[slot.vm].peer_latency, 1.0, FLOW_REMOTE)


cdef int _remote_arrived(Engine self, int32_t s, double now) except -1 nogil:
    """remote_hit's end: the data fills this host's cache (off the path), the read is recorded
    (its network part all but the old host's tier time) and counted in the move's record; then
    the slot goes on."""
    cdef Slot* slot = &self.slots[s]
    cdef VmState* vm = &self.vms[slot.vm]
    cdef double peer_tier = slot.array_time
    if self.any_dead and self.host_dead[slot.host]:  # its host died under it: nothing recorded
        return _host_died_under(self, s, now)
    if not self.tier_down[slot.host]:
        _read(&self.tiers[slot.host], now, slot.size, True, 1.0)
        _insert(&self.caches[slot.host], vm.index, slot.offset, slot.size)
    _record(self, s, now, 0.0, (now - slot.issued) - peer_tier, 0.0, self.path_remote, 0.0,
            peer_tier)
    vm.remote_hits += 1  # Migration.remote_hit
    vm.remote_hit_bytes += slot.size
    vm.last_remote_hit = slot.issued
    return _slot_done(self, s, now)


cdef void _discard_left(Engine self, VmState* vm, int64_t offset, int64_t size) noexcept nogil:
    """begin_write's discards: the caches of the hosts a moved VM left drop the write's lines."""
    cdef int32_t k
    for k in range(vm.nleft):
        _discard(&self.caches[vm.left[k]], vm.index, offset, size)


cdef int _moves_in(Engine self) except -1:
    """After a Python event (sync_in): each VM a vMotion may move that has moved since (its
    Migration's record is another): its host, whether it writes through, its peers and their
    paths (_vm_peers), the ports it compresses on (none: VM._on_host), the old host and the path
    back from it, the hosts it left, its remote hits counted from 0 into the new record."""
    cdef VmState* vm
    for i in self._moving:
        migration = self._vms[i].migration
        if migration.record is self._move_records[i]:
            continue
        self._move_records[i] = migration.record
        _host_in(self, i)
        vm = &self.vms[<Py_ssize_t>i]
        vm.remote_hits = 0
        vm.remote_hit_bytes = 0
        vm.last_remote_hit = float("nan")
    for i in range(self.tier_count):
        self.peer_down[i] = self._hosts[i].peer_down
    return 0


cdef int _host_in(Engine self, Py_ssize_t i) except -1:
    """VM ``i``'s host as the Python VM now has it (moved by a vMotion: VM.migrate; restarted by
    HA: VM.restart): its host, whether it writes through, the peer link's constants, its peers and
    their paths (_vm_peers), the ports it compresses on (none: VM._on_host), the old host whose
    cache its misses look in and the path back from it, the hosts it left."""
    cdef VmState* vm = &self.vms[i]
    cdef int32_t k
    cdef int32_t* left
    machine = self._vms[i]
    migration = machine.migration
    vm.tier = machine.host.index
    vm.write_through = machine.write_through
    vm.peer_latency = machine.peer_latency
    vm.ack_time = machine._ack_time
    if self.destaging:
        _vm_peers(self, i)
    vm.remote = -1 if migration.remote is None else migration.remote.index
    if vm.remote >= 0:
        path = migration.remote.peer_path(machine.host)
        vm.remote_nports = len(path)
        for k in range(len(path)):
            vm.remote_ports[k] = _port_position(self, path[k])
        vm.remote_frame = _framing_add(self, path[0].spec)
    left = <int32_t*>realloc(vm.left, max(1, len(migration.left)) * sizeof(int32_t))
    if left == NULL:
        raise MemoryError()
    vm.left = left
    vm.nleft = len(migration.left)
    for k in range(vm.nleft):
        vm.left[k] = migration.left[k].index
    return 0


cdef int _moves_out(Engine self) except -1:
    """The moved VMs' remote hits into their moves' records (Migration.remote_hit's counts)."""
    cdef VmState* vm
    for i in self._moving:
        record = self._move_records[i]
        if record is None:
            continue
        vm = &self.vms[<Py_ssize_t>i]
        record["remote_hits"] = vm.remote_hits
        record["remote_hit_bytes"] = vm.remote_hit_bytes
        record["last_remote_hit_s"] = vm.last_remote_hit
    return 0


cdef list _untaken(Engine self, int32_t h, int64_t v):
    """Destager.untaken (order "arrival"): VM ``v``'s writes in host ``h``'s pending queue, oldest
    first, as (VM, offset, size, packed holders)."""
    cdef DestagerState* d = &self.dest[h]
    cdef int64_t k, j
    items = []
    for k in range(d.p_count):
        j = (d.p_head + k) % d.p_cap
        if d.pending[j].vm == v:
            items.append((d.pending[j].vm, d.pending[j].offset, d.pending[j].size, d.held[j]))
    return items


cdef list _hand_over(Engine self, int32_t h, dict left, int64_t v, double now):
    """Destager.hand_over (order "arrival"): VM ``v``'s untaken writes matching ``left`` (counts
    by (VM, offset, size)) leave host ``h``'s pending queue (the others keep their order and
    entry times), returned as (VM, offset, size, packed holders); its counters counted down,
    the writers that fit now admitted."""
    cdef DestagerState* d = &self.dest[h]
    cdef int64_t k, j, w = 0, count = d.p_count
    cdef Pending item
    cdef uint32_t held
    taken = []
    for k in range(count):
        j = (d.p_head + k) % d.p_cap
        item = d.pending[j]
        held = d.held[j]
        key = (item.vm, item.offset, item.size)
        if item.vm == v and left.get(key):
            left[key] -= 1
            taken.append((item.vm, item.offset, item.size, held))
            d.backlog -= item.size
            d.pending_bytes -= item.size
            if held == 0:
                d.single_copy -= item.size
            if _held_count(held) < self.vms[item.vm].promised:
                d.short -= item.size
            d.p_count -= 1
            continue
        if w != k:
            d.pending[(d.p_head + w) % d.p_cap] = item
            d.since[(d.p_head + w) % d.p_cap] = d.since[j]
            d.held[(d.p_head + w) % d.p_cap] = held
        w += 1
    _admit_waiting(self, h, now)
    return taken
