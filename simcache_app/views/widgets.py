"""The page's shared pieces: the runs a session has shown (``done_runs``), a view's run button
(``run_requested``), a scenario error in a box, and a table of figures; every tab but sizing uses
them (:mod:`simcache_app.views.single`, :mod:`.sweep`, :mod:`.compare`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import simcache

__all__ = ["csv_download", "done_runs", "run_requested", "show_scenario_error", "show_table"]


def done_runs() -> set[str]:
    """Keys of the runs this session has shown: their results come back from the cache without
    pressing run."""
    done: set[str] = st.session_state.setdefault("done_runs", set())
    return done


def run_requested(button: str, keys: list[str], help: str) -> bool:
    clicked = st.button(button, type="primary", key=button, help=help)
    return clicked or all(key in done_runs() for key in keys)


def show_scenario_error(title: str, exc: simcache.ScenarioError) -> None:
    st.error(f"**{title}.**\n\n```\n{exc}\n```")


def show_table(table: pd.DataFrame, text_figures: list[str] | None = None) -> None:
    """A table of figures: whole numbers (I/O counts) with thousands separators; floats come
    rounded (describe.figures); ``text_figures``, columns of figures held as text (lower bounds
    marked "≥"), aligned as the numbers are."""
    config = {
        c: st.column_config.NumberColumn(format="localized")
        for c in table.columns
        if pd.api.types.is_integer_dtype(table[c])
    } | {c: st.column_config.TextColumn(alignment="right") for c in text_figures or []}
    st.dataframe(table, hide_index=True, column_config=config)


def csv_download(label: str, table: pd.DataFrame, file_name: str) -> None:
    """A button that downloads ``table`` as CSV (no index), the page left as it is."""
    st.download_button(label, table.to_csv(index=False), file_name=file_name, on_click="ignore")
