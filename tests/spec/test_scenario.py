"""Runs derived from a scenario (another duration, seed or variant) and how often a scenario is
validated.

A scenario is parsed and validated once, when it loads; a derived run validates
only what it changes. The counts here patch the TOML parser and the schema
validation of a whole :class:`Scenario` to prove it.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.paths import ROOT
from support.strategies import to_toml

import simcache
from simcache import Scenario, ScenarioError, load_scenario
from simcache.cli.main import main
from simcache.runs.checks import prepare
from simcache.spec import builtin_scenarios


def small(**extra: Any) -> dict[str, Any]:
    """2 hosts, one WB+1 group in an open loop; a 1 s run sampled every 0.25 s with 0.1 s of
    warm-up."""
    return {
        "name": "derived",
        "run": {"duration": "1s", "warmup": "0.1s", "sample_interval": "0.25s", "seed": 3},
        "cluster": {
            "hosts": 2,
            "tier": "sata-ssd-s3700-field",
            "peer_link": "1GbE",
            "storage_link": "1GbE",
        },
        "array": "array-14x7200",
        "groups": [{"name": "db", "policy": "WB+1", "workload": {"mode": "open", "iops": 100}}],
        **extra,
    }


TWO_VARIANTS = {"local": {"groups.db.policy": "WB+0"}, "fast": {"cluster.peer_link": "10GbE"}}
CHECKS = [
    {"name": "wb1", "metric": "count", "at_least": 1},
    {"name": "local", "metric": "count", "variant": "local", "at_least": 1},
    {
        "name": "fast",
        "metric": "count",
        "variant": "fast",
        "at_least": 1,
        "over": {"variant": "local"},
    },
]


class Counts:
    """Scenario-file parses (TOML texts with groups) and whole-scenario schema validations."""

    def __init__(self) -> None:
        self.parses = 0
        self.validations = 0


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    seen = Counts()
    loads = tomllib.loads
    validate = Scenario.model_validate

    def counted_loads(text: str, **kwargs: Any) -> dict[str, Any]:
        data = loads(text, **kwargs)
        seen.parses += "groups" in data  # a scenario, not one of the profile tables
        return data

    def counted_validate(data: Any, **kwargs: Any) -> Scenario:
        seen.validations += 1
        return validate(data, **kwargs)

    monkeypatch.setattr(tomllib, "loads", counted_loads)
    monkeypatch.setattr(Scenario, "model_validate", counted_validate)
    yield seen


# -- with_duration and with_seed ----------------------------------------------------------------


def test_with_duration_sets_the_run_and_caps_the_warmup() -> None:
    scenario = load_scenario(small())
    longer = scenario.with_duration(5.0)
    assert (longer.run.duration, longer.run.warmup) == (5.0, 0.1), (
        "a warm-up shorter than a tenth is kept"
    )
    shorter = scenario.with_duration(0.5)
    assert (shorter.run.duration, shorter.run.warmup) == (0.5, 0.05), (
        "the warm-up is cut to a tenth of the duration"
    )
    assert shorter.model_dump(exclude={"run"}) == scenario.model_dump(exclude={"run"})
    assert (shorter.run.seed, shorter.run.sample_interval) == (3, 0.25)
    assert scenario.run.duration == 1.0, "the original is unchanged"


def test_the_scenarios_own_duration_keeps_its_warmup_and_says_nothing() -> None:
    """``--duration`` equal to the file's: the run as written (its window unchanged), where the
    tenth rule would have cut default.toml's 4 s warm-up of 20 s to 2 s."""
    scenario = load_scenario(ROOT / "scenarios" / "default.toml")
    assert (scenario.run.duration, scenario.run.warmup) == (20.0, 4.0)
    assert scenario.with_duration(20.0) is scenario
    assert scenario.warmup_cut(20.0) is None
    assert scenario.warmup_cut(40.0) is None  # a longer run keeps the file's warm-up
    assert scenario.warmup_cut(10.0) == (
        "the warm-up is cut from 4 s to 1 s, a tenth of the 10 s asked for (the file runs 20 s): "
        "the measured window starts at 1 s"
    )


def test_the_warmup_never_shrinks_as_the_run_lengthens() -> None:
    """A run longer than the file's keeps its warm-up (the tenth rule cut default's 4 s to 3 s at
    30 s); a shorter one takes the time it loses from the warm-up first, down to a tenth of the
    run: w(D) = min(w, max(D / 10, w - (D_file - D))), so a ``run.duration`` sweep through the
    file's own duration measures even windows (a code review, 62.10)."""
    scenario = load_scenario(ROOT / "scenarios" / "default.toml")  # 20 s, 4 s warm-up
    cuts = {d: scenario.with_duration(d).run.warmup for d in (2, 10, 17.8, 19, 19.9, 21, 30, 60)}
    assert cuts == {2: 0.2, 10: 1.0, 17.8: 1.8, 19: 3.0, 19.9: 3.9, 21: 4.0, 30: 4.0, 60: 4.0}
    assert scenario.warmup_cut(30.0) is None
    assert scenario.warmup_cut(19.0) == (
        "the warm-up is cut from 4 s to 3 s, less the 1 s by which the run is shorter (the file "
        "runs 20 s): the measured window starts at 3 s"
    )
    # monotone in the run's length and continuous at the file's: no step where the rule changes
    lengths = [d / 10 for d in range(5, 400)]
    warmups = [scenario.cut_warmup(d) for d in lengths]
    assert warmups == sorted(warmups)
    assert all(b - a <= 0.1 + 1e-9 for a, b in itertools.pairwise(warmups))


def test_cli_run_notes_a_cut_warmup(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "scenarios" / "default.toml")
    assert main(["run", path, "--duration", "2s", "--no-records"]) == 0
    assert "note: the warm-up is cut from 4 s to 0.2 s" in capsys.readouterr().err


def test_with_seed_changes_only_the_seed() -> None:
    scenario = load_scenario(small())
    seeded = scenario.with_seed(42)
    assert seeded.run.seed == 42
    assert seeded.model_dump(exclude={"run": {"seed"}}) == scenario.model_dump(
        exclude={"run": {"seed"}}
    )
    assert scenario.run.seed == 3


@pytest.mark.parametrize("duration", [2.0, 0.5, 0.25])
def test_with_duration_is_the_override_of_duration_and_warmup(duration: float) -> None:
    scenario = load_scenario(small())
    overridden = scenario.with_overrides(
        {"run.duration": duration, "run.warmup": min(0.1, duration / 10)}
    )
    assert scenario.with_duration(duration) == overridden


def test_a_run_of_a_few_smallest_doubles_is_refused_in_words() -> None:
    """The forty-fifth fuzz run's finding: a run of 7e-323 s, whose sample interval for a stability
    test (the window over 8) has its third digit below the smallest double, ended in a
    ZeroDivisionError while the message was written; it is now told, the interval the largest
    double whose 8 samples fit."""
    scenario = load_scenario(small())
    with pytest.raises(ScenarioError) as caught:
        scenario.with_duration(7e-323, source="<test>")
    ((where, message),) = caught.value.problems
    assert where == "run.sample_interval"
    assert message.startswith("0.25 s is longer than the run (run.duration 6.91692e-323 s)")
    # 7e-323 / 8 is 1e-323 to the nearest double, whose 8 samples do not fit: the next one down
    assert message.endswith("(4.94e-324 s for 8 samples after the warm-up)")


@pytest.mark.parametrize(
    ("duration", "problems"),
    [
        (
            0.2,
            [
                (
                    "run.sample_interval",
                    "0.25 s is longer than the run (run.duration 0.2 s), which would take no "
                    "sample: give a duration of at least 0.25 s (a stability test needs 8 samples "
                    "after the warm-up: 8 x 0.25 s = 2 s past the 0.02 s warm-up), or set "
                    "run.sample_interval to at most 0.2 s (0.0225 s for 8 samples after the "
                    "warm-up)",
                )
            ],
        ),
        (0.0, [("run.duration", "must be more than 0 (got 0.0)")]),
        # the warm-up is left as written
        (-1.0, [("run.duration", "must be more than 0 (got -1.0)")]),
        (
            float("nan"),
            [("run.duration", "time nan is out of range (not a finite number) (got nan)")],
        ),
    ],
)
def test_a_duration_that_does_not_fit_names_its_source(
    duration: float, problems: list[tuple[str, str]]
) -> None:
    scenario = load_scenario(small())
    with pytest.raises(ScenarioError) as caught:
        scenario.with_duration(duration, source="<test>")
    assert (caught.value.source, caught.value.problems) == ("<test>", problems)
    with pytest.raises(ScenarioError) as overridden:
        scenario.with_overrides(
            {
                "run.duration": duration,
                "run.warmup": min(0.1, duration / 10) if duration > 0 else 0.1,
            },
            source="<test>",
        )
    assert overridden.value.problems == problems, (
        "the same problems as validating the whole scenario"
    )


def test_the_default_sources_name_the_argument() -> None:
    scenario = load_scenario(small())
    with pytest.raises(ScenarioError) as duration:
        scenario.with_duration(0.1)
    assert duration.value.source == "the duration argument (simulate(duration=...), CLI --duration)"
    with pytest.raises(ScenarioError) as seed:
        scenario.with_seed(-1)
    assert seed.value.source == "simulate(seed=...)"


@pytest.mark.parametrize(
    ("seed", "message"),
    [
        (-1, f"must be a whole number from 0 to {2**53 - 1:,} (got -1)"),
        (1.5, "must be a whole number, e.g. 4 (got 1.5)"),
    ],
)
def test_a_bad_seed_is_refused(seed: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(small()).with_seed(seed, source="<test>")
    assert (caught.value.source, caught.value.problems) == ("<test>", [("run.seed", message)])


def test_a_run_with_another_seed_is_the_run_of_that_seed() -> None:
    scenario = load_scenario(small())
    derived = simcache.simulate(scenario.with_seed(9).with_duration(0.5))
    assert simcache.simulate(scenario, seed=9, duration=0.5).records.equals(derived.records)


# -- variants are derived once, and forgotten by a changed copy ---------------------------------


def test_a_variant_is_validated_once(counts: Counts) -> None:
    scenario = load_scenario(small(variants=TWO_VARIANTS))
    assert counts.validations == 3, "the file and each of its two variants"
    assert scenario.variant("local") is scenario.variant("local")
    assert scenario.variant("local").groups[0].policy == "WB+0"
    assert counts.validations == 3


def test_a_changed_copy_derives_its_own_variants() -> None:
    scenario = load_scenario(small(variants=TWO_VARIANTS))
    assert scenario.variant("fast").run.duration == 1.0
    shorter = scenario.with_duration(0.5)
    assert shorter.variant("fast").run.duration == 0.5
    renamed = scenario.model_copy(update={"variants": {"fast": {"groups.db.policy": "WT"}}})
    assert renamed.variant("fast").groups[0].policy == "WT"
    assert renamed.variant("fast").cluster.peer_link == scenario.cluster.peer_link


def test_derived_variants_do_not_make_scenarios_differ() -> None:
    scenario = load_scenario(small(variants=TWO_VARIANTS))
    again = load_scenario(scenario.model_dump(mode="json"))
    scenario.variant("local")
    assert again == scenario


def test_checks_of_an_override_are_validated_before_checks_run() -> None:
    """An override does not validate the checks, so a bad variant is found when the checks are
    prepared."""
    scenario = load_scenario(small(variants=TWO_VARIANTS, expect=CHECKS))
    broken = scenario.with_overrides({"variants.local": {"groups.nosuch.policy": "WB+0"}})
    with pytest.raises(ScenarioError) as caught:
        prepare(broken)
    assert caught.value.source == "derived"
    assert caught.value.problems[0][0] == "variants.local.groups.nosuch.policy"


# -- validated once: simulate, check ------------------------------------------------------------


def test_simulate_with_seed_and_duration_validates_nothing_whole(counts: Counts) -> None:
    scenario = load_scenario(small())
    counts.validations = 0
    result = simcache.simulate(scenario, seed=5, duration=0.5)
    assert (result.meta["seed"], result.meta["simulated_s"]) == (5, 0.5)
    assert counts.validations == 0


def test_check_parses_and_validates_a_library_file_once(
    counts: Counts, capsys: pytest.CaptureFixture[str]
) -> None:
    path = builtin_scenarios()["default"]
    variants = len(load_scenario(path).variants)
    counts.parses = counts.validations = 0
    assert main(["check", str(path), "--seeds", "2", "--duration", "1s", "--quiet"]) in (0, 1)
    assert f"({path})" in capsys.readouterr().out
    assert counts.parses == 1
    assert counts.validations == 1 + variants, "the file once, and each variant once"


def test_check_parses_each_file_once(
    counts: Counts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("one", "two"):
        (tmp_path / f"{name}.toml").write_text(
            to_toml(small(name=name, variants=TWO_VARIANTS, expect=CHECKS)), "utf-8"
        )
    assert main(["check", str(tmp_path), "--seeds", "2", "--duration", "0.5s", "--quiet"]) == 0
    assert "6 of 6 checks passed" in capsys.readouterr().out
    assert counts.parses == 2
    assert counts.validations == 2 * (1 + len(TWO_VARIANTS))
