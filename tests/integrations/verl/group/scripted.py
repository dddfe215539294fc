"""Scripted pieces for the group tests: judges that rank by a quality tag, and group members."""

from __future__ import annotations

import json
import re

from pydantic import JsonValue

from openjudge.integrations.verl._functions import RewardSample
from openjudge.integrations.verl.group.members import Member
from openjudge.models.chat_model import ChatRequest
from openjudge.testing.function_model import FunctionChatModel

_QUALITY = re.compile(r"q(\d+)")


def quality(text: str) -> int:
    """The number in the response's ``q<k>`` tag (higher is better)."""
    found = _QUALITY.search(text)
    return int(found.group(1)) if found else 0


def rank_by_quality(request: ChatRequest) -> str:
    """A listwise judge: candidates ordered by their quality tag, best first."""
    user = str(request.messages[-1]["content"])
    candidates = re.findall(r'<candidate id="(R\d+)">\n(.*?)\n</candidate>', user, re.DOTALL)
    best_first = sorted(candidates, key=lambda c: (-quality(c[1]), c[0]))
    return json.dumps({"reason": "by quality", "ranking": [cid for cid, _ in best_first]})


def listwise_judge() -> tuple[FunctionChatModel, list[ChatRequest]]:
    seen: list[ChatRequest] = []

    def reply(request: ChatRequest) -> str:
        seen.append(request)
        return rank_by_quality(request)

    return FunctionChatModel(reply), seen


def member(session: int, response: str, *, pointwise: float | None = 1.0, failed: bool = False) -> Member:
    question: list[dict[str, JsonValue]] = [{"role": "user", "content": "what is 2+2 ?"}]
    sample = RewardSample(
        original_index=0,
        group_index=0,
        prompt="what is 2+2 ?",
        response=response,
        messages=[*question, {"role": "assistant", "content": response}],
        extra={},
        ground_truth="4",
        data_source="demo",
        uid="u1",
        prompt_text="user what is 2+2 ?",
        prompt_messages=list(question),
    )
    extra = {"openjudge/correct": 1.0 if not failed else None, "openjudge/correct/error": 1 if failed else 0}
    return Member(
        session_id=session,
        sample=sample,
        pointwise=pointwise,
        pointwise_extra=extra,
        pointwise_failed=failed,
    )
