"""Streaming parser for a top-level JSON array, one element at a time.

Built on :meth:`json.JSONDecoder.raw_decode` over a sliding buffer filled in chunks. The
only subtlety is telling a value cut off by the end of the buffer from a malformed one:
a decode error is retried with more data when it is an unterminated string or lies within
``_CUT_MARGIN`` characters of the end of the buffer, and a number (or other non-container
scalar) that ends that close to the end of the buffer is re-decoded after reading more, as
it may go on (``-0`` then ``.25``).

Valid JSON that Python's parser cannot hold (nested too deeply for its recursion limit, or
an integer longer than ``sys.get_int_max_str_digits()``) is skipped by a bracket scan that
respects strings, and reported as an :class:`UnreadableElement` in place of the value: the
elements after it are read as usual.

Why not a library: ijson (BSD/ISC, with a C backend) streams arrays as well, but gives no
positions, so a bad record could not be reported by file line, and its yajl backend stops
the whole file on valid JSON it cannot hold (``integer overflow`` on a 5,000-digit number)
where this reader reports the one element and reads on. Measured with ``python -m
bench.json_array`` (60,000 agent records, 33 MB, CPU time, one 2-core machine under load):
this reader 0.40 s, ijson's yajl2_c 0.35 s, ``json.load`` of the whole file 0.76 s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO

__all__ = ["JsonArrayReader", "JsonArraySyntaxError", "UnreadableElement"]

_NON_SPACE = re.compile(r"[^ \t\n\r]")
# What matters when skipping a value: complete strings, a string cut by the end of the
# buffer (a lone quote), brackets and commas.
_SKIP_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|["\[\]{},]', re.DOTALL)
# How close to the end of the buffer a decode error may be and still come from a value cut
# off by the chunk boundary (``-Infinity`` is the longest token that can be cut).
_CUT_MARGIN = 16


class JsonArraySyntaxError(ValueError):
    """The text is not a JSON array; ``line`` is where the problem is."""

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(message)
        self.line = line


class UnreadableElement:
    """Stands for an element that is valid JSON but that the parser cannot hold."""

    __slots__ = ("error",)

    def __init__(self, error: RecursionError | ValueError) -> None:
        self.error = error


class JsonArrayReader:
    """Incremental parser for a top-level JSON array read from a text stream in chunks.

    The buffer holds the unconsumed tail plus what the current element needs: an element
    cut by a chunk boundary is re-decoded after reading more, and each retry reads at least
    as much as is pending, so a large element costs amortised linear time.
    """

    def __init__(self, f: IO[str], chunk_size: int) -> None:
        self._f = f
        self._chunk = chunk_size
        self._decoder = json.JSONDecoder()
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._line = 1  # file line at self._counted
        self._counted = 0

    def _fail(self, message: str) -> JsonArraySyntaxError:
        return JsonArraySyntaxError(message, line=self._line_at(self._pos))

    def _read(self, size: int) -> bool:
        """Append up to ``size`` more characters; False (and no change) at end of file.

        Reading may drop the consumed head of the buffer: callers re-decode after ``True``.
        """
        if self._eof:
            return False
        try:
            chunk = self._f.read(size)
        except UnicodeDecodeError as exc:
            raise self._fail("not valid UTF-8") from exc
        if not chunk:
            self._eof = True
            return False  # the buffer is unchanged: positions into it stay valid
        if self._pos > len(self._buf) // 2:  # drop what was consumed, amortised O(1)
            self._line_at(self._pos)
            self._buf = self._buf[self._pos :]
            self._counted -= self._pos
            self._pos = 0
        self._buf += chunk
        return True

    def _line_at(self, pos: int) -> int:
        self._line += self._buf.count("\n", self._counted, pos)
        self._counted = pos
        return self._line

    def _skip_space(self) -> str:
        """Skip whitespace and return the next character, or "" at end of file."""
        while True:
            found = _NON_SPACE.search(self._buf, self._pos)
            if found is not None:
                self._pos = found.start()
                return self._buf[self._pos]
            self._pos = len(self._buf)
            if not self._read(self._chunk):
                return ""

    def _value(self, index: int) -> object:
        """Decode the value at the cursor, reading more until it is complete."""
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                maybe_cut = (
                    exc.msg.startswith("Unterminated string") or exc.pos >= len(self._buf) - _CUT_MARGIN
                )
                if maybe_cut and self._read(max(self._chunk, len(self._buf) - self._pos)):
                    continue
                self._pos = exc.pos
                raise self._fail(f"element {index}: invalid JSON ({exc.msg})") from exc
            except (RecursionError, ValueError) as exc:  # too deep, or too many digits
                self._skip_value()
                return UnreadableElement(exc)
            # A number near the end of the buffer may go on in the next chunk ("-0" + ".25").
            scalar = not isinstance(value, dict | list | str)
            if scalar and len(self._buf) - end < _CUT_MARGIN and self._read(self._chunk):
                continue
            self._pos = end
            return value

    def _skip_value(self) -> None:
        """Move the cursor past the value at it without decoding it (brackets and strings only)."""
        depth = 0
        offset = 0  # from self._pos, which reading more may move
        while True:
            token = _SKIP_TOKEN.search(self._buf, self._pos + offset)
            if token is None or token.group() == '"':  # out of text, or a string cut off
                offset = len(self._buf) - self._pos if token is None else token.start() - self._pos
                if not self._read(max(self._chunk, len(self._buf) - self._pos)):
                    self._pos = len(self._buf)
                    return  # end of file: the caller reports the unclosed array
                continue
            text = token.group()
            if text in "[{":
                depth += 1
            elif text in "]}" and depth > 0:
                depth -= 1
                if depth == 0:
                    self._pos = token.end()
                    return
            elif text in ",]}":  # the end of a scalar at depth 0
                self._pos = token.start()
                return
            offset = token.end() - self._pos

    def __iter__(self) -> Iterator[tuple[int, int, object]]:
        """Yield ``(index, line, value)`` per element: 1-based index, file line of its start."""
        if self._skip_space() != "[":
            raise self._fail("expected a JSON array ('[') at the start of the file")
        self._pos += 1
        index = 0
        if self._skip_space() == "]":
            self._pos += 1
        else:
            while True:
                if self._skip_space() == "":
                    raise self._fail("unexpected end of file inside the JSON array")
                index += 1
                line = self._line_at(self._pos)
                yield index, line, self._value(index)
                separator = self._skip_space()
                self._pos += 1
                if separator == "]":
                    break
                if separator != ",":
                    self._pos -= 1
                    if separator == "":
                        raise self._fail("unexpected end of file: the JSON array is not closed")
                    raise self._fail(f"expected ',' or ']' after element {index}, got {separator!r}")
        if self._skip_space() != "":
            raise self._fail("unexpected data after the end of the JSON array")
