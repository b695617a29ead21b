"""``simcache size`` shows the analytic estimate's overload beside the verdict of a configuration it
simulated (review 67a F1: the estimate said "NOT STABLE ... offered 107% of its capacity" and
size's JSON had only ``null`` for its figures): in the text, the JSON (``estimate_overload``) and
the page. It is a warning: the verdict stays the runs' own (docs/sizing.md, "The answer")."""

from __future__ import annotations

import re
from html import escape

from support.builders import small_scenario

import simcache
from simcache.estimate import estimate
from simcache.report.size_report import size_section
from simcache.runs.size import overload_words, size
from simcache.runs.sizing.answer import Candidate, SizeAnswer
from simcache.runs.sizing.costs import Cost, CostPart
from simcache.runs.targets import Verdict, parse_target

TARGET = "write p99 <= 5ms"


def _peer_bound(peer_link: str = "1GbE") -> simcache.Scenario:
    """Two hosts, one WB+1 VM each writing 2,100 64 KiB writes a second: 138 MB/s of replicas,
    over a 1GbE peer port's 125 MB/s (the estimate: offered 116% of its capacity), well within
    10GbE's."""
    return simcache.load_scenario(
        small_scenario(
            workload={"mode": "open", "iops": 2100, "read_fraction": 0.0, "sizes": {"64KiB": 1.0}},
            array="array-24x15k",
            cluster={"peer_link": peer_link},
            run={"duration": "1s", "warmup": "0.2s", "sample_interval": "0.1s"},
        )
    )


def test_the_overload_is_worded_as_simcache_estimate_words_it() -> None:
    overloaded = estimate(_peer_bound())
    assert not overloaded.stable
    named = overloaded.named_bottleneck()
    words = overload_words(overloaded)
    # the bottleneck line of `simcache estimate` without its "bottleneck: ... is overloaded, "
    assert words == f"{named.name} {named.load_words()}; also overloaded: {named.also_words()}"
    assert re.fullmatch(
        r"host0\.peer\.tx offered 1\d\d% of its capacity; also overloaded: .+", words
    )
    assert overload_words(estimate(_peer_bound("10GbE"))) == ""


def test_a_simulated_configuration_shows_its_estimates_overload_in_text_json_and_page() -> None:
    answer = size(
        _peer_bound(),
        [TARGET],
        ["cluster.peer_link = ['1GbE', '10GbE']"],
        seeds=[1],
        confirm_seeds=1,
        workers=1,
        simulate_all=True,
    )
    slow, fast = answer.candidates
    assert {slow.verdict, fast.verdict} <= {"meets", "misses", "unknown"}  # both simulated
    assert "offered" in slow.overload and fast.overload == ""
    warning = f"estimate: NOT STABLE: {slow.overload}"
    assert slow.warning == warning and fast.warning == ""
    shape = answer.to_json()
    assert [c["estimate_overload"] for c in shape["candidates"]] == [slow.overload, None]
    assert {f["estimate_overload"] for f in shape["frontier"]} <= {slow.overload, None}
    text = answer.lines()
    assert any(line.endswith(f"{slow.label}: {slow.why}; {warning}") for line in text), text
    assert not any("NOT STABLE" in line and fast.label in line for line in text)
    page = size_section(answer)
    assert escape(f"{slow.why}; {warning}") in page
    assert "id='estimate-overload'" not in page  # no answer with an overload


def _meets() -> Verdict:
    return Verdict(parse_target(TARGET), "meets", 0.4, False, "meets: p99 0.4 ms", 0.1, 2)


def test_a_meet_with_an_overloaded_estimate_stays_a_meet_with_the_warning_beside_it() -> None:
    """The choice docs/sizing.md states: the estimate's overload neither prunes nor overrules the
    runs, whose own growth, filling or draining makes a pass unknown."""
    overload = "host0.tier (its transfer pipe) offered 107% of its capacity"
    winner = Candidate(0, {"cluster.peer_link": "10GbE"}, Cost((CostPart("host", 1, 9.0),), "USD"))
    winner.judge([_meets()], [1, 2])
    winner.overload = overload
    skipped = Candidate(
        1, {"cluster.peer_link": "25GbE"}, Cost((CostPart("host", 1, 10.0),), "USD")
    )
    skipped.overload = overload  # never simulated: nothing to warn beside
    answer = SizeAnswer([winner, skipped], [parse_target(TARGET)], best=0)
    assert winner.verdict == "meets" and answer.winner is winner
    text = answer.lines()
    verdict_line = text.index(f"  {parse_target(TARGET)}: meets: p99 0.4 ms")
    assert text[verdict_line + 1] == f"  estimate: NOT STABLE: {overload}"
    assert sum("NOT STABLE" in line for line in text) == 3  # the answer, its frontier line, its row
    page = size_section(answer)
    assert f"<p id='estimate-overload' class='unknown'>estimate: NOT STABLE: {overload}</p>" in page
    assert (
        skipped.warning == "" and answer.to_json()["candidates"][1]["estimate_overload"] == overload
    )
