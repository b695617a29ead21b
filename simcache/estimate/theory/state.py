"""A state of the run (its key) and its solution.

A state is what stays constant over a piece of the run: the groups on, the
vMotion pairs running, and per host its GC cliff, destage buffer mode and
compression (``docs/estimate.md``, Fluid timeline).
"""

from __future__ import annotations

from dataclasses import dataclass

from simcache.estimate.theory.numeric import Floats

__all__ = ["BACKLOGGED", "FULL", "KEEPING_UP", "StateKey", "StateResult", "same_but_vmotions"]

# Destage buffer modes of a host within a state.
KEEPING_UP, BACKLOGGED, FULL = range(3)


@dataclass(frozen=True)
class StateKey:
    """A state of the run: what is on, running, full or switched; the timeline solves each state
    once."""

    groups: frozenset[int]
    vmotions: frozenset[int]  # running vMotion pairs (of Layout.vmotion_pairs)
    gc: tuple[bool, ...]  # per host: past the clean-pool cliff
    buffer: tuple[int, ...]  # per host: KEEPING_UP, BACKLOGGED or FULL
    # per compression lane (host and sending peer port, Layout.lane): replicas compressed
    compress: tuple[bool, ...]
    drain: tuple[float, ...]  # per host: drain rate of a full buffer's admission server (bytes/s)


def same_but_vmotions(one: StateKey, other: StateKey) -> bool:
    """Whether two state keys differ at most by their running vMotion pairs."""
    return (one.groups, one.gc, one.buffer, one.compress, one.drain) == (
        other.groups,
        other.gc,
        other.buffer,
        other.compress,
        other.drain,
    )


@dataclass
class StateResult:
    """The solution of one state: rates, responses and utilizations, and what the fluid timeline
    reads."""

    rates: Floats  # per op of the network: I/Os per s (0 for ops that are off)
    response: Floats  # per op: mean response (s)
    variance: Floats  # per op: variance of the response (s^2)
    utilization: Floats  # per station, as the simulator reports it
    # per host: write-back bytes/s accepted (VM writes) per host: bytes/s charged to the tier's
    # clean pool (written x gc factor)
    write_back_bytes: list[float]
    tier_write_bytes: list[float]
    # per compression lane: its peer tx port's utilization if replicas were not compressed
    peer_tx_uncompressed: list[float]
    drain: list[float]  # per host: destage capacity with a backlog (bytes/s)
    # per station: the open traffic's offered utilization (above 1 when it overloads the station)
    open_utilization: Floats
    overload: Floats  # per station: open offered utilization above 1 (0 if none)
    overloaded: tuple[int, ...]  # stations with an overload
    vmotion_rate: dict[int, float]  # running vMotion pair -> framed bytes/s it gets
    # 0 if the fixed point settled, else its last pass's largest queue change (relative)
    residual: float = 0.0
    passes: int = 0  # the passes it took when it gave up (0: it settled)
