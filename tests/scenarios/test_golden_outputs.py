"""The library's simulated and estimated outputs are the stored ones (see tests/golden.py: every
text and count exactly, every figure's sums within a billionth of their magnitude)."""

from __future__ import annotations

import json

import golden


def test_library_outputs_match_the_stored_fingerprints() -> None:
    stored = json.loads(golden.GOLDEN.read_text())
    current = golden.fingerprints()
    assert sorted(current) == sorted(stored), (
        "scenarios or variants were added or removed: regenerate (tests/golden.py)"
    )
    changed = golden.differences(stored, current)
    assert not changed, f"{len(changed)} output(s) changed; first: {changed[:3]}"


def test_a_last_bit_drift_passes_and_a_changed_figure_does_not() -> None:
    # The drift between machines' vector instructions (a latency moved by 4e-13 of itself) is
    # within the fingerprint's room; one figure among 100,000 moved by 1% is not.
    values = [1.0 + i / 7 for i in range(100_000)]
    stored = golden.sums(values)
    drifted = golden.sums([v * (1 + 4e-13 * (-1) ** i) for i, v in enumerate(values)])
    assert golden.differences(stored, drifted) == []
    moved = golden.sums([*values[:-1], values[-1] * 1.01])
    assert golden.differences(stored, moved)
    # the same figures in another order: the first and the last swapped (a record's texts, its
    # group and op columns, are digested exactly, so rows in another order show there too)
    swapped = golden.sums([values[-1], *values[1:-1], values[0]])
    assert golden.differences(stored, swapped)
    assert golden.differences({"a": "x"}, {"a": "y"}) == ["a: 'x' -> 'y'"]
