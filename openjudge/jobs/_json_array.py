"""Streaming parser for a top-level JSON array, one element at a time.

Built on :meth:`json.JSONDecoder.raw_decode` over a sliding buffer filled in chunks. The
only subtlety is telling a value cut off by the end of the buffer from a malformed one:
a decode error is retried with more data when it is an unterminated string or lies within
``_CUT_MARGIN`` characters of the end of the buffer, and a number (or other non-container
scalar) that ends that close to the end of the buffer is re-decoded after reading more, as
it may go on (``-0`` then ``.25``).

An element that cannot be used is skipped and reported as an :class:`UnreadableElement` in
place of the value, and the elements after it are read as usual: valid JSON that Python's
parser cannot hold (nested too deeply for its recursion limit, or an integer longer than
``sys.get_int_max_str_digits()``), an element longer than ``max_element`` characters, one
holding bytes that are not UTF-8 (when the stream is read with ``errors="surrogateescape"``),
and a malformed element whose end can still be found. The skip is a streaming scan of
strings and brackets (any opener counts one level, any closer one less) that releases the
text as it goes, so it costs linear time and bounded memory whatever the element. Only a
malformed element that never closes (an unterminated string or bracket up to the end of
the file) or bad text *between* elements stops the file with :class:`JsonArraySyntaxError`:
after it, where the next element starts cannot be known.

Why not a library: ijson (BSD/ISC, with a C backend) streams arrays as well, but gives no
positions, so a bad record could not be reported by file line, and its yajl backend stops
the whole file on valid JSON it cannot hold (``integer overflow`` on a 5,000-digit number)
where this reader reports the one element and reads on. Measured with ``python -m
bench.json_array`` (60,000 agent records, 33 MB, CPU time, one 2-core machine under load):
this reader 0.40 s, ijson's yajl2_c 0.35 s, ``json.load`` of the whole file 0.76 s. The
checks for hostile elements (a constant-time ASCII test or one C-speed encode per chunk for
bytes that are not UTF-8, a length test per element) cost about 2 % on ASCII text and 6 %
on text with accents and emoji (old and new reader interleaved in one process, best of 5:
0.186 s and 0.191 s; 0.339 s and 0.361 s).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, cast

from openjudge._text import has_surrogate

__all__ = ["ElementTooLarge", "JsonArrayReader", "JsonArraySyntaxError", "NotUtf8", "UnreadableElement"]

_NON_SPACE = re.compile(r"[^ \t\n\r]")
# What matters when skipping a value: outside strings, quotes, brackets and commas; inside
# them, the closing quote and backslashes (the character after one is skipped).
_SKIP_STOP = re.compile(r'["\[\]{},]')
_STRING_STOP = re.compile(r'["\\]')
# A lone surrogate: in text read with errors="surrogateescape", a byte that is not UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")
# How close to the end of the buffer a decode error may be and still come from a value cut
# off by the chunk boundary (``-Infinity`` is the longest token that can be cut).
_CUT_MARGIN = 16


class JsonArraySyntaxError(ValueError):
    """The text is not a JSON array; ``line`` is where the problem is."""

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(message)
        self.line = line


class ElementTooLarge(ValueError):
    """An element longer than the reader's ``max_element`` characters (it was skipped unread)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"longer than {limit:,} characters")
        self.limit = limit


class NotUtf8(ValueError):
    """An element holding bytes that are not UTF-8 (read with ``errors="surrogateescape"``)."""


class UnreadableElement:
    """Stands for an element that cannot be used, and why.

    ``error`` is a :class:`json.JSONDecodeError` (malformed), a :class:`RecursionError` or
    :class:`ValueError` (valid JSON the parser cannot hold: too deep, too many digits),
    :class:`ElementTooLarge` or :class:`NotUtf8`.
    """

    __slots__ = ("error", "line")

    def __init__(self, error: RecursionError | ValueError, line: int | None = None) -> None:
        self.error = error
        self.line = line
        """The file line of a syntax error, if that is the problem."""


class JsonArrayReader:
    """Incremental parser for a top-level JSON array read from a text stream in chunks.

    The buffer holds the unconsumed tail plus what the current element needs: an element
    cut by a chunk boundary is re-decoded after reading more, and each retry reads at least
    as much as is pending, so a large element costs amortised linear time. With
    ``max_element``, an element longer than that many characters is skipped unread, and the
    buffer never holds more than about twice ``max_element`` + ``chunk_size`` characters.
    """

    def __init__(self, f: IO[str], chunk_size: int, *, max_element: int | None = None) -> None:
        self._f = f
        self._chunk = chunk_size
        self._max = max_element
        self._decoder = json.JSONDecoder()
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._line = 1  # file line at self._counted
        self._counted = 0
        self._undecodable = False  # some chunk held bytes that are not UTF-8 (surrogate escapes)

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
        except UnicodeDecodeError as exc:  # a stream opened with strict errors
            raise self._fail("not valid UTF-8") from exc
        if not chunk:
            self._eof = True
            return False  # the buffer is unchanged: positions into it stay valid
        if not self._undecodable and has_surrogate(chunk):
            self._undecodable = True
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

    def _too_large(self, size: int) -> bool:
        return self._max is not None and size > self._max

    def _value(self, index: int) -> object:
        """Decode the value at the cursor, reading more until it is complete.

        A value that cannot be used is skipped and returned as an :class:`UnreadableElement`.
        """
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                maybe_cut = (
                    exc.msg.startswith("Unterminated string") or exc.pos >= len(self._buf) - _CUT_MARGIN
                )
                if maybe_cut:  # the element runs to the end of the buffer: read more, up to the cap
                    pending = len(self._buf) - self._pos
                    if self._too_large(pending):
                        return self._skip(index, ElementTooLarge(cast(int, self._max)))
                    if self._read(max(self._chunk, pending)):
                        continue
                return self._skip(index, exc)
            except (RecursionError, ValueError) as exc:  # too deep, or too many digits
                return self._skip(index, exc)
            if self._too_large(end - self._pos):  # a number may go on past the buffer: scan to its end
                return self._skip(index, ElementTooLarge(cast(int, self._max)))
            # A number near the end of the buffer may go on in the next chunk ("-0" + ".25").
            scalar = not isinstance(value, dict | list | str)
            pending = len(self._buf) - self._pos
            if scalar and len(self._buf) - end < _CUT_MARGIN and self._read(max(self._chunk, pending)):
                continue
            if self._undecodable and _SURROGATE.search(self._buf, self._pos, end) is not None:
                self._pos = end
                return UnreadableElement(NotUtf8("not valid UTF-8"))
            self._pos = end
            return value

    def _skip(self, index: int, error: RecursionError | ValueError) -> UnreadableElement:
        """Skip the element at the cursor (see :meth:`_skip_value`) and stand for it.

        Raises:
            JsonArraySyntaxError: The element is malformed and its end cannot be found (its
                brackets or strings never close): where the next element starts is unknown.
        """
        line = None
        if isinstance(error, json.JSONDecodeError):  # the file line of the error, counted before skipping
            line = self._line + self._buf.count("\n", self._counted, max(self._counted, error.pos))
        if not self._skip_value() and isinstance(error, json.JSONDecodeError):
            raise JsonArraySyntaxError(f"element {index}: invalid JSON ({error.msg})", line=cast(int, line))
        return UnreadableElement(error, line)

    def _skip_value(self) -> bool:
        """Move the cursor past the value at it without decoding it, reading as needed.

        Only strings and brackets count (of any kind: ``[`` and ``{`` open, ``]`` and ``}``
        close): the value ends after the bracket that closes its first one, or before the
        first ``,``, ``]`` or ``}`` outside any bracket. Consumed text is released as the scan
        goes, so memory stays bounded by the chunk size whatever the value's length.

        Returns:
            False if the file ended first (the cursor is then at the end of the file).
        """
        depth = 0
        in_string = False
        while True:
            found = (_STRING_STOP if in_string else _SKIP_STOP).search(self._buf, self._pos)
            if found is None:
                self._pos = len(self._buf)
            elif in_string and found.group() == "\\":
                if found.end() < len(self._buf):
                    self._pos = found.end() + 1  # the backslash and the character it escapes
                    continue
                self._pos = found.start()  # the escaped character is in the next chunk
            else:
                text = found.group()
                self._pos = found.end()
                if text == '"':
                    in_string = not in_string
                elif text in "[{":
                    depth += 1
                elif depth == 0:  # a "," or a closer outside the value: the end of a scalar
                    self._pos = found.start()
                    return True
                elif text != ",":
                    depth -= 1
                    if depth == 0:
                        return True
                continue
            if not self._read(self._chunk):
                self._pos = len(self._buf)
                return False

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
