"""Scenario rules that span several specs, each problem found as a field path and a message.

The schema checks every spec on its own (:mod:`simcache.spec.scenario` runs it
first); :func:`scenario_problems` then checks what no single spec can: replicas
against the peer hosts, host indices and VMs per host, the destage buffer
against the largest write (a trace's too), each event against the cluster, the
run and the others (a vMotion's VM and source host, one slowdown of a
component at a time, a rebuild the array can make), the trace files, and the
working sets against the array's capacity. :func:`run_problems` is the part a
changed duration or seed can break.

:func:`scenario_notes` finds what is valid but may not be what was meant (peer
ports that only a vMotion's streams take); the scenario runs as written and a
:class:`ScenarioWarning` says so.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from simcache.base.errors import ScenarioError, counted, listing
from simcache.physics.array import rebuild_share
from simcache.physics.cluster import MAX_CACHED_LINES, read_cache_lines
from simcache.spec.checks import repeated_names
from simcache.spec.events import (
    ArrayDegraded,
    ArrayRebuild,
    DeviceSlow,
    HostFailure,
    LinkSlow,
    VMotion,
    array_event_seconds,
)
from simcache.spec.fields import MAX_VMS_PER_HOST

if TYPE_CHECKING:
    from simcache.spec.array import ArraySpec
    from simcache.spec.scenario import Scenario
    from simcache.spec.workload import Group

__all__ = [
    "STABILITY_SAMPLES",
    "ScenarioWarning",
    "run_problems",
    "sample_interval_for_test",
    "scenario_notes",
    "scenario_problems",
]


class ScenarioWarning(UserWarning):
    """A valid scenario with a setting that may not do what its writer meant
    (:func:`scenario_notes`): it runs as written. ``source`` names the file (or ``"<dict>"``,
    ``"variants.<name>"``), ``field`` the setting, and the message what it does and what to
    change if that was not meant."""

    def __init__(self, source: str, field: str, message: str):
        super().__init__(f"{source}: {field}: {message}")
        self.source = source
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[type[ScenarioWarning], tuple[str, str, str]]:
        # Rebuilt from its parts when it crosses a process boundary (a sweep worker's warning).
        return (type(self), (self.source, self.field, self.message))


def scenario_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """Checks that span several fields: replicas vs peers, host indices, event hosts."""
    hosts = scenario.cluster.hosts
    problems = repeated_names("groups", "group", [g.name for g in scenario.groups])
    for i, group in enumerate(scenario.groups):
        where = f"groups.{i}({group.name})"
        if group.replicas > hosts - 1:
            problems.append(
                (
                    f"{where}.policy",
                    f"{group.policy} needs {counted(group.replicas, 'peer host')} but the cluster "
                    f"has {counted(hosts, 'host')} "
                    f"({counted(hosts - 1, 'peer')}); raise cluster.hosts to at least "
                    f"{group.replicas + 1} "
                    "or use a policy "
                    f"with fewer replicas",
                )
            )
        largest = max(group.workload.op_size_mix(True)[0])
        if group.workload.trace is not None:
            trace_problems = _trace_problems(scenario, group, where)
            problems += trace_problems
            largest = 0 if trace_problems else _largest_traced_write(scenario, group)
        if largest > scenario.cluster.destager.capacity:
            problems.append(
                (
                    "cluster.destager.capacity",
                    f"the buffer ({scenario.cluster.destager.capacity} bytes) is smaller than the "
                    "largest write of "
                    f"group {group.name!r} ({largest} bytes); make it at least that large",
                )
            )
        if group.hosts is not None and len(set(group.hosts)) != len(group.hosts):
            problems.append(
                (
                    f"{where}.hosts",
                    f"host indices repeat in {group.hosts}; list each host once and use "
                    "vms_per_host for more VMs",
                )
            )
        for host in group.hosts or []:
            if host >= hosts:
                problems.append(
                    (
                        f"{where}.hosts",
                        f"host index {host} does not exist; hosts are 0..{hosts - 1}",
                    )
                )
    problems += _crowded_hosts(scenario)
    problems += _slowdown_problems(scenario)
    problems += _vmotion_problems(scenario)
    for i, event in enumerate(scenario.events):
        fields = (
            ("source_host", "target_host")
            if isinstance(event, VMotion)
            else ()
            if isinstance(event, ArrayDegraded | ArrayRebuild)
            else ("host",)
        )
        for field in fields:
            if getattr(event, field) >= hosts:
                problems.append(
                    (
                        f"events.{i}.{field}",
                        f"host index {getattr(event, field)} does not exist; hosts are "
                        f"0..{hosts - 1}",
                    )
                )
        if isinstance(event, VMotion) and event.source_host == event.target_host:
            problems.append((f"events.{i}.target_host", "a vMotion needs two different hosts"))
        if not isinstance(event, VMotion | HostFailure) and event.at >= scenario.run.duration:
            problems.append(
                (
                    f"events.{i}.at",
                    f"{event.at:g}s is not inside the run (0 to {scenario.run.duration:g}s); move "
                    "it earlier or lengthen run.duration",
                )
            )
        if isinstance(event, HostFailure) and event.restart_delay is not None:
            restart = event.at + event.restart_delay
            if restart >= scenario.run.duration:
                problems.append(
                    (
                        f"events.{i}.restart_delay",
                        f"the restart at {restart:g}s ({event.at:g}s + {event.restart_delay:g}s) "
                        "is not inside the run "
                        f"(0 to {scenario.run.duration:g}s); shorten restart_delay or lengthen "
                        "run.duration",
                    )
                )
    problems += run_problems(scenario)
    if any(path.endswith(".workload.trace") or ".workload.trace." in path for path, _ in problems):
        return problems  # a trace that cannot be read has no span to add up
    problems += _read_cache_problems(scenario)
    total_working_set = scenario.data_bytes
    array_bytes = scenario.array.drive.capacity * scenario.array.spindles
    if total_working_set > array_bytes:
        problems.append(
            (
                "groups",
                f"the VMs' working sets add up to {total_working_set / 1e9:.1f} GB, more than the "
                "array's "
                f"{array_bytes / 1e9:.1f} GB raw; shrink workload.working_set or add spindles",
            )
        )
    return problems


def _read_cache_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """A read cache that could hold more lines than the engine indexes: the lines of its capacity,
    or every line of the VMs' working sets if fewer (a line can straddle a working set's end)."""
    line = scenario.cluster.cache.line
    reachable = scenario.data_bytes // line + scenario.vm_count
    lines = min(read_cache_lines(scenario.cluster), reachable)
    if lines <= MAX_CACHED_LINES:
        return []
    return [
        (
            "cluster.cache.line",
            f"a host's read cache could hold {lines:,} lines of {line:,} bytes, more than the "
            f"{MAX_CACHED_LINES:,} the simulator indexes (about 10 GB of memory); use larger lines "
            '(e.g. line = "64KiB") or a smaller cluster.cache.capacity',
        )
    ]


_VM_NAME = re.compile(r"(?P<group>.+)-h(?P<host>[0-9]+)-(?P<k>[0-9]+)")


def _vmotion_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """A vMotion's ``vm`` names a VM of the scenario that runs on its ``source_host`` then (after
    the vMotions of it that start earlier); ``handover`` needs a VM, and one whose replicas are
    not asynchronous."""
    problems: list[tuple[str, str]] = []
    groups = {group.name: group for group in scenario.groups}
    # VM name -> the host it runs on after the vMotions checked so far
    where_now: dict[str, int] = {}
    moves = sorted(
        (event.at, i, event)
        for i, event in enumerate(scenario.events)
        if isinstance(event, VMotion)
    )
    for _, i, event in moves:
        if event.vm is None:
            if event.handover:
                problems.append(
                    (
                        f"events.{i}.handover",
                        "a handover needs a VM that moves: set vm, or drop handover",
                    )
                )
            continue
        match = _VM_NAME.fullmatch(event.vm)
        group = groups.get(match["group"]) if match else None
        if match is None or group is None:
            known = ", ".join(f"{name}-h<host>-<k>" for name in groups)
            problems.append(
                (
                    f"events.{i}.vm",
                    f"{event.vm!r} names no VM; VMs are named as in the records' vm column: "
                    f"{known}",
                )
            )
            continue
        host, k = int(match["host"]), int(match["k"])
        if host not in scenario.group_hosts(group) or k >= group.vms_per_host:
            problems.append(
                (
                    f"events.{i}.vm",
                    f"group {group.name!r} has no VM {event.vm!r}: it places VMs "
                    f"{group.name}-h<host>-0 to "
                    f"-{group.vms_per_host - 1} on hosts {scenario.group_hosts(group)}",
                )
            )
            continue
        runs_on = where_now.get(event.vm, host)
        if event.source_host != runs_on:
            earlier = " after the vMotions of it before this one" if event.vm in where_now else ""
            problems.append(
                (
                    f"events.{i}.source_host",
                    f"{event.vm} runs on host{runs_on}{earlier}; set source_host = {runs_on}",
                )
            )
        where_now[event.vm] = event.target_host
        if event.handover and group.replication == "async" and group.replicas:
            problems.append(
                (
                    f"events.{i}.handover",
                    f"group {group.name!r} replicates asynchronously: the source tracks its "
                    "lagging replicas, so its "
                    "writes cannot be handed over; drop handover (the source destages them)",
                )
            )
    return problems


def _slowdown_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """An array degraded needs redundancy and a rebuild slower than the survivors' media; each
    array, link or tier is slowed by one event at a time (a second failed spindle, or two
    slowdowns of one port, are not modelled)."""
    problems: list[tuple[str, str]] = []
    array = scenario.array
    windows: dict[str, list[tuple[float, float, int]]] = {}
    for i, event in enumerate(scenario.events):
        if isinstance(event, LinkSlow):
            component, state = f"host{event.host}'s {event.link} link", "slowed"
        elif isinstance(event, DeviceSlow):
            component, state = f"host{event.host}'s tier", "slowed"
        elif isinstance(event, ArrayDegraded | ArrayRebuild):
            component, state = "the array", "degraded"
            problems += _array_event_problems(i, event, array)
        else:
            continue
        seconds = (
            array_event_seconds(event, array.drive.capacity)
            if isinstance(event, ArrayDegraded | ArrayRebuild)
            else event.duration
        )
        for start, end, j in windows.get(component, []):
            if event.at < end and start < event.at + seconds:
                problems.append(
                    (
                        f"events.{i}.at",
                        f"{component} is already {state} by events.{j} from {start:g}s to {end:g}s "
                        "(one event at a time "
                        "is modelled); move it after that window",
                    )
                )
                break
        windows.setdefault(component, []).append((event.at, event.at + seconds, i))
    return problems


def _array_event_problems(
    i: int, event: ArrayDegraded | ArrayRebuild, array: ArraySpec
) -> list[tuple[str, str]]:
    if array.raid == "raid0":
        return [
            (
                f"events.{i}.kind",
                f"{event.kind} needs a redundant array; array.raid is raid0, whose failed spindle "
                "loses the array",
            )
        ]
    if not isinstance(event, ArrayRebuild):
        return []
    if rebuild_share(array.raid, array.spindles, event.rebuild_rate, array.drive.media_rate) >= 1.0:
        return [
            (
                f"events.{i}.rebuild_rate",
                f"{event.rebuild_rate:.4g} B/s takes all of the surviving spindles' time (media "
                "rate "
                f"{array.drive.media_rate:.4g} B/s); make it lower",
            )
        ]
    whole = array.drive.capacity / event.rebuild_rate
    if event.duration is not None and event.duration > whole:
        return [
            (
                f"events.{i}.duration",
                f"{event.duration:g}s is longer than rewriting the whole "
                f"{array.drive.capacity / 1e9:g} GB drive at "
                f"{event.rebuild_rate / 1e6:g} MB/s takes ({whole:g}s); shorten it, or leave it "
                "out to rebuild the whole drive",
            )
        ]
    return []


def _crowded_hosts(scenario: Scenario) -> list[tuple[str, str]]:
    """A host running more VMs than a hypervisor allows (over all groups): the first such host,
    with its groups."""
    on_host = [0] * scenario.cluster.hosts
    for group in scenario.groups:
        for host in scenario.group_hosts(group):
            if host < len(on_host):
                on_host[host] += group.vms_per_host
    crowded = next((h for h, count in enumerate(on_host) if count > MAX_VMS_PER_HOST), None)
    if crowded is None:
        return []
    groups = [g for g in scenario.groups if crowded in scenario.group_hosts(g)]
    names = listing([repr(g.name) for g in groups], most=3)
    return [
        (
            "groups",
            f"host {crowded} runs {on_host[crowded]:,} VMs ({len(groups):,} groups: {names}), more "
            "than the "
            f"{MAX_VMS_PER_HOST:,} a hypervisor runs on one host (vSphere 8 and Hyper-V 2022 "
            "maximums); lower "
            f"vms_per_host, spread the groups over more hosts (groups.hosts) or add hosts",
        )
    ]


def _trace_problems(scenario: Scenario, group: Group, where: str) -> list[tuple[str, str]]:
    """The trace must be readable, name the devices the group replays, and have timestamps for an
    open replay."""
    spec = group.workload.trace
    assert spec is not None
    field = f"{where}.workload.trace"
    try:
        trace = spec.open()
    except ScenarioError as exc:
        return [
            (f"{field}.path", f"{exc.source}: {place + ': ' if place else ''}{message}")
            for place, message in exc.problems
        ]
    problems = []
    missing = [d for d in spec.devices or [] if d not in trace.devices]
    if missing:
        known = listing(list(trace.devices))
        problems.append(
            (
                f"{field}.devices",
                f"not in the trace: {listing(missing)}; the trace's devices are {known}",
            )
        )
    if spec.replay == "open" and not trace.meta.get("has_times", True):
        problems.append(
            (
                f"{field}.replay",
                "the trace has no timestamps (fio iolog v2: order only); replay it with replay = "
                '"closed"',
            )
        )
    if spec.start > 0 and spec.start >= trace.duration:
        problems.append(
            (
                f"{field}.start",
                f"{spec.start}s is at or after the trace's last I/O ({trace.duration:.6g}s)",
            )
        )
    return problems


def _largest_traced_write(scenario: Scenario, group: Group) -> int:
    return max(device.largest["write"] for device in scenario.trace_device_summaries(group))


def scenario_notes(scenario: Scenario) -> list[tuple[str, str]]:
    """What a valid scenario may not mean, each as a field path and a message (the
    :class:`ScenarioWarning` validation gives): peer ports that carry no replica, hosts that
    cannot speak the array port's transport."""
    return _ports_past_the_peers(scenario) + _storage_transports(scenario)


_RDMA = re.compile(r"roce|rdma|verbs", re.IGNORECASE)
"""Link profiles whose transport is RDMA (RoCE, NVMe over RDMA, InfiniBand verbs): the others
are TCP/IP (iSCSI, NVMe over TCP, IPoIB)."""


def _storage_transports(scenario: Scenario) -> list[tuple[str, str]]:
    """The hosts' storage link and the array's port named by built-in profiles of different
    transports, RDMA on one side and TCP/IP on the other (review 65e: 1GbE hosts to an
    all-flash array's nvmeof-rdma-100GbE port, without a word). A slower host link than the
    array's port is ordinary (many hosts share the port) and not said; a transport one end cannot
    speak is a choice of the file's that a real cluster cannot make. The model carries each
    transfer at the slower line rate with the host link's per-message latency, as it would over
    the host's own transport."""
    host, port = scenario.cluster.storage_link.profile, scenario.array.port.profile
    if host is None or port is None or bool(_RDMA.search(host)) == bool(_RDMA.search(port)):
        return []
    rdma, tcp = (port, host) if _RDMA.search(port) else (host, port)
    where = "the array's port" if rdma == port else "the hosts' storage link"
    return [
        (
            "cluster.storage_link",
            f"the hosts' storage link is {host} and the array's port {port}: {where} ({rdma}) "
            f"speaks RDMA, which the other end ({tcp}) does not, so no real cluster connects them "
            f"as written; the run carries each transfer at the slower line rate with {host}'s "
            "latency, as the hosts' own transport would. Give both ends one transport (e.g. "
            f'cluster.storage_link = {{ profile = "{port if rdma == port else tcp}" }}, or an '
            "array port of the hosts' transport)",
        )
    ]


def _ports_past_the_peers(scenario: Scenario) -> list[tuple[str, str]]:
    """More peer ports than peer hosts. All traffic between two hosts takes one port pair
    (:func:`simcache.physics.cluster.peer_port`: ``(d - 1) mod peer_links`` for the peer ``d``
    steps ahead around the ring), so with ``hosts - 1`` peers the ports from number ``hosts - 1``
    on carry no replica, remote read or resync: only vMotion streams (stream ``i`` on port ``i mod
    peer_links``), or nothing where no vMotion has that many streams. A single host's one port is
    the default, not a choice: no note for it."""
    cluster = scenario.cluster
    links, peers = cluster.peer_links, cluster.hosts - 1
    if links <= max(peers, 1):
        return []
    if peers == 0:
        return [
            (
                "cluster.peer_links",
                f"{links} peer ports on a single host, which has no peer to send to: they carry "
                "nothing; set peer_links = 1 or add hosts",
            )
        ]
    streams = max(
        (event.streams for event in scenario.events if isinstance(event, VMotion)), default=0
    )
    reached = max(peers, min(streams, links))  # ports 0 to reached - 1 carry something
    parts = [
        f"{links} peer ports per host but {peers} peer host{'s' if peers > 1 else ''}: all "
        "traffic between two hosts takes one port (to the peer d steps ahead around the ring, "
        "port (d - 1) mod peer_links), so replicas, remote reads and resyncs use only "
        + _ports(0, peers - 1)
    ]
    if reached > peers:
        parts.append(f"{_carry(peers, reached - 1)} only vMotion streams")
    if reached < links:
        why = (
            "no vMotion here"
            if streams == 0
            else f"the vMotions' {streams} stream{'s' if streams > 1 else ''} do not reach them"
        )
        parts.append(f"{_carry(reached, links - 1)} nothing ({why})")
    parts.append(f"set peer_links = {peers}, or keep the extra ports for multi-NIC vMotion")
    return [("cluster.peer_links", "; ".join(parts))]


def _ports(first: int, last: int) -> str:
    """``port 2`` or ``ports 2 to 5``: a host's peer ports by number, as the series name them
    (``host0.peer2.tx``)."""
    return f"port {first}" if first == last else f"ports {first} to {last}"


def _carry(first: int, last: int) -> str:
    return f"{_ports(first, last)} {'carries' if first == last else 'carry'}"


STABILITY_SAMPLES = 8
"""The samples after the warm-up that a run's stability test needs
(:data:`simcache.results.trend.MIN_SAMPLES` is this), as a run too short to sample is told."""


def sample_interval_for_test(window: float) -> float:
    """The longest sample interval (s) that gives a stability test its :data:`STABILITY_SAMPLES`
    samples in a measured window of ``window`` seconds, rounded down to three digits so that the
    interval advised does give them (0 for an empty window; where the third digit's step is below
    the smallest double, a window of a few hundred zeros after the point, the largest double that
    gives them)."""
    most = window / STABILITY_SAMPLES
    if not most > 0:
        return 0.0
    if math.isinf(most):
        return most
    step = 10.0 ** (math.floor(math.log10(most)) - 2)
    if step == 0.0:
        while most > 0 and most * STABILITY_SAMPLES > window:
            most = math.nextafter(most, 0.0)
        return most
    return math.floor(most / step) * step


def run_problems(scenario: Scenario) -> list[tuple[str, str]]:
    """The cross-field rules that involve ``[run]`` (all a changed duration or seed can break)."""
    run = scenario.run
    if run.sample_interval > run.duration:
        return [
            (
                "run.sample_interval",
                _samples_past_the_run(run.duration, run.warmup, run.sample_interval),
            )
        ]
    return []


def _samples_past_the_run(duration: float, warmup: float, interval: float) -> str:
    """Why a sample interval longer than the run (seconds each) cannot be, and the two fixes with
    their values: a longer run (for a stability test, :data:`STABILITY_SAMPLES` intervals past the
    warm-up) or a shorter interval (for the test, the window over :data:`STABILITY_SAMPLES`,
    rounded down to three digits so that it does give them)."""
    most = sample_interval_for_test(duration - warmup)
    return (
        f"{interval:g} s is longer than the run (run.duration {duration:g} s), which would take no "
        f"sample: give a duration of at least {interval:g} s (a stability test needs "
        f"{STABILITY_SAMPLES} samples after the warm-up: {STABILITY_SAMPLES} x {interval:g} s = "
        f"{STABILITY_SAMPLES * interval:g} s past the {warmup:g} s warm-up), or set "
        f"run.sample_interval to at most {duration:g} s ({most:.3g} s "
        f"for {STABILITY_SAMPLES} samples after the warm-up)"
    )
