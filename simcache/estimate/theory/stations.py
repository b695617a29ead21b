"""Station numbering and the steps of an I/O leg.

Every station of a scenario has an index: each host owns ``Layout.per_host``
consecutive slots (the slot constants below, then two per extra peer
port), and the shared stations (the array, its ports, a shared peer fabric)
follow the hosts'. A :class:`Step` is one stop of an I/O's leg at a station, a
transfer over ports, or a delay.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ADMISSION",
    "ADMIT",
    "ALWAYS",
    "ARRAY",
    "ARRAY_RX",
    "ARRAY_TX",
    "COMPRESSED",
    "CONTROLLER",
    "DELAY",
    "FABRIC",
    "FLOW",
    "GC",
    "PAST_CLIFF",
    "PEER_RX",
    "PEER_TX",
    "PER_HOST",
    "PIPE",
    "PIPE_SLOT",
    "QUEUE",
    "SPINDLE",
    "STORAGE_RX",
    "STORAGE_TX",
    "SWITCHES",
    "TIER",
    "Step",
]

# Step kinds of an I/O leg.
DELAY, QUEUE, PIPE, FLOW, SPINDLE = range(5)
# Station slots per host; shared stations follow the hosts'. PEER_TX and PEER_RX are peer port 0's;
# with several peer ports, port k >= 1 has its tx and rx at PER_HOST + 2 (k - 1) and the slot after
# it.
TIER, PIPE_SLOT, GC, ADMIT, PEER_TX, PEER_RX, STORAGE_TX, STORAGE_RX, CONTROLLER = range(9)
PER_HOST = 9  # slots of a host with one peer port (see Layout.per_host)
ARRAY, ARRAY_RX, ARRAY_TX, FABRIC = range(4)
# What part of a state's key switches a step's service (see Step): nothing; the host's tier past its
# GC cliff; the host's destage buffer full (the service is bytes over the drain rate); the host
# compressing the replicas that leave on one of its peer ports (switched per lane: see Layout.lane).
ALWAYS, PAST_CLIFF, ADMISSION, COMPRESSED = range(4)
SWITCHES = 4


@dataclass
class Step:
    """One step of an I/O leg. A state's key may switch its service: see ``switch``."""

    kind: int
    station: int = -1  # QUEUE / PIPE / SPINDLE: station index
    ports: tuple[int, ...] = ()  # FLOW: port station indices
    # s: delay, service at the station, or transfer time alone (with the switch off)
    service: float = 0.0
    scv: float = 0.0
    visits: float = 1.0  # SPINDLE: spindle operations per request (run in parallel)
    # FLOW: per port of ``ports``, flows of the same request that start with it there
    siblings: tuple[float, ...] = ()
    # PAST_CLIFF / ADMISSION: absent (service 0) unless switched on; COMPRESSED: two services the
    # host whose state flips the switch (COMPRESSED: the lane, host and sending port)
    switch: int = ALWAYS
    switch_host: int = 0
    # service with the switch on (ADMISSION: bytes, divided by the state's drain rate)
    switched_service: float = 0.0
