"""A script that calls ``simcache.sweep`` at its top level, without ``if __name__ ==
"__main__":`` (review 66c F3: README's Python block run as a script). Pool workers are spawned and
import the script again; each worker's re-run of the call is refused with one line saying to guard
it, and the parent's ``BrokenProcessPool`` carries a note saying the same."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from support.paths import ROOT

from simcache.runs.workers import refuse_worker_reimport

UNGUARDED = textwrap.dedent(
    """
    import simcache

    scenario = simcache.load_scenario("default")
    table = simcache.sweep(
        scenario, {"cluster.peer_link": ["1GbE", "10GbE"]}, seeds=[1], duration=0.5, workers=2
    )
    print("rows", len(table))
    """
)


def test_an_unguarded_sweep_in_a_script_says_to_guard_it(tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED, "utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    refused = [
        line
        for line in done.stderr.splitlines()
        if line.startswith("simcache.runs.workers.WorkerReimportError: ")
    ]
    assert refused, done.stderr[-3000:]
    assert 'put the call under `if __name__ == "__main__":`' in refused[0]
    assert "workers=1" in refused[0]
    # the workers never got as far as multiprocessing's own bootstrapping error
    assert "An attempt has been made to start a new process" not in done.stderr
    assert "simcache: if a worker failed as it started" in done.stderr  # the parent's note


def test_an_ordinary_process_is_not_refused() -> None:
    refuse_worker_reimport("simcache.sweep")  # no error: not a spawned worker's bootstrap
