"""Text that can always be written: one rule for lone surrogates, everywhere openjudge writes.

A Python ``str`` may hold a lone surrogate (``"\\udc00"``): ``json.loads`` makes one from the
valid JSON escape ``"\\udc00"``, so any dataset record or model response can carry one.
It is not Unicode text: UTF-8 cannot encode it, and strict JSON readers (pydantic, orjson,
serde) refuse even its ``\\u`` escape. So every text openjudge writes to a file or a
terminal (results files, HTML reports, trainer dumps, the summary) follows one rule:

    each lone surrogate becomes the six characters ``\\udXXX`` (its code point, lowercase
    hex), exactly what Python's ``"backslashreplace"`` error handler writes.

In JSON those six characters are an ordinary string (``"\\\\udc00"`` in the file), which
every reader reads back as the same six characters. Everything else, including properly
paired astral characters, is written unchanged. Sample *ids* are the exception: a record
whose id holds a lone surrogate is refused when the dataset is read (an id keys resuming,
so it must round-trip exactly).

The check is one regex scan; the writers call it only after the fast path (strict UTF-8)
has failed, so well-formed text costs nothing extra.
"""

from __future__ import annotations

import re

from pydantic import JsonValue

__all__ = ["SURROGATE", "encodable", "encodable_json", "encodable_json_text", "has_surrogate"]

SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate code point (in a ``str``, a surrogate is always lone: pairs are one character)."""


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\\\u{ord(match.group()):04x}"


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (and so cannot be encoded as UTF-8).

    Constant time for ASCII text, a C-speed encode otherwise (several times faster than a
    regex scan).
    """
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def encodable(text: str) -> str:
    """``text`` with each lone surrogate written as the six characters ``\\udXXX``."""
    return SURROGATE.sub(_escape, text)


def encodable_json(value: JsonValue) -> JsonValue:
    """A copy of a JSON value with :func:`encodable` applied to every string, keys included."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {encodable(k): encodable_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [encodable_json(v) for v in value]
    return value


def encodable_json_text(text: str) -> str:
    """JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it) made encodable.

    A lone surrogate can only stand inside a string there, so it becomes the JSON spelling of
    the six characters ``\\udXXX`` (``\\\\udXXX``): the same text :func:`encodable_json`
    would give, without walking the value.
    """
    return SURROGATE.sub(_json_escape, text)
