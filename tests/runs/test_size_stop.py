"""Stopping ``simcache size``: Ctrl-C and SIGTERM keep what was judged, print and write (``-o``) it
marked partial with how many configurations were judged of how many, and exit 130 or 143.

The signal tests start the command line in a subprocess, send the signal after its first progress
line and read what it printed and wrote; the bound on the time to exit is generous (not a timing
benchmark).
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
from contextlib import closing
from html import escape
from pathlib import Path

import pytest
from support.builders import small_scenario
from support.cli import call
from support.signals import interrupt

import simcache
from simcache.cli import size as size_cli
from simcache.runs.sizing.answer import Candidate, SizeAnswer
from simcache.runs.sizing.costs import Cost, CostPart
from simcache.runs.targets import parse_target
from simcache.spec.dump import toml_document

TIERS = "cluster.tier = ['sata-ssd-s3700-field', 'nvme-p3700-field']"
LINKS = "cluster.peer_link = ['1GbE', '10GbE']"
PROGRESS = re.compile(r"\d+/\d+ runs done")
"""The search's progress lines on a piped stderr."""


def _scenario_file(tmp_path: Path) -> Path:
    """Two hosts, one VM each writing 1,500 64 KiB writes a second: a search over ``LINKS`` and
    ``TIERS`` has one configuration that meets a 1 ms write p99."""
    data = small_scenario(
        workload={"mode": "open", "iops": 1500, "read_fraction": 0.0, "sizes": {"64KiB": 1.0}},
        array="array-24x15k",
        run={"duration": "1.5s", "warmup": "0.3s", "sample_interval": "0.1s"},
    )
    path = tmp_path / "quick.toml"
    document = toml_document(simcache.load_scenario(data).model_dump(mode="json"), [])
    path.write_text(document, "utf-8")
    return path


def _size_args(scenario: Path, *extra: str) -> list[str]:
    return [
        "size",
        str(scenario),
        "--target",
        "write p99 <= 1ms",
        "--vary",
        LINKS,
        "--vary",
        TIERS,
        "--seeds",
        "2",
        "--workers",
        "1",
        "--no-prune",
        *extra,
    ]


@pytest.mark.parametrize(
    ("sig", "status", "name", "store"),
    [(signal.SIGTERM, 143, "SIGTERM", False), (signal.SIGINT, 130, "SIGINT", True)],
)
def test_a_signal_stops_the_search_and_keeps_its_partial_answer(
    tmp_path: Path, sig: int, status: int, name: str, store: bool
) -> None:
    """Runs of 30 simulated seconds: the signal lands while the first configuration's seeds run,
    so the answer covers fewer than the four configurations."""
    page = tmp_path / "size.html"
    kept = tmp_path / "size.sqlite"
    extra = ["--duration", "30s", "-o", str(page), *(["--store", str(kept)] if store else [])]
    argv = _size_args(_scenario_file(tmp_path), *extra)
    code, out, err, seconds = interrupt(argv, sig, lambda line: PROGRESS.search(line) is not None)
    assert code == status, err
    assert "Traceback" not in err
    assert seconds < 10
    partial = re.search(
        rf"the search was stopped \({name}\) with (\d) of 4 configurations judged \((\d) "
        r"simulated, 0 pruned\); (\d) not reached; no answer was confirmed before the stop",
        out,
    )
    assert partial is not None, out
    judged, simulated, unreached = map(int, partial.groups())
    assert judged == simulated and judged + unreached == 4 and unreached >= 1
    lines = out.splitlines()
    assert lines[0].endswith(f", {unreached} not reached (the search was stopped)"), lines[0]
    assert lines[1] == f"PARTIAL ANSWER: {partial[0]}"
    assert lines[2] == "best: none confirmed before the stop"
    assert out.count(f"not simulated: the search stopped first ({name})") == unreached
    assert f"partial report written to {page}" in out
    assert err.endswith(f"interrupted: {partial[0]}.\n" + _kept(store, kept)), err[-600:]
    html = page.read_text("utf-8")
    assert "<title>simcache size: partial answer</title>" in html
    assert f"<p id='partial' class='unknown'><b>Partial answer:</b> {partial[0]}.</p>" in html
    assert "No answer was confirmed before the stop." in html
    if store:
        with closing(sqlite3.connect(kept)) as db:
            assert int(db.execute("SELECT COUNT(*) FROM rows").fetchone()[0]) >= 1


def _kept(store: bool, path: Path) -> str:
    if store:
        return f"the finished runs are kept in {path}: run the same command again to resume\n"
    return "none of its runs were kept (no --store); give --store PATH to resume after a stop\n"


def test_a_stop_while_the_reports_run_is_simulated_leaves_the_run_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search ends, then SIGTERM arrives during the answer's own run for ``-o``: the answer is
    whole (printed as such), the page leaves that run out saying why, and the exit status is 143."""
    real = size_cli.simulate

    def terminated(*args: object, **kwargs: object) -> simcache.Result:
        os.kill(os.getpid(), signal.SIGTERM)  # caught by the command's handler: cancels its token
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(size_cli, "simulate", terminated)
    page = tmp_path / "size.html"
    code, out, err = call(_size_args(_scenario_file(tmp_path), "-o", str(page)))
    assert code == 143, err
    assert "PARTIAL" not in out and out.startswith("4 configurations: 1 meet, 3 miss")
    assert "best: cluster.peer_link=10GbE, cluster.tier=nvme-p3700-field" in out
    assert err.endswith(
        "interrupted (SIGTERM): the report leaves out the answer's run; the answer is complete\n"
    )
    html = page.read_text("utf-8")
    said = "The answer's run is not included: it was stopped (SIGTERM) before its end."
    assert f"<p>{escape(said)}" in html
    assert "Run manifest" not in html and "partial answer" not in html


def _candidate(index: int, cost: float, verdict: str) -> Candidate:
    candidate = Candidate(
        index, {"cluster.hosts": index + 2}, Cost((CostPart("host", 1, cost),), "USD")
    )
    candidate.verdict = verdict  # type: ignore[assignment]
    return candidate


def test_a_partial_answer_says_whether_a_configuration_left_out_could_be_cheaper() -> None:
    """A stop leaves the answer's standing to the configurations not reached: those that cost no
    more than it could still meet every target."""
    cands = [
        _candidate(0, 100.0, "misses"),
        _candidate(1, 200.0, "meets"),
        _candidate(2, 200.0, "skipped"),
        _candidate(3, 300.0, "skipped"),
    ]
    answer = SizeAnswer(
        cands, [parse_target("write p99 <= 1ms")], best=1, stopped="SIGTERM", not_reached=[3]
    )
    assert answer.partial_note() == (
        "the search was stopped (SIGTERM) with 2 of 4 configurations judged (2 simulated, 0 "
        "pruned); 1 not reached, none of them cheaper than the answer"
    )
    answer.best, answer.not_reached = 2, [1, 3]  # as if 1 (equal cost, earlier) were not reached
    cands[1].verdict, cands[2].verdict = "skipped", "meets"
    assert answer.partial_note().endswith(
        "; 2 not reached, 1 of them costing no more than the answer: one of those may be the "
        "answer instead"
    )
    assert answer.counts()["skipped"] == 0 and answer.counts()["not reached"] == 2
    assert answer.to_json()["partial"] == {"stopped": "SIGTERM", "why": answer.partial_note()}
