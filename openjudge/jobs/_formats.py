"""The dataset formats, read one record at a time: what each line or element holds, or why not.

Each reader yields a :class:`Parsed` object per record it can read and a :class:`Rejected`
per record it cannot, in file order; :func:`openjudge.jobs._datasets.iter_samples` gives
them ids. No reader holds more than one record, and none holds a record longer than its
``limit``: a longer one is skipped in bounded chunks and rejected. The formats and their
rules are described in :mod:`openjudge.jobs._datasets`.
"""

from __future__ import annotations

import codecs
import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, cast

from pydantic import JsonValue

from openjudge._text import has_surrogate
from openjudge.errors import DatasetError
from openjudge.jobs._json_array import (
    ElementTooLarge,
    JsonArrayReader,
    JsonArraySyntaxError,
    NotUtf8,
    UnreadableElement,
)

__all__ = [
    "Parsed",
    "Rejected",
    "detect_format",
    "iter_csv",
    "iter_json_array",
    "iter_jsonl",
    "unusable",
    "where",
]

_SUFFIXES: dict[str, Literal["jsonl", "json", "csv"]] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".jsonlines": "jsonl",
    ".json": "json",
    ".csv": "csv",
}
_WHITESPACE = b" \t\n\r"
_SKIP_CHUNK = 1 << 16
"""Bytes or characters read at a time while skipping the rest of a line past the limit."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """A record read as a JSON object (or a CSV row).

    Attributes:
        line: 1-based line (JSON Lines, CSV) or element index (JSON array).
        data: Its fields.
        array_line: The file line a JSON array element starts on, else ``None``.
    """

    line: int
    data: dict[str, JsonValue]
    array_line: int | None = None

    @property
    def where(self) -> str:
        return where(self.line, self.array_line)

    @property
    def unit(self) -> str:
        return "line" if self.array_line is None else "element"


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record that cannot be read: where (as :attr:`Parsed.line`), and why, starting with where."""

    line: int
    message: str


def where(line: int, array_line: int | None) -> str:
    return f"line {line}" if array_line is None else f"element {line} (line {array_line})"


def detect_format(path: Path) -> Literal["jsonl", "json", "csv"]:
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind in ("csv", "jsonl"):
        return kind
    first = _first_char(path)
    if first == "[":
        return "json"
    if first == "{" or kind is not None:
        return "jsonl"
    raise DatasetError(
        f"{path}: cannot tell the dataset format from the suffix {path.suffix!r}; "
        "use a .jsonl, .json or .csv file or pass format='jsonl', 'json' or 'csv'",
        path=path,
    )


def _open_binary(path: Path) -> IO[bytes]:
    try:
        return path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open the dataset: {exc}", path=path) from exc


def _first_char(path: Path) -> str:
    with _open_binary(path) as f:
        head = f.read(len(codecs.BOM_UTF8))
        head = head.removeprefix(codecs.BOM_UTF8)
        while True:
            stripped = head.lstrip(_WHITESPACE)
            if stripped:
                return chr(stripped[0])
            head = f.read(4096)
            if not head:
                return ""


def _open_text(path: Path, *, newline: str | None) -> IO[str]:
    """The file as text; a byte that is not UTF-8 becomes a lone surrogate, found per record."""
    try:
        return path.open(encoding="utf-8-sig", errors="surrogateescape", newline=newline)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open the dataset: {exc}", path=path) from exc


def _too_long(limit: int, unit: str) -> str:
    return (
        f"longer than the {limit:,}-{unit} limit (data.max_record_bytes; max_record_bytes= in "
        "iter_samples): raise the limit or shorten the record"
    )


def unusable(exc: RecursionError | ValueError) -> str:
    """Why a record cannot be used (after its location)."""
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply to read (about 1,000 levels or more); flatten the record"
    if isinstance(exc, ElementTooLarge):
        return _too_long(exc.limit, "character")
    if isinstance(exc, NotUtf8):
        return "not valid UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON ({exc.msg})"
    if "digits" in str(exc):
        return (
            f"a number has more than {sys.get_int_max_str_digits():,} digits (Python's limit for "
            "reading integers); write it as a string"
        )
    return f"unusable JSON value ({exc})"


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _as_object(value: object, line: int, array_line: int | None = None) -> Parsed | Rejected:
    if isinstance(value, dict):
        return Parsed(line, cast(dict[str, JsonValue], value), array_line)
    return Rejected(line, f"{where(line, array_line)}: expected a JSON object, got {_type_name(value)}")


def _bounded_lines(f: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """The lines of a binary file; ``None`` for a line longer than ``limit`` bytes (its
    newline not counted), which is read past in chunks and never held whole."""
    while raw := f.readline(limit + 1):
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        while (rest := f.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
            pass
        yield None


def iter_jsonl(path: Path, limit: int) -> Iterator[Parsed | Rejected]:
    with _open_binary(path) as f:
        for number, raw in enumerate(_bounded_lines(f, limit), start=1):
            if raw is None:
                yield Rejected(number, f"line {number}: {_too_long(limit, 'byte')}")
                continue
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                text = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                yield Rejected(number, f"line {number}: not valid UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            if not text or text.isspace():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                message = f"line {number}: invalid JSON ({exc.msg}: column {exc.colno})"
                if not raw.endswith(b"\n"):
                    message += "; the last line has no newline: is the file still being written?"
                yield Rejected(number, message)
                continue
            except (RecursionError, ValueError) as exc:
                yield Rejected(number, f"line {number}: {unusable(exc)}")
                continue
            yield _as_object(value, number)


class _LineTooLong(Exception):
    """Raised through the CSV reader in place of a line past the limit."""


class _BoundedTextLines:
    """The lines of a text file for :func:`csv.reader`, counting them; a line longer than
    ``limit`` characters is read past in chunks and raises :class:`_LineTooLong` instead.

    A class, not a generator: the CSV reader goes on pulling lines after the exception.
    """

    def __init__(self, f: IO[str], limit: int) -> None:
        self._f = f
        self._limit = limit
        self.count = 0
        """Lines read so far."""

    def __iter__(self) -> _BoundedTextLines:
        return self

    def __next__(self) -> str:
        line = self._f.readline(self._limit + 1)
        if not line:
            raise StopIteration
        self.count += 1
        if len(line) <= self._limit or line.endswith("\n"):
            return line
        while (rest := self._f.readline(_SKIP_CHUNK)) and not rest.endswith("\n"):
            pass
        raise _LineTooLong


def iter_csv(path: Path, limit: int) -> Iterator[Parsed | Rejected]:
    with _open_text(path, newline="") as f:
        lines = _BoundedTextLines(f, limit)
        reader = csv.reader(lines, strict=True)
        header: list[str] | None = None
        end = 0
        while True:
            start = end + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                end = lines.count
                yield Rejected(start, f"line {start}: invalid CSV ({exc})")
                continue
            except _LineTooLong:  # the long line itself: a quoted row may have begun before it
                end = lines.count
                yield Rejected(end, f"line {end}: {_too_long(limit, 'character')}")
                continue
            end = lines.count
            if not row:
                continue
            if any(has_surrogate(value) for value in row):
                if header is None:
                    raise DatasetError(f"{path}: the CSV header is not valid UTF-8", path=path)
                yield Rejected(start, f"line {start}: not valid UTF-8")
                continue
            if header is None:
                header = row
                duplicates = sorted({name for name in row if row.count(name) > 1})
                if duplicates:
                    raise DatasetError(f"{path}: duplicate CSV column names {duplicates}", path=path)
                continue
            if len(row) != len(header):
                yield Rejected(
                    start,
                    f"line {start}: expected {len(header)} fields like the header, got {len(row)}",
                )
                continue
            yield Parsed(start, dict(zip(header, row, strict=True)))


def iter_json_array(path: Path, chunk_size: int, limit: int) -> Iterator[Parsed | Rejected]:
    with _open_text(path, newline=None) as f:
        try:
            for index, line, value in JsonArrayReader(f, chunk_size, max_element=limit):
                if isinstance(value, UnreadableElement):
                    problem = unusable(value.error)
                    if value.line is not None and value.line != line:
                        problem += f" at line {value.line}"
                    yield Rejected(index, f"{where(index, line)}: {problem}")
                    continue
                yield _as_object(value, index, line)
        except JsonArraySyntaxError as exc:
            raise DatasetError(f"{path}: line {exc.line}: {exc}", path=path, line=exc.line) from exc
