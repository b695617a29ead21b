"""Helpers of the Streamlit what-if page (``app.py``).

Nothing here models anything: the page builds scenarios with the public
``simcache`` API (``load_scenario``, ``Scenario.with_overrides``, ``simulate``,
``sweep``) and these modules turn controls into overrides and results into
tables, sentences and plotly figures.
"""
