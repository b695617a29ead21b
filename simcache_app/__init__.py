"""Helpers of the Streamlit what-if page (``app.py``).

Nothing here models anything: the page builds scenarios with the public
``simcache`` API (``load_scenario``, ``Scenario.with_overrides``, ``simulate``,
``sweep``, ``sweep_summary``, ``estimate``, the column names of
:mod:`simcache.base.metrics`), and these modules turn controls into overrides and
results into tables, sentences and plotly figures. Every input the sidebar and
the sweep view offer is a row of one knob table (:mod:`simcache_app.knobs`),
whose labels, help and bounds come from the scenario schema's fields.
"""
