r"""Refuse exponent towers before any parser or sympy sees them.

A numeric power nested inside another power (``9^{9^{9}}``, ``(999^{999})^{999}``,
``\sin{(999^{999})^{999}}``), a chain of numeric powers (``9^{999}^{999}``, which
parsers read as a tower), or a numeric exponent longer than five digits asks sympy for a
number with more digits than there are atoms in the universe: evaluating it never ends.
:func:`exponent_tower` finds these in one linear pass over the text, so a hostile answer is
refused in the event loop, before a worker is started.

What is refused is deliberately narrow: powers with a symbolic part (``e^{-x^2}``,
``(x^2)^3``, ``2^{x^2}``) are allowed, since sympy keeps them symbolic; the worker's
time budget is the second line of defence for everything else.
"""

from __future__ import annotations

import re

__all__ = ["exponent_tower"]

_MAX_EXPONENT_DIGITS = 5
_NUMERIC = re.compile(r"[0-9.\s{}()+\-]*[0-9][0-9.\s{}()+\-]*")
_DIGITS = re.compile(r"[0-9]+")
_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = {"}": "{", ")": "(", "]": "["}


def _partners(text: str) -> dict[int, int]:
    """Index of each bracket's partner, both ways (unbalanced brackets have none)."""
    partner: dict[int, int] = {}
    stacks: dict[str, list[int]] = {"{": [], "(": [], "[": []}
    for i, char in enumerate(text):
        if char in _OPEN:
            stacks[char].append(i)
        elif char in _CLOSE and stacks[_CLOSE[char]]:
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
    carets = [i for i, char in enumerate(text) if char == "^"]
    if not carets:
        return None
    partner = _partners(text)
    spans = [(_base_span(text, c, partner), _exponent_span(text, c, partner)) for c in carets]
    numeric = []
    for caret, ((b0, b1), (e0, e1)) in zip(carets, spans, strict=True):
        is_numeric = bool(_NUMERIC.fullmatch(text[b0:b1])) and bool(_NUMERIC.fullmatch(text[e0:e1]))
        if is_numeric and any(len(d) > _MAX_EXPONENT_DIGITS for d in _DIGITS.findall(text[e0:e1])):
            return f"an exponent of more than {_MAX_EXPONENT_DIGITS} digits at offset {caret}"
        numeric.append(caret if is_numeric else -1)
    # Prefix counts of numeric powers, so "is there one inside [a, b)" is O(1).
    prefix = [0] * (len(text) + 1)
    marks = set(numeric)
    numeric_at = dict(zip(carets, numeric, strict=True))
    for i in range(len(text)):
        prefix[i + 1] = prefix[i] + (1 if i in marks else 0)
    for caret, is_num, ((b0, b1), (e0, e1)) in zip(carets, numeric, spans, strict=True):
        if prefix[b1] - prefix[b0] or prefix[e1] - prefix[e0]:
            return f"a power of a power of numbers at offset {caret}"
        after = _skip_space(text, e1, 1)
        if is_num >= 0 and after < len(text) and numeric_at.get(after, -1) >= 0:
            return f"a chain of numeric powers at offset {caret}"
    return None
