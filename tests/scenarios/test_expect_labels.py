"""Each library check is labelled as what its own words say it is.

docs/validation.md counts a check as passed only if it holds and its figure did not set a
parameter of the scenario ("a fit is a figure a parameter of the scenario was set from: it must
hold, but it is not counted as passed"); a figure the model misses is a known gap, not a pass.
The counts rest on two keys of an ``[[expect]]`` row, ``fitted`` and ``known_gap``, and review
66d (findings F1 and F4) found rows whose own text called them a fit, or said the field's figure
was not reproduced, without the key, so the scoreboard counted them as passes. This scan reads
each row's words (name, observation, field figure, tolerance) and fails when they say:

- the row is a fit (it "is a fit", "fit,", "fitted", "sets read_latency", "set from", "calibrated on
  this point") but it carries no ``fitted``;
- the field's figure is not reproduced ("not reproduced", "does not reproduce", "NOT the field's
  behaviour") but it is no ``known_gap``.

The scan reads the TOML only (no simulation), so it runs in a fraction of a second.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from support.paths import ROOT

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

NEGATED_FIT = re.compile(r"\b(?:not|nor|never|no longer) (?:a |one )?fit(?:ted)?\b", re.IGNORECASE)
"""'a check, not a fit', 'not fitted': a row saying what it is not."""

FIT = re.compile(
    r"\ba fit\b"  # "a fit: it chose dies = 2", "15 %; a fit"
    r"|\bfit,"  # "fit, it sets read_latency"
    r"|\bfitted\b"  # "follows from the fitted rate"
    # "sets write_iops_limit", "row set read_channel_bandwidth"; not "the brief's figure, which set
    # read_bandwidth" (another source set it: the row checks that source)
    r"|(?<!which )\bsets? [a-z]+_[a-z_]+\b"
    r"|\b(?:was|were|is|are) set from\b|\bset from (?:this|these|it)\b"
    r"|\bcalibrated (?:on|against|from|to) (?:this|these|it)\b"  # "calibrated on this point"
    r"|\bchosen (?:for|from) this\b",
    re.IGNORECASE,
)
"""Words by which a row says a parameter of the scenario was set from its figure."""

NOT_REPRODUCED = re.compile(
    r"\bnot reproduced\b|\bnot[ -]reproduced\b"
    r"|\b(?:does|do|did|can) ?not reproduce\b|\bcannot reproduce\b|\bfails to reproduce\b"
    r"|\bnot the field's\b|\bopposite of the field\b",
    re.IGNORECASE,
)
"""Words by which a row says the model does not reproduce the field's figure."""


def words(row: dict[str, object]) -> str:
    """What a row says about itself: its name (hyphens read as spaces), observation, field figure
    and tolerance. The ``fitted`` and ``known_gap`` notes are the labels, not scanned."""
    parts = [str(row.get("name", "")).replace("-", " ")]
    parts += [str(row.get(key, "")) for key in ("observation", "field_figure", "tolerance")]
    return " | ".join(parts)


def fit_words(text: str) -> str:
    """The words by which ``text`` says it is a fit ('' if none)."""
    match = FIT.search(NEGATED_FIT.sub(" ", text))
    return match.group(0) if match else ""


def not_reproduced_words(text: str) -> str:
    """The words by which ``text`` says the field's figure is not reproduced ('' if none)."""
    match = NOT_REPRODUCED.search(text)
    return match.group(0) if match else ""


def says_fit(text: str) -> bool:
    return bool(fit_words(text))


def says_not_reproduced(text: str) -> bool:
    return bool(not_reproduced_words(text))


def mislabelled(path: Path) -> list[str]:
    """The rows of one scenario file whose words and labels disagree, one line each."""
    rows = tomllib.loads(path.read_text("utf-8")).get("expect", [])
    problems = []
    for row in rows:
        text = words(row)
        name = row.get("name", "?")
        fit = fit_words(text)
        if fit and not row.get("fitted"):
            problems.append(
                f"{path.name}:{name}: its text says it is a fit ({fit!r}) but it has no `fitted` "
                "key: say which parameter it set, or reword"
            )
        missed = not_reproduced_words(text)
        if missed and not row.get("known_gap"):
            problems.append(
                f"{path.name}:{name}: its text says the field's figure is not reproduced "
                f"({missed!r}) but it is no `known_gap`: check the field's figure and record the "
                "miss as a known gap"
            )
    return problems


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_rows_are_labelled_as_their_words_say(path: Path) -> None:
    problems = mislabelled(path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "text",
    [
        "4 KiB random reads at QD1 (AnandTech 8104): fit, it sets read_latency | 15 %; a fit",
        "30 %, the target for p99; a fit: it chose dies = 2",
        "15 %; follows from the fitted rate by Little's law (64 / rate)",
        "15 %, the target for IOPS; its difference from the 64 KiB row set read_channel_bandwidth",
        "30%, as at the other sizes; the per-write time is calibrated on this point",
        "30 %; a fit: with write_iops_limit it set write_latency",
    ],
)
def test_the_scan_finds_the_fits_review_66d_found(text: str) -> None:
    """Rows of review 66d (F1), as they read before they were labelled."""
    assert says_fit(text)


@pytest.mark.parametrize(
    "text",
    [
        "15 %, the catalogue's target for IOPS; a check, not a fit: a closed loop of one read "
        "runs at 1 / latency",
        "15 %; a check (the brief's 500 MB/s sets the read bandwidth)",
        "1.2 still holds if the SATA profile is recalibrated back to a 300 MB/s cap",
        "the field says only 'well above 50 ms'; over 12 seeds p999 ranged 118.9-124.7 ms",
        "15 %; the brief's 7,000 MB/s read rate, which set read_bandwidth",
    ],
)
def test_the_scan_leaves_checks_alone(text: str) -> None:
    assert not says_fit(text)
    assert not says_not_reproduced(text)


@pytest.mark.parametrize(
    "text",
    [
        "not reproduced, bounded: the model has no hypervisor path",
        "The field's 0.5 ms floor is not reproduced: the model has no hypervisor",
        "read tail not reproduced | NOT the field's behaviour, recorded on purpose",
        "the model does not reproduce the tail",
    ],
)
def test_the_scan_finds_the_misses_review_66d_found(text: str) -> None:
    """Rows of review 66d (F4), as they read before they became known gaps."""
    assert says_not_reproduced(text)


def test_the_scan_flags_a_row_without_its_label(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text(
        '[[expect]]\nname = "a"\nmetric = "iops"\nat_least = 1\n'
        'tolerance = "15 %; a fit, it sets read_latency"\n'
        '[[expect]]\nname = "b"\nmetric = "iops"\nat_least = 1\n'
        'tolerance = "15 %; a fit, it sets read_latency"\nfitted = "read_latency"\n'
        '[[expect]]\nname = "c"\nmetric = "iops"\nat_least = 1\n'
        'tolerance = "the floor is not reproduced"\n'
        '[[expect]]\nname = "d"\nmetric = "iops"\nat_least = 1\n'
        'tolerance = "the floor is not reproduced"\nknown_gap = "-59 %"\n',
        "utf-8",
    )
    problems = mislabelled(path)
    assert [p.split(":")[1] for p in problems] == ["a", "c"]
