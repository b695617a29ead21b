"""Real hosts of the default scenario, built bare (no VMs, nothing running): for tests of a
component that keeps hosts as the holders of a write's copies. The compiled engine checks those
holders' type, so a stand-in object would pass from the sources and fail compiled."""

from __future__ import annotations

import numpy as np
import simpy

from simcache.physics.cluster import PortName
from simcache.sim.components.array import Array
from simcache.sim.components.host import Host
from simcache.sim.components.link import FlowNetwork, Port
from simcache.sim.components.randomness import UniformStream
from simcache.spec import load_scenario

DISK = 4 * 1024**3  # one VM's disk on the array (bytes)


def bare_hosts(count: int, seed: int = 1) -> list[Host]:
    """``count`` hosts of the default scenario's cluster on one clock, as
    :func:`simcache.sim.engine.build` makes them, each with its own random stream."""
    scenario = load_scenario("default")
    env = simpy.Environment()
    network = FlowNetwork(env)
    array = Array(
        scenario.array, UniformStream(np.random.SeedSequence(seed, spawn_key=(0,))), [DISK]
    )
    array_rx = Port(PortName(None, "array", None, "rx"), scenario.array.port)
    array_tx = Port(PortName(None, "array", None, "tx"), scenario.array.port)
    return [
        Host(
            env,
            i,
            scenario.cluster,
            UniformStream(np.random.SeedSequence(seed, spawn_key=(1, i))),
            network,
            array,
            array_rx,
            array_tx,
        )
        for i in range(count)
    ]
