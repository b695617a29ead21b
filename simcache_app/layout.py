"""Page styling that keeps titles, labels and units whole on a narrow window (a laptop's half
screen, 800 px).

At 800 px the sidebar leaves the main column about 470 px: four metrics side by side get about 105
px each, where Streamlit's fixed 2.25 rem metric value ("45.69 ms", 133 px) and a long variant name
as a metric label (or a comparison's delta) are cut with an ellipsis. :data:`NARROW_CSS` scales the
metric value with the window and lets labels wrap instead of being cut.
``tests/app/test_browser.py`` checks at 800 x 900 that no heading, metric label or value, tab title
or input label is narrower than its text.
"""

from __future__ import annotations

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
