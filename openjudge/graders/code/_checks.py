"""Checks the grader decides itself: a call in the sandbox, a comparison outside it.

:func:`checks_from_test` turns an assert-style snippet into :class:`Check` objects when
every statement has a form whose meaning is a comparison of one call's return value
with literals; :meth:`Check.holds` then compares the value the sandbox sent back,
decoded into fresh built-in objects, with the expected value. Nothing the solution
defines takes part in the comparison.

Accepted statements (``f`` any function name, ``a...`` literals, ``msg`` ignored):
``assert f(a) == b``, ``assert b == f(a)``, ``assert f(a) is None`` (``True``/``False``),
``assert f(a)``, ``assert not f(a)``, ``assert math.isclose(f(a), b, rel_tol=..., abs_tol=...)``,
``assert abs(f(a) - b) < tol`` (or ``<=``), ``import ...``, literal assignments such as
HumanEval's ``METADATA = {...}``, and ``def check(candidate): <accepted asserts>`` followed
by ``check(f)``.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from openjudge.graders.code._sandbox import CallResult, FunctionCall
from openjudge.graders.code.harness.values import Opaque, decode

__all__ = ["Check", "Comparison", "checks_from_test", "shown"]

Comparison: TypeAlias = Literal["equal", "is", "truthy", "falsy", "close", "abs_lt", "abs_le"]
_SNIPPET = 120
_IDENTITIES = {"None": None, "True": True, "False": False}


@dataclass(frozen=True, slots=True)
class Check:
    """One call and what its return value must satisfy.

    Attributes:
        call: What the sandbox calls.
        expected: The value to compare with (a tolerance for ``abs_lt``/``abs_le``: see ``tolerance``).
        comparison: How to compare (see :data:`Comparison`).
        json_sequences: Compare tuples as lists (JSON semantics).
        rel_tol: Relative tolerance for ``close``.
        abs_tol: Absolute tolerance for ``close``; the bound for ``abs_lt``/``abs_le``.
        source: The statement, for messages.
    """

    call: FunctionCall
    expected: object = None
    comparison: Comparison = "equal"
    json_sequences: bool = False
    rel_tol: float = 1e-9
    abs_tol: float = 0.0
    source: str = field(default="", compare=False)

    def describe_call(self) -> str:
        args = [repr(a) for a in self.call.args] + [f"{k}={v!r}" for k, v in self.call.kwargs.items()]
        text = f"{self.call.function}({', '.join(args)})"
        return text if len(text) <= _SNIPPET else text[: _SNIPPET - 3] + "..."

    def holds(self, result: CallResult) -> tuple[bool, str]:
        """Whether the reported result satisfies the check, and why not."""
        call = self.describe_call()
        if not result.ok:
            return False, f"{call} raised {result.error or 'an error'}"
        try:
            value = decode(result.value, json_sequences=self.json_sequences)
        except (ValueError, TypeError, RecursionError, OverflowError, MemoryError):
            return False, f"{call} returned a value the grader cannot read"
        try:
            passed = self._compare(value)
        except (OverflowError, ValueError, TypeError, RecursionError):  # e.g. 2**20000 against a float
            passed = False
        if passed:
            return True, ""
        return False, f"{call} returned {shown(value)}; {self.source or f'expected {self.expected!r}'}"[:400]

    def _compare(self, value: object) -> bool:
        if self.comparison == "equal":
            return bool(value == self.expected)
        if self.comparison == "is":
            return value is self.expected
        if isinstance(value, Opaque):  # truthiness or closeness of an object that is not data: unknown
            return False
        if self.comparison in ("truthy", "falsy"):
            return bool(value) is (self.comparison == "truthy")
        if not (isinstance(value, int | float) and isinstance(self.expected, int | float)):
            return False
        if self.comparison == "close":
            return math.isclose(value, self.expected, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        gap = abs(value - self.expected)
        return gap < self.abs_tol if self.comparison == "abs_lt" else gap <= self.abs_tol


def shown(value: object) -> str:
    """``repr(value)`` cut to a snippet; values Python will not print (ints past 4,300 digits) named by type."""
    try:
        text = repr(value)
    except (ValueError, RecursionError, MemoryError):
        return f"<{type(value).__name__} too large to show>"
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 3] + "..."


class _Unsupported(Exception):
    pass


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise _Unsupported from exc


def _call(node: ast.expr, aliases: dict[str, str]) -> FunctionCall:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise _Unsupported
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        raise _Unsupported
    name = aliases.get(node.func.id, node.func.id)
    args = tuple(_literal(a) for a in node.args)
    kwargs = {str(k.arg): _literal(k.value) for k in node.keywords}
    return FunctionCall(name, args, kwargs)


def _is_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name)


def _isclose(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr == "isclose" and isinstance(func.value, ast.Name) and func.value.id == "math"
    return isinstance(func, ast.Name) and func.id == "isclose"


def _check(test: ast.expr, source: str, aliases: dict[str, str]) -> Check:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            call_node, other = (left, right) if _is_call(left) else (right, left)
            return Check(_call(call_node, aliases), _literal(other), "equal", source=source)
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and repr(right.value) in _IDENTITIES:
            return Check(_call(left, aliases), right.value, "is", source=source)
        if (  # abs(f(a) - b) < tol
            isinstance(op, ast.Lt | ast.LtE)
            and isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "abs"
            and len(left.args) == 1
            and isinstance(left.args[0], ast.BinOp)
            and isinstance(left.args[0].op, ast.Sub)
        ):
            inner = left.args[0]
            bound = _literal(right)
            if not isinstance(bound, int | float):
                raise _Unsupported
            comparison: Comparison = "abs_lt" if isinstance(op, ast.Lt) else "abs_le"
            return Check(
                _call(inner.left, aliases), _literal(inner.right), comparison, abs_tol=bound, source=source
            )
        raise _Unsupported
    if _isclose(test):
        assert isinstance(test, ast.Call)
        if len(test.args) != 2:
            raise _Unsupported
        call_node, other = (test.args[0], test.args[1]) if _is_call(test.args[0]) else test.args[::-1]
        options = {str(k.arg): _literal(k.value) for k in test.keywords}
        if set(options) - {"rel_tol", "abs_tol"} or not all(
            isinstance(v, int | float) for v in options.values()
        ):
            raise _Unsupported
        rel = options.get("rel_tol", 1e-9)
        absolute = options.get("abs_tol", 0.0)
        assert isinstance(rel, int | float) and isinstance(absolute, int | float)
        return Check(
            _call(call_node, aliases), _literal(other), "close", rel_tol=rel, abs_tol=absolute, source=source
        )
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return Check(_call(test.operand, aliases), None, "falsy", source=source)
    return Check(_call(test, aliases), None, "truthy", source=source)


def _asserts(body: list[ast.stmt], text: str, aliases: dict[str, str]) -> list[Check]:
    checks = []
    for stmt in body:
        if isinstance(stmt, ast.Assert):
            source = ast.get_source_segment(text, stmt) or "assert ..."
            checks.append(_check(stmt.test, source[:_SNIPPET], aliases))
        elif not isinstance(stmt, ast.Import | ast.ImportFrom | ast.Pass):
            raise _Unsupported
    return checks


def _harness_style(tree: ast.Module, text: str) -> list[Check]:
    """``def check(candidate): <asserts>`` then ``check(name)``, with literal assignments around."""
    functions = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
    calls = [s for s in tree.body if isinstance(s, ast.Expr)]
    if len(functions) != 1 or len(calls) != 1:
        raise _Unsupported
    function, call = functions[0], calls[0].value
    if not (
        len(function.args.args) == 1
        and not function.decorator_list
        and isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == function.name
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Name)
    ):
        raise _Unsupported
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            _literal(stmt.value)
        elif (
            stmt is not function
            and stmt is not calls[0]
            and not isinstance(stmt, ast.Import | ast.ImportFrom)
        ):
            raise _Unsupported
    aliases = {function.args.args[0].arg: call.args[0].id}
    return _asserts(function.body, text, aliases)


def checks_from_test(test: str) -> list[Check] | None:
    """The checks an assert-style snippet amounts to, or None if it has any other statement."""
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    try:
        if any(isinstance(s, ast.FunctionDef) for s in tree.body):
            checks = _harness_style(tree, test)
        else:
            checks = _asserts(tree.body, test, {})
    except (_Unsupported, RecursionError):
        return None
    return checks or None
