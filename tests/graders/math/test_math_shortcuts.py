"""Verdicts decided before math-verify's simplification (``_shortcuts.decide``) are exact.

``decide`` answers "not equal" only for two expressions with different values at a point,
"equal" only for a difference that expands or cancels to zero, and leaves everything else
to math-verify. Property: over generated rational expressions and their rewritings
(expanded, factored, over a common denominator) or perturbations, it never calls an
identity unequal and never calls a non-identity equal, and where it answers, math-verify
answers the same. The worker's other speed-ups keep their verdicts: our 45-digit rule runs
before math-verify (math-verify is not asked about exact numbers that rule refuses), and a
parsed text is cached per worker without sharing the list the caller gets, and so is a
verdict (but not an overflow, which depends on the memory left).
"""

from __future__ import annotations

import collections
import importlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("math_verify")

from openjudge.graders.math import _verify
from openjudge.graders.math._shortcuts import decide

sympy: Any = importlib.import_module("sympy")
mv: Any = importlib.import_module("math_verify")
X, Y = sympy.Symbol("x", real=True), sympy.Symbol("y", real=True)


def parsed(latex: str) -> Any:
    return _verify._parse(mv, latex)[0]


@pytest.mark.parametrize(
    ("gold", "pred", "expected"),
    [
        ("x^2+30x+225", "(x+15)^2", True),
        ("x^2+30x+225", "(x+16)^2", False),
        (r"\frac{3x+1}{x(x+1)}", r"\frac{2}{x+1}+\frac{1}{x}", True),
        (r"\frac{21}{x+45}", r"\frac{21}{45+x}", True),
        (r"\frac{21}{x+45}", r"\frac{x+45}{21}", False),
        (r"e^{x+y}", r"e^{x}e^{y}", True),
        ("5", "x+3", False),  # a number against an expression in x
        ("x+1", "y+1", False),  # another variable is another value
        ("1", r"\sin^2 x + \cos^2 x", None),  # an identity beyond expand and cancel: math-verify's
        ("-1", "i^2", None),  # i is a non-real symbol: no real point to evaluate it at
        (r"\frac{3x}{2}", "1.5x", None),  # a float: math-verify's rounding decides
        ("x", "x", None),  # a lone symbol: math-verify's rule for text read as symbols
        (r"\sqrt{2}", r"\frac{2}{\sqrt{2}}", None),  # two constants: the 45-digit rule's
        ("[0, 1]", "[0, 1)", None),  # intervals, sets, relations: math-verify's
        ("x = 2", "2", None),
        ("(x+1)^{999}", "(1+x)^{999}", None),  # too large to expand: math-verify's
    ],
)
def test_decide(gold: str, pred: str, expected: bool | None) -> None:
    assert decide(sympy, parsed(gold), parsed(pred)) is expected
    if expected is not None:
        assert bool(mv.verify(parsed(gold), parsed(pred), timeout_seconds=None)) is expected


def test_a_large_power_is_evaluated_not_expanded() -> None:
    """(x+1)^999 against (x+2)^999: different at a point (math-verify's simplify takes seconds)."""
    assert decide(sympy, parsed("(x+1)^{999}"), parsed("(2+x)^{999}")) is False


def polynomials() -> st.SearchStrategy[Any]:
    coefficient = st.integers(-40, 40)
    power = st.tuples(coefficient, st.integers(0, 4), st.integers(0, 2))
    return st.lists(power, min_size=1, max_size=4).map(
        lambda terms: sum(c * X**i * Y**j for c, i, j in terms)
    )


@st.composite
def expressions(draw: st.DrawFn) -> Any:
    """A rational function of x and y, sometimes with sqrt(2) or pi in it."""
    numerator, denominator = draw(polynomials()), draw(polynomials())
    if denominator == 0:
        denominator = sympy.Integer(1)
    constant = draw(st.sampled_from([sympy.Integer(1), sympy.sqrt(2), sympy.pi]))
    return constant * numerator / denominator


REWRITES = [sympy.expand, sympy.factor, sympy.together, sympy.cancel, sympy.apart]
PERTURBATIONS = [lambda e: e + 1, lambda e: 2 * e, lambda e: e.subs(X, X + 1), lambda e: e + X / 1000]


@settings(max_examples=60, deadline=None)
@given(expressions(), st.integers(0, len(REWRITES) - 1), st.integers(-1, len(PERTURBATIONS) - 1))
def test_decide_never_contradicts_algebra(gold: Any, rewrite: int, perturb: int) -> None:
    try:
        pred = REWRITES[rewrite](gold)
    except (sympy.PolynomialError, NotImplementedError):  # apart() of several variables
        pred = sympy.expand(gold)
    if perturb >= 0:
        pred = PERTURBATIONS[perturb](pred)
    identity = sympy.cancel(sympy.expand(gold - pred)) == 0
    verdict = decide(sympy, gold, pred)
    assert verdict in (None, identity)
    if verdict is not None:
        assert bool(mv.verify(gold, pred, timeout_seconds=None)) is verdict


def test_our_45_digit_rule_runs_before_math_verify() -> None:
    """Exact numbers that differ past the rule's tolerance are unequal without asking math-verify."""

    class Refuses:
        def verify(self, *args: object, **kwargs: object) -> bool:
            raise AssertionError("math-verify was asked")

    assert _verify._equal(Refuses(), sympy, sympy.Integer(2) ** 40, sympy.Integer(1099511627000)) is False
    assert _verify._equal(mv, sympy, sympy.Integer(2) ** 40, sympy.Integer(1099511627776)) is True


def test_a_parsed_text_is_cached_but_not_shared() -> None:
    first = _verify._parse(mv, r"\frac{1}{\sqrt{7}}")
    first.append("changed by a caller")
    again = _verify._parse(mv, r"\frac{1}{\sqrt{7}}")
    assert len(again) == 1 and again[0] == first[0]


def test_verdicts_are_kept_except_overflows(monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[str] = []

    def compare(reference: str, candidates: object) -> dict[str, object]:
        computed.append(reference)
        return (
            {"equal": None, "cause": "response_too_large"}
            if reference == "big"
            else {"equal": True, "cause": "t"}
        )

    monkeypatch.setattr(_verify, "_compare", compare)
    monkeypatch.setattr(_verify, "_VERDICTS", collections.OrderedDict())  # this test's verdicts stay here
    answer = [{"kind": "answer", "texts": ["x+1"]}]
    for reference in ("kept", "kept", "big", "big"):
        verdict = _verify.compare_answers(reference, answer)
        verdict["equal"] = "changed by a caller"
    assert computed == ["kept", "big", "big"]
    assert _verify.compare_answers("kept", answer) == {"equal": True, "cause": "t"}
