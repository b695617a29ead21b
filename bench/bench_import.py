"""Import and replay benchmark: trace files parsed per second, and a replayed trace's I/Os per
second.

Run from the repository root:

    .venv/bin/python bench/bench_import.py [--lines N] [--replay-ios N] [--formats F,...]
        [--engines E,...] [--json PATH]

For each trace format it writes a synthetic trace of ``--lines`` I/Os (one
device, Poisson arrivals at 2,000 I/Os per second, 60% reads, 4-64 KiB, over
8 GiB), imports it into an empty trace cache (cold: parse and write the
columnar rows) and again (warm: the content hash and a cache hit), and reports
MB/s and I/Os per second of the cold import. Then it replays the MSR trace's
first ``--replay-ios`` I/Os (open loop, WB+1, on the default cluster) in a
fresh process per engine (``--engines``: the native engine, then the Python
one) and reports replayed I/Os per wall-clock second as a ratio to a
plain SimPy M/M/1 run in that process (``bench_engine.mm1``), with that
process's peak resident memory (the trace writer's lists are not in it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a source tree even without `pip install -e .`

from bench_engine import mm1  # noqa: E402
from machine import machine_facts  # noqa: E402

import simcache  # noqa: E402
from simcache.workloads.ingest.imported import import_workload  # noqa: E402

# 100 ns ticks from 1601-01-01 to 2007-02-22 (the MSR traces' week)
FILETIME_2007 = 128_166_372_000_000_000


def _columns(lines: int, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "time": np.cumsum(rng.exponential(1 / 2000.0, lines)),
        "write": rng.random(lines) >= 0.6,
        "offset": rng.integers(0, 2 * 1024**2, lines) * 4096,
        "size": rng.choice([4096, 8192, 16384, 65536], lines, p=[0.5, 0.25, 0.15, 0.1]),
        "latency": rng.exponential(0.002, lines),
    }


def write_msr(path: Path, c: dict[str, np.ndarray]) -> None:
    ticks = FILETIME_2007 + np.round(c["time"] * 1e7).astype(np.int64)
    kind = np.where(c["write"], "Write", "Read")
    response = np.round(c["latency"] * 1e7).astype(np.int64)
    with path.open("w") as out:
        for t, k, o, s, r in zip(
            ticks.tolist(),
            kind.tolist(),
            c["offset"].tolist(),
            c["size"].tolist(),
            response.tolist(),
            strict=True,
        ):
            out.write(f"{t},usr,0,{k},{o},{s},{r}\n")


def write_csv(path: Path, c: dict[str, np.ndarray]) -> None:
    kind = np.where(c["write"], "write", "read")
    with path.open("w") as out:
        out.write("time,op,offset,size\n")
        for t, k, o, s in zip(
            c["time"].tolist(), kind.tolist(), c["offset"].tolist(), c["size"].tolist(), strict=True
        ):
            out.write(f"{t:.9f},{k},{o},{s}\n")


def write_blkparse(path: Path, c: dict[str, np.ndarray]) -> None:
    rwbs = np.where(c["write"], "W", "R")
    sectors = c["offset"] // 512
    count = c["size"] // 512
    with path.open("w") as out:
        for i, (t, k, sec, n, lat) in enumerate(
            zip(
                c["time"].tolist(),
                rwbs.tolist(),
                sectors.tolist(),
                count.tolist(),
                c["latency"].tolist(),
                strict=True,
            )
        ):
            out.write(f"  8,0    0 {2 * i + 1:8d} {t:14.9f}  4162  D  {k} {sec} + {n} [fio]\n")
            out.write(f"  8,0    0 {2 * i + 2:8d} {t + lat:14.9f}     0  C  {k} {sec} + {n} [0]\n")


def write_iolog(path: Path, c: dict[str, np.ndarray]) -> None:
    kind = np.where(c["write"], "write", "read")
    with path.open("w") as out:
        out.write("fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n")
        for t, k, o, s in zip(
            np.round(c["time"] * 1000).astype(np.int64).tolist(),
            kind.tolist(),
            c["offset"].tolist(),
            c["size"].tolist(),
            strict=True,
        ):
            out.write(f"{t} /dev/sdb {k} {o} {s}\n")
        out.write(f"{int(c['time'][-1] * 1000)} /dev/sdb close\n")


WRITERS: dict[str, tuple[str, Callable[[Path, dict[str, np.ndarray]], None]]] = {
    "msr": (".csv", write_msr),
    "csv": (".csv", write_csv),
    "blkparse": (".txt", write_blkparse),
    "fio-iolog": (".log", write_iolog),
}


def bench_import(
    folder: Path, lines: int, formats: list[str]
) -> tuple[dict[str, dict[str, float]], Path]:
    columns = _columns(lines)
    rows: dict[str, dict[str, float]] = {}
    msr_path = folder / "msr.csv"
    for name, (suffix, writer) in WRITERS.items():
        if name not in formats:
            continue
        path = folder / f"{name}{suffix}"
        writer(path, columns)
        megabytes = path.stat().st_size / 1e6
        os.environ["SIMCACHE_CACHE"] = str(folder / f"cache-{name}")
        try:
            started = time.perf_counter()
            imported = import_workload(path, name)
            cold = time.perf_counter() - started
            started = time.perf_counter()
            import_workload(path, name)
            warm = time.perf_counter() - started
        except (ImportError, ModuleNotFoundError, KeyError) as exc:  # a format not built yet
            print(f"{name:10s} skipped: {exc}")
            continue
        assert imported.trace is not None and imported.trace.count >= lines, (name, imported.trace)
        rows[name] = {
            "MB": megabytes,
            "cold_s": cold,
            "MB_per_s": megabytes / cold,
            "ios_per_s": lines / cold,
            "warm_s": warm,
        }
        speed = f"{megabytes / cold:6.1f} MB/s, {lines / cold:9,.0f} I/Os/s"
        print(f"{name:10s} {megabytes:8.1f} MB  cold {cold:6.2f} s = {speed}   warm {warm:5.2f} s")
        if name == "msr":
            msr_path = path
    os.environ["SIMCACHE_CACHE"] = str(folder / "cache-msr")
    return rows, msr_path


def bench_replay(trace: Path, ios: int, engine: str = "native") -> dict[str, Any]:
    """Replay in a fresh process (``--replay-only``), so its peak memory is the replay's, not the
    trace writer's; ``engine``: ``native`` (where it is built), ``python``
    (``SIMCACHE_NATIVE_ENGINE=0``: compiled where the install compiled it) or ``sources`` (the
    Python engine from its sources, ``SIMCACHE_PURE_PYTHON=1``)."""
    command = [sys.executable, __file__, "--replay-only", str(trace), "--replay-ios", str(ios)]
    env = os.environ.copy()
    env["SIMCACHE_NATIVE_ENGINE"] = "1" if engine == "native" else "0"
    if engine == "sources":  # the Python engine from its sources, as a default install runs it
        env["SIMCACHE_PURE_PYTHON"] = "1"
    finished = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    numbers: dict[str, Any] = json.loads(finished.stdout.strip().splitlines()[-1])
    print(
        f"replay ({engine}) {numbers['ios']:,.0f} I/Os in {numbers['wall_s']:.2f} s = "
        f"{numbers['ios_per_s']:,.0f} I/Os/s; "
        f"M/M/1 {numbers['mm1_per_s']:,.0f}/s; ratio {numbers['ratio']:.3f}; peak RSS "
        f"{numbers['peak_rss_mib']:,.0f} MiB "
        f"(of which before the run {numbers['rss_before_mib']:,.0f} MiB); run by: "
        f"{numbers['run_by']}"
    )
    return numbers


def peak_rss_mib() -> float:
    """This process's peak resident memory: ``VmHWM`` (reset by exec, unlike ``ru_maxrss``, which
    a child started from a large parent inherits)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def replay_only(trace: Path, ios: int) -> dict[str, Any]:
    """The replay measurement itself (run by :func:`bench_replay` in its own process; the trace
    is cached already)."""
    imported = import_workload(trace, "msr")
    assert imported.trace is not None
    duration = float(imported.trace.rows["time"][min(ios, imported.trace.count) - 1])
    data = imported.scenario_data(policy="WB+1")
    data["run"] = {
        "duration": duration,
        "warmup": duration / 10,
        "sample_interval": max(duration / 100, 0.01),
    }
    scenario = simcache.load_scenario(data)
    baseline = mm1(200_000)
    rss_before = peak_rss_mib()
    started = time.perf_counter()
    result = simcache.simulate(scenario)
    wall = time.perf_counter() - started
    done = len(result.records)
    baseline_after = mm1(200_000)
    mm1_rate = (baseline["customers_per_s"] + baseline_after["customers_per_s"]) / 2
    peak = peak_rss_mib()
    return {
        "rss_before_mib": rss_before,
        "ios": done,
        "wall_s": wall,
        "ios_per_s": done / wall,
        "mm1_per_s": mm1_rate,
        "ratio": done / wall / mm1_rate,
        "peak_rss_mib": peak,
        "run_by": result.meta["run_by"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lines", type=int, default=1_000_000, help="I/Os per generated trace (default 1,000,000)"
    )
    parser.add_argument(
        "--replay-ios", type=int, default=200_000, help="I/Os replayed (default 200,000)"
    )
    parser.add_argument(
        "--formats",
        default=",".join(WRITERS),
        help=f"formats to import (default {','.join(WRITERS)}; msr is replayed)",
    )
    parser.add_argument(
        "--engines",
        default="native,python",
        help="engines to replay in, each in its own process, of native, python (compiled where "
        "the install compiled it) and sources (the Python engine's sources; default native,python)",
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--replay-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replay_only is not None:
        print(json.dumps(replay_only(args.replay_only, args.replay_ios)))
        return
    facts = machine_facts()
    print(json.dumps(facts))
    with tempfile.TemporaryDirectory(prefix="simcache-bench-import-") as tmp:
        imports, msr = bench_import(Path(tmp), args.lines, args.formats.split(","))
        replay = {
            engine: bench_replay(msr, args.replay_ios, engine) for engine in args.engines.split(",")
        }
    if {"native", "python"} <= replay.keys():
        print(
            "replay: the native engine over the Python engine, I/Os per wall second: "
            f"{replay['native']['ios_per_s'] / replay['python']['ios_per_s']:.2f}x"
        )
    report: dict[str, Any] = {"machine": facts, "import": imports, "replay": replay}
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
