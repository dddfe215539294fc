"""Property tests: the math grader returns 0/1 or invalid_input, never raises."""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.math import MathAnswerEquivalenceGrader
from openjudge.results import GraderResult

GRADERS = [MathAnswerEquivalenceGrader(use_sympy=False), MathAnswerEquivalenceGrader(sympy_timeout_s=2.0)]
PIECES = st.sampled_from(
    [
        r"\boxed{",
        "}",
        "{",
        r"\frac",
        r"\sqrt",
        "^",
        "x",
        "1",
        "2",
        "-",
        ".",
        ",",
        "%",
        "(",
        ")",
        "<answer>",
        "</answer>",
        " ",
        "$",
        r"\text{cm}",
        "中",
    ]
)
MATHY = st.lists(PIECES, max_size=14).map("".join)
TEXT = st.one_of(MATHY, st.text(max_size=40))


def balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def run_all(response: Any, reference: Any) -> list[GraderResult]:
    async def evaluate() -> list[GraderResult]:
        return [await grader.aevaluate(response=response, reference=reference) for grader in GRADERS]

    return anyio.run(evaluate)


@settings(max_examples=120, deadline=None)
@given(response=TEXT, reference=TEXT)
def test_results_are_binary_or_invalid_reference(response: str, reference: str) -> None:
    for result in run_all(response, reference):
        if isinstance(result, GraderError):
            assert result.kind == "invalid_input"
            assert "'reference'" in result.message
        else:
            assert isinstance(result, GraderScore)
            assert result.score in (0.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(answer=MATHY.filter(balanced))
def test_an_answer_equals_itself(answer: str) -> None:
    # A well-formed boxed answer always matches the same boxed reference.
    for result in run_all(rf"\boxed{{{answer}}}", rf"\boxed{{{answer}}}"):
        if isinstance(result, GraderScore) and result.metadata.get("method") != "none":
            assert result.score == 1.0, result


@settings(max_examples=30, deadline=None)
@given(bad=st.one_of(st.none(), st.integers(), st.binary(), st.lists(st.text(), max_size=2)))
def test_bad_response_types(bad: object) -> None:
    for result in run_all(bad, "1"):
        assert isinstance(result, GraderError)
        assert result.kind == "invalid_input"
        assert "'response'" in result.message
