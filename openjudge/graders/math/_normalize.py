r"""Normalise math answers and read them as exact numbers.

:func:`normalize_answer` removes presentation-only LaTeX (``$``, ``\left``, spacing
commands, ``\text{}``, degree signs, ``\dfrac``) so that equal answers compare equal as
strings. :func:`parse_number` reads a normalised answer as exact rationals; a
percentage gives two candidates (``50%`` is 50 or 0.5).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext
from fractions import Fraction

__all__ = [
    "canonical_number",
    "normalize_answer",
    "numbers_close",
    "parse_number",
    "split_elements",
    "squash",
]

_MAX_DIGITS = 400  # longer literals are compared as strings, not numbers
_MAX_EXPONENT = 400

_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_TEXT_COMMAND = re.compile(
    r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}"
)
_SPACING = re.compile(r"\\(?:[,;:! ]|quad|qquad|displaystyle|textstyle)|~")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree")
_FRAC_SHORTHAND = re.compile(r"\\frac\s*([0-9])\s*([0-9])")
_FRAC_HALF_SHORTHAND = re.compile(r"\\frac\s*\{([^{}]*)\}\s*([0-9A-Za-z])")
_LEADING_VARIABLE = re.compile(r"^[A-Za-z]\s*=\s*(?=\S)")

_DECIMAL = r"(?:[1-9][0-9]{0,2}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]*)?|\.[0-9]+"
_PLAIN = re.compile(rf"(?P<sign>[-+]?)(?P<num>{_DECIMAL})(?:[eE](?P<exp>[-+]?[0-9]+))?")
_TIMES_TEN = re.compile(
    rf"(?P<sign>[-+]?)(?P<num>{_DECIMAL})(?:\\times|\\cdot|\*|x)10\^(?:\{{(?P<e1>[-+]?[0-9]+)\}}|(?P<e2>[-+]?[0-9]))"
)
_FRAC = re.compile(r"(?P<sign>[-+]?)(?P<whole>[0-9]+)?\\frac\{(?P<p>[-+]?[0-9]+)\}\{(?P<q>[-+]?[0-9]+)\}")
_SLASH = re.compile(r"(?P<sign>[-+]?)(?P<p>[0-9]+)/(?P<q>[0-9]+)")
_UNIT_SUFFIX = re.compile(
    r"^(?P<value>.*?\S)\s+(?P<unit>[A-Za-z]{2,}(?:\^?[23])?(?:(?:\s*/\s*|\s+)[A-Za-z]+(?:\^?[23])?)*)\.?$"
)
# Spaces that group digits in threes ("1 000 000") are dropped; any other space between
# two digits ("1 2") means the text is not one number.
_THOUSANDS_SPACE = re.compile(r"(?<=[0-9])[ \u00a0\u202f](?=[0-9]{3}(?![0-9]))")
_DIGIT_GAP = re.compile(r"[0-9]\s+[0-9]")
_COMMA_GAP = re.compile(r",\s")  # "32, 349" is two numbers, not 32349
_TRAILING_BREAK = re.compile(r"(?:\\\\\s*)+$")  # a LaTeX line break after the answer: "185\\"
_WORDS = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)*")
_INEXACT = re.compile(r"[0-9]\.|\.[0-9]|[0-9][eE][-+]?[0-9]")  # a decimal point or an exponent


def _strip_delimiters(text: str) -> str:
    changed = True
    while changed:
        changed = False
        for opening, closing in _DELIMITERS:
            if (
                len(text) >= len(opening) + len(closing)
                and text.startswith(opening)
                and text.endswith(closing)
            ):
                text = text[len(opening) : len(text) - len(closing)].strip()
                changed = True
    return text


def normalize_answer(answer: str) -> str:
    r"""Remove presentation-only markup from a math answer.

    Steps: strip surrounding math delimiters, ``\left``/``\right``, spacing commands,
    ``\displaystyle``; unwrap ``\text{..}``-like commands (keeping their content,
    preceded by a space); drop degree signs, ``\$`` and ``$``; ``\dfrac``/``\tfrac`` →
    ``\frac`` and ``\frac12`` → ``\frac{1}{2}``; ``\%`` → ``%``; ``{,}`` → ``,``; drop a
    leading ``x =`` and a trailing period; collapse whitespace; and unicode minus → ``-``.

    Example:
        >>> normalize_answer(r"$x = \dfrac{3}{4}\text{ cm}.$")
        '\\frac{3}{4} cm'
    """
    text = _strip_delimiters(_TRAILING_BREAK.sub("", answer.strip()))
    text = text.replace("\\left", "").replace("\\right", "").replace("\u2212", "-")
    text = _SPACING.sub(" ", text)
    text = _TEXT_COMMAND.sub(r" \1", text)
    text = _DEGREES.sub("", text)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = _FRAC_SHORTHAND.sub(r"\\frac{\1}{\2}", text)
    text = _FRAC_HALF_SHORTHAND.sub(r"\\frac{\1}{\2}", text)
    text = text.replace("\\%", "%").replace("\\$", "").replace("$", "").replace("{,}", ",")
    text = " ".join(text.split())
    if text.count("=") == 1:
        text = _LEADING_VARIABLE.sub("", text)
    return text.rstrip(".").strip()


def squash(text: str) -> str:
    """Normalised answer with all whitespace removed, for string comparison.

    Pure words (``Yes``, ``Monday``) are case-folded; anything with math keeps its case.
    """
    if _WORDS.fullmatch(text):
        return text.casefold().replace(" ", "")
    return "".join(text.split())


def _decimal(sign: str, literal: str, exponent: str | None) -> Fraction | None:
    digits = literal.replace(",", "")
    if len(digits) > _MAX_DIGITS or (exponent is not None and abs(int(exponent)) > _MAX_EXPONENT):
        return None
    try:
        value = Fraction(Decimal(digits + (f"e{exponent}" if exponent is not None else "")))
    except (InvalidOperation, ValueError):
        return None
    return -value if sign == "-" else value


def _exact_number(text: str) -> Fraction | None:
    """An exact rational for a whitespace-free numeric literal, or None."""
    if (m := _PLAIN.fullmatch(text)) is not None:
        return _decimal(m["sign"], m["num"], m["exp"])
    if (m := _TIMES_TEN.fullmatch(text)) is not None:
        return _decimal(m["sign"], m["num"], m["e1"] or m["e2"])
    for pattern in (_FRAC, _SLASH):
        if (m := pattern.fullmatch(text)) is not None:
            if len(m["p"]) > _MAX_DIGITS or len(m["q"]) > _MAX_DIGITS or int(m["q"]) == 0:
                return None
            value = Fraction(int(m["p"]), int(m["q"]))
            whole = m.groupdict().get("whole")
            if whole:
                value = int(whole) + value
            return -value if m["sign"] == "-" else value
    return None


def parse_number(answer: str) -> list[Fraction] | None:
    r"""Read a normalised answer as a number: candidate exact values, or None.

    Accepts integers and decimals with a sign, thousands separators (``1,234``),
    scientific notation (``1.5e3``, ``1.5\times10^{3}``), fractions (``3/4``,
    ``\frac{3}{4}``, ``-\frac{3}{4}``, ``\frac{-3}{4}``), mixed numbers
    (``1\frac{1}{2}``), digits grouped by spaces (``1 000 000``; but ``1 2`` is not a
    number), a trailing percent sign (``50%`` gives ``[50, 1/2]``), and a trailing unit
    separated by a space whose first word has two or more letters (``5 cm``,
    ``12 square feet``, ``3 km/h``, ``4 cm^2``).

    Example:
        >>> parse_number("1,234.5")
        [Fraction(2469, 2)]
    """
    text = answer.strip()
    if len(text) > _MAX_DIGITS * 2:
        return None
    unit = _UNIT_SUFFIX.match(text)
    candidates = [text] if unit is None else [text, unit["value"]]
    for candidate in candidates:
        grouped = _THOUSANDS_SPACE.sub("", candidate)
        if _DIGIT_GAP.search(grouped) or _COMMA_GAP.search(grouped):
            continue
        compact = "".join(grouped.split())
        percent = compact.endswith("%")
        value = _exact_number(compact[:-1] if percent else compact)
        if value is not None:
            return [value, value / 100] if percent else [value]
    return None


def canonical_number(answer: str) -> str | None:
    r"""The number a normalised answer reads as, written plainly, or None if it is not one number.

    Exact literals give an integer or ``\frac{p}{q}``; a literal with a decimal point or an
    exponent gives its decimal expansion (so it stays inexact for the worker's rules). A
    percentage (two readings) is not one number here.

    Example:
        >>> canonical_number("1,234 cm"), canonical_number("-6/8"), canonical_number("1.5e3")
        ('1234', '-\\frac{3}{4}', '1500.0')
    """
    values = parse_number(answer)
    if values is None or len(values) != 1:
        return None
    value = values[0]
    if _INEXACT.search(answer) is not None:
        with localcontext() as context:
            context.prec = 2 * _MAX_DIGITS + 2 * _MAX_EXPONENT
            text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
        whole, _, fraction = text.partition(".")
        return f"{whole}.{fraction.rstrip('0') or '0'}"
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def numbers_close(a: list[Fraction], b: list[Fraction], *, abs_tol: float, rel_tol: float) -> bool:
    """Whether any candidate of ``a`` equals any candidate of ``b`` within tolerance.

    ``|x - y| <= max(abs_tol, rel_tol * max(|x|, |y|))``, computed exactly.
    """
    for x in a:
        for y in b:
            diff = abs(x - y)
            if diff == 0 or diff <= max(Fraction(abs_tol), Fraction(rel_tol) * max(abs(x), abs(y))):
                return True
    return False


def split_elements(answer: str) -> tuple[str, list[str], str] | None:
    r"""Split a tuple, interval, set or list answer into its elements.

    ``"(1, 2]"`` gives ``("(", ["1", "2"], "]")``; ``"\{1,2\}"`` gives ``("\{", ..., "\}")``;
    a bare ``"1, 2"`` gives ``("", ["1", "2"], "")``. Commas inside brackets or braces
    do not split. Returns None when there is no top-level comma.
    """
    text = answer.strip()
    opening = closing = ""
    if text.startswith("\\{") and text.endswith("\\}") and len(text) >= 4:
        opening, closing = "\\{", "\\}"
    elif len(text) >= 2 and text[0] in "([" and text[-1] in ")]":
        opening, closing = text[0], text[-1]
    text = text[len(opening) : len(text) - len(closing)]
    parts: list[str] = []
    depth = 0
    start = 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if not parts:
        return None
    parts.append(text[start:].strip())
    return opening, parts, closing
