"""Mutations of text files for the fuzz tests: lines flipped, cut, repeated, swapped, truncated,
inserted, and fields replaced with numbers and words that do not belong (the importers' fuzzer,
``tests/traces/test_import_fuzz.py``, and calibrate's, ``tests/workloads/test_calibrate_fuzz.py``);
and gzip files of them damaged (``tests/traces/test_import_gzip.py``).
"""

from __future__ import annotations

import gzip

from hypothesis import strategies as st

__all__ = ["JUNK", "damaged_gzip", "mutated"]

JUNK = [
    "",
    "-1",
    "0",
    "1e309",
    "nan",
    "NaN",
    "inf",
    "-4KiB",
    "99999999999999999999999",
    "x",
    "\x00",
    "é",
    ",",
    "[",
    "{",
    '"',
    "true",
]


@st.composite
def mutated(draw: st.DrawFn, text: str) -> bytes:
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(["flip", "cut", "repeat", "swap", "field", "truncate", "insert"])
        )
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "cut" and len(lines) > 1:
            del lines[i]
        elif kind == "repeat":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "field":
            separators = [s for s in (",", " ", "=") if s in lines[i]]
            if separators:
                sep = separators[0]
                parts = lines[i].split(sep)
                k = draw(st.integers(0, len(parts) - 1))
                parts[k] = draw(st.sampled_from(JUNK))
                lines[i] = sep.join(parts)
        elif kind == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif kind == "insert":
            lines.insert(i, draw(st.text(max_size=30)))
        else:
            raw = bytearray(lines[i].encode("utf-8", errors="surrogatepass"))
            if raw:
                raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
            lines[i] = raw.decode("utf-8", errors="surrogateescape")
    return "\n".join(lines).encode("utf-8", errors="surrogateescape")


GZIP_HEADER = 10
"""Bytes of a gzip member's header (no name, no comment): its deflate stream follows."""


@st.composite
def damaged_gzip(draw: st.DrawFn, text: str) -> bytes:
    """``text`` gzip-compressed, then damaged one way: bytes of the deflate stream or its trailer
    replaced (a bad block, a wrong CRC or size), the file cut short, bytes appended (a second
    member that is not one), or a byte of the header replaced."""
    data = bytearray(gzip.compress(text.encode(), mtime=0))
    how = draw(st.sampled_from(["stream", "cut", "appended", "header"]))
    if how == "stream":
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(GZIP_HEADER, len(data) - 1))] = draw(st.integers(0, 255))
    elif how == "cut":
        del data[draw(st.integers(2, len(data) - 1)) :]
    elif how == "appended":
        data += draw(st.binary(min_size=1, max_size=40))
    else:
        data[draw(st.integers(2, GZIP_HEADER - 1))] = draw(st.integers(0, 255))
    return bytes(data)
