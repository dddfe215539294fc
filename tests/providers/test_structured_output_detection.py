"""Structured output found per server: against the test judge server emulating servers that refuse modes.

The judge server refuses a mode with the status a real server gives (llama-cpp-python's
500 for ``json_schema``, others' 400) and enforces the schema it accepts (the score is
kept to the schema's enum), so these tests see what a real server does without llama.cpp.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.scoring._guard import is_outage
from openjudge.models._errors import REFUSED_MARK
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_model import ChatRequest, OutputSpec, Sampling
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.providers import StructuredOutputChoice, forget_structured_output, structured_output_choice
from openjudge.providers.openai import OpenAIChatModel
from openjudge.providers.vllm import VLLMChatModel
from openjudge.results import GraderError, GraderResult, GraderScore
from openjudge.testing.judge_server import DEFAULT_MODEL, JudgeServer

pytestmark = pytest.mark.anyio

LLAMA_CPP_PYTHON = {"json_schema": 500}  # what llama-cpp-python's server answers to json_schema
LOGGER = "openjudge.providers._negotiation"


@asynccontextmanager
async def serving(refuse: Mapping[str, int] | None = None) -> AsyncIterator[JudgeServer]:
    async with JudgeServer(refuse=refuse) as server:
        forget_structured_output(server.base_url)  # a port an earlier test's server had
        try:
            yield server
        finally:
            forget_structured_output(server.base_url)


def policy(attempts: int = 4) -> ProviderPolicy:
    return ProviderPolicy(
        timeout_s=10.0,
        retry=RetryPolicy(max_attempts=attempts, initial_backoff_s=0.01, max_backoff_s=0.02),
        limits=ProviderLimits(max_concurrency=32),
    )


def judge(model: OpenAIChatModel | VLLMChatModel) -> LLMGrader:
    return LLMGrader(model, name="quality", template="Rate: {response}", score_range=(1, 5))


def scores(results: Sequence[GraderResult]) -> list[float]:
    assert all(isinstance(r, GraderScore) for r in results), results
    return [r.score for r in results if isinstance(r, GraderScore)]


@pytest.mark.parametrize("status", [500, 400])
async def test_a_refused_json_schema_is_found_once_and_never_retried(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving({"json_schema": status}) as server:
        model = OpenAIChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy(attempts=4))
        assert structured_output_choice(model) is None  # nothing asked yet
        grader = judge(model)
        with caplog.at_level(logging.INFO, logger=LOGGER):
            results = [await grader.aevaluate(response=f"answer {k} #oj:score={k}") for k in (1, 9, 3)]
        # The server enforces the enum it was sent: 9 comes back as 5, never as a parse error.
        assert scores(results) == [1.0, 5.0, 3.0]
        assert [r.usage.requests for r in results if r.usage is not None] == [1, 1, 1]
        assert server.stats().by_outcome == {"200": 3, "reset": 0, "hang": 0, str(status): 1}
        choice = structured_output_choice(model)
        assert isinstance(choice, StructuredOutputChoice)
        assert (choice.mode, choice.found) == ("json_object", True)
        assert len(choice.refused) == 1 and choice.refused[0].startswith(f"json_schema: HTTP {status}: ")
        assert "response_format" in choice.refused[0]
        said = [r for r in caplog.records if r.name == LOGGER]
        assert len(said) == 1 and said[0].levelno == logging.INFO
        assert (
            said[0]
            .getMessage()
            .startswith(f"{server.base_url} model {DEFAULT_MODEL!r}: structured output json_object")
        )


async def test_concurrent_first_calls_each_find_the_mode_and_it_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving(LLAMA_CPP_PYTHON) as server:
        grader = judge(OpenAIChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy()))
        results: list[GraderResult] = []

        async def one(k: int) -> None:
            results.append(await grader.aevaluate(response=f"answer {k} #oj:score=4"))

        with caplog.at_level(logging.INFO, logger=LOGGER):
            async with anyio.create_task_group() as tg:
                for k in range(24):
                    tg.start_soon(one, k)
        assert scores(results) == [4.0] * 24
        # No call waited for another's request: each in flight at first use met the refusal
        # at most once (answered without generating); the mode found is said once.
        first_use = server.stats().by_outcome["500"]
        assert 1 <= first_use <= 24
        assert len([r for r in caplog.records if r.name == LOGGER]) == 1
        # Once found, the mode is sent first: no more refusals.
        assert (
            scores([await grader.aevaluate(response=f"later {k} #oj:score=2") for k in range(3)]) == [2.0] * 3
        )
        assert server.stats().by_outcome["500"] == first_use


@pytest.mark.parametrize("refuse", [{}, LLAMA_CPP_PYTHON], ids=["takes_json_schema", "llama_cpp_python"])
async def test_a_first_call_that_hangs_holds_up_no_other_call(refuse: Mapping[str, int]) -> None:
    """The first call to a server finds its mode; one whose content hangs the judge must not
    stall the calls around it (the class: any call waiting on another call's request)."""
    async with serving(refuse) as server:
        grader = judge(OpenAIChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy(attempts=1)))
        hung_ended = anyio.Event()
        results: list[GraderResult] = []

        async def hung() -> None:
            await grader.aevaluate(response="a response that hangs the judge #oj:hang")
            hung_ended.set()

        async def one(k: int) -> None:
            results.append(await grader.aevaluate(response=f"answer {k} #oj:score=3"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(hung)
            with anyio.fail_after(5):
                while server.stats().by_outcome["hang"] == 0:  # noqa: ASYNC110  # the server's count, no event to await
                    await anyio.sleep(0.01)  # the hung call is the first in flight
                async with anyio.create_task_group() as others:
                    for k in range(8):
                        others.start_soon(one, k)
            assert scores(results) == [3.0] * 8
            assert not hung_ended.is_set()  # still hanging: nobody waited for it
            tg.cancel_scope.cancel()


async def test_every_provider_object_reaching_the_server_shares_what_one_found() -> None:
    async with serving(LLAMA_CPP_PYTHON) as server:
        first = OpenAIChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy())
        await judge(first).aevaluate(response="a")
        second = OpenAIChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy())
        assert isinstance(await judge(second).aevaluate(response="b"), GraderScore)
        assert server.stats().by_outcome["500"] == 1
        choice = structured_output_choice(second)
        assert choice is not None and choice.mode == "json_object"


async def test_a_server_without_json_modes_gets_the_prompt_and_the_tolerant_parse(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving({"json_schema": 400, "json_object": 400}) as server:
        grader = judge(OpenAIChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy()))
        with caplog.at_level(logging.INFO, logger=LOGGER):
            fenced = await grader.aevaluate(response="x #oj:score=2 #oj:reply=fenced")
        assert isinstance(fenced, GraderScore) and fenced.score == 2.0  # read from the fenced JSON
        choice = structured_output_choice(grader.model)
        assert choice is not None and choice.mode == "prompt" and len(choice.refused) == 2
        assert [r.levelno for r in caplog.records if r.name == LOGGER] == [logging.WARNING]
        # Nothing enforces the range now: the grader does, with one re-ask, then a parse error.
        wild = await grader.aevaluate(response="y #oj:score=9")
        assert isinstance(wild, GraderError) and wild.kind == "parse_error"
        assert wild.usage is not None and wild.usage.requests == 2
        assert server.stats().by_outcome == {"200": 3, "reset": 0, "hang": 0, "400": 2}


async def test_an_outage_during_the_probe_is_retried_as_an_outage_and_teaches_nothing() -> None:
    async with serving() as server:
        model = OpenAIChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy())
        result = await judge(model).aevaluate(response="x #oj:status=503,times=1")
        assert isinstance(result, GraderScore) and result.usage is not None and result.usage.requests == 2
        choice = structured_output_choice(model)
        assert choice is not None and (choice.mode, choice.refused) == ("json_schema", ())  # no downgrade
        assert server.stats().by_outcome == {"200": 1, "reset": 0, "hang": 0, "503": 1}


async def test_a_set_mode_wins_and_its_refusal_is_final_and_not_an_outage() -> None:
    async with serving(LLAMA_CPP_PYTHON) as server:
        refused = OpenAIChatModel(
            DEFAULT_MODEL,
            base_url=server.base_url,
            policy=policy(attempts=4),
            structured_output="json_schema",
        )
        result = await judge(refused).aevaluate(response="x")
        assert isinstance(result, GraderError) and result.kind == "provider_error"
        assert result.usage is not None and result.usage.requests == 1  # not retried
        assert REFUSED_MARK in result.message and "leave structured_output unset" in result.message
        assert not is_outage(result)  # breakers and failure ledgers do not count it
        choice = structured_output_choice(refused)
        assert choice is not None and (choice.mode, choice.found) == ("json_schema", False)

        taken = OpenAIChatModel(
            DEFAULT_MODEL, base_url=server.base_url, policy=policy(), structured_output="json_object"
        )
        assert isinstance(await judge(taken).aevaluate(response="y"), GraderScore)
        assert server.stats().by_outcome == {"200": 1, "reset": 0, "hang": 0, "500": 1}


async def test_a_mode_found_earlier_and_now_refused_is_probed_again() -> None:
    """Another server at the same URL: the mode found for the first is dropped, not retried."""
    async with serving() as server:
        model = OpenAIChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy(attempts=1))
        assert isinstance(await judge(model).aevaluate(response="a"), GraderScore)
        choice = structured_output_choice(model)
        assert choice is not None and choice.mode == "json_schema"
        assert server._state is not None
        server._state.formats.refuse = {"json_schema": 500}  # the server behind the URL changed
        assert isinstance(await judge(model).aevaluate(response="b"), GraderScore)
        choice = structured_output_choice(model)
        assert choice is not None and choice.mode == "json_object"
        assert server.stats().by_outcome == {"200": 2, "reset": 0, "hang": 0, "500": 1}


async def test_the_judge_cache_answers_whatever_mode_a_process_finds(tmp_path: Path) -> None:
    """The cache key of a found-per-server request does not depend on the mode found."""
    cache = JudgeCache(tmp_path / "judge-cache.sqlite")
    async with serving(LLAMA_CPP_PYTHON) as server:

        def model() -> OpenAIChatModel:
            return OpenAIChatModel(
                DEFAULT_MODEL, base_url=server.base_url, policy=policy(), sampling=Sampling(temperature=0.0)
            ).with_cache(cache)

        first = model()
        spec = OutputSpec.from_schema("V", {"type": "object", "properties": {"score": {"type": "integer"}}})
        request = ChatRequest([{"role": "user", "content": "x"}], spec, Sampling(temperature=0.0))
        before = first.transport.wire_body(request)
        assert scores([await judge(first).aevaluate(response=f"r{k}") for k in range(3)]) == [3.0] * 3
        assert first.transport.wire_body(request) == before  # unchanged by what was found
        assert server.stats().chat_requests == 4  # one refusal, three answers

        forget_structured_output(server.base_url)  # as a new process would start
        second = model()
        assert scores([await judge(second).aevaluate(response=f"r{k}") for k in range(3)]) == [3.0] * 3
        assert server.stats().chat_requests == 4 and cache.hits == 3  # all from the cache
        assert structured_output_choice(second) is None  # and nothing needed probing
    cache.close()


async def test_vllm_structured_outputs_field_is_probed_like_response_format() -> None:
    async with serving() as server:
        accepted = VLLMChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy())
        assert isinstance(await judge(accepted).aevaluate(response="x #oj:score=7"), GraderScore)
        choice = structured_output_choice(accepted)
        assert choice is not None and choice.mode == "json_schema"
    async with serving({"structured_outputs": 400}) as server:
        older = VLLMChatModel(DEFAULT_MODEL, base_url=server.base_url, policy=policy())
        result = await judge(older).aevaluate(response="x #oj:score=7")
        assert isinstance(result, GraderScore) and result.score == 5.0
        choice = structured_output_choice(older)
        assert choice is not None and choice.mode == "json_object"
        assert choice.refused == (
            "json_schema: HTTP 400: structured_outputs is not supported by this server",
        )


async def test_litellm_routes_find_the_mode_the_same_way() -> None:
    pytest.importorskip("litellm")
    from openjudge.providers import LiteLLMChatModel

    async with serving(LLAMA_CPP_PYTHON) as server:
        model = LiteLLMChatModel(f"openai/{DEFAULT_MODEL}", base_url=server.base_url, policy=policy())
        grader = LLMGrader(model, name="quality", template="Rate: {response}", score_range=(1, 5))
        assert scores([await grader.aevaluate(response=f"x{k} #oj:score=9") for k in range(2)]) == [5.0, 5.0]
        choice = structured_output_choice(model)
        assert choice is not None and (choice.mode, choice.found) == ("json_object", True)
        assert "response_format" in choice.refused[0]
        assert server.stats().by_outcome == {"200": 2, "reset": 0, "hang": 0, "500": 1}
