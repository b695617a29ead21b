"""The "Size my cluster" view: targets, dimensions and prices in; the answer, the frontier and every
candidate out.

It runs :func:`simcache.runs.size.size` on the current scenario (as the sidebar sets it) in this
process, in a background thread as the page's simulations and sweeps run (:mod:`simcache_app.runs`),
with a progress bar and a **Stop sizing** button: stopped, the page shows the configurations judged
so far, marked partial. The answer becomes the current scenario at a click (or downloads as a
scenario file).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

import simcache
from simcache.runs.size import size
from simcache.runs.sizing.answer import SizeAnswer
from simcache.runs.sizing.costs import PriceTable, load_prices
from simcache.runs.sweep import SweepProgress
from simcache.runs.targets import Target
from simcache_app.runs import Job, follow_job, forget_abandoned, has_job, stop_button
from simcache_app.scenario_files import exported_scenario

__all__ = ["answer_tables", "size_view"]

DEFAULT_DIMENSIONS = (
    "cluster.peer_link = ['1GbE', '10GbE']\ncluster.tier = ['sata-ssd-s3700-field', "
    "'nvme-p3700-field']"
)


def answer_tables(answer: SizeAnswer) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(frontier, candidates) as tables: cost, figure and verdict; cost, verdict, configuration
    and why."""
    target = answer.frontier_target
    at = answer.targets.index(target)
    frontier = pd.DataFrame(
        [
            {
                "cost": c.cost.total,
                str(target): c.verdicts[at].value,
                "verdict": c.verdict,
                "configuration": c.label,
            }
            for c in answer.frontier()
        ]
    )
    every = pd.DataFrame(
        [
            {
                "cost": c.cost.total,
                "verdict": c.verdict,
                "configuration": c.label,
                "why": c.why_shown(),
            }
            for c in sorted(answer.candidates, key=lambda c: (c.cost.total, c.index))
        ]
    )
    return frontier, every


def size_view(
    scenario: simcache.Scenario, duration: float, seed: int, targets: list[Target]
) -> None:
    st.markdown(
        "The cheapest configuration of this scenario that meets every target: the analytic "
        "estimate rules out what misses "
        "by a clear margin, the rest is simulated cheapest first over several seeds, and the "
        "answer is confirmed with fresh "
        "seeds (docs/sizing.md)."
    )
    shown = "\n".join(str(t) for t in targets) or "write p99 <= 5ms"
    target_text = st.text_area("Targets (one per line)", value=shown, key="size.targets")
    dimension_text = st.text_area(
        "Dimensions (one per line: PATH = [VALUES] or PATH = LOW:HIGH)",
        value=DEFAULT_DIMENSIONS,
        key="size.dims",
    )
    prices = st.text_area(
        "Prices over the built-in table (TOML, optional)",
        value="",
        key="size.prices",
        placeholder="[host]\nprice = 9000",
    )
    seeds = int(
        st.number_input(
            "Seeds per configuration", min_value=1, max_value=10, value=3, key="size.seeds"
        )
    )
    clicked = st.button("Size", key="size.run", type="primary")
    lines = [line.strip() for line in target_text.splitlines() if line.strip()]
    dims = [line.strip() for line in dimension_text.splitlines() if line.strip()]
    run = scenario.with_seed(seed)
    key = size_key(run, lines, dims, prices, seeds, duration)
    # a search under way (or stopped, not yet shown) is followed on every rerun: a click on Stop
    # reruns the page, whose button callback cancels the search before this picks it up again
    if not (clicked or has_job(key)):
        return
    try:
        table = _price_table(prices)
        answer = _size(key, run, lines, dims, table, seeds, duration)
    except simcache.ScenarioError as exc:
        st.error(str(exc))
        return
    show_answer(scenario, answer, duration, seed)


def size_key(
    scenario: simcache.Scenario,
    targets: list[str],
    dimensions: list[str],
    prices: str,
    seeds: int,
    duration: float,
) -> str:
    """What identifies one search of the page: the scenario's JSON (its seed set), the targets,
    dimensions and price text as typed, the seeds per configuration and the duration."""
    return json.dumps(
        ["size", scenario.model_dump_json(), targets, dimensions, prices, seeds, duration]
    )


def _price_table(prices: str) -> PriceTable:
    """The built-in price table with the page's TOML over it (checked here, before the search
    starts)."""
    if not prices.strip():
        return load_prices()
    with tempfile.TemporaryDirectory() as folder:
        price_file = Path(folder) / "prices.toml"
        price_file.write_text(prices, "utf-8")
        return load_prices(price_file)


def _size(
    key: str,
    scenario: simcache.Scenario,
    targets: list[str],
    dimensions: list[str],
    prices: PriceTable,
    seeds: int,
    duration: float,
) -> SizeAnswer:
    """:func:`simcache.runs.size.size` as a job of the page (:func:`simcache_app.runs.follow_job`)
    under a progress bar and a **Stop sizing** button: the answer, partial when stopped
    (``answer.stopped`` says why)."""
    forget_abandoned()
    slot = st.empty()
    stop_button(
        slot,
        key,
        "Stop sizing",
        "Stop this search: the page shows the configurations judged so far, marked partial.",
    )

    def work(job: Job) -> SizeAnswer:
        def advance(state: SweepProgress) -> None:
            job.fraction = state.done / max(state.total, 1)
            job.text = f"Sizing: {state.done} of about {state.total} runs"

        return size(
            scenario,
            targets,
            dimensions,
            prices=prices,
            seeds=list(range(1, seeds + 1)),
            duration=duration,
            workers=1,
            progress=advance,
            cancel=job.token,
        )

    try:
        answer: SizeAnswer = follow_job(key, work, "Sizing")
    finally:
        slot.empty()
    return answer


SIZED = "size.answer"
"""Session key of the answer made the current scenario: (file name, TOML text)."""


def use_answer(name: str, text: str) -> None:
    """Make the sized answer the page's current scenario (the sidebar loads it until another
    scenario is chosen)."""
    st.session_state[SIZED] = (name, text)


def forget_answer() -> None:
    """Back to the scenario chosen in the sidebar."""
    st.session_state.pop(SIZED, None)


def show_answer(
    scenario: simcache.Scenario, answer: SizeAnswer, duration: float, seed: int
) -> None:
    counts, *rest = answer.lines()
    st.caption(counts)
    for note in answer.notes:  # before the answer: they say why verdicts may be unknown
        st.warning(f"**Note:** {note}")
    if answer.stopped:
        st.warning(f"**Partial answer:** {answer.partial_note()}.")
    winner = answer.winner
    if winner is None:
        best = next(line for line in rest if line.startswith("best: "))
        text = best.removeprefix("best: ")
        st.warning(text[:1].upper() + text[1:])  # (not capitalize(): it lowers "MB/s", "WB+1")
    if winner is not None:
        st.success(f"Answer: {winner.label}, {winner.cost.total:,.0f} {winner.cost.currency}")
        st.caption(winner.cost.words())
        for verdict in [*winner.verdicts, *winner.confirmed]:
            st.markdown(f"- {verdict.target}: {verdict.text}")
        run = scenario.with_overrides(winner.overrides, source="the answer")
        name, text = exported_scenario(run, winner.overrides, duration, seed)
        st.button(
            "Use the answer as the current scenario",
            key="size.use",
            on_click=use_answer,
            args=(name, text),
            help=(
                "The sidebar then runs this configuration; choosing a scenario there goes back to "
                "the library."
            ),
        )
        st.download_button(
            "Download the answer as a scenario file", text, file_name=name, on_click="ignore"
        )
    frontier, every = answer_tables(answer)
    if not frontier.empty:
        st.subheader(f"Frontier: cost vs {answer.frontier_target}")
        st.line_chart(frontier.set_index("cost")[[str(answer.frontier_target)]])
        st.dataframe(frontier, hide_index=True)
    st.subheader("Every configuration, by cost")
    st.dataframe(every, hide_index=True)
