"""``simcache compare-trace`` takes a shipped example's name, as ``import`` and ``fit`` do (review
66c F17: from a folder without examples/, ``compare-trace examples/vm-burst.csv f.toml`` failed
with "No such file or directory" right after ``fit vm-burst.csv`` had worked there). The scenario
compared is the built-in default (its open-loop groups against the whole trace): a fitted one
takes seconds to make and resolves no differently."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import call


@pytest.mark.parametrize("name", ["examples/vm-burst.csv", "vm-burst.csv"])
def test_compare_trace_resolves_an_examples_name_in_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = call(["compare-trace", name, "default"])
    assert code == 0, err
    heading = out.splitlines()[0]
    assert heading.startswith("== group db vs the whole trace (") and heading.endswith(
        "vm-burst.csv)"
    ), heading
    assert Path(heading.split("(", 1)[1].rstrip(")")).is_file()  # the shipped file, resolved
    assert not (tmp_path / "examples").exists()


def test_compare_trace_still_says_when_a_file_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = call(["compare-trace", "no-such-trace.csv", "default"])
    assert code == 2
    assert "no-such-trace.csv" in err
