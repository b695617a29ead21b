"""A command line stopped by a signal: started in a subprocess, signalled once it has printed a
given line, and read to its end."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

from support.paths import ROOT


def interrupt(
    argv: list[str],
    sig: int,
    ready: Callable[[str], bool],
    settle_s: float = 0.0,
    *,
    group: bool = False,
) -> tuple[int, str, str, float]:
    """Start ``simcache`` with ``argv``, read its stderr until a line for which ``ready`` is true,
    wait ``settle_s`` seconds and send ``sig`` (with ``group``, to its whole process group, as
    ``timeout``, systemd and ``docker stop`` do: its pool workers too); return the exit status,
    stdout, stderr and the seconds from the signal to the exit."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "simcache.cli.main", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
        start_new_session=group,
    )
    assert process.stderr is not None
    lines: list[str] = []
    try:
        while not (lines and ready(lines[-1])):
            line = process.stderr.readline()
            assert line, f"exited before the line to wait for: {''.join(lines)}"
            lines.append(line)
        time.sleep(settle_s)
        if group:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
        sent = time.monotonic()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, out, "".join(lines) + err, time.monotonic() - sent
