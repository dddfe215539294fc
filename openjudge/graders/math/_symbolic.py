r"""Symbolic equivalence of two LaTeX answers with sympy, when sympy is installed.

sympy is optional and imported only inside :func:`symbolic_equal`, never at module
import. Answers go through a small LaTeX → sympy translator that accepts a safe
subset (numbers, single-letter variables, ``+ - * / ^``, ``\frac``, ``\sqrt``,
``\cdot``, ``\times``, ``\pi``, ``\infty``, ``\sin``/``\cos``/``\tan``/``\log``/``\ln``/
``\exp``, braces and parentheses); anything else is "undecided". The translator
rejects every identifier except those names and single letters, so the text handed
to sympy's parser (which evaluates Python) cannot name a Python builtin. Nested
exponents (``9^{9^{9}}``), chained ones (``9^{999}^{999}``, which Python reads as a
tower), exponents longer than three digits, and more than two powers are rejected too,
so a hostile answer cannot make sympy compute for hours. That is a first line only: the
grader runs :func:`compare` in a worker process that is killed when the budget is spent
(:class:`~openjudge.graders._workers.WorkerPool`).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import string
from collections.abc import Mapping, Sequence

__all__ = ["compare", "compare_candidates", "latex_to_sympy_text", "symbolic_equal", "sympy_available"]

_MAX_INPUT = 200
_MAX_POWERS = 2
_PROBES = (0.5772156649, -1.4142135623, 2.7182818284, -0.3183098861, 1.6180339887, -2.2360679775)
_PROBE_COUNT = 4
_FUNCTIONS = {"sqrt", "sin", "cos", "tan", "log", "exp", "pi", "oo"}
_COMMANDS = {
    "\\cdot": "*",
    "\\times": "*",
    "\\div": "/",
    "\\pi": " pi ",
    "\\infty": " oo ",
    "\\ln": " log ",
    "\\log": " log ",
    "\\sin": " sin ",
    "\\cos": " cos ",
    "\\tan": " tan ",
    "\\exp": " exp ",
}
_ALLOWED_CHARS = re.compile(r"[0-9A-Za-z+\-*/().\s]*")
_IDENTIFIER = re.compile(r"[A-Za-z]+")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_BARE_DOT = re.compile(r"(?<![0-9])\.|\.(?![0-9])")


class _Unsupported(Exception):
    pass


def sympy_available() -> bool:
    """Whether sympy can be imported (checked without importing it)."""
    return importlib.util.find_spec("sympy") is not None


def _group(text: str, i: int) -> tuple[str, int]:
    """Read one argument at ``i``: a ``{...}`` group or a single character."""
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text):
        raise _Unsupported("missing argument")
    if text[i] != "{":
        return text[i], i + 1
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
    raise _Unsupported("unbalanced braces")


def _translate(text: str) -> str:
    out: list[str] = []
    i = 0
    after_power = False  # the last thing written was an exponent: another "^" would build a tower
    while i < len(text):
        if text[i] == "^":
            if after_power:
                raise _Unsupported("chained exponents")
            power, i = _group(text, i + 1)
            exponent = _translate(power)
            if "**" in exponent or any(len(d) > 3 for d in re.findall(r"[0-9]+", exponent)):
                raise _Unsupported("exponent too large or nested")
            out.append(f"**({exponent})")
            after_power = True
            continue
        if not text[i].isspace():
            after_power = False
        if text.startswith("\\frac", i):
            num, i = _group(text, i + 5)
            den, i = _group(text, i)
            out.append(f"(({_translate(num)})/({_translate(den)}))")
        elif text.startswith("\\sqrt", i):
            i += 5
            index = None
            if i < len(text) and text[i] == "[":
                end = text.find("]", i)
                if end == -1:
                    raise _Unsupported("unbalanced root index")
                index, i = text[i + 1 : end], end + 1
            body, i = _group(text, i)
            root = f"sqrt({_translate(body)})"
            out.append(root if index is None else f"(({_translate(body)})**(1/({_translate(index)})))")
        elif text[i] == "\\":
            match = _COMMAND.match(text, i)
            command = match.group() if match else text[i : i + 2]
            if command not in _COMMANDS:
                raise _Unsupported(f"unsupported command {command}")
            out.append(_COMMANDS[command])
            i += len(command)
        elif text[i] in "{}":
            out.append("(" if text[i] == "{" else ")")
            i += 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def latex_to_sympy_text(answer: str) -> str | None:
    """Translate a normalised LaTeX answer to sympy input text, or None if outside the safe subset."""
    if len(answer) > _MAX_INPUT or not answer.strip() or "**" in answer or answer.count("^") > _MAX_POWERS:
        return None
    try:
        text = _translate(answer)
    except (_Unsupported, RecursionError):
        return None
    if not _ALLOWED_CHARS.fullmatch(text) or _BARE_DOT.search(text):
        return None
    if any(len(name) > 1 and name not in _FUNCTIONS for name in _IDENTIFIER.findall(text)):
        return None
    return text


def symbolic_equal(left: str, right: str, *, abs_tol: float, rel_tol: float) -> bool | None:
    """Decide with sympy whether two normalised LaTeX answers are equal.

    Blocking and possibly slow (the first call imports sympy, about a second): call it
    in a worker thread. Returns None when sympy is missing or either side cannot be
    translated, parsed or evaluated; True/False otherwise.

    Constant expressions are evaluated to 30 significant digits and compared within
    ``max(abs_tol, rel_tol * magnitude)`` (relative tolerance at least 1e-12 to absorb
    evaluation error). Expressions with variables are compared at fixed probe points
    (positive and negative, irrational-looking values), which is quick even for
    ``(x+1)^{999}`` and agrees with algebraic identity except on measure-zero accidents.
    """
    left_text, right_text = latex_to_sympy_text(left), latex_to_sympy_text(right)
    if left_text is None or right_text is None:
        return None
    try:
        # import_module keeps mypy happy whether or not sympy (untyped) is installed.
        sympy = importlib.import_module("sympy")
        parser = importlib.import_module("sympy.parsing.sympy_parser")
    except ImportError:
        return None
    parse_expr = parser.parse_expr
    names: dict[str, object] = {letter: sympy.Symbol(letter) for letter in string.ascii_letters}
    names.update(
        sqrt=sympy.sqrt,
        sin=sympy.sin,
        cos=sympy.cos,
        tan=sympy.tan,
        log=sympy.log,
        exp=sympy.exp,
        pi=sympy.pi,
        oo=sympy.oo,
    )
    transformations = (*parser.standard_transformations, parser.implicit_multiplication_application)
    rel = max(rel_tol, 1e-12)
    try:
        a = parse_expr(left_text, local_dict=dict(names), transformations=transformations)
        b = parse_expr(right_text, local_dict=dict(names), transformations=transformations)
        if a == b:
            return True
        symbols = sorted(a.free_symbols | b.free_symbols, key=str)
        probes = [
            {sym: _PROBES[(i + j) % len(_PROBES)] for i, sym in enumerate(symbols)}
            for j in range(_PROBE_COUNT if symbols else 1)
        ]
        decided = 0
        for point in probes:
            x, y = a.evalf(30, subs=point), b.evalf(30, subs=point)
            if (
                not (x.is_number and y.is_number)
                or x.has(sympy.zoo, sympy.nan)
                or y.has(sympy.zoo, sympy.nan)
            ):
                continue
            # Compare in sympy floats: they do not overflow where Python floats would.
            gap, scale = sympy.Abs(x - y), sympy.Max(sympy.Abs(x), sympy.Abs(y))
            if not bool(gap <= abs_tol or gap <= rel * scale):
                return False
            decided += 1
    except Exception:  # any sympy failure means "undecided", not a crash
        return None
    return True if decided else None


def compare(left: str, right: str, abs_tol: float, rel_tol: float) -> bool | None:
    """:func:`symbolic_equal` with positional arguments, for a :class:`~openjudge.graders._workers.WorkerPool`."""
    return symbolic_equal(left, right, abs_tol=abs_tol, rel_tol=rel_tol)


def compare_candidates(
    reference: str, candidates: Sequence[Mapping[str, object]], abs_tol: float, rel_tol: float
) -> dict[str, object]:
    """The response's candidates against the reference, for a :class:`~openjudge.graders._workers.WorkerPool`.

    The fallback of :func:`openjudge.graders.math._verify.compare_answers` without
    math-verify, with the same candidates and replies: candidates that this translator
    finds unequal are ``conflicting_answers``; the first is compared with the reference.
    List answers (``answers``) are outside its subset (undecided).
    """
    from openjudge.graders.math._normalize import normalize_answer

    texts: list[str] = []
    for candidate in candidates:
        parts = candidate.get("texts")
        if candidate.get("kind") == "answers" or not isinstance(parts, list) or len(parts) != 1:
            return {"equal": None, "cause": "undecided"}
        texts.append(normalize_answer(str(parts[0])))
    for other in texts[1:]:
        if symbolic_equal(texts[0], other, abs_tol=abs_tol, rel_tol=rel_tol) is False:
            return {"equal": None, "cause": "conflicting_answers"}
    equal = symbolic_equal(texts[0], normalize_answer(reference), abs_tol=abs_tol, rel_tol=rel_tol)
    return {"equal": equal, "cause": "sympy" if equal is not None else "undecided"}
