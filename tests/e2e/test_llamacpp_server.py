"""End to end against a real OpenAI-compatible server: llama.cpp with a tiny random model.

Marked ``e2e``: it needs ``llama-cpp-python[server]`` (built from source on first install,
about 9 minutes on 2 cores; pip caches the wheel) and ``gguf``, which scripts/test.sh
installs. The model's weights are random, so the test asserts what the server
guarantees: models discovery, usage, logprobs, and grammar-constrained JSON that
validates against the grader's bounded schema.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Literal

import anyio
import pytest
from pydantic import BaseModel, Field

from openjudge.graders.llm_grader import LLMGrader
from openjudge.providers import forget_structured_output, structured_output_choice
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import GraderScore

pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (scripts/test.sh installs it)")
pytest.importorskip("gguf")

from tests.e2e.tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.e2e


class TinyVerdict(BaseModel):
    """Bounded so a random model under a JSON grammar still finishes quickly."""

    score: Literal[1, 2, 3, 4, 5]
    reason: str = Field(max_length=8)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model = write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",  # the judge's instructions and schema, tokenised almost per character
            "--model_alias",
            "tiny",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("llama.cpp server did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_models_discovery(llama_server: str) -> None:
    with urllib.request.urlopen(f"{llama_server}/models", timeout=5) as response:
        listing = json.load(response)
    assert [m["id"] for m in listing["data"]] == ["tiny"]


def test_structured_verdict_usage_and_logprob_scoring(llama_server: str) -> None:
    judge = OpenAIChatModel(
        "tiny",
        api_key="sk-none",
        base_url=llama_server,
        temperature=0.0,
        max_tokens=48,
        structured_output="json_object",  # set: llama-cpp-python's server refuses json_schema
    )
    plain = LLMGrader(
        judge, name="plain", template="Rate: {response}", structured_model=TinyVerdict, score_range=(1, 5)
    )
    weighted = LLMGrader(
        judge,
        name="weighted",
        template="Rate: {response}",
        structured_model=TinyVerdict,
        score_range=(1, 5),
        score_mode="logprobs",
        top_logprobs=5,
    )

    async def both() -> tuple[object, object]:
        return await plain.aevaluate(response="a fine answer"), await weighted.aevaluate(
            response="a fine answer"
        )

    first, second = anyio.run(both)
    assert isinstance(first, GraderScore) and first.score in {1.0, 2.0, 3.0, 4.0, 5.0}
    assert first.usage is not None and first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0
    assert isinstance(second, GraderScore) and 1.0 <= second.score <= 5.0
    mode = second.metadata["score_mode"]
    if mode == "logprobs":  # the score token's alternatives were readable: an exact expectation
        distribution = second.metadata["score_distribution"]
        assert isinstance(distribution, dict)
        weighted_sum = sum(int(k) * v for k, v in distribution.items() if isinstance(v, float))
        assert second.score == pytest.approx(weighted_sum)
    else:
        assert mode == "verdict" and second.score == first.score


class OpenScore(BaseModel):
    """A score the verdict model leaves open: the grader's range is what the schema sends."""

    score: int
    reason: str = Field(max_length=8)


def test_with_the_defaults_the_server_is_found_to_take_json_object_and_keeps_to_the_scale(
    llama_server: str,
) -> None:
    forget_structured_output(llama_server)
    judge = OpenAIChatModel("tiny", api_key="sk-none", base_url=llama_server, temperature=0.0, max_tokens=48)
    grader = LLMGrader(
        judge, name="g", template="Rate: {response}", structured_model=OpenScore, score_range=(1, 3)
    )

    async def grade_all() -> list[object]:
        return [await grader.aevaluate(response=f"answer number {k}") for k in range(6)]

    try:
        results = anyio.run(grade_all)
        choice = structured_output_choice(judge)
    finally:
        forget_structured_output(llama_server)
    # A random model under the grammar built from the enum: only 1, 2 or 3, on the first try.
    assert all(isinstance(r, GraderScore) and r.score in {1.0, 2.0, 3.0} for r in results), results
    assert all(isinstance(r, GraderScore) and r.usage is not None and r.usage.requests == 1 for r in results)
    assert choice is not None and (choice.mode, choice.found) == ("json_object", True)
    assert choice.refused[0].startswith("json_schema: HTTP 500: ") and "response_format" in choice.refused[0]
