"""A VM's state outside its plain I/O path, one object per concern: short of peers
(:class:`PeerLoss`), moved by a vMotion (:class:`Migration`), restarted by HA (:class:`HaRestart`).

:class:`simcache.sim.components.vm.VM` holds one of each and is the only writer of their fields
except where a contract says otherwise; the scheduled events (:mod:`simcache.sim.outages`,
:mod:`simcache.sim.host_events`), the workload drivers and the run's record read them. The few facts
the I/O path tests on every I/O are kept on the VM as plain fields beside them (``short_of_peers``,
``moved``, ``read_detour``, ``life``: one attribute read each, as before these objects existed), set
by the VM methods that change the objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simcache.sim.kernel.clock import Clock
from simcache.sim.kernel.signals import Signal
from simcache.sim.kernel.waits import succeed

if TYPE_CHECKING:
    from simcache.sim.components.adopted import PendingDestage
    from simcache.sim.components.host import Host

__all__ = ["HaRestart", "Migration", "PeerLoss"]


class PeerLoss:
    """A write-back VM's promised replica peers and its time short of them (``peer_loss``,
    ``link_down``, ``host_failure``: :mod:`simcache.sim.outages`).

    - ``chosen``: the peers it replicates to when it reaches them all (the ``promised`` next live
      hosts, fewer when no live host is left to take a failed one's place); ``promised``: the
      group's replicas.
    - ``missing``: how many of the promised peers its host does not reach now (0 while its host's
      tier is gone: it writes through then). Set by :meth:`update` only, which counts the time:
      ``degraded_s`` up to ``since`` (None while it is not short), :meth:`seconds` up to any time.
    - While ``missing`` > 0 its write-back writes follow ``policy`` (the group's ``on_peer_loss``).
      The byte counters only grow: ``written`` (writes issued short of peers), ``written_through``
      (of those, completed write-through under ``write_through``), ``resync_bytes`` (its buffered
      writes copied to returning peers, counted by :func:`simcache.sim.outages._copies_due`),
      ``fell_through`` (every write of a write-back VM completed write-through: short of peers, or
      its host's tier failed).
    - Two waits, each a kernel :class:`Signal` processed once: :meth:`back` (the ``stall`` writes',
      processed when no peer is missing) and :meth:`settled` (processed when the last ``degrade``
      write issued short of peers, of ``in_flight``, has entered the destage buffer: a resync starts
      from the buffer as it is then).
    """

    __slots__ = (
        "_back",
        "_settled",
        "chosen",
        "degraded_s",
        "fell_through",
        "in_flight",
        "missing",
        "policy",
        "promised",
        "resync_bytes",
        "since",
        "written",
        "written_through",
    )

    def __init__(self, chosen: tuple[Host, ...], promised: int, policy: str) -> None:
        self.chosen = chosen
        self.promised = promised
        self.policy = policy
        self.missing = 0
        self.degraded_s = 0.0
        self.since: float | None = None
        self.written = 0
        self.written_through = 0
        self.fell_through = 0
        self.resync_bytes = 0
        self.in_flight = 0
        self._back: Signal | None = None
        self._settled: Signal | None = None

    def update(self, clock: Clock, missing: int) -> None:
        """``missing`` of the promised peers are out of reach from now: count the time short of
        them; if none is, wake the writes that stalled."""
        now = clock.now
        if missing and self.since is None:
            self.since = now
        elif not missing and self.since is not None:
            self.degraded_s += now - self.since
            self.since = None
        self.missing = missing
        if not missing and self._back is not None:
            succeed(clock, self._back)
            self._back = None

    def seconds(self, now: float) -> float:
        """Seconds spent short of peers up to ``now``."""
        return self.degraded_s + (now - self.since if self.since is not None else 0.0)

    def ever_short(self) -> bool:
        """Was it ever short of peers (so far)?"""
        return self.since is not None or self.degraded_s > 0

    def back(self) -> Signal:
        """``stall``: the :class:`Signal` processed when no promised peer is missing (one for all
        stalled writes)."""
        if self._back is None:
            self._back = Signal(None)
        return self._back

    def degrading(self) -> None:
        """``degrade``: a write issued short of peers starts on its way to the destage buffer."""
        self.in_flight += 1

    def degraded(self, clock: Clock) -> None:
        """``degrade``: a write issued short of peers is in the destage buffer (or failed on the
        way)."""
        self.in_flight -= 1
        if not self.in_flight and self._settled is not None:
            succeed(clock, self._settled)
            self._settled = None

    def settled(self) -> Signal | None:
        """``None`` if no write issued short of peers is still on its way to the destage buffer,
        else the :class:`Signal` processed when the last one gets there."""
        if not self.in_flight:
            return None
        if self._settled is None:
            self._settled = Signal(None)
        return self._settled


class Migration:
    """Where a VM moved by vMotion has been (:meth:`simcache.sim.components.vm.VM.migrate`).

    - ``remote``: the host it left last, whose cache may still serve its read misses (remote hits)
      while that host is alive and reachable; None before any move and after an HA restart (a cold
      restart reaches for no cache).
    - ``left``: every host it left, but not the one it runs on: its writes drop their lines' stale
      copies there.
    - ``record``: the record of its last move (an entry of the run's ``vmotions``), in which
      :meth:`remote_hit` counts ``remote_hits``, ``remote_hit_bytes`` and ``last_remote_hit_s``;
      None before any move.
    """

    __slots__ = ("left", "record", "remote")

    def __init__(self) -> None:
        self.remote: Host | None = None
        self.left: tuple[Host, ...] = ()
        self.record: dict[str, Any] | None = None

    def moved(self, source: Host, target: Host, record: dict[str, Any]) -> None:
        """The VM runs on ``target`` from now on, having left ``source``; its move's record is
        ``record``."""
        self.remote = source
        self.left = (*(h for h in self.left if h is not target and h is not source), source)
        self.record = record

    def restarted(self, host: Host) -> None:
        """HA restarted the VM on ``host``: no old cache serves it any more; ``host`` is no host
        it left."""
        self.remote = None
        self.left = tuple(h for h in self.left if h is not host)

    def remote_hit(self, size: int, issued: float) -> None:
        """Count a read of ``size`` bytes issued at ``issued`` that the old host's cache served."""
        record = self.record
        if record is not None:
            record["remote_hits"] += 1
            record["remote_hit_bytes"] += size
            record["last_remote_hit_s"] = issued


class HaRestart:
    """A VM's HA restarts after host failures (``host_failure`` with ``restart_delay``:
    :mod:`simcache.sim.host_events`), and the array's staleness its reads wait out.

    - ``awaiting``: its host died and HA restarts it later; its open-loop arrivals meanwhile are
      dropped and counted in ``dropped_arrivals`` (by the workload drivers,
      :mod:`simcache.sim.drivers`). Set by the host failure.
    - ``count``: HA restarts so far. A closed-loop slot started before a restart ends at it (the
      restart starts new ones): the slots compare the VM's ``life``, which :meth:`VM.restart` keeps
      equal to ``count``.
    - ``pending_destage``: once set (at a restart, or when its host's tier failed), the writes
      surviving holders took over whose destage its read misses wait for
      (:class:`simcache.sim.components.adopted.PendingDestage`).
    """

    __slots__ = ("awaiting", "count", "dropped_arrivals", "pending_destage")

    def __init__(self) -> None:
        self.awaiting = False
        self.count = 0
        self.dropped_arrivals = 0
        self.pending_destage: PendingDestage | None = None
