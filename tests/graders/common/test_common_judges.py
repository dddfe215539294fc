from __future__ import annotations

import pytest

from openjudge.graders.common._correctness import CorrectnessGrader
from openjudge.graders.common._hallucination import HallucinationGrader
from openjudge.graders.common._harmfulness import HarmfulnessGrader
from openjudge.graders.common._instruction_following import InstructionFollowingGrader
from openjudge.graders.common._judge import CommonJudge
from openjudge.graders.common._relevance import RelevanceGrader
from openjudge.models.chat_model import ChatRequest
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderError, GraderScore
from openjudge.testing.function_model import FunctionChatModel

pytestmark = pytest.mark.anyio

CASES: list[tuple[type[CommonJudge], dict[str, str], str]] = [
    (CorrectnessGrader, {"query": "2+2?", "response": "5", "reference": "4"}, "correctness"),
    (RelevanceGrader, {"query": "Capital of France?", "response": "Paris."}, "relevance"),
    (HallucinationGrader, {"query": "Who?", "response": "Ada.", "context": "Ada wrote it."}, "hallucination"),
    (HarmfulnessGrader, {"query": "Hi", "response": "Hello!"}, "harmfulness"),
    (
        InstructionFollowingGrader,
        {"instructions": "Answer in one word.", "response": "Yes"},
        "instruction_following",
    ),
]


def judge(score: int, seen: list[ChatRequest]) -> FunctionChatModel:
    def reply(request: ChatRequest) -> str:
        seen.append(request)
        return f'{{"reason": "because", "score": {score}}}'

    return FunctionChatModel(reply)


@pytest.mark.parametrize(("cls", "inputs", "name"), CASES, ids=[c[2] for c in CASES])
async def test_each_judge_scores_normalises_and_delimits_inputs(
    cls: type[CommonJudge], inputs: dict[str, str], name: str
) -> None:
    seen: list[ChatRequest] = []
    grader = cls(judge(4, seen), threshold=4)
    assert grader.name == name
    assert grader.input_spec().required == frozenset(inputs)
    result = await grader.aevaluate(**inputs)
    assert isinstance(result, GraderScore)
    assert (result.score, result.normalized_score) == (4.0, 0.75)
    assert result.metadata["passed"] is True and result.metadata["threshold"] == 4
    user = seen[0].messages[-1]["content"]
    for field, value in inputs.items():
        assert f"<{field}>\n{value}\n</{field}>" in user
    assert "1 (worst) to 5 (best)" in user


@pytest.mark.parametrize(("cls", "inputs", "name"), CASES, ids=[c[2] for c in CASES])
async def test_out_of_range_and_missing_inputs_never_become_scores(
    cls: type[CommonJudge], inputs: dict[str, str], name: str
) -> None:
    seen: list[ChatRequest] = []
    grader = cls(judge(9, seen))
    result = await grader.aevaluate(**inputs)
    assert isinstance(result, GraderError) and result.kind == "parse_error" and len(seen) == 2
    missing = await grader.aevaluate(**dict(list(inputs.items())[1:]))
    assert isinstance(missing, GraderError) and missing.kind == "invalid_input"


async def test_chinese_prompt_and_failing_threshold() -> None:
    seen: list[ChatRequest] = []
    grader = RelevanceGrader(judge(2, seen), language=LanguageEnum.ZH)
    result = await grader.aevaluate(query="法国首都？", response="巴黎")
    assert isinstance(result, GraderScore) and result.metadata["passed"] is False
    assert "判断回答与问题的相关程度" in seen[0].messages[-1]["content"]
