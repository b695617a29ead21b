"""SIGTERM to a pooled sweep's whole process group (what ``timeout``, systemd, ``docker stop`` and
batch schedulers send): the pool's workers ignore it and the sweep stops them itself, so the
rows it finished are written and the command ends as for a SIGTERM to it alone (review 67a F2: a
worker ended by the signal first broke the pool, and the sweep ended in a ``BrokenProcessPool``
traceback with nothing written)."""

from __future__ import annotations

import csv
import re
import signal
from pathlib import Path

from support.signals import interrupt

PROGRESS = re.compile(r"^\s*1/8 runs done")


def test_sigterm_to_the_group_writes_the_finished_rows(tmp_path: Path) -> None:
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(
        'scenario = "default"\nseeds = [1, 2, 3, 4]\n\n[grid]\n'
        '"run.duration" = ["300s"]\n"cluster.peer_link" = ["1GbE", "10GbE"]\n'
    )
    out = tmp_path / "rows.csv"
    argv = ["sweep", str(sweep_file), "--workers", "2", "--out", str(out)]
    code, _, err, seconds = interrupt(
        argv, signal.SIGTERM, lambda line: PROGRESS.search(line) is not None, group=True
    )
    assert code == 143, err
    assert "Traceback" not in err and "BrokenProcessPool" not in err
    assert seconds < 15
    said = re.search(r"interrupted \(SIGTERM\): (\d) of 8 runs finished", err)
    assert said is not None, err[-800:]
    with out.open() as table:
        rows = list(csv.DictReader(table))
    assert 1 <= len(rows) == int(said[1]) < 8
    assert {row["partial"] for row in rows} != {""}
