"""Delimited text read in chunks of rows, with errors that name the file's line and field.

The CSV trace importers (:mod:`.msr`, :mod:`.csv_trace`) parse with pandas' C
reader :data:`CHUNK_ROWS` rows at a time and check each chunk's columns with
numpy. A bad value is found by its row's position, so the error names the
file's line without a second pass, and nothing after the chunk holding it is
read. Blank lines are kept as empty rows (then dropped and counted) so that
row numbers and line numbers agree; a quoted field spanning lines would shift
them, and neither format has one.
"""

from __future__ import annotations

import csv
import re
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcache.base.errors import WorkloadFileError
from simcache.traces.formats.base import LineError, check_regular_file, is_gzip, numbered_lines

__all__ = ["CHUNK_ROWS", "INT64_MAX", "RowChunks", "Rows", "option_text", "split_line"]

CHUNK_ROWS = 1 << 16
"""Rows parsed and checked at a time (the trace builder's block size)."""
_UNREADABLE = (
    pd.errors.ParserError,
    UnicodeDecodeError,
    ValueError,
    OSError,
    EOFError,
    zlib.error,  # a damaged gzip stream
)
"""What pandas' reader raises at rows it cannot read (the error then names the line)."""
INT64_MAX = int(np.iinfo(np.int64).max)


class RowChunks:
    """The data rows of a delimited text file, :data:`CHUNK_ROWS` at a time, as :class:`Rows`.

    ``fields`` name the columns in order (for messages); a line with more
    fields is an error naming it, a line with fewer leaves the rest missing
    (an error when the importer needs them). After iterating,
    :attr:`empty_lines` counts the blank lines skipped.
    """

    def __init__(
        self, path: Path, fields: Sequence[str], delimiter: str = ",", skip_lines: int = 0
    ):
        self.path = path
        self.fields = tuple(fields)
        self.delimiter = delimiter
        self.skip_lines = skip_lines
        self.empty_lines = 0

    def __iter__(self) -> Iterator[Rows]:
        check_regular_file(self.path)
        rows_read = 0
        try:  # the C reader reads the first rows when it is made: a bad first row raises here
            reader = self._reader(self.skip_lines, CHUNK_ROWS)
        except _UNREADABLE as exc:
            yield from self._unreadable(self.skip_lines + 1, exc)
        with reader:
            while True:
                try:
                    # pandas drops the extra fields of a chunk's first rows with only a warning:
                    # here it is an error.
                    with warnings.catch_warnings():
                        warnings.simplefilter("error", pd.errors.ParserWarning)
                        frame = next(reader)
                except StopIteration:
                    return
                except (pd.errors.ParserWarning, *_UNREADABLE) as exc:
                    yield from self._unreadable(self.skip_lines + rows_read + 1, exc)
                rows_read += len(frame)
                yield from self._data_rows(frame)

    def _reader(self, skip: int, chunk_rows: int | None, rows: int | None = None) -> Any:
        """pandas' C reader of the file's lines after the first ``skip``: ``chunk_rows`` at a
        time (or all at once, at most ``rows``)."""
        return pd.read_csv(
            self.path,
            sep=self.delimiter,
            header=None,
            names=list(range(len(self.fields))),
            skiprows=skip,
            nrows=rows,
            index_col=False,
            skip_blank_lines=False,
            skipinitialspace=True,
            keep_default_na=False,
            na_values=[""],
            chunksize=chunk_rows,
            encoding="utf-8",
            engine="c",
            compression="gzip" if is_gzip(self.path) else None,
        )

    def _data_rows(self, frame: pd.DataFrame) -> Iterator[Rows]:
        """``frame``'s rows without the blank lines (counted), if any are left."""
        empty = frame.isna().all(axis=1).to_numpy()
        if empty.any():
            self.empty_lines += int(empty.sum())
            frame = frame[~empty]
        if len(frame):
            yield Rows(self, frame)

    def _unreadable(self, start: int, exc: Exception) -> Iterator[Rows]:
        """The rows from line ``start`` up to the line the reader could not take, then the error
        naming that line: a value the importer refuses above it is the first problem of the file,
        and is reported instead (review 65: the first bad line, not the first the reader balks
        at)."""
        line, error = self._locate(start, exc)
        if line is not None and line > start:
            try:
                frame = self._reader(start - 1, None, line - start)
            except _UNREADABLE:  # a damaged gzip stream: its rows cannot be read apart from it
                raise error from None
            frame.index += start - 1 - self.skip_lines  # rows numbered from the data's first
            yield from self._data_rows(frame)
        raise error

    def line(self, row: int) -> int:
        """The file line (from 1) of data row ``row`` (from 0)."""
        return self.skip_lines + row + 1

    def fields_on(self, line: int) -> int:
        """How many fields line ``line`` has (the file read again up to it: for error messages)."""
        for number, text in numbered_lines(self.path):
            if number == line:
                return len(split_line(self.path, number, text, self.delimiter))
        return 0

    def _locate(self, start: int, exc: Exception) -> tuple[int | None, WorkloadFileError]:
        """The first line from ``start`` on that the reader could not take (an unclosed quote,
        too many fields, or not UTF-8), and the error naming it."""
        expected = len(self.fields)
        try:
            for number, text in numbered_lines(self.path):  # raises at a line that is not UTF-8
                if number < start:
                    continue
                if text.count('"') % 2:
                    return number, WorkloadFileError.at(
                        self.path,
                        number,
                        "",
                        'a quote (") that is never closed: the rest of the file would be one '
                        "field; remove it",
                    )
                fields = split_line(self.path, number, text, self.delimiter)
                if len(fields) > expected:
                    return number, WorkloadFileError.at(
                        self.path,
                        number,
                        "",
                        f"{len(fields)} fields; expected {expected} ({', '.join(self.fields)}) "
                        f"separated by {self.delimiter!r}: remove the extra ones (a field holding "
                        f"{self.delimiter!r} goes in double quotes)",
                    )
        except LineError as error:
            return error.line, error
        found = re.search(r"line (\d+)", str(exc))
        message = re.sub(r"^Error tokenizing data\. C error: ", "", str(exc)).strip()
        line = int(found.group(1)) if found else None
        return line, WorkloadFileError.at(self.path, line, "", f"cannot read the row: {message}")


def split_line(path: Path, number: int, text: str, delimiter: str) -> list[str]:
    """The fields of line ``number`` (its text without the line end); a line the csv module
    cannot split is an error naming it (a carriage return inside the line, say)."""
    try:
        return next(csv.reader([text], delimiter=delimiter, skipinitialspace=True), [])
    except csv.Error as exc:
        raise LineError.on(path, number, "", f"cannot split the line into fields: {exc}") from None


class Rows:
    """One chunk of rows; each accessor checks a column and returns it as a numpy array, or
    raises naming the line."""

    def __init__(self, chunks: RowChunks, frame: pd.DataFrame):
        self.chunks = chunks
        self.frame = frame

    def __len__(self) -> int:
        return len(self.frame)

    def lines(self) -> np.ndarray:
        """The file line (from 1) of each row."""
        return self.frame.index.to_numpy(dtype=np.int64) + self.chunks.skip_lines + 1

    def error(self, position: int, column: int, message: str) -> LineError:
        """An error at the ``position``-th row of this chunk, in ``column``."""
        row = int(self.frame.index[position])
        return LineError.on(
            self.chunks.path, self.chunks.line(row), self.chunks.fields[column], message
        )

    def earliest(self, *reads: Callable[[], Any]) -> list[Any]:
        """What each of ``reads`` (this chunk's column accessors) returns; when some refuse a
        value, the refusal at the earliest line (of one line, the first read's). Each column
        checked in turn would report a later line of the first column before a bad first line in
        another (review 65: blkparse text read as MSR was refused at line 15,001, its summary,
        because the first field of its event lines reads as a number)."""
        values: list[Any] = []
        first: LineError | None = None
        for read in reads:
            try:
                values.append(read())
            except LineError as error:
                values.append(None)
                if first is None or (error.line or 0) < (first.line or 0):
                    first = error
        if first is not None:
            raise first
        return values

    def _missing(self, position: int, column: int) -> WorkloadFileError:
        expected = len(self.chunks.fields)
        found = self.chunks.fields_on(self.chunks.line(int(self.frame.index[position])))
        fix = (
            f"this line has {found}: add the missing ones, or remove the line"
            if found < expected
            else "this one is empty: fill it in, or remove the line"
        )
        return self.error(
            position,
            column,
            f"missing value (each line has {expected} fields: {', '.join(self.chunks.fields)}); "
            + fix,
        )

    def integers(
        self, column: int, what: str, minimum: int = 0, maximum: int = INT64_MAX, limit: str = ""
    ) -> np.ndarray:
        """The column as int64, each value a whole number from ``minimum`` to ``maximum``.

        ``what`` says what a value is ("a whole number of bytes"); ``limit`` says why ``maximum`` is
        the limit.
        """
        series = self.frame[column]
        values: np.ndarray
        if series.dtype.kind == "i":
            values = series.to_numpy(np.int64)
        elif series.dtype.kind == "f" and _whole(series.to_numpy(np.float64)):
            values = series.to_numpy(np.float64).astype(np.int64)
        else:
            values = self._parse(column, what, _whole_number)
        if len(values) and (values.min() < minimum or values.max() > maximum):
            position = int(np.flatnonzero((values < minimum) | (values > maximum))[0])
            value = int(values[position])
            if value < minimum:
                bound = "must not be negative" if minimum == 0 else f"must be at least {minimum:,}"
            else:
                bound = f"must be at most {maximum:,}" + (f" ({limit})" if limit else "")
            raise self.error(position, column, f"{value:,} {bound}")
        return values

    def numbers(
        self, column: int, what: str, minimum: float | None = None, allow_missing: bool = False
    ) -> np.ndarray:
        """The column as int64 (when every value is whole and written so) or float64; missing
        values are NaN if allowed."""
        series = self.frame[column]
        values: np.ndarray
        if series.dtype.kind in "if":
            values = series.to_numpy()
        else:
            values = self._parse(column, what, _number, allow_missing)
        if values.dtype.kind == "f":
            bad = ~np.isfinite(values) if not allow_missing else np.isinf(values)
            if bad.any():
                position = int(np.flatnonzero(bad)[0])
                if np.isnan(values[position]):
                    raise self._missing(position, column)
                raise self.error(position, column, f"expected {what}, found {values[position]}")
        if minimum is not None and len(values):
            low = values < minimum
            if low.any():
                position = int(np.flatnonzero(low)[0])
                bound = "must not be negative" if minimum == 0 else f"must be at least {minimum}"
                raise self.error(position, column, f"{values[position]} {bound}")
        return values

    def _parse(
        self, column: int, what: str, parse: Callable[[str], Any], allow_missing: bool = False
    ) -> np.ndarray:
        """The column's values parsed one by one (text in a numeric column: find the first bad
        one)."""
        parsed: list[Any] = []
        for position, value in enumerate(self.frame[column].to_numpy(object)):
            if _is_missing(value):
                if not allow_missing:
                    raise self._missing(position, column)
                parsed.append(float("nan"))
                continue
            try:
                parsed.append(parse(str(value).strip()))
            except (ValueError, OverflowError):
                raise self.error(
                    position, column, f"expected {what}, found {str(value).strip()!r}"
                ) from None
        if any(isinstance(v, float) for v in parsed):
            return np.array(parsed, dtype=np.float64)
        try:
            return np.array(parsed, dtype=np.int64)
        except OverflowError:
            position = next(i for i, v in enumerate(parsed) if not -INT64_MAX - 1 <= v <= INT64_MAX)
            raise self.error(
                position, column, f"{parsed[position]:,} is too large (at most {INT64_MAX:,})"
            ) from None

    def categories(self, column: int) -> tuple[np.ndarray, list[str]]:
        """Each row's index into the column's distinct values, and those values as text (in order of
        first appearance).

        Text is stripped; whole numbers read as numbers are written without ``.0``.
        """
        codes, uniques = pd.factorize(self.frame[column])
        if len(codes) and codes.min() < 0:
            raise self._missing(int(np.flatnonzero(codes < 0)[0]), column)
        return codes.astype(np.int64), [_text(value) for value in uniques]

    def codes(self, column: int, lookup: Callable[[str], int | None], allowed: str) -> np.ndarray:
        """Each row's ``lookup(text)`` (see :meth:`categories`); ``None`` is an error saying what
        is ``allowed``."""
        codes, texts = self.categories(column)
        table = np.empty(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            code = lookup(text)
            if code is None:
                raise self.error(
                    int(np.flatnonzero(codes == i)[0]),
                    column,
                    f"{text!r} is not allowed; use {allowed}",
                )
            table[i] = code
        result: np.ndarray = table[codes]
        return result


def _whole(values: np.ndarray) -> bool:
    """Every value finite, whole and within int64 (a float column of whole numbers, e.g.
    ``4096.0``)."""
    return bool(
        np.all(np.isfinite(values) & (values == np.floor(values)) & (np.abs(values) < 2.0**63))
    )


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        number = float(text)
        if not number.is_integer():
            raise
        return int(number)


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        number = float(text)
        if number != number or number in (float("inf"), float("-inf")):
            raise
        return number


def _is_missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def _text(value: Any) -> str:
    """A cell as text: whole numbers the way they were most likely written (``1``, not ``1.0``)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def option_text(path: Path, options: Any, name: str, default: str) -> str:
    """A text option (``default`` when absent); anything but text is an error naming it."""
    value = options.get(name, default)
    if not isinstance(value, str):
        raise WorkloadFileError.at(path, None, f"options.{name}", f"expected text, found {value!r}")
    return value
