"""A typo of a field name in any table of a scenario (review 65, 15): the unknown field comes first,
with "did you mean ...?" when it is one slip from an allowed name, and the required fields it
accounts for are not listed as missing (``profil`` for ``profile`` left three of them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simcache import ScenarioError, load_scenario

SCENARIO = """\
name = "base"
[run]
duration = "10s"
warmup = "2s"
seed = 1
[cluster]
hosts = 3
tier = "sata-ssd-s3700-field"
peer_link = "10GbE"
storage_link = "1GbE"
[cluster.destager]
capacity = "2GiB"
concurrency = 4
[array]
profile = "array-14x7200"
[[groups]]
name = "db"
policy = "WB+1"
vms_per_host = 2
[groups.workload]
mode = "open"
iops = 200
sizes = { "8KiB" = 1.0 }
working_set = "1GiB"
"""
"""A valid scenario, the review's base: each test changes one line of it."""


def problems_of(tmp_path: Path, line: str, typo: str) -> list[tuple[str, str]]:
    """The problems of :data:`SCENARIO` with its line ``line`` written ``typo``."""
    assert SCENARIO.count(f"\n{line}\n") == 1, line
    path = tmp_path / "typo.toml"
    path.write_text(SCENARIO.replace(f"\n{line}\n", f"\n{typo}\n"), "utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert caught.value.source == str(path)
    return caught.value.problems


def test_a_profile_typo_in_array_is_one_problem_with_the_name_meant(tmp_path: Path) -> None:
    """Before: array.drive, array.spindles and array.port "required field is missing", then the
    unknown field without a suggestion."""
    [(where, message)] = problems_of(
        tmp_path, 'profile = "array-14x7200"', 'profil = "array-14x7200"'
    )
    assert where == "array.profil"
    assert message.startswith("unknown field 'profil'; did you mean 'profile'? (allowed here: ")


@pytest.mark.parametrize(
    ("line", "typo", "where", "meant"),
    [
        # a required field misspelt: its "missing" is the typo's
        ('tier = "sata-ssd-s3700-field"', 'tire = "sata-ssd-s3700-field"', "cluster.tire", "tier"),
        ('name = "db"', 'nmae = "db"', "groups.0.nmae", "name"),
        # the table itself misspelt
        ("[array]", "[arary]", "arary", "array"),
        # tables without required fields: the suggestion alone
        ("concurrency = 4", "concurency = 4", "cluster.destager.concurency", "concurrency"),
        ('warmup = "2s"', 'warmpu = "2s"', "run.warmpu", "warmup"),  # two letters swapped
        ("vms_per_host = 2", "vm_per_host = 2", "groups.0(db).vm_per_host", "vms_per_host"),
        ("iops = 200", "iosp = 200", "groups.0(db).workload.iosp", "iops"),
    ],
)
def test_a_field_typo_anywhere_is_one_problem_with_the_name_meant(
    tmp_path: Path, line: str, typo: str, where: str, meant: str
) -> None:
    [(found, message)] = problems_of(tmp_path, line, typo)
    assert found == where
    assert f"; did you mean {meant!r}? (allowed here: " in message


def test_a_profile_typo_inside_a_device_table_is_one_problem(tmp_path: Path) -> None:
    [(where, message)] = problems_of(
        tmp_path,
        'tier = "sata-ssd-s3700-field"',
        'tier = { profle = "sata-ssd-s3700-field" }',
    )
    assert where == "cluster.tier.profle"
    assert "did you mean 'profile'?" in message


def test_an_unknown_field_far_from_any_name_comes_first_and_keeps_the_missing_ones(
    tmp_path: Path,
) -> None:
    """No allowed name is one slip away: nothing is suggested and the required fields stay
    listed, after the unknown field that likely explains them."""
    problems = problems_of(tmp_path, 'profile = "array-14x7200"', 'kind = "array-14x7200"')
    assert [where for where, _ in problems] == [
        "array.kind",
        "array.drive",
        "array.spindles",
        "array.port",
    ]
    assert problems[0][1].startswith("unknown field 'kind'; allowed here: ")
    assert "did you mean" not in problems[0][1]


def test_a_slip_of_a_field_that_is_not_missing_leaves_the_missing_ones(tmp_path: Path) -> None:
    """``strip`` is a slip of ``stripe``, which no missing field depends on: the missing fields
    of the table without a profile are real problems and stay listed."""
    problems = problems_of(tmp_path, 'profile = "array-14x7200"', 'strip = "64KiB"')
    assert problems[0][0] == "array.strip"
    assert "did you mean 'stripe'?" in problems[0][1]
    assert [where for where, _ in problems[1:]] == ["array.drive", "array.spindles", "array.port"]
