r"""Verdicts decided exactly before math-verify's simplification, in the worker.

math-verify decides a pair it cannot match structurally or numerically by
``simplify(gold - pred)``: 5–150 ms for an ordinary symbolic answer, right
(``(x+15)^2`` against ``x^2+30x+225``) or wrong (``(x+16)^2``), most of the symbolic
step's time. Most pairs need none of it. :func:`decide` answers:

* *not equal* when the two sides have different values at one point: no equivalence
  (``simplify`` is one) can make them equal, so math-verify would not accept them;
* *equal* when their difference expands (``sympy.expand``) or cancels (``sympy.cancel``,
  for rational functions) to exactly zero: an identity, decided by exact algebra, never
  by numbers;
* otherwise nothing: math-verify decides (a trigonometric identity, say), and
  :mod:`._verify`'s rules apply on top as to every pair.

Only where that argument holds exactly:

* both sides are plain expressions built from integers, rationals, named constants
  (``\pi``, ``e``), single-argument ``exp``, ``log``, ``sin``, ``cos``, ``tan`` and
  symbols, with ``+``, ``*`` and powers: no floats (math-verify rounds those), no
  infinities (:mod:`._verify`'s rule decides those), no sets, relations, tuples,
  matrices, integrals or derivatives (math-verify compares those structurally or solves
  them), and neither side a lone symbol (math-verify's rule for text read as symbols);
* at least one symbol (two constants are compared by :mod:`._verify` to 45 digits);
* for *not equal*: every symbol's assumptions hold at the point (latex2sympy makes real
  symbols, and ``i`` non-real: a pair with ``i`` is left to math-verify), both values are
  finite numbers, and they differ by more than ``10^-9`` of their magnitude, evaluated to
  30 significant digits (an error of the evaluation is some ``10^-29`` of it);
* for *equal*: both sides expand to at most :data:`_MAX_TERMS` terms together, bounded
  before expanding (expanding ``(x+1)^{999}`` is slower than what it saves).

Runs in the worker process only (sympy is imported by the caller).
"""

from __future__ import annotations

from typing import Any

__all__ = ["decide"]

_POINTS = (
    "0.57721566490153286060651209008240243",
    "1.32471795724474602596090885447809734",
    "0.73908513321516064165531208767387340",
    "1.61803398874989484820458683436563812",
    "2.50290787509589282228390287321821578",
    "0.91596559417721901505460351493238411",
)
"""Where symbols are evaluated (the k-th symbol by name at the k-th value, cycling): positive
irrational constants, away from the integers and simple fractions where answers have poles."""
_DIGITS = 30
_SEPARATION = "1e-9"
_MAX_NODES = 2_000
_FUNCTIONS = ("exp", "log", "sin", "cos", "tan")
_MAX_TERMS = 500


def _plain(sympy: Any, value: Any) -> bool:
    """Whether ``value`` is a plain expression of the whitelisted kinds (module docstring)."""
    if not isinstance(value, sympy.Expr) or isinstance(value, sympy.Symbol):
        return False
    functions = tuple(getattr(sympy, name) for name in _FUNCTIONS)
    kinds = (sympy.Rational, sympy.NumberSymbol, sympy.Symbol, sympy.Add, sympy.Mul, sympy.Pow)
    for count, node in enumerate(sympy.preorder_traversal(value)):
        if count > _MAX_NODES:
            return False
        if isinstance(node, kinds):
            continue
        if isinstance(node, functions) and len(node.args) == 1:
            continue
        return False
    return True


def _point(sympy: Any, symbols: list[Any]) -> dict[Any, Any] | None:
    """The probe point, or None when a symbol's assumptions do not hold at its value."""
    point: dict[Any, Any] = {}
    for index, symbol in enumerate(symbols):
        value = sympy.Float(_POINTS[index % len(_POINTS)], 40) + index // len(_POINTS)
        for fact, holds in symbol.assumptions0.items():
            if getattr(value, f"is_{fact}", None) is not holds:
                return None
        point[symbol] = value
    return point


def _value(sympy: Any, expression: Any, point: dict[Any, Any]) -> Any | None:
    value = expression.evalf(_DIGITS, subs=point)
    if not value.is_number or value.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
        return None
    return value


def _differs(sympy: Any, gold: Any, pred: Any, symbols: list[Any]) -> bool:
    """Whether the two sides certainly have different values at the probe point."""
    point = _point(sympy, symbols)
    if point is None:
        return False
    left, right = _value(sympy, gold, point), _value(sympy, pred, point)
    if left is None or right is None:
        return False
    gap = sympy.Abs(left - right)
    scale = sympy.Max(1, sympy.Abs(left), sympy.Abs(right))
    return bool(gap > sympy.Float(_SEPARATION) * scale)


def _terms(sympy: Any, value: Any) -> int:
    """An upper bound on the number of terms of ``value`` expanded (capped above :data:`_MAX_TERMS`)."""
    if isinstance(value, sympy.Add):
        return min(_MAX_TERMS + 1, sum(_terms(sympy, arg) for arg in value.args))
    if isinstance(value, sympy.Mul):
        product = 1
        for arg in value.args:
            product = min(_MAX_TERMS + 1, product * _terms(sympy, arg))
        return product
    if isinstance(value, sympy.Pow) and value.exp.is_Integer and value.exp != 0:
        base, power = _terms(sympy, value.base), min(abs(int(value.exp)), 64)
        return 1 if base == 1 else min(_MAX_TERMS + 1, base**power)
    return 1


def _identical(sympy: Any, gold: Any, pred: Any) -> bool:
    """Whether ``gold - pred`` is zero by exact algebra (expanded, or as a rational function)."""
    if _terms(sympy, gold) + _terms(sympy, pred) > _MAX_TERMS:
        return False
    difference = gold - pred
    return bool(sympy.expand(difference) == 0 or sympy.cancel(difference) == 0)


def decide(sympy: Any, gold: Any, pred: Any) -> bool | None:
    """False: certainly unequal; True: equal by exact algebra; None: math-verify decides (module docstring)."""
    try:
        if not (_plain(sympy, gold) and _plain(sympy, pred)):
            return None
        symbols = sorted(gold.free_symbols | pred.free_symbols, key=str)
        if not symbols:
            return None  # two constants: :mod:`._verify` compares them to 45 digits
        if _differs(sympy, gold, pred, symbols):
            return False
        return True if _identical(sympy, gold, pred) else None
    except (MemoryError, RecursionError):
        raise  # the response's expression overflowed: the caller says so
    except Exception:  # anything sympy cannot do here is math-verify's to decide
        return None
