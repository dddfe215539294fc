"""A judge's refusal is read before OpenAI's score_model rule, over the real OpenAI client (respx).

A refusal signalled by the provider (the reply's ``refusal`` field, as OpenAI's structured
outputs report one, or a content filter) is the response's failure (``judge_refused``); the
same words written as plain text carry no signal, so they are a non-numeric output (OpenAI's
0, flagged, not blamed on the response).
"""

from __future__ import annotations

import httpx
import pytest
import respx

from openjudge.graders.openai import OpenAIGrader, from_openai_grader
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.providers.openai import OpenAIChatModel
from tests.graders.openai.helpers import GUIDE_SCORE_MODEL, blamed, error_of, scored
from tests.providers._support import completion

pytestmark = pytest.mark.anyio

BASE = "http://judge.test/v1"
REFUSAL = "I can't grade this."
RANGE_1_7 = {**GUIDE_SCORE_MODEL, "range": [1, 7]}


def judge() -> OpenAIChatModel:
    return OpenAIChatModel(
        "judge",
        api_key="sk-test",
        base_url=BASE,
        policy=ProviderPolicy(
            timeout_s=5.0, retry=RetryPolicy(max_attempts=1), limits=ProviderLimits(max_concurrency=4)
        ),
        http_client_factory=httpx.AsyncClient,  # respx intercepts httpx
    )


def refused() -> dict[str, object]:
    body = completion("")
    body["choices"][0]["message"]["refusal"] = REFUSAL
    return body


@respx.mock
async def test_a_score_model_judges_refusal_is_the_responses_not_a_non_numeric_zero() -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(return_value=httpx.Response(200, json=refused()))
    result = await from_openai_grader(RANGE_1_7, model=judge()).aevaluate(response="x", reference_answer="y")
    failure = blamed(result, "judge_refused")
    assert failure.score == 1.0  # the bottom of [1, 7], not OpenAI's non-numeric rule
    assert "non_numeric_output" not in failure.metadata
    assert REFUSAL in failure.reason and failure.reason.startswith("model_grader_refusal_error")
    assert route.call_count == 1  # a refusal is not re-asked


@respx.mock
async def test_a_content_filter_hit_is_the_responses_even_with_openjudges_rule() -> None:
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("", finish="content_filter"))
    )
    grader = OpenAIGrader(GUIDE_SCORE_MODEL, model=judge(), score_model_non_numeric="error")
    failure = blamed(await grader.aevaluate(response="x", reference_answer="y"), "judge_refused")
    assert failure.score == 0.0 and "content filter" in failure.reason


@respx.mock
async def test_a_refusal_written_as_plain_text_is_a_non_numeric_output() -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion(REFUSAL))
    )
    result = scored(
        await from_openai_grader(RANGE_1_7, model=judge()).aevaluate(response="x", reference_answer="y")
    )
    assert result.score == 1.0 and result.metadata["non_numeric_output"] is True  # 0 lies outside [1, 7]
    # the judge's output, not the response's failure
    assert "blame" not in result.metadata and "cause" not in result.metadata
    assert route.call_count == 1  # OpenAI's rule: no re-ask

    strict = OpenAIGrader(GUIDE_SCORE_MODEL, model=judge(), score_model_non_numeric="error")
    error = error_of(await strict.aevaluate(response="x", reference_answer="y"))
    assert error.kind == "parse_error" and route.call_count == 3  # openjudge's rule: one re-ask
