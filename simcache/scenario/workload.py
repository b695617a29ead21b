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
    on: Annotated[Seconds, Field(gt=0)] | None = None
    off: Annotated[Seconds, Field(ge=0)] | None = None
    period: Annotated[Seconds, Field(gt=0)] | None = None
    amplitude: Fraction = 0.5
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
    workers: Annotated[int, Field(ge=1, le=1024)] = 1
    outstanding: Annotated[int, Field(ge=1, le=1024)] = 1
    """I/Os each worker keeps in flight (closed loop)."""
    think_time: Annotated[Seconds, Field(ge=0)] = 0.0
    iops: Annotated[float, Field(gt=0)] | None = None
    throughput: PositiveRate | None = None
    arrivals: Literal["poisson", "uniform"] = "poisson"
    read_fraction: Fraction = 0.0
    sizes: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=lambda: {"4KiB": 1.0})
    """I/O size mix: size -> relative weight."""
    working_set: PositiveBytes = 10 * 1024**3
    access: Literal["uniform", "zipf", "sequential"] = "uniform"
    zipf_theta: Annotated[float, Field(gt=0, le=5)] = 0.99
    compressibility: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    """Fraction of bytes compression removes from this VM's data (0 = incompressible)."""
    duty_cycle: DutyCycle | None = None

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
    policy: Policy = "WB+0"
    vms_per_host: Annotated[int, Field(ge=1, le=1024)] = 1
    hosts: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)] | None = None
    """Host indices the group runs on; all hosts when omitted."""
    workload: Workload = Workload()

    @property
    def replicas(self) -> int:
        return REPLICAS[self.policy]
