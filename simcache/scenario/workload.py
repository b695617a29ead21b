"""Scenario workload: groups of identical VMs and what each VM does.

A :class:`Group` places VMs with one write policy on some hosts; its
:class:`Workload` is a closed or open loop of I/Os with a size mix, an access
pattern over a working set and an optional :class:`DutyCycle`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from simcache.scenario.fields import REPLICAS, Fraction, Policy, PositiveBytes, PositiveRate, Seconds, _Spec
from simcache.units import UnitError, parse_size

__all__ = ["DutyCycle", "Group", "Workload"]


class DutyCycle(_Spec):
    """Time-varying intensity: on/off bursts, or a sinusoid around the mean rate."""

    shape: Literal["onoff", "sine"]
    on: Annotated[Seconds, Field(gt=0)] | None = Field(default=None, title="Burst length")
    """Seconds of each burst at full intensity (``onoff``)."""
    off: Annotated[Seconds, Field(ge=0)] | None = Field(default=None, title="Rest time")
    """Seconds of rest between bursts (``onoff``)."""
    period: Annotated[Seconds, Field(gt=0)] | None = Field(default=None, title="Period")
    """Seconds of one cycle of the sine (``sine``)."""
    amplitude: Fraction = 0.5
    """How far the sine swings the rate around its mean, as a fraction of the mean, 0 to 1 (``sine``)."""
    phase: Annotated[Seconds, Field(ge=0)] = 0.0
    """Start offset into the cycle."""

    @model_validator(mode="after")
    def _shape_fields(self) -> DutyCycle:
        if self.shape == "onoff" and (self.on is None or self.off is None):
            raise ValueError('shape "onoff" needs both on and off durations, e.g. on = "10s", off = "20s"')
        if self.shape == "sine" and self.period is None:
            raise ValueError('shape "sine" needs a period, e.g. period = "60s"')
        return self


class Workload(_Spec):
    """What one VM of a group does."""

    mode: Literal["closed", "open"] = "closed"
    workers: Annotated[int, Field(title="Workers per VM", ge=1, le=1024)] = 1
    """Closed loop: workers per VM; each keeps ``outstanding`` I/Os in flight and issues the next when one
    completes (after ``think_time``)."""
    outstanding: Annotated[int, Field(ge=1, le=1024)] = 1
    """I/Os each worker keeps in flight (closed loop)."""
    think_time: Annotated[Seconds, Field(ge=0)] = 0.0
    iops: Annotated[float, Field(gt=0)] | None = Field(default=None, title="IOPS per VM")
    """Open loop: mean I/Os per second each VM issues."""
    throughput: PositiveRate | None = Field(default=None, title="Throughput per VM")
    """Open loop: mean bytes per second each VM issues."""
    arrivals: Literal["poisson", "uniform"] = "poisson"
    read_fraction: Fraction = 0.0
    """Share of the VM's I/Os that are reads, 0 to 1; the rest are writes."""
    sizes: dict[str, Annotated[float, Field(gt=0)]] = Field(title="I/O size mix", default_factory=lambda: {"4KiB": 1.0})
    """I/O sizes and their relative weights, e.g. 8KiB: 0.7, 64KiB: 0.3 (KiB/MiB are powers of 1024); a size
    alone weighs 1."""
    working_set: Annotated[PositiveBytes, Field(title="Working set per VM")] = 10 * 1024**3
    """Bytes each VM touches; with the tier capacity it sets the read hit rate."""
    access: Literal["uniform", "zipf", "sequential"] = "uniform"
    zipf_theta: Annotated[float, Field(gt=0, le=5)] = 0.99
    compressibility: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    """Fraction of bytes compression removes from this VM's data (0 = incompressible)."""
    duty_cycle: Annotated[DutyCycle | None, Field(title="Duty cycle")] = None
    """Time-varying intensity: on/off bursts at full intensity with rests in between, or (open loop only) a
    sine wave around the mean rate. Unset: steady."""

    @field_validator("sizes", mode="before")
    @classmethod
    def _size_mix(cls, value: Any) -> Any:
        if isinstance(value, (str, int)):
            return {str(value): 1.0}
        if isinstance(value, Mapping):
            for key in value:
                try:
                    if parse_size(key) <= 0:
                        raise ValueError(f"I/O size {key!r} must be positive")
                except UnitError as exc:
                    raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _mode_fields(self) -> Workload:
        if self.mode == "open" and (self.iops is None) == (self.throughput is None):
            raise ValueError('an open-loop workload needs exactly one of iops or throughput (e.g. throughput = "5MB/s")')
        if self.mode == "closed" and (self.iops is not None or self.throughput is not None):
            raise ValueError(
                'iops/throughput set the rate of an open loop; for a closed loop use workers and outstanding, or set mode = "open"'
            )
        if self.mode == "closed" and self.duty_cycle is not None and self.duty_cycle.shape == "sine":
            raise ValueError('a sine duty cycle modulates an arrival rate: use mode = "open", or shape = "onoff" for a closed loop')
        return self

    @property
    def size_mix(self) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """Sizes in bytes and their probabilities (summing to 1)."""
        total = sum(self.sizes.values())
        return (
            tuple(parse_size(s) for s in self.sizes),
            tuple(w / total for w in self.sizes.values()),
        )

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

    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")]
    policy: Annotated[Policy, Field(title="Write policy")] = "WB+0"
    """WT: write-through, a write completes when the array has it. WB+0: write-back, complete once in this
    host's flash/RAM tier (no copy elsewhere until destaged). WB+1 / WB+2: write-back plus a copy on 1 or 2
    peer hosts over the peer network before the write completes."""
    vms_per_host: Annotated[int, Field(ge=1, le=1024)] = 1
    hosts: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)] | None = None
    """Host indices the group runs on; all hosts when omitted."""
    workload: Workload = Workload()

    @property
    def replicas(self) -> int:
        return REPLICAS[self.policy]
