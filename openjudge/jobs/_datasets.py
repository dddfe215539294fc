"""Streaming dataset readers: JSON Lines, JSON arrays and CSV, one record at a time.

:func:`iter_samples` never loads a whole file. It yields a :class:`SampleRecord` for every
usable record and a :class:`BadRecord` for every record it cannot use, or raises
:class:`DatasetError` at the first bad record when ``on_error="fail"``.

Formats:

* **JSON Lines** (``.jsonl``, ``.ndjson``, ``.jsonlines``): one JSON object per line, read
  line by line as bytes and decoded per line, so one bad line never hides the others. Blank
  lines are skipped silently. A last line without a newline that does not parse (a file
  still being written) is a :class:`BadRecord`; one that parses is a normal record.
* **JSON** (``.json``): a top-level array of objects, parsed element by element from a
  sliding buffer filled in chunks of ``chunk_size`` characters; an element may span any
  number of chunks. ``SampleRecord.line`` is the element's 1-based *index* in the array
  (messages also give the line in the file). A syntax error inside the array, or a missing
  closing ``]``, raises :class:`DatasetError` whatever ``on_error`` says: after it the
  position of the next element cannot be known. A ``.json`` file that starts with ``{`` is
  read as JSON Lines.
* **CSV** (``.csv``): the first non-empty row is the header; every value is a **string**
  (CSV has no types: convert in your mapper). A row with a different number of fields than
  the header is a :class:`BadRecord`. ``line`` is the physical line the row starts on.

Sample ids are unique within a file and stable across reruns of the same file:

* a record with an ``id_key`` field (default ``"id"``) holding a non-empty string or an
  integer gets ``str(value)``; a second record with the same id is a :class:`BadRecord`;
* ids of the form ``invalid-line-<N>`` are reserved for bad records (:attr:`BadRecord.id`),
  so a record that claims one is a :class:`BadRecord` too: a generated id never collides
  with a user's;
* any other record gets the first 16 hex digits of the SHA-256 of its canonical JSON
  (sorted keys, no spaces, UTF-8), with ``-2``, ``-3``, ... appended to exact duplicates
  in file order.

Records a Python JSON parser cannot hold (nested about 1,000 levels deep, or an integer of
more than 4,300 digits) are :class:`BadRecord` s naming the line, like any malformed record.

Records are streamed; the id index is not: it costs about 80 bytes per record with a
content id and about 150 with an explicit one.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, TypeAlias, cast

from pydantic import JsonValue

from openjudge.errors import DatasetError
from openjudge.jobs._json_array import JsonArrayReader, JsonArraySyntaxError, UnreadableElement

__all__ = [
    "BAD_RECORD_ID_PREFIX",
    "BadRecord",
    "DatasetError",
    "DatasetFormat",
    "SampleRecord",
    "iter_samples",
    "sample_id",
]

DatasetFormat: TypeAlias = Literal["auto", "jsonl", "json", "csv"]

_SUFFIXES: dict[str, Literal["jsonl", "json", "csv"]] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".jsonlines": "jsonl",
    ".json": "json",
    ".csv": "csv",
}
_WHITESPACE = b" \t\n\r"
_HEX16 = re.compile("[0-9a-f]{16}")
BAD_RECORD_ID_PREFIX = "invalid-line-"
_RESERVED_ID = re.compile(re.escape(BAD_RECORD_ID_PREFIX) + "[0-9]+")


@dataclass(frozen=True, slots=True)
class SampleRecord:
    """One usable record.

    Attributes:
        line: 1-based line the record starts on (JSONL, CSV), or 1-based index of the
            element in a JSON array.
        data: The record's fields. CSV values are strings.
        id: The sample id: unique within the file and stable across reruns.
    """

    line: int
    data: dict[str, JsonValue]
    id: str


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that cannot be used, and why.

    Attributes:
        line: Where it is, counted as in :attr:`SampleRecord.line`.
        message: What is wrong, starting with its location, e.g.
            ``"line 12: invalid JSON (Expecting ',' delimiter: column 8)"``.
    """

    line: int
    message: str

    @property
    def id(self) -> str:
        """The id its results are written under: ``invalid-line-<line>`` (reserved: no
        usable record can have it)."""
        return f"{BAD_RECORD_ID_PREFIX}{self.line}"


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sample_id(data: dict[str, JsonValue]) -> str:
    """The content id of a record: 16 hex digits of the SHA-256 of its canonical JSON."""
    return hashlib.sha256(_CANONICAL.encode(data).encode("utf-8")).hexdigest()[:16]


def iter_samples(
    path: Path,
    *,
    format: DatasetFormat = "auto",
    on_error: Literal["skip", "fail"] = "skip",
    id_key: str | None = "id",
    chunk_size: int = 1 << 16,
) -> Iterator[SampleRecord | BadRecord]:
    """Stream the records of a dataset file.

    Args:
        path: The dataset file.
        format: ``"jsonl"``, ``"json"`` (a top-level array) or ``"csv"``; ``"auto"`` picks by
            file suffix, then by the first character (``[`` means a JSON array).
        on_error: ``"skip"`` yields a :class:`BadRecord` for each bad record and goes on;
            ``"fail"`` raises :class:`DatasetError` at the first one.
        id_key: The field holding an explicit sample id; ``None`` always uses content ids.
        chunk_size: Characters read at a time from a JSON array file.

    Yields:
        A :class:`SampleRecord` per usable record and, with ``on_error="skip"``, a
        :class:`BadRecord` per unusable one, in file order.

    Raises:
        DatasetError: If the file cannot be opened or its format told (at the call), if it
            cannot be read as the format, or (``on_error="fail"``) at the first bad record,
            while iterating. The message names the file and the line.
        ValueError: If an argument is invalid (at the call).
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    if on_error not in ("skip", "fail"):
        raise ValueError(f"on_error must be 'skip' or 'fail', got {on_error!r}")
    if not path.is_file():
        raise DatasetError(f"{path}: cannot open the dataset: no such file", path=path)
    kind = _detect_format(path) if format == "auto" else format
    if kind == "jsonl":
        raw = _iter_jsonl(path)
    elif kind == "json":
        raw = _iter_json_array(path, chunk_size)
    elif kind == "csv":
        raw = _iter_csv(path)
    else:
        raise ValueError(f"format must be 'auto', 'jsonl', 'json' or 'csv', got {format!r}")
    return _with_ids(path, raw, _IdIndex(id_key), fail=on_error == "fail")


def _with_ids(
    path: Path, raw: Iterator[_Parsed | BadRecord], ids: _IdIndex, *, fail: bool
) -> Iterator[SampleRecord | BadRecord]:
    for item in raw:
        if isinstance(item, _Parsed):
            record: SampleRecord | BadRecord = ids.assign(item)
        else:
            record = item
        if fail and isinstance(record, BadRecord):
            raise DatasetError(f"{path}: {record.message}", path=path, line=record.line)
        yield record


@dataclass(frozen=True, slots=True)
class _Parsed:
    line: int
    data: dict[str, JsonValue]
    array_line: int | None = None  # the file line of a JSON array element

    @property
    def where(self) -> str:
        return _where(self.line, self.array_line)

    @property
    def unit(self) -> str:
        return "line" if self.array_line is None else "element"


def _where(line: int, array_line: int | None) -> str:
    return f"line {line}" if array_line is None else f"element {line} (line {array_line})"


class _IdIndex:
    """Assigns unique, stable ids in file order.

    Plain content ids (the common case) are kept as 64-bit ints in a set, about 80 bytes
    each; explicit and suffixed ids as strings with the line they were first seen on.
    """

    def __init__(self, id_key: str | None) -> None:
        self._id_key = id_key
        self._hashes: set[int] = set()
        self._seen: dict[str, int] = {}
        self._next_suffix: dict[str, int] = {}

    def _taken(self, candidate: str) -> bool:
        if candidate in self._seen:
            return True
        return _HEX16.fullmatch(candidate) is not None and int(candidate, 16) in self._hashes

    def assign(self, parsed: _Parsed) -> SampleRecord | BadRecord:
        if self._id_key is not None and self._id_key in parsed.data:
            value = parsed.data[self._id_key]
            if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
                return BadRecord(
                    parsed.line,
                    f"{parsed.where}: field {self._id_key!r} must be a non-empty string or an "
                    f"integer, got {value!r}",
                )
            explicit = str(value)
            if _RESERVED_ID.fullmatch(explicit):
                return BadRecord(
                    parsed.line,
                    f"{parsed.where}: id {explicit!r} is reserved for malformed records "
                    f"(ids '{BAD_RECORD_ID_PREFIX}<number>'); give this record another id",
                )
            if self._taken(explicit):
                first = self._seen.get(explicit)
                seen = f" (first seen at {parsed.unit} {first})" if first is not None else ""
                return BadRecord(parsed.line, f"{parsed.where}: duplicate id {explicit!r}{seen}")
            self._seen[explicit] = parsed.line
            return SampleRecord(parsed.line, parsed.data, explicit)
        try:
            base = sample_id(parsed.data)
        except (RecursionError, ValueError) as exc:  # unreachable for records the parser accepted
            return BadRecord(parsed.line, f"{parsed.where}: {_unusable(exc)}")
        key = int(base, 16)
        if key not in self._hashes and base not in self._seen:
            self._hashes.add(key)
            return SampleRecord(parsed.line, parsed.data, base)
        suffix = self._next_suffix.get(base, 2)
        while self._taken(candidate := f"{base}-{suffix}"):
            suffix += 1
        self._next_suffix[base] = suffix + 1
        self._seen[candidate] = parsed.line
        return SampleRecord(parsed.line, parsed.data, candidate)


def _detect_format(path: Path) -> Literal["jsonl", "json", "csv"]:
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


def _first_char(path: Path) -> str:
    try:
        f = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open the dataset: {exc}", path=path) from exc
    with f:
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
    try:
        return path.open(encoding="utf-8-sig", newline=newline)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open the dataset: {exc}", path=path) from exc


def _unusable(exc: RecursionError | ValueError) -> str:
    """Why valid JSON cannot be used: too deep for the parser, or a too-long integer."""
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply to read (about 1,000 levels or more); flatten the record"
    if "digits" in str(exc):
        return (
            f"a number has more than {sys.get_int_max_str_digits():,} digits (Python's limit for "
            "reading integers); write it as a string"
        )
    return f"unusable JSON value ({exc})"


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _as_object(value: object, line: int, array_line: int | None = None) -> _Parsed | BadRecord:
    if isinstance(value, dict):
        return _Parsed(line, cast(dict[str, JsonValue], value), array_line)
    where = _where(line, array_line)
    return BadRecord(line, f"{where}: expected a JSON object, got {_type_name(value)}")


def _iter_jsonl(path: Path) -> Iterator[_Parsed | BadRecord]:
    try:
        f = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open the dataset: {exc}", path=path) from exc
    with f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                text = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                yield BadRecord(number, f"line {number}: not valid UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            if not text or text.isspace():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                message = f"line {number}: invalid JSON ({exc.msg}: column {exc.colno})"
                if not raw.endswith(b"\n"):
                    message += "; the last line has no newline: is the file still being written?"
                yield BadRecord(number, message)
                continue
            except (RecursionError, ValueError) as exc:
                yield BadRecord(number, f"line {number}: {_unusable(exc)}")
                continue
            yield _as_object(value, number)


def _iter_csv(path: Path) -> Iterator[_Parsed | BadRecord]:
    with _open_text(path, newline="") as f:
        reader = csv.reader(f, strict=True)
        header: list[str] | None = None
        end = 0
        while True:
            start = end + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                end = reader.line_num
                yield BadRecord(start, f"line {start}: invalid CSV ({exc})")
                continue
            except UnicodeDecodeError as exc:
                raise DatasetError(f"{path}: not valid UTF-8 near line {start}", path=path) from exc
            end = reader.line_num
            if not row:
                continue
            if header is None:
                header = row
                duplicates = sorted({name for name in row if row.count(name) > 1})
                if duplicates:
                    raise DatasetError(f"{path}: duplicate CSV column names {duplicates}", path=path)
                continue
            if len(row) != len(header):
                yield BadRecord(
                    start,
                    f"line {start}: expected {len(header)} fields like the header, got {len(row)}",
                )
                continue
            yield _Parsed(start, dict(zip(header, row, strict=True)))


def _iter_json_array(path: Path, chunk_size: int) -> Iterator[_Parsed | BadRecord]:
    with _open_text(path, newline=None) as f:
        try:
            for index, line, value in JsonArrayReader(f, chunk_size):
                if isinstance(value, UnreadableElement):
                    yield BadRecord(index, f"{_where(index, line)}: {_unusable(value.error)}")
                    continue
                yield _as_object(value, index, line)
        except JsonArraySyntaxError as exc:
            raise DatasetError(f"{path}: line {exc.line}: {exc}", path=path, line=exc.line) from exc
