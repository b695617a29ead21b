"""Human units at the edge of the model: parse and format sizes, times and rates.

Inside the engine everything is plain SI: sizes in bytes (int), times in
seconds (float), rates in bytes per second (float). Scenario files and the CLI
accept the forms architects write ("4KiB", "256k", "0.5ms", "10GbE", "1Gbit/s",
"125MB/s"); this module is the only place that understands them.

Conventions (stated once, used everywhere):
- ``KiB/MiB/GiB/TiB`` and the bare ``k/K/m/M/g/G/t/T`` suffixes are binary
  (1024-based), as storage tools such as fio use them.
- ``kB/KB/MB/GB/TB`` are decimal (1000-based), as datasheets use them.
- Bit rates (``bit/s``, ``bps``, ``b/s``, ``GbE``) are decimal and divided by 8.
"""

from __future__ import annotations

import functools
import math
import re

from simcache.base.errors import echo

__all__ = [
    "TIME_UNITS",
    "UnitError",
    "format_bandwidth",
    "format_duration",
    "format_figure",
    "format_size",
    "human_size",
    "parse_bandwidth",
    "parse_duration",
    "parse_size",
]


class UnitError(ValueError):
    """A quantity could not be read; the message says which forms are allowed."""


_LONGEST = 100
"""Most characters of a quantity's text: "1.5GB" is five; a longer one is not a quantity (and is
not cached)."""
_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"

_SIZE_FACTORS: dict[str, int] = {
    "": 1,
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tib": 1024**4,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
}

_TIME_FACTORS: dict[str, float] = {
    "": 1.0,
    "s": 1.0,
    "sec": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
TIME_UNITS = "ns, us (or µs), ms, s, min, h or d (days)"
"""The time units :func:`parse_duration` takes, as its refusals list them."""

# Byte rates: decimal units as on datasheets, binary ones when written out.
_BYTE_RATE_FACTORS: dict[str, float] = {
    "b/s": 1.0,
    "kb/s": 1e3,
    "mb/s": 1e6,
    "gb/s": 1e9,
    "kib/s": 1024.0,
    "mib/s": 1024.0**2,
    "gib/s": 1024.0**3,
}

# Bit rates, decimal, converted to bytes per second.
_BIT_RATE_FACTORS: dict[str, float] = {
    "bit/s": 1 / 8,
    "bps": 1 / 8,
    "kbit/s": 1e3 / 8,
    "kbps": 1e3 / 8,
    "mbit/s": 1e6 / 8,
    "mbps": 1e6 / 8,
    "gbit/s": 1e9 / 8,
    "gbps": 1e9 / 8,
    "gbe": 1e9 / 8,
    "tbit/s": 1e12 / 8,
}


def _split(text: str, what: str, examples: str) -> tuple[float, str]:
    if len(text) > _LONGEST:
        raise UnitError(
            f"cannot read {echo(text)} as a {what}: {len(text):,} characters; write it like "
            f"{examples}"
        )
    match = re.fullmatch(_NUMBER + r"\s*(?P<unit>[^\d\s].*)?", text.strip())
    if not match:
        raise UnitError(f"cannot read {echo(text)} as a {what}; write it like {examples}")
    number = float(match.group("num"))
    if not math.isfinite(number):
        raise UnitError(f"{what} {echo(text)} is not a finite number")
    return number, (match.group("unit") or "").strip()


def parse_size(value: str | int | float) -> int:
    """Return a size in bytes from ``4096``, ``"4KiB"``, ``"256k"``, ``"1.5GB"``.

    Fractional results are rounded to the nearest byte.
    """
    if isinstance(value, bool):
        raise UnitError(f"a size must be a number of bytes or a string like {_SIZE_EXAMPLES}")
    if isinstance(value, (int, float)):
        return _bytes(_finite(_float(value, "size"), value, "size"), "", value)
    return _parse_size_text(value)


_SIZE_EXAMPLES = '4096, "4KiB", "256k", "1.5GB"'


@functools.lru_cache(maxsize=4096)
def _parse_size_text(value: str) -> int:
    """:func:`parse_size` of a string, parsed once per process: workloads and estimates meet the
    same few labels."""
    return _bytes(*_split(value, "size", _SIZE_EXAMPLES), value)


def _bytes(number: float, unit: str, value: str | int | float) -> int:
    """``number`` in ``unit`` (as written in ``value``) as whole bytes."""
    factor = _SIZE_FACTORS.get(unit.lower())
    if factor is None:
        raise UnitError(
            f"unknown size unit {unit!r} in {echo(value)}; use B, KiB, MiB, GiB, TiB "
            f"(1024-based; k, M, G are the same) or kB, MB, GB, TB (1000-based)"
        )
    return round(_finite(number * factor, value, "size"))


def parse_duration(value: str | int | float) -> float:
    """Return a time in seconds from ``0.002``, ``"2ms"``, ``"65us"``, ``"60s"``, ``"5min"``,
    ``"2h"``, ``"2d"``."""
    examples = '0.002, "2ms", "65us", "60s"'
    if isinstance(value, bool):
        raise UnitError(f"a time must be a number of seconds or a string like {examples}")
    if isinstance(value, (int, float)):
        number, unit = _float(value, "time"), ""
    else:
        number, unit = _split(value, "time", examples)
    factor = _TIME_FACTORS.get(unit if unit == "µs" else unit.lower())
    if factor is None:
        raise UnitError(f"unknown time unit {unit!r} in {echo(value)}; use {TIME_UNITS}")
    return _finite(number * factor, value, "time")


_PREFIX_WORDS = {"k": "kilo", "m": "mega", "g": "giga", "t": "tera"}


def parse_bandwidth(value: str | int | float) -> float:
    """Return a rate in bytes/s from ``125e6``, ``"125MB/s"``, ``"1Gbit/s"``, ``"10GbE"``.

    ``"NGbE"`` means the Ethernet line rate of N Gbit/s (framing overhead is
    modelled by the link, not folded in here). An all-lower-case ``"mb/s"`` (or k, g, t) is
    refused: people write it for bytes as often as for bits.
    """
    examples = '125e6, "125MB/s", "1Gbit/s", "10GbE", "400MiB/s"'
    if isinstance(value, bool):
        raise UnitError(f"a rate must be a number of bytes/s or a string like {examples}")
    if isinstance(value, (int, float)):
        return _finite(_float(value, "rate"), value, "rate")
    number, unit = _split(value, "rate", examples)
    key = unit.replace(" ", "")
    lower = key.lower()
    if len(key) == 4 and key[0] in "kmgt" and key[1:] == "b/s":
        # "mb/s": megabytes as often as megabits in the wild (an 8x difference): not guessed
        prefix, word = key[0].upper() if key[0] != "k" else "k", _PREFIX_WORDS[key[0]]
        raise UnitError(
            f"ambiguous rate unit {unit!r} in {echo(value)}: write {prefix}B/s for {word}bytes a "
            f"second or {prefix}bit/s for {word}bits"
        )
    # "B" is bytes and "b" is bits: decide which before the case is folded away.
    if key.endswith("Bps"):  # "MBps": capital B is bytes
        key, lower = key[:-3] + "B/s", lower[:-3] + "b/s"
    is_bits = (
        "bit" in lower
        or lower.endswith(("bps", "gbe"))
        or (key.endswith("b/s") and not lower.endswith("ib/s"))
    )
    if is_bits:
        factor = _BIT_RATE_FACTORS.get(lower.replace("b/s", "bit/s").replace("bitit", "bit"))
    else:
        factor = _BYTE_RATE_FACTORS.get(lower or "b/s")
    if factor is None:
        raise UnitError(
            f"unknown rate unit {unit!r} in {echo(value)}; use B/s, kB/s, MB/s, GB/s, MiB/s, "
            "bit/s, Mbit/s, Gbit/s (or Mbps, Gbps) or NGbE"
        )
    return _finite(number * factor, value, "rate")


def _float(value: int | float, what: str) -> float:
    """``value`` as a float; a whole number beyond a float's range is out of range, not an
    OverflowError."""
    try:
        return float(value)
    except OverflowError:
        raise UnitError(f"{what} {echo(value)} is out of range (not a finite number)") from None


def _finite(result: float, value: object, what: str) -> float:
    if not math.isfinite(result):
        raise UnitError(f"{what} {echo(value)} is out of range (not a finite number)")
    return result


def format_size(nbytes: float) -> str:
    """``262144`` -> ``"256KiB"``; exact binary multiples print without decimals."""
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(nbytes) >= factor:
            scaled = nbytes / factor
            return f"{scaled:.0f}{unit}" if scaled == int(scaled) else f"{_short(scaled)}{unit}"
    return f"{nbytes:.0f}B"


def _short(number: float) -> str:
    """Three significant digits without scientific notation (1023.9 -> "1024", 2.125 -> "2.12")."""
    if abs(number) >= 100:
        return f"{number:.0f}"
    return f"{number:.3g}"


def format_figure(value: float, digits: int = 4) -> str:
    """A figure for people: ``digits`` significant digits, thousands separators, no scientific
    notation and no trailing zeros: ``7200.0`` -> ``"7,200"``, ``372.529`` -> ``"372.5"``,
    ``0.0012345`` -> ``"0.001234"``, ``1234567.8`` -> ``"1,234,568"`` (a whole part is never
    cut), ``nan`` -> ``"n/a"``."""
    if not math.isfinite(value):
        return "n/a" if math.isnan(value) else ("-" if value < 0 else "") + "unbounded"
    rounded = round_figure(value, digits)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded)))) if rounded else 0
    text = f"{rounded:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def round_figure(value: float, digits: int = 4) -> float:
    """``value`` to ``digits`` significant digits (whole parts kept: 12,345.6 -> 12,346); NaN and
    infinities unchanged."""
    if not math.isfinite(value) or value == 0:
        return value
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return round(value, decimals)


def human_size(nbytes: float, digits: int = 4) -> str:
    """A size for people, binary units with a space: ``400e9`` -> ``"372.5 GiB"``, ``2**31`` ->
    ``"2 GiB"``, ``1536`` -> ``"1.5 KiB"``, ``512`` -> ``"512 B"``."""
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(nbytes) >= factor:
            return f"{format_figure(nbytes / factor, digits)} {unit}"
    return f"{format_figure(nbytes, digits)} B"


def format_duration(seconds: float) -> str:
    """``0.0021`` -> ``"2.1ms"``."""
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= factor:
            return f"{_short(seconds / factor)}{unit}"
    return f"{_short(seconds / 1e-9)}ns"


def format_bandwidth(bytes_per_s: float) -> str:
    """``125e6`` -> ``"125MB/s"`` (decimal, as datasheets print rates)."""
    for unit, factor in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if abs(bytes_per_s) >= factor:
            return f"{_short(bytes_per_s / factor)}{unit}"
    return f"{_short(bytes_per_s)}B/s"
