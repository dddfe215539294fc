r"""Worker-side equivalence: math-verify's LaTeX parsing and comparison, with our soundness rules.

Runs inside a :class:`~openjudge.graders._workers.WorkerPool` process (never in the event
loop): parsing and simplifying untrusted text can take unbounded time, and the pool kills
the worker when the sample's budget is spent. math-verify's own timeouts (SIGALRM) are
switched off here; the kill is the budget.

:func:`compare_answers` takes the reference and the response's *candidates* (what the
extraction policy read as its final answer, :mod:`._reading`), each one of:

* ``answer``: one answer (a box's or an answer tag's content, or an answer already
  extracted), parsed by what it looks like (below);
* ``answers``: several boxes (or tags) with different contents, read as one list answer:
  the set of their values (math-verify reads adjacent boxes the same way);
* ``text``: a whole response without boxes or tags, read by math-verify's extraction (its
  "final answer is", "answer:", last LaTeX block or expression). When that reading is
  anchored by the word "answer", the text is read once more without the anchors (and
  without boxes): if its last expression is a number, it must agree with the anchored
  answer ("The answer is 5, not 7." gives 5 and 7: conflicting answers; a variable named
  after the answer is not a second answer).

A response earns credit for one final answer: candidates that do not agree (in either
direction of :func:`_equal`) are ``conflicting_answers``; agreeing ones are one answer,
the first, and only it is compared with the reference.

Parsing one text (math-verify 0.9 / latex2sympy2_extended), by what it looks like:

* *plain syntax* (``sqrt(3) - 1``, ``2**(1/4)``: :mod:`._plain`), read by sympy's parser
  over a whitelist, since latex2sympy reads ``sqrt(3)`` as letters;
* *LaTeX text* (it has ``$``, ``\(``, ``\[`` or ``\boxed``), *prose* (a word of three
  letters or more outside LaTeX commands, ``\text{}``, environment names and function
  names) or a text of more than 2,000 characters: math-verify's own extraction, as it
  reads a full response. Inline math broken
  over lines (``$ \n 9 \n $``) is removed first: it is not math, and the expression reader
  must not find a number in it;
* a bare *number* (``1,22``, ``0,111``): math-verify's number reader (decimal commas),
  kept only if it read the whole text;
* anything else is *one answer*: parsed as LaTeX inside ``$...$``; if that fails, as a
  plain expression, kept only when the parser read the whole text (math-verify's
  expression extractor otherwise reads ``1`` out of ``x^2 + 2*x + 1``).

Comparison: math-verify's ``verify`` on each pair of parsed values, then two rules of ours
that math-verify does not have, applied to every pair it calls equal:

* an infinite value (``oo``, ``-oo``, ``zoo``) equals only a structurally identical value,
  so ``\infty`` never matches ``5`` or ``x^2+1``;
* two exact numbers (no decimal point on either side) must agree to 45 significant digits:
  ``1099511627000`` is not ``2^{40}``. Where a decimal is involved, math-verify's rounding
  to 6 decimal places decides, as users of math-verify expect.

A sympy object whose truth is undetermined (a relational between unevaluated numbers,
``\gcd(4,6)`` kept as ``UnevaluatedExpr(2)``) is never passed to ``bool()``: unevaluated
wrappers are opened first, and a truth sympy cannot decide is "not equal" (:func:`_truth`).

Returns plain JSON: ``{"equal": true|false|null, "cause": "..."}``; ``null`` with a cause
says which side could not be read (``response_unparseable``, ``reference_unparseable``),
that the response's candidates disagree (``conflicting_answers``), or that comparing
overflowed memory or recursion (``response_too_large``: the reference was read on its own
first, so the response's expression is what overflowed).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from openjudge.graders.math._plain import FUNCTIONS, parse_plain

__all__ = ["compare_answers", "math_verify_available"]

_EXACT_DIGITS = 60
_EXACT_TOLERANCE_EXP = -45


def math_verify_available() -> bool:
    """Whether math-verify can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("math_verify") is not None


_DELIMITERS = ("$", "\\(", "\\[", "\\boxed")
_NOT_PROSE = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{[^{}]*\}|\\(?:begin|end)\s*\{[A-Za-z*]+\}")
# A word of three or more letters that is not a LaTeX command or a function name: the text is
# prose, not one expression.
_PROSE = re.compile(r"(?<![\\A-Za-z])(?!(?:" + "|".join(FUNCTIONS) + r")(?![A-Za-z]))[A-Za-z]{3,}")
# Inline math broken over lines ("$ \n 9 \n $") is not math, for LaTeX or for the number reader.
_BROKEN_MATH = re.compile(r"(?<!\$)\$(?!\$)[ \t]*\n[^$]*\n\s*\$(?!\$)|\\\([ \t]*\n[^\\]*\n\s*\\\)")
_NUMBER_LIKE = re.compile(r"[-+]?[0-9][0-9.,]*")
_ONE_ANSWER_LIMIT = 2_000  # a longer text is a response to extract from, not one expression


def _whole(parsed: list[Any], text: str) -> list[Any]:
    """Keep an expression-extractor result only if it read all of ``text`` (it reads ``1`` out of ``x+1``)."""
    if (
        len(parsed) == 2
        and isinstance(parsed[1], str)
        and parsed[1].replace(" ", "") == text.replace(" ", "")
    ):
        return parsed
    return []


def _parse(mv: Any, text: str, *, boxes: bool = True) -> list[Any]:
    """The reading of ``text`` as a full response or as one answer (see the module docstring).

    One reading: math-verify returns a parsed value with the text of the *first* match it
    tried as a fallback, which can be another answer of the response ("the final answer is
    $x**2$ ... the answer is $\\infty$" gives ``[oo, "x**2"]``); the fallback text counts only
    when nothing parsed.
    """
    parsed = _parse_all(mv, text, boxes=boxes)
    values = [value for value in parsed if not isinstance(value, str)]
    return values or parsed


def _parse_all(mv: Any, text: str, *, boxes: bool) -> list[Any]:
    latex = mv.LatexExtractionConfig() if boxes else mv.LatexExtractionConfig(boxed_match_priority=-1)
    expr = mv.ExprExtractionConfig()
    plain = parse_plain(text)
    if plain is not None:
        return [plain, text]
    if (
        len(text) > _ONE_ANSWER_LIMIT
        or any(d in text for d in _DELIMITERS)
        or _PROSE.search(_NOT_PROSE.sub(" ", text))
    ):
        return list(mv.parse(_BROKEN_MATH.sub(" ", text), [latex, expr], parsing_timeout=None))
    if _NUMBER_LIKE.fullmatch(text):  # "1,22", "0,111": math-verify reads decimal commas
        parsed = _whole(list(mv.parse(text, [expr], parsing_timeout=None)), text)
        if parsed:
            return parsed
    parsed = list(mv.parse(f"${text}$", [latex], parsing_timeout=None))
    return parsed or _whole(list(mv.parse(text, [expr], parsing_timeout=None)), text)


def _truth(value: Any) -> bool | None:
    """``bool(value)``, or None where sympy cannot decide (a relational it cannot evaluate)."""
    try:
        return bool(value)
    except TypeError:
        return None


def _opened(sympy: Any, value: Any) -> Any:
    """``value`` with sympy's ``UnevaluatedExpr`` wrappers removed (``\\gcd(4,6)`` parses as one)."""
    try:
        if value.has(sympy.UnevaluatedExpr):
            return value.replace(lambda e: isinstance(e, sympy.UnevaluatedExpr), lambda e: e.args[0])
    except Exception:  # not a sympy expression, or one that cannot be rewritten: compare it as it is
        pass
    return value


def _infinite(sympy: Any, value: Any) -> bool:
    try:
        return _truth(value.has(sympy.oo, -sympy.oo, sympy.zoo)) is True
    except Exception:
        return False


def _has_float(sympy: Any, value: Any) -> bool:
    try:
        return _truth(value.atoms(sympy.Float)) is not False
    except Exception:
        return True


def _sound(sympy: Any, gold: Any, pred: Any) -> bool:
    """Our rules on a pair math-verify called equal (see the module docstring)."""
    if isinstance(gold, str) or isinstance(pred, str):
        return isinstance(gold, str) and isinstance(pred, str) and gold == pred
    if _infinite(sympy, gold) or _infinite(sympy, pred):
        return _truth(gold == pred) is True
    exact_numbers = (
        isinstance(gold, sympy.Expr)
        and isinstance(pred, sympy.Expr)
        and gold.is_number is True
        and pred.is_number is True
        and not _has_float(sympy, gold)
        and not _has_float(sympy, pred)
    )
    if exact_numbers:
        if _truth(gold == pred) is True:
            return True
        gap = sympy.Abs((gold - pred).evalf(_EXACT_DIGITS))
        scale = sympy.Max(1, sympy.Abs(gold.evalf(_EXACT_DIGITS)))
        return _truth(gap <= sympy.Float(10) ** _EXACT_TOLERANCE_EXP * scale) is True
    return True


def _equal(mv: Any, sympy: Any, gold: Any, pred: Any) -> bool:
    """Whether math-verify calls ``pred`` equal to ``gold`` and our rules agree."""
    if isinstance(gold, str) != isinstance(pred, str):
        return False
    if isinstance(gold, str):
        return _sound(sympy, gold, pred)
    gold, pred = _opened(sympy, gold), _opened(sympy, pred)
    try:
        verified = _truth(mv.verify(gold, pred, timeout_seconds=None)) is True
    except TypeError:  # a truth sympy cannot decide, raised inside math-verify
        return False
    return verified and _sound(sympy, gold, pred)


def _any_equal(mv: Any, sympy: Any, golds: Sequence[Any], preds: Sequence[Any]) -> bool:
    return any(_equal(mv, sympy, gold, pred) for gold in golds for pred in preds)


_ANCHOR = re.compile(r"(?i)answer\s*:?")
"""math-verify's anchors all hold the word "answer" ("final answer is", "answer:", "answer is")."""
_CONFLICT: list[Any] = []  # a sentinel: the candidate itself holds two answers that disagree


def _read(mv: Any, sympy: Any, kind: str, texts: Sequence[str]) -> list[Any]:
    """The parsed values of one candidate; :data:`_CONFLICT` if it holds answers that disagree."""
    if kind == "answers":
        elements: list[Any] = []
        for text in texts:
            parsed = _parse(mv, text)
            if not parsed or isinstance(parsed[0], str):
                return []  # a list answer is read only when each of its parts is
            value = _opened(sympy, parsed[0])
            elements.extend(value.args if isinstance(value, sympy.FiniteSet) else [value])
        return [sympy.FiniteSet(*elements), ", ".join(texts)]
    text = texts[0]
    anchored = _parse(mv, text)
    if kind == "text" and anchored and _ANCHOR.search(text):
        unanchored = _ANCHOR.sub(lambda m: " " * len(m.group()), text)
        last = [v for v in _parse(mv, unanchored, boxes=False) if _is_number(v)]
        if last and not (_any_equal(mv, sympy, anchored, last) or _any_equal(mv, sympy, last, anchored)):
            return _CONFLICT
    return anchored


def _is_number(value: Any) -> bool:
    """Whether a parsed value is a number (a variable named after the answer is not a second answer)."""
    return not isinstance(value, str) and getattr(value, "is_number", False) is True


def compare_answers(reference: str, candidates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Equivalence of the response's candidates and a reference (see the module docstring); JSON in and out.

    Args:
        reference: The reference answer text.
        candidates: ``{"kind": "answer" | "answers" | "text", "texts": [...]}`` each, in the
            order :func:`~openjudge.graders.math._reading.read_response` gives them.
    """
    mv = importlib.import_module("math_verify")
    sympy = importlib.import_module("sympy")
    try:
        golds = _parse(mv, reference)
    except (MemoryError, RecursionError):
        golds = []
    if not golds:
        return {"equal": None, "cause": "reference_unparseable"}
    try:
        readings = [_read(mv, sympy, str(c["kind"]), [str(t) for t in c["texts"]]) for c in candidates]
        if any(reading is _CONFLICT for reading in readings):
            return {"equal": None, "cause": "conflicting_answers"}
        parsed = [reading for reading in readings if reading]
        if not parsed:
            return {"equal": None, "cause": "response_unparseable"}
        first = parsed[0]
        for other in parsed[1:]:
            if not (_any_equal(mv, sympy, first, other) or _any_equal(mv, sympy, other, first)):
                return {"equal": None, "cause": "conflicting_answers"}
        equal = _any_equal(mv, sympy, golds, first)
    except (MemoryError, RecursionError):
        # The reference parsed on its own, so what overflowed is the response's expression.
        return {"equal": None, "cause": "response_too_large"}
    return {"equal": equal, "cause": "math_verify"}
