"""A sweep against a target: each point's verdict over its seeds, the feasible region, and the
cheapest passing point.

Shared by the app's sweep view and the HTML report's sweep section
(:mod:`simcache.report.sweep_section`), so both say the same. A point passes when
:func:`simcache.runs.targets.judge_seeds` says it meets the target: its seeds' mean meets it, with
the whole 95% interval on the right side of the limit, and no seed is unstable or too short.

"Cheapest" is a rule about the swept values, said in :attr:`Cheapest.rule` next to the answer:

- one numeric parameter of the cluster, array or tier (a size, a count, a speed): the **smallest**
  passing value, taking a smaller one to cost less;
- one numeric parameter of a workload (``groups.<name>.workload.*``: a load, not a purchase): the
  **largest** passing value, the most load that still meets the target;
- anything else (categorical values such as link kinds, policies and profiles, or several
  parameters): the **first** passing point in the order the values were listed; list them cheapest
  first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from simcache.runs.targets import Target, Verdict, evidence_of_row, judge_seeds

__all__ = ["Cheapest", "cheapest_passing", "is_numeric", "sweep_verdicts"]


def sweep_verdicts(
    rows: pd.DataFrame, grid_columns: Sequence[str], target: Target
) -> list[Verdict]:
    """One verdict per grid point of a sweep's ``rows`` (one per point and seed), in
    :func:`simcache.runs.sweep.sweep_summary`'s order (first appearance)."""
    verdicts = []
    for _, part in rows.groupby(list(grid_columns), sort=False, dropna=False):
        verdicts.append(
            judge_seeds(target, [evidence_of_row(row, target) for row in part.to_dict("records")])
        )
    return verdicts


def is_numeric(values: Sequence[Any]) -> bool:
    """Whether swept values are numbers (a scale), not categories."""
    return bool(values) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    )


@dataclass(frozen=True)
class Cheapest:
    """The cheapest passing point of a sweep (``index`` into its points, None when none passes)
    and the rule used."""

    index: int | None
    rule: str
    sentence: str


def cheapest_passing(
    labels: Sequence[str], values: Sequence[Any], verdicts: Sequence[Verdict], path: str | None
) -> Cheapest:
    """The cheapest passing point by the module's rule: ``labels`` name the points, ``values``
    are the swept values of a one-parameter sweep (``path`` its dotted path; ``None`` for several
    parameters), ``verdicts`` one per point."""
    passing = [i for i, verdict in enumerate(verdicts) if verdict.passes]
    target = verdicts[0].target if verdicts else None
    if path is not None and is_numeric(values):
        if ".workload." in path:
            rule = (
                "the largest passing value: a workload setting is load, and the most load that "
                "meets the target is the answer"
            )
            chosen = max(passing, key=lambda i: values[i], default=None)
        else:
            rule = (
                "the smallest passing value: a smaller size, count or speed is taken to cost less"
            )
            chosen = min(passing, key=lambda i: values[i], default=None)
    else:
        rule = (
            "the first passing point in the order the values were listed (list them cheapest first)"
        )
        chosen = passing[0] if passing else None
    if chosen is None:
        unknown = sum(v.status == "unknown" for v in verdicts)
        if unknown:  # not shown to meet it is not shown to miss it
            return Cheapest(
                None,
                rule,
                f"No point is shown to meet {target}: {unknown} of {len(verdicts)} are unknown "
                "(see each point's verdict for what held it back), the others miss.",
            )
        return Cheapest(None, rule, f"No point meets {target}.")
    count = f"{len(passing)} of {len(verdicts)} points meet {target}"
    return Cheapest(
        chosen,
        rule,
        f"Cheapest passing configuration: {labels[chosen]} ({count}; cheapest means {rule}).",
    )
