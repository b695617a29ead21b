"""Transfers an overloaded network port piles up over a run, before it runs: part of the work
check (:func:`simcache.sim.control.check_work`).

The network re-rates every transfer on a port when one joins or leaves (exact processor sharing,
:meth:`simcache.sim.components.link.FlowNetwork._rerate` and its native port), so a port offered
more than it carries costs the run the square of its pile: an open loop of writes far past a
port's capacity once took minutes for 10 ms of simulated time (bench/README.md, "Transfers piled
up on an overloaded port"). So does an outage's end: the writes that waited through it (stalled
short of peers, write-through writes behind a storage port) all start in one event, each joining
those already on the port (bench/README.md, "Writes resuming together"). :func:`network_pileup`
counts both costs from the scenario alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from simcache.physics.cluster import framed_bytes
from simcache.spec import LinkDown, PeerLoss, Scenario

__all__ = ["RERATES_PER_IO", "PileUp", "network_pileup"]

RERATES_PER_IO = 25
"""Re-ratings of piled-up transfers (:class:`PileUp`) a run may be expected to take per I/O of
:attr:`simcache.sim.control.Limits.max_ios` (5e8 at the default): a WB+1 stream piling up on a
1GbE port took 28-34 ns per re-rating counted here natively and 440-540 ns in the compiled Python
engine (bench/README.md, "Transfers piled up on an overloaded port"), so the limit is about 15 s
natively and 4 to 5 minutes in the Python engine, as the I/O limit's 4 to 8."""


@dataclass(frozen=True)
class PileUp:
    """Transfers an overloaded network port piles up over a run (:func:`network_pileup`)."""

    rerates: float
    """Re-ratings of the transfers in flight over the run, all overloaded ports together: each
    transfer that joins a port re-rates every transfer on it (exact processor sharing,
    ``FlowNetwork._rerate``), so a pile-up of n transfers costs about n^2 / 2 of them."""
    port: str
    """The port with the most, e.g. ``"host0's peer port 0"``."""
    field: str
    """The field of the group offering most of that port's bytes, e.g.
    ``"groups.writes.workload.iops"``."""
    offered: float
    """Bytes per second offered to that port (mean over the duty cycle)."""
    capacity: float
    """Bytes per second it carries."""
    piled: float
    """Transfers in flight on it at the run's end."""
    link: str
    """The field of that port's link: ``"cluster.peer_link"`` or ``"cluster.storage_link"``."""
    outage: str = ""
    """The outage whose end starts the pile at once (transfers of writes that waited for the
    port, ``piled`` of them), e.g. ``"events[0] (link_down of host0's peer ports, 0-0.3 s)"``;
    empty for a port offered more than it carries."""
    outage_field: str = ""
    """That outage's field in the scenario, e.g. ``"events[0]"`` (empty likewise)."""

    def describe(self) -> str:
        if self.outage:
            return (
                f"about {self.piled:,.0f} transfers of writes wait for {self.port} through "
                f"{self.outage} and all start when it ends, each re-rating those already on the "
                f"port: about {self.rerates:,.3g} re-ratings"
            )
        return (
            f"{self.port} is offered {_rate(self.offered)} against the {_rate(self.capacity)} it "
            f"carries, so about {self.piled:,.0f} transfers pile up on it and each new one "
            f"re-rates those in flight: about {self.rerates:,.3g} re-ratings"
        )


@dataclass
class _Offered:
    """What the open loops offer one port: transfers and bytes a second, the bytes by the field
    that sets each group's rate; the port's link field and bandwidth."""

    link: str
    capacity: float
    flows: float = 0.0
    bytes: float = 0.0
    by_field: dict[str, float] = field(default_factory=dict)

    def add(self, flows: float, size: float, rate_field: str) -> None:
        self.flows += flows
        self.bytes += flows * size
        self.by_field[rate_field] = self.by_field.get(rate_field, 0.0) + flows * size


@dataclass(frozen=True)
class _Waiting:
    """Transfers a second a group's VMs on one host send on one port that wait while it is out
    of reach (writes stalled short of peers, write-through writes behind a storage port)."""

    host: int
    port: str
    flows: float
    storage: bool  # waiting for the host's storage port (else for its peers)
    replicas: int  # the peers its writes go to (WB+1, WB+2), 0 for the storage port
    rate_field: str
    link: str


def network_pileup(scenario: Scenario) -> PileUp | None:
    """The transfers the open loops' writes pile up on ports offered more bytes than they carry,
    at least, and those an outage holds back that start together at its end (None: neither).

    Counted, per host, from what each open-loop group (no trace, its writes not serialized) sends
    for certain until the first scheduled event: the synchronous replicas of its writes under
    WB+1 / WB+2 on the host's peer ports (a write to the peer ``d`` steps ahead on the ring on
    port ``(d - 1) mod peer_links``; spread evenly with random peers; shrunk by compression when
    it is on; all hosts together on a shared peer fabric), and its writes to the array under WT on
    the host's storage port, framed as sent; the rate is the mean over the duty cycle. Read
    misses, destaging, acknowledgements, windows and bursts only add to it. A port offered ``rho``
    times the bytes it carries, in ``lam`` transfers a second, piles them up at ``a = lam x /
    rho`` a second, ``x`` from :func:`_ps_pileup` (the fluid limit of processor sharing from an
    empty port), and each transfer that joins re-rates those already there, so over ``T`` seconds
    about ``lam a T^2 / 2`` re-ratings; a port at or under its capacity counts none."""
    cluster = scenario.cluster
    links = cluster.peer_links
    ports: dict[str, _Offered] = {}
    waiting: list[_Waiting] = []  # what an outage holds back, for _outage_bursts

    def port(name: str, link: str, capacity: float) -> _Offered:
        if name not in ports:
            ports[name] = _Offered(link, capacity)
        return ports[name]

    for group in scenario.groups:
        workload = group.workload
        if (
            workload.mode != "open"
            or workload.trace is not None
            or workload.read_fraction == 1.0
            or workload.sync_serialize  # one write of a VM at a time
            or (group.policy != "WT" and group.replication == "async")  # a bounded send buffer
        ):
            continue
        duty = workload.duty_cycle
        on = 1.0 if duty is None else duty.on_fraction
        writes = group.vms_per_host * workload.mean_rate * on * (1.0 - workload.read_fraction)
        sizes, probabilities = workload.op_size_mix(True)
        rate_field = (
            f"groups.{group.name}.workload.{'iops' if workload.iops is not None else 'throughput'}"
        )
        if group.policy == "WT":
            link, link_field, kept, replicas = cluster.storage_link, "cluster.storage_link", 1.0, 1
        else:
            link, link_field, replicas = (
                cluster.peer_link,
                "cluster.peer_link",
                int(group.policy[-1]),
            )
            kept = 1.0 if cluster.compression.mode == "off" else 1.0 - workload.compressibility
        if not replicas:
            continue  # WB+0: its writes stay on the host until the destager, which is bounded
        # a transfer's mean bytes on the wire (payload, packet headers, framing)
        wire = sum(
            p * framed_bytes(link, s * kept)[0] for s, p in zip(sizes, probabilities, strict=True)
        )
        stalls = group.policy != "WT" and group.on_peer_loss == "stall"
        for host in scenario.group_hosts(group):
            if group.policy == "WT":
                name = f"host{host}'s storage port"
                port(name, link_field, link.bandwidth).add(writes, wire, rate_field)
                waiting.append(_Waiting(host, name, writes, True, 0, rate_field, link_field))
                continue
            for index in range(links):
                share: float = replicas / links  # random peers: spread over the ports
                if cluster.peer_selection == "ring":
                    share = sum(1 for d in range(1, replicas + 1) if (d - 1) % links == index)
                if share:
                    name = f"host{host}'s peer port" + (f" {index}" if links > 1 else "")
                    port(name, link_field, link.bandwidth).add(writes * share, wire, rate_field)
                    if stalls:
                        waiting.append(
                            _Waiting(
                                host, name, writes * share, False, replicas, rate_field, link_field
                            )
                        )
            if cluster.peer_fabric == "shared":
                fabric = port("the shared peer fabric", link_field, link.bandwidth)
                fabric.add(writes * replicas, wire, rate_field)
                if stalls:
                    waiting.append(
                        _Waiting(
                            host,
                            "the shared peer fabric",
                            writes * replicas,
                            False,
                            replicas,
                            rate_field,
                            link_field,
                        )
                    )
    # until the first scheduled event (a failure or an outage may change the paths)
    duration = min([scenario.run.duration, *(event.at for event in scenario.events)])
    worst: PileUp | None = None
    total = 0.0
    for name, offered in ports.items():
        if offered.bytes <= offered.capacity or offered.flows <= 0:
            continue
        rho = offered.bytes / offered.capacity
        growth = offered.flows * _ps_pileup(rho) / rho
        rerates = offered.flows * growth * duration * duration / 2.0
        total += rerates
        if worst is None or rerates > worst.rerates:
            worst = PileUp(
                rerates=rerates,
                port=name,
                field=max(offered.by_field, key=offered.by_field.__getitem__),
                offered=offered.bytes,
                capacity=offered.capacity,
                piled=growth * duration,
                link=offered.link,
            )
    for burst in _outage_bursts(scenario, waiting):
        total += burst.rerates
        if worst is None or burst.rerates > worst.rerates:
            worst = burst
    return None if worst is None else replace(worst, rerates=total)


def _outage_bursts(scenario: Scenario, waiting: list[_Waiting]) -> list[PileUp]:
    """The writes each outage that ends within the run holds back on each port, resuming
    together at its end (one :class:`PileUp` an outage, its port the one with the most).

    A peer outage of host ``h`` (``peer_loss``, ``link_down`` of its peer link) stalls the
    writes of the ``stall`` groups' VMs on ``h`` and of those whose peers include ``h``: on a
    ring the hosts ``h`` is 1 to ``replicas`` steps ahead of, with random peers each other host's
    VMs in the share ``replicas / (hosts - 1)`` of them that chose ``h`` (all of them when
    ``replicas = hosts - 1``); a storage ``link_down`` holds back the write-through writes of
    ``h``'s VMs. At the outage's end they all start within one event, each transfer joining those
    already on its port: ``n`` of them on a port cost ``n^2 / 2`` re-ratings at least (their
    drain more; outages that overlap, each counted on its own, start their writes together at
    the last one's end: more again)."""
    cluster = scenario.cluster
    run = scenario.run
    bursts = []
    for number, event in enumerate(scenario.events):
        storage = isinstance(event, LinkDown) and event.link == "storage"
        if not isinstance(event, PeerLoss | LinkDown) or event.at + event.duration >= run.duration:
            continue  # (an outage to the run's end holds its writes to the end)
        held: dict[str, float] = {}
        fields: dict[str, _Waiting] = {}
        for wait in waiting:
            if wait.storage != storage:
                continue
            share = 1.0  # of the host's VMs whose writes wait
            if wait.host != event.host:
                ahead = (event.host - wait.host) % cluster.hosts
                if storage:
                    continue
                if cluster.peer_selection == "ring":
                    if not 1 <= ahead <= wait.replicas:
                        continue
                else:  # random peers: those that chose h
                    share = min(1.0, wait.replicas / (cluster.hosts - 1))
            held[wait.port] = held.get(wait.port, 0.0) + wait.flows * share * event.duration
            if wait.port not in fields or wait.flows > fields[wait.port].flows:
                fields[wait.port] = wait
        if not held:
            continue
        most = max(held, key=held.__getitem__)
        bursts.append(
            PileUp(
                rerates=sum(n * n / 2.0 for n in held.values()),
                port=most,
                field=fields[most].rate_field,
                offered=0.0,
                capacity=0.0,
                piled=held[most],
                link=fields[most].link,
                outage_field=f"events[{number}]",
                outage=(
                    f"events[{number}] ({event.kind} of host{event.host}'s "
                    f"{'storage link' if storage else 'peer ports'}, {event.at:g}-"
                    f"{event.at + event.duration:g} s)"
                ),
            )
        )
    return bursts


def _ps_pileup(rho: float) -> float:
    """The growth of a processor-sharing queue offered ``rho`` > 1 times its capacity from empty,
    in its service rate ``mu`` (transfers a second): ``x`` with ``x = rho (1 - exp(-x))``.

    Fluid limit: the queue grows linearly, ``n(t) = a t``; a transfer that arrived at ``s`` has
    received ``(mu / a) ln(t / s)`` of its service (its share ``1 / n``) by ``t`` and leaves at
    ``s exp(a / mu)``, so ``n(t) = lam t (1 - exp(-a / mu))``; with ``x = a / mu`` and ``lam =
    rho mu`` that is the equation above (``x = rho + W0(-rho exp(-rho))``, Lambert's W). Its
    positive root lies above first-come first-served's ``rho - 1`` (sharing finishes fewer
    transfers while more wait) and below ``rho``. Newton's method from ``rho``: the function
    ``x - rho (1 - exp(-x))`` is convex and positive there, so it descends to the root."""
    x = rho
    for _ in range(100):
        step = (x - rho * (1.0 - math.exp(-x))) / (1.0 - rho * math.exp(-x))
        x -= step
        if abs(step) <= 1e-12 * x:
            break
    return x


def _rate(value: float) -> str:
    for unit, scale in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6)):
        if value >= scale:
            return f"{value / scale:,.3g} {unit}"
    return f"{value / 1e3:,.3g} kB/s"
