"""Find the final answer in a model's solution text."""

from __future__ import annotations

import re
from collections import deque
from typing import Literal, NamedTuple, TypeAlias

__all__ = [
    "ExtractedAnswer",
    "Extraction",
    "answer_tags",
    "boxed_contents",
    "boxed_count",
    "boxed_spans",
    "extract_final_answer",
    "extract_reference",
    "last_boxed",
    "outside_boxes",
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


def boxed_spans(text: str) -> list[tuple[int, int, int, int]]:
    r"""Every ``\boxed{...}`` (or ``\fbox``) outside other boxes, in order: (box start, content
    start, content end, box end).

    A box that only wraps another box (``\boxed{\boxed{2}}``) gives the inner content. Boxes
    whose braces do not balance (a truncated generation) are skipped; the brace-free form
    ``\boxed 5`` gives its token. Linear in the text.
    """
    pairs = _brace_pairs(text)
    found: list[tuple[int, int, int, int]] = []
    covered_until = -1
    for match in _BOXED.finditer(text):
        if match.start() < covered_until:
            continue
        content = _box_content(text, match.end(), pairs)
        if content is not None:
            start, end, box_end = content
            while (inner := _only_box(text, start, end, pairs)) is not None:
                start, end = inner
            found.append((match.start(), start, end, box_end))
            covered_until = box_end
    return found


def _box_content(text: str, after: int, pairs: dict[int, int]) -> tuple[int, int, int] | None:
    """(content start, content end, box end) of the box whose command ends at ``after``."""
    i = after
    while i < len(text) and text[i] in " \t":
        i += 1
    if i < len(text) and text[i] == "{":
        end = pairs.get(i)
        return None if end is None else (i + 1, end, end + 1)
    if i > after and (token := _TOKEN.match(text, i)) is not None:
        return i, token.end(), token.end()
    return None


def _only_box(text: str, start: int, end: int, pairs: dict[int, int]) -> tuple[int, int] | None:
    """The content of the box that ``text[start:end]`` consists of, if it is one box (O(1) per level)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    match = _BOXED.match(text, start, end)
    if match is None:
        return None
    content = _box_content(text, match.end(), pairs)
    if content is None or content[2] != end:
        return None
    return content[0], content[1]


def boxed_contents(text: str) -> list[str]:
    r"""The contents of every ``\boxed{...}`` outside other boxes, in order (see :func:`boxed_spans`).

    Example:
        >>> boxed_contents(r"\boxed{1}, \boxed{\boxed{2}} and \boxed{")
        ['1', '2']
    """
    return [text[start:end] for _, start, end, _ in boxed_spans(text)]


def outside_boxes(text: str, mark: str = " ", spans: list[tuple[int, int, int, int]] | None = None) -> str:
    """The text with every box (``spans``, default :func:`boxed_spans`) replaced by ``mark``."""
    parts: list[str] = []
    at = 0
    for start, _, _, end in boxed_spans(text) if spans is None else spans:
        parts.append(text[at:start])
        at = end
    parts.append(text[at:])
    return mark.join(parts)


def answer_tags(text: str) -> list[str]:
    """The contents of every complete ``<answer>...</answer>`` block, in order (linear in the text)."""
    found: list[str] = []
    at = 0
    while (open_ := text.find("<answer>", at)) != -1:
        start = open_ + len("<answer>")
        close = text.find("</answer>", start)
        if close == -1:
            break
        reopened = text.rfind("<answer>", start, close)  # "<answer><answer>x</answer>": the inner one
        found.append(text[(reopened + len("<answer>")) if reopened != -1 else start : close])
        at = close + len("</answer>")
    return found


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
    r"""The answer in a reference: after the last ``####`` (GSM8K), else its last box's content (read
    as :func:`boxed_contents` reads a response's), else all of it."""
    if "####" in text:
        return text.rsplit("####", 1)[1]
    spans = boxed_spans(text)
    return text if not spans else text[spans[-1][1] : spans[-1][2]]
