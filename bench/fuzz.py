"""Fuzzing scenario files: N mutated scenarios through load, estimate and a short simulate, and what
came of each.

Run from the repository root:

    .venv/bin/python bench/fuzz.py [--cases 100000] [--seed 1] [--workers 2] [--time-limit 5]
    [--wall-factor 4] [--memory 3GiB]
                                   [--out DIR] [--minutes M] [--engines] [--valid-settings]

The cases are the suite's (``tests/scenarios/test_fuzz_scenarios.py``): ``fuzzed_scenario_files`` in
``tests/support/strategies.py`` mutates valid scenarios (generated ones and the library's) at
random: types, units, signs, magnitudes, NaN and infinity, nesting, names, deleted and unknown
fields, and the file's bytes; ``run_case`` in ``tests/support/scenario_fuzz.py`` writes each to a
file, loads it by its path, estimates it and simulates it for 0.3 simulated seconds. Hypothesis
draws them in chunks of ``--chunk`` cases, chunk ``k`` from seed ``(seed, k)``: the same seed and
hypothesis version give the same cases.

Isolation: each of ``--workers`` processes runs one case at a time under a time limit
(``--time-limit`` seconds of CPU time, SIGPROF, and four times that of wall time, SIGALRM) and a
memory limit (``RLIMIT_AS`` lowered to what the worker holds plus ``--memory`` for the case). A
worker that does not answer within its wall-time limit plus 30 s (a hang in C code, where no signal
handler runs) is killed, as is one that dies (a segfault, the kernel's OOM killer); either is a
finding with the file the worker was on, and a new worker takes its place.

Outcomes: ``valid`` (every step answered), ``project error`` (``ScenarioError``, message in the
user's words) or ``finding`` (anything else), counted by class. The report (``report.md`` and
``report.json`` in ``--out``, rewritten every 30 s and at the end, also on Ctrl-C / SIGTERM) has the
machine facts, the rate, the counts, and one reproducer per finding class (its mutations, the file's
head, the traceback tail); ``--out`` also keeps each class's first file in full
(``finding-NN.toml``). ``--minutes`` stops early (the report says how many cases ran).

``--engines``: a valid case the native engine ran is run again by both engines and the two runs
compared bit for bit (``support.scenario_fuzz``): a difference is a finding; the valid cases are
counted as ``valid: engines agree`` or ``valid: engines not compared`` (no time left, a run past
the work limits or stopped at its deadline). The comparison's runs last 2 simulated seconds (the
scenario's duration if shorter), longer than the short run: what one engine leaves in a cache must
be read again for the records to show it.

``--valid-settings``: the cases are mutated by valid settings only (``VALID_SETTINGS`` in
``tests/support/strategies.py``: a read cache and its line, stripe, RAID level, scheduling, the
tier's read and write channel rates, the host cache, destage batch and concurrency, sample
interval, I/O sizes, asynchronous replicas) and never corrupted, so that most stay valid: with
``--engines``, several times the comparisons a minute of the default mix. The default mix draws
the same settings among its mutations, so a later one (sign, unit, magnitude, NaN) may corrupt
what they set.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(ROOT))  # run from a source tree even without `pip install -e .`

# isort: split
from machine import load_average, machine_facts  # noqa: E402

# default of --wall-factor, as tests/support/scenario_fuzz.py: the wall-time limit over the CPU-time
# limit
WALL_FACTOR = 4.0

REPORT_EVERY_S = 30.0
STACK_WAIT_S = 1.0  # time a hung worker gets to write its stack before it is killed
STACK_LINES = 25  # frames of a hung worker's stack kept in its finding's detail
# bytes of a finding's file sent back to the parent (the full file stays in the worker's folder)
TEXT_SENT = 65_536


# -- the worker -----------------------------------------------------------------------------------


def _worker(
    number: int,
    seed: int,
    chunk_size: int,
    seconds: float,
    wall_factor: float,
    memory: int,
    folder: str,
    engines: bool,
    settings_only: bool,
    conn: Any,
) -> None:
    """Run the chunks the parent sends (one id at a time, ``None`` to stop); send one message per
    case."""
    import warnings

    # hypothesis's own notes; run_case records the code's warnings itself
    warnings.simplefilter("ignore")
    sys.path.insert(0, str(TESTS))
    sys.path.insert(0, str(ROOT))
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from support.scenario_fuzz import run_case
    from support.strategies import FuzzCase, fuzzed_scenario_files

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers
    work = Path(folder) / f"worker{number}"
    work.mkdir(parents=True, exist_ok=True)
    # A worker that stops answering is asked for its Python stack before it is killed (SIGUSR1), so
    # a hang says where it was, in simcache's code or in the harness's own case generation.
    faulthandler.register(signal.SIGUSR1, file=(work / "stack.txt").open("w"), all_threads=True)
    path = work / "scenario.toml"
    # One library scenario first, outside the count: the lazy imports a result's first summary and
    # tables make (scipy.stats, pyarrow: seconds on a busy machine) are the worker's, not the first
    # case's to pay.
    run_case((ROOT / "scenarios" / "default.toml").read_bytes(), path, 120.0, None)
    while (chunk := conn.recv()) is not None:
        index = 0

        @settings(
            max_examples=chunk_size,
            database=None,
            phases=[Phase.generate],
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @hypothesis_seed(seed * 1_000_003 + chunk)
        @given(fuzzed_scenario_files(settings_only))
        def one(case: FuzzCase) -> None:
            nonlocal index
            state = {
                "chunk": chunk,
                "index": index,
                "mutations": case.mutations,
                "phase": "running",
            }
            (work / "case.json").write_text(json.dumps(state))
            try:
                outcome = run_case(
                    case.text, path, seconds, memory, wall_factor=wall_factor, engines=engines
                )._asdict()
            except BaseException as exc:  # the harness's own failure must not stop the chunk
                outcome = {
                    "kind": "finding",
                    "label": f"harness: {type(exc).__name__}",
                    "stage": "harness",
                    "detail": repr(exc)[:2000],
                }
            text = case.text[:TEXT_SENT] if outcome["kind"] == "finding" else b""
            # before the message: the parent keeps this file as the class's reproducer
            if outcome["kind"] == "finding":
                (work / "last-finding.toml").write_bytes(case.text)
            conn.send(
                {
                    "chunk": chunk,
                    "index": index,
                    "outcome": outcome,
                    "mutations": case.mutations,
                    "text": text,
                    "size": len(case.text),
                }
            )
            # Until the next case starts, the worker is in hypothesis's generation (not under the
            # case's limits).
            (work / "case.json").write_text(
                json.dumps({**state, "index": index + 1, "phase": "generating"})
            )
            index += 1

        one()
        conn.send({"chunk": chunk, "done": index})


# -- the parent -----------------------------------------------------------------------------------


@dataclass
class Tally:
    """Counts by outcome and class, and the first case of each finding class."""

    started: float = field(default_factory=time.perf_counter)
    cases: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    first: dict[str, dict[str, Any]] = field(default_factory=dict)
    chunks_cut: int = 0

    def add(
        self,
        outcome: dict[str, Any],
        mutations: list[str],
        text: bytes,
        size: int,
        where: str,
        out: Path,
        full: Path | None,
    ) -> None:
        self.cases += 1
        self.kinds[outcome["kind"]] += 1
        self.labels[outcome["label"]] += 1
        if outcome["kind"] == "finding" and outcome["label"] not in self.first:
            number = len(self.first) + 1
            kept = out / f"finding-{number:02d}.toml"
            if full is not None and full.exists():
                kept.write_bytes(full.read_bytes())
            else:
                kept.write_bytes(text)
            self.first[outcome["label"]] = {
                **outcome,
                "mutations": mutations,
                "head": text[:1500].decode("utf-8", "backslashreplace"),
                "size": size,
                "case": where,
                "file": kept.name,
            }


def _stack_of(work: Path, died: bool) -> str:
    """The innermost frames of a hung worker's stack dump (its first thread's), or nothing for a
    worker that died."""
    dump = work / "stack.txt"
    if died or not dump.exists():
        return ""
    lines = dump.read_text(errors="replace").splitlines()
    first = lines[
        : next((i for i, line in enumerate(lines[1:], 1) if not line.startswith("  ")), len(lines))
    ]
    return "\n\nits stack when it was stopped (innermost first):\n" + "\n".join(first[:STACK_LINES])


def _spawn(
    context: Any, number: int, args: argparse.Namespace, memory: int, out: Path
) -> tuple[Any, Any]:
    parent, child = context.Pipe()
    settings = (
        args.seed,
        args.chunk,
        args.time_limit,
        args.wall_factor,
        memory,
        str(out / "work"),
        args.engines,
        args.valid_settings,
    )
    process = context.Process(target=_worker, args=(number, *settings, child), daemon=True)
    process.start()
    child.close()
    return process, parent


def parse_bytes(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text.strip(), re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 3GiB)")
    return int(float(match[1]) * 1024 ** "_KMGT".index(match[2].upper() or "_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000, help="cases to run (default 100,000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the case sequence (default 1)")
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes (default: the CPUs)",
    )
    parser.add_argument(
        "--chunk", type=int, default=500, help="cases per hypothesis run in a worker (default 500)"
    )
    parser.add_argument(
        "--time-limit", type=float, default=5.0, help="CPU seconds per case (default 5)"
    )
    parser.add_argument(
        "--wall-factor",
        type=float,
        default=WALL_FACTOR,
        help=(
            "wall-time limit as a multiple of the CPU-time limit (default 4; raise it on a "
            "machine shared with other work)"
        ),
    )
    parser.add_argument(
        "--memory",
        type=parse_bytes,
        default=parse_bytes("3GiB"),
        help="address space a case may add (default 3GiB)",
    )
    parser.add_argument(
        "--engines",
        action="store_true",
        help=(
            "also run each valid case the native engine ran by both engines and compare the runs "
            "bit for bit (a difference is a finding)"
        ),
    )
    parser.add_argument(
        "--valid-settings",
        action="store_true",
        help="mutate by valid settings only, never corrupt: most cases stay valid",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="stop after this many minutes even if fewer cases ran",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("/tmp/simcache-fuzz"),
        help="folder for report.md, report.json and reproducers",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    facts = {**machine_facts(), "load_average_before": load_average()}
    context = multiprocessing.get_context("spawn")
    workers = [_spawn(context, n, args, args.memory, out) for n in range(args.workers)]
    heard = [time.monotonic()] * args.workers
    next_chunk = 0
    for _, conn in workers:
        conn.send(next_chunk)
        next_chunk += 1
    tally = Tally()
    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
    hard_limit = args.time_limit * args.wall_factor + 30
    last_report = time.monotonic()
    while (
        tally.cases < args.cases
        and not stopping
        and (deadline is None or time.monotonic() < deadline)
    ):
        ready = multiprocessing.connection.wait([conn for _, conn in workers], timeout=1.0)
        now = time.monotonic()
        for number, (process, conn) in enumerate(workers):
            if conn in ready:
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    continue  # it died: found below
                heard[number] = now
                if "done" in message:
                    conn.send(next_chunk)
                    next_chunk += 1
                else:
                    where = f"seed {args.seed} chunk {message['chunk']} case {message['index']}"
                    # written before the message
                    full = out / "work" / f"worker{number}" / "last-finding.toml"
                    tally.add(
                        message["outcome"],
                        message["mutations"],
                        message["text"],
                        message["size"],
                        where,
                        out,
                        full,
                    )
            died = not process.is_alive()
            if died or now - heard[number] > hard_limit:
                if not died:
                    os.kill(process.pid, signal.SIGUSR1)  # its stack, into its stack.txt
                    time.sleep(STACK_WAIT_S)
                    process.kill()
                process.join()
                work = out / "work" / f"worker{number}"
                case: dict[str, Any] = (
                    json.loads((work / "case.json").read_text())
                    if (work / "case.json").exists()
                    else {"mutations": [], "chunk": "?", "index": "?"}
                )
                text = (
                    (work / "scenario.toml").read_bytes()
                    if (work / "scenario.toml").exists()
                    else b""
                )
                label = (
                    f"worker died (exit code {process.exitcode})"
                    if died
                    else f"no answer within {hard_limit:g} s (the time limit did not stop it)"
                )
                # the harness's own time, not simcache's: the file is the case before
                if case.get("phase") == "generating":
                    label = f"harness: {label} while generating the next case"
                outcome = {
                    "kind": "finding",
                    "label": label,
                    "stage": "?",
                    "detail": label + _stack_of(work, died),
                }
                tally.add(
                    outcome,
                    case["mutations"],
                    text,
                    len(text),
                    f"seed {args.seed} chunk {case['chunk']} case {case['index']}",
                    out,
                    work / "scenario.toml",
                )
                tally.chunks_cut += 1
                workers[number] = _spawn(context, number, args, args.memory, out)
                heard[number] = time.monotonic()
                workers[number][1].send(next_chunk)
                next_chunk += 1
        if now - last_report > REPORT_EVERY_S:
            last_report = now
            write_report(out, tally, args, facts, finished=False)
            elapsed = time.perf_counter() - tally.started
            print(
                f"{tally.cases:,} cases in {elapsed:,.0f} s ({tally.cases / elapsed:.1f}/s): "
                f"{dict(tally.kinds)}",
                flush=True,
            )
    for process, _ in workers:
        process.kill()
        process.join()
    facts["load_average_after"] = load_average()
    write_report(out, tally, args, facts, finished=True)
    print((out / "report.md").read_text())
    return 0


def write_report(
    out: Path, tally: Tally, args: argparse.Namespace, facts: dict[str, Any], finished: bool
) -> None:
    """``report.json`` (every number) and ``report.md`` (the table for bench/README.md and one
    reproducer per finding class)."""
    elapsed = time.perf_counter() - tally.started
    rate = tally.cases / elapsed if elapsed > 0 else 0.0
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    data = {
        "machine": facts,
        "settings": settings,
        "finished": finished,
        "cases": tally.cases,
        "wall_s": round(elapsed, 1),
        "cases_per_s": round(rate, 2),
        "chunks_cut": tally.chunks_cut,
        "kinds": dict(tally.kinds),
        "labels": dict(tally.labels),
        "findings": tally.first,
    }
    (out / "report.json").write_text(json.dumps(data, indent=2) + "\n")
    lines = [
        f"Fuzzing scenario files: {tally.cases:,} of {args.cases:,} "
        f"cases{'' if finished else ' so far'}, seed {args.seed}, "
        f"{args.workers} workers, {elapsed:,.0f} s wall, {rate:.1f} cases/s; time limit "
        f"{args.time_limit:g} s of CPU time "
        f"({args.time_limit * args.wall_factor:g} s wall) and "
        f"{args.memory / 2**30:g} GiB per case"
        f"{'; the engines compared (--engines)' if args.engines else ''}"
        f"{'; valid settings only (--valid-settings)' if args.valid_settings else ''}; "
        f"commit {facts['git_commit']}, "
        f"{facts['cpu_model']}, {facts['cpus']} vCPUs, "
        f"Python {facts['python']}, engine {facts['simcache_engine']}, load average "
        f"{facts['load_average_before']}.",
        "",
        "| outcome | class | cases | share |",
        "|---|---|---:|---:|",
    ]
    order = {"valid": 0, "project error": 1, "finding": 2}
    kind_of = {
        label: (case["kind"] if label in tally.first else None)
        for label, case in tally.first.items()
    }
    for label, count in sorted(
        tally.labels.items(), key=lambda item: (order.get(_kind(item[0], kind_of), 3), -item[1])
    ):
        cell = label.replace("|", "\\|")
        lines.append(
            f"| {_kind(label, kind_of)} | {cell} | {count:,} | {count / max(tally.cases, 1):.2%} |"
        )
    lines += ["", "## One reproducer per finding class", ""]
    for label, case in tally.first.items():
        steps = "\n".join(f"- {m}" for m in case["mutations"])
        lines += [
            f"### {label}",
            "",
            f"{tally.labels[label]:,} cases; first: {case['case']} ({case['size']:,} bytes, kept "
            f"as `{case['file']}`)",
            "",
            steps,
            "",
            "```toml",
            case["head"][:1500],
            "```",
            "",
            "```",
            case["detail"],
            "```",
            "",
        ]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def _kind(label: str, kind_of: dict[str, str | None]) -> str:
    # "valid: stopped at its deadline" is a partial result, marked
    if label == "valid" or label.startswith("valid:"):
        return "valid"
    return kind_of.get(label) or "project error"


if __name__ == "__main__":
    sys.exit(main())
