r"""Worker-side equivalence: math-verify's LaTeX parsing and comparison, with our soundness rules.

Runs inside a :class:`~openjudge.graders._workers.WorkerPool` process (never in the event
loop): parsing and simplifying untrusted text can take unbounded time, and the pool kills
the worker when the sample's budget is spent. math-verify's own timeouts (SIGALRM) are
switched off here; the kill is the budget.

Parsing (math-verify 0.9 / latex2sympy2_extended), by what the text looks like:

* *LaTeX text* (it has ``$``, ``\(``, ``\[`` or ``\boxed``) or *prose* (a word of three
  letters or more outside LaTeX commands, ``\text{}`` and environment names): math-verify's
  own extraction, as it reads a full response (the boxes, the last LaTeX block, "the final
  answer is"...). Inline math broken over lines (``$ \n 9 \n $``) is removed first: it
  is not math, and the expression reader must not find a number in it;
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

Returns plain JSON: ``{"equal": true|false|null, "cause": "..."}``; ``null`` with a cause
says which side could not be read (``response_unparseable``, ``reference_unparseable``)
or that comparing overflowed memory or recursion (``response_too_large``: the reference
was read on its own first, so the response's expression is what overflowed).
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["compare_answers", "math_verify_available"]

_EXACT_DIGITS = 60
_EXACT_TOLERANCE_EXP = -45


def math_verify_available() -> bool:
    """Whether math-verify can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("math_verify") is not None


_DELIMITERS = ("$", "\\(", "\\[", "\\boxed")
_NOT_PROSE = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{[^{}]*\}|\\(?:begin|end)\s*\{[A-Za-z*]+\}")
# A word of three or more letters that is not a LaTeX command: the text is prose, not one expression.
_PROSE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
# Inline math broken over lines ("$ \n 9 \n $") is not math, for LaTeX or for the number reader.
_BROKEN_MATH = re.compile(r"(?<!\$)\$(?!\$)[ \t]*\n[^$]*\n\s*\$(?!\$)|\\\([ \t]*\n[^\\]*\n\s*\\\)")
_NUMBER_LIKE = re.compile(r"[-+]?[0-9][0-9.,]*")


def _whole(parsed: list[Any], text: str) -> list[Any]:
    """Keep an expression-extractor result only if it read all of ``text`` (it reads ``1`` out of ``x+1``)."""
    if (
        len(parsed) == 2
        and isinstance(parsed[1], str)
        and parsed[1].replace(" ", "") == text.replace(" ", "")
    ):
        return parsed
    return []


def _parse(mv: Any, text: str) -> list[Any]:
    """math-verify's reading of ``text`` as a full response or as one answer (see the module docstring)."""
    latex, expr = mv.LatexExtractionConfig(), mv.ExprExtractionConfig()
    if any(d in text for d in _DELIMITERS) or _PROSE.search(_NOT_PROSE.sub(" ", text)):
        return list(mv.parse(_BROKEN_MATH.sub(" ", text), [latex, expr], parsing_timeout=None))
    if _NUMBER_LIKE.fullmatch(text):  # "1,22", "0,111": math-verify reads decimal commas
        parsed = _whole(list(mv.parse(text, [expr], parsing_timeout=None)), text)
        if parsed:
            return parsed
    parsed = list(mv.parse(f"${text}$", [latex], parsing_timeout=None))
    return parsed or _whole(list(mv.parse(text, [expr], parsing_timeout=None)), text)


def _infinite(sympy: Any, value: Any) -> bool:
    try:
        return bool(value.has(sympy.oo, -sympy.oo, sympy.zoo))
    except Exception:
        return False


def _has_float(sympy: Any, value: Any) -> bool:
    try:
        return bool(value.atoms(sympy.Float))
    except Exception:
        return True


def _sound(sympy: Any, gold: Any, pred: Any) -> bool:
    """Our rules on a pair math-verify called equal (see the module docstring)."""
    if isinstance(gold, str) or isinstance(pred, str):
        return isinstance(gold, str) and isinstance(pred, str) and gold == pred
    if _infinite(sympy, gold) or _infinite(sympy, pred):
        return bool(gold == pred)
    exact_numbers = (
        isinstance(gold, sympy.Expr)
        and isinstance(pred, sympy.Expr)
        and gold.is_number
        and pred.is_number
        and not _has_float(sympy, gold)
        and not _has_float(sympy, pred)
    )
    if exact_numbers:
        if gold == pred:
            return True
        gap = sympy.Abs((gold - pred).evalf(_EXACT_DIGITS))
        scale = sympy.Max(1, sympy.Abs(gold.evalf(_EXACT_DIGITS)))
        return bool(gap <= sympy.Float(10) ** _EXACT_TOLERANCE_EXP * scale)
    return True


def compare_answers(reference: str, response: str) -> dict[str, Any]:
    """Equivalence of a response and a reference (see the module docstring); JSON in and out."""
    mv = importlib.import_module("math_verify")
    sympy = importlib.import_module("sympy")
    try:
        golds = _parse(mv, reference)
    except (MemoryError, RecursionError):
        golds = []
    if not golds:
        return {"equal": None, "cause": "reference_unparseable"}
    try:
        preds = _parse(mv, response)
    except (MemoryError, RecursionError):
        preds = []
    if not preds:
        return {"equal": None, "cause": "response_unparseable"}
    try:
        for gold in golds:
            for pred in preds:
                if isinstance(gold, str) != isinstance(pred, str):
                    continue
                if isinstance(gold, str):
                    agree = _sound(sympy, gold, pred)
                else:
                    agree = bool(mv.verify(gold, pred, timeout_seconds=None)) and _sound(sympy, gold, pred)
                if agree:
                    return {"equal": True, "cause": "math_verify"}
    except (MemoryError, RecursionError):
        # The reference parsed on its own, so what overflowed is the response's expression.
        return {"equal": None, "cause": "response_too_large"}
    return {"equal": False, "cause": "math_verify"}
