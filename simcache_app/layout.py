"""How the page lays out what it says: styling that keeps titles, labels and units whole on a
narrow window (a laptop's half screen, 800 px), and long texts made short to read (the same warning
for every host said once, the instant estimate's sentence in parts).

At 800 px the sidebar leaves the main column about 470 px: four metrics side by side get about 105
px each, where Streamlit's fixed 2.25 rem metric value ("45.69 ms", 133 px) and a long variant name
as a metric label (or a comparison's delta) are cut with an ellipsis. :data:`NARROW_CSS` scales the
metric value with the window and lets labels wrap instead of being cut.
``tests/app/test_browser.py`` checks at 800 x 900 that no heading, metric label or value, tab title
or input label is narrower than its text.

A run on many hosts gives the same warning for each (six "Short run" boxes that differ only by the
host's number pushed the figures down the page); :func:`merged_by_host` says it once for them all.
The estimate's sentence puts its bottleneck mid-sentence and ends with what the estimate leaves out;
:func:`estimate_text` splits it so the page can give the bottleneck a line of its own and fold the
rest away.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

NARROW_CSS = """
<style>
[data-testid="stMetricValue"] { font-size: clamp(1.1rem, 2.6vw, 2.25rem); }
[data-testid="stMetricValue"] > div,
[data-testid="stMetricLabel"] p,
[data-testid="stMetricLabel"] div,
[data-testid="stMetricDelta"],
[data-testid="stMetricDelta"] div,
[data-testid="stMetricDelta"] p,
[role="tab"] p,
[data-testid="stWidgetLabel"] p,
[data-testid="stExpander"] summary p {
    white-space: normal; overflow-wrap: anywhere; text-overflow: clip;
}
</style>
"""
"""Metric values sized by the window's width (at most Streamlit's own 2.25 rem), and the labels
and titles that Streamlit keeps on one line allowed to wrap."""


_HOST = re.compile(r"\bhost(\d+)\b")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")
_LEAD = re.compile(r"\*\*[^*]+:\*\* ")
"""A bold lead such as ``**Short run:** ``, kept in front of a merged text."""
_SOMEHOST = "\0"
"""Where a text named its host, in the template texts are grouped by."""


def merged_by_host(texts: Sequence[str]) -> list[str]:
    """``texts`` with those that say the same of different hosts, figures aside, as one: six
    "the run (8 s) ends before host0's destage buffer could fill (102 s ...)" become "hosts 0-5:
    the run (8 s) ends before each host's destage buffer could fill (102 s ...)", a figure that
    differs between them given as its range (``"98 to 102"``). A text that names no host, or
    several, is kept as it is; the merged text stands where the first of its kind stood."""
    kinds: dict[tuple[str, ...], list[tuple[int, list[str]]]] = {}
    order: list[str | tuple[str, ...]] = []
    for text in texts:
        hosts = {int(number) for number in _HOST.findall(text)}
        if len(hosts) != 1:
            order.append(text)
            continue
        template = _HOST.sub(_SOMEHOST, text)
        kind = tuple(_NUMBER.split(template))
        if kind not in kinds:
            kinds[kind] = []
            order.append(kind)
        kinds[kind].append((hosts.pop(), _NUMBER.findall(template)))
    merged = []
    for item in order:
        if isinstance(item, str):
            merged.append(item)
            continue
        members = kinds[item]
        figures = [_span([numbers[i] for _, numbers in members]) for i in range(len(item) - 1)]
        text = "".join(part + figure for part, figure in zip(item, [*figures, ""], strict=True))
        if len(members) == 1:
            merged.append(text.replace(_SOMEHOST, f"host{members[0][0]}"))
            continue
        text = text.replace(f"{_SOMEHOST}.", "each host's ").replace(_SOMEHOST, "each host")
        lead = _LEAD.match(text)
        at = lead.end() if lead else 0
        merged.append(
            f"{text[:at]}hosts {_host_ranges([host for host, _ in members])}: {text[at:]}"
        )
    return merged


def _span(figures: list[str]) -> str:
    """One figure as the texts wrote it, or ``"low to high"`` when they differ."""
    values = {float(figure.replace(",", "")): figure for figure in figures}
    if len(values) == 1:
        return figures[0]
    return f"{values[min(values)]} to {values[max(values)]}"


def _host_ranges(hosts: list[int]) -> str:
    """``[0, 1, 2, 3, 5]`` -> ``"0-3, 5"``."""
    runs: list[list[int]] = []
    for host in sorted(set(hosts)):
        if runs and host == runs[-1][-1] + 1:
            runs[-1].append(host)
        else:
            runs.append([host])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


@dataclass(frozen=True)
class EstimateText:
    """The instant estimate's sentence (:func:`simcache_app.describe.estimate_sentence`) in the
    parts the page lays out apart."""

    summary: str
    """``"Instant estimate (queueing model, no simulation): writes 1.19 ms mean (db 1.26 ms,
    ...)."``"""
    bottleneck: str
    """``"the array's 14 spindles, at 75% mean utilization."`` (empty: the sentence names none)."""
    overloads: list[str] = field(default_factory=list)
    """Its ``Overload:`` sentences, without that lead."""
    left_out: list[str] = field(default_factory=list)
    """Its ``Not in the estimate:`` sentences, without that lead."""


_ESTIMATE_PARTS = re.compile(r" (Overload|Not in the estimate): ")


def estimate_text(sentence: str) -> EstimateText:
    """The parts of the estimate's sentence: what comes before its bottleneck, the bottleneck,
    and its overload and left-out sentences, each whole."""
    head, *rest = _ESTIMATE_PARTS.split(sentence)
    said = list(zip(rest[::2], rest[1::2], strict=True))
    summary, named, bottleneck = head.partition("; bottleneck ")
    return EstimateText(
        f"{summary}." if named else summary,
        bottleneck,
        [text for lead, text in said if lead == "Overload"],
        [text for lead, text in said if lead != "Overload"],
    )
