r"""Refuse exponent towers before any parser or sympy sees them.

A numeric power nested inside another power (``9^{9^{9}}``, ``(999^{999})^{999}``,
``\sin{(999^{999})^{999}}``), a chain of numeric powers (``9^{999}^{999}``, which
parsers read as a tower), or a numeric exponent longer than five digits asks sympy for a
number with more digits than there are atoms in the universe: evaluating it never ends.
:func:`exponent_tower` finds these in linear time (a few passes over the text, and O(1) per
caret through prefix counts: no regular expression or slice per caret, which nested groups
would make quadratic or worse), so a hostile answer is refused in the event loop, before a
worker is started.

What is refused is deliberately narrow: powers with a symbolic part (``e^{-x^2}``,
``(x^2)^3``, ``2^{x^2}``) are allowed, since sympy keeps them symbolic; the worker's
time budget is the second line of defence for everything else.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

__all__ = ["exponent_tower"]

_MAX_EXPONENT_DIGITS = 5
_NOT_NUMERIC = re.compile(r"[^0-9.{}()+\-\s]+")
"""Runs of characters a numeric base or exponent cannot hold (it holds digits, points, signs,
brackets and spaces)."""
_DIGITS = re.compile(r"[0-9]+")
_LONG_NUMBER = re.compile(rf"[0-9]{{{_MAX_EXPONENT_DIGITS + 1},}}")
_CARET = re.compile(r"\^")
_BRACKETS = re.compile(r"[{}()\[\]]")
_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = {"}": "{", ")": "(", "]": "["}


class _Runs:
    """Sorted, disjoint runs of one kind of character: "does [a, b) meet a run?" by bisection.

    Built by one regular-expression scan (C speed), so the check is O(log n) per caret and
    nothing walks the text character by character in Python.
    """

    __slots__ = ("ends", "starts")

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for match in pattern.finditer(text):
            self.starts.append(match.start())
            self.ends.append(match.end())

    def meets(self, start: int, end: int) -> bool:
        i = bisect_right(self.ends, start)  # the first run ending after ``start``
        return i < len(self.starts) and self.starts[i] < end and start < end


def _partners(text: str) -> dict[int, int]:
    """Index of each bracket's partner, both ways (unbalanced brackets have none)."""
    partner: dict[int, int] = {}
    stacks: dict[str, list[int]] = {"{": [], "(": [], "[": []}
    for match in _BRACKETS.finditer(text):
        i, char = match.start(), match.group()
        if char in _OPEN:
            stacks[char].append(i)
        elif stacks[_CLOSE[char]]:
            j = stacks[_CLOSE[char]].pop()
            partner[i], partner[j] = j, i
    return partner


def _skip_space(text: str, i: int, step: int) -> int:
    while 0 <= i < len(text) and text[i].isspace():
        i += step
    return i


def _base_span(text: str, caret: int, partner: dict[int, int]) -> tuple[int, int]:
    """[start, end) of what the ``^`` at ``caret`` raises."""
    end = _skip_space(text, caret - 1, -1)
    if end < 0:
        return caret, caret
    if text[end] in _CLOSE and end in partner:
        return partner[end], end + 1
    start = end
    while start > 0 and (text[start - 1].isdigit() or text[start - 1] == "."):
        start -= 1
    return start, end + 1


def _exponent_span(text: str, caret: int, partner: dict[int, int]) -> tuple[int, int]:
    """[start, end) of the exponent of the ``^`` at ``caret``."""
    start = _skip_space(text, caret + 1, 1)
    if start >= len(text):
        return start, start
    if text[start] in _OPEN and start in partner:
        return start, partner[start] + 1
    end = start + 1
    if text[start].isdigit():
        while end < len(text) and text[end].isdigit():
            end += 1
    return start, end


def exponent_tower(text: str) -> str | None:
    """Why ``text`` holds an exponent tower (a short reason), or None if it holds none."""
    text = text.replace("**", "^")
    carets = [match.start() for match in _CARET.finditer(text)]
    if not carets:
        return None
    partner = _partners(text)
    spans = [(_base_span(text, c, partner), _exponent_span(text, c, partner)) for c in carets]
    # Each check below is O(log n) per caret: the whole pass stays O(n log n) in the text.
    other, digits, long_numbers = _Runs(_NOT_NUMERIC, text), _Runs(_DIGITS, text), _Runs(_LONG_NUMBER, text)
    numeric: list[int] = []  # the positions of numeric powers' carets, in order
    numeric_at: set[int] = set()
    for caret, ((b0, b1), (e0, e1)) in zip(carets, spans, strict=True):
        if not (digits.meets(b0, b1) and digits.meets(e0, e1)):
            continue
        if other.meets(b0, b1) or other.meets(e0, e1):
            continue
        # An exponent span starts after the caret or at a bracket, so no digit run enters it from before.
        if long_numbers.meets(e0, e1):
            return f"an exponent of more than {_MAX_EXPONENT_DIGITS} digits at offset {caret}"
        numeric.append(caret)
        numeric_at.add(caret)
    for caret, ((b0, b1), (e0, e1)) in zip(carets, spans, strict=True):
        if _holds(numeric, b0, b1) or _holds(numeric, e0, e1):
            return f"a power of a power of numbers at offset {caret}"
        after = _skip_space(text, e1, 1)
        if caret in numeric_at and after in numeric_at:
            return f"a chain of numeric powers at offset {caret}"
    return None


def _holds(positions: list[int], start: int, end: int) -> bool:
    """Whether a sorted list of positions has one in [start, end)."""
    i = bisect_left(positions, start)
    return i < len(positions) and positions[i] < end
