# A device failure under write-back (host_events.device_failure with write-back writes): the
# process stays Python's (_lose_copies), and what it does to the buffers is done here on the
# engine's, as Engine.hand_over and Engine.adopt do for a vMotion's handover.
# - Destager.fail (_fail_destager, Engine.fail_destager): the failed tier's buffer stops (its
#   flushers stop at their next step: the checks of Flusher._step and _read_done, in
#   _flusher_step, _send_batch, _look_for_work and _storage_back), the writers waiting for room
#   are told now (each then finds its tier gone: _wb_room, _wb_failed), every write not destaged
#   is returned (the batches on their way to the array in the order taken, then the pending
#   writes oldest first) and the counters drop to zero. The surviving holders adopt the writes
#   (Engine.adopt).
# - Destager.peer_failed (_peer_failed, Engine.peer_failed): every buffered write held by the
#   failed host loses that holder, the single-copy and short-of-peers bytes counted up. The
#   writers still waiting for room take their holders when they are admitted (_slot_holders
#   leaves out a failed peer), as VM.destage_item and the rewrite of Destager._waiting give them.
# - After the Python event: the tier is down (_tiers_failed_in: its cache emptied, the VMs on it
#   writing through), the other VMs' peers read again (_peers_in: PeerLoss.chosen changed by
#   VM.replace_peer), a write acknowledged on the failed tier fails (_wb_acked), a leg that
#   arrives at it is no copy (_leg_arrived).
# A host failure without an HA restart (host_events.host_failure) is the same to the buffers, but
# the writers waiting for room are dropped, not told (the host is dead: _fail_destager's
# ``alive``); after the Python event the host is dead (_tiers_failed_in: host_dead, its cache
# kept as it was), and its VMs' I/Os end where the Python paths find it dead (_next, the ARRIVE
# event, _miss_done, _wt_done, _remote_arrived: _host_died_under, _arrive_dead).
# The reads of a VM on the failed host wait for the adopted writes' destage (PendingDestage:
# engine/pending.pxi, the registry the failure's process fills through Engine.pending_add).
# An HA restart (host_events._ha_restart) moves the dead host's VMs: the engine reads each one's
# new host, peers and life back (_restarts_in) and starts its new closed-loop slots
# (_restart_slots, Engine.restart); a slot of an earlier life stops at its next I/O.
# Not taken (native_run.unsupported): an HA restart with warm caches, asynchronous replication
# (its lag forgets the failed peer's copies), the hash order (its walk returns the blocks not yet
# on the array), and the events that move or re-peer VMs beside it (a peer outage, a vMotion of a
# VM).


cdef list _fail_destager(Engine self, int32_t h, double now, bint alive):
    """Destager.fail on host ``h``'s buffer (order "arrival"): as (VM, offset, size, packed
    holders), the writes of the batches on their way to the array in the order taken, then the
    pending writes oldest first; the writers waiting for room told so now if the host is
    ``alive`` (a device failure: in order, with the engine's event ids: succeed), else dropped
    (a host failure: they stay in flight, never resumed)."""
    cdef DestagerState* d = &self.dest[h]
    cdef FlusherState* f
    cdef int64_t k, j
    d.stopped = True
    for k in range(d.w_count if alive else 0):
        self._schedule(now, d.waiting[(d.w_head + k) % d.w_cap], WB_ADMITTED)
    d.w_count = 0
    d.w_head = 0
    items = []
    for j in _batches_taken(self, d):
        f = &self.flushers[j]
        for k in range(f.n_items):
            items.append((f.items[k].vm, f.items[k].offset, f.items[k].size, f.held[k]))
        f.n_items = 0  # (its flusher stops before _destaged would read them)
    for k in range(d.p_count):
        j = (d.p_head + k) % d.p_cap
        items.append((d.pending[j].vm, d.pending[j].offset, d.pending[j].size, d.held[j]))
    d.p_count = 0
    d.p_head = 0
    d.backlog = 0
    d.pending_bytes = 0
    d.single_copy = 0
    d.short = 0
    return items


cdef int _peer_failed(Engine self, int32_t h, int32_t dead) except -1:
    """Destager.peer_failed on host ``h``'s buffer (order "arrival"): each write held by host
    ``dead`` loses it (Destager._lose_copy: the other holder kept; a write left with none a
    single copy, one left short of its VM's promised peers counted short)."""
    cdef DestagerState* d = &self.dest[h]
    cdef uint32_t* held
    cdef uint32_t mark = <uint32_t>(dead + 1), kept
    cdef int32_t before, promised
    for address, vm, offset, size in _buffered(self, h):
        held = <uint32_t*><Py_ssize_t>address
        if (held[0] & 0xFFFF) == mark:
            kept = held[0] >> 16
        elif (held[0] >> 16) == mark:
            kept = held[0] & 0xFFFF
        else:
            continue
        before = _held_count(held[0])
        held[0] = kept
        if kept == 0:
            d.single_copy += size
        promised = self.vms[vm].promised
        if _held_count(kept) < promised <= before:
            d.short += size
    return 0


cdef int _restarts_in(Engine self) except -1:
    """After a Python event, once a host died (sync_in), for each VM on a dead host (only the
    host_failure process changes these, and only for its VMs): its HaRestart.awaiting, and if HA
    restarted it since (VM.life changed: VM.restart) its new host, peers and paths (_host_in: no
    old host's cache after Migration.restarted), its misses waiting for the writes holders took
    over (pd_wait); its I/Os in flight forgotten (reads_in_flight and writes_in_flight cleared:
    those still under way end on the old host, unrecorded) and its serialized writers too
    (serial_writers cleared). Its new closed-loop slots: Engine.restart."""
    cdef Py_ssize_t i, s
    cdef VmState* vm
    for i in range(self.vm_count):
        vm = &self.vms[i]
        if not self.host_dead[vm.tier]:
            continue
        machine = self._vms[i]
        vm.awaiting = machine.ha.awaiting
        if machine.life == vm.life:
            continue
        vm.life = machine.life
        _host_in(self, i)
        vm.pd_wait = self.pd_on and machine.ha.pending_destage is not None
        for s in range(self.slots_used):
            if self.slots[s].vm == i:
                self.slots[s].number = -1
        vm.serial_writing = False
        vm.q_count = 0
        vm.q_head = 0
    return 0


cdef int _restart_slots(Engine self, int32_t v, double now) except -1:
    """drivers.start_workload(restarted=True) for VM ``v``: as many closed-loop slots as it began
    with, each started as _ClosedSlot starts (BEGIN now, urgent, the next event id); none for an
    open loop (it never stopped)."""
    cdef Py_ssize_t k, count = 0
    cdef int32_t s
    for k in range(self.slot_count):
        if self.slots[k].vm == v:
            count += 1
    for k in range(count):
        s = _take_slot(self, v)
        self.slots[s].closed = True
        self.slots[s].life = -1
        self._push(now, (<int64_t>URGENT << PRIORITY_SHIFT) + self.eid, s, BEGIN, 0)
        self.eid += 1
    return 0
