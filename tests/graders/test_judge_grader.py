"""The generic judge core: typed verdicts, per-call context, one ``to_result`` signature."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import assert_type

import anyio
import pytest
from pydantic import BaseModel

from openjudge.graders.comparison import ListwiseRankingGrader
from openjudge.graders.judge_grader import JudgeGrader
from openjudge.graders.llm_grader import JudgeVerdict, LLMGrader, PreparedCall
from openjudge.models.chat_model import ChatRequest
from openjudge.results import GraderError, GraderMode, GraderRank, GraderResult, GraderScore
from openjudge.testing.function_model import FunctionChatModel

pytestmark = pytest.mark.anyio


class Pass(BaseModel):
    reason: str
    passed: bool


class PassFail(LLMGrader[Pass]):
    """A user's grader: its own verdict, read typed, with no usage bookkeeping."""

    def to_result(self, verdict: Pass, call: PreparedCall[None]) -> GraderScore | GraderRank:
        if not verdict.reason:
            raise ValueError("reason must not be empty")
        return GraderScore(name=self.name, score=float(verdict.passed), reason=verdict.reason)


def scripted(*replies: str) -> tuple[FunctionChatModel, list[ChatRequest]]:
    seen: list[ChatRequest] = []
    queue = list(replies)

    def reply(request: ChatRequest) -> str:
        seen.append(request)
        return queue.pop(0)

    return FunctionChatModel(reply), seen


def test_the_default_verdict_is_judge_verdict() -> None:
    model, _ = scripted()
    plain = LLMGrader(model, name="q", template="{response}")
    custom = PassFail(model, name="pf", template="{response}", structured_model=Pass)
    assert_type(plain, LLMGrader[JudgeVerdict])
    assert plain.structured_model is JudgeVerdict and custom.structured_model is Pass


async def test_a_subclass_reads_its_own_verdict_and_the_core_adds_usage() -> None:
    model, seen = scripted(
        json.dumps({"reason": "", "passed": True}), json.dumps({"reason": "fine", "passed": True})
    )
    grader = PassFail(model, name="pf", template="Is this fine? {response}", structured_model=Pass)
    result = await grader.aevaluate(response="text")
    assert isinstance(result, GraderScore)
    assert (result.score, result.reason) == (1.0, "fine")
    # The rejected verdict was re-asked with to_result's reason, and both calls are counted.
    assert "reason must not be empty" in seen[1].messages[-1]["content"]
    assert result.usage is not None and result.usage.requests == 2
    assert result.latency_s is not None and result.latency_s >= 0


class Echo(BaseModel):
    reason: str
    nonce: str


class NonceGrader(JudgeGrader[Echo, str]):
    """Checks the judge's reply against a fact only this call knows: the nonce it sent."""

    def __init__(self, model: FunctionChatModel) -> None:
        super().__init__(
            model,
            name="nonce",
            mode=GraderMode.POINTWISE,
            language=None,
            description="Echoes the nonce",
            template="Echo {nonce}",
            structured_model=Echo,
            max_reasks=0,
        )

    def prepare_call(self, inputs: Mapping[str, object]) -> PreparedCall[str] | GraderError:
        nonce = str(inputs["nonce"])
        return PreparedCall(self.build_messages({"nonce": nonce}), nonce)

    async def aevaluate(self, *, nonce: str) -> GraderResult:
        call = self.prepare_call({"nonce": nonce})
        if isinstance(call, GraderError):
            return call
        return await self.judge(call)

    def to_result(self, verdict: Echo, call: PreparedCall[str]) -> GraderScore | GraderRank:
        if verdict.nonce != call.context:
            raise ValueError(f"expected {call.context}, got {verdict.nonce}")
        return GraderScore(name=self.name, score=1.0, reason=verdict.reason)


async def test_each_concurrent_call_reads_its_own_context() -> None:
    async def reply(request: ChatRequest) -> str:
        content = request.messages[-1]["content"]
        assert isinstance(content, str)
        nonce = content.split("<nonce>\n", 1)[1].split("\n</nonce>", 1)[0]
        await anyio.sleep(0.001 * (int(nonce) % 3))  # replies come back out of order
        return json.dumps({"reason": "ok", "nonce": nonce})

    grader = NonceGrader(FunctionChatModel(reply))
    results: dict[int, GraderResult] = {}

    async def one(i: int) -> None:
        results[i] = await grader.aevaluate(nonce=str(i))

    async with anyio.create_task_group() as tg:
        for i in range(30):
            tg.start_soon(one, i)
    assert all(isinstance(r, GraderScore) and r.score == 1.0 for r in results.values()), results
    assert len(results) == 30


async def test_a_verdict_that_contradicts_the_call_is_a_parse_error() -> None:
    grader = NonceGrader(FunctionChatModel(lambda request: json.dumps({"reason": "ok", "nonce": "7"})))
    result = await grader.aevaluate(nonce="8")
    assert isinstance(result, GraderError) and result.kind == "parse_error"
    assert "expected 8, got 7" in result.message and result.usage is not None


def test_a_verdict_model_without_a_score_needs_its_own_to_result() -> None:
    model, _ = scripted()
    with pytest.raises(
        ValueError, match=r"structured_model Pass has no 'score' field; .* override to_result"
    ):
        LLMGrader(model, name="q", template="{response}", structured_model=Pass)
    with pytest.raises(TypeError, match="structured_model must be a pydantic model class"):
        LLMGrader(model, name="q", template="{response}", structured_model=dict)  # type: ignore[type-var]


def test_prepare_renders_any_judge_grader_without_a_call() -> None:
    model, seen = scripted()
    listwise = ListwiseRankingGrader(model)
    assert isinstance(listwise, JudgeGrader)
    messages = listwise.prepare({"query": "q", "responses": ["a", "b"]})
    assert isinstance(messages, list) and messages[0]["role"] == "system"
    assert '<candidate id="R2">\nb\n</candidate>' in messages[-1]["content"]
    bad = listwise.prepare({"query": "q", "responses": ["only one"]})
    assert isinstance(bad, GraderError) and bad.kind == "invalid_input" and "at least 2" in bad.message
    assert seen == []


def test_a_prepared_call_is_a_frozen_slotted_value_typed_or_not() -> None:
    """The typed idiom a subclass's prepare_call writes builds as the plain one: no __dict__, frozen."""
    plain = PreparedCall([{"role": "user", "content": "x"}], ("a", "b"))
    typed = PreparedCall[tuple[str, ...]]([{"role": "user", "content": "x"}], ("a", "b"))
    assert (
        typed == plain
        and typed.messages == [{"role": "user", "content": "x"}]
        and typed.context == ("a", "b")
    )
    assert not hasattr(typed, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        typed.context = ("c",)  # type: ignore[misc]  # frozen on purpose
    with pytest.raises(TypeError, match="context"):
        PreparedCall([])  # type: ignore[call-arg]  # the context is required (None for a plain prompt)
