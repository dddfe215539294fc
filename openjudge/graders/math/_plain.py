r"""Read answers written in plain (calculator or Python) syntax: ``-1 + sqrt(3)``, ``2**(1/4)``, ``3*sqrt(5)/7``.

Datasets and models often write answers without LaTeX. latex2sympy reads ``sqrt(3)`` as a
product of letters and ``2**(1/4)`` as ``2``, and math-verify's prose reader takes a word
such as ``sqrt`` for text, so these are read here instead, with sympy's expression parser
over a whitelist: numbers, single-letter variables, the function names of
:data:`FUNCTIONS`, ``+ - * / ^ **``, parentheses and commas; implicit multiplication and
application are understood (``2sqrt(3)``, ``sqrt 3``). sympy's parser evaluates Python,
so nothing else may reach it: any other name, a dot outside a number, a bracket or a
quote refuses the text (None). Runs in the worker process only (sympy is imported here).
"""

from __future__ import annotations

import importlib
import re
import string
from typing import Any

__all__ = ["FUNCTIONS", "looks_plain", "parse_plain"]

FUNCTIONS = (
    "sqrt",
    "cbrt",
    "exp",
    "log",
    "ln",
    "sin",
    "cos",
    "tan",
    "cot",
    "sec",
    "csc",
    "asin",
    "acos",
    "atan",
    "arcsin",
    "arccos",
    "arctan",
    "abs",
    "pi",
)
"""Names plain syntax may use, besides single letters (``e`` is Euler's number, as in LaTeX)."""

_MAX_LENGTH = 2_000
_TOKENS = re.compile(r"\s+|[0-9]+(?:\.[0-9]+)?|\.[0-9]+|[A-Za-z]+|\*\*|[-+*/^(),]")
_NAME = re.compile(r"[A-Za-z]+")
_NAMED = re.compile(r"(?<![A-Za-z\\])(?:" + "|".join(FUNCTIONS) + r")(?![A-Za-z])")


def looks_plain(text: str) -> bool:
    """Whether ``text`` is written in plain syntax (``**``, or a function name without a backslash: ``sqrt(3)``, ``pi/2``), not LaTeX."""
    if any(c in text for c in "\\${}[]") or len(text) > _MAX_LENGTH:
        return False
    return "**" in text or _NAMED.search(text) is not None


def _whitelisted(text: str) -> str | None:
    """The text's tokens joined by spaces (``sqrt3`` is ``sqrt 3``), or None if one is not allowed."""
    tokens: list[str] = []
    at = 0
    for match in _TOKENS.finditer(text):
        if match.start() != at:
            return None  # a character no token accepts
        at = match.end()
        token = match.group()
        if _NAME.fullmatch(token) and len(token) > 1 and token not in FUNCTIONS:
            return None
        if not token.isspace():
            tokens.append(token)
    return " ".join(tokens) if at == len(text) else None


def parse_plain(text: str) -> Any | None:
    """The sympy expression for a plain-syntax answer, or None if it is not one (see the module docstring)."""
    spaced = _whitelisted(text) if looks_plain(text) else None
    if spaced is None:
        return None
    sympy = importlib.import_module("sympy")  # untyped: import_module keeps mypy strict
    parser = importlib.import_module("sympy.parsing.sympy_parser")
    # Real symbols, as latex2sympy makes them: x from here and x from LaTeX are one symbol.
    names: dict[str, object] = {letter: sympy.Symbol(letter, real=True) for letter in string.ascii_letters}
    names.update(
        e=sympy.E,
        pi=sympy.pi,
        sqrt=sympy.sqrt,
        cbrt=sympy.cbrt,
        exp=sympy.exp,
        log=sympy.log,
        ln=sympy.log,
        sin=sympy.sin,
        cos=sympy.cos,
        tan=sympy.tan,
        cot=sympy.cot,
        sec=sympy.sec,
        csc=sympy.csc,
        asin=sympy.asin,
        acos=sympy.acos,
        atan=sympy.atan,
        arcsin=sympy.asin,
        arccos=sympy.acos,
        arctan=sympy.atan,
        abs=sympy.Abs,
    )
    transformations = (
        *parser.standard_transformations,
        parser.implicit_multiplication_application,
        parser.convert_xor,
    )
    try:
        value = parser.parse_expr(spaced, local_dict=names, transformations=transformations)
    except (MemoryError, RecursionError):
        raise  # the caller reports these as the response's (too large)
    except Exception:  # any other failure of sympy's parser means "not plain syntax"
        return None
    if isinstance(value, tuple):  # "1, 2": a list answer
        return sympy.FiniteSet(*value)
    return value if isinstance(value, sympy.Basic) else None
