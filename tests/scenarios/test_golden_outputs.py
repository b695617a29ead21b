"""The library's simulated and estimated outputs are the stored ones, bit for bit (see
tests/golden.py)."""

from __future__ import annotations

import json

import golden


def test_library_outputs_match_the_stored_fingerprints() -> None:
    stored = json.loads(golden.GOLDEN.read_text())
    current = golden.fingerprints()
    assert sorted(current) == sorted(stored), (
        "scenarios or variants were added or removed: regenerate (tests/golden.py)"
    )
    changed = {
        name: (stored[name], current[name]) for name in stored if stored[name] != current[name]
    }
    assert not changed, f"{len(changed)} output(s) changed; first: {next(iter(changed.items()))}"
