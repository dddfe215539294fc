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
  (messages also give the line in the file). A malformed element is a :class:`BadRecord`
  when its end can still be found (its strings and brackets close); one that never closes,
  bad text between elements, or a missing closing ``]`` raises :class:`DatasetError`
  whatever ``on_error`` says: after it the position of the next element cannot be known.
  A ``.json`` file that starts with ``{`` is read as JSON Lines.
* **CSV** (``.csv``): the first non-empty row is the header; every value is a **string**
  (CSV has no types: convert in your mapper). A row with a different number of fields than
  the header is a :class:`BadRecord`. ``line`` is the physical line the row starts on.
  A field is also limited by Python's ``csv.field_size_limit()`` (131,072 characters by default).

Bytes that are not UTF-8 make their line (JSON Lines, CSV) or element (JSON) a
:class:`BadRecord`; a UTF-8 byte order mark at the start of the file is skipped.

A record longer than ``max_record_bytes`` (a JSON Lines line in bytes; a CSV line or a JSON
element in characters) is a :class:`BadRecord` too, and is skipped in bounded chunks without
being held whole: memory is bounded by the cap, not by the largest record.

Sample ids are unique within a file and stable across reruns of the same file:

* a record with an ``id_key`` field (default ``"id"``) holding a non-empty string or an
  integer gets ``str(value)``; a second record with the same id is a :class:`BadRecord`, and
  so is one whose id holds a lone surrogate (JSON's ``"\\udc00"``: not text, so it could not
  be written to a results file and read back as the same id);
* ids of the form ``invalid-line-<N>`` are reserved for bad records (:attr:`BadRecord.id`),
  so a record that claims one is a :class:`BadRecord` too: a generated id never collides
  with a user's;
* any other record gets the first 16 hex digits of the SHA-256 of its canonical JSON
  (sorted keys, no spaces, UTF-8, a lone surrogate encoded as its three bytes: Python's
  ``"surrogatepass"``), with ``-2``, ``-3``, ... appended to exact duplicates in file order.

Records a Python JSON parser cannot hold (nested about 1,000 levels deep, or an integer of
more than 4,300 digits) are :class:`BadRecord` s naming the line, like any malformed record.

Records are streamed; the id index is not: it costs about 80 bytes per record with a
content id and about 150 with an explicit one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic import JsonValue

from openjudge._text import has_surrogate
from openjudge.config._spec import DEFAULT_MAX_RECORD_BYTES
from openjudge.errors import DatasetError
from openjudge.jobs._formats import (
    Parsed,
    Rejected,
    detect_format,
    iter_csv,
    iter_json_array,
    iter_jsonl,
    unusable,
)

__all__ = [
    "BAD_RECORD_ID_PREFIX",
    "DEFAULT_MAX_RECORD_BYTES",
    "BadRecord",
    "DatasetError",
    "DatasetFormat",
    "SampleRecord",
    "iter_samples",
    "sample_id",
]

DatasetFormat: TypeAlias = Literal["auto", "jsonl", "json", "csv"]

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
    return hashlib.sha256(_CANONICAL.encode(data).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def iter_samples(
    path: Path,
    *,
    format: DatasetFormat = "auto",
    on_error: Literal["skip", "fail"] = "skip",
    id_key: str | None = "id",
    chunk_size: int = 1 << 16,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
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
        max_record_bytes: The largest record read (see the module docstring); a larger one
            is a :class:`BadRecord`, skipped without being held in memory.

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
    if max_record_bytes < 1:
        raise ValueError(f"max_record_bytes must be at least 1, got {max_record_bytes}")
    if on_error not in ("skip", "fail"):
        raise ValueError(f"on_error must be 'skip' or 'fail', got {on_error!r}")
    if not path.is_file():
        raise DatasetError(f"{path}: cannot open the dataset: no such file", path=path)
    kind = detect_format(path) if format == "auto" else format
    if kind == "jsonl":
        raw = iter_jsonl(path, max_record_bytes)
    elif kind == "json":
        raw = iter_json_array(path, chunk_size, max_record_bytes)
    elif kind == "csv":
        raw = iter_csv(path, max_record_bytes)
    else:
        raise ValueError(f"format must be 'auto', 'jsonl', 'json' or 'csv', got {format!r}")
    return _with_ids(path, raw, _IdIndex(id_key), fail=on_error == "fail")


def _with_ids(
    path: Path, raw: Iterator[Parsed | Rejected], ids: _IdIndex, *, fail: bool
) -> Iterator[SampleRecord | BadRecord]:
    for item in raw:
        if isinstance(item, Parsed):
            record: SampleRecord | BadRecord = ids.assign(item)
        else:
            record = BadRecord(item.line, item.message)
        if fail and isinstance(record, BadRecord):
            raise DatasetError(f"{path}: {record.message}", path=path, line=record.line)
        yield record


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

    def assign(self, parsed: Parsed) -> SampleRecord | BadRecord:
        if self._id_key is not None and self._id_key in parsed.data:
            value = parsed.data[self._id_key]
            if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
                return BadRecord(
                    parsed.line,
                    f"{parsed.where}: field {self._id_key!r} must be a non-empty string or an "
                    f"integer, got {value!r}",
                )
            explicit = str(value)
            if has_surrogate(explicit):
                return BadRecord(
                    parsed.line,
                    f"{parsed.where}: id {explicit!r} holds a lone surrogate (a \\u escape of half a "
                    "UTF-16 pair), which is not text and cannot be written as an id; give this record "
                    "an id of valid text",
                )
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
        except (RecursionError, ValueError) as exc:  # held by the parser, too deep to encode from here
            return BadRecord(parsed.line, f"{parsed.where}: {unusable(exc)}")
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
