"""Built-in profiles: each one is valid, and each number carries its source (or says it is an
assumption)."""

from __future__ import annotations

import pytest

from simcache.cli.main import main
from simcache.spec import ArraySpec, DriveSpec, LinkSpec, TierSpec
from simcache.spec.profiles import KINDS, field_notes, get_profile, list_profiles

SPECS = {"tier": TierSpec, "link": LinkSpec, "drive": DriveSpec, "array": ArraySpec}
WORDS = ("description", "source", "kind", "volatile", "raid", "drive", "profile")
"""Fields that are names or flags, not figures needing a source."""

PROFILES = [(kind, name) for kind in KINDS for name in list_profiles(kind)]


@pytest.mark.parametrize(("kind", "name"), PROFILES, ids=[f"{k}:{n}" for k, n in PROFILES])
def test_profile_is_valid(kind: str, name: str) -> None:
    spec = SPECS[kind].model_validate(name)
    assert spec.source, f"{kind} profile {name!r} needs a source"


@pytest.mark.parametrize(("kind", "name"), PROFILES, ids=[f"{k}:{n}" for k, n in PROFILES])
def test_every_number_has_its_source_beside_it(kind: str, name: str) -> None:
    notes = field_notes(kind).get(name, {})
    missing = [
        field for field in get_profile(kind, name) if field not in WORDS and not notes.get(field)
    ]
    assert not missing, (
        f"{kind} profile {name!r}: give a source or 'assumption: why' in a comment beside "
        f"{', '.join(missing)}"
    )


def test_profiles_command_shows_each_number_with_its_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["profiles", "tier"]) == 0
    out = capsys.readouterr().out
    notes = field_notes("tier")["sata-ssd-s3700-field"]
    assert notes["write_bandwidth"] in out
    assert "source:" in out
