"""The native engine's slices (issue 35, steps 2 to 8): which runs it takes, and how it runs them.

``simcache/native/_engine.pyx`` (built at install unless ``SIMCACHE_NATIVE=0``) runs, in ``nogil``
code, the per-I/O path of one class of scenarios: generated reads, served by the hosts' read caches
or, on a miss, by the backing array; writes through to the array or back through the destage
buffers, with or without replicas; vMotions without a VM, slowdowns, outages and the hash order
(below). It takes every run it supports (:func:`unsupported` finds nothing it lacks) unless turned
off (``SIMCACHE_NATIVE_ENGINE=0``, or ``run_scenario(..., native=False)``); any other run, or any
run without the extension built, goes to the Python engine, and the run's record says which ran and
why (:func:`choose`). The results are the same either way: the engine is checked against the Python
engine record for record (``tests/sim/test_native_engine.py``).

What it supports: any number of hosts; every group a generated workload or a trace replay (open,
at the trace's times, or closed, back to back per slot: ``TraceStream.next_rows`` a block of rows at
a time, handed back where the engine left it at the end, ``TraceStream.rest``) reading only
(``read_fraction = 1``), writing through (``policy = "WT"``: each write fills the tier and the
cache, crosses the storage link and is written by the array, its controller write cache flushed at
once if it has one, before it is acknowledged) or writing back (``WB+0``, ``WB+1``, ``WB+2``: the
tier write and cache fill, a replica leg to each peer (its copy over the peer path, shared fabric
or not, written on the peer's tier and counted in its ``replica_bytes``, acknowledged back; with
``replication = "memory"`` acknowledged from the peer's RAM; with ``"async"`` sent once it fits
in the host's send buffer and not waited for, the write lagging until a copy arrives or it is
destaged (``engine/lag.pxi``: the data at risk the samples show); compressed first, always or
while its sending port's last sampled utilization is high, if ``cluster.compression`` says so),
its metadata record if
``metadata_write``, acknowledged at the slowest of its local part and its legs, then the host's
destage buffer with its replicas' holders, order "arrival" or "hash" (``engine/hashwalk.pxi``),
any trigger and delay, any pacing (the
"pd" controller a Python event), its flushers reading back under any tier scheduling, the holders
dropping their copies when it is destaged), writes serialized or not (``sync_serialize``): closed
loops with or without think time, open loops (``iops`` or ``throughput``, Poisson or evenly spaced
arrivals), any duty cycle (on/off, sine, profile), any access pattern and size mix; any flash or
RAM tier (the test-only exponential service too). The read caches warm or cold: a host whose warm
cache holds every disk of its VMs only counts hits (:func:`prepare` checks it on the built
model); elsewhere a miss goes to the array, comes back over the storage link (the flow network)
and fills the cache, all in native code. The array, for reads and writes alike: any RAID layout
and drive, first come first served or with the elevator, its controller read cache (which a
write's whole lines enter), the drives' buffers and command queueing, a controller write cache
flushed at once or at a watermark (the writes it holds flushed as one sorted, merged batch).
Scheduled events: vMotions without a VM (their streams compete for the peer ports at their weight;
:func:`start_vmotion`), vMotions that move a VM (the process stays Python's, its streams and its
handover's flow the engine's, ``Engine.transfer``; the move, read back after the last stream's
delivery: the VM's I/Os in flight finish on the host they began on, its new ones take the new
host's tier, cache, destager and peers, its read misses look in the old host's cache, its writes
drop their lines from the caches it left; the handover takes from the engine's buffers,
``Engine.hand_over`` and ``Engine.adopt``; not with warm caches, asynchronous replicas or the hash
order), ``device_slow``, ``link_slow``, ``array_degraded`` and ``array_rebuild``
(their processes stay Python's: the tier's speeds and the array's scales they set are read back
after each Python event; a link's new capacity re-rates the engine's flows on it at once,
``Engine.set_capacity``) and a storage ``link_down`` (its process stays Python's; what waits for the
port waits in the engine, and the port's return is a native event, ``Engine.storage_back``) and a
peer outage (``peer_loss``, a peer ``link_down``: whether the VMs are short of their peers, and
which peers they reach, which the outage's Python process recomputes, is read back; short, their
writes go write-through (``on_peer_loss = "write_through"``), stall in the engine until their VM's
back signal, whose callback hands them back (``"stall"``, ``Engine.peers_back``), or write back to
the peers they reach (``"degrade"``, but for a group replicating asynchronously or destaging in
hash order), each held by those peers only and counted in flight until it is in the buffer; the
resync at the outage's end stays a Python process, its transfers the engine's flows
(``Engine.transfer``), the buffer it reads and rewrites the engine's (``Engine.buffered``,
``Engine.add_holder``), and a ``device_failure`` (its process stays Python's; the engine reads
back which tier failed, empties that host's cache, lets nothing fill it, fails the hits in
flight on it and sends its write-through writes past it; under write-back the buffers' part of
it is the engine's: the failed buffer stops and gives up its writes, ``Engine.fail_destager``,
the surviving holders adopt them, ``Engine.adopt``, the other buffers lose the failed host's
copies, ``Engine.peer_failed``, the writes acknowledged on the failed tier fail, the VMs
re-peered are read back, and the failed host's VMs' read misses first wait for the destage of
the writes the holders took over, ``Engine.pending_add``, ``engine/pending.pxi``; not with
asynchronous replicas, the hash order, or a peer outage or a vMotion of a VM beside it), and a
``host_failure`` (as a device failure, and more: the engine reads back which host died; its
VMs' closed-loop slots stop at their next I/O, their open loops at their next arrival, their read
misses, remote hits and write-through writes in flight end unrecorded where the Python paths find
the host dead, its writers waiting for buffer room are dropped, its cache stays as it was; with
``restart_delay`` HA restarts its VMs, ``host_events._ha_restart``, the engine reading back each
VM's new host, peers and life and starting its new closed-loop slots, ``Engine.restart``, its
open loop dropping and counting the arrivals meanwhile; not with warm caches), no other. The
hosts' destagers and flushers are built as usual; with
write-back writes the native engine runs them (the Python flushers' first steps run as Python
events, find no work and wait for a signal nothing triggers), else they stay idle. Not
supported (:func:`unsupported` names them): every other scheduled event (an HA restart with warm
caches or beside a vMotion of a VM, a
device failure under write-back beside what it lacks, a peer outage that degrades asynchronous or
hash-ordered writes, a vMotion of a VM with warm caches, asynchronous replicas or the hash
order). Python events (the flushers' first steps,
the sampler, the "pd" controller, a slowdown's or an outage's start and end, a stalled VM's back
signal, the resync processes a peer outage's end starts, the run's stop) stay in the kernel's
queue, and :func:`run` merges them with the native events in the kernel's (time, priority, event
id) order. A Python event the engine makes (a resync transfer's delivery, a degrading VM's
settled signal) is a native event whose processing ends in Python: the loop stops right after
taking it, the state is written out, and ``Engine.fire_hook`` runs its callbacks with the
clock's event ids continuing the engine's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from simcache.native.choice import native_extension
from simcache.physics.locality import MAX_BLOCKS
from simcache.sim.built import Model
from simcache.sim.collect import PATH_HIT, PATH_MISS, PATH_REMOTE_HIT, PATH_WRITE
from simcache.sim.host_events import vmotion_streams
from simcache.sim.kernel.clock import URGENT
from simcache.sim.kernel.entries import first_queued
from simcache.sim.kernel.signals import Signal
from simcache.sim.kernel.stopping import StopWithinEvent, check_not_cut_short
from simcache.spec import (
    ArrayDegraded,
    ArrayRebuild,
    DeviceFailure,
    DeviceSlow,
    HostFailure,
    LinkDown,
    LinkSlow,
    PeerLoss,
    Scenario,
    VMotion,
)
from simcache.workloads.generators import _BATCH, IOStream
from simcache.workloads.replay import BLOCK_ROWS, TraceStream

__all__ = [
    "ENV",
    "NATIVE",
    "NO_STREAMS",
    "available",
    "choose",
    "prepare",
    "requested",
    "run",
    "start_vmotion",
    "unsupported",
]

ENV = "SIMCACHE_NATIVE_ENGINE"
"""The environment variable that turns the native engine off (``0``); on by default."""
NATIVE = "native"
"""A run record's ``run_by`` when the native engine ran its I/O path."""
NOT_BUILT = (
    "the native engine is not built (it needs a C compiler at install, and not SIMCACHE_NATIVE=0),"
    " or was built before its sources last changed (reinstall)"
)
""":func:`unsupported`'s reason when the extension is missing."""
NO_STREAMS = "Python: a VM's I/O is not a generated stream (the native engine takes only those)"
"""A run record's ``run_by`` when the native engine was chosen but a VM's stream is not one it
runs (:func:`prepare` returned None)."""

_LARGEST_BUFFERED = 0x7FFFFFFF
"""The largest write the native engine's destage buffers hold (a signed 32-bit size; generated
workloads write at most 1 GiB at a time)."""

_BUDGET = 64
"""Native events run between two polls of a stop request, in units of the poll interval."""


def _engine_module() -> Any:
    """The native engine's extension, or None: not built, or older than its sources
    (:func:`simcache.native.choice.native_extension` warns then)."""
    return native_extension("_engine")


def available() -> bool:
    """Whether the native engine is built (at install, where a C compiler and Cython are at hand,
    unless ``SIMCACHE_NATIVE=0``)."""
    return _engine_module() is not None


def requested() -> bool:
    """Whether ``SIMCACHE_NATIVE_ENGINE`` leaves the native engine on (unset, empty or anything but
    ``0``)."""
    return os.environ.get(ENV, "1").strip() != "0"


def choose(
    scenario: Scenario, native: bool | None, *, generators: bool = False
) -> tuple[bool, str]:
    """Whether the native engine runs ``scenario`` (``native``: True or False as asked, None as
    :func:`requested` says), and the line a run's record keeps about it (``run_by``):
    :data:`NATIVE`, or why the Python engine ran it, ``"Python, slow: ..."`` where the extension
    is missing (the Python engine is several times slower, the results the same). ``generators``:
    the VMs' paths as generators were asked for (``build(paths="generators")``, the reference the
    callbacks are checked against), which only the Python engine runs."""
    if generators:
        return False, "Python: the I/O paths as generators asked for (paths='generators')"
    if native is None:
        native = requested()
    if not native:
        return False, f"Python: the native engine turned off (native=False or {ENV}=0)"
    reason = unsupported(scenario)
    if reason is None:
        return True, NATIVE
    if reason == NOT_BUILT:
        return False, f"Python, slow: {NOT_BUILT}"
    return False, f"Python: the native engine does not take {reason} yet"


def unsupported(scenario: Scenario) -> str | None:
    """Why the native engine cannot run ``scenario`` (None: it can).

    The reasons, in the order checked: the extension not built; a scheduled event other than a
    vMotion (of a VM only without warm caches, asynchronous replicas or the hash order: ``a
    vMotion of a VM ('name') with warm caches``, ...), a device or host failure under write-back
    with asynchronous replication, the hash order, a peer outage or a vMotion of a VM
    (``scheduled event 'device_failure' with write-back writes and ...``), a host failure's HA
    restart with warm caches or a vMotion of a VM (``scheduled event 'host_failure' with an HA
    restart and warm caches``), a slow device or link, a
    link down or peer loss (a peer outage only where no write-back group with replicas that
    degrades short of peers replicates asynchronously or destages in hash order: ``group
    'name': a peer outage with on_peer_loss = 'degrade' and replication = 'async'`` or ``... and
    destage order 'hash'``) or a degraded or rebuilding array (``scheduled event 'kind'``); a
    write-back group replaying a write of 2 GiB or more (the destage buffer's native entry holds
    less)."""
    if not available():
        return NOT_BUILT
    for event in scenario.events:
        if isinstance(event, VMotion):
            # (a vMotion of a VM stays a Python process: its streams the engine's flows, the move
            # read back by the engine)
            if event.vm is not None:
                lacking = _moves_lacking(scenario, event)
                if lacking is not None:
                    return f"a vMotion of a VM ({event.vm!r}) {lacking}"
        elif isinstance(event, LinkDown) and event.link == "storage":
            continue  # (its process stays Python's: Engine.storage_back, the port's return)
        elif isinstance(event, PeerLoss | LinkDown):  # a host's peer ports down
            # (its process stays Python's: whether the VMs are short of their peers, and which
            # they reach, is read back; short, a write-back VM's writes go through, stall or
            # write back to the peers they reach, as the native engine runs them; the resync
            # stays a Python process, its flows the engine's: Engine.transfer)
            for group in scenario.groups:
                if group.policy in ("WB+1", "WB+2") and group.on_peer_loss == "degrade":
                    if group.replication == "async":
                        return (
                            f"group {group.name!r}: a peer outage with on_peer_loss = 'degrade'"
                            " and replication = 'async'"
                        )
                    if scenario.cluster.destager.order == "hash":
                        return (
                            f"group {group.name!r}: a peer outage with on_peer_loss = 'degrade'"
                            " and destage order 'hash'"
                        )
                    if any(isinstance(e, VMotion) and e.handover for e in scenario.events):
                        # (a handover renames a write's holders, so a resync may give it a third:
                        # the engine's destage entries keep two)
                        return (
                            f"group {group.name!r}: a peer outage with on_peer_loss = 'degrade'"
                            " and a vMotion's handover"
                        )
        elif isinstance(event, DeviceFailure | HostFailure):
            # (its process stays Python's; the engine reads back which tiers failed and which
            # hosts died; under write-back the buffers' part of it is the engine's:
            # Engine.fail_destager, peer_failed, adopt)
            if isinstance(event, HostFailure) and event.restart_delay is not None:
                lacking = _restart_lacking(scenario)
                if lacking is not None:
                    return f"scheduled event 'host_failure' with an HA restart {lacking}"
            if _writes_back(scenario):
                lacking = _failure_lacking(scenario)
                if lacking is not None:
                    return f"scheduled event {event.kind!r} with write-back writes {lacking}"
        elif not isinstance(event, DeviceSlow | LinkSlow | ArrayDegraded | ArrayRebuild):
            # (the slowdowns' processes stay Python's: the tier's speeds, the array's scales synced;
            # a link's capacity re-rates the engine's flows: Engine.set_capacity)
            return f"scheduled event {event.kind!r}"
    for group in scenario.groups:
        workload = group.workload
        if (
            workload.trace is not None
            and group.policy != "WT"
            and max(device.largest["write"] for device in scenario.trace_device_summaries(group))
            > _LARGEST_BUFFERED
        ):
            return f"group {group.name!r}: a traced write of 2 GiB or more"
    return None


def _moves_lacking(scenario: Scenario, event: VMotion) -> str | None:
    """What the native engine lacks to move ``event``'s VM, or None: warm caches (their lines
    held whole), asynchronous replicas, destaging in hash order."""
    if scenario.cluster.cache.warm:
        return "with warm caches"
    if any(group.replication == "async" for group in scenario.groups):
        return "with asynchronous replication"
    if scenario.cluster.destager.order == "hash" and _writes_back(scenario):
        return "with destage order 'hash'"
    return None


def _failure_lacking(scenario: Scenario) -> str | None:
    """What the native engine lacks for a device or host failure under write-back, or None:
    asynchronous replication, the hash order, a peer outage or a vMotion of a VM beside it."""
    for group in scenario.groups:
        if group.replication == "async":
            return "and asynchronous replication"
    if scenario.cluster.destager.order == "hash":
        return "and destage order 'hash'"
    for other in scenario.events:
        if isinstance(other, PeerLoss) or (isinstance(other, LinkDown) and other.link == "peer"):
            return f"and a peer outage ({other.kind!r})"
        if isinstance(other, VMotion) and other.vm is not None:
            return "and a vMotion of a VM"
    return None


def _restart_lacking(scenario: Scenario) -> str | None:
    """What the native engine lacks for a host failure's HA restart, or None: warm caches (a
    restarted VM's disk is in no cache that holds its VMs' disks whole), a vMotion of a VM beside
    it (both move VMs: one at a time)."""
    if scenario.cluster.cache.warm:
        return "and warm caches"
    if any(isinstance(other, VMotion) and other.vm is not None for other in scenario.events):
        return "and a vMotion of a VM"
    return None


def _writes_back(scenario: Scenario) -> bool:
    """Whether a group of ``scenario`` writes back (WB+0, WB+1 or WB+2 with writes): the destagers
    then run in the native engine."""
    return any(
        group.policy != "WT" and group.workload.read_fraction != 1.0 for group in scenario.groups
    )


def prepare(model: Model, reach_bytes: list[int]) -> Any:
    """The native engine for ``model`` (built, its workloads not started), its VMs' starts queued
    where ``start_workload`` would queue them; None if a VM's stream is neither a generated one nor
    a replay (the caller starts the workloads in Python then). ``reach_bytes``: the bytes from
    each VM's disk start its I/Os touch (``engine._vm_reach_bytes``, in VM order)."""
    engine_module = _engine_module()
    if engine_module is None or not model.vms:
        return None
    reach: list[int] = []
    streams: list[IOStream | TraceStream] = []
    full: list[bool] = []
    if not all(isinstance(vm.stream, IOStream | TraceStream) for vm in model.vms):
        return None
    hosting = {vm.host.index for vm in model.vms}
    for host in model.hosts:
        # a warm cache holding its VMs' disks whole (ReadCache.hold_whole): every read hits
        full.append(
            host.cache.whole if host.index in hosting else model.scenario.cluster.cache.warm
        )
    for vm, needed in zip(model.vms, reach_bytes, strict=True):
        line = vm.host.cache.line
        reach.append(-(-needed // line) * line)
        streams.append(vm.stream)
    slot_vms = [
        position
        for position, stream in enumerate(streams)
        if _closed(stream)
        for _ in range(stream.workload.workers * stream.workload.outstanding)
    ]
    engine = engine_module.Engine(
        [host.tier for host in model.hosts],
        [host.cache for host in model.hosts],
        model.vms,
        streams,
        [vm.host.index for vm in model.vms],
        reach,
        slot_vms,
        model.record_buffer,
        PATH_HIT,
        [_refill(stream) for stream in streams],
        _BATCH,
        BLOCK_ROWS,
    )
    engine.use_misses(full, model.array, model.network, model.hosts, PATH_MISS, model.ports)
    engine.use_writes(
        [vm.write_through for vm in model.vms], [vm.gc_factor for vm in model.vms], PATH_WRITE
    )
    if _writes_back(model.scenario):
        engine.use_destagers(model.hosts)
    engine.use_vmotions(model.vmotions)
    named = {event.vm for event in model.scenario.events if isinstance(event, VMotion)}
    engine.use_moves(
        [position for position, vm in enumerate(model.vms) if vm.name in named], PATH_REMOTE_HIT
    )
    engine.begin(model.clock)
    return engine


def start_vmotion(model: Model, event: VMotion) -> None:
    """Start ``event`` (a vMotion without a VM) in the native engine as
    :func:`simcache.sim.host_events.vmotion` starts as a process (``env.process``, at build): the
    same streams over the same paths, framed and weighted alike, and the same record."""
    assert event.vm is None and model.native is not None
    link, wire, packets, streams = vmotion_streams(model, event)
    paths = [list(path) for path in streams]
    nan = float("nan")
    record: dict[str, Any] = {
        "source_host": event.source_host,
        "target_host": event.target_host,
        "start_s": nan,
        "end_s": nan,
    }
    model.native.add_vmotion(
        model.clock, record, paths, wire, packets, link.latency, event.weight, event.at
    )


def _closed(stream: IOStream | TraceStream) -> bool:
    """Whether ``stream`` runs as closed-loop slots (``drivers.start_workload``)."""
    if isinstance(stream, TraceStream):
        return stream.spec.replay != "open"
    return stream.workload.mode == "closed"


_PYTHON_REFILL, _UNIFORM_REFILL, _SEQUENTIAL_REFILL, _ZIPF_REFILL, _TRACE_REFILL = range(5)


def _refill(stream: IOStream | TraceStream) -> int:
    """How the native engine draws ``stream``'s next batch: in native code for uniform, sequential
    or Zipf offsets with one size mix and no sequential runs (the draws of
    ``IOStream._refill_ios``, bit for bit), else by calling the stream; a trace's rows as the
    stream reads them (``TraceStream.next_rows``)."""
    if isinstance(stream, TraceStream):
        return _TRACE_REFILL
    workload = stream.workload
    if workload.per_op_sizes or workload.sequential_run > 1.0:
        return _PYTHON_REFILL
    if workload.access == "sequential":
        return _SEQUENTIAL_REFILL
    if workload.access == "uniform" and stream._blocks - 1 <= 0xFFFFFFFF:
        return _UNIFORM_REFILL
    if workload.access == "zipf" and stream._blocks <= MAX_BLOCKS:
        return _ZIPF_REFILL
    return _PYTHON_REFILL


def run(
    model: Model,
    until: float,
    stop_requested: Callable[[], bool] | None = None,
    every: int = 128,
    *,
    lines: bool = True,
) -> bool:
    """:func:`simcache.sim.kernel.clock.run_until` for a model :func:`prepare` gave a native
    engine (``model.native``): the native events run in C between the Python events, each Python
    event sees the components' state as the Python engine would have left it. At the end the
    components hold the run's whole state, but for the caches' lines and the array write cache's
    runs unless ``lines`` (O(lines) to write back: a run's results read none of them;
    :func:`simcache.sim.engine.run_scenario` leaves them out)."""
    engine = model.native
    # a run with records: straight into the blocks' columns (the records buffer's sink)
    engine.use_blocks(model.record_blocks if model.stream is None else None)
    engine.sync_in()  # the state is the engine's from here to each sync_out
    clock = model.clock
    check_not_cut_short(clock)
    # polled within one event too (poll_within_event: writes resuming at once)
    clock.stop_requested = stop_requested
    engine.stop_requested = stop_requested
    engine.stop_heard = False
    try:
        return _run_loop(model, until, stop_requested, every, lines)
    except StopWithinEvent:
        # heard in a Python event (the engine's peers_back among them), which leaves the state
        # in the Python objects, as a stop between events does
        clock.cut_short = True
        engine.sync_in()
        engine.sync_out(lines=lines)
        return False
    finally:
        clock.stop_requested = None
        engine.stop_requested = None


def _run_loop(
    model: Model, until: float, stop_requested: Callable[[], bool] | None, every: int, lines: bool
) -> bool:
    """:func:`run`'s loop, on the engine's state from its start."""
    engine = model.native
    clock = model.clock
    stop = Signal(None)
    clock.schedule(stop, URGENT, until - clock.now)
    budget = every * _BUDGET if stop_requested is not None else -1
    left = budget  # native events until the next poll, counted across the Python events between
    # After a Python event the Python objects hold the state until the engine reads it back
    # (Engine.sync_in). A Python event right after it, with no native event in between (the
    # flushers' first steps: one a flusher at time 0), runs on them as they are: no sync out and
    # in between. A sample is taken on the engine's state (Engine.sample), which stays its own.
    synced = False
    while True:
        head = first_queued(clock)
        assert head is not None  # the stop at least
        if synced:
            if head is stop or engine.precedes(head.time, head.key):
                engine.sync_in()
                synced = False
            else:
                clock.step()
                if stop_requested is not None:
                    left -= 1
                    if left <= 0:
                        if stop_requested():
                            engine.sync_in()
                            engine.sync_out(lines=lines)
                            return False
                        left = budget
                continue
        engine.eid = clock.eid
        events = engine.events
        paused = engine.run(head.time, head.key, left)
        clock.eid = engine.eid
        if engine.events != events:
            clock.move_to(engine.now)
        if engine.hook >= 0:
            # the last native event taken is processed in Python (a resync's transfer delivered,
            # a degrading VM's settled signal): on the Python objects, as a Python event is
            engine.sync_out(False, lines)
            engine.fire_hook(clock)
            synced = True
            if stop_requested is not None:
                left -= engine.events - events
            continue
        if stop_requested is not None:
            left -= engine.events - events + 1  # and the Python event next, if not paused
            if engine.stop_heard:  # within a native event (_poll_within): cut short there
                clock.cut_short = True
                engine.sync_out(lines=lines)
                return False
            # poll when the budget ran out, in one call or over several between Python events
            # (a sampler every few hundred native events would otherwise never let it run out)
            if paused or left <= 0:
                if stop_requested():
                    engine.sync_out(lines=lines)
                    return False
                left = budget
            if paused:
                continue
        # (the queue holds a SimPy timeout as an entry of its own: the sampler's is its event)
        if model.next_sample is not None and head.event is model.next_sample:
            model.native_sampler = engine  # the sampler asks it for the figures (Engine.sample)
            clock.step()
            model.native_sampler = None
            engine.sample_in()
            continue
        # before the run's stop, everything; before its other Python events (the flushers'
        # steps), all but the caches' lines (Engine.sync_out)
        engine.sync_out(head is stop, lines)
        clock.step()
        if head is stop:
            clock.eid += 1  # as run_until
            return True
        synced = True
