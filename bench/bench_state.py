"""Model state per item (issue 35): bytes per buffered (dirty) write block and per cached read line.

Run from the repository root (Python sources, so tracemalloc can name the files that hold the
memory):

    SIMCACHE_PURE_PYTHON=1 .venv/bin/python bench/bench_state.py [--json PATH]

Buffered blocks: a cluster whose VMs only write 4 KiB blocks at random over a large working set,
with a destager that does not start before its high watermark (95% of 64 GiB), so every write stays
buffered. The model runs to ``t1`` and on to ``t2`` under tracemalloc; the memory Python allocated
between the two, per write buffered in between, is the cost of one buffered block (the records the
run collects are taken out of the run's buffer at both times: they have their own figure,
bench_memory.py). ``bytes_per_block`` leaves out the files named in ``LEFT_OUT`` (Python sources:
the records and this script); ``bytes_per_block_all_files`` counts everything, the figure for the
compiled engine, whose allocations tracemalloc charges to the Python frame that called it. Twice:
WB+0 on one host (the block on its host only) and WB+1 on two hosts (also a replica on a peer).
Cached read lines: one host's :class:`ReadCache` taking 200,000 distinct 64 KiB lines (its two
vectors, compact from the first line). Pending writes alone: a destager's :class:`WriteQueue` taking
100,000 4 KiB writes (the buffered block without the cache line and the run around it). The
same for a destager with ``order = "hash"``: WB+0 on one host, and its :class:`HashWalk` alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import machine_facts  # noqa: E402

import simcache  # noqa: E402

WRITER = """
name = "buffered_blocks"
description = "4 KiB random writes into a destage buffer that holds them all (bench_state.py)"
[run]
duration = "10s"
warmup = "0s"
seed = 1
sample_interval = "1s"
[cluster]
hosts = {hosts}
tier = "nvme-micron-9550"
peer_link = "100GbE"
storage_link = "100GbE"
[cluster.destager]
capacity = "64GiB"
trigger = "watermarks"
high_watermark = 0.95
low_watermark = 0.9
order = "{order}"
[array]
profile = "afa-24x-nvme"
[[groups]]
name = "w"
policy = "{policy}"
vms_per_host = 4
[groups.workload]
mode = "open"
iops = 5000
read_fraction = 0.0
sizes = {{ "4KiB" = 1 }}
working_set = "1TiB"
access = "uniform"
"""
# the records, and this measurement itself
LEFT_OUT = ("collect.py", "stream.py", "tracemalloc.py", "bench_state.py")


def _held_writes(model: Any) -> int:
    return int(sum(host.destager.backlog_bytes for host in model.hosts)) // 4096


def buffered_blocks(
    hosts: int, policy: str, t1: float, t2: float, order: str = "arrival"
) -> dict[str, Any]:
    """Bytes Python allocated per write buffered between ``t1`` and ``t2`` (per file, and in
    all), the destager taking its writes in ``order``."""
    from simcache.sim.engine import build
    from simcache.sim.kernel.clock import run_until

    scenario = simcache.Scenario.model_validate(
        __import__("tomllib").loads(WRITER.format(hosts=hosts, policy=policy, order=order))
    )
    tracemalloc.start()
    model = build(scenario, seed=1)
    run_until(model.clock, t1)
    model.record_buffer.take()  # the records so far: not the model's state
    first, held_first = tracemalloc.take_snapshot(), _held_writes(model)
    run_until(model.clock, t2)
    model.record_buffer.take()  # as at t1: what is left is the model's state
    second, held_second = tracemalloc.take_snapshot(), _held_writes(model)
    tracemalloc.stop()
    blocks = held_second - held_first
    by_file: dict[str, int] = {}
    for stat in second.compare_to(first, "filename"):
        name = Path(stat.traceback[0].filename).name
        by_file[name] = by_file.get(name, 0) + stat.size_diff
    counted = {name: size for name, size in by_file.items() if name not in LEFT_OUT}
    top = sorted(counted.items(), key=lambda kv: -kv[1])[:8]
    # the compiled engine's allocations are charged to the Python frame that called it
    total = sum(by_file.values())
    return {
        "hosts": hosts,
        "policy": policy,
        "order": order,
        "t1_s": t1,
        "t2_s": t2,
        "blocks_buffered_between": blocks,
        "backlog_bytes_at_t2": held_second * 4096,
        "bytes_per_block": round(sum(counted.values()) / blocks, 1),
        "bytes_per_block_all_files": round(total / blocks, 1),
        "bytes_per_block_by_file": {name: round(size / blocks, 1) for name, size in top},
    }


def buffered_blocks_rss(
    hosts: int, policy: str, t1: float, t2: float, order: str = "arrival"
) -> dict[str, Any]:
    """As :func:`buffered_blocks`, by resident memory instead of tracemalloc (no tracing
    overhead; it counts the allocator's slack too): the growth of the process's resident set per
    write buffered between ``t1`` and ``t2``."""
    from cases import rss_mib

    from simcache.sim.engine import build
    from simcache.sim.kernel.clock import run_until

    scenario = simcache.Scenario.model_validate(
        __import__("tomllib").loads(WRITER.format(hosts=hosts, policy=policy, order=order))
    )
    model = build(scenario, seed=1)
    run_until(model.clock, t1)
    model.record_buffer.take()
    first, held_first = rss_mib(), _held_writes(model)
    run_until(model.clock, t2)
    model.record_buffer.take()
    second, held_second = rss_mib(), _held_writes(model)
    blocks = held_second - held_first
    return {
        "hosts": hosts,
        "policy": policy,
        "blocks_buffered_between": blocks,
        "rss_bytes_per_block": round((second - first) * 2**20 / blocks, 1),
    }


def cached_lines(lines: int) -> dict[str, Any]:
    """Bytes per line of a read cache holding ``lines`` distinct 64 KiB lines."""
    from simcache.sim.components.cache import ReadCache

    line = 64 * 1024
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache = ReadCache(2 * lines, line)
    for n in range(lines):
        cache.insert(n % 16, (n // 16) * line, line)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert cache.lookup(0, 0, line)
    return {
        "lines": lines,
        "form": "vectors (log and index)",
        "bytes_per_line": round((after - before) / lines, 1),
    }


def pending_writes(writes: int) -> dict[str, Any]:
    """Bytes per write of a destager's pending-write queue holding ``writes`` 4 KiB writes of 16
    VMs, each replicated to one peer (a placeholder object)."""
    from simcache.sim.components.pending import WriteQueue

    peers = (object(),)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    queue = WriteQueue()
    for n in range(writes):
        queue.push((n % 16, n * 4096, 4096, peers, False), n * 1e-6)  # type: ignore[arg-type]
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {"writes": writes, "bytes_per_write": round((after - before) / writes, 1)}


def hash_walk(writes: int) -> dict[str, Any]:
    """Bytes per write of a hash-ordered destager's walk (:class:`HashWalk`, 4 KiB blocks)
    holding ``writes`` 4 KiB writes of 16 VMs, each replicated to one peer (a placeholder
    object)."""
    from simcache.sim.components.hash_walk import HashWalk

    peers = (object(),)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    walk = HashWalk(4096)
    for n in range(writes):
        walk.push((n % 16, n * 4096, 4096, peers, False))  # type: ignore[arg-type]
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {"writes": writes, "bytes_per_write": round((after - before) / writes, 1)}


def buffered_blocks_native_rss(hosts: int, policy: str, t1: float, t2: float) -> dict[str, Any]:
    """As :func:`buffered_blocks_rss`, in the native engine (its destage ring, holders packed,
    and its cache's log and slots; records streamed into histograms, whose size is fixed): the
    growth of the resident set per write buffered between ``t1`` and ``t2``. Left out (None) when
    the native engine is not built."""
    from cases import rss_mib

    from simcache.sim import native_run
    from simcache.sim.engine import build
    from simcache.sim.stream import StreamStats

    scenario = simcache.Scenario.model_validate(
        __import__("tomllib").loads(WRITER.format(hosts=hosts, policy=policy, order="arrival"))
    )
    if native_run.unsupported(scenario) is not None:
        return {"hosts": hosts, "policy": policy, "native": native_run.unsupported(scenario)}
    model = build(scenario, seed=1, native=True)
    names = [group.name for group in scenario.groups]
    model.stream = StreamStats(
        [vm.name for vm in model.vms],
        [vm.group for vm in model.vms],
        names,
        scenario.run.warmup,
        scenario.run.duration,
    )
    model.record_buffer.sink = model.records_sink()
    native_run.run(model, t1)  # each run ends with a full sync: the Python destagers' backlog
    first, held_first = rss_mib(), _held_writes(model)
    native_run.run(model, t2)
    second, held_second = rss_mib(), _held_writes(model)
    blocks = held_second - held_first
    state = model.native.state_bytes()  # the native structures' own allocations
    return {
        "hosts": hosts,
        "policy": policy,
        "native": "run",
        "blocks_buffered_between": blocks,
        # the full sync at each run's end also copies the writes and lines into the Python
        # destagers and caches: this counts those copies too
        "rss_bytes_per_block_with_python_copies": round((second - first) * 2**20 / blocks, 1),
        "state": state,
        "ring_bytes_per_buffered_write": round(
            state["destage_ring_bytes"] / state["buffered_writes"], 1
        ),
        "cache_bytes_per_line": round(state["cache_bytes"] / state["cached_lines"], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    report = {
        "machine": machine_facts(),
        # first: before tracemalloc runs
        "buffered_blocks_rss": [buffered_blocks_rss(1, "WB+0", 0.5, 4.5)],
        "buffered_blocks_native_rss": [
            buffered_blocks_native_rss(1, "WB+0", 0.5, 4.5),
            buffered_blocks_native_rss(2, "WB+1", 0.5, 4.5),
        ],
        "buffered_blocks": [
            buffered_blocks(1, "WB+0", 0.5, 2.5),
            buffered_blocks(2, "WB+1", 0.5, 2.0),
            buffered_blocks(1, "WB+0", 0.5, 1.5, order="hash"),
        ],
        "cached_lines": [cached_lines(200_000)],
        "pending_writes": [pending_writes(100_000)],
        "hash_walk": [hash_walk(100_000)],
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
