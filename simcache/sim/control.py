"""Bounds and stopping of a run: the work a scenario will take, the limit past which it is refused,
and the cancel token.

- :func:`expected_work` estimates, before a run, how many I/Os it will issue,
  how many samples it will take, how many SimPy events it will process and how
  much memory it will hold (:class:`Work`).
- :class:`Limits` is the most work one run may take (:data:`DEFAULT_LIMITS`,
  sized for a 2-core, 24 GiB machine; the ``SIMCACHE_MAX_IOS`` and
  ``SIMCACHE_MAX_MEMORY`` environment variables or ``simulate(limits=...)``
  change it); :func:`check_work` raises :class:`~simcache.base.errors.RunTooLargeError`
  past it, with the figures and the option that allows the run.
- :class:`Cancel` is a thread-safe stop flag with an optional wall-clock
  deadline. ``simulate(cancel=token)`` polls it every :data:`POLL_EVENTS`
  events and, once set, ends the run at the current simulated time and returns
  the partial result (``result.meta["stopped_at_s"]``, see :func:`stopped_at`).
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from simcache.base.errors import RunTooLargeError, ScenarioError
from simcache.base.units import UnitError, parse_size
from simcache.physics.cluster import read_cache_lines
from simcache.sim.collect import BUFFER_ROWS, RECORD_BYTES
from simcache.sim.components.cache import holds_whole
from simcache.sim.pileup import RERATES_PER_IO, PileUp, network_pileup
from simcache.spec import Group, Scenario
from simcache.workloads.generators import BLOCK

__all__ = [
    "BYTES_PER_IO",
    "BYTES_PER_SAMPLE_VALUE",
    "CACHE_LINE_BYTES",
    "DEFAULT_LIMITS",
    "EVENTS_PER_IO",
    "LIMIT_OPTIONS",
    "MAX_IOS_ENV",
    "MAX_MEMORY_ENV",
    "NO_LIMITS",
    "POLL_EVENTS",
    "SLOT_BYTES",
    "Cancel",
    "Limits",
    "Stopped",
    "Work",
    "cancel_on_signals",
    "check_work",
    "exit_status",
    "expected_work",
    "stopped_at",
]

BYTES_PER_IO = 170
"""Peak resident memory per simulated I/O, bytes, of a run with records and its summary (the
records table, the model's state that grows with the I/Os until the caches or working sets are
full, the summary's temporaries), for the bound on a run's memory: an upper figure of what
``bench/bench_memory.py`` measures (bench/README.md, "Memory per I/O")."""
STREAM_BYTES_PER_VM = 2 * (8 * 1613 + 8 * 30)
"""Memory per VM of a run without records (:class:`simcache.sim.stream.StreamStats`): per op a
histogram of 1,613 int64 counts, and about 30 counters and batch sums. (The model's own state is
not counted: its cache-line maps grow with the blocks the VMs touch until the caches or working
sets are full; bench/README.md, "Memory per I/O".)"""

CACHE_LINE_BYTES = 64
"""Peak memory per line a host's read cache holds, bytes: the cache's index and recency log (at
most 35 bytes a line, ``tests/sim/test_read_cache_lru.py``) and, in a native run, the engine's
copy of them: 45 bytes a line in all, measured (bench/README.md, "Warm caches held whole"). A
warm cache holding its VMs' disks whole holds no line entries
(:meth:`simcache.sim.components.cache.ReadCache.hold_whole`)."""

SLOT_BYTES = 1200
"""Peak memory per closed-loop slot (``workers`` x ``outstanding`` a VM), bytes: the slot, its
first I/O in flight and that I/O's record, all at the start of the run; measured 652 bytes a slot
natively and 1,104 in the Python engine at a million slots (bench/README.md, "Warm caches held
whole")."""

BYTES_PER_SAMPLE_VALUE = 120
"""Memory per value of the sampled series (one column at one sample time): a float in a dict,
then in the table."""
EVENTS_PER_IO = 4.4
"""SimPy events per I/O of the default scenario, as ``bench/bench_engine.py`` counts them
(bench/README.md, "The native engine: baseline"); for the event estimate only."""
ESTIMATED_CHAINS_MAX = 24
"""Most closed-loop chains (a group's VMs on one host) for which the analytic estimate sizes a
closed loop's I/Os before a run; beyond it the estimate's fixed point can take seconds (51
groups: 14 s, found by bench/fuzz.py), so the bound below is used instead."""
CLOSED_LATENCY_FLOOR_S = 20e-6
"""Shortest I/O assumed for a closed loop when the analytic estimate cannot say (a RAM tier's
write)."""

MAX_IOS_ENV = "SIMCACHE_MAX_IOS"
"""Environment variable: the most I/Os one run may be expected to issue (a number, or ``none``)."""
MAX_MEMORY_ENV = "SIMCACHE_MAX_MEMORY"
"""Environment variable: the most memory one run may be expected to hold (a size such as
``16GiB``, or ``none``)."""
LIMIT_OPTIONS = (
    f"--max-ios N / --max-memory SIZE / --no-limit (run, check, report), {MAX_IOS_ENV}=N / "
    f"{MAX_MEMORY_ENV}=SIZE (every command, sweep and size included; none for no limit) or "
    "simulate(limits=Limits(...))"
)
"""What a refusal names as the way to allow a larger run."""

POLL_EVENTS = 128
"""Events processed between two polls of the cancel token: an overloaded run can spend
milliseconds on one event (hundreds of flows in flight on a port), and a poll every 1,024 let a 1
s deadline run 2 s (bench/fuzz.py, a 52-group compile workload); the poll is a countdown, so 128
costs nothing measurable (see ``run_until``)."""


@dataclass(frozen=True)
class Limits:
    """The most work one run may take; ``math.inf`` for no limit. Build from the environment with
    :meth:`from_env`."""

    max_ios: float = 20_000_000
    """I/Os issued: about 4 to 8 minutes of wall time on a 2-core VM (45,000 to 80,000 I/Os per
    second)."""
    max_memory_bytes: float = 8 * 2**30
    """Memory held by the run (a third of a 24 GiB machine, so two runs and the rest of the
    system fit)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """:data:`DEFAULT_LIMITS` with ``SIMCACHE_MAX_IOS`` / ``SIMCACHE_MAX_MEMORY`` applied
        (``none``: no limit)."""
        env = os.environ if environ is None else environ
        limits = DEFAULT_LIMITS
        ios = env.get(MAX_IOS_ENV, "").strip()
        memory = env.get(MAX_MEMORY_ENV, "").strip()
        if ios:
            limits = Limits(_limit_value(MAX_IOS_ENV, ios, _count), limits.max_memory_bytes)
        if memory:
            limits = Limits(limits.max_ios, _limit_value(MAX_MEMORY_ENV, memory, parse_size))
        return limits


DEFAULT_LIMITS = Limits()
NO_LIMITS = Limits(math.inf, math.inf)


def _count(text: str) -> float:
    return float(text.replace("_", "").replace(",", ""))


def _limit_value(name: str, text: str, parse: Any) -> float:
    if text.lower() in ("none", "inf", "off"):
        return math.inf
    try:
        value = float(parse(text))
    except (ValueError, UnitError):
        value = math.nan
    if not value > 0:
        raise ScenarioError(
            f"environment variable {name}",
            [(name, f"must be a positive number or 'none' (got {text!r})")],
        )
    return value


@dataclass(frozen=True)
class Work:
    """What one run is expected to take, estimated before it starts (:func:`expected_work`)."""

    ios: float
    """I/Os issued over the run."""
    samples: int
    """Sample times of the series."""
    series_columns: int
    """Columns of the series (utilizations, queues and backlogs of every component)."""
    memory_bytes: float
    """Memory held at the end: records, series, the records waiting for the next sample, and the
    read caches' lines."""
    ios_by_group: dict[str, float] = field(default_factory=dict)
    slots: int = 0
    """Closed-loop slots (``workers`` x ``outstanding`` per VM): :data:`SLOT_BYTES` each."""
    cache_lines: float = 0.0
    """Lines the hosts' read caches may come to hold (a warm start's from the first instant),
    at most: :data:`CACHE_LINE_BYTES` of memory each."""
    pileup: PileUp | None = None
    """The transfers expected to pile up on a port offered more than it carries, or to start
    together at an outage's end (:func:`network_pileup`); None where none does."""

    @property
    def rerates(self) -> float:
        """Re-ratings of transfers in flight the piled-up ports will take (0: none)."""
        return 0.0 if self.pileup is None else self.pileup.rerates

    @property
    def events(self) -> float:
        """SimPy events processed (:data:`EVENTS_PER_IO` per I/O)."""
        return self.ios * EVENTS_PER_IO

    def describe(self) -> str:
        """One line: I/Os, samples and memory, e.g. ``"about 46,440 I/Os, 40 samples x 43
        columns, 27 MiB"``."""
        lines = f", up to {self.cache_lines:,.0f} cached lines" if self.cache_lines else ""
        return (
            f"about {self.ios:,.0f} I/Os, {self.samples:,} samples x {self.series_columns} "
            f"columns{lines}, {_size(self.memory_bytes)} of memory"
        )


def _size(value: float) -> str:
    if not math.isfinite(value):
        return "unlimited"
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if value >= scale:
            return f"{value / scale:,.1f} {unit}"
    return f"{value / 2**10:,.0f} KiB"


def expected_work(scenario: Scenario, *, keep_records: bool = True, estimate: bool = True) -> Work:
    """Estimate the work of running ``scenario`` as it stands (its ``run.duration``), in
    milliseconds.

    Open loops issue their rate times the duration (times the on fraction of an on/off duty cycle);
    a closed loop issues at most ``outstanding`` per think time plus the tier's latency (at least
    :data:`CLOSED_LATENCY_FLOOR_S`: Little's law with no response faster than the tier), or what
    the analytic estimate (:func:`simcache.estimate`) gives it if less (``estimate``, up to
    :data:`ESTIMATED_CHAINS_MAX` closed chains; without it the work is that bound); trace replays
    issue at most
    the device's reads and writes times ``repeat``. Memory is :data:`BYTES_PER_IO` per I/O
    (``keep_records=False``: :data:`STREAM_BYTES_PER_VM` per VM instead), the records of one sample
    interval as they wait (:data:`simcache.sim.collect.RECORD_BYTES` each, at most
    :data:`simcache.sim.collect.BUFFER_ROWS`), the series, :data:`SLOT_BYTES` per closed-loop slot
    and :data:`CACHE_LINE_BYTES` per line the read caches may hold (:func:`_cache_lines`). Each
    closed-loop slot issues its first I/O at the start, so a closed loop issues at least its slots.
    """
    run = scenario.run
    closed_chains = sum(
        len(scenario.group_hosts(g)) for g in scenario.groups if g.workload.mode == "closed"
    )
    closed_rates = (
        _closed_rates(scenario) if estimate and 0 < closed_chains <= ESTIMATED_CHAINS_MAX else {}
    )
    by_group: dict[str, float] = {}
    slots = 0
    for group in scenario.groups:
        vms = scenario.group_vm_count(group)
        by_group[group.name] = vms * _ios_per_vm(scenario, group, closed_rates.get(group.name))
        workload = group.workload
        if workload.mode == "closed" and workload.trace is None:
            group_slots = vms * workload.workers * workload.outstanding
            slots += group_slots
            by_group[group.name] = max(by_group[group.name], group_slots)
    ios = sum(by_group.values())
    samples = max(1, math.ceil(run.duration / run.sample_interval))
    # ports, tier utilization and queue, backlog per host; cluster figures
    columns = 12 + 10 * scenario.cluster.hosts
    # records held packed until the next sample (or until BUFFER_ROWS of them)
    waiting = min(ios / samples, BUFFER_ROWS)
    held = (
        ios * BYTES_PER_IO
        if keep_records
        else sum(scenario.group_vm_count(g) for g in scenario.groups) * STREAM_BYTES_PER_VM
    )
    lines = _cache_lines(scenario, ios)
    memory = (
        held
        + waiting * RECORD_BYTES
        + samples * columns * BYTES_PER_SAMPLE_VALUE
        + lines * CACHE_LINE_BYTES
        + slots * SLOT_BYTES
    )
    return Work(
        ios=ios,
        samples=samples,
        series_columns=columns,
        memory_bytes=memory,
        ios_by_group=by_group,
        slots=slots,
        cache_lines=lines,
        pileup=network_pileup(scenario),
    )


def _cache_lines(scenario: Scenario, ios: float) -> float:
    """The most lines the hosts' read caches hold at once: per host, its capacity in lines or its
    VMs' disks in lines if fewer (any host's capacity where a VM can move: a moved VM's lines can
    be on two hosts). A cold cache gains lines only from the run's I/Os (at most each I/O's lines;
    a trace's I/O sizes are not counted, so its disks bound it). A warm cache starts filled, unless
    it holds each of its VMs' disks whole (``sim.engine._warm_caches``): then no line entry at all.
    The memory of ``MAX_CACHED_LINES`` lines a host is the bound ``spec/consistency.py`` keeps."""
    cluster = scenario.cluster
    line = cluster.cache.line
    capacity = read_cache_lines(cluster)
    moves = scenario.moves_vms
    reach = _host_reach_lines(scenario, line)
    total = 0.0
    for lines in reach:
        if not lines:
            continue
        if cluster.cache.warm and not moves and holds_whole(lines, capacity):
            continue  # no line entries
        total += capacity if moves else min(capacity, sum(lines))
    if not cluster.cache.warm and all(g.workload.trace is None for g in scenario.groups):
        largest = max(max(g.workload.size_mix[0]) for g in scenario.groups)
        total = min(total, ios * (largest // line + 2))
    return total


def _host_reach_lines(scenario: Scenario, line: int) -> list[list[int]]:
    """Per host, the lines of each of its VMs' disks (their working sets, or the spans of the trace
    devices they replay) as the engine places them, with what a generated workload's largest I/O
    runs past the working set's end (``sim.engine._vm_reach_bytes``)."""
    hosts: list[list[int]] = [[] for _ in range(scenario.cluster.hosts)]
    for group in scenario.groups:
        workload = group.workload
        group_hosts = scenario.group_hosts(group)
        if workload.trace is None:
            disk = workload.working_set + max(0, max(workload.size_mix[0]) - BLOCK)
            for host in group_hosts:
                hosts[host] += [-(-disk // line)] * group.vms_per_host
        else:
            devices = scenario.trace_device_summaries(group)
            for position, host in enumerate(group_hosts):
                first = position * group.vms_per_host
                hosts[host] += [
                    -(-device.span // line)
                    for device in devices[first : first + group.vms_per_host]
                ]
    return hosts


def _ios_per_vm(scenario: Scenario, group: Group, closed_rate: float | None) -> float:
    workload = group.workload
    duration = scenario.run.duration
    if workload.trace is not None:
        return _trace_ios_per_vm(scenario, group)
    if workload.mode == "open":
        duty = workload.duty_cycle
        on_fraction = 1.0
        if duty is not None and duty.shape == "onoff" and duty.on is not None:
            on_fraction = min(1.0, duty.on_fraction + duty.on / duration)  # a burst more at most
        return workload.mean_rate * on_fraction * duration
    slots = workload.workers * workload.outstanding
    tier = scenario.cluster.tier
    # no I/O completes faster than the tier's own latency
    fastest = min(tier.read_latency, tier.write_latency)
    bound = slots * duration / max(workload.think_time + fastest, CLOSED_LATENCY_FLOOR_S)
    if closed_rate is not None and math.isfinite(closed_rate):
        # the bound holds whatever the estimate says: check_work's bound-first test relies on it
        return min(closed_rate * duration, bound)
    return bound


def _trace_ios_per_vm(scenario: Scenario, group: Group) -> float:
    assert group.workload.trace is not None
    devices = scenario.trace_device_summaries(group)
    return sum(device.ios for device in devices) / len(devices) * group.workload.trace.repeat


def _closed_rates(scenario: Scenario) -> dict[str, float]:
    """IOPS per VM of each closed-loop group by the analytic estimate ({} when it cannot estimate
    the scenario)."""
    # looked up per call: tests replace simcache.estimate.estimate
    from simcache.estimate import estimate

    try:
        summary = estimate(scenario).summary
    # advisory only: the bound below takes over, and the run reports the error itself
    except Exception:
        return {}
    rates = {}
    for group in scenario.groups:
        iops = float(summary.loc[summary["group"] == group.name, "iops"].sum())
        vms = scenario.group_vm_count(group)
        if math.isfinite(iops) and iops > 0:
            rates[group.name] = iops / vms
    return rates


def _pileup_fix(pileup: PileUp) -> str:
    """The ways out of a refused pile-up: an outage's, or an overloaded port's."""
    peers = pileup.link == "cluster.peer_link"
    if pileup.outage:
        return (
            f"Lower that group's write rate, shorten the outage ({pileup.outage_field}.duration)"
            + (
                ", or let the writes go on while peers are out of reach (the group's "
                'on_peer_loss = "degrade" or "write_through")'
                if peers
                else ""
            )
        )
    return (
        "Lower that group's write rate or sizes, give the port more bandwidth (a faster "
        f"{pileup.link}" + (", more cluster.peer_links" if peers else "") + "), or shorten "
        "run.duration"
    )


def check_work(
    scenario: Scenario,
    limits: Limits | None = None,
    *,
    keep_records: bool = True,
    bound_first: bool = False,
) -> Work:
    """The expected work of ``scenario``; raises :class:`~simcache.base.errors.RunTooLargeError`
    past ``limits`` (default :meth:`Limits.from_env`).

    ``bound_first``: closed loops are first counted at their bound (:func:`expected_work` with
    ``estimate=False``), which no estimate exceeds; the analytic estimate runs only if that work
    is over the limits. The verdict is the same; the work returned is then the bound (for a run
    that only needs the verdict: the estimate is most of the check's time)."""
    limits = Limits.from_env() if limits is None else limits
    if limits == NO_LIMITS:
        return Work(ios=math.nan, samples=0, series_columns=0, memory_bytes=math.nan)
    if bound_first:
        work = expected_work(scenario, keep_records=keep_records, estimate=False)
        if not _over(work, limits):
            return work
    work = expected_work(scenario, keep_records=keep_records)
    over = _over(work, limits)
    if not over:
        return work
    pileup = work.pileup
    # what takes most of the memory whatever the duration, if anything: the fix names it
    if pileup is not None and pileup.rerates > limits.max_ios * RERATES_PER_IO:
        field, fix = pileup.field, f"{pileup.describe()}. {_pileup_fix(pileup)}"
    elif work.ios <= limits.max_ios and work.cache_lines * CACHE_LINE_BYTES > work.memory_bytes / 2:
        field, fix = (
            "cluster.cache.line",
            "Use larger lines (cluster.cache.line) or a smaller cluster.cache.capacity",
        )
    elif work.slots * SLOT_BYTES > work.memory_bytes / 2:
        field, fix = (
            "groups",
            f"{work.slots:,} closed-loop slots (VMs x workers x outstanding) each hold an I/O: "
            "give the closed loops fewer workers, outstanding I/Os or VMs",
        )
    else:
        field, fix = "run.duration", "Shorten run.duration (or --duration), lower the load"
    raise RunTooLargeError(
        f"scenario {scenario.name!r}",
        [
            (
                field,
                f"this run is expected to take {' and '.join(over)}: {work.describe()} over "
                f"{scenario.run.duration:g} simulated seconds. {fix}, or allow it with "
                f"{LIMIT_OPTIONS}",
            )
        ],
    )


def _over(work: Work, limits: Limits) -> list[str]:
    """What of ``work`` is over ``limits`` (empty: nothing)."""
    over = []
    if work.ios > limits.max_ios:
        over.append(f"{work.ios:,.0f} I/Os (limit {limits.max_ios:,.0f})")
    if work.memory_bytes > limits.max_memory_bytes:
        over.append(
            f"{_size(work.memory_bytes)} of memory (limit {_size(limits.max_memory_bytes)})"
        )
    if work.rerates > limits.max_ios * RERATES_PER_IO:
        over.append(
            f"{work.rerates:,.3g} re-ratings of piled-up transfers (limit "
            f"{limits.max_ios * RERATES_PER_IO:,.3g}, {RERATES_PER_IO:g} per I/O of --max-ios)"
        )
    return over


class Cancel:
    """A stop request for a run, safe to set from any thread or signal handler.

    ``Cancel(deadline=60)`` also cancels itself 60 wall seconds after it was
    made; ``Cancel(lease=10)`` cancels itself once 10 wall seconds pass without
    a :meth:`renew` (the what-if page stops a run no page polls any more). Pass
    it to :func:`simcache.simulate` (``cancel=``), which then returns a partial
    result; one token may stop many runs (a sweep, a check). Compiled with the
    engine, so not to be subclassed: the lease is the extension point.
    """

    def __init__(self, deadline: float | None = None, *, lease: float | None = None):
        self._flag = threading.Event()
        self._deadline = None if deadline is None else time.monotonic() + deadline
        self._deadline_s = deadline
        self.lease = lease
        """Wall seconds the token lives without a :meth:`renew` (``None``: no lease)."""
        self.expires = math.inf if lease is None else time.monotonic() + lease
        """The monotonic time the lease runs out at (infinite without one)."""
        self.reason = ""
        """Why it was cancelled (empty until then): the ``reason`` given to :meth:`cancel`, or
        the deadline."""
        self.signal: int | None = None
        """The signal that cancelled it (:func:`cancel_on_signals`), else ``None``."""

    def cancel(self, reason: str = "cancelled", signal_number: int | None = None) -> None:
        """Ask every run holding this token to stop; the first reason given is kept."""
        if not self._flag.is_set():
            self.reason = reason
            self.signal = signal_number
            self._flag.set()

    def renew(self) -> None:
        """Start the lease over (nothing without one)."""
        if self.lease is not None:
            self.expires = time.monotonic() + self.lease

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called, the deadline has passed or the lease ran out."""
        if self._flag.is_set():
            return True
        if self._deadline is None and self.lease is None:
            return False
        now = time.monotonic()
        if self._deadline is not None and now >= self._deadline:
            self.cancel(f"deadline of {self._deadline_s:g} s wall time passed")
            return True
        if self.lease is not None and now > self.expires:
            self.cancel(f"no page polled it for {self.lease:g} s")
            return True
        return False

    def __repr__(self) -> str:
        return f"Cancel(cancelled={self.cancelled}, reason={self.reason!r})"


def stopped_at(result: Any) -> float | None:
    """The simulated time (s) at which a run was stopped early, or ``None`` for a run that
    reached its end."""
    value = result.meta.get("stopped_at_s")
    return None if value is None else float(value)


class Stopped(Exception):  # a stop the user asked for, not an error: not named ...Error
    """Raised by loops over many runs (``simcache.runs.checks``) when their :class:`Cancel` token
    stops them.

    ``result`` is the partial result of the run that was stopped (``None`` if
    the stop came between runs); ``where`` names that run.
    """

    def __init__(self, reason: str, result: Any = None, where: str = ""):
        self.reason = reason
        self.result = result
        self.where = where
        at = (
            ""
            if result is None
            else (
                f" at simulated time {result.meta['stopped_at_s']:.3f} s of "
                f"{result.meta['planned_s']:g} s"
            )
        )
        super().__init__(f"stopped{at}{' in ' + where if where else ''} ({reason})")


@contextmanager
def cancel_on_signals(
    token: Cancel, signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM)
) -> Iterator[Cancel]:
    """While inside, SIGINT (Ctrl-C) and SIGTERM cancel ``token`` instead of interrupting the run
    where it stands.

    A second signal of the same kind acts as it did before (Ctrl-C twice:
    ``KeyboardInterrupt``). Outside the main thread, where Python cannot
    install signal handlers, nothing is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield token
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: object) -> None:
        token.cancel(signal.Signals(signum).name, signum)
        signal.signal(signum, previous[signum])

    for number in signals:
        previous[number] = signal.signal(number, handler)
    try:
        yield token
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def exit_status(token: Cancel) -> int:
    """The exit status of a command stopped by ``token``: 128 + the signal's number (130 for
    SIGINT, 143 for SIGTERM), else 1."""
    return 128 + token.signal if token.signal is not None else 1
