"""``calculate_output`` of a ``multi`` grader: a small arithmetic language, evaluated without ``eval``.

Accepted, as OpenAI's graders guide lists them: numbers, the sub-graders' names,
parentheses, ``+ - * /``, ``^`` (power; ``**`` too), unary ``-``/``+``, and the
functions ``min``, ``max`` (two or more arguments), ``abs``, ``floor``, ``ceil``,
``exp``, ``sqrt``, ``log`` (natural). Anything else (attributes, calls of other names,
comparisons, strings) is refused when the grader is built (OpenAI's
``formula_parse_error``).

The formula is parsed with :mod:`ast` and walked; no name outside the sub-graders and
the functions above can be reached. :meth:`Formula.bounds` runs the same walk over
intervals to find the formula's range from the sub-graders' ranges (so a
``0.5 * a + 0.5 * b`` over two [0, 1] graders declares [0, 1]).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Formula", "FormulaError", "Interval"]

_MAX_LENGTH = 2_000
_MAX_NODES = 500


class FormulaError(ValueError):
    """A formula that cannot be parsed (at build time) or evaluated (e.g. a division by zero)."""


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float


_UNARY: dict[str, Callable[[float], float]] = {
    "abs": abs,
    "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)),
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
_VARIADIC = {"min": min, "max": max}
_FUNCTIONS = frozenset(_UNARY) | frozenset(_VARIADIC)


def _number(node: ast.Constant) -> float:
    value = node.value
    assert isinstance(value, int | float)  # checked when the formula was built
    return float(value)


class Formula:
    """A checked ``calculate_output`` formula over named sub-grader scores.

    Example:
        >>> f = Formula("0.5 * name + 0.5 * args", {"name", "args"})
        >>> f.evaluate({"name": 1.0, "args": 0.5})
        0.75
    """

    def __init__(self, text: str, names: frozenset[str] | set[str]) -> None:
        self.text = text
        self.names = frozenset(names)
        if len(text) > _MAX_LENGTH:
            raise FormulaError(f"calculate_output is longer than {_MAX_LENGTH} characters")
        try:
            tree = ast.parse(text.replace("^", "**"), mode="eval")
        except SyntaxError as exc:
            raise FormulaError(f"calculate_output {text!r} is not a formula: {exc.msg}") from None
        if sum(1 for _ in ast.walk(tree)) > _MAX_NODES:
            raise FormulaError(f"calculate_output has more than {_MAX_NODES} parts")
        self._tree = tree.body
        self._check(self._tree)
        self.used = frozenset(
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCTIONS
        )

    def _check(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise FormulaError(f"calculate_output: {node.value!r} is not a number")
        elif isinstance(node, ast.Name):
            if node.id not in self.names:
                known = ", ".join(sorted(self.names))
                raise FormulaError(f"calculate_output names {node.id!r}, which is not a sub-grader ({known})")
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div | ast.Pow):
                raise FormulaError(f"calculate_output: operator {type(node.op).__name__} is not allowed")
            self._check(node.left)
            self._check(node.right)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub | ast.UAdd):
                raise FormulaError(f"calculate_output: operator {type(node.op).__name__} is not allowed")
            self._check(node.operand)
        elif isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name) or func.id not in _FUNCTIONS or node.keywords:
                raise FormulaError(
                    f"calculate_output: only {', '.join(sorted(_FUNCTIONS))} can be called, with plain arguments"
                )
            wanted = "1" if func.id in _UNARY else "2 or more"
            if (func.id in _UNARY and len(node.args) != 1) or (func.id in _VARIADIC and len(node.args) < 2):
                raise FormulaError(f"calculate_output: {func.id}() takes {wanted} arguments")
            for arg in node.args:
                if isinstance(arg, ast.Starred):
                    raise FormulaError("calculate_output: *arguments are not allowed")
                self._check(arg)
        else:
            raise FormulaError(f"calculate_output: {type(node).__name__} is not allowed in a formula")

    def evaluate(self, scores: Mapping[str, float]) -> float:
        """The formula's value for these sub-grader scores.

        Raises:
            FormulaError: A division by zero, a math domain error (``log(0)``, ``sqrt(-1)``),
                an overflow, or a non-finite result.
        """
        try:
            value = self._eval(self._tree, scores)
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            raise FormulaError(f"calculate_output {self.text!r} cannot be computed: {exc}") from None
        if isinstance(value, complex) or not math.isfinite(value):
            raise FormulaError(f"calculate_output {self.text!r} gave {value!r}, not a finite number")
        return float(value)

    def _eval(self, node: ast.expr, scores: Mapping[str, float]) -> float:
        if isinstance(node, ast.Constant):
            return _number(node)
        if isinstance(node, ast.Name):
            return float(scores[node.id])
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, scores)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, scores), self._eval(node.right, scores)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div):
                return left / right
            return math.pow(left, right)  # float pow: no huge integers, OverflowError past 1e308
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        args = [self._eval(arg, scores) for arg in node.args]
        if node.func.id in _VARIADIC:
            return float(_VARIADIC[node.func.id](args))
        return float(_UNARY[node.func.id](args[0]))

    def bounds(self, ranges: Mapping[str, Interval]) -> Interval | None:
        """The range of the formula's value when each name lies in its interval, or None if unbounded.

        Interval arithmetic: exact for formulas that use each name once with monotonic
        functions (the usual weighted sums), an over-estimate otherwise.
        """
        try:
            result = self._bounds(self._tree, ranges)
        except (ZeroDivisionError, ValueError, OverflowError):
            return None
        if result is None or not (math.isfinite(result.low) and math.isfinite(result.high)):
            return None
        return result

    def _bounds(self, node: ast.expr, ranges: Mapping[str, Interval]) -> Interval | None:
        if isinstance(node, ast.Constant):
            return Interval(_number(node), _number(node))
        if isinstance(node, ast.Name):
            return ranges.get(node.id)
        if isinstance(node, ast.UnaryOp):
            inner = self._bounds(node.operand, ranges)
            if inner is None:
                return None
            return Interval(-inner.high, -inner.low) if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            a, b = self._bounds(node.left, ranges), self._bounds(node.right, ranges)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Add):
                return Interval(a.low + b.low, a.high + b.high)
            if isinstance(node.op, ast.Sub):
                return Interval(a.low - b.high, a.high - b.low)
            if isinstance(node.op, ast.Mult):
                products = [a.low * b.low, a.low * b.high, a.high * b.low, a.high * b.high]
                return Interval(min(products), max(products))
            if isinstance(node.op, ast.Div):
                if b.low <= 0 <= b.high:
                    return None
                quotients = [a.low / b.low, a.low / b.high, a.high / b.low, a.high / b.high]
                return Interval(min(quotients), max(quotients))
            if b.low == b.high and a.low >= 0:  # x ^ constant over non-negative x: monotonic
                ends = [math.pow(a.low, b.low), math.pow(a.high, b.low)]
                return Interval(min(ends), max(ends))
            return None
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        args = [self._bounds(arg, ranges) for arg in node.args]
        if any(arg is None for arg in args):
            return None
        parts = [arg for arg in args if arg is not None]
        name = node.func.id
        if name == "min":
            return Interval(min(p.low for p in parts), min(p.high for p in parts))
        if name == "max":
            return Interval(max(p.low for p in parts), max(p.high for p in parts))
        x = parts[0]
        if name == "abs":
            if x.low >= 0:
                return x
            if x.high <= 0:
                return Interval(-x.high, -x.low)
            return Interval(0.0, max(-x.low, x.high))
        if (name in ("sqrt", "log") and x.low < 0) or (name == "log" and x.low == 0):
            return None
        function = _UNARY[name]  # floor, ceil, exp, sqrt, log: non-decreasing
        return Interval(function(x.low), function(x.high))
