"""ReasoningFormatGrader: strict and lenient tag structure."""

from __future__ import annotations

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.format import ReasoningFormatGrader

pytestmark = pytest.mark.anyio


async def grade(grader: ReasoningFormatGrader, response: str) -> GraderScore:
    result = await grader.aevaluate(response=response)
    assert isinstance(result, GraderScore), result
    return result


@pytest.mark.parametrize(
    ("response", "expected", "problem"),
    [
        ("<think>step 1</think><answer>42</answer>", 1.0, None),
        ("\n <think>推理</think>\n\n<answer>答案 👍</answer>\n", 1.0, None),
        ("<answer>42</answer><think>late</think>", 0.0, "<answer> is out of order"),
        ("<think>x</think>", 0.0, "<answer> is missing"),
        ("", 0.0, "<think> is missing"),
        (
            "<think>a</think><think>b</think><answer>c</answer>",
            0.0,
            "<think> occurs 2 times, expected exactly once",
        ),
        ("Sure! <think>x</think><answer>y</answer>", 0.0, "text outside the reasoning and answer blocks"),
        ("<think>x</think> so <answer>y</answer>", 0.0, "text between the reasoning and answer blocks"),
        ("<think>  </think><answer>y</answer>", 0.0, "the think block is empty"),
        ("<think>x</think><answer>\n</answer>", 0.0, "the answer block is empty"),
        ("<think>x<answer>y</answer></think>", 0.0, "<answer> is out of order"),
    ],
)
async def test_strict(response: str, expected: float, problem: str | None) -> None:
    result = await grade(ReasoningFormatGrader(), response)
    assert result.score == expected
    assert result.metadata.get("problem") == problem


async def test_lenient() -> None:
    grader = ReasoningFormatGrader(strict=False)
    assert (await grade(grader, "Sure! <think>x</think> so <answer>y</answer> done")).score == 1.0
    assert (await grade(grader, "<think>a</think><think>b</think><answer>c</answer>")).score == 1.0
    early = await grade(grader, "<answer>0</answer><think>x</think><answer>y</answer>")
    assert early.score == 0.0
    assert early.metadata["problem"] == "<answer> appears before the think block ends"


async def test_content_optional_and_custom_tags() -> None:
    assert (
        await grade(ReasoningFormatGrader(require_content=False), "<think></think><answer></answer>")
    ).score == 1.0
    custom = ReasoningFormatGrader(think_tag="reasoning", answer_tag="final")
    assert (await grade(custom, "<reasoning>r</reasoning><final>f</final>")).score == 1.0
    assert (await grade(custom, "<think>r</think><answer>f</answer>")).score == 0.0


async def test_long_input() -> None:
    response = "<think>" + "思考 " * 50_000 + "</think><answer>1</answer>"
    assert (await grade(ReasoningFormatGrader(), response)).score == 1.0


async def test_invalid_input() -> None:
    result = await ReasoningFormatGrader().aevaluate(response=None)  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'response'" in result.message


def test_bad_tags() -> None:
    with pytest.raises(ValueError, match="think_tag"):
        ReasoningFormatGrader(think_tag="<think>")
    with pytest.raises(ValueError, match="answer_tag"):
        ReasoningFormatGrader(answer_tag="")
    with pytest.raises(ValueError, match="differ"):
        ReasoningFormatGrader(think_tag="x", answer_tag="x")
