"""The tier model of a closed loop, in numbers: IOPS, mean and p99 of ``n`` outstanding I/Os of one
pattern.

The stations follow the tier's path (docs/research/tier-v2: TierSpec's ``command_overhead``, command
processor, parallel units, pipe), each I/O passing them in turn and the ``n`` I/Os going round
without pause (fio's closed loop: a completion issues the next I/O):

- a delay of ``command_overhead`` (not queued: host driver, protocol, firmware bookkeeping);
- the command processor: one FCFS server, ``1 / iops_limit`` per command (absent without a limit);
- the media: ``units`` (channels x dies) parallel units, each I/O holding one for ``latency`` (times
  a lognormal factor of mean 1 and coefficient of variation ``service_cv``). ``routing =
  "earliest"``: an I/O takes the earliest-free unit (an M/G/c station, as Seidmann's approximation:
  one server of ``latency / units`` and a delay of the rest); ``routing = "die"``: an I/O goes to a
  uniformly random unit (the die holding its data) and queues there (``units`` single servers, each
  visited by ``1 / units`` of the I/Os);
- the pipe: one FCFS server, ``size / bandwidth`` per I/O.

Mean values by approximate mean value analysis: Schweitzer's estimate of the queue an arrival sees
(``Q (n - 1) / n``), and an FCFS server's residual service ``S (1 + cv^2) / 2`` for the I/O in
service, not ``S`` (Reiser's correction for general service times; exact MVA assumes exponential
ones), so a deterministic device keeps the sharp knee it has. Throughput never exceeds the busiest
station's capacity. The p99: the fixed times plus a gamma distribution matched to the mean and
variance of the media service and the waits, a wait being zero with the probability of not waiting
and exponential otherwise (Sakasegawa's waiting probability).

Vectorised over points: one call answers every point of a fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import special

__all__ = ["Device", "Prediction", "predict"]

Floats = NDArray[np.float64]

_ITERATIONS = 150
_TOLERANCE = 1e-10


@dataclass(frozen=True)
class Device:
    """The per-operation figures of one kind of operation (reads, or writes) on a tier, SI units."""

    command_overhead: float
    """Seconds per I/O outside any queue."""
    latency: float
    """Seconds one I/O holds a parallel unit (read_latency or write_latency)."""
    units: float
    """Parallel units (channels x dies)."""
    bandwidth: float
    """Bytes/s of the pipe every transfer shares."""
    iops_limit: float | None = None
    """Commands/s of the command processor; ``None``: no command processor."""
    service_cv: float = 0.0
    """Coefficient of variation of a unit's holding time."""
    routing: Literal["earliest", "die"] = "earliest"


@dataclass(frozen=True)
class Prediction:
    """IOPS, mean and p99 latency (s) per point."""

    iops: Floats
    mean: Floats
    p99: Floats


def predict(device: Device, sizes: Floats, outstanding: Floats) -> Prediction:
    """The closed loop of ``outstanding`` I/Os of ``sizes`` bytes on ``device``, point by point;
    see the module docstring."""
    n = np.asarray(outstanding, dtype=float)
    size = np.asarray(sizes, dtype=float)
    units = max(device.units, 1.0)
    cv2 = device.service_cv**2
    command = 0.0 if device.iops_limit is None else 1.0 / device.iops_limit
    pipe = size / device.bandwidth
    if device.routing == "die":
        media_service, media_visit, media_copies, media_delay = (
            device.latency,
            1.0 / units,
            units,
            0.0,
        )
    else:  # Seidmann: an M/G/c station as one server c times as fast plus a delay of the rest
        media_service, media_visit, media_copies, media_delay = (
            device.latency / units,
            1.0,
            1.0,
            device.latency * (units - 1) / units,
        )
    # stations: command processor, media (one copy of), pipe; service per visit, visits, scv
    service = [np.full_like(n, command), np.full_like(n, media_service), pipe]
    visits = [1.0, media_visit, 1.0]
    scv = [0.0, cv2, 0.0]
    copies = [1.0, media_copies, 1.0]
    delay = device.command_overhead + media_delay
    demand = [s * v for s, v in zip(service, visits, strict=True)]
    capacity = 1.0 / np.maximum.reduce(demand)
    capacity = np.where(np.isfinite(capacity), capacity, np.inf)
    queue = [np.zeros_like(n) for _ in service]
    busy = [np.zeros_like(n) for _ in service]
    # Of the loop's other I/Os, the share an arrival finds queued: Schweitzer's (n - 1) / n when
    # arrivals are random (a random die, or service times spread like an exponential's), less as
    # they grow alike: a closed loop of identical operations falls into step and never waits below
    # the busiest station's capacity.
    randomness = 1.0 if device.routing == "die" else min(1.0, math.sqrt(device.service_cv))
    seen = (n - 1.0) / n * randomness
    throughput = np.zeros_like(n)
    residence = [np.zeros_like(n) for _ in service]
    for _ in range(_ITERATIONS):
        residence = [
            v * (s * (1.0 + q * seen - u * seen) + u * seen * s * (1.0 + c) / 2.0)
            for s, v, c, q, u in zip(service, visits, scv, queue, busy, strict=True)
        ]
        response = delay + sum(m * r for m, r in zip(copies, residence, strict=True))
        new = np.minimum(n / response, capacity)
        change = np.max(np.abs(new - throughput) / np.maximum(new, 1e-30))
        throughput = 0.5 * throughput + 0.5 * new if change > 1e-3 else new
        queue = [throughput * r for r in residence]
        busy = [throughput * d for d in demand]
        if change < _TOLERANCE:
            break
    mean = n / throughput
    # The p99: fixed times, then a gamma matched to the mean and variance of the rest (module
    # docstring).
    fixed = device.command_overhead + command + pipe
    variable = np.maximum(mean - fixed, 1e-12)
    variance = (device.latency * device.service_cv) ** 2 * np.ones_like(n)
    for s, c, q, u, m in zip(service, scv, queue, busy, copies, strict=True):
        # I/Os waiting ahead of an arrival, besides the one in service
        ahead = np.maximum(q * seen - u * seen, 0.0)
        # of the other I/Os, those at stations like this one
        share = np.minimum(1.0, q * m / np.maximum(n - 1.0, 1.0))
        # geometric when few of the loop's I/Os are here and arrivals are random, none when all are
        # or nothing varies
        spread = ahead * (1.0 + ahead) * (1.0 - share) * randomness
        variance = variance + s**2 * (ahead * c + spread + u * seen * (1.0 / 3.0 + c) / 4.0)
    scv_total = variance / variable**2
    shape = 1.0 / np.maximum(scv_total, 1e-9)
    quantile = special.gammaincinv(shape, 0.99) / shape * variable
    p99 = fixed + np.where(scv_total < 1e-9, variable, quantile)
    return Prediction(throughput, mean, np.asarray(p99, dtype=float))
