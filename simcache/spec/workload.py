"""Scenario workload: groups of identical VMs and what each VM does.

A :class:`Group` places VMs with one write policy on some hosts; its
:class:`Workload` is a closed or open loop of I/Os with a size mix, an access
pattern over a working set and an optional :class:`DutyCycle`. Reads and writes
take their sizes from one mix (``sizes``) or each from its own (``read_sizes``,
``write_sizes``: an op's own mix replaces ``sizes`` for that op).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from simcache.base.errors import echo
from simcache.base.units import UnitError, parse_size
from simcache.spec.fields import (
    MAX_IOPS,
    MAX_WEIGHT,
    REPLICAS,
    Count,
    Fraction,
    HostIndex,
    Name,
    Number,
    Policy,
    PositiveBytes,
    PositiveRate,
    PositiveSeconds,
    Seconds,
    SectorBytes,
    Weight,
    Why,
    _Spec,
    group_name_problem,
)
from simcache.traces.formats import TRACE_FORMATS, open_trace
from simcache.traces.trace import Trace

__all__ = ["TRACE_FORMATS", "DutyCycle", "Group", "TraceSpec", "Workload"]


PROFILE_LEVELS = 100_000
"""Most entries a ``profile`` duty cycle may list."""
SIZE_MIX_ENTRIES = 1000
"""Most sizes a size mix may list (vscsiStats histograms have about 20 buckets)."""
MIN_CYCLE_SECONDS = 1e-3
"""Shortest burst, sine period or profile interval: each edge of a duty cycle is an event for
every VM, and below a millisecond (the sampler's finest interval) the cycle is a steady rate at
the scale the results show."""
CycleSeconds = Annotated[
    Seconds, Field(ge=MIN_CYCLE_SECONDS), Why(low="the finest scale the results show")
]
_DEPTH_WHY = "deeper than any device queue"
MAX_IO_BYTES = 2**30
"""Largest I/O size of a size mix, 1 GiB: block devices take a few MiB at most (the OS splits
larger requests)."""


@functools.lru_cache(maxsize=1024)
def _parsed_mix(
    mix: tuple[tuple[str, float], ...],
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """A size mix's sizes in bytes and their probabilities (:meth:`Workload.op_size_mix`), kept
    per mix: a run's build and samples ask for them hundreds of times (2.8 ms of a 40 ms native
    run of the default scenario, parsed each time)."""
    total = sum(weight for _, weight in mix)
    return tuple(parse_size(size) for size, _ in mix), tuple(weight / total for _, weight in mix)


def _io_size(key: str) -> int:
    """The bytes of one size of a size mix; a ValueError says what is wrong with it."""
    try:
        size = parse_size(key)
    except UnitError as exc:
        raise ValueError(str(exc)) from None
    if size <= 0:
        raise ValueError(f"I/O size {echo(key)} must be more than 0 bytes")
    if size > MAX_IO_BYTES:
        raise ValueError(
            f"I/O size {echo(key)} is more than 1GiB; block devices take a few MiB at most in one "
            "I/O"
        )
    return size


class DutyCycle(_Spec):
    """Time-varying intensity: on/off bursts, a sinusoid around the mean rate, or a measured rate
    profile."""

    shape: Literal["onoff", "sine", "profile"]
    on: CycleSeconds | None = Field(default=None, title="Burst length")
    """Seconds of each burst at full intensity (``onoff``)."""
    off: Seconds | None = Field(default=None, title="Rest time")
    """Seconds of rest between bursts (``onoff``)."""
    period: CycleSeconds | None = Field(default=None, title="Period")
    """Seconds of one cycle of the sine (``sine``)."""
    amplitude: Fraction = 0.5
    """How far the sine swings the rate around its mean, as a fraction of the mean, 0 to 1
    (``sine``)."""
    interval: CycleSeconds | None = Field(default=None, title="Profile interval")
    """Seconds each entry of ``levels`` lasts (``profile``)."""
    levels: (
        Annotated[
            list[Annotated[Number, Field(ge=0, le=MAX_WEIGHT)]],
            Field(min_length=1, max_length=PROFILE_LEVELS),
        ]
        | None
    ) = Field(default=None, title="Relative rates")
    """Relative arrival rate of each interval, repeated cyclically (``profile``): the rate in
    interval k is the mean rate (``iops``) times levels[k] / mean(levels), so the mean rate over
    a cycle stays ``iops``. ``simcache fit`` writes a trace's I/O counts per interval here."""
    phase: Seconds = 0.0
    """Start offset into the cycle."""

    @property
    def on_fraction(self) -> float:
        """The share of the time the workload issues at its rate: ``on / (on + off)`` for on/off
        bursts, 1 for a sine or a profile (their rate averages the mean rate over a cycle)."""
        if self.shape == "onoff" and self.on is not None and self.off is not None:
            return self.on / (self.on + self.off)
        return 1.0

    @model_validator(mode="after")
    def _shape_fields(self) -> DutyCycle:
        if self.shape == "onoff" and (self.on is None or self.off is None):
            raise ValueError(
                'shape "onoff" needs both on and off durations, e.g. on = "10s", off = "20s"'
            )
        if self.shape == "sine" and self.period is None:
            raise ValueError('shape "sine" needs a period, e.g. period = "60s"')
        if self.shape == "profile":
            if self.interval is None or self.levels is None:
                raise ValueError(
                    'shape "profile" needs an interval and levels, e.g. interval = "1s", levels = '
                    "[1.0, 3.0, 0.5]"
                )
            if not any(level > 0 for level in self.levels):
                raise ValueError(
                    "a profile's levels must not all be 0: give at least one positive relative rate"
                )
        return self


class TraceSpec(_Spec):
    """A block trace replayed as the workload: every I/O with its own op, size, offset and (open
    loop) time."""

    path: Annotated[str, Field(min_length=1, max_length=4096)]
    """The trace file; a relative path is taken from the scenario file's folder."""
    format: Literal["fio-iolog", "blkparse", "msr", "csv"] | None = None
    """The trace's format; guessed from the file's start when omitted."""
    options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """The format's import options (a CSV's column names and units, blkparse's event, ...)."""
    devices: (
        Annotated[list[Annotated[str, Field(min_length=1, max_length=256)]], Field(min_length=1)]
        | None
    ) = None
    """Trace devices this group replays: the group's k-th VM replays devices[k mod n]; all of the
    trace's devices when omitted."""
    replay: Literal["open", "closed"] = "open"
    """``open``: each I/O is issued at its timestamp, whatever the latency. ``closed``: I/Os are
    issued in trace order, each worker keeping ``outstanding`` in flight (timestamps ignored)."""
    start: Seconds = 0.0
    """Replay I/Os from this time on the trace's clock (seconds from its first I/O)."""
    end: PositiveSeconds | None = None
    """Replay I/Os before this time on the trace's clock; the whole trace when omitted."""
    speed: Annotated[
        Number,
        Field(gt=0, le=1e6),
        Why(high="a million times faster squeezes a day into a tenth of a second"),
    ] = 1.0
    """Time compression: 2 replays the trace twice as fast (open loop)."""
    repeat: Annotated[
        Count, Field(ge=1, le=1_000_000), Why(high="a million passes over one window")
    ] = 1
    """How many times the window is replayed back to back."""

    def open(self) -> Trace:
        """The trace this names, parsed once and cached
        (:func:`simcache.traces.formats.open_trace`)."""
        return open_trace(self.path, self.format, self.options)

    def vm_devices(self, trace: Trace, vms: int) -> list[str]:
        """The trace device each of a group's ``vms`` VMs replays, in the order the engine builds
        them."""
        devices = self.devices if self.devices is not None else sorted(trace.devices)
        return [devices[k % len(devices)] for k in range(vms)]

    @model_validator(mode="after")
    def _window_order(self) -> TraceSpec:
        if self.end is not None and self.end <= self.start:
            raise ValueError(f"end ({self.end}s) must be after start ({self.start}s)")
        return self


_SYNTHETIC_FIELDS: tuple[str, ...] = (
    *(
        "iops",
        "throughput",
        "read_fraction",
        "sizes",
        "working_set",
        "access",
        "zipf_theta",
        "duty_cycle",
        "arrivals",
    ),
    *("hot_io_fraction", "hot_span_fraction", "sequential_run"),
    *("read_sizes", "write_sizes"),
)
_RUN_ACCESSES = ("uniform", "zipf", "hotspot")
"""Access patterns that ``sequential_run`` applies to."""


class Workload(_Spec):
    """What one VM of a group does."""

    mode: Literal["closed", "open", "trace"] = "closed"
    """``closed``: workers keep I/Os in flight; ``open``: I/Os arrive at a rate; ``trace``: a
    block trace's own I/Os are replayed (``trace``)."""
    workers: Annotated[
        Count, Field(title="Workers per VM", ge=1, le=1024), Why(high=_DEPTH_WHY)
    ] = 1
    """Closed loop: workers per VM; each keeps ``outstanding`` I/Os in flight and issues the next
    when one completes (after ``think_time``)."""
    outstanding: Annotated[Count, Field(ge=1, le=1024), Why(high=_DEPTH_WHY)] = 1
    """I/Os each worker keeps in flight (closed loop)."""
    think_time: Seconds = 0.0
    iops: (
        Annotated[
            Number, Field(gt=0, le=MAX_IOPS), Why(high="a hundred times the fastest NVMe device")
        ]
        | None
    ) = Field(default=None, title="IOPS per VM")
    """Open loop: mean I/Os per second each VM issues."""
    throughput: PositiveRate | None = Field(default=None, title="Throughput per VM")
    """Open loop: mean bytes per second each VM issues."""
    arrivals: Literal["poisson", "uniform"] = "poisson"
    read_fraction: Fraction = 0.0
    """Share of the VM's I/Os that are reads, 0 to 1; the rest are writes."""
    sizes: Annotated[dict[str, Weight], Field(min_length=1, max_length=SIZE_MIX_ENTRIES)] = Field(
        title="I/O size mix", default_factory=lambda: {"4KiB": 1.0}
    )
    """I/O sizes and their relative weights, e.g. 8KiB: 0.7, 64KiB: 0.3 (KiB/MiB are powers of
    1024); a size alone weighs 1. The mix of every I/O, unless ``read_sizes`` or ``write_sizes``
    gives an op its own."""
    read_sizes: (
        Annotated[dict[str, Weight], Field(min_length=1, max_length=SIZE_MIX_ENTRIES)] | None
    ) = Field(default=None, title="Read size mix")
    """The reads' own size mix, written like ``sizes`` (e.g. 4KiB: 1); when given it replaces
    ``sizes`` for the reads. Unset: reads use ``sizes``."""
    write_sizes: (
        Annotated[dict[str, Weight], Field(min_length=1, max_length=SIZE_MIX_ENTRIES)] | None
    ) = Field(default=None, title="Write size mix")
    """The writes' own size mix, written like ``sizes`` (e.g. 64KiB: 1); when given it replaces
    ``sizes`` for the writes. Unset: writes use ``sizes``. With both ``read_sizes`` and
    ``write_sizes``, leave ``sizes`` out (no I/O would take it)."""
    working_set: Annotated[PositiveBytes, Field(title="Working set per VM")] = 10 * 1024**3
    """Bytes each VM touches; with the tier capacity it sets the read hit rate."""
    access: Literal["uniform", "zipf", "hotspot", "sequential"] = "uniform"
    """Where I/Os land in the working set: ``uniform``; ``zipf`` (the block of popularity rank r
    with probability proportional to r^-zipf_theta); ``hotspot`` (hot_io_fraction of the I/Os to
    the first hot_span_fraction of the working set); ``sequential`` (each I/O continues where the
    previous one ended)."""
    zipf_theta: Annotated[
        Number,
        Field(gt=0, le=5),
        Why(high="at 5 nearly every I/O already goes to the hottest block"),
    ] = 0.99
    """Zipf exponent, above 0 and at most 5 (``zipf``; ignored by the other patterns, so a sweep
    can switch access)."""
    hot_io_fraction: Annotated[Number, Field(gt=0, lt=1)] | None = None
    """Share of the I/Os that go to the hot region, between 0 and 1, more than hot_span_fraction
    (``hotspot``)."""
    hot_span_fraction: Annotated[Number, Field(gt=0, lt=1)] | None = None
    """Share of the working set that is hot (its first blocks, one region), between 0 and 1
    (``hotspot``)."""
    sequential_run: Annotated[
        Number,
        Field(ge=1, le=1e9),
        Why("a run is at least one I/O", "a billion I/Os is one endless run"),
    ] = 1.0
    """Mean number of I/Os in a sequential run, at least 1: each I/O continues where the previous
    one ended with probability 1 - 1/sequential_run, else goes to a new position of the access
    pattern (geometric run lengths; 1 = no runs; ``uniform``, ``zipf``, ``hotspot``)."""
    compressibility: Annotated[
        Number, Field(ge=0.0, lt=1.0), Why(high="compression cannot remove every byte")
    ] = 0.0
    """Fraction of bytes compression removes from this VM's data (0 = incompressible)."""
    trace: TraceSpec | None = None
    """The trace a ``mode = "trace"`` workload replays."""
    duty_cycle: Annotated[DutyCycle | None, Field(title="Duty cycle")] = None
    """Time-varying intensity: on/off bursts at full intensity with rests in between, or (open
    loop only) a sine wave around the mean rate or a rate profile (``simcache fit``). Unset:
    steady."""
    sync_serialize: bool = False
    """The VM's filesystem serializes synchronous writers: whatever depth the application keeps,
    one write per VM reaches the device at a time (the others wait in the VM, counted in
    local_tier_ms); reads keep their depth."""

    @field_validator("sizes", "read_sizes", "write_sizes", mode="before")
    @classmethod
    def _size_mix(cls, value: Any, info: ValidationInfo) -> Any:
        """One size alone weighs 1; each size of a table must be a size an I/O can have, and
        appear once."""
        if isinstance(value, (bool, list, tuple)):
            raise ValueError(
                'a size mix is a table of sizes and their relative weights, e.g. { "8KiB" = 0.7, '
                '"64KiB" = 0.3 }, '
                f'or one size alone ({info.field_name} = "4KiB")'
            )
        if isinstance(value, (str, int, float)):
            value = {str(value): 1.0}
        if isinstance(value, Mapping):
            seen: dict[int, str] = {}
            for key in value:
                size = _io_size(key)
                if size in seen:
                    raise ValueError(
                        f"{echo(seen[size])} and {echo(key)} are the same size ({size:,} bytes); "
                        "give each size once"
                    )
                seen[size] = key
        return value

    @model_validator(mode="after")
    def _mode_fields(self) -> Workload:
        if self.mode == "trace" or self.trace is not None:
            return self._trace_fields()
        if self.mode == "open" and (self.iops is None) == (self.throughput is None):
            raise ValueError(
                "an open-loop workload needs exactly one of iops or throughput (e.g. throughput = "
                '"5MB/s")'
            )
        if self.mode == "closed" and (self.iops is not None or self.throughput is not None):
            raise ValueError(
                "iops/throughput set the rate of an open loop; for a closed loop use workers and "
                'outstanding, or set mode = "open"'
            )
        if (
            self.mode == "closed"
            and self.duty_cycle is not None
            and self.duty_cycle.shape in ("sine", "profile")
        ):
            raise ValueError(
                f"a {self.duty_cycle.shape} duty cycle modulates an arrival rate: use mode = "
                '"open", or shape = "onoff" for a closed loop'
            )
        return self._access_fields()

    @model_validator(mode="after")
    def _op_size_fields(self) -> Workload:
        """``sizes`` beside both per-op mixes would be unused: say so rather than ignore it."""
        if (
            self.read_sizes is not None
            and self.write_sizes is not None
            and self._differs_from_default("sizes")
        ):
            raise ValueError(
                "sizes is unused when read_sizes and write_sizes are both given (each op takes its "
                "own mix): remove sizes, "
                "or remove read_sizes or write_sizes so that op takes sizes"
            )
        return self

    def _access_fields(self) -> Workload:
        hot = {"hot_io_fraction": self.hot_io_fraction, "hot_span_fraction": self.hot_span_fraction}
        if self.access == "hotspot":
            missing = [name for name, value in hot.items() if value is None]
            if missing:
                raise ValueError(
                    f'access = "hotspot" needs {" and ".join(missing)}: the share of the I/Os (0 '
                    "to 1) that go to the share "
                    "of the working set (0 to 1) that is hot, e.g. hot_io_fraction = 0.8, "
                    "hot_span_fraction = 0.2"
                )
            assert self.hot_io_fraction is not None and self.hot_span_fraction is not None
            if self.hot_io_fraction <= self.hot_span_fraction:
                raise ValueError(
                    f"hot_io_fraction ({self.hot_io_fraction:g}) must be more than "
                    f"hot_span_fraction ({self.hot_span_fraction:g}): "
                    "the hot region gets more than its share of the I/Os (equal shares are access "
                    '= "uniform")'
                )
        else:
            given = [name for name, value in hot.items() if value is not None]
            if given:
                names = " and ".join(given)
                raise ValueError(
                    f'{names} describe access = "hotspot", not "{self.access}": remove them or set '
                    'access = "hotspot"'
                )
        if self.access not in _RUN_ACCESSES and self.sequential_run != 1.0:
            raise ValueError(
                "sequential_run (mean I/Os per run, at least 1) applies to access "
                f"{', '.join(_RUN_ACCESSES)}; "
                f'access = "{self.access}" is one endless run: remove sequential_run'
            )
        return self

    def _trace_fields(self) -> Workload:
        if self.trace is None:
            raise ValueError(
                'mode = "trace" needs a trace table, e.g. trace = { path = "vm1.csv", format = '
                '"msr" }'
            )
        if self.mode != "trace":
            raise ValueError(
                'a trace is replayed by mode = "trace"; remove the trace table or set the mode'
            )
        # Judged by value, not by what was written: a dumped trace workload (every field at its
        # default) loads again.
        synthetic = [name for name in _SYNTHETIC_FIELDS if self._differs_from_default(name)]
        if synthetic:
            raise ValueError(
                f"{', '.join(synthetic)} describe a synthetic workload; a trace brings its own "
                "I/Os: remove them "
                "(or derive a synthetic workload with simcache fit)"
            )
        if self.trace.replay == "open" and (
            self._differs_from_default("workers") or self._differs_from_default("outstanding")
        ):
            raise ValueError(
                'workers and outstanding set a closed replay\'s depth; use trace.replay = "closed" '
                "or remove them"
            )
        return self

    def _differs_from_default(self, name: str) -> bool:
        return bool(
            getattr(self, name)
            != type(self).model_fields[name].get_default(call_default_factory=True)
        )

    @property
    def size_mix(self) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """Sizes in bytes and their probabilities (summing to 1) over all I/Os: with per-op mixes
        that differ, each op's mix weighted by its share of the I/Os (sizes that no I/O has left
        out), by increasing size."""
        if not self.per_op_sizes:
            return self.op_size_mix(True)
        shares = (self.read_fraction, 1.0 - self.read_fraction)
        merged: dict[int, float] = {}
        for write, share in zip((False, True), shares, strict=True):
            for size, probability in zip(*self.op_size_mix(write), strict=True):
                if share * probability > 0:
                    merged[size] = merged.get(size, 0.0) + share * probability
        ordered = sorted(merged.items())
        return tuple(s for s, _ in ordered), tuple(p for _, p in ordered)

    def op_size_mix(self, write: bool) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """Sizes in bytes and their probabilities (summing to 1) of the writes (``write``) or of
        the reads: ``write_sizes`` / ``read_sizes`` when given, else ``sizes``."""
        own = self.write_sizes if write else self.read_sizes
        mix = self.sizes if own is None else own
        return _parsed_mix(tuple(mix.items()))

    @property
    def per_op_sizes(self) -> bool:
        """Reads and writes draw their sizes from different mixes."""
        return self.op_size_mix(False) != self.op_size_mix(True)

    def op_mean_size(self, write: bool) -> float:
        """Mean bytes of a write (``write``) or of a read."""
        sizes, probs = self.op_size_mix(write)
        return float(sum(s * p for s, p in zip(sizes, probs, strict=True)))

    @property
    def mean_size(self) -> float:
        sizes, probs = self.size_mix
        return float(sum(s * p for s, p in zip(sizes, probs, strict=True)))

    @property
    def mean_rate(self) -> float:
        """Open-loop mean arrival rate in I/Os per second (before the duty cycle)."""
        if self.iops is not None:
            return self.iops
        assert self.throughput is not None
        return self.throughput / self.mean_size


class Group(_Spec):
    """A set of identical VMs: same policy and workload, placed on some hosts."""

    name: Name
    policy: Annotated[Policy, Field(title="Write policy")] = "WB+0"
    """WT: write-through, a write completes when the array has it. WB+0: write-back, complete
    once in this host's flash/RAM tier (no copy elsewhere until destaged). WB+1 / WB+2:
    write-back plus a copy on 1 or 2 peer hosts over the peer network before the write completes."""
    vms_per_host: Annotated[Count, Field(ge=1, le=1024), Why(high="more VMs than a host runs")] = 1
    hosts: Annotated[list[HostIndex], Field(min_length=1)] | None = None
    """Host indices the group runs on; all hosts when omitted."""
    workload: Workload = Workload()
    # -- replication and metadata (issue 16) --
    replication: Literal["sync", "async", "memory"] = "sync"
    """When a WB+1 / WB+2 write is acknowledged to the VM. ``sync``: once every peer has it on
    its device (a block replicator's protocol C). ``memory``: once every peer has it in RAM,
    before its device write (protocol B). ``async``: once the local device has it; the replicas
    follow, and the bytes acknowledged but not yet on any peer are data at risk (protocol A).
    Ignored by WT and WB+0, so a sweep can switch the policy."""
    replication_buffer: Annotated[
        PositiveBytes, Field(le=2**30), Why(high="beyond any socket buffer")
    ] = 4 * 1024**2
    """``replication = "async"``: bytes of replicas a host keeps on their way to one peer (the
    replication connection's send buffer); past it, acknowledgements wait for copies to arrive.
    Default 4 MiB, the largest send buffer Linux's TCP grows to by default (net.ipv4.tcp_wmem,
    Linux ip-sysctl documentation)."""
    metadata_write: bool = False
    """Each write-back write also writes a metadata (activity log) record to the local tier
    before it is acknowledged: one more device write on the critical path."""
    metadata_size: Annotated[
        SectorBytes, Field(le=2**24), Why(high="a metadata record is a few KiB; 16 MiB is a typo")
    ] = 4096
    """Bytes of one metadata write (``metadata_write``), 512 bytes to 16 MiB."""
    metadata_batched: bool = True
    """``metadata_write``: the writes of a host that wait for the log at the same time share one
    metadata write (group commit: one in flight per host, the next one carries every write that
    finished meanwhile). Off: one metadata write per write."""
    on_peer_loss: Literal["write_through", "degrade", "stall"] = "write_through"
    """What a WB+1 / WB+2 VM does while it reaches fewer peers than its policy promises (a
    ``peer_loss`` or ``link_down`` event, or a ``host_failure`` / ``device_failure`` that leaves
    no spare peer). ``write_through``: its writes go to the array until the peers return.
    ``degrade``: it writes back with the peers it reaches (WB+2 to WB+1 to WB+0); the writes with
    fewer copies are re-replicated (resync) over the peer network when the peers return.
    ``stall``: its writes wait until the peers return (forever after a host failure that left no
    spare). The default is what PernixData FVP does: a VM that cannot have its writes protected
    is switched to write-through automatically, and back to write-back once it can (F. Denneman,
    "Read acceleration in a non-uniform cluster", 2014,
    frankdenneman.nl/2014/02/21/read-acceleration-non-uniform-cluster, pointing to "Fault
    Tolerant Write Acceleration", frankdenneman.nl/2013/11/05/fault-tolerant-write-acceleration).
    Ignored by WT and WB+0."""

    @field_validator("name")
    @classmethod
    def _free_name(cls, name: str) -> str:
        problem = group_name_problem(name)
        if problem:
            raise ValueError(problem)
        return name

    @property
    def replicas(self) -> int:
        return REPLICAS[self.policy]
