"""``simcache report``: one run (and optionally a sweep around it) as a self-contained HTML file.

- :mod:`~simcache.report.page`: the page (:func:`report_html`): verdicts, validity, tables,
  timelines, manifest;
- :mod:`~simcache.report.sweep_section`: the sweep's table and chart (:class:`SweepReport`);
- :mod:`~simcache.report.svg`: the inline SVG charts.

The file opens with no network: no scripts, fonts, images or links outside it.
"""

from simcache.report.page import report_html, scenario_hash
from simcache.report.sweep_section import SweepReport

__all__ = ["SweepReport", "report_html", "scenario_hash"]
