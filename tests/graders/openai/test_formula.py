"""``calculate_output``: OpenAI's operators and functions, nothing else, and the range it implies."""

from __future__ import annotations

import math

import pytest

from openjudge.graders.openai._formula import Formula, FormulaError, Interval

NAMES = {"a", "b", "c"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.5 * a + 0.5 * b", 0.75),
        ("a - b / 2", 0.75),
        ("a ^ 2 + b ** 2", 1.25),
        ("-a + +b", -0.5),
        ("min(a, b, c)", 0.0),
        ("max(a, b) * 2", 2.0),
        ("abs(c - a)", 1.0),
        ("floor(a + b) + ceil(b)", 2.0),
        ("exp(c) + sqrt(4) + log(1)", 3.0),
        ("(a + b + c) / 3", 0.5),
    ],
)
def test_values(text: str, expected: float) -> None:
    assert Formula(text, NAMES).evaluate({"a": 1.0, "b": 0.5, "c": 0.0}) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a +", "is not a formula"),
        ("d * 2", "names 'd', which is not a sub-grader"),
        ("a.__class__", "Attribute is not allowed"),
        ("__import__('os')", "is not allowed|can be called"),
        ("round(a)", "only abs, ceil, exp, floor, log, max, min, sqrt can be called"),
        ("min(a)", "min() takes 2 or more arguments"),
        ("abs(a, b)", "abs() takes 1 arguments"),
        ("a if b else c", "IfExp is not allowed"),
        ("a < b", "Compare is not allowed"),
        ("'x'", "is not a number"),
        ("a % 2", "Mod is not allowed"),
        ("[a][0]", "is not allowed"),
        ("max(*[a, b])", "arguments"),
        ("+".join(["a"] * 300), "more than 500 parts"),
        ("a" + " + a" * 600, "longer than 2000 characters"),
    ],
)
def test_anything_else_is_refused(text: str, message: str) -> None:
    with pytest.raises(FormulaError, match=message.replace("(", r"\(").replace(")", r"\)").replace("|", "|")):
        Formula(text, NAMES)


@pytest.mark.parametrize("text", ["a / c", "log(c)", "sqrt(c - 1)", "exp(a * 1000)", "(c - 1) ^ 0.5"])
def test_what_cannot_be_computed_raises_formula_error(text: str) -> None:
    with pytest.raises(FormulaError):
        Formula(text, NAMES).evaluate({"a": 1.0, "b": 0.5, "c": 0.0})


def test_a_tower_of_powers_is_bounded_by_float_arithmetic() -> None:
    with pytest.raises(FormulaError):
        Formula("(a + 9) ^ (a + 9) ^ (a + 9) ^ (a + 9)", NAMES).evaluate({"a": 1.0, "b": 0.0, "c": 0.0})


def test_bounds_from_the_sub_graders_ranges() -> None:
    unit = Interval(0.0, 1.0)
    ranges = {"a": unit, "b": unit, "c": Interval(1.0, 10.0)}
    assert Formula("0.5 * a + 0.5 * b", NAMES).bounds(ranges) == Interval(0.0, 1.0)
    assert Formula("a - b", NAMES).bounds(ranges) == Interval(-1.0, 1.0)
    assert Formula("a * c / 10", NAMES).bounds(ranges) == Interval(0.0, 1.0)
    assert Formula("min(a, c)", NAMES).bounds(ranges) == Interval(0.0, 1.0)
    assert Formula("abs(a - 0.5)", NAMES).bounds(ranges) == Interval(0.0, 0.5)
    assert Formula("sqrt(c)", NAMES).bounds(ranges) == Interval(1.0, math.sqrt(10))
    assert Formula("a / b", NAMES).bounds(ranges) is None  # b can be 0
    assert Formula("log(a)", NAMES).bounds(ranges) is None
