"""Find the final answer in a model's solution text."""

from __future__ import annotations

import re
from collections import deque
from typing import Literal, NamedTuple, TypeAlias

__all__ = [
    "ExtractedAnswer",
    "Extraction",
    "boxed_count",
    "extract_final_answer",
    "extract_reference",
    "last_boxed",
]

Extraction: TypeAlias = Literal["boxed", "answer_tag", "last_number", "reference", "none"]

_BOXED = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_BRACE = re.compile(r"(?<!\\)[{}]")
_TOKEN = re.compile(r"[^\s$]+")
_LAST_NUMBER = re.compile(
    r"(?:(?<![A-Za-z0-9_)\]])[-\u2212])?(?<![0-9.])"
    r"(?:\\[dt]?frac\{-?[0-9]+\}\{[0-9]+\}"
    r"|(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?(?:/[0-9]+)?%?"
    r"|\.[0-9]+%?)"
)


class ExtractedAnswer(NamedTuple):
    """An answer string and where it was found."""

    text: str
    source: Extraction


def _brace_pairs(text: str) -> dict[int, int]:
    """Map the index of each balanced ``{`` to the index of its ``}`` (escaped braces ignored)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for match in _BRACE.finditer(text):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            pairs[stack.pop()] = match.start()
    return pairs


def last_boxed(text: str) -> str | None:
    r"""Content of the last ``\boxed{...}`` (or ``\fbox{...}``) whose braces balance.

    A truncated last box (``\boxed{12`` at the end of a cut-off generation) is skipped
    in favour of the one before it. The brace-free form ``\boxed 5`` is accepted too.

    Example:
        >>> last_boxed(r"so \boxed{1} ... finally \boxed{\frac{1}{2}}")
        '\\frac{1}{2}'
    """
    starts = [m.end() for m in _BOXED.finditer(text)]
    if not starts:
        return None
    pairs = _brace_pairs(text)
    for start in reversed(starts):
        i = start
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == "{":
            end = pairs.get(i)
            if end is not None:
                return text[i + 1 : end]
        elif i > start:
            token = _TOKEN.match(text, i)  # match at i: slicing here would make the scan quadratic
            if token is not None:
                return token.group()
    return None


def boxed_count(text: str) -> int:
    r"""How many ``\boxed{...}`` the text has outside other boxes (``\boxed{\boxed{1}}`` is one).

    Example:
        >>> boxed_count(r"\boxed{1} and \boxed{\boxed{2}}")
        2
    """
    pairs = _brace_pairs(text)
    count, covered_until = 0, -1
    for match in _BOXED.finditer(text):
        if match.start() < covered_until:
            continue
        count += 1
        i = match.end()
        while i < len(text) and text[i] in " \t":
            i += 1
        covered_until = pairs.get(i, i) if i < len(text) and text[i] == "{" else i
    return count


def _last_answer_tag(text: str) -> str | None:
    close = text.rfind("</answer>")
    if close == -1:
        return None
    open_ = text.rfind("<answer>", 0, close)
    if open_ == -1:
        return None
    return text[open_ + len("<answer>") : close]


def extract_final_answer(text: str, *, fallback_to_last_number: bool = True) -> ExtractedAnswer:
    r"""The final answer of a solution, looked for in this order:

    1. the last ``\boxed{...}`` with balanced braces;
    2. the last ``<answer>...</answer>`` block;
    3. the last number in the text (``-3``, ``1,234.5``, ``3/4``, ``\frac{1}{2}``, ``12%``),
       if ``fallback_to_last_number``.

    Returns:
        The answer text (unnormalised) and its source; ``("", "none")`` if nothing was found.
    """
    boxed = last_boxed(text)
    if boxed is not None:
        return ExtractedAnswer(boxed, "boxed")
    tagged = _last_answer_tag(text)
    if tagged is not None:
        return ExtractedAnswer(tagged, "answer_tag")
    if fallback_to_last_number:
        last = deque(_LAST_NUMBER.finditer(text), maxlen=1)
        if last:
            return ExtractedAnswer(last[0].group(), "last_number")
    return ExtractedAnswer("", "none")


def extract_reference(text: str) -> str:
    r"""The answer in a reference: after the last ``####`` (GSM8K), else the last ``\boxed{}``, else all of it."""
    if "####" in text:
        return text.rsplit("####", 1)[1]
    boxed = last_boxed(text)
    return text if boxed is None else boxed
