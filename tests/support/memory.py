"""What a finished run leaves in memory: the simulator's hosts still alive (a run's model holds one
per host), counted by ``tests/sim/test_run_memory.py`` and ``bench/bench_retained.py``."""

from __future__ import annotations

import gc

from simcache.sim.components.host import Host


def hosts_alive() -> int:
    """The simulator's hosts still in memory, after a garbage collection."""
    gc.collect()
    return sum(isinstance(thing, Host) for thing in gc.get_objects())
