"""linear_percentiles against numpy.percentile: the same figures, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcache.base.metrics import HEADLINE_PERCENTILES, PERCENTILES, linear_percentiles

ALL = list(PERCENTILES.values())


def _numpy(values: np.ndarray, percents: list[float]) -> list[float]:
    with np.errstate(invalid="ignore", over="ignore"):  # infinite values: inf - inf is NaN
        figures: list[float] = np.percentile(values, percents).tolist()
    return figures


def _same(ours: list[float], theirs: list[float]) -> bool:
    """Equal as bits (NaN equal to NaN)."""
    return [np.float64(x).tobytes() for x in ours] == [np.float64(x).tobytes() for x in theirs]


@settings(max_examples=400, deadline=None)
@given(
    arrays(
        np.float64,
        st.integers(min_value=1, max_value=300),
        elements=st.floats(allow_nan=False, allow_infinity=True, width=64),
    ),
    st.lists(st.floats(min_value=0.0, max_value=100.0), min_size=1, max_size=6),
)
def test_the_figures_of_numpy_percentile(values: np.ndarray, percents: list[float]) -> None:
    """Any finite or infinite values (ties, signed zeros, overflowing spans), any percents."""
    expected = _numpy(values.copy(), percents)
    assert _same(linear_percentiles(values.copy(), percents), expected)


@pytest.mark.parametrize("n", [1, 2, 3, 100, 101, 1000, 1001])
def test_the_percentiles_of_latencies(n: int) -> None:
    """A summary's and a series' percentiles of lognormal latencies with ties, at sizes where
    ``(n - 1) * p / 100`` lands on a rank and between two."""
    rng = np.random.default_rng(n)
    values = np.round(rng.lognormal(0.0, 1.0, n), 3)  # rounded: ties among them
    for percents in (ALL, [PERCENTILES[name] for name in HEADLINE_PERCENTILES], [0.0, 100.0]):
        assert _same(linear_percentiles(values.copy(), percents), _numpy(values, percents))


def test_a_nan_makes_every_figure_nan_and_no_values_give_nan() -> None:
    values = np.array([1.0, math.nan, 3.0])
    assert all(math.isnan(x) for x in linear_percentiles(values.copy(), ALL))
    assert all(math.isnan(x) for x in _numpy(values, ALL))
    assert all(math.isnan(x) for x in linear_percentiles(np.empty(0), ALL))


def test_the_values_are_partitioned_in_place_not_changed() -> None:
    values = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    linear_percentiles(values, [50.0])
    assert sorted(values.tolist()) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert values[2] == 3.0  # the median's rank holds the median
