"""``--duration`` takes the scenario's time units, days among them (review 65, 15), and refuses
another unit listing those it takes."""

from __future__ import annotations

from support.cli import call


def test_a_duration_in_days_is_taken() -> None:
    code, stdout, stderr = call(["estimate", "default", "--duration", "2d"])
    assert code == 0, stderr
    assert "analytic estimate over 4-172800s" in stdout


def test_an_unknown_unit_is_refused_listing_the_units() -> None:
    code, _, stderr = call(["estimate", "default", "--duration", "2w"])
    assert code == 2
    assert stderr.rstrip().endswith(
        "error: argument --duration: unknown time unit 'w' in '2w'; use ns, us (or µs), ms, s, "
        "min, h or d (days)"
    )
