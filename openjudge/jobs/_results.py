"""Resumable results files: a header, then one JSON object per sample, appended as samples finish.

This is the public output format of ``openjudge run``. Each line is a UTF-8 JSON object
ended by ``\\n``. The first line is a header that binds the file to the job that wrote it
(defined by :class:`~openjudge.jobs._records.HeaderLine`; it has no ``id``, so skip it)::

    {"openjudge": {"format": 1, "writer": "openjudge-graders 0.2.0", "job": FINGERPRINT}}

where FINGERPRINT describes every grader, aggregator and the id field
(:class:`~openjudge.jobs._fingerprint.JobFingerprint`). Every other line is one sample
(defined by :class:`~openjudge.jobs._records.OutcomeLine`)::

    {
      "id": str,                      # sample id, unique within the file
      "line": int | null,             # where the sample is in the dataset
      "results": {grader_name: RESULT},
      "aggregates": {name: float | null},
      "usage": {"prompt_tokens": int, "completion_tokens": int, "requests": int}
    }

where ``usage`` is summed over the sample's results and RESULT is one of::

    {"type": "score", "score": float, "normalized_score": float, "reason": str,
     "metadata": {...}, "score_range": {"low": float, "high": float,
     "higher_is_better": bool} | null, "latency_s": float | null, "queue_s": float | null,
     "usage": USAGE | null}

    {"type": "rank", "rank": [int, ...], "reason": str, "metadata": {...},
     "latency_s": float | null, "queue_s": float | null, "usage": USAGE | null}

    {"type": "error", "kind": str, "message": str, "error_type": str,
     "latency_s": float | null, "queue_s": float | null, "metadata": {...}, "usage": USAGE | null}

    {"type": "not_applicable", "reason": str}

``not_applicable`` is a grader the config's routing leaves out for the sample (its ``when``
does not hold, or the sample's graders field does not name it): neither a score nor an
error, it counts toward no mean and no error rate; an aggregate that does not apply to the
sample is absent from its ``aggregates``. ``normalized_score`` is in [0, 1] (1 is best) when the grader declares a score range and
equals ``score`` otherwise. ``latency_s`` (time the judge spent answering), ``queue_s``
(time waiting for the provider's limits) and ``usage`` are set by LLM graders only.
Non-finite floats are written as ``null``. A lone surrogate in a text (a reason, a message,
metadata taken from a response) is written as the six characters ``\\udXXX`` (the rule of
:mod:`openjudge._text`), so every line is valid UTF-8 that any JSON reader reads; sample
ids never hold one (the dataset reader refuses such ids). Readers must ignore fields they
do not know.

Resuming: :class:`ResultsWriter` reads the header and the ids already in the file, so a
rerun skips them (:mod:`._resume` decides whether the file's job is the current one). A
crash can leave at most a torn last line (no newline, or not JSON); it is cut off when the
file is reopened, so an interrupted run loses nothing that was written and repeats nothing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TypeVar, cast

from pydantic import BaseModel, JsonValue
from pydantic_core import PydanticSerializationError

from openjudge._text import encodable_json, has_surrogate
from openjudge.errors import ResultsFileError
from openjudge.jobs._records import HeaderLine, OutcomeLine, ResultsHeader, entry_from_result
from openjudge.results import RowResult, TokenUsage

if sys.platform != "win32":
    import fcntl

__all__ = [
    "SYSTEM_ERROR_KINDS",
    "ResultsFileError",
    "ResultsWriter",
    "SampleOutcome",
    "index_results",
    "read_header",
    "read_outcomes",
    "read_results",
    "result_to_json",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")


SYSTEM_ERROR_KINDS = frozenset({"provider_error", "timeout", "internal", "budget_exceeded"})
"""Error kinds the system caused (a judge unavailable, our own timeout, a bug): a rerun
re-attempts them, because the next attempt may succeed. The others (``parse_error``,
``invalid_input``, ``refused``) would come out the same and are kept."""


def result_to_json(result: RowResult) -> dict[str, JsonValue]:
    """The results-file entry (RESULT above) of one grader result, as plain JSON values."""
    return cast(dict[str, JsonValue], json.loads(entry_from_result(result).model_dump_json()))


@dataclass(frozen=True, slots=True)
class SampleOutcome:
    """Every grader's result for one sample: one line of the results file.

    Attributes:
        id: The sample id.
        line: Where the sample is in the dataset, if known.
        results: Grader name to result (``NotApplicable`` where routing leaves the grader out).
        aggregates: Aggregator name to value (``None`` if it could not be computed; absent
            if it does not apply to the sample).
    """

    id: str
    line: int | None
    results: Mapping[str, RowResult]
    aggregates: Mapping[str, float | None] = field(default_factory=dict)

    @property
    def usage(self) -> TokenUsage:
        """Tokens and requests summed over the results."""
        total = TokenUsage()
        for result in self.results.values():
            if result.usage is not None:
                total = total + result.usage
        return total

    def to_line(self) -> OutcomeLine:
        """The typed results-file line."""
        return OutcomeLine(
            id=self.id,
            line=self.line,
            results={name: entry_from_result(result) for name, result in self.results.items()},
            aggregates=dict(self.aggregates),
            usage=self.usage,
        )

    def to_json(self) -> dict[str, JsonValue]:
        """The results-file line as plain JSON values."""
        return cast(dict[str, JsonValue], json.loads(self.to_line().model_dump_json()))


class ResultsWriter:
    """Appends outcomes to a results file, resuming where a previous run stopped.

    Opening (``with ResultsWriter(path) as writer``) creates the file and its folder if
    needed, takes an exclusive advisory lock (POSIX; a second run on the same file fails
    fast), reads the header and the ids already written and cuts off a torn last line left
    by a crash. Every :meth:`write` appends one complete line with a single unbuffered
    write; if the write fails the file is truncated back, so it never holds half a line
    while open.

    Call it from one thread or task only: it has no internal lock.

    Args:
        path: The results file (JSON Lines).
        fsync_every: Call ``os.fsync`` after this many lines (``None``: never by count).
        fsync_interval_s: Call ``os.fsync`` when this many seconds have passed since the
            last one (``None``: never by time). ``close`` always syncs.
    """

    def __init__(
        self,
        path: Path,
        *,
        fsync_every: int | None = 100,
        fsync_interval_s: float | None = 5.0,
    ) -> None:
        if fsync_every is not None and fsync_every < 1:
            raise ValueError(f"fsync_every must be at least 1 or None, got {fsync_every}")
        self.path = path
        self._fsync_every = fsync_every
        self._fsync_interval_s = fsync_interval_s
        self._fd: int | None = None
        self._size = 0
        self._done: set[str] = set()
        self._failed: frozenset[str] = frozenset()
        self._header: ResultsHeader | None = None
        self._unsynced = 0
        self._last_sync = 0.0
        self.truncated_bytes = 0
        """Bytes of a torn last line cut off when the file was opened."""

    def __enter__(self) -> ResultsWriter:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> None:
        """Open, lock and recover the file. Called by ``__enter__``."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already open")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)  # no newline translation
        fd = os.open(self.path, flags, 0o644)
        opened = False
        try:
            _lock(fd, self.path)
            scan = _scan(self.path)
            if scan.good_size < scan.total_size:
                os.ftruncate(fd, scan.good_size)
                os.fsync(fd)
                self.truncated_bytes = scan.total_size - scan.good_size
                logger.warning("%s: cut off a torn last line (%d bytes)", self.path, self.truncated_bytes)
            if created:
                _fsync_dir(self.path.parent)
            opened = True
        finally:
            if not opened:
                os.close(fd)
        self._fd = fd
        self._size = scan.good_size
        self._done = scan.ids
        self._failed = frozenset(scan.failed)
        self._header = scan.header
        self._last_sync = time.monotonic()

    @property
    def header(self) -> ResultsHeader | None:
        """The file's header, or ``None`` if it has none (new, or written before headers)."""
        self._require_open()
        return self._header

    def set_header(self, header: ResultsHeader) -> None:
        """Start the file with ``header``, replacing the one it has.

        Raises:
            ResultsFileError: If the file already holds results (they belong to its header).
        """
        fd = self._require_open()
        if self._done:
            raise ResultsFileError(f"{self.path} already holds results: its header cannot change")
        data = _line_bytes(HeaderLine(openjudge=header))
        os.ftruncate(fd, 0)
        self._size = 0
        self._append(fd, data)
        self._header = header
        self.sync()

    def completed_ids(self) -> set[str]:
        """Ids already in the file, including those written since it was opened."""
        self._require_open()
        return set(self._done)

    @property
    def failed_ids(self) -> frozenset[str]:
        """Ids whose line (when the file was opened) holds a result of a :data:`SYSTEM_ERROR_KINDS` kind."""
        self._require_open()
        return self._failed

    def __contains__(self, sample_id: object) -> bool:
        return sample_id in self._done

    def __len__(self) -> int:
        """Samples in the file."""
        return len(self._done)

    def read_line(self, offset: int, length: int) -> OutcomeLine:
        """The sample line at ``offset`` (as :func:`index_results` gives it)."""
        raw = os.pread(self._require_open(), length, offset)
        return OutcomeLine.model_validate_json(raw)

    def write(self, outcome: SampleOutcome | OutcomeLine) -> None:
        """Append one outcome as one line.

        Texts holding a lone surrogate are written by the rule of :mod:`openjudge._text`.

        Raises:
            ValueError: If the sample id is already in the file, or holds a lone surrogate
                (it could not be read back as the same id).
            OSError: If the write fails; the file is left as it was before the call.
        """
        fd = self._require_open()
        line = outcome.to_line() if isinstance(outcome, SampleOutcome) else outcome
        if line.id in self._done:
            raise ValueError(f"sample {line.id!r} is already in {self.path}: skip the ids in completed_ids()")
        if has_surrogate(line.id):
            raise ValueError(
                f"sample id {line.id!r} holds a lone surrogate, which is not text: it cannot be written "
                "and read back as the same id (iter_samples refuses such records)"
            )
        self._append(fd, _line_bytes(line))
        self._done.add(line.id)
        self._unsynced += 1
        if (self._fsync_every is not None and self._unsynced >= self._fsync_every) or (
            self._fsync_interval_s is not None
            and time.monotonic() - self._last_sync >= self._fsync_interval_s
        ):
            self.sync()

    def _append(self, fd: int, data: bytes) -> None:
        written = False
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            written = True
        finally:
            if not written:  # never leave half a line behind
                os.ftruncate(fd, self._size)
        self._size += len(data)

    def sync(self) -> None:
        """Flush the file to disk (``os.fsync``)."""
        os.fsync(self._require_open())
        self._unsynced = 0
        self._last_sync = time.monotonic()

    def close(self) -> None:
        """Sync and close; safe to call twice."""
        if self._fd is None:
            return
        try:
            self.sync()
        finally:
            os.close(self._fd)
            self._fd = None

    def _require_open(self) -> int:
        if self._fd is None:
            raise RuntimeError(f"{self.path} is not open: use `with ResultsWriter(path) as writer:`")
        return self._fd


def _line_bytes(model: BaseModel) -> bytes:
    """One line of the file: the model as JSON, its texts made encodable if they must be.

    Pydantic refuses a lone surrogate in a value but writes one in a dict key as U+FFFD
    characters, so a line holding U+FFFD (rare) is written the slow way too, by the one rule.
    """
    try:
        text = model.model_dump_json()
    except PydanticSerializationError:  # a lone surrogate (the only text UTF-8 cannot hold)
        text = _encodable_dump(model)
    else:
        if not text.isascii() and "\ufffd" in text:
            text = _encodable_dump(model)
    return (text + "\n").encode("utf-8")


def _encodable_dump(model: BaseModel) -> str:
    # Python mode: mode="json" would already have turned a key's surrogate into U+FFFD.
    clean = encodable_json(cast(JsonValue, model.model_dump()))
    return type(model).model_validate(clean).model_dump_json()


def _lock(fd: int, path: Path) -> None:
    if sys.platform == "win32":
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        raise ResultsFileError(
            f"{path} is being written by another run; wait for it or pick another file"
        ) from exc


def _fsync_dir(directory: Path) -> None:
    if sys.platform == "win32":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _parse_line(raw: bytes, failed: set[str] | None = None) -> str | ResultsHeader | None:
    """A line's sample id, or the header, or ``None`` if it is neither.

    With ``failed``, the id is added to it when the line holds a system-failed result.
    """
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("id"), str):
        if failed is not None and _has_system_error(value.get("results")):
            failed.add(value["id"])
        return cast(str, value["id"])
    if "openjudge" in value:
        try:
            return HeaderLine.model_validate(value).openjudge
        except ValueError:
            return None
    return None


def _has_system_error(results: object) -> bool:
    if not isinstance(results, dict):
        return False
    return any(
        isinstance(entry, dict) and entry.get("type") == "error" and entry.get("kind") in SYSTEM_ERROR_KINDS
        for entry in results.values()
    )


@dataclass(slots=True)
class _Scan:
    header: ResultsHeader | None = None
    ids: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    offsets: dict[str, tuple[int, int]] = field(default_factory=dict)
    good_size: int = 0
    total_size: int = 0


def _scan(path: Path, *, offsets: bool = False) -> _Scan:
    """Read the header and the ids in the file, the size of its consistent prefix and its size.

    Everything from the first bad line on is torn if no good line follows it; a bad line
    followed by good ones means the file was damaged otherwise, and nothing is cut.
    """
    scan = _Scan()
    offset = 0
    first_bad: int | None = None
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            start = offset
            offset += len(raw)
            parsed = _parse_line(raw, scan.failed) if raw.endswith(b"\n") else None
            if isinstance(parsed, ResultsHeader) and number > 1:
                parsed = None  # a header belongs on the first line only
            if parsed is None:
                if raw.strip() or not raw.endswith(b"\n"):
                    first_bad = first_bad or number
                elif first_bad is None:
                    scan.good_size = offset  # a blank line is harmless
                continue
            if first_bad is not None:
                raise ResultsFileError(
                    f"{path}: line {first_bad} is not a results record but later lines are; "
                    "the file is damaged: fix or delete that line, or write to a new file"
                )
            if isinstance(parsed, ResultsHeader):
                scan.header = parsed
            else:
                if parsed in scan.ids:
                    logger.warning("%s: sample %r appears more than once", path, parsed)
                scan.ids.add(parsed)
                if offsets:
                    scan.offsets[parsed] = (start, len(raw))
            scan.good_size = offset
    scan.total_size = offset
    return scan


def index_results(path: Path) -> dict[str, tuple[int, int]]:
    """Id to ``(offset, length)`` of its line in a results file (the last line if repeated)."""
    return _scan(path, offsets=True).offsets


def read_header(path: Path) -> ResultsHeader | None:
    """The header of a results file, or ``None`` if it has none."""
    with path.open("rb") as f:
        first = f.readline()
    parsed = _parse_line(first) if first.endswith(b"\n") else None
    return parsed if isinstance(parsed, ResultsHeader) else None


def _is_header(raw: bytes) -> bool:
    return b'"openjudge"' in raw[:64] and isinstance(_parse_line(raw), ResultsHeader)


def read_results(path: Path) -> Iterator[dict[str, JsonValue]]:
    """Stream the sample lines of a results file as JSON objects (see the module docstring).

    The header and a torn last line (from a run that crashed or is still writing) are skipped.

    Raises:
        ResultsFileError: If a line other than the last is not a JSON object.
    """

    def parse(raw: bytes) -> dict[str, JsonValue]:
        value = json.loads(raw)
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        return cast(dict[str, JsonValue], value)

    return _read(path, parse)


def read_outcomes(path: Path) -> Iterator[OutcomeLine]:
    """Stream the sample lines of a results file as validated :class:`OutcomeLine` models.

    Raises:
        ResultsFileError: If a line other than a torn last line does not match the format.
    """
    return _read(path, OutcomeLine.model_validate_json)


def _read(path: Path, parse: Callable[[bytes], T]) -> Iterator[T]:
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip() or (number == 1 and _is_header(raw)):
                continue
            try:
                value = parse(raw)
            except ValueError as exc:
                if not raw.endswith(b"\n"):  # only the last line can lack one
                    logger.warning("%s: skipped a torn last line %d", path, number)
                    return
                raise ResultsFileError(f"{path}: line {number} is not a valid results record: {exc}") from exc
            yield value
