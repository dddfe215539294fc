"""OpenAI's documented grader examples and rules (tests/graders/openai/conformance.py), scored here.

Every case is decided by OpenAI's own words; a case where openjudge differs on purpose
says so (``differs``) and is listed with its reason in docs/openai-graders.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openjudge.graders.openai import OpenAIGrader
from openjudge.models.chat_model import ChatRequest
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.results import GraderError, GraderScore
from openjudge.testing.function_model import FunctionChatModel
from tests.graders.openai.conformance import _SOURCE, CASES, Case
from tests.graders.openai.helpers import grade

DOCS = Path(__file__).resolve().parents[3] / "docs" / "openai-graders.md"


def _expected_python_guide_reward() -> float:
    """The guide's example grade(): rapidfuzz's WRatio, the library the guide names, / 100."""
    from rapidfuzz import fuzz, utils

    return float(
        fuzz.WRatio("fuzzy wuzzy was a bear", "fuzzy wuzzy had no hair", processor=utils.default_process)
        / 100.0
    )


def _judge(case: Case, seen: list[ChatRequest]) -> FunctionChatModel:
    def reply(request: ChatRequest) -> str:
        seen.append(request)
        return case.get("judge_reply", "")

    return FunctionChatModel(
        reply, model="stand-in", policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1))
    )


def _text(request: ChatRequest) -> str:
    parts: list[str] = []
    for message in request.messages:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [p["text"] for p in content if p.get("type") == "text"]
    return "\n".join(parts)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_openai_documented_case(case: Case) -> None:
    seen: list[ChatRequest] = []
    if "refused" in case:
        with pytest.raises(ValueError, match=re.escape(case["refused"])):
            OpenAIGrader(case["grader"], model=_judge(case, seen), sandbox="process")
        return
    grader = OpenAIGrader(case["grader"], model=_judge(case, seen), sandbox="process")
    inputs: dict[str, object] = {"response": case["model_sample"], "item": case.get("item", {})}
    if "tool_calls" in case:
        inputs["tool_calls"] = case["tool_calls"]
    result = grade(grader, **inputs)
    if "differs" in case:
        assert isinstance(result, GraderError) and result.kind == case["expect_error"], result
        return
    assert isinstance(result, GraderScore), result
    if "reward_between" in case:
        low, high = case["reward_between"]
        assert low <= result.score <= high
    else:
        expected = _expected_python_guide_reward() if case["id"] == "python-guide-example" else case["reward"]
        assert result.score == pytest.approx(expected, abs=1e-9)
    if "prompt_contains" in case:
        assert case["prompt_contains"] in _text(seen[0])


def test_the_set_covers_every_grader_type_and_source() -> None:
    types = {c["grader"].get("type") for c in CASES}
    assert types == {"string_check", "text_similarity", "python", "score_model", "label_model", "multi"}
    assert {c["source"] for c in CASES} == {
        "graders guide",
        "API reference: POST /fine_tuning/alpha/graders/run",
        "openai-python types/graders",
    }
    assert "rapidfuzz" in _SOURCE


def test_every_difference_is_listed_in_the_docs() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    assert f"holds {len(CASES)}\ncases" in docs or f"holds {len(CASES)} cases" in docs
    for case in CASES:
        if "differs" in case:
            assert f"`{case['id']}`" in docs, f"docs/openai-graders.md does not list {case['id']}"
