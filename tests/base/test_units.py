"""Units at the edge of the model: parsing, formatting, round trips and error messages."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcache.base.units import (
    UnitError,
    format_bandwidth,
    format_duration,
    format_size,
    parse_bandwidth,
    parse_duration,
    parse_size,
)

KiB, MiB, GiB, TiB = 1024, 1024**2, 1024**3, 1024**4

# -- sizes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4KiB", 4 * KiB),
        ("4 KiB", 4 * KiB),
        ("4kib", 4 * KiB),
        ("256k", 256 * KiB),
        ("256K", 256 * KiB),
        ("1M", MiB),
        ("1MiB", MiB),
        ("2GiB", 2 * GiB),
        ("2g", 2 * GiB),
        ("1TiB", TiB),
        ("1.5GB", 1_500_000_000),
        ("400GB", 400_000_000_000),
        ("2TB", 2_000_000_000_000),
        ("4kB", 4000),
        ("4KB", 4000),
        ("125MB", 125_000_000),
        ("512B", 512),
        ("512 bytes", 512),
        ("4096", 4096),
        ("0.5KiB", 512),
        ("1e3", 1000),
        ("0B", 0),
    ],
)
def test_parse_size_strings(text: str, expected: int) -> None:
    assert parse_size(text) == expected
    assert isinstance(parse_size(text), int)


@pytest.mark.parametrize(
    ("value", "expected"), [(4096, 4096), (0, 0), (1.4, 1), (1.6, 2), (262144.0, 262144)]
)
def test_parse_size_numbers_are_bytes(value: float, expected: int) -> None:
    assert parse_size(value) == expected


def test_parse_size_binary_and_decimal_differ() -> None:
    """KiB/k are 1024-based (as fio uses them), kB/KB 1000-based (as datasheets use them)."""
    assert parse_size("1k") == parse_size("1KiB") == 1024
    assert parse_size("1kB") == parse_size("1KB") == 1000
    assert parse_size("1G") == 1024**3 != parse_size("1GB")


def test_parse_size_negative_is_parsed_for_the_schema_to_reject() -> None:
    """The unit layer reads the number; positivity is the schema's job (and it names the field)."""
    assert parse_size("-4KiB") == -4096


# -- durations ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2us", 2e-6),
        ("2 us", 2e-6),
        ("2µs", 2e-6),
        ("65us", 65e-6),
        ("0.5ms", 0.5e-3),
        ("2ms", 2e-3),
        ("60s", 60.0),
        ("60 sec", 60.0),
        ("1.5s", 1.5),
        ("500ns", 500e-9),
        ("5min", 300.0),
        ("2h", 7200.0),
        ("0.002", 0.002),
        ("3", 3.0),
    ],
)
def test_parse_duration_strings(text: str, expected: float) -> None:
    assert parse_duration(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("value", "expected"), [(0.002, 0.002), (3, 3.0), (0, 0.0)])
def test_parse_duration_numbers_are_seconds(value: float, expected: float) -> None:
    assert parse_duration(value) == expected
    assert isinstance(parse_duration(value), float)


# -- bandwidths -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1Gbit/s", 125e6),
        ("1 Gbit/s", 125e6),
        ("1Gb/s", 125e6),
        ("1Gbps", 125e6),
        ("100Mbit/s", 12.5e6),
        ("100Mbps", 12.5e6),
        ("8Gbit/s", 1e9),
        ("10GbE", 1.25e9),
        ("1GbE", 125e6),
        ("25GbE", 3.125e9),
        ("10 GbE", 1.25e9),
        ("125MB/s", 125e6),
        ("125 MB/s", 125e6),
        ("460MB/s", 460e6),
        ("3.9GB/s", 3.9e9),
        ("1GB/s", 1e9),
        ("500kB/s", 500e3),
        ("400MiB/s", 400 * MiB),
        ("4KiB/s", 4 * KiB),
        ("1GiB/s", GiB),
        ("100B/s", 100.0),
        ("125e6", 125e6),
    ],
)
def test_parse_bandwidth_strings(text: str, expected: float) -> None:
    assert parse_bandwidth(text) == pytest.approx(expected, rel=1e-12)


def test_parse_bandwidth_big_b_is_bytes_small_b_is_bits() -> None:
    assert parse_bandwidth("1GB/s") == 8 * parse_bandwidth("1Gb/s")
    assert parse_bandwidth("1MB/s") == 8 * parse_bandwidth("1Mbit/s")


@pytest.mark.parametrize(("value", "expected"), [(125e6, 125e6), (1000, 1000.0)])
def test_parse_bandwidth_numbers_are_bytes_per_second(value: float, expected: float) -> None:
    assert parse_bandwidth(value) == expected


def test_parse_bandwidth_capital_b_bps_is_bytes() -> None:
    assert parse_bandwidth("100MBps") == pytest.approx(100e6)


# -- garbage gets a UnitError that says what is allowed -------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "4KiB"),
        ("KiB", "4KiB"),
        ("four KiB", "4KiB"),
        ("4 XiB", "KiB"),
        ("4 parsecs", "KiB"),
        ("4KiB/s", "KiB"),
        ("1..5K", "KiB"),
        ("1e400", "finite"),
    ],
)
def test_parse_size_garbage(text: str, fragment: str) -> None:
    with pytest.raises(UnitError) as info:
        parse_size(text)
    message = str(info.value)
    assert fragment in message
    assert text in message or repr(text) in message


@pytest.mark.parametrize(
    ("parse", "text", "fragment"),
    [
        (parse_duration, "", "2ms"),
        (parse_duration, "fast", "2ms"),
        (parse_duration, "5 parsecs", "ms"),
        (parse_duration, "1 fortnight", "ms"),
        (parse_duration, "2 m", "ms"),
        (parse_duration, "1e999s", "finite"),
        (parse_bandwidth, "", "125MB/s"),
        (parse_bandwidth, "lots", "125MB/s"),
        (parse_bandwidth, "1 furlong/s", "MB/s"),
        (parse_bandwidth, "10 GbX", "GbE"),
        (parse_bandwidth, "5MB", "MB/s"),
        (parse_bandwidth, "1e400MB/s", "finite"),
    ],
)
def test_parse_duration_and_bandwidth_garbage(
    parse: Callable[[str], float], text: str, fragment: str
) -> None:
    with pytest.raises(UnitError) as info:
        parse(text)
    assert fragment in str(info.value)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("parse", [parse_size, parse_duration, parse_bandwidth])
def test_booleans_are_not_quantities(parse: object) -> None:
    assert callable(parse)
    with pytest.raises(UnitError):
        parse(True)


def test_unit_error_is_a_value_error() -> None:
    """Pydantic turns ValueErrors raised by validators into field errors; UnitError must be one."""
    assert issubclass(UnitError, ValueError)


@pytest.mark.parametrize("value", [math.inf, "1e300TiB"])
def test_parse_size_overflow_is_a_unit_error(value: float | str) -> None:
    with pytest.raises(UnitError):
        parse_size(value)


def test_parse_size_nan_is_a_unit_error() -> None:
    with pytest.raises(UnitError):
        parse_size(math.nan)


def test_parse_bandwidth_overflow_is_rejected() -> None:
    with pytest.raises(UnitError):
        parse_bandwidth("1e300Tbit/s")


# -- formatting -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (262144, "256KiB"),
        (4096, "4KiB"),
        (1536, "1.5KiB"),
        (MiB, "1MiB"),
        (4 * GiB, "4GiB"),
        (2 * TiB, "2TiB"),
        (512, "512B"),
        (0, "0B"),
    ],
)
def test_format_size(nbytes: int, text: str) -> None:
    assert format_size(nbytes) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0021, "2.1ms"),
        (60.0, "60s"),
        (2e-6, "2us"),
        (65e-6, "65us"),
        (5e-9, "5ns"),
        (1.5, "1.5s"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [
        (125e6, "125MB/s"),
        (1.25e9, "1.25GB/s"),
        (460e6, "460MB/s"),
        (500e3, "500kB/s"),
        (12.0, "12B/s"),
    ],
)
def test_format_bandwidth(rate: float, text: str) -> None:
    assert format_bandwidth(rate) == text


@pytest.mark.parametrize(
    ("formatter", "value"),
    [
        (format_duration, 3600.0),
        (format_duration, 999.9),
        (format_size, 1048575),
        (format_bandwidth, 1.5e12),
        (format_bandwidth, 999.9e6),
    ],
)
def test_formatting_never_uses_scientific_notation(formatter: object, value: float) -> None:
    assert callable(formatter)
    assert "e+" not in formatter(value)


# -- round trips ----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=64 * TiB))
def test_size_format_parse_round_trip_within_three_digits(nbytes: int) -> None:
    back = parse_size(format_size(nbytes))
    assert abs(back - nbytes) <= 0.005 * nbytes + 0.5


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=1023), st.sampled_from([1, KiB, MiB, GiB, TiB]))
def test_exact_binary_multiples_round_trip_exactly(count: int, unit: int) -> None:
    nbytes = count * unit
    text = format_size(nbytes)
    assert "." not in text
    assert parse_size(text) == nbytes


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-9, max_value=1e4, allow_nan=False, allow_infinity=False))
def test_duration_format_parse_round_trip_within_three_digits(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds, rel=5e-3)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1.0, max_value=1e13, allow_nan=False, allow_infinity=False))
def test_bandwidth_format_parse_round_trip_within_three_digits(rate: float) -> None:
    assert parse_bandwidth(format_bandwidth(rate)) == pytest.approx(rate, rel=5e-3)


_SIZE_UNITS = {
    "B": 1,
    "KiB": KiB,
    "k": KiB,
    "MiB": MiB,
    "M": MiB,
    "GiB": GiB,
    "kB": 1000,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
}
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_RATE_UNITS = {
    "B/s": 1.0,
    "kB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "MiB/s": MiB,
    "GiB/s": GiB,
    "Mbit/s": 1e6 / 8,
    "Gbit/s": 1e9 / 8,
    "Gbps": 1e9 / 8,
    "GbE": 1e9 / 8,
}


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(sorted(_SIZE_UNITS)),
    st.sampled_from(["", " "]),
)
def test_parse_size_number_times_unit(number: int, unit: str, space: str) -> None:
    assert parse_size(f"{number}{space}{unit}") == number * _SIZE_UNITS[unit]


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0, max_value=1e6, allow_nan=False), st.sampled_from(sorted(_TIME_UNITS)))
def test_parse_duration_number_times_unit(number: float, unit: str) -> None:
    assert parse_duration(f"{number!r}{unit}") == pytest.approx(
        number * _TIME_UNITS[unit], rel=1e-12, abs=1e-300
    )


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0, max_value=1e6, allow_nan=False), st.sampled_from(sorted(_RATE_UNITS)))
def test_parse_bandwidth_number_times_unit(number: float, unit: str) -> None:
    assert parse_bandwidth(f"{number!r}{unit}") == pytest.approx(
        number * _RATE_UNITS[unit], rel=1e-12, abs=1e-300
    )


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.text(max_size=12),
        st.from_regex(r"\A[+-]?[0-9]{1,3}(\.[0-9]*)?([eE][+-]?[0-9]{1,3})? ?[A-Za-zµ/]{0,6}\Z"),
    )
)
def test_arbitrary_text_either_parses_or_raises_unit_error(text: str) -> None:
    """No other exception type may escape for any string a user could type (including huge
    exponents)."""
    for parse in (parse_size, parse_duration, parse_bandwidth):
        try:
            value = parse(text)
        except UnitError as exc:
            assert str(exc)
        else:
            assert isinstance(value, (int, float))
            assert math.isfinite(value)


@pytest.mark.parametrize(
    ("text", "advice"),
    [
        ("200mb/s", "write MB/s for megabytes a second or Mbit/s for megabits"),
        ("1gb/s", "write GB/s for gigabytes a second or Gbit/s for gigabits"),
        ("50 kb/s", "write kB/s for kilobytes a second or kbit/s for kilobits"),
        ("2tb/s", "write TB/s for terabytes a second or Tbit/s for terabits"),
    ],
)
def test_an_all_lower_case_rate_is_refused_not_guessed(text: str, advice: str) -> None:
    """A "200mb/s" meant as megabytes ran at 25 MB/s (bits) without a word: an 8x nobody asked for
    (review 62, item 10). "Mb/s" and "Mbps" stay bits, "MB/s" bytes."""
    with pytest.raises(UnitError) as info:
        parse_bandwidth(text)
    assert str(info.value).endswith(advice)
    assert "ambiguous rate unit" in str(info.value)
