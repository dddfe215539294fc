"""Assert snippets turned into checks the grader decides, and how the checks compare values."""

from __future__ import annotations

import pytest

from openjudge.graders.code._checks import Check, checks_from_test
from openjudge.graders.code._sandbox import CallResult, FunctionCall
from openjudge.graders.code.harness.values import encode


def returned(value: object) -> CallResult:
    return CallResult(ok=True, value=encode(value))  # type: ignore[arg-type]  # encode returns JSON-ready data


@pytest.mark.parametrize(
    ("snippet", "calls", "comparisons"),
    [
        ("assert solve(2) == 4", [("solve", (2,), {})], ["equal"]),
        ("assert 4 == solve(2), 'message'", [("solve", (2,), {})], ["equal"]),
        (
            "assert f([1, (2, 3)], k={'a': None}) == {1, 2}",
            [("f", ([1, (2, 3)],), {"k": {"a": None}})],
            ["equal"],
        ),
        ("assert f(1) is None\nassert g() is True", [("f", (1,), {}), ("g", (), {})], ["is", "is"]),
        ("assert f(1)\nassert not f(2)", [("f", (1,), {}), ("f", (2,), {})], ["truthy", "falsy"]),
        ("import math\nassert math.isclose(f(1), 0.5, rel_tol=1e-6)", [("f", (1,), {})], ["close"]),
        ("assert abs(f(1) - 0.5) < 1e-6", [("f", (1,), {})], ["abs_lt"]),
        (
            "METADATA = {'author': 'x'}\n\ndef check(candidate):\n    assert candidate(1) == 2\n    assert candidate(-1) == 0\n\ncheck(inc)",
            [("inc", (1,), {}), ("inc", (-1,), {})],
            ["equal", "equal"],
        ),
    ],
)
def test_simple_asserts_become_checks(
    snippet: str, calls: list[tuple[str, tuple[object, ...], dict[str, object]]], comparisons: list[str]
) -> None:
    checks = checks_from_test(snippet)
    assert checks is not None
    assert [(c.call.function, c.call.args, dict(c.call.kwargs)) for c in checks] == calls
    assert [c.comparison for c in checks] == comparisons


@pytest.mark.parametrize(
    "snippet",
    [
        "x = solve(2)\nassert x == 4",  # a name defined by the snippet
        "assert solve(n) == 4",  # a non-literal argument
        "assert solve(2) == [1] * 3",  # a non-literal expected value
        "assert obj.solve(2) == 4",  # a method of an object
        "assert solve(*args) == 4",
        "for i in range(3):\n    assert f(i) == i",
        "assert solve(2) > 3",
        "def check(candidate):\n    assert candidate(1) == 2\n",  # no check(name) call
        "def check(c):\n    assert c(1) == 2\ncheck(f)\ncheck(g)",
        "assert (",
        "",
    ],
)
def test_other_snippets_stay_in_the_sandbox(snippet: str) -> None:
    assert checks_from_test(snippet) is None


@pytest.mark.parametrize(
    ("check", "value", "holds"),
    [
        (Check(FunctionCall("f"), (1, 2)), (1, 2), True),
        (Check(FunctionCall("f"), (1, 2)), [1, 2], False),  # Python semantics: a tuple is not a list
        (Check(FunctionCall("f"), [1, 2], json_sequences=True), (1, 2), True),  # JSON semantics
        (Check(FunctionCall("f"), {1, 2}), frozenset({2, 1}), True),
        (Check(FunctionCall("f"), 4), 4.0, True),
        (Check(FunctionCall("f"), 2**200), 2**200, True),
        (Check(FunctionCall("f"), None, "is"), None, True),
        (Check(FunctionCall("f"), False, "is"), 0, False),
        (Check(FunctionCall("f"), None, "truthy"), [0], True),
        (Check(FunctionCall("f"), None, "falsy"), "", True),
        (Check(FunctionCall("f"), 0.5, "close", rel_tol=1e-3), 0.5004, True),
        (Check(FunctionCall("f"), 0.5, "abs_lt", abs_tol=1e-3), 0.502, False),
        (Check(FunctionCall("f"), 0.5, "abs_le", abs_tol=0.5), 1.0, True),
        (Check(FunctionCall("f"), 0.5, "close"), "0.5", False),
    ],
)
def test_comparisons(check: Check, value: object, holds: bool) -> None:
    assert check.holds(returned(value))[0] is holds


class AlwaysEqual:
    def __eq__(self, other: object) -> bool:
        return True

    def __bool__(self) -> bool:
        return False


@pytest.mark.parametrize("comparison", ["equal", "truthy", "falsy", "close"])
def test_an_object_that_is_not_data_satisfies_nothing(comparison: str) -> None:
    check = Check(FunctionCall("f"), 4, comparison)  # type: ignore[arg-type]  # the literal names
    passed, why = check.holds(returned(AlwaysEqual()))
    assert passed is False
    assert "<AlwaysEqual object>" in why


def test_failures_say_what_was_returned_and_raised() -> None:
    check = checks_from_test("assert add(1, 1) == 3")
    assert check is not None
    assert check[0].holds(returned(2)) == (False, "add(1, 1) returned 2; assert add(1, 1) == 3")
    assert check[0].holds(CallResult(ok=False, error="TypeError")) == (False, "add(1, 1) raised TypeError")
    forged = CallResult(ok=True, value={"$set": [[1]]})  # an unhashable set element: not a real value
    assert check[0].holds(forged) == (False, "add(1, 1) returned a value the grader cannot read")
