"""``simcache size -o size.html``: the search's answer as a self-contained page.

The sizing section (the answer and its cost, the cost/latency frontier as a chart, every candidate
with its verdict and the search's margins) comes first; the winner's full run follows as ``simcache
report`` writes it (verdicts, tables, timelines, the scenario as run and the run manifest). With no
winner, or no run of it (a stopped search), the page holds the sizing section only. A stopped
search's page says it is partial in its title, heading and first lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import simcache.report.svg as svg
from simcache.base.version import __version__
from simcache.report.page import report_html
from simcache.results.result import Result
from simcache.runs.sizing.answer import SizeAnswer

__all__ = ["size_html", "size_section"]

_STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 1em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
.meets { color: #070; } .misses { color: #b00; } .unknown { color: #a60; }
.pruned, .skipped { color: #666; }
svg.chart { display: block; width: 100%; max-width: 720px; height: auto; }
"""


def size_section(answer: SizeAnswer, command: str = "") -> str:
    """The sizing section: answer, frontier chart and table, every candidate, margins."""
    winner = answer.winner
    counts = answer.counts()
    currency = answer.candidates[0].cost.currency if answer.candidates else ""
    parts = ["<h2 id='sizing'>Sizing</h2>"]
    if command:
        parts.append(f"<p><code>{escape(command)}</code></p>")
    parts.append(
        "<p>"
        + escape(
            f"{len(answer.candidates)} configurations: {counts['meets']} "
            f"{'meets' if counts['meets'] == 1 else 'meet'} every target, "
            f"{counts['misses']} miss one, "
            f"{counts['unknown']} unknown, {counts['pruned']} pruned without simulating, "
            f"{counts['skipped']} skipped "
            "(they cost more than the answer)"
            + (
                f", {counts['not reached']} not reached (the search was stopped)."
                if answer.stopped
                else "."
            )
        )
        + "</p>"
    )
    if answer.stopped:
        parts.append(
            f"<p id='partial' class='unknown'><b>Partial answer:</b> "
            f"{escape(answer.partial_note())}.</p>"
        )
    if winner is None and answer.stopped:
        parts.append("<p id='best' class='unknown'>No answer was confirmed before the stop.</p>")
    elif winner is None:
        unmet = (
            ", ".join(str(t) for t in answer.unmet())
            or "none alone; no configuration met all of them together"
        )
        parts.append(
            "<p id='best' class='misses'>No configuration meets every target. Targets no "
            f"configuration met: {escape(unmet)}.</p>"
        )
    else:
        parts.append(
            f"<p id='best'><b>Answer:</b> {escape(winner.label)}, {winner.cost.total:,.0f} "
            f"{escape(currency)}</p>"
        )
        parts.append(f"<p>Cost: {escape(winner.cost.words())}</p>")
        rows: list[tuple[str, ...]] = [(str(v.target), v.status, v.text) for v in winner.verdicts]
        rows += [
            (
                f"{v.target} (fresh seeds {', '.join(map(str, winner.confirmed_seeds))})",
                v.status,
                v.text,
            )
            for v in winner.confirmed
        ]
        parts.append(_table(["target", "verdict", "why"], rows, status_column=1))
        if winner.warning:  # beside the verdict of its runs, which it does not change
            parts.append(f"<p id='estimate-overload' class='unknown'>{escape(winner.warning)}</p>")
    parts += _frontier(answer)
    every: list[tuple[str, ...]] = [
        (f"{c.cost.total:,.0f}", c.verdict, c.label, c.why_shown())
        for c in sorted(answer.candidates, key=lambda c: (c.cost.total, c.index))
    ]
    parts.append("<h3>Every configuration, by cost</h3>")
    parts.append(_table(["cost", "verdict", "configuration", "why"], every, status_column=1))
    margins = ", ".join(f"{name} {factor:g}" for name, factor in answer.margins.items())
    if counts["pruned"]:  # (the rule said only where it pruned something: review 67a F12)
        parts.append(
            "<p>"
            + escape(
                "Pruned by the estimate: a latency figure estimated above factor x limit "
                f"({margins}; throughput: below factor x floor), factors above the largest "
                "estimate/simulation ratio over the library's scenarios (docs/sizing.md); a "
                "monotone miss prunes what is no faster along its dimension."
            )
            + "</p>"
        )
    return "\n".join(parts)


def _frontier(answer: SizeAnswer) -> list[str]:
    front = answer.frontier()
    if not front:
        return []
    target = answer.frontier_target
    at = answer.targets.index(target)
    labels = [f"{c.cost.total:,.0f}" for c in front]
    chart = svg.points(
        f"Cost vs {target}: the frontier",
        labels,
        [c.verdicts[at].value for c in front],
        [c.verdicts[at].ci95 for c in front],
        x_label=f"cost ({front[0].cost.currency})",
        y_label=f"{target.op} {target.figure} ({target.unit})",
        joined=True,
        limit=target.limit,
        passing=[c.verdict == "meets" for c in front],
    )
    head = ["cost", target.unit, "verdict", "configuration"]
    rows: list[tuple[str, ...]] = [
        (f"{c.cost.total:,.0f}", c.figure(at), c.verdict, c.label) for c in front
    ]
    if any(c.warning for c in front):  # the estimate's overloads, beside the runs' verdicts
        head.append("warning")
        rows = [(*row, c.warning) for row, c in zip(rows, front, strict=True)]
    return [
        f"<h3>Frontier: cost vs {escape(str(target))}</h3>",
        "<p>The simulated configurations that no other simulated one beats on both cost and figure "
        "(mean &plusmn; 95% interval over seeds).</p>",
        chart,
        _table(head, rows, status_column=2),
    ]


def _table(head: list[str], rows: Sequence[Sequence[str]], status_column: int) -> str:
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = []
    for row in rows:
        cells = [
            f"<td class='{escape(cell)}'>{escape(cell)}</td>"
            if i == status_column
            else f"<td>{escape(cell)}</td>"
            for i, cell in enumerate(row)
        ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><tr>{header}</tr>{''.join(body)}</table>"


def size_html(
    answer: SizeAnswer, winner_run: Result | None, *, command: str = "", left_out: str = ""
) -> str:
    """The page: the sizing section, then the winner's full run (``winner_run``; none when there
    is no answer, or ``left_out`` says why it is missing)."""
    section = size_section(answer, command)
    if winner_run is None:
        title = "simcache size: partial answer" if answer.stopped else "simcache size"
        missing = f"<p>{escape(left_out)}</p>\n" if left_out else ""
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>'
            f"{title}</title><style>{_STYLE}</style></head>\n"
            f"<body>\n<h1>{title}</h1>\n{section}\n{missing}"
            f"<p>simcache {escape(__version__)}</p>\n</body></html>\n"
        )
    page = report_html(winner_run, targets=answer.targets)
    page = page.replace("<h1>simcache report: ", "<h1>simcache size: ", 1).replace(
        "<title>simcache report: ", "<title>simcache size: ", 1
    )
    mark = "<p class='description'>"
    start = page.find(mark)
    end = (
        page.find("</p>", start) + len("</p>") if start >= 0 else page.find("</h1>") + len("</h1>")
    )
    winner = (
        "<h2>The answer's run</h2><p>One run of the answer (its first confirmation seed), as "
        "<code>simcache report</code> shows it.</p>"
    )
    return page[:end] + "\n" + section + "\n" + winner + page[end:]
